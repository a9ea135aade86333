//! What a call's paths reach, as the edge found it on the file system, and the files that
//! decide what the hook records and enforces. The policy compares them here, without I/O.
//!
//! Names are compared as a case-insensitive file system compares them (macOS's default APFS,
//! a Windows drive under WSL), whatever the file system under them: on a case-sensitive one
//! that only refuses more (`.ATTENU/x` is refused although it is another directory), never
//! less. See docs/SELF-PROTECTION.md.

use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

/// A kind of file a subagent may not write (and, for the state, not read).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guarded {
    /// The hook's state directory: ledgers, keys, configuration.
    State,
    /// A settings file that wires the hook (the project's, the user's).
    Settings,
    /// `.claude/hooks/`, where the hook command is wired from.
    HookCommand,
    /// The agent declarations the permissions are derived from (and their link targets).
    Declarations,
    /// The hook's binary as wired (this executable, a link's target, the plugin's).
    HookBinary,
    /// Claude Code's plugin registry and installed plugins, or the plugin the hook runs from.
    Plugins,
    /// Managed settings, which make the wiring non-optional.
    Managed,
    /// A path through `/proc/*/fd` or `/dev/fd`: the hook cannot tell which file it is.
    Unknowable,
    /// Arguments with more file names, or nested deeper, than the hook examines.
    Unbounded,
}

impl Guarded {
    /// What it is, in a refusal.
    pub fn what(self) -> &'static str {
        match self {
            Guarded::State => "the hook's ledger, keys and configuration under .attenu/",
            Guarded::Settings => "the settings that wire the hook",
            Guarded::HookCommand => "the hook command itself",
            Guarded::Declarations => "the agent declarations the permissions are derived from",
            Guarded::HookBinary => "the hook's own binary as wired",
            Guarded::Plugins => "Claude Code's installed plugins, which can wire the hook",
            Guarded::Managed => "the managed settings that make the hook's wiring mandatory",
            Guarded::Unknowable => {
                "a file reached through a descriptor (/proc/*/fd, /dev/fd), which the hook cannot tell from its own files"
            }
            Guarded::Unbounded => {
                "files it cannot tell from its own: its arguments name more files, or nest deeper, than the hook examines (64 names, 32 levels)"
            }
        }
    }

    /// Whether reading it is refused too (reading the wiring is harmless; the state holds keys).
    pub fn secret(self) -> bool {
        matches!(
            self,
            Guarded::State | Guarded::Unknowable | Guarded::Unbounded
        )
    }
}

/// The edge's findings for one call.
#[derive(Debug, Clone, Default)]
pub struct Reach {
    /// For each path-bearing input (`file_path`, `notebook_path`, `path`, `glob` for the
    /// literal directories of a search filter, and `args` for every file name in another
    /// tool's arguments, spelled and resolved), the files it can reach: every resolution the
    /// edge found (with links followed, `/proc` aliases mapped), to be checked all.
    pub reached: Vec<(&'static str, Vec<PathBuf>)>,
    /// Inputs that reach through a descriptor, which cannot be resolved.
    pub unknowable: Vec<&'static str>,
    /// The guarded files and directories, by the paths they really have.
    pub guarded: Vec<(PathBuf, Guarded)>,
    /// The state directory as it really is, for a search that could reach its key.
    pub state_dir: Option<PathBuf>,
    /// Another tool's arguments named more files, or nested deeper, than are examined
    /// ([`super::path_args`]): refused, not judged.
    pub args_overflow: bool,
    /// The call's working directory (absolute), against which its relative paths are read.
    pub cwd: Option<PathBuf>,
    /// The home directory, where a rule's `~/` is anchored.
    pub home: Option<PathBuf>,
}

impl Reach {
    /// The resolved paths of input `key`.
    pub fn of(&self, key: &str) -> &[PathBuf] {
        self.reached
            .iter()
            .find(|(k, _)| *k == key)
            .map_or(&[], |(_, v)| v.as_slice())
    }

    /// What guarded file `p` is or is inside of, if any.
    pub fn guarded_at(&self, p: &Path) -> Option<Guarded> {
        self.guarded
            .iter()
            .find(|(g, _)| within(p, g))
            .map(|(_, what)| *what)
    }
}

/// A file-name component as a case-insensitive file system compares it: lowercased, with the
/// characters whose case folding is an ASCII letter although their lowercase is not (the long
/// s `ſ`, folded to `s`; the Kelvin sign lowercases to `k` already).
pub fn fold(name: &OsStr) -> String {
    name.to_string_lossy()
        .chars()
        .flat_map(char::to_lowercase)
        .map(|c| if c == 'ſ' { 's' } else { c })
        .collect()
}

/// Whether `p` is `prefix` or inside it, comparing names by [`fold`].
pub fn within(p: &Path, prefix: &Path) -> bool {
    let mut p = p.components();
    prefix
        .components()
        .all(|c| p.next().is_some_and(|d| same(c, d)))
}

fn same(a: Component<'_>, b: Component<'_>) -> bool {
    a == b || fold(a.as_os_str()) == fold(b.as_os_str())
}

/// Lexical normalisation: joins relative paths to `base` and folds `.` and `..`, as Node's
/// `path.resolve` (and so Claude Code) does before it opens a path.
pub fn normalise(base: &Path, p: &Path) -> PathBuf {
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_compare_as_a_case_insensitive_file_system_compares_them() {
        let g = Path::new("/p/.attenu");
        for p in [
            "/p/.attenu",
            "/p/.ATTENU/anchor.key",
            "/P/.Attenu/x",
            "/p/.attenu/ſub",
            "/p//.attenu",
        ] {
            assert!(within(Path::new(p), g), "{p}");
        }
        for p in ["/p/.attenux", "/p", "/q/.attenu", "/p/x/.attenu"] {
            assert!(!within(Path::new(p), g), "{p}");
        }
        assert_eq!(fold(OsStr::new("HOO\u{212a}S")), "hooks");
        assert_eq!(fold(OsStr::new("ſettingſ.JSON")), "settings.json");
    }

    #[test]
    fn normalising_folds_dots_and_joins_relative_paths() {
        let b = Path::new("/p/src");
        assert_eq!(
            normalise(b, Path::new("../.attenu/./k")),
            Path::new("/p/.attenu/k")
        );
        assert_eq!(normalise(b, Path::new("/a//b/../c")), Path::new("/a/c"));
    }
}
