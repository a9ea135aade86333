//! Signed checkpoints (docs/SHIPPING.md): the hook queues them with the entries they commit to
//! at SessionStart, after a deny and every `checkpoint_every` entries; SessionEnd queues the
//! bundle; bundles carry their chain's checkpoint; `prove` gives a one-entry proof that
//! `verify` checks against a pinned key.

mod common;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Every object key under `dir`, skipping dot-files (the shipper's state, temp files).
fn keys_under(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = walk(dir, |e| e.file_name().to_string_lossy().starts_with('.'))
        .into_iter()
        .filter(|(_, is_dir)| !is_dir)
        .map(|(key, _)| key.to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

/// A project shipping to a directory, and that directory.
fn shipping_project(tag: &str, every: u32) -> (TempDir, TempDir) {
    let share = TempDir::new(&format!("{tag}-share"));
    let p = sample(tag);
    write_config(
        p.path(),
        format!(
            "[ship]\nurl = \"file://{}\"\ncheckpoint_every = {every}\n",
            share.path().display()
        ),
    );
    (p, share)
}

/// Drains the outbox by hand until it is empty (a detached shipper may be draining too).
fn drain(p: &Path) {
    let outbox = p.join(".attenu/outbox");
    for _ in 0..200 {
        let _ = cli(&["ship", "--quiet", "--project", p.to_str().unwrap()]);
        if keys_under(&outbox).is_empty() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("the outbox never emptied: {:?}", keys_under(&outbox));
}

fn of_kind(keys: &[String], kind: &str) -> Vec<String> {
    keys.iter()
        .filter(|k| k.contains(&format!("/{kind}/")))
        .cloned()
        .collect()
}

#[test]
fn checkpoints_go_out_at_session_start_on_a_deny_and_every_n_entries() {
    let (p, share) = shipping_project("ckpt-when", 3);
    let shipped = |kind: &str| {
        drain(p.path());
        of_kind(&keys_under(share.path()), kind)
    };
    assert_eq!(p.session_start("s1", "startup").code, 0);
    // The root: one checkpoint of 1 entry, with the entries it commits to.
    let keys = keys_under_after_drain(p.path(), share.path());
    assert_eq!(of_kind(&keys, "checkpoint").len(), 1, "{keys:?}");
    assert!(keys.iter().any(|k| k.contains(FIRST_ENTRY)), "{keys:?}");
    // The reviewer's first read (its spawn and the decision): not yet due.
    assert_allowed(&p.read_by("reviewer", "/p/a").id("t1").run());
    assert_eq!(shipped("checkpoint").len(), 1);
    // The second is: three entries since the last checkpoint.
    assert_allowed(&p.read_by("reviewer", "/p/b").id("t2").run());
    assert_eq!(shipped("checkpoint").len(), 2);
    // A deny always is.
    assert_denied_with(&p.bash_by("reviewer", "ls").id("t4").run(), "unresolved");
    assert_three_checkpoints_of_five_entries(p.path(), share.path());
    // SessionEnd: the closing bundle.
    assert_eq!(p.event("s1", "SessionEnd").code, 0);
    let bundles = shipped("bundle");
    assert_eq!(bundles.len(), 1, "{bundles:?}");
}

const FIRST_ENTRY: &str = "/entries/00000000000000000000-00000000000000000001-";

/// The keys in `share` once the project's outbox is drained.
fn keys_under_after_drain(p: &Path, share: &Path) -> Vec<String> {
    drain(p);
    keys_under(share)
}

/// Once drained: three checkpoints, entries objects covering 0..5 without a gap, and the last
/// note naming its chain and its size (5), signed.
#[track_caller]
fn assert_three_checkpoints_of_five_entries(p: &Path, share: &Path) {
    let keys = keys_under_after_drain(p, share);
    let checkpoints = of_kind(&keys, "checkpoint");
    assert_eq!(checkpoints.len(), 3, "{keys:?}");
    assert_eq!(of_kind(&keys, "entries").len(), 3);
    let last = std::fs::read_to_string(share.join(checkpoints.last().unwrap())).unwrap();
    let lines: Vec<&str> = last.lines().collect();
    let origin = lines[0].starts_with("attenu-hook/attenu-hook-") && lines[0].contains("/cc-s1-");
    assert!(origin, "{last}");
    assert_eq!(lines[1], "5");
    assert!(lines[4].starts_with("— attenu-hook-"), "{last}");
}

#[test]
fn without_ship_nothing_is_queued() {
    let p = sample("ckpt-off");
    assert_eq!(p.session_start("s1", "startup").code, 0);
    assert_denied_with(&p.bash_by("reviewer", "ls").id("t1").run(), "unresolved");
    assert!(!p.path().join(".attenu/outbox").exists());
}

fn exported(p: &Path) -> (PathBuf, Value) {
    let bundle = PathBuf::from(&p.export("s1")[0]);
    let v: Value = serde_json::from_slice(&std::fs::read(&bundle).unwrap()).unwrap();
    (bundle, v)
}

#[test]
fn a_bundle_carries_its_chains_checkpoint_and_verify_checks_it() {
    let p = sample("ckpt-bundle");
    assert_allowed(&p.read_by("reviewer", "/p/a").id("t1").run());
    let (bundle, v) = exported(p.path());
    let note = v["checkpoint"].as_str().unwrap();
    let size = v["entries"].as_array().unwrap().len().to_string();
    assert_eq!(note.lines().nth(1), Some(size.as_str()));
    let out = p.verify_pinned_json(bundle.to_str().unwrap());
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(out.json()["checks"]["checkpoint"], "verified");
    // A checkpoint of another size, re-signed by nobody: refused by name.
    let mut edited = v.clone();
    edited["checkpoint"] = Value::from(note.replacen(&format!("\n{size}\n"), "\n1\n", 1));
    std::fs::write(&bundle, serde_json::to_vec(&edited).unwrap()).unwrap();
    let out = p.verify_pinned_json(bundle.to_str().unwrap());
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(out.stdout.contains("checkpoint-invalid"), "{}", out.stdout);
}

#[test]
fn prove_gives_a_one_entry_proof_that_verify_checks_against_the_pinned_key() {
    let (p, proof) = proof_of_a_deny("ckpt-prove");
    let text = std::fs::read_to_string(&proof).unwrap();
    assert!(text.starts_with("c2sp.org/tlog-proof@v1\n"), "{text}");
    let out = p.verify_pinned(proof.to_str().unwrap());
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let entry = out.stdout.starts_with("VALID: entry 3 of 4 ");
    assert!(entry && out.stdout.contains("deny Bash"), "{}", out.stdout);
}

/// Another key, or no key: a proof is not valid.
#[test]
fn a_proof_under_another_key_or_none_is_not_valid() {
    let (_p, proof) = proof_of_a_deny("ckpt-prove-key");
    let stranger = sample("ckpt-stranger");
    assert_allowed(&stranger.read_by("reviewer", "/p/a").id("t1").run());
    let other = stranger.path().join(".attenu/anchor.pub");
    let out = cli(&[
        "verify",
        proof.to_str().unwrap(),
        "--pub",
        other.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let out = cli(&["verify", proof.to_str().unwrap()]);
    assert_eq!(out.code, 2, "{}", out.stderr);
}

/// Another position, or the entry edited inside the proof: caught.
#[test]
fn a_proof_moved_or_with_its_entry_edited_is_invalid() {
    let (p, proof) = proof_of_a_deny("ckpt-prove-edit");
    let text = std::fs::read_to_string(&proof).unwrap();
    let moved = text.replacen("index 3\n", "index 2\n", 1);
    assert_ne!(moved, text);
    for tampered in [moved, with_the_entry_made_a_read(&text)] {
        std::fs::write(&proof, tampered).unwrap();
        let out = p.verify_pinned(proof.to_str().unwrap());
        assert_eq!(out.code, 1, "{}", out.stdout);
        assert!(out.stdout.starts_with("INVALID"), "{}", out.stdout);
    }
}

/// What `prove` prints, pinned: the proof itself (its base64 masked) and, with `--out`, where
/// it went and how to check it.
#[test]
fn prove_text_is_pinned() {
    let (p, proof) = proof_of_a_deny("ckpt-prove-text");
    let mut args = vec!["prove", "--project", p.dir(), "--session", "s1"];
    args.extend(["--seq", "3"]);
    let mut shown = cli(&args);
    assert_eq!(shown.stdout, std::fs::read_to_string(&proof).unwrap());
    shown.stdout = without_base64(&shown.stdout);
    let mut text = transcript("prove --session s1 --seq 3", &shown);
    let again = p.path().join("again.proof");
    args.extend(["--out", again.to_str().unwrap()]);
    text += &transcript("prove --session s1 --seq 3 --out FILE", &cli(&args));
    assert_snapshot("prove.txt", &mask(&text, &[(p.dir(), "<project>")]));
}

/// `text` with each word of 16 or more base64 characters (hashes, signatures, the entry) as
/// `<base64>`.
fn without_base64(text: &str) -> String {
    fn word(w: &str) -> &str {
        let b64 = |c: char| c.is_ascii_alphanumeric() || "+/=".contains(c);
        if w.len() >= 16 && w.chars().all(b64) {
            "<base64>"
        } else {
            w
        }
    }
    let line = |l: &str| l.split(' ').map(word).collect::<Vec<_>>().join(" ");
    text.split('\n').map(line).collect::<Vec<_>>().join("\n")
}

/// What `verify` prints of a proof, pinned: valid under the pinned key, invalid once moved to
/// another index, and refused without a key.
#[test]
fn a_proofs_verify_text_is_pinned() {
    let (p, proof) = proof_of_a_deny("ckpt-verify-text");
    let path = proof.to_str().unwrap();
    let mut text = transcript("verify PROOF --pub KEY", &p.verify_pinned(path));
    let moved = std::fs::read_to_string(&proof).unwrap();
    std::fs::write(&proof, moved.replacen("index 3\n", "index 2\n", 1)).unwrap();
    text += &transcript("verify MOVED --pub KEY", &p.verify_pinned(path));
    text += &transcript("verify MOVED", &cli(&["verify", path]));
    assert_snapshot("verify-proof.txt", &mask(&text, &[(p.dir(), "<project>")]));
}

/// A session of the sample project with an allowed read and a denied Bash, and `prove`'s proof
/// of the deny (which must succeed): the project and the proof's path.
fn proof_of_a_deny(tag: &str) -> (TempDir, PathBuf) {
    let p = sample(tag);
    assert_allowed(&p.read_by("reviewer", "/p/a").id("t1").run());
    assert_denied_with(&p.bash_by("reviewer", "ls").id("t2").run(), "unresolved");
    let deny = of_event(&p.entries("s1"), "deny")[0].clone();
    let call = deny["call_id"].as_str().unwrap();
    let proof = p.path().join("deny.proof");
    let mut args = vec!["prove", "--project", p.dir(), "--session", "s1"];
    args.extend(["--call", call, "--out", proof.to_str().unwrap()]);
    let out = cli(&args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    (p, proof)
}

/// The proof `text` with the Bash entry it carries changed to a Read, rebuilt around it.
fn with_the_entry_made_a_read(text: &str) -> String {
    use attenu_hook::tlog::TlogProof;
    let parsed = TlogProof::parse(text).unwrap();
    let entry = String::from_utf8(parsed.extra().unwrap().to_vec()).unwrap();
    assert!(entry.contains("\"tool\":\"Bash\""), "{entry}");
    let read = entry.replace("\"tool\":\"Bash\"", "\"tool\":\"Read\"");
    let rebuilt = TlogProof::new(3, parsed.path().to_vec(), parsed.signed_checkpoint());
    rebuilt.unwrap().with_extra(read.into_bytes()).to_text()
}

#[test]
fn doctor_fails_when_shipping_is_on_but_the_shipper_is_not_installed() {
    let (p, _share) = shipping_project("ckpt-no-shipper", 64);
    let lone = TempDir::new("ckpt-lone-bin");
    let bin = lone.path().join("attenu-hook");
    place_executable(std::path::Path::new(BIN), &bin);
    let mut doctor = std::process::Command::new(&bin);
    doctor
        .args(["doctor", p.path().to_str().unwrap()])
        .env("PATH", lone.path());
    let out = doctor.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert_contains(&stdout, &["FAIL  ship", NOT_INSTALLED]);
    // Beside the binary, it is found.
    let out = cli(&["doctor", p.path().to_str().unwrap()]);
    assert_lacks(&out.stdout, &[NOT_INSTALLED], "beside the binary");
}

const NOT_INSTALLED: &str = "attenu-hook-ship is not installed";

#[test]
fn a_chain_closed_by_an_agent_edit_ships_its_last_entries() {
    let (p, share) = shipping_project("ckpt-switch", 1000);
    assert_eq!(p.session_start("s1", "startup").code, 0);
    assert_allowed(&p.read_by("reviewer", "/p/a").id("t1").run());
    // The edit opens a new chain when the session is resumed; the old one's third entry
    // (root, spawn, allow) must not stay on the machine only.
    let agent = p.path().join(".claude/agents/reviewer.md");
    let text = std::fs::read_to_string(&agent).unwrap();
    let with_bash = text.replace("tools: Read, Grep, Glob", "tools: Read, Grep, Glob, Bash");
    std::fs::write(&agent, with_bash).unwrap();
    // Read when the session is resumed (a running session keeps its pinned roster).
    assert_eq!(p.session_start("s1", "resume").code, 0);
    assert_allowed(&p.read_by("reviewer", "/p/b").id("t2").run());
    let keys = keys_under_after_drain(p.path(), share.path());
    let checkpoints = of_kind(&keys, "checkpoint");
    // The first chain's checkpoint of its third entry.
    let third = |k: &String| k.contains("-1/checkpoint/") && k.contains(THIRD);
    assert!(checkpoints.iter().any(third), "{checkpoints:?}");
}

const THIRD: &str = "/checkpoint/00000000000000000003-";

#[test]
fn shipping_closes_a_session_even_with_export_on_stop_off() {
    let (p, share) = shipping_project("ckpt-no-export", 1000);
    let cfg = p.path().join(".attenu/config.toml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(&cfg, format!("export_on_stop = false\n{text}")).unwrap();
    assert_allowed(&p.read_by("reviewer", "/p/a").id("t1").run());
    let end = p.event("s1", "SessionEnd");
    assert_eq!(end.code, 0, "{}", end.stdout);
    let keys = keys_under_after_drain(p.path(), share.path());
    assert_eq!(of_kind(&keys, "bundle").len(), 1, "{keys:?}");
    assert!(!of_kind(&keys, "checkpoint").is_empty(), "{keys:?}");
}
