"""``stacklens run SCENARIO --out RUN``: drive a boot storm and record every server's lifecycle.

Data (the summary, or ``--json``) on stdout; the progress bar and notes on stderr. Exit codes:
0 ok, 1 user error, 3 SLA breach, 130 interrupted (Ctrl-C: the first stops issuing and deletes
what the run created, the second exits at once; ``stacklens cleanup RUN`` removes leftovers).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from stacklens.cli._capture import BROKER_URL, CAPTURE, DB_URL, keep, recorders
from stacklens.cli._connection import choose_connection
from stacklens.cli._render import FORCE, Ticker, analyze_store, print_report
from stacklens.drive.capture import CloudFacts
from stacklens.drive.pacer import DriveStats
from stacklens.drive.scenario import load_scenario
from stacklens.drive.session import RunResult, finalize_records, run_scenario, summarize
from stacklens.drive.workload import RunPlan, get_workload
from stacklens.errors import SlaBreach
from stacklens.pipeline import IngestOptions
from stacklens.recorder import recording
from stacklens.store import RunStore

err = Console(stderr=True)

SCENARIO = typer.Argument(..., help="Scenario YAML (see examples/).")
RUN_OUT = typer.Option(..., "--out", "-o", envvar="STACKLENS_OUT",
                       help="Run folder to create (requests.jsonl, tables, manifest).")
CLOUD = typer.Option(None, "--cloud", envvar="OS_CLOUD",
                     help="clouds.yaml entry (overrides the scenario's 'cloud').")
ENDPOINT = typer.Option(None, "--endpoint", envvar="STACKLENS_ENDPOINT",
                        help="Compute endpoint, e.g. http://127.0.0.1:8774/v2.1 (noauth2 clouds).")
TOKEN = typer.Option(None, "--token", envvar="STACKLENS_TOKEN",
                     help="X-Auth-Token to send with --endpoint (noauth2: user:project).")


def _print_summary(res: RunResult, durations: tuple[str, ...]) -> None:
    s = summarize(res.summary.records, durations)
    st = res.summary.stats
    t = Table(title=f"run {res.plan.run_id} ({res.plan.scenario})", show_header=True)
    t.add_column("measure")
    t.add_column("value", justify="right")
    t.add_row("servers", str(s["servers"]))
    for k, v in s["outcomes"].items():
        t.add_row(f"  {k}", str(v))
    for k in durations:
        for q, v in s[k].items():
            t.add_row(f"{k} {q}", "-" if v is None else f"{v:.2f}")
    t.add_row("peak in flight", str(st.peak_in_flight))
    t.add_row("list calls", str(st.list_calls))
    t.add_row("hosts", str(s["hosts"]))
    for c in res.sla:
        t.add_row("SLA", c.describe())
    Console().print(t)


def _cloud_facts(cloud: str | None, config_files: list[Path]) -> CloudFacts:
    """What the run records about the cloud: for the local lab its config files, versions and
    hosts (:func:`stacklens_lab.run_facts`), plus any ``--config-file``; always the compute API's
    version document."""
    from stacklens_lab import LAB_CLOUD, default_lab_dir, run_facts

    files = [p.resolve() for p in config_files]
    lab = run_facts(default_lab_dir()) if cloud == LAB_CLOUD else None
    if lab is None:
        return CloudFacts(config_files=tuple(files), query_api=True)
    return CloudFacts(config_files=tuple(lab["config_files"] + files),
                      config_root=lab["config_root"],
                      service_versions=lab["service_versions"], hosts=tuple(lab["hosts"]),
                      query_api=True, extra={"lab": lab["lab"]})


def _lab_root(cloud: str | None) -> Path | None:
    """The lab's folder when ``cloud`` is the built-in lab, else None."""
    from stacklens_lab import LAB_CLOUD, default_lab_dir

    return default_lab_dir() if cloud == LAB_CLOUD else None


def _server_view(out: Path, sources: list[str], res: RunResult, quiet: bool,
                 capture_ns: tuple[int, int] | None = None) -> None:
    """Read the cloud's logs of the run window (widened to the capture window ``capture_ns``,
    so that logs and broker capture cover the same time) into the same run folder, trace them
    and report client and server views side by side (``report.json`` key ``client_server``)."""
    margin = 60 * 1_000_000_000
    store = RunStore(out)
    t0, t1 = res.summary.started_ns, res.summary.ended_ns
    if capture_ns is not None:
        t0, t1 = min(t0, capture_ns[0]), max(t1, capture_ns[1])
    opts = IngestOptions(window_ns=(t0 - margin, t1 + margin))
    report = analyze_store(store, sources, opts, quiet)
    if not quiet:
        print_report(report, out, as_json=False)
    cs = (report.get("client_server") or {}).get("summary") or {}
    if cs:
        err.print(f"run: {cs.get('found')} of {cs.get('requests')} requests found in the server "
                  f"traces; client create p50 {cs.get('client_create_p50_s')} s, server p50 "
                  f"{cs.get('server_p50_s')} s")


def run(
    scenario: Path = SCENARIO,
    out: Path = RUN_OUT,
    cloud: str | None = CLOUD,
    endpoint: str | None = ENDPOINT,
    token: str | None = TOKEN,
    computes: int | None = typer.Option(None, "--computes", help="Compute nodes, for per_compute "
                                        "(default: the scenario's, else nova-compute services up)."),
    as_json: bool = typer.Option(False, "--json", help="Print the run summary as JSON."),
    logs: list[str] = typer.Option([], "--logs", help="Log folders to read after the load "
                                   "(repeatable; default: the scenario's 'logs')."),
    config_files: list[Path] = typer.Option([], "--config-file", help="A config file of the "
                                            "cloud to keep (redacted) in RUN/config/ for "
                                            "`stacklens compare` (repeatable; the lab's are "
                                            "kept without asking)."),
    capture: bool = CAPTURE,
    idle_s: float = typer.Option(0.0, "--idle-s", min=0, max=3600,
                                 help="Seconds to record before the load starts: an idle "
                                      "baseline of periodic messages and resource use."),
    broker_mgmt_url: str | None = BROKER_URL,
    db_url: str | None = DB_URL,
    force: bool = FORCE,
) -> None:
    """Boot servers as the scenario says, watch them with one list call per poll interval,
    delete them, and record each one's timestamps, request ids, host and outcome; meanwhile
    record the broker's messages, the database's statements and the services' CPU/memory
    (--capture, the default)."""
    RunStore(out).prepare(force)
    scn = load_scenario(scenario)
    text = scenario.read_text(encoding="utf-8")
    # precedence: --endpoint, --cloud, the scenario's client.endpoint, the scenario's cloud
    chosen = choose_connection(cloud, endpoint, token, scn.cloud, scn.client.endpoint)
    conn, lab_logs = chosen.connection, chosen.lab_logs
    facts = _cloud_facts(cloud or scn.cloud, config_files)
    recs, skipped = recorders(_lab_root(cloud or scn.cloud), broker_mgmt_url, db_url) \
        if capture else ([], [])
    quiet = as_json or not err.is_terminal
    wl_name = scn.workload.chosen()[0]
    kind = "servers" if wl_name == "boot_servers" else f"{wl_name} steps"
    with Progress(
        TextColumn("run"), BarColumn(), MofNCompleteColumn(),
        TextColumn("in flight {task.fields[in_flight]}"), TextColumn("ACTIVE {task.fields[active]}"),
        TextColumn("failed {task.fields[failed]}"), TimeElapsedColumn(),
        console=err, disable=quiet, transient=True,
    ) as prog:
        task = prog.add_task("run", total=None, in_flight=0, active=0, failed=0)

        def on_plan(plan: RunPlan) -> None:
            prog.update(task, total=plan.total * plan.repetitions)
            err.print(f"run {plan.run_id}: {plan.total * plan.repetitions} {kind} named "
                      f"{plan.prefix}*, writing {out}")

        tick = Ticker("run", as_json)

        def on_tick(st: DriveStats) -> None:
            prog.update(task, completed=st.done, in_flight=st.in_flight, active=st.active,
                        failed=st.failed)
            tick(f"{st.done} done, {st.in_flight} in flight, {st.active} ACTIVE, "
                 f"{st.failed} failed")

        async def main() -> RunResult:
            # Ctrl-C: the first cancels the run task (the driver stops issuing and cleans up),
            # the second cancels its cleanup, a third exits without writing anything more.
            task, loop, hits = asyncio.current_task(), asyncio.get_running_loop(), [0]

            def on_sigint() -> None:
                hits[0] += 1
                if hits[0] >= 3:
                    os._exit(130)
                err.print("run: stopping and deleting this run's servers (Ctrl-C again: exit "
                          "at once)" if hits[0] == 1 else "run: exiting at once")
                assert task is not None
                task.cancel()

            loop.add_signal_handler(signal.SIGINT, on_sigint)
            try:
                return await run_scenario(scn, conn, out, scenario_text=text, on_tick=on_tick,
                                          on_plan=on_plan, computes=computes, cloud=facts)
            finally:
                loop.remove_signal_handler(signal.SIGINT)

        try:
            with recording(recs) as rec:
                window_ns = (time.time_ns(), 0)
                if recs and idle_s > 0:
                    err.print(f"run: recording {idle_s:.0f} s of idle baseline first")
                    time.sleep(idle_s)
                res = asyncio.run(main())
                window_ns = (window_ns[0], time.time_ns())
        except (KeyboardInterrupt, asyncio.CancelledError):
            n = finalize_records(out) if (out / "requests.jsonl").exists() else 0
            err.print(f"run: interrupted twice; {n} records kept in {out}. Servers may remain: "
                      f"stacklens cleanup {out}")
            raise typer.Exit(130) from None
    if capture:
        cap = keep(out, rec, skipped, window_ns)
        for name, notes in cap["notes"].items():
            for n in notes:
                err.print(f"run: capture {name}: {n}")
    if as_json:
        sys.stdout.write(json.dumps(json.loads((out / "manifest.json").read_text())["run"],
                                    indent=2) + "\n")
    else:
        _print_summary(res, get_workload(wl_name).durations)
    sources = logs or list(scn.logs) or lab_logs
    if sources:
        _server_view(out, sources, res, quiet=as_json, capture_ns=window_ns if capture else None)
    if res.summary.leftovers:
        err.print(f"run: {len(res.summary.leftovers)} servers remain: stacklens cleanup {out}")
    if res.summary.interrupted:
        err.print(f"run: interrupted; records in {out}/requests.jsonl")
        raise typer.Exit(130)
    if res.breached:
        raise SlaBreach("SLA failed: " + "; ".join(c.describe() for c in res.breached))
