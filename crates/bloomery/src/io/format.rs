//! Persistence on top of the header codec ([`crate::io::header`]): the [`Persist`] trait
//! (save, load, map), atomic saves, memory maps, whole-file reads and save options. Every
//! loader first turns a compressed file into its plain form ([`crate::io::compress`]).
//!
//! Saves are atomic ([`save_atomic`]): the bytes go to a temporary file in the same directory,
//! which is flushed to disk and renamed over the target; the directory is then synced. A crash
//! at any point leaves either the old file or the new one, never a mix. Big files are mapped,
//! verified in a streaming pass and updated in place of a copy by [`crate::io::mapped`].

use std::io::{self, Read, Write};
use std::path::Path;

use crate::error::{at_path, Error, FormatError, Result};
use crate::io::compress::PlainBytes;
use crate::io::fs::{map_file, not_a_directory, sync_dir};
pub use crate::io::header::*;
pub use crate::io::source::Source;
use crate::io::temp::TempFile;

/// Read just the header of a file (cheap: no checksum, no payload). For a compressed file
/// this is the header of the plain file it holds.
pub fn read_header(path: impl AsRef<Path>) -> Result<Header> {
    let path = path.as_ref();
    #[cfg(feature = "mmap")]
    let bytes = map_file(path)?;
    #[cfg(not(feature = "mmap"))]
    let bytes = read_file(path)?;
    let decoded =
        decode_with_flags(&bytes, Verify::HeaderOnly).map_err(|e| at_path(path, e.into()))?;
    Ok(decoded.0.header)
}

/// Write a file atomically: temp file in the same directory, fsync, rename, fsync directory.
pub fn save_atomic(path: &Path, write_fn: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<()> {
    let dir = TempFile::dir_of(path);
    let mut tmp = TempFile::new_in(&dir, ".tmp")?;
    {
        let mut bw = io::BufWriter::with_capacity(1 << 20, tmp.as_file_mut());
        write_fn(&mut bw)?;
        bw.flush()?;
    }
    // Temp files are created 0600; give the result the permissions of the file it replaces,
    // or the usual 0644 for a new file.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)
            .map(|m| m.permissions().mode() & 0o7777)
            .unwrap_or(0o644);
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(mode))?;
    }
    tmp.as_file().sync_all()?;
    tmp.persist(path)?;
    sync_dir(path);
    Ok(())
}

/// Something that saves as a file of the format: every structure ([`Persist`](crate::Persist))
/// and the run-time types [`AnyFilter`](crate::AnyFilter) and
/// [`AnyCounter`](crate::AnyCounter). What [`crate::file::FileUpdate::commit`] writes.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{AnyFilter, BloomFilter, Persist};
/// use bloomery::file::Encode;
///
/// fn file_size<E: Encode + ?Sized>(e: &E) -> u64 {
///     e.encoded_len()
/// }
/// let f = BloomFilter::try_new(1000, 0.01)?;
/// let size = file_size(&f);
/// assert_eq!(size, f.to_bytes().len() as u64);
/// assert_eq!(file_size(&AnyFilter::from(f)), size);
/// # Ok(()) }
/// ```
pub trait Encode {
    /// The header (with kind-specific parameters) and payload to write.
    #[doc(hidden)]
    fn encode_parts(&self) -> (Header, Payload<'_>);

    /// Bytes of the plain file this saves as, computed without encoding it.
    fn encoded_len(&self) -> u64 {
        let (h, p) = self.encode_parts();
        h.encoded_len() as u64 + p.len() + TRAILER as u64
    }
}

impl<P: Persist> Encode for P {
    fn encode_parts(&self) -> (Header, Payload<'_>) {
        Persist::encode_parts(self)
    }
}

/// A progress callback: bytes of the pass done so far.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{BloomFilter, Persist};
/// use bloomery::file::SaveOptions;
///
/// let f = BloomFilter::try_new(100_000, 0.01)?;
/// let dir = tempfile::tempdir()?;
/// let mut done = 0;
/// let mut report = |bytes: u64| done = bytes;
/// f.save_with(dir.path().join("f.bloom"), SaveOptions::new().progress(&mut report))?;
/// assert_eq!(done, f.encoded_len());
/// # Ok(()) }
/// ```
pub type Progress<'a> = &'a mut dyn FnMut(u64);

/// Drop `[at, at + n)` of a read-only shared map from the process (the page cache keeps it).
pub(crate) fn release_readonly(map: &crate::map::Mmap, at: usize, n: usize) {
    #[cfg(unix)]
    // SAFETY: MADV_DONTNEED on a read-only shared file map unmaps the pages; the next access
    // reads the same bytes back from the file, which must not change while mapped (the
    // contract of every map), so no reference into the map observes a change.
    unsafe {
        let _ = map.unchecked_advise_range(crate::map::UncheckedAdvice::DontNeed, at, n);
    }
    #[cfg(not(unix))]
    let _ = (map, at, n);
}

/// Bytes a streaming pass hands to its visitor at a time: small enough that the visitor
/// reads them while the checksum has just brought them into the CPU's cache.
pub(crate) const PASS_PIECE: usize = 256 << 10;

/// Pieces the leading thread of a two-thread pass may be ahead of the visitor: enough to keep
/// both busy, few enough that the visitor finds each piece in the CPU's shared cache (16
/// pieces measured slower than 2 on a busy machine).
const PASS_LAG: usize = 2;

/// One streaming pass over a mapped file: [`PASS_CHUNK`](crate::io::header::PASS_CHUNK)
/// steps, each read ahead before it is reached and dropped from the process behind the pass;
/// within a step, [`PASS_PIECE`] pieces, each hashed (when `verify`) and handed to
/// `visit(offset, len)`. The body (all but the trailer) is visited in order; with `verify`
/// the checksum must match the trailer, else the error is returned once the pass ends.
///
/// When verifying, two threads share the work: a leading one hashes each piece first and
/// hands it on; the calling thread visits it at most [`PASS_LAG`] pieces behind, while it is
/// in the CPU's shared cache, and drops each step's pages once both are past it. So the hash
/// and the visitor overlap, and resident memory stays at about two steps. Without
/// verification (nothing to overlap: a leading thread that only touched the pieces measured
/// slower) and where no thread can be started, the pass runs on the calling thread alone,
/// with the same results.
pub(crate) fn pass_map(
    map: &crate::map::Mmap,
    verify: bool,
    visit: &mut dyn FnMut(usize, usize),
    progress: Progress<'_>,
) -> Result<()> {
    pass_map_with(map, verify, true, visit, progress)
}

/// [`pass_map`], on two threads when `two` and `verify` (and a thread can be started), else
/// on the calling thread alone.
pub(crate) fn pass_map_with(
    map: &crate::map::Mmap,
    verify: bool,
    two: bool,
    visit: &mut dyn FnMut(usize, usize),
    progress: Progress<'_>,
) -> Result<()> {
    let body = map.len().saturating_sub(TRAILER);
    #[cfg(unix)]
    let _ = map.advise(crate::map::Advice::Sequential);
    let computed = std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<usize>(PASS_LAG);
        let lead = if !(two && verify) {
            Err(io::Error::other("one thread: nothing to overlap"))
        } else {
            std::thread::Builder::new()
                .name("bloomery-pass".into())
                .spawn_scoped(scope, move || {
                    let mut h = crate::io::header::StreamHash::new();
                    pass_pieces(map, body, &mut |p, q| {
                        h.update(&map[p..p + q]);
                        // the visitor gone (it failed): stop
                        tx.send(p + q).is_ok()
                    });
                    h.digest()
                })
        };
        match lead {
            Ok(lead) => {
                // each piece as the leading thread finishes it, in order
                let mut at = 0;
                for end in rx.iter() {
                    visit(at, end - at);
                    step_done(map, body, at, end, progress);
                    at = end;
                }
                lead.join()
                    .map_err(|_| Error::Io(io::Error::other("the pass's reading thread failed")))
            }
            Err(_) => {
                let mut h = crate::io::header::StreamHash::new();
                pass_pieces(map, body, &mut |p, q| {
                    if verify {
                        h.update(&map[p..p + q]);
                    }
                    visit(p, q);
                    step_done(map, body, p, p + q, progress);
                    true
                });
                Ok(h.digest())
            }
        }
    })?;
    #[cfg(unix)]
    let _ = map.advise(crate::map::Advice::Random);
    if verify {
        let stored = u64::from_le_bytes(map[body..].try_into().expect("8 bytes"));
        if computed != stored {
            return Err(FormatError::ChecksumMismatch { stored, computed }.into());
        }
    }
    Ok(())
}

/// The pieces of `[0, body)` in order, [`PASS_PIECE`] bytes (a step's last one shorter), each
/// handed to `piece(offset, len)` until it answers false; each step's read-ahead is asked for
/// before the step is reached.
fn pass_pieces(map: &crate::map::Mmap, body: usize, piece: &mut dyn FnMut(usize, usize) -> bool) {
    use crate::io::header::PASS_CHUNK;
    let mut at = 0;
    while at < body {
        let n = PASS_CHUNK.min(body - at);
        #[cfg(unix)]
        {
            let next = at + n;
            let ahead = PASS_CHUNK.min(body - next);
            if ahead > 0 {
                let _ = map.advise_range(crate::map::Advice::WillNeed, next, ahead);
            }
        }
        #[cfg(not(unix))]
        let _ = map;
        let mut p = at;
        while p < at + n {
            let q = PASS_PIECE.min(at + n - p);
            if !piece(p, q) {
                return;
            }
            p += q;
        }
        at += n;
    }
}

/// After the piece `[at, end)` of a pass: when it ends a step, drop the step's pages from the
/// process and report the bytes done.
fn step_done(map: &crate::map::Mmap, body: usize, at: usize, end: usize, progress: Progress<'_>) {
    use crate::io::header::PASS_CHUNK;
    if end.is_multiple_of(PASS_CHUNK) || end == body {
        let start = (end - 1) / PASS_CHUNK * PASS_CHUNK;
        debug_assert!(start <= at);
        release_readonly(map, start, end - start);
        progress(end as u64);
    }
}

/// Verify the checksum of a mapped plain or compressed file (its header already decoded) in
/// one streaming pass that drops each step's pages behind it (see
/// [`crate::file::MappedFile::verify`]).
pub(crate) fn verify_map(map: &crate::map::Mmap, progress: Progress<'_>) -> Result<()> {
    let body = map.len().saturating_sub(TRAILER);
    #[cfg(unix)]
    let _ = map.advise(crate::map::Advice::Sequential);
    let computed = stream_checksum(
        &map[..body],
        |at, n| {
            #[cfg(unix)]
            if n > 0 {
                let _ = map.advise_range(crate::map::Advice::WillNeed, at, n);
            }
            #[cfg(not(unix))]
            let _ = (at, n);
        },
        |at, n| release_readonly(map, at, n),
        progress,
    );
    #[cfg(unix)]
    let _ = map.advise(crate::map::Advice::Random);
    let stored = u64::from_le_bytes(map[body..].try_into().expect("8 bytes"));
    if computed != stored {
        return Err(FormatError::ChecksumMismatch { stored, computed }.into());
    }
    Ok(())
}

/// A writer that reports the bytes through it.
struct CountingWriter<'a, W> {
    inner: W,
    done: u64,
    progress: Progress<'a>,
}

impl<W: Write> Write for CountingWriter<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(&buf[..buf.len().min(PASS_CHUNK)])?;
        let before = self.done / PASS_CHUNK as u64;
        self.done += n as u64;
        if self.done / PASS_CHUNK as u64 != before {
            (self.progress)(self.done);
        }
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        (self.progress)(self.done);
        self.inner.flush()
    }
}

/// Write a structure through `w` in pieces of at most [`PASS_CHUNK`] bytes, telling
/// `progress` the bytes written: a save with a progress report.
pub(crate) fn write_with_progress<E: Encode + ?Sized>(
    f: &E,
    w: &mut dyn Write,
    progress: Progress<'_>,
) -> Result<()> {
    let (header, payload) = f.encode_parts();
    let mut w = CountingWriter {
        inner: w,
        done: 0,
        progress,
    };
    write(&header, &payload, &mut w)
}

/// Append the bytes `[start, start + len)` of the file `f` saves as to `out` (clipped at its
/// end, nothing past it), made without encoding the rest: what a chunked transfer (Redis
/// `SCANDUMP`, `LOADCHUNK`) sends. The chunk holding the trailer costs one reading pass for
/// the checksum; every other chunk costs only its own length.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{BloomFilter, Filter, Persist};
/// use bloomery::file::{encoded_header_len, encoded_range};
///
/// let mut f = BloomFilter::try_new(10_000, 0.01)?;
/// f.insert("a");
/// let whole = f.to_bytes();
/// let mut chunk = Vec::new();
/// encoded_range(&f, 100, 50, &mut chunk);
/// assert_eq!(chunk, whole[100..150]);
/// let mut head = Vec::new();
/// encoded_range(&f, 0, encoded_header_len(&f), &mut head);
/// assert_eq!(bloomery::file::peek_header_bytes(&head)?.header_len as usize, head.len());
/// # Ok(()) }
/// ```
pub fn encoded_range<E: Encode + ?Sized>(f: &E, start: u64, len: usize, out: &mut Vec<u8>) {
    let (header, payload) = f.encode_parts();
    crate::io::header::encode_range(&header, &payload, start, len, out);
}

/// Length of the header of the file `f` saves as (where its payload starts).
pub fn encoded_header_len<E: Encode + ?Sized>(f: &E) -> usize {
    let (header, payload) = f.encode_parts();
    header.encode(payload.len()).len()
}

/// Read and validate the header of the file at `path` from its first bytes only (see
/// [`peek`]): cheap for a file of any size, and it says whether the file is compressed and how
/// long it should be.
pub fn peek_file(path: impl AsRef<Path>) -> Result<FileHead> {
    let path = path.as_ref();
    peek_file_at(path).map_err(|e| at_path(path, e))
}

fn peek_file_at(path: &Path) -> Result<FileHead> {
    let file = std::fs::File::open(path)?;
    not_a_directory(&file)?;
    let mut head = Vec::with_capacity(FIXED_HEADER);
    (&file).take(FIXED_HEADER as u64).read_to_end(&mut head)?;
    if head.len() == FIXED_HEADER {
        let h = u32::from_le_bytes(head[12..16].try_into().expect("4 bytes")) as usize;
        if h > FIXED_HEADER && h <= MAX_HEADER {
            (&file)
                .take((h - FIXED_HEADER) as u64)
                .read_to_end(&mut head)?;
        }
    }
    Ok(peek(&head)?)
}

/// Where a structure's words come from in a loader's plain bytes: copied from them, or a
/// rebuilt map in place.
impl<'a> From<&'a PlainBytes<'_>> for Source<'a> {
    fn from(plain: &'a PlainBytes<'_>) -> Self {
        match plain {
            PlainBytes::Mapped(m) => Source::Shared(m),
            other => Source::Bytes(other.bytes()),
        }
    }
}

/// [`read_stream`](crate::io::source::read_stream) of the file at `path`, with the checks of
/// [`read_file`](crate::io::format::read_file) (not a directory, no larger than the memory
/// limit) and, for a regular file, its length against the header's (a truncated file, or one
/// with bytes after its trailer, is refused before its payload is read; a pipe is read as a
/// stream). Errors name the path.
pub(crate) fn read_path<T>(
    path: &Path,
    decode: impl FnOnce(&Decoded, Source<'_>) -> Result<T>,
    whole: impl FnOnce(&[u8]) -> Result<T>,
) -> Result<T> {
    let read = || {
        let file = std::fs::File::open(path)?;
        not_a_directory(&file)?;
        let meta = file.metadata()?;
        // a pipe or a device (`/dev/stdin`, a process substitution) has no length to check
        let len = meta.is_file().then_some(meta.len());
        if let Some(len) = len {
            check_file_size(len)?;
        }
        let r = io::BufReader::with_capacity(1 << 16, file);
        crate::io::source::read_stream_of(r, len, decode, whole)
    };
    read().map_err(|e| at_path(path, e))
}

/// `P` from a validated header of its kind (or one it also opens) and its words' source,
/// within the default memory limit: what the ways in through a reader share.
fn decode_checked<P: Persist>(d: &Decoded, src: Source<'_>) -> Result<P> {
    check_kind(d, P::KIND, P::ALSO_OPENS)?;
    P::decode_from(d, src, crate::store::max_bytes())
}

/// Seals [`Persist`]: implemented by the kinds table for every structure (`kind.rs`).
pub(crate) mod sealed {
    /// Only the crate's structures implement it.
    pub trait Sealed {}
}

/// Save, load and map: implemented by every structure of the crate (the trait is sealed: the
/// file format's kinds are the crate's own). The codec half (`encode_parts`, `decode_from`)
/// is hidden from the documentation and is not part of the public API.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{CountingBloomFilter, Filter, Persist};
///
/// let mut f = CountingBloomFilter::try_new(1000, 0.01)?;
/// f.insert("a");
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("f.bloom");
/// f.save(&path)?; // atomic: temporary file, fsync, rename
/// assert_eq!(CountingBloomFilter::load(&path)?, f);
/// assert_eq!(CountingBloomFilter::from_bytes(&f.to_bytes())?, f);
/// assert_eq!(std::fs::metadata(&path)?.len(), f.encoded_len());
///
/// // errors reading a file name it; the kind is kept
/// let e = CountingBloomFilter::load(dir.path().join("missing.bloom")).unwrap_err();
/// assert!(e.to_string().contains("missing.bloom"), "{e}");
/// assert!(matches!(&e, bloomery::Error::Io(io) if io.kind() == std::io::ErrorKind::NotFound));
/// # Ok(()) }
/// ```
pub trait Persist: Sized + sealed::Sealed {
    /// The structure's kind id.
    const KIND: Kind;
    /// Other kinds whose files this type also opens (converting them as it decodes).
    #[doc(hidden)]
    const ALSO_OPENS: &'static [Kind] = &[];

    /// The header (with kind-specific parameters) and payload to write.
    #[doc(hidden)]
    fn encode_parts(&self) -> (Header, Payload<'_>);

    /// Rebuild from a validated header and its payload source (`payload_offset` is where the
    /// payload starts in `src`). Must validate every kind-specific parameter.
    #[doc(hidden)]
    fn decode_from(d: &Decoded, src: Source<'_>, limit: u64) -> Result<Self>;

    /// Write the file format to `w`.
    fn write_to(&self, w: impl Write) -> Result<()> {
        let (h, p) = self.encode_parts();
        write(&h, &p, w)
    }

    /// Bytes of the plain file this structure saves as, computed without encoding it.
    fn encoded_len(&self) -> u64 {
        let (h, p) = self.encode_parts();
        h.encoded_len() as u64 + p.len() + TRAILER as u64
    }

    /// The file format as bytes.
    fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::new();
        // Writing to a Vec cannot fail.
        let _ = self.write_to(&mut v);
        v
    }

    /// Decode from bytes (copying), verifying the checksum. A compressed file is
    /// decompressed first (and the plain file's checksum verified).
    fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let plain = crate::io::compress::plain_bytes(bytes)?;
        let d = decode(plain.bytes(), Verify::Checksum)?;
        check_kind(&d, Self::KIND, Self::ALSO_OPENS)?;
        Self::decode_from(&d, Source::from(&plain), crate::store::max_bytes())
    }

    /// Decode from a reader, front to back, verifying the checksum: each array is read
    /// straight into the structure's own memory, so a load needs the structure's size, not
    /// twice it (as [`from_bytes`](Self::from_bytes) of bytes read first does). Reads exactly
    /// the file's bytes. A compressed file is read whole and decompressed.
    ///
    /// ```
    /// # fn main() -> bloomery::Result<()> {
    /// use bloomery::{BloomFilter, Filter, Persist};
    ///
    /// let mut f = BloomFilter::try_new(1000, 0.01)?;
    /// f.insert("a");
    /// let bytes = f.to_bytes();
    /// assert_eq!(BloomFilter::read_from(&bytes[..])?, f);
    /// assert!(BloomFilter::read_from(&bytes[..bytes.len() - 1]).is_err()); // truncated
    /// # Ok(()) }
    /// ```
    fn read_from(r: impl Read) -> Result<Self> {
        crate::io::source::read_stream(r, decode_checked::<Self>, Self::from_bytes)
    }

    /// Save atomically (temp file, fsync, rename).
    fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        save_atomic(path.as_ref(), |w| self.write_to(w))
    }

    /// Save atomically with [`SaveOptions`]: the compressed form, a progress report.
    fn save_with(&self, path: impl AsRef<Path>, opts: SaveOptions<'_>) -> Result<()> {
        save_encoded(self, path.as_ref(), opts)
    }

    /// Load a file into memory, verifying the checksum. The file is read front to back
    /// ([`read_from`](Self::read_from)): the load needs the structure's memory, not twice it.
    fn load(path: impl AsRef<Path>) -> Result<Self> {
        read_path(path.as_ref(), decode_checked::<Self>, Self::from_bytes)
    }

    /// Open a file through a read-only memory map: the words are used in place (zero-copy),
    /// so a filter larger than RAM can be queried. The checksum is verified if `verify` says
    /// so. Mutating a mapped structure first copies its words into memory.
    ///
    /// The file must not be modified by another process while mapped (bloomery's own saves
    /// replace files by rename, which is safe). Without the `mmap` feature this returns
    /// [`Error::Unsupported`] (use [`load`](Self::load)).
    ///
    /// ```
    /// use bloomery::{BloomFilter, Error, Filter, Persist, Verify};
    ///
    /// # fn main() -> bloomery::Result<()> {
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("f.bloom");
    /// let mut f = BloomFilter::try_new(1000, 0.01)?;
    /// f.insert("a");
    /// f.save(&path)?;
    /// match BloomFilter::open_mmap(&path, Verify::Checksum) {
    ///     Ok(m) => assert!(m.contains("a")),
    ///     Err(Error::Unsupported(why)) => assert!(why.contains("`mmap` feature")),
    ///     Err(e) => return Err(e),
    /// }
    /// // errors opening the file name it
    /// match BloomFilter::open_mmap(dir.path().join("missing.bloom"), Verify::Checksum) {
    ///     Err(Error::Io(e)) => assert!(e.to_string().contains("missing.bloom"), "{e}"),
    ///     Err(Error::Unsupported(_)) => {} // built without the `mmap` feature
    ///     other => panic!("expected an error, got {other:?}"),
    /// }
    /// # Ok(()) }
    /// ```
    fn open_mmap(path: impl AsRef<Path>, verify: Verify) -> Result<Self> {
        let path = path.as_ref();
        let map = map_file(path)?;
        let decoded = || {
            let (d, flags) = decode_with_flags(&map, Verify::HeaderOnly)?;
            if verify == Verify::Checksum {
                verify_map(&map, &mut |_| {})?;
            }
            if flags != 0 {
                // A compressed file cannot be used in place: decompress it into memory (a
                // delta file is refused there).
                return Self::from_bytes(&map);
            }
            check_kind(&d, Self::KIND, Self::ALSO_OPENS)?;
            Self::decode_from(&d, Source::Mapped(&map), crate::store::max_bytes())
        };
        decoded().map_err(|e| at_path(path, e))
    }
}

/// Options of a save ([`Persist::save_with`], [`crate::AnyFilter::save_with`], ...).
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{BloomFilter, Filter, Persist};
/// use bloomery::file::SaveOptions;
///
/// let mut f = BloomFilter::try_new(100_000, 0.01)?;
/// f.insert("only key");
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("f.bloomz");
/// f.save_with(&path, SaveOptions::new().compressed(true))?;
/// assert!(std::fs::metadata(&path)?.len() < f.encoded_len() / 10); // mostly zeros
/// assert_eq!(BloomFilter::load(&path)?, f); // loads wherever a plain file does
/// # Ok(()) }
/// ```
#[derive(Default)]
#[non_exhaustive]
pub struct SaveOptions<'a> {
    /// Write the compressed form ([`crate::compress`]).
    pub compressed: bool,
    /// Told the bytes written so far, about every [`crate::file::PASS_CHUNK`] bytes (plain saves).
    pub progress: Option<Progress<'a>>,
}

impl<'a> SaveOptions<'a> {
    /// A plain save without progress reports.
    pub fn new() -> Self {
        Self::default()
    }

    /// Write the compressed form.
    pub fn compressed(mut self, yes: bool) -> Self {
        self.compressed = yes;
        self
    }

    /// Report the bytes written.
    pub fn progress(mut self, f: Progress<'a>) -> Self {
        self.progress = Some(f);
        self
    }
}

/// Save any encodable structure with `opts` (atomic).
pub(crate) fn save_encoded<E: Encode + ?Sized>(
    f: &E,
    path: &Path,
    opts: SaveOptions<'_>,
) -> Result<()> {
    if opts.compressed {
        let (header, payload) = f.encode_parts();
        return crate::io::compress::compress_parts_to(&header, &payload, path);
    }
    match opts.progress {
        Some(p) => save_atomic(path, |w| write_with_progress(f, w, p)),
        None => save_atomic(path, |w| {
            let (header, payload) = f.encode_parts();
            write(&header, &payload, w)
        }),
    }
}

/// Read a whole file, refusing files larger than the memory limit (plus header room) before
/// reading them.
fn read_limited_at(path: &Path) -> Result<Vec<u8>> {
    let len = std::fs::metadata(path)?.len();
    check_file_size(len)?;
    Ok(std::fs::read(path)?)
}

/// Refuse a file larger than the memory limit (plus header room) before reading it.
fn check_file_size(len: u64) -> Result<()> {
    crate::store::check_size(
        len,
        crate::store::max_bytes().saturating_add(MAX_HEADER as u64 + 64),
    )
}

/// A whole file in memory, for decoding: what [`read_file`] returns (it derefs to the bytes).
/// A large file lives in an anonymous map with transparent huge pages advised, so reading it
/// costs a few page faults instead of one per 4 KiB (a heap `Vec` of that size is a fresh map
/// faulted page by page).
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{AnyFilter, BloomFilter, Persist};
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("f.bloom");
/// BloomFilter::try_new(1000, 0.01)?.save(&path)?;
/// let buf = bloomery::file::read_file(&path)?; // derefs to the file's bytes
/// assert_eq!(buf.len() as u64, std::fs::metadata(&path)?.len());
/// assert_eq!(AnyFilter::from_bytes(&buf)?.kind(), bloomery::Kind::Classic);
/// # Ok(()) }
/// ```
pub struct FileBuf(FileBufInner);

enum FileBufInner {
    Heap(Vec<u8>),
    Anon(crate::map::MmapMut),
}

impl FileBuf {
    /// `len` zero bytes to read a file of that length into (refused beyond the memory limit).
    pub fn zeroed(len: u64) -> Result<Self> {
        check_file_size(len)?;
        let len = usize::try_from(len).map_err(|_| Error::TooLarge {
            requested: len,
            limit: crate::store::max_bytes(),
        })?;
        if !crate::store::use_anon_map(len) {
            return Ok(Self(FileBufInner::Heap(vec![0; len])));
        }
        Ok(Self(FileBufInner::Anon(crate::store::anon_map(len)?)))
    }

    /// The bytes, to fill.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        match &mut self.0 {
            FileBufInner::Heap(v) => v,
            FileBufInner::Anon(m) => m,
        }
    }
}

impl std::ops::Deref for FileBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.0 {
            FileBufInner::Heap(v) => v,
            FileBufInner::Anon(m) => m,
        }
    }
}

/// Read a whole file into a [`FileBuf`], refusing files larger than the memory limit (plus
/// header room) before reading. A file that changes length while it is read is read again
/// into a plain buffer.
///
/// Errors reading the file name its path; errors in its contents are decoded later and
/// describe the contents.
pub fn read_file(path: &Path) -> Result<FileBuf> {
    read_file_at(path).map_err(|e| at_path(path, e))
}

fn read_file_at(path: &Path) -> Result<FileBuf> {
    let mut file = std::fs::File::open(path)?;
    not_a_directory(&file)?;
    let len = file.metadata()?.len();
    let mut buf = FileBuf::zeroed(len)?;
    let complete = file.read_exact(buf.as_mut_slice()).is_ok() && {
        let mut probe = [0u8; 1];
        matches!(file.read(&mut probe), Ok(0))
    };
    if complete {
        Ok(buf)
    } else {
        Ok(FileBuf(FileBufInner::Heap(read_limited_at(path)?)))
    }
}

/// Save bytes (a file of the common format in any form) atomically: temp file, fsync, rename.
pub fn save_bytes(path: impl AsRef<std::path::Path>, bytes: &[u8]) -> Result<()> {
    save_atomic(path.as_ref(), |w| Ok(w.write_all(bytes)?))
}

/// Save a structure in its compressed form, atomically.
pub fn save_compressed<P: Persist>(f: &P, path: impl AsRef<std::path::Path>) -> Result<()> {
    let (header, payload) = f.encode_parts();
    crate::io::compress::compress_parts_to(&header, &payload, path.as_ref())
}
