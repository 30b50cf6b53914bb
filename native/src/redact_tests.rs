//! Tests of `redact.rs` (in their own file to keep that one short).
use super::*;
use crate::testrng::Rng;

pub(super) const REP: &str = "${1}${3}${5}${7}${9}${11}${13}${14}${16}${18}${20}${22}${24}${26}${28}${30}${32}${34}${36}${38}${40}${42}***${2}${4}${6}${8}${10}${12}${15}${17}${19}${21}${23}${25}${27}${29}${31}${33}${35}${37}${39}${41}${43}";

#[test]
fn replacement_pieces_as_the_regex_crate_reads_them() {
    use Piece::{Group, Lit};
    let p = parse_replacement("${1}${3}***${2}$$x${10}").unwrap();
    assert_eq!(
        p,
        vec![
            Group(1),
            Group(3),
            Lit("***".into()),
            Group(2),
            Lit("$x".into()),
            Group(10)
        ]
    );
    assert_eq!(parse_replacement("plain").unwrap(), vec![Lit("plain".into())]);
    assert!(parse_replacement("").unwrap().is_empty());
    for other in ["$1", "${name}", "${1", "a$", "${}"] {
        assert!(parse_replacement(other).is_none(), "{other}");
    }
    // the same text as the regex crate's interpolation, on a real match
    let re = meta::Regex::new(r"(a)(b)?(c)").unwrap();
    let mut caps = re.create_captures();
    re.captures("xacz", &mut caps);
    for rep in ["${1}${2}${3}!", "$$${3}${9}", REP] {
        let mut want = String::new();
        caps.interpolate_string_into("xacz", rep, &mut want);
        let mut got = String::new();
        for piece in parse_replacement(rep).unwrap() {
            match piece {
                Lit(t) => got.push_str(&t),
                Group(g) => {
                    if let Some(sp) = caps.get_group(g) {
                        got.push_str(&"xacz"[sp.range()]);
                    }
                }
            }
        }
        assert_eq!(got, want, "{rep}");
    }
}

#[test]
fn only_kelvin_and_long_s_fold_to_ascii_letters() {
    let re = Regex::new("(?i)^[a-z]$").unwrap();
    let folds: Vec<char> = (0x80..=0x10FFFFu32)
        .filter_map(char::from_u32)
        .filter(|c| re.is_match(&c.to_string()))
        .collect();
    assert_eq!(folds, vec!['\u{17F}', '\u{212A}']);
}

#[test]
fn key_names_are_the_keyed_list() {
    let k = key_names();
    assert_eq!(k.len(), 47, "{k:?}");
    assert!(k.iter().any(|x| x == "token") && k.iter().any(|x| x == "x-auth-key"));
    // the keyed block, keyed_cli_flag and keyed_xml use the same list
    let group = format!(
        "(?i-u:{})",
        k.iter().map(|x| x.replace('-', "\\-")).collect::<Vec<_>>().join("|")
    );
    assert_eq!(SECRET.matches(&group).count(), 3);
    assert!(k.iter().all(|x| x
        .bytes()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || b"_-".contains(&c))));
}

#[test]
fn every_cheap_alternative_starts_with_its_scan_literal() {
    // top-level alternatives of CHEAP (split at '|' outside parentheses)
    let (mut alts, mut depth, mut cur) = (Vec::new(), 0, String::new());
    for ch in CHEAP.chars() {
        match ch {
            '(' => depth += 1,
            ')' => depth -= 1,
            '|' if depth == 0 => {
                alts.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(ch);
    }
    alts.push(cur);
    assert_eq!(alts.len(), SCAN.len());
    let class = Regex::new(r"\[([A-Z])([a-z])\]").unwrap();
    for (alt, lit) in alts.iter().zip(SCAN) {
        // `[Xx]` classes read as the letter; what is left before any other syntax is literal
        let plain = class.replace_all(alt, |c: &regex::Captures| c[2].to_string());
        let head: String = plain
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || " :/_".contains(*c))
            .collect();
        assert!(head.to_ascii_lowercase().starts_with(lit), "{alt} {lit}");
        assert!(plain.len() == head.len() || lit == "key", "{alt}");
    }
}

#[test]
fn every_key_name_holds_a_cheap_hit() {
    // what may follow a key name in a match: digits, then the first byte of a keyed rule's
    // keep (`\\`, a quote, `\s`, `:`, `=`, `%2`, `%3`) or of `[0-9]*\s+` / `[0-9]*>`
    let cheap = Regex::new(CHEAP).unwrap();
    for k in key_names() {
        for digits in ["", "12"] {
            for follow in [
                "\\", "'", "\"", " ", "\t", "\u{a0}", "\u{2003}", ":", "=", "%27", "%3D", ">",
            ] {
                for kk in [k.clone(), k.to_ascii_uppercase()] {
                    let t = format!("{kk}{digits}{follow}");
                    let hit = cheap.find(&t).map(|m| m.start());
                    assert!(hit.is_some_and(|h| h < k.len()), "{t:?}");
                }
            }
        }
    }
}

fn check(w: &Windowed, re: &Regex, cheap: &Regex, m: &str) -> bool {
    let want = if cheap.is_match(m) {
        re.replace_all(m, REP)
    } else {
        Cow::Borrowed(m)
    };
    let got = w.redact(cheap, re, REP, m);
    assert_eq!(got, want, "{m:?}");
    matches!(want, Cow::Owned(_))
}

#[test]
fn windowed_redaction_matches_replace_all() {
    let re = Regex::new(SECRET).unwrap();
    let cheap = Regex::new(CHEAP).unwrap();
    let w = Windowed::new().unwrap();
    let parts = [
        "token",
        "TOKEN",
        "to\u{212A}en",
        "passecret",
        "password",
        "Password2",
        "passwd",
        "secret",
        "api_key",
        "apikey",
        "sslkey",
        "KEY",
        "key",
        "1",
        "x-auth-key",
        "X-Auth-Token",
        "admin_",
        "auth_",
        "os_",
        "\"",
        "'",
        "\\\"",
        "\\",
        ":",
        "=",
        " ",
        "\n",
        "\t",
        "{",
        "}",
        "\"id\"",
        "\"token\"",
        "gAAAAA",
        "AAAAAAAAAAAAAAAAAAAAAA",
        "Z0FBQUFB",
        "MII",
        "eyJ",
        "abcdefgh12",
        ".",
        "abcdefghijklmnopqrstuvwxyz0123456789+/=",
        "://",
        ",",
        "@",
        "u",
        "b",
        "host",
        "é",
        ";",
        "&",
        "%3D",
        "%22",
        "%3A",
        "%20",
        "+",
        "-",
        "--",
        "-v",
        "/",
        "<",
        ">",
        "</",
        "saml2:",
        "Assertion",
        "Encrypted",
        "-----BEGIN ",
        "RSA ",
        "PRIVATE KEY-----",
        "-----END ",
        "PHNhbWw",
        "PD94bWwg",
        "authorization",
        "Proxy-",
        "Bearer ",
        "cookie",
        "Set-",
        "ſet-",
        "\u{a0}",
        "_",
        "abcdefghijklmnopqrstuvwxyz_abcdefghijklmnop",
        "                              ",
        "a.b.c.d.e.f.g.h.i.j.k.l.m",
        "?",
        "#",
        "0",
    ];
    let mut rng = Rng(0xdead_beef_cafe_f00d);
    let mut changed = 0;
    for _ in 0..300_000 {
        let n = (rng.next() % 24) as usize;
        let m: String = (0..n).map(|_| rng.pick(&parts)).collect();
        changed += check(&w, &re, &cheap, &m) as usize;
    }
    assert!(changed > 15_000, "{changed}");
    for m in [
        "-----BEGIN RSA PRIVATE KEY-----\nabc\n-----END RSA PRIVATE KEY-----",
        "<saml2:Assertion ID=1>x</saml2:Assertion> <EncryptedAssertion>y",
        "PHNhbWxwOlJlc3BvbnNlIHhtbG5zOnNhbWxwPSJ1cm46b2FzaXM6bmFtZXM6dGM6U0FNTDoyLjA6cHJvdG9jb2wi",
        "Proxy-Authorization: Bearer abc, 'authorization': 'Basic xyz'",
        "Set-Cookie: sessionid=abc; csrftoken=def",
        "{\"token\": {\"issued_at\": 1, \"tenant\": {\"id\": \"t\"}, \"id\": \"S\"}}",
        "{\\\"secret\\\": \\\"S\\\"} {'password': u'S'} ['iscsiadm', 'node.session.auth.password', '-v', u'S']",
        "os_password=S X-Auth-Token: S ?token=S& %3Ftoken%3DS node.session.auth.password -v S",
        "password 'S' --os-password S --a--b-password 'q' <ns:admin_password>S</ns:admin_password>",
        "mysql+pymysql://nova:S@db/nova rabbit://u:S@h1,u:S@h2/ http://h:8776/v2/x@y",
        "MIIKZQYJKoZIhvcNAQcCoIIKVjCCClICAQExCTAHBgUrDgMCGjCCCIAGCSqGSIb3DQEHAaCCCHEEgghtey",
        "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig gAAAAABcdefghijklmnopqrstuvwxyz0123",
        "----------------------------------------password 'x' -----------token-----key1=",
    ] {
        assert!(check(&w, &re, &cheap, m), "{m:?}");
    }
}

#[test]
fn the_secret_pattern_splits_into_its_rules() {
    let full = meta::Regex::new(SECRET).unwrap();
    let (rules, alone) = split_rules(SECRET, &full).unwrap();
    assert!(alone.len() >= 14, "{}", alone.len());
    assert_eq!(rules.pattern_len(), alone.len());
    // every rule's groups come after the previous rule's
    assert!(alone.windows(2).all(|w| w[0].1 < w[1].1));
    // a long keyed secret (a PKI token in an RPC context dump) is found by the keyed rule
    let token = format!("MII{}", "AbCd+/09".repeat(400));
    let m = format!("unpacked context: {{u'auth_token': u'{token}', u'user': u'x'}}");
    let (re, cheap) = (Regex::new(SECRET).unwrap(), Regex::new(CHEAP).unwrap());
    assert!(check(&Windowed::new().unwrap(), &re, &cheap, &m));
    assert!(!Windowed::new().unwrap().redact(&cheap, &re, REP, &m).contains("AbCd"));
    for bad in ["abc", "(?i)a|b", "a|(?i)b"] {
        let r = meta::Regex::new(bad).unwrap();
        assert!(split_rules(bad, &r).is_err(), "{bad}");
    }
}

#[test]
fn recent_groups_are_the_captures_of_the_same_text() {
    let full = meta::Regex::new(SECRET).unwrap();
    let (_, alone) = split_rules(SECRET, &full).unwrap();
    // rules with `\b` or `$` never reuse groups; the keyed ones may
    let pure: Vec<bool> = alone.iter().map(|a| a.2).collect();
    assert!(pure.iter().filter(|&&p| !p).count() >= 2, "{pure:?}");
    assert!(pure.iter().filter(|&&p| p).count() >= 10, "{pure:?}");
    let (re, cheap) = (Regex::new(SECRET).unwrap(), Regex::new(CHEAP).unwrap());
    let w = Windowed::new().unwrap();
    // the same short secrets again and again, in other surroundings and at other offsets
    let mut rng = Rng(0x0123_4567_89ab_cdef);
    let heads = [
        "",
        "x ",
        "{u'auth_token': None, ",
        "'token_id': None, ",
        "é",
        "%3D",
        "--os-",
    ];
    let secrets = [
        "u'auth_token': None",
        "'auth_token': None",
        "'token_id': None",
        "password=S",
        "password: S",
        "'password': u'S'",
        "--os-password S",
        "token S",
        "rabbit://u:S@h/",
    ];
    let mut changed = 0;
    for _ in 0..50_000 {
        let n = 1 + (rng.next() % 4) as usize;
        let m: String = (0..n)
            .map(|_| format!("{}{}, ", rng.pick(&heads), rng.pick(&secrets)))
            .collect();
        changed += check(&w, &re, &cheap, &m) as usize;
    }
    assert!(changed > 40_000, "{changed}");
}
