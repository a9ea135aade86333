//! A real S3 engine for the tests: Garage, single node, on loopback with free ports and a
//! temporary data directory. [`Garage::start`] returns once it serves S3, with a bucket and a
//! key that may read and write it; dropping it kills the server and removes its directory.
//!
//! The binary is `ATTENU_GARAGE_BIN`, else `garage` on PATH (.ci/run installs it). Without it,
//! [`need_garage`] reports the test as ignored, or fails it under `ATTENU_REQUIRE_LIVE=1`.

use crate::common::harness::skip;
use crate::common::TempDir;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The Garage binary, or the test is skipped.
pub fn need_garage() -> PathBuf {
    let bin = std::env::var_os("ATTENU_GARAGE_BIN")
        .filter(|b| !b.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("garage"));
    let runs = Command::new(&bin)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !runs {
        skip(format!(
            "needs Garage 2.5.0 (`cargo install --locked garage --version 2.5.0`; .ci/run does): set ATTENU_GARAGE_BIN or put `garage` on PATH ({} does not run)",
            bin.display()
        ));
    }
    bin
}

/// A running single-node Garage with one bucket and one key.
pub struct Garage {
    bin: PathBuf,
    dir: TempDir,
    server: Option<Child>,
    /// `http://127.0.0.1:PORT`, the S3 API.
    pub endpoint: String,
    s3_addr: SocketAddr,
    pub region: String,
    pub bucket: String,
    pub key_id: String,
    pub secret: String,
}

/// A port free on loopback now (bound, then released for the server to take), below the
/// kernel's ephemeral range: a port that `bind(0)` hands out is one that any outgoing
/// connection (another test's shipper, the `garage` CLI) may take before the server binds it.
fn free_port() -> u16 {
    for _ in 0..1000 {
        let port = 20_000 + (u16::from_str_radix(&random_hex(2), 16).unwrap() % 12_000);
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port on 127.0.0.1 in 20000..32000")
}

fn random_hex(bytes: usize) -> String {
    use std::io::Read;
    let mut b = vec![0u8; bytes];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .expect("read /dev/urandom");
    b.iter().map(|b| format!("{b:02x}")).collect()
}

impl Garage {
    /// Starts Garage (or skips the test without it), assigns its layout, and creates bucket
    /// `evidence` and a key with read and write on it.
    pub fn start() -> Garage {
        let bin = need_garage();
        // A port taken between choosing it and the server's bind makes Garage exit at once:
        // then it starts again on other ports.
        let mut attempt = 0;
        loop {
            attempt += 1;
            match Garage::try_start(&bin) {
                Ok(g) => return g,
                Err(log) if attempt < 5 => eprintln!("garage exited at start, retrying:\n{log}"),
                Err(log) => panic!("garage did not start in {attempt} attempts:\n{log}"),
            }
        }
    }

    /// [`Garage::start`] on one pair of ports; the server's log when it exited at start.
    fn try_start(bin: &std::path::Path) -> Result<Garage, String> {
        let bin = bin.to_path_buf();
        let dir = TempDir::new("garage");
        let (rpc, s3) = (free_port(), free_port());
        let config = format!(
            "metadata_dir = \"{d}/meta\"\ndata_dir = \"{d}/data\"\ndb_engine = \"sqlite\"\n\
             replication_factor = 1\nrpc_bind_addr = \"127.0.0.1:{rpc}\"\n\
             rpc_public_addr = \"127.0.0.1:{rpc}\"\nrpc_secret = \"{secret}\"\n\n\
             [s3_api]\ns3_region = \"garage\"\napi_bind_addr = \"127.0.0.1:{s3}\"\n",
            d = dir.path().display(),
            secret = random_hex(32),
        );
        std::fs::write(dir.path().join("garage.toml"), config).unwrap();
        let mut g = Garage {
            bin,
            dir,
            server: None,
            endpoint: format!("http://127.0.0.1:{s3}"),
            s3_addr: SocketAddr::from(([127, 0, 0, 1], s3)),
            region: "garage".into(),
            bucket: "evidence".into(),
            key_id: String::new(),
            secret: String::new(),
        };
        g.start_server()?;
        let id = g.cli(&["node", "id", "-q"]);
        let id = id.trim().split('@').next().unwrap().to_string();
        g.cli(&["layout", "assign", "-z", "dc1", "-c", "1G", &id]);
        g.cli(&["layout", "apply", "--version", "1"]);
        g.cli(&["bucket", "create", "evidence"]);
        let key = g.cli(&["key", "create", "attenu-test"]);
        let field = |name: &str| {
            key.lines()
                .find_map(|l| l.strip_prefix(name))
                .map(|v| v.trim().to_string())
                .unwrap_or_else(|| panic!("no {name:?} in `garage key create`'s output:\n{key}"))
        };
        g.key_id = field("Key ID:");
        g.secret = field("Secret key:");
        g.cli(&[
            "bucket",
            "allow",
            "--read",
            "--write",
            "--owner",
            "evidence",
            "--key",
            "attenu-test",
        ]);
        g.wait_for_s3();
        Ok(g)
    }

    fn config(&self) -> PathBuf {
        self.dir.path().join("garage.toml")
    }

    /// Runs `garage -c CONFIG ARGS`, which must succeed; returns its stdout.
    pub fn cli(&self, args: &[&str]) -> String {
        let out = Command::new(&self.bin)
            .arg("-c")
            .arg(self.config())
            .args(args)
            .output()
            .expect("run garage");
        assert!(
            out.status.success(),
            "garage {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Starts the server on its directory (again, after [`Garage::stop`]) and waits until its
    /// RPC answers.
    #[allow(dead_code)] // tests/audit.rs includes this file but never restarts a server
    pub fn resume(&mut self) {
        if let Err(log) = self.start_server() {
            panic!("garage exited at start:\n{log}");
        }
    }

    /// [`Garage::resume`], or the server's log when it exited before its RPC answered.
    fn start_server(&mut self) -> Result<(), String> {
        assert!(self.server.is_none(), "garage runs already");
        let log = std::fs::File::create(self.dir.path().join("server.log")).unwrap();
        let child = Command::new(&self.bin)
            .arg("-c")
            .arg(self.config())
            .arg("server")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start garage");
        self.server = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let status = Command::new(&self.bin)
                .arg("-c")
                .arg(self.config())
                .arg("status")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
            if status.is_ok_and(|s| s.success()) {
                break;
            }
            let exited = self
                .server
                .as_mut()
                .is_some_and(|c| c.try_wait().is_ok_and(|s| s.is_some()));
            // Garage reports a port in use as a panic, and may not have exited yet.
            if exited || self.log().contains("Address already in use") {
                self.stop();
                return Err(self.log());
            }
            assert!(
                Instant::now() < deadline,
                "garage did not start:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        if !self.key_id.is_empty() {
            self.wait_for_s3();
        }
        Ok(())
    }

    /// Waits until the S3 API accepts connections.
    fn wait_for_s3(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect_timeout(&self.s3_addr, Duration::from_millis(200)).is_err() {
            assert!(
                Instant::now() < deadline,
                "garage's S3 API did not open:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Kills the server (its data stays, for [`Garage::resume`]).
    pub fn stop(&mut self) {
        if let Some(mut c) = self.server.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// The server's log, for failure messages.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    /// The environment a shipper needs for this store (the store's standard variables).
    pub fn env(&self) -> Vec<(String, String)> {
        [
            ("AWS_ACCESS_KEY_ID", self.key_id.as_str()),
            ("AWS_SECRET_ACCESS_KEY", self.secret.as_str()),
            ("AWS_REGION", self.region.as_str()),
            ("AWS_ENDPOINT_URL", self.endpoint.as_str()),
            ("AWS_ALLOW_HTTP", "true"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }
}

impl Drop for Garage {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Variables of the ambient environment that would point a shipper elsewhere.
pub const AWS_VARS: &[&str] = &[
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ENDPOINT",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "AWS_ALLOW_HTTP",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
    "AWS_ENDPOINT_URL_STS",
];

/// The binary with `args`, in an environment of its own: no Claude Code config or project
/// from the caller's, none of the caller's `AWS_*`, and `env` (the store's) instead.
pub fn isolated_command(args: &[&str], env: &[(String, String)]) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_attenu-hook"));
    cmd.args(args)
        .env(
            "CLAUDE_CONFIG_DIR",
            "/nonexistent/attenu-test-claude-config",
        )
        .env_remove("CLAUDE_PROJECT_DIR");
    for v in AWS_VARS {
        cmd.env_remove(v);
    }
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    cmd
}
