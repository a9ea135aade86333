//! Temporary projects and their builders, the calls a test makes of them, and the state
//! files read back.
use super::*;

/// Puts the executable `from` at `to` without this process ever holding `to` open for writing.
/// A thread that forks while another writes the copy hands the writer to its child until that
/// child execs, and running the copy meanwhile fails with "Text file busy". A hard link writes
/// nothing; across filesystems `cp` writes the copy in a process of its own.
pub fn place_executable(from: &Path, to: &Path) {
    if std::fs::hard_link(from, to).is_ok() {
        return;
    }
    let status = Command::new("cp")
        .arg(from)
        .arg(to)
        .status()
        .expect("run cp");
    assert!(
        status.success(),
        "cp {} {} failed",
        from.display(),
        to.display()
    );
}

/// A temporary directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "attenu-test-{tag}-{}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A project with the given agent files (name → file text) and optional settings.json.
pub fn project(tag: &str, agents: &[(&str, &str)], settings: Option<Value>) -> TempDir {
    let t = TempDir::new(tag);
    let dir = t.path().join(".claude/agents");
    std::fs::create_dir_all(&dir).unwrap();
    for (file, text) in agents {
        let p = dir.join(file);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    if let Some(s) = settings {
        std::fs::write(
            t.path().join(".claude/settings.json"),
            serde_json::to_string_pretty(&s).unwrap(),
        )
        .unwrap();
    }
    t
}

/// The seed's sample project (reviewer and researcher).
pub fn sample(tag: &str) -> TempDir {
    project(
        tag,
        &[
            ("reviewer.md", "---\nname: reviewer\ndescription: reviews\ntools: Read, Grep, Glob\n---\nbody\n"),
            ("researcher.md", "---\nname: researcher\ndescription: researches\ntools: Read, WebFetch\ndisallowedTools: Write, Edit\n---\nbody\n"),
        ],
        Some(json!({"permissions": {"allow": ["Read", "Grep", "Glob", "Bash(npm run lint)"], "deny": ["Read(./.env)", "NotebookEdit"]}})),
    )
}

/// Building a project step by step: `ProjectBuilder::new("tag").agent("ops", "tools: Bash")
/// .settings(json!(..)).config("mode = \"shadow\"\n").build()`.
pub struct ProjectBuilder {
    tag: String,
    agents: Vec<(String, String)>,
    settings: Option<Value>,
    config: Option<String>,
}

impl ProjectBuilder {
    pub fn new(tag: &str) -> ProjectBuilder {
        ProjectBuilder {
            tag: tag.to_string(),
            agents: Vec::new(),
            settings: None,
            config: None,
        }
    }
    /// An agent `name` (in `.claude/agents/<name>.md`) whose frontmatter holds `name` and the
    /// given lines (`"tools: Read, Grep"`, `"disallowedTools: Write"`, ...).
    pub fn agent(self, name: &str, frontmatter: &str) -> ProjectBuilder {
        let text = format!("---\nname: {name}\n{frontmatter}\n---\n");
        self.agent_file(&format!("{name}.md"), &text)
    }
    /// An agent file with exactly this text, at `.claude/agents/<file>`.
    pub fn agent_file(mut self, file: &str, text: &str) -> ProjectBuilder {
        self.agents.push((file.to_string(), text.to_string()));
        self
    }
    /// `.claude/settings.json`.
    pub fn settings(mut self, settings: Value) -> ProjectBuilder {
        self.settings = Some(settings);
        self
    }
    /// `.attenu/config.toml`.
    pub fn config(mut self, toml: &str) -> ProjectBuilder {
        self.config = Some(toml.to_string());
        self
    }
    pub fn build(self) -> TempDir {
        let agents: Vec<(&str, &str)> = self
            .agents
            .iter()
            .map(|(f, t)| (f.as_str(), t.as_str()))
            .collect();
        let p = project(&self.tag, &agents, self.settings);
        if let Some(toml) = self.config {
            write_config(p.path(), toml);
        }
        p
    }
}

/// One hook event for a project, built up and then run as one hook process: by default
/// session `s1`, tool_use_id `t`, an empty `tool_input`.
#[derive(Clone)]
pub struct Call {
    project: PathBuf,
    payload: Value,
}

impl Call {
    /// A PreToolUse of `tool` by `agent` (None: the main thread).
    pub fn pre(project: &Path, agent: Option<&str>, tool: &str) -> Call {
        Call {
            project: project.to_path_buf(),
            payload: pre("s1", project, agent, tool, json!({}), "t"),
        }
    }
    pub fn input(mut self, input: Value) -> Call {
        self.payload["tool_input"] = input;
        self
    }
    pub fn id(mut self, tool_use_id: &str) -> Call {
        self.payload["tool_use_id"] = json!(tool_use_id);
        self
    }
    pub fn session(mut self, session: &str) -> Call {
        self.payload["session_id"] = json!(session);
        self.payload["transcript_path"] =
            json!(format!("/home/u/.claude/projects/p/{session}.jsonl"));
        self
    }
    /// Any other field of the payload.
    pub fn with(mut self, key: &str, value: Value) -> Call {
        self.payload[key] = value;
        self
    }
    /// The same call's PostToolUse, with this `tool_response`.
    pub fn post(self, response: Value) -> Call {
        self.with("hook_event_name", json!("PostToolUse"))
            .with("tool_response", response)
    }
    /// The same call's PostToolUseFailure, with this `error`.
    pub fn failure(self, error: &str) -> Call {
        self.with("hook_event_name", json!("PostToolUseFailure"))
            .with("error", json!(error))
    }
    pub fn payload(&self) -> &Value {
        &self.payload
    }
    pub fn value(self) -> Value {
        self.payload
    }
    pub fn run(&self) -> Out {
        hook(&self.project, &self.payload)
    }
}

/// What a test does with its project: calls, its ledger, the operator commands.
pub trait ProjectExt {
    fn root(&self) -> &Path;
    /// A PreToolUse by the subagent of type `agent` (agent_id `a-<agent>`).
    fn subagent(&self, agent: &str, tool: &str) -> Call {
        Call::pre(self.root(), Some(agent), tool)
    }
    /// `agent`'s Read of `file_path`.
    fn read_by(&self, agent: &str, file_path: &str) -> Call {
        self.subagent(agent, "Read")
            .input(json!({ "file_path": file_path }))
    }
    /// `agent`'s Bash running `command`.
    fn bash_by(&self, agent: &str, command: &str) -> Call {
        self.subagent(agent, "Bash")
            .input(json!({ "command": command }))
    }
    /// A PreToolUse by the main thread.
    fn main_thread(&self, tool: &str) -> Call {
        Call::pre(self.root(), None, tool)
    }
    /// A session-level event (`SessionEnd`, `SubagentStop`, ...) of session `session`.
    fn event(&self, session: &str, name: &str) -> Out {
        hook(self.root(), &event(session, self.root(), name))
    }
    /// A SessionStart as Claude Code 2.1.332 sends it, `source` being startup, resume, ...
    fn session_start(&self, session: &str, source: &str) -> Out {
        hook(self.root(), &session_start(session, self.root(), source))
    }
    fn config(&self, toml: &str) {
        write_config(self.root(), toml)
    }
    fn ledger(&self, session: &str) -> PathBuf {
        ledger_path(self.root(), session)
    }
    fn entries(&self, session: &str) -> Vec<Value> {
        entries(self.root(), session)
    }
    fn dir(&self) -> &str {
        self.root().to_str().unwrap()
    }
    /// `export --project P --session S`, which must succeed: the bundles' paths.
    fn export(&self, session: &str) -> Vec<String> {
        let out = cli(&["export", "--project", self.dir(), "--session", session]);
        assert_eq!(out.code, 0, "export: {}{}", out.stdout, out.stderr);
        out.stdout.lines().map(str::to_string).collect()
    }
    /// `verify BUNDLE --pub <the project's anchor.pub>`.
    fn verify_pinned(&self, bundle: &str) -> Out {
        let key = self.root().join(".attenu/anchor.pub");
        cli(&["verify", bundle, "--pub", key.to_str().unwrap()])
    }
    /// [`verify_pinned`](ProjectExt::verify_pinned) with `--json`.
    fn verify_pinned_json(&self, bundle: &str) -> Out {
        let key = self.root().join(".attenu/anchor.pub");
        cli(&["verify", bundle, "--pub", key.to_str().unwrap(), "--json"])
    }
}

impl ProjectExt for TempDir {
    fn root(&self) -> &Path {
        self.path()
    }
}

impl ProjectExt for Path {
    fn root(&self) -> &Path {
        self
    }
}

impl ProjectExt for PathBuf {
    fn root(&self) -> &Path {
        self
    }
}

/// Writes the project's `.attenu/config.toml` (creating `.attenu/` if need be).
pub fn write_config(project: &Path, toml: impl AsRef<[u8]>) {
    std::fs::create_dir_all(project.join(".attenu")).unwrap();
    std::fs::write(project.join(".attenu/config.toml"), toml).unwrap();
}

pub fn ledger_path(project: &Path, session: &str) -> PathBuf {
    project
        .join(".attenu")
        .join(format!("ledger-{session}.jsonl"))
}

/// The ledger entries of a session.
pub fn entries(project: &Path, session: &str) -> Vec<Value> {
    std::fs::read_to_string(ledger_path(project, session))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
