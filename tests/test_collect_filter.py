"""stacklens collect: the window filter and the inventory (no sshd needed)."""


from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import DATA, need

from stacklens.collect import (
    InventoryError,
    Window,
    analysis_maps,
    load_inventory,
    parse_inventory,
)
from stacklens.collect.files import local_path, plan_file
from stacklens.collect.listing import RemoteFile
from stacklens.collect.window import MAX_LEADING, awk_command, python_command, window_filter

ROUTER = DATA / "oslo-logs" / "oslogmerger-osp7-router"
DEVSTACK = DATA / "oslo-logs" / "devstack-gate-cinder-ci-2016"
SINCE, UNTIL = "2016-01-29T15:38:30", "2016-01-29T15:39:00"
W = Window.parse(SINCE, UNTIL)
REQ = "req-5a4e3f6b-0c2d-4e8f-9a1b-2c3d4e5f6a7b"
# --- the filter ----------------------------------------------------------------------------


def test_awk_python_and_inprocess_filters_agree_on_real_logs(tmp_path):
    need(DEVSTACK)
    need(ROUTER)
    files = [DEVSTACK / "screen-n-cpu.txt", DEVSTACK / "screen-c-api.txt",
             ROUTER / "controller1" / "var" / "log" / "neutron" / "server.log"]
    windows = [Window.parse("2016-06-28T13:55:00", "2016-06-28T13:57:30"), W,
               Window.parse("2000-01-01T00:00:00", "2000-01-02T00:00:00")]
    awks = [a for a in ("awk", "mawk", "gawk") if shutil.which(a)]
    assert MAX_LEADING == window_filter.__defaults__[0]
    for f in files:
        for w in windows:
            data = f.read_bytes()
            want = b"".join(window_filter(data.splitlines(keepends=True), w.since_text.encode(),
                                          w.until_text.encode()))
            cmds = [awk_command(w, a) for a in awks] + [python_command(w, sys.executable)]
            for cmd in cmds:
                got = subprocess.run(f"{cmd} < '{f}'", shell=True, capture_output=True,
                                     timeout=120, check=True).stdout
                assert got == want, (f.name, w, cmd[:30])
    # the devstack job: a 150 s window of the 2.1 MB compute log
    w = windows[0]
    kept = b"".join(window_filter((DEVSTACK / "screen-n-cpu.txt").open("rb"),
                                  w.since_text.encode(), w.until_text.encode()))
    assert 0 < len(kept) < (DEVSTACK / "screen-n-cpu.txt").stat().st_size / 2


def test_filter_keeps_continuations_and_leading_lines():
    lines = [b"+ shell trace\n", b"2016-01-29 15:38:30.000 1 INFO a [-] in\n",
             b"Traceback (most recent call last):\n", b"2016-01-29 15:39:00.000 1 INFO a [-] out\n",
             b"  continuation of out\n", b"2016-01-29 15:38:59.999 1 INFO a [-] in again"]
    got = list(window_filter(lines, b"2016-01-29 15:38:30", b"2016-01-29 15:39:00"))
    assert got == [lines[0], lines[1], lines[2], lines[5] + b"\n"]
    assert list(window_filter(lines, b"2016-01-29 15:38:31", b"2016-01-29 15:39:00")) == \
        [lines[5] + b"\n"]


def test_plan_file_is_a_table():
    tools = {"awk": "/usr/bin/awk", "gzip": "/usr/bin/gzip", "python3": "/usr/bin/python3"}

    def f(path, first, last, mtime=1454112000):
        return RemoteFile(path, 1000, mtime, 1, first, last, 0)

    cases = [
        (f("/a.log", "2016-01-29 15:38:00", "2016-01-29 15:39:30"), tools, "filtered", "awk"),
        (f("/a.log", "2016-01-29 15:38:31", "2016-01-29 15:38:59"), tools, "whole", "cat"),
        (f("/a.log", "2016-01-29 15:39:00", "2016-01-29 15:40:00"), tools, "none", ""),
        (f("/a.log", "2016-01-28 00:00:00", "2016-01-29 15:38:29"), tools, "none", ""),
        (f("/syslog", None, None), tools, "whole", "cat"),
        (f("/a.log", "2016-01-29 15:38:00", None), {"python3": "p"}, "filtered", "python3"),
        (f("/a.log", "2016-01-29 15:38:00", None), {}, "whole", "cat"),
        (f("/a.log-1.gz", "2016-01-29 15:38:00", None), tools, "filtered", "awk"),
        (f("/a.log-1.gz", "2016-01-29 15:38:00", None), {"awk": "awk"}, "whole", "cat"),
        (f("/a.log-1.gz", "2015-11-12 00:00:00", None, mtime=1447380000), tools, "none", ""),
    ]
    for rf, t, method, via in cases:
        p = plan_file(rf, W, t)
        assert (p.method, p.via) == (method, via), (rf, p.reason)
    assert local_path("ctl1", "/var/log/nova/nova-api.log") == "ctl1/var/log/nova/nova-api.log"
    assert local_path("ctl1", "/opt/stack/logs/n-api.log") == "ctl1/var/log/opt/stack/logs/n-api.log"


# --- the inventory -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("hosts:\n  - name: a\n    address: h\n    roles: [nope]\n", 2, "unknown role 'nope'"),
        ("hosts:\n  - name: a\n    address: h\n    logs:\n      - /var/log/*.log; rm -rf /\n",
         5, "not an absolute glob"),
        ("hosts:\n  - {name: a, address: h}\n  - {name: a, address: h}\n", 3, "given twice"),
        ("hosts:\n  - name: a\n    transport: ssh\n", 2, "needs an address"),
        ("hosts:\n  - name: a\n    address: h\n    port: 70000\n", 4, "less than or equal"),
        ("hosts:\n  - name: a/b\n    address: h\n", 2, "not a host name"),
        ("defaults: {user: x}\nhosts: [{name: a, address: h, colour: red}]\n", 2, "colour"),
        ("hosts:\n  - name: a\n    address: h\n    address: i\n", 4, "given twice"),
        ("hosts: [\n", 2, "not valid YAML"),
    ],
)
def test_inventory_errors_name_the_line(text, line, fragment):
    with pytest.raises(InventoryError) as e:
        parse_inventory(text, "inv.yaml")
    assert str(e.value).startswith(f"inv.yaml:{line}:"), str(e.value)
    assert fragment in str(e.value)


def test_example_inventory_loads_and_gives_maps(tmp_path):
    ex = Path(__file__).resolve().parents[1] / "examples" / "collect" / "inventory.yaml"
    inv = load_inventory(ex)
    plans = {p.name: p for p in inv.plans()}
    assert plans["ctl1"].user == "stack" and plans["cmp1"].port == 2222
    assert any("nova-api" in g.path for g in plans["ctl1"].logs)
    assert plans["ctl1"].key_file and Path(plans["ctl1"].key_file).is_absolute()
    maps = analysis_maps(inv, tmp_path / "logs")
    root = (tmp_path / "logs").resolve()
    assert f"{root}/ctl1/*=ctl1" in maps.host_map
    assert f"{root}/ctl1/var/log/neutron/server.log*=neutron-server" in maps.service_map
    from stacklens.ingest.names import NameMap

    nm = NameMap(maps.host_map, maps.service_map)
    assert nm.host(f"{root}/cmp1/var/log/nova/nova-compute.log") == "cmp1"
    assert nm.service(f"{root}/ctl1/var/log/neutron/server.log-20151124.gz") == "neutron-server"


