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
    std::fs::write(p.path().join(".attenu/gate.sqlite"), b"this is not a database, just garbage bytes....................................................................").unwrap();
    let out = ops_bash(p.path(), "t1");
    assert_denied_with(&out, "gate-store-failed");
    assert_allowed(&p.subagent("ops", "Read").id("t2").run());
}

/// The gate database's lock wait is what is left before the deadline, not a fixed 3 s: a
/// database held by another process ends in the hook's own deny, saying it is locked, before
/// the watchdog's `deadline-exceeded` (which, with the fixed wait, came first).
fn a_locked_gate_database_denies_within_the_deadline_saying_so() {
    let p = gated_ops("lockedsqlite", "deadline_ms = 2000\n");
    // A first gated call (denied: nothing is authorized) sets the database up, in WAL mode,
    // where a writer waits for the lock rather than failing at once.
    let first = ops_bash(p.path(), "t0");
    assert!(
        first.reason().contains("[gate-authorization-required]"),
        "{}",
        first.reason()
    );
    let holder = rusqlite::Connection::open(p.path().join(".attenu/gate.sqlite")).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let started = std::time::Instant::now();
    let out = ops_bash(p.path(), "t1");
    assert_eq!(
        out.code, 0,
        "the hook's own deny, not the watchdog's exit 2: {}",
        out.stdout
    );
    assert_denied_saying_all(&out, &["[gate-store-failed]", "database is locked"]);
    assert!(
        started.elapsed() >= Duration::from_millis(1000),
        "it waited for the lock, as long as the deadline allowed"
    );
    holder.execute_batch("ROLLBACK").unwrap();
}

fn a_gate_database_locked_before_it_is_set_up_denies_naming_the_lock() {
    let p = gated_ops("lockedatopen", "deadline_ms = 4000\n");
    // A database someone else created in SQLite's default (rollback journal) mode and holds
    // an exclusive lock on: switching it to WAL needs that lock, so the hook's open waits
    // and then gives up, and the message must say it is a lock that clears, not a bad file.
    std::fs::create_dir_all(p.path().join(".attenu")).unwrap();
    let holder = rusqlite::Connection::open(p.path().join(".attenu/gate.sqlite")).unwrap();
    holder
        .execute_batch("CREATE TABLE t(a); BEGIN EXCLUSIVE; INSERT INTO t VALUES (1);")
        .unwrap();
    let out = ops_bash(p.path(), "t1");
    assert_eq!(out.code, 0, "the hook's own deny: {}", out.stdout);
    assert_denied_saying_all(
        &out,
        &[
            "[gate-store-failed]",
            "is locked by another process",
            "fuser",
        ],
    );
    assert!(
        !out.reason().contains("move it aside"),
        "a lock is not a bad file: {}",
        out.reason()
    );
    holder.execute_batch("ROLLBACK").unwrap();
    // Once the lock is gone the same call reaches the gate itself.
    assert!(
        ops_bash(p.path(), "t2")
            .reason()
            .contains("[gate-authorization-required]"),
        "the database was set up once the lock cleared"
    );
}

/// [`gated_ops`] after a first gated call set its gate database up (denied: nothing is
/// authorized), with the database's `-wal` path free for a test to put something in.
fn gated_ops_without_journal(tag: &str) -> (TempDir, std::path::PathBuf) {
    let p = gated_ops(tag, "");
    assert!(ops_bash(p.path(), "t1")
        .reason()
        .contains("[gate-authorization-required]"));
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
    assert_denied_saying_all(
        &out,
        &["[gate-store-failed]", "gate.sqlite-wal is a symlink"],
    );
    assert!(
        std::fs::symlink_metadata(&wal)
            .unwrap()
            .file_type()
            .is_symlink(),
        "left where it was, for a person to look at"
    );
    assert_eq!(
        std::fs::metadata(&elsewhere).unwrap().len(),
        0,
        "nothing was written through it"
    );
}

fn a_fifo_in_place_of_the_gate_journal_is_named_for_what_it_is() {
    let (p, wal) = gated_ops_without_journal("fifowal");
    assert!(Command::new("mkfifo").arg(&wal).status().unwrap().success());
    // SQLite itself reports only "disk I/O error"; the hook's own check names the file and
    // what is wrong with it.
    let out = ops_bash(p.path(), "t2");
    assert!(
        out.denied()
            && out.reason().contains("[gate-store-failed]")
            && out
                .reason()
                .contains("gate.sqlite-wal is not a regular file"),
        "{}",
        out.reason()
    );
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
    for i in 0..5 {
        assert_allowed(&p.subagent("reviewer", "Read").id(&format!("ok{i}")).run());
    }
    let before = std::fs::read(ledger_path(p, "s1")).unwrap();
    // Fill the file system.
    let mut filler = std::fs::File::create(p.join("filler")).unwrap();
    let chunk = vec![0u8; 4096];
    while filler.write_all(&chunk).is_ok() {}
    let _ = filler.sync_all();
    // The ledger's last page may still have room for a few entries; after that every call is
    // denied, and every call that was allowed is on the ledger.
    let mut allowed = Vec::new();
    let mut denied = 0;
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
    assert!(
        denied >= 30,
        "with no space left, calls are denied, not allowed unrecorded ({denied} denied)"
    );
    let after = std::fs::read(ledger_path(p, "s1")).unwrap();
    assert!(after.starts_with(&before), "nothing committed is lost");
    drop(filler);
    std::fs::remove_file(p.join("filler")).unwrap();
    assert!(
        p.subagent("reviewer", "Read")
            .id("recovered")
            .run()
            .is_allow(),
        "space back: calls decided again"
    );
    let es = entries(p, "s1");
    for id in &allowed {
        assert!(
            es.iter()
                .any(|e| e["context"]["tool_use_id"] == id.as_str() && e["event"] == "allow"),
            "allowed {id} is recorded"
        );
    }
    p.export("s1");
}

fn a_read_only_state_directory_denies() {
    let base = TempDir::new("readonly");
    let mount = Mount::tmpfs(&base.path().join("fs"), "1m");
    let p = &mount.0;
    reviewer_with_read(p);
    assert_allowed(&p.subagent("reviewer", "Read").id("t1").run());
    mount.remount("ro");
    let out = p.subagent("reviewer", "Read").id("t2").run();
    assert!(out.denied(), "{}", out.stdout);
    let post_out = p
        .subagent("reviewer", "Read")
        .id("t1")
        .post(json!({}))
        .run();
    assert_eq!(
        post_out.json()["continue"],
        false,
        "PostToolUse halts: {}",
        post_out.stdout
    );
    mount.remount("rw");
    assert_allowed(&p.subagent("reviewer", "Read").id("t3").run());
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
    let on_tmpfs = Mount::try_tmpfs(&base.path().join("fs"), "4m").map(|mount| {
        let p = mount.0.clone();
        std::fs::create_dir_all(p.join(".claude/agents")).unwrap();
        std::fs::write(
            p.join(".claude/agents/reviewer.md"),
            "---\nname: reviewer\ndescription: reviews\ntools: Read\n---\n",
        )
        .unwrap();
        (mount, p)
    });
    let in_temp_dir = sample("dirsync");
    let temp_dir_fs = file_system_of(in_temp_dir.path()).unwrap_or_default();
    let mut cases = vec![(in_temp_dir.path().to_path_buf(), temp_dir_fs.clone())];
    if let Some((_, p)) = &on_tmpfs {
        cases.push((p.clone(), "tmpfs".to_string()));
    }
    for (project, fs_type) in cases {
        let trace = |session: &str, id: &str| -> Vec<String> {
            let log = base.path().join(format!("strace-{session}-{id}.log"));
            let out = hook_with(
                &[
                    "strace",
                    "-f",
                    "-qq",
                    "-e",
                    "trace=openat,fsync,fdatasync,write",
                    "-o",
                    log.to_str().unwrap(),
                ],
                &[],
                &project,
                &project
                    .subagent("reviewer", "Read")
                    .session(session)
                    .input(json!({"file_path": "/x"}))
                    .id(id)
                    .value(),
            );
            assert_allowed(&out);
            std::fs::read_to_string(&log)
                .unwrap()
                .lines()
                .map(|l| {
                    l.split_once(' ')
                        .map_or(l, |(_, rest)| rest)
                        .trim()
                        .to_string()
                })
                .collect()
        };
        // Where the ledger named `ledger` is synced, where the directory is synced after that
        // (if it is), and where the answer is written; each searched from the one before, so
        // an fd number reused by an unrelated call earlier cannot stand in.
        let order = |lines: &[String], ledger: &str| -> (usize, Option<usize>, usize) {
            let after = |from: usize, found: &dyn Fn(&str) -> bool| {
                (from..lines.len()).find(|&i| found(&lines[i]))
            };
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
        };

        // Another session first, so the key files (made durable on their own) already exist.
        trace("warm", "t0");
        let first = trace("s1", "t1");
        let (synced, dir_synced, answered) = order(&first, "ledger-s1.jsonl");
        // Without sysfs the hook cannot tell ext4 or XFS from others, and trusts none.
        let trusted = matches!(fs_type.as_str(), "ext4" | "xfs") && Path::new("/sys/fs").is_dir();
        match fs_type.as_str() {
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
        let second = trace("s1", "t2");
        assert!(
            second.iter().any(|l| l.starts_with("fdatasync(")),
            "{second:#?}"
        );
        assert!(
            !second.iter().any(|l| l.starts_with("fsync(")),
            "the name is durable already: {second:#?}"
        );

        // An empty ledger this process did not create (one left by a process that died
        // before writing) may have lost the kernel's in-memory "new" mark: its directory is
        // synced on every file system.
        {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(project.join(".attenu/ledger-s2.jsonl"))
                .unwrap();
        }
        let adopted = trace("s2", "t3");
        let (_, dir_synced, _) = order(&adopted, "ledger-s2.jsonl");
        assert!(
            dir_synced.is_some(),
            "{fs_type}: an adopted ledger's directory is synced before the answer: {adopted:#?}"
        );
    }
    if on_tmpfs.is_none() {
        skip(format!(
            "only the temp dir ({temp_dir_fs}) was checked: no tmpfs could be mounted (needs root)"
        ));
    }
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
    let (mut trusted, mut not_trusted) = (0, 0);
    for line in mountinfo.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let (Some(mount_point), Some(dash)) =
            (fields.get(4), fields.iter().position(|f| *f == "-"))
        else {
            continue;
        };
        let Some(fs_type) = fields.get(dash + 1) else {
            continue;
        };
        // A stat can trigger an automount or hang on a dead network mount: local only.
        let remote = [
            "autofs", "nfs", "cifs", "smb", "fuse", "9p", "ceph", "gluster",
        ];
        if remote.iter().any(|r| fs_type.starts_with(r)) {
            continue;
        }
        // Mount points with spaces come escaped; those are not worth unescaping here.
        let Ok(meta) = std::fs::metadata(mount_point) else {
            continue;
        };
        if format!("{}:{}", libc::major(meta.dev()), libc::minor(meta.dev())) != fields[2] {
            continue; // over-mounted, or a file system whose files carry another device
        }
        let got = attenu_hook::fs::new_name_durable_with_file(meta.dev());
        match *fs_type {
            // Without sysfs (some sandboxes) nothing can be told apart: nothing is trusted.
            "ext4" | "xfs" if !std::path::Path::new("/sys/fs").is_dir() => {
                assert!(
                    !got,
                    "{fs_type} at {mount_point}: no /sys/fs, so not trusted"
                );
                not_trusted += 1;
            }
            "ext4" | "xfs" => {
                assert!(got, "{fs_type} at {mount_point} should be trusted");
                trusted += 1;
            }
            "ext2" | "ext3" => {}
            _ => {
                assert!(
                    !got,
                    "{fs_type} at {mount_point} must keep the directory fsync"
                );
                not_trusted += 1;
            }
        }
    }
    eprintln!("checked {trusted} ext4/XFS mounts and {not_trusted} others");
    assert!(
        not_trusted > 0,
        "no mount to check against (/proc at least is one)"
    );
}
