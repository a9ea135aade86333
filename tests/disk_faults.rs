//! Faults of the disk and the state files: a full disk, a read-only state directory, a ledger
//! replaced by a directory, a corrupted, locked or symlinked gate database, a corrupted config.
//! Each denies with a reason and loses nothing committed. Also the order of syncs before an
//! answer (under `strace`).

mod common;
use common::faults::hook_with;
use common::*;
use serde_json::json;
use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

fn main() {
    harness::run(tests![
        a_ledger_replaced_by_a_directory_denies,
        a_corrupted_gate_database_denies_gated_calls_only,
        a_locked_gate_database_denies_within_the_deadline_saying_so,
        a_gate_database_locked_before_it_is_set_up_denies_naming_the_lock,
        a_symlinked_gate_database_journal_denies_gated_calls_saying_it_is_a_symlink,
        a_fifo_in_place_of_the_gate_journal_is_named_for_what_it_is,
        a_corrupted_config_denies_with_what_to_fix,
        a_full_disk_denies_and_loses_nothing_committed,
        a_read_only_state_directory_denies,
        a_new_ledgers_name_is_made_durable_before_the_first_answer,
        names_are_trusted_to_the_file_fsync_only_on_ext4_and_xfs
    ]);
}

fn a_ledger_replaced_by_a_directory_denies() {
    let p = sample("ledgerdir");
    std::fs::create_dir_all(p.ledger("s1")).unwrap();
    let out = p.subagent("reviewer", "Read").id("t1").run();
    assert_denied_saying(&out, "not a regular file");
}

/// A project whose subagent ops holds Bash, which `[gate] require` gates; `config` goes
/// before the `[gate]` table.
fn gated_ops(tag: &str, config: &str) -> TempDir {
    let p = project(
        tag,
        &[("ops.md", "---\nname: ops\ntools: Read, Bash\n---\n")],
        None,
    );
    write_config(
        p.path(),
        format!("{config}[gate]\nrequire = [\"exec.bash\"]\n"),
    );
    p
}

/// Subagent ops's gated Bash call `ls` in session s1.
fn ops_bash(project: &Path, tool_use_id: &str) -> Out {
    project.bash_by("ops", "ls").id(tool_use_id).run()
}

fn a_corrupted_gate_database_denies_gated_calls_only() {
    let p = gated_ops("badsqlite", "");
    std::fs::write(p.path().join(".attenu/gate.sqlite"), GARBAGE).unwrap();
    let out = ops_bash(p.path(), "t1");
    assert_denied_with(&out, "gate-store-failed");
    assert_allowed(&p.subagent("ops", "Read").id("t2").run());
}

const GARBAGE: &[u8] = b"this is not a database, just garbage bytes....................................................................";

/// The gate's own refusal: nothing is authorized.
const REQUIRED: &str = "[gate-authorization-required]";

/// The gate database's lock wait is what is left before the deadline, not a fixed 3 s: a
/// database held by another process ends in the hook's own deny, saying it is locked, before
/// the watchdog's `deadline-exceeded` (which, with the fixed wait, came first).
fn a_locked_gate_database_denies_within_the_deadline_saying_so() {
    let p = gated_ops("lockedsqlite", "deadline_ms = 2000\n");
    // A first gated call (denied: nothing is authorized) sets the database up, in WAL mode,
    // where a writer waits for the lock rather than failing at once.
    let first = ops_bash(p.path(), "t0");
    assert!(first.reason().contains(REQUIRED), "{}", first.reason());
    let holder = rusqlite::Connection::open(p.path().join(".attenu/gate.sqlite")).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let started = std::time::Instant::now();
    let out = ops_bash(p.path(), "t1");
    // The hook's own deny, not the watchdog's exit 2.
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_denied_saying_all(&out, &["[gate-store-failed]", "database is locked"]);
    // It waited for the lock, as long as the deadline allowed.
    assert!(started.elapsed() >= Duration::from_millis(1000));
    holder.execute_batch("ROLLBACK").unwrap();
}

fn a_gate_database_locked_before_it_is_set_up_denies_naming_the_lock() {
    let p = gated_ops("lockedatopen", "deadline_ms = 4000\n");
    // A database someone else created in SQLite's default (rollback journal) mode and holds
    // an exclusive lock on: switching it to WAL needs that lock, so the hook's open waits
    // and then gives up, and the message must say it is a lock that clears, not a bad file.
    std::fs::create_dir_all(p.path().join(".attenu")).unwrap();
    let holder = rusqlite::Connection::open(p.path().join(".attenu/gate.sqlite")).unwrap();
    let locked = "CREATE TABLE t(a); BEGIN EXCLUSIVE; INSERT INTO t VALUES (1);";
    holder.execute_batch(locked).unwrap();
    let out = ops_bash(p.path(), "t1");
    assert_eq!(out.code, 0, "the hook's own deny: {}", out.stdout);
    assert_denied_saying_all(&out, &["[gate-store-failed]", BY_ANOTHER, "fuser"]);
    let why = out.reason();
    assert!(
        !why.contains("move it aside"),
        "a lock is not a bad file: {why}"
    );
    holder.execute_batch("ROLLBACK").unwrap();
    // Once the lock is gone the same call reaches the gate itself: the database was set up.
    assert!(ops_bash(p.path(), "t2").reason().contains(REQUIRED));
}

const BY_ANOTHER: &str = "is locked by another process";

/// [`gated_ops`] after a first gated call set its gate database up (denied: nothing is
/// authorized), with the database's `-wal` path free for a test to put something in.
fn gated_ops_without_journal(tag: &str) -> (TempDir, std::path::PathBuf) {
    let p = gated_ops(tag, "");
    assert!(ops_bash(p.path(), "t1").reason().contains(REQUIRED));
    let wal = p.path().join(".attenu/gate.sqlite-wal");
    let _ = std::fs::remove_file(&wal);
    (p, wal)
}

fn a_symlinked_gate_database_journal_denies_gated_calls_saying_it_is_a_symlink() {
    let (p, wal) = gated_ops_without_journal("symlinkwal");
    let elsewhere = p.path().join("elsewhere");
    std::fs::write(&elsewhere, b"").unwrap();
    std::os::unix::fs::symlink(&elsewhere, &wal).unwrap();
    let out = ops_bash(p.path(), "t2");
    let symlink = "gate.sqlite-wal is a symlink";
    assert_denied_saying_all(&out, &["[gate-store-failed]", symlink]);
    let still = std::fs::symlink_metadata(&wal).unwrap().is_symlink();
    assert!(still, "left where it was, for a person to look at");
    let written = std::fs::metadata(&elsewhere).unwrap().len();
    assert_eq!(written, 0, "nothing was written through it");
}

fn a_fifo_in_place_of_the_gate_journal_is_named_for_what_it_is() {
    let (p, wal) = gated_ops_without_journal("fifowal");
    assert!(Command::new("mkfifo").arg(&wal).status().unwrap().success());
    // SQLite itself reports only "disk I/O error"; the hook's own check names the file and
    // what is wrong with it.
    let out = ops_bash(p.path(), "t2");
    let not_regular = "gate.sqlite-wal is not a regular file";
    assert_denied_saying_all(&out, &["[gate-store-failed]", not_regular]);
}

fn a_corrupted_config_denies_with_what_to_fix() {
    let p = sample("badconfig");
    write_config(p.path(), b"\xff\xfe\x00garbage");
    let out = p.subagent("reviewer", "Read").id("t1").run();
    assert_denied_with(&out, "config-invalid");
}

/// Declares a reviewer with Read in the project at `p`.
fn reviewer_with_read(p: &Path) {
    std::fs::create_dir_all(p.join(".claude/agents")).unwrap();
    let text = "---\nname: reviewer\ntools: Read\n---\n";
    std::fs::write(p.join(".claude/agents/reviewer.md"), text).unwrap();
}

/// A small tmpfs mounted for one test (needs root and mount rights), unmounted on drop.
struct Mount(std::path::PathBuf);
impl Mount {
    /// The mount, or None where this machine does not allow it.
    fn try_tmpfs(dir: &Path, size: &str) -> Option<Mount> {
        std::fs::create_dir_all(dir).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Mount(dir.to_path_buf()))
    }
    /// The mount, or the test is skipped.
    fn tmpfs(dir: &Path, size: &str) -> Mount {
        Mount::try_tmpfs(dir, size)
            .unwrap_or_else(|| skip("cannot mount a tmpfs here (needs root and mount rights)"))
    }
    fn remount(&self, opts: &str) {
        assert!(Command::new("mount")
            .args(["-o", &format!("remount,{opts}")])
            .arg(&self.0)
            .status()
            .unwrap()
            .success());
    }
}
impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn a_full_disk_denies_and_loses_nothing_committed() {
    let base = TempDir::new("diskfull");
    let mount = Mount::tmpfs(&base.path().join("fs"), "512k");
    let p = &mount.0;
    reviewer_with_read(p);
    let read = |id: &str| p.subagent("reviewer", "Read").id(id).run();
    (0..5).for_each(|i| assert_allowed(&read(&format!("ok{i}"))));
    let before = std::fs::read(ledger_path(p, "s1")).unwrap();
    let filler = filled(p);
    // The ledger's last page may still have room for a few entries; after that every call is
    // denied (not allowed unrecorded), and every call that was allowed is on the ledger.
    let (allowed, denied) = forty_calls_on_a_full_disk(p);
    assert!(denied >= 30, "with no space left: {denied} denied");
    let after = std::fs::read(ledger_path(p, "s1")).unwrap();
    assert!(after.starts_with(&before), "nothing committed is lost");
    drop(filler);
    std::fs::remove_file(p.join("filler")).unwrap();
    let recovered = read("recovered").is_allow();
    assert!(
        recovered,
        "space back: calls decided again: {}",
        read("recovered2").stdout
    );
    assert_allowed_are_recorded(p, &allowed);
    p.export("s1");
}

/// The file system holding `p` filled up by a file `filler` in it: that file, open.
fn filled(p: &Path) -> std::fs::File {
    let mut filler = std::fs::File::create(p.join("filler")).unwrap();
    let chunk = vec![0u8; 4096];
    while filler.write_all(&chunk).is_ok() {}
    let _ = filler.sync_all();
    filler
}

/// Forty reviewer reads, each denial saying `ledger-write-failed`: the ids allowed, and how
/// many were denied.
fn forty_calls_on_a_full_disk(p: &Path) -> (Vec<String>, usize) {
    let (mut allowed, mut denied) = (Vec::new(), 0);
    for i in 0..40 {
        let id = format!("full{i}");
        let out = p.subagent("reviewer", "Read").id(&id).run();
        if out.denied() {
            denied += 1;
            assert!(
                out.reason().contains("[ledger-write-failed]"),
                "{}",
                out.reason()
            );
        } else {
            allowed.push(id);
        }
    }
    (allowed, denied)
}

/// Each of `allowed` is an allow on session s1's ledger.
#[track_caller]
fn assert_allowed_are_recorded(p: &Path, allowed: &[String]) {
    let es = entries(p, "s1");
    for id in allowed {
        let recorded = |e: &serde_json::Value| {
            e["context"]["tool_use_id"] == id.as_str() && e["event"] == "allow"
        };
        assert!(es.iter().any(recorded), "allowed {id} is recorded");
    }
}

fn a_read_only_state_directory_denies() {
    let base = TempDir::new("readonly");
    let mount = Mount::tmpfs(&base.path().join("fs"), "1m");
    let p = &mount.0;
    reviewer_with_read(p);
    let read = |id: &str| p.subagent("reviewer", "Read").id(id);
    assert_allowed(&read("t1").run());
    mount.remount("ro");
    let out = read("t2").run();
    assert!(out.denied(), "{}", out.stdout);
    let post_out = read("t1").post(json!({})).run();
    let halted = post_out.json()["continue"] == false;
    assert!(halted, "PostToolUse halts: {}", post_out.stdout);
    mount.remount("rw");
    assert_allowed(&read("t3").run());
}

/// What `/proc/self/mountinfo` says the file system holding `path` is, found by its device
/// number (an oracle independent of the hook's own sysfs lookup).
fn file_system_of(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(path).ok()?.dev();
    let id = format!("{}:{}", libc::major(dev), libc::minor(dev));
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    mountinfo.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(' ').collect();
        let dash = fields.iter().position(|f| *f == "-")?;
        (fields.get(2) == Some(&id.as_str()))
            .then(|| fields.get(dash + 1).map(|t| t.to_string()))?
    })
}

/// Regression guard: POSIX does not promise that `fdatasync` of a new file makes its name
/// durable, so before the first answer of a session the directory is synced too, except on
/// ext4 and XFS, whose own fsync of a new file writes its name (see
/// `fs::durable::new_name_durable_with_file`); later calls sync the ledger only. Checked on a tmpfs
/// (never trusted) and in the temp dir, against what mountinfo says that is.
fn a_new_ledgers_name_is_made_durable_before_the_first_answer() {
    need_tool("strace", "-V");
    let base = TempDir::new("dirsync-tmpfs");
    let on_tmpfs = tmpfs_with_a_reviewer(base.path());
    let in_temp_dir = sample("dirsync");
    let temp_dir_fs = file_system_of(in_temp_dir.path()).unwrap_or_default();
    let mut cases = vec![(in_temp_dir.path().to_path_buf(), temp_dir_fs.clone())];
    if let Some((_, p)) = &on_tmpfs {
        cases.push((p.clone(), "tmpfs".to_string()));
    }
    for (project, fs_type) in cases {
        let tracer = Tracer {
            base: base.path(),
            project: &project,
        };
        assert_names_made_durable(&tracer, &fs_type);
    }
    if on_tmpfs.is_none() {
        skip(format!(
            "only the temp dir ({temp_dir_fs}) was checked: no tmpfs could be mounted (needs root)"
        ));
    }
}

/// A tmpfs mounted in `base` (where this machine allows it) holding a project with a reviewer:
/// the mount and the project's path.
fn tmpfs_with_a_reviewer(base: &Path) -> Option<(Mount, std::path::PathBuf)> {
    Mount::try_tmpfs(&base.join("fs"), "4m").map(|mount| {
        let p = mount.0.clone();
        std::fs::create_dir_all(p.join(".claude/agents")).unwrap();
        std::fs::write(p.join(".claude/agents/reviewer.md"), REVIEWER).unwrap();
        (mount, p)
    })
}

const REVIEWER: &str = "---\nname: reviewer\ndescription: reviews\ntools: Read\n---\n";

/// Reviewer reads of `project` under `strace`, their logs kept in `base`.
struct Tracer<'a> {
    base: &'a Path,
    project: &'a Path,
}

impl Tracer<'_> {
    /// The reviewer's read of /x in `session` as `id`, allowed: what it opened, synced and
    /// wrote, one call a line, without the pid.
    fn trace(&self, session: &str, id: &str) -> Vec<String> {
        let log = self.base.join(format!("strace-{session}-{id}.log"));
        let calls = "trace=openat,fsync,fdatasync,write";
        let strace = [
            "strace",
            "-f",
            "-qq",
            "-e",
            calls,
            "-o",
            log.to_str().unwrap(),
        ];
        let read = self.project.subagent("reviewer", "Read").session(session);
        let payload = read.input(json!({"file_path": "/x"})).id(id).value();
        assert_allowed(&hook_with(&strace, &[], self.project, &payload));
        let text = std::fs::read_to_string(&log).unwrap();
        let without_pid = |l: &str| {
            l.split_once(' ')
                .map_or(l, |(_, rest)| rest)
                .trim()
                .to_string()
        };
        text.lines().map(without_pid).collect()
    }
}

/// On the file system `fs_type` of the tracer's project: the first answer of a session comes
/// after its ledger's name is durable (the directory synced, unless the file system is
/// trusted to do it with the file), the second syncs the ledger only, and an empty ledger
/// this process did not create has its directory synced on every file system.
fn assert_names_made_durable(t: &Tracer, fs_type: &str) {
    // Another session first, so the key files (made durable on their own) already exist.
    t.trace("warm", "t0");
    let first = t.trace("s1", "t1");
    let (synced, dir_synced, answered) = sync_order(&first, "ledger-s1.jsonl");
    // Without sysfs the hook cannot tell ext4 or XFS from others, and trusts none.
    let trusted = matches!(fs_type, "ext4" | "xfs") && Path::new("/sys/fs").is_dir();
    match fs_type {
        _ if trusted => assert!(
            !first[synced..answered]
                .iter()
                .any(|l| l.starts_with("fsync(")),
            "{fs_type}: the file's fdatasync made its name durable: {first:#?}"
        ),
        "ext2" | "ext3" => {} // either, depending on the driver that serves it
        _ => assert!(
            dir_synced.is_some(),
            "{fs_type}: the directory is synced before the answer: {first:#?}"
        ),
    }
    let second = t.trace("s1", "t2");
    assert!(
        second.iter().any(|l| l.starts_with("fdatasync(")),
        "{second:#?}"
    );
    let fsynced = second.iter().any(|l| l.starts_with("fsync("));
    assert!(!fsynced, "the name is durable already: {second:#?}");
    // An empty ledger this process did not create (one left by a process that died before
    // writing) may have lost the kernel's in-memory "new" mark: its directory is synced on
    // every file system.
    empty_ledger(&t.project.join(".attenu/ledger-s2.jsonl"));
    let adopted = t.trace("s2", "t3");
    let (_, dir_synced, _) = sync_order(&adopted, "ledger-s2.jsonl");
    assert!(
        dir_synced.is_some(),
        "{fs_type}: an adopted ledger's directory is synced before the answer: {adopted:#?}"
    );
}

/// Creates an empty ledger file at `path`, as a process that died before writing leaves one.
fn empty_ledger(path: &Path) {
    use std::os::unix::fs::OpenOptionsExt;
    let mut new = std::fs::OpenOptions::new();
    new.write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .unwrap();
}

/// In a trace: where the ledger named `ledger` is synced, where the directory is synced after
/// that (if it is), and where the answer is written; each searched from the one before, so an
/// fd number reused by an unrelated call earlier cannot stand in.
fn sync_order(lines: &[String], ledger: &str) -> (usize, Option<usize>, usize) {
    let after =
        |from: usize, found: &dyn Fn(&str) -> bool| (from..lines.len()).find(|&i| found(&lines[i]));
    let opened_fd = |from: usize, needle: &str| {
        (from..lines.len()).find_map(|i| {
            let l = &lines[i];
            // The first open of a new ledger fails (ENOENT) before the one creating it.
            let fd = l.rsplit("= ").next()?.parse::<u32>().ok()?;
            (l.starts_with("openat(") && l.contains(needle)).then_some((fd, i))
        })
    };
    let (fd, opened) = opened_fd(0, ledger).expect("the ledger is opened");
    let synced = after(opened, &|l| l.starts_with(&format!("fdatasync({fd})")))
        .unwrap_or_else(|| panic!("the ledger is synced: {lines:#?}"));
    let answered = after(synced, &|l| l.starts_with("write(1,"))
        .unwrap_or_else(|| panic!("an answer after the sync: {lines:#?}"));
    let dir_synced = opened_fd(synced, "/.attenu\", O_RDONLY").and_then(|(dir, at)| {
        after(at, &|l| l.starts_with(&format!("fsync({dir})"))).filter(|&i| i < answered)
    });
    (synced, dir_synced, answered)
}

/// Checks `new_name_durable_with_file` against what `/proc/self/mountinfo` says each
/// mount is: true for every ext4 and XFS mount, false for every file system that is not
/// ext2, ext3, ext4 or XFS (ext2 and ext3 depend on which driver serves them).
fn names_are_trusted_to_the_file_fsync_only_on_ext4_and_xfs() {
    use std::os::unix::fs::MetadataExt;
    // The device number's split must match the kernel's (`/dev/null` is 1:3 everywhere).
    let null = std::fs::metadata("/dev/null").unwrap().rdev();
    assert_eq!((libc::major(null), libc::minor(null)), (1, 3));
    let Ok(mountinfo) = std::fs::read_to_string("/proc/self/mountinfo") else {
        skip("no /proc/self/mountinfo to check the file-system test against");
    };
    let verdicts: Vec<bool> = mountinfo.lines().filter_map(trusted_as_expected).collect();
    let trusted = verdicts.iter().filter(|t| **t).count();
    let not_trusted = verdicts.len() - trusted;
    eprintln!("checked {trusted} ext4/XFS mounts and {not_trusted} others");
    assert!(
        not_trusted > 0,
        "no mount to check against (/proc at least is one)"
    );
}

/// For one line of mountinfo, a local mount whose device its mount point has: asserts that
/// `new_name_durable_with_file` trusts it exactly when it is ext4 or XFS (and sysfs is there
/// to tell), and returns whether it was trusted. None for a mount not checked (remote, escaped,
/// over-mounted, ext2 or ext3).
fn trusted_as_expected(line: &str) -> Option<bool> {
    use std::os::unix::fs::MetadataExt;
    let fields: Vec<&str> = line.split(' ').collect();
    let (mount_point, dash) = (fields.get(4)?, fields.iter().position(|f| *f == "-")?);
    let fs_type = *fields.get(dash + 1)?;
    // A stat can trigger an automount or hang on a dead network mount: local only.
    let remote = [
        "autofs", "nfs", "cifs", "smb", "fuse", "9p", "ceph", "gluster",
    ];
    if remote.iter().any(|r| fs_type.starts_with(r)) {
        return None;
    }
    // Mount points with spaces come escaped; those are not worth unescaping here.
    let meta = std::fs::metadata(mount_point).ok()?;
    if format!("{}:{}", libc::major(meta.dev()), libc::minor(meta.dev())) != fields[2] {
        return None; // over-mounted, or a file system whose files carry another device
    }
    let got = attenu_hook::fs::new_name_durable_with_file(meta.dev());
    match fs_type {
        // Without sysfs (some sandboxes) nothing can be told apart: nothing is trusted.
        "ext4" | "xfs" if !std::path::Path::new("/sys/fs").is_dir() => {
            assert!(
                !got,
                "{fs_type} at {mount_point}: no /sys/fs, so not trusted"
            );
            Some(false)
        }
        "ext4" | "xfs" => {
            assert!(got, "{fs_type} at {mount_point} should be trusted");
            Some(true)
        }
        "ext2" | "ext3" => None,
        _ => {
            assert!(
                !got,
                "{fs_type} at {mount_point} must keep the directory fsync"
            );
            Some(false)
        }
    }
}
