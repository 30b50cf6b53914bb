"""Redaction of secrets in log text, applied before anything is stored.

The secrets OpenStack services, libraries and clients are known to log are a maintained rule set,
:data:`RULES`: each :class:`Rule` names the form it catches, an example, and where OpenStack
writes it. The rules are joined into one regular expression (:data:`_SECRET`) run in one pass by
both tokenizer paths (Polars here, the native Rust tokenizer through ``tokenize.py``); at each
position the first rule that matches wins, in :data:`RULES` order. A rule keeps its ``keep``
prefix and ``after`` suffix and replaces the secret between them with ``***``.

The key names of keyed values follow oslo.utils ``strutils._SANITIZE_KEYS`` (master, 2026; the
list ``mask_password`` / ``mask_dict_password`` use) plus keys OpenStack logs that the list misses
(``X-Auth-Key``, ``secret_key``, ``adminPass``...). Like oslo.utils, a key matches when a key
name *ends* with one of them (``os_password``, ``new_password2``).

Every pattern is plain ``regex``-crate syntax (no look-around, no back-references): Polars and
the native tokenizer both compile it with Rust's ``regex`` crate.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

__all__ = ["KEY_NAMES", "REDACTED", "RULES", "Rule", "redact", "redact_columns", "redact_text"]

REDACTED = "***"


@dataclass(frozen=True)
class Rule:
    """One redaction rule: the regex ``keep`` + ``secret`` + ``after``; ``secret`` becomes ``***``.

    ``keep`` and ``after`` are kept as they are; no part may hold a capturing group. Keyed
    rules (``keyed=True``) are joined after one copy of the key-name pattern, so the pattern
    stays small enough for the lazy DFA; only ASCII word classes and boundaries are used (a
    Unicode ``\\b`` or ``\\w`` makes the DFA give up on non-ASCII text). ``anchors``
    are patterns of which every match holds at least one (cheap ones: literals, character
    classes for case): the pre-filter :data:`_CHEAP` is their alternation. ``form`` is an example of the text caught
    (``S`` stands for the secret); ``source`` says where OpenStack writes it.
    """

    name: str
    form: str
    source: str
    keep: str
    secret: str
    after: str = ""
    anchors: tuple[str, ...] = ()
    keyed: bool = False  # ``keep`` follows a key name of :data:`KEY_NAMES` (kept too)


#: Key names whose values are secrets (case-insensitive; a key *ending* in one of them, then
#: optional digits, matches). oslo.utils ``strutils._SANITIZE_KEYS`` first, then additions.
OSLO_SANITIZE_KEYS = (
    "adminpass", "admin_pass", "password", "admin_password", "auth_token", "new_pass",
    "auth_password", "secret_uuid", "secret", "sys_pswd", "token", "configdrive", "chappassword",
    "encrypted_key", "private_key", "fernetkey", "sslkey", "passphrase", "cephclusterfsid",
    "octaviaheartbeatkey", "rabbitcookie", "cephmanilaclientkey", "pacemakerremoteauthkey",
    "designaterndckey", "cephadminkey", "heatauthencryptionkey", "cephclientkey",
    "keystonecredential", "barbicansimplecryptokek", "cephrgwkey", "swifthashsuffix",
    "migrationsshkey", "cephmdskey", "cephmonkey", "chapsecret",
)
KEY_NAMES = OSLO_SANITIZE_KEYS + (
    "passwd",  # OS_PASSWD, htpasswd-style configs
    "token_id",  # keystoneclient/middleware token_id=
    "x-auth-key",  # swift tempauth / swiftclient request headers
    "x-storage-pass",  # swift tempauth v1
    "temp_url_key", "temp-url-key", "temp_url_sig",  # swift tempurl (meta header, query)
    "secret_key", "secret_access_key",  # EC2 credentials, aws_secret_access_key, EC2_SECRET_KEY
    "samlresponse",  # SAML2 HTTP-POST binding (keystone federation, shibboleth/mellon)
    "api_key", "apikey",
)


def _ci(lit: str) -> str:
    """``lit`` as a case-insensitive pattern spelled with character classes."""
    out = []
    for ch in lit:
        if ch.isalpha() and ch.isascii():
            out.append(f"[{ch.upper()}{ch.lower()}]")
        elif ch.isalnum():
            out.append(ch)
        else:
            out.append("\\" + ch if ch in r".^$*+?()[]{}|\-" else ch)
    return "".join(out)


# a key name ending in one of KEY_NAMES, optional digits (oslo.utils: ``%(key)s[0-9]*``)
_KEY = "(?i-u:" + "|".join(sorted((k.replace("-", r"\-") for k in KEY_NAMES), key=len,
                                reverse=True)) + ")[0-9]*"
_Q = r"\\*['\"]"  # a quote, possibly escaped (JSON inside a JSON string: EC2 blobs, bodies)
_BARE = r"[^'\"\s,;&}{)<>*\\][^'\"\s,;&})\\]*"  # an unquoted value
#: every key name holds one of these literals (any case) or ends in "key", which the filter
#: wants followed by digits and a separator ("keystone" must not pass it)
KEY_LITERALS = ("token", "pass", "pswd", "secret", "configdrive", "fsid", "credential",
                "hashsuffix", "kek", "cookie", "samlresponse", "url_sig")
_KEY_ANCHORS = tuple(_ci(x) for x in KEY_LITERALS) + (
    _ci("key") + r"[0-9]*(?:\\|['\"\s:=>,]|%2|%3)",
)


RULES: tuple[Rule, ...] = (
    Rule("pem_private_key", "-----BEGIN RSA PRIVATE KEY-----\\nS\\n-----END RSA PRIVATE KEY-----",
         "nova os-keypairs create response body (private_key), ssh/TLS keys in config dumps",
         r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----", r"(?:[^-]|-[^-])*",
         anchors=("PRIVATE KEY",)),
    Rule("saml_assertion", "<saml2:Assertion ...>S</saml2:Assertion>",
         "keystone federation / mod_auth_mellon debug dumps of SAML2 responses",
         r"<(?:[A-Za-z0-9_\-]+:)?(?:Encrypted)?Assertion(?-u:\b)",
         r"[\s\S]*?(?:</(?:[A-Za-z0-9_\-]+:)?(?:Encrypted)?Assertion>|$)", anchors=(_ci("assertion"),)),
    Rule("saml_base64", "PHNhbWxwOlJlc3BvbnNl...",
         "base64 SAML2 messages (HTTP-POST binding) outside a SAMLResponse key",
         "", r"(?:PHNhbW[wx]|PD94bWwg)[A-Za-z0-9+/=]{40,}", anchors=("PHNhbW", "PD94bWwg")),
    Rule("authorization_header", "Authorization: Bearer S / 'Authorization': 'Basic S'",
         "keystoneauth/requests session debug (REQ: curl -H), OIDC (mod_auth_openidc), "
         "swift/ec2 middlewares",
         r"(?i:(?:proxy-)?authorization)(?:" + _Q + r")?\s*[:=]\s*(?:[uUbB]?" + _Q + r")?"
         r"(?:(?i:bearer|basic|negotiate|oauth|token|digest)\s+)?",
         r"[^\s'\"\\,]+", anchors=(_ci("authorization"),)),
    Rule("cookie_header", "Cookie: sessionid=S; csrftoken=S",
         "horizon/django and console proxies logging request headers",
         r"(?i:(?:set-)?cookie)(?:" + _Q + r")?\s*:\s*(?:[uUbB]?" + _Q + r")?",
         r"[^'\"\\\r\n]+", anchors=(_ci("cookie"),)),
    Rule("keystone_token_body", "\"token\": {\"issued_at\": ..., \"tenant\": {...}, \"id\": \"S\"}",
         "keystone v2.0 POST /tokens response bodies (keystoneclient/keystonemiddleware debug), "
         "py2 reprs of the same dict",
         r"(?i:token)" + _Q + r"\s*:\s*\{(?:[^{}]|\{[^{}]*\})*?" + _Q + r"id" + _Q + r"\s*:\s*"
         r"[uU]?" + _Q, r"[^'\"\\]+", anchors=(_ci("token"),)),
    Rule("keyed_escaped_dq", "{\\\"secret\\\": \\\"S\\\"}",
         "JSON inside a JSON string: keystone EC2 credential blobs, nested request bodies",
         r"\\+\"\s*:\s*[uU]?\\+\"", r"(?:[^\"\\]|\\[^\"\\])*", anchors=_KEY_ANCHORS, keyed=True),
    Rule("keyed_dq", "\"password\": \"S\" / u'password': u\"S\"",
         "JSON request/response bodies (clients, keystonemiddleware), py reprs holding a quote",
         r"['\"]\s*:\s*[uUbB]?\"", r"(?:[^\"\\]|\\.)*", anchors=_KEY_ANCHORS, keyed=True),
    Rule("keyed_sq", "{u'password': u'S'} / 'secret_key': 'S'",
         "Python reprs of dicts (py2 u'' and py3), RPC contexts, config dumps",
         r"['\"]\s*:\s*[uUbB]?'", r"(?:[^'\\]|\\.)*", anchors=_KEY_ANCHORS, keyed=True),
    Rule("keyed_arg_list", "['iscsiadm', 'node.session.auth.password', '-v', u'S']",
         "oslo.concurrency processutils command lists (os-brick iSCSI CHAP); oslo.utils pattern",
         r"['\"]\s*,\s*['\"]--?[A-Za-z]+['\"]\s*,\s*[uUbB]?['\"]", r"[^'\"]*",
         anchors=_KEY_ANCHORS, keyed=True),
    Rule("keyed_bare", "password=S / X-Auth-Token: S / ?token=S&",
         "config dumps (log_opt_values), headers, env, URL queries (noVNC ?token=)",
         r"['\"]?\s*[:=]\s*['\"]?", _BARE, anchors=_KEY_ANCHORS, keyed=True),
    Rule("keyed_urlencoded", "%3Ftoken%3DS / %22password%22%3A%20%22S",
         "URL-encoded queries and bodies (noVNC/websockify path=%3Ftoken%3D)",
         r"(?:%2[27])?(?:%3[AaDd])(?:%20|\+)*(?:%2[27])?", r"[^\s&%'\"]+",
         anchors=_KEY_ANCHORS, keyed=True),
    Rule("keyed_flag_value", "node.session.auth.password -v S",
         "iscsiadm / processutils command strings (oslo.utils pattern)",
         r"\s+--?[A-Za-z]+\s+", r"[^\s'\"]+", anchors=_KEY_ANCHORS, keyed=True),
    Rule("keyed_space_quote", "password 'S'",
         "oslo.utils pattern: a key then whitespace then a quoted value",
         r"\s+[uUbB]?['\"]", r"[^'\"]*", anchors=_KEY_ANCHORS, keyed=True),
    Rule("keyed_cli_flag", "--os-password S / --password 'S'",
         "command lines logged by processutils, devstack, rally, shell traces",
         r"--[A-Za-z0-9_\-]*" + _KEY + r"\s+", r"'[^']*'|\"[^\"]*\"|[^\s'\"]+", anchors=_KEY_ANCHORS),
    Rule("keyed_xml", "<password>S</password>",
         "XML request bodies (old nova/cinder XML API, SAML attributes); oslo.utils pattern",
         r"<[A-Za-z0-9_\-:]*" + _KEY + r">", r"[^<]*", anchors=_KEY_ANCHORS),
    Rule("fernet_token", "gAAAAABS...", "keystone Fernet tokens (Ocata on) anywhere in text",
         "", r"gAAAAA[A-Za-z0-9_\-=]{20,}", anchors=("gAAAAA",)),
    Rule("fernet_token_base64", "Z0FBQUFB...", "base64 of a Fernet token (basic-auth-like blobs)",
         "", r"Z0FBQUFB[A-Za-z0-9+/=]{20,}", anchors=("Z0FBQUFB",)),
    Rule("pki_token", "MIIKZQYJ...", "keystone PKI/PKIZ tokens (Grizzly..Ocata)",
         "", r"(?-u:\b)MII[A-Za-z0-9+/=\-]{60,}", anchors=("MII",)),
    Rule("jwt", "eyJhbGciOi...", "OIDC access/id tokens (JWS) in logged headers and bodies",
         "", r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*",
         anchors=("eyJ",)),
    Rule("url_userinfo", "mysql+pymysql://nova:S@db/nova, rabbit://u:S@h1,u:S@h2/",
         "oslo.db connection and oslo.messaging transport_url (config dumps, errors); a password "
         "may hold '/' or ':'",
         r"(?:://|,)[^\s:/@,]*:",
         # a '/' in the password only after a non-digit: "://host:8776/v2/x@" is a port and a path
         r"[0-9]*[^\s@/?#0-9][^\s@/?#]*/[^\s@?#]*|[^\s@/?#]+", r"@", anchors=("://",)),
)

def _build(rules: tuple[Rule, ...]) -> tuple[str, str]:
    """The one pattern and its replacement. Every capture group keeps text: groups before a
    secret are listed before ``***`` and ``after`` groups after it; groups of the alternatives
    that did not match expand to nothing."""
    alts: list[str] = []
    roles: list[str] = []  # per group, in order of its opening parenthesis: "before" / "after"
    i = 0
    while i < len(rules):
        if rules[i].keyed:
            block = []
            while i < len(rules) and rules[i].keyed:
                block.append(rules[i])
                i += 1
            alts.append(f"({_KEY})(?:" + "|".join(
                f"({r.keep})(?:{r.secret})({r.after})" for r in block) + ")")
            roles += ["before"] + ["before", "after"] * len(block)
        else:
            r = rules[i]
            alts.append(f"({r.keep})(?:{r.secret})({r.after})")
            roles += ["before", "after"]
            i += 1
    before = "".join(f"${{{n}}}" for n, role in enumerate(roles, 1) if role == "before")
    after = "".join(f"${{{n}}}" for n, role in enumerate(roles, 1) if role == "after")
    return "|".join(alts), before + REDACTED + after


def _build_cheap(rules: tuple[Rule, ...]) -> str:
    return "|".join(dict.fromkeys(a for r in rules for a in r.anchors))


#: the secret pattern, the replacement (``${n}`` groups) and the cheap pre-filter: every secret
#: match holds a hit of ``_CHEAP``. ``tokenize.py`` hands these three to the native tokenizer.
_SECRET, _REPLACEMENT = _build(RULES)
_CHEAP = _build_cheap(RULES)


def _maybe_secret(expr: pl.Expr) -> pl.Expr:
    return expr.str.contains(_CHEAP)


def redact(expr: pl.Expr) -> pl.Expr:
    """Polars expression: ``expr`` (String) with secrets replaced by ``***``."""
    return pl.when(_maybe_secret(expr)).then(expr.str.replace_all(_SECRET, _REPLACEMENT)).otherwise(
        expr
    )


def redact_text(text: str) -> str:
    """The same redaction for one Python string (used for small tables and tests)."""
    return pl.select(redact(pl.lit(text, dtype=pl.String))).item()


def redact_columns(df: pl.DataFrame, columns: list[str]) -> pl.DataFrame:
    """Redact String ``columns`` of ``df``, running the patterns only on rows that may hold a
    secret (a cheap case-insensitive pre-filter); same result as :func:`redact`, faster."""
    out = {}
    for c in columns:
        s = df.get_column(c)
        idx = pl.select(_maybe_secret(pl.lit(s))).to_series().fill_null(False).arg_true()
        if idx.len():
            sub = pl.DataFrame({c: s.gather(idx)})
            fixed = sub.select(redact(pl.col(c))).get_column(c)
            s = s.clone().scatter(idx, fixed)
        out[c] = s
    return df.with_columns(**out)
