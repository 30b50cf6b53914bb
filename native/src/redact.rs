//! Windowed secret redaction: `redact()` of `stacklens/ingest/redact.py` (when the pre-filter
//! `CHEAP` matches, `SECRET.replace_all`) without running the 3 kB secret pattern over every
//! byte. Used only when Python passes exactly `SECRET` and `CHEAP` (`fast_paths()["redact"]`).
//!
//! Why it is the same (every claim is about the constant `SECRET` below):
//!
//! `replace_all` replaces, from position `p = 0`, the leftmost-first match starting at `>= p`
//! and goes on from its end. The leftmost-first match starting at `>= p` is the anchored
//! leftmost-first match at its start. So trying an anchored search at every position that
//! *may* start a match, in increasing order and skipping those before the last match's end,
//! finds the same matches, provided the candidate positions hold every position where a match
//! can start. Extra candidates cost time, never change the result. The candidates, per
//! alternative of `SECRET` (the rules of redact.py):
//!
//! * `pem_private_key` starts with `-----BEGIN `; `saml_base64` with `PHNhbW` or `PD94bWwg`;
//!   `fernet_token` `gAAAAA`; `fernet_token_base64` `Z0FBQUFB`; `pki_token` `MII`; `jwt` `eyJ`;
//!   `keystone_token_body` with `(?i:token)`: a literal hit is a candidate;
//! * `authorization_header` starts with `(?i:(?:proxy-)?authorization)`, `cookie_header` with
//!   `(?i:(?:set-)?cookie)`: a hit of `authorization` / `cookie`, and 6 / 4 bytes before it when
//!   they spell `proxy-` / `set-`;
//! * `saml_assertion` is `<` + `(?:[A-Za-z0-9_\-]+:)?(?:Encrypted)?` + `Assertion`: the `<`
//!   right before the run of `[A-Za-z0-9_\-:]` that ends at a hit of `Assertion`;
//! * the keyed rules start with a key name of the `(?i-u:...)` list; `keyed_cli_flag` is `--` +
//!   `[A-Za-z0-9_\-]*` + a key name, `keyed_xml` `<` + `[A-Za-z0-9_\-:]*` + a key name: every
//!   key name hit, every `--` in the run of `[A-Za-z0-9_\-]` ending at it, the `<` right before
//!   the run of `[A-Za-z0-9_\-:]` ending at it;
//! * `url_userinfo` is `(?:://|,)`, then text without `\s` or `@`, then `@`: every `:` and `,`
//!   in the run of bytes other than `@` and ASCII whitespace that ends at an `@`.
//!
//! Where the literals are looked for. Every `CHEAP` match starts with a literal of `SCAN` (its
//! alternatives, lower-cased); `CHEAP` matches somewhere iff an anchored `CHEAP` search succeeds
//! at some position where a `SCAN` literal starts (the gate, exact). `SCAN` runs on an ASCII
//! lower-cased copy of the text (case-sensitive Aho-Corasick: its SIMD prefilter applies),
//! restarting one byte after each hit so no start is hidden by an overlap. Every match of the
//! first three kinds above holds a `CHEAP` match, and every key name holds one (a `KEY_LITERALS`
//! literal, or `key` at its end followed by digits and one of the bytes a keyed rule goes on
//! with: test `every_key_name_holds_a_cheap_hit`) starting at most `before` (the longest key
//! name) bytes after the match start; so the literals of the first four kinds are looked for
//! (overlapping, ASCII case-insensitive Aho-Corasick: a case-insensitive hit of a
//! case-sensitive literal is only an extra candidate) only in windows from `before` bytes
//! before a `CHEAP` match start to `longest` bytes after it (none for `FAR` literals: `://`,
//! `private key`). `-----BEGIN ` and `@` (whose
//! candidates may lie far from a `CHEAP` hit) are looked for in the whole text (memchr).
//! `(?i)` in Unicode mode also matches U+212A (KELVIN SIGN) as `k` and U+017F (LONG S) as `s`
//! (`cookie`, `set-`, `token`), which ASCII folding misses: text holding either takes
//! `replace_all`. The key names are `(?i-u:...)`, ASCII only. Candidates and `SCAN` hits are
//! ASCII bytes, so char boundaries.
//! `Input::range` keeps the whole text as context, so `\b` and `$` see what `replace_all` sees.

use std::borrow::Cow;
use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, MatchKind};
use memchr::memmem;
use regex::Regex;
use regex_automata::{meta, Anchored, Input};

/// The secret pattern of `redact.py` (`_SECRET`) that [`Windowed`] is proven for; any other
/// pattern turns the fast path off (the regexes run: same tables, slower).
pub const SECRET: &str = r#"(-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----)(?:(?:[^-]|-[^-])*)()|(<(?:[A-Za-z0-9_\-]+:)?(?:Encrypted)?Assertion(?-u:\b))(?:[\s\S]*?(?:</(?:[A-Za-z0-9_\-]+:)?(?:Encrypted)?Assertion>|$))()|()(?:(?:PHNhbW[wx]|PD94bWwg)[A-Za-z0-9+/=]{40,})()|((?i:(?:proxy-)?authorization)(?:\\*['\"])?\s*[:=]\s*(?:[uUbB]?\\*['\"])?(?:(?i:bearer|basic|negotiate|oauth|token|digest)\s+)?)(?:[^\s'\"\\,]+)()|((?i:(?:set-)?cookie)(?:\\*['\"])?\s*:\s*(?:[uUbB]?\\*['\"])?)(?:[^'\"\\\r\n]+)()|((?i:token)\\*['\"]\s*:\s*\{(?:[^{}]|\{[^{}]*\})*?\\*['\"]id\\*['\"]\s*:\s*[uU]?\\*['\"])(?:[^'\"\\]+)()|((?i-u:barbicansimplecryptokek|pacemakerremoteauthkey|heatauthencryptionkey|octaviaheartbeatkey|cephmanilaclientkey|keystonecredential|secret_access_key|designaterndckey|x\-storage\-pass|cephclusterfsid|swifthashsuffix|migrationsshkey|admin_password|temp\-url\-key|auth_password|encrypted_key|cephclientkey|chappassword|rabbitcookie|cephadminkey|x\-auth\-key|temp_url_key|temp_url_sig|samlresponse|secret_uuid|configdrive|private_key|admin_pass|auth_token|passphrase|cephrgwkey|cephmdskey|cephmonkey|chapsecret|secret_key|adminpass|fernetkey|password|new_pass|sys_pswd|token_id|api_key|secret|sslkey|passwd|apikey|token)[0-9]*)(?:(\\+\"\s*:\s*[uU]?\\+\")(?:(?:[^\"\\]|\\[^\"\\])*)()|(['\"]\s*:\s*[uUbB]?\")(?:(?:[^\"\\]|\\.)*)()|(['\"]\s*:\s*[uUbB]?')(?:(?:[^'\\]|\\.)*)()|(['\"]\s*,\s*['\"]--?[A-Za-z]+['\"]\s*,\s*[uUbB]?['\"])(?:[^'\"]*)()|(['\"]?\s*[:=]\s*['\"]?)(?:[^'\"\s,;&}{)<>*\\][^'\"\s,;&})\\]*)()|((?:%2[27])?(?:%3[AaDd])(?:%20|\+)*(?:%2[27])?)(?:[^\s&%'\"]+)()|(\s+--?[A-Za-z]+\s+)(?:[^\s'\"]+)()|(\s+[uUbB]?['\"])(?:[^'\"]*)())|(--[A-Za-z0-9_\-]*(?i-u:barbicansimplecryptokek|pacemakerremoteauthkey|heatauthencryptionkey|octaviaheartbeatkey|cephmanilaclientkey|keystonecredential|secret_access_key|designaterndckey|x\-storage\-pass|cephclusterfsid|swifthashsuffix|migrationsshkey|admin_password|temp\-url\-key|auth_password|encrypted_key|cephclientkey|chappassword|rabbitcookie|cephadminkey|x\-auth\-key|temp_url_key|temp_url_sig|samlresponse|secret_uuid|configdrive|private_key|admin_pass|auth_token|passphrase|cephrgwkey|cephmdskey|cephmonkey|chapsecret|secret_key|adminpass|fernetkey|password|new_pass|sys_pswd|token_id|api_key|secret|sslkey|passwd|apikey|token)[0-9]*\s+)(?:'[^']*'|\"[^\"]*\"|[^\s'\"]+)()|(<[A-Za-z0-9_\-:]*(?i-u:barbicansimplecryptokek|pacemakerremoteauthkey|heatauthencryptionkey|octaviaheartbeatkey|cephmanilaclientkey|keystonecredential|secret_access_key|designaterndckey|x\-storage\-pass|cephclusterfsid|swifthashsuffix|migrationsshkey|admin_password|temp\-url\-key|auth_password|encrypted_key|cephclientkey|chappassword|rabbitcookie|cephadminkey|x\-auth\-key|temp_url_key|temp_url_sig|samlresponse|secret_uuid|configdrive|private_key|admin_pass|auth_token|passphrase|cephrgwkey|cephmdskey|cephmonkey|chapsecret|secret_key|adminpass|fernetkey|password|new_pass|sys_pswd|token_id|api_key|secret|sslkey|passwd|apikey|token)[0-9]*>)(?:[^<]*)()|()(?:gAAAAA[A-Za-z0-9_\-=]{20,})()|()(?:Z0FBQUFB[A-Za-z0-9+/=]{20,})()|()(?:(?-u:\b)MII[A-Za-z0-9+/=\-]{60,})()|()(?:eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*)()|((?:://|,)[^\s:/@,]*:)(?:[0-9]*[^\s@/?#0-9][^\s@/?#]*/[^\s@?#]*|[^\s@/?#]+)(@)"#;
/// The pre-filter of `redact.py` (`_CHEAP`): text it does not match is left as it is.
pub const CHEAP: &str = r#"PRIVATE KEY|[Aa][Ss][Ss][Ee][Rr][Tt][Ii][Oo][Nn]|PHNhbW|PD94bWwg|[Aa][Uu][Tt][Hh][Oo][Rr][Ii][Zz][Aa][Tt][Ii][Oo][Nn]|[Cc][Oo][Oo][Kk][Ii][Ee]|[Tt][Oo][Kk][Ee][Nn]|[Pp][Aa][Ss][Ss]|[Pp][Ss][Ww][Dd]|[Ss][Ee][Cc][Rr][Ee][Tt]|[Cc][Oo][Nn][Ff][Ii][Gg][Dd][Rr][Ii][Vv][Ee]|[Ff][Ss][Ii][Dd]|[Cc][Rr][Ee][Dd][Ee][Nn][Tt][Ii][Aa][Ll]|[Hh][Aa][Ss][Hh][Ss][Uu][Ff][Ff][Ii][Xx]|[Kk][Ee][Kk]|[Ss][Aa][Mm][Ll][Rr][Ee][Ss][Pp][Oo][Nn][Ss][Ee]|[Uu][Rr][Ll]_[Ss][Ii][Gg]|[Kk][Ee][Yy][0-9]*(?:\\|['\"\s:=>,]|%2|%3)|gAAAAA|Z0FBQUFB|MII|eyJ|://"#;

/// Literals whose hits start a match (`token`, also a key name, for `keystone_token_body`).
const STARTS: [&str; 7] = ["PHNhbW", "PD94bWwg", "gAAAAA", "Z0FBQUFB", "MII", "eyJ", "token"];

/// The literals of `CHEAP` that key names hold (any case; see [`Windowed::new`]), and `key`,
/// which `CHEAP` wants followed by digits and a separator.
const KEY_LITERALS: [&str; 13] = [
    "token",
    "pass",
    "pswd",
    "secret",
    "configdrive",
    "fsid",
    "credential",
    "hashsuffix",
    "kek",
    "cookie",
    "samlresponse",
    "url_sig",
    "key",
];

/// For each alternative of `CHEAP`, the literal every match of it starts with, in lower case
/// (`key` for `[Kk][Ee][Yy][0-9]*(?:...)`).
const SCAN: [&str; 23] = [
    "private key",
    "assertion",
    "phnhbw",
    "pd94bwwg",
    "authorization",
    "cookie",
    "token",
    "pass",
    "pswd",
    "secret",
    "configdrive",
    "fsid",
    "credential",
    "hashsuffix",
    "kek",
    "samlresponse",
    "url_sig",
    "key",
    "gaaaaa",
    "z0fbqufb",
    "mii",
    "eyj",
    "://",
];

/// The `SCAN` literals that open no window: the candidates of their alternatives
/// (`url_userinfo`, `pem_private_key`) come from searches of the whole text (`@`, `-----BEGIN `).
const FAR: [&str; 2] = ["://", "private key"];

/// ASCII lower case of one byte.
fn lower(c: u8) -> u8 {
    c | (((c.wrapping_sub(b'A') < 26) as u8) << 5)
}

thread_local! {
    /// the lower-cased text being scanned (one buffer per thread)
    static LOW: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// What a literal hit means for the candidate starts (see the module docs).
#[derive(Clone, Copy)]
enum Kind {
    /// the hit is a candidate
    Start,
    /// the hit, and the given head right before it (`proxy-`, `set-`)
    Head(&'static [u8]),
    /// `Assertion`: the `<` before the `[A-Za-z0-9_\-:]` run ending at the hit
    Tag,
    /// a key name
    Key,
}

/// The key names of `SECRET`: its first `(?i-u:a|b|...)` group, `\-` unescaped.
fn key_names() -> Vec<String> {
    let from = SECRET.find("(?i-u:").expect("SECRET has a key-name group") + "(?i-u:".len();
    let to = from + SECRET[from..].find(')').expect("the group ends");
    SECRET[from..to].split('|').map(|k| k.replace("\\-", "-")).collect()
}

/// `[A-Za-z0-9_\-]`
fn word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
}

/// `[A-Za-z0-9_\-:]`
fn word_colon(c: u8) -> bool {
    word(c) || c == b':'
}

/// Does `b` hold U+212A (KELVIN SIGN) or U+017F (LONG S), which `(?i)` matches as k / s?
fn has_folds(b: &[u8]) -> bool {
    !b.is_ascii()
        && (memmem::find(b, "\u{212A}".as_bytes()).is_some() || memmem::find(b, "\u{17F}".as_bytes()).is_some())
}

/// The start of the run of `class` bytes ending at `a`.
fn run_start(b: &[u8], a: usize, class: fn(u8) -> bool) -> usize {
    let mut i = a;
    while i > 0 && class(b[i - 1]) {
        i -= 1;
    }
    i
}

/// For sorted, distinct `keys`, the start of the run of `class` bytes ending at each; each
/// byte is looked at once (a run reaching the previous key has that key's start).
fn run_starts(b: &[u8], keys: &[usize], class: fn(u8) -> bool) -> Vec<usize> {
    let mut rs: Vec<usize> = Vec::with_capacity(keys.len());
    for (n, &a) in keys.iter().enumerate() {
        let floor = if n > 0 { keys[n - 1] } else { 0 };
        let mut i = a;
        while i > floor && class(b[i - 1]) {
            i -= 1;
        }
        rs.push(if n > 0 && i == floor { rs[n - 1] } else { i });
    }
    rs
}

/// A piece of a parsed replacement: text, or a capture group's text (empty when it did not
/// take part in the match).
#[derive(Debug, PartialEq)]
enum Piece {
    Lit(String),
    Group(usize),
}

/// `rep` as pieces when it uses only `${N}` group numbers and `$$` (as the regex crate's
/// `Captures::interpolate_string_into` reads them); None for any other `$` form (then the
/// regex crate interpolates it).
fn parse_replacement(rep: &str) -> Option<Vec<Piece>> {
    let mut out = Vec::new();
    let mut lit = String::new();
    let mut rest = rep;
    while let Some(d) = rest.find('$') {
        lit.push_str(&rest[..d]);
        rest = &rest[d..];
        if let Some(after) = rest.strip_prefix("$$") {
            lit.push('$');
            rest = after;
            continue;
        }
        let body = rest.strip_prefix("${")?;
        let close = body.find('}')?;
        let name = &body[..close];
        if name.is_empty() || !name.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        if !lit.is_empty() {
            out.push(Piece::Lit(std::mem::take(&mut lit)));
        }
        out.push(Piece::Group(name.parse().ok()?));
        rest = &body[close + 1..];
    }
    lit.push_str(rest);
    if !lit.is_empty() {
        out.push(Piece::Lit(lit));
    }
    Some(out)
}

/// One rule of `SECRET` alone: its regex, how many capture groups of `SECRET` come before its
/// own, and whether it has no look-around assertion (`^ $ \b ...`: then its captures on a
/// span read only the span's bytes, see [`Recent`]).
type Alone = (meta::Regex, usize, bool);

/// `pat`'s top-level alternatives as one multi-pattern regex (leftmost-first, patterns in
/// order: the same matches as the alternation, each tagged with its alternative) and each
/// alone ([`Alone`]). Errors unless `pat` is an alternation without a bare flag group at its
/// top level and the groups add up to `full`'s.
fn split_rules(pat: &str, full: &meta::Regex) -> Result<(meta::Regex, Vec<Alone>), String> {
    use regex_syntax::ast::{parse::Parser, print::Printer, Ast};
    let ast = Parser::new().parse(pat).map_err(|e| e.to_string())?;
    let Ast::Alternation(alt) = &ast else {
        return Err("the secret pattern is not an alternation".into());
    };
    let mut pats = Vec::with_capacity(alt.asts.len());
    for a in &alt.asts {
        let bare_flags = match a {
            Ast::Flags(_) => true,
            Ast::Concat(c) => c.asts.iter().any(|x| matches!(x, Ast::Flags(_))),
            _ => false,
        };
        if bare_flags {
            return Err("a rule of the secret pattern sets flags for what follows".into());
        }
        let mut p = String::new();
        Printer::new().print(a, &mut p).map_err(|e| e.to_string())?;
        pats.push(p);
    }
    let groups = |r: &meta::Regex| r.group_info().group_len(regex_automata::PatternID::ZERO) - 1;
    let mut alone = Vec::with_capacity(pats.len());
    let mut before = 0;
    for p in &pats {
        let r = meta::Regex::new(p).map_err(|e| e.to_string())?;
        let n = groups(&r);
        let hir = regex_syntax::Parser::new().parse(p).map_err(|e| e.to_string())?;
        alone.push((r, before, hir.properties().look_set().is_empty()));
        before += n;
    }
    if before != groups(full) {
        return Err("the rules' capture groups do not add up to the secret pattern's".into());
    }
    let rules = meta::Regex::new_many(&pats).map_err(|e| e.to_string())?;
    Ok((rules, alone))
}

/// A rule's groups on one match, as byte spans relative to the match start (index: the rule's
/// own group number; 0 is the whole match).
type Groups = Vec<Option<(usize, usize)>>;

/// Longest match whose groups [`Recent`] keeps, and how many it keeps per thread.
const MEMO_SPAN: usize = 64;
const MEMO_LEN: usize = 8;

/// One remembered match: the rule, its text, its groups.
type Remembered = (usize, Vec<u8>, Groups);

thread_local! {
    /// the next slot to overwrite, and the remembered matches
    static RECENT: std::cell::RefCell<(usize, Vec<Remembered>)> =
        const { std::cell::RefCell::new((0, Vec::new())) };
}

/// The groups of the last few short matches of rules without look-around, per thread. The
/// same secret comes back on every RPC receipt of older releases (`'auth_token': None` in
/// each context dump), and capturing it again cost ~10,000 instructions (the keyed rules'
/// 49 key names). Same groups: an anchored search whose pattern has no look-around
/// assertion reads only the bytes of its span, so the same rule on the same bytes gives the
/// same groups at the same offsets from the start. Rules are named by their index in `SECRET`,
/// from which every [`Windowed`] is built, so entries stay right across instances.
struct Recent;

impl Recent {
    fn get(rule: usize, text: &[u8]) -> Option<Groups> {
        RECENT.with(|r| {
            r.borrow()
                .1
                .iter()
                .find(|(k, t, _)| *k == rule && t.as_slice() == text)
                .map(|e| e.2.clone())
        })
    }

    fn put(rule: usize, text: &[u8], groups: &Groups) {
        RECENT.with(|r| {
            let (next, items) = &mut *r.borrow_mut();
            let item = (rule, text.to_vec(), groups.clone());
            if items.len() < MEMO_LEN {
                items.push(item);
            } else {
                items[*next] = item;
            }
            *next = (*next + 1) % MEMO_LEN;
        });
    }
}

/// The windowed form of `SECRET.replace_all` (built once per pattern set).
pub struct Windowed {
    /// the top-level alternatives of `SECRET` (its rules) as the patterns of one regex, in
    /// order: the pattern that matches at a candidate is the alternative `SECRET` takes there
    rules: meta::Regex,
    /// each alternative alone ([`Alone`])
    alone: Vec<Alone>,
    /// `CHEAP`, for anchored checks at the `scan` hits
    cheap: meta::Regex,
    /// `SCAN`, case-sensitive (run on lower-cased text: a SIMD prefilter applies)
    scan: AhoCorasick,
    lits: AhoCorasick,
    kinds: Vec<Kind>,
    /// how far before a `CHEAP` hit a literal may start (the longest key name)
    before: usize,
    /// the longest literal
    longest: usize,
    /// `-----BEGIN `
    begin: memmem::Finder<'static>,
    /// the first replacement given to [`Windowed::redact`], parsed ([`parse_replacement`]):
    /// interpolating it from its text took ~5 % of the tokenizer's time
    template: OnceLock<(String, Option<Vec<Piece>>)>,
}

impl Windowed {
    /// Build it for `SECRET`. Errors if a key name holds no literal of `KEY_LITERALS` (then a
    /// keyed match could lie outside every window).
    pub fn new() -> Result<Windowed, String> {
        let mut pats: Vec<String> = STARTS.iter().map(|s| s.to_string()).collect();
        let mut kinds = vec![Kind::Start; STARTS.len()];
        for (lit, kind) in [
            ("authorization", Kind::Head(b"proxy-")),
            ("cookie", Kind::Head(b"set-")),
            ("Assertion", Kind::Tag),
        ] {
            pats.push(lit.into());
            kinds.push(kind);
        }
        let keys = key_names();
        for k in &keys {
            let lower = k.to_ascii_lowercase();
            if !KEY_LITERALS.iter().any(|l| lower.contains(l)) {
                return Err(format!("key name {k:?} holds no literal of CHEAP"));
            }
            pats.push(k.clone());
            kinds.push(Kind::Key);
        }
        let lits = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .build(&pats)
            .map_err(|e| e.to_string())?;
        let whole = meta::Regex::new(SECRET).map_err(|e| e.to_string())?;
        let (rules, alone) = split_rules(SECRET, &whole)?;
        let cheap = meta::Regex::new(CHEAP).map_err(|e| e.to_string())?;
        let scan = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostFirst)
            .build(SCAN)
            .map_err(|e| e.to_string())?;
        let before = keys.iter().map(String::len).max().unwrap_or(0).max("proxy-".len());
        let longest = pats.iter().map(String::len).max().unwrap_or(0);
        Ok(Windowed {
            rules,
            alone,
            cheap,
            scan,
            lits,
            kinds,
            before,
            longest,
            begin: memmem::Finder::new(b"-----BEGIN "),
            template: OnceLock::new(),
        })
    }

    /// Every position where a match of `SECRET` may start in `b` (unsorted, repeats), given
    /// the merged windows around the `CHEAP` hits (sorted, disjoint).
    fn candidates(&self, b: &[u8], windows: &[(usize, usize)]) -> Vec<usize> {
        let mut cands: Vec<usize> = Vec::new();
        let mut keys: Vec<usize> = Vec::new();
        for &(lo, hi) in windows {
            for m in self
                .lits
                .find_overlapping_iter(aho_corasick::Input::new(b).span(lo..hi))
            {
                let a = m.start();
                match self.kinds[m.pattern().as_usize()] {
                    Kind::Start => cands.push(a),
                    Kind::Head(h) => {
                        cands.push(a);
                        if a >= h.len() && b[a - h.len()..a].eq_ignore_ascii_case(h) {
                            cands.push(a - h.len());
                        }
                    }
                    Kind::Tag => {
                        let r = run_start(b, a, word_colon);
                        if r > 0 && b[r - 1] == b'<' {
                            cands.push(r - 1);
                        }
                    }
                    Kind::Key => keys.push(a),
                }
            }
        }
        keys.sort_unstable();
        keys.dedup();
        cands.extend_from_slice(&keys);
        // keyed_cli_flag: each "--" in the word run ending at a key (once per run)
        let rs = run_starts(b, &keys, word);
        for (n, (&a, &r)) in keys.iter().zip(&rs).enumerate() {
            let from = if n > 0 && rs[n - 1] == r {
                keys[n - 1].saturating_sub(1).max(r)
            } else {
                r
            };
            cands.extend((from..a.saturating_sub(1)).filter(|&j| b[j] == b'-' && b[j + 1] == b'-'));
        }
        // keyed_xml: the '<' right before the word-or-colon run ending at a key
        let rs = run_starts(b, &keys, word_colon);
        for (n, &r) in rs.iter().enumerate() {
            if (n == 0 || rs[n - 1] != r) && r > 0 && b[r - 1] == b'<' {
                cands.push(r - 1);
            }
        }
        // pem_private_key
        cands.extend(self.begin.find_iter(b));
        // url_userinfo: ':' and ',' in the run before an '@' without '@' or ASCII whitespace
        for at in memchr::memchr_iter(b'@', b) {
            let r = run_start(b, at, |c| !matches!(c, b'@' | 0x09..=0x0d | b' '));
            cands.extend((r..at).filter(|&i| matches!(b[i], b':' | b',')));
        }
        cands
    }

    /// `redact()` of redact.py: `s` unchanged unless `cheap` (== `CHEAP`) matches, else
    /// `secret.replace_all(s, rep)` (`secret` == `SECRET`), computed at the candidate starts.
    pub fn redact<'a>(&self, _cheap: &Regex, secret: &Regex, rep: &str, s: &'a str) -> Cow<'a, str> {
        let b = s.as_bytes();
        let mut windows: Vec<(usize, usize)> = Vec::new();
        let mut gate = false;
        LOW.with(|low| {
            let mut low = low.borrow_mut();
            low.clear();
            low.extend(b.iter().map(|&c| lower(c)));
            // every position where a SCAN literal starts (leftmost, restarting one byte on)
            let mut pos = 0;
            while let Some(m) = self.scan.find(aho_corasick::Input::new(&low[..]).span(pos..b.len())) {
                let p = m.start();
                pos = p + 1;
                if self.cheap.is_match(Input::new(s).range(p..).anchored(Anchored::Yes)) {
                    gate = true;
                    if FAR.contains(&SCAN[m.pattern().as_usize()]) {
                        continue;
                    }
                    let lo = p.saturating_sub(self.before);
                    let hi = (p + self.longest).min(b.len());
                    match windows.last_mut() {
                        Some(w) if lo <= w.1 => w.1 = w.1.max(hi),
                        _ => windows.push((lo, hi)),
                    }
                }
            }
        });
        if !gate {
            return Cow::Borrowed(s);
        }
        if has_folds(b) {
            return secret.replace_all(s, rep);
        }
        let mut cands = self.candidates(b, &windows);
        if cands.is_empty() {
            return Cow::Borrowed(s);
        }
        cands.sort_unstable();
        cands.dedup();
        let tpl = self.template.get_or_init(|| (rep.to_string(), parse_replacement(rep)));
        let pieces = if tpl.0 == rep { tpl.1.as_deref() } else { None };
        let Some(pieces) = pieces else {
            // a replacement with other `$` forms (never the tokenizer's): the regex crate
            return secret.replace_all(s, rep);
        };
        // the text, less its secrets, plus `***`s: grown once at most
        let mut out = String::with_capacity(s.len() + 64);
        let mut last = 0;
        let mut any = false;
        // Which rule matches at a candidate, and where the match ends, comes from the lazy DFA
        // of `rules`; the groups from that rule's regex alone on the match's span. The capture
        // engines' cost grows with pattern size x span (a PKI token is kilobytes), and one rule
        // is a fraction of the 3 kB pattern. Same groups: `SECRET`'s match at `c` goes through
        // that rule (leftmost-first: the first alternative that matches), within it the same
        // paths are preferred in the same order, a path ending at the match's end is still
        // the first one when the span stops there, and look-around sees the whole text.
        // made on the first capture search (a text whose matches are all recent needs none)
        let mut caps: Vec<Option<regex_automata::util::captures::Captures>> = Vec::new();
        for c in cands {
            if c < last {
                continue;
            }
            let Some(half) = self
                .rules
                .search_half(&Input::new(s).range(c..).anchored(Anchored::Yes))
            else {
                continue;
            };
            let k = half.pattern().as_usize();
            let (re, before, pure) = &self.alone[k];
            let end = half.offset();
            // a short match of a rule without look-around: its groups may be a recent one's
            let memo = *pure && end - c <= MEMO_SPAN;
            let hit = if memo { Recent::get(k, &b[c..end]) } else { None };
            let groups = match hit {
                Some(g) => g,
                None => {
                    if caps.is_empty() {
                        caps.resize_with(self.alone.len(), || None);
                    }
                    let cap = caps[k].get_or_insert_with(|| re.create_captures());
                    re.search_captures(&Input::new(s).range(c..end).anchored(Anchored::Yes), cap);
                    if cap.get_match().is_none() {
                        // cannot happen (the rule on its own match); a secret is never left in
                        return secret.replace_all(s, rep);
                    }
                    let g: Groups = (0..cap.group_len())
                        .map(|i| cap.get_group(i).map(|sp| (sp.start - c, sp.end - c)))
                        .collect();
                    if memo {
                        Recent::put(k, &b[c..end], &g);
                    }
                    g
                }
            };
            let span = |(a, z): (usize, usize)| &s[c + a..c + z];
            let m = groups[0].expect("group 0 is the match");
            out.push_str(&s[last..c + m.0]);
            for p in pieces {
                match p {
                    Piece::Lit(t) => out.push_str(t),
                    Piece::Group(0) => out.push_str(span(m)),
                    Piece::Group(g) => {
                        let own = g.checked_sub(*before).filter(|&x| x >= 1);
                        if let Some(sp) = own.and_then(|x| groups.get(x).copied().flatten()) {
                            out.push_str(span(sp));
                        }
                    }
                }
            }
            last = c + m.1;
            any = true;
        }
        if !any {
            Cow::Borrowed(s)
        } else {
            out.push_str(&s[last..]);
            Cow::Owned(out)
        }
    }
}

#[cfg(test)]
#[path = "redact_tests.rs"]
mod tests;
