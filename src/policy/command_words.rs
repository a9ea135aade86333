//! The words of a command line, for `super::command`: how deep a line nests before it is
//! parsed, a word's literal value, and the spellings a denial is matched against.

use brush_parser::word::{self, WordPiece, WordPieceWithSource};
use brush_parser::ParserOptions;

/// Commands that wrap another (`timeout 5 rm x` runs `rm x`): a denial sees through them.
pub const WRAPPERS: &[&str] = &[
    "command", "builtin", "exec", "nohup", "time", "nice", "timeout", "stdbuf", "env", "sudo",
    "doas", "xargs", "setsid", "ionice", "coproc", "busybox", "watch", "strace", "ltrace",
    "unshare", "nsenter", "chroot", "flock", "taskset", "chrt", "runuser",
];

/// Variables Claude Code 2.1.332 strips from the front of a command before an allow rule is
/// matched: they change no program's meaning in a way a rule must see.
pub const SAFE_ENV: &[&str] = &[
    "GOEXPERIMENT",
    "GOOS",
    "GOARCH",
    "CGO_ENABLED",
    "GO111MODULE",
    "RUST_BACKTRACE",
    "RUST_LOG",
    "NODE_ENV",
    "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE",
    "PYTEST_DISABLE_PLUGIN_AUTOLOAD",
    "PYTEST_DEBUG",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_TIME",
    "CHARSET",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "FORCE_COLOR",
    "TZ",
    "LS_COLORS",
    "LSCOLORS",
    "GREP_COLOR",
    "GREP_COLORS",
    "GCC_COLORS",
    "TIME_STYLE",
    "BLOCK_SIZE",
    "BLOCKSIZE",
    "COLUMNS",
    "LINES",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "CI",
    "DEBIAN_FRONTEND",
    "GIT_TERMINAL_PROMPT",
];

/// Shells: given `-c`, or no script, they run a command line the parse does not see.
pub const SHELLS: &[&str] = &[
    "bash", "sh", "zsh", "dash", "ksh", "mksh", "yash", "fish", "csh", "tcsh", "busybox",
];

/// Wrappers whose first operand is not the command (`timeout 5 …`, `chroot /srv …`).
const OPERAND_WRAPPERS: &[&str] = &["timeout", "chroot", "flock", "taskset", "chrt"];

/// git's options before its subcommand that take a value as the next word.
const GIT_VALUE_OPTIONS: &[&str] = &[
    "-C",
    "-c",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--config-env",
    "--super-prefix",
    "--attr-source",
    "--list-cmds",
];

/// How deeply `line` nests, counted as if nothing were quoted (so never less than bash nests
/// it): brackets, backquotes, and compound keywords against their closing words.
pub fn nesting(line: &str) -> usize {
    let (mut depth, mut max, mut backquotes) = (0usize, 0usize, 0usize);
    for b in line.bytes() {
        match b {
            b'(' | b'{' | b'[' => {
                depth += 1;
                max = max.max(depth);
            }
            b')' | b'}' | b']' => depth = depth.saturating_sub(1),
            b'`' => backquotes += 1,
            _ => {}
        }
    }
    let (mut kw, mut kw_max) = (0usize, 0usize);
    let words = line.split(|c: char| c.is_whitespace() || ";&|()".contains(c));
    for w in words {
        match w {
            "if" | "while" | "until" | "for" | "case" | "select" | "function" => {
                kw += 1;
                kw_max = kw_max.max(kw);
            }
            "fi" | "done" | "esac" => kw = kw.saturating_sub(1),
            _ => {}
        }
    }
    max + kw_max + backquotes / 2
}

/// Text that runs a command when bash expands it.
pub fn runs_code(text: &str) -> bool {
    text.contains("$(")
        || text.contains("$[")
        || text.contains('`')
        || text.contains("<(")
        || text.contains(">(")
}

/// A word's value when it has no expansion (quotes removed), else `None`.
pub fn literal(word: &str) -> Option<String> {
    let pieces = word::parse(word, &ParserOptions::default()).ok()?;
    let mut out = String::new();
    literal_into(&pieces, &mut out).then_some(out)
}

fn literal_into(pieces: &[WordPieceWithSource], out: &mut String) -> bool {
    for p in pieces {
        match &p.piece {
            WordPiece::Text(t) | WordPiece::SingleQuotedText(t) => out.push_str(t),
            // `$'\x72m'` is `rm`: its escapes are not decoded here, so it is no literal.
            WordPiece::AnsiCQuotedText(t) if !t.contains('\\') => out.push_str(t),
            WordPiece::EscapeSequence(s) => out.push_str(s.strip_prefix('\\').unwrap_or(s)),
            WordPiece::TildePrefix(t) if !t.contains(['$', '`', '<', '>']) => {
                out.push('~');
                out.push_str(t);
            }
            WordPiece::DoubleQuotedSequence(inner)
            | WordPiece::GettextDoubleQuotedSequence(inner) => {
                if !literal_into(inner, out) {
                    return false;
                }
            }
            _ => return false,
        }
    }
    true
}

/// What a denial matches one simple command against.
#[derive(Debug, Default)]
pub struct DenyForms {
    /// The spellings: as written, with quotes removed, and from each place a wrapper may hand
    /// the command to (`sudo -u root rm x` is also `root rm x` and `rm x`), each also with the
    /// command's directory dropped (`/bin/rm x` is `rm x`) and git's own options dropped
    /// (`git -C . push` is `git push`).
    pub forms: Vec<String>,
    /// The words (by index) where a wrapped command may start, after the command's own.
    pub wrapped: Vec<usize>,
}

/// The spellings a denial is matched against (see [`DenyForms`]).
pub fn deny_forms(raw: &[&str], literal: &[Option<String>]) -> DenyForms {
    let plain: Vec<String> = literal
        .iter()
        .zip(raw)
        .map(|(l, r)| l.clone().unwrap_or_else(|| r.to_string()))
        .collect();
    let starts = wrapped_starts(&plain);
    let mut forms = vec![raw.join(" ")];
    for &s in std::iter::once(&0).chain(&starts) {
        let words = &plain[s.min(plain.len())..];
        forms.push(words.join(" "));
        if let Some((first, rest)) = words.split_first() {
            let base = first.rsplit('/').next().unwrap_or(first);
            let mut named: Vec<&str> = vec![base];
            named.extend(rest.iter().map(String::as_str));
            forms.push(named.join(" "));
            if base == "git" {
                forms.push(format!("git {}", without_git_options(rest).join(" ")));
            }
        }
    }
    forms.iter_mut().for_each(|f| *f = f.trim().to_string());
    forms.retain(|f| !f.is_empty());
    let mut seen = std::collections::BTreeSet::new();
    forms.retain(|f| seen.insert(f.clone()));
    DenyForms {
        forms,
        wrapped: starts,
    }
}

/// Where a command handed on by the wrappers in front of `words` may start: after each
/// wrapper's options (an option may or may not take the next word as its value, so both are
/// tried), its `NAME=value` settings (env) and its operand (timeout's duration).
fn wrapped_starts(words: &[String]) -> Vec<usize> {
    let mut starts = std::collections::BTreeSet::new();
    let mut todo = vec![0usize];
    let mut scanned = std::collections::BTreeSet::new();
    while let Some(at) = todo.pop() {
        let Some(first) = words.get(at) else { continue };
        let base = first.rsplit('/').next().unwrap_or(first);
        if base == "find" {
            let rest: Vec<&str> = words[at..].iter().map(String::as_str).collect();
            for (from, _) in find_exec(&rest) {
                if starts.insert(at + from) {
                    todo.push(at + from);
                }
            }
            continue;
        }
        if !WRAPPERS.contains(&base) {
            continue;
        }
        let mut scan = vec![at + 1];
        while let Some(k) = scan.pop() {
            if !scanned.insert((at, k)) {
                continue;
            }
            let Some(w) = words.get(k) else { continue };
            let mut command_at = |i: usize| {
                if i < words.len() && starts.insert(i) {
                    todo.push(i);
                }
            };
            if w == "--" {
                command_at(k + 1);
            } else if w.starts_with('-') && w.len() > 1 {
                command_at(k + 1);
                scan.push(k + 1);
                if !w.contains('=') {
                    command_at(k + 2);
                    scan.push(k + 2);
                }
            } else if base == "env" && w.contains('=') {
                command_at(k + 1);
                scan.push(k + 1);
            } else {
                command_at(k);
                if OPERAND_WRAPPERS.contains(&base) {
                    command_at(k + 1);
                }
            }
        }
    }
    starts.into_iter().collect()
}

/// git's arguments without the options before its subcommand (`-C .`, `-c k=v`, `--no-pager`).
fn without_git_options(args: &[String]) -> &[String] {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if !a.starts_with('-') {
            break;
        }
        i += if GIT_VALUE_OPTIONS.contains(&a.as_str()) {
            2
        } else {
            1
        };
    }
    &args[i.min(args.len())..]
}

/// The first command name (the command's own, or one a wrapper runs) that is known only when
/// it runs: not literal (`$x`, `$(…)`, `$'\x72m'`), or a pattern of file names (`r?`, `{a,b}`).
/// A word after a wrapper's option may be that option's value, so only a pattern is held
/// against it there.
pub fn unknown_name(raw: &[&str], literal: &[Option<String>], wrapped: &[usize]) -> Option<usize> {
    let pattern = |i: usize| {
        let w = raw[i];
        let braces = w.find('{').is_some_and(|at| w[at..].contains([',', '.']));
        w != "[" && (w.contains(['*', '?', '[']) || braces)
    };
    let after_wrapper = |i: usize| {
        let before = literal[i - 1].as_deref().unwrap_or_default();
        WRAPPERS.contains(&before.rsplit('/').next().unwrap_or(before))
    };
    std::iter::once(0)
        .chain(wrapped.iter().copied())
        .filter(|&i| i < raw.len())
        .find(|&i| pattern(i) || (literal[i].is_none() && (i == 0 || after_wrapper(i))))
        .or_else(|| xargs_replaced_name(literal))
}

/// `xargs -I R R …` (or `-iR`, `--replace=R`): the command is what xargs reads.
fn xargs_replaced_name(literal: &[Option<String>]) -> Option<usize> {
    let words: Vec<&str> = literal.iter().map(|w| w.as_deref().unwrap_or("")).collect();
    let from = words
        .iter()
        .position(|w| w.rsplit('/').next() == Some("xargs"))?;
    for i in from + 1..words.len() {
        let w = words[i];
        let (replace, command_at) = match w {
            "-I" => (words.get(i + 1).copied().unwrap_or_default(), i + 2),
            "-i" | "--replace" => ("{}", i + 1),
            _ if w.starts_with("--replace=") => (&w["--replace=".len()..], i + 1),
            _ if w.starts_with("-I") || w.starts_with("-i") => (&w[2..], i + 1),
            _ => continue,
        };
        if words.get(command_at) == Some(&replace) {
            return Some(command_at);
        }
    }
    None
}

/// Why a `git` the line runs may run another command it does not show: an alias or a command
/// set with `-c` (`-c alias.p=push`, `-c core.pager='rm -rf x'`), or a configuration taken
/// from the environment (`--config-env`).
pub fn hidden_by_git(literal: &[Option<String>], wrapped: &[usize]) -> Option<&'static str> {
    for start in std::iter::once(0).chain(wrapped.iter().copied()) {
        let name = literal.get(start).cloned().flatten().unwrap_or_default();
        if name.rsplit('/').next() != Some("git") {
            continue;
        }
        let mut args = literal[start + 1..].iter();
        while let Some(Some(a)) = args.next() {
            if !a.starts_with('-') {
                break;
            }
            let value = match a.as_str() {
                "-c" => args.next().cloned().flatten(),
                _ if a.starts_with("--config-env") => {
                    return Some("git --config-env takes a setting the line does not show")
                }
                _ if GIT_VALUE_OPTIONS.contains(&a.as_str()) => {
                    args.next();
                    continue;
                }
                _ => continue,
            };
            let Some(v) = value else {
                return Some("git -c takes a setting the line does not show");
            };
            let (key, val) = v.split_once('=').unwrap_or((&v, ""));
            if key.to_ascii_lowercase().starts_with("alias.")
                || val.starts_with('!')
                || val.contains(char::is_whitespace)
            {
                return Some("git -c sets an alias or a command that git runs in its place");
            }
        }
    }
    None
}

/// The commands `find` runs (`words` from `find` on): the words after each `-exec`,
/// `-execdir`, `-ok` and `-okdir` up to its `;` or `+`, as (first, end) indices.
pub fn find_exec(words: &[&str]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 1;
    while i < words.len() {
        if matches!(words[i], "-exec" | "-execdir" | "-ok" | "-okdir") && i + 1 < words.len() {
            let from = i + 1;
            let to = (from..words.len())
                .find(|&j| matches!(words[j], ";" | "+"))
                .unwrap_or(words.len());
            if to > from {
                out.push((from, to));
            }
            i = to;
        }
        i += 1;
    }
    out
}

/// How a shell is called (`bash -O extglob -c '…'`): as bash, dash and the rest read their
/// options.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ShellCall {
    /// A `-c` among its options: an operand is a command line.
    pub dash_c: bool,
    /// It runs a script file (an operand, and no `-s`), not commands from its input.
    pub script: bool,
    /// Every word after its options and their values (`None`: not literal).
    pub operands: Vec<Option<String>>,
}

/// Reads a shell's words (`literal[0]` is the shell). Options that take a value (`-o`, `-O`,
/// `+o`, `+O`, `--rcfile`, `--init-file`) skip it; `--` ends the options.
pub fn shell_call(literal: &[Option<String>]) -> ShellCall {
    let (mut dash_c, mut stdin) = (false, false);
    let mut i = 1;
    while let Some(Some(w)) = literal.get(i) {
        let option = (w.starts_with('-') || w.starts_with('+')) && w.len() > 1;
        if w == "--" {
            i += 1;
            break;
        }
        if !option {
            break;
        }
        if matches!(
            w.as_str(),
            "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file"
        ) {
            i += 1;
        } else if w.starts_with('-') && !w.starts_with("--") {
            dash_c |= w.contains('c');
            stdin |= w.contains('s');
        }
        i += 1;
    }
    let operands: Vec<Option<String>> = literal.iter().skip(i).cloned().collect();
    ShellCall {
        dash_c,
        script: !operands.is_empty() && !stdin,
        operands,
    }
}
