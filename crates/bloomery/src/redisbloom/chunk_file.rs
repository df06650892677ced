//! [`RedisBloomChunkFile`]: a RedisBloom key's SCANDUMP chunks saved to a file.
//!
//! `scripts/migrate-redisbloom.py save` writes one such file per key and `bloomery import
//! --from redisbloom` reads them. Layout (integers little-endian):
//!
//! ```text
//! offset  size  field
//! 0       8     magic "RBCHUNKS"
//! 8       1     version (1)
//! 9       1     value type: 'B' (BF, Redis type MBbloom--) or 'C' (CF, MBbloomCF)
//! 10      2     zero
//! 12      4     key length K
//! 16      K     the key's name
//! 16+K    8     the key's remaining time to live in milliseconds, i64 (-1: none)
//! then, to the end of the file, one record per chunk in SCANDUMP order:
//!         8     iterator, i64 (the header chunk's is 1)
//!         8     length L, u64
//!         L     the chunk's bytes
//! ```

use super::RedisBloomChunkError;

/// The magic bytes that start a chunk file.
const MAGIC: &[u8; 8] = b"RBCHUNKS";
const VERSION: u8 = 1;
/// Longest key name accepted (Redis keys are at most 512 MiB; names this long are not keys
/// anyone migrates, and the bound keeps a forged length from allocating).
const MAX_KEY: usize = 1 << 20;

/// Which RedisBloom type a value has.
///
/// ```
/// use bloomery::redisbloom::RedisBloomType;
///
/// assert_eq!(RedisBloomType::Bloom.redis_type(), "MBbloom--");
/// assert_eq!(RedisBloomType::Cuckoo.redis_type(), "MBbloomCF");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedisBloomType {
    /// `BF.*`: Redis type `MBbloom--`.
    Bloom,
    /// `CF.*`: Redis type `MBbloomCF`.
    Cuckoo,
}

impl RedisBloomType {
    /// The Redis type name RedisBloom registers (what `TYPE key` answers).
    pub fn redis_type(self) -> &'static str {
        match self {
            RedisBloomType::Bloom => "MBbloom--",
            RedisBloomType::Cuckoo => "MBbloomCF",
        }
    }

    fn tag(self) -> u8 {
        match self {
            RedisBloomType::Bloom => b'B',
            RedisBloomType::Cuckoo => b'C',
        }
    }
}

/// A key's SCANDUMP chunks with its name, type and time to live.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::redisbloom::{RedisBloomChunkFile, RedisBloomType};
///
/// let file = RedisBloomChunkFile {
///     value_type: RedisBloomType::Bloom,
///     key: b"users".to_vec(),
///     pttl: -1,
///     chunks: vec![(1, vec![1, 2, 3])],
/// };
/// assert_eq!(RedisBloomChunkFile::from_bytes(&file.to_bytes())?, file);
/// assert!(RedisBloomChunkFile::from_bytes(b"garbage").is_err());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisBloomChunkFile {
    /// The value's type.
    pub value_type: RedisBloomType,
    /// The key's name.
    pub key: Vec<u8>,
    /// Remaining time to live in milliseconds when saved; -1 for none.
    pub pttl: i64,
    /// `(iterator, bytes)` of each chunk, header first.
    pub chunks: Vec<(i64, Vec<u8>)>,
}

impl RedisBloomChunkFile {
    /// The file's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let body: usize = self.chunks.iter().map(|(_, c)| 16 + c.len()).sum();
        let mut b = Vec::with_capacity(24 + self.key.len() + body);
        b.extend_from_slice(MAGIC);
        b.push(VERSION);
        b.push(self.value_type.tag());
        b.extend_from_slice(&[0, 0]);
        b.extend_from_slice(&(self.key.len() as u32).to_le_bytes());
        b.extend_from_slice(&self.key);
        b.extend_from_slice(&self.pttl.to_le_bytes());
        for (it, c) in &self.chunks {
            b.extend_from_slice(&it.to_le_bytes());
            b.extend_from_slice(&(c.len() as u64).to_le_bytes());
            b.extend_from_slice(c);
        }
        b
    }

    /// Parse a file's bytes; every length is checked against what is there.
    pub fn from_bytes(b: &[u8]) -> Result<Self, RedisBloomChunkError> {
        let bad = |m: &str| RedisBloomChunkError::BadFile(m.to_string());
        if b.len() < 16 || &b[..8] != MAGIC {
            return Err(bad("not a RedisBloom chunk file (magic RBCHUNKS)"));
        }
        if b[8] != VERSION {
            return Err(RedisBloomChunkError::BadFile(format!(
                "unknown version {}",
                b[8]
            )));
        }
        let value_type = match b[9] {
            b'B' => RedisBloomType::Bloom,
            b'C' => RedisBloomType::Cuckoo,
            t => {
                return Err(RedisBloomChunkError::BadFile(format!(
                    "unknown value type {t:#04x}"
                )))
            }
        };
        if b[10..12] != [0, 0] {
            return Err(bad("non-zero reserved bytes"));
        }
        let key_len = u32::from_le_bytes([b[12], b[13], b[14], b[15]]) as usize;
        if key_len > MAX_KEY {
            return Err(bad("key name longer than 1 MiB"));
        }
        let mut at = 16;
        let key = take(b, &mut at, key_len).ok_or_else(|| bad("truncated key name"))?;
        let pttl = i64::from_le_bytes(
            take(b, &mut at, 8)
                .ok_or_else(|| bad("truncated time to live"))?
                .try_into()
                .map_err(|_| bad("truncated time to live"))?,
        );
        let mut chunks = Vec::new();
        while at < b.len() {
            let head = take(b, &mut at, 16).ok_or_else(|| bad("truncated chunk record"))?;
            let mut it = [0u8; 8];
            it.copy_from_slice(&head[..8]);
            let mut len = [0u8; 8];
            len.copy_from_slice(&head[8..]);
            let len = usize::try_from(u64::from_le_bytes(len))
                .map_err(|_| bad("chunk length overflows"))?;
            let data = take(b, &mut at, len).ok_or_else(|| bad("truncated chunk"))?;
            chunks.push((i64::from_le_bytes(it), data.to_vec()));
        }
        Ok(Self {
            value_type,
            key: key.to_vec(),
            pttl,
            chunks,
        })
    }
}

/// The `n` bytes at `*at`, advancing it; None past the end.
fn take<'a>(b: &'a [u8], at: &mut usize, n: usize) -> Option<&'a [u8]> {
    let end = at.checked_add(n).filter(|&e| e <= b.len())?;
    let s = &b[*at..end];
    *at = end;
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_truncation() {
        let f = RedisBloomChunkFile {
            value_type: RedisBloomType::Cuckoo,
            key: b"k\0ey".to_vec(),
            pttl: 12_345,
            chunks: vec![(1, vec![7; 38]), (101, vec![1; 100]), (102, vec![2])],
        };
        let b = f.to_bytes();
        assert_eq!(RedisBloomChunkFile::from_bytes(&b).unwrap(), f);
        for cut in 0..b.len() {
            let r = RedisBloomChunkFile::from_bytes(&b[..cut]);
            // a cut at a record boundary is a shorter sequence, anything else an error
            if let Ok(g) = r {
                assert!(
                    g.chunks.len() < f.chunks.len() && g.chunks[..] == f.chunks[..g.chunks.len()]
                );
            }
        }
        let mut t = b.clone();
        t[9] = b'X';
        assert!(RedisBloomChunkFile::from_bytes(&t).is_err());
    }
}
