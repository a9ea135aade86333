//! Projects and what the operator commands say of them: agent files built by the dozen,
//! edits, the settling a cached derivation waits for, `--derive` read as JSON or text, a
//! `doctor` check's line, a state file's mode.
use super::*;

/// How long an agent file must sit unchanged before the derivation from it is cached
/// (two seconds), with a margin.
pub const SETTLED: std::time::Duration = std::time::Duration::from_millis(2100);

/// Waits until the project's declarations count as settled.
pub fn settle() {
    std::thread::sleep(SETTLED);
}

/// A project with these `(file under .claude/agents/, text)` pairs, owned strings.
pub fn project_of(tag: &str, agents: &[(String, String)], settings: Option<Value>) -> TempDir {
    let refs: Vec<(&str, &str)> = agents
        .iter()
        .map(|(f, t)| (f.as_str(), t.as_str()))
        .collect();
    project(tag, &refs, settings)
}

/// Replaces `from` by `to` in the file at `path`, which must hold `from`.
#[track_caller]
pub fn edit_file(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{} lacks {from:?}", path.display());
    std::fs::write(path, text.replace(from, to)).unwrap();
}

/// The permission bits of the file at `path`.
#[track_caller]
pub fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    meta.permissions().mode() & 0o777
}

/// `--derive DIR --json`, which must succeed, as JSON.
#[track_caller]
pub fn derive_json(dir: &str) -> Value {
    let out = cli(&["--derive", dir, "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap()
}

/// `--derive DIR --human` at `columns` wide, which must succeed, the project masked.
#[track_caller]
pub fn derive_human(dir: &str, columns: &str) -> String {
    let out = cli_with(
        &["--derive", dir, "--human"],
        &[("COLUMNS", Path::new(columns))],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    mask(&out.stdout, &[(dir, "<project>")])
}

/// The line of `doctor DIR` that holds `needle`, which must be there.
#[track_caller]
pub fn doctor_line(dir: &str, needle: &str) -> String {
    let out = cli(&["doctor", dir]);
    let line = out.stdout.lines().find(|l| l.contains(needle));
    line.unwrap_or_else(|| panic!("no {needle:?} in:\n{}", out.stdout))
        .to_string()
}

/// `install DIR --command <the binary under test>`, which must succeed.
#[track_caller]
pub fn install_bin(dir: &str) {
    let out = cli(&["install", dir, "--command", BIN]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
}

/// The seed's sample project, installed, after one allowed reviewer Read in session s1.
pub fn installed_sample(tag: &str) -> TempDir {
    let p = sample(tag);
    install_bin(p.dir());
    assert_allowed(&reviewer_read(p.path(), "s1", "/x", "t1"));
    p
}

/// Sets the permission bits of the file at `path`.
#[track_caller]
pub fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// `export --project P --session S`, which must succeed: the session's first bundle.
#[track_caller]
pub fn export_session(p: &TempDir, session: &str) -> PathBuf {
    let bundles = p.export(session);
    PathBuf::from(bundles.first().expect("export wrote a bundle"))
}

/// `verify BUNDLE --pub KEY`.
pub fn verify_with(bundle: &Path, key: &Path) -> Out {
    cli(&[
        "verify",
        bundle.to_str().unwrap(),
        "--pub",
        key.to_str().unwrap(),
    ])
}

/// `report BUNDLE --pub KEY --out PAGE`: what it answered, and the page it wrote (which it
/// must write, valid or not).
pub fn report_with(bundle: &Path, key: &Path, page: &Path) -> (Out, String) {
    let args = [
        "report",
        bundle.to_str().unwrap(),
        "--pub",
        key.to_str().unwrap(),
    ];
    let out = cli(&[&args[..], &["--out", page.to_str().unwrap()]].concat());
    let html = std::fs::read_to_string(page)
        .unwrap_or_else(|e| panic!("report wrote no page at {}: {e}; {out:?}", page.display()));
    (out, html)
}
