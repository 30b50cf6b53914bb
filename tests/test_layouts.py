"""Hosts and services from file layouts (issue 7 defect 2, issue 15 non-UTF-8 names).

Synthetic trees follow real naming conventions: distribution packages (``/var/log/<project>/
<binary>.log``, logrotate ``.1``/``.2.gz``/``-YYYYMMDD``), kolla (``/var/log/kolla/<project>``),
devstack (``screen-<short>.txt``, ``<short>.log``; devstack ``stackrc`` short names), zuul
multinode (``<host>/logs/screen-*.txt``) and flat renamings (``nova-compute-3.log``). Lines are
oslo.log's default ``logging_context_format_string`` (oslo.log ``_options.py``, every release):
``%(asctime)s.%(msecs)03d %(process)d %(levelname)s %(name)s [%(request_id)s ...] %(message)s``.
"""

from __future__ import annotations

import gzip
import os
import shutil
import sys
from pathlib import Path

import polars as pl
import pytest
from conftest import DATA, need

from stacklens.ingest.layout import infer_layout, merger_alias, split_service
from stacklens.ingest.names import NameMap
from stacklens.ingest.pipeline import ingest

LINE = (
    "2016-01-29 15:38:{s:02d}.690 26926 INFO nova.compute.manager "
    "[req-0b6a9c3e-1111-4222-8333-944455556666 admin demo] line {i}\n"
)


def oslo(n: int = 3) -> bytes:
    return "".join(LINE.format(s=i % 60, i=i) for i in range(n)).encode()


def tree(root: Path, names: list[str]) -> Path:
    for n in names:
        p = root / n
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(gzip.compress(oslo()) if n.endswith(".gz") else oslo())
    return root


def pairs(root: Path, **kw) -> dict[str, tuple[str, str]]:
    """{file name relative to root: (host, service)} after ingest."""
    ev = ingest([str(root)], **kw).events
    out = {}
    for f, h, s in ev.select("file", "host", "service").unique().rows():
        out[os.path.relpath(f, root)] = (h, s)
    return out


def ambiguous(root: Path, **kw) -> list[str]:
    st = ingest([str(root)], **kw).ingest_stats
    return st.filter(pl.col("kind") == "layout_ambiguous")["detail"].to_list()


@pytest.mark.parametrize(
    ("name", "service", "token"),
    [
        ("nova-compute-3.log", "nova-compute", "3"),
        ("nova-compute.fake-3.log", "nova-compute", "fake-3"),
        ("n-cpu-2.log", "nova-compute", "2"),
        ("nova-compute.log.1", "nova-compute", None),
        ("nova-compute.log.2.gz", "nova-compute", None),
        ("nova-compute.log-20160129.gz", "nova-compute", None),
        ("screen-n-cpu.txt.gz", "nova-compute", None),
        ("devstack@n-cpu.service.log", "nova-compute", None),
        ("ctl1.n-api.log", "nova-api", "ctl1"),
        ("compute-03-nova-compute.log", "nova-compute", "compute-03"),
        ("nova-api-metadata-3.log", "nova-api-metadata", "3"),
        ("/var/log/neutron/server.log", "neutron-server", None),
        ("/var/log/neutron/openvswitch-agent.log-20151124.gz", "neutron-openvswitch-agent", None),
        ("keystone-access.log", None, None),  # a qualifier, not a host
    ],
)
def test_split_service(name, service, token):
    assert split_service(name) == (service, token)


def test_flat_numbered_files_are_one_service_on_several_hosts(tmp_path):
    root = tree(tmp_path / "logs", ["nova-compute-1.log", "nova-compute-2.log",
                                    "nova-compute-3.log", "nova-compute-3.log.1",
                                    "nova-api.log"])
    got = pairs(root)
    assert got["nova-compute-1.log"] == ("1", "nova-compute")
    assert got["nova-compute-3.log"] == got["nova-compute-3.log.1"] == ("3", "nova-compute")
    # no token: the input folder names the host, as for a single-host dump
    assert got["nova-api.log"] == ("logs", "nova-api")
    # ... and that is said, as the others name their hosts
    notes = ambiguous(root)
    assert len(notes) == 1 and "--host-map '*/nova-api.log*=HOST'" in notes[0]


@pytest.mark.parametrize(
    "layout",
    [
        "{h}/var/log/nova/nova-compute.log",  # sosreport, ansible fetch, the lab
        "{h}/var/log/kolla/nova/nova-compute.log",  # kolla-ansible
        "{h}/var/log/containers/nova/nova-compute.log",  # tripleo
        "{h}/nova/nova-compute.log",
        "{h}/logs/screen-n-cpu.txt",  # zuul multinode
        "{h}/n-cpu.log",
        "nova-compute.{h}.log",
        "nova-compute-{h}.log",
    ],
)
def test_layouts_give_host_and_service(tmp_path, layout):
    hosts = ["cmp1", "compute-03"]
    root = tree(tmp_path / "in", [layout.format(h=h) for h in hosts])
    got = pairs(root)
    assert sorted(got.values()) == sorted((h, "nova-compute") for h in hosts)


def test_role_folder_and_bare_project_file(tmp_path):
    root = tree(tmp_path / "in", ["compute-03/nova.log", "controller/nova-api.log"])
    got = pairs(root)
    assert got["compute-03/nova.log"] == ("compute-03", "nova-compute")
    assert got["controller/nova-api.log"] == ("controller", "nova-api")


def test_single_host_dump_with_subfolders_keeps_the_input_name(tmp_path):
    # devstack-gate: screen logs at the top, openvswitch/ and apache/ beside them
    root = tree(tmp_path / "job", ["screen-n-cpu.txt", "openvswitch/ovs.txt",
                                   "apache/keystone.txt"])
    assert {h for h, _ in pairs(root).values()} == {"job"}


def test_ambiguity_is_said_with_the_maps_that_fix_it(tmp_path):
    root = tree(tmp_path / "in", ["frobnicator.log", "a/nova-compute.log", "b/nova-compute.log",
                                  "nova-compute-blue.log"])
    notes = ambiguous(root)
    assert any("frobnicator" in n and "--service-map '*/frobnicator.log*=SERVICE'" in n
               for n in notes)
    assert any("2 folders hold nova-compute" in n and "--host-map" in n for n in notes)
    assert any("'blue'" in n and "--host-map" in n for n in notes)
    # the suggested maps do fix it
    fixed = NameMap(["*/a/*=ha", "*/b/*=hb"], ["*/frobnicator.log*=nova-conductor"])
    got = pairs(root, names=fixed)
    assert got["a/nova-compute.log"] == ("ha", "nova-compute")
    assert got["frobnicator.log"][1] == "nova-conductor"
    assert not any("folders hold" in n for n in ambiguous(root, names=fixed))


def test_journald_export_takes_host_and_service_from_lines(tmp_path):
    # journalctl -o short-precise of devstack units: "<time> <host> <unit>[pid]: <oslo record>"
    lines = "".join(
        f"Jan 29 15:38:{i:02d}.690000 {h} devstack@n-cpu.service[26926]: INFO "
        f"nova.compute.manager [req-0b6a9c3e-1111-4222-8333-944455556666 admin demo] x\n"
        for i, h in enumerate(["cmp1", "cmp2", "cmp1"])
    )
    (tmp_path / "journal.txt").write_text(lines)
    ev = ingest([str(tmp_path)]).events
    assert sorted(set(ev.select("host", "service").rows())) == [
        ("cmp1", "nova-compute"), ("cmp2", "nova-compute")]


@pytest.mark.skipif(sys.platform == "darwin", reason="macOS refuses non-UTF-8 file names")
def test_non_utf8_file_and_folder_names_are_escaped_and_counted(tmp_path):
    bad = os.fsdecode(b"cmp\xff")
    root = tree(tmp_path / "in", [f"{bad}/nova-compute.log", f"other/nova-compute-{bad}x.log"])
    r = ingest([str(root)])
    hosts = set(r.events["host"].to_list())
    assert hosts == {"cmp\\xff", "cmp\\xffx"}
    assert r.ingest_stats.filter(pl.col("kind") == "non_utf8_name")["count"].sum() == 2
    # written and read back (DuckDB/Parquet need valid UTF-8)
    r.events.write_parquet(tmp_path / "ev.parquet")


def test_infer_layout_is_pure_and_user_maps_win():
    lay = infer_layout([("x/nova-compute-3.log", "nova-compute-3.log")],
                       NameMap(["*-3.log=three"], []))
    assert (lay["x/nova-compute-3.log"].host, lay["x/nova-compute-3.log"].service) == (
        "three", "nova-compute")


@pytest.mark.parametrize(
    ("alias", "want"),
    [
        ("NEUTRONSRV", (None, "neutron-server")),  # os-log-merger README
        ("node1/N-CPU", ("node1", "nova-compute")),  # --alias-level 2
        ("node2/Q-API", ("node2", "neutron-server")),  # FILE_MAP: server -> API
        ("node1/C-api", ("node1", "cinder-api")),
        ("node1/var/log/nova/nova-api.log", ("node1", "nova-api")),  # level 0: the path
        ("NS1", (None, None)),  # a free user alias: no legend, unknown
    ],
)
def test_merger_alias(alias, want):
    assert merger_alias(alias) == want


def test_real_logs_renamed_flat_keep_hosts_and_services(tmp_path):
    """The osp7 tree (<host>/var/log/<project>/...), each file's head copied to flat names
    ``<service>-<host>.log`` and ``<service>.<host>.log``: the same (host, service) pairs."""
    src = need(DATA / "oslo-logs" / "oslogmerger-osp7-router")
    tree_in = tmp_path / "tree"
    files = [p for h in sorted(src.glob("*/var")) for p in sorted(h.rglob("*.log"))[:12]]
    for p in files:
        dst = tree_in / p.relative_to(src)
        dst.parent.mkdir(parents=True, exist_ok=True)
        with p.open("rb") as f:
            dst.write_bytes(b"".join(f.readline() for _ in range(200)))
    want = set(ingest([str(tree_in)]).events.select("host", "service").unique().rows())
    assert len({h for h, _ in want}) >= 2
    for i, sep in enumerate(["-", "."]):
        flat = tmp_path / f"flat{i}"
        flat.mkdir()
        ev = ingest([str(tree_in)]).events.select("file", "host", "service").unique()
        for f, h, s in ev.rows():
            shutil.copy(f, flat / f"{s}{sep}{h}.log")  # copies of one service: one file
        got = set(ingest([str(flat)]).events.select("host", "service").unique().rows())
        assert got == want


def merged_line(alias: str, s: int) -> str:
    # os-log-merger LogEntry.__str__: '%s [%s] %s' % (dt_str, alias, data), dt_str '%f'
    return (f"2016-01-29 15:38:{s:02d}.690000 [{alias}] 26926 INFO neutron.agent.l3.agent "
            "[req-0b6a9c3e-1111-4222-8333-944455556666 admin demo] x\n")


def test_merger_output_aliases_give_hosts_and_services(tmp_path):
    f = tmp_path / "merged.log"
    f.write_text("".join(merged_line(a, i) for i, a in enumerate(
        ["NEUTRONSRV", "N-CPU", "nova-compute-3", "NS1", "NS1"])))
    r = ingest([str(f)])
    got = set(r.events.select("host", "service").rows())
    assert ("3", "nova-compute") in got
    folder = tmp_path.name  # an alias that names no host: the input folder's name
    assert {(folder, "neutron-server"), (folder, "nova-compute"), (folder, "ns1")} <= got
    notes = r.ingest_stats.filter(pl.col("kind") == "layout_ambiguous")
    assert notes["count"].to_list() == [2]
    assert "--host-map '*:NS1=HOST'" in notes["detail"][0]
    # the maps it suggests, os-log-merger's file:ALIAS syntax, settle it
    r = ingest([str(f)], names=NameMap(["*:NS1=ctl1"], ["*:NS1=neutron-server"]))
    assert ("ctl1", "neutron-server") in set(r.events.select("host", "service").rows())
    assert r.ingest_stats.filter(pl.col("kind") == "layout_ambiguous").height == 0


def test_service_from_loggers():
    from stacklens.ingest.layout import service_from_loggers

    assert service_from_loggers("nova", {"nova.compute.manager": 80, "nova.compute.utils": 5,
                                         "nova.scheduler.client.report": 10,
                                         "oslo_messaging": 50})[0] == "nova-compute"
    assert service_from_loggers("nova", {"nova.compute.manager": 3})[0] is None  # too few
    mixed = {"nova.compute.manager": 50, "nova.conductor.manager": 50}
    assert service_from_loggers("nova", mixed)[0] is None  # no clear majority


LAB = Path("/work/artifacts/labrun/logs")


@pytest.mark.parametrize("variant", ["dotted", "folder", "numbered"])
def test_lab_logs_renamed_flat_keep_hosts_and_services(tmp_path, variant):
    """A 2025.1 lab run's logs (<host>/var/log/<project>/<binary>.log), heads copied to flat
    layouts: computes keep their hosts and one service; controller files, which then carry no
    host, are said to."""
    if not LAB.exists():
        pytest.skip(f"no lab run at {LAB}")
    want, flat = set(), tmp_path / variant
    for p in sorted(LAB.glob("*/var/log/*/*.log")):
        host, binary = p.relative_to(LAB).parts[0], p.stem
        want.add((host, binary))
        compute = host.startswith("fake-")
        name = {"dotted": f"{binary}.{host}.log" if compute else f"{binary}.log",
                "folder": f"{host}/{p.parent.name}.log" if compute else f"{host}/{binary}.log",
                "numbered": f"{binary}-{host.removeprefix('fake-')}.log" if compute
                else f"{binary}.log"}[variant]
        dst = flat / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        with p.open("rb") as f:
            dst.write_bytes(b"".join(f.readline() for _ in range(3000)))
    r = ingest([str(flat)])
    got = set(r.events.select("host", "service").rows())
    computes = {(h, s) for h, s in want if h.startswith("fake-")}
    if variant == "numbered":
        computes = {(h.removeprefix("fake-"), s) for h, s in computes}
    assert computes <= got
    assert {s for _, s in got} == {s for _, s in want}
    if variant != "folder":
        notes = r.ingest_stats.filter(pl.col("kind") == "layout_ambiguous")["detail"]
        assert any("no host in the name or folder" in n for n in notes)


@pytest.mark.parametrize("native", ["0", "1"])
def test_merged_output_with_default_path_aliases(tmp_path, monkeypatch, native):
    """os-log-merger's default alias is the merged file's path (``oslogmerger.py``: alias level
    0); such output is detected as merged and each alias gives host and service."""
    monkeypatch.setenv("STACKLENS_NATIVE", native)
    ctx = "[req-11111111-2222-3333-4444-555555555555 u p]"
    lines = [
        f"2016-01-29 15:38:19.690000 [node1/var/log/nova/nova-api.log] 26926 INFO nova.api {ctx} a",
        f"2016-01-29 15:38:19.700000 [node2/var/log/nova/nova-compute.log] 4242 INFO "
        f"nova.compute.manager {ctx} b",
        f"2016-01-29 15:38:19.710000 [node1/var/log/nova/nova-api.log] 26926 INFO nova.api {ctx} c",
    ]
    d = tmp_path / "in"
    d.mkdir()
    (d / "merged.log").write_text("\n".join(lines) + "\n")
    r = ingest([str(d)])
    got = set(zip(r.events["host"].to_list(), r.events["service"].to_list(), strict=True))
    assert got == {("node1", "nova-api"), ("node2", "nova-compute")}
    fmt = r.ingest_stats.filter(pl.col("kind") == "format")["detail"].to_list()
    assert fmt == ["oslo_merged"]
