use super::*;
use crate::tlog::encoding::{b64_decode, hex_decode};
use serde_json::Value;

fn h(s: &str) -> Hash {
    hex_decode::<32>(s).expect("test hash is 64 lowercase hex digits")
}

fn flip(mut hash: Hash, byte: usize, bit: u32) -> Hash {
    hash[byte % 32] ^= 1 << (bit % 8);
    hash
}

/// RFC 6962's definition, recursive, as an independent reference for the tests.
fn reference_root(leaves: &[Hash]) -> Hash {
    match leaves.len() {
        0 => empty_root(),
        1 => leaves[0],
        n => {
            let k = split(n);
            node_hash(&reference_root(&leaves[..k]), &reference_root(&leaves[k..]))
        }
    }
}

fn numbered_leaves(n: u64) -> Vec<Hash> {
    (0..n).map(|i| leaf_hash(&i.to_be_bytes())).collect()
}

// From github.com/transparency-dev/merkle rfc6962/rfc6962_test.go (each reproducible with
// sha256sum, as noted there).
#[test]
fn hashing_matches_rfc6962_vectors() {
    assert_eq!(
        empty_root(),
        h("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    );
    assert_eq!(
        leaf_hash(b""),
        h("6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d")
    );
    let leaf = h("395aa064aa4c29f7010acfe3f25db9485bbd4b91897b6ad7ad547639252b4d56");
    assert_eq!(leaf_hash(b"L123456"), leaf);
    assert_ne!(leaf_hash(b"L123457"), leaf);
    let node = h("aa217fe888e47007fa15edab33c2b492a722cb106c64667fc2b044444de66bbb");
    assert_eq!(hash_children(b"N123", b"N456"), node);
    assert_ne!(hash_children(b"N456", b"N123"), node);
    assert_ne!(hash_children(b"N123", b"N457"), node);
}

// The eight-leaf tree used by the certificate-transparency implementations, from
// github.com/transparency-dev/merkle testonly/constants.go.
const LEAF_INPUTS: [&str; 8] = [
    "",
    "00",
    "10",
    "2021",
    "3031",
    "40414243",
    "5051525354555657",
    "606162636465666768696a6b6c6d6e6f",
];

const LEAF_HASHES: [&str; 8] = [
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
    "0298d122906dcfc10892cb53a73992fc5b9f493ea4c9badb27b791b4127a7fe7",
    "07506a85fd9dd2f120eb694f86011e5bb4662e5c415a62917033d4a9624487e7",
    "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
    "4271a26be0d8a84f0bd54c8c302e7cb3a3b5d1fa6780a40bcce2873477dab658",
    "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
    "46f6ffadd3d06a09ff3c5860d2755c8b9819db7df44251788c7d8e3180de8eb1",
];

// Roots of the trees of sizes 1 to 8 (size 0 is the empty root).
const ROOTS: [&str; 8] = [
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
];

// The interior nodes: level 1 (four), level 2 (two).
const LEVEL1: [&str; 4] = [
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
    "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
    "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
];
const LEVEL2: [&str; 2] = [
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
];

fn reference_leaves() -> Vec<Hash> {
    LEAF_INPUTS
        .iter()
        .map(|s| {
            let bytes: Vec<u8> = (0..s.len() / 2)
                .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
                .collect();
            leaf_hash(&bytes)
        })
        .collect()
}

#[test]
fn reference_tree_leaves_and_roots() {
    let leaves = reference_leaves();
    for (leaf, want) in leaves.iter().zip(LEAF_HASHES) {
        assert_eq!(*leaf, h(want));
    }
    assert_eq!(root(&[]), empty_root());
    for n in 1..=8 {
        assert_eq!(root(&leaves[..n]), h(ROOTS[n - 1]), "size {n}");
        assert_eq!(Frontier::from_leaves(&leaves[..n]).root(), h(ROOTS[n - 1]));
    }
    // A one-bit change in any leaf changes the full tree's root.
    for i in 0..8 {
        let mut changed = leaves.clone();
        changed[i] = flip(changed[i], i, i as u32);
        assert_ne!(root(&changed), h(ROOTS[7]));
    }
}

#[test]
fn frontier_nodes_match_the_reference_compact_ranges() {
    // testonly/constants.go CompactTrees: the subtree roots at each size.
    let l = |i: usize| h(LEAF_HASHES[i]);
    let a = |i: usize| h(LEVEL1[i]);
    let b = |i: usize| h(LEVEL2[i]);
    let want: [Vec<Hash>; 9] = [
        vec![],
        vec![l(0)],
        vec![a(0)],
        vec![a(0), l(2)],
        vec![b(0)],
        vec![b(0), l(4)],
        vec![b(0), a(2)],
        vec![b(0), a(2), l(6)],
        vec![h(ROOTS[7])],
    ];
    let mut f = Frontier::new();
    let leaves = reference_leaves();
    for (n, nodes) in want.iter().enumerate() {
        assert_eq!(f.size(), n as u64);
        assert_eq!(f.nodes(), nodes.as_slice(), "size {n}");
        if n < 8 {
            f.append(leaves[n]);
        }
    }
    assert_eq!(node_hash(&a(2), &a(3)), b(1));
}

#[test]
fn frontier_root_equals_list_root_up_to_300() {
    let leaves = numbered_leaves(300);
    let mut f = Frontier::new();
    assert_eq!(f.root(), empty_root());
    for n in 1..=leaves.len() {
        f.append(leaves[n - 1]);
        let want = reference_root(&leaves[..n]);
        assert_eq!(root(&leaves[..n]), want, "list root, size {n}");
        assert_eq!(f.root(), want, "frontier root, size {n}");
        assert_eq!(f.nodes().len(), n.count_ones() as usize);
    }
}

#[test]
fn frontier_serializes_small_and_checks_on_reading() {
    let f = Frontier::from_leaves(&numbered_leaves(5));
    let json = serde_json::to_string(&f).unwrap();
    let hex = |i: usize| crate::tlog::encoding::hex_encode(&f.nodes()[i]);
    assert_eq!(
        json,
        format!(r#"{{"size":5,"nodes":["{}","{}"]}}"#, hex(0), hex(1))
    );
    let back: Frontier = serde_json::from_str(&json).unwrap();
    assert_eq!(back, f);
    let empty: Frontier = serde_json::from_str(r#"{"size":0,"nodes":[]}"#).unwrap();
    assert_eq!(empty, Frontier::new());
    let node = crate::tlog::encoding::hex_encode(&f.nodes()[0]);
    for bad in [
        format!(r#"{{"size":4,"nodes":["{node}","{node}"]}}"#),
        format!(r#"{{"size":5,"nodes":["{node}"]}}"#),
        format!(r#"{{"size":1,"nodes":["{}"]}}"#, node.to_uppercase()),
        format!(r#"{{"size":1,"nodes":["{}"]}}"#, &node[2..]),
        format!(r#"{{"size":1,"nodes":["{node}"],"extra":1}}"#),
    ] {
        assert!(serde_json::from_str::<Frontier>(&bad).is_err(), "{bad}");
    }
}

#[test]
fn every_inclusion_proof_up_to_64_verifies_and_breaks_when_changed() {
    let leaves = numbered_leaves(64);
    for n in 1..=64u64 {
        let r = root(&leaves[..n as usize]);
        for i in 0..n {
            let leaf = &leaves[i as usize];
            let proof = inclusion_proof(&leaves, i, n).unwrap();
            assert_eq!(
                verify_inclusion(leaf, i, n, &proof, &r),
                Ok(()),
                "{i} in {n}"
            );
            for j in 0..proof.len() {
                let mut bad = proof.clone();
                bad[j] = flip(bad[j], j + i as usize, (i + n) as u32);
                assert!(verify_inclusion(leaf, i, n, &bad, &r).is_err());
            }
            assert!(verify_inclusion(&flip(*leaf, i as usize, 3), i, n, &proof, &r).is_err());
            assert!(verify_inclusion(leaf, i, n, &proof, &flip(r, n as usize, 5)).is_err());
            for other in [i.wrapping_sub(1), i + 1, i ^ 2, i + n] {
                assert!(
                    verify_inclusion(leaf, other, n, &proof, &r).is_err(),
                    "{i}->{other}"
                );
            }
            assert!(verify_inclusion(leaf, i, n, &[proof.clone(), vec![r]].concat(), &r).is_err());
            if let Some((_, shorter)) = proof.split_last() {
                assert!(verify_inclusion(leaf, i, n, shorter, &r).is_err());
            }
        }
    }
}

#[test]
fn every_consistency_proof_up_to_64_verifies_and_breaks_when_changed() {
    let leaves = numbered_leaves(64);
    for n in 0..=64u64 {
        let rn = root(&leaves[..n as usize]);
        for m in 0..=n {
            let rm = root(&leaves[..m as usize]);
            let proof = consistency_proof(&leaves, m, n).unwrap();
            assert_eq!(
                verify_consistency(m, n, &rm, &rn, &proof),
                Ok(()),
                "{m} to {n}"
            );
            for j in 0..proof.len() {
                let mut bad = proof.clone();
                bad[j] = flip(bad[j], j + m as usize, (m + n) as u32);
                assert!(verify_consistency(m, n, &rm, &rn, &bad).is_err());
            }
            assert!(verify_consistency(m, n, &flip(rm, 1, 1), &rn, &proof).is_err());
            if m > 0 {
                assert!(verify_consistency(m, n, &rm, &flip(rn, 2, 2), &proof).is_err());
            }
            assert!(
                verify_consistency(m, n, &rm, &rn, &[proof.clone(), vec![rn]].concat()).is_err()
            );
            if let Some((_, shorter)) = proof.split_last() {
                assert!(verify_consistency(m, n, &rm, &rn, shorter).is_err());
            }
        }
    }
}

#[test]
fn proof_building_rejects_bad_arguments() {
    let leaves = numbered_leaves(4);
    assert_eq!(
        inclusion_proof(&leaves, 4, 4),
        Err(MerkleError::IndexOutOfRange { index: 4, size: 4 })
    );
    assert_eq!(
        inclusion_proof(&leaves, 0, 5),
        Err(MerkleError::NotEnoughLeaves {
            size: 5,
            available: 4
        })
    );
    assert_eq!(
        consistency_proof(&leaves, 3, 2),
        Err(MerkleError::SizesOutOfOrder { old: 3, new: 2 })
    );
    assert!(consistency_proof(&leaves, 1, u64::MAX).is_err());
    // A proof built for an older size is the one for that prefix.
    assert_eq!(
        inclusion_proof(&leaves, 1, 3),
        inclusion_proof(&leaves[..3], 1, 3)
    );
}

// transparency-dev fails every consistency check from size 0 as meaningless. Every tree
// extends the empty tree, so an empty proof from the true empty root passes here; another
// root or a non-empty proof still fails.
#[test]
fn consistency_from_the_empty_tree() {
    let leaves = numbered_leaves(3);
    let (empty, r3) = (empty_root(), root(&leaves));
    assert_eq!(verify_consistency(0, 3, &empty, &r3, &[]), Ok(()));
    assert_eq!(verify_consistency(0, 0, &empty, &empty, &[]), Ok(()));
    assert_eq!(
        verify_consistency(0, 3, &r3, &r3, &[]),
        Err(MerkleError::EmptyTreeRoot)
    );
    assert_eq!(
        verify_consistency(0, 3, &empty, &r3, &[r3]),
        Err(MerkleError::ProofNotEmpty)
    );
    assert_eq!(
        verify_consistency(3, 3, &r3, &empty, &[]),
        Err(MerkleError::SameSizeDifferentRoots)
    );
}

#[test]
fn overlong_proofs_are_rejected_before_hashing() {
    let proof = vec![[0u8; 32]; MAX_PROOF_HASHES + 1];
    let r = empty_root();
    assert_eq!(
        verify_inclusion(&r, 0, u64::MAX, &proof, &r),
        Err(MerkleError::ProofTooLong { len: 65 })
    );
    assert_eq!(
        verify_consistency(1, u64::MAX, &r, &r, &proof),
        Err(MerkleError::ProofTooLong { len: 65 })
    );
}

/// Decodes a probe's base64 hash. Some probes use short placeholders ("don't care") where
/// the value does not matter; a `Hash` cannot hold them, so they become a tagged SHA-256 of
/// themselves: equal placeholders stay equal, and none equals a real hash.
fn probe_hash(v: &Value) -> Option<Hash> {
    let bytes = b64_decode(v.as_str()?)?;
    let placeholder = || {
        Sha256::new()
            .chain_update(b"placeholder:")
            .chain_update(&bytes)
            .finalize()
    };
    Some(
        bytes
            .as_slice()
            .try_into()
            .unwrap_or_else(|_| placeholder().into()),
    )
}

fn probe_proof(v: &Value) -> Option<Vec<Hash>> {
    match v {
        Value::Null => Some(Vec::new()),
        Value::Array(items) => items.iter().map(probe_hash).collect(),
        _ => None,
    }
}

/// Whether every hash in these fields of a probe is 32 bytes. A probe that expects an error
/// for a hash of the wrong length tests what `Hash`, a 32-byte array, already rules out.
fn exact(p: &Value, fields: &[&str]) -> bool {
    let is32 = |v: &Value| {
        v.as_str()
            .and_then(b64_decode)
            .is_some_and(|b| b.len() == 32)
    };
    fields.iter().all(|f| match &p[*f] {
        Value::Array(items) => items.iter().all(is32),
        Value::Null => true,
        v => is32(v),
    })
}

fn probes() -> Value {
    serde_json::from_str(include_str!("testdata/transparency-dev-probes.json")).unwrap()
}

// github.com/transparency-dev/merkle testdata/inclusion: happy paths and their mutations.
#[test]
fn transparency_dev_inclusion_probes() {
    let probes = probes();
    let leaves = reference_leaves();
    let list = probes["inclusion"].as_array().unwrap();
    assert_eq!(list.len(), 98);
    for p in list {
        let (file, want_err) = (p["file"].as_str().unwrap(), p["wantErr"].as_bool().unwrap());
        let (index, size) = (
            p["leafIdx"].as_u64().unwrap(),
            p["treeSize"].as_u64().unwrap(),
        );
        let parts = (
            probe_hash(&p["leafHash"]),
            probe_proof(&p["proof"]),
            probe_hash(&p["root"]),
        );
        let (Some(leaf), Some(proof), Some(r)) = parts else {
            panic!("{file}: unreadable probe");
        };
        if want_err && !exact(p, &["leafHash", "proof", "root"]) {
            continue;
        }
        let got = verify_inclusion(&leaf, index, size, &proof, &r);
        assert_eq!(got.is_err(), want_err, "{file}: {got:?}");
        if file.ends_with("/happy-path.json") {
            assert_eq!(
                inclusion_proof(&leaves, index, size).unwrap(),
                proof,
                "{file}"
            );
        }
    }
}

// github.com/transparency-dev/merkle testdata/consistency.
#[test]
fn transparency_dev_consistency_probes() {
    let probes = probes();
    let leaves = reference_leaves();
    let list = probes["consistency"].as_array().unwrap();
    assert_eq!(list.len(), 98);
    for p in list {
        let (file, want_err) = (p["file"].as_str().unwrap(), p["wantErr"].as_bool().unwrap());
        let (m, n) = (p["size1"].as_u64().unwrap(), p["size2"].as_u64().unwrap());
        let parts = (
            probe_hash(&p["root1"]),
            probe_hash(&p["root2"]),
            probe_proof(&p["proof"]),
        );
        let (Some(r1), Some(r2), Some(proof)) = parts else {
            panic!("{file}: unreadable probe");
        };
        if want_err && !exact(p, &["root1", "root2", "proof"]) {
            continue;
        }
        let got = verify_consistency(m, n, &r1, &r2, &proof);
        assert_eq!(got.is_err(), want_err, "{file}: {got:?}");
        if file.ends_with("/happy-path.json") && n <= 8 {
            assert_eq!(consistency_proof(&leaves, m, n).unwrap(), proof, "{file}");
        }
    }
}
