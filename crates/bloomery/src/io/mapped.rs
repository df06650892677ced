//! Big files: read-only maps with a streaming checksum, and updates through a writable map of
//! a copy.
//!
//! A filter file can be larger than RAM. Three ways in, each with its guarantee:
//!
//! | how | what it reads | guarantee |
//! |---|---|---|
//! | [`MappedFile::open`] + [`MappedFile::verify`] (or `open_mmap(.., Verify::Checksum)`) | every byte once, streamed through the map in [`PASS_CHUNK`] pieces whose pages are dropped behind the pass | the payload is the one that was saved (xxh3-64 checksum), or a typed error |
//! | [`MappedFile::open`] alone (or `open_mmap(.., Verify::HeaderOnly)`) | the header and what queries touch | header and parameters validated (magic, version, kind, lengths, hash, every parameter against the payload length); a damaged payload gives wrong answers (false positives or negatives), never a crash or an out-of-bounds read |
//! | `load` / `from_bytes` | the whole file, copied into memory | as `Checksum` |
//!
//! A structure decoded from a map uses the file's pages in place: resident memory is the pages
//! its queries touch. The checksum pass holds at most two chunks of the file resident.
//!
//! ## Updates: copy, map, update in place, rename
//! [`FileUpdate`] updates a big file in bounded memory and keeps the atomic-save guarantee
//! (after a crash at any point the file is either the old one or the new one):
//! 1. the file is copied to a temporary file in the same directory — by the kernel
//!    (`copy_file_range`, a reflink on filesystems that share extents) when the source is not
//!    verified, or read once through its map while its checksum is computed and written out
//!    when it is (a corrupt source is refused, not re-sealed with a fresh checksum);
//! 2. the copy is mapped writable (a shared map): a structure decoded from it
//!    ([`AnyFilter::from_update`](crate::AnyFilter::from_update), ...) writes straight into
//!    the copy's pages; [`FileUpdate::release_memory`] and [`FileUpdate::release_range`]
//!    drop touched pages from the process (they stay in the page cache), so a long update
//!    keeps its resident memory bounded (a blocked filter's sweep in block order,
//!    [`BlockedBloomFilter::insert_sorted`](crate::BlockedBloomFilter::insert_sorted), drops
//!    the range behind it);
//! 3. [`FileUpdate::commit`] writes the new header and any part that does not live in the
//!    map, computes the checksum in one streaming pass, writes the trailer, flushes the map,
//!    fsyncs the copy, renames it over the original and fsyncs the directory.
//!
//! Until the rename the original is never written; a failure or a crash leaves it as it was
//! (and a stale `.bloomery-*.tmp` file beside it after a crash, as any atomic save does, and
//! a `.bloomery-*.sums` one after a crash of a one-pass update). The
//! cost is one copy of the file and one streaming checksum pass; the disk needs room for the
//! copy. An in-place update with a journal would write less for a few keys, but every reader
//! would then have to recover an interrupted update before it could trust the file; the copy
//! keeps readers as simple as the format (see `docs/CLI.md`, "Big filters", for the
//! measurements behind the choice).

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::io::temp::TempFile;

use crate::error::{at_path, Error, FormatError, Result};
use crate::io::format::{self, release_readonly, Encode, Persist, Progress, Source};
use crate::io::header::{stream_checksum, Decoded, Header, Verify, PASS_CHUNK};
use crate::io::late_head::LateHeadHash;
use crate::store::SharedMap;

/// A filter file opened through a read-only memory map: its header decoded and validated, its
/// payload untouched until a structure is decoded from it and queried. The file stays open
/// while the map lives, so a copy of it ([`FileUpdate::copy_mapped`]) is made without opening
/// it again.
///
/// What each way of opening guarantees:
/// - [`open`](Self::open) alone validates the header and every parameter against the payload
///   length (magic, version, kind, lengths, hash): a damaged payload gives wrong answers (false
///   positives or negatives), never a crash or an out-of-bounds read; queries read only the
///   pages they touch;
/// - [`open`](Self::open) then [`verify`](Self::verify) also checks the xxh3-64 checksum in
///   one streaming pass over the map ([`PASS_CHUNK`] bytes at a time, each dropped from the
///   process behind the pass): the payload is the one that was saved, or a typed error.
///
/// ```
/// use bloomery::{AnyFilter, BlockedBloomFilter, Filter, Persist};
/// use bloomery::file::MappedFile;
///
/// # #[cfg(not(feature = "mmap"))] fn main() {} // without the `mmap` feature: Error::Unsupported
/// # #[cfg(feature = "mmap")]
/// # fn main() -> bloomery::Result<()> {
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("seen.bloom");
/// let mut f = BlockedBloomFilter::try_new(1000, 0.01)?;
/// f.insert("alice");
/// f.save(&path)?;
///
/// let file = MappedFile::open(&path)?;
/// file.verify(&mut |_done| {})?; // one streaming pass; skip it to trust the payload
/// let mapped = AnyFilter::from_mapped(&file)?;
/// assert!(mapped.contains("alice"));
/// # Ok(()) }
/// ```
pub struct MappedFile {
    /// The open file: a copy of it is made from this descriptor, not a new open.
    file: File,
    map: Arc<crate::map::Mmap>,
    decoded: Decoded,
    flags: u16,
    path: PathBuf,
}

impl std::fmt::Debug for MappedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappedFile")
            .field("path", &self.path)
            .field("len", &self.map.len())
            .field("kind", &self.decoded.header.kind)
            .field("flags", &self.flags)
            .finish()
    }
}

impl MappedFile {
    /// Map a file and validate its header (magic, version, kind, lengths, hash, flags);
    /// nothing of the payload is read. A compressed file opens too (its structure is
    /// decompressed into memory when decoded), and so does a delta file (whose bytes
    /// [`crate::compress::patch_file`] takes; decoding a structure from it is refused).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let (file, map) = format::open_and_map(path)?;
        let (decoded, flags) = format::decode_with_flags(&map, Verify::HeaderOnly)
            .map_err(|e| at_path(path, e.into()))?;
        #[cfg(unix)]
        {
            // Queries touch a few pages each: no read-ahead around them. Advice only.
            let _ = map.advise(crate::map::Advice::Random);
        }
        Ok(Self {
            file,
            map,
            decoded,
            flags,
            path: path.to_path_buf(),
        })
    }

    /// The validated header.
    pub fn header(&self) -> &Header {
        &self.decoded.header
    }

    /// The path it was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes of the file.
    pub fn len(&self) -> u64 {
        self.map.len() as u64
    }

    /// Always false: a valid file has at least a header and a trailer.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Bytes of the payload (for a compressed file, of its compressed container).
    pub fn payload_len(&self) -> u64 {
        self.decoded.payload_len as u64
    }

    /// Bytes of the header.
    pub fn header_len(&self) -> u64 {
        self.decoded.payload_offset as u64
    }

    /// True for a compressed file (its structures are decompressed into memory).
    pub fn is_compressed(&self) -> bool {
        self.flags == format::FLAG_COMPRESSED
    }

    /// True for a delta file ([`crate::compress::diff_files`]): not a structure.
    pub fn is_delta(&self) -> bool {
        self.flags == format::FLAG_DELTA
    }

    /// A plain file, whose words can be used in place.
    pub(crate) fn is_plain(&self) -> bool {
        self.flags == 0
    }

    /// The file's bytes, in place (reading them faults their pages in).
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// Verify the checksum in one streaming pass over the map, [`PASS_CHUNK`] bytes at a
    /// time, dropping each chunk's pages from the process behind the pass (they stay in the
    /// page cache): resident memory stays at about two chunks whatever the file's size.
    /// `progress` is told the bytes done after each chunk (of [`len`](Self::len) in all).
    ///
    /// A compressed file whose declared plain payload exceeds the memory limit is refused
    /// before the pass (decoding it would be refused after it).
    pub fn verify(&self, progress: Progress<'_>) -> Result<()> {
        self.check_declared_plain()?;
        format::verify_map(&self.map, progress).map_err(|e| at_path(&self.path, e))
    }

    /// For a compressed file, its declared plain payload against the memory limit.
    fn check_declared_plain(&self) -> Result<()> {
        if !self.is_compressed() {
            return Ok(());
        }
        crate::io::compress::check_declared_plain(
            &self.map,
            &self.decoded,
            crate::store::max_bytes(),
        )
        .map_err(|e| at_path(&self.path, e))
    }

    /// One streaming pass over the file (as [`verify`](Self::verify), checking the checksum
    /// when `verify`), handing each piece of the body to `visit(offset, len)` right after it
    /// is hashed, while it is in cache: what counts a structure's fill in the same pass as
    /// its checksum ([`AnyFilter::info_mapped`](crate::AnyFilter::info_mapped)).
    pub(crate) fn pass(
        &self,
        verify: bool,
        visit: &mut dyn FnMut(usize, usize),
        progress: Progress<'_>,
    ) -> Result<()> {
        self.check_declared_plain()?;
        format::pass_map(&self.map, verify, visit, progress).map_err(|e| at_path(&self.path, e))
    }

    /// Decode the file's structure as `P`: the words are the file's pages, used in place (a
    /// compressed file is decompressed into memory). The checksum is not verified here: call
    /// [`verify`](Self::verify) first for that guarantee.
    pub fn decode<P: Persist>(&self) -> Result<P> {
        let decoded = || {
            if !self.is_plain() {
                // decompressed into memory; a delta file is refused there
                return P::from_bytes(self.bytes());
            }
            format::check_kind(&self.decoded, P::KIND, P::ALSO_OPENS)?;
            P::decode_from(
                &self.decoded,
                Source::Mapped(&self.map),
                crate::store::max_bytes(),
            )
        };
        decoded().map_err(|e| at_path(&self.path, e))
    }

    /// Drop this file's pages from the process's memory (they stay in the page cache and
    /// fault back in when touched again): for callers that make their own passes.
    pub fn release_memory(&self) {
        release_readonly(&self.map, 0, self.map.len());
    }

    pub(crate) fn decoded(&self) -> &Decoded {
        &self.decoded
    }

    pub(crate) fn map(&self) -> &Arc<crate::map::Mmap> {
        &self.map
    }
}

/// An update of a big file in bounded memory: a copy of the file beside it, mapped writable,
/// into which a structure writes in place; [`commit`](Self::commit) seals the copy and
/// renames it over the original. Until that rename the original is never written: after a
/// crash or an I/O error at any point the file is the old one or the new one (a crash may
/// leave a stale `.bloomery-*.tmp` copy beside it, and a `.bloomery-*.sums` file after a
/// one-pass update's crash). Dropping it without a commit removes the
/// copy and leaves the file as it was. The cost is one copy of the file (by the kernel where
/// it can, `copy_file_range`) and one streaming checksum pass at the commit.
///
/// ```
/// use bloomery::{AnyFilter, BlockedBloomFilter, Persist, Verify};
/// use bloomery::file::FileUpdate;
///
/// # #[cfg(not(feature = "mmap"))] fn main() {} // without the `mmap` feature: Error::Unsupported
/// # #[cfg(feature = "mmap")]
/// # fn main() -> bloomery::Result<()> {
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("seen.bloom");
/// BlockedBloomFilter::try_new(1000, 0.01)?.save(&path)?;
///
/// let up = FileUpdate::open(&path, Verify::Checksum, &mut |_| {})?;
/// let mut f = AnyFilter::from_update(&up)?;
/// f.insert("alice")?;
/// up.commit(f, &mut |_| {})?;
///
/// assert!(AnyFilter::load(&path)?.contains("alice"));
/// # Ok(()) }
/// ```
pub struct FileUpdate {
    target: PathBuf,
    tmp: TempFile,
    map: Arc<SharedMap>,
    decoded: Decoded,
    /// An update opened for a sweep: the part of the source not copied yet.
    lazy: Option<Box<std::sync::Mutex<LazyCopy>>>,
}

/// A copy [`FileUpdate::rewrite`] wrote whose checksum waits for its header: the hash of
/// everything after the header (its block sums spilled beside the copy).
pub(crate) struct Unsealed {
    hash: LateHeadHash,
}

/// The source of an update whose copy is made as a sweep advances
/// ([`FileUpdate::open_sweep`]).
struct LazyCopy {
    src: MappedFile,
    /// Bytes of the source copied so far (from the front).
    copied: usize,
    /// The source's checksum so far, when it is verified.
    hash: Option<crate::io::header::StreamHash>,
    /// The first error: the copy is refused from then on.
    failed: bool,
}

impl std::fmt::Debug for FileUpdate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileUpdate")
            .field("target", &self.target)
            .field("copy", &self.tmp.path())
            .field("len", &self.map.len())
            .finish()
    }
}

impl FileUpdate {
    /// Copy the plain file at `path` to a temporary file in its directory and map the copy
    /// writable. With [`Verify::Checksum`] the source is read once through its map, checksummed
    /// and written out (a damaged source is refused); with [`Verify::HeaderOnly`] the kernel
    /// copies it (`copy_file_range`). `progress` is told the bytes copied. A compressed file
    /// cannot be updated in place (load it, update, save it compressed).
    pub fn open(path: impl AsRef<Path>, verify: Verify, progress: Progress<'_>) -> Result<Self> {
        Self::copy_to(path.as_ref(), path.as_ref(), verify, progress)
    }

    /// [`open`](Self::open) for a new file: copy the plain file at `src` beside `target` and
    /// map the copy writable; [`commit`](Self::commit) renames it to `target` (replacing the
    /// file there, if any, atomically). `src` is never written. What `union` and `intersect`
    /// into a new file use.
    pub fn copy_to(
        src: impl AsRef<Path>,
        target: impl AsRef<Path>,
        verify: Verify,
        progress: Progress<'_>,
    ) -> Result<Self> {
        Self::copy_mapped(MappedFile::open(src)?, target, verify, progress)
    }

    /// [`copy_to`](Self::copy_to) from a file already mapped: the source is not opened again
    /// (the kernel's copy reads the descriptor the map was made from).
    pub fn copy_mapped(
        src: MappedFile,
        target: impl AsRef<Path>,
        verify: Verify,
        progress: Progress<'_>,
    ) -> Result<Self> {
        let target = target.as_ref().to_path_buf();
        check_source(&src)?;
        let decoded = src.decoded().clone();
        let mut tmp = TempFile::new_in(&TempFile::dir_of(&target), ".tmp")?;
        let len = src.map.len();
        if verify == Verify::Checksum {
            copy_verified(&src, tmp.as_file_mut(), progress)?;
        } else {
            copy_kernel(&src.file, tmp.as_file_mut(), len as u64, progress)?;
        }
        drop(src);
        if tmp.as_file().metadata()?.len() != len as u64 {
            return Err(Error::Io(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the file changed while it was copied",
            )));
        }
        Self::over_copy(target, tmp, decoded, None)
    }

    /// The update of `target` whose copy is `tmp` (the source's length): the copy takes the
    /// mode of the file it replaces and is mapped writable.
    fn over_copy(
        target: PathBuf,
        tmp: TempFile,
        decoded: Decoded,
        lazy: Option<LazyCopy>,
    ) -> Result<Self> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            // the mode of the file replaced, else of a new file as saves make it
            let mode = std::fs::metadata(&target)
                .map(|m| m.permissions().mode() & 0o7777)
                .unwrap_or(0o644);
            tmp.as_file()
                .set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        // SAFETY: the copy is a private temporary file of this process (created 0600 with a
        // random name); nothing else writes or truncates it while it is mapped, and this
        // update writes its bytes only through the map and, when the copy is made as a sweep
        // advances, `copy_through` (positioned writes the kernel keeps coherent with the map).
        let map = unsafe { crate::map::MmapMut::map_mut(tmp.as_file())? };
        #[cfg(unix)]
        {
            let _ = map.advise(crate::map::Advice::Random);
        }
        Ok(Self {
            target,
            tmp,
            map: Arc::new(SharedMap::of_file(map)),
            decoded,
            lazy: lazy.map(|l| Box::new(std::sync::Mutex::new(l))),
        })
    }

    /// [`open`](Self::open) for a sweep: the copy is made as the update advances through the
    /// file instead of before it, so the source is read once and the copy written once, each
    /// in order, and the sweep's inserts land in pages just written (a file larger than RAM is
    /// not read back from the disk for them). The copy is a file of the source's length whose
    /// bytes beyond [`copied`](Self::copied) are not the source's yet: a structure decoded from
    /// it ([`AnyFilter::from_update`](crate::AnyFilter::from_update)) may read or write a byte
    /// range only after [`copy_through`](Self::copy_through) has reached its end — what
    /// [`BlockedBloomFilter::insert_sweep`](crate::BlockedBloomFilter::insert_sweep) does
    /// with `copy_through` as its `ahead` — and anything else only after
    /// [`copy_rest`](Self::copy_rest). [`commit`](Self::commit) copies the rest first. With
    /// [`Verify::Checksum`] the source's checksum is computed as it is copied and checked when
    /// the copy is complete: a damaged source fails `copy_rest` (or `commit`), and the original
    /// file is never replaced.
    ///
    /// A blocked filter can instead take a batch of keys in the pass that makes the whole copy
    /// ([`BlockedBloomFilter::insert_copying`](crate::BlockedBloomFilter::insert_copying)), and
    /// seal in that same pass
    /// ([`AnyFilter::commit_with_keys`](crate::AnyFilter::commit_with_keys)).
    ///
    /// ```
    /// use bloomery::{AnyFilter, BlockedBloomFilter, Filter, Persist, Verify};
    /// use bloomery::file::FileUpdate;
    ///
    /// # #[cfg(not(feature = "mmap"))] fn main() {} // without the `mmap` feature: Error::Unsupported
    /// # #[cfg(feature = "mmap")]
    /// # fn main() -> bloomery::Result<()> {
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("seen.bloom");
    /// let f = BlockedBloomFilter::try_new(100_000, 0.01)?;
    /// f.save(&path)?;
    ///
    /// let up = FileUpdate::open_sweep(&path, Verify::Checksum)?;
    /// let AnyFilter::Blocked(mut b) = AnyFilter::from_update(&up)? else { unreachable!() };
    /// let mut hashes: Vec<_> = (0..1000u32).map(|i| b.hasher().hash(&i)).collect();
    /// b.insert_sweep(&mut hashes, |r| up.copy_through(r), |_| {})?;
    /// up.commit(b, &mut |_| {})?; // copies the rest, checks the source's checksum, seals
    ///
    /// let g = BlockedBloomFilter::load(&path)?;
    /// assert_eq!(g.len(), 1000);
    /// assert!((0..1000u32).all(|i| g.contains(&i)));
    /// # Ok(()) }
    /// ```
    pub fn open_sweep(path: impl AsRef<Path>, verify: Verify) -> Result<Self> {
        Self::sweep_mapped(MappedFile::open(path)?, verify)
    }

    /// [`open_sweep`](Self::open_sweep) of a file already mapped (not opened again): the
    /// update replaces the file the map was opened from.
    pub fn sweep_mapped(src: MappedFile, verify: Verify) -> Result<Self> {
        check_source(&src)?;
        let target = src.path().to_path_buf();
        let decoded = src.decoded().clone();
        let tmp = TempFile::new_in(&TempFile::dir_of(&target), ".tmp")?;
        tmp.as_file().set_len(src.map.len() as u64)?;
        #[cfg(unix)]
        {
            let _ = src.map.advise(crate::map::Advice::Sequential);
        }
        let lazy = LazyCopy {
            src,
            copied: 0,
            hash: (verify == Verify::Checksum).then(crate::io::header::StreamHash::new),
            failed: false,
        };
        Self::over_copy(target, tmp, decoded, Some(lazy))
    }

    /// Bytes of the file copied so far: all of it for an update made by [`open`](Self::open).
    pub fn copied(&self) -> u64 {
        match &self.lazy {
            None => self.len(),
            Some(l) => l.lock().map_or(0, |l| l.copied as u64),
        }
    }

    /// Copy the source through payload byte `range.end` (an update made by
    /// [`open_sweep`](Self::open_sweep); nothing to do for one made by [`open`](Self::open)):
    /// the bytes of the words up to there are then the file's. The `ahead` of
    /// [`BlockedBloomFilter::insert_sweep`](crate::BlockedBloomFilter::insert_sweep).
    pub fn copy_through(&self, range: std::ops::Range<u64>) -> Result<()> {
        let end = self.payload_offset().saturating_add(range.end);
        self.copy_until(usize::try_from(end).unwrap_or(usize::MAX))
    }

    /// Copy the rest of the source (an update made by [`open_sweep`](Self::open_sweep)) and,
    /// when verifying, check the source's checksum: after it the copy is the whole file.
    pub fn copy_rest(&self) -> Result<()> {
        self.copy_until(usize::MAX)
    }

    fn untouched_lazy(&self) -> Result<std::sync::MutexGuard<'_, LazyCopy>> {
        let not_sweep = || {
            Error::Unsupported(
                "a one-pass rewrite needs an update opened by `FileUpdate::open_sweep` whose \
                 copy has not started"
                    .into(),
            )
        };
        let lazy = self.lazy.as_ref().ok_or_else(not_sweep)?;
        let l = lazy
            .lock()
            .map_err(|_| Error::Io(std::io::Error::other("an earlier copy step panicked")))?;
        if l.failed || l.copied != 0 {
            return Err(not_sweep());
        }
        Ok(l)
    }

    /// The copy of an update made by [`open_sweep`](Self::open_sweep), made in one pass that
    /// changes it on the way: each [`PASS_CHUNK`] piece of the source is read (and hashed,
    /// when the source is verified), `edit(offset, words)` is handed the piece's payload words
    /// (native order; `offset` the payload byte where they start) to change in place, and the
    /// piece is written to the copy. With `seal`, the new file's checksum is computed over the
    /// bytes as they are written, all but the header's ([`LateHeadHash`]): the caller, who
    /// knows the new header only after the pass (its item count), hands it to
    /// [`persist_rewritten`](Self::persist_rewritten), which seals the copy without another
    /// pass. Without it, the copy's header and trailer are the source's (a later
    /// [`commit`](Self::commit) seals it). A source whose checksum does not match fails it,
    /// after the copy is written; the original file is never written.
    pub(crate) fn rewrite(
        &self,
        seal: bool,
        edit: &mut dyn FnMut(u64, &mut [u64]) -> Result<()>,
        progress: Progress<'_>,
    ) -> Result<Option<Unsealed>> {
        let mut l = self.untouched_lazy()?;
        let r = (|| {
            let mut unsealed = if seal {
                Some(Unsealed {
                    hash: LateHeadHash::spilling_in(
                        &TempFile::dir_of(&self.target),
                        self.decoded.payload_offset,
                    )?,
                })
            } else {
                None
            };
            l.rewrite(
                self.tmp.as_file(),
                self.decoded.payload_offset,
                unsealed.as_mut().map(|u| &mut u.hash),
                edit,
                progress,
            )?;
            Ok(unsealed)
        })();
        if r.is_err() {
            l.failed = true;
        }
        r
    }

    /// Seal a copy [`rewrite`](Self::rewrite) made with `seal` and replace the original by it:
    /// write `head` (the new header, of the old one's length), finish the checksum with it and
    /// write the trailer, fsync the copy, rename it over the original, fsync the directory.
    pub(crate) fn persist_rewritten(self, unsealed: Unsealed, head: &[u8]) -> Result<()> {
        let h = self.decoded.payload_offset;
        if head.len() != h {
            return Err(crate::error::inconsistent(
                "the new header's length differs",
            ));
        }
        let sum = unsealed.hash.finish(head)?;
        let body = (h + self.decoded.payload_len) as u64;
        let file = self.tmp.as_file();
        write_all_at(file, head, 0)?;
        write_all_at(file, &sum.to_le_bytes(), body)?;
        file.sync_all()?;
        self.tmp.persist(&self.target)?;
        format::sync_dir(&self.target);
        Ok(())
    }

    fn copy_until(&self, end: usize) -> Result<()> {
        let Some(lazy) = &self.lazy else {
            return Ok(());
        };
        let mut l = lazy
            .lock()
            .map_err(|_| Error::Io(std::io::Error::other("an earlier copy step panicked")))?;
        if l.failed {
            return Err(Error::Io(std::io::Error::other(
                "an earlier step of this update's copy failed",
            )));
        }
        let r = l.copy_until(self.tmp.as_file(), end);
        if r.is_err() {
            l.failed = true;
        }
        r
    }

    /// The header of the file being updated (as it was opened).
    pub fn header(&self) -> &Header {
        &self.decoded.header
    }

    /// Bytes of the file.
    pub fn len(&self) -> u64 {
        self.map.len() as u64
    }

    /// Always false: a valid file has at least a header and a trailer.
    pub fn is_empty(&self) -> bool {
        self.map.len() == 0
    }

    /// The file being updated.
    pub fn path(&self) -> &Path {
        &self.target
    }

    /// Drop the pages touched so far from the process's memory. Written pages are kept by the
    /// page cache (and reach the copy on disk at [`commit`](Self::commit)); the next access
    /// faults a page back in. Call it every few thousand keys to bound the resident memory of
    /// a long update.
    pub fn release_memory(&self) {
        self.map.release(0, self.map.len());
    }

    /// [`release_memory`](Self::release_memory) for `len` bytes of the file at `offset`
    /// (clipped to the file): what a sweep in file order drops behind it.
    pub fn release_range(&self, offset: u64, len: u64) {
        let (Ok(offset), Ok(len)) = (usize::try_from(offset), usize::try_from(len)) else {
            return;
        };
        if offset < self.map.len() {
            self.map.release(offset, len);
        }
    }

    /// Where the payload (the structure's words) starts in the file.
    pub fn payload_offset(&self) -> u64 {
        self.decoded.payload_offset as u64
    }

    pub(crate) fn decoded(&self) -> &Decoded {
        &self.decoded
    }

    /// Decode the file's structure as `P`: the words are the pages of the update's copy, and
    /// every change writes straight into it; seal it with [`commit`](Self::commit).
    pub fn decode<P: Persist>(&self) -> Result<P> {
        format::check_kind(&self.decoded, P::KIND, P::ALSO_OPENS)?;
        P::decode_from(
            &self.decoded,
            Source::Shared(&self.map),
            crate::store::max_bytes(),
        )
    }

    pub(crate) fn shared_map(&self) -> &Arc<SharedMap> {
        &self.map
    }

    /// Seal the update and replace the original: write `f`'s header and every part of its
    /// payload that does not already live in the copy, compute the checksum in one streaming
    /// pass (`progress` is told the bytes done), write the trailer, flush and fsync the copy,
    /// rename it over the original and fsync the directory. `f` is consumed, so nothing
    /// writes into the file after it is sealed. A structure whose size changed (a scalable
    /// filter that grew a sub-filter) is written whole instead, as a save does.
    pub fn commit<E: Encode>(self, f: E, progress: Progress<'_>) -> Result<()> {
        self.commit_visiting(&f, &mut |_| {}, progress)?;
        Ok(())
    }

    /// [`commit`](Self::commit) of a structure the caller keeps (and must not change or
    /// write through: it is dropped right after), telling `visit` the bytes of the payload the
    /// checksum pass is done with before it drops their pages — what a count in the same pass
    /// reads. Returns false when the structure's shape changed and it was written whole
    /// instead (no pass visited).
    pub(crate) fn commit_visiting<E: Encode>(
        self,
        f: &E,
        visit: &mut dyn FnMut(u64),
        progress: Progress<'_>,
    ) -> Result<bool> {
        self.copy_rest()?;
        let (header, payload) = Encode::encode_parts(f);
        let head = header.encode(payload.len());
        let h = self.decoded.payload_offset;
        if head.len() != h || payload.len() != self.decoded.payload_len as u64 {
            // A new shape: write a whole new file (the words still in the copy are read
            // through its map).
            drop((header, payload));
            format::save_atomic(&self.target, |w| {
                format::write_with_progress(f, w, progress)
            })?;
            return Ok(false);
        }
        let base = self.map.ptr();
        // SAFETY (for the writes below): `[0, h)` is the header, which no structure maps; each
        // part is written only where no `Words` of `f` maps it (a part in place is skipped),
        // and `f`'s parts are read through shared borrows while nothing writes them.
        let mut at = h;
        for part in payload.parts() {
            let padded = format::padded_len(part.len()) as usize;
            let in_place = matches!(part.shared_view(),
                Some((m, off)) if Arc::ptr_eq(m, &self.map) && off == at);
            if !in_place {
                let mut cursor = at;
                part.write_le(|b| {
                    // SAFETY: see above; `cursor + b.len()` stays within the part's padded
                    // range, which lies within the payload (same total length as the file's).
                    unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), base.add(cursor), b.len()) };
                    cursor += b.len();
                    Ok::<_, Error>(())
                })?;
                // SAFETY: the padding after the part's words, within its padded range.
                unsafe { std::ptr::write_bytes(base.add(cursor), 0, at + padded - cursor) };
            }
            at += padded;
        }
        // SAFETY: the header range `[0, h)`, see above.
        unsafe { std::ptr::copy_nonoverlapping(head.as_ptr(), base, h) };
        let body = h + self.decoded.payload_len;
        drop(payload);
        let map = &self.map;
        // SAFETY: `[0, body)` is within the map, and `f` is only read from here on (shared
        // borrow; the caller drops it after): nothing writes the map while this view lives.
        let bytes = unsafe { std::slice::from_raw_parts(base.cast_const(), body) };
        // read ahead: the copy's pages may have left the page cache (a file larger than RAM)
        map.advise_pass(true);
        let sum = stream_checksum(
            bytes,
            |at, n| map.will_need(at, n),
            |at, n| {
                visit(((at + n) as u64).saturating_sub(h as u64));
                map.release(at, n)
            },
            progress,
        );
        // SAFETY: the trailer `[body, body + 8)`, the last 8 bytes of the file.
        unsafe { std::ptr::copy_nonoverlapping(sum.to_le_bytes().as_ptr(), base.add(body), 8) };
        self.map.flush()?;
        self.tmp.as_file().sync_all()?;
        self.tmp.persist(&self.target)?;
        format::sync_dir(&self.target);
        Ok(true)
    }
}

/// Map the plain file an update starts from; a delta or compressed file cannot be updated in
/// place.
fn check_source(src: &MappedFile) -> Result<()> {
    if src.is_delta() {
        return Err(Error::Unsupported(
            "this is a delta file, not a filter: apply it to its base with `patch`".into(),
        ));
    }
    if src.is_compressed() {
        return Err(Error::Unsupported(
            "a compressed file cannot be updated in place: load it into memory".into(),
        ));
    }
    Ok(())
}

impl LazyCopy {
    /// See [`FileUpdate::rewrite`]: `h` is the header's length (where the payload starts).
    fn rewrite(
        &mut self,
        dst: &File,
        h: usize,
        mut seal: Option<&mut LateHeadHash>,
        edit: &mut dyn FnMut(u64, &mut [u64]) -> Result<()>,
        progress: Progress<'_>,
    ) -> Result<()> {
        let map = Arc::clone(&self.src.map);
        let len = map.len();
        let body = len - 8;
        // page-aligned: the kernel's copy into the page cache runs at full speed
        let mut whole = vec![0u64; (PASS_CHUNK + 4096) / 8];
        let skip = whole.as_ptr().align_offset(4096).min(4096 / 8);
        let buf = &mut whole[skip..skip + PASS_CHUNK / 8];
        let mut at = 0;
        while at < len {
            let n = PASS_CHUNK.min(len - at);
            read_ahead(&map, at + n);
            let bytes = &mut bytemuck::cast_slice_mut::<u64, u8>(buf)[..n];
            bytes.copy_from_slice(&map[at..at + n]);
            release_readonly(&map, at, n);
            let hashed = n.min(body.saturating_sub(at));
            if let Some(s) = &mut self.hash {
                s.update(&bytes[..hashed]);
            }
            // the payload's whole words in this piece (pieces start at multiples of 8 bytes)
            let (p0, p1) = (at.max(h), (at + n).min(body));
            if p0 < p1 {
                let words = &mut buf[(p0 - at) / 8..(p1 - at) / 8];
                words.iter_mut().for_each(|w| *w = u64::from_le(*w));
                let r = edit((p0 - h) as u64, words);
                words.iter_mut().for_each(|w| *w = w.to_le());
                r?;
            }
            let bytes = &bytemuck::cast_slice::<u64, u8>(buf)[..n];
            if let Some(s) = &mut seal {
                s.update(&bytes[..hashed])?;
            }
            write_all_at(dst, bytes, at as u64)?;
            at += n;
            self.copied = at;
            progress(at as u64);
        }
        if let Some(h) = self.hash.take() {
            let stored = u64::from_le_bytes(map[body..].try_into().expect("8 bytes"));
            let computed = h.digest();
            if computed != stored {
                return Err(FormatError::ChecksumMismatch { stored, computed }.into());
            }
        }
        Ok(())
    }

    /// Copy the source's bytes `[copied, end)` (clipped to the file) to the same offsets of
    /// `dst`, a [`PASS_CHUNK`] at a time, each dropped from the process behind; at the end of
    /// the file, check the checksum when verifying.
    fn copy_until(&mut self, dst: &File, end: usize) -> Result<()> {
        let map = &self.src.map;
        let len = map.len();
        let body = len - 8;
        let end = end.min(len);
        while self.copied < end {
            let at = self.copied;
            let n = PASS_CHUNK.min(len - at);
            read_ahead(map, at + n);
            let chunk = &map[at..at + n];
            if let Some(h) = &mut self.hash {
                h.update(&chunk[..n.min(body.saturating_sub(at))]);
            }
            write_all_at(dst, chunk, at as u64)?;
            release_readonly(map, at, n);
            self.copied = at + n;
        }
        if self.copied == len {
            if let Some(h) = self.hash.take() {
                let stored = u64::from_le_bytes(map[body..].try_into().expect("8 bytes"));
                let computed = h.digest();
                if computed != stored {
                    return Err(FormatError::ChecksumMismatch { stored, computed }.into());
                }
            }
        }
        Ok(())
    }
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

/// Ask the kernel to read the [`PASS_CHUNK`] of `map` from byte `next` ahead of a pass (none
/// past the end; a no-op where maps take no advice).
fn read_ahead(map: &crate::map::Mmap, next: usize) {
    #[cfg(unix)]
    {
        let next = next.min(map.len());
        let _ = map.advise_range(
            crate::map::Advice::WillNeed,
            next,
            PASS_CHUNK.min(map.len() - next),
        );
    }
    #[cfg(not(unix))]
    let _ = (map, next);
}

/// Copy `src` to `dst` through the source's map, computing the checksum on the way; refuses a
/// source whose checksum does not match.
fn copy_verified(src: &MappedFile, dst: &mut File, progress: Progress<'_>) -> Result<()> {
    let map = &src.map;
    let body = map.len() - 8;
    #[cfg(unix)]
    let _ = map.advise(crate::map::Advice::Sequential);
    let mut h = crate::io::header::StreamHash::new();
    let mut at = 0;
    while at < map.len() {
        let n = PASS_CHUNK.min(map.len() - at);
        read_ahead(map, at + n);
        let chunk = &map[at..at + n];
        h.update(&chunk[..n.min(body.saturating_sub(at))]);
        dst.write_all(chunk)?;
        release_readonly(map, at, n);
        at += n;
        progress(at as u64);
    }
    let stored = u64::from_le_bytes(map[body..].try_into().expect("8 bytes"));
    let computed = h.digest();
    if computed != stored {
        return Err(FormatError::ChecksumMismatch { stored, computed }.into());
    }
    Ok(())
}

/// Copy `len` bytes of the open file `src` (from its start) to `dst` in the kernel (`copy_file_range` where the
/// platform has it, which shares extents on filesystems that can), [`PASS_CHUNK`] at a time.
fn copy_kernel(src: &File, dst: &mut File, len: u64, progress: Progress<'_>) -> Result<()> {
    use std::io::{Seek, SeekFrom};
    let mut from = src;
    from.seek(SeekFrom::Start(0))?;
    let mut done = 0u64;
    while done < len {
        let step = (PASS_CHUNK as u64 * 8).min(len - done);
        let n = std::io::copy(&mut std::io::Read::take(&mut from, step), dst)?;
        if n == 0 {
            break;
        }
        done += n;
        progress(done);
    }
    Ok(())
}
