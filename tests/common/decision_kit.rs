//! Assertion shapes the decision tests repeat: a JSON value holding given fields, a text's
//! start, no file under a directory holding a string, an outcome bound to its call.
use super::*;

/// Every field of `expected` is in `actual` with that value, objects compared field by field
/// (so `actual` may hold more), anything else compared whole.
#[track_caller]
pub fn assert_has(actual: &Value, expected: Value) {
    fn walk(at: &str, actual: &Value, expected: &Value) {
        match expected.as_object() {
            Some(fields) => {
                for (key, want) in fields {
                    walk(&format!("{at}/{key}"), &actual[key.as_str()], want);
                }
            }
            None => assert_eq!(actual, expected, "at {at}"),
        }
    }
    walk("", actual, &expected);
}

/// `text` starts with `prefix`.
#[track_caller]
pub fn assert_starts(text: &str, prefix: &str) {
    assert!(
        text.starts_with(prefix),
        "expected {prefix:?} at the start of:\n{text}"
    );
}

/// No file directly under `dir` holds `text`.
#[track_caller]
pub fn assert_no_file_holds(dir: &Path, text: &str) {
    for f in std::fs::read_dir(dir).unwrap().flatten() {
        let bytes = std::fs::read(f.path()).unwrap();
        let holds = String::from_utf8_lossy(&bytes).contains(text);
        assert!(!holds, "{} holds {text:?}", f.path().display());
    }
}

/// The session's `allow` and `outcome` entries, in order.
pub fn allows_and_outcomes(p: &impl ProjectExt, session: &str) -> (Vec<Value>, Vec<Value>) {
    let es = p.entries(session);
    let pick = |event: &str| of_event(&es, event).into_iter().cloned().collect();
    (pick("allow"), pick("outcome"))
}
