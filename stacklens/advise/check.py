"""Applying the rules: config files (+ a run's symptoms) -> findings, the ``config_findings``
table.

A finding is one setting one rule has something to say about. Without a run, findings are the
rules' verdicts. With a run, each symptom (:mod:`stacklens.advise.symptoms`) is linked to the
rules that list its kind, for the projects whose services showed it (infrastructure rules,
RabbitMQ and Galera, for every service): one finding per setting the rule judged (else its first
setting of that project). Severity: ``error`` when the rule judged the setting ``warning`` or
worse; ``warning`` when it judged it ``info`` (a default the guidance says to change at scale);
``info`` when the rule has nothing against the setting (a candidate only: the symptom may have
another cause). QueuePool symptoms carry the pool sizes in effect; the finding names the config section
whose effective sizes match them when one does.

Exit policy of ``stacklens config check``: 3 when any finding is ``error``, else 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import polars as pl

from stacklens.advise.ini import ConfigSet, load_configs
from stacklens.advise.release import LATEST, release_from_versions
from stacklens.advise.rule import SEVERITIES, Ctx, Rule, Setting, Verdict
from stacklens.advise.rules import DB_POOL, RULES
from stacklens.advise.symptoms import Symptom, symptoms_of_run
from stacklens.schema import conform
from stacklens.store import RunStore

__all__ = [
    "Finding",
    "INFRA_PROJECTS",
    "check",
    "config_findings",
    "findings_frame",
    "has_errors",
    "run_release",
    "write_config_findings",
]

#: Projects whose rules link to symptoms of every service (the shared broker and database).
INFRA_PROJECTS = ("rabbitmq", "mysql", "haproxy")


@dataclass(frozen=True)
class Finding:
    """One row of ``config_findings`` (:data:`stacklens.schema.CONFIG_FINDINGS`)."""

    rule_id: str
    severity: str
    service: str
    file: str | None
    section: str
    option: str
    value: str | None
    default: str
    advice: str
    evidence: str
    symptom: str | None
    symptom_count: int | None


def _serves(project: str, service: str) -> bool:
    return project in INFRA_PROJECTS or service == project or service.startswith(f"{project}-")


def _finding(ctx: Ctx, rule: Rule, s: Setting, v: Verdict | None, service: str | None,
             sym: Symptom | None, services: list[str]) -> Finding:
    value, f = ctx.lookup(s)
    files = ctx.cfg.of(s.project)
    file = (v.file if v and v.file else None) or (f.name if f else (files[0].name if files else
                                                                    None))
    note = v.note if v else "the setting is as the guidance says; the symptom has another cause"
    count = sum(sym.by_service.get(x, 0) for x in services) if sym else None
    symptom = None
    if sym is not None:
        symptom = sym.describe(services[0] if len(services) == 1 and sym.kind != "host_skew"
                               else None)
    return Finding(
        rule_id=rule.id,
        severity=v.severity if v else "info",
        service=service or (f.service if f else s.project),
        file=file,
        section=(v.section if v and v.section else s.section),
        option=(v.option if v and v.option else s.option),
        value=v.value if v and v.value is not None else value,
        default=ctx.default(s),
        advice=f"{note}. {rule.advice}",
        evidence=f"{rule.evidence}; option defined in {rule.source}",
        symptom=symptom,
        symptom_count=count,
    )


def _pool_targets(ctx: Ctx, project: str, sym: Symptom) -> list[Setting]:
    """max_pool_size/max_overflow settings of ``project``'s database sections in use, narrowed
    to those whose effective sizes are the ones the QueuePool messages report."""
    used, matched = [], []
    for i in range(0, len(DB_POOL), 3):
        pool, over = DB_POOL[i], DB_POOL[i + 1]
        if pool.project != project or not (
                ctx.cfg.values(project, pool.section, "connection") or ctx.raw(pool)):
            continue
        used += [pool, over]
        if (int(ctx.number(pool) or 5), int(ctx.number(over) or 50)) in sym.pool:
            matched += [pool, over]
    return matched or used


def _linked(ctx: Ctx, rule: Rule, verdicts: list[Verdict], sym: Symptom) -> tuple[
        list[Finding], set[int]]:
    out: list[Finding] = []
    used: set[int] = set()
    projects = sorted(rule.projects() & ctx.cfg.projects())
    for project in projects:
        services = sorted(s for s in sym.by_service if _serves(project, s))
        if not services:
            continue
        mine = [v for v in verdicts if v.setting.project == project]
        targets = list(dict.fromkeys(v.setting for v in mine))
        if rule.id == "db-pool":
            targets = _pool_targets(ctx, project, sym) or targets
        if not targets:
            targets = [next(s for s in rule.settings if s.project == project)]
        for s in targets:
            vs = [v for v in mine if v.setting == s]
            used.update(id(v) for v in vs)
            worst = min((SEVERITIES.index(v.severity) for v in vs), default=len(SEVERITIES))
            base = vs[0] if vs else None
            sev = "error" if worst <= 1 else "warning" if worst == 2 else "info"
            link = Verdict(sev, s, base.note if base else
                           "the setting is as the guidance says; the symptom may have another "
                           "cause", base.value if base else None, base.file if base else None,
                           base.section if base else None, base.option if base else None)
            out.append(_finding(ctx, rule, s, link, ", ".join(services), sym, services))
    return out, used


def check(cfg: ConfigSet, release: int | None = None, symptoms: Iterable[Symptom] = (),
          rules: Sequence[Rule] = RULES) -> list[Finding]:
    """Apply ``rules`` to ``cfg`` in ``release`` (an ordinal; default
    :data:`~stacklens.advise.release.LATEST`), linking ``symptoms`` (rules in the module
    docstring). Findings are sorted by severity, then rule order, service and setting. Rules
    whose projects have no file in ``cfg`` say nothing."""
    ctx = Ctx(cfg, release or LATEST)
    syms = list(symptoms)
    out: list[tuple[int, Finding]] = []
    for order, rule in enumerate(rules):
        if not rule.projects() & cfg.projects():
            continue
        verdicts = rule.evaluate(ctx)
        used: set[int] = set()
        for sym in syms:
            if sym.kind in rule.symptoms:
                found, u = _linked(ctx, rule, verdicts, sym)
                out += [(order, f) for f in found]
                used |= u
        out += [(order, _finding(ctx, rule, v.setting, v, None, None, []))
                for v in verdicts if id(v) not in used]
    out.sort(key=lambda x: (SEVERITIES.index(x[1].severity), x[0], x[1].service,
                            x[1].section, x[1].option))
    return [f for _, f in out]


def has_errors(findings: Iterable[Finding]) -> bool:
    """True when a finding has severity ``error`` (``config check`` then exits 3)."""
    return any(f.severity == "error" for f in findings)


def findings_frame(findings: Iterable[Finding]) -> pl.DataFrame:
    """The findings as table ``config_findings`` (:data:`stacklens.schema.CONFIG_FINDINGS`)."""
    rows = [asdict(f) for f in findings]
    df = pl.DataFrame(rows, infer_schema_length=None) if rows else pl.DataFrame()
    return conform(df, "config_findings")


def run_release(store: RunStore) -> int | None:
    """The release of the cloud a run ran against, from the manifest's recorded
    ``service_versions`` (None when not recorded)."""
    try:
        run = store.manifest().get("run") or {}
    except Exception:  # a damaged manifest must not stop the advice
        return None
    versions = run.get("service_versions") or {}
    return release_from_versions(versions) if isinstance(versions, dict) else None


def config_findings(run: str | Path | None, config_dirs: Sequence[Path] = (),
                    release: int | None = None) -> tuple[ConfigSet, list[Symptom], list[Finding]]:
    """Findings for a run folder ``run`` (its ``config/`` folder, its symptoms and release) and
    any extra ``config_dirs``; ``run`` None: the folders alone, no symptoms. Returns the configs
    read, the symptoms and the findings. Raises :class:`~stacklens.errors.StoreError` only
    through a damaged run database."""
    dirs = list(config_dirs)
    syms: list[Symptom] = []
    if run is not None:
        store = RunStore(run)
        if (store.path / "config").is_dir():
            dirs.insert(0, store.path / "config")
        syms = symptoms_of_run(store)
        release = release or run_release(store)
    cfg = load_configs(dirs)
    return cfg, syms, check(cfg, release, syms)


def write_config_findings(run: str | Path, config_dirs: Sequence[Path] = (),
                          release: int | None = None) -> int | None:
    """Write table ``config_findings`` into run folder ``run`` from its ``config/`` files (as
    ``stacklens run`` keeps them, redacted) plus ``config_dirs``, linked to the run's symptoms.
    Returns the number of findings, or None when no config file was found (then no table is
    written and the report section stays absent). Call it at the end of ``stacklens run`` /
    ``analyze``, after the events and traces are written."""
    cfg, _syms, findings = config_findings(run, config_dirs, release)
    if not cfg.files:
        return None
    RunStore(run).write({"config_findings": findings_frame(findings)})
    return len(findings)

