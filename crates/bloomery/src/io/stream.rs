//! A file written front to back in one pass, atomically: what a result computed a piece at a
//! time from mapped inputs (a fold, a union, an intersection) is written through, so that no
//! step holds more than a piece of it.
//!
//! The bytes go to a temporary file beside the target ([`TempFile`]) with positioned writes
//! (a full disk or an I/O error is an error, never a fault on a mapped page), the checksum is
//! computed as they pass (when the header is known only at the end, all but the header's part,
//! [`LateHeadHash`]), then the trailer, fsync, rename over the target and fsync of the directory:
//! the save of [`save_atomic`](crate::io::format::save_atomic), without the whole file in
//! memory. Until the rename the target is never written; dropping a [`StreamOut`] without
//! finishing removes the temporary file.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::io::fs::{sync_dir, write_all_at};
use crate::io::header::StreamHash;
use crate::io::late_head::LateHeadHash;
use crate::io::temp::TempFile;

/// The checksum of the bytes written, computed as they pass.
enum Sum {
    /// Every byte, header included.
    Inline(StreamHash),
    /// All but the header, which is hashed in at the end.
    LateHead(LateHeadHash),
}

/// A file being written front to back (see the module docs).
pub(crate) struct StreamOut {
    target: PathBuf,
    tmp: TempFile,
    hash: Sum,
    written: u64,
}

impl StreamOut {
    /// A temporary file beside `target` of the mode of the file it will replace (else 0644),
    /// to hold `len` bytes before the trailer. The checksum is computed as the bytes are
    /// written: all of them ([`finish`](Self::finish)) or, with `late_head`, all but the
    /// first `late_head` bytes (the header, written first as a placeholder), which are given
    /// at the end ([`finish_with_head`](Self::finish_with_head)).
    pub(crate) fn create(target: &Path, late_head: Option<usize>) -> Result<Self> {
        let dir = TempFile::dir_of(target);
        let tmp = TempFile::new_in(&dir, ".tmp")?;
        let hash = match late_head {
            None => Sum::Inline(StreamHash::new()),
            Some(head) => Sum::LateHead(LateHeadHash::spilling_in(&dir, head)?),
        };
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
            hash,
            written: 0,
        })
    }

    /// Append `bytes` (and hash them).
    pub(crate) fn write(&mut self, bytes: &[u8]) -> Result<()> {
        match &mut self.hash {
            Sum::Inline(h) => h.update(bytes),
            Sum::LateHead(h) => h.update(bytes)?,
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

    /// The checksum of every byte written so far (None with a late header).
    pub(crate) fn sum_so_far(&self) -> Option<u64> {
        match &self.hash {
            Sum::Inline(h) => Some(h.digest()),
            Sum::LateHead(_) => None,
        }
    }

    /// Bytes written so far.
    pub(crate) fn written(&self) -> u64 {
        self.written
    }

    /// Seal a file whose every byte was hashed as it was written: the trailer, fsync, rename
    /// over the target, fsync of the directory.
    pub(crate) fn finish(mut self) -> Result<()> {
        match std::mem::replace(&mut self.hash, Sum::Inline(StreamHash::new())) {
            Sum::Inline(h) => self.seal(h.digest()),
            Sum::LateHead(_) => Err(std::io::Error::other("the header was not given").into()),
        }
    }

    /// Seal a file made with a late header: write `head` (the header, of the length given to
    /// [`create`](Self::create)) at the start, hash it in, then the trailer, fsync, rename and
    /// fsync of the directory. The file is not read back.
    pub(crate) fn finish_with_head(mut self, head: &[u8]) -> Result<()> {
        let Sum::LateHead(h) = std::mem::replace(&mut self.hash, Sum::Inline(StreamHash::new()))
        else {
            return Err(std::io::Error::other("the checksum covers the header already").into());
        };
        let sum = h.finish(head)?;
        write_all_at(self.tmp.as_file(), head, 0)?;
        self.seal(sum)
    }

    fn seal(self, sum: u64) -> Result<()> {
        write_all_at(self.tmp.as_file(), &sum.to_le_bytes(), self.written)?;
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
