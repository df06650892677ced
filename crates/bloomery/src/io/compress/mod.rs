//! Compressed Bloom filters and delta updates (Broder & Mitzenmacher §2.6, Mitzenmacher).
//!
//! A filter's bit array with a fraction `p` of zero bits carries only `m · H(p)` bits of
//! information; a sparse filter (large m, few hashes) therefore compresses well, and for a fixed
//! number of *transmitted* bits it can have a lower false-positive rate than the best
//! uncompressed filter (Table 1 of 002; see [`crate::params::compressed_shape`]).
//!
//! This module is a pure library layer over raw words (bit `i` is bit `i % 64` of word
//! `i / 64`, as in [`crate::BloomFilter::as_words`]):
//! - [`compress_bits`] / [`decompress_bits`]: a binary arithmetic (range) coder with a *static*
//!   model, the fraction of zero bits of the array. The header stores m and the exact
//!   number of one bits; the coding probabilities are derived from them in integer arithmetic
//!   (32-bit fixed point), so encoder and decoder agree bit for bit. Three stream forms, chosen
//!   by density (see `Mode`): arrays near half full are *stored* (H(p) ≥ 0.999, so storing is
//!   within 0.1 % of the bound, at memory speed); sparse (or dense) arrays, minority fraction
//!   below 1/4, are coded as *gaps* between minority bits with the exact geometric model of
//!   i.i.d. bits (a unary count of 2^r-bit blocks, then r remainder bits, each decision with
//!   its own static probability), which costs the same m·H(p) but about log2(1/q) + 2 coder
//!   decisions per minority bit instead of one per bit; the rest is coded one decision per bit
//!   (the first version's stream, tag 0xB1, which stays decodable for every density).
//! - [`diff`] / [`patch`]: the XOR of two versions of an array, compressed the same way (a delta
//!   is sparse, `p` close to 1), tagged with xxh3-64 fingerprints of the base and of the result,
//!   so a delta applied to the wrong base is refused and a damaged delta is detected.
//!
//! ## Stream layout (all integers little-endian)
//! ```text
//! compressed bits:  0  u8   tag: 0xB0 stored, 0xB1 one decision per bit, 0xB2 gaps
//!                   1  u64  m
//!                   9  u64  ones (number of one bits among the m)
//!                  17  ..   payload: 0xB0 the ⌈m/8⌉ bytes of the array; 0xB1 and 0xB2
//!                           range-coded (empty, tag 0xB1, if ones = 0 or ones = m)
//! delta:            0  u8   tag 0xD1
//!                   1  u64  xxh3-64 of the base's m bits
//!                   9  u64  xxh3-64 of the result's m bits
//!                  17  ..   a compressed-bits stream of `old XOR new`
//! ```
//! A coded payload carries 5 bytes of fixed overhead (a leading zero byte and the flush); with
//! the 17-byte header the fixed cost is 22 bytes. Measured on real filters of 1.2–4.8 million bits
//! the payload is within 0.005 % of `m · H(p)` (the tests assert ≤ 1.01 × m·H(p), and ≤ 1.001 ×
//! m·H(p) + 40 bits).
//!
//! ## Files of the common format
//! [`compress_file`] / [`decompress_file`] turn a file of any kind into its compressed form and
//! back, bit for bit: the same header with flag `FLAG_COMPRESSED`, a payload holding
//! the plain payload's compressed-bits stream and the plain file's checksum, and a checksum
//! trailer of its own. Every loader ([`crate::Persist::load`], [`crate::AnyFilter::load`],
//! [`crate::AnyCounter::load`], `open_mmap`) goes through [`plain_file`], so a compressed file
//! loads wherever a plain one does (decompressed in memory; both checksums verified).
//! [`diff_files`] / [`patch_file`] do the same for deltas (flag `FLAG_DELTA`), tagged
//! with the checksums of the base and result files. Files of format version 1 without a flag
//! are untouched: their layout and bytes are those of every earlier build.
//!
//! ## Why our own coder
//! The model is a single static binary probability: no context modelling, no adaptation, no
//! symbol tables. A carry-less 32-bit-range binary coder (the LZMA construction, with a 32-bit
//! probability instead of LZMA's 11 bits so that very sparse arrays such as deltas stay within
//! the bound) is about 100 lines and is exactly what the 1.01 × m·H(p) bound needs.
//! What crates.io offers (checked with `cargo info` on 2026-11-25):
//! - `constriction` 0.4.2 (0.5.0 latest; MIT/Apache/BSL): a maintained research-and-production
//!   library of range coders and ANS. It could code our bits with a two-symbol categorical model,
//!   but it is built around generic alphabets, model traits and word-sized compressed units; for
//!   one static binary probability it adds a dependency and an API surface far larger than the
//!   coder, and its quantised models' precision would have to be checked for p close to 1. We
//!   did not benchmark it.
//! - `arcode` 0.2.4 (MIT; `cargo info` says only "An Arithmetic Coder"): a general-purpose
//!   coder whose models are frequency-count (adaptive) models over symbol alphabets, with
//!   per-symbol model work we do not need and no 32-bit static probability.
//!
//! Owning the coder also lets us validate every byte of untrusted input ourselves (typed errors,
//! no panics, no allocation beyond the caller's limit).
//!
//! ## Untrusted input
//! Decoding takes m from the caller and checks it against the header, refuses arrays larger
//! than `limit_bytes` before allocating, requires the payload to be consumed exactly (a
//! truncated or padded stream is an error), and checks the decoded number of one bits against
//! the header. Damaged or truncated data is an [`Error::Format`], an array over the limit an
//! [`Error::TooLarge`], a delta for another base an [`Error::Incompatible`]; nothing panics.
//!
//! A small file can declare a large array (a sparse filter compresses to a few bytes), so
//! the decoders also bound their memory and work by what the input can hold:
//! - **One mode per density.** A stream must use the mode the encoder chooses for its m and
//!   number of ones (`Mode`; every file ever written did); any other is refused as forged.
//!   In its own modes every coder decision costs at least 0.415 bits of input, so decoding
//!   does at most about 20 decisions per input byte, and a stream too short for its array
//!   is refused before anything is allocated.
//! - **One allocation, fallible.** Decompressing a file allocates only the plain file it
//!   rebuilds (1× the declared payload, plus the header), with `try_reserve` or an anonymous
//!   map, after the checks above and the memory limit; the stream is decoded straight into it.
//!   An allocation the system refuses is an [`Error::AllocationFailed`], never an abort. The
//!   loaders use a large rebuilt payload in place, so loading a compressed file holds its
//!   plain payload once.

mod bits;
mod coder;
mod container;
mod delta;
mod model;
mod sizes;
mod streamed;
#[cfg(test)]
mod tests;
mod words;

use self::bits::{check_stream, compress_with, decode_into, entropy_of};
use self::delta::{check_delta, diff_of, fingerprint_of};
use self::words::{check_words, word_mask};
use crate::error::{Error, FormatError, Result};
use crate::store::{self, Words};

pub(crate) use self::container::{check_declared_plain, plain_bytes, PlainBytes};
pub use self::container::{compress_file, decompress_file, is_delta, is_packed, plain_file};
pub use self::delta::{diff_files, patch_file};
pub use self::model::{DIFF_HEADER_BYTES, HEADER_BYTES};
pub use self::sizes::{packed_sizes, predicted_sizes, PackedSizes};
pub(crate) use self::streamed::compress_parts_to;
pub use self::streamed::{
    compress_file_to, diff_files_to, patch_file_compressed_to, patch_file_to,
};

/// Compress the first `m` bits of `words` (bits beyond m are ignored).
///
/// Errors only if `words` holds fewer than m bits.
pub fn compress_bits(words: &[u64], m: u64) -> Result<Vec<u8>> {
    compress_with(words, m, None)
}

/// Decompress a stream of [`compress_bits`] for an array of `m` bits, refusing arrays larger
/// than `limit_bytes` (of words) before allocating. Bits beyond m in the last word are zero.
///
/// Decodes the streams of every version (tags 0xB0, 0xB1, 0xB2) in the mode the encoder
/// chooses for their density; a stream in another mode is refused as forged (see the
/// module docs, "Untrusted input"), and so is a stream too short for its m.
pub fn decompress_bits(data: &[u8], m: u64, limit_bytes: u64) -> Result<Words> {
    let s = check_stream(data, m)?;
    let mut words = Words::zeroed(m.div_ceil(64) as usize, limit_bytes)?;
    let out = words.as_mut_slice();
    decode_into(&s, &mut |i, w| out[i] = w)?;
    Ok(words)
}

/// Exact size in bits of [`compress_bits`]`(words, m)`, header included.
pub fn compressed_len_bits(words: &[u64], m: u64) -> Result<u64> {
    Ok(compress_bits(words, m)?.len() as u64 * 8)
}

/// The entropy bound `m · H(p)` in bits of the first m bits of `words`, p their fraction of zeros.
pub fn entropy_bits(words: &[u64], m: u64) -> Result<f64> {
    entropy_of(words, m)
}

/// xxh3-64 fingerprint of the first m bits of `words` (bits beyond m masked out), with m mixed in.
pub fn fingerprint(words: &[u64], m: u64) -> Result<u64> {
    fingerprint_of(words, m)
}

/// A delta from `old` to `new` (both of m bits): the compressed `old XOR new`, tagged with the
/// fingerprints of both versions.
pub fn diff(old: &[u64], new: &[u64], m: u64) -> Result<Vec<u8>> {
    diff_of(old, new, m)
}

/// Apply a [`diff`] to `old` (m bits). Refused with [`Error::Incompatible`] if `old` is not the
/// delta's base; a damaged delta is an [`Error::Format`]. Allocates the result only (at most
/// `limit_bytes`, fallibly), after the delta's stream passed its checks.
pub fn patch(old: &[u64], delta: &[u8], m: u64, limit_bytes: u64) -> Result<Vec<u64>> {
    let len = check_words(old, m, "old")?;
    let (target, s) = check_delta(old, delta, m)?;
    store::check_size(len as u64 * 8, limit_bytes)?;
    let mut out = Vec::new();
    out.try_reserve_exact(len)
        .map_err(|_| Error::AllocationFailed {
            bytes: len as u64 * 8,
        })?;
    out.extend_from_slice(&old[..len]);
    if !m.is_multiple_of(64) {
        out[len - 1] &= word_mask(len - 1, m);
    }
    decode_into(&s, &mut |i, w| out[i] ^= w)?;
    let got = fingerprint_of(&out[..], m)?;
    if got != target {
        return Err(Error::Format(FormatError::ChecksumMismatch {
            stored: target,
            computed: got,
        }));
    }
    Ok(out)
}
