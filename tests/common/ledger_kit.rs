//! The evidence side's ledger files as a test handles them: their bytes and lines, the sealed
//! state beside them (`ledger-<session>.state.json`), the losses recorded on them, `doctor`'s
//! line about them, and the refusals a call gives when they were changed.
use super::*;

/// `.attenu/ledger-<session>.state.json`: the sealed local state beside a session's ledger.
pub fn state_file(project: &Path, session: &str) -> PathBuf {
    project.join(format!(".attenu/ledger-{session}.state.json"))
}

/// Session s1's sealed local state (see [`state_file`]).
pub fn sealed_state_of(project: &Path) -> PathBuf {
    state_file(project, "s1")
}

/// Removes session s1's sealed local state, which must exist.
pub fn remove_sealed_state(project: &Path) {
    std::fs::remove_file(sealed_state_of(project)).unwrap();
}

/// The bytes of `path`, which must be readable.
pub fn bytes_of(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// Byte offsets where the lines of `bytes` start.
pub fn line_starts(bytes: &[u8]) -> Vec<usize> {
    std::iter::once(0)
        .chain(
            bytes
                .iter()
                .enumerate()
                .filter(|(_, &b)| b == b'\n')
                .map(|(i, _)| i + 1),
        )
        .filter(|&i| i < bytes.len())
        .collect()
}

/// The number of lines of the file at `path`.
pub fn line_count(path: &Path) -> usize {
    line_starts(&bytes_of(path)).len()
}

/// `bytes` without their last `n` lines.
pub fn without_last_lines(bytes: &[u8], n: usize) -> Vec<u8> {
    let starts = line_starts(bytes);
    bytes[..starts[starts.len() - n]].to_vec()
}

/// Where `needle` first stands in `bytes` at or after `from`.
pub fn find_from(bytes: &[u8], from: usize, needle: &[u8]) -> usize {
    from + bytes[from..]
        .windows(needle.len())
        .position(|w| w == needle)
        .unwrap()
}

/// The entries of session s1 recording a lost sealed state, as (position, record).
pub fn losses(p: &Path) -> Vec<(usize, Value)> {
    p.entries("s1")
        .into_iter()
        .enumerate()
        .filter_map(|(i, e)| e["context"].get("checkpoint_lost").map(|l| (i, l.clone())))
        .collect()
}

/// Session s1's one recorded loss, asserted to be the only one: (position, record).
#[track_caller]
pub fn the_one_loss(p: &Path) -> (usize, Value) {
    let recorded = losses(p);
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    recorded.into_iter().next().unwrap()
}

/// `doctor P`: its exit code and its line about `check` (`ledger:ledger-s1.jsonl`,
/// `git:anchor.key`, ...), which must be there.
#[track_caller]
pub fn doctor_check(p: &Path, check: &str) -> (i32, String) {
    let out = cli(&["doctor", p.to_str().unwrap()]);
    let line = out
        .stdout
        .lines()
        .find(|l| l.contains(check))
        .unwrap_or_else(|| panic!("no {check} line: {}", out.stdout))
        .to_string();
    (out.code, line)
}

/// `doctor P`'s line about `check` starts with `status` (`FAIL`, `warn`, `ok`) and says `text`.
#[track_caller]
pub fn assert_doctor_says(p: &Path, check: &str, status: &str, text: &str) {
    let (_, line) = doctor_check(p, check);
    assert!(
        line.starts_with(status) && line.contains(text),
        "expected {status} saying {text:?}: {line}"
    );
}

/// A SessionStart's `systemMessage` ("" when it has none).
pub fn system_message(out: &Out) -> String {
    out.json()["systemMessage"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

/// The file at `path` still holds exactly `bytes` (`why` says what that shows).
#[track_caller]
pub fn assert_unchanged(path: &Path, bytes: &[u8], why: &str) {
    assert!(bytes_of(path) == bytes, "{why}: {} changed", path.display());
}

/// `name` in the project's `.attenu/`.
pub fn attenu_file(project: &Path, name: &str) -> PathBuf {
    project.join(".attenu").join(name)
}

/// Rewrites `.claude/agents/<agent>.md` to hold only its name and `tools` (read when the
/// session is next resumed, which opens a new chain).
pub fn set_agent_tools(project: &Path, agent: &str, tools: &str) {
    let text = format!("---\nname: {agent}\ntools: {tools}\n---\n");
    std::fs::write(project.join(format!(".claude/agents/{agent}.md")), text).unwrap();
}
