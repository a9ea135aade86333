//! The command's exit codes, and the reference verifier's verdict on our Ed25519 anchor.

use super::*;
use crate::protocol::Exit;
use ed25519_dalek::VerifyingKey;

#[test]
fn run_exit_codes() {
    let k = key(1);
    let dir = scratch_dir();
    let bundle_path = dir.join("bundle-s.json");
    std::fs::write(
        &bundle_path,
        serde_json::to_vec(&signed_bundle(tiny_entries(), &k)).unwrap(),
    )
    .unwrap();
    let pub_hex = chain::hex(k.verifying_key().as_bytes());
    let pub_json = dir.join("trusted.pub");
    std::fs::write(
        &pub_json,
        json!({"alg": "EdDSA", "kid": "attenu-local-1", "public_key": pub_hex}).to_string(),
    )
    .unwrap();
    let pub_bare = dir.join("bare.pub");
    std::fs::write(&pub_bare, format!("{pub_hex}\n")).unwrap();
    let bad = dir.join("bad.pub");
    std::fs::write(&bad, "not a key").unwrap();

    assert_eq!(
        run(&bundle_path, Pin::Nothing, false),
        Exit::CheckFailed,
        "no key anywhere: invalid"
    );
    assert_eq!(run(&bundle_path, Pin::Key(&pub_json), false), Exit::Success);
    assert_eq!(run(&bundle_path, Pin::Key(&pub_bare), true), Exit::Success);
    assert_eq!(run(&bundle_path, Pin::Key(&bad), false), Exit::Unusable);
    assert_eq!(
        run(&bundle_path, Pin::Key(&dir.join("missing.pub")), false),
        Exit::Unusable
    );
    assert_eq!(
        run(&dir.join("missing.json"), Pin::Key(&pub_json), false),
        Exit::Unusable
    );
    std::fs::copy(&pub_json, dir.join("anchor.pub")).unwrap();
    assert_eq!(
        run(&bundle_path, Pin::Nothing, false),
        Exit::ValidUnpinned,
        "the bundle-side key verifies, reported as not pinned, and a script cannot take it for 0"
    );
    assert_eq!(run(&bundle_path, Pin::Nothing, true), Exit::ValidUnpinned);
    assert_eq!(run(&bundle_path, Pin::Key(&pub_bare), false), Exit::Success);

    let not_json = dir.join("garbage.json");
    std::fs::write(&not_json, "{\"v\": 2,").unwrap();
    assert_eq!(run(&not_json, Pin::Key(&pub_json), false), Exit::Unusable);
    // Too deep for the reader is unusable input too, and said as such, not "not JSON".
    let deep = format!("{{\"x\":{}1{}}}", "[".repeat(200), "]".repeat(200));
    match verify_bundle_bytes(deep.as_bytes(), &pinned(&k)) {
        Err(e @ InputError::TooDeep(_)) => assert!(e.to_string().contains("128 levels"), "{e}"),
        other => panic!("{other:?}"),
    }
    std::fs::write(&not_json, deep).unwrap();
    assert_eq!(run(&not_json, Pin::Key(&pub_json), false), Exit::Unusable);
    // Bytes that are not UTF-8 are not JSON, and the message names the first bad byte.
    match verify_bundle_bytes(b"{\"v\": \xff}", &pinned(&k)) {
        Err(e @ InputError::NotUtf8(_)) => assert_eq!(
            e.to_string(),
            "the bundle is not JSON (not UTF-8: invalid utf-8 sequence of 1 bytes from index 6); pass the bundle-<session>.json file `attenu-hook export` wrote"
        ),
        other => panic!("{other:?}"),
    }

    let text = std::fs::read_to_string(&bundle_path).unwrap();
    let dup = dir.join("dup.json");
    // The top-level object already has `v`: a second one, however the members are ordered.
    assert!(text.starts_with('{') && text.contains("\"v\":2"));
    std::fs::write(&dup, text.replacen('{', "{\"v\":2,", 1)).unwrap();
    let r = verify_bundle_bytes(&std::fs::read(&dup).unwrap(), &pinned(&k)).unwrap();
    assert_eq!(names(&r), vec!["duplicate-member"]);
    assert_eq!(run(&dup, Pin::Key(&pub_json), false), Exit::CheckFailed);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// What the reference verifier says about a bundle, under an Ed25519 public key.
fn reference_verdict(python: &std::ffi::OsStr, bundle: &Value, public: &VerifyingKey) -> Value {
    let dir = scratch_dir();
    let path = dir.join("bundle.json");
    std::fs::write(&path, serde_json::to_vec(bundle).unwrap()).unwrap();
    let script = "import json, sys\n\
                  from attenu_guard import evidence\n\
                  from attenu_guard.wire import Ed25519Verifier\n\
                  r = evidence.verify_bundle(json.load(open(sys.argv[1])), Ed25519Verifier(bytes.fromhex(sys.argv[2])))\n\
                  print(json.dumps({'ok': r['ok'], 'anchor': r['checks']['anchor'], 'failures': r['failures']}))\n";
    let out = std::process::Command::new(python)
        .arg("-c")
        .arg(script)
        .arg(&path)
        .arg(chain::hex(public.as_bytes()))
        .output()
        .expect("the reference python runs");
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// An Ed25519-signed bundle built here is accepted by the reference verifier under the
/// public key alone (so the anchor signing input is right), and a re-signed one is refused
/// by both. Needs ATTENU_REF_PYTHON (as tests/conformance.rs does), so it is marked ignored
/// (a unit test cannot skip itself at run time) and CI runs it with `--ignored`; run without
/// the reference it fails rather than pass unchecked.
#[test]
#[ignore = "needs ATTENU_REF_PYTHON (attenu-guard[crypto]==0.21.0); CI runs it with --ignored"]
fn the_reference_accepts_our_ed25519_anchor() {
    let python = std::env::var_os("ATTENU_REF_PYTHON")
        .filter(|p| !p.is_empty())
        .expect("set ATTENU_REF_PYTHON to a python with attenu-guard[crypto]==0.21.0");
    let (honest, attacker) = (key(1), key(2));
    let bundle = signed_bundle(tiny_entries(), &honest);
    let theirs = reference_verdict(&python, &bundle, &honest.verifying_key());
    assert_eq!(theirs["ok"], true, "{theirs}");
    assert_eq!(theirs["anchor"], "verified", "{theirs}");
    assert!(verify_bundle(&bundle, &pinned(&honest)).valid);

    let forged = resign(bundle, &attacker);
    let theirs = reference_verdict(&python, &forged, &honest.verifying_key());
    assert_eq!(theirs["ok"], false, "{theirs}");
    assert!(!verify_bundle(&forged, &pinned(&honest)).valid);
}

/// Each verdict has one exit, and the codes are the ones scripts read.
#[test]
fn each_verdict_exits_with_its_code() {
    for (verdict, code) in [
        (Verdict::Valid, 0),
        (Verdict::Invalid, 1),
        (Verdict::ValidUnpinned, 3),
        (Verdict::ValidWithNotice, 4),
    ] {
        assert_eq!(exit_of(verdict).code(), code, "{verdict:?}");
    }
}
