//! Derivation: the project's declared structure becomes permission sets.
//!
//! Inputs are `.claude/agents/**/*.md` frontmatter and the `permissions` block of
//! `.claude/settings.json` and `.claude/settings.local.json`. Resolution follows Claude Code:
//! `disallowedTools` is applied first, then `tools` is resolved against what remains, and an
//! agent without `tools` inherits the session pool. The session root holds the operator's bare
//! `permissions.allow` rules, everything the declared agents hold, and one
//! `agent.delegate.<name>` per agent, minus every bare `permissions.deny` rule; each agent's
//! set is within the root by construction (`meet(session, derived)`).
//!
//! Containment: a bad agent file affects only that agent (it holds nothing and is reported);
//! only an unreadable settings file, which is project-wide, fails the derivation as a whole.

pub mod cache;
pub mod frontmatter;
pub mod scopes;

use crate::ledger::{canonical, chain::sha256_hex};
use scopes::{covers, declared_at, delegate_scope, Declared, Site};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Upper bounds on what derivation reads, so a hostile tree cannot stall the hook.
const MAX_AGENT_FILES: usize = 2000;
const MAX_AGENT_FILE_BYTES: u64 = 1 << 20;
const MAX_DIR_DEPTH: usize = 8;

/// One agent's derived authority.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AgentAuthority {
    pub scopes: BTreeSet<String>,
    /// Denials narrower than a scope held (`disallowedTools: mcp__pay__refund` beside
    /// `tools: mcp__pay`, a `permissions.deny` of one tool of an allowed server): a wide scope
    /// cannot be cut into its parts, so it is held except where one of these covers the call.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub excluded: BTreeSet<String>,
    /// Set when the agent's own declaration could not be read: it then holds nothing.
    pub invalid: Option<String>,
    /// Where the agent was declared (a file, or the configuration).
    pub source: String,
}

/// The derived permission sets of one project.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Roster {
    pub root: BTreeSet<String>,
    /// The operator's denials narrower than a scope the root holds (see
    /// [`AgentAuthority::excluded`]).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub root_excluded: BTreeSet<String>,
    pub agents: BTreeMap<String, AgentAuthority>,
    pub unrepresented: Vec<String>,
    pub problems: Vec<String>,
    pub digest: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeriveError {
    #[error("{0}")]
    SettingsInvalid(String),
    #[error("{0}")]
    DeclarationsUnreadable(String),
}

/// `scope` is covered by a held pattern and by no excluded one.
fn holds(held: &BTreeSet<String>, excluded: &BTreeSet<String>, scope: &str) -> bool {
    held.iter().any(|p| covers(p, scope)) && !excluded.iter().any(|d| covers(d, scope))
}

impl AgentAuthority {
    pub fn holds(&self, scope: &str) -> bool {
        holds(&self.scopes, &self.excluded, scope)
    }

    /// Held by a scope but taken out by a narrower denial.
    pub fn excludes(&self, scope: &str) -> bool {
        self.scopes.iter().any(|p| covers(p, scope)) && !self.holds(scope)
    }
}

impl Roster {
    /// Does the session root hold `scope` (does the project declare it for anyone)?
    pub fn declared_anywhere(&self, scope: &str) -> bool {
        holds(&self.root, &self.root_excluded, scope)
    }

    /// The `--derive` JSON document.
    pub fn to_json(&self) -> Value {
        let mut doc = json!({
            "root": self.root,
            "agents": self.agents.iter().map(|(k, a)| (k.clone(), json!(a.scopes))).collect::<serde_json::Map<_, _>>(),
            "unrepresented": self.unrepresented,
            "problems": self.problems,
            "digest": self.digest,
        });
        // Only when some denial is narrower than a held scope, so other documents keep their shape.
        let excluded: serde_json::Map<String, Value> = self
            .agents
            .iter()
            .filter(|(_, a)| !a.excluded.is_empty())
            .map(|(k, a)| (k.clone(), json!(a.excluded)))
            .collect();
        if !self.root_excluded.is_empty() || !excluded.is_empty() {
            doc["excluded"] = json!({"root": self.root_excluded, "agents": excluded});
        }
        doc
    }
}

/// Declarations gathered from the files, before resolution.
#[derive(Debug, Default)]
pub struct Declarations {
    /// name → (source, Ok(agent) or Err(why it holds nothing))
    pub agents: BTreeMap<String, (String, Result<frontmatter::AgentFile, String>)>,
    pub allow: Vec<String>,
    pub deny: Vec<String>,
    pub problems: Vec<String>,
}

/// Reads and resolves the declarations of the project at `root`. `extra_agents` are agent
/// types named in configuration (for example a built-in `Explore`), each with its tool list.
pub fn derive_project(
    root: &Path,
    extra_agents: &BTreeMap<String, Vec<String>>,
) -> Result<Roster, DeriveError> {
    derive_from(root, list_agent_files(root)?, extra_agents)
}

/// [`derive_project`] from the agent files [`list_agent_files`] found.
fn derive_from(
    root: &Path,
    files: Vec<PathBuf>,
    extra_agents: &BTreeMap<String, Vec<String>>,
) -> Result<Roster, DeriveError> {
    let mut decl = read_declarations_from(root, files)?;
    for (name, tools) in extra_agents {
        if decl.agents.contains_key(name) {
            decl.problems.push(format!(
                "agent '{name}' is declared both in .claude/agents and in .attenu/config.toml; it holds nothing until one is removed"
            ));
            decl.agents.insert(
                name.clone(),
                ("config".into(), Err("declared twice".into())),
            );
            continue;
        }
        let file = frontmatter::AgentFile {
            name: name.clone(),
            tools: Some(tools.clone()),
            disallowed: vec![],
        };
        decl.agents
            .insert(name.clone(), (".attenu/config.toml".into(), Ok(file)));
    }
    Ok(resolve(decl))
}

/// Reads agent files and settings; an unreadable settings file is the only project-wide error.
pub fn read_declarations(root: &Path) -> Result<Declarations, DeriveError> {
    read_declarations_from(root, list_agent_files(root)?)
}

/// Every `.md` file under `.claude/agents`, in order.
fn list_agent_files(root: &Path) -> Result<Vec<PathBuf>, DeriveError> {
    let mut files = Vec::new();
    collect_md(&root.join(".claude").join("agents"), 0, &mut files)?;
    files.sort();
    Ok(files)
}

fn read_declarations_from(root: &Path, files: Vec<PathBuf>) -> Result<Declarations, DeriveError> {
    let mut decl = Declarations::default();
    let claude = root.join(".claude");
    // Claude Code loads a file reached by two paths (a symlink beside it) once.
    let mut seen = std::collections::HashSet::new();
    for path in files {
        let rel = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .display()
            .to_string();
        let meta = std::fs::metadata(&path);
        if let Ok(m) = &meta {
            use std::os::unix::fs::MetadataExt;
            if !seen.insert((m.dev(), m.ino())) {
                continue;
            }
        }
        let parsed = meta
            .map_err(|e| e.to_string())
            .and_then(|m| {
                if m.len() > MAX_AGENT_FILE_BYTES {
                    Err(format!("larger than {MAX_AGENT_FILE_BYTES} bytes"))
                } else {
                    std::fs::read(&path).map_err(|e| e.to_string())
                }
            })
            .and_then(|bytes| String::from_utf8(bytes).map_err(|_| "not UTF-8".to_string()));
        let text = match parsed {
            Ok(t) => t,
            Err(e) => {
                decl.problems.push(format!(
                    "{rel}: cannot be read ({e}); no agent is derived from it"
                ));
                continue;
            }
        };
        let (name, result) = match frontmatter::parse_agent(&text) {
            Ok(a) => (a.name.clone(), Ok(a)),
            Err(frontmatter::FrontmatterError {
                name: Some(n),
                message,
            }) => {
                decl.problems.push(format!(
                    "{rel}: {message}; agent '{n}' holds nothing until it is fixed"
                ));
                (n, Err(message))
            }
            Err(frontmatter::FrontmatterError {
                name: None,
                message,
            }) => {
                decl.problems
                    .push(format!("{rel}: {message}; no agent is derived from it"));
                continue;
            }
        };
        if let Some((first, _)) = decl.agents.get(&name) {
            decl.problems.push(format!(
                "agent '{name}' is declared twice ({first} and {rel}); it holds nothing until one is renamed"
            ));
            let first = first.clone();
            decl.agents
                .insert(name, (first, Err("declared twice".into())));
            continue;
        }
        decl.agents.insert(name, (rel, result));
    }
    for file in ["settings.json", "settings.local.json"] {
        read_permissions(&claude.join(file), file, &mut decl)?;
    }
    Ok(decl)
}

fn collect_md(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) -> Result<(), DeriveError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(DeriveError::DeclarationsUnreadable(format!(
                "cannot list {}: {e}; make it readable by the user running Claude Code",
                dir.display()
            )))
        }
    };
    for entry in entries {
        let entry = entry.map_err(|e| {
            DeriveError::DeclarationsUnreadable(format!("cannot list {}: {e}", dir.display()))
        })?;
        let path = entry.path();
        // The directory listing's own type, unless it is a link (Claude Code follows those):
        // a statx per agent file saved on every call.
        let ft = match entry.file_type() {
            Ok(t) if !t.is_symlink() => Ok(t),
            _ => std::fs::metadata(&path).map(|m| m.file_type()),
        };
        match ft {
            Ok(ft) if ft.is_dir() && depth < MAX_DIR_DEPTH => collect_md(&path, depth + 1, out)?,
            Ok(ft) if ft.is_file() && path.extension().is_some_and(|e| e == "md") => {
                if out.len() >= MAX_AGENT_FILES {
                    return Err(DeriveError::DeclarationsUnreadable(format!(
                        "more than {MAX_AGENT_FILES} agent files under .claude/agents"
                    )));
                }
                out.push(path);
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
            return Err(DeriveError::SettingsInvalid(format!(
                ".claude/{label} cannot be read ({e}); make it readable or remove it"
            )))
        }
    };
    parse_settings(&text, label, decl)
}

/// Reads the `permissions` block of one settings file's text into `decl`.
pub fn parse_settings(text: &str, label: &str, decl: &mut Declarations) -> Result<(), DeriveError> {
    let value: Value = serde_json::from_str(text.trim_start_matches('\u{feff}')).map_err(|e| {
        DeriveError::SettingsInvalid(format!(
            ".claude/{label} is not valid JSON ({e}); fix it so its permissions can be read"
        ))
    })?;
    let Some(perms) = value.get("permissions") else {
        return Ok(());
    };
    if perms.is_null() {
        return Ok(());
    }
    if !perms.is_object() {
        return Err(DeriveError::SettingsInvalid(format!(
            ".claude/{label}: `permissions` is not an object; fix it so it can be read"
        )));
    }
    for (key, is_deny) in [("allow", false), ("deny", true)] {
        let list = match perms.get(key) {
            None | Some(Value::Null) => continue,
            Some(Value::Array(a)) => a,
            Some(_) => {
                return Err(DeriveError::SettingsInvalid(format!(
                    ".claude/{label}: permissions.{key} is not a list; fix it so it can be read"
                )))
            }
        };
        for item in list {
            match (item.as_str(), is_deny) {
                (Some(s), false) => decl.allow.push(s.to_string()),
                (Some(s), true) => decl.deny.push(s.to_string()),
                // Skipping an allow only narrows; skipping a deny would widen, so it is an error.
                (None, false) => decl.problems.push(format!(".claude/{label}: permissions.allow has a non-string entry {item}; ignored")),
                (None, true) => {
                    return Err(DeriveError::SettingsInvalid(format!(
                        ".claude/{label}: permissions.deny has a non-string entry {item}; fix it so the denial can be honoured"
                    )))
                }
            }
        }
    }
    Ok(())
}

fn scopes_of(
    rules: &[String],
    site: Site,
    denies: bool,
    label: &str,
    unrepresented: &mut Vec<String>,
) -> (BTreeSet<String>, bool) {
    let mut out = BTreeSet::new();
    let mut all = false;
    for r in rules {
        match declared_at(r, site) {
            Declared::Scopes(s) => out.extend(s),
            Declared::All => all = true,
            Declared::Unrepresented(note) => unrepresented.push(format!("{label} {note}")),
            Declared::WholeTool(s, note) => {
                out.extend(s);
                unrepresented.push(format!("{label} {note}"));
            }
        }
    }
    if denies && out.contains("exec.bash") {
        // Claude Code takes Monitor (and REPL) away with Bash.
        out.extend(scopes::removed_with_bash());
    }
    (out, all)
}

/// The denials that fall strictly inside a held scope: `subtract` cannot remove those.
fn excluded_within(held: &BTreeSet<String>, denied: &BTreeSet<String>) -> BTreeSet<String> {
    denied
        .iter()
        .filter(|d| held.iter().any(|s| covers(s, d)))
        .cloned()
        .collect()
}

fn subtract(scopes: &BTreeSet<String>, patterns: &BTreeSet<String>) -> BTreeSet<String> {
    scopes
        .iter()
        .filter(|s| !patterns.iter().any(|p| covers(p, s)))
        .cloned()
        .collect()
}

/// Resolves gathered declarations into a [`Roster`].
pub fn resolve(decl: Declarations) -> Roster {
    let mut unrepresented = Vec::new();
    let (operator_allow, allow_all) = scopes_of(
        &decl.allow,
        Site::Settings,
        false,
        "settings permissions.allow",
        &mut unrepresented,
    );
    if allow_all {
        unrepresented.push("settings permissions.allow * (not a Claude Code rule)".into());
    }
    let (operator_deny, deny_all) = scopes_of(
        &decl.deny,
        Site::Settings,
        true,
        "settings permissions.deny",
        &mut unrepresented,
    );

    // Pass 1: what each agent with an explicit list declares for itself.
    let mut pool = operator_allow;
    for (name, (_, file)) in &decl.agents {
        pool.insert(delegate_scope(name));
        if let Ok(a) = file {
            if let Some(tools) = &a.tools {
                let label = format!("{name}: tools");
                let (own, _) = scopes_of(tools, Site::AgentTools, false, &label, &mut Vec::new());
                let (denied, _) = scopes_of(
                    &a.disallowed,
                    Site::AgentDisallowed,
                    true,
                    "",
                    &mut Vec::new(),
                );
                pool.extend(subtract(&own, &denied));
            }
        }
    }
    let root = if deny_all {
        BTreeSet::new()
    } else {
        subtract(&pool, &operator_deny)
    };
    let root_excluded = excluded_within(&root, &operator_deny);

    // Pass 2: each agent against the resolved pool.
    let mut agents = BTreeMap::new();
    for (name, (source, file)) in decl.agents {
        let (scopes, excluded, invalid) = match file {
            Err(why) => (BTreeSet::new(), BTreeSet::new(), Some(why)),
            Ok(a) => {
                let (denied, _) = scopes_of(
                    &a.disallowed,
                    Site::AgentDisallowed,
                    true,
                    &format!("{name}: disallowedTools"),
                    &mut unrepresented,
                );
                let remaining = subtract(&root, &denied);
                let scopes = match &a.tools {
                    None => remaining,
                    Some(tools) => {
                        let (own, all) = scopes_of(
                            tools,
                            Site::AgentTools,
                            false,
                            &format!("{name}: tools"),
                            &mut unrepresented,
                        );
                        if all {
                            remaining
                        } else {
                            // Within the root: a tool the operator denies is removed here too.
                            subtract(&own, &denied)
                                .into_iter()
                                .filter(|s| root.iter().any(|p| covers(p, s)))
                                .collect()
                        }
                    }
                };
                let all_denied: BTreeSet<String> = denied.union(&operator_deny).cloned().collect();
                let excluded = excluded_within(&scopes, &all_denied);
                (scopes, excluded, None)
            }
        };
        agents.insert(
            name,
            AgentAuthority {
                scopes,
                excluded,
                invalid,
                source,
            },
        );
    }
    unrepresented.sort();
    unrepresented.dedup();
    let digest = digest_of(&root, &root_excluded, &agents);
    Roster {
        root,
        root_excluded,
        agents,
        unrepresented,
        problems: decl.problems,
        digest,
    }
}

fn digest_of(
    root: &BTreeSet<String>,
    root_excluded: &BTreeSet<String>,
    agents: &BTreeMap<String, AgentAuthority>,
) -> String {
    // Exclusions enter only where there are some, so a roster without any keeps the digest
    // (and the chain) it had before they were derived.
    let agent_doc = |a: &AgentAuthority| {
        let mut d = json!({"scopes": a.scopes, "invalid": a.invalid});
        if !a.excluded.is_empty() {
            d["excluded"] = json!(a.excluded);
        }
        d
    };
    let mut doc = json!({
        "root": root,
        "agents": agents.iter().map(|(k, a)| (k.clone(), agent_doc(a))).collect::<serde_json::Map<_, _>>(),
    });
    if !root_excluded.is_empty() {
        doc["root_excluded"] = json!(root_excluded);
    }
    sha256_hex(&canonical::to_vec(&doc).expect("derivation documents hold only strings"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decl(agents: &[(&str, &str)], allow: &[&str], deny: &[&str]) -> Declarations {
        let mut d = Declarations::default();
        for (name, text) in agents {
            d.agents.insert(
                name.to_string(),
                (
                    format!("{name}.md"),
                    frontmatter::parse_agent(text).map_err(|e| e.message),
                ),
            );
        }
        d.allow = allow.iter().map(|s| s.to_string()).collect();
        d.deny = deny.iter().map(|s| s.to_string()).collect();
        d
    }

    fn set(v: &[&str]) -> BTreeSet<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_seed_sample_project() {
        let r = resolve(decl(
            &[
                ("reviewer", "---\nname: reviewer\ntools: Read, Grep, Glob\n---\n"),
                ("researcher", "---\nname: researcher\ntools: Read, WebFetch\ndisallowedTools: Write, Edit\n---\n"),
            ],
            &["Read", "Grep", "Glob", "Bash(npm run lint)"],
            &["Read(./.env)", "NotebookEdit"],
        ));
        assert_eq!(
            r.root,
            set(&[
                "agent.delegate.researcher",
                "agent.delegate.reviewer",
                "fs.glob",
                "fs.grep",
                "fs.read",
                "net.fetch"
            ])
        );
        assert_eq!(
            r.agents["reviewer"].scopes,
            set(&["fs.glob", "fs.grep", "fs.read"])
        );
        assert_eq!(
            r.agents["researcher"].scopes,
            set(&["fs.read", "net.fetch"])
        );
        assert_eq!(
            r.unrepresented,
            [
                "settings permissions.allow Bash(npm run lint)",
                "settings permissions.deny Read(./.env)"
            ]
        );
    }

    /// Claude Code 2.1.332 reads an argument in an agent's `tools` as the whole tool, in its
    /// `disallowedTools` as taking the whole tool away, and takes Monitor away with Bash.
    #[test]
    fn agent_rules_with_arguments_and_bash_denials_follow_claude_code() {
        let r = resolve(decl(
            &[
                ("git", "---\nname: git\ntools: Bash(git status), Read\n---\n"),
                (
                    "nobash",
                    "---\nname: nobash\ntools: Bash, Monitor, Read\ndisallowedTools: Bash(rm *), Read(./.env)\n---\n",
                ),
                ("inherit", "---\nname: inherit\ndisallowedTools: Bash\n---\n"),
            ],
            &[],
            &[],
        ));
        assert_eq!(r.agents["git"].scopes, set(&["exec.bash", "fs.read"]));
        assert!(
            r.agents["nobash"].scopes.is_empty(),
            "{:?}",
            r.agents["nobash"].scopes
        );
        let inherit = &r.agents["inherit"].scopes;
        assert!(
            !inherit.contains("exec.bash") && !inherit.contains("exec.monitor"),
            "{inherit:?}"
        );
        assert!(inherit.contains("fs.read"), "{inherit:?}");
        assert!(r
            .unrepresented
            .iter()
            .any(|u| u.contains("git: tools Bash(git status)") && u.contains("whole tool")));
        // In settings, a denial of Bash takes Monitor with it too; one with arguments does not.
        let r = resolve(decl(
            &[("m", "---\nname: m\ntools: Monitor, Bash, Read\n---\n")],
            &[],
            &["Bash"],
        ));
        assert_eq!(r.agents["m"].scopes, set(&["fs.read"]));
        let r = resolve(decl(
            &[("m", "---\nname: m\ntools: Monitor, Bash, Read\n---\n")],
            &[],
            &["Bash(rm *)"],
        ));
        assert_eq!(
            r.agents["m"].scopes,
            set(&["exec.bash", "exec.monitor", "fs.read"])
        );
    }

    /// Regression: a denial narrower than a held scope (one tool of an allowed MCP server, one
    /// agent among all) was dropped, because only a whole held pattern can be removed.
    #[test]
    fn a_denial_inside_a_wider_held_scope_is_kept_as_an_exclusion() {
        let r = resolve(decl(
            &[
                (
                    "ops",
                    "---\nname: ops\ntools: mcp__pay, Read\ndisallowedTools: mcp__pay__refund\n---\n",
                ),
                (
                    "helper",
                    "---\nname: helper\ndisallowedTools: mcp__pay__refund, Agent(ops)\n---\n",
                ),
            ],
            &["mcp__pay", "Agent"],
            &["mcp__pay__wipe"],
        ));
        assert_eq!(r.root_excluded, set(&["mcp.pay.wipe"]));
        let ops = &r.agents["ops"];
        assert_eq!(ops.excluded, set(&["mcp.pay.refund", "mcp.pay.wipe"]));
        assert!(ops.holds("mcp.pay.charge"));
        assert!(!ops.holds("mcp.pay.refund") && ops.excludes("mcp.pay.refund"));
        assert!(!ops.holds("mcp.pay.wipe"));
        let helper = &r.agents["helper"];
        // `disallowedTools: Agent(ops)` takes the whole Agent tool away in Claude Code.
        assert!(!helper.holds("agent.delegate.ops") && !helper.holds("agent.delegate.ops2"));
        assert!(helper.holds("fs.read") || helper.holds("mcp.pay.charge"));
        assert!(!helper.holds("mcp.pay.refund") && !helper.holds("mcp.pay.wipe"));
        assert!(!r.declared_anywhere("mcp.pay.wipe"));
        assert!(
            r.declared_anywhere("mcp.pay.refund"),
            "other agents may hold it"
        );
        // A roster without exclusions keeps the digest it had before they existed.
        let plain = resolve(decl(&[("r", "---\nname: r\ntools: Read\n---\n")], &[], &[]));
        assert!(plain.root_excluded.is_empty() && plain.agents["r"].excluded.is_empty());
        assert_eq!(
            plain.digest,
            sha256_hex(
                &canonical::to_vec(&json!({
                    "root": plain.root,
                    "agents": {"r": {"scopes": plain.agents["r"].scopes, "invalid": null}},
                }))
                .unwrap()
            )
        );
    }

    #[test]
    fn inheritance_with_disallowed_and_operator_deny() {
        let r = resolve(decl(
            &[
                (
                    "builder",
                    "---\nname: builder\ntools: [Bash, Write, Read]\n---\n",
                ),
                ("worker", "---\nname: worker\ndisallowedTools: Write\n---\n"),
            ],
            &[],
            &["Bash"],
        ));
        assert!(!r.root.contains("exec.bash"));
        assert_eq!(r.agents["builder"].scopes, set(&["fs.read", "fs.write"]));
        assert_eq!(
            r.agents["worker"].scopes,
            set(&["agent.delegate.builder", "agent.delegate.worker", "fs.read"])
        );
    }

    #[test]
    fn a_bad_agent_holds_nothing_and_others_are_untouched() {
        let r = resolve(decl(
            &[
                ("bad", "---\nname: bad\ntools: 42\n---\n"),
                ("good", "---\nname: good\ntools: Read\n---\n"),
            ],
            &[],
            &[],
        ));
        assert!(r.agents["bad"].scopes.is_empty());
        assert!(r.agents["bad"].invalid.is_some());
        assert_eq!(r.agents["good"].scopes, set(&["fs.read"]));
    }

    #[test]
    fn digest_changes_with_the_declarations() {
        let a = resolve(decl(&[("r", "---\nname: r\ntools: Read\n---\n")], &[], &[]));
        let b = resolve(decl(
            &[("r", "---\nname: r\ntools: Read, Grep\n---\n")],
            &[],
            &[],
        ));
        let a2 = resolve(decl(&[("r", "---\nname: r\ntools: Read\n---\n")], &[], &[]));
        assert_ne!(a.digest, b.digest);
        assert_eq!(a.digest, a2.digest);
    }
}
