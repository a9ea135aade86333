//! Grows a session ledger the hook wrote to `N` entries, for the re-verify benchmark
//! (`bench/bigledger.py`): the last allow and outcome of the template session are repeated as
//! new calls (their own call ids and tool_use_ids), each sealed onto the chain, and the
//! session's checkpoint is removed, so the next hook call re-verifies from GENESIS.
//!
//! ```text
//! cargo run --release --example bigledger -- PROJECT SESSION N
//! ```

use attenu_hook::ledger::{canonical, chain};
use serde_json::{Map, Value};
use std::io::Write;
use std::path::Path;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [project, session, n] = args.as_slice() else {
        eprintln!("usage: bigledger PROJECT SESSION N");
        std::process::exit(2);
    };
    let n: usize = n.parse().expect("N is a number");
    let attenu = Path::new(project).join(".attenu");
    let path = attenu.join(format!("ledger-{session}.jsonl"));
    let text = std::fs::read_to_string(&path).expect("the session's ledger");
    let entries: Vec<Map<String, Value>> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let last = |ev: &str| {
        entries
            .iter()
            .rev()
            .find(|e| e["event"] == ev)
            .unwrap_or_else(|| panic!("the template has no {ev}"))
            .clone()
    };
    let (allow, outcome) = (last("allow"), last("outcome"));
    let mut head = entries.last().unwrap()["hash"]
        .as_str()
        .unwrap()
        .to_string();
    let mut seq = entries.len() as u64;
    let mut out = std::io::BufWriter::with_capacity(
        1 << 20,
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap(),
    );
    let mut i = 0u64;
    while (seq as usize) < n {
        let call_id = chain::sha256_hex(format!("bigledger-{i}").as_bytes())[..32].to_string();
        for template in [&allow, &outcome] {
            let mut e = template.clone();
            e.insert("call_id".into(), Value::from(call_id.clone()));
            if let Some(Value::Object(c)) = e.get_mut("context") {
                if c.contains_key("tool_use_id") {
                    c.insert("tool_use_id".into(), Value::from(format!("tb{i}")));
                }
            }
            e.insert("seq".into(), Value::from(seq));
            head = chain::seal(&mut e, &head).unwrap();
            out.write_all(&canonical::to_vec(&Value::Object(e)).unwrap())
                .unwrap();
            out.write_all(b"\n").unwrap();
            seq += 1;
        }
        i += 1;
    }
    out.flush().unwrap();
    let _ = std::fs::remove_file(attenu.join(format!("ledger-{session}.state.json")));
    eprintln!("{} now holds {seq} entries", path.display());
}
