"""Hostile entries in a log folder: a gzip bomb, FIFOs, device files, symlink loops, unreadable
files and folders, file names that are not UTF-8. Each is counted in ``ingest_stats``, none blocks
or crashes a run, and the good logs beside them are ingested as usual.

The CLI tests run ``python -m stacklens ingest`` as a subprocess with a timeout, so a FIFO that
blocked a read would fail the test instead of hanging the suite.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import zlib
from pathlib import Path

import polars as pl
import pytest

from stacklens.ingest.sources import _gunzip, display_name, find_files, read_bytes

REPO = Path(__file__).resolve().parents[1]


def _records(n: int = 50) -> bytes:
    # oslo.log default logging_default_format_string (oslo_log/_options.py)
    return b"".join(
        b"2016-06-28 13:56:12.%03d 2931 INFO nova.compute.manager [-] record %d\n" % (i, i)
        for i in range(n)
    )


def _bomb(prefix: bytes, zeros: int) -> bytes:
    """A real gzip bomb: ``prefix`` then ``zeros`` NUL bytes, compressed in 1 MiB steps (about
    1000:1, deflate's limit) so the test never holds the expanded bytes."""
    c = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    out = [c.compress(prefix)]
    block = bytes(1 << 20)
    for _ in range(zeros >> 20):
        out.append(c.compress(block))
    out.append(c.flush())
    return b"".join(out)


def ingest_cli(logs: Path, out: Path) -> tuple[subprocess.CompletedProcess, pl.DataFrame]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    r = subprocess.run([sys.executable, "-m", "stacklens", "ingest", str(logs), "--out", str(out)],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return r, pl.read_parquet(next(out.rglob("ingest_stats.parquet")))


def kinds(stats: pl.DataFrame) -> dict[str, int]:
    return dict(stats.group_by("kind").agg(pl.col("count").sum()).iter_rows())


# --- decompression bombs ----------------------------------------------------------------------


def test_gzip_bomb_output_is_capped_and_counted():
    raw = _bomb(_records(), 256 << 20)  # 256 MiB of NULs
    assert len(raw) < 1 << 20
    rr = _gunzip(raw, limit=16 << 20)
    assert rr.data == _records()  # cut at the last line end before the cap
    assert [p[0] for p in rr.problems] == ["gzip_output_capped"]
    assert rr.problems[0][1] == "data_loss"


def test_default_cap_is_bounded_by_size_and_ratio():
    raw = _bomb(_records(), 128 << 20)
    rr = read_bytes_of(raw)
    assert rr.data == _records()
    assert "gzip_output_capped" in [p[0] for p in rr.problems]


def read_bytes_of(raw: bytes):
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "n-cpu.log.1.gz"
        p.write_bytes(raw)
        return read_bytes(p)


def test_ordinary_gzip_is_not_capped():
    body = _records(2000)
    rr = _gunzip(gzip.compress(body) + gzip.compress(body), limit=len(body) * 2)
    assert rr.data == body + body and rr.problems == []


def test_bomb_in_a_log_folder_is_counted_and_the_run_goes_on(tmp_path):
    logs = tmp_path / "logs" / "ctl1"
    logs.mkdir(parents=True)
    (logs / "nova-compute.log").write_bytes(_records())
    (logs / "nova-compute.log.1.gz").write_bytes(_bomb(_records(10), 200 << 20))
    _, st = ingest_cli(tmp_path / "logs", tmp_path / "run")
    assert kinds(st)["gzip_output_capped"] == 1


# --- FIFOs, devices, symlinks, unreadable, non-UTF-8 names ----------------------------------


def _hostile_folder(root: Path) -> Path:
    logs = root / "logs" / "ctl1"
    logs.mkdir(parents=True)
    (logs / "nova-api.log").write_bytes(_records())
    os.mkfifo(logs / "nova-scheduler.log")  # nobody ever writes: a blocking read would hang
    (logs / "zero.log").symlink_to("/dev/zero")  # a device: endless bytes
    (logs / "null.log").symlink_to("/dev/null")
    (logs / "loop-a.log").symlink_to(logs / "loop-b.log")
    (logs / "loop-b.log").symlink_to(logs / "loop-a.log")
    (logs / "self.log").symlink_to(logs / "self.log")
    (logs / "gone.log").symlink_to(logs / "deleted-long-ago.log")
    (logs / "rotated.log").symlink_to(logs / "nova-api.log")  # a duplicate: skipped, as before
    return logs


def test_special_entries_are_listed_and_classified(tmp_path):
    logs = _hostile_folder(tmp_path)
    found = {f.path.name for f in find_files([tmp_path / "logs"])}
    assert found == {"nova-api.log", "nova-scheduler.log", "zero.log", "null.log", "loop-a.log",
                     "loop-b.log", "self.log", "gone.log"}
    got = {name: [p[0] for p in read_bytes(logs / name).problems] for name in found}
    assert got == {
        "nova-api.log": [],
        "nova-scheduler.log": ["special_file_skipped"],
        "zero.log": ["special_file_skipped"],
        "null.log": ["special_file_skipped"],
        "loop-a.log": ["symlink_loop"],
        "loop-b.log": ["symlink_loop"],
        "self.log": ["symlink_loop"],
        "gone.log": ["broken_symlink"],
    }


def test_hostile_folder_ingests_without_blocking(tmp_path):
    _hostile_folder(tmp_path)
    r, st = ingest_cli(tmp_path / "logs", tmp_path / "run")
    k = kinds(st)
    assert k["special_file_skipped"] == 3 and k["symlink_loop"] == 3 and k["broken_symlink"] == 1
    ev = pl.read_parquet(next((tmp_path / "run").rglob("events.parquet")))
    assert ev.height == 50  # the good log, once


def test_explicit_fifo_argument_does_not_block(tmp_path):
    os.mkfifo(tmp_path / "pipe.log")
    (tmp_path / "ok.log").write_bytes(_records())
    r, st = ingest_cli(tmp_path, tmp_path / "run")  # folder
    assert kinds(st)["special_file_skipped"] == 1
    rr = read_bytes(tmp_path / "pipe.log")  # named directly
    assert rr.data == b"" and rr.problems[0][0] == "special_file_skipped"


def _root_reads_everything(p: Path) -> bool:
    try:
        p.read_bytes()
        return True
    except PermissionError:
        return False


def test_unreadable_file_and_folder_are_counted(tmp_path):
    logs = tmp_path / "logs"
    (logs / "locked").mkdir(parents=True)
    (logs / "locked" / "n-cpu.log").write_bytes(_records())
    (logs / "nova-api.log").write_bytes(_records())
    secret = logs / "cinder-api.log"
    secret.write_bytes(_records())
    secret.chmod(0)
    (logs / "locked").chmod(0)
    try:
        if _root_reads_everything(secret):
            pytest.skip("running as root (or with CAP_DAC_OVERRIDE): chmod 000 does not stop "
                        "reads, so 'unreadable' cannot be produced here")
        _, st = ingest_cli(logs, tmp_path / "run")
        assert kinds(st)["unreadable_file"] == 2  # the file and the folder
    finally:
        (logs / "locked").chmod(0o755)
        secret.chmod(0o644)


def test_non_utf8_file_name_is_read_and_counted(tmp_path):
    d = os.fsencode(tmp_path)
    bad = os.path.join(d, b"nova-api-\xff\xfe.log")
    with open(bad, "wb") as f:
        f.write(_records())
    found = list(find_files([tmp_path]))
    assert len(found) == 1
    rr = read_bytes(found[0].path)
    assert rr.data == _records()
    assert rr.problems[0][0] == "non_utf8_name"
    assert display_name(found[0].path).endswith("nova-api-\\xff\\xfe.log")
    display_name(found[0].path).encode("utf-8")  # valid text for the tables
