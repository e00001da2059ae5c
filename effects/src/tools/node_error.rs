//! Node's wording of failed file-system calls (`ENOENT: no such file or directory, access
//! '<path>'`), which Pi's tools pass on as their error texts.

use std::io;
use std::path::Path;

/// Node's (libuv's) code and wording for an OS error.
pub(crate) fn errno_name(err: &io::Error) -> Option<(&'static str, &'static str)> {
    Some(match err.raw_os_error()? {
        libc::ENOENT => ("ENOENT", "no such file or directory"),
        libc::EACCES => ("EACCES", "permission denied"),
        libc::EISDIR => ("EISDIR", "illegal operation on a directory"),
        libc::ENOTDIR => ("ENOTDIR", "not a directory"),
        libc::EEXIST => ("EEXIST", "file already exists"),
        libc::ELOOP => ("ELOOP", "too many symbolic links encountered"),
        libc::ENAMETOOLONG => ("ENAMETOOLONG", "name too long"),
        libc::EPERM => ("EPERM", "operation not permitted"),
        libc::EROFS => ("EROFS", "read-only file system"),
        libc::ENOSPC => ("ENOSPC", "no space left on device"),
        libc::EMFILE => ("EMFILE", "too many open files"),
        libc::ENFILE => ("ENFILE", "file table overflow"),
        libc::EIO => ("EIO", "i/o error"),
        libc::EBUSY => ("EBUSY", "resource busy or locked"),
        libc::ETXTBSY => ("ETXTBSY", "text file is busy"),
        libc::EINVAL => ("EINVAL", "invalid argument"),
        libc::EFBIG => ("EFBIG", "file too large"),
        libc::ENXIO => ("ENXIO", "no such device or address"),
        libc::EAGAIN => ("EAGAIN", "resource temporarily unavailable"),
        _ => return None,
    })
}

/// The message of the error Node's `fs` throws for `syscall` (with the path when the call
/// takes one), e.g. `EISDIR: illegal operation on a directory, read`; other errors as Rust
/// words them.
pub(crate) fn node_error(err: &io::Error, syscall: &str, path: Option<&Path>) -> String {
    match (errno_name(err), path) {
        (Some((code, text)), Some(path)) => {
            format!("{code}: {text}, {syscall} '{}'", path.display())
        }
        (Some((code, text)), None) => format!("{code}: {text}, {syscall}"),
        (None, _) => err.to_string(),
    }
}
