//! The byte string a structure travels as (the library's file format), cut into SCANDUMP /
//! LOADCHUNK chunks, and the check of its header before anything is stored.
//!
//! The iterator is a byte offset. The first chunk is the header (its length is the first
//! iterator); each later chunk is at most [`CHUNK`] bytes. A header is accepted only for the
//! expected kind, with sane lengths and a payload within `MAX-BYTES`: the library's header codec
//! ([`bloomery::file::peek_header_bytes`]) reads it, so the layout is declared once.

use bloomery::file::{encoded_header_len, encoded_range, peek_header_bytes};
use bloomery::{Kind, Persist};

use crate::config;

/// Largest chunk SCANDUMP returns after the header.
pub const CHUNK: usize = 4 << 20;

/// What a validated header announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// Header length (the first chunk's length).
    pub header_len: usize,
    /// Length of the whole file-format byte string.
    pub total: u64,
}

/// Validate the start of a file-format byte string (at least its header) for `kind` with the
/// library's header codec, refusing the compressed and delta forms and payloads over
/// `MAX-BYTES` (plus 64 bytes of padding per part).
pub fn check_header(b: &[u8], kind: Kind) -> Result<Head, String> {
    let head = read_header(b, kind)?;
    // the payload: the whole less the header and the 8-byte checksum trailer
    let p = (head.total.saturating_sub(head.header_len as u64)).saturating_sub(8);
    let limit = config::max_bytes().saturating_add(64 * 64);
    if p > limit {
        return Err(format!(
            "payload of {p} bytes exceeds the module's MAX-BYTES limit of {}",
            config::max_bytes()
        ));
    }
    Ok(head)
}

/// [`check_header`] without the `MAX-BYTES` limit (a value saved in pieces, which loads
/// whatever the limit is now, as one saved whole does).
pub fn read_header(b: &[u8], kind: Kind) -> Result<Head, String> {
    let head = peek_header_bytes(b).map_err(|e| format!("bad header: {e}"))?;
    if head.compressed || head.delta {
        return Err("a compressed or delta file, not a structure's bytes".into());
    }
    let found = head.header.kind;
    if found != kind {
        return Err(format!("not a {} (kind id {})", kind.name(), found.id()));
    }
    Ok(Head {
        header_len: head.header_len as usize,
        total: head.file_len,
    })
}

/// Header length of well-formed bytes (falls back to the whole length).
fn header_len(bytes: &[u8]) -> usize {
    peek_header_bytes(bytes).map_or(bytes.len(), |h| (h.header_len as usize).min(bytes.len()))
}

/// The chunk starting at `it` (0: the header) and the iterator that follows it, or `None`
/// past the end.
pub fn chunk_at(bytes: &[u8], it: u64) -> Option<(u64, &[u8])> {
    let start = usize::try_from(it).ok()?;
    if start >= bytes.len() {
        return None;
    }
    let end = if start == 0 {
        header_len(bytes)
    } else {
        start.saturating_add(CHUNK).min(bytes.len())
    };
    Some((end as u64, &bytes[start..end]))
}

/// The chunk of `f`'s file-format bytes starting at `it` (0: the header) and the iterator
/// that follows it, or `None` past the end: [`chunk_at`] of [`Persist::to_bytes`], made
/// without encoding the rest of `f` (a chunk of a large filter costs the chunk, and the
/// last one a reading pass for the checksum).
pub fn chunk_of<T: Persist>(f: &T, it: u64) -> Option<(u64, Vec<u8>)> {
    let total = f.encoded_len();
    if it >= total {
        return None;
    }
    let len = if it == 0 {
        encoded_header_len(f)
    } else {
        usize::try_from(total - it).map_or(CHUNK, |rest| rest.min(CHUNK))
    };
    let mut out = Vec::new();
    encoded_range(f, it, len, &mut out);
    Some((it + out.len() as u64, out))
}

/// Each chunk of `f`'s file-format bytes with the iterator after it, in order ([`chunk_of`]
/// from 0): one chunk made at a time, so a walk over a large structure holds one chunk.
pub fn each_chunk_of<T: Persist>(f: &T, mut each: impl FnMut(u64, &[u8])) {
    let mut it = 0;
    while let Some((next, c)) = chunk_of(f, it) {
        each(next, &c);
        it = next;
    }
}

/// Every chunk with its iterator, in order.
pub fn chunks(bytes: &[u8]) -> Vec<(u64, &[u8])> {
    let mut out = Vec::new();
    let mut it = 0;
    while let Some((next, c)) = chunk_at(bytes, it) {
        out.push((next, c));
        it = next;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use bloomery::{Filter, ScalableBloomFilter};

    #[test]
    fn chunks_cover_the_bytes_in_order() {
        let mut f = ScalableBloomFilter::try_new(100_000, 0.01).unwrap();
        f.insert("a");
        let bytes = f.to_bytes();
        let cs = chunks(&bytes);
        let head = check_header(cs[0].1, Kind::Scalable).unwrap();
        assert_eq!(head.header_len, cs[0].1.len());
        assert_eq!(head.total, bytes.len() as u64);
        let joined: Vec<u8> = cs.iter().flat_map(|(_, c)| c.iter().copied()).collect();
        assert_eq!(joined, bytes);
        assert_eq!(cs.last().unwrap().0, bytes.len() as u64);
        assert!(chunk_at(&bytes, bytes.len() as u64).is_none());
    }

    #[test]
    fn chunks_of_a_structure_are_the_chunks_of_its_bytes() {
        let mut f = ScalableBloomFilter::try_new(10_000_000, 0.01).unwrap();
        for i in 0..1000 {
            f.insert(&format!("k{i}"));
        }
        let bytes = f.to_bytes();
        assert!(bytes.len() > 2 * CHUNK, "several chunks after the header");
        let mut it = 0;
        for (next, c) in chunks(&bytes) {
            assert_eq!(chunk_of(&f, it), Some((next, c.to_vec())), "chunk at {it}");
            it = next;
        }
        assert_eq!(chunk_of(&f, it), None);
        assert_eq!(chunk_of(&f, u64::MAX), None);
        // an iterator inside a chunk (a client's own cut) answers from there
        assert_eq!(
            chunk_of(&f, 100).unwrap().1,
            chunk_at(&bytes, 100).unwrap().1
        );
    }

    #[test]
    fn bad_headers_are_refused() {
        let f = ScalableBloomFilter::try_new(100, 0.01).unwrap();
        let bytes = f.to_bytes();
        assert!(check_header(&bytes[..10], Kind::Scalable).is_err());
        assert!(check_header(&bytes, Kind::Cuckoo).is_err());
        let mut b = bytes.clone();
        b[0] = b'X';
        assert!(check_header(&b, Kind::Scalable).is_err());
        let mut b = bytes.clone();
        b[16..24].copy_from_slice(&(u64::MAX - 63).to_le_bytes());
        assert!(check_header(&b, Kind::Scalable).is_err());
    }
}
