//! The Parquet split-block Bloom filter, byte for byte as the Apache Parquet specification:
//! [`SplitBlockBloomFilter`] (its docs say which paper it follows and when to pick it).

use crate::dispatch::{hashed_set_kind, SetStats};
use crate::error::{inconsistent, invalid, Result};
use crate::filter::{shape_mismatch, Build, Builder, Filter, Merge, Stats};
use crate::hash::{Hashed, KeyHasher};
use crate::io::format::{
    self, Decoded, Header, Kind, ParamReader, ParamWriter, Payload, Persist, Source,
};
use crate::kind::Capabilities;
use crate::params;
use crate::sets::bits::Core;
use crate::store;

mod block;
use block::{SplitBlock, SPLIT_WORDS};

/// The spec's salts.
pub const SALT: [u32; 8] = [
    0x47b6_137b,
    0x4497_4d91,
    0x8824_ad5b,
    0xa2b7_289d,
    0x7054_95c7,
    0x2df1_424b,
    0x9efc_4947,
    0x5c6b_fb31,
];

/// Most blocks: the spec's block index `((h >> 32) · z) >> 32` is 32-bit arithmetic.
pub const MAX_BLOCKS: u64 = 1 << 32;

/// Bytes per block.
pub const BLOCK_BYTES: usize = 32;
/// Largest bitset Parquet writers produce (128 MiB); larger filters are allowed here but will
/// not be accepted by every Parquet reader.
pub const PARQUET_MAX_BYTES: usize = 128 << 20;

/// Bitset bytes the Parquet writers of arrow-rs and parquet-mr give a column chunk of `ndv`
/// distinct values at rate `fpp`: the bits per value of the specification's formula
/// `−8 / ln(1 − fpp^(1/8))` times `ndv`, in bytes, clamped to 32 B..=128 MiB and rounded up
/// to a power of two.
pub fn parquet_num_bytes(ndv: u64, fpp: f64) -> Result<usize> {
    if !(fpp > 0.0 && fpp < 1.0) {
        return Err(invalid("fpr", format!("must be in (0, 1), got {fpp}")));
    }
    let bits = -8.0 * ndv as f64 / (1.0 - fpp.powf(1.0 / 8.0)).ln();
    // `as` saturates: a huge ndv ends at the 128 MiB cap like theirs
    let bytes = (bits as usize / 8).clamp(BLOCK_BYTES, PARQUET_MAX_BYTES);
    Ok(bytes.next_power_of_two())
}

/// A Parquet bitset probed where it lies (e.g. in a buffer just read from a file), without
/// copying it into a filter: the spec's `filter_check` over the little-endian bytes.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{Filter, SplitBlockBits, SplitBlockBloomFilter};
///
/// let mut f = SplitBlockBloomFilter::try_with_bytes(1024)?;
/// f.insert("abc");
/// let bytes = f.to_parquet_bitset(); // e.g. read from a Parquet file
/// let view = SplitBlockBits::try_new(&bytes)?;
/// assert_eq!(view.blocks(), 32);
/// assert!(view.contains_hash(f.hasher().hash("abc").lo));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct SplitBlockBits<'a> {
    bytes: &'a [u8],
    blocks: u64,
}

impl<'a> SplitBlockBits<'a> {
    /// A view of `bitset` (a positive multiple of 32 bytes, at most 2³² blocks).
    pub fn try_new(bitset: &'a [u8]) -> Result<Self> {
        let blocks = (bitset.len() / BLOCK_BYTES) as u64;
        if bitset.is_empty() || !bitset.len().is_multiple_of(BLOCK_BYTES) || blocks > MAX_BLOCKS {
            return Err(invalid(
                "bytes",
                format!(
                    "a bitset is a positive multiple of 32 bytes, got {}",
                    bitset.len()
                ),
            ));
        }
        Ok(Self {
            bytes: bitset,
            blocks,
        })
    }

    /// The block a 64-bit hash probes in a bitset of `blocks` blocks: the spec's
    /// `((h >> 32) · z) >> 32`. It grows with `h >> 32`, so hashes sorted by their high half
    /// probe the blocks in order; and a single block read alone answers for its hashes as a
    /// one-block bitset (the index is then 0, the mask the same).
    ///
    /// ```
    /// # fn main() -> bloomery::Result<()> {
    /// use bloomery::{Filter, SplitBlockBits, SplitBlockBloomFilter};
    ///
    /// let mut f = SplitBlockBloomFilter::try_with_bytes(1024)?;
    /// f.insert("abc");
    /// let bytes = f.to_parquet_bitset();
    /// let h = f.hasher().hash("abc").lo;
    /// let b = SplitBlockBits::block_index(h, 32) as usize;
    /// let block = SplitBlockBits::try_new(&bytes[b * 32..b * 32 + 32])?;
    /// assert!(block.contains_hash(h));
    /// # Ok(()) }
    /// ```
    #[inline]
    pub fn block_index(h: u64, blocks: u64) -> u64 {
        ((h >> 32) * blocks) >> 32
    }

    /// The spec's `filter_check` of a 64-bit hash.
    #[inline]
    pub fn contains_hash(&self, h: u64) -> bool {
        let b = Self::block_index(h, self.blocks) as usize * BLOCK_BYTES;
        let block: &[u8; BLOCK_BYTES] = match self.bytes[b..b + BLOCK_BYTES].try_into() {
            Ok(a) => a,
            Err(_) => return true, // unreachable: b + 32 <= len by construction
        };
        SplitBlock::from_le_bytes(block).check(h as u32)
    }

    /// The index of the first of `hashes` that [`contains_hash`](Self::contains_hash)
    /// accepts (None: none is). One probe loop over the batch, with the AVX2 kernel inlined
    /// into it where the CPU has AVX2.
    pub fn first_hit(&self, hashes: &[u64]) -> Option<usize> {
        SplitBlock::first_hit_le(self.bytes, self.blocks, hashes)
    }

    /// [`first_hit`](Self::first_hit) of hashes whose masks were made before
    /// ([`MaskedHash`]): for keys probed against many filters (a prune of a lake of Parquet
    /// files), each probe is then two loads and a test.
    ///
    /// ```
    /// use bloomery::{KeyHasher, SplitBlockBits, SplitBlockBloomFilter};
    /// use bloomery::hashing::MaskedHash;
    ///
    /// let hasher = KeyHasher::parquet();
    /// let mut f = SplitBlockBloomFilter::try_with_bytes(1024)?;
    /// f.insert_hash(hasher.hash(&7i64).lo);
    /// let bitset = f.to_parquet_bitset();
    /// let bits = SplitBlockBits::try_new(&bitset)?;
    /// let keys: Vec<MaskedHash> = [3i64, 7].iter().map(|k| MaskedHash::new(hasher.hash(k).lo)).collect();
    /// assert_eq!(bits.first_hit_masked(&keys), Some(1));
    /// # Ok::<(), bloomery::Error>(())
    /// ```
    pub fn first_hit_masked(&self, probes: &[MaskedHash]) -> Option<usize> {
        SplitBlock::first_hit_masked_le(self.bytes, self.blocks, probes)
    }

    /// How many of `hashes` [`contains_hash`](Self::contains_hash) accepts (as
    /// [`first_hit`](Self::first_hit), over the whole batch).
    pub fn count_hits(&self, hashes: &[u64]) -> usize {
        SplitBlock::count_hits_le(self.bytes, self.blocks, hashes)
    }

    /// Number of 256-bit blocks.
    pub fn blocks(&self) -> u64 {
        self.blocks
    }
}

/// A split-block key hash with the Parquet spec's `mask` of its low half made once: the mask
/// is the same in every filter (only the block depends on the filter's size), so keys probed
/// against many filters ([`SplitBlockBits::first_hit_masked`]) make it once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MaskedHash {
    /// The 64-bit hash (its high half picks the block).
    pub(crate) hash: u64,
    mask: SplitBlock,
}

impl MaskedHash {
    /// The hash `hash` (as [`SplitBlockBits::contains_hash`] takes it) with its mask.
    pub fn new(hash: u64) -> Self {
        Self {
            hash,
            mask: SplitBlock::mask(hash as u32),
        }
    }

    /// The 64-bit hash.
    pub fn hash(&self) -> u64 {
        self.hash
    }
}

/// The spec's `mask(x)` as the spec writes it (one bit per 32-bit word): the reference the
/// block's mask ([`SplitBlock::mask`]) is tested against.
#[cfg(test)]
fn mask(x: u32) -> [u32; 8] {
    let mut m = [0u32; 8];
    for i in 0..8 {
        m[i] = 1u32 << (x.wrapping_mul(SALT[i]) >> 27);
    }
    m
}

/// The Parquet split-block Bloom filter, byte for byte as the Apache Parquet specification
/// (`BloomFilter.md`, "Split Block Bloom Filters") defines it, so bitsets move between
/// bloomery and Parquet readers and writers unchanged.
///
/// - The bitset is `z` blocks of 256 bits; a block is eight 32-bit little-endian words.
/// - A value is hashed with xxHash64, seed 0, over its plain encoding (integers as
///   little-endian bytes, byte arrays as their bytes) — [`KeyHasher::parquet`].
/// - Block index: `((h >> 32) · z) >> 32`. The low 32 bits `x` make the mask: for each word
///   `i`, bit `(x · SALT[i]) >> 27` (wrapping 32-bit multiply), with the spec's eight salts.
///
/// It is a blocked filter with k = 8 and one bit per 32-bit word (Putze et al.'s "split"
/// variant). [`params::fpr_split_block`] is its exact model; sizing picks the least block
/// count meeting the rate (the Parquet writers in Java and Rust round the byte size up to a
/// power of two; any multiple of 32 bytes is valid for readers).
///
/// **When to pick it:** to write or read Parquet bloom filters, or to share a filter with
/// systems that speak Parquet's SBBF. Otherwise [`crate::BlockedBloomFilter`] gives the same
/// speed with a tunable k and a tighter size.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{Filter, SplitBlockBloomFilter};
///
/// let mut f = SplitBlockBloomFilter::try_new(1000, 0.01)?;
/// f.insert(&42i64); // Parquet's plain encoding and xxHash64, as a Parquet reader hashes
/// let bitset = f.to_parquet_bitset(); // the bytes a Parquet file stores
/// assert_eq!(bitset.len() % 32, 0);
/// let g = SplitBlockBloomFilter::from_parquet_bitset(&bitset)?;
/// assert!(g.contains(&42i64));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct SplitBlockBloomFilter {
    core: Core,
    blocks: u64,
}

impl Build for SplitBlockBloomFilter {
    type Options = ();
    fn build(b: &Builder<Self>) -> Result<Self> {
        let b = &b.sizing;
        if let Some(k) = b.hashes {
            if k != 8 {
                return Err(invalid(
                    "hashes",
                    "the split-block filter always sets 8 bits per key",
                ));
            }
        }
        let (blocks, n, p) = match b.bits {
            Some(0) => return Err(invalid("bits", "must be at least 1")),
            Some(m) => (
                m.div_ceil(256).max(1),
                b.capacity.unwrap_or(0),
                b.fpr.unwrap_or(0.0),
            ),
            None => {
                let (n, p) = b.sized()?;
                store::check_size((params::bits_asymptotic(n, p) / 8.0) as u64, b.limit())?;
                (params::split_block_blocks(n, p)?, n, p)
            }
        };
        // Parquet's hash unless the caller chose one (then used as given, even the default
        // xxh3: see `Builder::hasher`).
        let hasher = b.hasher.unwrap_or_else(KeyHasher::parquet);
        let mut f = Self::with_blocks(blocks, hasher, b.limit())?;
        f.core.capacity = n;
        f.core.target_fpr = if p > 0.0 && p < 1.0 { p } else { 0.0 };
        Ok(f)
    }
}

impl SplitBlockBloomFilter {
    /// The empty filter of this one's shape, hasher, capacity and target (its words zero pages
    /// never written), holding `items`: the header of a union or intersection streamed into a
    /// file ([`crate::AnyFilter::union_files`]).
    pub(crate) fn stream_shell(&self, items: u64) -> Result<Self> {
        let mut out = crate::store::untouched_arrays(|| {
            Self::with_blocks(self.blocks, self.core.hasher, u64::MAX)
        })?;
        out.core.items = items;
        out.core.capacity = self.core.capacity;
        out.core.target_fpr = self.core.target_fpr;
        Ok(out)
    }

    /// Largest bitset Parquet writers produce (128 MiB); larger filters are allowed here but
    /// will not be accepted by every Parquet reader.
    pub const PARQUET_MAX_BYTES: usize = PARQUET_MAX_BYTES;

    /// A builder. Unless a hasher is given ([`Builder::hasher`], `seed`, `keyed`), keys are
    /// hashed with Parquet's xxHash64; a given hasher is used as given, and the filter is
    /// then not readable by Parquet ([`Self::is_parquet_compatible`]).
    pub fn builder() -> Builder<Self> {
        Builder::new()
    }

    /// Sized for `n` distinct values at rate `p`.
    pub fn try_new(n: u64, p: f64) -> Result<Self> {
        Self::builder().capacity(n).fpr(p).try_build()
    }

    /// A filter of `num_bytes` bytes (a positive multiple of 32), as Parquet sizes them.
    pub fn try_with_bytes(num_bytes: usize) -> Result<Self> {
        if num_bytes == 0 || !num_bytes.is_multiple_of(BLOCK_BYTES) {
            return Err(invalid(
                "bytes",
                format!("must be a positive multiple of 32, got {num_bytes}"),
            ));
        }
        Self::with_blocks(
            (num_bytes / BLOCK_BYTES) as u64,
            KeyHasher::parquet(),
            store::max_bytes(),
        )
    }

    fn with_blocks(blocks: u64, hasher: KeyHasher, limit: u64) -> Result<Self> {
        if blocks == 0 || blocks > MAX_BLOCKS {
            return Err(invalid(
                "bits",
                format!("need 1..={MAX_BLOCKS} blocks, got {blocks}"),
            ));
        }
        let words = blocks
            .checked_mul(4)
            .and_then(|w| usize::try_from(w).ok())
            .ok_or_else(|| invalid("bits", "too large for this platform"))?;
        Ok(Self {
            core: Core::new(words, hasher, limit)?,
            blocks,
        })
    }

    /// Load a raw Parquet bitset (the bytes after the filter's Thrift header in a Parquet file).
    pub fn from_parquet_bitset(bitset: &[u8]) -> Result<Self> {
        let mut f = Self::try_with_bytes(bitset.len())?;
        let words = f.core.words.as_mut_slice();
        for (w, chunk) in words.iter_mut().zip(bitset.chunks_exact(8)) {
            let mut b = [0u8; 8];
            b.copy_from_slice(chunk);
            *w = u64::from_le_bytes(b);
        }
        Ok(f)
    }

    /// The raw Parquet bitset: exactly `32 · blocks` bytes, as written into a Parquet file.
    pub fn to_parquet_bitset(&self) -> Vec<u8> {
        self.as_words()
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect()
    }

    /// True when the filter hashes as the Parquet specification requires (xxHash64, seed 0),
    /// so its bitset means the same to Parquet readers. A filter built with another hasher
    /// (a seed, keyed mode) has Parquet's layout but not its bits.
    pub fn is_parquet_compatible(&self) -> bool {
        self.core.hasher == KeyHasher::parquet()
    }

    /// Sized as the Parquet writers of arrow-rs and parquet-mr size a column chunk's filter
    /// for `ndv` distinct values at rate `fpp`: [`parquet_num_bytes`] bytes, a power of two, so
    /// the same values give the same bytes as theirs.
    pub fn try_with_parquet_sizing(ndv: u64, fpp: f64) -> Result<Self> {
        let mut f = Self::try_with_bytes(parquet_num_bytes(ndv, fpp)?)?;
        f.core.capacity = ndv;
        f.core.target_fpr = fpp;
        Ok(f)
    }

    /// Record the sizing a bitset made elsewhere was meant for (0: unknown) and set the item
    /// count to its estimate from the fill: a Parquet bitset records neither.
    pub fn set_imported_sizing(&mut self, capacity: u64, target_fpr: f64) -> Result<()> {
        if !(target_fpr == 0.0 || (target_fpr > 0.0 && target_fpr < 1.0)) {
            return Err(invalid(
                "fpr",
                format!("must be in (0, 1), got {target_fpr}"),
            ));
        }
        self.core.capacity = capacity;
        self.core.target_fpr = target_fpr;
        let est = self.estimated_len();
        self.core.items = if est.is_finite() {
            est.round() as u64
        } else {
            self.blocks.saturating_mul(256)
        };
        Ok(())
    }

    #[cfg_attr(not(feature = "parquet"), allow(dead_code))]
    /// Set the item count, capacity and target rate (for structures that store split-block
    /// filters in their own files and record these themselves).
    pub(crate) fn set_counts(&mut self, items: u64, capacity: u64, target_fpr: f64) {
        self.core.items = items;
        self.core.capacity = capacity;
        self.core.target_fpr = target_fpr;
    }

    #[cfg_attr(not(feature = "parquet"), allow(dead_code))]
    /// The words (for structures that store split-block filters in their own files).
    pub(crate) fn words(&self) -> &store::Words {
        &self.core.words
    }

    #[cfg_attr(not(feature = "parquet"), allow(dead_code))]
    /// A filter over `words` (exactly `4 · blocks` of them), as decoded from a file.
    pub(crate) fn from_words(
        words: store::Words,
        blocks: u64,
        hasher: KeyHasher,
        items: u64,
    ) -> Result<Self> {
        if blocks == 0 || blocks > MAX_BLOCKS || words.len() as u64 != blocks * 4 {
            return Err(inconsistent(format!(
                "split-block filter of {blocks} blocks over {} words",
                words.len()
            )));
        }
        let mut core = Core::from_header(&format::Header::new(Kind::SplitBlock, hasher), words);
        core.items = items;
        Ok(Self { core, blocks })
    }

    /// Number of 256-bit blocks.
    pub fn blocks(&self) -> u64 {
        self.blocks
    }

    /// Bitset size in bytes.
    pub fn num_bytes(&self) -> usize {
        self.blocks as usize * BLOCK_BYTES
    }

    /// The raw words (block b is words `4b..4b+4`; 32-bit word j of a block is the low or
    /// high half of 64-bit word `4b + j/2`, matching the little-endian byte layout).
    pub fn as_words(&self) -> &[u64] {
        self.core.words.as_slice()
    }

    /// Insert a 64-bit hash directly (the spec's `filter_insert`).
    #[inline]
    pub fn insert_hash(&mut self, h: u64) -> bool {
        let b = self.block_of(h);
        let new = SplitBlock::at_mut(self.core.words.as_mut_slice(), b).insert(h as u32);
        self.core.items = self.core.items.saturating_add(u64::from(new));
        new
    }

    /// Check a 64-bit hash directly (the spec's `filter_check`).
    #[inline]
    pub fn contains_hash(&self, h: u64) -> bool {
        SplitBlock::at(self.as_words(), self.block_of(h)).check(h as u32)
    }

    #[inline(always)]
    fn block_of(&self, h: u64) -> usize {
        (((h >> 32) * self.blocks) >> 32) as usize * SPLIT_WORDS
    }

    /// Remove every item.
    pub fn clear(&mut self) {
        self.core.words.as_mut_slice().fill(0);
        self.core.items = 0;
    }

    /// Mark a damaged byte range as all ones (Salman §3).
    pub fn mark_damaged(&mut self, bytes: std::ops::Range<u64>) -> Result<()> {
        let valid = self.num_bytes() as u64;
        if bytes.end > valid {
            return Err(invalid(
                "range",
                format!("{bytes:?} is outside the {valid}-byte bitset"),
            ));
        }
        self.core.mark_damaged(bytes)
    }

    pub(crate) fn check_compatible(&self, other: &Self) -> Result<()> {
        if self.blocks != other.blocks {
            return Err(shape_mismatch(
                format!("blocks={}", self.blocks),
                format!("blocks={}", other.blocks),
            ));
        }
        self.core.check_hasher(&other.core)
    }
}

impl Filter for SplitBlockBloomFilter {
    #[inline]
    fn hasher(&self) -> &KeyHasher {
        &self.core.hasher
    }

    /// Uses the low 64 bits of the hash as the spec's 64-bit hash.
    #[inline]
    fn insert_hashed(&mut self, h: Hashed) -> bool {
        self.insert_hash(h.lo)
    }

    #[inline]
    fn contains_hashed(&self, h: Hashed) -> bool {
        self.contains_hash(h.lo)
    }

    fn len(&self) -> u64 {
        self.core.items
    }
}

impl Merge for SplitBlockBloomFilter {
    fn union_with(&mut self, other: &Self) -> Result<()> {
        self.check_compatible(other)?;
        self.core.union(&other.core)
    }

    fn intersect_with(&mut self, other: &Self) -> Result<()> {
        self.check_compatible(other)?;
        self.core.intersect(&other.core, self.bit_len(), 8)
    }
}

impl Stats for SplitBlockBloomFilter {
    fn bit_len(&self) -> u64 {
        self.blocks * 256
    }
    fn count_ones(&self) -> u64 {
        store::count_ones(self.as_words())
    }
    fn hash_count(&self) -> u32 {
        8
    }
    /// Exact for the current contents: the mean over blocks of the product over the eight
    /// words of each word's fill.
    fn current_fpr(&self) -> f64 {
        let sum: f64 = self
            .as_words()
            .chunks_exact(4)
            .map(|b| {
                b.iter()
                    .flat_map(|w| [*w as u32, (*w >> 32) as u32])
                    .map(|w| f64::from(w.count_ones()) / 32.0)
                    .product::<f64>()
            })
            .sum();
        sum / self.blocks as f64
    }
    fn capacity(&self) -> u64 {
        self.core.capacity
    }
    fn target_fpr(&self) -> f64 {
        self.core.target_fpr
    }
}

impl Persist for SplitBlockBloomFilter {
    const KIND: Kind = Kind::SplitBlock;

    fn encode_parts(&self) -> (Header, Payload<'_>) {
        let params = ParamWriter::new().u64(self.blocks).finish();
        (
            self.core.header(Kind::SplitBlock, params),
            Payload::new(vec![&self.core.words]),
        )
    }

    fn decode_from(d: &Decoded, src: Source<'_>, limit: u64) -> Result<Self> {
        let mut r = ParamReader::new(&d.header.params);
        let blocks = r.u64()?;
        r.finish()?;
        if blocks == 0 || blocks > MAX_BLOCKS {
            return Err(inconsistent(format!(
                "split-block filter with {blocks} blocks"
            )));
        }
        let words = blocks
            .checked_mul(4)
            .and_then(|w| usize::try_from(w).ok())
            .ok_or_else(|| inconsistent("too many blocks"))?;
        format::check_payload(d, words)?;
        Ok(Self {
            core: Core::from_header(&d.header, src.words(d.payload_offset, words, limit)?),
            blocks,
        })
    }
}

crate::filter::impl_extend!(SplitBlockBloomFilter);
crate::filter::impl_set_operators!(SplitBlockBloomFilter);

impl crate::dispatch::SetKind for SplitBlockBloomFilter {
    const CAPABILITIES: Capabilities = Capabilities {
        insert: true,
        hashed: true,
        merge: true,
        mark_damaged: true,
        ..Capabilities::NONE
    };
    hashed_set_kind!();
    fn stats(&self) -> SetStats {
        SetStats::of(self)
    }
    fn mark_damaged(&mut self, bytes: std::ops::Range<u64>) -> Result<()> {
        SplitBlockBloomFilter::mark_damaged(self, bytes)
    }
    fn clear(&mut self) -> Result<()> {
        SplitBlockBloomFilter::clear(self);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_mask_sets_one_bit_per_word() {
        for x in [0u32, 1, 0xdead_beef, u32::MAX] {
            assert!(mask(x).iter().all(|w| w.count_ones() == 1));
        }
    }

    /// The block's mask is the spec's `mask` in the little-endian word layout, and every
    /// kernel of this build (AVX2 where the CPU has it, portable under `BLOOMERY_NO_SIMD`)
    /// agrees with the portable one on random blocks dense enough that both answers occur.
    #[test]
    fn block_kernels_agree_with_the_portable_kernel_and_the_spec_mask() {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let (mut yes, mut no) = (0, 0);
        for _ in 0..20_000 {
            let key = next() as u32;
            let spec = mask(key);
            let m = SplitBlock::mask(key);
            for (j, &w) in spec.iter().enumerate() {
                assert_eq!((m.0[j / 2] >> (32 * (j % 2))) as u32, w);
            }
            let block = SplitBlock([
                next() | next(),
                next() | next(),
                next() | next(),
                next() | next(),
            ]);
            let want = block.0.iter().zip(m.0).all(|(w, m)| w & m == m);
            assert_eq!(block.check(key), want);
            assert_eq!(block.check_scalar(key), want);
            if want {
                yes += 1
            } else {
                no += 1
            }
            let (mut a, mut b) = (block, block);
            assert_eq!(a.insert(key), !want);
            assert_eq!(b.insert_scalar(key), !want);
            assert_eq!(a, b);
            assert!(a
                .0
                .iter()
                .zip(block.0)
                .zip(m.0)
                .all(|((a, w), m)| *a == w | m));
        }
        assert!(yes > 1000 && no > 1000, "yes={yes} no={no}");
    }

    /// The batched probes answer as `contains_hash` one hash at a time, on every kernel of
    /// this build and the portable one, over a filter whose words are ~90% set (72 inserts
    /// per block: 1 − (31/32)⁷² ≈ 0.9, so a random hash passes with probability ≈ 0.9⁸ ≈ 0.43).
    #[test]
    fn batched_probes_answer_as_single_probes() {
        let mut f = SplitBlockBloomFilter::try_with_bytes(64 * 32).unwrap();
        let mut x = 0x51AF_D7ED_558C_CD1Du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..64 * 72 {
            f.insert_hash(next());
        }
        let bytes = f.to_parquet_bitset();
        let bits = SplitBlockBits::try_new(&bytes).unwrap();
        let hashes: Vec<u64> = (0..5000).map(|_| next()).collect();
        let single: Vec<bool> = hashes.iter().map(|&h| bits.contains_hash(h)).collect();
        let hits = single.iter().filter(|&&b| b).count();
        assert!(hits > 1500 && hits < 3000, "{hits}");
        assert_eq!(bits.count_hits(&hashes), hits);
        let b = bits.blocks();
        assert_eq!(SplitBlock::count_hits_le_scalar(&bytes, b, &hashes), hits);
        let masked: Vec<MaskedHash> = hashes.iter().map(|&h| MaskedHash::new(h)).collect();
        for start in (0..hashes.len()).step_by(37) {
            let want = single[start..].iter().position(|&b| b);
            assert_eq!(bits.first_hit(&hashes[start..]), want);
            assert_eq!(
                SplitBlock::first_hit_le_scalar(&bytes, b, &hashes[start..]),
                want
            );
            assert_eq!(bits.first_hit_masked(&masked[start..]), want);
            assert_eq!(
                SplitBlock::first_hit_masked_le_scalar(&bytes, b, &masked[start..]),
                want
            );
        }
        assert_eq!(bits.first_hit(&[]), None);
        assert_eq!(bits.first_hit_masked(&[]), None);
        assert_eq!(bits.count_hits(&[]), 0);
        // one hit after n misses, for every place in and after the kernels' groups of four
        let misses: Vec<u64> = hashes
            .iter()
            .zip(&single)
            .filter(|(_, &s)| !s)
            .map(|(&h, _)| h)
            .take(40)
            .collect();
        let hit = hashes[single.iter().position(|&b| b).unwrap()];
        for n in 0..misses.len() {
            let mut batch = misses[..n].to_vec();
            assert_eq!(bits.first_hit(&batch), None, "{n} misses");
            batch.push(hit);
            batch.extend_from_slice(&misses[..n % 5]);
            assert_eq!(bits.first_hit(&batch), Some(n), "{n} misses");
            let batch: Vec<MaskedHash> = batch.into_iter().map(MaskedHash::new).collect();
            assert_eq!(bits.first_hit_masked(&batch), Some(n), "{n} misses");
            assert_eq!(bits.first_hit_masked(&batch[..n]), None, "{n} misses");
        }
    }

    #[test]
    fn bits_view_answers_as_the_filter() {
        let mut f = SplitBlockBloomFilter::try_with_bytes(7 * 32).unwrap();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..150 {
            f.insert_hash(next());
        }
        let bits = f.to_parquet_bitset();
        let view = SplitBlockBits::try_new(&bits).unwrap();
        assert_eq!(view.blocks(), 7);
        let mut yes = 0;
        for _ in 0..20_000 {
            let h = next();
            assert_eq!(view.contains_hash(h), f.contains_hash(h));
            yes += u32::from(f.contains_hash(h));
        }
        assert!(yes > 0 && yes < 20_000);
        for len in [0usize, 31, 33] {
            assert!(SplitBlockBits::try_new(&vec![0; len]).is_err());
        }
    }

    #[test]
    fn bitset_roundtrip() {
        let mut f = SplitBlockBloomFilter::try_with_bytes(1024).unwrap();
        for i in 0..100i64 {
            f.insert(&i);
        }
        let bits = f.to_parquet_bitset();
        assert_eq!(bits.len(), 1024);
        let g = SplitBlockBloomFilter::from_parquet_bitset(&bits).unwrap();
        assert!((0..100i64).all(|i| g.contains(&i)));
        assert!(SplitBlockBloomFilter::try_with_bytes(33).is_err());
    }
}
