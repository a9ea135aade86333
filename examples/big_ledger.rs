//! Grows a session ledger of `N` entries for the scale benchmarks, without a hook call per
//! entry: a template session made by the real hook (a root, a reviewer spawn, an allowed Read
//! with its outcome, and whatever followed it) is replayed as its opening entries, the first
//! allow/outcome pair repeated with a fresh call id and tool_use_id each time, and its closing
//! entries. Everything is appended through the library's own `Ledger::append`, in batches, so
//! the chain, the tree and the sealed checkpoint are the ones the hook keeps, signed with the
//! template project's keys.
//!
//! `bench/scale.py` times `export` and `verify` of the result; `bench/bigledger.py` passes
//! `--lose-checkpoint`, which removes the session's sealed checkpoint afterwards, so the
//! hook's next call re-verifies the whole ledger from GENESIS.
//!
//! ```text
//! cargo run --release --example big_ledger -- PROJECT TEMPLATE_SESSION SESSION N [--lose-checkpoint]
//! ```

use attenu_hook::evidence::keys;
use attenu_hook::ledger::store::{Ledger, SessionPaths};
use serde_json::{Map, Value};
use std::path::Path;
use std::time::{Duration, Instant};

const BATCH: usize = 20_000;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (args, lose_checkpoint) = match args.as_slice() {
        [rest @ .., flag] if flag == "--lose-checkpoint" => (rest, true),
        rest => (rest, false),
    };
    let [project, template, session, n] = args else {
        eprintln!("usage: big_ledger PROJECT TEMPLATE_SESSION SESSION N [--lose-checkpoint]");
        std::process::exit(2);
    };
    let n: usize = n.parse().expect("N is a number");
    let attenu = Path::new(project).join(".attenu");
    let key = keys::load_or_create(&attenu).expect("the template's keys");
    let text = std::fs::read_to_string(attenu.join(format!("ledger-{template}.jsonl")))
        .expect("the template session's ledger");
    let entries: Vec<Map<String, Value>> = text
        .lines()
        .map(|l| unsealed(serde_json::from_str(l).expect("a ledger line")))
        .collect();
    let allow = entries
        .iter()
        .position(|e| e["event"] == "allow")
        .expect("the template has an allow");
    let outcome = allow + 1;
    assert_eq!(
        entries[outcome]["event"], "outcome",
        "an outcome follows the allow"
    );
    let (opening, closing) = (&entries[..allow], &entries[outcome + 1..]);
    let pairs = n.saturating_sub(opening.len() + closing.len()) / 2;

    let started = Instant::now();
    let paths = SessionPaths::new(&attenu, session);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut ledger = Ledger::open(paths, key.state_mac_key(), deadline).expect("open");
    ledger.append(opening.to_vec()).expect("append");
    let mut batch = Vec::with_capacity(BATCH);
    for k in 0..pairs {
        for e in [&entries[allow], &entries[outcome]] {
            batch.push(renamed(e, k));
        }
        if batch.len() >= BATCH {
            ledger.append(std::mem::take(&mut batch)).expect("append");
        }
    }
    batch.extend(closing.iter().cloned());
    ledger.append(batch).expect("append");
    let total: u64 = ledger.state.chains.iter().map(|c| c.entries).sum();
    if lose_checkpoint {
        std::fs::remove_file(attenu.join(format!("ledger-{session}.state.json")))
            .expect("the session's checkpoint");
    }
    eprintln!(
        "wrote {total} entries to {} in {:.1} s",
        ledger.paths.ledger.display(),
        started.elapsed().as_secs_f64()
    );
}

/// An entry without what `append` seals it with.
fn unsealed(v: Value) -> Map<String, Value> {
    let Value::Object(mut e) = v else {
        panic!("a ledger line is an object")
    };
    for k in ["v", "c14n", "seq", "prev_hash", "hash"] {
        e.remove(k);
    }
    e
}

/// The template's allow or outcome as the `k`-th call: its own call id and tool_use_id.
fn renamed(e: &Map<String, Value>, k: usize) -> Map<String, Value> {
    let mut e = e.clone();
    e.insert("call_id".into(), Value::from(format!("{:032x}", k + 1)));
    if let Some(Value::Object(c)) = e.get_mut("context") {
        c.insert("tool_use_id".into(), Value::from(format!("toolu_{k:08}")));
    }
    e
}
