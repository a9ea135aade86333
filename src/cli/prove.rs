//! `attenu-hook prove`: a C2SP tlog-proof for one entry, which `attenu-hook verify PROOF
//! --pub anchor.pub` checks without the rest of the session.

use super::project::{state_root, SessionArgs};
use super::{fail, Exit};
use crate::evidence::prove::{prove, Proof, Which};
use crate::trust::signer::Source;
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    at: SessionArgs,
    /// The entry with this call_id (from `attenu-hook log --json`)
    #[arg(
        long,
        value_name = "CALL_ID",
        conflicts_with = "seq",
        required_unless_present = "seq"
    )]
    call: Option<String>,
    /// The entry at this seq of the session's last chain
    #[arg(long)]
    seq: Option<u64>,
    /// Write the proof here instead of stdout
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

pub fn run(a: Args) -> Exit {
    let root = match state_root(&a.at.project) {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    let which = match (&a.call, a.seq) {
        (Some(c), _) => Which::Call(c),
        (None, Some(s)) => Which::Seq(s),
        (None, None) => return fail("pass --call CALL_ID or --seq N"),
    };
    let session = match a.at.session() {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let proof = match prove(&root, session.as_deref(), which) {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    match &a.out {
        Some(path) => match crate::fs::write_atomic(path, proof.text.as_bytes(), true) {
            Ok(()) => {
                eprintln!(
                    "wrote {}; {}",
                    path.display(),
                    how_to_check(path, &root, &proof)
                );
                Exit::Success
            }
            Err(e) => fail(format!("cannot write {}: {e}", path.display())),
        },
        None => {
            print!("{}", proof.text);
            Exit::Success
        }
    }
}

/// The `verify` command that checks the proof at `path`: under the project's anchor key when
/// that signed it, else under the key that did (an enrolled or CI signer's).
fn how_to_check(path: &Path, root: &Path, proof: &Proof) -> String {
    let verify = format!("attenu-hook verify {}", path.display());
    let signer = match &proof.source {
        Source::Anchor => {
            let key = root.join(".attenu").join("anchor.pub");
            return format!("check it with `{verify} --pub {}`", key.display());
        }
        Source::Enrolled(_) => "this user's enrolled key",
        Source::Environment(_) => "the key ATTENU_SIGNING_KEY_FILE names",
    };
    format!(
        "signed by {} ({signer}); check it with `{verify} --pub KEY`, KEY a file holding that \
         public key",
        proof.kid
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proof(source: Source) -> Proof {
        let kid = "attenu-hook-0123456789abcdef".to_string();
        Proof {
            text: String::new(),
            kid,
            source,
        }
    }

    /// The anchor key by the project's path; an enrolled or CI signer by its key id, never the
    /// project's anchor key, which did not sign.
    #[test]
    fn the_suggested_check_names_the_key_that_signed() {
        let (out, root) = (Path::new("/w/p.proof"), Path::new("/proj"));
        let anchor = how_to_check(out, root, &proof(Source::Anchor));
        let want = "`attenu-hook verify /w/p.proof --pub /proj/.attenu/anchor.pub`";
        assert!(anchor.ends_with(want), "{anchor}");
        for source in [
            Source::Enrolled("/h/k".into()),
            Source::Environment("/k".into()),
        ] {
            let said = how_to_check(out, root, &proof(source));
            assert!(
                said.starts_with("signed by attenu-hook-0123456789abcdef ("),
                "{said}"
            );
            assert!(!said.contains("anchor.pub"), "{said}");
        }
    }
}
