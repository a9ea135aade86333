use super::*;

// golang.org/x/mod sumdb/note/note_test.go.
const PETER_VKEY: &str = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
const PETER_SKEY: &str =
    "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz";
const ENOCH_VKEY: &str = "EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop";
const TEXT: &str = "If you think cryptography is the answer to your problem,\n\
                    then you don't know what your problem is.\n";
const PETER_SIG: &str = "\u{2014} PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n";
const ENOCH_SIG: &str = "\u{2014} EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=\n";

// c2sp.org/signed-note, "Verifier keys", example.
const SPEC_VKEY: &str = "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k";
const SPEC_NOTE: &str = "This is an example message.\n\n\u{2014} example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n";

fn vkey(s: &str) -> VerifierKey {
    VerifierKey::parse(s).unwrap()
}

/// The Go signer key string is `PRIVATE+KEY+<name>+<id>+base64(0x01 || seed)`.
fn peter_signing_key() -> SigningKey {
    let material = b64_decode(PETER_SKEY.splitn(5, '+').nth(4).unwrap()).unwrap();
    assert_eq!(material[0], ED25519);
    SigningKey::from_bytes(&material[1..].try_into().unwrap())
}

#[test]
fn verifier_keys_round_trip_and_match_their_ids() {
    for s in [PETER_VKEY, ENOCH_VKEY, SPEC_VKEY] {
        let k = vkey(s);
        assert_eq!(k.to_string(), s);
        assert_eq!(s.parse::<VerifierKey>(), Ok(k.clone()));
        assert_eq!(VerifierKey::new(k.name(), *k.key()), Ok(k));
    }
    assert_eq!(vkey(PETER_VKEY).id(), 0xc74f20a3);
    assert_eq!(vkey(SPEC_VKEY).id(), 0x530d903a);
    // The key ID depends on the name and on the signature type byte.
    let k = vkey(PETER_VKEY);
    assert_ne!(
        key_id("PeterNeumanN", ED25519, k.key().as_bytes()),
        0xc74f20a3
    );
    assert_ne!(key_id("PeterNeumann", 0x04, k.key().as_bytes()), 0xc74f20a3);
}

#[test]
fn mangled_verifier_keys_are_rejected() {
    // As in Go's TestNewVerifier: every proper substring and every one-byte increment fails.
    let b = PETER_VKEY.as_bytes();
    for i in 0..=b.len() {
        for j in i + 1..=b.len() {
            if (i, j) != (0, b.len()) {
                let s = std::str::from_utf8(&b[i..j]).unwrap();
                assert!(VerifierKey::parse(s).is_err(), "{s}");
            }
        }
    }
    for i in 0..b.len() {
        let mut m = b.to_vec();
        m[i] += 1;
        let s = String::from_utf8(m).unwrap();
        assert!(VerifierKey::parse(&s).is_err(), "{s}");
    }
    let wrong_length = "PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY==";
    let wrong_type = "PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
    assert!(VerifierKey::parse(wrong_length).is_err());
    assert_eq!(
        VerifierKey::parse(wrong_type),
        Err(NoteError::UnsupportedSignatureType(0x65))
    );
    let upper = PETER_VKEY.replace("c74f20a3", "C74F20A3");
    assert!(matches!(
        VerifierKey::parse(&upper),
        Err(NoteError::MalformedVerifierKey(_))
    ));
}

#[test]
fn signing_reproduces_the_go_signature() {
    let key = peter_signing_key();
    assert_eq!(
        VerifierKey::new("PeterNeumann", key.verifying_key())
            .unwrap()
            .to_string(),
        PETER_VKEY
    );
    let want = format!("{TEXT}\n{PETER_SIG}");
    assert_eq!(sign(TEXT, "PeterNeumann", &key).unwrap(), want);
    // One changed bit in the text gives another signature.
    let other = TEXT.replace("problem,", "problem-");
    assert_ne!(
        sign(&other, "PeterNeumann", &key).unwrap(),
        want.replace("problem,", "problem-")
    );
    // Re-signing replaces the earlier signature by the same key.
    let mut note = Note::parse(&want).unwrap();
    note.sign("PeterNeumann", &key).unwrap();
    assert_eq!(note.to_text().unwrap(), want);
    assert_eq!(
        sign("abc", "PeterNeumann", &key),
        Err(NoteError::TextWithoutFinalNewline)
    );
    assert_eq!(
        sign(TEXT, "a+b", &key),
        Err(NoteError::InvalidKeyName("a+b".into()))
    );
}

#[test]
fn opens_the_spec_example() {
    let opened = open(SPEC_NOTE, &[vkey(SPEC_VKEY)]).unwrap();
    assert_eq!(opened.text, "This is an example message.\n");
    assert_eq!(opened.verified, [vkey(SPEC_VKEY)]);
    let changed = SPEC_NOTE.replace("example message", "example massage");
    assert_eq!(
        open(&changed, &[vkey(SPEC_VKEY)]),
        Err(NoteError::InvalidSignature {
            name: "example.com/foo".into(),
            id: 0x530d903a
        })
    );
}

#[test]
fn opens_as_go_does_and_reports_the_signers() {
    let (peter, enoch) = (vkey(PETER_VKEY), vkey(ENOCH_VKEY));
    let msg = format!("{TEXT}\n{PETER_SIG}{ENOCH_SIG}");
    let opened = open(&msg, std::slice::from_ref(&peter)).unwrap();
    assert_eq!(opened.text, TEXT);
    assert_eq!(opened.verified, std::slice::from_ref(&peter));
    assert_eq!(opened.unknown.len(), 1);
    assert_eq!(
        (opened.unknown[0].name.as_str(), opened.unknown[0].key_id),
        ("EnochRoot", 0xaf0cfe78)
    );

    let both = open(&msg, &[peter.clone(), enoch.clone()]).unwrap();
    assert_eq!(both.verified, [peter.clone(), enoch.clone()]);
    assert!(both.unknown.is_empty());

    assert_eq!(open(&msg, &[]), Err(NoteError::NoVerifiedSignature));

    // Repeated signatures are each verified and reported once.
    let repeated = format!("{TEXT}\n{PETER_SIG}{PETER_SIG}{ENOCH_SIG}{ENOCH_SIG}");
    let opened = open(&repeated, std::slice::from_ref(&peter)).unwrap();
    assert_eq!((opened.verified.len(), opened.unknown.len()), (1, 1));
}

#[test]
fn a_failing_known_signature_rejects_the_note() {
    let peter = vkey(PETER_VKEY);
    let broken = format!("{}ABCD{}", &PETER_SIG[..60], &PETER_SIG[60..]);
    let want = NoteError::InvalidSignature {
        name: "PeterNeumann".into(),
        id: 0xc74f20a3,
    };
    let msg = format!("{TEXT}\n{broken}");
    assert_eq!(open(&msg, std::slice::from_ref(&peter)), Err(want.clone()));
    // Even beside a good signature by the same key.
    let msg = format!("{TEXT}\n{PETER_SIG}{broken}");
    assert_eq!(open(&msg, std::slice::from_ref(&peter)), Err(want));
    // But a broken signature by an unknown key is ignored.
    let broken_enoch = format!("{}ABCD{}", &ENOCH_SIG[..60], &ENOCH_SIG[60..]);
    let msg = format!("{TEXT}\n{PETER_SIG}{broken_enoch}");
    assert!(open(&msg, &[peter]).is_ok());
}

#[test]
fn keys_sharing_only_a_name_or_an_id_are_unknown() {
    let key = peter_signing_key();
    // Same name, another key (so another ID): the Peter signature is not its business.
    let other = SigningKey::from_bytes(&[7; 32]);
    let same_name = VerifierKey::new("PeterNeumann", other.verifying_key()).unwrap();
    let msg = format!("{TEXT}\n{PETER_SIG}");
    assert_eq!(
        open(&msg, std::slice::from_ref(&same_name)),
        Err(NoteError::NoVerifiedSignature)
    );
    // Same ID under another name.
    let renamed = msg.replace("PeterNeumann", "CarmenSandiego");
    let peter = VerifierKey::new("PeterNeumann", key.verifying_key()).unwrap();
    assert_eq!(
        open(&renamed, &[peter]),
        Err(NoteError::NoVerifiedSignature)
    );
}

#[test]
fn two_different_keys_with_one_name_and_id_are_ambiguous() {
    let peter = vkey(PETER_VKEY);
    let impostor = VerifierKey {
        key: vkey(ENOCH_VKEY).key,
        ..peter.clone()
    };
    let msg = format!("{TEXT}\n{PETER_SIG}");
    assert_eq!(
        open(&msg, &[peter.clone(), impostor]),
        Err(NoteError::AmbiguousKey {
            name: "PeterNeumann".into(),
            id: 0xc74f20a3
        })
    );
    // The same key listed twice is not ambiguous.
    assert!(open(&msg, &[peter.clone(), peter]).is_ok());
}

/// Notes that are each one change away from a valid one, with the error each must give.
fn malformed_notes() -> Vec<(String, NoteError)> {
    let sig = PETER_SIG;
    vec![
        (TEXT.into(), NoteError::NoSignatureBlock),
        (format!("{TEXT}\n"), NoteError::Unsigned),
        (
            format!("{TEXT}\n{}", &sig[..sig.len() - 1]),
            NoteError::MissingFinalNewline,
        ),
        (
            format!("\x01{TEXT}\n{sig}"),
            NoteError::ControlCharacter { offset: 0 },
        ),
        (
            format!("{TEXT}\r\n{sig}"),
            NoteError::ControlCharacter { offset: TEXT.len() },
        ),
        (
            format!("{TEXT}\n\u{2014} Bad Name {}", &sig[17..]),
            NoteError::MalformedSignature {
                line: 1,
                reason: "signature is not canonical base64",
            },
        ),
        (
            format!("{TEXT}\n{sig}Unexpected line.\n"),
            NoteError::MalformedSignature {
                line: 2,
                reason: "does not start with an em dash",
            },
        ),
        (
            format!("{TEXT}\n- PeterNeumann {}", &sig[17..]),
            NoteError::MalformedSignature {
                line: 1,
                reason: "does not start with an em dash",
            },
        ),
        (
            format!("{TEXT}\n\u{2014} PeterNeumann\n"),
            NoteError::MalformedSignature {
                line: 1,
                reason: "has no space after the key name",
            },
        ),
        (
            format!("{TEXT}\n\u{2014} Peter+Neumann {}", &sig[17..]),
            NoteError::MalformedSignature {
                line: 1,
                reason: "has an invalid key name",
            },
        ),
        (
            format!("{TEXT}\n\u{2014} PeterNeumann x08gox==\n"),
            NoteError::MalformedSignature {
                line: 1,
                reason: "signature is not canonical base64",
            },
        ),
        (
            format!("{TEXT}\n\u{2014} PeterNeumann x08gow==\n"),
            NoteError::MalformedSignature {
                line: 1,
                reason: "signature is shorter than a key ID and one byte",
            },
        ),
        (
            format!("{TEXT}\n{}", sig.repeat(101)),
            NoteError::TooManySignatures { max: 100 },
        ),
    ]
}

#[test]
fn malformed_notes_are_rejected() {
    let peter = [vkey(PETER_VKEY)];
    let sig = PETER_SIG;
    for (msg, want) in malformed_notes() {
        assert_eq!(open(&msg, &peter), Err(want), "{msg:?}");
    }
    assert_eq!(Note::parse_bytes(b"\xff\n\nx\n"), Err(NoteError::NotUtf8));
    // The unmangled note opens, so each case fails because of its change.
    assert!(open(&format!("{TEXT}\n{sig}"), &peter).is_ok());
    assert!(open(&format!("{TEXT}\n{}", sig.repeat(100)), &peter).is_ok());
    assert!(open(
        &format!("{TEXT}\n\u{2014} PeterNeumann x08go/ZJ\n{sig}"),
        &peter
    )
    .is_err());
}

#[test]
fn the_last_blank_line_separates_text_and_signatures() {
    let key = peter_signing_key();
    for text in ["a\n\nb\n", "\n", "a\n\n"] {
        let msg = sign(text, "PeterNeumann", &key).unwrap();
        let note = Note::parse(&msg).unwrap();
        assert_eq!(note.text(), text);
        assert_eq!(open(&msg, &[vkey(PETER_VKEY)]).unwrap().text, text);
    }
}

#[test]
fn weak_keys_are_refused() {
    // The identity point: a valid encoding of a small-order key.
    let mut identity = [0u8; 32];
    identity[0] = 1;
    let weak = VerifyingKey::from_bytes(&identity).unwrap();
    let small_order = NoteError::MalformedVerifierKey("Ed25519 key has small order");
    assert_eq!(VerifierKey::new("weak", weak), Err(small_order.clone()));
    let id = hex_encode(&key_id("weak", ED25519, &identity).to_be_bytes());
    let material = b64_encode(&[&[ED25519][..], &identity].concat());
    assert_eq!(
        VerifierKey::parse(&format!("weak+{id}+{material}")),
        Err(small_order)
    );
    // The same layout with an ordinary key parses.
    let good = vkey(PETER_VKEY);
    let material = b64_encode(&[&[ED25519][..], good.key().as_bytes()].concat());
    let id = hex_encode(&good.id().to_be_bytes());
    assert_eq!(
        VerifierKey::parse(&format!("PeterNeumann+{id}+{material}")),
        Ok(good)
    );
}

#[test]
fn key_names_follow_the_spec() {
    for good in ["example.com/log", "PeterNeumann", "\u{e9}t\u{e9}"] {
        assert!(is_valid_key_name(good), "{good:?}");
    }
    for bad in [
        "",
        "a b",
        "a+b",
        "a\u{a0}b",
        "a\u{2003}b",
        "a\tb",
        "a\u{1}b",
    ] {
        assert!(!is_valid_key_name(bad), "{bad:?}");
    }
}
