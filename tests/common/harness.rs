//! A small test runner for the test files that need something this machine may lack (the
//! reference verifier, the real Claude Code, `strace`, `faketime`, root, a tmpfs mount, the
//! `test-faults` build). Such a file sets `harness = false` in Cargo.toml and ends its `main`
//! with `harness::run(tests![a, b, c])`; a test that finds its prerequisite missing calls one of
//! the `need_*` functions (or [`skip`]) and is reported as **ignored**, with the reason, in
//! cargo's summary, never as `ok`. With `ATTENU_REQUIRE_LIVE=1` (CI) a missing prerequisite
//! fails the test instead.
//!
//! Why not libtest's `#[test]`: it cannot ignore a test once it is running, and several of these
//! tests only find out what is missing part-way (a tmpfs that cannot be mounted, a uid that
//! cannot run the binary). Why not `libtest-mimic`: its ignore flag is decided before the test
//! starts (the same problem), and it enables clap's default features (`suggestions`, `color`)
//! through Cargo's feature unification in every `cargo test` build, so the binary under test
//! would no longer be the one `cargo build` ships.
//!
//! The output and the command line follow libtest's: `cargo test --test crash -- NAME`,
//! `--exact`, `--skip`, `--list`, `--test-threads`, `--include-ignored`; the output of a test
//! is not captured (a test's own `eprintln!` shows as it runs).
//!
//! A test missing from the list given to [`run`] is dead code, which the lints refuse.

use std::fmt::Display;
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// One test: its name (the function's) and its body.
pub type Trial = (&'static str, fn());

/// The trials of a file, named after their functions: `tests![a, b]`.
#[macro_export]
macro_rules! tests {
    ($($name:ident),* $(,)?) => {
        vec![$((stringify!($name), $name as fn())),*]
    };
}

/// The panic payload of a test that did not run: why.
struct Skipped(String);

/// Whether a missing prerequisite fails the test (`ATTENU_REQUIRE_LIVE=1`, as CI sets it).
pub fn required() -> bool {
    std::env::var("ATTENU_REQUIRE_LIVE").is_ok_and(|v| v == "1")
}

/// Ends the running test as not run (ignored, with `why`), or as failed under
/// `ATTENU_REQUIRE_LIVE=1`.
pub fn skip(why: impl Display) -> ! {
    if required() {
        panic!("ATTENU_REQUIRE_LIVE=1, but this test cannot run: {why}");
    }
    std::panic::panic_any(Skipped(why.to_string()))
}

/// A python with attenu-guard installed (`ATTENU_REF_PYTHON`), or the test is skipped.
pub fn need_reference_python() -> String {
    let py = std::env::var("ATTENU_REF_PYTHON")
        .ok()
        .filter(|p| !p.is_empty());
    let ok = py.as_ref().is_some_and(|p| {
        Command::new(p)
            .args(["-c", "import attenu_guard, cryptography"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    });
    match py {
        Some(py) if ok => py,
        _ if std::env::var_os("CI").is_some() => panic!(
            "CI must set ATTENU_REF_PYTHON to a python with attenu-guard[crypto]==0.21.0 (see .ci/run)"
        ),
        _ => skip(
            "needs the reference verifier: set ATTENU_REF_PYTHON to a python with \
             `attenu-guard[crypto]==0.21.0` (.ci/run does)",
        ),
    }
}

/// That `program` (a Debian package .ci/run installs: `strace`, `faketime`) runs, or the test
/// is skipped.
pub fn need_tool(program: &str, probe: &str) {
    let present = Command::new(program)
        .arg(probe)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if !present {
        skip(format!(
            "needs `{program}` (apt-get install {program}; .ci/run does)"
        ));
    }
}

/// That this process runs as root (CI does), or the test is skipped.
pub fn need_root() {
    use std::os::unix::fs::MetadataExt;
    if std::fs::metadata("/proc/self").map(|m| m.uid()).ok() != Some(0) {
        skip("needs root (CI runs as root)");
    }
}

/// That the binary was built with the test-only fault switches, or the test is skipped.
pub fn need_test_faults() {
    if !cfg!(feature = "test-faults") {
        skip("needs the test-only fault switches: run `cargo test --features test-faults`");
    }
}

enum Outcome {
    Passed,
    Failed,
    Ignored(String),
}

struct Args {
    filters: Vec<String>,
    skips: Vec<String>,
    exact: bool,
    list: bool,
    terse: bool,
    quiet: bool,
    only_ignored: bool,
    threads: usize,
}

fn parse_args() -> Args {
    let mut a = Args {
        filters: Vec::new(),
        skips: Vec::new(),
        exact: false,
        list: false,
        terse: false,
        quiet: false,
        only_ignored: false,
        threads: std::env::var("RUST_TEST_THREADS")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let value = |it: &mut dyn Iterator<Item = String>| {
            inline
                .clone()
                .or_else(|| it.next())
                .unwrap_or_else(|| usage(&format!("{flag} needs a value")))
        };
        match flag.as_str() {
            "--exact" => a.exact = true,
            "--list" => a.list = true,
            "--ignored" => a.only_ignored = true,
            "-q" | "--quiet" => a.quiet = true,
            "--skip" => a.skips.push(value(&mut it)),
            "--test-threads" => {
                a.threads = value(&mut it)
                    .parse()
                    .unwrap_or_else(|_| usage("--test-threads needs a number"))
            }
            "--format" => a.terse = value(&mut it) == "terse",
            "--color" | "-Z" | "--logfile" | "--report-time" => {
                value(&mut it);
            }
            // Nothing is captured, and nothing is ignored before it runs.
            "--nocapture" | "--no-capture" | "--show-output" | "--include-ignored" => {}
            "--test" | "--bench" => {}
            f if f.starts_with('-') => usage(&format!("unknown option {f}")),
            _ => a.filters.push(arg),
        }
    }
    a.threads = a.threads.max(1);
    a
}

fn usage(problem: &str) -> ! {
    eprintln!("error: {problem}\nusage: TEST-BINARY [FILTER...] [--exact] [--skip S] [--list] [--test-threads N] [--include-ignored] [--nocapture] [-q]");
    std::process::exit(101)
}

/// Runs the file's trials the way libtest would, and exits (101 when any failed).
pub fn run(trials: Vec<Trial>) -> ! {
    let args = parse_args();
    let total = trials.len();
    let selected: Vec<Trial> = trials
        .into_iter()
        .filter(|(name, _)| {
            let hit = |f: &String| {
                if args.exact {
                    name == f
                } else {
                    name.contains(f.as_str())
                }
            };
            (args.filters.is_empty() || args.filters.iter().any(hit))
                && !args.skips.iter().any(hit)
                && !args.only_ignored
        })
        .collect();
    if args.list {
        for (name, _) in &selected {
            println!("{name}: test");
        }
        if !args.terse {
            println!("\n{} tests, 0 benchmarks", selected.len());
        }
        std::process::exit(0);
    }
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !info.payload().is::<Skipped>() {
            default_hook(info)
        }
    }));
    let filtered_out = total - selected.len();
    let n = selected.len();
    println!("\nrunning {n} test{}", if n == 1 { "" } else { "s" });
    let started = Instant::now();
    let queue = Arc::new(Mutex::new(selected.into_iter()));
    let results = Arc::new(Mutex::new(Vec::new()));
    let workers: Vec<_> = (0..args.threads.min(n.max(1)))
        .map(|_| {
            let (queue, results) = (queue.clone(), results.clone());
            let quiet = args.quiet;
            std::thread::spawn(move || loop {
                let Some((name, body)) = queue.lock().unwrap().next() else {
                    break;
                };
                let outcome = match std::thread::Builder::new()
                    .name(name.to_string())
                    .spawn(body)
                    .expect("spawn a test thread")
                    .join()
                {
                    Ok(()) => Outcome::Passed,
                    Err(payload) => match payload.downcast::<Skipped>() {
                        Ok(why) => Outcome::Ignored(why.0),
                        Err(_) => Outcome::Failed,
                    },
                };
                let mut out = std::io::stdout().lock();
                if quiet {
                    let c = match outcome {
                        Outcome::Passed => ".",
                        Outcome::Failed => "F",
                        Outcome::Ignored(_) => "i",
                    };
                    let _ = write!(out, "{c}");
                } else {
                    let _ = match &outcome {
                        Outcome::Passed => writeln!(out, "test {name} ... ok"),
                        Outcome::Failed => writeln!(out, "test {name} ... FAILED"),
                        Outcome::Ignored(why) => writeln!(out, "test {name} ... ignored, {why}"),
                    };
                }
                let _ = out.flush();
                results.lock().unwrap().push((name, outcome));
            })
        })
        .collect();
    for w in workers {
        w.join().expect("a test worker");
    }
    let results = results.lock().unwrap();
    let count = |f: fn(&Outcome) -> bool| results.iter().filter(|(_, o)| f(o)).count();
    let passed = count(|o| matches!(o, Outcome::Passed));
    let failed = count(|o| matches!(o, Outcome::Failed));
    let ignored = count(|o| matches!(o, Outcome::Ignored(_)));
    if args.quiet {
        println!();
    }
    if failed > 0 {
        println!("\nfailures:");
        for (name, o) in results.iter() {
            if matches!(o, Outcome::Failed) {
                println!("    {name}");
            }
        }
    }
    println!(
        "\ntest result: {}. {passed} passed; {failed} failed; {ignored} ignored; 0 measured; {filtered_out} filtered out; finished in {:.2}s\n",
        if failed > 0 { "FAILED" } else { "ok" },
        started.elapsed().as_secs_f64()
    );
    std::process::exit(if failed > 0 { 101 } else { 0 })
}
