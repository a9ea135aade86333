//! `doctor` tries the store of `[ship] url`: it runs `attenu-hook-ship ship --probe`, which
//! writes one small object under `attenu-doctor/`, reads it back and deletes it where the store
//! allows. Against a real S3 engine (Garage, ignored without it) and a directory (`file://`),
//! each through the real binaries.

mod common;
#[path = "common/s3.rs"]
mod s3;

use attenu_hook::ship::{Store, Target};
use common::{need_test_faults, Out, TempDir};
use s3::Garage;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

fn main() {
    common::harness::run(tests![
        doctor_probes_garage_and_deletes_its_object,
        doctor_reports_a_store_that_refuses_deletes_as_write_once,
        doctor_fails_when_the_store_is_down,
        doctor_probes_a_file_store_and_deletes_its_object,
        doctor_says_how_to_create_a_missing_file_store,
        doctor_probes_nothing_with_shipping_off,
        the_hook_binary_does_not_link_the_store_client,
    ]);
}

/// A project whose `[ship] url` is `url`, with an outbox holding one object queued `age_s`
/// seconds ago (none when `None`).
fn project(tag: &str, url: &str, age_s: Option<u64>) -> TempDir {
    let p = TempDir::new(tag);
    let attenu = p.path().join(".attenu");
    let outbox = attenu.join("outbox");
    std::fs::create_dir_all(&outbox).unwrap();
    for d in [&attenu, &outbox] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    std::fs::write(
        attenu.join("config.toml"),
        format!("[ship]\nurl = \"{url}\"\n"),
    )
    .unwrap();
    if let Some(age) = age_s {
        let dir = outbox.join("kid1/s1/c0/checkpoints");
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join(format!("{:020}-{:064x}.note", 3, 7));
        std::fs::write(&f, b"queued").unwrap();
        let then = std::time::SystemTime::now() - std::time::Duration::from_secs(age);
        std::fs::File::options()
            .write(true)
            .open(&f)
            .unwrap()
            .set_modified(then)
            .unwrap();
    }
    p
}

/// `attenu-hook doctor DIR` with the store's environment only.
fn doctor(p: &Path, env: &[(String, String)]) -> Out {
    let out = s3::isolated_command(&["doctor"], env)
        .arg(p)
        .output()
        .unwrap();
    Out {
        code: out.status.code().expect("doctor was killed"),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The line of check `label` (`ship:store`, `ship`).
fn line<'a>(out: &'a Out, label: &str) -> &'a str {
    out.stdout
        .lines()
        .find(|l| {
            l.get(6..)
                .is_some_and(|r| r.starts_with(&format!("{label} ")))
        })
        .unwrap_or_else(|| panic!("no {label} line: {}{}", out.stdout, out.stderr))
}

/// The line of check `label` starts with `status` and says each of `texts`.
#[track_caller]
fn assert_line(out: &Out, label: &str, status: &str, texts: &[&str]) {
    let line = line(out, label);
    assert!(line.starts_with(status), "{}", out.stdout);
    for text in texts {
        assert!(line.contains(text), "{text:?}: {line}");
    }
}

fn probe_objects(url: &str, env: &[(String, String)]) -> Vec<String> {
    let store = Store::with_env(url, &Target::parse(url).unwrap(), env.to_vec()).unwrap();
    let rt = attenu_hook::ship::runtime().unwrap();
    rt.block_on(store.list("attenu-doctor"))
        .unwrap()
        .into_iter()
        .map(|o| o.key)
        .collect()
}

fn doctor_probes_garage_and_deletes_its_object() {
    let g = Garage::start();
    let url = format!("s3://{}/probe", g.bucket);
    let p = project("probe-garage", &url, Some(7200));
    let out = doctor(p.path(), &g.env());
    let wrote = format!("{url}: wrote attenu-doctor/probe-");
    assert_line(&out, "ship:store", "ok", &[&wrote, IDENTICAL]);
    assert_eq!(probe_objects(&url, &g.env()), Vec::<String>::new());
    // The backlog's age beside it: the oldest unshipped object, queued two hours ago.
    assert_line(
        &out,
        "ship",
        "warn",
        &["1 object(s) waiting, the oldest for 2 h"],
    );
    // The probe shipped nothing: the queued object is still there.
    let queued = p.path().join(".attenu/outbox/kid1/s1/c0/checkpoints");
    assert!(queued.read_dir().unwrap().next().is_some());
}

const IDENTICAL: &str = "read it back identical, deleted it";

fn doctor_reports_a_store_that_refuses_deletes_as_write_once() {
    need_test_faults();
    let g = Garage::start();
    let url = format!("s3://{}/worm", g.bucket);
    let p = project("probe-worm", &url, None);
    let mut env = g.env();
    env.push(("ATTENU_SHIP_TEST_REFUSE_DELETE".into(), "1".into()));
    let out = doctor(p.path(), &env);
    assert_line(
        &out,
        "ship:store",
        "ok",
        &["refused to delete it, as a write-once bucket does"],
    );
    let left = probe_objects(&url, &g.env());
    assert_eq!(left.len(), 1, "{left:?}");
    let store = line(&out, "ship:store");
    assert!(store.contains(&left[0]), "{store} {left:?}");
}

fn doctor_fails_when_the_store_is_down() {
    let mut g = Garage::start();
    let url = format!("s3://{}/down", g.bucket);
    let p = project("probe-down", &url, None);
    g.stop();
    let out = doctor(p.path(), &g.env());
    let says = ["cannot write the probe object", "nothing can ship"];
    assert_line(&out, "ship:store", "FAIL", &says);
    assert_eq!(out.code, 1, "{}", out.stdout);
    // Wrong credentials are a failure too, with the store's own words.
    g.resume();
    let mut env = g.env();
    env.retain(|(k, _)| k != "AWS_SECRET_ACCESS_KEY");
    env.push(("AWS_SECRET_ACCESS_KEY".into(), "0".repeat(64)));
    assert_line(&doctor(p.path(), &env), "ship:store", "FAIL", &[]);
}

fn doctor_probes_a_file_store_and_deletes_its_object() {
    let share = TempDir::new("probe-share");
    let url = format!("file://{}", share.path().display());
    let p = project("probe-file", &url, None);
    assert_line(&doctor(p.path(), &[]), "ship:store", "ok", &[IDENTICAL]);
    let dir = share.path().join("attenu-doctor");
    let files: Vec<_> = std::fs::read_dir(&dir)
        .map(|d| d.flatten().collect())
        .unwrap_or_default();
    assert!(files.is_empty(), "{files:?}");
}

/// A share that is not there: a failure that says what to do.
fn doctor_says_how_to_create_a_missing_file_store() {
    let gone = project(
        "probe-file-gone",
        "file:///nonexistent/attenu-probe-share",
        None,
    );
    let out = doctor(gone.path(), &[]);
    assert_line(
        &out,
        "ship:store",
        "FAIL",
        &["/nonexistent/attenu-probe-share"],
    );
    assert_eq!(out.code, 1);
}

/// Shipping off: no probe at all.
fn doctor_probes_nothing_with_shipping_off() {
    let off = TempDir::new("probe-off");
    let out = doctor(off.path(), &[]);
    assert!(!out.stdout.contains("ship:store"), "{}", out.stdout);
}

/// The probe runs in attenu-hook-ship: the hook's own binary defines no function of the
/// object-store client (its symbol table, read with binutils' `nm`; the debug info names the
/// library's types either way).
fn the_hook_binary_does_not_link_the_store_client() {
    common::need_tool("nm", "--version");
    let hook = env!("CARGO_BIN_EXE_attenu-hook");
    let ship = env!("CARGO_BIN_EXE_attenu-hook-ship");
    for needle in ["object_store::", "tokio::runtime", "reqwest::"] {
        assert!(defined(ship, needle) > 0, "the shipper defines no {needle}");
        assert_eq!(
            defined(hook, needle),
            0,
            "attenu-hook defines {needle} functions"
        );
    }
}

/// How many symbols the binary `bin` defines whose demangled names contain `needle`.
fn defined(bin: &str, needle: &str) -> usize {
    let out = std::process::Command::new("nm")
        .args(["--defined-only", "--demangle", bin])
        .output()
        .unwrap();
    assert!(out.status.success(), "nm {bin}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains(needle))
        .count()
}
