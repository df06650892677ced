//! The library's typed errors as Python exceptions, with the library's messages.
//!
//! | library error | Python exception |
//! |---|---|
//! | `InvalidParameter`, `Incompatible` | `ValueError` |
//! | `TooLarge`, `AllocationFailed` | `MemoryError` |
//! | `Format` (corrupt, truncated, wrong kind, newer version) | `bloomery.FormatError` (a `ValueError`) |
//! | `Io` | `OSError` (its subclass for the errno, e.g. `FileNotFoundError`) with the path |
//! | `Full` | `bloomery.FullError` |
//! | `Unsupported` | `TypeError` |

use std::path::Path;

use pyo3::exceptions::{PyMemoryError, PyOSError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;

pyo3::create_exception!(
    bloomery,
    FormatError,
    PyValueError,
    "A file or byte string is not a valid bloomery structure: damaged (checksum mismatch), \
     truncated, of another kind than the class loading it, or written by a newer bloomery. \
     A subclass of ValueError."
);

pyo3::create_exception!(
    bloomery,
    FullError,
    pyo3::exceptions::PyException,
    "A structure that does not grow is full: a ScalableBloomFilter created with \
     scaling=False past its capacity, or a CuckooFilter whose tables (and growth) are \
     exhausted. Nothing was changed by the failed insert."
);

/// A library error as a Python exception.
pub fn to_py(e: bloomery::Error) -> PyErr {
    to_py_at(e, None)
}

/// A library error about the file at `path` as a Python exception: `OSError`s carry the path
/// as their `filename`, format errors name it in the message.
pub fn to_py_path(e: bloomery::Error, path: &Path) -> PyErr {
    to_py_at(e, Some(path))
}

/// A library error caused by the key at index `i` of a batch.
pub fn to_py_key(e: bloomery::Error, i: usize) -> PyErr {
    to_py_prefixed(e, None, &format!("key {i}: "))
}

fn to_py_at(e: bloomery::Error, path: Option<&Path>) -> PyErr {
    let prefix = match path {
        Some(p) => format!("{}: ", p.display()),
        None => String::new(),
    };
    to_py_prefixed(e, path, &prefix)
}

fn to_py_prefixed(e: bloomery::Error, path: Option<&Path>, prefix: &str) -> PyErr {
    use bloomery::Error as E;
    let at = |msg: String| format!("{prefix}{msg}");
    match e {
        E::InvalidParameter { .. } | E::Incompatible(_) => PyValueError::new_err(at(e.to_string())),
        E::TooLarge { .. } | E::AllocationFailed { .. } => {
            PyMemoryError::new_err(at(e.to_string()))
        }
        // the library names the file in a format error; here the path leads, as for the rest
        E::Format(f) => FormatError::new_err(match f.path() {
            Some(p) if prefix.is_empty() => {
                format!("{}: invalid filter data: {}", p.display(), f.root())
            }
            _ => at(format!("invalid filter data: {}", f.root())),
        }),
        E::Full { .. } => FullError::new_err(at(e.to_string())),
        E::Unsupported(_) => PyTypeError::new_err(at(e.to_string())),
        E::Io(io) => io_error(&io, path),
        _ => PyRuntimeError::new_err(at(e.to_string())),
    }
}

/// `OSError(errno, strerror, filename)`: Python picks the subclass for the errno
/// (`FileNotFoundError`, `PermissionError`, `IsADirectoryError`, ...).
pub fn io_error(e: &std::io::Error, path: Option<&Path>) -> PyErr {
    let mut msg = e.to_string();
    // the library names the file in its I/O errors; `filename` carries it here
    if let Some(p) = path {
        if let Some(rest) = msg.strip_prefix(&format!("`{}`: ", p.display())) {
            msg = rest.to_string();
        }
    }
    if errno(e) == Some(12) {
        // ENOMEM: the system refused memory (a buffer or map for the file)
        return PyMemoryError::new_err(match path {
            Some(p) => format!("{}: {}", p.display(), strip_os_suffix(&msg)),
            None => strip_os_suffix(&msg),
        });
    }
    match (errno(e), path) {
        (Some(errno), Some(p)) => {
            PyOSError::new_err((errno, strip_os_suffix(&msg), p.display().to_string()))
        }
        (Some(errno), None) => PyOSError::new_err((errno, strip_os_suffix(&msg))),
        (None, Some(p)) => PyOSError::new_err(format!("{}: {msg}", p.display())),
        (None, None) => PyOSError::new_err(msg),
    }
}

/// The errno of an I/O error, also when it wraps another (a temporary file's error names
/// its path around the OS error).
fn errno(e: &std::io::Error) -> Option<i32> {
    if let Some(n) = e.raw_os_error() {
        return Some(n);
    }
    let mut src: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(s) = src {
        if let Some(n) = s
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.raw_os_error())
        {
            return Some(n);
        }
        src = s.source();
    }
    match e.kind() {
        std::io::ErrorKind::NotFound => Some(2),
        std::io::ErrorKind::PermissionDenied => Some(13),
        std::io::ErrorKind::IsADirectory => Some(21),
        _ => None,
    }
}

/// Rust's `"No such file or directory (os error 2)"` without the errno, which Python's
/// `OSError` prints itself.
fn strip_os_suffix(msg: &str) -> String {
    match msg.rfind(" (os error ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

/// Convert a library result.
pub trait IntoPy<T> {
    /// The error as a Python exception.
    fn py_err(self) -> PyResult<T>;
    /// The error about `path` as a Python exception.
    fn py_err_at(self, path: &Path) -> PyResult<T>;
}

impl<T> IntoPy<T> for bloomery::Result<T> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(to_py)
    }
    fn py_err_at(self, path: &Path) -> PyResult<T> {
        self.map_err(|e| to_py_path(e, path))
    }
}
