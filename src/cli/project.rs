//! How a command finds the project it is about.

use std::path::{Path, PathBuf};

/// The project at or above `dir` whose `.attenu/` exists: a command that reads the hook's
/// state never creates it.
pub fn state_root(dir: &Path) -> Result<PathBuf, String> {
    let root = state_project_dir(dir);
    if root.join(".attenu").is_dir() {
        Ok(root)
    } else {
        Err(format!(
            "{} has no .attenu/ directory: no hook call has been recorded in this project. Pass --project with the project's root",
            root.display()
        ))
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
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub project: PathBuf,
    /// Session id (default: the most recently written session)
    #[arg(long)]
    pub session: Option<String>,
}

impl SessionArgs {
    /// The project whose state is read ([`state_project_dir`]).
    pub fn state_dir(&self) -> PathBuf {
        state_project_dir(&self.project)
    }

    /// The session asked for; `None` means the most recently written one.
    pub fn session(&self) -> Option<&str> {
        self.session.as_deref()
    }
}

/// `[DIR]`: the project a command about declarations and wiring is for.
#[derive(clap::Args, Debug)]
pub struct ProjectDir {
    #[arg(default_value = ".")]
    pub dir: PathBuf,
}

impl ProjectDir {
    /// The project DIR is in ([`project_dir`]); DIR must be a directory.
    pub fn root(&self) -> Result<PathBuf, String> {
        if self.dir.is_dir() {
            Ok(project_dir(&self.dir))
        } else {
            Err(format!(
                "{} is not a directory; pass the project's root directory",
                self.dir.display()
            ))
        }
    }
}
