use super::*;
use crate::tlog::merkle::{inclusion_proof, leaf_hash, root};
use crate::tlog::note::sign;
use crate::tlog::{MerkleError, NoteError};
use ed25519_dalek::SigningKey;

const ORIGIN: &str = "example.com/attenu-test";

fn key() -> SigningKey {
    SigningKey::from_bytes(&[42; 32])
}

fn log_key() -> VerifierKey {
    VerifierKey::new(ORIGIN, key().verifying_key()).unwrap()
}

fn leaves() -> Vec<Hash> {
    (0..5u8).map(|i| leaf_hash(&[i])).collect()
}

fn signed_checkpoint(size: u64) -> String {
    let body = Checkpoint::new(ORIGIN, size, root(&leaves()[..size as usize]))
        .to_body()
        .unwrap();
    sign(&body, ORIGIN, &key()).unwrap()
}

fn proof_of(index: u64) -> TlogProof {
    let path = inclusion_proof(&leaves(), index, 5).unwrap();
    TlogProof::new(index, path, &signed_checkpoint(5)).unwrap()
}

// Made by this code and checked by hand against the format; pinned so that any change to
// the text (hash order, base64, layout, Ed25519 signing) is caught.
const GOLDEN: &str = "c2sp.org/tlog-proof@v1
extra aGVsbG8=
index 3
/PCmxwDdE+J0tvuo3uqN2bJuTu3eNJVxfKyECMnFF38=
ogv5p8wtyKCPX0FacbGfasQnurVNJO7IaLXTEDRJlTo=
TzUhLRL5rSA2SSyV8f55uvTse9m+89/6dXnyKT/1RqQ=

example.com/attenu-test
5
uFW0LWww9bCH4FJmeD+9bjlPe5JgE8yqZ3AKiwxaWW8=

\u{2014} example.com/attenu-test IdK0aZNdwfKmPkCKntpBYe3FdusUzJC36KFmAZM7po5K4ZCOctxHcGxOqugBNsRF+SJulNtsrowlLZtI+4zn6esIowQ=
";

#[test]
fn writes_the_pinned_text_and_reads_it_back() {
    let proof = proof_of(3).with_extra(b"hello".to_vec());
    assert_eq!(proof.to_text(), GOLDEN);
    assert_eq!(TlogProof::parse(GOLDEN), Ok(proof.clone()));
    assert_eq!(proof.extra(), Some(&b"hello"[..]));
    let plain = proof_of(0);
    assert_eq!(TlogProof::parse(&plain.to_text()), Ok(plain));
}

#[test]
fn verifies_every_leaf_and_reports_the_signer() {
    for i in 0..5 {
        let v = proof_of(i)
            .verify(&leaves()[i as usize], ORIGIN, &[log_key()])
            .unwrap();
        assert_eq!(
            (v.checkpoint.size, v.verified.as_slice()),
            (5, &[log_key()][..])
        );
        assert!(v.unknown.is_empty());
    }
    let parsed = TlogProof::parse(GOLDEN).unwrap();
    assert!(parsed.verify(&leaves()[3], ORIGIN, &[log_key()]).is_ok());
}

#[test]
fn verification_fails_on_any_change() {
    let proof = proof_of(3);
    let keys = [log_key()];
    let leaf = leaves()[3];
    assert_eq!(
        proof.verify(&leaves()[2], ORIGIN, &keys),
        Err(ProofError::Inclusion(MerkleError::RootMismatch))
    );
    let moved = TlogProof {
        index: 2,
        ..proof.clone()
    };
    assert!(moved.verify(&leaf, ORIGIN, &keys).is_err());
    let mut bent = proof.clone();
    bent.path[1][0] ^= 1;
    assert!(bent.verify(&leaf, ORIGIN, &keys).is_err());
    assert_eq!(
        proof.verify(&leaf, "example.com/other", &keys),
        Err(ProofError::OriginMismatch {
            expected: "example.com/other".into(),
            found: ORIGIN.into()
        })
    );
    let stranger = VerifierKey::new(ORIGIN, SigningKey::from_bytes(&[7; 32]).verifying_key());
    assert_eq!(
        proof.verify(&leaf, ORIGIN, &[stranger.unwrap()]),
        Err(ProofError::Note(NoteError::NoVerifiedSignature))
    );
    // A checkpoint for another size, re-signed: the old path no longer fits.
    let resized = TlogProof {
        checkpoint: signed_checkpoint(4),
        ..proof.clone()
    };
    assert!(resized.verify(&leaf, ORIGIN, &keys).is_err());
    // A root changed after signing breaks the signature.
    let cp = Checkpoint::parse(Note::parse(&proof.checkpoint).unwrap().text()).unwrap();
    let old = b64_encode(&cp.root);
    let mut other_root = cp.root;
    other_root[0] ^= 1;
    let tampered = proof.checkpoint.replace(&old, &b64_encode(&other_root));
    let tampered = TlogProof {
        checkpoint: tampered,
        ..proof
    };
    assert!(matches!(
        tampered.verify(&leaf, ORIGIN, &keys),
        Err(ProofError::Note(NoteError::InvalidSignature { .. }))
    ));
}

#[test]
fn reads_the_spec_example_up_to_its_elided_signatures() {
    // The example in c2sp.org/tlog-proof, whose signatures are shortened with "[...]".
    let example = "c2sp.org/tlog-proof@v1
extra YWdlLXYxLjIuMS1kYXJ3aW4tYXJtNjQudGFyLmd6kYXJ3aW4tYXJ
index 73894
gSKyXoYZUgZ6jduWYrkDOARinOMGJveXjgMkBTcdPlQ=
B95lDa8R83lS8n0eG+o0buTxRKQTYFi//1U8anccXmA=
EKNzoDWG8LGC0Yp9o+sv3qllpMP9uHQ9B20KNL+Q1zs=
RoopEkOdqkYqMB4MJXrbt/hMjOxsVn0IrWjpz1ZMMes=
AHCioX9nLjsrse6YhjRRmk1WUEirVOLLRoOQ6vfO5vk=

example.com/fancylog
109482
sFodV/vSp5O8n9a8QpW6PRY97tfOSW5bsc2Xl/EQi08=

\u{2014} example.com/fancylog hI2DJw[...]1roloI=
";
    assert!(matches!(
        TlogProof::parse(example),
        Err(ProofError::Note(NoteError::MalformedSignature {
            line: 1,
            ..
        }))
    ));
    // With a well-formed signature line in place, everything before it reads as written.
    let (head, _) = example.split_once("\u{2014}").unwrap();
    let signed = format!("{head}{}", &sign("x\n", ORIGIN, &key()).unwrap()[3..]);
    let proof = TlogProof::parse(&signed).unwrap();
    assert_eq!(proof.index(), 73894);
    assert_eq!(proof.path().len(), 5);
    assert_eq!(
        b64_encode(&proof.path()[4]),
        "AHCioX9nLjsrse6YhjRRmk1WUEirVOLLRoOQ6vfO5vk="
    );
    assert!(proof
        .extra()
        .unwrap()
        .starts_with(b"age-v1.2.1-darwin-arm64.tar.gz"));
    assert_eq!(proof.to_text(), signed);
}

#[test]
fn rejects_malformed_proofs() {
    let good = proof_of(3).to_text();
    let checkpoint = signed_checkpoint(5);
    let hash = b64_encode(&leaves()[0]);
    let cases: Vec<(String, ProofError)> = vec![
        (good.replace("@v1", "@v2"), ProofError::BadHeader),
        (
            good.replace("index 3", "index 03"),
            ProofError::BadIndex("index 03".into()),
        ),
        (
            good.replace("index 3", "index  3"),
            ProofError::BadIndex("index  3".into()),
        ),
        (
            good.replace("index 3", "Index 3"),
            ProofError::BadIndex("Index 3".into()),
        ),
        (
            good.replacen("index 3\n", "extra Zm9=\nindex 3\n", 1),
            ProofError::BadExtra,
        ),
        (
            format!("{HEADER}\nindex 1\n{}\n\n{checkpoint}", &hash[..40]),
            ProofError::BadHash { line: 1 },
        ),
        (
            format!("{HEADER}\nindex 1\n{hash}\nAAAA\n\n{checkpoint}"),
            ProofError::BadHash { line: 2 },
        ),
        (
            format!("{HEADER}\nindex 1\n{hash}\n"),
            ProofError::Truncated("checkpoint"),
        ),
        (format!("{HEADER}\n"), ProofError::Truncated("index line")),
        (String::new(), ProofError::Truncated("header")),
        (
            format!(
                "{HEADER}\nindex 1\n{}\n{checkpoint}",
                format!("{hash}\n").repeat(65)
            ),
            ProofError::TooManyHashes,
        ),
    ];
    for (text, want) in cases {
        assert_eq!(TlogProof::parse(&text), Err(want), "{text}");
    }
    // A checkpoint that is a signed note but not a checkpoint.
    let not_a_checkpoint = sign("hello\n", ORIGIN, &key()).unwrap();
    assert!(matches!(
        TlogProof::parse(&format!("{HEADER}\nindex 0\n\n{not_a_checkpoint}")),
        Err(ProofError::Checkpoint(_))
    ));
    assert!(TlogProof::parse(&good).is_ok());
    assert!(TlogProof::parse(&format!(
        "{HEADER}\nindex 1\n{}\n{checkpoint}",
        format!("{hash}\n").repeat(64)
    ))
    .is_ok());
}
