"""Config advice on the lab's own config files: ``stacklens_lab.config.write_configs`` writes
them into a temporary folder (nothing is started), then the rules run on them, directly and as
``stacklens run`` keeps them (``RUN/config/``, redacted by :func:`stacklens.drive.capture`)."""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl

from stacklens.advise import check, load_configs, write_config_findings
from stacklens.drive.capture import CloudFacts, capture
from stacklens_lab.config import LabPaths, LabSpec, write_configs


def _lab_etc(root: Path, **spec: object) -> Path:
    s = LabSpec(root=root, python=sys.executable, **spec)  # type: ignore[arg-type]
    write_configs(s, LabPaths(root))
    return root / "etc"


def _by_rule(findings) -> dict[str, list]:
    out: dict[str, list] = {}
    for f in findings:
        out.setdefault(f.rule_id, []).append(f)
    return out


def test_lab_defaults(tmp_path):
    cfg = load_configs([_lab_etc(tmp_path, computes=3, workers=2)])
    assert {f.project for f in cfg.files} == {"nova", "placement", "glance"}
    got = _by_rule(check(cfg))
    # nova's default host_subset_size 1, no shuffle, 2 scheduler workers: builds pile up
    subset = {f.option: f for f in got["host-subset"]}
    assert subset["host_subset_size"].value is None
    assert subset["host_subset_size"].default == "1"
    assert subset["host_subset_size"].severity == "warning"
    assert "2 scheduler workers" in subset["host_subset_size"].advice
    assert subset["shuffle_best_same_weighed_hosts"].file == "nova/nova.conf"
    # the lab's pools (max(10, computes) + max(20, 2 x computes)) are below 64 RPC threads
    db = {(f.section, f.option): f for f in got["db-pool"] if f.service == "nova"}
    assert db[("database", "max_pool_size")].value == "10"
    assert db[("database", "max_overflow")].value == "20"
    assert db[("database", "max_pool_size")].severity == "warning"
    assert db[("database", "max_pool_size")].file == "nova/nova-db.conf"
    assert {f.service for f in got["db-pool"]} == {"nova", "placement", "glance-api"}
    assert [f.severity for f in got["rpc-response-timeout"]] == ["info"]
    # nothing the lab does not configure, and no error
    assert set(got) == {"host-subset", "db-pool", "rpc-response-timeout"}
    assert all(f.severity != "error" for fs in got.values() for f in fs)


def test_lab_spread_and_large_pools(tmp_path):
    got = _by_rule(check(load_configs([_lab_etc(tmp_path, computes=64,
                                                scheduler_spread=True)])))
    assert "host-subset" not in got
    # 64 computes: pools of 64 + 128 cover the 64 RPC threads
    assert not [f for f in got.get("db-pool", []) if f.service == "nova"]


def test_lab_configs_kept_by_a_run(tmp_path):
    etc = _lab_etc(tmp_path / "lab", computes=2)
    run = tmp_path / "run"
    files = tuple(sorted(p for p in etc.rglob("*") if p.is_file()))
    info = capture(CloudFacts(config_files=files, config_root=etc,
                              service_versions={"nova": "31.0.0"}), run)
    assert "nova/nova.conf" in info["config_files"]
    n = write_config_findings(run)  # no events: configs alone
    df = pl.read_parquet(run / "tables" / "config_findings.parquet")
    assert n == df.height
    subset = df.filter(pl.col("option") == "host_subset_size")
    assert subset["severity"].to_list() == ["warning"] and subset["symptom"][0] is None
    # the redacted connection URL still names the database section in use
    assert "***" in (run / "config" / "nova" / "nova-db.conf").read_text()
    assert df.filter(pl.col("rule_id") == "db-pool").height > 0
