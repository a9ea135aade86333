//! The file a path reaches, however it is spelled: relative to a directory, through symbolic
//! links anywhere on it (a dangling one included: writing through it creates its target), or
//! through another name of a process's directory (`/proc/self/cwd`, `/proc/<pid>/root/…`).
//!
//! Only the longest prefix that exists is resolved, with `canonicalize`; the rest, which does
//! not exist yet, is appended as written. A handful of system calls; no directory is listed.

use crate::policy::reach::normalise;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// How many links are followed by hand (dangling ones) and `/proc` aliases unfolded before
/// the rest is taken as written; the kernel's own limit is 40.
const MAX_HOPS: usize = 16;

/// What a spelled path reaches.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Reached {
    /// Every file it may reach, each with its links resolved.
    pub paths: Vec<PathBuf>,
    /// It goes through a descriptor (`/proc/*/fd/N`, `/dev/fd/N`, `/dev/std*`) of a process
    /// the hook is not, so which file it is cannot be told.
    pub unknowable: bool,
}

/// What `spelled` reaches for a process whose directory may be any of `cwds` (the first is
/// the one relative paths are joined to). `~` is the home directory, as Claude Code takes it.
/// Both readings of `..` are kept: Node's (folded before the path is opened) and the
/// kernel's (after a link).
pub fn reach(spelled: &str, cwds: &[&Path], home: Option<&Path>) -> Reached {
    let mut out = Reached::default();
    let Some(base) = cwds.first() else {
        return out;
    };
    let expanded = match (spelled.strip_prefix('~'), home) {
        (Some(rest), Some(h)) if rest.is_empty() || rest.starts_with('/') => {
            h.join(rest.trim_start_matches('/'))
        }
        _ => PathBuf::from(spelled),
    };
    let joined = if expanded.is_absolute() {
        expanded
    } else {
        base.join(expanded)
    };
    let mut starts = vec![normalise(Path::new("/"), &joined)];
    if joined.components().any(|c| c == Component::ParentDir) {
        starts.push(joined);
    }
    for start in starts {
        for aliased in unalias(&start, cwds, &mut out.unknowable) {
            let real = resolve(&aliased, 0);
            if !out.paths.contains(&real) {
                out.paths.push(real);
            }
        }
    }
    out
}

/// `p` with `/proc` names of a process's directories replaced by what they name: `root` is
/// `/`; `cwd` is any of `cwds` for `self` (the hook is not the process that opens the path)
/// and also for another pid (it may be Claude Code's, whose directory the hook's
/// `canonicalize` finds too when it may read it).
fn unalias(p: &Path, cwds: &[&Path], unknowable: &mut bool) -> Vec<PathBuf> {
    let mut done = Vec::new();
    let mut todo = vec![(p.to_path_buf(), 0)];
    // Each `cwd` alias fans out into every directory: bound the whole walk, not only its depth.
    let mut budget = 64;
    while let Some((p, hops)) = todo.pop() {
        budget -= 1;
        if budget == 0 {
            *unknowable = true;
            break;
        }
        let names: Vec<OsString> = p
            .components()
            .skip(1)
            .map(|c| c.as_os_str().to_owned())
            .collect();
        let s = |i: usize| names.get(i).and_then(|n| n.to_str()).unwrap_or("");
        let fd_device =
            s(0) == "dev" && (s(1) == "fd" && names.len() > 2 || s(1).starts_with("std"));
        if fd_device {
            *unknowable = true;
            continue;
        }
        let process = s(1) == "self" || s(1) == "thread-self" || is_pid(s(1));
        if s(0) != "proc" || !process || hops >= MAX_HOPS {
            done.push(p);
            continue;
        }
        // `/proc/<pid>/task/<tid>/…` names the same directories.
        let at = if s(2) == "task" && is_pid(s(3)) { 4 } else { 2 };
        let rest: PathBuf = names.iter().skip(at + 1).collect();
        match s(at) {
            "root" => todo.push((Path::new("/").join(rest), hops + 1)),
            "cwd" => {
                if is_pid(s(1)) {
                    done.push(p.clone());
                }
                todo.extend(cwds.iter().map(|c| (c.join(&rest), hops + 1)));
            }
            "fd" | "map_files" if names.len() > at + 1 => *unknowable = true,
            _ => done.push(p),
        }
    }
    done
}

fn is_pid(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// The longest path the kernel opens (`PATH_MAX`); a longer one reaches no file.
const PATH_MAX: usize = 4096;

/// The real path of `p` (absolute): its longest existing prefix canonicalized, the rest
/// appended as written. A dangling link on the way is followed by hand. The prefix is found
/// walking down from the root, so a path costs one `stat` per existing component.
pub fn resolve(p: &Path, hops: usize) -> PathBuf {
    if p.as_os_str().len() > PATH_MAX {
        return normalise(Path::new("/"), p);
    }
    // The usual cases first: the file exists, or its directory does (a new file).
    if let Ok(real) = std::fs::canonicalize(p) {
        return real;
    }
    let plain = |c: &Component<'_>| matches!(c, Component::Normal(_));
    if let (Some(parent), Some(name)) = (p.parent(), p.components().next_back()) {
        let not_a_link = std::fs::symlink_metadata(p).is_err();
        if let (true, true, Ok(real)) = (plain(&name), not_a_link, std::fs::canonicalize(parent)) {
            return real.join(name);
        }
    }
    let comps: Vec<Component<'_>> = p.components().collect();
    let prefix = |n: usize| comps[..n].iter().collect::<PathBuf>();
    let exists = (1..=comps.len())
        .take_while(|&n| std::fs::metadata(prefix(n)).is_ok())
        .last()
        .unwrap_or(0);
    if exists < comps.len() && hops < MAX_HOPS {
        let next = prefix(exists + 1);
        let dangling = std::fs::symlink_metadata(&next).is_ok_and(|m| m.file_type().is_symlink());
        if let (true, Ok(target), Some(parent)) =
            (dangling, std::fs::read_link(&next), next.parent())
        {
            let rest: PathBuf = comps[exists + 1..].iter().collect();
            return resolve(&normalise(parent, &target).join(rest), hops + 1);
        }
    }
    let rest: PathBuf = comps[exists..].iter().collect();
    match std::fs::canonicalize(prefix(exists)) {
        Ok(real) => normalise(&real, &rest),
        Err(_) => normalise(Path::new("/"), p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn tmp(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("attenu-reach-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::canonicalize(d).unwrap()
    }

    #[test]
    fn links_anywhere_on_a_path_are_followed_and_the_rest_appended() {
        let d = tmp("links");
        std::fs::create_dir_all(d.join(".attenu")).unwrap();
        std::fs::create_dir_all(d.join("docs")).unwrap();
        symlink(d.join(".attenu"), d.join("docs/x")).unwrap();
        symlink("../.attenu/new.toml", d.join("docs/dangling")).unwrap();
        let cwds = [d.as_path()];
        let r = |s: &str| reach(s, &cwds, None).paths;
        assert_eq!(r("docs/x/config.toml"), [d.join(".attenu/config.toml")]);
        assert_eq!(r("docs/dangling"), [d.join(".attenu/new.toml")]);
        assert_eq!(r("docs/x/a/b/../c"), [d.join(".attenu/a/c")]);
        // The kernel's `..` after a link is the link target's parent; Node's is lexical.
        let both = r("docs/x/../anchor.key");
        assert!(both.contains(&d.join("docs/anchor.key")), "{both:?}");
        assert!(both.contains(&d.join("anchor.key")), "{both:?}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn proc_names_of_a_directory_are_what_they_name() {
        let d = tmp("proc");
        let cwds = [d.as_path()];
        let r = |s: &str| reach(s, &cwds, None);
        let key = d.join(".attenu/anchor.key");
        for s in [
            "/proc/self/cwd/.attenu/anchor.key",
            "/proc/thread-self/cwd/.attenu/anchor.key",
            "/proc/self/task/1/cwd/.attenu/anchor.key",
            "/proc/self/root/proc/self/cwd/.attenu/anchor.key",
            "/proc/1/cwd/.attenu/anchor.key",
        ] {
            assert!(r(s).paths.contains(&key), "{s}: {:?}", r(s));
        }
        let own = format!("/proc/{}/cwd/x", std::process::id());
        let here = std::fs::canonicalize(std::env::current_dir().unwrap()).unwrap();
        assert!(r(&own).paths.contains(&here.join("x")));
        assert_eq!(r(&format!("/proc/self/root{}", key.display())).paths, [key]);
        for s in [
            "/proc/self/fd/3",
            "/dev/fd/4",
            "/dev/stdin",
            "/proc/77/fd/1",
        ] {
            assert!(r(s).unknowable, "{s}");
        }
        assert!(!r("/proc/self/status").unknowable);
        // From `/` each alias names the next: the walk stops, and what it cannot tell refuses.
        let deep = "/proc/self/cwd".repeat(40);
        let from_root = reach(
            &deep,
            &[Path::new("/"), Path::new("/"), Path::new("/")],
            None,
        );
        assert!(from_root.unknowable);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_path_too_long_to_open_is_taken_as_written() {
        let long = format!("/{}", "a/".repeat(40_000));
        assert_eq!(resolve(Path::new(&long), 0), Path::new(&long));
        let r = reach(&"x/../".repeat(20_000), &[Path::new("/p")], None);
        assert!(
            r.paths.contains(&PathBuf::from("/p")),
            "{:?}",
            r.paths.len()
        );
    }

    #[test]
    fn a_home_relative_path_is_the_home_directorys() {
        let home = Path::new("/h");
        let cwds = [Path::new("/p")];
        assert_eq!(
            reach("~/.claude/settings.json", &cwds, Some(home)).paths,
            [PathBuf::from("/h/.claude/settings.json")]
        );
        assert_eq!(
            reach("~x", &cwds, Some(home)).paths,
            [PathBuf::from("/p/~x")]
        );
    }
}
