//! The header codec of the one file format: pure functions from bytes to a validated header
//! and back (no files, no maps, no compression). Persistence ([`crate::io::format`]) and the
//! compressed forms ([`crate::io::compress`]) are built on it.
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
//!               compressed and delta forms of [`crate::io::compress`]
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
//! Decoding checks everything and returns a typed [`FormatError`]: truncated input, bad magic,
//! unknown version, kind, hash or flags, checksum mismatch, non-zero padding, parameters that
//! contradict each other or the payload length. [`peek`] reads the header alone from the first
//! bytes of a file (what a caller receiving a file in pieces, or sniffing one, needs).
//!
//! **Compatibility promise:** a file written by any released version loads in every later one.
//! Version 1's layout and its hash mapping never change; golden files of each version live in
//! `tests/golden/` and are loaded by the test suite.

use std::io::{self, Write};

use crate::error::{inconsistent, FormatError, Result};
use crate::hash::{HashAlgorithm, KeyHasher, SeedKind};
pub use crate::kind::Kind;
use crate::store::Words;

/// File magic.
pub const MAGIC: [u8; 8] = *b"BLOOMERY";
pub use crate::version::FORMAT_VERSION;
/// Size of the fixed part of the header.
pub(crate) const FIXED_HEADER: usize = 72;
/// Largest header accepted (guards against absurd parameter lengths).
pub(crate) const MAX_HEADER: usize = 1 << 20;
/// Bytes of the checksum trailer.
pub(crate) const TRAILER: usize = 8;
/// Header flag: the payload is a compressed container holding the plain payload
/// ([`crate::io::compress`]). Every loader decompresses such a file transparently.
pub const FLAG_COMPRESSED: u16 = 0x0001;
/// Header flag: the file is a delta from a base file to the file this header describes
/// ([`crate::io::compress::patch_file`]); it is not a filter and does not load as one.
pub const FLAG_DELTA: u16 = 0x0002;

/// The decoded common header.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{BlockedBloomFilter, Filter, Kind, Persist};
///
/// let mut f = BlockedBloomFilter::try_new(1000, 0.01)?;
/// f.insert("a");
/// let h = bloomery::file::peek_header_bytes(&f.to_bytes())?.header;
/// assert_eq!((h.kind.rust_type(), h.items, h.capacity), (Kind::Blocked, 1, 1000));
/// assert_eq!(h.version, bloomery::file::FORMAT_VERSION);
/// # Ok(()) }
/// ```
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

    pub(crate) fn encoded_len(&self) -> usize {
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
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{BloomFilter, Persist, Verify};
///
/// let bytes = BloomFilter::try_new(1000, 0.01)?.to_bytes();
/// let d = bloomery::file::decode_header(&bytes, Verify::Checksum)?;
/// assert_eq!(d.payload_offset % 64, 0); // the payload is 64-byte aligned
/// assert!(d.payload_offset + d.payload_len < bytes.len()); // then the checksum trailer
/// # Ok(()) }
/// ```
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
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{BloomFilter, Persist, Verify};
///
/// let mut bytes = BloomFilter::try_new(1000, 0.01)?.to_bytes();
/// let at = bytes.len() - 20;
/// bytes[at] ^= 1; // a flipped payload bit
/// assert!(bloomery::file::decode_header(&bytes, Verify::Checksum).is_err());
/// assert!(bloomery::file::decode_header(&bytes, Verify::HeaderOnly).is_ok()); // trusts the payload
/// # Ok(()) }
/// ```
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
/// files are decompressed by the loaders ([`crate::Persist::from_bytes`], [`crate::AnyFilter`]) before
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
    Kind::from_id(kind_id).ok_or(FormatError::UnknownKind(kind_id))?;
    let h = u32::from_le_bytes(rd(bytes, 12)) as usize;
    let p = u64::from_le_bytes(rd(bytes, 16));
    let params_len = u32::from_le_bytes(rd(bytes, 28)) as usize;
    check_lengths(h, p, params_len)?;
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
    let (header, flags) = decode_fields(bytes, h)?;
    Ok((
        Decoded {
            header,
            payload_offset: h,
            payload_len: p as usize,
        },
        flags,
    ))
}

/// The header-length, payload-length and parameter-length rules.
fn check_lengths(h: usize, p: u64, params_len: usize) -> Result<(), FormatError> {
    if !h.is_multiple_of(64) || !(FIXED_HEADER..=MAX_HEADER).contains(&h) {
        return Err(FormatError::Inconsistent(format!("header length {h}")));
    }
    if FIXED_HEADER + params_len > h {
        return Err(FormatError::Inconsistent(format!(
            "parameter length {params_len} exceeds header length {h}"
        )));
    }
    if !p.is_multiple_of(64) {
        return Err(FormatError::Inconsistent(format!(
            "payload length {p} is not a multiple of 64"
        )));
    }
    Ok(())
}

/// Decode and validate the header's fields from `bytes[..h]` (at least the fixed header; the
/// lengths are re-checked here so `peek` and `decode` apply the same rules in the same order).
fn decode_fields(bytes: &[u8], h: usize) -> Result<(Header, u16), FormatError> {
    let version = u16::from_le_bytes(rd(bytes, 8));
    if version == 0 || version > FORMAT_VERSION {
        return Err(FormatError::UnknownVersion(version));
    }
    let kind_id = u16::from_le_bytes(rd(bytes, 10));
    let kind = Kind::from_id(kind_id).ok_or(FormatError::UnknownKind(kind_id))?;
    let p = u64::from_le_bytes(rd(bytes, 16));
    let algo_id = bytes[24];
    let seed_kind_id = bytes[25];
    let flags = u16::from_le_bytes(rd(bytes, 26));
    let params_len = u32::from_le_bytes(rd(bytes, 28)) as usize;
    check_lengths(u32::from_le_bytes(rd(bytes, 12)) as usize, p, params_len)?;
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
        Header {
            version,
            kind,
            hasher,
            items,
            capacity,
            target_fpr,
            params,
        },
        flags,
    ))
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

/// Append the bytes `[start, start + len)` of the complete file [`write()`] produces (clipped
/// at its end; nothing at or past it) to `out`, without encoding the rest: the header is encoded, the payload's
/// bytes are copied from the word arrays that hold them, and the trailing checksum, when the
/// range reaches it, is computed by one reading pass over the arrays. A chunk of a large
/// structure costs its own length (plus that pass for the last chunk), not the structure's.
pub fn encode_range(
    header: &Header,
    payload: &Payload<'_>,
    start: u64,
    len: usize,
    out: &mut Vec<u8>,
) {
    let head = header.encode(payload.len());
    let total = head.len() as u64 + payload.len() + TRAILER as u64;
    let end = start.saturating_add(len as u64).min(total);
    if start >= end {
        return;
    }
    out.reserve((end - start) as usize);
    // each segment of the file in order, with its offset: copy the part of it in the range
    let mut at = 0u64;
    let mut take =
        |seg_len: u64, out: &mut Vec<u8>, copy: &mut dyn FnMut(u64, u64, &mut Vec<u8>)| {
            let (a, b) = (start.max(at), end.min(at + seg_len));
            if a < b {
                copy(a - at, b - at, out);
            }
            at += seg_len;
        };
    take(head.len() as u64, out, &mut |a, b, out| {
        out.extend_from_slice(&head[a as usize..b as usize]);
    });
    for part in &payload.parts {
        let words = part.len() as u64 * 8;
        take(padded_len(part.len()), out, &mut |a, b, out| {
            let (wa, wb) = (a.min(words), b.min(words));
            if wa < wb {
                part.le_range(wa as usize, wb as usize, out);
            }
            out.resize(out.len() + (b - a - (wb - wa)) as usize, 0);
        });
    }
    take(TRAILER as u64, out, &mut |a, b, out| {
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        hasher.update(&head);
        let zeros = [0u8; 64];
        for part in &payload.parts {
            let _ = part.write_le(|b| {
                hasher.update(b);
                Ok::<(), ()>(())
            });
            hasher.update(&zeros[..(padded_len(part.len()) - part.len() as u64 * 8) as usize]);
        }
        out.extend_from_slice(&hasher.digest().to_le_bytes()[a as usize..b as usize]);
    });
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
    /// Whether every byte was read.
    pub fn is_done(&self) -> bool {
        self.at == self.b.len()
    }
    /// Fail unless every byte was read.
    pub fn finish(self) -> Result<()> {
        if self.at != self.b.len() {
            return Err(inconsistent("unexpected extra parameters"));
        }
        Ok(())
    }
}

/// A header read from the first bytes of a file by [`peek`]: the header and the lengths and
/// form the file announces.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{BloomFilter, Persist};
///
/// let f = BloomFilter::try_new(1000, 0.01)?;
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("f.bloom");
/// f.save(&path)?;
/// let head = bloomery::file::peek_file(&path)?; // reads only the first bytes
/// assert_eq!(head.file_len, std::fs::metadata(&path)?.len());
/// assert!(!head.compressed && !head.delta);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct FileHead {
    /// The validated header.
    pub header: Header,
    /// Bytes of the header (where the payload starts).
    pub header_len: u64,
    /// Bytes of the payload (for a compressed or delta file, of its container).
    pub payload_len: u64,
    /// Bytes of the whole file: header, payload and the 8-byte checksum trailer.
    pub file_len: u64,
    /// A compressed file ([`crate::compress`]): its structure loads decompressed.
    pub compressed: bool,
    /// A delta file ([`crate::compress::diff_files`]): not a structure.
    pub delta: bool,
}

/// Read and validate the header of a file from its first bytes: at least the header
/// ([`FileHead::header_len`] bytes; 72 are enough to learn that length). Everything the header
/// says is checked (magic, version, kind, lengths, hash, flags, parameters' length, padding);
/// the payload and the checksum are not (they need the whole file).
pub fn peek(bytes: &[u8]) -> Result<FileHead, FormatError> {
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
    let h = u32::from_le_bytes(rd(bytes, 12)) as usize;
    let p = u64::from_le_bytes(rd(bytes, 16));
    if h.is_multiple_of(64) && (FIXED_HEADER..=MAX_HEADER).contains(&h) && bytes.len() < h {
        return Err(FormatError::Truncated {
            needed: h as u64,
            have,
        });
    }
    let (header, flags) = decode_fields(bytes, bytes.len().min(h))?;
    let file_len = (h as u64)
        .checked_add(p)
        .and_then(|x| x.checked_add(TRAILER as u64))
        .ok_or_else(|| FormatError::Inconsistent("payload length overflows".into()))?;
    Ok(FileHead {
        header,
        header_len: h as u64,
        payload_len: p,
        file_len,
        compressed: flags == FLAG_COMPRESSED,
        delta: flags == FLAG_DELTA,
    })
}

/// Fail with [`FormatError::WrongKind`] unless the decoded kind is `want` or one of `also`.
pub fn check_kind(d: &Decoded, want: Kind, also: &[Kind]) -> Result<()> {
    let found = d.header.kind;
    if found.rust_type() != want.rust_type() && !also.contains(&found) {
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

/// Bytes one step of a streaming pass reads (and a map then drops from the process's memory).
pub const PASS_CHUNK: usize = 8 << 20;

/// The xxh3-64 of `bytes`, read in [`PASS_CHUNK`] steps: `ahead(offset, len)` is told the
/// next step before each step is read (to start reading it in), `release(offset, len)` each
/// step once it is hashed (to drop its pages), and `progress` the bytes done after each step.
/// The file checksum (xxh3-64, seed 0) computed a piece at a time, with the CPU's widest
/// vector unit (AVX2 where the CPU has it, chosen at run time): the streaming passes over big
/// files hash at memory speed. Gives exactly `xxhash_rust::xxh3::xxh3_64` of the bytes fed.
pub(crate) struct StreamHash(twox_hash::XxHash3_64);

impl StreamHash {
    pub(crate) fn new() -> Self {
        Self(twox_hash::XxHash3_64::with_seed(0))
    }

    pub(crate) fn update(&mut self, bytes: &[u8]) {
        std::hash::Hasher::write(&mut self.0, bytes);
    }

    pub(crate) fn digest(&self) -> u64 {
        std::hash::Hasher::finish(&self.0)
    }
}

pub(crate) fn stream_checksum(
    bytes: &[u8],
    mut ahead: impl FnMut(usize, usize),
    mut release: impl FnMut(usize, usize),
    progress: &mut dyn FnMut(u64),
) -> u64 {
    let mut h = StreamHash::new();
    let len = bytes.len();
    let mut at = 0;
    while at < len {
        let n = PASS_CHUNK.min(len - at);
        ahead(at + n, PASS_CHUNK.min(len - at - n));
        h.update(&bytes[at..at + n]);
        release(at, n);
        at += n;
        progress(at as u64);
    }
    h.digest()
}
