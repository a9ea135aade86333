//! The three text encodings the C2SP formats use: standard base64 (RFC 4648 section 4, with
//! padding), fixed-length lowercase hex, and decimal without leading zeros.
//!
//! Decoding is strict on purpose: every value has exactly one accepted spelling, so two
//! different texts never carry the same checkpoint, signature or proof.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with `=` padding.
pub(crate) fn b64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes standard padded base64; `None` unless `s` is the canonical encoding of its
/// bytes (right length, padding only at the end, unused trailing bits zero).
pub(crate) fn b64_decode(s: &str) -> Option<Vec<u8>> {
    let s = s.as_bytes();
    if !s.len().is_multiple_of(4) {
        return None;
    }
    let pad = s.iter().rev().take(2).take_while(|&&c| c == b'=').count();
    let body = &s[..s.len() - pad];
    let mut out = Vec::with_capacity(body.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for &c in body {
        let v = ALPHABET.iter().position(|&a| a == c)?;
        acc = acc << 6 | v as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // Non-zero leftover bits would give a second spelling of the same bytes.
    (acc == 0).then_some(out)
}

/// Lowercase hex.
pub(crate) fn hex_encode(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    bytes
        .iter()
        .flat_map(|b| {
            [
                HEX[usize::from(b >> 4)] as char,
                HEX[usize::from(b & 15)] as char,
            ]
        })
        .collect()
}

/// Decodes exactly `N` bytes of lowercase hex.
pub(crate) fn hex_decode<const N: usize>(s: &str) -> Option<[u8; N]> {
    fn digit(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        }
    }
    let s = s.as_bytes();
    if s.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    for (o, pair) in out.iter_mut().zip(s.chunks_exact(2)) {
        *o = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(out)
}

/// ASCII decimal with no sign and no leading zeros (`0` itself is allowed), fitting a u64.
pub(crate) fn parse_decimal(s: &str) -> Option<u64> {
    let digits_only = !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
    if !digits_only || (s.len() > 1 && s.starts_with('0')) {
        return None;
    }
    s.parse().ok()
}

/// The byte offset of the first ASCII control character other than newline, which the
/// signed-note format forbids anywhere in a note.
pub(crate) fn control_character(s: &str) -> Option<usize> {
    s.bytes().position(|c| c < 0x20 && c != b'\n')
}

#[cfg(test)]
mod tests {
    use super::*;

    // RFC 4648 section 10.
    const RFC4648: [(&str, &str); 7] = [
        ("", ""),
        ("f", "Zg=="),
        ("fo", "Zm8="),
        ("foo", "Zm9v"),
        ("foob", "Zm9vYg=="),
        ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
    ];

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (plain, encoded) in RFC4648 {
            assert_eq!(b64_encode(plain.as_bytes()), encoded);
            assert_eq!(b64_decode(encoded).as_deref(), Some(plain.as_bytes()));
        }
        // The vectors pin the output: one changed bit in the input changes it.
        assert_ne!(b64_encode(b"foobas"), "Zm9vYmFy");
        assert_ne!(b64_decode("Zm9vYmFz").as_deref(), Some(&b"foobar"[..]));
    }

    #[test]
    fn base64_covers_the_whole_alphabet() {
        let all: Vec<u8> = (0..=255).collect();
        let encoded = b64_encode(&all);
        assert_eq!(b64_decode(&encoded), Some(all));
        assert_eq!(b64_encode(&[0xfb, 0xff]), "+/8=");
    }

    #[test]
    fn base64_rejects_other_spellings() {
        for bad in [
            "Zg", "Zg=", "Zg===", "Zh==", "Zm9=", "Zm8=Zm8=", "Zm 9v", "Zm9v\n", "Zm-_", "====",
            "Z===", "=Zm9",
        ] {
            assert_eq!(b64_decode(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn hex_is_lowercase_and_fixed_length() {
        assert_eq!(hex_encode(&[0x00, 0xab, 0x7f]), "00ab7f");
        assert_eq!(hex_decode::<3>("00ab7f"), Some([0x00, 0xab, 0x7f]));
        for bad in ["00AB7F", "00ab7", "00ab7f00", "+0ab7f", "00ab7g"] {
            assert_eq!(hex_decode::<3>(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn decimal_has_one_spelling() {
        assert_eq!(parse_decimal("0"), Some(0));
        assert_eq!(parse_decimal("20852163"), Some(20852163));
        assert_eq!(parse_decimal("18446744073709551615"), Some(u64::MAX));
        for bad in [
            "",
            "00",
            "01",
            "+1",
            "-0",
            " 1",
            "1 ",
            "0x1",
            "18446744073709551616",
        ] {
            assert_eq!(parse_decimal(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn finds_control_characters_but_not_newlines() {
        assert_eq!(control_character("a\nb\n"), None);
        assert_eq!(control_character("a\tb"), Some(1));
        assert_eq!(control_character("a\r\n"), Some(1));
        assert_eq!(control_character("\u{7f}"), None);
    }
}
