"""Config advice (stacklens.advise): the file readers, and each rule on small config excerpts in
the style of public deployments (kolla-ansible's and OpenStack-Ansible's rendered files,
distribution defaults), written for these tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from stacklens.advise import RULES, check, classify, load_configs, parse_release, parse_text, rule
from stacklens.advise.check import Finding
from stacklens.advise.release import release_from_versions

NOVA_KOLLA = """\
[DEFAULT]
debug = False
log_dir = /var/log/kolla/nova
state_path = /var/lib/nova
osapi_compute_listen = 10.0.0.11
metadata_listen = 10.0.0.11
transport_url = rabbit://openstack:***@10.0.0.11:5672,openstack:***@10.0.0.12:5672//

[conductor]
workers = 5

[scheduler]
max_attempts = 10
discover_hosts_in_cells_interval = -1
workers = 5

[filter_scheduler]
enabled_filters = ComputeFilter,ComputeCapabilitiesFilter,ImagePropertiesFilter
"""

NOVA_DB = """\
[database]
connection = mysql+pymysql://nova:***@10.0.0.10:3306/nova
connection_recycle_time = 10
max_pool_size = {pool}
max_overflow = {overflow}
max_retries = -1

[api_database]
connection = mysql+pymysql://nova_api:***@10.0.0.10:3306/nova_api
max_retries = -1
"""


def _cfg(tmp_path: Path, files: dict[str, str]):
    for name, text in files.items():
        p = tmp_path / "etc" / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return load_configs([tmp_path / "etc"])


def _run(tmp_path: Path, files: dict[str, str], release: str | None = None,
         rule_id: str | None = None) -> list[Finding]:
    got = check(_cfg(tmp_path, files), parse_release(release) if release else None)
    return [f for f in got if rule_id is None or f.rule_id == rule_id]


def _one(findings: list[Finding], option: str) -> Finding:
    hits = [f for f in findings if f.option == option]
    assert len(hits) == 1, findings
    return hits[0]


# --- readers ------------------------------------------------------------------------------------
def test_oslo_ini_continuations_comments_and_repeats():
    text = ("# comment\n[DEFAULT]\nfoo = a\n  b\n; other comment\nbar: 1 # kept as value\n"
            "foo2=x\nfoo2=y\n[Default]\nlate = 1\n")
    s = parse_text(text, "ini")
    assert s["DEFAULT"] == {"foo": "a\nb", "bar": "1 # kept as value", "foo2": "y", "late": "1"}


def test_mysql_option_files():
    s = parse_text("[mysqld]\nskip-name-resolve\nmax-connections = 4096  # per node\n"
                   "!includedir /etc/mysql/conf.d/\n[galera]\nwsrep-on = ON\n", "mysql")
    assert s["mysqld"] == {"skip_name_resolve": "ON", "max_connections": "4096"}
    assert s["galera"] == {"wsrep_on": "ON"}


def test_env_haproxy_and_rabbitmq_conf():
    env = parse_text("# defaults\nulimit -n 1024\nexport RABBITMQ_NODENAME=rabbit@ctl1\n", "env")
    assert env["env"] == {"ulimit_n": "1024", "RABBITMQ_NODENAME": "rabbit@ctl1"}
    hap = parse_text("listen mariadb\n  bind 10.0.0.10:3306\n  server ctl1 10.0.0.11:3306 check\n"
                     "  server ctl2 10.0.0.12:3306 check backup\n", "haproxy")
    assert hap["listen mariadb"]["server"].splitlines() == [
        "ctl1 10.0.0.11:3306 check", "ctl2 10.0.0.12:3306 check backup"]
    rmq = parse_text("listeners.tcp.default = 5672\nheartbeat = 0\n", "rabbitmq")
    assert rmq == {"rabbitmq": {"listeners.tcp.default": "5672", "heartbeat": "0"}}


@pytest.mark.parametrize(("rel", "want"), [
    ("nova/nova.conf", ("nova", "nova", "ini")),
    ("nova-compute.conf", ("nova", "nova-compute", "ini")),
    ("nova/fake-1.conf", ("nova", "nova", "ini")),
    ("neutron/plugins/ml2/ml2_conf.ini", ("neutron", "neutron-server", "ini")),
    ("neutron/plugins/ml2/openvswitch_agent.ini", ("neutron", "neutron-openvswitch-agent",
                                                   "ini")),
    ("keystone/keystone.conf", ("keystone", "keystone", "ini")),
    ("glance/glance-api.conf", ("glance", "glance-api", "ini")),
    ("mysql/conf.d/galera.cnf", ("mysql", "mysqld", "mysql")),
    ("rabbitmq/rabbitmq-env.conf", ("rabbitmq", "rabbitmq-server", "env")),
    ("systemd/rabbitmq-server.service.d/limits.conf", ("rabbitmq", "rabbitmq-server",
                                                       "systemd")),
    ("haproxy/haproxy.cfg", ("haproxy", "haproxy", "haproxy")),
    ("nova/api-paste.ini", None),
    ("nova/policy.yaml", None),
])
def test_classify(rel, want):
    assert classify(rel) == want


def test_releases():
    assert parse_release("epoxy") == parse_release("2025.1") == parse_release("31.0.1") == 31
    assert parse_release("Ocata") == 15
    assert release_from_versions({"nova": "31.0.0"}) == 31
    assert release_from_versions({"keystone": "27.0.0"}) == 31
    assert release_from_versions({"python": "3.12"}) is None
    with pytest.raises(ValueError, match="unknown release"):
        parse_release("mystery")


def test_every_rule_is_documented():
    for r in RULES:
        assert r.advice and r.evidence and r.source and r.settings, r.id
        for s in r.settings:
            assert s.defaults and s.defaults == tuple(sorted(s.defaults)), (r.id, s)


# --- rules --------------------------------------------------------------------------------------
def test_rpc_response_timeout(tmp_path):
    f = _one(_run(tmp_path / "a", {"nova.conf": "[DEFAULT]\nrpc_response_timeout = 30\n"},
                  rule_id="rpc-response-timeout"), "rpc_response_timeout")
    assert (f.severity, f.value, f.default, f.file) == ("warning", "30", "60", "nova.conf")
    f = _one(_run(tmp_path / "b", {"nova.conf": NOVA_KOLLA}, rule_id="rpc-response-timeout"),
             "rpc_response_timeout")
    assert (f.severity, f.value) == ("info", None)
    assert not _run(tmp_path / "c", {"nova.conf": "[DEFAULT]\nrpc_response_timeout = 180\n"},
                    rule_id="rpc-response-timeout")


def test_executor_thread_pool_and_its_old_name(tmp_path):
    f = _one(_run(tmp_path / "a", {"neutron/neutron.conf": "[DEFAULT]\nrpc_thread_pool_size = 16\n"},
                  rule_id="executor-thread-pool"), "executor_thread_pool_size")
    assert (f.severity, f.value, f.default, f.service) == ("warning", "16", "64", "neutron")
    assert not _run(tmp_path / "b", {"nova.conf": NOVA_KOLLA}, rule_id="executor-thread-pool")


def test_rpc_conn_pool_size_in_either_section(tmp_path):
    f = _one(_run(tmp_path / "a", {"nova.conf": "[DEFAULT]\nrpc_conn_pool_size = 10\n"},
                  rule_id="rpc-conn-pool"), "rpc_conn_pool_size")
    assert (f.severity, f.value, f.section) == ("warning", "10", "oslo_messaging_rabbit")
    assert not _run(tmp_path / "b", {"nova.conf": "[oslo_messaging_rabbit]\n"
                                     "rpc_conn_pool_size = 300\n"}, rule_id="rpc-conn-pool")
    f = _one(_run(tmp_path / "c", {"nova.conf": "[DEFAULT]\nexecutor_thread_pool_size = 256\n"},
                  rule_id="rpc-conn-pool"), "rpc_conn_pool_size")
    assert f.severity == "info" and "256 handler threads" in f.advice


def test_db_pool_against_executor_threads(tmp_path):
    got = _run(tmp_path / "a", {"nova.conf": NOVA_KOLLA,
                                "nova-db.conf": NOVA_DB.format(pool=10, overflow=20)},
               rule_id="db-pool")
    assert {(f.section, f.option, f.severity, f.value) for f in got} == {
        ("database", "max_pool_size", "warning", "10"),
        ("database", "max_overflow", "warning", "20"),
        # [api_database] keeps oslo.db's defaults: 55 connections for 64 threads
        ("api_database", "max_pool_size", "info", None),
        ("api_database", "max_overflow", "info", None)}
    assert all("30 connections" in f.advice for f in got if f.section == "database")
    # OpenStack-Ansible's defaults (120 + 60) are enough
    assert not [f for f in _run(tmp_path / "b", {"nova.conf": NOVA_KOLLA,
                                                 "nova-db.conf": NOVA_DB.format(pool=120,
                                                                                overflow=60)},
                                rule_id="db-pool") if f.section == "database"]


def test_db_pool_of_wsgi_services(tmp_path):
    got = _run(tmp_path, {"placement/placement.conf": "[placement_database]\nconnection = "
                          "mysql+pymysql://placement:***@db/placement\nmax_pool_size = 5\n"
                          "max_overflow = 10\n"}, rule_id="db-pool")
    assert {(f.option, f.severity) for f in got} == {("max_pool_size", "info"),
                                                     ("max_overflow", "info")}


def test_api_workers_by_release(tmp_path):
    files = {"nova.conf": "[DEFAULT]\nosapi_compute_workers = 1\nmetadata_workers = 4\n"}
    f = _one(_run(tmp_path / "a", files, "2025.1", "api-workers"), "osapi_compute_workers")
    assert (f.severity, f.default) == ("warning", "(number of CPUs)")
    got = _run(tmp_path / "b", files, "2025.2", "api-workers")
    assert {(f.option, f.severity, f.default) for f in got} == {
        ("osapi_compute_workers", "info", "(removed)"), ("metadata_workers", "info", "(removed)")}


@pytest.mark.parametrize(("section", "rule_id"), [("conductor", "conductor-workers"),
                                                   ("scheduler", "scheduler-workers")])
def test_single_worker(tmp_path, section, rule_id):
    f = _one(_run(tmp_path, {"nova.conf": f"[{section}]\nworkers = 1\n"}, rule_id=rule_id),
             "workers")
    assert (f.severity, f.section, f.value) == ("warning", section, "1")


def test_host_subset_size(tmp_path):
    got = _run(tmp_path / "a", {"nova.conf": NOVA_KOLLA}, rule_id="host-subset")
    assert {(f.option, f.severity, f.value, f.default) for f in got} == {
        ("host_subset_size", "warning", None, "1"),
        ("shuffle_best_same_weighed_hosts", "warning", None, "False")}
    assert "5 scheduler workers" in got[0].advice
    one = _run(tmp_path / "b", {"nova.conf": "[scheduler]\nworkers = 1\n"}, rule_id="host-subset")
    assert {f.severity for f in one} == {"info"}
    for i, extra in enumerate(("[filter_scheduler]\nhost_subset_size = 3\n",
                               "[filter_scheduler]\nshuffle_best_same_weighed_hosts = true\n",
                               "[DEFAULT]\nscheduler_host_subset_size = 5\n")):
        assert not _run(tmp_path / f"c{i}", {"nova.conf": extra}, rule_id="host-subset"), extra


def test_max_concurrent_builds(tmp_path):
    files = {"nova.conf": NOVA_KOLLA, "nova-compute.conf": "[DEFAULT]\nmax_concurrent_builds = 0\n"}
    f = _one(_run(tmp_path / "a", files, rule_id="max-concurrent-builds"), "max_concurrent_builds")
    assert (f.severity, f.file, f.service, f.default) == ("warning", "nova-compute.conf",
                                                          "nova-compute", "10")
    assert not _run(tmp_path / "b", {"nova.conf": "[DEFAULT]\nmax_concurrent_builds = 20\n"},
                    rule_id="max-concurrent-builds")


def test_token_provider_by_release(tmp_path):
    uuid = {"keystone/keystone.conf": "[token]\nprovider = uuid\nexpiration = 3600\n"}
    assert _one(_run(tmp_path / "a", uuid, "queens", "token-provider"), "provider").severity == \
        "warning"
    f = _one(_run(tmp_path / "b", uuid, "rocky", "token-provider"), "provider")
    assert f.severity == "error" and "removed" in f.advice
    # Newton's default was uuid; Ocata's fernet
    empty = {"keystone/keystone.conf": "[DEFAULT]\n"}
    f = _one(_run(tmp_path / "c", empty, "newton", "token-provider"), "provider")
    assert (f.severity, f.value, f.default) == ("warning", None, "uuid")
    f = _one(_run(tmp_path / "d", empty, "ocata", "token-provider"), "enabled")
    assert (f.severity, f.section) == ("info", "cache")
    assert not _run(tmp_path / "e", {"keystone/keystone.conf": "[token]\nprovider = fernet\n"
                                     "[cache]\nenabled = true\nbackend = oslo_cache.memcache_pool\n"
                                     "memcache_servers = 10.0.0.11:11211\n"},
                    rule_id="token-provider")


GALERA = """\
[mysqld]
binlog_format = ROW
default-storage-engine = innodb
[galera]
wsrep_on = ON
wsrep_provider = /usr/lib/galera/libgalera_smm.so
wsrep_cluster_address = gcomm://10.0.0.11,10.0.0.12,10.0.0.13
"""
HAPROXY = """\
global
  maxconn 40000
listen mariadb
  mode tcp
  bind 10.0.0.10:3306
  option mysql-check user haproxy post-41
  server ctl1 10.0.0.11:3306 check inter 2000 rise 2 fall 5
  server ctl2 10.0.0.12:3306 check inter 2000 rise 2 fall 5{b}
  server ctl3 10.0.0.13:3306 check inter 2000 rise 2 fall 5{b}
"""


def test_galera_multi_writer(tmp_path):
    f = _one(_run(tmp_path / "a", {"mysql/galera.cnf": GALERA,
                                   "haproxy/haproxy.cfg": HAPROXY.format(b="")},
                  rule_id="galera-single-writer"), "server")
    assert (f.severity, f.section, f.value, f.file) == ("error", "listen mariadb", "3 active",
                                                        "haproxy/haproxy.cfg")
    assert not _run(tmp_path / "b", {"mysql/galera.cnf": GALERA,
                                     "haproxy/haproxy.cfg": HAPROXY.format(b=" backup")},
                    rule_id="galera-single-writer")
    f = _one(_run(tmp_path / "c", {"mysql/galera.cnf": GALERA}, rule_id="galera-single-writer"),
             "wsrep_cluster_address")
    assert f.severity == "info" and "3 nodes" in f.advice


def test_rabbitmq_file_descriptors(tmp_path):
    f = _one(_run(tmp_path / "a", {"default/rabbitmq-server": "ulimit -n 1024\n"},
                  rule_id="rabbitmq-fds"), "ulimit_n")
    assert (f.severity, f.value) == ("warning", "1024")
    assert not _run(tmp_path / "b", {"systemd/rabbitmq-server.service.d/limits.conf":
                                     "[Service]\nLimitNOFILE=65536\n"}, rule_id="rabbitmq-fds")
    f = _one(_run(tmp_path / "c", {"rabbitmq/rabbitmq.conf": "listeners.tcp.default = 5672\n"},
                  rule_id="rabbitmq-fds"), "ulimit_n")
    assert f.severity == "info"


def test_heartbeat_by_release(tmp_path):
    off = {"nova.conf": "[oslo_messaging_rabbit]\nheartbeat_timeout_threshold = 0\n",
           "rabbitmq/rabbitmq.conf": "heartbeat = 0\n"}
    got = _run(tmp_path / "a", off, rule_id="rabbitmq-heartbeat")
    assert {(f.option, f.severity) for f in got} == {("heartbeat_timeout_threshold", "warning"),
                                                     ("heartbeat", "warning")}
    # before Liberty heartbeats were off by default
    kilo = _run(tmp_path / "b", {"nova.conf": "[DEFAULT]\n"}, "kilo", "rabbitmq-heartbeat")
    assert _one(kilo, "heartbeat_timeout_threshold").default == "0"
    assert not _run(tmp_path / "c", {"nova.conf": "[DEFAULT]\n"}, "2025.1", "rabbitmq-heartbeat")


NEUTRON = """\
[DEFAULT]
core_plugin = ml2
service_plugins = router
transport_url = rabbit://openstack:***@10.0.0.11:5672//
{extra}
[database]
connection = mysql+pymysql://neutron:***@10.0.0.10:3306/neutron
"""


def test_neutron_ipam(tmp_path):
    f = _one(_run(tmp_path / "a", {"neutron/neutron.conf": NEUTRON.format(extra="")}, "mitaka",
                  "neutron-ipam"), "ipam_driver")
    assert f.severity == "warning" and "FOR UPDATE" in f.advice
    assert not _run(tmp_path / "b", {"neutron/neutron.conf": NEUTRON.format(extra="")}, "newton",
                    "neutron-ipam")
    f = _one(_run(tmp_path / "c", {"neutron/neutron.conf": NEUTRON.format(
        extra="ipam_driver = infoblox")}, rule_id="neutron-ipam"), "ipam_driver")
    assert (f.severity, f.value) == ("info", "infoblox")


def test_neutron_agent_liveness(tmp_path):
    files = {"neutron/neutron.conf": NEUTRON.format(extra="agent_down_time = 40"),
             "neutron/plugins/ml2/openvswitch_agent.ini": "[agent]\nreport_interval = 30\n"
                                                          "l2_population = True\n"}
    f = _one(_run(tmp_path / "a", files, rule_id="neutron-agent-liveness"), "agent_down_time")
    assert (f.severity, f.value, f.default) == ("error", "40", "75")
    f = _one(_run(tmp_path / "b", {"neutron/neutron.conf": NEUTRON.format(extra="")},
                  rule_id="neutron-agent-liveness"), "agent_down_time")
    assert f.severity == "info"
    assert not _run(tmp_path / "c", {"neutron/neutron.conf": NEUTRON.format(
        extra="agent_down_time = 150")}, rule_id="neutron-agent-liveness")


def test_neutron_workers(tmp_path):
    got = _run(tmp_path, {"neutron/neutron.conf": NEUTRON.format(
        extra="api_workers = 1\nrpc_workers = 0\nrpc_state_report_workers = 0")},
        rule_id="neutron-workers")
    assert {(f.option, f.severity) for f in got} == {("api_workers", "warning"),
                                                     ("rpc_workers", "warning"),
                                                     ("rpc_state_report_workers", "warning")}


def test_rules_without_their_files_say_nothing(tmp_path):
    got = _run(tmp_path, {"glance/glance-api.conf": "[DEFAULT]\nworkers = 4\n"})
    assert not [f for f in got if f.rule_id != "db-pool"]
    assert rule("db-pool").id == "db-pool"
    with pytest.raises(KeyError):
        rule("nope")
