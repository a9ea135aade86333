//! The packages teams install from (issue 41): `bash packaging/build` makes them from a release
//! build, and each installs in one command on a clean environment (a fresh HOME, a PATH with
//! neither cargo nor rustc) and answers a hook call through the wiring `install` writes.
//!
//! It builds release binaries (minutes the first time), so outside CI it runs only with
//! `ATTENU_PACKAGING=1`; CI (`ATTENU_REQUIRE_LIVE=1`) always runs it, reusing its target dir.

mod common;
use common::*;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn main() {
    harness::run(tests![
        npm_deb_and_tarball_install_without_rust_and_answer_a_hook_call
    ]);
}

/// What a clean machine has on PATH: the system's directories, where neither cargo nor rustc
/// lives (rustup puts them in ~/.cargo/bin).
const SYSTEM_PATH: &str = "/usr/sbin:/usr/bin:/sbin:/bin";

/// The target directory this test's binaries were built in, which the build reuses.
fn target_dir() -> PathBuf {
    Path::new(BIN)
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .to_path_buf()
}

/// Runs `program` with only `env` (and HOME, PATH from `home`, `path`): a clean environment.
fn clean(program: &str, args: &[&str], home: &Path, path: &str, dir: &Path) -> Out {
    let out = Command::new(program)
        .args(args)
        .env_clear()
        .env("HOME", home)
        .env("PATH", path)
        .env("LANG", "C.UTF-8")
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[track_caller]
fn ok(out: Out, what: &str) -> Out {
    assert_eq!(out.code, 0, "{what}: {}{}", out.stdout, out.stderr);
    out
}

/// One artifact of the build, by its file name's start and end.
fn artifact(dist: &Path, prefix: &str, suffix: &str) -> PathBuf {
    std::fs::read_dir(dist)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.starts_with(prefix) && n.ends_with(suffix)
        })
        .unwrap_or_else(|| panic!("no {prefix}*{suffix} in {}", dist.display()))
}

/// Wires a fresh project with the installed `attenu-hook` (found on `path`), then sends two
/// calls through the command `install` wrote, the way Claude Code runs it (`sh -c`, with
/// `CLAUDE_PROJECT_DIR`): the main thread's read is allowed (`{}`), a subagent's Bash outside
/// its declared tools denied.
fn wire_and_call(what: &str, home: &Path, path: &str, scratch: &Path) {
    let project = scratch.join(format!("project-{what}"));
    std::fs::create_dir_all(project.join(".claude/agents")).unwrap();
    std::fs::write(
        project.join(".claude/agents/worker.md"),
        "---\nname: worker\ndescription: w\ntools: Read\n---\n",
    )
    .unwrap();
    let out = ok(
        clean("attenu-hook", &["install"], home, path, &project),
        &format!("{what}: attenu-hook install"),
    );
    assert!(
        out.stdout.contains("attenu-hook.sh"),
        "{what}: {}",
        out.stdout
    );
    let command = attenu_hook::ops::LAUNCHER_COMMAND;
    let call = |payload: serde_json::Value| -> Out {
        use std::io::Write;
        let mut child = Command::new("sh")
            .args(["-c", command])
            .env_clear()
            .env("HOME", home)
            .env("PATH", path)
            .env("CLAUDE_PROJECT_DIR", &project)
            .current_dir(&project)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let _ = child
            .stdin
            .take()
            .unwrap()
            .write_all(payload.to_string().as_bytes());
        let out = child.wait_with_output().unwrap();
        Out {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    };
    let read = call(
        Call::pre(&project, None, "Read")
            .input(json!({"file_path": "/x"}))
            .value(),
    );
    assert_eq!(
        (read.code, read.stdout.trim()),
        (0, "{}"),
        "{what}: {read:?}"
    );
    let bash = call(
        Call::pre(&project, Some("worker"), "Bash")
            .input(json!({"command": "ls"}))
            .id("t2")
            .value(),
    );
    assert_denied_with(&bash, "unresolved");
    assert!(project.join(".attenu").is_dir(), "{what}: nothing recorded");
}

fn npm_deb_and_tarball_install_without_rust_and_answer_a_hook_call() {
    if !harness::required() && std::env::var("ATTENU_PACKAGING").as_deref() != Ok("1") {
        skip("builds the release packages (minutes): set ATTENU_PACKAGING=1, or ATTENU_REQUIRE_LIVE=1 as CI does");
    }
    need_tool("npm", "--version");
    need_tool("dpkg-deb", "--version");
    need_tool("dpkg", "--version");
    let scratch = TempDir::new("packaging");
    let dist = scratch.path().join("dist");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let build = Command::new("bash")
        .arg(repo.join("packaging/build"))
        .env("CARGO_TARGET_DIR", target_dir())
        .env("ATTENU_DIST", &dist)
        .status()
        .unwrap();
    assert!(build.success(), "packaging/build failed");
    let version = env!("CARGO_PKG_VERSION");
    let home = scratch.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    // The clean PATH really has no Rust toolchain.
    let probe = clean(
        "sh",
        &["-c", "command -v cargo || command -v rustc"],
        &home,
        SYSTEM_PATH,
        scratch.path(),
    );
    assert_ne!(
        probe.code, 0,
        "cargo or rustc on {SYSTEM_PATH}: {}",
        probe.stdout
    );

    // npm: the platform package and the main package, from the packed files, no registry.
    let prefix = scratch.path().join("npm");
    let main = artifact(&dist, &format!("attenu-hook-{version}"), ".tgz");
    let plat = artifact(&dist, "attenu-hook-linux-x64-", ".tgz");
    ok(
        clean(
            "npm",
            &[
                "install",
                "-g",
                "--offline",
                "--no-audit",
                "--no-fund",
                "--prefix",
                prefix.to_str().unwrap(),
                plat.to_str().unwrap(),
                main.to_str().unwrap(),
            ],
            &home,
            SYSTEM_PATH,
            scratch.path(),
        ),
        "npm install -g",
    );
    let npm_path = format!("{}:{SYSTEM_PATH}", prefix.join("bin").display());
    let v = ok(
        clean(
            "attenu-hook",
            &["--version"],
            &home,
            &npm_path,
            scratch.path(),
        ),
        "npm --version",
    );
    assert!(v.stdout.contains(version), "{}", v.stdout);
    // The shim passes the exit code through: 2 for a command with nothing to do.
    let bad = clean(
        "attenu-hook",
        &["verify", "/nonexistent"],
        &home,
        &npm_path,
        scratch.path(),
    );
    assert_eq!(bad.code, 2, "{bad:?}");
    wire_and_call("npm", &home, &npm_path, scratch.path());

    // Debian: dpkg installs it into a scratch root with its own database, so the test never
    // changes this machine (on a team's machine: `apt-get install ./attenu-hook_….deb`).
    let deb = dist.join(format!("attenu-hook_{version}_amd64.deb"));
    let info = ok(
        clean(
            "dpkg-deb",
            &["--info", deb.to_str().unwrap()],
            &home,
            SYSTEM_PATH,
            scratch.path(),
        ),
        "dpkg-deb --info",
    );
    assert!(
        info.stdout.contains("Package: attenu-hook") && info.stdout.contains("Architecture: amd64"),
        "{}",
        info.stdout
    );
    let root = scratch.path().join("debroot");
    for d in ["var/lib/dpkg/updates", "var/lib/dpkg/info"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::write(root.join("var/lib/dpkg/status"), "").unwrap();
    ok(
        clean(
            "dpkg",
            &[
                "--root",
                root.to_str().unwrap(),
                "--force-not-root",
                "--force-script-chrootless",
                "-i",
                deb.to_str().unwrap(),
            ],
            &home,
            SYSTEM_PATH,
            scratch.path(),
        ),
        "dpkg -i",
    );
    for f in [
        "usr/bin/attenu-hook",
        "usr/bin/attenu-hook-ship",
        "usr/share/man/man1/attenu-hook.1.gz",
        "usr/share/bash-completion/completions/attenu-hook",
    ] {
        assert!(root.join(f).is_file(), "the .deb did not install {f}");
    }
    let deb_path = format!("{}:{SYSTEM_PATH}", root.join("usr/bin").display());
    wire_and_call("deb", &home, &deb_path, scratch.path());

    // The static tarball: its sum checks, it unpacks, it runs.
    let tarball = format!("attenu-hook-{version}-x86_64-linux.tar.gz");
    ok(
        clean(
            "sha256sum",
            &["-c", &format!("{tarball}.sha256")],
            &home,
            SYSTEM_PATH,
            &dist,
        ),
        "sha256sum -c",
    );
    let unpacked = scratch.path().join("tar");
    std::fs::create_dir_all(&unpacked).unwrap();
    ok(
        clean(
            "tar",
            &[
                "xzf",
                dist.join(&tarball).to_str().unwrap(),
                "-C",
                unpacked.to_str().unwrap(),
            ],
            &home,
            SYSTEM_PATH,
            scratch.path(),
        ),
        "tar xzf",
    );
    let bin_dir = unpacked.join(format!("attenu-hook-{version}-x86_64-linux"));
    let ldd = clean(
        "ldd",
        &[bin_dir.join("attenu-hook").to_str().unwrap()],
        &home,
        SYSTEM_PATH,
        scratch.path(),
    );
    assert!(
        ldd.code != 0 || ldd.stdout.contains("statically linked"),
        "not static: {}",
        ldd.stdout
    );
    let tar_path = format!("{}:{SYSTEM_PATH}", bin_dir.display());
    wire_and_call("tarball", &home, &tar_path, scratch.path());
}
