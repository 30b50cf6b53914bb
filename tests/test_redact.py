"""Redaction: secrets OpenStack services and clients are known to log never reach a table;
ordinary text is left alone."""

from __future__ import annotations

import string

import polars as pl
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from stacklens.ingest.pipeline import ingest
from stacklens.ingest.redact import REDACTED, redact, redact_columns, redact_text

R = "req-c354514b-0c97-415e-ba7f-18750569f103"
U = "4f1713a9-2ad0-4dce-8b3d-30dea178e0a5"
FERNET = (
    "gAAAAABXcKx8aFtZ3jvVv7xQ2w9hWfqrfYxPNHmgPfQ_hW-s3H7YqGmT5FEqXGzPqmSVmWqXk8Z9f4aB_"
    "Jx1Oq2sLHmN9dAe7ZbW3c="
)
PKI = (
    "MIIKZQYJKoZIhvcNAQcCoIIKVjCCClICAQExCTAHBgUrDgMCGjCCCL4GCSqGSIb3DQEHAaCCCK8EggirewogICAgImFj"
    "Y2Vzcy+/"
)

#: (text, the secret in it)
SECRETS = [
    ("X-Auth-Token: 8a1c0f1d33b84ce5b4e1d3a6a5e3f0c2", "8a1c0f1d33b84ce5b4e1d3a6a5e3f0c2"),
    ("{'X-Auth-Token': 'abc123token', 'Accept': 'application/json'}", "abc123token"),
    ('{"X-Auth-Token": "abc123token"}', "abc123token"),
    ("{'x-subject-token': 'subj3cttok3n', 'vary': 'X-Auth-Token'}", "subj3cttok3n"),
    ("X-Service-Token: s3rv1cetok", "s3rv1cetok"),
    ("password=hunter2secret next=1", "hunter2secret"),
    ("password = hunter2secret", "hunter2secret"),
    ('password="hunter2secret"', "hunter2secret"),
    ('Body: {"auth": {"passwordCredentials": {"username": "admin", "password": "hunter2secret"}}}',
     "hunter2secret"),
    ('{"user": {"password": "hunter2secret", "name": "bob"}}', "hunter2secret"),
    ("{'password': 'hunter2secret'}", "hunter2secret"),
    ("admin_password = s3cr3tadm1n", "s3cr3tadm1n"),
    ("'admin_password': 's3cr3tadm1n'", "s3cr3tadm1n"),
    ("admin_pass=s3cr3tadm1n", "s3cr3tadm1n"),
    ("passwd: s3cr3tpw", "s3cr3tpw"),
    ("OS_PASSWORD=s3cr3tpw", "s3cr3tpw"),
    ("metadata_proxy_shared_secret = sh4redsecret", "sh4redsecret"),
    (f"Validating token {FERNET} for user", FERNET),
    (f"X-Subject-Token: {FERNET}", FERNET),
    (f"token {PKI} end", PKI),
    ("transport_url = rabbit://stackrabbit:secretrabbit@127.0.0.1:5672/", "secretrabbit"),
    ("connection = mysql+pymysql://root:secretmysql@127.0.0.1/nova?charset=utf8", "secretmysql"),
    ("token_id=abcdef123456", "abcdef123456"),
]

#: text that holds no secret and must come back unchanged
ORDINARY = [
    "Token validated",
    "Validating token",
    "The request you have made requires authentication. Token is invalid",
    f"Token validated for user {U}",
    f"{R} [instance: {U}] Starting instance...",
    "keystonemiddleware.auth_token [-] Using the local cache",
    "Authenticating user token __call__ /usr/lib/python2.7/keystonemiddleware/auth_token.py:311",
    "password reset requested for user bob",
    "Response - Headers: {'vary': 'X-Auth-Token', 'status': '200'}",
    "http://127.0.0.1:8774/v2.1/servers/detail",
    'Lock "compute_resources" acquired by "instance_claim" :: waited 0.000s',
    "MII is a short word",
    "gAAAAA",
    "",
]


@pytest.mark.parametrize(("text", "secret"), SECRETS, ids=[s[:28] for s, _ in SECRETS])
def test_secrets_are_redacted(text, secret):
    out = redact_text(text)
    assert secret not in out
    assert REDACTED in out


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_left_alone(text):
    assert redact_text(text) == text


def test_redaction_keeps_the_key_and_the_shape():
    assert redact_text("{'X-Auth-Token': 'abc', 'a': 'b'}") == "{'X-Auth-Token': '***', 'a': 'b'}"
    assert redact_text('"password": "pw1", "name": "n"') == '"password": "***", "name": "n"'
    assert redact_text("rabbit://u:pw@h:5672/") == "rabbit://u:***@h:5672/"


def test_redact_columns_matches_redact_and_keeps_nulls():
    texts = [t for t, _ in SECRETS] + ORDINARY + [None]
    df = pl.DataFrame({"message": texts, "continuation": list(reversed(texts))})
    out = redact_columns(df, ["message", "continuation"])
    expect = df.select(redact(pl.col("message")), redact(pl.col("continuation")))
    assert out.equals(expect)
    assert out["message"][-1] is None


def test_secrets_never_reach_the_tables(tmp_path):
    secrets = ["abc123token", "hunter2secret", "s3cr3tadm1n", FERNET, PKI, "secretrabbit"]
    text = (
        "+ export OS_PASSWORD=hunter2secret\n"  # shell trace, counted
        "REQ: curl -H 'X-Auth-Token: abc123token' http://h/v2\n"  # before the first record
        f"2016-06-28 13:56:12.360 1 DEBUG keystonemiddleware.auth_token [{R} a p] "
        f"Validating token {FERNET} _validate /x.py:1\n"
        f"2016-06-28 13:56:12.361 1 DEBUG oslo_service.service [-] transport_url = "
        f"rabbit://stackrabbit:secretrabbit@127.0.0.1:5672/ log_opt_values /x.py:2\n"
        f"2016-06-28 13:56:12.362 1 DEBUG novaclient [{R} a p] REQ: curl -g -i -X GET "
        "http://ctl:8774/v2.1\n"
        "    -H 'X-Auth-Token: abc123token'\n"  # continuation
        '    -d \'{"server": {"adminPass": "-", "admin_password": "s3cr3tadm1n"}}\'\n'
        "\x00\x01 binary with password=hunter2secret\n"  # quarantined
        f"2016-06-28 13:56:12.363 1 INFO nova.api [{R} a p] token {PKI}\n"
        "2016-13-45 99:99:99.000 1 INFO nova.api [-] X-Auth-Token: abc123token\n"  # bad time
    )
    p = tmp_path / "screen-n-api.txt"
    p.write_text(text)
    res = ingest([str(p)])
    assert res.events.height == 4
    assert set(res.quarantine["reason"]) == {"before_first_record", "binary", "bad_timestamp"}
    cells = (
        res.events["message"].drop_nulls().to_list()
        + res.events["continuation"].drop_nulls().to_list()
        + res.quarantine["raw"].to_list()
    )
    for s in secrets:
        assert not [c for c in cells if s in c], s
    assert sum(REDACTED in c for c in cells) >= 7


# --- properties ------------------------------------------------------------------------------

#: characters of generated passwords (tempest, devstack) that are not value delimiters
PW_CHARS = string.ascii_letters + string.digits + "!#$%+-./:=?@^_~"
secret_st = st.text(alphabet=PW_CHARS, min_size=6, max_size=40)
context_st = st.text(alphabet=string.ascii_letters + string.digits + " .,:[]-_/", max_size=40)


@settings(max_examples=200, deadline=None)
@given(before=context_st, secret=secret_st, after=context_st,
       key=st.sampled_from(["password", "Password", "admin_password", "PASSWORD", "passwd"]),
       sep=st.sampled_from(["=", " = ", ": ", "="]))
def test_secret_after_password_never_survives(before, secret, after, key, sep):
    assume(secret not in before + key + after)
    text = f"{before} {key}{sep}{secret} {after}"
    assert secret not in redact_text(text)


@settings(max_examples=100, deadline=None)
@given(before=context_st, secret=secret_st, quote=st.sampled_from(["'", '"']))
def test_quoted_secret_after_password_key_never_survives(before, secret, quote):
    assume(secret not in before + "password")
    text = f"{before} {{{quote}password{quote}: {quote}{secret}{quote}, {quote}x{quote}: 1}}"
    assert secret not in redact_text(text)


@pytest.mark.parametrize(
    "secret", ["H4*MK89S&z4=t_!", "&leadingamp", "*starstar*", "ab;cd,ef}gh"],
)
def test_quoted_password_with_delimiter_characters_is_fully_redacted(secret):
    out = redact_text(f'Body: {{"user": {{"password": "{secret}", "name": "u1"}}}}')
    tail = secret.split("&")[-1]
    assert secret not in out and tail not in out
    assert out == 'Body: {"user": {"password": "***", "name": "u1"}}'


def test_multi_host_transport_url():
    out = redact_text(
        "transport_url = rabbit://openstack:s3cr3tA@ctl1:5672,openstack:s3cr3tB@ctl2:5672/"
    )
    assert "s3cr3tA" not in out and "s3cr3tB" not in out
    assert "@ctl1:5672,openstack:" in out


def test_keystone_v2_token_id_in_response_body():
    body = (
        '        Body: {"access": {"token": {"issued_at": "2016-06-28T13:55:55.209742Z", '
        '"expires": "2016-06-28T14:55:55Z", "id": "c5d88b94fea14fb3af9620fd149bc67e", '
        '"tenant": {"id": "341772d1e8d5480994d8bc8446cf17ce"}}}}'
    )
    out = redact_text(body)
    assert "c5d88b94fea14fb3af9620fd149bc67e" not in out
    assert "341772d1e8d5480994d8bc8446cf17ce" in out  # a project id is not a secret


def test_real_logs_keep_no_keyed_secret():
    """The real fixtures hold tempest ``adminPass`` values, py2 contexts with ``auth_token`` and
    devstack ``--password`` command lines: after redaction no such key is followed by a value
    other than ``***`` (or an empty one)."""
    import gzip
    import re

    from conftest import DATA, need

    root = need(DATA / "oslo-logs")
    lines: list[str] = []
    for p in sorted(root.rglob("*")):
        if not p.is_file() or p.suffix in (".csv", ".tsv", ".md"):
            continue
        raw = p.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        lines += [ln for ln in raw.decode("utf-8", "replace").splitlines()
                  if "ass" in ln or "oken" in ln or "ecret" in ln]
    out = pl.DataFrame({"m": lines}).select(redact(pl.col("m")))["m"].to_list()
    leak = re.compile(
        r"""(?i)(?:adminpass|auth_token|password|secret_key)['"]\s*:\s*u?['"](?!\*\*\*['"])[^'"]"""
        r"""|--(?:os-)?password\s+(?!\*\*\*)\S"""
    )
    assert len(out) > 1000
    assert not [m for m in out if leak.search(m)][:5]
