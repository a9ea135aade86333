//! The opt-in argument summary (`[privacy] record = "summary"`): the command, path or address a
//! call names, with what looks like a secret replaced by `***`, bounded in length. It is stored
//! in the decision entry's `context.summary`, so the chain covers it like every other member.
//! Off by default: then no part of the arguments reaches the disk, only their salted
//! commitment. What is redacted, and why it errs towards too much: docs/FORMATS.md.

use serde_json::Value;

/// The longest summary, in characters (the last one `…` when it was cut).
pub const MAX_CHARS: usize = 200;
/// Only this much of an argument is read: the summary shows far less, and the cost of
/// redaction stays bounded whatever the call carries.
const MAX_INPUT_BYTES: usize = 4096;
const MARK: &str = "***";

/// The argument a reviewer reads a call by, first found: a command, a path, an address, a
/// search. Whatever the tool (built-in, MCP, LSP), the first of these members that is a string.
const SUMMARY_KEYS: &[&str] = &[
    "command",
    "file_path",
    "notebook_path",
    "filePath",
    "path",
    "uri",
    "url",
    "pattern",
    "query",
    "subagent_type",
];

/// The summary of a call's arguments, or `None` when it has none of [`SUMMARY_KEYS`].
pub fn of_call(tool_input: &Value) -> Option<String> {
    let text = SUMMARY_KEYS
        .iter()
        .find_map(|k| tool_input.get(*k).and_then(Value::as_str))?;
    Some(redact(text))
}

/// `text` with secrets replaced by `***` and bounded to [`MAX_CHARS`]. Pure; never panics.
pub fn redact(text: &str) -> String {
    let (text, cut) = match text.len() > MAX_INPUT_BYTES {
        true => (&text[..floor_char_boundary(text, MAX_INPUT_BYTES)], true),
        false => (text, false),
    };
    let b = text.as_bytes();
    let mut mask = vec![false; b.len()];
    assignments(b, &mut mask);
    keyword_values(b, &mut mask);
    url_credentials(b, &mut mask);
    known_tokens(b, &mut mask);
    private_keys(b, &mut mask);
    blobs(b, &mut mask);
    if cut {
        // The word the cut went through may be the start of a secret: it is not shown.
        let from = b.iter().rposition(u8::is_ascii_whitespace).unwrap_or(0);
        mark(&mut mask, from, b.len());
    }
    bound(&apply(text, &mask))
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn mark(mask: &mut [bool], from: usize, to: usize) {
    for m in &mut mask[from.min(to)..to] {
        *m = true;
    }
}

/// Every masked run becomes one [`MARK`]. Runs start and end at ASCII bytes or the ends, so
/// the cuts fall on character boundaries.
fn apply(text: &str, mask: &[bool]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        if mask[i] {
            while i < text.len() && mask[i] {
                i += 1;
            }
            out.push_str(MARK);
        } else {
            let start = i;
            while i < text.len() && !mask[i] {
                i += 1;
            }
            out.push_str(&text[start..i]);
        }
    }
    out
}

fn bound(s: &str) -> String {
    match s.char_indices().nth(MAX_CHARS - 1) {
        Some((i, _)) if s.chars().count() > MAX_CHARS => format!("{}…", &s[..i]),
        _ => s.to_string(),
    }
}

/// Names that say their value is a secret (matched in lower case, anywhere in the name).
const SECRET_WORDS: &[&str] = &[
    "token", "secret", "passw", "pwd", "key", "auth", "cred", "sig", "session", "cookie", "private",
];

fn is_secret_name(name: &[u8]) -> bool {
    let lower = name.to_ascii_lowercase();
    SECRET_WORDS
        .iter()
        .any(|w| lower.windows(w.len()).any(|x| x == w.as_bytes()))
}

fn is_value_end(c: u8) -> bool {
    c.is_ascii_whitespace() || b";&|<>()`".contains(&c)
}

/// The end of the value starting at `i`: through the closing quote when it is quoted, else
/// up to a space or a shell operator.
fn value_end(b: &[u8], i: usize) -> usize {
    match b.get(i) {
        Some(&q @ (b'"' | b'\'')) => b[i + 1..]
            .iter()
            .position(|&c| c == q)
            .map_or(b.len(), |p| i + 2 + p),
        _ => b[i..]
            .iter()
            .position(|&c| is_value_end(c) || c == b'"' || c == b'\'')
            .map_or(b.len(), |p| i + p),
    }
}

fn is_name_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'-' || c == b'.'
}

/// `KEY=value` (an environment-style name: always), `name=value` and `name: value` whose name
/// says secret (`--password=…`, `?access_token=…`, `"api_key": "…"`, `X-Api-Key: …`).
fn assignments(b: &[u8], mask: &mut [bool]) {
    for (e, &c) in b.iter().enumerate() {
        if c != b'=' && c != b':' {
            continue;
        }
        // A name may be quoted just before the separator: `"token": "…"`.
        let close = usize::from(e > 0 && matches!(b[e - 1], b'"' | b'\''));
        let name_end = e - close;
        let start = b[..name_end]
            .iter()
            .rposition(|&c| !is_name_byte(c))
            .map_or(0, |p| p + 1);
        let name = &b[start..name_end];
        let bare = name
            .iter()
            .position(|&c| c != b'-')
            .map_or(&[][..], |p| &name[p..]);
        if bare.is_empty() || !(bare[0].is_ascii_alphabetic() || bare[0] == b'_') {
            continue;
        }
        let env_style = c == b'='
            && bare.len() == name.len()
            && bare.iter().any(u8::is_ascii_uppercase)
            && bare
                .iter()
                .all(|&c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_');
        if !(env_style || is_secret_name(bare)) {
            continue;
        }
        let mut v = e + 1;
        if c == b':' {
            if b.get(v) == Some(&b'/') {
                continue; // `https://`: an address, not a value.
            }
            while b.get(v).is_some_and(|c| *c == b' ' || *c == b'\t') {
                v += 1;
            }
        }
        mark(mask, v, value_end(b, v));
    }
}

/// Whitespace-separated words, as byte ranges, quotes trimmed off their ends.
fn words(b: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        let start = i;
        while i < b.len() && !b[i].is_ascii_whitespace() {
            i += 1;
        }
        if start < i {
            out.push((start, i));
        }
    }
    out
}

/// The word after `Bearer`/`Basic`, after a flag whose name says secret (`--password x`,
/// `--token x`), and after `-u`/`--user` when it is `user:password`.
fn keyword_values(b: &[u8], mask: &mut [bool]) {
    let ws = words(b);
    for pair in ws.windows(2) {
        let (s, e) = pair[0];
        let w: Vec<u8> = b[s..e]
            .iter()
            .copied()
            .filter(|c| !matches!(c, b'"' | b'\''))
            .collect();
        let lower = w.to_ascii_lowercase();
        let (ns, ne) = pair[1];
        let next = &b[ns..ne];
        let flag = w.starts_with(b"-") && !w.contains(&b'=');
        let secret_next = lower == b"bearer"
            || lower == b"basic"
            || (flag && is_secret_name(&w) && !next.starts_with(b"-"))
            || ((lower == b"-u" || lower == b"--user") && next.contains(&b':'));
        if secret_next {
            let end = next
                .iter()
                .position(|&c| matches!(c, b'"' | b'\''))
                .filter(|&p| p > 0)
                .map_or(ne, |p| ns + p);
            mark(mask, ns, end);
        }
    }
}

/// `scheme://user:password@host`: the user information.
fn url_credentials(b: &[u8], mask: &mut [bool]) {
    let mut i = 0;
    while let Some(p) = find(&b[i..], b"://") {
        let from = i + p + 3;
        let end = b[from..]
            .iter()
            .position(|&c| c.is_ascii_whitespace() || b"/?#\"'".contains(&c))
            .map_or(b.len(), |q| from + q);
        if let Some(at) = b[from..end].iter().rposition(|&c| c == b'@') {
            mark(mask, from, from + at);
        }
        i = from;
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Tokens of known issuers by their prefixes (GitHub, GitLab, Slack, Stripe, OpenAI-style,
/// Google, npm, Hugging Face, AWS access key ids) and JSON Web Tokens.
const TOKEN_PREFIXES: &[&str] = &[
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "xoxp-",
    "xoxa-",
    "xoxr-",
    "xoxs-",
    "sk-",
    "sk_live_",
    "sk_test_",
    "rk_live_",
    "AIza",
    "npm_",
    "hf_",
    "AKIA",
    "ASIA",
];

fn is_token_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
}

/// Maximal runs of bytes of one class, as ranges.
fn runs(b: &[u8], class: impl Fn(u8) -> bool) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if class(b[i]) {
            let s = i;
            while i < b.len() && class(b[i]) {
                i += 1;
            }
            out.push((s, i));
        } else {
            i += 1;
        }
    }
    out
}

fn known_tokens(b: &[u8], mask: &mut [bool]) {
    for (s, e) in runs(b, |c| is_token_byte(c) || c == b'.') {
        let run = &b[s..e];
        let token = TOKEN_PREFIXES
            .iter()
            .any(|p| run.starts_with(p.as_bytes()) && run.len() >= p.len() + 8);
        let jwt = run.starts_with(b"eyJ") && run.len() >= 20;
        if token || jwt {
            mark(mask, s, e);
        }
    }
}

/// A PEM private key, through its END line (or to the end).
fn private_keys(b: &[u8], mask: &mut [bool]) {
    let mut i = 0;
    while let Some(p) = find(&b[i..], b"-----BEGIN") {
        let s = i + p;
        let line_end = find(&b[s..], b"\n").map_or(b.len(), |q| s + q);
        if find(&b[s..line_end], b"PRIVATE KEY").is_none() {
            i = s + 10;
            continue;
        }
        let e = find(&b[s + 10..], b"-----END")
            .and_then(|q| find(&b[s + 10 + q + 8..], b"-----").map(|r| s + 10 + q + 8 + r + 5))
            .unwrap_or(b.len());
        mark(mask, s, e);
        i = e;
    }
}

/// Long hex (32 digits or more: a hex secret looks like a commit id, and is redacted too) and
/// long base64-looking runs that mix letters and digits. A run with `/` must also mix cases,
/// be 40 long and not start like a path, so paths stay readable.
fn blobs(b: &[u8], mask: &mut [bool]) {
    let class = |c: u8| c.is_ascii_alphanumeric() || b"+/=_-".contains(&c);
    for (s, e) in runs(b, class) {
        let run = &b[s..e];
        let digit = run.iter().any(u8::is_ascii_digit);
        let upper = run.iter().any(u8::is_ascii_uppercase);
        let lower = run.iter().any(u8::is_ascii_lowercase);
        let blob = if run.contains(&b'/') {
            run.len() >= 40 && digit && upper && lower && run[0] != b'/'
        } else {
            run.len() >= 32
                && (run.iter().all(u8::is_ascii_hexdigit) || (digit && (upper || lower)))
        };
        if blob {
            mark(mask, s, e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (input, what the summary must be). Add a row for each new shape of secret.
    const CASES: &[(&str, &str)] = &[
        ("git tag v1.2.0", "git tag v1.2.0"),
        ("ls -la src/", "ls -la src/"),
        ("/p/src/main.rs", "/p/src/main.rs"),
        (
            "cargo test --features test-faults",
            "cargo test --features test-faults",
        ),
        // Environment-style assignments, quoted or not.
        ("API_KEY=abc123 npm publish", "API_KEY=*** npm publish"),
        (
            "export GH_TOKEN=\"a b c\"; gh pr list",
            "export GH_TOKEN=***; gh pr list",
        ),
        ("PATH=/opt/bin:$PATH make", "PATH=*** make"),
        // Names that say secret.
        ("mysql --password=hunter2 db", "mysql --password=*** db"),
        (
            "mysql -u root --password hunter2",
            "mysql -u root --password ***",
        ),
        (
            "curl 'https://x.io/a?access_token=s3cr3t&page=2'",
            "curl 'https://x.io/a?access_token=***&page=2'",
        ),
        ("echo '{\"api_key\": \"zzz\"}'", "echo '{\"api_key\": ***}'"),
        // Headers.
        (
            "curl -H 'Authorization: Bearer abc.def' https://api",
            "curl -H 'Authorization: *** ***' https://api",
        ),
        (
            "curl -H \"X-Api-Key: k1\" x",
            "curl -H \"X-Api-Key: ***\" x",
        ),
        ("curl -u alice:pw https://h", "curl -u *** https://h"),
        // URLs' credentials.
        (
            "git clone https://bob:pat@github.com/o/r.git",
            "git clone https://***@github.com/o/r.git",
        ),
        (
            "psql postgres://u:p@db:5432/app",
            "psql postgres://***@db:5432/app",
        ),
        // Tokens by their issuers' prefixes, AWS key ids, JWTs.
        (
            "gh auth login --with-token ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "gh auth login --with-token ***",
        ),
        (
            "aws s3 ls --access AKIAIOSFODNN7EXAMPLE",
            "aws s3 ls --access ***",
        ),
        ("echo eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig", "echo ***"),
        ("x glpat-abcdefghij1234 y", "x *** y"),
        // Long hex and base64 blobs.
        ("echo 0123456789abcdef0123456789abcdef", "echo ***"),
        ("echo wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "echo ***"),
        (
            "base64 -d <<< QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0MTIz",
            "base64 -d <<< ***",
        ),
        // Paths stay readable.
        (
            "/home/u/Projects/My-App2/src/components/Button/index.tsx",
            "/home/u/Projects/My-App2/src/components/Button/index.tsx",
        ),
        // A private key.
        (
            "printf '-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----' > k",
            "printf '***' > k",
        ),
        // Not secrets.
        ("[ \"$a\" == b ]", "[ \"$a\" == b ]"),
        ("git log --format=%H", "git log --format=%H"),
    ];

    #[test]
    fn the_redaction_table() {
        for (input, want) in CASES {
            assert_eq!(redact(input), *want, "{input}");
        }
    }

    #[test]
    fn summaries_are_bounded_and_never_show_a_cut_secret() {
        let long = format!("echo {}", "word ".repeat(100));
        let s = redact(&long);
        assert_eq!(s.chars().count(), MAX_CHARS);
        assert!(s.ends_with('…'));
        // A secret past the part that is read is not shown in part.
        let tail = format!(
            "{}TOKEN_VALUE_ghp_{}",
            "x".repeat(MAX_INPUT_BYTES - 10),
            "a".repeat(40)
        );
        assert!(!redact(&tail).contains("TOKEN"));
        // Multi-byte text is cut on a character boundary.
        let s = redact(&"é".repeat(3000));
        assert!(s.chars().count() <= MAX_CHARS);
        for hostile in [
            "=",
            ":",
            "://@",
            "-----BEGIN",
            "'",
            "\"",
            "a=\"",
            "-----BEGIN PRIVATE KEY",
        ] {
            let _ = redact(hostile);
        }
    }

    #[test]
    fn the_summary_is_the_argument_a_reviewer_reads_the_call_by() {
        use serde_json::json;
        for (input, want) in [
            (
                json!({"command": "TOKEN=x make", "description": "d"}),
                Some("TOKEN=*** make"),
            ),
            (
                json!({"file_path": "/p/a.rs", "content": "SECRET"}),
                Some("/p/a.rs"),
            ),
            (
                json!({"url": "https://u:p@h/x", "prompt": "p"}),
                Some("https://***@h/x"),
            ),
            (json!({"uri": "file:///p/x"}), Some("file:///p/x")),
            (json!({"content": "no summary key"}), None),
            (json!({"command": 3}), None),
        ] {
            assert_eq!(of_call(&input).as_deref(), want, "{input}");
        }
    }
}
