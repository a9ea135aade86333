//! The attenu-hook plugin as Claude Code would find it, for `doctor`'s wiring tests: a
//! project that enables it, a Claude Code configuration directory with its registry
//! (`plugins/installed_plugins.json`) and installed copies, and `doctor` run against both.
use super::operator::write_settings;
use super::*;

/// A project (the seed's sample) whose `settings.local.json` enables `attenu-hook@MARKET`,
/// and a Claude Code configuration directory for it.
pub struct Plugin {
    pub project: TempDir,
    pub config: TempDir,
    market: String,
}

impl Plugin {
    pub fn new(tag: &str, market: &str) -> Plugin {
        let project = sample(tag);
        let config = TempDir::new(&format!("{tag}-config"));
        std::fs::create_dir_all(config.path().join("plugins")).unwrap();
        let plugin = Plugin {
            project,
            config,
            market: market.into(),
        };
        plugin.enable(&json!({ plugin.id(): true }));
        plugin
    }
    /// `attenu-hook@MARKET`.
    pub fn id(&self) -> String {
        format!("attenu-hook@{}", self.market)
    }
    /// `enabledPlugins` in the project's `settings.local.json`.
    pub fn enable(&self, plugins: &Value) {
        let local = json!({ "enabledPlugins": plugins });
        write_settings(self.project.path(), "settings.local.json", &local);
    }
    /// The directory of the installed copy `version` (not made).
    pub fn root(&self, version: &str) -> PathBuf {
        let dir = format!("cache/{}/attenu-hook/{version}", self.market);
        self.config.path().join(dir)
    }
    /// An installed copy as packaged, with `parts` of it: "bin" (the binary under test),
    /// "hooks" (hooks/hooks.json), "manifest" (.claude-plugin/plugin.json).
    pub fn installed(&self, version: &str, parts: &[&str]) -> PathBuf {
        let root = self.root(version);
        std::fs::create_dir_all(root.join("bin")).unwrap();
        let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
        for (part, file) in [
            ("hooks", "hooks/hooks.json"),
            ("manifest", ".claude-plugin/plugin.json"),
        ] {
            if parts.contains(&part) {
                std::fs::create_dir_all(root.join(file).parent().unwrap()).unwrap();
                std::fs::copy(repo.join(file), root.join(file)).unwrap();
            }
        }
        if parts.contains(&"bin") {
            std::os::unix::fs::symlink(BIN, root.join("bin/attenu-hook")).unwrap();
        }
        root
    }
    /// The registry's records for `attenu-hook@MARKET`, and `others` (more keys) beside them.
    pub fn registry(&self, entries: Value, others: Value) {
        let mut plugins = json!({ self.id(): entries });
        plugins
            .as_object_mut()
            .unwrap()
            .extend(others.as_object().cloned().unwrap_or_default());
        let registry = json!({"version": 2, "plugins": plugins});
        let file = self.config.path().join("plugins/installed_plugins.json");
        std::fs::write(file, registry.to_string()).unwrap();
    }
    /// A registry record installing `root` for the project at `dir`.
    pub fn for_project(dir: &Path, root: &Path) -> Value {
        json!({"scope": "project", "projectPath": dir, "installPath": root})
    }
    /// The copy at `root`'s manifest, as packaged, with `hooks` set when given.
    pub fn manifest(&self, root: &Path, hooks: Option<Value>) {
        let packaged = include_str!("../../.claude-plugin/plugin.json");
        let mut m: Value = serde_json::from_str(packaged).unwrap();
        if let Some(h) = hooks {
            m["hooks"] = h;
        }
        std::fs::write(root.join(".claude-plugin/plugin.json"), m.to_string()).unwrap();
    }
    /// `doctor PROJECT` with this configuration directory.
    pub fn doctor(&self) -> Out {
        self.doctor_in(self.config.path())
    }
    /// `doctor PROJECT` with the configuration directory `config`.
    pub fn doctor_in(&self, config: &Path) -> Out {
        cli_with(
            &["doctor", self.project.dir()],
            &[("CLAUDE_CONFIG_DIR", config)],
        )
    }
}

/// `doctor` failed (exit 1) because Claude Code would load no attenu-hook handler, saying
/// `why`.
#[track_caller]
pub fn assert_loads_nothing(out: &Out, why: &str) {
    assert_eq!(out.code, 1, "{why}: {}", out.stdout);
    assert_contains(&out.stdout, &[why, "no attenu-hook handler for PreToolUse"]);
}

/// `doctor` passed (exit 0).
#[track_caller]
pub fn assert_passes(out: &Out) {
    assert_eq!(out.code, 0, "{}", out.stdout);
}

/// `doctor` failed (exit 1) saying each of `says`.
#[track_caller]
pub fn assert_fails_saying(out: &Out, says: &[&str]) {
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_contains(&out.stdout, says);
}
