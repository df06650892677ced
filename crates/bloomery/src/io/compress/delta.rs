//! Delta coding: the compressed XOR of two versions of an array, tagged with fingerprints of
//! both, and the delta files of the common format built on it.

use super::bits::{check_stream, compress_with, decode_into, Stream};
use super::coder::truncated;
use super::container::{
    assemble, container_stream, decode_plain, le64, pad64, payload_of, plain_bytes, zeroed_vec,
    AT_FLAGS, AT_PAYLOAD_LEN, DELTA_FIXED,
};
use super::model::{DIFF_HEADER_BYTES, TAG_DIFF};
use super::words::{check_words, word_mask, LeWords, WordSource, XorWords};
use crate::error::{inconsistent, Error, FormatError, Result};
use crate::io::header as format;
use crate::store;

pub(super) fn fingerprint_of<S: WordSource + ?Sized>(words: &S, m: u64) -> Result<u64> {
    let len = check_words(words, m, "words")?;
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(&m.to_le_bytes());
    let mut buf = [0u8; 4096];
    for start in (0..len).step_by(buf.len() / 8) {
        let end = (start + buf.len() / 8).min(len);
        for i in start..end {
            let at = 8 * (i - start);
            buf[at..at + 8].copy_from_slice(&(words.word(i) & word_mask(i, m)).to_le_bytes());
        }
        h.update(&buf[..8 * (end - start)]);
    }
    Ok(h.digest())
}

pub(super) fn diff_of<A: WordSource + ?Sized, B: WordSource + ?Sized>(
    old: &A,
    new: &B,
    m: u64,
) -> Result<Vec<u8>> {
    check_words(old, m, "old")?;
    check_words(new, m, "new")?;
    let body = compress_with(&XorWords(old, new), m, None)?;
    let mut out = Vec::with_capacity(DIFF_HEADER_BYTES + body.len());
    out.push(TAG_DIFF);
    out.extend_from_slice(&fingerprint_of(old, m)?.to_le_bytes());
    out.extend_from_slice(&fingerprint_of(new, m)?.to_le_bytes());
    out.extend_from_slice(&body);
    Ok(out)
}

/// Check a delta's header against its base and its stream against m; returns the result's
/// fingerprint and the stream.
pub(super) fn check_delta<'a, S: WordSource + ?Sized>(
    old: &S,
    delta: &'a [u8],
    m: u64,
) -> Result<(u64, Stream<'a>)> {
    if delta.len() < DIFF_HEADER_BYTES {
        return Err(truncated(DIFF_HEADER_BYTES, delta.len()));
    }
    if delta[0] != TAG_DIFF {
        return Err(Error::Format(FormatError::BadMagic));
    }
    let base = u64::from_le_bytes(delta[1..9].try_into().expect("8 bytes"));
    let target = u64::from_le_bytes(delta[9..17].try_into().expect("8 bytes"));
    let have = fingerprint_of(old, m)?;
    if have != base {
        return Err(Error::Incompatible(crate::error::Incompatibility::Shape {
            left: format!("base with fingerprint {have:#018x}"),
            right: format!("delta for base {base:#018x}"),
        }));
    }
    Ok((target, check_stream(&delta[DIFF_HEADER_BYTES..], m)?))
}

/// A delta file from `old` to `new` (each plain or compressed): the header of `new` with flag
/// `FLAG_DELTA`, and a payload holding the compressed XOR of the two payloads
/// ([`diff`](super::diff)) tagged with the checksums of both plain files.
///
/// ```text
/// delta payload:  0  u64  payload length P (bytes, the same in both versions)
///                 8  u64  the base (old) plain file's checksum
///                16  u64  the result (new) plain file's checksum
///                24  u64  stream length L
///                32  L    a [`diff`] stream of the payloads (m = 8·P bits)
///                ..       zero padding to a multiple of 64
/// ```
/// Unrelated filters are refused with [`Error::Incompatible`]: the two must have the same
/// kind, hash algorithm and seed, parameter length and payload length (a scalable filter that
/// grew a sub-filter has a longer payload: send it whole).
pub fn diff_files(old: &[u8], new: &[u8]) -> Result<Vec<u8>> {
    let old = plain_bytes(old)?;
    let new = plain_bytes(new)?;
    let (old, new) = (old.bytes(), new.bytes());
    let (a, b) = diff_pair(old, new)?;
    let m = a.payload_len as u64 * 8;
    let stream = diff_of(&payload_of(old, &a), &payload_of(new, &b), m)?;
    let mut c = Vec::with_capacity(DELTA_FIXED + stream.len() + 64);
    c.extend_from_slice(&(a.payload_len as u64).to_le_bytes());
    c.extend_from_slice(&le64(old, old.len() - 8).to_le_bytes());
    c.extend_from_slice(&le64(new, new.len() - 8).to_le_bytes());
    c.extend_from_slice(&(stream.len() as u64).to_le_bytes());
    c.extend_from_slice(&stream);
    Ok(assemble(
        &new[..b.payload_offset],
        format::FLAG_DELTA,
        &pad64(c),
    ))
}

/// The decoded headers of two plain files a delta can join (same kind, hashing and shapes).
pub(super) fn diff_pair(old: &[u8], new: &[u8]) -> Result<(format::Decoded, format::Decoded)> {
    let a = decode_plain(old)?;
    let b = decode_plain(new)?;
    let (ha, hb) = (&a.header, &b.header);
    if ha.kind != hb.kind {
        return Err(Error::Incompatible(crate::error::Incompatibility::Kind {
            left: ha.kind.name(),
            right: hb.kind.name(),
        }));
    }
    if ha.hasher != hb.hasher {
        return Err(Error::Incompatible(crate::error::Incompatibility::Hashing));
    }
    if a.payload_len != b.payload_len || ha.params.len() != hb.params.len() {
        return Err(Error::Incompatible(crate::error::Incompatibility::Shape {
            left: format!("{} payload bytes", a.payload_len),
            right: format!("{} payload bytes", b.payload_len),
        }));
    }
    Ok((a, b))
}

/// Apply a delta file to `old` (plain or compressed): the plain result file, bit for bit.
/// A delta for another base is refused with [`Error::Incompatible`] (the base's checksum is
/// checked before anything is decoded); a damaged delta is an [`Error::Format`] (both the
/// delta's own checksum and the result's are verified). The result is the one allocation
/// (fallible, at most `limit_bytes` of payload); the delta is decoded straight into it.
pub fn patch_file(old: &[u8], delta: &[u8], limit_bytes: u64) -> Result<Vec<u8>> {
    let df = check_delta_file(delta)?;
    let old = plain_bytes(old)?;
    let (base, target, s) = df.against(old.bytes(), Some(limit_bytes))?;
    let (h, m) = (df.header.len(), df.plain_len * 8);
    let payload_end = h + base.0.len();
    let mut out = zeroed_vec(payload_end + 8)?;
    out[..h].copy_from_slice(&df.plain_head());
    out[h..payload_end].copy_from_slice(base.0);
    {
        let payload = &mut out[h..payload_end];
        decode_into(&s, &mut |i, w| {
            let at = &mut payload[8 * i..8 * i + 8];
            let v = u64::from_le_bytes((&*at).try_into().expect("8 bytes")) ^ w;
            at.copy_from_slice(&v.to_le_bytes());
        })?;
    }
    let got = fingerprint_of(&LeWords(&out[h..payload_end]), m)?;
    if got != target {
        return Err(Error::Format(FormatError::ChecksumMismatch {
            stored: target,
            computed: got,
        }));
    }
    let sum = xxhash_rust::xxh3::xxh3_64(&out[..payload_end]);
    if sum != df.result_sum {
        return Err(Error::Format(FormatError::ChecksumMismatch {
            stored: df.result_sum,
            computed: sum,
        }));
    }
    out[payload_end..].copy_from_slice(&sum.to_le_bytes());
    Ok(out)
}

/// A delta file whose checksum and container were checked: what [`patch_file`] and
/// [`patch_file_to`](super::patch_file_to) apply.
pub(super) struct DeltaFile<'a> {
    /// The delta's header bytes `[0, H)`: the result's, but for the payload length and flags.
    pub(super) header: &'a [u8],
    /// The payload length of the base and of the result.
    pub(super) plain_len: u64,
    /// The base plain file's checksum.
    base_sum: u64,
    /// The result plain file's checksum.
    pub(super) result_sum: u64,
    /// The [`diff`](super::diff) stream.
    stream: &'a [u8],
}

/// Check a delta file: its checksum, its flag and its container.
pub(super) fn check_delta_file(delta: &[u8]) -> Result<DeltaFile<'_>> {
    let (d, flags) = format::decode_with_flags(delta, format::Verify::Checksum)?;
    if flags != format::FLAG_DELTA {
        return Err(Error::Unsupported(
            "the second file is not a delta (make one with `diff`)".into(),
        ));
    }
    let c = &delta[d.payload_offset..d.payload_offset + d.payload_len];
    if c.len() < DELTA_FIXED {
        return Err(truncated(DELTA_FIXED, c.len()));
    }
    Ok(DeltaFile {
        header: &delta[..d.payload_offset],
        plain_len: le64(c, 0),
        base_sum: le64(c, 8),
        result_sum: le64(c, 16),
        stream: container_stream(c, DELTA_FIXED)?,
    })
}

impl<'a> DeltaFile<'a> {
    /// Check the delta against the plain base file `old` (its checksum, its payload length,
    /// the payload limit when given, the fingerprint of its payload) and its stream against
    /// the payload's m bits; returns the base's payload, the result's fingerprint and the
    /// checked stream.
    pub(super) fn against<'b>(
        &self,
        old: &'b [u8],
        limit_bytes: Option<u64>,
    ) -> Result<(LeWords<'b>, u64, Stream<'a>)> {
        let a = decode_plain(old)?;
        let have = le64(old, old.len() - 8);
        if have != self.base_sum {
            return Err(Error::Incompatible(crate::error::Incompatibility::Shape {
                left: format!("base file with checksum {have:#018x}"),
                right: format!("delta for a base with checksum {:#018x}", self.base_sum),
            }));
        }
        let plain_len = self.plain_len;
        if a.payload_len as u64 != plain_len {
            return Err(inconsistent(format!(
                "delta for a payload of {plain_len} bytes, base has {}",
                a.payload_len
            )));
        }
        if let Some(limit) = limit_bytes {
            store::check_size(plain_len, limit)?;
        }
        let base = payload_of(old, &a);
        let (target, s) = check_delta(&base, self.stream, plain_len * 8)?;
        Ok((base, target, s))
    }

    /// The result's header: the delta's, with the plain payload length and no flag.
    pub(super) fn plain_head(&self) -> Vec<u8> {
        let mut head = self.header.to_vec();
        head[AT_PAYLOAD_LEN..AT_PAYLOAD_LEN + 8].copy_from_slice(&self.plain_len.to_le_bytes());
        head[AT_FLAGS..AT_FLAGS + 2].copy_from_slice(&0u16.to_le_bytes());
        head
    }
}
