//! Fills an object store with `N` shipped sessions for the audit's benchmark, without a hook
//! call: a template session's ledger (made once by the hook) is copied into each session
//! under its own session name and chain id, sealed again, and shipped the way the hook ships
//! it: a checkpoint after the chain's opening entries, one every 64 entries, one at the end,
//! the entries between them, and the closing bundle, all signed with the template project's
//! anchor key. `bench/audit.py` runs it, then times `attenu-hook audit`.
//!
//! ```text
//! cargo run --release --example audit_bench -- URL TEMPLATE_PROJECT TEMPLATE_SESSION N
//! ```
//!
//! The store's endpoint and credentials come from the `AWS_*` environment, as for `ship`.

use attenu_hook::evidence::checkpoint::{self, ObjectNames};
use attenu_hook::evidence::{bundle, keys};
use attenu_hook::json::canonical;
use attenu_hook::ledger::chain;
use attenu_hook::ship::{Store, Target};
use futures_util::stream::{self, StreamExt, TryStreamExt};
use serde_json::Value;
use std::path::Path;

const EVERY: usize = 64;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, project, template, n] = args.as_slice() else {
        eprintln!("usage: audit_bench URL TEMPLATE_PROJECT TEMPLATE_SESSION N");
        std::process::exit(2);
    };
    let n: usize = n.parse().expect("N is a number");
    let attenu = Path::new(project).join(".attenu");
    let key = keys::load(&attenu.join("anchor.key")).expect("the template's anchor key");
    let ledger = std::fs::read_to_string(attenu.join(format!("ledger-{template}.jsonl")))
        .expect("the template session's ledger");
    let entries: Vec<Value> = ledger
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let chain_id = entries[0]["chain_id"].as_str().unwrap().to_string();
    let store = Store::from_env(url, &Target::parse(url).unwrap()).expect("open the store");
    let started = std::time::Instant::now();
    let objects = (0..n).flat_map(|i| {
        let session = format!("bench-{i:05}");
        let copy = copy_session(&entries, template, &session);
        let cid = chain_id.replace(template.as_str(), &session);
        session_objects(&key, &session, &cid, copy)
    });
    let rt = attenu_hook::ship::runtime().unwrap();
    let written: usize = rt
        .block_on(
            stream::iter(objects)
                .map(|(k, bytes)| {
                    let store = &store;
                    async move { store.create(&k, bytes).await.map(|_| 1) }
                })
                .buffer_unordered(32)
                .try_fold(0, |a, b| async move { Ok(a + b) }),
        )
        .expect("write the objects");
    eprintln!(
        "wrote {written} objects for {n} sessions of {} entries in {:.1} s",
        entries.len(),
        started.elapsed().as_secs_f64()
    );
}

/// The template's entries with its session name replaced in every string, sealed again.
fn copy_session(entries: &[Value], template: &str, session: &str) -> Vec<Value> {
    fn replace(v: &mut Value, from: &str, to: &str) {
        match v {
            Value::String(s) if s.contains(from) => *s = s.replace(from, to),
            Value::Array(a) => a.iter_mut().for_each(|v| replace(v, from, to)),
            Value::Object(o) => o.values_mut().for_each(|v| replace(v, from, to)),
            _ => {}
        }
    }
    let mut prev = chain::GENESIS.to_string();
    entries
        .iter()
        .map(|e| {
            let mut e = e.clone();
            replace(&mut e, template, session);
            prev = chain::seal(e.as_object_mut().unwrap(), &prev).unwrap();
            e
        })
        .collect()
}

/// The objects the hook would have shipped for one session: (key, bytes).
fn session_objects(
    key: &keys::AnchorKey,
    session: &str,
    chain_id: &str,
    entries: Vec<Value>,
) -> Vec<(String, Vec<u8>)> {
    let names = ObjectNames {
        kid: &key.kid,
        session,
        chain_id,
    };
    let opening = entries
        .iter()
        .take_while(|e| e["event"] == "root" || e["event"] == "spawn")
        .count();
    let mut sizes: Vec<usize> = vec![opening];
    sizes.extend((opening + EVERY..entries.len()).step_by(EVERY));
    sizes.push(entries.len());
    sizes.dedup();
    let mut out = Vec::new();
    let mut from = 0;
    for size in sizes {
        let tree = checkpoint::tree_of(&entries[..size]).unwrap();
        let root = tree.root();
        let lines: String = entries[from..size]
            .iter()
            .map(|e| canonical::to_string(e).unwrap() + "\n")
            .collect();
        out.push((
            names.entries(from as u64, size as u64, &root),
            lines.into_bytes(),
        ));
        let note = checkpoint::sign(key, chain_id, size as u64, &root).unwrap();
        out.push((names.checkpoint(size as u64, &root), note.into_bytes()));
        from = size;
    }
    let tree = checkpoint::tree_of(&entries).unwrap();
    let size = entries.len() as u64;
    let b = bundle::build(entries, key, 1, 1).unwrap();
    out.push((
        names.bundle(size, &tree.root()),
        serde_json::to_vec(&b).unwrap(),
    ));
    out
}
