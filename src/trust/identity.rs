//! Who and where a session ran: the user, the host, the repository (its remote URL), branch
//! and commit, and the harness, recorded once per chain in the root entry (signed with the
//! chain) so `verify`, `log --sessions`, `report` and `audit` can name a session by more than
//! a key id. Read from files only (git's own files, no `git` process), at a chain's opening.

use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

/// This machine's host name (`/proc/sys/kernel/hostname`, else `$HOSTNAME`, else `unknown`).
pub fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "unknown".to_string())
}

/// The user: `$USER`, else `$LOGNAME`, else the uid.
pub fn user() -> String {
    std::env::var("USER")
        .ok()
        .or_else(|| std::env::var("LOGNAME").ok())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| {
            crate::fs::current_uid().map_or_else(|| "unknown".into(), |u| format!("uid {u}"))
        })
}

/// The identity object for a root entry's `context.identity`. `signer` is the key id and
/// certificate summary of the key that signs this machine's evidence; `harness` what the
/// payload or environment says of the harness.
pub fn describe(project: &Path, signer: Value, harness: Option<String>) -> Value {
    let mut id = Map::new();
    id.insert("signer".into(), signer);
    id.insert("user".into(), json!(bounded(&user())));
    id.insert("host".into(), json!(bounded(&host())));
    if let Some(git) = git_of(project) {
        id.insert("git".into(), git);
    }
    if let Some(h) = harness {
        id.insert("harness".into(), json!(bounded(&h)));
    }
    Value::Object(id)
}

/// The identity of a session whose state directory is `attenu`: the signer of this machine
/// (its key id, and its certificate's key id, principals, serial and expiry when certified),
/// and the rest of [`describe`]. A signer that cannot be loaded is recorded as such; it never
/// stops the call (the checkpoint that needs it reports it).
pub fn of_session(attenu: &Path, config: &crate::config::Config) -> Value {
    let signer = match super::signer::load(attenu) {
        Ok(s) => {
            let source = match &s.source {
                super::signer::Source::Environment(_) => "environment",
                super::signer::Source::Enrolled(_) => "enrolled",
                super::signer::Source::Anchor => "anchor",
            };
            let cert = s.cert.as_ref().map(|c| {
                json!({
                    "key_id": bounded(&c.key_id),
                    "principals": c.principals.iter().take(16).map(|p| bounded(p)).collect::<Vec<_>>(),
                    "serial": c.serial,
                    "ca": c.ca_fingerprint,
                    "valid_before": c.valid_before,
                })
            });
            json!({"kid": s.key.kid, "source": source, "certificate": cert})
        }
        Err(e) => json!({"error": bounded(&e.to_string())}),
    };
    let project = attenu.parent().unwrap_or(attenu);
    let mut id = describe(project, signer, harness());
    id["config"] = json!({"sources": config.sources, "overrides": config.overrides});
    id
}

/// What the environment says of the harness: Claude Code sets `CLAUDECODE=1` and
/// `CLAUDE_CODE_ENTRYPOINT` for the processes it starts.
fn harness() -> Option<String> {
    let entry = std::env::var("CLAUDE_CODE_ENTRYPOINT").ok();
    let version = std::env::var("CLAUDE_CODE_VERSION").ok();
    if entry.is_none() && version.is_none() && std::env::var_os("CLAUDECODE").is_none() {
        return None;
    }
    let mut h = "claude-code".to_string();
    if let Some(v) = version {
        h.push(' ');
        h.push_str(&v);
    }
    if let Some(e) = entry {
        h.push_str(&format!(" ({e})"));
    }
    Some(h)
}

/// Who signed a session and where it ran, as a root's `context.identity` says: the
/// certificate's key id (else the key id) and `remote@commit` (the remote's last path
/// component, 12 hex); `-` where the root says nothing. What `verify` and `log --sessions` show.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Recorded {
    pub signer: String,
    pub repository: String,
}

impl Recorded {
    pub fn of(identity: &Value) -> Recorded {
        let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_string();
        let signer = identity
            .pointer("/signer/certificate/key_id")
            .or_else(|| identity.pointer("/signer/kid"));
        let repository = identity.get("git").map_or_else(
            || "-".to_string(),
            |g| {
                let remote = g.get("remote").and_then(Value::as_str).unwrap_or("");
                let remote = remote.rsplit(['/', ':']).next().unwrap_or(remote);
                let remote = if remote.is_empty() {
                    "(no remote)"
                } else {
                    remote
                };
                let commit = text(g.get("commit"));
                match commit.get(..commit.len().min(12)) {
                    Some(c) if !c.is_empty() => format!("{remote}@{c}"),
                    _ => format!("{remote} (no commit)"),
                }
            },
        );
        Recorded {
            signer: signer.and_then(Value::as_str).unwrap_or("-").to_string(),
            repository,
        }
    }
}

/// What is recorded stays one line of sane length, whatever a file says.
fn bounded(s: &str) -> String {
    let one: String = s.chars().filter(|c| !c.is_control()).take(256).collect();
    one
}

/// The repository of `project`: `{remote, branch, commit}` from `.git` (a directory, or a
/// `gitdir:` file as worktrees and submodules have). Credentials in a remote URL are dropped.
fn git_of(project: &Path) -> Option<Value> {
    let git = git_dir(&project.join(".git"))?;
    let common = read_small(&git.join("commondir"))
        .map(|c| git.join(c.trim()))
        .unwrap_or_else(|| git.clone());
    let head = read_small(&git.join("HEAD"))?;
    let head = head.trim();
    let (branch, commit) = match head.strip_prefix("ref: ") {
        Some(r) => (
            r.strip_prefix("refs/heads/").map(str::to_string),
            resolve_ref(&git, &common, r),
        ),
        None => (None, Some(head.to_string())),
    };
    let remote = remote_url(&common);
    Some(json!({
        "remote": remote.map(|r| bounded(&strip_credentials(&r))),
        "branch": branch.map(|b| bounded(&b)),
        "commit": commit.filter(|c| c.len() >= 40 && c.bytes().all(|b| b.is_ascii_hexdigit())),
    }))
}

fn git_dir(dot_git: &Path) -> Option<PathBuf> {
    let m = std::fs::symlink_metadata(dot_git).ok()?;
    if m.is_dir() {
        return Some(dot_git.to_path_buf());
    }
    let text = read_small(dot_git)?;
    let to = text.trim().strip_prefix("gitdir:")?.trim();
    let p = Path::new(to);
    Some(if p.is_absolute() {
        p.to_path_buf()
    } else {
        dot_git.parent()?.join(p)
    })
}

/// A small file of git's, read the way state files are (no link followed, never waiting on a
/// FIFO, regular files of this user only): a repository is the agents' to write.
fn read_small(path: &Path) -> Option<String> {
    read_bounded(path, 64 * 1024)
}

fn read_bounded(path: &Path, max: u64) -> Option<String> {
    let (bytes, _) = crate::fs::read_owned(path, max).ok()??;
    String::from_utf8(bytes).ok()
}

fn resolve_ref(git: &Path, common: &Path, r: &str) -> Option<String> {
    if !r.starts_with("refs/") || r.contains("..") {
        return None;
    }
    for dir in [git, common] {
        if let Some(s) = read_small(&dir.join(r)) {
            return Some(s.trim().to_string());
        }
    }
    // A big repository's packed refs run to megabytes; read only when the loose ref is absent.
    read_bounded(&common.join("packed-refs"), 16 << 20)?
        .lines()
        .filter_map(|l| l.split_once(' '))
        .find(|(_, name)| *name == r)
        .map(|(hash, _)| hash.to_string())
}

/// `remote.origin.url` (else the first remote's) from git's config file.
fn remote_url(common: &Path) -> Option<String> {
    let config = read_small(&common.join("config"))?;
    let mut section = String::new();
    let mut first = None;
    for line in config.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.to_string();
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        if k.trim() == "url" && section.starts_with("[remote ") {
            let url = v.trim().trim_matches('"').to_string();
            if section == "[remote \"origin\"]" {
                return Some(url);
            }
            first.get_or_insert(url);
        }
    }
    first
}

/// `https://user:token@host/x` → `https://host/x`.
fn strip_credentials(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => match rest.split_once('/') {
            Some((authority, path)) => {
                let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
                format!("{scheme}://{host}/{path}")
            }
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_repository_without_remote_or_commit_is_said_so_not_as_question_marks() {
        let shown = |git: Value| Recorded::of(&serde_json::json!({ "git": git })).repository;
        assert_eq!(
            shown(
                serde_json::json!({"remote": "https://h/acme/app.git", "commit": "0123456789abcdef"})
            ),
            "app.git@0123456789ab"
        );
        assert_eq!(
            shown(serde_json::json!({"commit": "0123456789abcdef"})),
            "(no remote)@0123456789ab"
        );
        assert_eq!(shown(serde_json::json!({})), "(no remote) (no commit)");
        assert_eq!(
            shown(serde_json::json!({"remote": "git@h:acme/app"})),
            "app (no commit)"
        );
    }

    use super::*;

    #[test]
    fn credentials_leave_a_remote_url() {
        assert_eq!(
            strip_credentials("https://bot:ghp_secret@github.com/acme/app.git"),
            "https://github.com/acme/app.git"
        );
        assert_eq!(
            strip_credentials("git@github.com:acme/app.git"),
            "git@github.com:acme/app.git"
        );
    }
}
