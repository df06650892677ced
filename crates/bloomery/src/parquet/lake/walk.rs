//! The Parquet files of files and directories given on the command line ([`walk`]).

#[cfg(feature = "rayon")]
use rayon::prelude::*;

#[cfg(not(feature = "rayon"))]
use super::seq::*;
use std::path::{Path, PathBuf};

use crate::parquet::ParquetError;

/// True for the names the walk leaves out: sidecars (`*.bloomery`), checksum files (`*.crc`),
/// and hidden or bookkeeping entries (`.*`, `_*`: `_SUCCESS`, `_delta_log`, ...).
pub fn is_sidecar_name(name: &str) -> bool {
    name.ends_with(".bloomery")
}

fn skipped(name: &str) -> bool {
    name.starts_with('.')
        || name.starts_with('_')
        || is_sidecar_name(name)
        || name.ends_with(".crc")
}

/// A file to read: given on the command line (`explicit`: it must be Parquet) or found in a
/// directory (a file that turns out not to be Parquet may be skipped).
///
/// ```
/// use bloomery::parquet::{walk, Candidate};
///
/// let dir = tempfile::tempdir()?;
/// std::fs::create_dir(dir.path().join("day=1"))?;
/// for name in ["day=1/a.parquet", "b.parquet", "b.parquet.id.bloomery", "_SUCCESS", ".hidden"] {
///     std::fs::write(dir.path().join(name), b"")?;
/// }
/// let named = dir.path().join("b.parquet");
/// let (files, errors) = walk(&[dir.path().to_path_buf(), named.clone()]);
/// assert!(errors.is_empty());
/// // found in the directory (sorted; sidecars and bookkeeping left out), then named
/// assert_eq!(
///     files,
///     [
///         Candidate { path: named.clone(), explicit: false },
///         Candidate { path: dir.path().join("day=1/a.parquet"), explicit: false },
///         Candidate { path: named, explicit: true },
///     ]
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The file.
    pub path: PathBuf,
    /// Named by the caller rather than found in a directory.
    pub explicit: bool,
}

fn walk_dir(dir: &Path) -> (Vec<Candidate>, Vec<ParquetError>) {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) => return (Vec::new(), vec![ParquetError::io(dir, e)]),
    };
    // (name, path, is a directory): the names sort as the paths would (one directory)
    let mut entries: Vec<(std::ffi::OsString, PathBuf, bool)> = Vec::new();
    let mut errors = Vec::new();
    for e in rd {
        let e = match e {
            Ok(e) => e,
            Err(err) => {
                errors.push(ParquetError::io(dir, err));
                continue;
            }
        };
        let name = e.file_name();
        if skipped(&name.to_string_lossy()) {
            continue;
        }
        let path = e.path();
        // directories are followed only when they are real directories (no symlink loops);
        // symlinks to files are read
        match e.file_type() {
            Ok(ft) if ft.is_dir() => entries.push((name, path, true)),
            Ok(ft) if ft.is_file() => entries.push((name, path, false)),
            Ok(ft) if ft.is_symlink() && path.is_file() => entries.push((name, path, false)),
            Ok(_) => {}
            Err(err) => errors.push(ParquetError::io(&path, err)),
        }
    }
    entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let parts: Vec<(Vec<Candidate>, Vec<ParquetError>)> = entries
        .into_par_iter()
        .map(|(_, p, is_dir)| {
            if is_dir {
                walk_dir(&p)
            } else {
                (
                    vec![Candidate {
                        path: p,
                        explicit: false,
                    }],
                    Vec::new(),
                )
            }
        })
        .collect();
    let mut files = Vec::new();
    for (f, e) in parts {
        files.extend(f);
        errors.extend(e);
    }
    (files, errors)
}

/// The files named by `paths`: files as given, directories walked recursively and in parallel
/// (sorted by path; hidden and bookkeeping entries, sidecars and checksum files left out).
pub fn walk(paths: &[PathBuf]) -> (Vec<Candidate>, Vec<ParquetError>) {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    for p in paths {
        match std::fs::metadata(p) {
            Ok(m) if m.is_dir() => {
                let (f, e) = walk_dir(p);
                files.extend(f);
                errors.extend(e);
            }
            Ok(_) => files.push(Candidate {
                path: p.clone(),
                explicit: true,
            }),
            Err(e) => errors.push(ParquetError::io(p, e)),
        }
    }
    (files, errors)
}
