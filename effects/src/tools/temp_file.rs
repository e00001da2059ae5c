//! The one way a file is created in the shared temp folder under a name others can guess (bash's
//! full output, named by the run and the tool call's id; an MCP result's saved output, named by
//! the call's id): created new, never opened through what is already there, so a link another
//! user planted at that name is not written through.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;

/// Creates `path` for writing. A regular file already there (left by an earlier run of the same
/// call, as a replay run twice) is replaced when this user may remove it (in a sticky temp
/// folder, only its own); anything else there (a link, a folder, a file this user may not
/// remove) fails with the error of the first attempt, and is left as it was.
pub fn create_fresh(path: &Path) -> io::Result<File> {
    let create = || OpenOptions::new().write(true).create_new(true).open(path);
    match create() {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            let regular = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file());
            if !regular || std::fs::remove_file(path).is_err() {
                return Err(e);
            }
            create()
        }
        opened => opened,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::io::Write;

    use super::create_fresh;

    /// A planted link is neither followed nor removed; a regular file of this user's is
    /// replaced; a fresh name is created.
    #[test]
    fn a_link_is_refused_and_a_left_file_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, "untouched").unwrap();
        let link = dir.path().join("planted");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let error = create_fresh(&link).unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "untouched");
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());

        let left = dir.path().join("left");
        std::fs::write(&left, "old").unwrap();
        create_fresh(&left).unwrap().write_all(b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&left).unwrap(), "new");

        let fresh = dir.path().join("fresh");
        create_fresh(&fresh).unwrap().write_all(b"x").unwrap();
        assert_eq!(std::fs::read_to_string(&fresh).unwrap(), "x");
    }
}
