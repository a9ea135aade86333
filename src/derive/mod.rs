//! Derivation: the project's declared structure becomes permission sets.
//!
//! Inputs are `.claude/agents/**/*.md` frontmatter and the `permissions` block of
//! `.claude/settings.json` and `.claude/settings.local.json`. The map:
//!
//! * [`declarations`] gathers them (the agent files and the settings' permissions);
//! * [`frontmatter`] reads one agent file, [`scopes`] one rule, in scope space;
//! * [`resolve`](mod@resolve) makes the [`Roster`] ([`roster`]) out of them;
//! * [`compat`] holds what is read as Claude Code 2.1.332 reads it, where that is not obvious;
//! * [`cache`] keeps the last roster while its inputs are unchanged, and the roster each
//!   session was pinned to when it started ([`cache::pin`]);
//! * [`revoke`] reads the operator's live revocation;
//! * [`rules`] reads permission rules with arguments (`Bash(git tag:*)`, `Read(./src/**)`).

pub mod builtin;
pub mod cache;
pub mod compat;
pub mod declarations;
pub mod error;
pub mod explain;
pub mod frontmatter;
pub mod provenance;
pub mod readable;
pub mod resolve;
pub mod revoke;
pub mod roster;
pub mod rules;
pub mod scopes;

pub use declarations::{parse_settings, read_declarations, Declarations};
pub use error::DeriveError;
pub use resolve::resolve;
pub use roster::{AgentAuthority, Roster};

use declarations::{list_agent_files, read_declarations_from};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Reads and resolves the declarations of the project at `root`. `extra_agents` are agent
/// types named in configuration (for example a built-in `Explore`), each with its tool list;
/// `session_pool` is `[derive] session_pool`, the pool inheriting agents hold when it is set.
pub fn derive_project(
    root: &Path,
    extra_agents: &BTreeMap<String, Vec<String>>,
    session_pool: Option<&[String]>,
) -> Result<Roster, DeriveError> {
    derive_from(root, list_agent_files(root)?, extra_agents, session_pool)
}

/// [`derive_project`], with the account of the pool that `--derive` and `doctor` print.
pub fn explain_project(
    root: &Path,
    extra_agents: &BTreeMap<String, Vec<String>>,
    session_pool: Option<&[String]>,
) -> Result<(Roster, explain::Account), DeriveError> {
    let decl = declarations(root, list_agent_files(root)?, extra_agents, session_pool)?;
    let account = explain::Account::of(&decl);
    Ok((resolve(decl), account))
}

/// [`derive_project`] from the agent files [`list_agent_files`] found.
fn derive_from(
    root: &Path,
    files: Vec<PathBuf>,
    extra_agents: &BTreeMap<String, Vec<String>>,
    session_pool: Option<&[String]>,
) -> Result<Roster, DeriveError> {
    Ok(resolve(declarations(
        root,
        files,
        extra_agents,
        session_pool,
    )?))
}

/// The declarations [`derive_from`] resolves: the files' and the configuration's.
fn declarations(
    root: &Path,
    files: Vec<PathBuf>,
    extra_agents: &BTreeMap<String, Vec<String>>,
    session_pool: Option<&[String]>,
) -> Result<Declarations, DeriveError> {
    Ok(configure(
        read_declarations_from(root, files)?,
        extra_agents,
        session_pool,
    ))
}

/// `[agents] NAME = ["claude-code-builtin"]`: the built-in `name` as Claude Code defines it,
/// unless an agent file declares that name (the project's own declaration wins).
fn preset(decl: &mut Declarations, name: &str) {
    if decl.agents.contains_key(name) {
        return;
    }
    let declared = builtin::agent_file(name).ok_or_else(|| {
        decl.problems.push(format!(
            "[agents] {name} asks for the {} preset, but '{name}' is not one of Claude Code's built-in agents; it holds nothing",
            builtin::PRESET
        ));
        frontmatter::FrontmatterError::named(name, "not a built-in agent")
    });
    decl.agents
        .insert(name.to_string(), (builtin::SOURCE.into(), declared));
}

/// `decl` with what the configuration adds: its agents and its session pool.
fn configure(
    mut decl: Declarations,
    extra_agents: &BTreeMap<String, Vec<String>>,
    session_pool: Option<&[String]>,
) -> Declarations {
    decl.session_pool = session_pool.map(<[String]>::to_vec);
    for (name, tools) in extra_agents {
        if builtin::is_preset(tools) {
            preset(&mut decl, name);
            continue;
        }
        if decl.agents.contains_key(name) {
            decl.problems.push(format!(
                "agent '{name}' is declared both in .claude/agents and in .attenu/config.toml; it holds nothing until one is removed"
            ));
            decl.agents.insert(
                name.clone(),
                (
                    "config".into(),
                    Err(frontmatter::FrontmatterError::named(name, "declared twice")),
                ),
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
    decl
}
