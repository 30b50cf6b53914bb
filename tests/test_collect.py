"""``stacklens collect`` against a real OpenSSH server on 127.0.0.1, then ingest of what it got.

The sshd is started by the fixture below (``/usr/sbin/sshd -D -f <cfg>``) on 127.0.0.1 and a
free port, with its own host key, authorized_keys, config and pid file in a tmp folder
(``UsePAM no``, ``StrictModes no``), and stopped at teardown; ``.ci/sshd-setup.sh`` installs
openssh-server without starting the system's. The "remote" hosts are folders of that same
machine holding real oslo.log files copied from ``../shared/data/oslo-logs`` (tests skip when
absent). journald is not running in this sandbox, so the remote ``journalctl`` is a fake script
put on the sshd session's PATH (``SetEnv``) ahead of ``/usr/bin``; it records its arguments and
prints devstack-style ``short-precise`` lines. Every wait is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gzip
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import DATA, need

from stacklens.collect import (
    Window,
    analysis_maps,
    collect,
    load_inventory,
    parse_inventory,
)
from stacklens.collect.files import local_path
from stacklens.collect.ssh import connect as ssh_connect
from stacklens.collect.window import window_filter

ROUTER = DATA / "oslo-logs" / "oslogmerger-osp7-router"
DEVSTACK = DATA / "oslo-logs" / "devstack-gate-cinder-ci-2016"
SINCE, UNTIL = "2016-01-29T15:38:30", "2016-01-29T15:39:00"
W = Window.parse(SINCE, UNTIL)
REQ = "req-5a4e3f6b-0c2d-4e8f-9a1b-2c3d4e5f6a7b"
def fake_journalctl(folder: Path, day: str = "Jan 29", clock: str = "15:38:4") -> Path:
    """A stand-in for journalctl (no journald in this sandbox): logs its argv and TZ beside
    itself and prints two devstack-style entries of ``day`` at ``clock``0/1 seconds."""
    folder.mkdir(parents=True, exist_ok=True)
    f = folder / "journalctl"
    f.write_text(
        "#!/bin/sh\n"
        'printf \'%s\\n\' "TZ=$TZ" "$@" > "$(dirname "$0")/journalctl.args"\n'
        "cat <<'EOF'\n"
        f"{day} {clock}0.123456 ctl1-real devstack@n-api.service[4242]: DEBUG "
        f"nova.api.openstack.wsgi [None {REQ} admin admin] Calling method 'index' "
        "{{(pid=4242) _process_stack /opt/stack/nova/nova/api/openstack/wsgi.py:520}}\n"
        f"{day} {clock}1.654321 ctl1-real devstack@n-api.service[4242]: INFO "
        f"nova.osapi_compute.wsgi.server [None {REQ} admin admin] 127.0.0.1 "
        '"GET /v2.1/servers HTTP/1.1" status: 200 len: 15 time: 0.0500000\n'
        "EOF\n"
    )
    f.chmod(0o755)
    return f


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)],
                   check=True, timeout=30)


class Sshd:
    """One sshd on 127.0.0.1: ``port``, ``key`` (authorized client key), ``known_hosts``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = _free_port()
        _keygen(root / "host_key")
        _keygen(root / "client_key")
        shutil.copy(root / "client_key.pub", root / "authorized_keys")
        self.key = root / "client_key"
        self.known_hosts = root / "known_hosts"
        hostkey = (root / "host_key.pub").read_text().split()
        self.known_hosts.write_text(f"[127.0.0.1]:{self.port} {hostkey[0]} {hostkey[1]}\n")
        self.bin = root / "bin"
        fake_journalctl(self.bin)
        cfg = root / "sshd_config"
        cfg.write_text(
            f"ListenAddress 127.0.0.1\nPort {self.port}\nHostKey {root / 'host_key'}\n"
            f"PidFile {root / 'sshd.pid'}\nAuthorizedKeysFile {root / 'authorized_keys'}\n"
            "UsePAM no\nStrictModes no\nPasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\nPubkeyAuthentication yes\n"
            "PermitRootLogin prohibit-password\nMaxSessions 20\nMaxStartups 50\n"
            f"SetEnv PATH={self.bin}:/usr/local/bin:/usr/bin:/bin\nLogLevel ERROR\n"
        )
        self.log = (root / "sshd.log").open("w")
        self.proc = subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f", str(cfg)],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sshd exited: {(root / 'sshd.log').read_text()[:500]}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port),
                                                                         timeout=1):
                return
            time.sleep(0.05)
        raise RuntimeError("sshd did not listen within 10 s")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.log.close()


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    for tool in ("/usr/sbin/sshd", shutil.which("ssh-keygen")):
        if not tool or not os.path.exists(tool):
            pytest.skip("OpenSSH server/client not installed (run .ci/sshd-setup.sh)")
    if os.geteuid() == 0:
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege-separation dir
    server = Sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()


def _copy(src: Path, dst: Path, mtime: str | None = None) -> Path:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    if mtime:
        t = datetime.fromisoformat(mtime + "+00:00").timestamp()
        os.utime(dst, (t, t))
    return dst


@pytest.fixture(scope="module")
def remote(tmp_path_factory) -> Path:
    """Two hosts' /var/log, from the real multi-host OSP7 logs, plus a rotated .gz made from a
    real file (its name dates it after the window) and a real .gz rotated months before."""
    need(ROUTER)
    r = tmp_path_factory.mktemp("remote")
    c = ROUTER / "controller1" / "var" / "log"
    ctl = r / "controller1" / "var" / "log"
    _copy(c / "nova" / "nova-api.log", ctl / "nova" / "nova-api.log")
    _copy(c / "nova" / "nova-cert.log", ctl / "nova" / "nova-cert.log")
    _copy(c / "nova" / "nova-api.log-20151113.gz", ctl / "nova" / "nova-api.log-20151113.gz",
          mtime="2015-11-13 03:00:00")
    _copy(c / "neutron" / "server.log", ctl / "neutron" / "server.log")
    gz = ctl / "nova" / "nova-compute.log-20160130.gz"
    gz.write_bytes(gzip.compress((c / "nova" / "nova-compute.log").read_bytes(), mtime=0))
    os.utime(gz, (1454112000, 1454112000))  # 2016-01-30 00:00 UTC, logrotate's time
    n = ROUTER / "networker2" / "var" / "log" / "neutron"
    _copy(n / "l3-agent.log", r / "networker2" / "var" / "log" / "neutron" / "l3-agent.log")
    _copy(n / "openvswitch-agent.log",
          r / "networker2" / "var" / "log" / "neutron" / "openvswitch-agent.log")
    return r


def _inventory(tmp: Path, sshd: Sshd, remote: Path, extra_hosts: str = "") -> Path:
    bad_kh = tmp / "wrong_known_hosts"
    _keygen(tmp / "other_host_key")
    other = (tmp / "other_host_key.pub").read_text().split()
    bad_kh.write_text(f"[127.0.0.1]:{sshd.port} {other[0]} {other[1]}\n")
    local = need(DEVSTACK)
    text = f"""\
version: 1
defaults:
  user: {os.environ.get("USER") or "root"}
  port: {sshd.port}
  key_file: {sshd.key}
  known_hosts: {sshd.known_hosts}
  agent: false
roles:
  controller:
    logs:
      - {remote}/controller1/var/log/nova/nova-*.log*
      - {{path: {remote}/controller1/var/log/neutron/server.log*, service: neutron-server}}
      - {remote}/controller1/var/log/cinder/*.log
    journald:
      - devstack@n-api.service
  network:
    logs: [{remote}/networker2/var/log/neutron/*-agent.log*]
hosts:
  - {{name: ctl1, address: 127.0.0.1, roles: [controller]}}
  - {{name: net2, address: 127.0.0.1, roles: [network]}}
  - {{name: down, address: 127.0.0.1, port: {_free_port()}, roles: [network]}}
  - {{name: impostor, address: 127.0.0.1, known_hosts: {bad_kh}, roles: [network]}}
  - name: here
    transport: local
    logs: [{local}/screen-n-sch.txt, {local}/screen-n-cond.txt]
{extra_hosts}"""
    p = tmp / "inventory.yaml"
    p.write_text(text)
    return p


def _sources(res, host: str) -> dict[str, object]:
    h = next(h for h in res.hosts if h.host == host)
    return {Path(s.source).name: s for s in h.sources}


def _expected(path: Path) -> bytes:
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return b"".join(window_filter(data.splitlines(keepends=True), W.since_text.encode(),
                                  W.until_text.encode()))


# --- collecting over SSH -------------------------------------------------------------------


def test_collect_over_ssh_filters_resumes_and_records_failures(sshd, remote, tmp_path):
    inv_path = _inventory(tmp_path, sshd, remote)
    inv = load_inventory(inv_path)
    out = tmp_path / "out"
    notes: list[str] = []
    res = collect(inv, W, out, note=notes.append, inventory_path=str(inv_path))
    by = {h.host: h for h in res.hosts}

    # failures are data, and the others went on
    assert [e["kind"] for e in by["down"].errors] == ["unreachable"]
    assert [e["kind"] for e in by["impostor"].errors] == ["host_key_rejected"]
    assert not by["down"].reached and not by["impostor"].reached
    assert not (out / "down").exists() and not (out / "impostor").exists()
    assert {e["kind"] for e in by["ctl1"].errors} == {"no_match"}  # the cinder glob

    ctl = _sources(res, "ctl1")
    ctl_remote = remote / "controller1" / "var" / "log"
    # plain files: only the window's lines travelled, and they are exactly the filter's output
    for name, sub in (("nova-api.log", "nova"), ("server.log", "neutron")):
        s = ctl[name]
        want = _expected(ctl_remote / sub / name)
        assert (s.method, s.via, s.status) == ("filtered", "awk", "fetched"), s
        assert s.bytes_transferred == len(want) < s.remote_bytes
        assert (out / s.local).read_bytes() == want
        assert s.lines == want.count(b"\n") > 0
    # the rotated .gz made after the window: filtered on the host and recompressed
    gzs = ctl["nova-compute.log-20160130.gz"]
    assert (gzs.method, gzs.status) == ("filtered", "fetched")
    assert gzip.decompress((out / gzs.local).read_bytes()) == \
        _expected(ctl_remote / "nova" / "nova-compute.log-20160130.gz")
    assert gzs.bytes_transferred == gzs.bytes == (out / gzs.local).stat().st_size
    # the .gz rotated in 2015 and the file whose last line predates the window: nothing travels
    for name in ("nova-api.log-20151113.gz", "nova-cert.log"):
        assert (ctl[name].status, ctl[name].bytes_transferred) == ("outside_window", 0)
        assert ctl[name].local is None
    # the journal export: journalctl asked for the window in UTC, per unit
    j = ctl["devstack@n-api.service"]
    assert (j.kind, j.method, j.status, j.lines) == ("journald", "filtered", "fetched", 2)
    args = (sshd.bin / "journalctl.args").read_text().split("\n")
    assert args[0] == "TZ=UTC"
    for a in ("-o", "short-precise", "--since", "2016-01-29 15:38:30", "--until",
              "2016-01-29 15:39:00", "-u", "devstack@n-api.service"):
        assert a in args
    assert datetime.fromtimestamp((out / j.local).stat().st_mtime, UTC).year == 2016

    # the manifest says it all, and whole-file cost versus what travelled
    doc = json.loads((out / "collect-manifest.json").read_text())
    assert doc["format"] == "stacklens-collect/1" and doc["window"] == W.as_dict()
    t = doc["totals"]
    assert (t["hosts"], t["hosts_reached"]) == (5, 3)
    assert t["bytes_transferred"] < t["remote_bytes"] / 2
    assert doc["analyze_maps"]["host_map"][0].endswith("/ctl1/*=ctl1")
    h = next(x for x in doc["hosts"] if x["host"] == "ctl1")
    assert {"files", "bytes", "lines", "window", "errors", "sources"} <= set(h)
    assert any(s["method"] == "filtered" and s["via"] == "awk" for s in h["sources"])
    assert any("down: unreachable" in n for n in notes)

    # local folder host: the window's lines of the real devstack job (outside it: nothing)
    here = _sources(res, "here")
    assert {s.status for s in here.values()} == {"outside_window"}

    # second run: everything complete, nothing travels
    again = collect(inv, W, out)
    assert sum(s.bytes_transferred for h in again.hosts for s in h.sources) == 0
    assert {s.status for h in again.hosts for s in h.sources} <= {"unchanged", "outside_window"}
    assert again.collected == res.collected

    # the collected folder ingests with the inventory's host names
    from stacklens.ingest.names import NameMap
    from stacklens.ingest.pipeline import ingest

    maps = analysis_maps(inv, out)
    r = ingest([str(out)], names=NameMap(maps.host_map, maps.service_map))
    ev = r.events
    assert set(ev["host"].unique()) == {"ctl1", "net2"}
    per = {(row["host"], row["service"]) for row in ev.select("host", "service").unique().to_dicts()}
    assert ("ctl1", "nova-api") in per and ("ctl1", "neutron-server") in per
    assert ("net2", "neutron-l3-agent") in per
    jev = ev.filter(ev["file"].str.contains("journald"))
    assert jev.height == 2 and set(jev["host"]) == {"ctl1"}  # the path's host, not the line's
    assert set(jev["request_id"]) == {REQ}
    ts = jev["ts_ns"].to_list()
    assert ts[0] == int(datetime.fromisoformat("2016-01-29T15:38:40.123456+00:00").timestamp()
                        * 1e6) * 1000


def test_local_folder_and_journal(tmp_path, monkeypatch):
    """A ``local`` host: the window's lines of a real devstack log, a whole .gz hard-linked,
    and the local journal (a fake journalctl first on PATH)."""
    need(DEVSTACK)
    src = tmp_path / "src" / "var" / "log"
    _copy(DEVSTACK / "screen-n-cpu.txt", src / "screen-n-cpu.txt")
    gz = src / "n-cpu.log.1.gz"
    gz.write_bytes(b"not a log at all\n")  # no header: copied whole, hard-linked
    fake = fake_journalctl(tmp_path / "bin", day="Jun 28", clock="13:56:1")
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    inv = parse_inventory(f"hosts:\n  - name: dsvm\n    transport: local\n"
                          f"    logs: ['{src}/*']\n    journald: [devstack@n-api.service]\n")
    w = Window.parse("2016-06-28T13:55:00", "2016-06-28T13:57:30")
    out = tmp_path / "out"
    res = collect(inv, w, out)
    s = _sources(res, "dsvm")
    cpu = s["screen-n-cpu.txt"]
    assert (cpu.method, cpu.via, cpu.status) == ("filtered", "awk", "fetched")
    assert cpu.bytes < cpu.remote_bytes / 2
    assert (s["n-cpu.log.1.gz"].method, s["n-cpu.log.1.gz"].via) == ("whole", "hardlink")
    assert os.path.samefile(out / s["n-cpu.log.1.gz"].local, gz)
    j = s["devstack@n-api.service"]
    assert (j.status, j.lines, j.local) == ("fetched", 2, "dsvm/var/log/journald/devstack@n-api.service.log")
    assert "2016-06-28 13:55:00" in (fake.parent / "journalctl.args").read_text()
    from stacklens.ingest.pipeline import ingest

    ev = ingest([str(out)]).events
    assert set(ev["host"].unique()) == {"dsvm"}
    lo, hi = ev["ts_ns"].min(), ev["ts_ns"].max()
    assert lo >= int(datetime.fromisoformat("2016-06-28T13:55:00+00:00").timestamp()) * 10**9
    assert hi < int(datetime.fromisoformat("2016-06-28T13:57:30+00:00").timestamp()) * 10**9


class _CutAfter:
    """A transport whose streams break after ``limit`` bytes (a connection lost mid-file)."""

    def __init__(self, inner, limit: int) -> None:
        self.inner, self.limit, self.label = inner, limit, inner.label

    async def run(self, script, timeout_s):
        return await self.inner.run(script, timeout_s)

    async def stream(self, script):
        s = await self.inner.stream(script)
        limit = self.limit

        class Cut:
            sent = 0

            async def read(self):
                if self.sent >= limit:
                    raise ConnectionResetError("cut by the test")
                b = (await s.read())[: limit - self.sent]
                self.sent += len(b)
                return b

            async def finish(self):
                return await s.finish()

            async def abort(self):
                await s.abort()

        return Cut()

    async def close(self):
        await self.inner.close()


def test_interrupted_transfer_resumes_and_agent_auth_works(sshd, remote, tmp_path, monkeypatch):
    inv = parse_inventory(
        f"defaults: {{port: {sshd.port}, known_hosts: {sshd.known_hosts}, "
        f"user: {os.environ.get('USER') or 'root'}}}\n"
        f"hosts:\n  - name: ctl1\n    address: 127.0.0.1\n"
        f"    logs: [{remote}/controller1/var/log/neutron/server.log]\n"
    )
    out = tmp_path / "out"

    async def cut_connect(plan, timeout_s):
        t, err = await ssh_connect(dataclasses.replace(plan, key_file=str(sshd.key)), timeout_s)
        return (_CutAfter(t, 100_000) if t else None), err

    first = collect(inv, W, out, connect=cut_connect)
    s = _sources(first, "ctl1")["server.log"]
    assert s.status == "error" and "cut by the test" in s.error
    src = remote / "controller1" / "var" / "log" / "neutron" / "server.log"
    part = out / (local_path("ctl1", str(src)) + ".part")
    assert part.stat().st_size == 100_000

    # agent authentication: a real ssh-agent in tmp holding the key; no key_file in the plan
    if not shutil.which("ssh-agent") or not shutil.which("ssh-add"):
        pytest.skip("ssh-agent not installed")
    sock = tmp_path / "agent.sock"
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if sock.exists():
                break
            time.sleep(0.05)
        env = {**os.environ, "SSH_AUTH_SOCK": str(sock)}
        subprocess.run(["ssh-add", "-q", str(sshd.key)], env=env, check=True, timeout=30,
                       capture_output=True)
        monkeypatch.setenv("SSH_AUTH_SOCK", str(sock))
        monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.ssh/id_* keys: only the agent's
        second = collect(inv, W, out)
    finally:
        agent.terminate()
        agent.wait(timeout=10)
    s2 = _sources(second, "ctl1")["server.log"]
    want = _expected(src)
    assert s2.status == "resumed", s2
    assert s2.bytes_transferred == len(want) - 100_000 + 4096  # the rest plus the overlap check
    assert (out / s2.local).read_bytes() == want
    assert not part.exists()


def test_auth_failure_is_recorded(sshd, remote, tmp_path):
    _keygen(tmp_path / "stranger")
    inv = parse_inventory(
        f"defaults: {{port: {sshd.port}, known_hosts: {sshd.known_hosts}, agent: false, "
        f"user: {os.environ.get('USER') or 'root'}, key_file: {tmp_path / 'stranger'}}}\n"
        f"hosts:\n  - {{name: ctl1, address: 127.0.0.1, logs: [{remote}/controller1/var/log/nova/*]}}\n"
        f"  - {{name: nokh, address: 127.0.0.1, known_hosts: {tmp_path / 'missing'}}}\n"
    )
    res = collect(inv, W, tmp_path / "out")
    assert [e["kind"] for e in res.hosts[0].errors] == ["auth_failed"]
    assert [e["kind"] for e in res.hosts[1].errors] == ["known_hosts_missing"]
    assert res.collected == 0


# --- the command line ----------------------------------------------------------------------

CLI = "from stacklens.cli import main; main()"


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", CLI, *args], capture_output=True, text=True,
                          timeout=300)


def test_cli_exit_codes(sshd, remote, tmp_path):
    inv_path = _inventory(tmp_path, sshd, remote)
    r = _cli("collect", str(inv_path), "--since", SINCE, "--until", UNTIL,
             "--out", str(tmp_path / "out"), "--parallel", "2", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["totals"]["hosts_reached"] == 3
    assert "down: unreachable" in r.stderr and "impostor: host_key_rejected" in r.stderr

    dead = tmp_path / "dead.yaml"
    dead.write_text(f"hosts:\n  - {{name: down, address: 127.0.0.1, port: {_free_port()}, "
                    f"known_hosts: {sshd.known_hosts}}}\n")
    r = _cli("collect", str(dead), "--since", SINCE, "--until", UNTIL, "--out",
             str(tmp_path / "o2"))
    assert r.returncode == 1
    assert r.stderr.strip().splitlines()[-1].startswith("stacklens: error: nothing could be")
    r = _cli("collect", str(dead), "--since", UNTIL, "--until", SINCE, "--out",
             str(tmp_path / "o3"))
    assert r.returncode == 1 and "empty window" in r.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("hosts:\n  - name: x\n    roles: [a]\n")
    r = _cli("collect", str(bad), "--since", SINCE, "--until", UNTIL)
    assert r.returncode == 1 and f"{bad}:2:" in r.stderr
    assert _cli("collect", "--help").returncode == 0


def test_window_parsing():
    w = Window.parse("2016-01-29T16:38:30.5+01:00", "2016-01-29T15:38:59.2Z")
    assert (w.since_text, w.until_text) == ("2016-01-29 15:38:30", "2016-01-29 15:39:00")
    with pytest.raises(Exception, match="not an ISO 8601"):
        Window.parse("yesterday", "today")
    assert asyncio.iscoroutinefunction(ssh_connect)


def test_grown_file_is_appended_and_rewritten_file_restarts(tmp_path):
    """A live log that grew: only the new lines travel (after a 4 KiB overlap check). The same
    inode rewritten with other bytes (copytruncate): the overlap differs and it starts over."""
    need(ROUTER)
    log = _copy(ROUTER / "controller1" / "var" / "log" / "nova" / "nova-api.log",
                tmp_path / "src" / "nova-api.log")
    inv = parse_inventory(f"hosts:\n  - {{name: h, transport: local, logs: ['{log}']}}\n")
    w = Window.parse("2016-01-29T15:38:30", "2016-01-29T16:00:00")
    out = tmp_path / "out"
    first = _sources(collect(inv, w, out), "h")["nova-api.log"]
    assert (first.method, first.status) == ("filtered", "fetched")
    more = b"2016-01-29 15:40:00.000 1 INFO nova.api [-] later line\n" * 50
    with log.open("ab") as f:
        f.write(more)
    grown = _sources(collect(inv, w, out), "h")["nova-api.log"]
    assert grown.status == "appended"
    assert grown.bytes_transferred == len(more) + 4096
    assert grown.bytes == first.bytes + len(more)
    data = log.read_bytes()
    with log.open("r+b") as f:  # same inode, other content, larger, later
        f.write(data.replace(b"INFO", b"WARN") + more[:60])
    st = log.stat()
    os.utime(log, (st.st_atime, st.st_mtime + 10))
    again = _sources(collect(inv, w, out), "h")["nova-api.log"]
    want = b"".join(window_filter(log.open("rb"), w.since_text.encode(), w.until_text.encode()))
    assert again.status == "fetched" and (out / again.local).read_bytes() == want
