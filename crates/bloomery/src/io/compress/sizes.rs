//! Plain and compressed sizes of a file, measured (a compressed file's stream decoded into
//! its plain checksum, never into memory) or predicted from the entropy bound.

use super::bits::{decode_into, entropy_of};
use super::container::{
    check_packed, compress_file, decode_plain, is_packed, le64, payload_of, plain_bytes,
    plain_total, Packed, AT_FLAGS, AT_PAYLOAD_LEN, PACK_FIXED,
};
use super::model::HEADER_BYTES;
use super::words::count_ones_m;
use crate::error::{invalid, Error, FormatError, Result};
use crate::io::header as format;
use crate::store;

/// The words of a plain payload, given as the decoder yields them (the non-zero ones, in
/// increasing order), hashed in order with the zero words between them: a checksum of the
/// payload without holding it.
pub(super) struct WordHasher {
    pub(super) h: xxhash_rust::xxh3::Xxh3,
    pub(super) buf: Vec<u8>,
    pub(super) filled: usize,
    /// The index of the next word to hash.
    pub(super) next: usize,
}

impl WordHasher {
    pub(super) fn new(head: &[u8]) -> Self {
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        h.update(head);
        Self {
            h,
            buf: vec![0; 1 << 16],
            filled: 0,
            next: 0,
        }
    }

    pub(super) fn flush_if_full(&mut self) {
        if self.filled == self.buf.len() {
            self.h.update(&self.buf);
            self.filled = 0;
        }
    }

    /// Zero words up to index `end` (exclusive).
    pub(super) fn zeros_to(&mut self, end: usize) {
        while self.next < end {
            self.flush_if_full();
            let n = ((self.buf.len() - self.filled) / 8).min(end - self.next);
            self.buf[self.filled..self.filled + 8 * n].fill(0);
            self.filled += 8 * n;
            self.next += n;
        }
    }

    pub(super) fn word(&mut self, i: usize, w: u64) {
        self.zeros_to(i);
        self.flush_if_full();
        self.buf[self.filled..self.filled + 8].copy_from_slice(&w.to_le_bytes());
        self.filled += 8;
        self.next = i + 1;
    }

    pub(super) fn digest(mut self, words: usize) -> u64 {
        self.zeros_to(words);
        self.h.update(&self.buf[..self.filled]);
        self.h.digest()
    }
}

/// Verify a checked compressed file's plain checksum as [`rebuild`] does, decoding the stream
/// into a running hash instead of a buffer: the plain payload is never held.
pub(super) fn verify_streamed(p: &Packed<'_>) -> Result<()> {
    let mut head = p.header.to_vec();
    head[AT_PAYLOAD_LEN..AT_PAYLOAD_LEN + 8].copy_from_slice(&p.plain_len.to_le_bytes());
    head[AT_FLAGS..AT_FLAGS + 2].copy_from_slice(&0u16.to_le_bytes());
    let mut hasher = WordHasher::new(&head);
    decode_into(&p.stream, &mut |i, w| hasher.word(i, w))?;
    let words = usize::try_from(p.plain_len / 8)
        .map_err(|_| invalid("payload", "too large for this platform"))?;
    let got = hasher.digest(words);
    if got != p.plain_sum {
        return Err(Error::Format(FormatError::ChecksumMismatch {
            stored: p.plain_sum,
            computed: got,
        }));
    }
    Ok(())
}

/// Sizes of a file in its plain and compressed forms, and the entropy bound of its payload.
///
/// ```
/// use bloomery::{compress, BloomFilter, Filter, Persist};
///
/// # fn main() -> bloomery::Result<()> {
/// let mut f = BloomFilter::try_new(100_000, 0.01)?;
/// f.insert("only key"); // a nearly empty filter compresses well
/// let sizes = compress::packed_sizes(&f.to_bytes(), true)?;
/// assert!(sizes.exact && sizes.compressed_bytes < sizes.plain_bytes / 10);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PackedSizes {
    /// True if the file examined was compressed.
    pub compressed_input: bool,
    /// False when the compressed sizes are predicted from the entropy bound, not measured.
    pub exact: bool,
    /// Bytes of the plain file.
    pub plain_bytes: u64,
    /// Bytes of the compressed file.
    pub compressed_bytes: u64,
    /// Bytes of the compressed payload stream alone (no headers).
    pub stream_bytes: u64,
    /// `m · H(p)` of the plain payload, in bits (p its fraction of zero bits, m its bits).
    pub entropy_bits: f64,
}

impl PackedSizes {
    /// The compressed stream against the entropy bound (`8 · stream_bytes / (m·H(p))`; 0 when
    /// the bound is 0).
    pub fn ratio_to_entropy(&self) -> f64 {
        if self.entropy_bits > 0.0 {
            self.stream_bytes as f64 * 8.0 / self.entropy_bits
        } else {
            0.0
        }
    }
}

/// Plain and compressed sizes of a file in either form. With `exact`, a plain file is
/// compressed to measure its compressed form; without, the compressed sizes of a plain file
/// are predicted from the entropy bound (the coder's stream is `⌈m·H(p)/8⌉` bytes plus its
/// 22-byte fixed cost, to within 0.01 %: see the module docs), which costs one pass of
/// popcounts instead of a compression. A compressed file is always measured exactly, and
/// both its checksums verified, without decompressing it into memory (its stream is decoded
/// into the plain checksum; the entropy comes from the stream's count of one bits).
pub fn packed_sizes(bytes: &[u8], exact: bool) -> Result<PackedSizes> {
    let compressed_input = is_packed(bytes);
    if compressed_input {
        let p = check_packed(bytes, store::max_bytes())?;
        verify_streamed(&p)?;
        let (m, ones) = (p.stream.m, p.stream.ones);
        let entropy = if m == 0 {
            0.0
        } else {
            m as f64 * crate::params::entropy((m - ones) as f64 / m as f64)
        };
        let (pd, _) = format::decode_with_flags(bytes, format::Verify::HeaderOnly)?;
        return Ok(PackedSizes {
            compressed_input,
            exact: true,
            plain_bytes: plain_total(&p)? as u64,
            compressed_bytes: bytes.len() as u64,
            stream_bytes: le64(bytes, pd.payload_offset + 16),
            entropy_bits: entropy,
        });
    }
    let plain = plain_bytes(bytes)?;
    let plain = plain.bytes();
    let d = decode_plain(plain)?;
    let words = payload_of(plain, &d);
    let m = d.payload_len as u64 * 8;
    let entropy = entropy_of(&words, m)?;
    let (compressed_bytes, stream_bytes) = if compressed_input || exact {
        let packed = if compressed_input {
            std::borrow::Cow::Borrowed(bytes)
        } else {
            std::borrow::Cow::Owned(compress_file(bytes)?)
        };
        let (pd, _) = format::decode_with_flags(&packed, format::Verify::HeaderOnly)?;
        (packed.len() as u64, le64(&packed, pd.payload_offset + 16))
    } else {
        let p = predicted_sizes(
            d.payload_offset as u64,
            d.payload_len as u64,
            count_ones_m(&words, m),
        );
        (p.compressed_bytes, p.stream_bytes)
    };
    Ok(PackedSizes {
        compressed_input,
        exact: compressed_input || exact,
        plain_bytes: plain.len() as u64,
        compressed_bytes,
        stream_bytes,
        entropy_bits: entropy,
    })
}

/// The sizes [`packed_sizes`] predicts for a plain file (not measured: `exact` is false) from
/// its header and payload lengths and the number of one bits in its payload, with no pass
/// over the payload: for callers that already counted the bits (`bloomery info` on a mapped
/// file). Equal to `packed_sizes(file, false)` for the file they describe.
pub fn predicted_sizes(header_len: u64, payload_len: u64, ones: u64) -> PackedSizes {
    let m = payload_len * 8;
    let ones = ones.min(m);
    let entropy = if m == 0 {
        0.0
    } else {
        m as f64 * crate::params::entropy((m - ones) as f64 / m as f64)
    };
    let stream = if ones == 0 || ones == m {
        HEADER_BYTES as u64
    } else {
        (entropy / 8.0).ceil() as u64 + HEADER_BYTES as u64 + 5
    };
    let container = (PACK_FIXED as u64 + stream).div_ceil(64) * 64;
    PackedSizes {
        compressed_input: false,
        exact: false,
        plain_bytes: header_len + payload_len + 8,
        compressed_bytes: header_len + container + 8,
        stream_bytes: stream,
        entropy_bits: entropy,
    }
}
