//! The one file format: versioned, little-endian, checksummed, mmap-able.
//!
//! Every structure saves as
//!
//! ```text
//! offset  size  field
//! 0       8     magic  "BLOOMERY"
//! 8       2     format version (this build writes 1, reads 1..=FORMAT_VERSION)
//! 10      2     structure kind (see [`Kind`])
//! 12      4     header length H (a multiple of 64, so the payload is 64-byte aligned)
//! 16      8     payload length P (a multiple of 64)
//! 24      1     hash algorithm ([`crate::hash::HashAlgorithm`] id)
//! 25      1     seed kind (default / user / keyed)
//! 26      2     flags: 0 for a plain file; [`FLAG_COMPRESSED`] or [`FLAG_DELTA`] for the
//!               compressed and delta forms of [`crate::io::compress`] (issue 6)
//! 28      4     length of the kind-specific parameters
//! 32      16    seed (xxh3: low 8 bytes; keyed: the 128-bit secret)
//! 48      8     item count
//! 56      8     capacity the structure was sized for (0: not sized for one)
//! 64      8     target false-positive rate, f64 (0: none)
//! 72      ..    kind-specific parameters, then zero padding up to H
//! H       P     payload: the structure's words, little-endian
//! H+P     8     checksum: xxh3-64 of bytes [0, H+P)
//! ```
//!
//! Loading checks everything and returns a typed [`FormatError`]: truncated input, bad magic,
//! unknown version, kind, hash or flags, checksum mismatch, non-zero padding, parameters that
//! contradict each other or the payload length. The payload is 64-byte aligned in the file, so
//! [`Persist::open_mmap`] can use the words in place: a filter larger than RAM can be queried.
//!
//! Saves are atomic ([`save_atomic`]): the bytes go to a temporary file in the same directory,
//! which is flushed to disk and renamed over the target; the directory is then synced. A crash
//! at any point leaves either the old file or the new one, never a mix.
//!
//! **Compatibility promise:** a file written by any released version loads in every later one.
//! Version 1's layout and its hash mapping never change; golden files of each version live in
//! `tests/golden/` and are loaded by the test suite.

use std::io::{self, Read, Write};
use std::path::Path;
use std::sync::Arc;

use crate::error::{inconsistent, Error, FormatError, Result};
use crate::hash::{HashAlgorithm, KeyHasher, SeedKind};
pub use crate::kind::Kind;
use crate::store::Words;

/// File magic.
pub const MAGIC: [u8; 8] = *b"BLOOMERY";
/// The newest format version this build writes and reads.
pub const FORMAT_VERSION: u16 = 1;
/// Size of the fixed part of the header.
const FIXED_HEADER: usize = 72;
/// Largest header accepted (guards against absurd parameter lengths).
const MAX_HEADER: usize = 1 << 20;
/// Bytes of the checksum trailer.
const TRAILER: usize = 8;
/// Header flag: the payload is a compressed container holding the plain payload
/// ([`crate::io::compress`], issue 6). Every loader decompresses such a file transparently.
pub const FLAG_COMPRESSED: u16 = 0x0001;
/// Header flag: the file is a delta from a base file to the file this header describes
/// ([`crate::io::compress::patch_file`]); it is not a filter and does not load as one.
pub const FLAG_DELTA: u16 = 0x0002;

/// The decoded common header.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    /// Format version of the file.
    pub version: u16,
    /// Structure kind.
    pub kind: Kind,
    /// Hash algorithm and seed.
    pub hasher: KeyHasher,
    /// Items inserted (as the structure counts them).
    pub items: u64,
    /// Capacity the structure was sized for (0 if none).
    pub capacity: u64,
    /// Target false-positive rate (0 if none).
    pub target_fpr: f64,
    /// Kind-specific parameters.
    pub params: Vec<u8>,
}

impl Header {
    /// A version-1 header for a structure of `kind`.
    pub fn new(kind: Kind, hasher: KeyHasher) -> Self {
        Self {
            version: FORMAT_VERSION,
            kind,
            hasher,
            items: 0,
            capacity: 0,
            target_fpr: 0.0,
            params: Vec::new(),
        }
    }

    fn encoded_len(&self) -> usize {
        (FIXED_HEADER + self.params.len()).div_ceil(64) * 64
    }

    /// The header's bytes for a payload of `payload_len` bytes (flags 0).
    pub(crate) fn encode(&self, payload_len: u64) -> Vec<u8> {
        let h = self.encoded_len();
        let mut b = Vec::with_capacity(h);
        b.extend_from_slice(&MAGIC);
        b.extend_from_slice(&self.version.to_le_bytes());
        b.extend_from_slice(&self.kind.id().to_le_bytes());
        b.extend_from_slice(&(h as u32).to_le_bytes());
        b.extend_from_slice(&payload_len.to_le_bytes());
        b.push(self.hasher.algorithm().id());
        b.push(self.hasher.seed_kind() as u8);
        b.extend_from_slice(&0u16.to_le_bytes());
        b.extend_from_slice(&(self.params.len() as u32).to_le_bytes());
        b.extend_from_slice(&self.hasher.seed().to_le_bytes());
        b.extend_from_slice(&self.items.to_le_bytes());
        b.extend_from_slice(&self.capacity.to_le_bytes());
        b.extend_from_slice(&self.target_fpr.to_le_bytes());
        debug_assert_eq!(b.len(), FIXED_HEADER);
        b.extend_from_slice(&self.params);
        b.resize(h, 0);
        b
    }
}

/// A decoded file: the header and where the payload lies in the input.
#[derive(Debug, Clone)]
pub struct Decoded {
    /// The header.
    pub header: Header,
    /// Byte offset of the payload in the input.
    pub payload_offset: usize,
    /// Payload length in bytes.
    pub payload_len: usize,
}

/// How to treat the checksum on load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verify {
    /// Verify the checksum (reads every byte).
    Checksum,
    /// Trust the payload; still validate the header and every length. Use for huge mapped
    /// files whose integrity is known, to avoid reading them whole at open.
    HeaderOnly,
}

fn rd<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&b[at..at + N]);
    out
}

/// Decode and validate the common header and trailer of a plain file (flags 0). Compressed
/// files are decompressed by the loaders ([`Persist::from_bytes`], [`crate::AnyFilter`]) before
/// they get here; see [`crate::io::compress::plain_file`].
pub fn decode(bytes: &[u8], verify: Verify) -> Result<Decoded, FormatError> {
    let (d, flags) = decode_with_flags(bytes, verify)?;
    if flags != 0 {
        return Err(FormatError::Inconsistent(format!(
            "flags {flags:#06x}: a compressed or delta file, not a plain one (decompress it first)"
        )));
    }
    Ok(d)
}

/// [`decode`], also accepting the compressed and delta forms: returns the decoded header
/// (the payload is then the form's container) and the flags.
pub fn decode_with_flags(bytes: &[u8], verify: Verify) -> Result<(Decoded, u16), FormatError> {
    let have = bytes.len() as u64;
    if bytes.len() < 8 || bytes[..8] != MAGIC {
        if bytes.len() < 8 && MAGIC.starts_with(bytes) {
            return Err(FormatError::Truncated { needed: 8, have });
        }
        return Err(FormatError::BadMagic);
    }
    if bytes.len() < FIXED_HEADER {
        return Err(FormatError::Truncated {
            needed: FIXED_HEADER as u64,
            have,
        });
    }
    let version = u16::from_le_bytes(rd(bytes, 8));
    if version == 0 || version > FORMAT_VERSION {
        return Err(FormatError::UnknownVersion(version));
    }
    let kind_id = u16::from_le_bytes(rd(bytes, 10));
    let kind = Kind::from_id(kind_id).ok_or(FormatError::UnknownKind(kind_id))?;
    let h = u32::from_le_bytes(rd(bytes, 12)) as usize;
    let p = u64::from_le_bytes(rd(bytes, 16));
    let algo_id = bytes[24];
    let seed_kind_id = bytes[25];
    let flags = u16::from_le_bytes(rd(bytes, 26));
    let params_len = u32::from_le_bytes(rd(bytes, 28)) as usize;
    if h % 64 != 0 || !(FIXED_HEADER..=MAX_HEADER).contains(&h) {
        return Err(FormatError::Inconsistent(format!("header length {h}")));
    }
    if FIXED_HEADER + params_len > h {
        return Err(FormatError::Inconsistent(format!(
            "parameter length {params_len} exceeds header length {h}"
        )));
    }
    if p % 64 != 0 {
        return Err(FormatError::Inconsistent(format!(
            "payload length {p} is not a multiple of 64"
        )));
    }
    let total = (h as u64)
        .checked_add(p)
        .and_then(|x| x.checked_add(TRAILER as u64))
        .ok_or_else(|| FormatError::Inconsistent("payload length overflows".into()))?;
    if have < total {
        return Err(FormatError::Truncated {
            needed: total,
            have,
        });
    }
    if have > total {
        return Err(FormatError::TrailingData {
            extra: have - total,
        });
    }
    let body = total as usize - TRAILER;
    let stored = u64::from_le_bytes(rd(bytes, body));
    if verify == Verify::Checksum {
        let computed = xxhash_rust::xxh3::xxh3_64(&bytes[..body]);
        if computed != stored {
            return Err(FormatError::ChecksumMismatch { stored, computed });
        }
    }
    if !matches!(flags, 0 | FLAG_COMPRESSED | FLAG_DELTA) {
        return Err(FormatError::Inconsistent(format!(
            "unknown flags {flags:#06x}"
        )));
    }
    let algorithm = HashAlgorithm::from_id(algo_id).ok_or(FormatError::UnknownHash(algo_id))?;
    let seed_kind = SeedKind::from_id(seed_kind_id)
        .ok_or_else(|| FormatError::Inconsistent(format!("seed kind {seed_kind_id}")))?;
    let seed = u128::from_le_bytes(rd(bytes, 32));
    let hasher = KeyHasher::from_parts(algorithm, seed_kind, seed)
        .map_err(|e| FormatError::Inconsistent(e.to_string()))?;
    let items = u64::from_le_bytes(rd(bytes, 48));
    let capacity = u64::from_le_bytes(rd(bytes, 56));
    let target_fpr = f64::from_le_bytes(rd(bytes, 64));
    if !(target_fpr == 0.0 || (target_fpr > 0.0 && target_fpr < 1.0)) {
        return Err(FormatError::Inconsistent(format!(
            "target false-positive rate {target_fpr}"
        )));
    }
    let params = bytes[FIXED_HEADER..FIXED_HEADER + params_len].to_vec();
    if bytes[FIXED_HEADER + params_len..h].iter().any(|&b| b != 0) {
        return Err(FormatError::Inconsistent("non-zero header padding".into()));
    }
    Ok((
        Decoded {
            header: Header {
                version,
                kind,
                hasher,
                items,
                capacity,
                target_fpr,
                params,
            },
            payload_offset: h,
            payload_len: p as usize,
        },
        flags,
    ))
}

/// Read just the header of a file (cheap: no checksum, no payload). For a compressed file
/// this is the header of the plain file it holds.
pub fn read_header(path: impl AsRef<Path>) -> Result<Header> {
    let map = map_file(path.as_ref())?;
    Ok(decode_with_flags(&map, Verify::HeaderOnly)?.0.header)
}

/// A writer that checksums what passes through it.
struct Checksummed<W> {
    inner: W,
    hasher: xxhash_rust::xxh3::Xxh3,
}

impl<W: Write> Checksummed<W> {
    fn put(&mut self, b: &[u8]) -> io::Result<()> {
        self.hasher.update(b);
        self.inner.write_all(b)
    }
}

/// What a structure writes as payload: one or more word arrays, concatenated, each padded to
/// a multiple of 64 bytes.
pub struct Payload<'a> {
    parts: Vec<&'a Words>,
}

impl<'a> Payload<'a> {
    /// A payload of word arrays in order.
    pub fn new(parts: Vec<&'a Words>) -> Self {
        Self { parts }
    }

    /// The word arrays, in order.
    pub(crate) fn parts(&self) -> &[&'a Words] {
        &self.parts
    }

    /// Encoded length in bytes.
    pub fn len(&self) -> u64 {
        self.parts.iter().map(|w| padded_len(w.len())).sum()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Bytes a word array takes in the payload (rounded up to 64). Saturates instead of
/// overflowing for absurd word counts declared by a malformed file.
pub fn padded_len(words: usize) -> u64 {
    (words as u64).div_ceil(8).saturating_mul(64)
}

/// Write a complete file (header, payload, checksum) to `w`.
pub fn write(header: &Header, payload: &Payload<'_>, w: impl Write) -> Result<()> {
    let mut c = Checksummed {
        inner: w,
        hasher: xxhash_rust::xxh3::Xxh3::new(),
    };
    c.put(&header.encode(payload.len()))?;
    let zeros = [0u8; 64];
    for part in &payload.parts {
        part.write_le(|b| c.put(b))?;
        let pad = (padded_len(part.len()) - part.len() as u64 * 8) as usize;
        c.put(&zeros[..pad])?;
    }
    let sum = c.hasher.digest();
    c.inner.write_all(&sum.to_le_bytes())?;
    c.inner.flush()?;
    Ok(())
}

/// Write a file atomically: temp file in the same directory, fsync, rename, fsync directory.
pub fn save_atomic(path: &Path, write_fn: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".bloomery-")
        .suffix(".tmp")
        .tempfile_in(&dir)?;
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
    tmp.persist(path).map_err(|e| Error::Io(e.error))?;
    sync_dir(path);
    Ok(())
}

/// Make a rename into `path`'s directory durable (fsync the directory; best effort).
pub(crate) fn sync_dir(path: &Path) {
    #[cfg(unix)]
    {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}

/// Memory-map a file read-only.
pub fn map_file(path: &Path) -> Result<Arc<memmap2::Mmap>> {
    let file = std::fs::File::open(path)?;
    // SAFETY: the map is read-only. If another process truncates or rewrites the file while it
    // is mapped, reads may see changed bytes or fault (SIGBUS); bloomery itself never writes a
    // file in place (saves go through a rename), so files it manages are not modified under a
    // live map. This is the documented contract of `open_mmap`.
    let map = unsafe { memmap2::Mmap::map(&file)? };
    Ok(Arc::new(map))
}

/// Where a decoded structure's words come from.
#[derive(Clone, Copy)]
pub enum Source<'a> {
    /// Copy out of borrowed bytes.
    Bytes(&'a [u8]),
    /// Map in place (zero-copy).
    Mapped(&'a Arc<memmap2::Mmap>),
    /// Map in place, writable: a copy of a file being updated ([`crate::FileUpdate`]).
    Shared(&'a Arc<crate::store::SharedMap>),
}

impl Source<'_> {
    /// All bytes.
    pub fn bytes(&self) -> &[u8] {
        match self {
            Source::Bytes(b) => b,
            Source::Mapped(m) => m,
            // SAFETY: the whole map is readable; while a structure is decoded from it nothing
            // writes it (the update hands the map to one decoder at a time, before any write).
            Source::Shared(m) => unsafe { std::slice::from_raw_parts(m.ptr(), m.len()) },
        }
    }

    /// The `words` words at byte `offset`, copied or mapped.
    pub fn words(&self, offset: usize, words: usize, limit: u64) -> Result<Words> {
        match self {
            Source::Bytes(b) => {
                let end = offset
                    .checked_add(words.saturating_mul(8))
                    .filter(|&e| e <= b.len())
                    .ok_or_else(|| inconsistent("words beyond end of payload"))?;
                Words::from_le_bytes(&b[offset..end], limit)
            }
            Source::Mapped(m) => Words::mapped(Arc::clone(m), offset, words, limit),
            Source::Shared(m) => Words::shared(m, offset, words, limit),
        }
    }
}

/// Little-endian encoder for kind-specific parameters.
#[derive(Default)]
pub struct ParamWriter(Vec<u8>);

impl ParamWriter {
    /// Empty.
    pub fn new() -> Self {
        Self::default()
    }
    /// Append a u8.
    pub fn u8(mut self, v: u8) -> Self {
        self.0.push(v);
        self
    }
    /// Append a u32.
    pub fn u32(mut self, v: u32) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// Append a u64.
    pub fn u64(mut self, v: u64) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// Append an f64.
    pub fn f64(mut self, v: f64) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// The bytes.
    pub fn finish(self) -> Vec<u8> {
        self.0
    }
}

/// Little-endian decoder for kind-specific parameters, with typed errors.
pub struct ParamReader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> ParamReader<'a> {
    /// Read from `b`.
    pub fn new(b: &'a [u8]) -> Self {
        Self { b, at: 0 }
    }
    fn take<const N: usize>(&mut self) -> Result<[u8; N]> {
        if self.at + N > self.b.len() {
            return Err(inconsistent("parameters too short"));
        }
        let out = rd(self.b, self.at);
        self.at += N;
        Ok(out)
    }
    /// Next u8.
    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.take::<1>()?[0])
    }
    /// Next u32.
    pub fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take()?))
    }
    /// Next u64.
    pub fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take()?))
    }
    /// Next f64.
    pub fn f64(&mut self) -> Result<f64> {
        Ok(f64::from_le_bytes(self.take()?))
    }
    /// Fail unless every byte was read.
    pub fn finish(self) -> Result<()> {
        if self.at != self.b.len() {
            return Err(inconsistent("unexpected extra parameters"));
        }
        Ok(())
    }
}

/// Save, load and map: implemented by every structure on top of [`encode_parts`] and
/// [`decode_from`].
///
/// [`encode_parts`]: Persist::encode_parts
/// [`decode_from`]: Persist::decode_from
pub trait Persist: Sized {
    /// The structure's kind id.
    const KIND: Kind;

    /// The header (with kind-specific parameters) and payload to write.
    fn encode_parts(&self) -> (Header, Payload<'_>);

    /// Rebuild from a validated header and its payload source (`payload_offset` is where the
    /// payload starts in `src`). Must validate every kind-specific parameter.
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
        let bytes = crate::io::compress::plain_file(bytes)?;
        let d = decode(&bytes, Verify::Checksum)?;
        check_kind(&d, Self::KIND)?;
        Self::decode_from(&d, Source::Bytes(&bytes), crate::store::max_bytes())
    }

    /// Save atomically (temp file, fsync, rename).
    fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        save_atomic(path.as_ref(), |w| self.write_to(w))
    }

    /// Save atomically with [`SaveOptions`]: the compressed form, a progress report.
    fn save_with(&self, path: impl AsRef<Path>, opts: SaveOptions<'_>) -> Result<()> {
        save_encoded(self, path.as_ref(), opts)
    }

    /// Decode from a file opened with [`crate::MappedFile::open`]: the words are the file's
    /// pages, used in place (a compressed file is decompressed into memory). The checksum is
    /// not verified here: call [`crate::MappedFile::verify`] first for that guarantee.
    fn from_mapped(file: &crate::MappedFile) -> Result<Self> {
        if file.is_compressed() {
            return Self::from_bytes(file.bytes());
        }
        let d = file.decoded();
        check_kind(d, Self::KIND)?;
        Self::decode_from(d, Source::Mapped(file.map()), crate::store::max_bytes())
    }

    /// Decode from a file opened for an update ([`crate::FileUpdate`]): the words are the
    /// pages of the update's copy, and every change writes straight into it; seal it with
    /// [`crate::FileUpdate::commit`].
    fn from_update(up: &crate::FileUpdate) -> Result<Self> {
        let d = up.decoded();
        check_kind(d, Self::KIND)?;
        Self::decode_from(
            d,
            Source::Shared(up.shared_map()),
            crate::store::max_bytes(),
        )
    }

    /// Load a file into memory, verifying the checksum.
    fn load(path: impl AsRef<Path>) -> Result<Self> {
        Self::from_bytes(&read_file(path.as_ref())?)
    }

    /// Open a file through a read-only memory map: the words are used in place (zero-copy),
    /// so a filter larger than RAM can be queried. The checksum is verified if `verify` says
    /// so. Mutating a mapped structure first copies its words into memory.
    ///
    /// The file must not be modified by another process while mapped (bloomery's own saves
    /// replace files by rename, which is safe).
    fn open_mmap(path: impl AsRef<Path>, verify: Verify) -> Result<Self> {
        let file = crate::MappedFile::open(path)?;
        if verify == Verify::Checksum {
            file.verify(&mut |_| {})?;
        }
        Self::from_mapped(&file)
    }
}

/// Options of a save ([`Persist::save_with`], [`crate::AnyFilter::save_with`], ...).
#[derive(Default)]
#[non_exhaustive]
pub struct SaveOptions<'a> {
    /// Write the compressed form ([`crate::compress`]).
    pub compressed: bool,
    /// Told the bytes written so far, about every [`crate::PASS_CHUNK`] bytes (plain saves).
    pub progress: Option<crate::io::mapped::Progress<'a>>,
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
    pub fn progress(mut self, f: crate::io::mapped::Progress<'a>) -> Self {
        self.progress = Some(f);
        self
    }
}

/// Save any encodable structure with `opts` (atomic).
pub(crate) fn save_encoded<E: crate::io::mapped::Encode + ?Sized>(
    f: &E,
    path: &Path,
    opts: SaveOptions<'_>,
) -> Result<()> {
    if opts.compressed {
        let (header, payload) = f.encode_parts();
        let packed = crate::io::compress::compress_parts(&header, &payload)?;
        return save_atomic(path, |w| Ok(w.write_all(&packed)?));
    }
    match opts.progress {
        Some(p) => save_atomic(path, |w| crate::io::mapped::write_with_progress(f, w, p)),
        None => save_atomic(path, |w| {
            let (header, payload) = f.encode_parts();
            write(&header, &payload, w)
        }),
    }
}

/// Read a whole file, refusing files larger than the memory limit (plus header room) before
/// reading them.
pub fn read_limited(path: &Path) -> Result<Vec<u8>> {
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
pub struct FileBuf(FileBufInner);

enum FileBufInner {
    Heap(Vec<u8>),
    Anon(memmap2::MmapMut),
}

impl FileBuf {
    /// `len` zero bytes to read a file of that length into (refused beyond the memory limit).
    pub fn zeroed(len: u64) -> Result<Self> {
        check_file_size(len)?;
        let len = usize::try_from(len).map_err(|_| Error::TooLarge {
            requested: len,
            limit: crate::store::max_bytes(),
        })?;
        if len < crate::store::ANON_THRESHOLD_BYTES {
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
pub fn read_file(path: &Path) -> Result<FileBuf> {
    let mut file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    let mut buf = FileBuf::zeroed(len)?;
    let complete = file.read_exact(buf.as_mut_slice()).is_ok() && {
        let mut probe = [0u8; 1];
        matches!(file.read(&mut probe), Ok(0))
    };
    if complete {
        Ok(buf)
    } else {
        Ok(FileBuf(FileBufInner::Heap(read_limited(path)?)))
    }
}

/// Fail with [`FormatError::WrongKind`] unless the decoded kind is `want`.
pub fn check_kind(d: &Decoded, want: Kind) -> Result<()> {
    if d.header.kind.rust_type() != want.rust_type() {
        return Err(FormatError::WrongKind {
            expected: want.name(),
            found: d.header.kind.name(),
        }
        .into());
    }
    Ok(())
}

/// Check the payload holds exactly `words` words (padded to 64 bytes).
pub fn check_payload(d: &Decoded, words: usize) -> Result<()> {
    if d.payload_len as u64 != padded_len(words) {
        return Err(inconsistent(format!(
            "payload is {} bytes, parameters need {}",
            d.payload_len,
            padded_len(words)
        )));
    }
    Ok(())
}
