//! `attenu-hook enroll [--cert FILE]`: this user's signing key on this machine, and its
//! certificate from the team's CA (`crate::trust`).

use super::{fail, Exit};
use crate::trust::{enroll, signer};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Install this certificate (the `-cert.pub` file `ssh-keygen -s` wrote) for the enrolled key
    #[arg(long, value_name = "FILE")]
    cert: Option<PathBuf>,
    /// The project whose committed `[trust] ca` the certificate must chain to
    #[arg(long, value_name = "DIR", default_value = ".")]
    project: PathBuf,
}

pub fn run(a: Args) -> Exit {
    let Some(dir) = signer::enrolled_dir() else {
        return fail("no home directory to keep the signing key in: set HOME, XDG_CONFIG_HOME or ATTENU_HOME");
    };
    if std::env::var_os(signer::KEY_ENV).is_some() {
        eprintln!(
            "attenu-hook: note: {} is set, so this process signs with that key, not the enrolled one",
            signer::KEY_ENV
        );
    }
    let comment = format!("attenu-hook@{}", crate::trust::identity::host());
    let enrolled = match enroll::ensure_key(&dir, &comment) {
        Ok(e) => e,
        Err(e) => return fail(e),
    };
    let Some(cert_file) = a.cert else {
        println!("{}", enrolled.public_line);
        let verb = if enrolled.created {
            "created"
        } else {
            "reusing"
        };
        eprintln!(
            "{verb} the signing key {}. Send the line above (or {}) to your team's CA holder, who runs\n  ssh-keygen -s CA_KEY -I \"$USER@$(hostname)\" -n attenu-hook -V +52w signing-key.pub\nthen install the certificate with: attenu-hook enroll --cert signing-key-cert.pub",
            enrolled.key_file.display(),
            dir.join("signing-key.pub").display()
        );
        return Exit::Success;
    };
    let cas = match crate::config::team_cas(&a.project) {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    let now = crate::clock::now_ms() / 1000;
    match enroll::install_cert(&dir, &cert_file, cas.as_ref(), now) {
        Ok(cert) => {
            eprintln!(
                "installed the certificate for key id {:?} (serial {}, valid until {}) in {}; checkpoints and bundles are now signed with the certified key{}",
                cert.key_id,
                cert.serial,
                crate::trust::cert::utc(cert.valid_before),
                signer::cert_path(&dir).display(),
                if cas.is_none() { " (no [trust] ca in .claude/attenu.toml here, so its CA was not checked)" } else { "" }
            );
            Exit::Success
        }
        Err(e) => fail(e),
    }
}
