//! How a command finds the project it is about.

use std::path::{Path, PathBuf};

/// Why a command cannot tell which project or session it is about.
#[derive(Debug, thiserror::Error)]
pub enum ProjectError {
    #[error("{} has no .attenu/ directory: no hook call has been recorded in this project. Pass --project with the project's root", .0.display())]
    NoState(PathBuf),
    #[error("{} is not a directory; pass the project's root directory", .0.display())]
    NotADirectory(PathBuf),
    #[error("--session {given} matches {} sessions ({}); pass more of the id (`attenu-hook log --sessions` lists them whole)", .matches.len(), .matches.join(", "))]
    AmbiguousSession { given: String, matches: Vec<String> },
}

/// The project at or above `dir` whose `.attenu/` exists: a command that reads the hook's
/// state never creates it.
pub fn state_root(dir: &Path) -> Result<PathBuf, ProjectError> {
    let root = state_project_dir(dir);
    if root.join(".attenu").is_dir() {
        Ok(root)
    } else {
        Err(ProjectError::NoState(root))
    }
}

/// The project `dir` is in, for commands about its declarations and wiring (`install`,
/// `doctor`, `--derive`): the nearest directory at or above it with a `.claude/` that is not
/// the user's own configuration directory (`~/.claude`, or `CLAUDE_CONFIG_DIR`), else `dir`.
/// `~/.claude` exists for every Claude Code user and must not capture a project below home.
pub fn project_dir(dir: &Path) -> PathBuf {
    let abs = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let user_config = crate::ops::user_config_dir().and_then(|d| std::fs::canonicalize(d).ok());
    let is_project_claude = |a: &Path| {
        let c = a.join(".claude");
        c.is_dir() && std::fs::canonicalize(&c).ok() != user_config
    };
    abs.ancestors()
        .find(|a| is_project_claude(a))
        .map(Path::to_path_buf)
        .unwrap_or(abs)
}

/// The project `dir` is in, for commands about the hook's state (export, log, reconcile,
/// authorize, receipt): the nearest directory at or above it holding `.attenu/`, else as
/// [`project_dir`]. State first: the hook keeps it in `CLAUDE_PROJECT_DIR`, which need not
/// have a `.claude/` of its own. Declarations are looked up without it: a `.attenu/` left in a
/// parent directory by a session started there says nothing about this project's settings.
pub fn state_project_dir(dir: &Path) -> PathBuf {
    let abs = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    abs.ancestors()
        .find(|a| a.join(".attenu").is_dir())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| project_dir(dir))
}

/// `--project DIR` and `--session ID`: the session of the hook's state a command is about.
#[derive(clap::Args, Debug)]
pub struct SessionArgs {
    /// The project, or a directory inside it (its state is the nearest .attenu/ above)
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub project: PathBuf,
    /// Session id, or a prefix of it that names one session, such as the short id `log` shows (default: the most recently written session)
    #[arg(long)]
    pub session: Option<String>,
}

impl SessionArgs {
    /// The project whose state is read ([`state_project_dir`]).
    pub fn state_dir(&self) -> PathBuf {
        state_project_dir(&self.project)
    }

    /// The session asked for, whole; `None` means the most recently written one. A prefix
    /// (what `log` shows, with or without its `…`) names the one session it starts.
    pub fn session(&self) -> Result<Option<String>, ProjectError> {
        let Some(given) = self.session.as_deref() else {
            return Ok(None);
        };
        resolve_session(&self.state_dir().join(".attenu"), given).map(Some)
    }
}

/// The whole id of the session `given` names in `attenu`: itself when its ledger is there,
/// else the one session whose id starts with it. No match leaves it as given (the command
/// then says there is no such session); several are an error that lists them.
pub fn resolve_session(attenu: &Path, given: &str) -> Result<String, ProjectError> {
    let given = given.trim_end_matches('…').trim_end_matches("...");
    let paths = crate::ledger::store::SessionPaths::new(attenu, given);
    if given.is_empty() || paths.ledger.exists() {
        return Ok(given.to_string());
    }
    let mut matches: Vec<String> = crate::ledger::read::sessions(attenu)
        .into_iter()
        .flatten()
        .map(|f| f.paths.name)
        // Hashed names (`h.…`) do not start with the id they stand for.
        .filter(|id| !id.starts_with("h.") && id.starts_with(given))
        .collect();
    match matches.len() {
        0 => Ok(given.to_string()),
        1 => Ok(matches.remove(0)),
        _ => Err(ProjectError::AmbiguousSession {
            given: given.to_string(),
            matches,
        }),
    }
}

/// `[DIR]`: the project a command about declarations and wiring is for.
#[derive(clap::Args, Debug)]
pub struct ProjectDir {
    /// The project, or a directory inside it (default: the current directory)
    #[arg(default_value = ".")]
    pub dir: PathBuf,
}

impl ProjectDir {
    /// The project DIR is in ([`project_dir`]); DIR must be a directory.
    pub fn root(&self) -> Result<PathBuf, ProjectError> {
        if self.dir.is_dir() {
            Ok(project_dir(&self.dir))
        } else {
            Err(ProjectError::NotADirectory(self.dir.clone()))
        }
    }
}
