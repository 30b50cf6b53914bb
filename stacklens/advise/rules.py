"""The declared config rules (:data:`RULES`), one :class:`~stacklens.advise.rule.Rule` each.

Defaults and their history were read from the option definitions (``source`` of each rule; the
commits: nova 00a03040 (2026-08, tags 12.0.0 .. 33.0.2), oslo.messaging 8ea2d5b4 (2026-05),
oslo.db 009d23df, neutron 2131d26f (2026-08), keystone tags 10.0.0 .. 14.0.0). Release ordinals
are nova majors (:mod:`stacklens.advise.release`): 12 Liberty, 14 Newton, 15 Ocata, 18 Rocky,
28 2023.2, 31 2025.1, 32 2025.2.

The large-scale sources cited: the OpenStack Large Scale SIG's journey pages
(docs.openstack.org/large-scale/journey/configure/rabbitmq.html) and stories
(docs.openstack.org/large-scale/stories/), the public 600+ node studies summarised in
shared/docs/field-notes.md (sections 4 and 7), the OpenStack HA guide (Galera behind HAProxy
with one active node) and RabbitMQ's networking guide (file descriptors).
"""

from __future__ import annotations

from stacklens.advise.rule import (
    ANY_SECTION,
    Ctx,
    Rule,
    Setting,
    Verdict,
    as_bool,
    as_number,
    hosts_of,
    ordinal_text,
)

__all__ = ["RPC_PROJECTS", "RULES", "rule"]

#: Projects whose services are oslo.messaging RPC servers and clients.
RPC_PROJECTS = ("nova", "neutron")
_CPUS = "(number of CPUs)"

_OSLO_MSG = "oslo.messaging"


def _per(projects: tuple[str, ...], section: str, option: str, defaults: tuple[tuple[int, str], ...],
         aliases: tuple[tuple[str, str], ...] = ()) -> tuple[Setting, ...]:
    return tuple(Setting(p, section, option, defaults, aliases) for p in projects)


def _explicit_below(ctx: Ctx, s: Setting, floor: float, note: str) -> list[Verdict]:
    v = as_number(ctx.raw(s))
    return [Verdict("warning", s, note)] if v is not None and v < floor else []


# --- RPC ----------------------------------------------------------------------------------------
RPC_TIMEOUT = _per(RPC_PROJECTS, "DEFAULT", "rpc_response_timeout", ((0, "60"),))


def _rpc_timeout(ctx: Ctx) -> list[Verdict]:
    out: list[Verdict] = []
    for s in RPC_TIMEOUT:
        if not ctx.has(s.project):
            continue
        v = ctx.number(s) or 60
        if v < 60:
            out.append(Verdict("warning", s, f"{ordinal_text(v)} s is below oslo.messaging's 60 s: "
                               "calls that queue behind a busy conductor or scheduler time out"))
        elif ctx.raw(s) is None:
            out.append(Verdict("info", s, "the 60 s default: at hundreds of computes operators "
                               "raise it (180 s or more; neutron agents often far more)"))
    return out


EXECUTOR = _per(RPC_PROJECTS, "DEFAULT", "executor_thread_pool_size", ((0, "64"),),
                (("DEFAULT", "rpc_thread_pool_size"),))


def _executor(ctx: Ctx) -> list[Verdict]:
    out: list[Verdict] = []
    for s in EXECUTOR:
        if ctx.has(s.project):
            out += _explicit_below(ctx, s, 64, "fewer RPC handler threads than the default 64: "
                                   "requests wait in the queue for a free thread")
    return out


CONN_POOL = _per(RPC_PROJECTS, "oslo_messaging_rabbit", "rpc_conn_pool_size", ((0, "30"),),
                 (("DEFAULT", "rpc_conn_pool_size"),))


def _conn_pool(ctx: Ctx) -> list[Verdict]:
    out: list[Verdict] = []
    for s, ex in zip(CONN_POOL, EXECUTOR, strict=True):
        if not ctx.has(s.project):
            continue
        size, threads = ctx.number(s) or 30, ctx.number(ex) or 64
        if as_number(ctx.raw(s)) is not None and size < 30:
            out.append(Verdict("warning", s, f"{ordinal_text(size)} connections, below the "
                               "default 30: senders wait for a connection"))
        elif ctx.raw(ex) is not None and threads > 2 * size:
            out.append(Verdict("info", s, f"{ordinal_text(threads)} handler threads share "
                               f"{ordinal_text(size)} outgoing connections"))
    return out


# --- database pools -----------------------------------------------------------------------------
_DB_SECTIONS = (("nova", "database"), ("nova", "api_database"), ("neutron", "database"),
                ("placement", "placement_database"), ("glance", "database"),
                ("keystone", "database"))
_POOL_D, _OVERFLOW_D, _TIMEOUT_D = ((0, "5"),), ((0, "50"),), ((0, "(SQLAlchemy: 30 s)"),)
DB_POOL = tuple(
    s for p, sec in _DB_SECTIONS for s in (
        Setting(p, sec, "max_pool_size", _POOL_D),
        Setting(p, sec, "max_overflow", _OVERFLOW_D),
        Setting(p, sec, "pool_timeout", _TIMEOUT_D)))


def _db_pool(ctx: Ctx) -> list[Verdict]:
    out: list[Verdict] = []
    for i in range(0, len(DB_POOL), 3):
        pool, over, _timeout = DB_POOL[i:i + 3]
        p, sec = pool.project, pool.section
        used = ctx.cfg.values(p, sec, "connection") or ctx.raw(pool) or ctx.raw(over)
        if not ctx.has(p) or not used:
            continue
        n_pool, n_over = ctx.number(pool) or 5, ctx.number(over) or 50
        if n_over < 0 or n_pool == 0:
            continue  # unlimited
        total = n_pool + n_over
        explicit = ctx.raw(pool) is not None or ctx.raw(over) is not None
        if p in RPC_PROJECTS:
            ex = next(s for s in EXECUTOR if s.project == p)
            threads = ctx.number(ex) or 64
            if total < threads:
                note = (f"max_pool_size + max_overflow = {ordinal_text(total)} connections per "
                        f"process for up to {ordinal_text(threads)} RPC handler threads "
                        "(executor_thread_pool_size): handlers wait, then fail after pool_timeout "
                        "with 'QueuePool limit ... reached'")
                sev = "warning" if explicit else "info"
                out += [Verdict(sev, pool, note), Verdict(sev, over, note)]
        elif explicit and total < 55:
            note = (f"{ordinal_text(total)} connections per process, below oslo.db's 5 + 50: "
                    "API workers under a burst wait for connections")
            out += [Verdict("info", pool, note), Verdict("info", over, note)]
    return out


# --- worker counts ------------------------------------------------------------------------------
API_WORKERS = (
    Setting("nova", "DEFAULT", "osapi_compute_workers", ((0, _CPUS), (32, "(removed)"))),
    Setting("nova", "DEFAULT", "metadata_workers", ((0, _CPUS), (32, "(removed)"))),
)
CONDUCTOR_WORKERS = (Setting("nova", "conductor", "workers", ((0, _CPUS),)),)
SCHEDULER_WORKERS = (Setting("nova", "scheduler", "workers", ((0, _CPUS),),
                             (("DEFAULT", "scheduler_workers"),)),)


def _single(ctx: Ctx, settings: tuple[Setting, ...], what: str) -> list[Verdict]:
    out = []
    for s in settings:
        if ctx.has(s.project) and ctx.raw(s) is not None and as_number(ctx.raw(s)) == 1:
            out.append(Verdict("warning", s, f"one {what} process: requests queue behind each "
                               "other and one slow database call stalls them all"))
    return out


def _api_workers(ctx: Ctx) -> list[Verdict]:
    if ctx.release >= 32:
        return [Verdict("info", s, "not read since 2025.2: the WSGI server's processes count")
                for s in API_WORKERS if ctx.has("nova") and ctx.raw(s) is not None]
    return _single(ctx, API_WORKERS, "API")


# --- scheduling ---------------------------------------------------------------------------------
SUBSET = Setting("nova", "filter_scheduler", "host_subset_size", ((0, "1"),),
                 (("DEFAULT", "scheduler_host_subset_size"),))
SHUFFLE = Setting("nova", "filter_scheduler", "shuffle_best_same_weighed_hosts", ((0, "False"),))


def _subset(ctx: Ctx) -> list[Verdict]:
    if not ctx.has("nova"):
        return []
    subset = ctx.number(SUBSET) or 1
    shuffle = as_bool(ctx.raw(SHUFFLE)) or False
    if subset > 1 or shuffle:
        return []
    workers = as_number(ctx.raw(SCHEDULER_WORKERS[0]))
    sev = "info" if workers == 1 else "warning"
    many = "one scheduler worker" if workers == 1 else (
        f"{ordinal_text(workers)} scheduler workers" if workers else "scheduler workers (one "
        "per CPU by default)")
    note = (f"every request goes to the single best-weighed host; with {many} under a burst, "
            "requests share one view of the hosts and identical weights pile builds onto one "
            "host (claims then fail and builds are rescheduled)")
    return [Verdict(sev, SUBSET, note), Verdict(sev, SHUFFLE, note)]


BUILDS = Setting("nova", "DEFAULT", "max_concurrent_builds", ((0, "10"),))


def _builds(ctx: Ctx) -> list[Verdict]:
    v = as_number(ctx.raw(BUILDS)) if ctx.has("nova") else None
    if v == 0:
        return [Verdict("warning", BUILDS, "0 means unlimited: a host chosen by every request "
                        "builds them all at once (libvirt, disk and network contention)")]
    return []


# --- keystone -----------------------------------------------------------------------------------
TOKEN = Setting("keystone", "token", "provider", ((0, "uuid"), (15, "fernet")))
CACHE = Setting("keystone", "cache", "enabled", ((0, "False"),))
_REMOVED = {"pki": 15, "pkiz": 15, "uuid": 18}


def _token(ctx: Ctx) -> list[Verdict]:
    if not ctx.has("keystone"):
        return []
    v = (ctx.raw(TOKEN) or ctx.default(TOKEN)).strip().lower()
    if v in _REMOVED:
        if ctx.release >= _REMOVED[v]:
            return [Verdict("error", TOKEN, f"the {v} provider was removed (Ocata: pki/pkiz, "
                            "Rocky: uuid); keystone cannot issue tokens with it")]
        return [Verdict("warning", TOKEN, f"{v} tokens are stored in the database: the token "
                        "table grows and every validation is a database read; use fernet")]
    if v in ("fernet", "jws") and not as_bool(ctx.raw(CACHE)):
        return [Verdict("info", CACHE, "token validations are not cached: enable [cache] with "
                        "memcached so each API hop does not recompute them")]
    return []


# --- Galera -------------------------------------------------------------------------------------
WSREP = Setting("mysql", ANY_SECTION, "wsrep_cluster_address", ((0, "(none)"),))
HAPROXY = Setting("haproxy", "listen", "server", ((0, "(none)"),))


def _db_backends(ctx: Ctx) -> list[tuple[str, str, list[str]]]:
    """(file, section, active servers) of haproxy blocks in front of MySQL (port 3306 or a
    name with mysql/galera/mariadb/db)."""
    out = []
    for f in ctx.cfg.of("haproxy"):
        for sec, opts in f.sections.items():
            servers = [s for s in (opts.get("server") or "").splitlines() if s.strip()]
            text = " ".join([sec, opts.get("bind", ""), *servers]).lower()
            if not servers or not any(k in text for k in (":3306", "mysql", "galera",
                                                          "mariadb", " db")):
                continue
            active = [s.split()[0] for s in servers if " backup" not in f" {s} "]
            out.append((f.name, sec, active))
    return out


def _galera(ctx: Ctx) -> list[Verdict]:
    out: list[Verdict] = []
    for fname, sec, active in _db_backends(ctx):
        if len(active) > 1:
            out.append(Verdict(
                "error", HAPROXY, f"haproxy sends database traffic to {len(active)} nodes at once "
                "(" + ", ".join(active) + "): Galera certification conflicts surface as "
                "DBDeadlock; mark all but one server 'backup'", value=f"{len(active)} active",
                file=fname, section=sec, option="server"))
    addr, f = ctx.lookup(WSREP)
    nodes = hosts_of(addr or "")
    if len(nodes) > 1 and not out and not _db_backends(ctx):
        out.append(Verdict("info", WSREP, f"a Galera cluster of {len(nodes)} nodes: no haproxy "
                           "config read, so it cannot be told whether clients write to one node"))
    return out


# --- RabbitMQ -----------------------------------------------------------------------------------
FDS = (Setting("rabbitmq", "env", "ulimit_n", ((0, "(the OS limit, often 1024)"),)),
       Setting("rabbitmq", "Service", "LimitNOFILE", ((0, "(the OS limit, often 1024)"),)))
HEARTBEAT = _per(RPC_PROJECTS, "oslo_messaging_rabbit", "heartbeat_timeout_threshold",
                 ((0, "0"), (12, "60")))
HEARTBEAT_RATE = _per(RPC_PROJECTS, "oslo_messaging_rabbit", "heartbeat_rate",
                      ((0, "2"), (28, "3")))
RABBIT_HEARTBEAT = Setting("rabbitmq", "rabbitmq", "heartbeat", ((0, "60"),))


def _fds(ctx: Ctx) -> list[Verdict]:
    if not ctx.has("rabbitmq"):
        return []
    for s in FDS:
        v = as_number(ctx.raw(s))
        if v is not None:
            return [Verdict("warning", s, f"{ordinal_text(v)} file descriptors: every client "
                            "connection takes one; at hundreds of computes the broker refuses "
                            "connections")] if v < 65536 else []
    return [Verdict("info", FDS[0], "no file-descriptor limit in these files: check "
                    "'rabbitmq-diagnostics status' (file descriptors) on the broker")]


def _heartbeat(ctx: Ctx) -> list[Verdict]:
    out: list[Verdict] = []
    for s in HEARTBEAT:
        if ctx.has(s.project) and ctx.number(s) == 0:
            out.append(Verdict("warning", s, "heartbeats are off: a dead broker connection is "
                               "noticed only by TCP (minutes to hours); replies are lost and calls "
                               "end in MessagingTimeout"))
    if ctx.has("rabbitmq") and as_number(ctx.raw(RABBIT_HEARTBEAT)) == 0:
        out.append(Verdict("warning", RABBIT_HEARTBEAT, "the broker disables heartbeats: "
                           "half-open client connections pile up"))
    return out


# --- neutron ------------------------------------------------------------------------------------
IPAM = Setting("neutron", "DEFAULT", "ipam_driver", ((0, "(none: built-in IPAM)"),
                                                     (14, "internal")))
AGENT_DOWN = Setting("neutron", "DEFAULT", "agent_down_time", ((0, "75"),))
REPORT = Setting("neutron", "agent", "report_interval", ((0, "30"),))
NEUTRON_WORKERS = (Setting("neutron", "DEFAULT", "api_workers", ((0, _CPUS),)),
                   Setting("neutron", "DEFAULT", "rpc_workers", ((0, "(half the API workers)"),
                                                                 (28, "(half the CPUs)"))),
                   Setting("neutron", "DEFAULT", "rpc_state_report_workers", ((0, "1"),)))


def _ipam(ctx: Ctx) -> list[Verdict]:
    if not ctx.has("neutron"):
        return []
    v = ctx.raw(IPAM)
    if v is None and ctx.release < 14:
        return [Verdict("warning", IPAM, "the pre-Newton IPAM locks a subnet's availability "
                        "ranges (SELECT ... FOR UPDATE): concurrent port creates deadlock")]
    if v is not None and v.strip() not in ("internal", ""):
        return [Verdict("info", IPAM, f"IPAM driver {v.strip()!r}: allocation contention and "
                        "its retries are that driver's")]
    return []


def _agents(ctx: Ctx) -> list[Verdict]:
    if not ctx.has("neutron"):
        return []
    down, report = ctx.number(AGENT_DOWN) or 75, ctx.number(REPORT) or 30
    if down < 2 * report:
        return [Verdict("error", AGENT_DOWN, f"agent_down_time {ordinal_text(down)} s is less "
                        f"than twice report_interval {ordinal_text(report)} s: one late report "
                        "marks an agent down and ports fail to bind")]
    if ctx.raw(AGENT_DOWN) is None:
        return [Verdict("info", AGENT_DOWN, "the 75 s default: under broker load with hundreds "
                        "of agents, late state reports mark agents down ('binding failed'); "
                        "operators raise it (150 s or more) and keep report_interval at half "
                        "or less")]
    return []


def _neutron_workers(ctx: Ctx) -> list[Verdict]:
    if not ctx.has("neutron"):
        return []
    api, rpc, state = NEUTRON_WORKERS
    out: list[Verdict] = []
    if as_number(ctx.raw(rpc)) == 0:
        out.append(Verdict("warning", rpc, "no RPC worker: agents' RPC is served by the API "
                           "process"))
    if as_number(ctx.raw(state)) == 0:
        out.append(Verdict("warning", state, "state reports share the RPC workers: under load "
                           "they arrive late and agents are reported down"))
    return out + _single(ctx, (api, rpc), "neutron API/RPC")


def _cpu(ctx: Ctx) -> list[Verdict]:
    return _single(ctx, CONDUCTOR_WORKERS, "conductor")


def _sched(ctx: Ctx) -> list[Verdict]:
    return _single(ctx, SCHEDULER_WORKERS, "scheduler")


_NOVA_SRC = "nova/conf/{} (openstack/nova)"
_LS_RABBIT = "OpenStack Large Scale SIG, docs.openstack.org/large-scale/journey/configure/rabbitmq.html"

#: Every rule, in report order.
RULES: tuple[Rule, ...] = (
    Rule("rpc-response-timeout", RPC_TIMEOUT,
         "Raise rpc_response_timeout (e.g. 180 s) on the services whose calls time out under "
         "load; nova heartbeats long calls when it is above 60 s, so dead services are still "
         "noticed.",
         "nova release note rpc_timeout_changes (Rocky: active call monitoring); field-notes "
         "sec. 4 (MessagingTimeout at scale); " + _LS_RABBIT,
         "oslo_messaging/rpc/client.py (rpc_response_timeout, default 60)",
         ("rpc_timeout",), _rpc_timeout),
    Rule("executor-thread-pool", EXECUTOR,
         "Keep executor_thread_pool_size at 64 or more on conductors and neutron-server, and "
         "give each process as many database connections as threads.",
         "oslo.messaging option help; field-notes sec. 7",
         "oslo_messaging/server.py (executor_thread_pool_size, default 64)",
         ("rpc_timeout", "db_pool_exhausted"), _executor),
    Rule("rpc-conn-pool", CONN_POOL,
         "Raise rpc_conn_pool_size when services log 'Connection pool limit exceeded'.",
         "oslo.messaging pool.py warning 'Connection pool limit exceeded ... rpc_conn_pool_size'"
         "; Mirantis MCP large-deployment tuning (rpc_conn_pool_size 300)",
         "oslo_messaging/_drivers/impl_rabbit.py (rpc_conn_pool_size, default 30; read from "
         "[oslo_messaging_rabbit], [DEFAULT] deprecated; _drivers/base.py before 16.0.0)",
         ("rpc_pool_exhausted", "rpc_timeout"), _conn_pool),
    Rule("db-pool", DB_POOL,
         "Size [database] max_pool_size + max_overflow to at least the threads that can hold a "
         "connection (executor_thread_pool_size for conductors and neutron-server, the WSGI "
         "threads for APIs); pool_timeout only bounds the wait.",
         "oslo.db option help; SQLAlchemy QueuePool TimeoutError; the lab at 64 computes "
         "(lab-notes: 'QueuePool limit of size 10 overflow 20 reached')",
         "oslo_db/options.py (max_pool_size 5, max_overflow 50, pool_timeout unset)",
         ("db_pool_exhausted",), _db_pool),
    Rule("api-workers", API_WORKERS,
         "Run the compute and metadata APIs with one process per CPU (or more): one process "
         "serialises every request.",
         "nova option help; field-notes sec. 4 (single-process API services)",
         _NOVA_SRC.format("service.py (osapi_compute_workers, metadata_workers; removed in "
                          "32.0.0)"),
         (), _api_workers),
    Rule("conductor-workers", CONDUCTOR_WORKERS,
         "Run several conductor workers: database calls block a worker's green threads.",
         "nova blueprint conductor-workers (Havana: 20 workers cut parallel boot time); "
         "field-notes sec. 7",
         _NOVA_SRC.format("conductor.py ([conductor] workers, default CPU count)"),
         ("rpc_timeout", "db_pool_exhausted"), _cpu),
    Rule("scheduler-workers", SCHEDULER_WORKERS,
         "Run several scheduler workers, and spread with host_subset_size or "
         "shuffle_best_same_weighed_hosts so they do not pick the same host.",
         "nova option help; field-notes sec. 4 (scheduler saturation, stale views)",
         _NOVA_SRC.format("scheduler.py ([scheduler] workers, default CPU count)"),
         ("rpc_timeout",), _sched),
    Rule("host-subset", (SUBSET, SHUFFLE),
         "Set [filter_scheduler] host_subset_size above 1 or shuffle_best_same_weighed_hosts = "
         "true so that a burst of similar requests spreads over the best hosts.",
         "nova option help (host_subset_size: reduces races between schedulers; "
         "shuffle_best_same_weighed_hosts: reduces contention and rescheduling)",
         _NOVA_SRC.format("scheduler.py (host_subset_size 1, shuffle_best_same_weighed_hosts "
                          "False)"),
         ("host_skew",), _subset),
    Rule("max-concurrent-builds", (BUILDS,),
         "Keep max_concurrent_builds bounded (default 10) and spread builds over hosts; raise "
         "it only on hosts that build fast.",
         "nova option help (limits concurrent builds per compute); field-notes sec. 9",
         _NOVA_SRC.format("compute.py (max_concurrent_builds, default 10)"),
         ("host_skew",), _builds),
    Rule("token-provider", (TOKEN, CACHE),
         "Use fernet tokens (default since Ocata; uuid removed in Rocky, pki/pkiz in Ocata) "
         "and cache validations in memcached.",
         "keystone option help; field-notes sec. 4 and 7 (PKI/UUID tokens in a database vs "
         "Fernet, keystone time-outs under load)",
         "keystone/conf/token.py (provider: uuid in 10.0.0 Newton, fernet from 11.0.0 Ocata)",
         (), _token),
    Rule("galera-single-writer", (WSREP, HAPROXY),
         "Send every write to one Galera node (haproxy: one active server, the others "
         "'backup'); multi-writer certification conflicts fail transactions as deadlocks.",
         "field-notes sec. 4 (quota reservation deadlocks, fixed by writing to a single node); "
         "OpenStack HA guide (Galera behind HAProxy, one active node)",
         "Galera wsrep_cluster_address (my.cnf / galera.cnf); haproxy.cfg server lines",
         ("db_deadlock",), _galera),
    Rule("rabbitmq-fds", FDS,
         "Allow the RabbitMQ user at least 65536 open files (systemd LimitNOFILE or ulimit -n "
         "in the broker's environment).",
         "RabbitMQ networking guide (65536 descriptors for production); " + _LS_RABBIT,
         "rabbitmq-env.conf / rabbitmq-server defaults (ulimit -n), systemd LimitNOFILE",
         ("amqp_unreachable",), _fds),
    Rule("rabbitmq-heartbeat", (*HEARTBEAT, *HEARTBEAT_RATE, RABBIT_HEARTBEAT),
         "Keep AMQP heartbeats on (heartbeat_timeout_threshold 60, broker heartbeat 60) so "
         "dead connections are dropped and re-established.",
         "oslo.messaging 'Make heartbeat the default' (Liberty) and 'Set default heartbeat_rate "
         "to 3' (14.5.0, 2023.2); " + _LS_RABBIT,
         "oslo_messaging/_drivers/impl_rabbit.py (heartbeat_timeout_threshold 60 from Liberty, "
         "0 before; heartbeat_rate 3 from 2023.2, 2 before); rabbitmq.conf heartbeat 60",
         ("amqp_unreachable", "rpc_timeout"), _heartbeat),
    Rule("neutron-ipam", (IPAM,),
         "Use the pluggable 'internal' IPAM driver (default since Newton) so that concurrent "
         "port creates do not lock a subnet's availability ranges.",
         "neutron option help; field-notes sec. 4 (IP allocation contention)",
         "neutron/conf/common.py (ipam_driver, default 'internal' from 9.0.0 Newton; no default "
         "in 8.0.0, in neutron/common/config.py)",
         ("db_deadlock",), _ipam),
    Rule("neutron-agent-liveness", (AGENT_DOWN, REPORT),
         "Keep agent_down_time at least twice report_interval, and raise it at scale so "
         "agents are not reported down while the broker is busy.",
         "neutron option help (agent_down_time: at least twice report_interval); field-notes "
         "sec. 4 ('port binding failed' when agents are reported down)",
         "neutron/conf/agent/database/agents_db.py (agent_down_time 75); "
         "neutron/conf/agent/common.py (report_interval 30)",
         ("port_binding_failed",), _agents),
    Rule("neutron-workers", NEUTRON_WORKERS,
         "Give neutron-server several API and RPC workers and a dedicated state-report worker.",
         "neutron option help; field-notes sec. 7 (api_workers, rpc_workers)",
         "neutron/conf/service.py (rpc_workers: half the API workers, half the CPUs in later "
         "releases; rpc_state_report_workers 1; api_workers removed in 29.0.0)",
         ("rpc_timeout", "port_binding_failed"), _neutron_workers),
)
if len({r.id for r in RULES}) != len(RULES):  # pragma: no cover - a declaration error
    raise ValueError("duplicate rule ids")


def rule(rule_id: str) -> Rule:
    """The rule named ``rule_id``. Raises ``KeyError``."""
    for r in RULES:
        if r.id == rule_id:
            return r
    raise KeyError(rule_id)
