//! Files and directories only their owner may read: sign-in tokens, approval modes, the
//! runtime directory (the web process extension, the app's single-instance socket).

use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` whole (a temporary file renamed over it), mode 0600 in a directory
/// of mode 0700 (made if missing).
pub(crate) fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = std::path::PathBuf::from(tmp);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        let mut file = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&tmp)?;
        // An existing file keeps its mode on open: set it again.
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        std::io::Write::write_all(&mut file, bytes)?;
        file.sync_all()?;
    }
    #[cfg(not(unix))]
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

/// This process's user (the owner of `/proc/self`).
#[cfg(unix)]
pub(crate) fn uid() -> std::io::Result<u32> {
    use std::os::unix::fs::MetadataExt;
    Ok(std::fs::metadata("/proc/self")?.uid())
}

/// The host's own runtime directory, private to this user: `$XDG_RUNTIME_DIR/mcp-apps-host`,
/// else `mcp-apps-host-<uid>` in the temporary directory.
#[cfg(unix)]
pub(crate) fn runtime_dir() -> std::io::Result<PathBuf> {
    let uid = uid()?;
    match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from).filter(|p| p.is_absolute() && p.is_dir()) {
        Some(runtime) => private_dir(&runtime.join("mcp-apps-host"), uid),
        None => private_dir(&std::env::temp_dir().join(format!("mcp-apps-host-{uid}")), uid),
    }
}

/// `path` as a directory of `uid`'s that only it can open: made so, or found so (not a link).
#[cfg(unix)]
pub(crate) fn private_dir(path: &Path, uid: u32) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    match std::fs::DirBuilder::new().mode(0o700).create(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(path)?;
    let private = meta.is_dir() && meta.uid() == uid && meta.permissions().mode() & 0o077 == 0;
    if !private {
        return Err(std::io::Error::other(format!("{} is not a private directory of this user's", path.display())));
    }
    Ok(path.to_owned())
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn a_directory_others_can_write_is_not_used() {
        let uid = uid().unwrap();
        let root = tempfile::tempdir().unwrap();
        let ours = private_dir(&root.path().join("a"), uid).unwrap();
        assert_eq!(std::fs::metadata(&ours).unwrap().permissions().mode() & 0o777, 0o700);
        // Found again as it was made: used.
        assert!(private_dir(&ours, uid).is_ok());
        let open = root.path().join("b");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(private_dir(&open, uid).is_err());
        let link = root.path().join("c");
        std::os::unix::fs::symlink(&ours, &link).unwrap();
        assert!(private_dir(&link, uid).is_err(), "a link to a private directory is not one");
    }
}
