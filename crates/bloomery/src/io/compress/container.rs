//! The compressed container of the common format: a plain file into its compressed form
//! and back, and the plain bytes every loader starts from.

use super::bits::{check_stream, compress_with, decode_into, Stream};
use super::coder::truncated;
use super::words::LeWords;
use crate::error::{inconsistent, invalid, Error, FormatError, Result};
use crate::io::header as format;
use crate::store;

/// Offset of the payload-length field in the common header.
pub(super) const AT_PAYLOAD_LEN: usize = 16;
/// Offset of the flags field in the common header.
pub(super) const AT_FLAGS: usize = 26;
/// Bytes of the compressed container's fixed part (plain payload length, plain checksum,
/// stream length).
pub(super) const PACK_FIXED: usize = 24;
/// Bytes of the delta container's fixed part (payload length, base and result checksums,
/// stream length).
pub(super) const DELTA_FIXED: usize = 32;

/// The flags of a file that passed the magic check, or 0 for anything shorter or without the
/// magic (such input then fails in the ordinary decoder with the ordinary error).
pub(super) fn raw_flags(bytes: &[u8]) -> u16 {
    if bytes.len() < 28 || bytes[..8] != format::MAGIC {
        return 0;
    }
    u16::from_le_bytes([bytes[AT_FLAGS], bytes[AT_FLAGS + 1]])
}

/// True if `bytes` look like a compressed file (magic and the compressed flag; nothing else is
/// checked). Cheap: reads the fixed header only.
pub fn is_packed(bytes: &[u8]) -> bool {
    raw_flags(bytes) == format::FLAG_COMPRESSED
}

/// True if `bytes` look like a delta file ([`diff_files`](super::diff_files)).
pub fn is_delta(bytes: &[u8]) -> bool {
    raw_flags(bytes) == format::FLAG_DELTA
}

pub(super) fn le64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// The payload of a decoded file, as words (no copy).
pub(super) fn payload_of<'a>(bytes: &'a [u8], d: &format::Decoded) -> LeWords<'a> {
    LeWords(&bytes[d.payload_offset..d.payload_offset + d.payload_len])
}

/// A file of the common format from a header (its bytes `[0, H)`, taken verbatim except for
/// the payload length and the flags), a payload, and a fresh checksum trailer. For the small
/// containers of compressed and delta files.
pub(super) fn assemble(header: &[u8], flags: u16, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(header.len() + payload.len() + 8);
    out.extend_from_slice(header);
    out[AT_PAYLOAD_LEN..AT_PAYLOAD_LEN + 8].copy_from_slice(&(payload.len() as u64).to_le_bytes());
    out[AT_FLAGS..AT_FLAGS + 2].copy_from_slice(&flags.to_le_bytes());
    out.extend_from_slice(payload);
    let sum = xxhash_rust::xxh3::xxh3_64(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// Pad a container to a multiple of 64 bytes (the payload rule of the common format).
pub(super) fn pad64(mut v: Vec<u8>) -> Vec<u8> {
    v.resize(v.len().div_ceil(64) * 64, 0);
    v
}

/// Validate a container's stream length field and its zero padding; returns the stream.
pub(super) fn container_stream(c: &[u8], fixed: usize) -> Result<&[u8]> {
    let len = le64(c, fixed - 8);
    let end = usize::try_from(len)
        .ok()
        .and_then(|l| l.checked_add(fixed))
        .filter(|&e| e <= c.len())
        .ok_or_else(|| inconsistent(format!("stream of {len} bytes overruns its container")))?;
    if c.len() - end >= 64 || c[end..].iter().any(|&b| b != 0) {
        return Err(inconsistent("bad container padding"));
    }
    Ok(&c[fixed..end])
}

/// Decode a plain file's header (checksum verified), refusing compressed or delta forms.
pub(super) fn decode_plain(bytes: &[u8]) -> Result<format::Decoded> {
    Ok(format::decode(bytes, format::Verify::Checksum)?)
}

/// Compress a plain file of any kind into its compressed form: the same header (flag
/// `FLAG_COMPRESSED`), a payload holding the range-coded plain payload and the plain
/// file's checksum, and a checksum trailer of its own.
///
/// ```text
/// compressed payload:  0  u64  plain payload length P (bytes)
///                      8  u64  the plain file's checksum (its trailer)
///                     16  u64  stream length L
///                     24  L    compressed-bits stream of the plain payload (m = 8·P bits)
///                     ..       zero padding to a multiple of 64
/// ```
/// A compressed input is returned as it is (after validation).
pub fn compress_file(bytes: &[u8]) -> Result<Vec<u8>> {
    if is_packed(bytes) {
        decompress_file(bytes, store::max_bytes())?;
        return Ok(bytes.to_vec());
    }
    let d = decode_plain(bytes)?;
    let m = d.payload_len as u64 * 8;
    let stream = compress_with(&payload_of(bytes, &d), m, None)?;
    let plain_sum = le64(bytes, bytes.len() - 8);
    let mut c = Vec::with_capacity(PACK_FIXED + stream.len() + 64);
    c.extend_from_slice(&(d.payload_len as u64).to_le_bytes());
    c.extend_from_slice(&plain_sum.to_le_bytes());
    c.extend_from_slice(&(stream.len() as u64).to_le_bytes());
    c.extend_from_slice(&stream);
    Ok(assemble(
        &bytes[..d.payload_offset],
        format::FLAG_COMPRESSED,
        &pad64(c),
    ))
}

/// A compressed file, validated up to its stream: what [`rebuild`] needs.
pub(super) struct Packed<'a> {
    /// The header bytes `[0, H)`.
    pub(super) header: &'a [u8],
    pub(super) plain_len: u64,
    pub(super) plain_sum: u64,
    pub(super) stream: Stream<'a>,
}

/// Refuse a compressed file (header `d`, decoded from `bytes`) whose declared plain payload
/// exceeds `limit_bytes`, from its header, its container's fields and its stream's header
/// alone: before the checksum pass over the file, which for a large file takes as long as
/// reading it. Only a well-formed container is judged by its size here (its lengths, padding
/// and stream header agree with the declared size): a damaged file, or a plain one whose flag
/// was damaged, is left to the checksum, whose error names the damage.
pub(crate) fn check_declared_plain(
    bytes: &[u8],
    d: &format::Decoded,
    limit_bytes: u64,
) -> Result<()> {
    let c = &bytes[d.payload_offset..d.payload_offset + d.payload_len];
    if c.len() < PACK_FIXED {
        return Ok(());
    }
    let plain_len = le64(c, 0);
    let well_formed = plain_len.is_multiple_of(64)
        && plain_len.checked_mul(8).is_some_and(|m| {
            container_stream(c, PACK_FIXED).is_ok_and(|s| check_stream(s, m).is_ok())
        });
    if well_formed {
        store::check_size(plain_len, limit_bytes)?;
    }
    Ok(())
}

/// Validate a compressed file (its checksum, container and stream header) against
/// `limit_bytes`, before anything of the plain payload's size is allocated (the declared
/// size first, before the checksum pass).
pub(super) fn check_packed(bytes: &[u8], limit_bytes: u64) -> Result<Packed<'_>> {
    let (d, flags) = format::decode_with_flags(bytes, format::Verify::HeaderOnly)?;
    if flags == format::FLAG_COMPRESSED {
        check_declared_plain(bytes, &d, limit_bytes)?;
    }
    let (d, flags) = format::decode_with_flags(bytes, format::Verify::Checksum)?;
    if flags != format::FLAG_COMPRESSED {
        return Err(delta_not_filter());
    }
    let c = &bytes[d.payload_offset..d.payload_offset + d.payload_len];
    if c.len() < PACK_FIXED {
        return Err(truncated(PACK_FIXED, c.len()));
    }
    let plain_len = le64(c, 0);
    let plain_sum = le64(c, 8);
    let stream = container_stream(c, PACK_FIXED)?;
    if !plain_len.is_multiple_of(64) {
        return Err(inconsistent(format!(
            "plain payload length {plain_len} is not a multiple of 64"
        )));
    }
    store::check_size(plain_len, limit_bytes)?;
    let m = plain_len
        .checked_mul(8)
        .ok_or_else(|| inconsistent("plain payload length overflows"))?;
    Ok(Packed {
        header: &bytes[..d.payload_offset],
        plain_len,
        plain_sum,
        stream: check_stream(stream, m)?,
    })
}

/// Rebuild the plain file of a checked compressed file into `out`, which is zero and exactly
/// `H + P + 8` bytes long (H the header, P the plain payload); verifies the plain checksum.
pub(super) fn rebuild(p: &Packed<'_>, out: &mut [u8]) -> Result<()> {
    let h = p.header.len();
    let payload_end = h + p.plain_len as usize;
    debug_assert_eq!(out.len(), payload_end + 8);
    out[..h].copy_from_slice(p.header);
    out[AT_PAYLOAD_LEN..AT_PAYLOAD_LEN + 8].copy_from_slice(&p.plain_len.to_le_bytes());
    out[AT_FLAGS..AT_FLAGS + 2].copy_from_slice(&0u16.to_le_bytes());
    {
        let payload = &mut out[h..payload_end];
        decode_into(&p.stream, &mut |i, w| {
            payload[8 * i..8 * i + 8].copy_from_slice(&w.to_le_bytes());
        })?;
    }
    let got = xxhash_rust::xxh3::xxh3_64(&out[..payload_end]);
    if got != p.plain_sum {
        return Err(Error::Format(FormatError::ChecksumMismatch {
            stored: p.plain_sum,
            computed: got,
        }));
    }
    out[payload_end..].copy_from_slice(&got.to_le_bytes());
    Ok(())
}

/// Bytes of the plain file a checked compressed file rebuilds to (header, payload, trailer).
pub(super) fn plain_total(p: &Packed<'_>) -> Result<usize> {
    (p.header.len() as u64)
        .checked_add(p.plain_len)
        .and_then(|x| x.checked_add(8))
        .and_then(|x| usize::try_from(x).ok())
        .ok_or_else(|| invalid("payload", "too large for this platform"))
}

/// `len` zero bytes on the heap, allocated fallibly (an [`Error::AllocationFailed`] instead
/// of an abort) and zeroed by the allocator: a large buffer comes as fresh zero pages that
/// cost no memory until written, as `vec![0; len]` would, so decoding a sparse payload into
/// it touches few pages.
pub(super) fn zeroed_vec(len: usize) -> Result<Vec<u8>> {
    if len == 0 {
        return Ok(Vec::new());
    }
    let layout = std::alloc::Layout::array::<u8>(len)
        .map_err(|_| Error::AllocationFailed { bytes: len as u64 })?;
    // SAFETY: `layout` has a non-zero size (len > 0, checked above).
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
    if ptr.is_null() {
        return Err(Error::AllocationFailed { bytes: len as u64 });
    }
    // SAFETY: `ptr` was allocated by the global allocator with the layout of `len` u8s
    // (alignment 1, size len), which is the layout a `Vec<u8>` of capacity `len` uses; all
    // `len` bytes are initialised (zeroed) and `len` ≤ the capacity `len`. The Vec takes sole
    // ownership of the allocation.
    Ok(unsafe { Vec::from_raw_parts(ptr, len, len) })
}

/// The plain file held by a compressed file, bit for bit: both checksums are verified (the
/// compressed file's trailer, then the rebuilt plain file against the checksum it stored).
/// A plain input is returned as it is (after validation).
///
/// Untrusted input: the stream is checked (mode, length) and the plain payload refused over
/// `limit_bytes` before anything of its size is allocated; the one allocation is the result
/// itself (fallible: an [`Error::AllocationFailed`], never an abort), and the stream is
/// decoded straight into it.
pub fn decompress_file(bytes: &[u8], limit_bytes: u64) -> Result<Vec<u8>> {
    if raw_flags(bytes) != format::FLAG_COMPRESSED {
        let (_, flags) = format::decode_with_flags(bytes, format::Verify::Checksum)?;
        if flags == 0 {
            return Ok(bytes.to_vec());
        }
        return Err(delta_not_filter());
    }
    let p = check_packed(bytes, limit_bytes)?;
    let mut out = zeroed_vec(plain_total(&p)?)?;
    rebuild(&p, &mut out)?;
    Ok(out)
}

pub(super) fn delta_not_filter() -> Error {
    Error::Unsupported(
        "this is a delta file, not a filter: apply it to its base with `patch`".into(),
    )
}

/// The bytes of a plain file: `bytes` itself when plain, the decompressed file when
/// compressed (both checksums verified, the plain payload limited to
/// [`store::max_bytes`]). A delta file is refused with [`Error::Unsupported`].
pub fn plain_file(bytes: &[u8]) -> Result<std::borrow::Cow<'_, [u8]>> {
    Ok(match plain_bytes(bytes)? {
        PlainBytes::Borrowed(b) => std::borrow::Cow::Borrowed(b),
        other => std::borrow::Cow::Owned(other.bytes().to_vec()),
    })
}

/// The plain file behind `bytes`, as the loaders use it: borrowed when plain; when
/// compressed, rebuilt into one buffer — on the heap when small, else in an anonymous map
/// that the structure's words then use in place, writable (see
/// [`format::Source::Shared`](crate::io::format::Source::Shared)), so loading a compressed
/// file holds its plain payload once, and so does updating it (an insert writes the map
/// rather than a copy of it).
pub(crate) enum PlainBytes<'a> {
    /// A plain input.
    Borrowed(&'a [u8]),
    /// A small rebuilt file.
    Heap(Vec<u8>),
    /// A large rebuilt file: process memory, private to this process (no file behind it, so
    /// nothing ever releases its pages).
    Mapped(std::sync::Arc<store::SharedMap>),
}

impl PlainBytes<'_> {
    /// The plain file's bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            PlainBytes::Borrowed(b) => b,
            PlainBytes::Heap(v) => v,
            // SAFETY: the whole map is initialised and readable; while the bytes are borrowed
            // from `self` no `Words` writes the map (one is made from it only through
            // `Source::from`, by a decoder, which reads the bytes before any insert writes them).
            PlainBytes::Mapped(m) => unsafe { std::slice::from_raw_parts(m.ptr(), m.len()) },
        }
    }
}

/// [`PlainBytes`] of `bytes`: what every loader calls first, so compressed files load
/// wherever plain ones do. A delta file is refused with [`Error::Unsupported`] (its header
/// validated first, so damage is reported as damage).
pub(crate) fn plain_bytes(bytes: &[u8]) -> Result<PlainBytes<'_>> {
    match raw_flags(bytes) {
        format::FLAG_COMPRESSED => {
            let p = check_packed(bytes, store::max_bytes())?;
            let total = plain_total(&p)?;
            if total < store::ANON_THRESHOLD_BYTES || !cfg!(feature = "mmap") {
                let mut out = zeroed_vec(total)?;
                rebuild(&p, &mut out)?;
                return Ok(PlainBytes::Heap(out));
            }
            // Zero pages cost nothing until written, so a sparse payload touches few of them
            // (no huge pages advised here: one bit would commit 2 MiB).
            let mut map =
                crate::map::MmapMut::map_anon(total).map_err(|_| Error::AllocationFailed {
                    bytes: total as u64,
                })?;
            rebuild(&p, &mut map)?;
            Ok(PlainBytes::Mapped(std::sync::Arc::new(
                store::SharedMap::new(map),
            )))
        }
        format::FLAG_DELTA => {
            format::decode_with_flags(bytes, format::Verify::Checksum)?;
            Err(delta_not_filter())
        }
        _ => Ok(PlainBytes::Borrowed(bytes)),
    }
}
