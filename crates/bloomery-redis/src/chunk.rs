//! The byte string a structure travels as (the library's file format), cut into SCANDUMP /
//! LOADCHUNK chunks, and the check of its header before anything is stored.
//!
//! The iterator is a byte offset. The first chunk is the header (its length is the first
//! iterator); each later chunk is at most [`CHUNK`] bytes. A header is accepted only for the
//! expected kind, with sane lengths and a payload within `MAX-BYTES`.

use bloomery::file::FORMAT_VERSION;
use bloomery::Kind;

use crate::config;

/// Largest chunk SCANDUMP returns after the header.
pub const CHUNK: usize = 4 << 20;

const FIXED_HEADER: usize = 72;
const MAX_HEADER: usize = 1 << 20;
const TRAILER: u64 = 8;

/// What a validated header announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// Header length (the first chunk's length).
    pub header_len: usize,
    /// Length of the whole file-format byte string.
    pub total: u64,
}

fn le_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn le_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// Validate the start of a file-format byte string (at least its fixed header) for `kind`,
/// refusing payloads over `MAX-BYTES` (plus 64 bytes of padding per part).
pub fn check_header(b: &[u8], kind: Kind) -> Result<Head, String> {
    if b.len() < FIXED_HEADER {
        return Err("header chunk too short".into());
    }
    if &b[..8] != b"BLOOMERY" {
        return Err("bad magic".into());
    }
    let version = le_u16(b, 8);
    if version == 0 || version > FORMAT_VERSION {
        return Err(format!("unknown format version {version}"));
    }
    if le_u16(b, 10) != kind.id() {
        return Err(format!("not a {} (kind id {})", kind.name(), le_u16(b, 10)));
    }
    let h = le_u32(b, 12) as usize;
    if !h.is_multiple_of(64) || !(FIXED_HEADER..=MAX_HEADER).contains(&h) {
        return Err(format!("bad header length {h}"));
    }
    let p = le_u64(b, 16);
    if !p.is_multiple_of(64) {
        return Err(format!("bad payload length {p}"));
    }
    let limit = config::max_bytes().saturating_add(64 * 64);
    if p > limit {
        return Err(format!(
            "payload of {p} bytes exceeds the module's MAX-BYTES limit of {}",
            config::max_bytes()
        ));
    }
    Ok(Head {
        header_len: h,
        total: h as u64 + p + TRAILER,
    })
}

/// Header length of well-formed bytes (falls back to the whole length).
fn header_len(bytes: &[u8]) -> usize {
    if bytes.len() >= 16 {
        (le_u32(bytes, 12) as usize).min(bytes.len())
    } else {
        bytes.len()
    }
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
    use bloomery::{Filter, Persist, ScalableBloomFilter};

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
