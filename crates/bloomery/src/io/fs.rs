//! File-system primitives under every other io layer: read-only maps of files, positional
//! writes, the directory sync that makes a rename durable, and the refusal of a directory
//! given where a file belongs.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use crate::error::{at_path, Error, Result};

/// Make a rename into `path`'s directory durable (fsync the directory; best effort).
pub(crate) fn sync_dir(path: &Path) {
    #[cfg(unix)]
    {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}

/// Refuse a directory given where a filter file belongs (mapping one fails with "No such
/// device", reading one with "Is a directory": neither says what was wrong).
pub(crate) fn not_a_directory(file: &File) -> Result<()> {
    if file.metadata()?.is_dir() {
        return Err(Error::Io(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "this is a directory, not a filter file",
        )));
    }
    Ok(())
}

/// Memory-map a file read-only. Without the `mmap` feature this returns
/// [`Error::Unsupported`] (before opening the file).
pub fn map_file(path: &Path) -> Result<Arc<crate::map::Mmap>> {
    open_and_map(path).map(|(_, map)| map)
}

/// [`map_file`], keeping the open file: what copies it in the kernel later
/// ([`FileUpdate`](crate::io::mapped::FileUpdate)) without opening it again.
pub(crate) fn open_and_map(path: &Path) -> Result<(File, Arc<crate::map::Mmap>)> {
    if !cfg!(feature = "mmap") {
        return Err(Error::Unsupported(crate::map::NO_MMAP.into()));
    }
    map_file_at(path).map_err(|e| at_path(path, e))
}

fn map_file_at(path: &Path) -> Result<(File, Arc<crate::map::Mmap>)> {
    let file = File::open(path)?;
    not_a_directory(&file)?;
    // SAFETY: the map is read-only. If another process truncates or rewrites the file while it
    // is mapped, reads may see changed bytes or fault (SIGBUS); bloomery itself never writes a
    // file in place (saves go through a rename), so files it manages are not modified under a
    // live map. This is the documented contract of `open_mmap`.
    let map = unsafe { crate::map::Mmap::map(&file)? };
    Ok((file, Arc::new(map)))
}

/// Write all of `buf` at `offset` of `f` (on Unix without moving its cursor).
pub(crate) fn write_all_at(f: &File, buf: &[u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::write_all_at(f, buf, offset)
    }
    #[cfg(windows)]
    {
        let (mut buf, mut offset) = (buf, offset);
        while !buf.is_empty() {
            let n = std::os::windows::fs::FileExt::seek_write(f, buf, offset)?;
            if n == 0 {
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            buf = &buf[n..];
            offset += n as u64;
        }
        Ok(())
    }
}
