//! A file replaced whole or not at all: the one way skillidx writes a file it does not own
//! (Hermes' `config.yaml`, the plugin's files, the agents' settings).

use std::path::{Path, PathBuf};

/// Replaces the contents of `path` with `bytes` so that a crash or a full disk at any
/// moment leaves either the old file or the new one, never a part: the bytes go to a
/// temporary file in the same folder, which is synced, given the old file's mode and
/// owner, and renamed over `path`; then the folder is synced. A symlink is followed (its
/// target is replaced and the link stays). When the old owner cannot be kept (not
/// permitted), nothing is replaced and the error says so. Temporary files left by a
/// process killed mid-write are removed by the next replacement.
pub fn replace_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let target = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(path)?,
        _ => path.to_path_buf(),
    };
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = target
        .file_name()
        .ok_or_else(|| std::io::Error::other("not a file name"))?
        .to_string_lossy()
        .into_owned();
    let prefix = format!(".{name}.skillidx-");
    remove_stale_temps(&dir, &prefix);
    let tmp = dir.join(format!("{prefix}{}.tmp", std::process::id()));
    let old = std::fs::metadata(&target).ok();
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        file.write_all(bytes)?;
        if let Some(old) = &old {
            keep_owner(&file, old)?;
            file.set_permissions(old.permissions())?;
        }
        file.sync_all()?;
        crate::failpoint::point(crate::failpoint::names::REPLACE_BEFORE_RENAME)?;
        std::fs::rename(&tmp, &target)
    };
    if let Err(e) = write() {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    // The rename is durable once the folder is synced; some filesystems cannot sync a
    // folder, and the file itself is complete either way.
    if let Ok(d) = std::fs::File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Gives `file` the owner and group of `old` when they differ from its own.
fn keep_owner(file: &std::fs::File, old: &std::fs::Metadata) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let new = file.metadata()?;
        if (new.uid(), new.gid()) != (old.uid(), old.gid()) {
            std::os::unix::fs::fchown(file, Some(old.uid()), Some(old.gid())).map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!(
                        "cannot keep the file's owner {}:{} ({e}); run this as that user",
                        old.uid(),
                        old.gid()
                    ),
                )
            })?;
        }
    }
    #[cfg(not(unix))]
    let _ = (file, old);
    Ok(())
}

/// Removes temporary files of earlier replacements (`<prefix><pid>.tmp`) that a killed
/// process left behind.
fn remove_stale_temps(dir: &Path, prefix: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let n = e.file_name();
        let n = n.to_string_lossy();
        if n.starts_with(prefix) && n.ends_with(".tmp") {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replace_keeps_mode_and_follows_symlinks() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().expect("tempdir");
        let real = t.path().join("real.yaml");
        std::fs::write(&real, "old").expect("write");
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).expect("chmod");
        let link = t.path().join("config.yaml");
        std::os::unix::fs::symlink(&real, &link).expect("symlink");
        // A temporary file a killed process left behind.
        std::fs::write(t.path().join(".real.yaml.skillidx-1.tmp"), "junk").expect("write");
        replace_file(&link, b"new").expect("replace");
        assert!(std::fs::symlink_metadata(&link)
            .expect("stat")
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&real).expect("read"), "new");
        let mode = std::fs::metadata(&real).expect("stat").permissions().mode();
        assert_eq!(mode & 0o7777, 0o640);
        let names: Vec<_> = std::fs::read_dir(t.path())
            .expect("ls")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }
}
