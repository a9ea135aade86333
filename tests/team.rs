//! A fleet under one team key (issue 38): an OpenSSH CA made with the real `ssh-keygen`
//! certifies developers' enrolled keys and a CI runner's key; sessions recorded in clones of
//! one repository ship to one store; an audit that pins only the CA names each certified
//! session by its certificate's key id, repository and commit, and refuses the rest. Needs
//! `ssh-keygen` (openssh-client) and `git`; skipped loudly without them.

mod common;
#[path = "common/s3.rs"]
#[allow(dead_code)]
mod s3;

use common::*;
use serde_json::{json, Value};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    common::harness::run(tests![
        enroll_makes_one_key_outside_the_clone_and_reuses_it,
        enroll_cert_refuses_what_does_not_certify_this_key,
        enroll_text_is_pinned,
        certified_sessions_are_complete_and_named_the_unenrolled_one_is_not,
        certified_sessions_in_garage_are_complete_and_named,
        an_audit_refuses_expired_revoked_and_foreign_certificates,
        a_ca_with_no_session_in_the_store_fails_the_audit,
        a_key_id_that_signed_with_two_keys_is_a_finding,
        a_local_file_that_weakens_the_team_and_admin_files_is_recorded,
        without_the_local_file_the_team_and_admin_files_hold,
        a_typo_in_the_team_file_denies_naming_it,
        subagents_cannot_reach_the_team_file_or_the_enrolled_key,
        a_fifo_in_place_of_gits_head_never_holds_up_a_call,
        one_certified_bundle_verifies_under_the_team_ca_alone,
        a_certified_bundle_with_an_entry_changed_is_invalid_under_the_team_ca,
        a_bundle_of_a_machine_that_never_enrolled_has_no_certificate,
        a_certified_bundles_page_names_the_team_ca_it_was_checked_under,
        a_certified_bundles_page_without_a_pin_says_the_key_is_not_pinned,
        a_certified_bundles_page_is_refused_under_another_ca_or_a_revocation,
        an_audits_json_reads_under_ca_on_the_page_too,
    ]);
}

fn need_tools() {
    need_tool("ssh-keygen", "-?");
    need_tool("git", "--version");
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A team CA (`ssh-keygen -t ed25519`), in `dir`.
struct Ca {
    key: PathBuf,
    public: PathBuf,
}

fn ca(dir: &Path, name: &str) -> Ca {
    let key = dir.join(name);
    run(Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", name, "-f"])
        .arg(&key));
    Ca {
        public: key.with_extension("pub"),
        key,
    }
}

impl Ca {
    /// `ssh-keygen -s CA -I id -n principal -V validity -z serial KEY.pub`: the certificate,
    /// made from a copy of `public` beside the CA, so each call writes its own file.
    fn certify(
        &self,
        public: &Path,
        id: &str,
        principal: &str,
        validity: &str,
        serial: u64,
    ) -> PathBuf {
        let ca_name = self.key.file_name().unwrap().to_string_lossy();
        let copy = self
            .key
            .with_file_name(format!("{ca_name}-{serial}-{principal}.pub"));
        std::fs::copy(public, &copy).unwrap();
        run(Command::new("ssh-keygen")
            .args(["-q", "-s"])
            .arg(&self.key)
            .args([
                "-I",
                id,
                "-n",
                principal,
                "-V",
                validity,
                "-z",
                &serial.to_string(),
            ])
            .arg(&copy));
        copy.with_file_name(format!("{ca_name}-{serial}-{principal}-cert.pub"))
    }
}

/// One machine: its own HOME (where `enroll` keeps the key), and extra environment.
struct Machine {
    home: TempDir,
    env: Vec<(String, OsString)>,
}

fn machine(tag: &str) -> Machine {
    Machine {
        home: TempDir::new(tag),
        env: Vec::new(),
    }
}

impl Machine {
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.args(args)
            .env("HOME", self.home.path())
            .env("USER", "tester")
            .env_remove("ATTENU_HOME")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("ATTENU_SIGNING_KEY_FILE")
            .env_remove("ATTENU_SIGNING_CERT_FILE")
            .env_remove("CLAUDE_PROJECT_DIR")
            .env(
                "CLAUDE_CONFIG_DIR",
                "/nonexistent/attenu-test-claude-config",
            );
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd
    }

    fn cli(&self, args: &[&str]) -> Out {
        let out = self.command(args).output().unwrap();
        Out {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Where `enroll` keeps the key: `~/.config/attenu-hook`.
    fn key_dir(&self) -> PathBuf {
        self.home.path().join(".config/attenu-hook")
    }

    /// The machine signing with the key file `key` and the certificate `cert`, named in its
    /// environment (as a CI runner does).
    fn signing_with(mut self, key: PathBuf, cert: PathBuf) -> Machine {
        self.env
            .push(("ATTENU_SIGNING_KEY_FILE".into(), key.into()));
        self.env
            .push(("ATTENU_SIGNING_CERT_FILE".into(), cert.into()));
        self
    }

    /// The command with `args` exits `code` and its stdout says `says`.
    #[track_caller]
    fn assert_says(&self, args: &[&str], code: i32, says: &str) {
        let out = self.cli(args);
        assert_eq!(out.code, code, "{args:?}: {}{}", out.stdout, out.stderr);
        assert!(out.stdout.contains(says), "{args:?}: {}", out.stdout);
    }

    /// `enroll`, then the CA's certificate installed with `enroll --cert`.
    fn enroll(&self, ca: &Ca, id: &str) {
        let out = self.cli(&["enroll"]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let public = self.home.path().join(".config/attenu-hook/signing-key.pub");
        let cert = ca.certify(&public, id, "attenu-hook", "+1d", 1);
        let out = self.cli(&["enroll", "--cert", cert.to_str().unwrap()]);
        assert_eq!(out.code, 0, "{}", out.stderr);
    }

    /// One session in `clone`: a start, an allowed read, a denied command, the end; then the
    /// outbox drained (by hand, which waits for the hook's own shippers).
    fn session(&self, clone: &Path, session: &str) {
        let env: Vec<(&str, &std::ffi::OsStr)> = [
            ("HOME", self.home.path().as_os_str()),
            ("USER", std::ffi::OsStr::new("tester")),
        ]
        .into_iter()
        .chain(self.env.iter().map(|(k, v)| (k.as_str(), v.as_os_str())))
        .collect();
        let events = [
            session_start(session, clone, "startup"),
            pre(
                session,
                clone,
                Some("reviewer"),
                "Read",
                json!({"file_path": "README.md"}),
                "t1",
            ),
            pre(
                session,
                clone,
                Some("reviewer"),
                "Bash",
                json!({"command": "ls"}),
                "t2",
            ),
            event(session, clone, "SessionEnd"),
        ];
        for e in &events {
            let out = hook_env(clone, e, &env);
            assert_eq!(out.code, 0, "{}", out.stderr);
        }
        let out = self.cli(&["ship", "--project", clone.to_str().unwrap()]);
        assert_eq!(out.code, 0, "{}", out.stderr);
    }
}

/// A git repository with the sample agents and the committed team configuration, and a way
/// to clone it for each machine.
struct Repo {
    dir: TempDir,
    commit: String,
}

fn git(dir: &Path, args: &[&str]) -> String {
    run(Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args))
}

fn repo(url: &str, ca: &Ca) -> Repo {
    let dir = sample("team-repo");
    let ca_line = std::fs::read_to_string(&ca.public).unwrap();
    std::fs::write(
        dir.path().join(".claude/attenu.toml"),
        format!(
            "[ship]\nurl = \"{url}\"\n\n[trust]\nca = [{:?}]\n",
            ca_line.trim()
        ),
    )
    .unwrap();
    std::fs::write(dir.path().join("README.md"), "team\n").unwrap();
    git(dir.path(), &["init", "-q", "-b", "main"]);
    git(
        dir.path(),
        &[
            "remote",
            "add",
            "origin",
            "https://ci-bot:s3cret@git.example.com/acme/app.git",
        ],
    );
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "start"]);
    let commit = git(dir.path(), &["rev-parse", "HEAD"]).trim().to_string();
    Repo { dir, commit }
}

impl Repo {
    fn clone_to(&self, tag: &str) -> TempDir {
        let to = TempDir::new(tag);
        std::fs::remove_dir_all(to.path()).unwrap();
        run(Command::new("git")
            .args(["clone", "-q"])
            .arg(self.dir.path())
            .arg(to.path()));
        // The clone's origin is the local path; name the team's remote as a real clone would.
        git(
            to.path(),
            &[
                "remote",
                "set-url",
                "origin",
                "https://git.example.com/acme/app.git",
            ],
        );
        to
    }
}

/// A key pair made with `ssh-keygen` at `dir/name` (and `.pub`): the private key's path.
fn new_key(dir: &Path, name: &str) -> PathBuf {
    let key = dir.join(name);
    run(Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(&key));
    key
}

/// What most team tests start from: a directory for keys, a directory store in it, the team
/// CA and another, and the team's repository shipping to that store.
struct Team {
    keys: TempDir,
    share: PathBuf,
    team: Ca,
    other: Ca,
    project: Repo,
}

fn team(tag: &str) -> Team {
    let keys = TempDir::new(tag);
    let share = keys.path().join("share");
    std::fs::create_dir(&share).unwrap();
    let team = ca(keys.path(), "team-ca");
    let other = ca(keys.path(), "other-ca");
    let project = repo(&file_url(&share), &team);
    Team {
        keys,
        share,
        team,
        other,
        project,
    }
}

impl Team {
    fn url(&self) -> String {
        file_url(&self.share)
    }

    /// The team CA's public key file, as an argument.
    fn ca(&self) -> &str {
        self.team.public.to_str().unwrap()
    }

    /// A machine enrolled with the team CA as `id`, with one session `session` recorded in a
    /// clone of its own: the machine and the session's bundle.
    fn enrolled_session(&self, tag: &str, id: &str, session: &str) -> (Machine, TempDir) {
        let m = machine(&format!("{tag}-home"));
        m.enroll(&self.team, id);
        let clone = self.project.clone_to(&format!("{tag}-clone"));
        m.session(clone.path(), session);
        (m, clone)
    }

    /// A certificate for `attenu-hook` of the public key `public` as `id`, valid for a day,
    /// signed by the team CA.
    fn certify(&self, public: &Path, id: &str, serial: u64) -> PathBuf {
        self.team.certify(public, id, "attenu-hook", "+1d", serial)
    }

    /// A CI runner `tag` signing with a key of its own and a certificate of it for
    /// `principal`, valid for `validity`, signed by `signer`; it records session `s-<tag>` in
    /// a clone of its own.
    fn runner_session(&self, tag: &str, signer: &Ca, principal: &str, validity: &str) {
        let key = new_key(self.keys.path(), &format!("{tag}-key"));
        let id = format!("runner-{tag}");
        let cert = signer.certify(&key.with_extension("pub"), &id, principal, validity, 7);
        let m = machine(&format!("refuse-{tag}")).signing_with(key, cert);
        let clone = self.project.clone_to(&format!("refuse-clone-{tag}"));
        m.session(clone.path(), &format!("s-{tag}"));
    }

    /// A revocation list in the keys directory naming `line`: its path.
    fn revoked(&self, line: &str) -> PathBuf {
        let revoked = self.keys.path().join("revoked");
        std::fs::write(&revoked, line).unwrap();
        revoked
    }
}

/// The first two words of `text` (a public key line without its comment).
fn first_two_words(text: &str) -> Vec<&str> {
    text.split_whitespace().take(2).collect()
}

fn audit(m: &Machine, url: &str, extra: &[&str]) -> (i32, Value, String) {
    let mut args = vec!["audit", url, "--json"];
    args.extend_from_slice(extra);
    let out = m.cli(&args);
    let json = serde_json::from_str(&out.stdout).unwrap_or(Value::Null);
    (out.code, json, out.stderr)
}

fn enroll_makes_one_key_outside_the_clone_and_reuses_it() {
    need_tools();
    let m = machine("enroll-home");
    let first = m.cli(&["enroll"]);
    let (out, err) = (&first.stdout, &first.stderr);
    assert_eq!(first.code, 0, "{err}");
    assert!(out.starts_with("ssh-ed25519 AAAA"), "{out}");
    assert!(err.contains("ssh-keygen -s CA_KEY"), "{err}");
    assert_eq!(&m.cli(&["enroll"]).stdout, out, "the same key, reused");
    assert_eq!(gated::mode_of(&m.key_dir()), 0o700);
    assert_eq!(gated::mode_of(&m.key_dir().join("signing-key")), 0o600);
    // ssh-keygen itself reads the key and derives the same public line.
    let mut derive = Command::new("ssh-keygen");
    let derived = run(derive
        .arg("-y")
        .arg("-f")
        .arg(m.key_dir().join("signing-key")));
    assert_eq!(first_two_words(&derived), first_two_words(out));
}

fn enroll_cert_refuses_what_does_not_certify_this_key() {
    need_tools();
    let t = team("enroll-cas");
    let m = machine("enroll-cert-home");
    assert_eq!(m.cli(&["enroll"]).code, 0);
    let public = m.key_dir().join("signing-key.pub");
    let p = t.project.dir.path().to_str().unwrap();
    let try_cert =
        |cert: &Path| m.cli(&["enroll", "--project", p, "--cert", cert.to_str().unwrap()]);
    for (cert, why) in &refused_certificates(&t, &public) {
        common::assert_exit_saying(&try_cert(cert), 2, &[why]);
        std::fs::remove_file(cert).unwrap();
    }
    // A certificate of another key.
    let stranger = new_key(t.keys.path(), "stranger");
    let foreign = t.certify(&stranger.with_extension("pub"), "mallory", 6);
    common::assert_exit_saying(&try_cert(&foreign), 2, &["certifies another key"]);
    assert!(!m.key_dir().join("signing-key-cert.pub").exists());
    let good = t.certify(&public, "alice@laptop", 7);
    common::assert_exit_saying(&try_cert(&good), 0, &["\"alice@laptop\""]);
}

/// What `enroll` prints, pinned: the key made, then reused, then its certificate installed
/// (checked against the project's team CA).
fn enroll_text_is_pinned() {
    need_tools();
    let (t, m) = (team("enroll-text"), machine("enroll-text-home"));
    let first = m.cli(&["enroll"]);
    let mut text = transcript("enroll", &first);
    text += &transcript("enroll (again)", &m.cli(&["enroll"]));
    let cert = t.certify(&m.key_dir().join("signing-key.pub"), "alice@laptop", 7);
    let p = t.project.dir.path().to_str().unwrap();
    let installed = m.cli(&["enroll", "--project", p, "--cert", cert.to_str().unwrap()]);
    text += &transcript("enroll --project PROJECT --cert CERT", &installed);
    let words: Vec<&str> = first.stdout.split_whitespace().collect();
    let masks = [
        (m.home.path().to_str().unwrap(), "<home>"),
        (t.keys.path().to_str().unwrap(), "<keys>"),
        (p, "<project>"),
        (words[1], "<public key>"),
        (words[2], "attenu-hook@<host>"),
    ];
    assert_snapshot("enroll.txt", &mask(&text, &masks));
}

/// Certificates of `public` that `enroll --cert` must refuse, each with why.
fn refused_certificates(t: &Team, public: &Path) -> Vec<(PathBuf, &'static str)> {
    let ours = |principal: &str, validity: &str, serial| {
        t.team.certify(public, "alice", principal, validity, serial)
    };
    vec![
        (ours("ssh-login", "+1d", 1), "not `attenu-hook`"),
        (ours("attenu-hook", "20200101:20200102", 2), "expired"),
        (ours("attenu-hook", "+52w:+53w", 3), "not valid before"),
        (
            t.other.certify(public, "alice", "attenu-hook", "+1d", 4),
            "not a pinned team CA",
        ),
    ]
}

/// Two developers, a CI runner (key and certificate from its environment) and an unenrolled
/// machine record sessions in clones of one repository; the audit pins only the CA.
fn certified_sessions_are_complete_and_named_the_unenrolled_one_is_not() {
    need_tools();
    let keys = TempDir::new("team-keys");
    let share = keys.path().join("share");
    std::fs::create_dir(&share).unwrap();
    let text = fleet(keys.path(), &file_url(&share), &[]);
    assert!(text.contains("file time"), "{text}");
}

/// The same fleet against a real S3 engine (Garage on loopback), whose server sets the times.
fn certified_sessions_in_garage_are_complete_and_named() {
    need_tools();
    let g = s3::Garage::start();
    let keys = TempDir::new("team-garage-keys");
    let env: Vec<(String, OsString)> = g.env().into_iter().map(|(k, v)| (k, v.into())).collect();
    let text = fleet(keys.path(), &format!("s3://{}/team", g.bucket), &env);
    assert!(!text.contains("file time"), "{text}");
}

fn file_url(dir: &Path) -> String {
    format!("file://{}", dir.display())
}

/// Two developers, a CI runner and an unenrolled machine ship to `url` (with `store_env`);
/// the audit pins only the CA. Returns the audit's text.
fn fleet(keys: &Path, url: &str, store_env: &[(String, OsString)]) -> String {
    let team = ca(keys, "team-ca");
    let project = repo(url, &team);
    let machine = |tag: &str| {
        let mut m = machine(tag);
        m.env.extend(store_env.iter().cloned());
        m
    };
    let alice = machine("team-alice");
    alice.enroll(&team, "alice@laptop");
    let bob = machine("team-bob");
    bob.enroll(&team, "bob@desktop");
    let mut ci = machine("team-ci");
    let runner_key = keys.join("ci-key");
    run(Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(&runner_key));
    let runner_cert = team.certify(
        &runner_key.with_extension("pub"),
        "ci-main",
        "attenu-hook",
        "+1d",
        9,
    );
    ci.env
        .push(("ATTENU_SIGNING_KEY_FILE".into(), runner_key.clone().into()));
    ci.env
        .push(("ATTENU_SIGNING_CERT_FILE".into(), runner_cert.into()));
    let stranger = machine("team-unenrolled");
    for (m, tag) in [
        (&alice, "alice"),
        (&bob, "bob"),
        (&ci, "ci"),
        (&stranger, "unenrolled"),
    ] {
        let clone = project.clone_to(&format!("team-clone-{tag}"));
        m.session(clone.path(), &format!("s-{tag}"));
        if tag == "alice" {
            // `log --sessions` names the session's signer and repository, as its root recorded.
            let out = m.cli(&[
                "log",
                "--sessions",
                "--project",
                clone.path().to_str().unwrap(),
            ]);
            let row = out
                .stdout
                .lines()
                .find(|l| l.starts_with("s-alice"))
                .unwrap_or_default();
            assert!(row.contains("alice@laptop"), "{}", out.stdout);
            assert!(
                row.contains(&format!("app.git@{}", &project.commit[..12])),
                "{}",
                out.stdout
            );
            // So does `verify` of the session's bundle.
            let bundle = clone.path().join(format!(".attenu/bundle-s-{tag}.json"));
            // A certified signer's bundle verifies under its certified key (the clone's
            // anchor.pub beside it is another key): pin that one, as the audit does.
            let cert = m
                .home
                .path()
                .join(".config/attenu-hook/signing-key-cert.pub");
            let cert =
                attenu_hook::trust::Cert::parse(&std::fs::read_to_string(cert).unwrap()).unwrap();
            let key = m.home.path().join("alice.pub");
            std::fs::write(
                &key,
                attenu_hook::ledger::chain::hex(cert.public.as_bytes()),
            )
            .unwrap();
            let out = m.cli(&[
                "verify",
                bundle.to_str().unwrap(),
                "--pub",
                key.to_str().unwrap(),
            ]);
            let line = format!(
                "RECORDED by alice@laptop in app.git@{} (the chain's root; signed with the chain)",
                &project.commit[..12]
            );
            assert!(out.stdout.contains(&line), "{}", out.stdout);
        }
    }
    let (code, report, stderr) = audit(&alice, url, &["--ca", team.public.to_str().unwrap()]);
    assert_eq!(code, 1, "the unenrolled session fails the audit: {stderr}");
    let sessions = report["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 4, "{report}");
    let by = |s: &str| sessions.iter().find(|x| x["session"] == s).unwrap();
    for (session, id) in [
        ("s-alice", "alice@laptop"),
        ("s-bob", "bob@desktop"),
        ("s-ci", "ci-main"),
    ] {
        let s = by(session);
        assert_eq!(s["status"], "complete", "{session}: {s}");
        assert_eq!(s["certificate"]["key_id"], id, "{s}");
        assert_eq!(
            s["identity"]["git"]["commit"],
            project.commit.as_str(),
            "{s}"
        );
        assert_eq!(
            s["identity"]["git"]["remote"], "https://git.example.com/acme/app.git",
            "{s}"
        );
        assert_eq!(s["identity"]["git"]["branch"], "main", "{s}");
        assert_eq!(s["identity"]["user"], "tester", "{s}");
    }
    assert_eq!(by("s-ci")["identity"]["signer"]["source"], "environment");
    let lone = by("s-unenrolled");
    assert_eq!(lone["status"], "unverifiable", "{lone}");
    assert!(
        lone["why"]
            .as_str()
            .unwrap()
            .contains("has no certificate in the store"),
        "{lone}"
    );
    // The text names sessions by who the certificate says, and the repository at its commit.
    let text = alice.cli(&["audit", url, "--ca", team.public.to_str().unwrap()]);
    assert!(text.stdout.contains("alice@laptop"), "{}", text.stdout);
    assert!(
        text.stdout
            .contains(&format!("app.git@{}", &project.commit[..12])),
        "{}",
        text.stdout
    );
    // `--pub` still works for single keys.
    let anchor = project.clone_to("team-clone-pub");
    let solo = machine("team-solo");
    solo.session(anchor.path(), "s-solo");
    let anchor_pub = anchor.path().join(".attenu/anchor.pub");
    let (code, report, stderr) = audit(&solo, url, &["--pub", anchor_pub.to_str().unwrap()]);
    let solo_session = report["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["session"] == "s-solo")
        .cloned();
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(solo_session.unwrap()["status"], "complete");
    text.stdout
}

fn an_audit_refuses_expired_revoked_and_foreign_certificates() {
    need_tools();
    let t = team("team-refuse");
    // Each runner signs with its own key and a certificate the audit must refuse.
    for (tag, by_team, principal, validity, _) in REFUSED {
        let signer = if by_team { &t.team } else { &t.other };
        t.runner_session(tag, signer, principal, validity);
    }
    let revoked = t.revoked("# taken back\nid:runner-revoked\n");
    let pins = ["--ca", t.ca(), "--revoked", revoked.to_str().unwrap()];
    let (code, report, stderr) = audit(&machine("refuse-reviewer"), &t.url(), &pins);
    assert_eq!(code, 1, "{stderr}");
    for (tag, _, _, _, why) in REFUSED {
        let s = session_of(&report, &format!("s-{tag}"));
        assert_ne!(s["status"], "complete", "{tag}: {s}");
        assert!(s["why"].as_str().unwrap().contains(why), "{tag}: {s}");
    }
    let findings = report["findings"].as_array().unwrap();
    let certified = |f: &Value| f.as_str().unwrap().contains(NONE_CERTIFIED);
    assert!(findings.iter().any(certified), "{report}");
}

/// Runners whose certificates the audit refuses: (tag, signed by the team CA rather than
/// another, principal, validity, why).
const REFUSED: [(&str, bool, &str, &str, &str); 4] = [
    (
        "expired",
        true,
        "attenu-hook",
        "20200101:20200102",
        "expired",
    ),
    (
        "foreign",
        false,
        "attenu-hook",
        "+1d",
        "not a pinned team CA",
    ),
    ("principal", true, "deploy", "+1d", "not `attenu-hook`"),
    ("revoked", true, "attenu-hook", "+1d", "is revoked"),
];

const NONE_CERTIFIED: &str = "no session in the store is signed by a key the pinned CA certified";

/// The audit report's record of `session`, which must be there.
fn session_of<'a>(report: &'a Value, session: &str) -> &'a Value {
    let sessions = report["sessions"].as_array().unwrap();
    sessions.iter().find(|x| x["session"] == session).unwrap()
}

fn a_ca_with_no_session_in_the_store_fails_the_audit() {
    need_tools();
    let keys = TempDir::new("team-empty");
    let share = keys.path().join("share");
    std::fs::create_dir(&share).unwrap();
    let team = ca(keys.path(), "team-ca");
    let pin = ["--ca", team.public.to_str().unwrap()];
    let (code, report, stderr) = audit(&machine("team-empty-reviewer"), &file_url(&share), &pin);
    assert_eq!(code, 1, "{stderr}");
    let finding = report["findings"][0].as_str().unwrap();
    assert!(finding.contains("no session"), "{report}");
}

/// One certificate key id whose sessions were signed by two different keys (a machine whose
/// key changed mid-history, or a copied identity): each session verifies, and the fleet has a
/// finding that fails the audit.
fn a_key_id_that_signed_with_two_keys_is_a_finding() {
    need_tools();
    let t = team("team-twokeys");
    for tag in ["old-laptop", "new-laptop"] {
        t.enrolled_session(
            &format!("twokeys-{tag}"),
            "alice@laptop",
            &format!("s-{tag}"),
        );
    }
    let (code, report, stderr) = audit(&machine("twokeys-reviewer"), &t.url(), &["--ca", t.ca()]);
    assert_eq!(code, 1, "{stderr}");
    for s in report["sessions"].as_array().unwrap() {
        assert_eq!(s["status"], "complete", "{s}");
    }
    assert!(
        report["findings"].to_string().contains(TWO_KEYS),
        "{report}"
    );
}

const TWO_KEYS: &str = "\\\"alice@laptop\\\" signed sessions with 2 different keys";

/// The administrator's file and the team's committed file set enforcement and shipping; the
/// clone's own file turns enforcement down. It applies, and the chain's root says so.
fn a_local_file_that_weakens_the_team_and_admin_files_is_recorded() {
    let (p, admin) = layered("team-layers");
    let bash = p.bash_by("reviewer", "ls").id("t1");
    let out = hook_env(p.path(), bash.payload(), &admin.env());
    assert!(
        out.is_allow(),
        "observe, as the local file says: {}",
        out.stdout
    );
    let config = &entries(p.path(), "s1")[0]["context"]["identity"]["config"];
    let sources = config["sources"].as_array().unwrap();
    assert_eq!(sources.len(), 3, "{config}");
    assert_eq!(sources[0], admin.file.to_str().unwrap());
    let team = sources[1].as_str().unwrap();
    assert!(team.ends_with(".claude/attenu.toml"), "{config}");
    let overrides = config["overrides"].to_string();
    assert_contains(
        &overrides,
        &["mode observe instead of enforce", "enforce_main_thread off"],
    );
}

/// Without the local file, the team's and the administrator's values hold.
fn without_the_local_file_the_team_and_admin_files_hold() {
    let (p, admin) = layered("team-layers-held");
    std::fs::remove_file(p.path().join(".attenu/config.toml")).unwrap();
    let bash = p.bash_by("reviewer", "ls").session("s2").id("t2");
    assert!(hook_env(p.path(), bash.payload(), &admin.env()).denied());
}

/// A typo in the team's file denies, naming that file.
fn a_typo_in_the_team_file_denies_naming_it() {
    let (p, admin) = layered("team-layers-typo");
    std::fs::write(p.path().join(".claude/attenu.toml"), "mdoe = \"observe\"\n").unwrap();
    let read = p.read_by("reviewer", "/x").session("s3").id("t3");
    let out = hook_env(p.path(), read.payload(), &admin.env());
    assert_denied_saying(&out, ".claude/attenu.toml");
}

/// The administrator's config file (`ATTENU_ADMIN_CONFIG`), in a directory of its own.
struct Admin {
    _dir: TempDir,
    file: PathBuf,
}

impl Admin {
    fn env(&self) -> [(&str, &std::ffi::OsStr); 1] {
        [("ATTENU_ADMIN_CONFIG", self.file.as_os_str())]
    }
}

/// The sample project with three layers of configuration: the administrator's (main thread
/// enforced), the team's committed file (enforce, Bash gated), and the clone's own file that
/// turns both down.
fn layered(tag: &str) -> (TempDir, Admin) {
    let p = sample(tag);
    let dir = TempDir::new(&format!("{tag}-admin"));
    let file = dir.path().join("config.toml");
    std::fs::write(&file, "enforce_main_thread = true\n").unwrap();
    std::fs::write(
        p.path().join(".claude/attenu.toml"),
        "mode = \"enforce\"\n[gate]\nrequire = [\"exec.bash\"]\n",
    )
    .unwrap();
    write_config(
        p.path(),
        "mode = \"observe\"\nenforce_main_thread = false\n",
    );
    (p, Admin { _dir: dir, file })
}

/// The committed team file is the settings' equal, and the enrolled key a secret like
/// `.attenu/`: a subagent can neither write the one nor read the other.
fn subagents_cannot_reach_the_team_file_or_the_enrolled_key() {
    let p = common::ProjectBuilder::new("team-guard")
        .agent("ops", "tools: Read, Write, Edit")
        .build();
    let home = TempDir::new("team-guard-home");
    let key_dir = home.path().join(".config/attenu-hook");
    std::fs::create_dir_all(&key_dir).unwrap();
    let env = [("HOME", home.path().as_os_str())];
    for (tool, input) in reaches_for_the_team_file_and_the_key(p.path(), &key_dir) {
        let call = pre("s1", p.path(), Some("ops"), tool, input.clone(), "t1");
        let out = hook_env(p.path(), &call, &env);
        assert!(out.denied(), "{tool} {input}: {}", out.stdout);
        assert!(
            out.reason().contains("[self-protection]"),
            "{}",
            out.reason()
        );
    }
}

/// Writes and an edit of the project's `.claude/attenu.toml`, a read of the enrolled key and
/// a write of its certificate in `key_dir`: (tool, input).
fn reaches_for_the_team_file_and_the_key(
    root: &Path,
    key_dir: &Path,
) -> Vec<(&'static str, Value)> {
    let team_file = format!("{}/.claude/attenu.toml", root.display());
    let key = format!("{}/signing-key", key_dir.display());
    let cert = format!("{}/signing-key-cert.pub", key_dir.display());
    vec![
        (
            "Write",
            json!({"file_path": team_file, "content": "mode = \"observe\""}),
        ),
        ("Edit", json!({ "file_path": team_file })),
        ("Read", json!({ "file_path": key })),
        ("Write", json!({ "file_path": cert })),
    ]
}

/// The repository is the agents' to write: a FIFO in place of `.git/HEAD` (or anything that is
/// not a regular file) leaves the root without a repository, and never makes a call wait.
fn a_fifo_in_place_of_gits_head_never_holds_up_a_call() {
    need_tool("mkfifo", "--version");
    let p = sample("team-fifo-head");
    std::fs::create_dir_all(p.path().join(".git")).unwrap();
    run(Command::new("mkfifo").arg(p.path().join(".git/HEAD")));
    let out = p.read_by("reviewer", "/x").id("t1").run();
    assert!(out.is_allow(), "{}", out.stdout);
    let root = &entries(p.path(), "s1")[0];
    assert!(root["context"]["identity"].get("git").is_none(), "{root}");
}

/// A reviewer handed one bundle of an enrolled machine checks it against the team CA alone:
/// the key is the one the bundle's certificate names, trusted only when the CA signed that
/// certificate. Without a pin, the certified key (not the clone's own `anchor.pub` beside the
/// bundle, which did not sign it) verifies it, reported as not pinned.
fn one_certified_bundle_verifies_under_the_team_ca_alone() {
    need_tools();
    let r = reported("team-one-bundle");
    let (t, alice, b) = (&r.t, &r.alice, &r.bundle);
    let revoked = t.revoked("id:alice@laptop\n");
    let (ca, rev) = (t.ca(), revoked.to_str().unwrap());
    let other = t.other.public.to_str().unwrap();
    alice.assert_says(&["verify", b], 3, CERTIFICATE_NAMES);
    alice.assert_says(&["verify", b, "--ca", ca], 0, CERTIFIED);
    alice.assert_says(&["verify", b, "--ca", other], 1, NOT_CERTIFIED);
    alice.assert_says(
        &["verify", b, "--ca", ca, "--revoked", rev],
        1,
        "is revoked",
    );
    let report = stdout_json(&alice.cli(&["verify", b, "--ca", ca, "--json"]));
    assert_eq!(report["valid"], true, "{report}");
    assert_eq!(report["certificate"]["key_id"], "alice@laptop", "{report}");
    assert_eq!(report["certificate"]["serial"], 1, "{report}");
}

/// An entry changed: the certificate still checks out, the signature no longer does.
fn a_certified_bundle_with_an_entry_changed_is_invalid_under_the_team_ca() {
    need_tools();
    let r = reported("team-one-bundle-tampered");
    let tampered = r.t.keys.path().join("tampered.json");
    let text = std::fs::read_to_string(&r.bundle).unwrap();
    std::fs::write(&tampered, text.replacen("\"Read\"", "\"Edit\"", 1)).unwrap();
    let tampered = tampered.to_str().unwrap();
    r.alice
        .assert_says(&["verify", tampered, "--ca", r.t.ca()], 1, "INVALID");
}

const CERTIFIED: &str = "key: certified by the pinned CA";
const NOT_CERTIFIED: &str = "INVALID (signer not certified)";

/// A machine that never enrolled signed with its own key: no CA vouches for its bundle.
fn a_bundle_of_a_machine_that_never_enrolled_has_no_certificate() {
    need_tools();
    let t = team("team-one-bundle-stranger");
    let stranger = machine("one-bundle-stranger");
    let theirs = t.project.clone_to("one-bundle-stranger-clone");
    stranger.session(theirs.path(), "s2");
    let bundle = theirs.path().join(".attenu/bundle-s2.json");
    let out = stranger.cli(&["verify", bundle.to_str().unwrap(), "--ca", t.ca()]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    common::assert_exit_saying(&out, 2, &["carries no signer certificate"]);
}

const CERTIFICATE_NAMES: &str =
    "the key the bundle's own certificate names (key id \"alice@laptop\"";

/// `report --ca` pins the team CA as `verify --ca` does: the page says the key is the one the
/// certificate certifies, vouched for by the CA passed, never "read from beside the bundle".
fn a_certified_bundles_page_names_the_team_ca_it_was_checked_under() {
    need_tools();
    let r = reported("team-report-ca");
    let (t, alice, b, page) = (&r.t, &r.alice, &r.bundle, &r.page);
    let p = page.to_str().unwrap();
    let out = alice.cli(&["report", b, "--ca", t.ca(), "--out", p]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let (html, key) = page_and_key_line(page);
    assert_contains(
        &key,
        &["Key pinned", "<code>alice@laptop</code>", PASSED, t.ca()],
    );
    assert!(!html.contains("beside the bundle"), "{key}");
    assert!(!key.contains("--pub"), "{key}");
}

const PASSED: &str = "team CA you passed with <code>--ca</code>";

/// Without a pin the page says the certificate the bundle carries was not vouched for.
fn a_certified_bundles_page_without_a_pin_says_the_key_is_not_pinned() {
    need_tools();
    let r = reported("team-report-noca");
    let (_, alice, b, page) = (&r.t, &r.alice, &r.bundle, &r.page);
    let out = alice.cli(&["report", b, "--out", page.to_str().unwrap()]);
    assert_eq!(out.code, 3, "{}{}", out.stdout, out.stderr);
    let (html, key) = page_and_key_line(page);
    assert_contains(&key, &["Key NOT pinned", CARRIES, "--ca ca.pub"]);
    assert!(!html.contains("beside the bundle"), "{key}");
}

const CARRIES: &str = "signer certificate <code>alice@laptop</code> that the bundle carries";

/// A CA that did not sign the certificate (or revoked it) writes no page and exits 1; `--pub`
/// and `--ca` together are refused.
fn a_certified_bundles_page_is_refused_under_another_ca_or_a_revocation() {
    need_tools();
    let r = reported("team-report-refused");
    let (t, alice, b, page) = (&r.t, &r.alice, &r.bundle, &r.page);
    let p = page.to_str().unwrap();
    let other = t.other.public.to_str().unwrap();
    let out = alice.cli(&["report", b, "--ca", other, "--out", p]);
    common::assert_exit_saying(&out, 1, &["signer not certified"]);
    assert!(
        !page.exists(),
        "no page for a signer the CA does not vouch for"
    );
    let revoked = t.revoked("id:alice@laptop\n");
    let r = revoked.to_str().unwrap();
    let out = alice.cli(&["report", b, "--ca", t.ca(), "--revoked", r, "--out", p]);
    common::assert_exit_saying(&out, 1, &["revoked"]);
    let out = alice.cli(&["report", b, "--pub", b, "--ca", t.ca(), "--out", p]);
    assert_eq!(out.code, 2, "--pub and --ca together: {}", out.stderr);
}

/// An audit's JSON is not a bundle: under --ca it is shown as the audit said it.
fn an_audits_json_reads_under_ca_on_the_page_too() {
    need_tools();
    let r = reported("team-report-audit");
    let (t, alice, b, page) = (&r.t, &r.alice, &r.bundle, &r.page);
    let (code, report, stderr) = audit(alice, &t.url(), &["--ca", t.ca()]);
    assert_eq!(code, 0, "{report}{stderr}");
    assert_eq!(report["sessions"][0]["status"], "complete", "{report}");
    let audit_json = t.keys.path().join("audit.json");
    std::fs::write(&audit_json, report.to_string()).unwrap();
    let (a, p) = (audit_json.to_str().unwrap(), page.to_str().unwrap());
    let out = alice.cli(&["report", b, a, "--ca", t.ca(), "--out", p]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let html = std::fs::read_to_string(page).unwrap();
    assert!(
        html.contains("alice@laptop"),
        "the audited session on the page"
    );
}

/// A team whose alice enrolled and recorded session s1 in her clone.
struct Reported {
    t: Team,
    alice: Machine,
    _clone: TempDir,
    /// The session's bundle, with the clone's own anchor.pub beside it.
    bundle: String,
    /// Where a page goes.
    page: PathBuf,
}

fn reported(tag: &str) -> Reported {
    let t = team(tag);
    let (alice, clone) = t.enrolled_session(&format!("{tag}-alice"), "alice@laptop", "s1");
    let bundle = clone.path().join(".attenu/bundle-s1.json");
    assert!(clone.path().join(".attenu/anchor.pub").exists());
    let bundle = bundle.to_str().unwrap().to_string();
    let page = t.keys.path().join("page.html");
    Reported {
        t,
        alice,
        _clone: clone,
        bundle,
        page,
    }
}

/// The page at `page`, and its line about the key (`data-key`).
fn page_and_key_line(page: &Path) -> (String, String) {
    let html = std::fs::read_to_string(page).unwrap();
    let key = html
        .lines()
        .find(|l| l.contains("data-key"))
        .unwrap()
        .to_string();
    (html, key)
}
