//! The shell tripwire: a subagent's `Bash`, `PowerShell` or `Monitor` command that names the
//! hook's state, its wiring or a host-only command. A tripwire, not a wall: a command can
//! reach those files by spellings no reading of its text can see (variables, `eval`, other
//! interpreters, files it writes and runs). The forms caught are listed in THREAT-MODEL.md
//! and tested in `tests/self_protection.rs`.

use super::glob::{expand_braces, glob_match};
use super::reach::Guarded;

/// Names under `.claude/` that wire the hook.
const WIRING: &[&[u8]] = &[
    b"settings.json",
    b"settings.local.json",
    b"hooks",
    b"agents",
    b"plugins",
];

/// The commands a subagent may never run: each records what a host says.
const HOST_ONLY: &[&str] = &["authorize", "keygen", "receipt", "reconcile", "revoke"];

/// What a shell command touches, if it names the state, the wiring or a host-only command.
pub(super) fn command_hit(cmd: &str) -> Option<&'static str> {
    [Shell::Posix, Shell::PowerShell]
        .into_iter()
        .find_map(|shell| hit_in(&flatten(cmd, shell)))
}

/// How a command's names are spelled: a POSIX shell escapes with `\`; PowerShell escapes
/// with `` ` `` and separates paths with `\`. Both readings are checked, whatever the tool.
#[derive(Clone, Copy)]
enum Shell {
    Posix,
    PowerShell,
}

fn hit_in(flat: &str) -> Option<&'static str> {
    let words = words(flat);
    if flat.contains(".attenu") || words.iter().any(|w| names_state(w)) {
        Some(Guarded::State.what())
    } else if [".claude/settings", ".claude/hooks", ".claude/agents"]
        .iter()
        .any(|w| flat.contains(w))
        || words.iter().any(|w| names_wiring(w))
        || after_cd_into_claude(&words)
        || flat.contains("/etc/claude-code")
        || flat.contains("installed_plugins")
    {
        Some("the settings and command that wire the hook")
    } else if flat.contains("attenu-hook") && HOST_ONLY.iter().any(|c| flat.contains(c)) {
        Some("host-only attenu-hook commands (authorize, keygen, receipt, reconcile, revoke)")
    } else {
        None
    }
}

/// The command as the shell would spell its words: lowercased (a case-insensitive file
/// system reaches the same files), quotes and escapes taken out (`.att""enu`,
/// `attenu-"hook"`, `\.attenu`, PowerShell's `` .att`enu ``), PowerShell's `\` read as `/`,
/// and `//` and `/./` folded to `/`.
fn flatten(cmd: &str, shell: Shell) -> String {
    let mut s: String = cmd
        .chars()
        .filter_map(|c| match (c, shell) {
            ('\'' | '"', _) | ('\\', Shell::Posix) | ('`', Shell::PowerShell) => None,
            ('\\', Shell::PowerShell) => Some('/'),
            _ => Some(c),
        })
        .flat_map(char::to_lowercase)
        .collect();
    loop {
        let folded = s.replace("/./", "/").replace("//", "/");
        if folded == s {
            return s;
        }
        s = folded;
    }
}

/// The words of a flattened command, split at white space and shell operators.
fn words(flat: &str) -> Vec<&str> {
    flat.split(|c: char| c.is_whitespace() || ";|&()<>`=$".contains(c))
        .filter(|w| !w.is_empty())
        .collect()
}

/// Every spelling of a word's `{a,b}` alternatives (the word itself if they cannot be read).
fn spellings(word: &str) -> Vec<String> {
    expand_braces(word).unwrap_or_else(|| vec![word.to_string()])
}

fn is_glob(c: &str) -> bool {
    c.contains(['*', '?', '['])
}

/// A path component of a word that, as a shell glob, matches `.attenu` (`.atten?`, `.a*`,
/// `.[a]ttenu`, `.*`): `*` alone does not, as the shell's `*` skips dot files.
fn names_state(word: &str) -> bool {
    spellings(word).iter().any(|w| {
        w.split('/').any(|c| {
            c == ".attenu" || is_glob(c) && c != "*" && glob_match(c.as_bytes(), b".attenu")
        })
    })
}

/// A word with a component matching `.claude` followed by one matching a wiring name
/// (`.claude/settings.json`, `.c*/hooks`, `.claude/*`).
fn names_wiring(word: &str) -> bool {
    spellings(word).iter().any(|w| {
        let comps: Vec<&str> = w.split('/').collect();
        comps.windows(2).any(|pair| {
            matches_claude(pair[0]) && WIRING.iter().any(|n| glob_match(pair[1].as_bytes(), n))
        })
    })
}

fn matches_claude(c: &str) -> bool {
    c == ".claude" || (is_glob(c) && c != "*" && glob_match(c.as_bytes(), b".claude"))
}

/// `cd .claude` (or `pushd`) and then a word naming a wiring file relative to it.
fn after_cd_into_claude(words: &[&str]) -> bool {
    let Some(at) = words.windows(2).position(|pair| {
        matches!(pair[0], "cd" | "pushd")
            && pair[1]
                .trim_end_matches('/')
                .rsplit('/')
                .next()
                .is_some_and(matches_claude)
    }) else {
        return false;
    };
    words[at + 2..].iter().any(|w| {
        spellings(w).iter().any(|w| {
            let first = w.trim_start_matches("./").split('/').next().unwrap_or("");
            WIRING.iter().any(|n| glob_match(first.as_bytes(), n))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::command_hit;

    #[test]
    fn the_forms_the_tripwire_catches() {
        for cmd in [
            "cat .attenu/anchor.key",
            "cat .ATTENU/anchor.key",
            "cat .att''enu/anchor.key",
            "cat .att\"enu\"/anchor.key",
            "cat \\.attenu/anchor.key",
            "cat .atten?/anchor.key",
            "cat .a*/anchor.key",
            "cat ./.[a]ttenu/*.key",
            "cat .{x,attenu}/k",
            "cat .*/anchor.key",
            "cat /p//.attenu/k",
            "echo {} > .claude//settings.json",
            "echo {} > .claude/./settings.local.json",
            "echo {} > .CLAUDE/Settings.json",
            "cp x .c*/hooks/attenu-hook",
            "rm .claude/*",
            "sed -i s/a/b/ .claude/agents/ops.md",
            "cp x .claude/settings.json.bak",
            "cat x.claude/hooks/y",
            "cd .claude && echo {} > settings.json",
            "cd ./.claude/; sed -i s/x/y/ agents/ops.md",
            "pushd ~/.claude && rm -rf plugins",
            "cat ~/.claude/plugins/installed_plugins.json",
            "echo x > /etc/claude-code/managed-settings.json",
            "attenu-\"hook\" auth''orize --tool Bash",
            "ATTENU-HOOK KEYGEN",
            "Get-Content .attenu\\anchor.key",
            "Set-Content .claude\\settings.json '{}'",
            "Get-Content .att`enu\\anchor.key",
            "Remove-Item .CLAUDE\\Agents\\ops.md",
        ] {
            assert!(command_hit(cmd).is_some(), "{cmd}");
        }
        for cmd in [
            "cargo test",
            "ls -a",
            "rm -rf *",
            "cat .claude/README.md",
            "cd src && cat settings.json",
            "git log --oneline",
            "attenu-hook log --denied",
        ] {
            assert_eq!(command_hit(cmd), None, "{cmd}");
        }
    }
}
