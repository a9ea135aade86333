//! One `claude -p` session of `live_claude.rs`, in a fresh copy of the project.
use super::*;

// =============================================================================================
// one claude session
// =============================================================================================

pub struct Session {
    pub dir: PathBuf,
    pub project: PathBuf,
    pub output: Value,
    pub session_id: String,
    /// tool_use_id -> (is_error, text) of every tool_result the model was sent
    pub results: BTreeMap<String, (bool, String)>,
    pub wired_events: BTreeSet<String>,
    pub elapsed: Duration,
}

impl Session {
    pub fn run(
        claude: &Path,
        python: &str,
        dir: &Path,
        snippet: &Value,
        with_hook: bool,
    ) -> Session {
        let project = dir.join("project");
        let home = dir.join("home");
        let cctmp = dir.join("tmp");
        for d in [
            &home,
            &cctmp,
            &project.join(".claude/agents"),
            &project.join("trace"),
        ] {
            fs::create_dir_all(d).unwrap();
        }
        fs::set_permissions(&cctmp, fs::Permissions::from_mode(0o700)).unwrap();
        fs::write(
            project.join("README.md"),
            "# scratch project for the live test\n",
        )
        .unwrap();
        fs::write(project.join(".claude/agents/reviewer.md"), REVIEWER_MD).unwrap();
        fs::write(project.join(".claude/agents/worker.md"), WORKER_MD).unwrap();
        fs::write(project.join(".claude/agents/builder.md"), BUILDER_MD).unwrap();

        let mut settings = snippet.clone();
        let mut wired_events = BTreeSet::new();
        if with_hook {
            let hooks = settings
                .get("hooks")
                .and_then(Value::as_object)
                .expect("settings snippet has no `hooks` object");
            assert!(
                hooks.contains_key("PreToolUse"),
                "settings snippet does not wire PreToolUse"
            );
            for (event, groups) in hooks {
                wired_events.insert(event.clone());
                for group in groups.as_array().into_iter().flatten() {
                    for handler in group
                        .get("hooks")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        let command = handler
                            .get("command")
                            .and_then(Value::as_str)
                            .expect("hook handler without a command");
                        install_hook(command, &project);
                    }
                }
            }
        } else if let Some(obj) = settings.as_object_mut() {
            obj.remove("hooks");
        }
        fs::write(
            project.join(".claude/settings.json"),
            serde_json::to_vec_pretty(&settings).unwrap(),
        )
        .unwrap();

        let mock_log = dir.join("mock.log");
        let (mock, port) = start_mock(python, dir, &project, &mock_log);

        let out_path = dir.join("claude.stdout");
        let err_path = dir.join("claude.stderr");
        let mut cmd = Command::new(claude);
        cmd.arg("-p")
            .arg(PROMPT)
            .args(["--output-format", "json", "--allowedTools"])
            .args(ALLOWED_TOOLS);
        claude_env(&mut cmd, &home, &cctmp)
            .env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}"))
            .current_dir(&project);
        let started = Instant::now();
        let status = run_to_files(&mut cmd, CLAUDE_DEADLINE, &out_path, &err_path);
        let elapsed = started.elapsed();
        drop(mock);

        let label = if with_hook { "hooked" } else { "control" };
        let stdout = fs::read_to_string(&out_path).unwrap_or_default();
        let stderr = fs::read_to_string(&err_path).unwrap_or_default();
        let status = status.unwrap_or_else(|| panic!("{label} run: claude -p did not finish within {CLAUDE_DEADLINE:?} (killed)\nstderr: {}\nmock log: {}", tail(&stderr), mock_log.display()));
        assert!(
            status.success(),
            "{label} run: claude -p exited {status}\nstdout: {}\nstderr: {}\nmock log: {}",
            tail(&stdout),
            tail(&stderr),
            mock_log.display()
        );
        let output: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
            panic!(
                "{label} run: claude -p printed no JSON result ({e}): {}",
                tail(&stdout)
            )
        });
        let session_id = output
            .get("session_id")
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("{label} run: no session_id in {output}"))
            .to_string();

        let mut results = BTreeMap::new();
        for line in fs::read_to_string(&mock_log).unwrap_or_default().lines() {
            let Ok(rec) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            for r in rec
                .get("results")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(id) = r.get("tool_use_id").and_then(Value::as_str) {
                    let is_error = r.get("is_error").and_then(Value::as_bool).unwrap_or(false);
                    let text = r
                        .get("text")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string();
                    results.insert(id.to_string(), (is_error, text));
                }
            }
        }
        Session {
            dir: dir.to_path_buf(),
            project,
            output,
            session_id,
            results,
            wired_events,
            elapsed,
        }
    }

    pub fn ran(&self, name: &str) -> bool {
        self.project
            .join("trace")
            .join(format!("trace-{name}"))
            .exists()
    }

    pub fn result(&self, id: &str) -> (bool, String) {
        self.results
            .get(id)
            .cloned()
            .unwrap_or_else(|| panic!("the model was never sent a result for {id}\n{}", self.ctx()))
    }

    pub fn ctx(&self) -> String {
        let traces: Vec<String> = fs::read_dir(self.project.join("trace"))
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        format!(
            "  traces: {traces:?}\n  claude stderr: {}\n  mock log: {}\n  ledger: {}",
            self.dir.join("claude.stderr").display(),
            self.dir.join("mock.log").display(),
            self.ledger_path().display()
        )
    }

    /// The script ran to its end: all five subagents spawned and completed, the main thread's
    /// last (failing) call was made after them, and the session was not an error.
    pub fn assert_completed(&self) {
        let o = &self.output;
        assert_eq!(
            o.get("is_error"),
            Some(&json!(false)),
            "claude -p reported an error: {o}"
        );
        assert_eq!(
            o.get("result").and_then(Value::as_str),
            Some("main: script finished"),
            "the main thread did not finish its script: {o}\n{}",
            self.ctx()
        );
        let by_type = o
            .pointer("/subagent_stats/by_type")
            .unwrap_or_else(|| panic!("no subagent_stats.by_type in {o}"));
        for (_, stype) in SPAWNED {
            assert_eq!(
                by_type.get(stype).and_then(Value::as_u64),
                Some(1),
                "subagent {stype} was not spawned exactly once: {by_type}"
            );
        }
        for (key, _) in SPAWNED {
            assert!(
                self.results.contains_key(&format!("toolu_{key}_0_0")),
                "subagent {key} never made its first call\n{}",
                self.ctx()
            );
        }
        // Made last, after all five subagents reported back: the hook answers its
        // PostToolUseFailure with `continue: false` (SPEC 7: a failed call's side effects are
        // uncertain, so Claude stops for a person), which would cut short any call after it.
        let (is_error, text) = self.result("toolu_main_2_0");
        assert!(
            is_error,
            "the main thread's failing command did not fail: {text}"
        );
    }

    pub fn ledger_path(&self) -> PathBuf {
        self.project
            .join(".attenu")
            .join(format!("ledger-{}.jsonl", self.session_id))
    }

    pub fn ledger(&self) -> Vec<Value> {
        let path = self.ledger_path();
        let text = fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "no ledger at {} ({e}); .attenu holds {:?}",
                path.display(),
                list_dir(&self.project.join(".attenu"))
            )
        });
        text.lines()
            .enumerate()
            .map(|(i, line)| {
                let v: Value = serde_json::from_str(line).unwrap_or_else(|e| {
                    panic!("{} line {}: not JSON ({e}): {line}", path.display(), i + 1)
                });
                assert!(
                    v.is_object(),
                    "{} line {}: not a JSON object: {line}",
                    path.display(),
                    i + 1
                );
                v
            })
            .collect()
    }

    /// `attenu-hook --derive <project>`: agent name -> scopes.
    pub fn derive(&self) -> BTreeMap<String, BTreeSet<String>> {
        let out = run_command(
            Command::new(HOOK_BIN).arg("--derive").arg(&self.project),
            COMMAND_DEADLINE,
            &self.dir,
            "derive",
        );
        assert!(out.ok(), "attenu-hook --derive failed: {}", out.describe());
        let v: Value = serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| {
            panic!(
                "attenu-hook --derive did not print JSON ({e}): {}",
                out.describe()
            )
        });
        let agents = v
            .get("agents")
            .and_then(Value::as_object)
            .unwrap_or_else(|| panic!("attenu-hook --derive: no `agents` object: {v}"));
        agents
            .iter()
            .map(|(name, scopes)| {
                let set = scopes
                    .as_array()
                    .unwrap_or_else(|| panic!("--derive: agents.{name} is not a list: {v}"))
                    .iter()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect();
                (name.clone(), set)
            })
            .collect()
    }
}
