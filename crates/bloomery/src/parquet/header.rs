//! The Bloom filter header that precedes every bitset in a Parquet file: a Thrift struct in
//! the compact protocol (parquet-format `parquet.thrift`, `BloomFilterHeader`):
//!
//! ```text
//! struct BloomFilterHeader {
//!   1: required i32 numBytes;                      // bitset size in bytes
//!   2: required BloomFilterAlgorithm algorithm;    // union { 1: SplitBlockAlgorithm BLOCK }
//!   3: required BloomFilterHash hash;              // union { 1: XxHash XXHASH }
//!   4: required BloomFilterCompression compression // union { 1: Uncompressed UNCOMPRESSED }
//! }
//! ```
//!
//! The reader is written for untrusted bytes: every length is bounds-checked, nesting is
//! limited, unknown fields are skipped (newer writers may add some), and anything but the one
//! algorithm, hash and compression the specification defines is a typed error, never a guess.

use std::fmt;

use super::thrift::{BoolElements, Reader, ThriftError, T_I32, T_STOP, T_STRUCT};

/// Why a filter header could not be read.
///
/// ```
/// use bloomery::parquet::{read_filter_header, write_filter_header, HeaderError};
///
/// let bytes = write_filter_header(1024);
/// // cut short
/// assert_eq!(read_filter_header(&bytes[..2]), Err(HeaderError::Truncated));
/// // a bitset size that is not a multiple of 32 bytes
/// assert_eq!(read_filter_header(&write_filter_header(100)), Err(HeaderError::BadSize(100)));
/// // a struct without fields
/// let err = read_filter_header(&[0x00]).unwrap_err();
/// assert_eq!(err, HeaderError::Missing("numBytes"));
/// assert!(err.to_string().contains("numBytes"));
///
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HeaderError {
    /// The bytes end inside the header.
    Truncated,
    /// The bytes are not a valid Thrift compact struct of this shape.
    Malformed(String),
    /// A required field is missing.
    Missing(&'static str),
    /// A valid header describing a filter this reader does not know (another algorithm, hash
    /// or compression than the split-block filter, xxHash64 and none).
    Unsupported(String),
    /// `numBytes` is not a positive multiple of 32.
    BadSize(i64),
}

impl fmt::Display for HeaderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeaderError::Truncated => write!(f, "the bloom filter header is truncated"),
            HeaderError::Malformed(m) => write!(f, "malformed bloom filter header: {m}"),
            HeaderError::Missing(field) => {
                write!(f, "bloom filter header without its `{field}` field")
            }
            HeaderError::Unsupported(m) => write!(f, "unsupported bloom filter: {m}"),
            HeaderError::BadSize(n) => write!(
                f,
                "bloom filter header declares {n} bytes: not a positive multiple of 32"
            ),
        }
    }
}

impl std::error::Error for HeaderError {}

/// A decoded, validated filter header.
///
/// ```
/// use bloomery::parquet::{read_filter_header, write_filter_header, FilterHeader};
///
/// let mut bytes = write_filter_header(1024);
/// let header_len = bytes.len();
/// bytes.extend_from_slice(&[0u8; 1024]); // the bitset follows the header
/// assert_eq!(
///     read_filter_header(&bytes),
///     Ok(FilterHeader { num_bytes: 1024, header_len })
/// );
///
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FilterHeader {
    /// Bitset size in bytes (a positive multiple of 32).
    pub num_bytes: u32,
    /// Bytes the header takes; the bitset follows at this offset.
    pub header_len: usize,
}

/// Most bytes a header of this struct normally takes (field headers, a 5-byte varint, three
/// nested empty unions): enough to read in one go when the footer gives no length.
pub const TYPICAL_MAX_LEN: usize = 32;

/// Deepest nesting of structs and containers the skipper follows.
const MAX_DEPTH: usize = 16;

impl From<ThriftError> for HeaderError {
    fn from(e: ThriftError) -> Self {
        match e {
            ThriftError::Truncated => HeaderError::Truncated,
            e => HeaderError::Malformed(e.to_string()),
        }
    }
}

/// A union with one known member: its member's field id (the member struct is skipped).
fn union_member(c: &mut Reader<'_>, what: &str) -> Result<i16, HeaderError> {
    c.union_member().map_err(|e| match e {
        ThriftError::Truncated => HeaderError::Truncated,
        e => HeaderError::Malformed(format!("{what}: {e}")),
    })
}

/// Read and validate a filter header at the start of `bytes` (which may go on with the
/// bitset).
pub fn read_filter_header(bytes: &[u8]) -> Result<FilterHeader, HeaderError> {
    let mut c = Reader::new(bytes, MAX_DEPTH, BoolElements::Bytes);
    let mut last = 0i16;
    let (mut num_bytes, mut algorithm, mut hash, mut compression) = (None, None, None, None);
    while let Some((id, ty)) = c.field(&mut last)? {
        match (id, ty) {
            (1, T_I32) => num_bytes = Some(c.zigzag()?),
            (2, T_STRUCT) => algorithm = Some(union_member(&mut c, "algorithm")?),
            (3, T_STRUCT) => hash = Some(union_member(&mut c, "hash")?),
            (4, T_STRUCT) => compression = Some(union_member(&mut c, "compression")?),
            (1..=4, ty) => {
                return Err(HeaderError::Malformed(format!(
                    "field {id} has type id {ty}"
                )))
            }
            // a field a newer writer added: skip it
            (_, ty) => c.skip_value(ty, 1)?,
        }
    }
    let num_bytes = num_bytes.ok_or(HeaderError::Missing("numBytes"))?;
    match algorithm.ok_or(HeaderError::Missing("algorithm"))? {
        1 => {}
        other => {
            return Err(HeaderError::Unsupported(format!(
                "algorithm {other} (only the split-block algorithm, 1, is defined)"
            )))
        }
    }
    match hash.ok_or(HeaderError::Missing("hash"))? {
        1 => {}
        other => {
            return Err(HeaderError::Unsupported(format!(
                "hash {other} (only xxHash64, 1, is defined)"
            )))
        }
    }
    match compression.ok_or(HeaderError::Missing("compression"))? {
        1 => {}
        other => {
            return Err(HeaderError::Unsupported(format!(
                "compression {other} (only uncompressed, 1, is defined)"
            )))
        }
    }
    if num_bytes <= 0 || num_bytes % 32 != 0 || num_bytes > i64::from(i32::MAX) {
        return Err(HeaderError::BadSize(num_bytes));
    }
    Ok(FilterHeader {
        num_bytes: num_bytes as u32,
        header_len: c.position(),
    })
}

/// The header a Parquet writer puts before a bitset of `num_bytes` bytes (the same bytes
/// arrow-rs and parquet-mr write).
pub fn write_filter_header(num_bytes: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(TYPICAL_MAX_LEN);
    out.push(0x10 | T_I32); // field 1, i32
    let mut z = ((i64::from(num_bytes) << 1) ^ (i64::from(num_bytes) >> 63)) as u64;
    loop {
        let b = (z & 0x7f) as u8;
        z >>= 7;
        if z == 0 {
            out.push(b);
            break;
        }
        out.push(b | 0x80);
    }
    for _ in 2..=4 {
        // field n (delta 1), a union whose member 1 is an empty struct
        out.extend_from_slice(&[0x10 | T_STRUCT, 0x10 | T_STRUCT, T_STOP, T_STOP]);
    }
    out.push(T_STOP);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_then_read() {
        for n in [32u32, 64, 1024, 1 << 20, 128 << 20, 0x7fff_ffe0] {
            let mut h = write_filter_header(n);
            let len = h.len();
            assert!(len <= TYPICAL_MAX_LEN);
            h.extend_from_slice(&[0xAB; 40]); // the bitset follows
            assert_eq!(
                read_filter_header(&h),
                Ok(FilterHeader {
                    num_bytes: n,
                    header_len: len
                })
            );
        }
    }

    #[test]
    fn every_truncation_is_an_error() {
        let h = write_filter_header(4096);
        for cut in 0..h.len() {
            assert!(read_filter_header(&h[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn unknown_fields_are_skipped_and_unknown_members_refused() {
        // numBytes = 64, then an unknown field 9 (binary "xy"), then the three unions
        let mut h = vec![0x15, 128, 1, 0x08 | (8 << 4), 2, b'x', b'y'];
        // field 2 by explicit id (delta 0 form): header 0x0C, zigzag(2) = 4
        h.extend_from_slice(&[0x0C, 4, 0x1C, 0, 0]);
        h.extend_from_slice(&[0x1C, 0x1C, 0, 0, 0x1C, 0x1C, 0, 0, 0]);
        assert_eq!(read_filter_header(&h).unwrap().num_bytes, 64);

        let mut bad_hash = write_filter_header(64);
        // the hash union's member (field 3's first byte after its header) becomes member 2
        let pos = 3 + 4 + 1; // field 1 (1 + 2-byte varint), field 2's union (4), field 3's header
        assert_eq!(bad_hash[pos], 0x1C);
        bad_hash[pos] = 0x2C;
        assert!(matches!(
            read_filter_header(&bad_hash),
            Err(HeaderError::Unsupported(_))
        ));
    }

    #[test]
    fn sizes_are_validated() {
        for n in [0i64, -32, 33, 100] {
            let mut h = vec![0x15];
            let mut z = ((n << 1) ^ (n >> 63)) as u64;
            loop {
                let b = (z & 0x7f) as u8;
                z >>= 7;
                if z == 0 {
                    h.push(b);
                    break;
                }
                h.push(b | 0x80);
            }
            h.extend_from_slice(&write_filter_header(32)[2..]);
            assert_eq!(read_filter_header(&h), Err(HeaderError::BadSize(n)), "{n}");
        }
    }

    #[test]
    fn missing_fields_and_deep_nesting() {
        assert_eq!(
            read_filter_header(&[0]),
            Err(HeaderError::Missing("numBytes"))
        );
        // 40 nested structs in an unknown field
        let mut h = vec![0x15, 64];
        h.push(0x9C); // field 10, struct
        h.extend(std::iter::repeat_n(0x1C, 40));
        h.extend(std::iter::repeat_n(0, 42));
        assert!(matches!(
            read_filter_header(&h),
            Err(HeaderError::Malformed(_))
        ));
        // a list claiming more elements than there are bytes
        let h = [0x15, 64, 0x99, 0xF5, 0xFF, 0xFF, 0xFF, 0x0F];
        assert_eq!(read_filter_header(&h), Err(HeaderError::Truncated));
    }
}
