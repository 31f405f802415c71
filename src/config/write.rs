//! Writing a new configuration: what `PUT /api/config`, the dashboard's
//! editor and nothing else do, once `policy` has merged it with the stored
//! one.
//!
//! [`write_atomically`] replaces the file so that a reader (or a crash) only
//! ever sees one complete version: the new text goes to a temporary file in
//! the same directory, is synced, and is renamed over the old one; the old
//! one is kept as `<file>.bak`.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The version of the configuration file at `path`: a keyed digest of its
/// bytes (16 hex digits), the same for a file that is gone or unreadable
/// and an empty one. A change made from one version (the editor's page,
/// the `ETag` of `GET /api/config`) is refused when the file is at
/// another: without it, of two people editing, the second save undid the
/// first without a word, and so did a save over a comment added by hand.
pub fn file_version(path: &Path) -> String {
    version_of(&super::read_bytes(path).unwrap_or_default())
}

/// The version of a file that holds `bytes` (see [`file_version`]): an
/// HMAC-SHA256 under a key of this process, drawn at its first use. The
/// file holds the secrets a client sees masked, and a plain digest of it,
/// sent as the `ETag`, let a reader who can rebuild the rest of the file
/// test guesses of them offline (an audit found a password so). A version
/// is good for the running service: after a restart a client reads the
/// file's again.
pub fn version_of(bytes: &[u8]) -> String {
    use hmac::{Hmac, Mac};
    use sha2::Sha256;
    static KEY: std::sync::OnceLock<[u8; 32]> = std::sync::OnceLock::new();
    let key = KEY.get_or_init(|| {
        let mut k = [0u8; 32];
        getrandom::fill(&mut k).expect("the OS random source is available");
        k
    });
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(bytes);
    mac.finalize().into_bytes()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The file kept of the previous version: `config.yaml.bak`.
pub fn backup_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".bak");
    path.with_file_name(name)
}

/// Why [`write_atomically`] did not write.
#[derive(Debug)]
pub enum WriteError {
    /// The file no longer holds what the caller checked and built the new
    /// text from: an edit saved meanwhile, which writing would undo.
    Changed,
    Io(std::io::Error),
}

impl From<std::io::Error> for WriteError {
    fn from(e: std::io::Error) -> Self {
        WriteError::Io(e)
    }
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteError::Changed => f.write_str("the file was changed while it was being written"),
            WriteError::Io(e) => write!(f, "{e}"),
        }
    }
}

/// Replaces the file at `path` with `text`: the old file is kept as
/// [`backup_path`], the new one gets the old one's permissions, and at no
/// moment is there a partial file at `path`. A file that already reads
/// `text` is left as it is, and so is its backup.
///
/// `seen` is what the caller read of the file and checked (a file that is
/// gone reads as empty), when it did: the file is written over only while
/// it still holds that, read again as the backup is taken and once more
/// just before the new text is renamed into place. A hand edit saved
/// during a `PUT /api/config` was lost, from the file and from its backup
/// (an audit); what is left is the moment between that last read and the
/// rename.
pub fn write_atomically(path: &Path, text: &str, seen: Option<&[u8]>) -> Result<(), WriteError> {
    write_renaming(path, text, seen, |from, to| fs::rename(from, to))
}

/// [`write_atomically`] with the rename that puts each file in place
/// given (a test's fails for the file itself).
fn write_renaming(
    path: &Path,
    text: &str,
    seen: Option<&[u8]>,
    rename: impl Fn(&Path, &Path) -> std::io::Result<()>,
) -> Result<(), WriteError> {
    // A symlinked file is written where it points: renamed over, the link
    // became a file of its own and the file it named kept the old text,
    // which a reload then never read (an audit). The backup goes beside
    // the file it keeps.
    let resolved;
    let path = if fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        resolved = fs::canonicalize(path).map_err(|e| naming(path, e))?;
        resolved.as_path()
    } else {
        path
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let permissions = fs::metadata(path).ok().map(|m| m.permissions());
    // What the file holds now: `None` when it is gone. A file that cannot
    // be read is not written over without its backup.
    let holds = || match super::read_bytes(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(naming(path, e)),
    };
    let unchanged =
        |now: &Option<Vec<u8>>| seen.is_none_or(|seen| now.as_deref().unwrap_or_default() == seen);
    let write = |target: &Path, bytes: &[u8], last_look: bool| -> Result<(), WriteError> {
        let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
        let result = (|| {
            let mut f = fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .open(&tmp)?;
            if let Some(p) = &permissions {
                f.set_permissions(p.clone())?;
            }
            f.write_all(bytes)?;
            f.sync_all()?;
            if last_look && !unchanged(&holds()?) {
                return Err(WriteError::Changed);
            }
            rename(&tmp, target)?;
            Ok(())
        })();
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result
    };
    let previous = holds()?;
    if !unchanged(&previous) {
        return Err(WriteError::Changed);
    }
    let backup = backup_path(path);
    // The backup as it was, put back when the file itself cannot be
    // written: "nothing changed" held for the file but not its backup, and
    // the version before went (an audit, a file made immutable).
    let mut old_backup = None;
    if let Some(previous) = previous {
        // The same text again (a GET put back unchanged): nothing to write,
        // and the backup keeps the version before it.
        if previous == text.as_bytes() {
            return Ok(());
        }
        old_backup = Some(super::read_bytes(&backup).ok());
        write(&backup, &previous, false).map_err(|e| match e {
            WriteError::Io(e) => WriteError::Io(naming(&backup, e)),
            e => e,
        })?;
    }
    if let Err(e) = write(path, text.as_bytes(), true) {
        match old_backup {
            Some(Some(old)) => {
                let _ = write(&backup, &old, false);
            }
            Some(None) => {
                let _ = fs::remove_file(&backup);
            }
            None => {}
        }
        return Err(match e {
            WriteError::Io(e) => WriteError::Io(naming(path, e)),
            e => e,
        });
    }
    // The renames are durable once the directory is.
    fs::File::open(&dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| WriteError::Io(naming(&dir, e)))
}

/// `e` saying which file it is about: the backup is written first, and
/// its failure read as the configuration's own (an audit).
fn naming(path: &Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symlinked_file_is_written_where_it_points() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        fs::create_dir(&real).unwrap();
        fs::write(real.join("config.yaml"), "old: 1\n").unwrap();
        let link = dir.path().join("config.yaml");
        std::os::unix::fs::symlink(real.join("config.yaml"), &link).unwrap();
        write_atomically(&link, "new: 2\n", None).unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(
            fs::read_to_string(real.join("config.yaml")).unwrap(),
            "new: 2\n"
        );
        assert_eq!(
            fs::read_to_string(real.join("config.yaml.bak")).unwrap(),
            "old: 1\n"
        );
    }

    #[test]
    fn the_file_is_replaced_whole_and_the_old_one_kept() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("mailproc-write-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("config.yaml");
        fs::write(&path, "old: 1\n").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        write_atomically(&path, "new: 2\n", None).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "new: 2\n");
        assert_eq!(
            fs::read_to_string(dir.join("config.yaml.bak")).unwrap(),
            "old: 1\n"
        );
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        let leftovers: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
            .collect();
        assert!(leftovers.is_empty());
        // The same text again keeps the backup of the version before.
        write_atomically(&path, "new: 2\n", None).unwrap();
        assert_eq!(
            fs::read_to_string(dir.join("config.yaml.bak")).unwrap(),
            "old: 1\n"
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    /// Found by an audit (stop 57): the file could not be written (made
    /// immutable), the answer said nothing changed, and its backup had
    /// been replaced all the same: the version before was gone.
    #[test]
    fn a_file_that_cannot_be_written_keeps_its_backup_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yaml");
        let refuse = |from: &Path, to: &Path| {
            if to == path.as_path() {
                Err(std::io::Error::from(std::io::ErrorKind::PermissionDenied))
            } else {
                fs::rename(from, to)
            }
        };
        fs::write(&path, "now: 1\n").unwrap();
        fs::write(backup_path(&path), "before: 0\n").unwrap();
        assert!(write_renaming(&path, "new: 2\n", None, refuse).is_err());
        assert_eq!(fs::read_to_string(&path).unwrap(), "now: 1\n");
        assert_eq!(
            fs::read_to_string(backup_path(&path)).unwrap(),
            "before: 0\n"
        );
        // With no backup before, none is left.
        fs::remove_file(backup_path(&path)).unwrap();
        assert!(write_renaming(&path, "new: 2\n", None, refuse).is_err());
        assert!(!backup_path(&path).exists());
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["config.yaml"], "{names:?}");
    }

    /// Found by an audit: a hand edit saved while a `PUT /api/config` was
    /// being written was lost, from the file and from its backup.
    #[test]
    fn a_file_changed_since_it_was_read_is_not_written_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yaml");
        fs::write(&path, "old: 1\n").unwrap();
        fs::write(backup_path(&path), "older: 0\n").unwrap();
        // Read as "old: 1", then edited by hand before the write.
        fs::write(&path, "old: 1 # by hand\n").unwrap();
        let e = write_atomically(&path, "new: 2\n", Some(b"old: 1\n")).unwrap_err();
        assert!(matches!(e, WriteError::Changed), "{e}");
        assert_eq!(fs::read_to_string(&path).unwrap(), "old: 1 # by hand\n");
        assert_eq!(
            fs::read_to_string(backup_path(&path)).unwrap(),
            "older: 0\n"
        );
        // What was read is what is there: written, the backup kept.
        write_atomically(&path, "new: 2\n", Some(b"old: 1 # by hand\n")).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "new: 2\n");
        assert_eq!(
            fs::read_to_string(backup_path(&path)).unwrap(),
            "old: 1 # by hand\n"
        );
        // A file read as gone (empty) and made meanwhile is not written over.
        let fresh = dir.path().join("fresh.yaml");
        fs::write(&fresh, "made: meanwhile\n").unwrap();
        let e = write_atomically(&fresh, "new: 2\n", Some(b"")).unwrap_err();
        assert!(matches!(e, WriteError::Changed), "{e}");
        assert_eq!(fs::read_to_string(&fresh).unwrap(), "made: meanwhile\n");
        let leftovers = fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
            .count();
        assert_eq!(leftovers, 0);
    }
}
