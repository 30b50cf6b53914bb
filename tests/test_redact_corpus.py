"""The secrets corpus: every credential form OpenStack is known to log, each planted with its own
marker value, must leave no trace in any output of ``stacklens analyze``.

Forms follow the code that writes them (cited per entry): keystoneauth1 ``session.py``
``_http_log_request`` (``REQ: curl -g -i -X ... -H "X-Auth-Token: {SHA1}..."``), keystonemiddleware
and python-*client debug bodies, oslo.config ``log_opt_values`` (``name = value``),
oslo.messaging ``unpacked context`` (py2 ``u''`` reprs), nova ``servers`` / ``os-keypairs``
responses (``adminPass``, ``private_key``), keystone v2.0 ``POST /tokens`` bodies, keystone
``/v3/credentials`` EC2 blobs (JSON in a JSON string), swift tempauth (``X-Auth-Key``,
``X-Storage-Pass``) and tempurl (``temp_url_sig``), noVNC/websockify (``path=%3Ftoken%3D``),
os-brick iSCSI CHAP command lines, shell traces of devstack and, for the key names, oslo.utils
``strutils._SANITIZE_KEYS`` (master) in the forms its ``_FORMAT_PATTERNS`` name.

The CLI test runs the real ``python -m stacklens analyze`` on both tokenizer paths and reads
every output: DuckDB tables, Parquet files, report.json, report.html, manifest, stdout/stderr.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from stacklens.ingest.redact import (
    _REPLACEMENT,
    _SECRET,
    KEY_LITERALS,
    KEY_NAMES,
    OSLO_SANITIZE_KEYS,
    RULES,
    redact_text,
)

REPO = Path(__file__).resolve().parents[1]
R = "req-c354514b-0c97-415e-ba7f-18750569f103"


def _marker(i: int) -> str:
    """A value found nowhere else: letters and digits only, so it fits every form."""
    return f"Qz{i:03d}Kv7Wp"


# (name, template with {S} for the secret); {S} is replaced by a unique marker per entry
FORMS: list[tuple[str, str]] = [
    # config dumps: oslo.config cfg.py log_opt_values "%-30s = %s"
    ("cfg_password", "password                       = {S}"),
    ("cfg_admin_password", "keystone_authtoken.admin_password = {S}"),
    ("cfg_transport_url", "transport_url                  = rabbit://stackrabbit:{S}@10.0.0.5:5672/"),
    ("cfg_multi_host_url", "transport_url = rabbit://nova:{S}@ctl1:5672,nova:{S}@ctl2:5672/"),
    ("cfg_mysql_slash", "connection = mysql+pymysql://nova:ab/{S}@127.0.0.1/nova?charset=utf8"),
    ("cfg_mysql_colon", "connection = mysql://root:x:{S}@db.example.org:3306/cinder"),
    # keystoneauth1 session._http_log_request / novaclient curl lines
    ("curl_x_auth_token", 'REQ: curl -g -i -X GET http://ctl:8774/v2.1 -H "X-Auth-Token: {S}"'),
    ("hdr_x_subject_token", "X-Subject-Token: {S}"),
    ("hdr_x_service_token", "'X-Service-Token': '{S}'"),
    ("hdr_swift_auth_key", "GET /auth/v1.0 HTTP/1.1 X-Auth-User: test:tester X-Auth-Key: {S}"),
    ("hdr_swift_storage_pass", "{'X-Storage-User': 'test:tester', 'X-Storage-Pass': '{S}'}"),
    ("hdr_bearer", 'curl -H "Authorization: Bearer {S}" https://idp/userinfo'),
    ("hdr_basic", "Authorization: Basic {S}"),
    ("hdr_authz_py_repr", "{u'Authorization': u'Bearer {S}', u'Accept': u'application/json'}"),
    ("hdr_cookie", "Cookie: sessionid={S}; csrftoken=abc"),
    ("hdr_set_cookie", "'Set-Cookie': 'sessionid={S}; Path=/; HttpOnly'"),
    # URLs
    ("url_novnc_query", "GET /vnc_auto.html?token={S}&title=vm1(4f17) HTTP/1.1"),
    ("url_amp_token", "GET /v2.1/os-console-auth-tokens?x=1&token={S} HTTP/1.1"),
    ("url_novnc_encoded", "GET /websockify?path=%3Ftoken%3D{S} HTTP/1.1"),
    ("url_json_encoded", "body=%7B%22password%22%3A%20%22{S}%22%7D"),
    ("url_tempurl_sig", "GET /v1/AUTH_x/c/o?temp_url_sig={S}&temp_url_expires=1 HTTP/1.1"),
    ("url_access_token", "redirect to https://rp/cb?code=1&access_token={S}&state=x"),
    # command lines: devstack xtrace, processutils, os-brick
    ("cli_os_password", "openstack --os-password {S} server list"),
    ("cli_password", "openstack user create demo --password {S} --domain=default"),
    ("cli_password_eq", "nova --os-password={S} list"),
    ("cli_os_token", "openstack --os-token {S} --os-url http://ctl:9292 image list"),
    ("cli_iscsiadm_list",
     "['iscsiadm', '-m', 'node', '-T', 'iqn.2010-10.org', '--op', 'update', '-n', "
     "'node.session.auth.password', '-v', u'{S}']"),
    ("cli_iscsiadm_str", "iscsiadm -m node --op update -n node.session.auth.password -v {S}"),
    ("cli_mysqladmin", "/usr/bin/mysqladmin -u root password '{S}'"),
    ("env_os_password", "+ export OS_PASSWORD={S}"),
    ("env_service_token", "SERVICE_TOKEN={S}"),
    ("env_ec2_secret_key", "EC2_SECRET_KEY={S}"),
    ("env_aws_secret", "aws_secret_access_key = {S}"),
    # py2 / py3 reprs (oslo.messaging contexts, keystone RBAC lines, nova API debug)
    ("py2_password", "RBAC: Authorizing identity:create_user(user={u'password': u'{S}', u'enabled': True})"),
    ("py2_auth_token_uuid",
     "unpacked context: {u'user_id': u'dd3c', u'auth_token': u'8d7e2b1c-{S}-4f1e-9a0b', u'roles': []}"),
    ("py2_token_body", "{u'token': {u'issued_at': u'2016-06-28T13:55:55Z', u'id': u'{S}'}}"),
    ("py2_token_body_tenant_first",
     "{u'access': {u'token': {u'tenant': {u'id': u'341772d1', u'name': u'demo'}, u'id': u'{S}'}}}"),
    ("py2_secret_key", "{'access_key': 'AKIA1', 'secret_key': '{S}'}"),
    ("py2_secret", "{u'access': u'8e4a', u'secret': u'{S}', u'trust_id': None}"),
    ("py3_dq_value", "{'password': \"it's-{S}\"}"),
    ("py2_bytes", "{b'password': b'{S}'}"),
    # JSON bodies
    ("json_v2_password", '{"auth": {"passwordCredentials": {"username": "admin", "password": "{S}"}}}'),
    ("json_v3_password",
     '{"auth": {"identity": {"methods": ["password"], "password": {"user": {"name": "admin", '
     '"domain": {"id": "default"}, "password": "{S}"}}}}}'),
    ("json_v2_token_auth", '{"auth": {"token": {"id": "{S}"}, "tenantName": "demo"}}'),
    ("json_v2_token_tenant_first",
     '{"access": {"token": {"issued_at": "2016-06-28T13:55:55.209742Z", "expires": '
     '"2016-06-28T14:55:55Z", "tenant": {"id": "341772d1e8d5", "enabled": true}, "id": "{S}"}}}'),
    ("json_adminpass", '{"server": {"id": "4f1713a9", "links": [], "adminPass": "{S}"}}'),
    ("json_keypair_private_key",
     '{"keypair": {"name": "k1", "private_key": "-----BEGIN RSA PRIVATE KEY-----\\nMIIEow{S}'
     'AAKCAQEA\\n-----END RSA PRIVATE KEY-----\\n", "fingerprint": "1e:2c"}}'),
    ("json_ec2_blob_escaped",
     '{"credential": {"blob": "{\\"access\\": \\"181920\\", \\"secret\\": \\"{S}\\"}", "type": "ec2"}}'),
    ("json_ec2_blob_double_escaped",
     '"body": "{\\"blob\\": \\"{\\\\\\"access\\\\\\": \\\\\\"1\\\\\\", \\\\\\"secret\\\\\\": '
     '\\\\\\"{S}\\\\\\"}\\"}"'),
    ("json_client_secret", '{"client_id": "keystone", "client_secret": "{S}"}'),
    ("json_refresh_token", '{"refresh_token": "{S}", "token_type": "Bearer"}'),
    # token formats without a key
    ("fernet", "Validating token gAAAAABXcKx8{S}aFtZ3jvVv7xQ2w9hWfqrfYxPNHmg_hW-s3H7Y= for user"),
    ("fernet_base64", "blob Z0FBQUFBQlhjS3g4{S}YUZ0WjNqdlZ2N3hRMnc5aFdmcXJm end"),
    ("pki", "token MIIKZQYJKoZIhvcNAQcCoIIKVjCCClICAQExCTAHBgUrDgMCGjCCCL4GCSqGS{S}Ib3DQEHAaCCCK8 end"),
    ("jwt_bare", "OIDC id token eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxMjM0{S}NTY3ODkwIn0.c2lnbmF0dXJl"),
    # SAML (keystone federation, mod_auth_mellon / shibboleth debug)
    ("saml_post", "POST /Shibboleth.sso/SAML2/POST SAMLResponse=PHNhbWxwOlJlc3BvbnNl{S}IHhtbG5z&RelayState=x"),
    ("saml_base64_bare", "mellon: received PHNhbWxwOlJlc3BvbnNlIHhtbG5zOnNhbWxwPSJ1cm46b2FzaXM6{S}bmFtZXM="),
    ("saml_assertion_xml",
     '<samlp:Response><saml:Assertion ID="a1"><saml:Subject><saml:NameID>{S}</saml:NameID>'
     "</saml:Subject></saml:Assertion></samlp:Response>"),
    ("xml_password", "<user><name>admin</name><password>{S}</password></user>"),
]

#: the key names of oslo.utils ``_SANITIZE_KEYS`` (plus ours) in the forms its patterns name
KEY_FORMS = [
    ("eq", "{K}={S}"),
    ("eq_spaced", "{K} = {S}"),
    ("dq", '"{K}": "{S}"'),
    ("py2", "{u'{K}': u'{S}'}"),
    ("prefixed_sq", "{'os_{K}': '{S}'}"),
    ("digits", "{K}2={S}"),
    ("xml", "<{K}>{S}</{K}>"),
    ("flag", "--{K} {S}"),
    ("query", "/x?a=1&{K}={S}&b=2"),
]
for _k in KEY_NAMES:
    for _f, _t in KEY_FORMS:
        FORMS.append((f"key_{_k}_{_f}", _t.replace("{K}", _k)))

#: where in a log the planted text sits: record message, continuation line, TRACE line, and the
#: three quarantine reasons (before the first record, binary, bad timestamp)
PLACES = ("message", "continuation", "trace", "before_first", "binary", "bad_ts")


def planted() -> list[tuple[str, str, str]]:
    """``(form name, marker, text)`` for every form."""
    out = []
    for i, (name, tpl) in enumerate(FORMS):
        m = _marker(i)
        out.append((name, m, tpl.replace("{S}", m)))
    return out


def test_corpus_size():
    assert len(FORMS) >= 50 + len(KEY_NAMES) * len(KEY_FORMS)
    assert len({m for _, m, _ in planted()}) == len(FORMS)


@pytest.mark.parametrize(("name", "marker", "text"), planted(), ids=[f[0] for f in FORMS])
def test_redact_text_removes_every_planted_value(name, marker, text):
    assert marker not in redact_text(text), redact_text(text)


def test_rules_are_declared_with_name_form_and_source():
    names = [r.name for r in RULES]
    assert len(names) == len(set(names))
    for r in RULES:
        assert r.form and r.source and r.secret and r.anchors, r.name


def test_every_key_name_passes_the_cheap_filter():
    assert set(OSLO_SANITIZE_KEYS) <= set(KEY_NAMES)
    for k in KEY_NAMES:
        assert k.endswith("key") or any(lit in k for lit in KEY_LITERALS), k


def test_patterns_have_no_extra_groups_and_compile_in_rust_regex():
    import re

    for r in RULES:
        for part in (r.keep, r.secret, r.after):
            py = part.replace("(?i-u:", "(?i:").replace("(?-u:\\b)", "\\b")  # Python's syntax
            assert re.compile(py).groups == 0, (r.name, part)
            assert "\\w" not in part, r.name
            assert "(?=" not in part and "(?!" not in part and "(?<" not in part, r.name
        # Polars compiles with Rust's regex crate, as the native tokenizer does
        pl.select(pl.lit("x").str.contains(r.keep + "(?:" + r.secret + ")" + r.after))
    pl.select(pl.lit("x").str.replace_all(_SECRET, _REPLACEMENT))
    assert _SECRET.count("admin_password") <= 3  # one key-name copy per keyed block


def test_only_ascii_word_classes_and_boundaries():
    """A Unicode \\b or \\w makes the regex crate's lazy DFA quit on non-ASCII text and fall
    back to a far slower engine (a mutated 14 MB log took 16 s instead of 0.8 s)."""
    import re

    assert "\\w" not in _SECRET
    assert not re.search(r"(?<!\(\?-u:)\\b", _SECRET)


#: ordinary text the new rules must leave alone (seen in the real fixtures)
ORDINARY = [
    " cookie=0x0, duration=55383.473s, table=23, n_packets=0, priority=0 actions=drop",
    "DELETE http://127.0.0.1:8776/v2/8361d1a306644fd79f3c884ba43734dd/volumes/%21@",
    "Authorization failed for user admin",
    "AssertionError: 1 != 2",
    "keystone.common.wsgi [-] key_name=mykey",
    "Creating keypair mykey for user",
    "Lock 'refresh_cache-4f1713a9' acquired by 'nova.compute.manager' :: waited 0.000s",
    "http://ctl:8774/v2.1/servers?name=vm1",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_left_alone(text):
    assert redact_text(text) == text


# --- the CLI, every output --------------------------------------------------------------------


def _oslo(ms: int, msg: str, level: str = "DEBUG") -> str:
    # oslo.log logging_context_format_string (oslo_log/_options.py, Mitaka..2025.1)
    return f"2016-06-28 13:56:{12 + ms // 1000:02d}.{ms % 1000:03d} 2931 {level} nova.api.wsgi [{R} admin demo] {msg}"


def write_tree(root: Path, items: list[tuple[str, str, str]]) -> None:
    """The planted lines in every place (:data:`PLACES`), spread over four services of one host
    (few enough shell lines before the first record that format detection still sees records)."""
    host = root / "ctl1"
    host.mkdir(parents=True)
    names = ["nova-api.log", "cinder-volume.log", "keystone.log", "glance-api.log"]
    files: dict[str, list[bytes]] = {f: [] for f in names}
    for i, (_, _, text) in enumerate(items):  # quarantined: before the first record
        files[names[i % len(names)]].append(f"startup: {text}".encode())
    ms = 0
    for i, (_, _, text) in enumerate(items):
        lines = files[names[i % len(names)]]
        ms += 1
        lines.append(_oslo(ms, f"Request body {text}").encode())
        ms += 1
        lines.append(_oslo(ms, "REQ: curl -g -i -X POST http://ctl:8774/v2.1/servers").encode())
        lines.append(f"    {text}".encode())  # continuation
        ms += 1
        lines.append(_oslo(ms, "Unexpected exception in API method", "ERROR").encode())
        # Havana/Icehouse TRACE lines (oslo-incubator log.py: "%(asctime)s %(process)d TRACE ...")
        lines.append(f"2016-06-28 13:56:{12 + ms // 1000:02d}.{ms % 1000:03d} 2931 TRACE nova.api "
                     f"  File \"x.py\", line 1, in f: {text}".encode())
        lines.append(b"\x00\x01\x02 " + text.encode() + b" \xff\xfe")  # binary
        lines.append(f"2016-13-45 99:99:99.000 2931 INFO nova.api [-] {text}".encode())  # bad time
    for f, lines in files.items():
        (host / f).write_bytes(b"\n".join(lines) + b"\n")


def _table_cells(df: pl.DataFrame) -> list[str]:
    out = []
    for c in df.columns:
        try:
            out += [str(v) for v in df.get_column(c).cast(pl.String).drop_nulls().to_list()]
        except Exception:  # noqa: BLE001 - nested types: their JSON text
            out += [json.dumps(v, default=str) for v in df.get_column(c).to_list()]
    return out


def _duckdb_cells(path: Path) -> list[str]:
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    # the run's views read tables/*.parquet by paths relative to the run folder
    con.execute(f"SET file_search_path = '{path.parent}'")
    try:
        out = []
        for (name,) in con.execute("select table_name from information_schema.tables").fetchall():
            rows = con.execute(f'select * from "{name}"').fetchall()
            out += [str(v) for row in rows for v in row if v is not None]
        return out
    finally:
        con.close()


def _native_available() -> bool:
    try:
        from stacklens.ingest import tokenize

        return tokenize._native is not None
    except ImportError:
        return False


@pytest.mark.parametrize("native", ["0", "1"])
def test_no_planted_value_in_any_output(tmp_path, native):
    if native == "1" and not _native_available():
        pytest.skip("the native tokenizer is not installed in this environment")
    items = planted()
    write_tree(tmp_path / "logs", items)
    out = tmp_path / "run"
    env = {**os.environ, "STACKLENS_NATIVE": native, "PYTHONPATH": str(REPO)}
    r = subprocess.run([sys.executable, "-m", "stacklens", "analyze", str(tmp_path / "logs"),
                        "--out", str(out)], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    texts: dict[str, str] = {"stdout": r.stdout, "stderr": r.stderr}
    n_tables = 0
    for p in sorted(out.rglob("*")):
        if not p.is_file():
            continue
        texts[str(p)] = p.read_bytes().decode("utf-8", "replace")  # json, html, jsonl, raw bytes
        if p.suffix == ".parquet":
            texts[f"{p} (rows)"] = "\n".join(_table_cells(pl.read_parquet(p)))
            n_tables += 1
        elif p.suffix == ".duckdb":
            texts[f"{p} (rows)"] = "\n".join(_duckdb_cells(p))
    assert n_tables >= 3 and any("report.html" in k for k in texts), sorted(texts)
    # the planted lines did reach the outputs (redacted), in every place
    q = pl.read_parquet(next(out.rglob("quarantine.parquet")))
    assert set(q["reason"]) >= {"before_first_record", "binary", "bad_timestamp"}
    ev = pl.read_parquet(next(out.rglob("events.parquet")))
    assert ev["continuation"].drop_nulls().str.contains("***", literal=True).sum() >= len(items)
    hits = [(name, where) for name, m, _ in items for where, t in texts.items() if m in t]
    assert not hits, f"{len(hits)} leaks, e.g. {hits[:20]}"


def test_native_tokenizer_redacts_like_the_polars_path(tmp_path):
    """In process: the native tokenizer, given this module's patterns, stores the same redacted
    text as the Polars path (and none of the planted values)."""
    from stacklens.ingest import tokenize
    from stacklens.ingest.formats import FORMATS
    from stacklens.ingest.tokenize import FileChunk, tokenize_batch

    if not tokenize.native_available():
        pytest.skip("the native tokenizer is not installed in this environment")
    items = planted()
    write_tree(tmp_path, items)
    chunks = [FileChunk(str(p), p.read_bytes(), "ctl1", p.stem, 2016)
              for p in sorted((tmp_path / "ctl1").iterdir())]
    oslo = next(f for f in FORMATS if f.name == "oslo")
    res = {n: tokenize_batch(chunks, oslo, native=n) for n in (True, False)}
    for n, r in res.items():
        blob = "\n".join(_table_cells(r.events) + _table_cells(r.quarantine))
        assert not [m for _, m, _ in items if m in blob], n
    cols = ["message", "continuation"]
    assert res[True].events.select(cols).equals(res[False].events.select(cols))
    assert res[True].quarantine["raw"].to_list() == res[False].quarantine["raw"].to_list()


# --- properties -------------------------------------------------------------------------------

#: characters of generated passwords (tempest, devstack) that are not value delimiters
PW_CHARS = "".join(chr(c) for c in range(0x21, 0x7F) if chr(c) not in "'\"\\,;&{}()<>*` ")


@settings(max_examples=300, deadline=None)
@given(key=st.sampled_from(KEY_NAMES), form=st.sampled_from([t for _, t in KEY_FORMS]),
       secret=st.text(alphabet=PW_CHARS, min_size=8, max_size=40),
       before=st.text(alphabet="abc XYZ.:[]-_/0123", max_size=30))
def test_any_password_under_any_key_in_any_form_is_removed(key, form, secret, before):
    text = before + " " + form.replace("{K}", key).replace("{S}", secret)
    assume(secret not in text.replace(secret, "", 1))  # the secret occurs once
    assert secret not in redact_text(text)
