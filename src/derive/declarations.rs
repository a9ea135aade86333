//! Gathering the declarations: the agent files under `.claude/agents/**` and the
//! `permissions` block of `.claude/settings.json` and `.claude/settings.local.json`.
//!
//! Containment: a bad agent file affects only that agent (it holds nothing and is reported);
//! only an unreadable settings file, which is project-wide, fails the derivation as a whole.

use super::{compat, frontmatter, DeriveError};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Upper bounds on what derivation reads, so a hostile tree cannot stall the hook.
const MAX_AGENT_FILES: usize = 2000;
const MAX_AGENT_FILE_BYTES: u64 = 1 << 20;
const MAX_DIR_DEPTH: usize = 8;

/// Declarations gathered from the files, before resolution.
#[derive(Debug, Default)]
pub struct Declarations {
    /// name → (source, Ok(agent) or Err(why it holds nothing))
    pub agents: BTreeMap<String, (String, Parsed)>,
    pub allow: Vec<String>,
    pub deny: Vec<String>,
    /// The settings file (`settings.json`, `settings.local.json`) of each `allow` and `deny`
    /// entry, by index: the deny hints and `--derive` name it.
    pub allow_from: Vec<String>,
    pub deny_from: Vec<String>,
    /// `permissions.ask`, with each entry's settings file: the hook cannot ask, so each binds
    /// subagents as a denial that names it (`super::rules::SettingsRule`).
    pub ask: Vec<String>,
    pub ask_from: Vec<String>,
    /// `[derive] session_pool` from the configuration: when set, the pool inheriting agents
    /// hold instead of the one derived from the files.
    pub session_pool: Option<Vec<String>>,
    pub problems: Vec<String>,
    pub broken_files: Vec<super::roster::BrokenFile>,
}

/// Reads agent files and settings; an unreadable settings file is the only project-wide error.
pub fn read_declarations(root: &Path) -> Result<Declarations, DeriveError> {
    read_declarations_from(root, list_agent_files(root)?)
}

/// Every `.md` file under `.claude/agents`, in order.
pub(super) fn list_agent_files(root: &Path) -> Result<Vec<PathBuf>, DeriveError> {
    list_agent_files_stat(root).map(paths)
}

/// The listed files' paths.
pub(super) fn paths(listed: Vec<StatListed>) -> Vec<PathBuf> {
    listed.into_iter().map(|(path, _)| path).collect()
}

/// [`list_agent_files`], each file with its metadata as the listing found it (`Err` when it
/// could not be inspected). A file the directory lists as regular is inspected relative to
/// the directory being listed (`DirEntry::metadata`), so its path is not walked again from
/// the root.
pub(super) fn list_agent_files_stat(root: &Path) -> Result<Vec<StatListed>, DeriveError> {
    let mut files = Vec::new();
    collect_md(&root.join(".claude").join("agents"), 0, &mut files, None)?;
    Ok(files)
}

/// A directory the listing read, and its metadata taken (following links) just before.
pub(super) type ListedDir = (PathBuf, std::io::Result<std::fs::Metadata>);

/// [`list_agent_files_stat`], and every directory it listed, each inspected before it was
/// listed: while each still has that stamp (settled), its entries are the ones listed.
pub(super) fn list_agent_files_dirs(
    root: &Path,
) -> Result<(Vec<StatListed>, Vec<ListedDir>), DeriveError> {
    let (mut files, mut dirs) = (Vec::new(), Vec::new());
    collect_md(
        &root.join(".claude").join("agents"),
        0,
        &mut files,
        Some(&mut dirs),
    )?;
    Ok((files, dirs))
}

/// A file the directory lists as regular, inspected relative to the directory; one replaced by
/// something else since it was listed is inspected by path, following links as Claude Code does.
fn inspect(entry: &std::fs::DirEntry) -> std::io::Result<std::fs::Metadata> {
    let m = entry.metadata().ok().filter(std::fs::Metadata::is_file);
    m.map_or_else(|| std::fs::metadata(entry.path()), Ok)
}

/// A listed agent file and what inspecting it found.
pub(super) type StatListed = (PathBuf, std::io::Result<std::fs::Metadata>);

/// `path` from `root`. The listing's paths are `root` joined with more, so a byte prefix
/// finds it (`Path::strip_prefix` compares component by component: more than the listing
/// cost, for 200 files); anything else goes through `strip_prefix`.
pub(super) fn relative<'a>(root: &Path, path: &'a Path) -> &'a Path {
    use std::os::unix::ffi::OsStrExt;
    let r = root.as_os_str().as_bytes();
    let rest = path.as_os_str().as_bytes().strip_prefix(r);
    if let Some(rest) = rest.filter(|rest| r.ends_with(b"/") || rest.starts_with(b"/")) {
        let start = rest.iter().take_while(|&&b| b == b'/').count();
        if !rest[start..].is_empty() && !rest[start..].starts_with(b"./") {
            return Path::new(std::ffi::OsStr::from_bytes(&rest[start..]));
        }
    }
    path.strip_prefix(root).unwrap_or(path)
}

/// [`read_declarations`] from the agent files [`list_agent_files`] found.
pub(super) fn read_declarations_from(
    root: &Path,
    files: Vec<PathBuf>,
) -> Result<Declarations, DeriveError> {
    let listed = files.into_iter().map(|path| Listed {
        path,
        meta: None,
        known: None,
    });
    Ok(read_declarations_listed(root, listed, false)?.0)
}

/// What an agent file's text gives: its agent, or why it declares none (or holds nothing).
/// The roster cache keeps one per file, so an unchanged file is not parsed again.
pub(super) type Parsed = Result<frontmatter::AgentFile, frontmatter::FrontmatterError>;

/// One listed agent file, with what the caller already knows of it.
pub(super) struct Listed {
    pub path: PathBuf,
    /// Its metadata, when the caller has just read it (one `statx` fewer per file).
    pub meta: Option<std::fs::Metadata>,
    /// Its parse, when the caller has proved the file unchanged since it was parsed.
    pub known: Option<Parsed>,
}

/// How one listed file was read.
#[derive(Debug, Default)]
pub(super) struct Outcome {
    /// Its parse, when asked to keep it (`None` for a file read twice or unreadable).
    pub parsed: Option<Parsed>,
    /// The file was opened now (not known already), so what it held may have moved since
    /// it was stamped.
    pub read_now: bool,
}

/// [`read_declarations_from`] for files of which some are already known; with `keep`, each
/// file's [`Outcome`] holds its parse, for the caller to keep. The declarations are exactly
/// those [`read_declarations_from`] gives when every known parse is the file's own.
pub(super) fn read_declarations_listed(
    root: &Path,
    files: impl IntoIterator<Item = Listed>,
    keep: bool,
) -> Result<(Declarations, Vec<Outcome>), DeriveError> {
    let mut decl = Declarations::default();
    let mut loaded = compat::LoadedOnce::default();
    let outcomes = files
        .into_iter()
        .map(|listed| read_agent_file(root, listed, &mut loaded, &mut decl, keep))
        .collect();
    let claude = root.join(".claude");
    for file in ["settings.json", "settings.local.json"] {
        read_permissions(&claude.join(file), file, &mut decl)?;
    }
    Ok((decl, outcomes))
}

/// Adds the agent `listed` declares to `decl`, or the problem that keeps it from declaring one.
fn read_agent_file(
    root: &Path,
    listed: Listed,
    loaded: &mut compat::LoadedOnce,
    decl: &mut Declarations,
    keep: bool,
) -> Outcome {
    let path = &listed.path;
    let rel = relative(root, path).display().to_string();
    let meta = listed.meta.map_or_else(|| std::fs::metadata(path), Ok);
    if let Ok(m) = &meta {
        if !loaded.first(m) {
            return Outcome::default();
        }
    }
    let (parsed, read_now) = match listed.known {
        Some(parsed) => (parsed, false),
        None => match read_text(path, meta) {
            Ok(text) => (frontmatter::parse_agent(&text), true),
            Err(e) => {
                decl.problems.push(format!(
                    "{rel}: cannot be read ({e}); no agent is derived from it"
                ));
                decl.broken_files.push(super::roster::BrokenFile {
                    file: rel,
                    error: format!("cannot be read: {e}"),
                });
                return Outcome {
                    parsed: None,
                    read_now: true,
                };
            }
        },
    };
    let kept = keep.then(|| parsed.clone());
    declare(rel, parsed, decl);
    Outcome {
        parsed: kept,
        read_now,
    }
}

/// The text of the agent file at `path` (of metadata `meta`), within the size bound.
fn read_text(path: &Path, meta: std::io::Result<std::fs::Metadata>) -> Result<String, Unreadable> {
    let io = Unreadable::Io;
    let m = meta.map_err(io)?;
    if m.len() > MAX_AGENT_FILE_BYTES {
        return Err(Unreadable::TooLarge);
    }
    let bytes = std::fs::read(path).map_err(io)?;
    String::from_utf8(bytes).map_err(|_| Unreadable::NotUtf8)
}

/// Why an agent file's text cannot be read ([`read_text`]).
#[derive(Debug, thiserror::Error)]
enum Unreadable {
    /// The system's word.
    #[error("{0}")]
    Io(#[source] std::io::Error),
    #[error("larger than {MAX_AGENT_FILE_BYTES} bytes")]
    TooLarge,
    #[error("not UTF-8")]
    NotUtf8,
}

/// Adds what the file at `rel` declares (`parsed`) to `decl`.
fn declare(rel: String, parsed: Parsed, decl: &mut Declarations) {
    let (name, result) = match parsed {
        Ok(a) => (a.name.clone(), Ok(a)),
        Err(frontmatter::FrontmatterError {
            name: Some(n),
            message,
        }) => {
            decl.problems.push(format!(
                "{rel}: {message}; agent '{n}' holds nothing until it is fixed"
            ));
            let e = frontmatter::FrontmatterError::named(&n, &message);
            (n, Err(e))
        }
        Err(frontmatter::FrontmatterError {
            name: None,
            message,
        }) => {
            decl.problems
                .push(format!("{rel}: {message}; no agent is derived from it"));
            decl.broken_files.push(super::roster::BrokenFile {
                file: rel,
                error: message,
            });
            return;
        }
    };
    if let Some((first, _)) = decl.agents.get(&name) {
        decl.problems.push(format!(
            "agent '{name}' is declared twice ({first} and {rel}); it holds nothing until one is renamed"
        ));
        let first = first.clone();
        let twice = frontmatter::FrontmatterError::named(&name, "declared twice");
        decl.agents.insert(name, (first, Err(twice)));
        return;
    }
    decl.agents.insert(name, (rel, result));
}

fn collect_md(
    dir: &Path,
    depth: usize,
    out: &mut Vec<StatListed>,
    mut dirs: Option<&mut Vec<ListedDir>>,
) -> Result<(), DeriveError> {
    if let Some(dirs) = dirs.as_deref_mut() {
        dirs.push((dir.to_path_buf(), std::fs::metadata(dir)));
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(DeriveError::AgentsUnlistable {
                dir: dir.to_path_buf(),
                error: e,
            })
        }
    };
    let mut entries = entries
        .map(|entry| {
            let entry = entry.map_err(|error| DeriveError::AgentsUnlistable {
                dir: dir.to_path_buf(),
                error,
            })?;
            Ok((entry.path(), entry))
        })
        .collect::<Result<Vec<_>, _>>()?;
    // Each directory in name order, depth first: the order of the paths sorted (by their
    // components). The paths of one directory differ only after its own, so their bytes
    // order them as their names do, without a copy of each name or a walk of components.
    entries.sort_unstable_by(|(a, _), (b, _)| a.as_os_str().cmp(b.as_os_str()));
    out.reserve(entries.len().min(MAX_AGENT_FILES.saturating_sub(out.len())));
    for (path, entry) in entries {
        // The directory listing's own type, unless it is a link (Claude Code follows those).
        let listed_type = entry.file_type().ok().filter(|t| !t.is_symlink());
        let is_md = path.extension().is_some_and(|e| e == "md");
        let (ft, inspected) = match listed_type {
            Some(t) => (Some(t), None),
            // A link, or a type the listing does not give: followed, by path. What it leads
            // to can change with no directory listed here changing: no listing of this tree
            // is kept (`cache::listing`).
            None => {
                if let Some(dirs) = dirs.as_deref_mut() {
                    dirs.push((path.clone(), Err(std::io::Error::other("a link"))));
                }
                let m = std::fs::metadata(&path);
                (m.as_ref().ok().map(std::fs::Metadata::file_type), Some(m))
            }
        };
        match ft {
            Some(ft) if ft.is_dir() && depth < MAX_DIR_DEPTH => {
                collect_md(&path, depth + 1, out, dirs.as_deref_mut())?
            }
            Some(ft) if ft.is_file() && is_md => {
                if out.len() >= MAX_AGENT_FILES {
                    return Err(DeriveError::TooManyAgentFiles {
                        limit: MAX_AGENT_FILES,
                    });
                }
                let meta = inspected.unwrap_or_else(|| inspect(&entry));
                out.push((path, meta));
            }
            _ => {}
        }
    }
    Ok(())
}

fn read_permissions(path: &Path, label: &str, decl: &mut Declarations) -> Result<(), DeriveError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(DeriveError::SettingsUnreadable {
                label: label.to_string(),
                error: e,
            })
        }
    };
    parse_settings(&text, label, decl)
}

/// Reads the `permissions` block of one settings file's text into `decl`.
pub fn parse_settings(text: &str, label: &str, decl: &mut Declarations) -> Result<(), DeriveError> {
    let value: Value =
        serde_json::from_str(text.trim_start_matches('\u{feff}')).map_err(|error| {
            DeriveError::SettingsNotJson {
                label: label.to_string(),
                error,
            }
        })?;
    let Some(perms) = value.get("permissions") else {
        return Ok(());
    };
    if perms.is_null() {
        return Ok(());
    }
    if !perms.is_object() {
        return Err(DeriveError::PermissionsNotObject {
            label: label.to_string(),
        });
    }
    for key in ["allow", "deny", "ask"] {
        let list = match perms.get(key) {
            None | Some(Value::Null) => continue,
            Some(Value::Array(a)) => a,
            Some(_) => {
                return Err(DeriveError::PermissionsNotList {
                    label: label.to_string(),
                    key,
                })
            }
        };
        for item in list {
            let (rules, from) = match key {
                "allow" => (&mut decl.allow, &mut decl.allow_from),
                "deny" => (&mut decl.deny, &mut decl.deny_from),
                _ => (&mut decl.ask, &mut decl.ask_from),
            };
            match item.as_str() {
                Some(s) => {
                    rules.push(s.to_string());
                    from.push(label.to_string());
                }
                // Skipping an allow only narrows; skipping a deny (or an ask, which binds
                // subagents as one) would widen, so it is an error.
                None if key == "allow" => decl.problems.push(format!(
                    ".claude/{label}: permissions.allow has a non-string entry {item}; ignored"
                )),
                None => {
                    return Err(DeriveError::RuleNotString {
                        label: label.to_string(),
                        key,
                        item: item.to_string(),
                    })
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The listing is in the order of its paths sorted, however names and folders interleave.
    #[test]
    fn the_listing_is_in_path_order() {
        let root = std::env::temp_dir().join(format!("attenu-list-{}", std::process::id()));
        let agents = root.join(".claude/agents");
        for f in [
            "a.md",
            "a/b.md",
            "a/a-b.md",
            "a-b.md",
            "a0.md",
            "a/c/d.md",
            "A.md",
            "b.md",
            "a.b/x.md",
            "a b.md",
            "\u{e9}.md",
            "z/y/x.md",
            "a/c.md",
        ] {
            let path = agents.join(f);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, "---\nname: x\n---\n").unwrap();
        }
        let listed = list_agent_files(&root).unwrap();
        let mut sorted = listed.clone();
        sorted.sort();
        assert_eq!(listed.len(), 13);
        assert_eq!(listed, sorted);
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// `relative` is `strip_prefix` on the paths the listing makes, and on stranger ones.
    #[test]
    fn relative_is_strip_prefix() {
        for (root, path) in [
            ("/p", "/p/.claude/agents/a.md"),
            ("/p/", "/p/.claude/agents/a.md"),
            ("/p/.", "/p/./.claude/agents/a.md"),
            ("/p//q", "/p//q/.claude/x y/b.md"),
            ("/p", "/pq/.claude/a.md"),
            ("/p", "/p"),
            ("/p", "/p/"),
            ("/p", "/p//./a"),
            ("/", "/a/b"),
            ("p", "p/a"),
            ("/x/p", "/p/a"),
        ] {
            let (root, path) = (Path::new(root), Path::new(path));
            let want = path.strip_prefix(root).unwrap_or(path);
            assert_eq!(relative(root, path), want, "{root:?} {path:?}");
            assert_eq!(
                relative(root, path).as_os_str(),
                want.as_os_str(),
                "{root:?} {path:?}"
            );
        }
    }
}
