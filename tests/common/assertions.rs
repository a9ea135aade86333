//! What a test asserts of an answer, and small helpers over files and threads.
use super::*;

/// The hook allowed (exit 0, `{}`).
#[track_caller]
pub fn assert_allowed(out: &Out) {
    assert!(
        out.is_allow(),
        "expected an allow: {}{}",
        out.stdout,
        out.stderr
    );
}

/// The hook denied, with the reason code `[code]` in its reason.
#[track_caller]
pub fn assert_denied_with(out: &Out, code: &str) {
    assert_denied_saying(out, &format!("[{code}]"));
}

/// The hook denied, with `text` in its reason.
#[track_caller]
pub fn assert_denied_saying(out: &Out, text: &str) {
    assert!(
        out.denied() && out.reason().contains(text),
        "expected a deny saying {text:?}: {}{}",
        out.stdout,
        out.stderr
    );
}

/// The hook denied, with every one of `texts` in its reason.
#[track_caller]
pub fn assert_denied_saying_all(out: &Out, texts: &[&str]) {
    for text in texts {
        assert_denied_saying(out, text);
    }
}

/// The hook stopped Claude (`continue: false`) with `text` in its stopReason.
#[track_caller]
pub fn assert_halted_saying(out: &Out, text: &str) {
    let j = out.json();
    assert_eq!(j["continue"], false, "expected a halt: {}", out.stdout);
    let why = j["stopReason"].as_str().unwrap_or("");
    assert!(
        why.contains(text),
        "expected a stopReason saying {text:?}: {why}"
    );
}

/// `text` contains every one of `needles`.
#[track_caller]
pub fn assert_contains(text: &str, needles: &[&str]) {
    for needle in needles {
        assert!(text.contains(needle), "expected {needle:?} in:\n{text}");
    }
}

/// Runs `f(0)` .. `f(n-1)` on `n` threads released together: whether every one returned true.
pub fn all_at_once(n: usize, f: impl Fn(usize) -> bool + Sync) -> bool {
    let barrier = std::sync::Barrier::new(n);
    std::thread::scope(|s| {
        let threads: Vec<_> = (0..n)
            .map(|i| {
                let (barrier, f) = (&barrier, &f);
                s.spawn(move || {
                    barrier.wait();
                    f(i)
                })
            })
            .collect();
        threads.into_iter().all(|t| t.join().unwrap())
    })
}

/// The entries of `event` (`allow`, `deny`, `outcome`, `root`, `spawn`, ...).
pub fn of_event<'a>(entries: &'a [Value], event: &str) -> Vec<&'a Value> {
    entries.iter().filter(|e| e["event"] == event).collect()
}

/// The files in `dir` whose names contain `part`.
pub fn files_named(dir: &Path, part: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(part))
        .map(|e| e.path())
        .collect();
    v.sort();
    v
}

/// The paths below `dir`, relative to it, each with whether it is a directory: depth first,
/// links not followed; an entry `skip` names is left out with everything below it.
pub fn walk(dir: &Path, skip: impl Fn(&std::fs::DirEntry) -> bool) -> Vec<(PathBuf, bool)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if skip(&e) {
                continue;
            }
            let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
            if is_dir {
                todo.push(e.path());
            }
            out.push((e.path().strip_prefix(dir).unwrap().to_path_buf(), is_dir));
        }
    }
    out
}

/// Runs `mkfifo path`.
pub fn mkfifo(path: &Path) {
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
}
