//! Reading the rows of `log` from every session's ledger, streamed: each ledger a batch of
//! whole lines at a time, verified as it is read, each entry parsed only into the borrowed
//! tree its row is read from, and each row handed on as it is made, so memory does not grow
//! with the ledger (but for the calls an outcome is matched to, when it is asked for).

use super::table::{row, LogError, Who};
use crate::fs::FileStamp;
use crate::ledger::read::{self, with_entry, Event, SessionFile, Stream};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// What reading the ledgers found besides their rows.
#[derive(Debug, Default)]
pub struct Read {
    /// One warning for every ledger that does not verify (its rows are shown as written, so
    /// a person can see what is there, but not as a record to trust).
    pub unverified: Vec<String>,
    /// Each session's signer and repository, from its chains' roots (`context.identity`).
    pub who: BTreeMap<String, Who>,
    /// Which file each ledger was and how much of it was read (its whole lines), for
    /// [`again`]; `None` for a ledger that was not there.
    pub read: Vec<Option<(FileStamp, u64)>>,
}

/// The ledgers `log` reads: every session's, or the one `session` names.
pub fn ledgers(project: &Path, session: Option<&str>) -> Result<Vec<SessionFile>, LogError> {
    let attenu = project.join(".attenu");
    let mut files = read::sessions(&attenu).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => LogError::NoState {
            project: project.into(),
        },
        _ => LogError::List {
            dir: attenu.clone(),
            source,
        },
    })?;
    if let Some(s) = session {
        let want = crate::ledger::store::session_file_name(s);
        files.retain(|f| f.paths.name == want);
        if files.is_empty() {
            return Err(LogError::NoSession {
                session: s.to_string(),
                dir: attenu,
            });
        }
    }
    Ok(files)
}

/// Hands `visit` every decision and outcome row of `files`, in ledger order, verifying each
/// ledger as it is read. With `name_outcomes`, an outcome row shows the tool and scope of
/// the call it finishes (which takes memory for every call); without, its own.
pub fn rows(
    files: &[SessionFile],
    name_outcomes: bool,
    visit: &mut dyn FnMut(super::table::Row),
) -> Result<Read, LogError> {
    let mut out = Read::default();
    for f in files {
        let Some(mut stream) = Stream::open(&f.paths.ledger)? else {
            out.read.push(None);
            continue;
        };
        each_row(&mut stream, name_outcomes, Some(&mut out.who), visit)?;
        out.read.push(Some((stream.stamp(), stream.whole_len())));
        // A torn final line is not yet verified or moved aside: the next hook call does that.
        if let Some(Err(e)) = stream.verdict() {
            out.unverified.push(format!(
                "{} does not verify ({e}); its rows below are as written, not a verified record",
                f.paths.ledger.display()
            ));
        }
    }
    Ok(out)
}

/// [`rows`] again, of the same ledgers as far as [`rows`] read them (`read`), without
/// verifying them again: the table's second pass, once its columns are measured. A ledger
/// replaced or removed in between is an error, not rows that were never verified.
pub fn again(
    files: &[SessionFile],
    read: &[Option<(FileStamp, u64)>],
    visit: &mut dyn FnMut(super::table::Row),
) -> Result<(), LogError> {
    for (f, seen) in files.iter().zip(read) {
        let Some((first, len)) = seen else {
            continue;
        };
        let stream = Stream::reopen(&f.paths.ledger, *len)?;
        let Some(mut stream) = stream.filter(|s| s.stamp().same_file(first)) else {
            return Err(LogError::Replaced {
                ledger: f.paths.ledger.clone(),
            });
        };
        each_row(&mut stream, true, None, visit)?;
    }
    Ok(())
}

fn each_row(
    stream: &mut Stream,
    name_outcomes: bool,
    mut who: Option<&mut BTreeMap<String, Who>>,
    visit: &mut dyn FnMut(super::table::Row),
) -> Result<(), LogError> {
    // An outcome names only its call: the tool and scope of the call it finishes, each pair
    // kept once.
    let mut calls: HashMap<String, usize> = HashMap::new();
    let mut pairs: Vec<(String, String)> = Vec::new();
    let mut pair_of: HashMap<(String, String), usize> = HashMap::new();
    while let Some(lines) = stream.next_lines()? {
        for line in lines.split(|&b| b == b'\n') {
            let made = with_entry(line, |e| {
                if let (Some(who), true) = (who.as_deref_mut(), e.is(Event::Root)) {
                    if let Some(id) = e.identity() {
                        let id = read::Tree::owned(id);
                        who.insert(e.session_id().unwrap_or("").to_string(), Who::of(&id));
                    }
                }
                row(e).map(|r| {
                    (
                        r,
                        e.is(Event::Outcome),
                        e.call_id().unwrap_or("").to_string(),
                    )
                })
            });
            let Some(Some((mut r, outcome, call))) = made else {
                continue;
            };
            if name_outcomes && outcome {
                if let Some(&i) = calls.get(&call) {
                    (r.tool, r.scope) = pairs[i].clone();
                }
            } else if name_outcomes {
                let pair = (r.tool.clone(), r.scope.clone());
                let i = *pair_of.entry(pair).or_insert_with_key(|p| {
                    pairs.push(p.clone());
                    pairs.len() - 1
                });
                calls.insert(call, i);
            }
            visit(r);
        }
    }
    Ok(())
}
