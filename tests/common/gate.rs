//! The gate's operator commands: a gated project, reviewer alice's key, `authorize`,
//! `reconcile list` and `reconcile resolve`.
use super::*;

// ---- the gate ----------------------------------------------------------------------------

/// A project whose Bash is gated (`[gate] require = ["exec.bash"]`), with an `ops` agent holding
/// `ops_tools` and reviewer alice; returns (project, alice's key file).
pub fn gated_project(tag: &str, ops_tools: &str) -> (TempDir, PathBuf) {
    let p = ProjectBuilder::new(tag)
        .agent("ops", &format!("tools: {ops_tools}"))
        .build();
    let (key, public) = alice_key(p.path());
    write_config(
        p.path(),
        format!("[gate]\nrequire = [\"exec.bash\"]\nreviewers = {{ alice = \"{public}\" }}\n"),
    );
    (p, key)
}

/// Reviewer alice's key, made in the project: (key file, public key in hex).
pub fn alice_key(project: &Path) -> (PathBuf, String) {
    let key = project.join("alice.key");
    let out = cli(&["keygen", "--out", key.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let public = out.stdout.lines().last().unwrap().trim().to_string();
    assert_eq!(public.len(), 64);
    (key, public)
}

/// `authorize --project P --tool Bash --reviewer alice --key KEY --input INPUT EXTRA...`.
pub fn authorize(p: &Path, key: &Path, input: &Value, extra: &[&str]) -> Out {
    let mut args = vec![
        "authorize",
        "--project",
        p.to_str().unwrap(),
        "--tool",
        "Bash",
        "--reviewer",
        "alice",
        "--key",
        key.to_str().unwrap(),
    ];
    let input = input.to_string();
    args.extend(["--input", input.as_str()]);
    args.extend(extra);
    cli(&args)
}

/// The id `authorize` printed, on its `authorization:` line.
pub fn authorization_id(out: &Out) -> String {
    out.stdout
        .lines()
        .find_map(|l| l.strip_prefix("authorization:"))
        .unwrap_or_else(|| panic!("no `authorization:` line in {}", out.stdout))
        .trim()
        .to_string()
}

/// `reconcile list --project P` (and `extra` after it).
pub fn reconcile_list(p: &Path, extra: &[&str]) -> Out {
    let mut args = vec!["reconcile", "list", "--project", p.to_str().unwrap()];
    args.extend(extra);
    cli(&args)
}

/// `reconcile resolve MARKER --project P --outcome OUTCOME --evidence EVIDENCE` (and `extra`).
pub fn reconcile_resolve(
    p: &Path,
    marker: &str,
    outcome: &str,
    evidence: &str,
    extra: &[&str],
) -> Out {
    let mut args = vec![
        "reconcile",
        "resolve",
        marker,
        "--project",
        p.to_str().unwrap(),
    ];
    args.extend(["--outcome", outcome, "--evidence", evidence]);
    args.extend(extra);
    cli(&args)
}
