//! What the man pages add to `--help`: examples and exit codes, per command. The text is
//! plain; [`sections`] writes it as roff.

/// Pairs of text: (what it does, the command line), or (exit code, what it means).
type Pairs = &'static [(&'static str, &'static str)];

/// Examples and exit codes of one page, by its name.
struct Extra {
    examples: Pairs,
    exit: Pairs,
}

/// The exit codes most commands share ([`crate::protocol::Exit`]).
const PLAIN: Pairs = &[
    ("0", "done"),
    (
        "2",
        "unusable input or usage; the message on stderr says what to do",
    ),
];

/// The examples and exit codes of each page that has more than [`PLAIN`], by page name.
const PAGES: &[(&str, Extra)] = &[
    (
        "attenu-hook",
        Extra {
            examples: &[
                ("Wire a project, check it, see what each subagent may do", "attenu-hook install && attenu-hook doctor && attenu-hook derive --human"),
                ("The denials of the last session", "attenu-hook log --denied"),
                ("Export and verify the last session's bundle", "attenu-hook export && attenu-hook verify .attenu/bundle-<session>.json --pub anchor.pub"),
            ],
            exit: &[
                ("0", "hook mode: the JSON answer on stdout stands (`{}` allows, a deny object denies); a command: done"),
                ("1", "a command's check failed (an invalid bundle, a failed doctor check, a ledger that does not verify)"),
                ("2", "hook mode: the call is blocked; a command: unusable input or usage"),
                ("3, 4", "verify and report only; see attenu-hook-verify(1)"),
            ],
        },
    ),
    (
        "attenu-hook-verify",
        Extra {
            examples: &[
                ("Verify a bundle under the key you trust", "attenu-hook verify .attenu/bundle-<session>.json --pub anchor.pub"),
                ("The same as JSON, for a script", "attenu-hook verify bundle.json --pub anchor.pub --json"),
                ("Check a one-entry proof from prove", "attenu-hook verify call.proof --pub anchor.pub"),
            ],
            exit: &[
                ("0", "valid under the pinned key"),
                ("1", "invalid: tampered, truncated, or signed by another key than --pub"),
                ("2", "unusable input: unreadable, not a bundle, no key"),
                ("3", "valid only under the anchor.pub found beside the bundle: pass --pub to pin the key you trust"),
                ("4", "valid, with a NOTICE: the ledger records a lost sealed state"),
            ],
        },
    ),
    (
        "attenu-hook-report",
        Extra {
            examples: &[("One page for a reviewer from the last bundles and an audit", "attenu-hook report .attenu/bundle-*.json audit.json --pub anchor.pub --out report.html")],
            exit: &[
                ("0", "every bundle valid under the pinned key"),
                ("1", "a bundle is invalid, or a session fails the audit"),
                ("2", "unusable input"),
                ("3", "valid only under the anchor.pub beside a bundle"),
            ],
        },
    ),
    (
        "attenu-hook-log",
        Extra {
            examples: &[
                ("The last session, fitted to the terminal", "attenu-hook log"),
                ("One session by the short id the table shows", "attenu-hook log --session 0b5f1c2e"),
                ("Every session, whole ids", "attenu-hook log --sessions"),
                ("Per agent: calls and denials by reason", "attenu-hook log --summary"),
                ("Denials as JSON lines, for jq", "attenu-hook log --denied --json | jq .reason"),
            ],
            exit: &[("0", "shown"), ("1", "a ledger shown does not verify (it is still shown, with a warning)"), ("2", "no state, no such session, or a session prefix that names several")],
        },
    ),
    (
        "attenu-hook-install",
        Extra {
            examples: &[
                ("Wire the project (commit .claude/settings.json and .claude/hooks/attenu-hook.sh)", "attenu-hook install"),
                ("Wire your own settings only, with your own command", "attenu-hook install --local --command /opt/attenu/attenu-hook"),
            ],
            exit: PLAIN,
        },
    ),
    (
        "attenu-hook-doctor",
        Extra {
            examples: &[("Check the project you are in", "attenu-hook doctor"), ("Check a wrapper wired with --command", "attenu-hook doctor --command ./guard.sh")],
            exit: &[("0", "every required check passed (warnings may remain)"), ("1", "a required check failed; each line says what to do"), ("2", "unusable input")],
        },
    ),
    (
        "attenu-hook-derive",
        Extra {
            examples: &[("A table of what each subagent may do", "attenu-hook derive --human"), ("The same as JSON", "attenu-hook derive path/to/project --json")],
            exit: PLAIN,
        },
    ),
    (
        "attenu-hook-export",
        Extra {
            examples: &[("The last session's bundle", "attenu-hook export"), ("One session, to a file of your choosing", "attenu-hook export --session 0b5f1c2e --out review.json")],
            exit: PLAIN,
        },
    ),
    (
        "attenu-hook-prove",
        Extra {
            examples: &[("A proof of one call, checked on its own", "attenu-hook prove --call toolu_01 --out call.proof && attenu-hook verify call.proof --pub .attenu/anchor.pub")],
            exit: PLAIN,
        },
    ),
    (
        "attenu-hook-audit",
        Extra {
            examples: &[
                ("Judge every session in a bucket", "attenu-hook audit s3://bucket/prefix --pub anchor.pub"),
                ("The key first works too", "attenu-hook audit --pub anchor.pub s3://bucket/prefix --json > audit.json"),
            ],
            exit: &[("0", "every session complete or open"), ("1", "a session is rewritten, forked, truncated or unverifiable"), ("2", "the store cannot be read, or unusable input")],
        },
    ),
    (
        "attenu-hook-ship",
        Extra {
            examples: &[("Send the outbox now, with progress", "attenu-hook ship")],
            exit: &[("0", "the outbox is empty afterwards"), ("1", "something is left; the reason is on stderr"), ("2", "shipping is not configured, or unusable input")],
        },
    ),
    (
        "attenu-hook-keygen",
        Extra {
            examples: &[("A reviewer key", "attenu-hook keygen --out ~/.config/attenu/alice.key")],
            exit: PLAIN,
        },
    ),
];

/// A page with no entry in [`PAGES`]: no examples, the shared exit codes.
static NONE: Extra = Extra {
    examples: &[],
    exit: PLAIN,
};

/// What the man pages add for the page `name` (`attenu-hook`, `attenu-hook-log`, ...).
fn extra(name: &str) -> &'static Extra {
    PAGES
        .iter()
        .find(|(page, _)| *page == name)
        .map_or(&NONE, |(_, e)| e)
}

/// The EXAMPLES and EXIT STATUS sections of the page `name`, as roff.
pub fn sections(name: &str) -> String {
    let e = extra(name);
    let mut out = String::new();
    if !e.examples.is_empty() {
        out.push_str(".SH EXAMPLES\n");
        for (what, line) in e.examples {
            out.push_str(&format!(
                ".TP\n{}\n.nf\n\\fB{}\\fR\n.fi\n",
                roff(what),
                roff(line)
            ));
        }
    }
    out.push_str(".SH \"EXIT STATUS\"\n");
    for (code, what) in e.exit {
        out.push_str(&format!(".TP\n\\fB{}\\fR\n{}\n", roff(code), roff(what)));
    }
    out
}

/// Text as roff: backslashes and hyphens escaped, and no line starting with a control
/// character.
fn roff(text: &str) -> String {
    let t = text.replace('\\', "\\e").replace('-', "\\-");
    match t.starts_with(['.', '\'']) {
        true => format!("\\&{t}"),
        false => t,
    }
}
