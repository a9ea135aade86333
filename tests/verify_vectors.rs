//! Differential test: `attenu-hook verify` reaches the reference's verdict on the reference's
//! own bundle vectors (attenu-guard 0.21.0, `vectors/bundles/bundle_vectors_v1.json`).
//!
//! The vectors are read from the installed reference package, never copied into this
//! repository. Set `ATTENU_REF_PYTHON` to a Python interpreter with
//! `attenu-guard[crypto]==0.21.0` installed; CI does. Without it the test is skipped, loudly.

use attenu_hook::evidence::verify::{verify_bundle, AnchorKey, FailureName, Report};
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

/// Prints straight to the process's stderr: libtest captures `eprintln!` of a passing test,
/// and a skipped differential test must never pass unnoticed.
fn skip(why: &str) {
    use std::io::Write as _;
    let bar = "=====================================================================";
    let _ = writeln!(
        std::io::stderr(),
        "\n{bar}\nSKIPPED: differential bundle-verifier test against attenu-guard 0.21.0\n  {why}\n  \
         set ATTENU_REF_PYTHON to a python with `attenu-guard[crypto]==0.21.0`\n{bar}\n"
    );
}

/// The reference verifier's complete failure list for every case, as (reason, seq, node),
/// from one run of `attenu_guard.evidence.verify_bundle` with each case's own signer.
const REFERENCE_RUN: &str = r#"
import json, sys
from attenu_guard import evidence
from attenu_guard.wire import HS256TestSigner
doc = json.load(open(sys.argv[1]))
out = {}
for case in doc["cases"]:
    s = case["signer"]
    report = evidence.verify_bundle(case["bundle"], HS256TestSigner(bytes.fromhex(s["secret_hex"]), kid=s["kid"]))
    out[case["name"]] = {"ok": report["ok"],
                         "failures": [[d["reason"], d["seq"], d["node"]] for d in report["failure_details"]]}
print(json.dumps(out))
"#;

fn python() -> Option<std::ffi::OsString> {
    std::env::var_os("ATTENU_REF_PYTHON")
}

/// The directory of the installed `attenu_guard` package, or why it cannot be found.
fn reference_package() -> Result<PathBuf, String> {
    let python = python().ok_or("ATTENU_REF_PYTHON is not set")?;
    let out = Command::new(&python)
        .args([
            "-c",
            "import attenu_guard, os; print(os.path.dirname(attenu_guard.__file__))",
        ])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", PathBuf::from(&python).display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} cannot import attenu_guard: {}",
            PathBuf::from(&python).display(),
            String::from_utf8_lossy(&out.stderr)
                .trim()
                .lines()
                .last()
                .unwrap_or("")
        ));
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex length");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

fn describe(report: &Report) -> String {
    report
        .failures
        .iter()
        .map(|f| {
            format!(
                "  {} (ref {:?}) index={:?} seq={:?} node={:?}: {}",
                f.name, f.reference_reason, f.index, f.seq, f.node, f.detail
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn verdicts_match_the_reference_vectors() {
    let package = match reference_package() {
        Ok(p) => p,
        Err(why) => return skip(&why),
    };
    let path = package.join("vectors/bundles/bundle_vectors_v1.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "the reference is installed but {} cannot be read: {e}",
            path.display()
        )
    });
    let doc: Value = serde_json::from_str(&text).expect("the vector file is JSON");
    assert_eq!(
        doc["version"], "bundle_vectors_v1",
        "an incompatible vector file"
    );
    let cases = doc["cases"].as_array().expect("cases");
    assert!(
        cases.len() >= 29,
        "expected at least 29 cases, found {}",
        cases.len()
    );

    let out = Command::new(python().expect("checked above"))
        .arg("-c")
        .arg(REFERENCE_RUN)
        .arg(&path)
        .output()
        .expect("the reference python runs");
    assert!(
        out.status.success(),
        "the reference verifier failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reference: Value = serde_json::from_slice(&out.stdout).expect("the reference prints JSON");

    let mut problems = Vec::new();
    for case in cases {
        let name = case["name"].as_str().expect("name");
        let signer = &case["signer"];
        assert_eq!(
            signer["alg"], "HS256",
            "{name}: only HS256 vectors are known"
        );
        let key = AnchorKey::Hmac(unhex(signer["secret_hex"].as_str().expect("secret_hex")));
        let report = verify_bundle(&case["bundle"], &key);
        let accept = match case["expect"].as_str() {
            Some("accept") => true,
            Some("reject") => false,
            other => panic!("{name}: unknown expect {other:?}"),
        };

        if report.valid != accept {
            problems.push(format!(
                "{name}: expected {}, got valid={}\n{}",
                case["expect"],
                report.valid,
                describe(&report)
            ));
            continue;
        }
        for f in &report.failures {
            if f.reference_reason != f.name.reference_reason() {
                problems.push(format!(
                    "{name}: failure {} carries a reference reason not its own",
                    f.name
                ));
            }
        }

        // Every required failure is one of ours, mapped to the same reason, at the same position.
        for want in case["expect_failures"].as_array().expect("expect_failures") {
            let reason = want["reason"].as_str().expect("reason");
            let found = report.failures.iter().any(|f| {
                f.reference_reason == Some(reason)
                    && want["seq"].as_i64() == f.seq
                    && want["node"].as_str() == f.node.as_deref()
            });
            if !found {
                problems.push(format!(
                    "{name}: required failure {reason} at seq {} node {} not reported\n{}",
                    want["seq"],
                    want["node"],
                    describe(&report)
                ));
            }
        }
        // Beyond the minimal required set: the same failures as the reference reports, as a set of
        // (reason, seq, node), with nothing missing and nothing extra.
        let theirs = &reference[name];
        assert_eq!(
            theirs["ok"].as_bool(),
            Some(accept),
            "{name}: the reference disagrees with its own vector"
        );
        let key_of = |reason: &str, seq: Option<i64>, node: Option<&str>| {
            format!("{reason} seq={seq:?} node={node:?}")
        };
        let mut want: Vec<String> = theirs["failures"]
            .as_array()
            .expect("failures")
            .iter()
            .map(|f| key_of(f[0].as_str().expect("reason"), f[1].as_i64(), f[2].as_str()))
            .collect();
        let mut got: Vec<String> = report
            .failures
            .iter()
            .map(|f| {
                key_of(
                    f.reference_reason.unwrap_or("(none)"),
                    f.seq,
                    f.node.as_deref(),
                )
            })
            .collect();
        for list in [&mut want, &mut got] {
            list.sort();
            list.dedup();
        }
        if want != got {
            problems.push(format!(
                "{name}: the reference reports {want:?}\n  we report {got:?}"
            ));
        }

        if let Some(expected) = case.get("expect_report").and_then(Value::as_object) {
            for (field, value) in expected {
                let ours = match field.as_str() {
                    "actions_checked" => report.actions_checked as u64,
                    "ungated" => report.ungated as u64,
                    "nodes" => report.nodes as u64,
                    other => {
                        problems.push(format!(
                            "{name}: expect_report field {other} is not compared"
                        ));
                        continue;
                    }
                };
                if value.as_u64() != Some(ours) {
                    problems.push(format!(
                        "{name}: {field} is {ours}, the vector says {value}"
                    ));
                }
            }
        }

        // Without a key the verdict is never valid (our deliberate strictness), and an accepting
        // case fails for that reason alone.
        let unkeyed = verify_bundle(&case["bundle"], &AnchorKey::None);
        if unkeyed.valid
            || !unkeyed
                .failures
                .iter()
                .any(|f| f.name == FailureName::AnchorNotChecked)
        {
            problems.push(format!(
                "{name}: without a key the bundle must be reported anchor-not-checked"
            ));
        }
        if accept && unkeyed.failures.len() != 1 {
            problems.push(format!(
                "{name}: an accepting case without a key must fail on anchor-not-checked alone\n{}",
                describe(&unkeyed)
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{} disagreement(s) with the reference:\n{}",
        problems.len(),
        problems.join("\n\n")
    );
}

#[test]
fn every_failure_name_is_stable_kebab_case_and_unique() {
    let mut seen = std::collections::HashSet::new();
    for name in FailureName::ALL {
        let s = name.as_str();
        assert!(
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
            "{s} is not kebab-case"
        );
        assert!(seen.insert(s), "{s} is used twice");
        assert_eq!(FailureName::from_name(s), Some(*name));
    }
}
