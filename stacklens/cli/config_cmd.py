"""``stacklens config check CONFIG_DIR... [--run RUN] [--release R] [--json] [--write]``: the
scale rules of :mod:`stacklens.advise` applied to a cloud's config files (oslo.config INI,
rabbitmq.conf / rabbitmq-env.conf, my.cnf / galera.cnf, haproxy.cfg), with a run's symptoms
linked to the settings behind them.

``--run RUN`` adds the run's kept config files (``RUN/config/``), its symptoms (QueuePool
limits, RPC timeouts, deadlocks, one host taking most builds) and its release (from the versions
it recorded); ``--write`` stores the findings as table ``config_findings`` in RUN, so that
``stacklens report RUN`` shows them.

Output: a table on stdout (``--json``: ``{"release", "files", "skipped", "symptoms",
"findings"}``). Exit codes: 0 when no finding is of severity ``error``, 3 when one is (a
setting that breaks at scale, or a symptom of the run linked to a setting that is not tuned),
1 for a missing folder or no config file, 2 for usage errors.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from stacklens.advise import (
    Finding,
    config_findings,
    findings_frame,
    has_errors,
    parse_release,
    release_name,
    run_release,
)
from stacklens.advise.release import LATEST
from stacklens.cli._render import err
from stacklens.errors import InputNotFound, UserError
from stacklens.store import RunStore

__all__ = ["check", "config_app"]

config_app = typer.Typer(help="Config advice: scale rules over a cloud's config files.",
                         no_args_is_help=True)

_STYLE = {"error": "bold red", "warning": "yellow", "info": "dim"}


@config_app.command("check")
def check(
    config_dirs: list[Path] = typer.Argument(None, help="Folders (or files) of config files: "
                                             "/etc/nova, /etc/neutron, a kolla config tree ..."),
    run: Path | None = typer.Option(None, "--run", help="A run folder: its config/ files, "
                                    "symptoms and release."),
    release: str | None = typer.Option(None, "--release", help="OpenStack release for the "
                                       "defaults (epoxy, 2025.1, or a nova version); default: "
                                       "the run's, else 2025.1."),
    as_json: bool = typer.Option(False, "--json", help="Everything as one JSON object."),
    write: bool = typer.Option(False, "--write", help="Store the findings as table "
                               "config_findings in --run."),
) -> None:
    """Check config files against the scale rules; exit 3 when a finding is an error."""
    dirs = list(config_dirs or [])
    for d in dirs:
        if not d.exists():
            raise InputNotFound(f"config folder {d} does not exist")
    if run is not None and not run.is_dir():
        raise InputNotFound(f"run folder {run} does not exist")
    if write and run is None:
        raise UserError("--write needs --run RUN (the folder to write config_findings into)")
    try:
        rel = parse_release(release) if release else None
    except ValueError as e:
        raise UserError(str(e)) from None
    cfg, syms, findings = config_findings(run, dirs, rel)
    if not cfg.files:
        where = ", ".join(str(d) for d in dirs) or f"{run}/config"
        raise UserError(f"no config file the rules read under {where} (nova.conf, "
                        "neutron.conf, keystone.conf, rabbitmq.conf, my.cnf, haproxy.cfg ...)")
    if write and run is not None:
        RunStore(run).write({"config_findings": findings_frame(findings)})
    shown_rel = release_name(rel or _rel_of(run) or LATEST)
    if as_json:
        doc = {"release": shown_rel, "files": [f.name for f in cfg.files],
               "skipped": cfg.skipped,
               "symptoms": [{"kind": s.kind, "count": s.count, "by_service": s.by_service,
                             "failed_requests": s.failed_requests, "detail": s.detail}
                            for s in syms],
               "findings": [asdict(f) for f in findings]}
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        _print(findings, len(cfg.files), shown_rel)
    if has_errors(findings):
        n = sum(f.severity == "error" for f in findings)
        err.print(f"config check: {n} finding(s) of severity error")
        raise typer.Exit(3)


def _rel_of(run: Path | None) -> int | None:
    return run_release(RunStore(run)) if run is not None else None


def _print(findings: list[Finding], n_files: int, rel: str) -> None:
    out = Console()
    t = Table("severity", "rule", "service", "setting", "value", "default", "symptom", "advice",
              header_style="bold", title=f"Config advice ({n_files} files, release {rel})")
    for f in findings:
        t.add_row(Text(f.severity, style=_STYLE.get(f.severity, "")), f.rule_id, f.service,
                  Text(f"{f.file}: [{f.section}] {f.option}"),
                  Text("(default)" if f.value is None else f.value), Text(f.default),
                  Text(f.symptom or ""), Text(f.advice))
    out.print(t)
    if not findings:
        out.print("no findings: every rule is satisfied")
