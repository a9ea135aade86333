//! The roster cache's table of agent files: each file's own stamp and what its text parsed
//! to, so that the derivation after an edit reads and parses the edited file alone.
//!
//! Little-endian `u32` counts and lengths, as in [`super::codec`]:
//!
//! ```text
//! build                       DERIVATION_RULES and version: another build's table is not read
//! n_files  (path stamp parsed)*
//! path     the file's path from the project's root, as bytes (distinct)
//! stamp    56 bytes: device, inode, size, mtime s and ns, ctime s and ns (u64 each)
//! parsed   0 name has_tools [n tool*] n disallowed*     an agent
//!          1 has_name [name] message                    a file that declares none, or a broken one
//! ```
//!
//! An entry stands for the text its file held when that stamp was settled (see [`super`]);
//! the caller uses it only for a file whose stamp is the same and settled now.

use super::codec::{put_bytes, put_str, put_u32, Reader};
use crate::derive::declarations::Parsed;
use crate::derive::frontmatter::{AgentFile, FrontmatterError};
use std::collections::HashMap;

/// A file's stamp as the table and the cache key hold it.
pub use crate::fs::StampBytes;

/// What the table knows of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub stamp: StampBytes,
    pub parsed: Parsed,
}

/// The table of `entries` (path, stamp, parse) for this `build`, appended to `out`.
pub fn encode<'a>(
    out: &mut Vec<u8>,
    build: &str,
    entries: impl ExactSizeIterator<Item = (&'a [u8], &'a StampBytes, &'a Parsed)>,
) {
    put_str(out, build);
    put_u32(out, entries.len());
    for (path, stamp, parsed) in entries {
        put_bytes(out, path);
        out.extend_from_slice(stamp);
        match parsed {
            Ok(a) => {
                out.push(0);
                put_str(out, &a.name);
                match &a.tools {
                    None => out.push(0),
                    Some(tools) => {
                        out.push(1);
                        put_strings(out, tools);
                    }
                }
                put_strings(out, &a.disallowed);
            }
            Err(e) => {
                out.push(1);
                match &e.name {
                    None => out.push(0),
                    Some(n) => {
                        out.push(1);
                        put_str(out, n);
                    }
                }
                put_str(out, &e.message);
            }
        }
    }
}

/// The table in `bytes` by path; `None` for another build's table or anything malformed.
pub fn decode(bytes: &[u8], build: &str) -> Option<HashMap<Vec<u8>, Entry>> {
    let mut r = Reader { rest: bytes };
    if r.bytes()? != build.as_bytes() {
        return None;
    }
    let n = r.count(4 + 56 + 1)?;
    let mut table = HashMap::with_capacity(n);
    for _ in 0..n {
        let path = r.bytes()?.to_vec();
        let stamp: StampBytes = r.take(56)?.try_into().ok()?;
        let parsed = match r.byte()? {
            0 => {
                let name = r.string()?;
                let tools = match r.byte()? {
                    0 => None,
                    1 => Some(r.strings()?),
                    _ => return None,
                };
                let disallowed = r.strings()?;
                Ok(AgentFile {
                    name,
                    tools,
                    disallowed,
                })
            }
            1 => {
                let name = match r.byte()? {
                    0 => None,
                    1 => Some(r.string()?),
                    _ => return None,
                };
                let message = r.string()?;
                Err(FrontmatterError { name, message })
            }
            _ => return None,
        };
        if table.insert(path, Entry { stamp, parsed }).is_some() {
            return None;
        }
    }
    r.rest.is_empty().then_some(table)
}

fn put_strings(out: &mut Vec<u8>, list: &[String]) {
    put_u32(out, list.len());
    for s in list {
        put_str(out, s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries() -> Vec<(Vec<u8>, StampBytes, Parsed)> {
        let agent = |tools: Option<&[&str]>, disallowed: &[&str]| {
            Ok(AgentFile {
                name: "Ünï agent".into(),
                tools: tools.map(|t| t.iter().map(|s| s.to_string()).collect()),
                disallowed: disallowed.iter().map(|s| s.to_string()).collect(),
            })
        };
        vec![
            (b".claude/agents/a.md".to_vec(), [1; 56], agent(None, &[])),
            (b"b\xff.md".to_vec(), [2; 56], agent(Some(&[]), &["Bash"])),
            (
                b"c".to_vec(),
                [3; 56],
                agent(Some(&["Read", "Bash(x y)"]), &[]),
            ),
            (
                b"d".to_vec(),
                [4; 56],
                Err(FrontmatterError {
                    name: Some("d".into()),
                    message: "bad".into(),
                }),
            ),
            (
                b"e".to_vec(),
                [5; 56],
                Err(FrontmatterError {
                    name: None,
                    message: "no block".into(),
                }),
            ),
        ]
    }

    fn encoded(build: &str) -> Vec<u8> {
        let e = entries();
        let mut out = Vec::new();
        encode(
            &mut out,
            build,
            e.iter().map(|(p, s, x)| (p.as_slice(), s, x)),
        );
        out
    }

    #[test]
    fn a_table_reads_back_as_it_was_written() {
        let back = decode(&encoded("7 0.1.0"), "7 0.1.0").unwrap();
        assert_eq!(back.len(), 5);
        for (path, stamp, parsed) in entries() {
            assert_eq!(back[&path], Entry { stamp, parsed });
        }
    }

    #[test]
    fn another_builds_table_or_a_cut_one_is_not_read() {
        let body = encoded("7 0.1.0");
        assert!(decode(&body, "8 0.1.0").is_none());
        for cut in 0..body.len() {
            assert!(decode(&body[..cut], "7 0.1.0").is_none(), "cut at {cut}");
        }
        let mut longer = body.clone();
        longer.push(0);
        assert!(decode(&longer, "7 0.1.0").is_none());
    }
}
