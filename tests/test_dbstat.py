"""stacklens.dbstat on a real MariaDB: a private ``mariadbd`` (own datadir, socket and port under
a tmp folder, loopback only, started the way stacklens_lab.lab does) runs a known workload while
:class:`DbRecorder` records; the report sections then count exactly the statements issued per
CUID kind, and the forced deadlock between two connections shows in the InnoDB counter.

Skips without Debian's mariadb-server (``mariadbd``, ``mariadb-install-db``). Every wait is
bounded; the server is always stopped. About 5 s.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

import duckdb
import polars as pl
import pytest

from stacklens.analyze.build import section_rows
from stacklens.analyze.db_sections import DB_SECTIONS
from stacklens.dbstat import DbRecorder, DbTarget, statement_kind

pymysql = pytest.importorskip("pymysql")
SECTION = {s.name: s for s in DB_SECTIONS}
N_SELECT, M_INSERT, D_DELETE = 30, 12, 5


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def mariadb(tmp_path_factory):
    """A private MariaDB with performance_schema on: its :class:`DbTarget` (root over the
    socket)."""
    mariadbd, install = shutil.which("mariadbd"), shutil.which("mariadb-install-db")
    if not mariadbd or not install:
        pytest.skip("no mariadbd: apt-get install mariadb-server")
    base = tmp_path_factory.mktemp("mdb")
    data, sock = base / "data", base / "s.sock"
    subprocess.run([install, "--no-defaults", f"--datadir={data}", "--user=root",
                    "--auth-root-authentication-method=socket", "--skip-test-db"],
                   capture_output=True, check=True, timeout=120)
    proc = subprocess.Popen([
        mariadbd, "--no-defaults", f"--datadir={data}", "--user=root", f"--port={_free_port()}",
        "--bind-address=127.0.0.1", "--skip-name-resolve", f"--socket={sock}",
        f"--pid-file={base / 'pid'}", f"--log-error={base / 'err.log'}",
        "--innodb-flush-log-at-trx-commit=2", "--innodb-flush-method=nosync",
        "--performance-schema=ON", "--performance-schema-consumer-statements-digest=ON",
        "--performance-schema-consumer-events-statements-current=ON",
        "--slow-query-log=ON", "--long-query-time=0", f"--slow-query-log-file={base / 'slow.log'}",
    ], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        for _ in range(120):
            if sock.exists() or proc.poll() is not None:
                break
            time.sleep(0.25)
        if not sock.exists():
            log = (base / "err.log").read_text() if (base / "err.log").exists() else ""
            pytest.fail(f"mariadbd did not start:\n{log[-2000:]}")
        yield DbTarget(user="root", socket=str(sock))  # the slow log is beside the socket
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def _conn(t: DbTarget, db: str | None = None):
    return pymysql.connect(unix_socket=t.socket, user=t.user, database=db, autocommit=True,
                           read_timeout=60)


def _deadlock(t: DbTarget) -> int:
    """Two transactions lock rows 1 and 2 in opposite orders: InnoDB kills one. Returns how
    many of the two got error 1213."""
    a, b = _conn(t, "cuidtest"), _conn(t, "cuidtest")
    errors: list[int] = []

    def run(c, first: int, second: int, go: threading.Event, ready: threading.Event) -> None:
        with c.cursor() as cur:
            cur.execute("BEGIN")
            cur.execute("UPDATE t SET v = v + 1 WHERE id = %s", (first,))
            ready.set()
            go.wait(30)
            try:
                cur.execute("UPDATE t SET v = v + 1 WHERE id = %s", (second,))
                cur.execute("COMMIT")
            except pymysql.err.OperationalError as e:
                errors.append(e.args[0])
                cur.execute("ROLLBACK")

    go_a, go_b, ra, rb = (threading.Event() for _ in range(4))
    ta = threading.Thread(target=run, args=(a, 1, 2, go_a, ra))
    tb = threading.Thread(target=run, args=(b, 2, 1, go_b, rb))
    ta.start()
    tb.start()
    assert ra.wait(30) and rb.wait(30)
    # A asks first and is seen waiting before B closes the cycle: released together, InnoDB
    # may find the deadlock before either suspends, and no row-lock wait is counted
    go_a.set()
    with _conn(t) as w, w.cursor() as cur:
        for _ in range(200):  # at most ~10 s
            cur.execute("SELECT COUNT(*) FROM information_schema.INNODB_TRX"
                        " WHERE trx_state = 'LOCK WAIT'")
            if cur.fetchone()[0]:
                break
            time.sleep(0.05)
    go_b.set()
    ta.join(60)
    tb.join(60)
    a.close()
    b.close()
    return sum(1 for e in errors if e == 1213)


def test_recorder_counts_a_known_workload_and_a_deadlock(mariadb):
    with _conn(mariadb) as c, c.cursor() as cur:
        cur.execute("CREATE DATABASE cuidtest")
        cur.execute("CREATE TABLE cuidtest.t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
        cur.execute("INSERT INTO cuidtest.t VALUES (1, 0), (2, 0)")
    rec = DbRecorder(mariadb, interval_s=0.2)
    rec.start()
    with _conn(mariadb, "cuidtest") as c, c.cursor() as cur:
        for i in range(N_SELECT):
            cur.execute("SELECT v FROM t WHERE id = %s", (i % 2 + 1,))
        for i in range(M_INSERT):
            cur.execute("INSERT INTO t VALUES (%s, %s)", (100 + i, i))
        for i in range(D_DELETE):
            cur.execute("DELETE FROM t WHERE id = %s", (100 + i,))
    killed = _deadlock(mariadb)
    tables, notes = rec.stop()
    assert killed == 1
    assert not notes, notes
    d = tables["db_digests"]
    assert d["snapshot"].n_unique() >= 2

    con = duckdb.connect()
    for name, df in tables.items():
        con.register(name, df)
    cuid = {r["schema"]: r for r in section_rows(con, SECTION["db_cuid"])}
    row = cuid["cuidtest"]
    updates = 4  # two per transaction, the deadlocked one included (counted with its error)
    assert (row["select_n"], row["insert_n"], row["update_n"], row["delete_n"]) == (
        N_SELECT, M_INSERT, updates, D_DELETE)
    total = N_SELECT + M_INSERT + updates + D_DELETE
    assert row["select_share"] == pytest.approx(N_SELECT / total)
    assert sum(row[f"{k}_share"] for k in ("select", "insert", "update", "delete")) == (
        pytest.approx(1.0))
    assert row["other_n"] >= 4  # BEGIN x2, COMMIT, ROLLBACK (and the driver's SETs)
    assert set(cuid) == {"cuidtest"}  # server schemas and the recorder's own queries left out

    summary = section_rows(con, SECTION["db_summary"])[0]
    assert summary["deadlocks"] == 1
    assert summary["lock_waits"] >= 1
    assert summary["snapshots"] == d["snapshot"].n_unique()
    top = section_rows(con, SECTION["db_top_digests"])
    upd = next(r for r in top if r["kind"] == "update")
    assert upd["calls"] == updates and upd["errors"] == 1
    timeline = section_rows(con, SECTION["db_lock_timeline"])
    assert sum(r["deadlocks"] or 0 for r in timeline) == 1
    threads = section_rows(con, SECTION["db_threads"])
    assert any(r["per"] == "user" and r["name"] == "root" and r["peak"] >= 1 for r in threads)


def test_slow_log_gives_the_same_cuid_counts(mariadb):
    from stacklens.dbstat.slowlog import read_slow_log

    with _conn(mariadb) as c, c.cursor() as cur:
        cur.execute("CREATE DATABASE slowtest")
        cur.execute("CREATE TABLE slowtest.t (id INT PRIMARY KEY, secret VARCHAR(40))")
    with _conn(mariadb, "slowtest") as c, c.cursor() as cur:
        for i in range(M_INSERT):
            cur.execute("INSERT INTO t VALUES (%s, %s)", (i, f"pw-{i}-hunter2"))
        for i in range(N_SELECT):
            cur.execute("SELECT secret FROM t WHERE id IN (%s, %s)", (i, i + 1))
        cur.execute("UPDATE t SET secret = 'x' WHERE id = 1")
    # the server writes a statement's slow-log record after it has answered the client, so
    # the last record may come a moment after the client's last call returns: wait, bounded
    want = (N_SELECT, M_INSERT, 1, 0)
    deadline = time.monotonic() + 15
    while True:
        df, notes = read_slow_log(Path(mariadb.socket).parent / "slow.log")
        con = duckdb.connect()
        con.register("db_digests", df)
        row = next(r for r in section_rows(con, SECTION["db_cuid"]) if r["schema"] == "slowtest")
        got = (row["select_n"], row["insert_n"], row["update_n"], row["delete_n"])
        if got == want or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert notes[0].endswith("slow.log") and len(notes) == 1
    assert got == want
    texts = df.filter(pl.col("schema") == "slowtest")["digest_text"].to_list()
    assert "SELECT secret FROM t WHERE id IN (...)" in texts
    assert not any("hunter2" in t for t in texts)  # literals never stored


def test_recorder_start_fails_when_the_server_is_absent(tmp_path):
    rec = DbRecorder(DbTarget(socket=str(tmp_path / "nothing.sock")), interval_s=0.1)
    with pytest.raises(pymysql.err.OperationalError):
        rec.start()


def test_target_from_openstack_url():
    t = DbTarget.from_url("mysql+pymysql://nova:s%40cret@10.0.0.5:3307/nova?charset=utf8")
    assert (t.host, t.port, t.user, t.password, t.socket) == (
        "10.0.0.5", 3307, "nova", "s@cret", None)
    t = DbTarget.from_url("mysql+pymysql://root@localhost/nova?unix_socket=/run/m.sock")
    assert t.socket == "/run/m.sock" and t.port == 3306
    from stacklens.errors import StacklensError

    with pytest.raises(StacklensError):
        DbTarget.from_url("postgresql://x@y/z")


@pytest.mark.parametrize("text,kind", [
    ("SELECT `nova` . `instances` . `id` FROM `instances` WHERE `uuid` = ?", "select"),
    ("SELECT * FROM `t` WHERE `id` = ? FOR UPDATE", "select"),
    ("WITH `x` AS ( SELECT ? ) SELECT * FROM `x`", "select"),
    ("( SELECT ? ) UNION ( SELECT ? )", "select"),
    ("INSERT INTO `t` VALUES (...)", "insert"),
    ("REPLACE INTO `t` VALUES (...)", "insert"),
    ("UPDATE `t` SET `v` = `v` + ? WHERE `id` = ?", "update"),
    ("DELETE FROM `t` WHERE `id` = ?", "delete"),
    ("COMMIT", "other"), ("SET NAMES ?", "other"), ("", "other"), (None, "other"),
])
def test_statement_kind(text, kind):
    assert statement_kind(text) == kind


def test_the_password_is_kept_nowhere(mariadb):
    rec = DbRecorder(DbTarget(user="root", password="hunter2-secret", socket=mariadb.socket),
                     interval_s=0.1)
    rec.start()
    tables, notes = rec.stop()
    blob = "".join(notes) + "".join(
        str(v) for df in tables.values() for v in df.to_dicts())
    assert "hunter2-secret" not in blob

