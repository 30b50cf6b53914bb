"""How far a forecast went beyond what its model measured, as findings (issue 9).

A forecast's tables look like a measured run's, so the report must say which of its numbers
are extrapolations. The manifest's ``forecast`` section (:func:`stacklens.forecast.run.
forecast_run`) holds the storm's knobs, the calibration's knobs (the storm the model was
measured on) and, per model stage, how many of its times were drawn at a load above the
highest of its calibration samples (``extrapolation``:
:func:`stacklens.forecast.records.extrapolation`) and the model's recorded validations.
Three kinds of finding come from them (rule ``forecast``):

- **scale**: the storm's computes, servers and concurrency against the calibration's, with
  the ratios; ``warning`` when one is more than 2x (:data:`VALIDATED_RATIO`, the step the
  shipped model was validated over: its provenance's ``validated``), else ``info``.
- **extrapolated**: per component (the summary's ``beyond_calibration``: its stages' draws,
  :data:`~stacklens.forecast.records.STAGE_COMPONENT`), the share beyond the calibrated load
  (the stages that had such draws named), for the
  components with 5 % or more, as a ``warning``: a p95 is the top 5 % of a component's
  times, the ones drawn at the highest loads. Under 5 % everywhere gives one ``info`` note.
  A model calibrated before format 9 counts against its highest bin's mean load (more draws
  counted beyond than there were).
- **validated**: each of the model's recorded validations (``calibration.validations``,
  ``stacklens forecast validate --record``; the last :data:`_VALIDATIONS`): the measured
  storm and every metric's error, the ones beyond the validation's target listed apart, and
  the metrics whose prediction lies outside the measured runs' range (``outside_range``, with
  the range's ``range_confidence`` as an interval of the runs' median; records before session
  34 lack both); ``warning`` when there are such, else ``info``. A model without any says so
  (``info``).

The load is the model's load index (``calibration.load``, per stage ``stage_load``): boots in
flight, not hosts, so a storm can stay within the calibrated load on more hosts; what the
model cannot know beyond its calibration's cloud size is the scale note's.
"""

from __future__ import annotations

from typing import Any

__all__ = ["VALIDATED_RATIO", "forecast_notes"]

#: The scale (storm over calibration) up to which the scale note stays ``info``: the shipped
#: model's validation was at 2x (K=4 -> K=8 lab storms, concurrency 20 -> 40).
VALIDATED_RATIO = 2.0

#: A component's share of draws beyond the calibration listed (as a warning) from here (0..1):
#: from 5 %, its p95 is drawn beyond the calibration.
_LISTED = 0.05

_SCALED = ("computes", "servers", "concurrency")

#: The recorded validations a report lists (the most recent).
_VALIDATIONS = 3


def forecast_notes(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``forecast`` findings (module docstring) of a run's ``manifest``: [] for a measured
    run (no ``forecast`` section) and for a section written before these fields existed.
    Each is ``{rule, severity, text, evidence}`` as :mod:`stacklens.analyze.findings`'."""
    fc = manifest.get("forecast")
    if not isinstance(fc, dict):
        return []
    out = []
    knobs = fc.get("knobs") or {}
    cal = (fc.get("calibration") or {}).get("knobs") or {}
    ratios = {k: float(knobs[k]) / float(cal[k]) for k in _SCALED
              if isinstance(knobs.get(k), (int, float)) and isinstance(cal.get(k), (int, float))
              and cal[k] > 0}
    if ratios:
        over = max(ratios.values()) > VALIDATED_RATIO
        same = all(r == 1.0 for r in ratios.values())
        text = ("forecast: the calibration's own storm size (" + ", ".join(
                    f"{k} {knobs[k]:g}" for k in ratios) + ")" if same else
                "forecast: " + ", ".join(f"{k} {knobs[k]:g} ({r:.3g}x the calibration's "
                                         f"{cal[k]:g})" for k, r in ratios.items()))
        if over:
            text += (f"; beyond {VALIDATED_RATIO:g}x, the step the shipped model was validated "
                     "over (lab K=4 -> K=8)")
        out.append({"rule": "forecast", "severity": "warning" if over else "info",
                    "text": text,
                    "evidence": {"ratios": {k: round(r, 4) for k, r in ratios.items()},
                                 "storm": {k: knobs[k] for k in ratios},
                                 "calibration": {k: cal[k] for k in ratios}}})
    ext = fc.get("extrapolation")
    share = (fc.get("summary") or {}).get("beyond_calibration")
    if isinstance(ext, dict) and ext and isinstance(share, dict):
        out.append(_extrapolated(ext, share))
    vals = (fc.get("calibration") or {}).get("validations")
    if isinstance(vals, list):
        out += [_validated(v) for v in vals[-_VALIDATIONS:] if isinstance(v, dict)]
        if not vals:
            out.append({"rule": "forecast", "severity": "info", "evidence": {},
                        "text": "forecast: its model has no recorded validation against "
                                "measured runs (stacklens forecast validate --record)"})
    return out


def _validated(v: dict[str, Any]) -> dict[str, Any]:
    """The finding of one recorded validation (module docstring)."""
    storm = ", ".join(f"{k} {n}" for k, n in (v.get("storm") or {}).items())
    target = float(v.get("target_pct") or 15.0)
    errs = {m: e for m, e in (v.get("error_pct") or {}).items() if isinstance(e, (int, float))}
    within = ", ".join(f"{m} {round(e):+d}%" for m, e in errs.items() if abs(e) <= target)
    beyond = ", ".join(f"{m} {round(e):+d}%" for m, e in errs.items() if abs(e) > target)
    n = v.get("runs", "?")
    sets = " ".join(f"--set {x}" for x in v.get("set") or [])
    text = (f"forecast: its model was validated against {n} measured run{'' if n == 1 else 's'} of "
            f"{storm} ({v.get('seeds', '?')} seeds, {str(v.get('at', '?'))[:10]}"
            + (f", with {sets}" if sets else "") + "): within "
            f"{target:g}%: {within or 'none'}" + (f"; beyond: {beyond}" if beyond else ""))
    outside = [str(m) for m in v.get("outside_range") or []]
    conf = v.get("range_confidence")
    if outside:
        text += ("; outside the measured runs' range" + (
            f" (a {conf:.1%} confidence interval of their median)"
            if isinstance(conf, (int, float)) else "") + ": " + ", ".join(outside))
    return {"rule": "forecast", "severity": "warning" if beyond or outside else "info",
            "text": text,
            "evidence": v}


def _extrapolated(ext: dict[str, dict[str, Any]], share: dict[str, float]) -> dict[str, Any]:
    """The extrapolation finding (module docstring) of a forecast section's per-stage
    ``extrapolation`` and its summary's per-component ``beyond_calibration`` (``share``,
    :func:`stacklens.forecast.records.beyond_by_component`)."""
    stages: dict[str, list[str]] = {}
    for stage, e in ext.items():
        if e.get("beyond"):
            stages.setdefault(str(e.get("component", "unknown")), []).append(stage)
    listed = sorted((c for c, s in share.items() if s >= _LISTED), key=lambda c: -share[c])
    evidence = {"components": share, "stages": ext}
    if not listed:
        top = max(share.values(), default=0.0)
        return {"rule": "forecast", "severity": "info",
                "text": "forecast: every component's times were drawn within the loads its "
                        "calibration measured" + (f" (at most {top:.0%} beyond)" if top else ""),
                "evidence": evidence}
    parts = ", ".join(f"{c} {share[c]:.0%} ({', '.join(sorted(stages.get(c, [])))})"
                      for c in listed)
    return {"rule": "forecast", "severity": "warning",
            "text": "forecast: times drawn beyond the highest load the model's calibration "
                    f"measured (extrapolated, not measured): {parts}",
            "evidence": evidence}
