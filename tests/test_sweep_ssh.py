"""Sweep targets over SSH (collect's inventory and transport) against a real OpenSSH server
on 127.0.0.1 (the sshd of tests/test_collect.py): fio runs remotely, the clock offset is
measured and recorded, and a host whose key does not match known_hosts fails its points with
the reason (kept, never dropped). Skips without sshd or fio."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest
from test_collect import Sshd

from stacklens.sweep import finish, parse_plan, run_sweep


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    for tool in ("/usr/sbin/sshd", shutil.which("ssh-keygen"), shutil.which("fio")):
        if not tool or not os.path.exists(tool):
            pytest.skip("sshd, ssh-keygen or fio not installed (.ci/sshd-setup.sh, "
                        ".ci/sweep-setup.sh)")
    if os.geteuid() == 0:
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
    server = Sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()


def _inventory(tmp: Path, sshd: Sshd) -> Path:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                    str(tmp / "other_key")], check=True, timeout=30)
    other = (tmp / "other_key.pub").read_text().split()
    bad = tmp / "wrong_known_hosts"
    bad.write_text(f"[127.0.0.1]:{sshd.port} {other[0]} {other[1]}\n")
    inv = tmp / "inventory.yaml"
    inv.write_text(f"""\
version: 1
defaults:
  user: {os.environ.get("USER") or "root"}
  port: {sshd.port}
  key_file: {sshd.key}
  known_hosts: {sshd.known_hosts}
  agent: false
hosts:
  - {{name: s1, address: 127.0.0.1}}
  - {{name: impostor, address: 127.0.0.1, known_hosts: {bad}}}
""")
    return inv


def test_fio_over_ssh_with_clock_offset_and_rejected_host_key(sshd, tmp_path):
    inv = _inventory(tmp_path, sshd)
    plan = parse_plan(f"""
name: ssh
inventory: {inv}
workdir: {tmp_path}/remote-work
lead_s: 1.0
targets:
  - {{name: vm1, ssh: s1}}
  - {{name: vm2, ssh: impostor}}
fio: {{vms: [1, 2], rw: [write], bs: [64k], size: 4m, runtime_s: 1, repeats: 1}}
""", "p.yaml")
    out = tmp_path / "out"
    res = asyncio.run(run_sweep(plan, out))
    assert (res.ran, res.failed) == (2, 1)
    rep = finish(out, res.runs, base=out)
    pts = pl.read_parquet(out / "tables" / "sweep_points.parquet").sort("point", "target")
    ok = pts.filter(pl.col("point").str.ends_with("vms1")).to_dicts()[0]
    assert ok["status"] == "ok" and ok["bw_mib_s"] > 0
    # same machine behind sshd: the measured offset is small, and it was measured
    assert ok["clock_offset_ms"] is not None and abs(ok["clock_offset_ms"]) < 1000
    assert ok["start_lag_ms"] is not None and ok["start_lag_ms"] < 1000
    bad = pts.filter(pl.col("target") == "vm2").to_dicts()[0]
    assert bad["status"] == "failed" and "host_key_rejected" in bad["reason"]
    assert [f["point"] for f in rep["failed"]] == ["fio-write-bs64k-qd1-nj1-vms2"]
