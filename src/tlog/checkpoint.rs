//! The note text of a C2SP checkpoint (<https://c2sp.org/tlog-checkpoint>, v1.0.0):
//!
//! ```text
//! <origin>
//! <tree size, decimal>
//! <root hash, base64>
//! [<extension line>...]
//! ```
//!
//! every line ending in a newline. The body is signed as a [signed note](super::note).

use super::encoding::{b64_decode, b64_encode, control_character, parse_decimal};
use super::merkle::Hash;
use super::CheckpointError;

/// A tree head: which log, how many leaves, and the root over them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    /// Names the log. Non-empty; the spec recommends a schema-less URL with no spaces and no
    /// `+`, and that the log's key name match it, but parsers must not assume either.
    pub origin: String,
    /// The number of leaves.
    pub size: u64,
    /// The RFC 6962 root over those leaves.
    pub root: Hash,
    /// Opaque, non-empty lines after the root; the spec discourages them.
    pub extensions: Vec<String>,
}

impl Checkpoint {
    /// A checkpoint without extension lines.
    pub fn new(origin: impl Into<String>, size: u64, root: Hash) -> Self {
        Self {
            origin: origin.into(),
            size,
            root,
            extensions: Vec::new(),
        }
    }

    /// The note text, after checking that [`Checkpoint::parse`] will read it back: the
    /// origin and extensions are single non-empty lines without control characters.
    pub fn to_body(&self) -> Result<String, CheckpointError> {
        check_line(&self.origin, "origin")?;
        if self.origin.is_empty() {
            return Err(CheckpointError::EmptyOrigin);
        }
        for (i, ext) in self.extensions.iter().enumerate() {
            check_line(ext, "extension line")?;
            if ext.is_empty() {
                return Err(CheckpointError::EmptyExtension { line: i + 4 });
            }
        }
        let mut body = format!(
            "{}\n{}\n{}\n",
            self.origin,
            self.size,
            b64_encode(&self.root)
        );
        for ext in &self.extensions {
            body.push_str(ext);
            body.push('\n');
        }
        Ok(body)
    }

    /// Reads a checkpoint body (the text of a verified note), rejecting: a missing final
    /// newline, control characters, fewer than three lines, an empty origin, a size that is
    /// not plain decimal (sign, leading zero, overflow), a root that is not canonical base64
    /// of 32 bytes, and empty extension lines (so a trailing blank line too).
    pub fn parse(body: &str) -> Result<Self, CheckpointError> {
        if let Some(offset) = control_character(body) {
            return Err(CheckpointError::ControlCharacter { offset });
        }
        let Some(content) = body.strip_suffix('\n') else {
            return Err(CheckpointError::MissingFinalNewline);
        };
        let lines: Vec<&str> = content.split('\n').collect();
        let [origin, size, root, extensions @ ..] = lines.as_slice() else {
            return Err(CheckpointError::TooFewLines { lines: lines.len() });
        };
        if origin.is_empty() {
            return Err(CheckpointError::EmptyOrigin);
        }
        let size = parse_decimal(size).ok_or_else(|| CheckpointError::BadSize(size.to_string()))?;
        let root_bytes =
            b64_decode(root).ok_or_else(|| CheckpointError::BadRootEncoding(root.to_string()))?;
        let root: Hash = root_bytes
            .as_slice()
            .try_into()
            .map_err(|_| CheckpointError::BadRootLength(root_bytes.len()))?;
        if let Some(i) = extensions.iter().position(|e| e.is_empty()) {
            return Err(CheckpointError::EmptyExtension { line: i + 4 });
        }
        Ok(Self {
            origin: origin.to_string(),
            size,
            root,
            extensions: extensions.iter().map(|e| e.to_string()).collect(),
        })
    }
}

fn check_line(s: &str, field: &'static str) -> Result<(), CheckpointError> {
    if s.contains('\n') {
        return Err(CheckpointError::NewlineInField { field });
    }
    if let Some(offset) = control_character(s) {
        return Err(CheckpointError::ControlCharacter { offset });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tlog::merkle::leaf_hash;

    // golang.org/x/mod sumdb/tlog/note_test.go: a tree of 123456789012 leaves whose root is
    // the RFC 6962 leaf hash of "hello world".
    const GO_TREE: &str =
        "go.sum database tree\n123456789012\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=\n";

    // The example in c2sp.org/tlog-checkpoint.
    const SPEC_BODY: &str =
        "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n";

    #[test]
    fn reads_and_writes_the_go_sumdb_tree() {
        let want = Checkpoint::new(
            "go.sum database tree",
            123456789012,
            leaf_hash(b"hello world"),
        );
        assert_eq!(Checkpoint::parse(GO_TREE), Ok(want.clone()));
        assert_eq!(want.to_body().unwrap(), GO_TREE);
        let mut off = want.clone();
        off.root[31] ^= 1;
        assert_ne!(off.to_body().unwrap(), GO_TREE);
        assert_ne!(
            Checkpoint::parse(&GO_TREE.replace("9012", "9013")),
            Ok(want)
        );
    }

    #[test]
    fn round_trips_the_spec_example_and_extensions() {
        let cp = Checkpoint::parse(SPEC_BODY).unwrap();
        assert_eq!(
            (cp.origin.as_str(), cp.size),
            ("example.com/behind-the-sofa", 20852163)
        );
        assert_eq!(cp.to_body().unwrap(), SPEC_BODY);
        let with_ext = format!("{SPEC_BODY}ext one\n— two\n");
        let cp = Checkpoint::parse(&with_ext).unwrap();
        assert_eq!(cp.extensions, ["ext one", "— two"]);
        assert_eq!(cp.to_body().unwrap(), with_ext);
        // The origin is opaque: spaces and plus signs are only discouraged.
        let odd = "a log + more\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n";
        assert_eq!(Checkpoint::parse(odd).unwrap().origin, "a log + more");
    }

    #[test]
    fn rejects_what_the_spec_rejects() {
        let root = "CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=";
        let cases: Vec<(String, CheckpointError)> = vec![
            (
                SPEC_BODY.trim_end().into(),
                CheckpointError::MissingFinalNewline,
            ),
            (String::new(), CheckpointError::MissingFinalNewline),
            (
                format!("o\n1\n{root}\r\n"),
                CheckpointError::ControlCharacter { offset: 48 },
            ),
            ("o\n1\n".into(), CheckpointError::TooFewLines { lines: 2 }),
            (format!("\n1\n{root}\n"), CheckpointError::EmptyOrigin),
            (
                format!("o\n01\n{root}\n"),
                CheckpointError::BadSize("01".into()),
            ),
            (
                format!("o\n\n{root}\n"),
                CheckpointError::BadSize(String::new()),
            ),
            (
                format!("o\n+1\n{root}\n"),
                CheckpointError::BadSize("+1".into()),
            ),
            (
                format!("o\n1 \n{root}\n"),
                CheckpointError::BadSize("1 ".into()),
            ),
            (
                format!("o\n18446744073709551616\n{root}\n"),
                CheckpointError::BadSize("18446744073709551616".into()),
            ),
            (
                format!("o\n1\n{}\n", &root[..43]),
                CheckpointError::BadRootEncoding(root[..43].into()),
            ),
            ("o\n1\nAAAA\n".into(), CheckpointError::BadRootLength(3)),
            (
                format!("o\n1\n{}\n", "A".repeat(44)),
                CheckpointError::BadRootLength(33),
            ),
            (
                format!("o\n1\n{root}\n\n"),
                CheckpointError::EmptyExtension { line: 4 },
            ),
            (
                format!("o\n1\n{root}\nx\n\ny\n"),
                CheckpointError::EmptyExtension { line: 5 },
            ),
        ];
        for (body, want) in cases {
            assert_eq!(Checkpoint::parse(&body), Err(want), "{body:?}");
        }
        // The unmodified shape parses, so each rejection above is due to its one change.
        assert!(Checkpoint::parse(&format!("o\n1\n{root}\n")).is_ok());
        assert!(Checkpoint::parse(&format!("o\n0\n{root}\n")).is_ok());
    }

    #[test]
    fn refuses_to_write_what_it_could_not_read() {
        let root = leaf_hash(b"");
        let cases = [
            (Checkpoint::new("", 0, root), CheckpointError::EmptyOrigin),
            (
                Checkpoint::new("a\nb", 0, root),
                CheckpointError::NewlineInField { field: "origin" },
            ),
            (
                Checkpoint::new("a\tb", 0, root),
                CheckpointError::ControlCharacter { offset: 1 },
            ),
            (
                Checkpoint {
                    extensions: vec![String::new()],
                    ..Checkpoint::new("o", 0, root)
                },
                CheckpointError::EmptyExtension { line: 4 },
            ),
            (
                Checkpoint {
                    extensions: vec!["x\n".into()],
                    ..Checkpoint::new("o", 0, root)
                },
                CheckpointError::NewlineInField {
                    field: "extension line",
                },
            ),
        ];
        for (cp, want) in cases {
            assert_eq!(cp.to_body(), Err(want));
        }
    }
}
