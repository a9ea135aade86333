//! Helpers of the operator tests (install, hook_wiring, operator).
use super::*;
use serde_json::Value;

pub fn settings(p: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p.join(".claude/settings.json")).unwrap())
        .unwrap()
}

pub fn doctor(p: &std::path::Path) -> Out {
    cli(&["doctor", p.to_str().unwrap()])
}

/// A directory holding a fake `claude` that says it is `version`, to put on PATH.
pub fn fake_claude(version: &str) -> TempDir {
    let d = TempDir::new("fake-claude");
    let f = d.path().join("claude");
    std::fs::write(&f, format!("#!/bin/sh\necho '{version} (Claude Code)'\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).unwrap();
    d
}

/// The hook handler `install` writes, as JSON, for `command`.
pub fn handler(command: &str) -> Value {
    json!({"type": "command", "command": command, "timeout": 10, "onFailure": "block"})
}

pub fn write_settings(p: &std::path::Path, file: &str, v: &Value) {
    std::fs::create_dir_all(p.join(".claude")).unwrap();
    std::fs::write(
        p.join(".claude").join(file),
        serde_json::to_string_pretty(v).unwrap(),
    )
    .unwrap();
}
