//! The shipper against real stores: Garage (a real S3 engine, single node on loopback) and a
//! directory (`file://`). Each test drives the real binary as a subprocess on real files. The
//! Garage tests are reported as ignored without a Garage binary (ATTENU_GARAGE_BIN or `garage`
//! on PATH), and fail under ATTENU_REQUIRE_LIVE=1.

mod common;
#[path = "common/s3.rs"]
mod s3;

use attenu_hook::ship::{Store, Target};
use common::{Out, TempDir};
use s3::Garage;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn main() {
    common::harness::run(tests![
        shipped_objects_are_byte_identical_and_the_outbox_empties,
        a_store_down_keeps_everything_and_doctor_says_so_until_it_is_up,
        identical_bytes_in_the_store_count_as_shipped,
        different_bytes_in_the_store_are_a_conflict_and_nothing_is_overwritten,
        a_killed_shipper_loses_nothing,
        two_shippers_at_once_ship_each_object_once,
        a_file_target_ships_the_same_way,
        a_file_target_that_is_not_there_keeps_the_outbox,
        links_and_foreign_names_are_refused_and_reported,
        without_ship_configured_ship_exits_2_and_says_how,
        a_detached_shipper_holds_no_descriptor_the_caller_waits_on,
        an_https_endpoint_gets_a_tls_handshake,
        a_shipper_that_leaves_a_busy_lock_loses_nothing,
        ship_by_hand_waits_for_the_running_drain_and_ships_what_is_left,
        ended_sessions_all_reach_the_store_without_a_ship_by_hand,
        ended_sessions_all_reach_garage_without_a_ship_by_hand,
        a_profile_in_the_shared_files_reaches_garage,
        web_identity_goes_to_sts_before_the_store,
    ]);
}

/// A project whose `[ship] url` is `url`, with an empty outbox.
fn project(tag: &str, url: &str) -> TempDir {
    let p = TempDir::new(tag);
    let attenu = p.path().join(".attenu");
    std::fs::create_dir_all(attenu.join("outbox")).unwrap();
    for d in [&attenu, &attenu.join("outbox")] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    std::fs::write(
        attenu.join("config.toml"),
        format!("[ship]\nurl = \"{url}\"\n"),
    )
    .unwrap();
    p
}

fn outbox(p: &Path) -> PathBuf {
    p.join(".attenu/outbox")
}

/// Queues `bytes` as the object `key`, the way the writer does: a `.tmp-*` file renamed.
fn queue(p: &Path, key: &str, bytes: &[u8]) {
    let path = outbox(p).join(key);
    let dir = path.parent().unwrap();
    std::fs::create_dir_all(dir).unwrap();
    let tmp = dir.join(format!(
        ".tmp-{}",
        path.file_name().unwrap().to_string_lossy()
    ));
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(tmp, path).unwrap();
}

/// `n` objects shaped like the hook's, each with its own bytes.
fn objects(n: usize) -> Vec<(String, Vec<u8>)> {
    (0..n)
        .map(|i| {
            let kind = if i % 2 == 0 { "checkpoints" } else { "bundles" };
            let key = format!("kid1/s{}/c0/{kind}/{i:020}-{:064x}.note", i % 3, i * 7919);
            (
                key,
                format!("object {i}\n{}", "x".repeat(i % 97)).into_bytes(),
            )
        })
        .collect()
}

/// Files still in the outbox (not `.`-names).
fn pending(p: &Path) -> Vec<String> {
    fn walk(dir: &Path, prefix: &str, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            if e.file_type().unwrap().is_dir() {
                walk(&e.path(), &format!("{prefix}{name}/"), out);
            } else {
                out.push(format!("{prefix}{name}"));
            }
        }
    }
    let mut out = Vec::new();
    walk(&outbox(p), "", &mut out);
    out.sort();
    out
}

fn command(p: &Path, env: &[(String, String)], args: &[&str]) -> Command {
    let mut cmd = s3::isolated_command(args, env);
    cmd.arg("--project").arg(p);
    cmd
}

fn ship(p: &Path, env: &[(String, String)]) -> Out {
    let out = command(p, env, &["ship"]).output().unwrap();
    Out {
        code: out.status.code().expect("ship was killed by a signal"),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn state(p: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(outbox(p).join(".state")).unwrap()).unwrap()
}

/// The store at `url`, opened the way the shipper opens it.
fn store(url: &str, env: &[(String, String)]) -> Store {
    Store::with_env(url, &Target::parse(url).unwrap(), env.to_vec()).unwrap()
}

fn get(s: &Store, key: &str) -> Option<Vec<u8>> {
    attenu_hook::ship::runtime()
        .unwrap()
        .block_on(s.get(key))
        .unwrap()
}

fn create(s: &Store, key: &str, bytes: &[u8]) {
    let rt = attenu_hook::ship::runtime().unwrap();
    rt.block_on(s.create(key, bytes.to_vec())).unwrap();
}

/// Every object of `objs` in the store, byte for byte.
fn assert_stored(s: &Store, objs: &[(String, Vec<u8>)]) {
    for (key, bytes) in objs {
        assert_eq!(get(s, key).as_deref(), Some(&bytes[..]), "{key}");
    }
}

fn garage_url(g: &Garage, tag: &str) -> String {
    format!("s3://{}/{tag}", g.bucket)
}

/// A project shipping to `url` with `n` objects (see [`objects`]) queued: it and the objects.
fn queued(tag: &str, url: &str, n: usize) -> (TempDir, Vec<(String, Vec<u8>)>) {
    let p = project(tag, url);
    let objs = objects(n);
    queue_all(p.path(), &objs);
    (p, objs)
}

/// Queues each of `objs` (see [`queue`]).
fn queue_all(p: &Path, objs: &[(String, Vec<u8>)]) {
    for (k, b) in objs {
        queue(p, k, b);
    }
}

/// The keys of `objs`, sorted.
fn keys(objs: &[(String, Vec<u8>)]) -> Vec<String> {
    let mut keys: Vec<_> = objs.iter().map(|(k, _)| k.clone()).collect();
    keys.sort();
    keys
}

/// The keys the store lists.
fn listed_keys(s: &Store) -> Vec<String> {
    let listed = attenu_hook::ship::runtime()
        .unwrap()
        .block_on(s.list(""))
        .unwrap();
    listed.iter().map(|o| o.key.clone()).collect()
}

#[track_caller]
fn assert_outbox_empty(p: &Path) {
    assert_eq!(pending(p), Vec::<String>::new());
}

/// The drain succeeded (exit 0), saying each of `texts` on stderr.
#[track_caller]
fn assert_shipped(out: &Out, texts: &[&str]) {
    common::assert_exit_saying(out, 0, texts);
}

/// The drain failed (exit 1), saying each of `texts` on stderr.
#[track_caller]
fn assert_failed(out: &Out, texts: &[&str]) {
    common::assert_exit_saying(out, 1, texts);
}

/// `doctor`'s first line about `part` starts with `status` and says each of `texts`.
#[track_caller]
fn assert_doctor_line(p: &Path, part: &str, status: &str, texts: &[&str]) {
    let doctor = common::operator::doctor(p).stdout;
    let line = doctor
        .lines()
        .find(|l| l.contains(part))
        .unwrap_or_default();
    let says = texts.iter().all(|t| line.contains(t));
    assert!(line.starts_with(status) && says, "{doctor}");
}

/// `doctor`'s line about shipping (` ship `) starts with `status` and says each of `texts`.
#[track_caller]
fn assert_doctor_ship(p: &Path, status: &str, texts: &[&str]) {
    assert_doctor_line(p, " ship ", status, texts);
}

/// `file://` and the directory's path.
fn file_url(dir: &TempDir) -> String {
    format!("file://{}", dir.path().display())
}

/// Every object of `objs` in the directory store `share`, byte for byte.
#[track_caller]
fn assert_in_share(share: &TempDir, objs: &[(String, Vec<u8>)]) {
    for (k, b) in objs {
        assert_eq!(&std::fs::read(share.path().join(k)).unwrap(), b, "{k}");
    }
}

/// `cmd` spawned with its stdout to nothing and its stderr piped.
fn quiet_stdout(mut cmd: Command) -> std::process::Child {
    cmd.stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// `cmd` (a drain) spawned and killed once it has said `shipped ...` five times.
fn killed_after_five_shipped(cmd: Command) {
    let mut child = quiet_stdout(cmd);
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    for _ in 0..5 {
        let line = lines.next().expect("progress").unwrap();
        assert!(line.starts_with("shipped "), "{line}");
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

/// The keys a drain said it shipped; it must have succeeded, or left because another shipper
/// was draining.
fn shipped_by(child: std::process::Child) -> Vec<String> {
    let out = child.wait_with_output().unwrap();
    let code = out.status.code().expect("a shipper crashed");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let left = code == 1 && err.contains("another shipper is draining");
    assert!(code == 0 || left, "{code}: {err}");
    let shipped = err.lines().filter(|l| l.starts_with("shipped "));
    shipped
        .map(|l| l.rsplit(' ').next().unwrap().to_string())
        .collect()
}

/// The variables of an S3 store at `endpoint` (plain HTTP allowed) with a made-up key.
fn store_at(endpoint: &str) -> Vec<(String, String)> {
    [
        ("AWS_ACCESS_KEY_ID", "k"),
        ("AWS_SECRET_ACCESS_KEY", "s"),
        ("AWS_REGION", "garage"),
        ("AWS_ENDPOINT_URL", endpoint),
        ("AWS_ALLOW_HTTP", "true"),
    ]
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .to_vec()
}

/// `cmd` (`ship --detach`) run to its end, which must succeed, reading its pipes to EOF: the
/// pid it printed, and how long after `started` both pipes were at EOF and it had exited.
fn detached_pid(mut cmd: Command, started: Instant) -> (u32, Duration) {
    let mut parent = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (mut stdout, mut stderr) = (String::new(), String::new());
    let mut pipe = parent.stdout.take().unwrap();
    pipe.read_to_string(&mut stdout).unwrap();
    let mut pipe = parent.stderr.take().unwrap();
    pipe.read_to_string(&mut stderr).unwrap();
    assert!(parent.wait().unwrap().success(), "{stderr}");
    let eof_after = started.elapsed();
    let pid = stdout.trim().parse();
    (
        pid.unwrap_or_else(|_| panic!("{stdout:?} {stderr:?}")),
        eof_after,
    )
}

/// A listener on loopback that reads the first two bytes of its first connection and hangs
/// up: its address, and the thread that returns those bytes.
fn listener_of_two_bytes() -> (String, std::thread::JoinHandle<[u8; 2]>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let first = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut head = [0u8; 2];
        conn.read_exact(&mut head).unwrap();
        head
    });
    (addr, first)
}

/// Once the shipper `pid` has connected to `silent`: its `/proc/PID/stat` ("" when it is gone),
/// read before it is killed.
fn stat_once_connected_then_killed(silent: &std::net::TcpListener, pid: u32) -> String {
    silent.set_nonblocking(false).unwrap();
    let (_conn, _) = silent.accept().unwrap();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
    stat
}

/// `ship --detach` for project `p`, which must succeed, and the detached shipper's end.
fn ship_detached_and_wait_gone(p: &Path) {
    let out = command(p, &[], &["ship", "--detach"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_gone(String::from_utf8_lossy(&out.stdout).trim().parse().unwrap());
}

fn shipped_objects_are_byte_identical_and_the_outbox_empties() {
    let g = Garage::start();
    let url = garage_url(&g, "basic");
    let (p, objs) = queued("ship-basic", &url, 10);
    // A file being written stays where it is.
    std::fs::write(outbox(p.path()).join("kid1/.tmp-partial"), b"half").unwrap();
    assert_shipped(&ship(p.path(), &g.env()), &["shipped 3/10 "]);
    assert_outbox_empty(p.path());
    assert!(outbox(p.path()).join("kid1/.tmp-partial").exists());
    assert_stored(&store(&url, &g.env()), &objs);
    assert_eq!(listed_keys(&store(&url, &g.env())), keys(&objs));
    let st = state(p.path());
    assert_eq!(st["shipped"], 10, "{st}");
    assert_eq!(st["left"], 0, "{st}");
    let succeeded = st["last_error"].is_null() && st["last_success_unix_ms"].is_u64();
    assert!(succeeded, "{st}");
    // Nothing left: a second drain ships nothing and succeeds.
    assert_eq!(ship(p.path(), &g.env()).code, 0);
}

fn a_store_down_keeps_everything_and_doctor_says_so_until_it_is_up() {
    let mut g = Garage::start();
    let url = garage_url(&g, "down");
    let (p, objs) = queued("ship-down", &url, 4);
    g.stop();
    assert_failed(&ship(p.path(), &g.env()), &["4 left in the outbox"]);
    // Nothing removed while the store is down.
    assert_eq!(pending(p.path()), keys(&objs));
    let st = state(p.path());
    let error = st["last_error"].as_str();
    assert!(error.is_some_and(|e| !e.is_empty()), "{st}");
    assert!(st["last_success_unix_ms"].is_null(), "{st}");
    assert_doctor_ship(p.path(), "warn", &WAITING);
    g.resume();
    assert_shipped(&ship(p.path(), &g.env()), &[]);
    assert_outbox_empty(p.path());
    assert_stored(&store(&url, &g.env()), &objs);
    assert!(state(p.path())["last_error"].is_null());
    assert_doctor_ship(p.path(), "ok", &["the outbox is empty"]);
}

const WAITING: [&str; 2] = ["4 object(s) waiting", "the last drain failed"];

fn identical_bytes_in_the_store_count_as_shipped() {
    let g = Garage::start();
    let url = garage_url(&g, "same");
    let (p, objs) = queued("ship-same", &url, 2);
    // As if an earlier drain was killed after its PUT and before it removed the file.
    create(&store(&url, &g.env()), &objs[0].0, &objs[0].1);
    assert_shipped(&ship(p.path(), &g.env()), &["already in the store"]);
    assert_outbox_empty(p.path());
    assert_stored(&store(&url, &g.env()), &objs);
}

fn different_bytes_in_the_store_are_a_conflict_and_nothing_is_overwritten() {
    let g = Garage::start();
    let url = garage_url(&g, "conflict");
    let (p, objs) = queued("ship-conflict", &url, 3);
    let (s, theirs) = (store(&url, &g.env()), b"someone else's bytes");
    create(&s, &objs[1].0, theirs);
    let holds = format!("the store holds different bytes under {}", objs[1].0);
    assert_failed(&ship(p.path(), &g.env()), &[&holds, BEFORE_US]);
    assert_eq!(pending(p.path()), [objs[1].0.clone()], "only it stays");
    // Garage 2.5.0 ignores If-None-Match: the shipper must not have PUT over it.
    assert_eq!(get(&s, &objs[1].0).as_deref(), Some(&theirs[..]));
    assert_stored(&s, &[objs[0].clone(), objs[2].clone()]);
    let st = state(p.path());
    let error = st["last_error"].as_str().unwrap();
    assert!(error.contains("different bytes"), "{st}");
}

fn a_killed_shipper_loses_nothing() {
    let g = Garage::start();
    let url = garage_url(&g, "killed");
    let (p, objs) = queued("ship-killed", &url, 120);
    killed_after_five_shipped(command(p.path(), &g.env(), &["ship"]));
    let left = pending(p.path());
    let mid_drain = !left.is_empty() && left.len() < objs.len();
    assert!(mid_drain, "killed mid-drain: {} left", left.len());
    // Removed only once stored.
    let s = store(&url, &g.env());
    let gone = objs.iter().filter(|(k, _)| !left.contains(k));
    assert_stored(&s, &gone.cloned().collect::<Vec<_>>());
    assert_shipped(&ship(p.path(), &g.env()), &[]);
    assert_outbox_empty(p.path());
    assert_stored(&s, &objs);
}

fn two_shippers_at_once_ship_each_object_once() {
    let g = Garage::start();
    let url = garage_url(&g, "two");
    let (p, objs) = queued("ship-two", &url, 60);
    let spawn = || quiet_stdout(command(p.path(), &g.env(), &["ship"]));
    let (a, b) = (spawn(), spawn());
    let mut shipped: Vec<String> = [a, b].into_iter().flat_map(shipped_by).collect();
    shipped.sort();
    assert_eq!(shipped, keys(&objs), "every object shipped exactly once");
    assert_outbox_empty(p.path());
    assert_stored(&store(&url, &g.env()), &objs);
}

/// A directory store; what `ship` prints of it is pinned.
fn a_file_target_ships_the_same_way() {
    let share = TempDir::new("share");
    let (p, objs) = queued("ship-file", &file_url(&share), 5);
    let shipped = ship(p.path(), &[]);
    assert_shipped(&shipped, &[]);
    assert_outbox_empty(p.path());
    assert_in_share(&share, &objs);
    // The same key again: identical bytes are shipped, different ones a conflict.
    queue(p.path(), &objs[0].0, &objs[0].1);
    queue(p.path(), &objs[1].0, b"rewritten");
    let conflict = ship(p.path(), &[]);
    assert_failed(&conflict, &[BEFORE_US]);
    assert_eq!(pending(p.path()), vec![objs[1].0.clone()]);
    assert_in_share(&share, &objs[1..2]);
    let text = common::transcript("ship", &shipped)
        + &common::transcript("ship (one object again, one rewritten)", &conflict);
    let masks = [
        (share.path().to_str().unwrap(), "<share>"),
        (p.path().to_str().unwrap(), "<project>"),
    ];
    common::assert_snapshot("ship.txt", &common::mask(&text, &masks));
}

/// A share that is not there (not mounted): nothing removed, the reason given.
fn a_file_target_that_is_not_there_keeps_the_outbox() {
    let objs = objects(3);
    let gone = project("ship-file-gone", "file:///nonexistent/attenu-share");
    queue(gone.path(), &objs[2].0, &objs[2].1);
    assert_failed(&ship(gone.path(), &[]), &[NOT_MOUNTED]);
    assert_eq!(pending(gone.path()), vec![objs[2].0.clone()]);
}

const BEFORE_US: &str = "someone wrote it before us";
const NOT_MOUNTED: &str = "/nonexistent/attenu-share does not exist: mount the share there, or create it (`mkdir -p /nonexistent/attenu-share`)";

fn links_and_foreign_names_are_refused_and_reported() {
    let share = TempDir::new("share-refused");
    let p = project("ship-refused", &file_url(&share));
    queue(p.path(), "kid1/s1/c0/checkpoints/a.note", b"fine");
    let secret = links_and_a_foreign_name_queued(p.path());
    assert_failed(&ship(p.path(), &[]), &REFUSED);
    assert!(share.path().join("kid1/s1/c0/checkpoints/a.note").exists());
    let (link, dirlink) = (
        share.path().join("kid1/link.note"),
        share.path().join("dirlink"),
    );
    assert!(!link.exists() && !dirlink.exists());
    assert!(secret.exists());
}

/// Puts in the outbox a link to a file outside it (`secret.txt`, returned), a link to the
/// project (a directory) and a file whose name is not an object's.
fn links_and_a_foreign_name_queued(p: &Path) -> PathBuf {
    let secret = p.join("secret.txt");
    std::fs::write(&secret, b"not evidence").unwrap();
    std::os::unix::fs::symlink(&secret, outbox(p).join("kid1/link.note")).unwrap();
    std::os::unix::fs::symlink(p, outbox(p).join("dirlink")).unwrap();
    std::fs::write(outbox(p).join("bad name"), b"x").unwrap();
    secret
}

const REFUSED: [&str; 3] = [
    "link.note is not shipped: it is a symlink",
    "dirlink is not shipped: it is a symlink",
    "bad name is not shipped",
];

fn without_ship_configured_ship_exits_2_and_says_how() {
    let p = TempDir::new("ship-off");
    std::fs::create_dir_all(p.path().join(".attenu")).unwrap();
    common::assert_exit_saying(&ship(p.path(), &[]), 2, &["[ship]", "url = "]);
    assert_doctor_ship(p.path(), "ok", &["shipping is off"]);
    // A bad [ship] is a config error like any other.
    let config = p.path().join(".attenu/config.toml");
    std::fs::write(config, "[ship]\nurl = \"s3:/oops\"\n").unwrap();
    common::assert_exit_saying(&ship(p.path(), &[]), 2, &["ship.url"]);
}

fn a_detached_shipper_holds_no_descriptor_the_caller_waits_on() {
    // A store that accepts connections and never answers: the shipper stays in its first
    // request (object_store's request timeout) long after the command that started it exits.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", silent.local_addr().unwrap());
    let p = project("ship-detach", "s3://evidence/detached");
    queue(p.path(), "kid1/s1/c0/checkpoints/a.note", b"bytes");
    let detach = command(p.path(), &store_at(&endpoint), &["ship", "--detach"]);
    let (pid, eof_after) = detached_pid(detach, Instant::now());
    // The shipper is still there, in the request the silent store never answers.
    let stat = stat_once_connected_then_killed(&silent, pid);
    assert!(!stat.is_empty(), "the shipper {pid} should still run");
    assert!(eof_after < Duration::from_secs(3), "EOF took {eof_after:?}");
    // In its own process group: field 5 of /proc/PID/stat, the third after the name.
    let fields = stat.rsplit(')').next();
    let pgrp = fields.and_then(|f| f.split_whitespace().nth(2));
    assert_eq!(pgrp, Some(&pid.to_string()[..]), "{stat}");
    assert_eq!(pending(p.path()).len(), 1, "nothing lost");
}

fn an_https_endpoint_gets_a_tls_handshake() {
    // TLS goes through ring, installed as the process's provider when the store opens: an
    // https endpoint must get a ClientHello (record type 22, version 3.x), not a panic for a
    // missing provider. The listener then hangs up, so the drain fails and keeps the file.
    let (endpoint, first_bytes) = listener_of_two_bytes();
    let p = project("ship-tls", "s3://evidence/tls");
    queue(p.path(), "kid1/s1/c0/checkpoints/a.note", b"bytes");
    let mut env = store_at(&format!("https://{endpoint}"));
    env.retain(|(k, _)| k != "AWS_ALLOW_HTTP");
    let out = ship(p.path(), &env);
    assert_eq!(first_bytes.join().unwrap(), [0x16, 0x03], "a TLS handshake");
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(pending(p.path()).len(), 1, "nothing lost");
}

/// A shipper that holds the lock after its last scan, and one started for a newly queued
/// object that leaves because the lock is taken: the first ships that object before it exits.
/// The interleaving is forced: the first pauses (ATTENU_SHIP_TEST_PAUSE) in that window.
fn a_shipper_that_leaves_a_busy_lock_loses_nothing() {
    common::harness::need_test_faults();
    let share = TempDir::new("share-bell");
    let p = project("ship-bell", &file_url(&share));
    let objs = objects(2);
    queue(p.path(), &objs[0].0, &objs[0].1);
    let (mut first, pause) = paused_shipper(p.path(), "ship-bell-pause");
    assert_outbox_empty(p.path()); // the first drain ran
                                   // The hook's way of asking for a shipper: queue, then `spawn_detached`.
    queue(p.path(), &objs[1].0, &objs[1].1);
    ship_detached_and_wait_gone(p.path());
    // The second shipper left the object to the lock's holder.
    assert_eq!(pending(p.path()), [objs[1].0.clone()]);
    std::fs::write(pause.path().join("go"), b"").unwrap();
    assert!(first.wait().unwrap().success());
    assert_outbox_empty(p.path()); // nothing left behind
    assert_in_share(&share, &objs);
}

const RUNNING_SHIPPED: &str = "the running shipper shipped 2 object(s)";

/// `ship` by hand while a drain holds the lock waits for it, says what it shipped, then ships
/// what was queued after that drain's last scan.
fn ship_by_hand_waits_for_the_running_drain_and_ships_what_is_left() {
    common::harness::need_test_faults();
    let share = TempDir::new("share-wait");
    let p = project("ship-wait", &file_url(&share));
    let objs = objects(3);
    queue_all(p.path(), &objs[..2]);
    let (mut first, pause) = paused_shipper(p.path(), "ship-wait-pause");
    // Queued without a bell: only a shipper that scans again finds it.
    queue(p.path(), &objs[2].0, &objs[2].1);
    let mut by_hand = quiet_stdout(command(p.path(), &[], &["ship"]));
    let mut lines = BufReader::new(by_hand.stderr.take().unwrap()).lines();
    let waiting = lines.next().unwrap().unwrap();
    assert!(waiting.contains("waiting for it to finish"), "{waiting}");
    std::fs::write(pause.path().join("go"), b"").unwrap();
    assert!(first.wait().unwrap().success());
    let rest: String = lines.map(|l| l.unwrap() + "\n").collect();
    let last = format!("shipped 1/1 {}", objs[2].0);
    common::assert_contains(&rest, &[RUNNING_SHIPPED, &last, "the outbox is empty"]);
    assert!(by_hand.wait().unwrap().success());
    assert_outbox_empty(p.path());
}

/// Waits until the process `pid` (not our child) has ended or is a zombie.
fn wait_gone(pid: u32) {
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rsplit(')')
            .next()
            .and_then(|f| f.split_whitespace().next());
        if matches!(state, None | Some("Z") | Some("X")) {
            return;
        }
        assert!(Instant::now() < until, "process {pid} is still running");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits until `path` exists.
fn wait_for(path: &Path) {
    let until = Instant::now() + Duration::from_secs(60);
    while !path.exists() {
        assert!(Instant::now() < until, "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A quiet shipper of project `p`, paused (ATTENU_SHIP_TEST_PAUSE) after its last scan with the
/// lock still held; `go` in the returned directory lets it go on.
fn paused_shipper(p: &Path, tag: &str) -> (std::process::Child, TempDir) {
    let pause = TempDir::new(tag);
    let env = [(
        "ATTENU_SHIP_TEST_PAUSE".to_string(),
        pause.path().display().to_string(),
    )];
    let child = command(p, &env, &["ship", "--quiet"]).spawn().unwrap();
    wait_for(&pause.path().join("paused"));
    (child, pause)
}

/// Ten sessions recorded at once, each with a burst of parallel denials and its SessionEnd
/// right after a deny, with no `ship` by hand: the hook's own shippers leave every object in
/// the store, and the audit finds every session complete. (The interleaving that used to
/// strand an object is forced in `a_shipper_that_leaves_a_busy_lock_loses_nothing`; this is
/// the whole path under load.)
fn ended_sessions_all_reach_the_store_without_a_ship_by_hand() {
    let share = TempDir::new("share-ten");
    ten_ended_sessions(&format!("file://{}", share.path().display()), &[]);
}

/// The same against a real S3 engine (Garage on loopback), the hook's own shippers taking
/// the store's variables from the hook's environment (issue 38's acceptance).
fn ended_sessions_all_reach_garage_without_a_ship_by_hand() {
    let g = Garage::start();
    ten_ended_sessions(&garage_url(&g, "ten"), &g.env());
}

fn ten_ended_sessions(url: &str, store_env: &[(String, String)]) {
    let p = common::sample("ship-ten");
    common::write_config(p.path(), format!("[ship]\nurl = \"{url}\"\n"));
    let root = p.path().to_path_buf();
    let env: Vec<(&str, &std::ffi::OsStr)> = store_env
        .iter()
        .map(|(k, v)| (k.as_str(), std::ffi::OsStr::new(v)))
        .collect();
    let env = &env;
    let sessions: Vec<String> = (0..10).map(|i| format!("s{i}")).collect();
    std::thread::scope(|scope| {
        for s in &sessions {
            let root = root.clone();
            scope.spawn(move || {
                let start = common::session_start(s, &root, "startup");
                assert_eq!(common::hook_env(&root, &start, env).code, 0);
                std::thread::scope(|burst| {
                    for i in 0..3 {
                        let root = root.clone();
                        burst.spawn(move || {
                            let call = common::pre(
                                s,
                                &root,
                                Some("reviewer"),
                                "Bash",
                                serde_json::json!({"command": "ls"}),
                                &format!("t{i}"),
                            );
                            assert!(common::hook_env(&root, &call, env).denied());
                        });
                    }
                });
                let end = common::event(s, &root, "SessionEnd");
                assert_eq!(common::hook_env(&root, &end, env).code, 0);
            });
        }
    });
    // Wait for the detached shippers (bounded; how long it took is printed, not asserted).
    let anchor = root.join(".attenu/anchor.pub");
    let started = Instant::now();
    let report = loop {
        let out = s3::isolated_command(
            &["audit", url, "--pub", anchor.to_str().unwrap(), "--json"],
            store_env,
        )
        .output()
        .unwrap();
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        let complete = report["sessions"]
            .as_array()
            .is_some_and(|s| s.len() == 10 && s.iter().all(|x| x["status"] == "complete"));
        if (complete && pending(&root).is_empty()) || started.elapsed() > Duration::from_secs(120) {
            break report;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    eprintln!(
        "all ten sessions complete in the store after {:?}",
        started.elapsed()
    );
    assert_eq!(
        pending(&root),
        Vec::<String>::new(),
        "nothing left in the outbox"
    );
    for s in report["sessions"].as_array().unwrap() {
        assert_eq!(s["status"], "complete", "{s}");
        // SessionStart, three denials and SessionEnd each made one.
        let shipped = s["chains"][0]["checkpoints"].as_array().map_or(0, Vec::len);
        assert!(shipped >= 4, "{s}");
    }
    assert_eq!(report["sessions"].as_array().unwrap().len(), 10, "{report}");
}

/// Credentials as teams hold them (issue 41): a named profile in the shared config and
/// credentials files (named by AWS_CONFIG_FILE and AWS_SHARED_CREDENTIALS_FILE), with no
/// `AWS_ACCESS_KEY_ID` in the environment, reaches Garage; a profile that is not there is
/// refused with what to do, and nothing leaves the outbox.
fn a_profile_in_the_shared_files_reaches_garage() {
    let g = Garage::start();
    let url = garage_url(&g, "profile");
    let (p, objs) = queued("ship-profile", &url, 3);
    let aws = shared_files_with_team_profile(&g);
    let missing = ship(p.path(), &profile_env(&aws, "nope"));
    assert_ne!(missing.code, 0, "{}", missing.stderr);
    let neither = "the profile nope (AWS_PROFILE) is in neither";
    assert!(missing.stderr.contains(neither), "{}", missing.stderr);
    assert_eq!(pending(p.path()).len(), 3);
    assert_shipped(&ship(p.path(), &profile_env(&aws, "team")), &[]);
    assert_outbox_empty(p.path());
    assert_stored(&store(&url, &g.env()), &objs);
}

/// Shared AWS files in a directory of their own: `credentials` with a wrong default and the
/// Garage key as profile `team`, and `config` giving `team` Garage's region and endpoint.
fn shared_files_with_team_profile(g: &Garage) -> TempDir {
    let aws = TempDir::new("aws-files");
    std::fs::write(
        aws.path().join("credentials"),
        format!(
            "[default]\naws_access_key_id = wrong\naws_secret_access_key = wrong\n\n[team]\naws_access_key_id = {}\naws_secret_access_key = {}\n",
            g.key_id, g.secret
        ),
    )
    .unwrap();
    std::fs::write(
        aws.path().join("config"),
        format!(
            "[profile team]\nregion = {}\nendpoint_url = {}\n",
            g.region, g.endpoint
        ),
    )
    .unwrap();
    aws
}

/// The variables naming `profile` in the shared files in `aws`, and no key.
fn profile_env(aws: &TempDir, profile: &str) -> Vec<(String, String)> {
    let (config, credentials) = (aws.path().join("config"), aws.path().join("credentials"));
    [
        ("AWS_PROFILE", profile),
        ("AWS_CONFIG_FILE", config.to_str().unwrap()),
        ("AWS_SHARED_CREDENTIALS_FILE", credentials.to_str().unwrap()),
        ("AWS_ALLOW_HTTP", "true"),
    ]
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .to_vec()
}

/// Web identity for CI (AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN), with no key in the
/// environment: the shipper goes to STS (AssumeRoleWithWebIdentity, object_store's provider,
/// which speaks only https) before the store. A listener in STS's place sees its TLS
/// handshake, then hangs up, so nothing is shipped and the outbox keeps the file.
fn web_identity_goes_to_sts_before_the_store() {
    let (sts, first_bytes) = listener_of_two_bytes();
    let p = project("ship-web-identity", "s3://bucket/ci");
    queue(p.path(), "kid1/s1/c0/checkpoints/a.note", b"bytes");
    let token = p.path().join("token");
    std::fs::write(&token, "header.payload.signature").unwrap();
    let out = ship(p.path(), &web_identity_env(&token, &sts));
    let handshake = first_bytes.join().unwrap();
    assert_eq!(handshake, [0x16, 0x03], "a TLS handshake with STS");
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(pending(p.path()).len(), 1, "nothing lost");
}

/// The variables of web identity with the token in `token` and STS at `https://<sts>`, the store
/// at a port nothing listens on.
fn web_identity_env(token: &Path, sts: &str) -> Vec<(String, String)> {
    [
        ("AWS_WEB_IDENTITY_TOKEN_FILE", token.to_str().unwrap()),
        ("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/ci-shipper"),
        ("AWS_ENDPOINT_URL_STS", &format!("https://{sts}")),
        ("AWS_ENDPOINT_URL", "http://127.0.0.1:9"),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ALLOW_HTTP", "true"),
    ]
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .to_vec()
}
