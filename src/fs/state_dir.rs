//! The private state directory (`.attenu/`) and the search- and git-ignore files kept in it.

use super::{check_regular_file, create_exclusive, current_uid, sync_dir, FsError, O_NOFOLLOW};
use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Creates (0700) or checks the state directory: it must be a real directory, not a symlink,
/// owned by this user, and not writable by group or others.
pub fn ensure_private_dir(dir: &Path) -> Result<(), FsError> {
    let inspect = |source| FsError::Inspect {
        path: dir.to_path_buf(),
        source,
    };
    match fs::symlink_metadata(dir) {
        Ok(m) => check_private_dir(dir, &m),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            match fs::DirBuilder::new().mode(0o700).create(dir) {
                // Its name must survive a crash with the key and ledgers written into it.
                Ok(()) => {
                    if let Some(parent) = dir.parent() {
                        sync_dir(parent).map_err(|source| FsError::SyncDir {
                            path: parent.to_path_buf(),
                            source,
                        })?;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(source) => {
                    return Err(FsError::Create {
                        path: dir.to_path_buf(),
                        source,
                    })
                }
            }
            let m = fs::symlink_metadata(dir).map_err(inspect)?;
            check_private_dir(dir, &m)
        }
        Err(e) => Err(inspect(e)),
    }
}

fn check_private_dir(dir: &Path, m: &fs::Metadata) -> Result<(), FsError> {
    let path = dir.to_path_buf();
    if m.file_type().is_symlink() {
        return Err(FsError::DirIsSymlink { path });
    }
    if !m.is_dir() {
        return Err(FsError::NotADirectory { path });
    }
    if let Some(uid) = current_uid() {
        if m.uid() != uid {
            return Err(FsError::DirNotOwned {
                path,
                owner: m.uid(),
                uid,
            });
        }
    }
    if m.mode() & 0o022 != 0 {
        return Err(FsError::DirWritableByOthers { path });
    }
    if m.mode() & 0o077 != 0 {
        // Readable by others (a `mkdir .attenu` to write config.toml, a git checkout): this
        // user's own directory is made private, through a descriptor of the directory itself
        // so a swapped-in symlink is never followed.
        let tightened = fs::OpenOptions::new()
            .read(true)
            .custom_flags(O_NOFOLLOW | libc::O_DIRECTORY | libc::O_CLOEXEC)
            .open(dir)
            .and_then(|d| d.set_permissions(fs::Permissions::from_mode(0o700)));
        if let Err(source) = tightened {
            return Err(FsError::DirNotPrivate { path, source });
        }
    }
    Ok(())
}

/// An ignore file in the state directory that ripgrep (Claude Code's Grep), `fd` and `ag`
/// honour: a search from the project down skips the anchor key unless a glob names it, which
/// the decision refuses (`glob_reaches_key` in `policy/self_protection.rs`).
pub const STATE_IGNORE_FILE: &str = ".ignore";

/// Creates [`STATE_IGNORE_FILE`] (`*`) in the state directory unless a regular file is there.
pub fn ensure_search_ignore(dir: &Path) -> Result<(), FsError> {
    let path = dir.join(STATE_IGNORE_FILE);
    if check_regular_file(&path)? {
        return Ok(());
    }
    match create_exclusive(&path, b"*\n", 0o600) {
        Ok(_) => Ok(()),
        Err(source) => Err(FsError::Create { path, source }),
    }
}

/// A git ignore file in the state directory: nothing under `.attenu/` (above all `anchor.key`,
/// whose holder can sign bundles) is one `git add -A` from being committed. A team that wants
/// to share its configuration opts in by editing it (`!config.toml`); `doctor` fails when git
/// tracks `anchor.key` whatever the file says.
pub const GIT_IGNORE_FILE: &str = ".gitignore";

const GIT_IGNORE_TEXT: &[u8] =
    b"# Written by attenu-hook: nothing under .attenu/ is committed unless you opt in.\n\
# anchor.key must never be committed (`attenu-hook doctor` fails when git tracks it).\n\
# To share the configuration, add a line:  !config.toml\n\
*\n";

/// Creates [`GIT_IGNORE_FILE`] in the state directory when nothing is at that name. Whatever is
/// there already (a team's own file, even a symlink, which is never followed) is left alone,
/// and a failure to create it costs nothing but the hygiene: `doctor` reports what git tracks.
pub fn ensure_git_ignore(dir: &Path) {
    let path = dir.join(GIT_IGNORE_FILE);
    if matches!(fs::symlink_metadata(&path), Err(e) if e.kind() == io::ErrorKind::NotFound) {
        let _ = create_exclusive(&path, GIT_IGNORE_TEXT, 0o600);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_git_ignore_is_created_once_and_a_teams_own_is_kept() {
        let dir = std::env::temp_dir().join(format!("attenu-gitignore-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        ensure_private_dir(&dir).unwrap();
        ensure_git_ignore(&dir);
        let text = fs::read_to_string(dir.join(GIT_IGNORE_FILE)).unwrap();
        assert!(text.lines().any(|l| l == "*"), "{text}");
        fs::write(dir.join(GIT_IGNORE_FILE), "*\n!config.toml\n").unwrap();
        ensure_git_ignore(&dir);
        assert_eq!(
            fs::read_to_string(dir.join(GIT_IGNORE_FILE)).unwrap(),
            "*\n!config.toml\n"
        );
        fs::remove_dir_all(&dir).unwrap();
    }
}
