//! The compressed, delta and patched files written to a path as they are made (atomically),
//! holding a piece of the stream in memory, never the whole.

#[cfg(doc)]
use super::{
    container::compress_file,
    delta::{diff_files, patch_file},
};

use super::bits::{compress_spilling, decode_into, entropy_of};
use super::container::{
    decode_plain, is_packed, le64, payload_of, plain_bytes, AT_FLAGS, AT_PAYLOAD_LEN, DELTA_FIXED,
    PACK_FIXED,
};
use super::delta::{check_delta_file, diff_pair, fingerprint_of};
use super::model::{DIFF_HEADER_BYTES, TAG_DIFF};
use super::sizes::{packed_sizes, PackedSizes};
use super::words::{check_words, PartsWords, XorWords};
use crate::error::{Error, FormatError, Result};
use crate::io::fs::map_file;
use crate::io::header as format;
use crate::io::stream::StreamOut;
use crate::io::temp::TempFile;

/// The plain file's checksum (its trailer) of a structure's header and payload, computed by
/// streaming its encoding through a sink that keeps only the trailer.
pub(super) fn plain_checksum(
    header: &format::Header,
    payload: &format::Payload<'_>,
) -> Result<u64> {
    let mut sink = TailSink([0; 8]);
    format::write(header, payload, &mut sink)?;
    Ok(u64::from_le_bytes(sink.0))
}

/// The compressed form of the file a structure saves as, written to `path` as the stream is
/// made (atomically, as [`compress_file_to`] writes): its arrays are read in place, and memory
/// holds a piece of the stream, never the whole nor a joined copy of the arrays. The bytes are
/// those of [`compress_file`] of the plain file.
pub(crate) fn compress_parts_to(
    header: &format::Header,
    payload: &format::Payload<'_>,
    path: &std::path::Path,
) -> Result<()> {
    let plain_sum = plain_checksum(header, payload)?;
    let payload_len = payload.len();
    let mut head = header.encode(payload_len);
    let h = head.len();
    let words = PartsWords::new(payload.parts());
    let mut out = StreamOut::create(path, Some(h + PACK_FIXED))?;
    out.write_zeros((h + PACK_FIXED) as u64)?;
    let stream_len = spill_stream(&mut out, |spill| {
        compress_spilling(&words, payload_len * 8, None, Some(spill))
    })?;
    let padded = seal_container(&mut out, PACK_FIXED as u64 + stream_len)?;
    head[AT_PAYLOAD_LEN..AT_PAYLOAD_LEN + 8].copy_from_slice(&padded.to_le_bytes());
    head[AT_FLAGS..AT_FLAGS + 2].copy_from_slice(&format::FLAG_COMPRESSED.to_le_bytes());
    head.extend_from_slice(&payload_len.to_le_bytes());
    head.extend_from_slice(&plain_sum.to_le_bytes());
    head.extend_from_slice(&stream_len.to_le_bytes());
    out.finish_with_head(&head)?;
    Ok(())
}

/// [`compress_file`] written to `path` (atomically: a temporary file beside it, renamed into
/// place) as the stream is made: memory holds a piece of the stream, never the whole, whatever
/// the file's size. The bytes are those of [`compress_file`]; returns their sizes, as
/// [`packed_sizes`] of the file written gives them. A compressed input is validated (streamed, without decompressing
/// it into memory) and copied.
pub fn compress_file_to(bytes: &[u8], path: &std::path::Path) -> Result<PackedSizes> {
    if is_packed(bytes) {
        let sizes = packed_sizes(bytes, true)?;
        let mut out = StreamOut::create(path, None)?;
        out.write(&bytes[..bytes.len() - 8])?;
        out.finish()?;
        return Ok(sizes);
    }
    let d = decode_plain(bytes)?;
    let m = d.payload_len as u64 * 8;
    let entropy_bits = entropy_of(&payload_of(bytes, &d), m)?;
    let h = d.payload_offset;
    let mut out = StreamOut::create(path, Some(h + PACK_FIXED))?;
    out.write_zeros((h + PACK_FIXED) as u64)?;
    let stream_len = spill_stream(&mut out, |spill| {
        compress_spilling(&payload_of(bytes, &d), m, None, Some(spill))
    })?;
    let padded = seal_container(&mut out, PACK_FIXED as u64 + stream_len)?;
    let mut head = bytes[..h].to_vec();
    head[AT_PAYLOAD_LEN..AT_PAYLOAD_LEN + 8].copy_from_slice(&padded.to_le_bytes());
    head[AT_FLAGS..AT_FLAGS + 2].copy_from_slice(&format::FLAG_COMPRESSED.to_le_bytes());
    head.extend_from_slice(&(d.payload_len as u64).to_le_bytes());
    head.extend_from_slice(&le64(bytes, bytes.len() - 8).to_le_bytes());
    head.extend_from_slice(&stream_len.to_le_bytes());
    out.finish_with_head(&head)?;
    Ok(PackedSizes {
        compressed_input: true,
        exact: true,
        plain_bytes: bytes.len() as u64,
        compressed_bytes: h as u64 + padded + 8,
        stream_bytes: stream_len,
        entropy_bits,
    })
}

/// Run an encoder whose output goes to `out` a piece at a time; returns the stream's length.
pub(super) fn spill_stream(
    out: &mut StreamOut,
    encode: impl FnOnce(&mut dyn FnMut(&[u8]) -> Result<()>) -> Result<Vec<u8>>,
) -> Result<u64> {
    let mut n = 0u64;
    let rest = encode(&mut |b: &[u8]| {
        n += b.len() as u64;
        out.write(b)
    })?;
    out.write(&rest)?;
    Ok(n + rest.len() as u64)
}

/// Pad a container of `len` bytes (already written) to a multiple of 64; its padded length.
pub(super) fn seal_container(out: &mut StreamOut, len: u64) -> Result<u64> {
    let padded = len.div_ceil(64) * 64;
    out.write_zeros(padded - len)?;
    Ok(padded)
}

/// [`diff_files`] written to `path` as the delta is made (see [`compress_file_to`]): memory
/// holds a piece of the delta, plus the plain form of a compressed input (within the memory
/// limit, as every loader). The bytes are those of [`diff_files`]; returns how many.
pub fn diff_files_to(old: &[u8], new: &[u8], path: &std::path::Path) -> Result<u64> {
    let old = plain_bytes(old)?;
    let new = plain_bytes(new)?;
    let (old, new) = (old.bytes(), new.bytes());
    let (a, b) = diff_pair(old, new)?;
    let m = a.payload_len as u64 * 8;
    let (wa, wb) = (payload_of(old, &a), payload_of(new, &b));
    check_words(&wa, m, "old")?;
    check_words(&wb, m, "new")?;
    let h = b.payload_offset;
    let mut out = StreamOut::create(path, Some(h + DELTA_FIXED))?;
    out.write_zeros((h + DELTA_FIXED) as u64)?;
    let mut tag = Vec::with_capacity(DIFF_HEADER_BYTES);
    tag.push(TAG_DIFF);
    tag.extend_from_slice(&fingerprint_of(&wa, m)?.to_le_bytes());
    tag.extend_from_slice(&fingerprint_of(&wb, m)?.to_le_bytes());
    out.write(&tag)?;
    let body = spill_stream(&mut out, |spill| {
        compress_spilling(&XorWords(&wa, &wb), m, None, Some(spill))
    })?;
    let stream_len = DIFF_HEADER_BYTES as u64 + body;
    let padded = seal_container(&mut out, DELTA_FIXED as u64 + stream_len)?;
    let mut head = new[..h].to_vec();
    head[AT_PAYLOAD_LEN..AT_PAYLOAD_LEN + 8].copy_from_slice(&padded.to_le_bytes());
    head[AT_FLAGS..AT_FLAGS + 2].copy_from_slice(&format::FLAG_DELTA.to_le_bytes());
    head.extend_from_slice(&(a.payload_len as u64).to_le_bytes());
    head.extend_from_slice(&le64(old, old.len() - 8).to_le_bytes());
    head.extend_from_slice(&le64(new, new.len() - 8).to_le_bytes());
    head.extend_from_slice(&stream_len.to_le_bytes());
    out.finish_with_head(&head)?;
    Ok(h as u64 + padded + 8)
}

/// A writer that keeps only the last 8 bytes written: fed a whole file by [`format::write`]
/// (which computes the checksum as it writes), it holds the file's checksum trailer and
/// nothing else.
pub(super) struct TailSink(pub(super) [u8; 8]);

impl std::io::Write for TailSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if buf.len() >= 8 {
            self.0.copy_from_slice(&buf[buf.len() - 8..]);
        } else {
            self.0.rotate_left(buf.len());
            self.0[8 - buf.len()..].copy_from_slice(buf);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// [`patch_file`] written to `path` as it is made: the base's payload is copied to the new
/// file with the delta's words XORed in as they are decoded, so memory holds neither the
/// result nor the delta's decoded array (only the plain form of a compressed base, within
/// the memory limit, as every loader). Both the result's fingerprint and its file checksum
/// are verified before the file replaces `path`; on any error `path` is untouched. The
/// bytes are those of [`patch_file`]; returns how many.
pub fn patch_file_to(old: &[u8], delta: &[u8], path: &std::path::Path) -> Result<u64> {
    let df = check_delta_file(delta)?;
    let old = plain_bytes(old)?;
    let (base, target, s) = df.against(old.bytes(), None)?;
    let m = df.plain_len * 8;
    let head = df.plain_head();
    let mut out = StreamOut::create(path, None)?;
    out.write(&head)?;
    // the result's words, in order: the base's, with the delta's XORed in where it has any
    let mut fp = xxhash_rust::xxh3::Xxh3::new();
    fp.update(&m.to_le_bytes());
    let src = base.0;
    let mut at = 0usize; // bytes of the payload written
    let mut failed: Option<Error> = None;
    let copy = |out: &mut StreamOut, fp: &mut xxhash_rust::xxh3::Xxh3, bytes: &[u8]| {
        fp.update(bytes);
        out.write(bytes)
    };
    decode_into(&s, &mut |i, w| {
        if failed.is_some() {
            return;
        }
        let start = 8 * i;
        let end = (start + 8).min(src.len());
        let mut word = [0u8; 8];
        word[..end - start].copy_from_slice(&src[start..end]);
        let v = (u64::from_le_bytes(word) ^ w).to_le_bytes();
        let r = copy(&mut out, &mut fp, &src[at..start])
            .and_then(|()| copy(&mut out, &mut fp, &v[..end - start]));
        at = end;
        if let Err(e) = r {
            failed = Some(e);
        }
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    copy(&mut out, &mut fp, &src[at..])?;
    // the fingerprint hashes whole words
    fp.update(&[0u8; 8][..(8 - src.len() % 8) % 8]);
    let got = fp.digest();
    if got != target {
        return Err(Error::Format(FormatError::ChecksumMismatch {
            stored: target,
            computed: got,
        }));
    }
    let sum = out.sum_so_far().expect("an inline checksum");
    if sum != df.result_sum {
        return Err(Error::Format(FormatError::ChecksumMismatch {
            stored: df.result_sum,
            computed: sum,
        }));
    }
    let n = out.written() + 8;
    out.finish()?;
    Ok(n)
}

/// [`patch_file_to`], the result compressed ([`compress_file_to`]): written as a plain file to
/// a temporary file beside `path`, then coded from it (mapped) into `path`, so memory holds
/// neither the result nor its stream. The bytes are those of [`compress_file`] of
/// [`patch_file`]'s result; returns their sizes.
pub fn patch_file_compressed_to(
    old: &[u8],
    delta: &[u8],
    path: &std::path::Path,
) -> Result<PackedSizes> {
    let dir = TempFile::dir_of(path);
    let plain = TempFile::new_in(&dir, ".plain.tmp")?;
    patch_file_to(old, delta, plain.path())?;
    let result = map_file(plain.path())?;
    compress_file_to(&result[..], path)
}
