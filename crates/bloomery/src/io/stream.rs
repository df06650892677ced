//! A file written front to back in one pass, atomically: what a result computed a piece at a
//! time from mapped inputs (a fold, a union, an intersection) is written through, so that no
//! step holds more than a piece of it.
//!
//! The bytes go to a temporary file beside the target ([`TempFile`]) with positioned writes
//! (a full disk or an I/O error is an error, never a fault on a mapped page), the checksum is
//! computed as they pass (or, when the header is known only at the end, in one pass reading
//! the file back), then the trailer, fsync, rename over the target and fsync of the directory:
//! the save of [`save_atomic`](crate::io::format::save_atomic), without the whole file in
//! memory. Until the rename the target is never written; dropping a [`StreamOut`] without
//! finishing removes the temporary file.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::io::format::{sync_dir, Progress};
use crate::io::header::{StreamHash, PASS_CHUNK};
use crate::io::temp::TempFile;

/// A file being written front to back (see the module docs).
pub(crate) struct StreamOut {
    target: PathBuf,
    tmp: TempFile,
    /// The checksum of the bytes written, while they are hashed as they pass.
    hash: Option<StreamHash>,
    written: u64,
}

impl StreamOut {
    /// A temporary file beside `target` of the mode of the file it will replace (else 0644),
    /// to hold `len` bytes before the trailer. With `hash_inline` the checksum is computed as
    /// the bytes are written ([`finish`](Self::finish)); without it the first `head` bytes
    /// are written last and hashed with the rest by reading the file back
    /// ([`finish_with_head`](Self::finish_with_head)).
    pub(crate) fn create(target: &Path, hash_inline: bool) -> Result<Self> {
        let tmp = TempFile::new_in(&TempFile::dir_of(target), ".tmp")?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(target)
                .map(|m| m.permissions().mode() & 0o7777)
                .unwrap_or(0o644);
            tmp.as_file()
                .set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        Ok(Self {
            target: target.to_path_buf(),
            tmp,
            hash: hash_inline.then(StreamHash::new),
            written: 0,
        })
    }

    /// Append `bytes` (and hash them, when hashing inline).
    pub(crate) fn write(&mut self, bytes: &[u8]) -> Result<()> {
        if let Some(h) = &mut self.hash {
            h.update(bytes);
        }
        self.tmp.as_file_mut().write_all(bytes)?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    /// Append `n` zero bytes.
    pub(crate) fn write_zeros(&mut self, mut n: u64) -> Result<()> {
        let zeros = [0u8; 4096];
        while n > 0 {
            let k = n.min(zeros.len() as u64) as usize;
            self.write(&zeros[..k])?;
            n -= k as u64;
        }
        Ok(())
    }

    /// Bytes written so far.
    pub(crate) fn written(&self) -> u64 {
        self.written
    }

    /// Seal a file whose every byte was hashed as it was written: the trailer, fsync, rename
    /// over the target, fsync of the directory.
    pub(crate) fn finish(mut self) -> Result<()> {
        let sum = self
            .hash
            .take()
            .map(|h| h.digest())
            .ok_or_else(|| std::io::Error::other("the checksum was not computed inline"))?;
        self.seal(sum)
    }

    /// Seal a file whose first bytes (`head`, the header) are known only now: write them at
    /// the start, compute the checksum in one pass reading the file back ([`PASS_CHUNK`] at
    /// a time, from the page cache while it holds the file; `progress` is told the bytes
    /// done), then the trailer, fsync, rename and fsync of the directory.
    pub(crate) fn finish_with_head(mut self, head: &[u8], progress: Progress<'_>) -> Result<()> {
        let f = self.tmp.as_file_mut();
        f.seek(SeekFrom::Start(0))?;
        f.write_all(head)?;
        f.seek(SeekFrom::Start(0))?;
        let mut h = StreamHash::new();
        let mut buf = vec![0u8; PASS_CHUNK.min(self.written as usize).max(1)];
        let mut done = 0u64;
        while done < self.written {
            let n = (buf.len() as u64).min(self.written - done) as usize;
            f.read_exact(&mut buf[..n])?;
            h.update(&buf[..n]);
            done += n as u64;
            progress(done);
        }
        f.seek(SeekFrom::Start(self.written))?;
        self.seal(h.digest())
    }

    fn seal(mut self, sum: u64) -> Result<()> {
        self.tmp.as_file_mut().write_all(&sum.to_le_bytes())?;
        self.tmp.as_file().sync_all()?;
        self.tmp.persist(&self.target)?;
        sync_dir(&self.target);
        Ok(())
    }
}

/// The little-endian bytes of `words` (the words themselves on a little-endian machine).
pub(crate) fn le_bytes(words: &[u64]) -> std::borrow::Cow<'_, [u8]> {
    if cfg!(target_endian = "little") {
        std::borrow::Cow::Borrowed(bytemuck::cast_slice(words))
    } else {
        std::borrow::Cow::Owned(words.iter().flat_map(|w| w.to_le_bytes()).collect())
    }
}
