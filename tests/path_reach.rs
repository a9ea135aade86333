//! Self-protection holds by the file a path reaches, not by how it is spelled: another letter
//! case (on a case-insensitive file system too), a symbolic link anywhere on the path, another
//! name of the project's directory (`/proc/self/cwd`, `/proc/<pid>/root/…`), and the wiring
//! outside `.claude/`. Each spelling is one real hook process on real files. (The gate on
//! every command-running tool and the shell tripwire are in tests/self_protection.rs.)

mod common;
use common::harness;
use common::*;
use serde_json::{json, Value};
use std::ffi::OsStr;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

const TOOLS: &str = "Read, Write, Edit, NotebookEdit, Grep, Glob, Bash, Monitor, PowerShell";

fn ops_project(tag: &str) -> TempDir {
    let p = ProjectBuilder::new(tag)
        .agent("ops", &format!("tools: {TOOLS}"))
        .build();
    std::fs::create_dir_all(p.path().join("src")).unwrap();
    std::fs::write(p.path().join("src/lib.rs"), "").unwrap();
    // The first call makes the state directory and its key.
    assert_allowed(&p.read_by("ops", "src/lib.rs").run());
    assert!(p.path().join(".attenu/anchor.key").is_file());
    p
}

fn refused(out: &Out) -> bool {
    out.denied() && out.reason().contains("[self-protection]")
}

/// Each of `calls` by `ops` in the project at `p` is refused `[self-protection]`.
#[track_caller]
fn assert_all_refused<P: ProjectExt + ?Sized>(
    p: &P,
    calls: impl IntoIterator<Item = (&'static str, Value)>,
) {
    for (tool, input) in calls {
        let out = p.subagent("ops", tool).input(input.clone()).run();
        assert!(refused(&out), "{tool} {input}: {}", out.stdout);
    }
}

/// [`file_calls`] but Read: the calls of the tools that write.
fn writing_calls(spelled: &str) -> Vec<(&'static str, Value)> {
    file_calls(spelled).into_iter().skip(1).collect()
}

/// Every file tool's call on `spelled` (a path to a file), by `ops`.
fn file_calls(spelled: &str) -> Vec<(&'static str, Value)> {
    vec![
        ("Read", json!({ "file_path": spelled })),
        ("Write", json!({ "file_path": spelled, "content": "x" })),
        (
            "Edit",
            json!({ "file_path": spelled, "old_string": "a", "new_string": "b" }),
        ),
        (
            "NotebookEdit",
            json!({ "notebook_path": spelled, "new_source": "x" }),
        ),
        (
            "NotebookEdit",
            json!({ "file_path": spelled, "new_source": "x" }),
        ),
    ]
}

/// A process whose working directory is `dir`, so `/proc/<pid>/cwd` names it.
struct Holder(Child);
impl Holder {
    fn in_dir(dir: &Path) -> Holder {
        let child = Command::new("sleep")
            .arg("60")
            .current_dir(dir)
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        Holder(child)
    }
    fn pid(&self) -> u32 {
        self.0.id()
    }
}
impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A project with links into its state (`docs/state`, `docs/key`, a dangling `docs/dangling`),
/// a link to the project from elsewhere, and a process whose directory is the project.
struct StateNames {
    p: TempDir,
    /// The project, and the directory holding the link to it, as text.
    r: String,
    e: String,
    pid: u32,
    _elsewhere: TempDir,
    _holder: Holder,
}

impl StateNames {
    fn new() -> StateNames {
        let p = ops_project("reach-state");
        let root = p.path();
        std::fs::create_dir_all(root.join("docs")).unwrap();
        std::fs::write(root.join("docs/readme.md"), "hi").unwrap();
        symlink(root.join(".attenu"), root.join("docs/state")).unwrap();
        symlink(root.join(".attenu/anchor.key"), root.join("docs/key")).unwrap();
        symlink("../.attenu/planted.toml", root.join("docs/dangling")).unwrap();
        let elsewhere = TempDir::new("reach-state-link");
        symlink(root, elsewhere.path().join("project")).unwrap();
        let holder = Holder::in_dir(root);
        StateNames {
            r: root.display().to_string(),
            e: elsewhere.path().display().to_string(),
            pid: holder.pid(),
            p,
            _elsewhere: elsewhere,
            _holder: holder,
        }
    }

    /// Spellings of files in the state directory.
    fn files(&self) -> Vec<String> {
        let (r, e, pid) = (&self.r, &self.e, self.pid);
        let mut v: Vec<String> = [
            ".attenu/anchor.key",
            "./.attenu//anchor.key",
            "docs/state/new/../anchor.key",
            "/proc/self/cwd/.attenu/anchor.key",
            "/proc/thread-self/cwd/.ATTENU/anchor.key",
            "/proc/self/task/1/cwd/.attenu/anchor.key",
            "/proc/self/fd/3",
            "/dev/fd/0",
            "/dev/stdin",
        ]
        .map(String::from)
        .into();
        v.extend([
            format!("{r}/.attenu/anchor.key"),
            format!("{r}/.ATTENU/anchor.key"),
            format!("{r}/.Attenu/Anchor.KEY"),
            format!("{r}/.attenu/ſomething"),
            format!("{r}//.attenu/./anchor.key"),
            format!("{r}/src/../.attenu/anchor.key"),
            format!("{r}/docs/state/anchor.key"),
            format!("{r}/docs/key"),
            format!("{r}/docs/dangling"),
            format!("{e}/project/.attenu/anchor.key"),
            format!("{e}/project/docs/state/anchor.key"),
            format!("/proc/self/root{r}/.attenu/anchor.key"),
            format!("/proc/{pid}/cwd/.attenu/anchor.key"),
            format!("/proc/{pid}/cwd/docs/state/config.toml"),
            format!("/proc/{pid}/root/proc/self/cwd/.attenu/anchor.key"),
        ]);
        v
    }

    /// Searches from a name of the state directory, or whose filter leads into it.
    fn searches(&self) -> Vec<(&'static str, Value)> {
        let (r, e, pid) = (&self.r, &self.e, self.pid);
        let mut v = Vec::new();
        for dir in [
            format!("{r}/.ATTENU"),
            format!("{r}/docs/state"),
            "/proc/self/cwd/.attenu".into(),
            format!("/proc/{pid}/cwd/docs/state"),
            format!("{e}/project/.attenu"),
        ] {
            v.push(("Grep", json!({"pattern": "k", "path": dir})));
            v.push(("Glob", json!({"pattern": "*", "path": dir})));
        }
        for glob in ["docs/state/*", "docs/*/anchor.key", "*.KEY", ".ATTEN?/*"] {
            v.push(("Grep", json!({"pattern": "k", "glob": glob})));
        }
        for (path, glob) in [
            ("/proc/self/cwd".to_string(), "*.key"),
            ("/proc/self/cwd".to_string(), ".attenu/*"),
            (format!("/proc/{pid}/cwd"), "**/*"),
            (format!("{e}/project"), "**/*"),
        ] {
            v.push(("Grep", json!({"pattern": "k", "path": path, "glob": glob})));
        }
        for pattern in [
            format!("{r}/docs/state/*"),
            format!("{e}/project/docs/state/*"),
        ] {
            v.push(("Glob", json!({ "pattern": pattern })));
        }
        v
    }

    /// Calls on what is not the state, in the same spellings: allowed.
    fn others(&self) -> Vec<(&'static str, Value)> {
        let (r, e, pid) = (&self.r, &self.e, self.pid);
        vec![
            ("Read", json!({"file_path": format!("{r}/docs/readme.md")})),
            (
                "Read",
                json!({"file_path": "/proc/self/cwd/docs/readme.md"}),
            ),
            (
                "Read",
                json!({"file_path": format!("{r}/.claude/agents/ops.md")}),
            ),
            (
                "Write",
                json!({"file_path": format!("/proc/{pid}/cwd/src/new.rs")}),
            ),
            (
                "Write",
                json!({"file_path": format!("{r}/src/attenu_notes.md")}),
            ),
            (
                "Grep",
                json!({"pattern": "k", "path": "/proc/self/cwd/src", "glob": "**/*.rs"}),
            ),
            (
                "Glob",
                json!({"pattern": "**/*.rs", "path": format!("{e}/project/src")}),
            ),
        ]
    }
}

fn every_spelling_of_the_state_is_refused_to_every_file_tool() {
    let s = StateNames::new();
    let files = s.files();
    assert_all_refused(
        s.p.path(),
        files.iter().flat_map(|f| file_calls(f)).chain(s.searches()),
    );
    for (tool, input) in s.others() {
        let out = s.p.subagent("ops", tool).input(input.clone()).run();
        assert!(out.is_allow(), "{tool} {input}: {}", out.stdout);
    }
    // A search with no `path` is from the session's directory, which may be the state.
    let grep = s.p.subagent("ops", "Grep").input(json!({"pattern": "k"}));
    let out = grep.with("cwd", json!(format!("{}/.attenu", s.r))).run();
    assert!(
        refused(&out),
        "Grep from a cwd in the state: {}",
        out.stdout
    );
    assert!(!s.p.path().join(".attenu/planted.toml").exists());
}

fn every_spelling_of_the_wiring_is_refused_to_the_writing_tools() {
    let p = ops_project("reach-wiring");
    let r = p.dir();
    std::fs::create_dir_all(p.path().join(".claude/hooks")).unwrap();
    symlink(p.path().join(".claude"), p.path().join("cfg")).unwrap();
    let holder = Holder::in_dir(p.path());
    let pid = holder.pid();
    let wiring = [
        format!("{r}/.claude/settings.json"),
        format!("{r}/.CLAUDE/Settings.JSON"),
        format!("{r}/.claude//settings.local.json"),
        format!("{r}/.claude/./hooks/attenu-hook"),
        format!("{r}/.claude/HOOKS/pre.sh"),
        format!("{r}/.claude/Agents/ops.md"),
        format!("{r}/.claude/agentſ/new.md"),
        format!("{r}/cfg/settings.json"),
        format!("{r}/cfg/agents/ops.md"),
        "/proc/self/cwd/.claude/settings.json".into(),
        format!("/proc/{pid}/cwd/cfg/agents/ops.md"),
        format!("/proc/self/root{r}/.claude/hooks/attenu-hook"),
    ];
    for spelled in &wiring {
        assert_all_refused(p.path(), writing_calls(spelled));
        // Reading the wiring is harmless.
        let out = p.read_by("ops", spelled).run();
        assert!(!refused(&out), "Read {spelled}: {}", out.stdout);
    }
}

/// A project whose `.claude/agents` links to a shared folder (declaring ops), which holds
/// `team/dev.md` linking to a declaration in a third folder beside a `notes.md`: the project,
/// the shared folder and the third one.
fn linked_declarations() -> (TempDir, TempDir, TempDir) {
    let shared = TempDir::new("reach-shared-agents");
    let ops = format!("---\nname: ops\ntools: {TOOLS}\n---\n");
    std::fs::write(shared.path().join("ops.md"), ops).unwrap();
    let p = ProjectBuilder::new("reach-agents-link").build();
    let agents = p.path().join(".claude/agents");
    let _ = std::fs::remove_dir_all(&agents);
    symlink(shared.path(), &agents).unwrap();
    let single = TempDir::new("reach-agent-file");
    std::fs::write(
        single.path().join("dev.md"),
        "---\nname: dev\ntools: Read\n---\n",
    )
    .unwrap();
    std::fs::write(single.path().join("notes.md"), "").unwrap();
    std::fs::create_dir_all(shared.path().join("team")).unwrap();
    symlink(
        single.path().join("dev.md"),
        shared.path().join("team/dev.md"),
    )
    .unwrap();
    (p, shared, single)
}

/// An agent rewriting its own declaration through the folder `.claude/agents` links to, or
/// through the file a declaration links to: derivation follows both.
fn declarations_reached_through_links_are_refused() {
    let (p, shared, single) = linked_declarations();
    assert_allowed(&p.read_by("ops", "README.md").run());
    let (s, one) = (shared.dir(), single.dir());
    for spelled in [
        format!("{s}/ops.md"),
        format!("{s}/OPS.md"),
        format!("{s}/new.md"),
        format!("{s}/team/dev.md"),
        format!("{one}/dev.md"),
        format!("{one}/DEV.MD"),
    ] {
        assert_all_refused(p.path(), writing_calls(&spelled));
    }
    let notes = json!({"file_path": format!("{one}/notes.md")});
    let out = p.subagent("ops", "Write").input(notes).run();
    assert!(
        out.is_allow(),
        "a file beside a linked declaration: {}",
        out.stdout
    );
}

/// The files `doctor` reads as wiring, outside `.claude/`: the user's settings and plugins
/// (`CLAUDE_CONFIG_DIR`), a plugin installed anywhere, the program a settings handler runs,
/// the target of `.claude/hooks/attenu-hook`, `attenu-hook` on PATH, this binary and its
/// shipper, the plugin the hook runs from, managed settings.
fn the_wiring_outside_claude_is_refused_to_the_writing_tools() {
    let p = ops_project("reach-wider");
    let w = WiderWiring::new(p.path());
    let env: [(&str, &OsStr); 3] = [
        ("CLAUDE_CONFIG_DIR", w.cfg.as_os_str()),
        ("CLAUDE_PLUGIN_ROOT", w.plugin_root.as_os_str()),
        ("PATH", OsStr::new(&w.path)),
    ];
    let write = |f: &Path| {
        let call = p
            .subagent("ops", "Write")
            .input(json!({"file_path": f, "content": "x"}));
        hook_env(p.path(), call.payload(), &env)
    };
    for f in &w.guarded() {
        let out = write(f);
        assert!(refused(&out), "Write {}: {}", f.display(), out.stdout);
    }
    for f in [
        w.cfg.join("todos/x.json"),
        w.tools.join("other.sh"),
        w.hidden.join("notes"),
    ] {
        let out = write(&f);
        assert!(out.is_allow(), "Write {}: {}", f.display(), out.stdout);
    }
}

/// A user config directory with a plugin registry, a plugin installed outside it and turned
/// on by the project, a wrapper script wired as a settings handler, `.claude/hooks/attenu-hook`
/// linking to a binary elsewhere, an `attenu-hook` on PATH, and a plugin root.
struct WiderWiring {
    _t: TempDir,
    cfg: PathBuf,
    tools: PathBuf,
    bin: PathBuf,
    hidden: PathBuf,
    install: PathBuf,
    plugin_root: PathBuf,
    /// `PATH` with `bin` first.
    path: String,
}

impl WiderWiring {
    fn new(root: &Path) -> WiderWiring {
        let t = TempDir::new("reach-wider-env");
        let dir = |d: &str| {
            let d = t.path().join(d);
            std::fs::create_dir_all(&d).unwrap();
            d
        };
        let (cfg, tools, bin) = (dir("cfg"), dir("tools"), dir("bin"));
        let (hidden, install, plugin_root) = (dir("hidden"), dir("install"), dir("plugin-root"));
        let exe = |f: &Path| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::write(f, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o755)).unwrap();
        };
        exe(&tools.join("wrap.sh"));
        exe(&bin.join("attenu-hook"));
        exe(&hidden.join("real-hook"));
        std::fs::create_dir_all(root.join(".claude/hooks")).unwrap();
        symlink(
            hidden.join("real-hook"),
            root.join(".claude/hooks/attenu-hook"),
        )
        .unwrap();
        let handler = json!([{"hooks": [{"type": "command", "command": tools.join("wrap.sh")}]}]);
        let settings = json!({"hooks": {"PreToolUse": handler}});
        std::fs::write(root.join(".claude/settings.json"), settings.to_string()).unwrap();
        let local = json!({"enabledPlugins": {"attenu-hook@team": true}});
        std::fs::write(root.join(".claude/settings.local.json"), local.to_string()).unwrap();
        std::fs::create_dir_all(cfg.join("plugins")).unwrap();
        let registry = json!({"version": 2, "plugins": {"attenu-hook@team": [
            {"scope": "user", "installPath": install, "version": "0.1.0"}
        ]}});
        let registry_file = cfg.join("plugins/installed_plugins.json");
        std::fs::write(registry_file, registry.to_string()).unwrap();
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        WiderWiring {
            _t: t,
            cfg,
            tools,
            bin,
            hidden,
            install,
            plugin_root,
            path,
        }
    }

    /// Every file of that wiring, in a few spellings.
    fn guarded(&self) -> Vec<PathBuf> {
        let this = std::fs::canonicalize(BIN).unwrap();
        vec![
            self.cfg.join("settings.json"),
            self.cfg.join("SETTINGS.JSON"),
            self.cfg.join("plugins/installed_plugins.json"),
            self.cfg
                .join("plugins/cache/team/attenu-hook/0.1.0/hooks/hooks.json"),
            self.cfg.join("agents/helper.md"),
            self.install.join("hooks/hooks.json"),
            self.install.join(".claude-plugin/plugin.json"),
            self.plugin_root.join("hooks/hooks.json"),
            self.tools.join("wrap.sh"),
            self.tools.join("WRAP.sh"),
            self.hidden.join("real-hook"),
            self.bin.join("attenu-hook"),
            this.with_file_name("attenu-hook-ship"),
            this,
            PathBuf::from("/etc/claude-code/managed-settings.json"),
            PathBuf::from("/ETC/Claude-Code/managed-settings.d/10.json"),
        ]
    }
}

/// A case-insensitive file system mounted for one test (FUSE, tests/support/ci_fuse.py),
/// unmounted on drop.
struct CaseInsensitiveMount {
    at: PathBuf,
    server: Child,
}
impl CaseInsensitiveMount {
    fn new(backing: &Path, at: &Path) -> CaseInsensitiveMount {
        harness::need_root();
        if !Path::new("/dev/fuse").exists() {
            skip("needs /dev/fuse for a case-insensitive FUSE mount");
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/ci_fuse.py");
        let probe = Command::new("/usr/bin/python3")
            .args(["-c", "import fusepy"])
            .status();
        if !probe.is_ok_and(|s| s.success()) {
            skip("needs python3-fusepy (apt-get install python3-fusepy; .ci/run does)");
        }
        std::fs::create_dir_all(at).unwrap();
        let server = Command::new("/usr/bin/python3")
            .arg(script)
            .arg(backing)
            .arg(at)
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let mut m = CaseInsensitiveMount {
            at: at.to_path_buf(),
            server,
        };
        for _ in 0..100 {
            let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
            if mounts.contains(&format!(" {} fuse", at.display())) {
                return m;
            }
            if let Ok(Some(status)) = m.server.try_wait() {
                skip(format!("the FUSE mount could not be made here ({status})"));
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        skip("the FUSE mount did not come up within 5 s");
    }
}
impl Drop for CaseInsensitiveMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.at).status();
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

/// The project `proj` on `mount`: ops holding every tool, a README, one allowed call (which
/// makes the state), and the links `state` to `.attenu` and `cfg` to `.claude`.
fn project_on(mount: &CaseInsensitiveMount) -> PathBuf {
    let root = mount.at.join("proj");
    std::fs::create_dir_all(root.join(".claude/agents")).unwrap();
    let ops = format!("---\nname: ops\ntools: {TOOLS}\n---\n");
    std::fs::write(root.join(".claude/agents/ops.md"), ops).unwrap();
    std::fs::write(root.join("README.md"), "hi").unwrap();
    assert_allowed(&root.read_by("ops", "README.md").run());
    symlink(root.join(".attenu"), root.join("state")).unwrap();
    symlink(root.join(".claude"), root.join("cfg")).unwrap();
    root
}

/// On a case-insensitive file system another letter case reaches the same files: each is
/// refused, and the mount is checked to really compare that way.
fn on_a_case_insensitive_file_system_another_case_is_refused() {
    let base = TempDir::new("reach-ci");
    let backing = base.path().join("backing");
    std::fs::create_dir_all(&backing).unwrap();
    let mount = CaseInsensitiveMount::new(&backing, &base.path().join("mnt"));
    let root = project_on(&mount);
    let ignoring_case = root.join(".ATTENU/ANCHOR.KEY").is_file();
    assert!(ignoring_case, "the mount compares names ignoring case");
    let read = |f: &str| std::fs::read(root.join(f)).unwrap();
    assert_eq!(read(".Claude/Agents/OPS.md"), read(".claude/agents/ops.md"));
    let r = root.display().to_string();
    let state = [
        ".ATTENU/ANCHOR.KEY",
        ".Attenu/config.toml",
        ".aTTenu/ledger-s1.jsonl",
        "STATE/anchor.key",
        "State/new.toml",
    ];
    let wiring = [
        ".CLAUDE/SETTINGS.JSON",
        ".Claude/Agents/OPS.md",
        ".claude/HOOKS/attenu-hook",
        "CFG/settings.json",
        "Cfg/agents/ops.md",
    ];
    assert_all_refused(
        &root,
        state.iter().flat_map(|f| file_calls(&format!("{r}/{f}"))),
    );
    assert_all_refused(
        &root,
        wiring
            .iter()
            .flat_map(|f| writing_calls(&format!("{r}/{f}"))),
    );
    assert_all_refused(
        &root,
        [(
            "Grep",
            json!({"pattern": "k", "path": format!("{r}/.ATTENU")}),
        )],
    );
    assert_allowed(&root.read_by("ops", &format!("{r}/readme.MD")).run());
    drop(mount);
}

fn main() {
    harness::run(tests![
        every_spelling_of_the_state_is_refused_to_every_file_tool,
        every_spelling_of_the_wiring_is_refused_to_the_writing_tools,
        declarations_reached_through_links_are_refused,
        the_wiring_outside_claude_is_refused_to_the_writing_tools,
        on_a_case_insensitive_file_system_another_case_is_refused,
    ]);
}
