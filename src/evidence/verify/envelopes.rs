//! Step (11): observer envelopes are not evaluated here, so a bundle carrying any is refused
//! rather than read as if they were not there (the reference's answer when no witness key is
//! trusted, its default).

use super::{FailureName, Log, Obj, Value};

pub(super) fn check(members: &Obj<'_>, log: &mut Log<'_>) {
    if let Some(Value::Array(env)) = members.get("envelopes") {
        if !env.is_empty() {
            log.chain(
                FailureName::EnvelopesNotVerified,
                format!(
                    "the bundle carries {} observer envelope(s); this verifier trusts no witness key, so it cannot \
                     check them and will not ignore them (verify them with the reference and a witness trust set)",
                    env.len()
                ),
            );
        }
    }
}
