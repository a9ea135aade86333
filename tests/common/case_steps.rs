//! What a decision case (`tests/decision_cases.rs`) may do between two hook events: a line of
//! `events.jsonl` that names one of these keys is a step, run in order with the events, and
//! its line in `expected.txt` says what it did.
//!
//! - `{"write": "PATH", "text": "..."}` (or `"json": {...}`, written as JSON): the project's
//!   file PATH now holds that, its folders made as needed; `N write PATH`.
//! - `{"remove": "PATH"}`: the file, link or folder (with what it holds) is gone;
//!   `N remove PATH`.
//! - `{"link": "PATH", "to": "TARGET"}`: PATH is a symbolic link to TARGET (`$PROJECT/..` for
//!   one inside the project); `N link PATH -> TARGET`.
//! - `{"show": "PATH"}`: the project's file PATH as it is now; `N show PATH`, then each of
//!   its lines after `  | ` (`  (missing)` when there is no such file).
//! - `{"run": ["revoke", "ops", "Bash"]}`: `attenu-hook` with these arguments, in the
//!   project's directory, with the case's administrator layer and `COLUMNS=100` (not the
//!   terminal's); `N run ARGS => EXIT`, then each line it printed, `  > ` on stdout and
//!   `  ! ` on stderr (none with `"quiet": true`, for a command whose exit code is what the
//!   case shows).
//!
//! A file shown, or a command's output, that does not end with a newline has a last line
//! `  (no newline at end)`. PATH is relative to the project and may not leave it; `$PROJECT`
//! in any string is the project's directory.
use super::case_view::Masks;
use super::*;

/// The keys that make a line of `events.jsonl` a step rather than a hook event.
pub const STEP_KEYS: &[&str] = &["write", "remove", "link", "show", "run"];

/// One step between events.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Write { path: String, text: String },
    Remove { path: String },
    Link { path: String, to: String },
    Show { path: String },
    Run { args: Vec<String>, quiet: bool },
}

/// The step `line` describes, `None` when it is a hook event, or what is wrong with it.
pub fn step(line: &Value) -> Result<Option<Step>, String> {
    let object = line.as_object().ok_or("not a JSON object")?;
    let named: Vec<&str> = STEP_KEYS
        .iter()
        .copied()
        .filter(|k| object.contains_key(*k))
        .collect();
    let kind = match named[..] {
        [] => return Ok(None),
        [kind] => kind,
        _ => return Err(format!("a step is one of {STEP_KEYS:?}, not {named:?}")),
    };
    let allowed: &[&str] = match kind {
        "write" => &["write", "text", "json"],
        "link" => &["link", "to"],
        "run" => &["run", "quiet"],
        _ => &[kind],
    };
    if let Some(extra) = object.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(format!("a {kind} step takes {allowed:?}, not {extra:?}"));
    }
    let text = |key: &str| {
        object[key]
            .as_str()
            .map(str::to_string)
            .ok_or(format!("{kind}: {key:?} must be a string"))
    };
    let path = || relative(text(kind)?);
    Ok(Some(match kind {
        "write" => Step::Write {
            path: path()?,
            text: match (object.get("text"), object.get("json")) {
                (Some(Value::String(t)), None) => t.clone(),
                (None, Some(j)) => j.to_string(),
                _ => return Err("write: one of \"text\" (a string) or \"json\"".into()),
            },
        },
        "remove" => Step::Remove { path: path()? },
        "show" => Step::Show { path: path()? },
        "link" => Step::Link {
            path: path()?,
            to: text("to")?,
        },
        _ => Step::Run {
            args: run_args(&object["run"])?,
            quiet: match object.get("quiet") {
                None => false,
                Some(Value::Bool(quiet)) => *quiet,
                Some(_) => return Err("run: \"quiet\" is true or false".into()),
            },
        },
    }))
}

/// A project-relative path that stays in the project.
fn relative(path: String) -> Result<String, String> {
    let inside = Path::new(&path)
        .components()
        .all(|c| matches!(c, std::path::Component::Normal(_)));
    match inside && !path.is_empty() {
        true => Ok(path),
        false => Err(format!("{path:?} is not a path inside the project")),
    }
}

fn run_args(v: &Value) -> Result<Vec<String>, String> {
    let args: Option<Vec<String>> = v
        .as_array()
        .map(|a| a.iter().map(|s| s.as_str().map(str::to_string)).collect())
        .unwrap_or(None);
    match args {
        Some(args) if !args.is_empty() => Ok(args),
        _ => Err("run: a non-empty array of strings".into()),
    }
}

/// Does step `n` to the project at `project` (the administrator's layer `admin`): its lines
/// in `expected.txt`.
pub fn run_step(n: usize, step: &Step, project: &Path, admin: &Path, masks: Masks) -> String {
    let at = |path: &str| project.join(path);
    match step {
        Step::Write { path, text } => {
            let file = at(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, text).unwrap();
            format!("{n} write {path}")
        }
        Step::Remove { path } => {
            let file = at(path);
            match file.is_dir() && !file.is_symlink() {
                true => std::fs::remove_dir_all(&file),
                false => std::fs::remove_file(&file),
            }
            .unwrap_or_else(|e| panic!("remove {path}: {e}"));
            format!("{n} remove {path}")
        }
        Step::Link { path, to } => {
            let file = at(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(to, &file).unwrap();
            format!("{n} link {path} -> {}", mask(to, masks))
        }
        Step::Show { path } => {
            let mut text = format!("{n} show {path}");
            match std::fs::read(at(path)) {
                Ok(bytes) => text += &shown_lines("|", &bytes, masks),
                Err(_) => text.push_str("\n  (missing)"),
            }
            text
        }
        Step::Run { args, quiet } => {
            let (line, output) = run_command(n, args, project, admin, masks);
            match quiet {
                true => line,
                false => line + &output,
            }
        }
    }
}

/// `N run ARGS => EXIT`, and the lines the command printed.
fn run_command(
    n: usize,
    args: &[String],
    project: &Path,
    admin: &Path,
    masks: Masks,
) -> (String, String) {
    let out = Command::new(BIN)
        .args(args)
        .current_dir(project)
        .env_remove("CLAUDE_PROJECT_DIR")
        .env(
            "CLAUDE_CONFIG_DIR",
            "/nonexistent/attenu-test-claude-config",
        )
        .env("ATTENU_ADMIN_CONFIG", admin)
        .env("COLUMNS", "100")
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    let code = out
        .status
        .code()
        .map_or("killed".to_string(), |c| c.to_string());
    let line = mask(&format!("{n} run {} => {code}", args.join(" ")), masks);
    let output = shown_lines(">", &out.stdout, masks) + &shown_lines("!", &out.stderr, masks);
    (line, output)
}

/// Each line of `bytes` on a line of its own after `  MARK `, masked; then `  (no newline at
/// end)` when the text does not end with one, so that the view shows the bytes exactly.
fn shown_lines(mark: &str, bytes: &[u8], masks: Masks) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::new();
    for line in text.lines() {
        out.push_str(format!("\n  {mark} {}", mask(line, masks)).trim_end());
    }
    if !text.is_empty() && !text.ends_with('\n') {
        out += "\n  (no newline at end)";
    }
    out
}
