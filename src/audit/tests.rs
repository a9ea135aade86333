//! Unit tests of the audit: chains written with the library (no hook, no store), each
//! changed the way an attacker on the machine could, and judged.

use super::judge::judge_chain;
use super::read::{ChainObjects, Stored};
use super::render::render_text;
use super::report::{Report, SessionReport, Status};
use crate::evidence::bundle;
use crate::evidence::checkpoint::{self, ObjectNames};
use crate::evidence::keys::AnchorKey;
use crate::ledger::chain::{seal, GENESIS};
use ed25519_dalek::SigningKey;
use serde_json::{json, Value};

const KID: &str = "attenu-hook-00000000000000aa";
const CHAIN: &str = "cc-s1-abc-1";
const NOW: u64 = 1_800_000_000_000;

fn key(seed: u8) -> AnchorKey {
    AnchorKey {
        signing: SigningKey::from_bytes(&[seed; 32]),
        kid: KID.into(),
    }
}

/// A chain of `n` entries: a root, a spawn, then denies; `variant` changes the denies'
/// reasons from `from_variant` on, so two variants share their first entries.
fn chain(n: usize, variant: u32, from_variant: usize) -> Vec<Value> {
    let mut prev = GENESIS.to_string();
    let mut out = Vec::new();
    for i in 0..n {
        let body = match i {
            0 => {
                json!({"event": "root", "node": "c:n0", "agent": "main", "params_salt": "00112233445566778899aabbccddeeff",
                        "authority": {"scopes": ["fs.read"], "constraints": [], "ttl": null}})
            }
            1 => json!({"event": "spawn", "node": "c:n1", "parent": "c:n0", "agent": "reviewer",
                        "granted": {"scopes": ["fs.read"], "constraints": [], "ttl": null}}),
            _ => {
                let v = if i >= from_variant { variant } else { 0 };
                json!({"event": "deny", "node": "c:n1", "scope": "exec.bash", "tool": "Bash",
                       "call_id": format!("{:032x}", i), "reason": format!("scope_not_granted {v}"),
                       "disposition": "out_of_authority"})
            }
        };
        let mut e = body.as_object().unwrap().clone();
        e.insert("v".into(), json!(2));
        e.insert("c14n".into(), json!("JCS"));
        e.insert("seq".into(), json!(i));
        e.insert("ts".into(), json!(i + 1));
        e.insert("chain_id".into(), json!(CHAIN));
        prev = seal(&mut e, &prev).unwrap();
        out.push(Value::Object(e));
    }
    out
}

/// A chain directory being filled the way the shipper fills the store.
struct Dir {
    key: AnchorKey,
    objects: Vec<Stored>,
}

fn names() -> ObjectNames<'static> {
    ObjectNames {
        kid: KID,
        session: "s1",
        chain_id: CHAIN,
    }
}

impl Dir {
    fn new() -> Dir {
        Dir {
            key: key(1),
            objects: Vec::new(),
        }
    }
    fn put(&mut self, key: String, bytes: Vec<u8>, at: u64) {
        self.objects.push(Stored {
            key,
            stored_ms: NOW - 3_600_000 + at * 1000,
            bytes: Some(bytes),
            skipped: None,
        });
    }
    /// The checkpoint of `entries[..size]` and the entries object `from..size`, at `at`.
    fn ship(&mut self, entries: &[Value], from: usize, size: usize, at: u64) -> &mut Dir {
        let tree = checkpoint::tree_of(&entries[..size]).unwrap();
        let lines: String = entries[from..size]
            .iter()
            .map(|e| crate::json::canonical::to_string(e).unwrap() + "\n")
            .collect();
        let root = tree.root();
        self.put(
            names().entries(from as u64, size as u64, &root),
            lines.into_bytes(),
            at,
        );
        self.checkpoint(entries, size, at)
    }
    fn checkpoint(&mut self, entries: &[Value], size: usize, at: u64) -> &mut Dir {
        let tree = checkpoint::tree_of(&entries[..size]).unwrap();
        let note = checkpoint::sign(&self.key, CHAIN, size as u64, &tree.root()).unwrap();
        self.put(
            names().checkpoint(size as u64, &tree.root()),
            note.into_bytes(),
            at,
        );
        self
    }
    fn bundle(&mut self, entries: &[Value], at: u64) -> &mut Dir {
        let b = bundle::build(entries.to_vec(), &self.key, 1, 1).unwrap();
        let tree = checkpoint::tree_of(entries).unwrap();
        let key = names().bundle(entries.len() as u64, &tree.root());
        self.put(key, serde_json::to_vec(&b).unwrap(), at);
        self
    }
    fn judge_with(&self, key: Option<&AnchorKey>) -> super::report::ChainReport {
        let chain = ChainObjects {
            kid: KID.into(),
            session: "s1".into(),
            chain_id: CHAIN.into(),
            objects: self.objects.clone(),
            times_trusted: true,
        };
        let vk = key.map(|k| k.verifying());
        judge_chain(
            &chain,
            vk.as_ref().ok_or("no --pub key has the id of this project"),
            NOW,
        )
    }
    fn judge(&self) -> (Status, String) {
        let r = self.judge_with(Some(&key(1)));
        (r.status, r.why)
    }
}

/// An honest session: checkpoints at 2, 6, 9 with their entries, then the closing bundle.
fn honest() -> (Dir, Vec<Value>) {
    let a = chain(9, 0, 0);
    let mut d = Dir::new();
    d.ship(&a, 0, 2, 1).ship(&a, 2, 6, 2).ship(&a, 6, 9, 3);
    (d, a)
}

#[test]
fn an_honest_session_is_complete_and_without_its_bundle_open() {
    let (mut d, a) = honest();
    let (status, why) = d.judge();
    assert_eq!(status, Status::Open, "{why}");
    assert!(
        why.contains("no closing bundle yet") && why.contains("checkpoint 9"),
        "{why}"
    );
    assert!(why.contains("59 min ago"), "{why}");
    d.bundle(&a, 4);
    let (status, why) = d.judge();
    assert_eq!(status, Status::Complete, "{why}");
    assert!(why.contains("extends all 3 checkpoint(s)"), "{why}");
}

#[test]
fn two_checkpoints_of_one_size_are_forked() {
    let (mut d, _) = honest();
    // A rewrite from GENESIS, signed again with the same key, reaching size 6 again.
    let b = chain(6, 1, 0);
    d.ship(&b, 0, 6, 10);
    let (status, why) = d.judge();
    assert_eq!(status, Status::Forked, "{why}");
    assert!(why.contains("size 6 with different roots"), "{why}");
}

#[test]
fn a_rollback_then_a_different_history_is_rewritten() {
    let (mut d, a) = honest();
    // Ledger and state rolled back to size 6, then the session went on differently.
    let b = chain(8, 2, 6);
    assert_eq!(a[..6], b[..6]);
    d.ship(&b, 6, 8, 10);
    let (status, why) = d.judge();
    assert_eq!(status, Status::Rewritten, "{why}");
    assert!(
        why.contains("checkpoint 8") && why.contains("checkpoint 9"),
        "{why}"
    );
    assert!(why.contains("received earlier"), "{why}");
    // ...and its closing bundle does not make it complete.
    d.bundle(&b, 11);
    assert_eq!(d.judge().0, Status::Rewritten);
}

#[test]
fn a_rewrite_from_genesis_of_another_size_is_rewritten() {
    let (mut d, _) = honest();
    let b = chain(4, 3, 0);
    d.ship(&b, 0, 4, 10).bundle(&b, 11);
    let (status, why) = d.judge();
    assert_eq!(status, Status::Rewritten, "{why}");
}

#[test]
fn a_closing_bundle_short_of_a_shipped_checkpoint_is_truncated() {
    let (mut d, a) = honest();
    d.bundle(&a[..6], 5);
    let (status, why) = d.judge();
    assert_eq!(status, Status::Truncated, "{why}");
    assert!(
        why.contains("bundle 6") && why.contains("checkpoint 9"),
        "{why}"
    );
    assert!(why.contains("entries 6 to 8 were cut off"), "{why}");
    // Received in the same instant as the checkpoint: still not after it.
    let (mut d, a) = honest();
    d.bundle(&a[..6], 3);
    assert_eq!(d.judge().0, Status::Truncated);
}

#[test]
fn a_chain_that_went_on_after_its_bundle_is_open() {
    let a = chain(9, 0, 0);
    let mut d = Dir::new();
    d.ship(&a, 0, 6, 1).bundle(&a[..6], 2).ship(&a, 6, 9, 3);
    let (status, why) = d.judge();
    assert_eq!(status, Status::Open, "{why}");
    assert!(why.contains("went on after its bundle 6"), "{why}");
    d.bundle(&a, 4);
    assert_eq!(d.judge().0, Status::Complete);
}

#[test]
fn a_note_by_another_key_or_for_another_chain_is_unverifiable() {
    let (mut d, a) = honest();
    d.key = key(2);
    d.checkpoint(&a, 4, 5);
    let (status, why) = d.judge();
    assert_eq!(status, Status::Unverifiable, "{why}");
    assert!(
        why.contains("no valid signature by the pinned key"),
        "{why}"
    );

    let (mut d, a) = honest();
    d.bundle(&a, 4);
    let tree = checkpoint::tree_of(&a[..4]).unwrap();
    let note = checkpoint::sign(&d.key, "cc-other-1", 4, &tree.root()).unwrap();
    d.put(names().checkpoint(4, &tree.root()), note.into_bytes(), 5);
    let (status, why) = d.judge();
    assert_eq!(status, Status::Unverifiable, "{why}");
    assert!(why.contains("names the log"), "{why}");
}

#[test]
fn without_a_pinned_key_for_the_project_nothing_verifies() {
    let (mut d, a) = honest();
    d.bundle(&a, 4);
    let r = d.judge_with(None);
    assert_eq!(r.status, Status::Unverifiable, "{}", r.why);
    assert!(r.why.contains("no --pub key has the id"), "{}", r.why);
    // A key of the same id that is not the one that signed.
    let r = d.judge_with(Some(&key(3)));
    assert_eq!(r.status, Status::Unverifiable, "{}", r.why);
}

#[test]
fn malformed_objects_are_unverifiable() {
    type Change = fn(&mut Stored);
    let cases: Vec<(&str, Change)> = vec![
        ("a changed entry", |o| {
            let text = String::from_utf8(o.bytes.take().unwrap()).unwrap();
            o.bytes = Some(
                text.replacen("scope_not_granted", "scope_not_grantee", 1)
                    .into_bytes(),
            );
        }),
        ("a dropped line", |o| {
            let text = String::from_utf8(o.bytes.take().unwrap()).unwrap();
            let rest: String = text.split_inclusive('\n').skip(1).collect();
            o.bytes = Some(rest.into_bytes());
        }),
        ("an object gone", |o| o.bytes = None),
    ];
    for (what, change) in cases {
        let (mut d, a) = honest();
        d.bundle(&a, 4);
        let entries = d
            .objects
            .iter_mut()
            .find(|o| o.key.contains("/entries/00000000000000000002-"))
            .unwrap();
        change(entries);
        let (status, why) = d.judge();
        assert_eq!(status, Status::Unverifiable, "{what}: {why}");
        assert!(why.starts_with("entries/"), "{what}: {why}");
    }
    // A bundle with an entry changed does not verify.
    let (mut d, a) = honest();
    d.bundle(&a, 4);
    let b = d.objects.last_mut().unwrap();
    let text = String::from_utf8(b.bytes.take().unwrap()).unwrap();
    b.bytes = Some(
        text.replacen("scope_not_granted", "scope_not_grantee", 1)
            .into_bytes(),
    );
    let (status, why) = d.judge();
    assert_eq!(status, Status::Unverifiable, "{why}");
    assert!(
        why.contains("does not verify under the pinned key"),
        "{why}"
    );
}

#[test]
fn a_checkpoint_without_its_entries_cannot_be_checked() {
    let a = chain(9, 0, 0);
    let mut d = Dir::new();
    d.ship(&a, 0, 6, 1).checkpoint(&a, 9, 2);
    let (status, why) = d.judge();
    assert_eq!(status, Status::Unverifiable, "{why}");
    assert!(
        why.contains("no entries in the store that lead to it"),
        "{why}"
    );
    // The closing bundle holds them.
    d.bundle(&a, 3);
    assert_eq!(d.judge().0, Status::Complete);
}

#[test]
fn entries_a_checkpoint_covers_later_need_no_checkpoint_of_their_own() {
    // The hook died after queueing entries 2..4 and before their checkpoint; the next event
    // queued 2..6 and checkpoint 6.
    let a = chain(9, 0, 0);
    let mut d = Dir::new();
    d.ship(&a, 0, 2, 1).ship(&a, 2, 4, 2);
    d.objects
        .retain(|o| !o.key.contains("/checkpoint/00000000000000000004-"));
    d.ship(&a, 2, 6, 3).ship(&a, 6, 9, 4).bundle(&a, 5);
    assert_eq!(d.judge().0, Status::Complete, "{}", d.judge().1);
    // Entries on a branch no signed history holds are not.
    let b = chain(5, 4, 3);
    let tree = checkpoint::tree_of(&b).unwrap();
    let lines: String = b[2..5]
        .iter()
        .map(|e| crate::json::canonical::to_string(e).unwrap() + "\n")
        .collect();
    d.put(names().entries(2, 5, &tree.root()), lines.into_bytes(), 6);
    let (status, why) = d.judge();
    assert_eq!(status, Status::Unverifiable, "{why}");
    assert!(
        why.contains("where no checkpoint or bundle signed by the pinned key leads"),
        "{why}"
    );
}

#[test]
fn statuses_are_ordered_and_a_session_has_its_worst_chain() {
    use Status::*;
    let order = [Complete, Open, Unverifiable, Truncated, Rewritten, Forked];
    assert!(order.windows(2).all(|w| w[0] < w[1]));
    assert!(Open.passes() && Complete.passes() && !Unverifiable.passes());
    let (mut ok, a) = honest();
    ok.bundle(&a, 4);
    let (mut bad, a) = honest();
    bad.bundle(&a[..6], 5);
    let chains = vec![ok.judge_with(Some(&key(1))), {
        let mut r = bad.judge_with(Some(&key(1)));
        r.chain_id = "cc-s1-abc-2".into();
        r
    }];
    let s = SessionReport::of(KID.into(), "s1".into(), chains);
    assert_eq!(s.status, Truncated);
    assert!(s.why.starts_with("chain cc-s1-abc-2: "), "{}", s.why);
    let report = Report::new(vec![s], vec![]);
    assert!(!report.passes());
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["sessions"][0]["status"], "truncated");
    assert_eq!(
        json["sessions"][0]["chains"][0]["checkpoints"][0]["size"],
        2
    );
    let text = render_text(&report, "s3://b/p", 60);
    assert!(text.lines().all(|l| l.chars().count() <= 60), "{text}");
    assert!(text.contains("1 session(s): 1 truncated"), "{text}");
}

/// `entries` with entry `at` recording a lost sealed state, sealed again from there on.
fn with_loss(mut entries: Vec<Value>, at: usize) -> Vec<Value> {
    entries[at]["context"] =
        json!({"checkpoint_lost": {"cause": "missing", "entries": at, "ledger_bytes": 4321}});
    let mut prev = if at == 0 {
        GENESIS.to_string()
    } else {
        entries[at - 1]["hash"].as_str().unwrap().to_string()
    };
    for e in &mut entries[at..] {
        let mut o = e.as_object().unwrap().clone();
        o.remove("hash");
        prev = seal(&mut o, &prev).unwrap();
        *e = Value::Object(o);
    }
    entries
}

#[test]
fn a_shipped_record_of_a_lost_sealed_state_is_a_notice_never_complete() {
    let a = with_loss(chain(9, 0, 0), 4);
    // Through the entries objects only (no bundle yet): a notice, not open.
    let mut d = Dir::new();
    d.ship(&a, 0, 2, 1).ship(&a, 2, 6, 2).ship(&a, 6, 9, 3);
    let (status, why) = d.judge();
    assert_eq!(status, Status::Notice, "{why}");
    assert!(
        why.contains("entry 4 records") && why.contains("checkpoint-lost"),
        "{why}"
    );
    // With its closing bundle (the verifier's own notice): still a notice, and not a pass.
    d.bundle(&a, 4);
    let r = d.judge_with(Some(&key(1)));
    assert_eq!(r.status, Status::Notice, "{}", r.why);
    assert!(!r.status.passes());
    assert!(r.findings.iter().any(|f| f.status == Status::Complete));
    // Only the bundle carries it: still found.
    let mut d = Dir::new();
    d.checkpoint(&a, 9, 1).bundle(&a, 2);
    assert_eq!(d.judge().0, Status::Notice);
    // The same chain without the record is complete.
    let (mut d, b) = honest();
    d.bundle(&b, 4);
    assert_eq!(d.judge().0, Status::Complete);
}
