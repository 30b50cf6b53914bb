"""``stacklens lab up|down|status|logs``: a real OpenStack control plane on this machine.

See :mod:`stacklens_lab`. Progress goes to stderr; ``status --json`` and ``logs`` print data on
stdout.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import typer

from stacklens.errors import LabError
from stacklens_lab import LabSpec, Ports, default_lab_dir, down, status, up
from stacklens_lab.deps import LAB_PYTHON_ENV, lab_python
from stacklens_lab.lab import read_state

__all__ = ["lab_app"]

lab_app = typer.Typer(
    name="lab",
    help="A real OpenStack control plane (nova, placement, glance; fake hypervisors) on "
    "127.0.0.1, writing oslo.log files ready for `stacklens analyze`.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

DIR = typer.Option(
    None, "--dir", envvar="STACKLENS_LAB_DIR",
    help="Lab folder [default: ~/.local/share/stacklens/lab].",
)


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _root(d: Path | None) -> Path:
    return (d or default_lab_dir()).expanduser().resolve()


@lab_app.command("up")
def up_cmd(
    computes: int = typer.Option(3, "--computes", "-k", min=1, max=256,
                                 help="Number of fake nova-compute services (host fake-N)."),
    lab_dir: Path | None = DIR,
    scheduler_spread: bool = typer.Option(
        False, "--scheduler-spread/--no-scheduler-spread",
        help="Set shuffle_best_same_weighed_hosts and host_subset_size=K. Off by default: "
        "nova's own stacking under bursts stays observable."),
    workers: int = typer.Option(2, "--workers", min=1, max=32,
                                help="Workers of nova-api, placement, glance, conductor, "
                                "scheduler."),
    python: str | None = typer.Option(
        None, "--python", envvar=LAB_PYTHON_ENV,
        help="Interpreter with OpenStack 2025.1 installed (see .ci/lab-setup.sh)."),
    port_base: int = typer.Option(28700, "--port-base", min=1024, max=65000,
                                  help="Ports used: base+6 MariaDB ... base+96 neutron stand-in; "
                                  "keep them below the kernel's ephemeral range "
                                  "(net.ipv4.ip_local_port_range, usually 32768-60999)."),
    # --- lab up --neutron (issue 13) ---
    neutron: bool = typer.Option(
        False, "--neutron/--no-neutron",
        help="Run a real neutron-server (ML2 openvswitch+l2population, 2025.1) on the "
        "stand-in's port, with one L2 agent stand-in per fake compute."),
    neutron_python: str | None = typer.Option(
        None, "--neutron-python", envvar="STACKLENS_LAB_NEUTRON_PYTHON",
        help="Interpreter with neutron 26.x (see .ci/lab-neutron-setup.sh); with --neutron."),
    neutron_green_context: bool = typer.Option(
        False, "--neutron-green-context",
        help="Start neutron-server with eventlet patched before oslo.context is imported, so "
        "each request logs its own request id (stock neutron-server 26 shares one context "
        "store between green threads); with --neutron."),
    # --- end lab up --neutron ---
) -> None:
    """Check dependencies, write configs, start every service, wait for K computes."""
    if neutron and not neutron_python:
        raise LabError("lab: --neutron needs --neutron-python or STACKLENS_LAB_NEUTRON_PYTHON "
                       "(bash .ci/lab-neutron-setup.sh makes one)")
    npy = os.path.abspath(neutron_python) if neutron and neutron_python else ""
    spec = LabSpec(root=_root(lab_dir), python=lab_python(python), computes=computes,
                   workers=workers, scheduler_spread=scheduler_spread, ports=Ports(port_base),
                   neutron_python=npy, neutron_green_context=neutron_green_context)
    state = up(spec, say=_say)
    p = spec.ports
    _say(f"lab: up in {state['timings_s']['total']:.1f} s with {computes} computes "
         f"(nova {state['versions'].get('nova')}, oslo.messaging "
         f"{state['versions'].get('oslo.messaging')})")
    _say(f"lab: nova-api http://127.0.0.1:{p.nova_api}/v2.1  (X-Auth-Token: admin:admin)")
    _say(f"lab: export OS_CLIENT_CONFIG_FILE={state['clouds_yaml']}  # cloud stacklens-lab")
    _say(f"lab: logs in {state['logs']}  (stacklens analyze {state['logs']} --out RUN)")


@lab_app.command("down")
def down_cmd(
    lab_dir: Path | None = DIR,
    purge: bool = typer.Option(False, "--purge", help="Also delete data, logs and configs."),
) -> None:
    """Stop every process the lab started (by PID file), clients first."""
    root = _root(lab_dir)
    stopped = down(root, purge=purge)
    _say(f"lab: stopped {len(stopped)} processes in {root}" + (" and purged it" if purge else ""))


@lab_app.command("status")
def status_cmd(
    lab_dir: Path | None = DIR,
    as_json: bool = typer.Option(False, "--json", help="Print the status as JSON."),
) -> None:
    """The lab's processes: alive, PID, memory (RSS and PSS of each process tree), CPU."""
    st = status(_root(lab_dir))
    if as_json:
        typer.echo(json.dumps(st, indent=2, default=str))
        return
    procs = st["processes"]
    if not procs:
        typer.echo(f"no lab processes in {st['root']}")
        return
    typer.echo(f"{'service':<26}{'pid':>8} {'state':<6}{'procs':>6}{'rss MB':>9}{'pss MB':>9}"
               f"{'cpu s':>9}")
    for p in procs:
        typer.echo(f"{p['name']:<26}{p['pid']:>8} {'up' if p['alive'] else 'DOWN':<6}"
                   f"{p['n_procs']:>6}{p['rss_mb']:>9.0f}{p['pss_mb']:>9.0f}{p['cpu_s']:>9.1f}")
    alive = [p for p in procs if p["alive"]]
    typer.echo(f"{len(alive)}/{len(procs)} up, PSS total {sum(p['pss_mb'] for p in alive):.0f} MB")


@lab_app.command("logs")
def logs_cmd(lab_dir: Path | None = DIR) -> None:
    """Print the lab's log folder (oslo.log files, one folder per host)."""
    root = _root(lab_dir)
    st = read_state(root)
    typer.echo(st["logs"] if st else str(root / "logs"))
