"""The load driver against a fake nova (httpx.MockTransport) on a virtual-time loop: nothing
sleeps for real, and every assertion is about counts and ordering, never wall time."""

from __future__ import annotations

import asyncio
import email.utils
import json
from collections import Counter
from pathlib import Path

import httpx
import polars as pl
import pytest
from doubles.fake_nova import FakeNova

from stacklens.drive.cleanup import cleanup_prefix
from stacklens.drive.client import ComputeClient, Connection, iso, resolve_connection
from stacklens.drive.clock import LoopClock, run_virtual
from stacklens.drive.driver import Driver
from stacklens.drive.plan import Plan
from stacklens.drive.records import RecordWriter, RequestRecord, read_records, to_frame
from stacklens.drive.scenario import Sla, parse_scenario
from stacklens.drive.session import run_scenario
from stacklens.drive.shape import Constant
from stacklens.drive.sla import evaluate_sla, percentile
from stacklens.errors import UserError
from stacklens.schema import REQUESTS
from stacklens.store import RunStore

IMG = "5e0cbc1e-0000-4000-8000-000000000001"
RUN = "t0000001"


class Rig:
    """A fake nova, a client on its transport and a driver, on the running virtual loop."""

    def __init__(self, tmp_path: Path, nova: dict | None = None, transport=None, **plan):
        self.clock = LoopClock()
        self.nova = FakeNova(now=lambda: self.clock.now_ns() / 1e9, **(nova or {}))
        self.client = ComputeClient(Connection("http://nova.test/v2.1", "u:p"),
                                    transport=transport or self.nova.transport())
        plan.setdefault("total", 20)
        plan.setdefault("concurrency", plan["total"])
        plan.setdefault("poll_interval_s", 2.0)
        self.plan = Plan(run_id=RUN, image_ref=IMG, flavor_ref="1", **plan)
        self.path = tmp_path / "requests.jsonl"
        self.writer = RecordWriter(self.path)
        self.ticks: list[tuple[float, int, int]] = []  # (time, in_flight, tasks)
        self.driver = Driver(self.plan, self.client, self.writer, clock=self.clock,
                             on_tick=self._tick)

    def _tick(self, st) -> None:
        self.ticks.append((self.clock.monotonic(), st.in_flight, len(asyncio.all_tasks())))

    async def run(self):
        try:
            return await self.driver.run()
        finally:
            self.writer.close()
            await self.client.aclose()


def drive(tmp_path, nova=None, transport=None, **plan):
    async def go():
        rig = Rig(tmp_path, nova, transport, **plan)
        return rig, await rig.run()

    return run_virtual(go())


def outcomes(summary) -> Counter:
    return Counter(r.outcome for r in summary.records)


def test_boot_and_delete_records_every_phase(tmp_path):
    rig, s = drive(tmp_path, nova={"polls_to_active": 2, "hosts": 3}, total=30)
    assert not s.interrupted and s.leftovers == []
    assert outcomes(s) == {"ok": 30}
    sent = {sv.global_request_id for sv in rig.nova.servers.values()}
    for r in s.records:
        assert r.submit_ns <= r.accepted_ns <= r.active_ns <= r.delete_ns <= r.gone_ns
        assert r.create_http_status == 202 and r.delete_http_status == 204
        assert r.request_id.startswith("req-") and r.delete_request_id.startswith("req-")
        assert r.global_request_id in sent  # the id the driver sent reached the server
        assert r.name.startswith(f"sl-{RUN}-r0-") and r.server_id in rig.nova.servers
        assert r.host in {"fake-1", "fake-2", "fake-3"} and r.status == "DELETED"
        assert r.launched_ns is not None and r.create_s > 0 and r.delete_s > 0
    assert rig.nova.live == []  # nothing left behind
    # the JSONL, read back, is the same records (last snapshot per server)
    back, bad = read_records(rig.path)
    assert bad == 0 and back == s.records


def test_failures_are_data(tmp_path):
    rig, s = drive(tmp_path, nova={"post_500_every": 5, "error_every": 4, "post_refuse_every": 7},
                   total=70)
    got = outcomes(s)
    assert sum(got.values()) == 70 and not s.interrupted
    assert got["api_error"] > 0 and got["error"] > 0 and got["transport_error"] > 0
    assert got["ok"] == 70 - got["api_error"] - got["error"] - got["transport_error"]
    api = next(r for r in s.records if r.outcome == "api_error")
    assert api.create_http_status == 500 and api.request_id and "injected" in api.error
    err = next(r for r in s.records if r.outcome == "error")
    assert err.error.startswith("No valid host") and err.active_ns is None
    assert err.gone_ns is not None  # cleanup policy delete: ERROR servers are deleted too
    refused = next(r for r in s.records if r.outcome == "transport_error")
    assert refused.create_http_status is None and "ConnectError" in refused.error
    assert rig.nova.live == []
    assert s.stats.failed == 70 - got["ok"] and s.stats.done == 70


def test_concurrency_is_never_exceeded(tmp_path):
    rig, s = drive(tmp_path, nova={"post_latency_s": 1.0, "polls_to_active": 3}, total=60,
                   concurrency=7)
    assert outcomes(s) == {"ok": 60}
    assert s.stats.peak_in_flight == 7
    assert rig.nova.posts_open_max <= 7
    assert all(f <= 7 for _, f, _ in rig.ticks)
    # reconstruct in-flight from the records: a server is in flight from submit to gone
    events = sorted([(r.submit_ns, 1) for r in s.records] + [(r.gone_ns, -1) for r in s.records],
                    key=lambda e: (e[0], e[1]))
    level = peak = 0
    for _, d in events:
        level += d
        peak = max(peak, level)
    assert peak <= 7


def test_one_list_call_per_poll_interval_and_no_per_server_gets(tmp_path):
    rig, s = drive(tmp_path, nova={"polls_to_active": 4, "build_s": 10.0}, total=200,
                   poll_interval_s=2.0)
    assert outcomes(s) == {"ok": 200}
    times = rig.nova.list_times[:-1]  # the last one is the final sweep by prefix
    assert len(times) >= 5
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert min(gaps) >= 2.0 - 1e-9  # never more than one list per interval
    assert s.calls.get("show", 0) == 0  # never one GET per server
    assert s.calls["list"] == len(rig.nova.list_times)  # one page each: 200 < page size
    assert s.calls["create"] == 200 and s.calls["delete"] == 200


def test_pages_are_followed(tmp_path):
    rig, s = drive(tmp_path, nova={"page_size": 50}, total=180)
    assert outcomes(s) == {"ok": 180}
    # a poll that sees all 180 servers takes 4 pages; the list counter counts pages
    assert s.calls["list"] > len(rig.nova.list_times)


def test_changes_since_follows_the_server_clock(tmp_path):
    """changes-since is the previous answer's Date (server clock) minus the overlap, so a
    client clock that is off cannot hide a change; deleted servers come back as DELETED."""
    box: dict = {}
    seen: list[tuple[str, str | None, str]] = []  # (method, changes-since, Date answered)

    async def handler(request: httpx.Request) -> httpx.Response:
        nova = box["nova"]
        st, hd, bd = nova.handle(request.method, request.url.path, dict(request.url.params),
                                 request.headers, request.content)
        seen.append((request.method, request.url.params.get("changes-since"), hd["date"]))
        return httpx.Response(st, headers=hd, content=bd)

    async def go():
        rig = Rig(tmp_path, transport=httpx.MockTransport(handler), total=5,
                  poll_interval_s=3.0)
        rig.nova.now = lambda: rig.clock.now_ns() / 1e9 + 3600.0  # server clock 1 h ahead
        box["nova"] = rig.nova
        return rig, await rig.run()

    rig, s = run_virtual(go())
    assert outcomes(s) == {"ok": 5}

    def ts(date: str) -> float:
        return email.utils.parsedate_to_datetime(date).timestamp()

    lists = [(i, since) for i, (m, since, _) in enumerate(seen) if m == "GET" and since]
    assert lists
    first_post_date = next(d for m, _, d in seen if m == "POST")
    assert lists[0][1] == iso(ts(first_post_date) - 2.0)
    for (i, _), (j, _) in zip(lists, lists[1:], strict=False):
        assert seen[j][1] == iso(ts(seen[i][2]) - 2.0)  # previous list's Date - overlap


def test_delete_when_all_waits_for_every_server(tmp_path):
    _, s = drive(tmp_path, nova={"polls_to_active": 1, "build_s": 5.0},
                 total=40, concurrency=40, delete_when="all", shape=Constant(4.0))
    assert outcomes(s) == {"ok": 40}
    assert max(r.active_ns for r in s.records) <= min(r.delete_ns for r in s.records)


def test_cleanup_policies(tmp_path):
    rig, s = drive(tmp_path / "keep", nova={"error_every": 3}, total=9, delete=False,
                   cleanup="keep")
    assert outcomes(s) == {"ok": 6, "error": 3}
    assert len(rig.nova.live) == 9 and len(s.leftovers) == 9

    rig, s = drive(tmp_path / "ke", nova={"error_every": 3}, total=9, delete=False,
                   cleanup="keep_errors")
    assert sorted(x.status for x in rig.nova.live) == ["ERROR"] * 3

    async def sweep():  # stacklens cleanup RUN: by prefix
        return await cleanup_prefix(rig.client.__class__(rig.client.conn,
                                                         transport=rig.nova.transport()),
                                    f"sl-{RUN}-", poll_interval_s=1)

    res = run_virtual(sweep())
    assert (res.found, res.deleted, res.remaining) == (3, 3, []) and rig.nova.live == []


def test_batch_mode_one_post_per_batch(tmp_path):
    rig, s = drive(tmp_path, total=30, batch_size=10)
    assert s.calls["create"] == 3
    assert outcomes(s) == {"ok": 30}
    assert len({r.request_id for r in s.records}) == 3  # one create request per batch
    assert sorted(r.iteration for r in s.records) == list(range(30))
    assert all(r.name.startswith(f"sl-{RUN}-r0-b") for r in s.records)
    assert rig.nova.live == []


def test_batch_refused_counts_every_server(tmp_path):
    _, s = drive(tmp_path, nova={"post_500_every": 2}, total=20, batch_size=10)
    assert outcomes(s) == {"ok": 10, "api_error": 10}


def test_never_active_is_a_timeout_and_is_deleted(tmp_path):
    rig, s = drive(tmp_path, nova={"build_s": 10_000.0}, total=5, active_timeout_s=60.0)
    assert outcomes(s) == {"timeout": 5}
    assert all("not ACTIVE after 60 s" in r.error for r in s.records)
    assert rig.nova.live == []


def test_a_lost_create_answer_is_adopted_and_cleaned_up(tmp_path):
    """The POST reaches nova but the answer is lost: the record says timeout, the server is
    found by name, and nothing is left behind."""
    nova_box: dict = {}

    async def handler(request: httpx.Request) -> httpx.Response:
        nova = nova_box["nova"]
        st, hd, bd = nova.handle(request.method, request.url.path, dict(request.url.params),
                                 request.headers, request.content)
        if request.method == "POST" and nova._posts % 3 == 0:
            raise httpx.ReadTimeout("answer lost (injected)", request=request)
        return httpx.Response(st, headers=hd, content=bd)

    async def go():
        rig = Rig(tmp_path, transport=httpx.MockTransport(handler), total=9)
        nova_box["nova"] = rig.nova
        return rig, await rig.run()

    rig, s = run_virtual(go())
    got = outcomes(s)
    assert got == {"ok": 6, "timeout": 3}
    lost = [r for r in s.records if r.outcome == "timeout"]
    assert all(r.server_id in rig.nova.servers for r in lost)  # adopted by name
    assert rig.nova.live == []


def test_cancel_stops_issuing_and_deletes_what_it_created(tmp_path):
    """The first Ctrl-C (asyncio.Runner cancels the main task): stop, delete, return."""

    async def go():
        rig = Rig(tmp_path, nova={"build_s": 30.0, "post_latency_s": 0.5}, total=100,
                  concurrency=100, shape=Constant(10.0))
        task = asyncio.create_task(rig.run())
        await asyncio.sleep(5.0)  # ~50 issued, all still BUILD
        task.cancel()
        return rig, await task

    rig, s = run_virtual(go())
    assert s.interrupted
    assert 0 < s.stats.issued < 100
    assert len(s.records) == s.stats.issued
    assert outcomes(s) == {"cancelled": s.stats.issued}
    assert rig.nova.live == [] and s.leftovers == []
    assert len(rig.nova.servers) == s.stats.issued  # nothing issued after the cancel
    back, _ = read_records(rig.path)
    assert {r.outcome for r in back} == {"cancelled"}


def test_second_cancel_exits_at_once_keeping_records(tmp_path):
    async def go():
        rig = Rig(tmp_path, nova={"build_s": 30.0, "delete_s": 60.0}, total=50)
        task = asyncio.create_task(rig.run())
        await asyncio.sleep(3.0)
        task.cancel()  # first: cleanup starts; deletes take 60 s
        await asyncio.sleep(4.0)
        task.cancel()  # second: out at once
        with pytest.raises(asyncio.CancelledError):
            await task
        return rig

    rig = run_virtual(go())
    back, bad = read_records(rig.path)
    assert bad == 0 and len(back) == 50
    assert {r.outcome for r in back} == {"cancelled"}
    assert all(r.delete_ns is not None for r in back)  # deletes had been sent
    assert len(rig.nova.live) == 50  # still deleting: `stacklens cleanup` finishes the job


def test_stop_is_the_same_as_the_first_ctrl_c(tmp_path):
    async def go():
        rig = Rig(tmp_path, nova={"build_s": 30.0}, total=40, shape=Constant(4.0))
        task = asyncio.create_task(rig.run())
        await asyncio.sleep(2.0)
        rig.driver.stop()
        return rig, await task

    rig, s = run_virtual(go())
    assert s.interrupted and rig.nova.live == [] and len(s.records) < 40


def test_two_thousand_in_flight_cost_no_task_per_server(tmp_path):
    rig, s = drive(tmp_path, nova={"build_s": 60.0, "polls_to_active": 1}, total=2000,
                   concurrency=2000, poll_interval_s=5.0)
    assert outcomes(s) == {"ok": 2000}
    assert s.stats.peak_in_flight == 2000
    plateau = [(f, n) for t, f, n in rig.ticks if 5.0 <= t < 60.0]
    assert plateau and all(f == 2000 for f, _ in plateau)
    assert max(n for _, n in plateau) <= 5  # run, poller, test: no task per server
    # API calls are counted, not timed: one create and one delete per server, a few lists
    assert s.calls["create"] == 2000 and s.calls["delete"] == 2000
    assert s.calls["list"] <= 2 * len(rig.nova.list_times)  # at most 2 pages per list
    assert s.calls.get("show", 0) == 0


def test_records_frame_matches_the_schema_and_the_store(tmp_path):
    rig, s = drive(tmp_path, nova={"error_every": 2}, total=6)
    df = to_frame(s.records)
    assert dict(df.schema) == REQUESTS
    assert df.height == 6 and df["create_s"].null_count() == 3
    store = RunStore(tmp_path / "run")
    store.write({"requests": df})
    assert store.read("requests").equals(df)
    assert to_frame([]).schema == pl.Schema(REQUESTS)


def test_a_line_cut_by_a_kill_is_skipped(tmp_path):
    p = tmp_path / "r.jsonl"
    with RecordWriter(p) as w:
        w.write(RequestRecord(run_id="r", name="a", submit_ns=1))
        w.write(RequestRecord(run_id="r", name="a", submit_ns=1, accepted_ns=2))
        w.write(RequestRecord(run_id="r", name="b", submit_ns=3))
    with open(p, "a") as f:
        f.write('{"run_id": "r", "name": "c", "sub')
    recs, bad = read_records(p)
    assert bad == 1 and [r.name for r in recs] == ["a", "b"] and recs[0].accepted_ns == 2
    assert json.loads(p.read_text().splitlines()[0])["v"] == 1


def test_sla_checks():
    recs = [RequestRecord(run_id="r", name=str(i), outcome="ok", submit_ns=0,
                          active_ns=int((i + 1) * 1e9)) for i in range(19)]
    recs.append(RequestRecord(run_id="r", name="x", outcome="error"))
    checks = {c.name: c for c in evaluate_sla(recs, Sla(success_rate=0.95, p95_s=18.0))}
    assert checks["success_rate"].value == pytest.approx(0.95) and checks["success_rate"].ok
    assert checks["p95_s"].value == pytest.approx(18.1) and not checks["p95_s"].ok
    assert evaluate_sla([], Sla(success_rate=0.5))[0].ok is False
    assert percentile([], 0.5) is None and percentile([3.0], 0.95) == 3.0


def test_run_scenario_writes_the_run_folder(tmp_path):
    scn = parse_scenario("""\
name: t
workload:
  boot_servers: {per_compute: 3, flavor: m1.tiny, image: cirros, concurrency: 5}
sla: {success_rate: 0.99}
""")

    async def go():
        clock = LoopClock()
        nova = FakeNova(now=lambda: clock.now_ns() / 1e9, hosts=4, error_every=6)
        res = await run_scenario(scn, Connection("http://nova.test/v2.1", "u:p"), tmp_path / "run",
                                 scenario_text="x", transport=nova.transport(), clock=clock,
                                 run_id="feedbeef")
        return res, nova

    res, nova = run_virtual(go())
    assert res.plan.total == 12  # 3 per compute x 4 computes up (os-services)
    assert res.plan.image_ref == IMG and res.plan.flavor_ref == "1"  # looked up by name
    assert [c.name for c in res.breached] == ["success_rate"]
    m = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert m["run"]["prefix"] == "sl-feedbeef-" and m["run"]["state"] == "finished"
    assert m["run"]["summary"]["outcomes"] == {"error": 2, "ok": 10}
    assert "run" in m["stages"] and "token" not in json.dumps(m["run"]["connection"]).replace(
        '"token": "set"', "")
    assert RunStore(tmp_path / "run").read("requests").height == 12
    with pytest.raises(UserError, match="already holds a run"):
        run_virtual(run_scenario(scn, Connection("http://x/v2.1"), tmp_path / "run"))


def test_connection_from_a_noauth_clouds_yaml(tmp_path):
    cy = tmp_path / "clouds.yaml"
    cy.write_text("""\
clouds:
  stacklens-lab:
    auth_type: none
    auth_token: admin:admin
    auth: {endpoint: "http://127.0.0.1:8774"}
  kc:
    auth: {auth_url: "http://k:5000/v3", username: u, password: p}
""")
    c = resolve_connection("stacklens-lab", config_file=cy)
    assert (c.endpoint, c.token) == ("http://127.0.0.1:8774/v2.1", "admin:admin")
    with pytest.raises(UserError, match="openstacksdk"):
        resolve_connection("kc", config_file=cy)
    with pytest.raises(UserError, match="not found"):
        resolve_connection("nope", config_file=cy)
    c = resolve_connection(None, "http://h:8774/v2.1/", "u:p")
    assert (c.endpoint, c.token, c.source) == ("http://h:8774/v2.1", "u:p", "flags")
    with pytest.raises(UserError, match="no cloud"):
        resolve_connection(None, None, None)


def test_reachability_is_skipped_with_the_reason_when_the_guest_has_no_address(tmp_path):
    rig, s = drive(tmp_path, total=4, ping=True, ssh=True)
    assert outcomes(s) == {"ok": 4}
    assert {r.reach_note for r in s.records} == {
        "skipped: the server has no IPv4 address (networks: none?)"}
    assert all(r.ping_ns is None and r.ssh_ns is None for r in s.records)


def test_a_broken_prober_fails_its_server_not_the_run(tmp_path):
    class Broken:
        async def reach(self, server, ping, ssh, port, timeout_s):
            raise RuntimeError("probe exploded")

    async def go():
        rig = Rig(tmp_path, total=3, ping=True)
        rig.driver.prober = Broken()
        return rig, await rig.run()

    rig, s = run_virtual(go())
    assert outcomes(s) == {"failed": 3}
    assert all("probe exploded" in r.error for r in s.records)
    assert rig.driver.errors and rig.nova.live == []  # the final sweep still deletes them


def test_a_list_that_always_fails_ends_in_timeouts_not_a_hang(tmp_path):
    box: dict = {}

    async def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/servers/detail"):
            return httpx.Response(500, json={"computeFault": {"code": 500, "message": "db down"}})
        st, hd, bd = box["nova"].handle(request.method, request.url.path,
                                        dict(request.url.params), request.headers,
                                        request.content)
        return httpx.Response(st, headers=hd, content=bd)

    async def go():
        rig = Rig(tmp_path, transport=httpx.MockTransport(handler), total=5,
                  active_timeout_s=30.0, delete_timeout_s=30.0)
        box["nova"] = rig.nova
        return rig, await rig.run()

    rig, s = run_virtual(go())
    assert outcomes(s) == {"timeout": 5}
    assert s.stats.poll_errors >= 10
    assert s.calls["show"] == 5  # the one GET per server, only after the delete timeout
    assert len(s.leftovers) == 5  # the sweep could not list: every undeleted server is named
    assert any("db down" in e for e in s.errors)


def test_a_cancel_is_never_lost_while_waiting():
    """The pacer's timed waits propagate a cancel that lands in the same loop step as the
    awaited event (Python 3.11's ``asyncio.wait_for`` returned normally there, and a run's first
    Ctrl-C was lost: every server was booted and the run exited 0)."""
    from stacklens.drive.pacer import wait_at_most

    async def main() -> tuple[str, bool, bool]:
        ev = asyncio.Event()

        async def waiter() -> str:
            try:
                await wait_at_most(ev.wait(), 5)
            except asyncio.CancelledError:
                return "cancelled"
            return "lost"

        t = asyncio.create_task(waiter())
        await asyncio.sleep(0.01)
        ev.set()
        t.cancel()
        late = asyncio.Event()
        return await t, await wait_at_most(late.wait(), 0.01), await wait_at_most(
            asyncio.sleep(0), 1)

    assert asyncio.run(main()) == ("cancelled", False, True)
