//! The 512-bit line: [`Block`], with `mask`, `check` and `insert` under every layout.
//!
//! Which bits a key sets is defined once ([`for_each_pos`], [`sector_shift`], [`salted_pos`]);
//! the kernels that test and set them live one module per instruction set, each with the same
//! functions (`check_positions`, `insert_positions`, `check_sectors`, `insert_sectors`, and
//! `check_salted`, `insert_salted`, generic over the block's width in words: `W` = 8 for the
//! 512-bit salted block, 4 for the 256-bit one):
//!
//! - `scalar`: portable Rust, the reference every other kernel is tested against;
//! - `x86` (x86-64 only): the positions kernels compiled for BMI2 and the sectors kernels as
//!   two 256-bit AVX2 operations (the salted kernels likewise: two for the 512-bit block, one
//!   for the 256-bit one), each taken when [`crate::simd`]'s one reading of the CPU (and of
//!   `BLOOMERY_NO_SIMD`) allows it, falling back to `scalar` otherwise.
//!
//! Every layout stores its bits in 512-bit lines of eight words, and every layout's key lands
//! in the line `block_index(h, lines)`. The salted-256 layout's block is half a line: its
//! block is `reduce(h.lo, 2 · lines)` among twice as many 256-bit blocks, whose half of the
//! line is that index's lowest bit ([`place`]); the line methods take that `half` (ignored by
//! the other layouts).
//!
//! The module a build uses is picked once, by `cfg`, as `imp` (the way hashbrown picks the
//! implementation of its `Group`); [`Block`]'s methods call only `imp`.

use crate::hash::{mix64, reduce, Hashed};
use crate::kind::Kind;

mod scalar;
#[cfg(target_arch = "x86_64")]
pub(super) mod x86;

#[cfg(not(target_arch = "x86_64"))]
use scalar as imp;
#[cfg(target_arch = "x86_64")]
use x86 as imp;

/// 64-bit words per block (one 64-byte cache line).
pub(super) const BLOCK_WORDS: usize = 8;

/// 64-bit words per block of the salted-256 layout (half a line).
pub(super) const HALF_WORDS: usize = 4;

/// One 512-bit block of a blocked filter: eight 64-bit words, word `p / 64` holding bit
/// position `p`. A view over the filter's words (`#[repr(transparent)]`), never a copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, bytemuck::TransparentWrapper)]
#[repr(transparent)]
pub(crate) struct Block(pub(crate) [u64; BLOCK_WORDS]);

impl Block {
    /// The block starting at word `at` of `words` (panics if it does not fit: callers index
    /// blocks they computed from the filter's block count).
    #[inline(always)]
    pub(super) fn at(words: &[u64], at: usize) -> &Block {
        let w: &[u64; BLOCK_WORDS] = words[at..at + BLOCK_WORDS]
            .try_into()
            .expect("a block is BLOCK_WORDS words");
        bytemuck::TransparentWrapper::wrap_ref(w)
    }

    /// The block starting at word `at` of `words`, writable.
    #[inline(always)]
    pub(super) fn at_mut(words: &mut [u64], at: usize) -> &mut Block {
        let w: &mut [u64; BLOCK_WORDS] = (&mut words[at..at + BLOCK_WORDS])
            .try_into()
            .expect("a block is BLOCK_WORDS words");
        bytemuck::TransparentWrapper::wrap_mut(w)
    }

    /// The key's bits inside its line, as a line: what [`insert`](Self::insert) ORs in and
    /// [`check`](Self::check) tests for (`half`: the key's half of the line under the
    /// salted-256 layout, from [`place`]; ignored by the others).
    #[inline(always)]
    pub(super) fn mask(h: Hashed, k: u32, layout: BlockLayout, half: usize) -> Block {
        let mut mask = [0u64; BLOCK_WORDS];
        match layout {
            BlockLayout::Positions => for_each_bit(h, k, |w, bit| mask[w] |= bit),
            BlockLayout::Sectors => {
                for (j, m) in mask.iter_mut().enumerate() {
                    *m = 1u64 << sector_shift(h, j);
                }
            }
            BlockLayout::Salted => {
                for j in 0..BLOCK_WORDS {
                    let p = salted_pos::<BLOCK_WORDS>(h, j);
                    mask[p >> 6] |= 1u64 << (p & 63);
                }
            }
            BlockLayout::Salted256 => {
                for j in 0..BLOCK_WORDS {
                    let p = half * 256 + salted_pos::<HALF_WORDS>(h, j);
                    mask[p >> 6] |= 1u64 << (p & 63);
                }
            }
        }
        Block(mask)
    }

    /// The 256-bit half `half` (0 or 1) of this line.
    #[inline(always)]
    pub(super) fn half(&self, half: usize) -> &[u64; HALF_WORDS] {
        let (a, b) = self.0.split_at(HALF_WORDS);
        let w = if half == 0 { a } else { b };
        w.try_into().expect("a half is HALF_WORDS words")
    }

    /// The 256-bit half `half` (0 or 1) of this line, writable.
    #[inline(always)]
    pub(super) fn half_mut(&mut self, half: usize) -> &mut [u64; HALF_WORDS] {
        let (a, b) = self.0.split_at_mut(HALF_WORDS);
        let w = if half == 0 { a } else { b };
        w.try_into().expect("a half is HALF_WORDS words")
    }

    /// True if all of the key's bits are set in this line (`half` as in [`mask`](Self::mask)).
    #[inline(always)]
    pub(super) fn check(&self, h: Hashed, k: u32, layout: BlockLayout, half: usize) -> bool {
        match layout {
            BlockLayout::Positions => imp::check_positions(self, h, k),
            BlockLayout::Sectors => imp::check_sectors(self, h),
            BlockLayout::Salted => imp::check_salted(&self.0, h),
            BlockLayout::Salted256 => imp::check_salted(self.half(half), h),
        }
    }

    /// Set the key's bits; true if any of them was zero (the key is new).
    #[inline(always)]
    pub(super) fn insert(&mut self, h: Hashed, k: u32, layout: BlockLayout, half: usize) -> bool {
        match layout {
            BlockLayout::Positions => imp::insert_positions(self, h, k),
            BlockLayout::Sectors => imp::insert_sectors(self, h),
            BlockLayout::Salted => imp::insert_salted(&mut self.0, h),
            BlockLayout::Salted256 => imp::insert_salted(self.half_mut(half), h),
        }
    }

    /// [`check`](Self::check) on the portable kernel (for tests comparing kernels).
    #[cfg(test)]
    pub(super) fn check_scalar(&self, h: Hashed, k: u32, layout: BlockLayout, half: usize) -> bool {
        match layout {
            BlockLayout::Positions => scalar::check_positions(self, h, k),
            BlockLayout::Sectors => scalar::check_sectors(self, h),
            BlockLayout::Salted => scalar::check_salted(&self.0, h),
            BlockLayout::Salted256 => scalar::check_salted(self.half(half), h),
        }
    }

    /// [`insert`](Self::insert) on the portable kernel (for tests comparing kernels).
    #[cfg(test)]
    pub(super) fn insert_scalar(
        &mut self,
        h: Hashed,
        k: u32,
        layout: BlockLayout,
        half: usize,
    ) -> bool {
        match layout {
            BlockLayout::Positions => scalar::insert_positions(self, h, k),
            BlockLayout::Sectors => scalar::insert_sectors(self, h),
            BlockLayout::Salted => scalar::insert_salted(&mut self.0, h),
            BlockLayout::Salted256 => scalar::insert_salted(self.half_mut(half), h),
        }
    }
}

/// Calls `f(p)` for each of the key's k bit positions `p` (0..512) inside its block, in order:
/// position `p` is word `p / 64`, bit `1 << (p % 64)`. This is the one definition of which bits
/// a key sets under [`BlockLayout::Positions`]; the mask and every kernel are built on it.
///
/// The first 7 positions are the 9-bit slices of `h.hi` from the low end; each further group of
/// 7 comes from a fixed mix of both halves and the round number.
#[inline(always)]
pub(super) fn for_each_pos(h: Hashed, k: u32, mut f: impl FnMut(usize)) {
    let mut x = h.hi;
    let mut left = k;
    let mut round = 0u64;
    loop {
        let take = left.min(7);
        for _ in 0..take {
            f((x & 511) as usize);
            x >>= 9;
        }
        left -= take;
        if left == 0 {
            return;
        }
        // 7 more 9-bit positions from both halves and the round number
        round += 1;
        x = mix64(h.hi ^ h.lo.rotate_left(32) ^ round.wrapping_mul(0xD1B5_4A32_D192_ED03));
    }
}

/// [`for_each_pos`] as `f(word, bit mask)`.
#[inline(always)]
pub(super) fn for_each_bit(h: Hashed, k: u32, mut f: impl FnMut(usize, u64)) {
    for_each_pos(h, k, |p| f(p >> 6, 1u64 << (p & 63)));
}

/// Sectors layout: the bit of word `j` (0..8) for hash `h` is `(h.hi >> 6j) & 63`.
#[inline(always)]
pub(super) fn sector_shift(h: Hashed, j: usize) -> u64 {
    (h.hi >> (6 * j)) & 63
}

/// The odd 32-bit multipliers of the salted layout, one per 64-bit word of the block: the
/// eight salts of the Parquet split-block filter specification (Apache Parquet,
/// "Bloom Filter", §"Technical Approach"), here picking 6-bit positions in 64-bit words.
pub(super) const SALTS: [u32; BLOCK_WORDS] = [
    0x47b6_137b,
    0x4497_4d91,
    0x8824_ad5b,
    0xa2b7_289d,
    0x7054_95c7,
    0x2df1_424b,
    0x9efc_4947,
    0x5c6b_fb31,
];

/// Salted layouts: the bit of lane `j` (0..8) of a block of `W` 64-bit words, as a position
/// in the block (word `p / 64`, bit `p % 64`). The block's `64·W` bits are eight lanes of
/// `8·W` bits (64-bit lanes for the 512-bit block, `W` = 8; 32-bit lanes for the 256-bit
/// block, `W` = 4, lane j being the low or high half of word j / 2, as a little-endian vector
/// of eight u32 lanes); the bit inside lane j is the top `log2(8·W)` bits of the low 32 bits of
/// `h.lo` times `SALTS[j]` (mod 2³²). The block is chosen by multiply-shift of the whole
/// `h.lo`, decided by its high bits, so for up to 2³² blocks the block and the bits inside it
/// come from different bits of the one 64-bit hash.
#[inline(always)]
pub(super) fn salted_pos<const W: usize>(h: Hashed, j: usize) -> usize {
    const { assert!(W == BLOCK_WORDS || W == HALF_WORDS) };
    let lane = 8 * W;
    let s = (h.lo as u32).wrapping_mul(SALTS[j]) >> (32 - lane.trailing_zeros());
    lane * j + s as usize
}

/// How a key's bits are placed inside its 512-bit block. Every layout picks the block the same
/// way (multiply-shift of the hash's low half); they differ inside it, and each is its own
/// file kind, so a file always reads back with the layout it was written with.
///
/// ```
/// use bloomery::{BlockedBloomFilter, Filter, Kind};
/// use bloomery::builders::BlockLayout;
///
/// # fn main() -> bloomery::Result<()> {
/// let f = BlockedBloomFilter::try_with_sectors(1024)?;
/// assert_eq!(f.layout(), BlockLayout::Sectors);
/// assert_eq!(f.hashes(), 8); // one bit in each of the block's eight words
/// assert_eq!(BlockLayout::Sectors.kind(), Kind::BlockedSectors);
/// assert_eq!(BlockLayout::Positions.name(), "positions");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BlockLayout {
    /// k positions anywhere in the block from 9-bit slices of the high hash half (any k from
    /// 1 to 32; file kind `blocked`, id 3). The memory-optimal choice at any rate, and the
    /// layout every `blocked` file written before format kind 20 existed uses.
    Positions,
    /// One bit in each of the block's eight 64-bit words ("sectors"): bit `(hi >> 6j) & 63`
    /// of word j, so k = 8 (file kind `blocked-sectors`, id 20). A query is two 256-bit vector
    /// tests with AVX2 (eight shifts and ANDs without), about half the instructions of the
    /// positions layout, which lets the CPU overlap more cache misses. It needs at most ~2%
    /// more memory than the best positions shape between rates of 2·10⁻² and 10⁻³ and more
    /// outside that range; the builder picks it automatically only where it costs at most
    /// `SECTORS_MAX_EXTRA` more memory.
    Sectors,
    /// One bit in each of the block's eight 64-bit words, like [`Sectors`](Self::Sectors), but
    /// all from one 64-bit hash (file kind `blocked-salted`, id 31): the block by
    /// multiply-shift of the hash's low half [`Hashed::lo`], the bit of word j from the low
    /// 32 bits of it times an odd salt (`salted_pos`), the split-block idea of the Parquet
    /// specification on 64-bit words. So the default hasher is xxh3-64
    /// ([`HashAlgorithm::Xxh3_64`](crate::hashing::HashAlgorithm::Xxh3_64)) instead of
    /// xxh3-128, cheaper per key; keyed mode keeps SipHash-1-3 and uses its low half. Same
    /// k = 8, same false-positive model and same memory as the sectors layout; the default of
    /// the blocked filter wherever sectors would be chosen.
    Salted,
    /// The salted layout on 256-bit blocks (file kind `blocked-salted256`, id 32): the
    /// block of Parquet's split-block filter (eight 32-bit lanes, one bit each, the same eight
    /// salts) hashed with xxh3-64. The key's block is `reduce(h.lo, 2 · lines)` among twice as
    /// many 256-bit blocks as the filter has 512-bit lines, so a line holds two blocks
    /// (the key's line is the one every layout picks); the bit of lane j is the top 5 bits of
    /// the low 32 bits of `h.lo` times the j-th salt. A query or an insert is one 256-bit
    /// vector operation with AVX2. Smaller blocks crowd more unevenly, so it needs a few per
    /// cent more memory than the 512-bit salted layout for the same rate
    /// ([`params::fpr_salted256`](crate::params::fpr_salted256), the split-block model); sizing
    /// from (n, p) never picks it: it is chosen by name (`--kind blocked-salted256`), since the
    /// Redis module's BF values, which `cluster push` loads, do not hold it yet.
    Salted256,
}

/// The automatic layout choice takes [`BlockLayout::Sectors`] when its block count is at most
/// this factor above the best [`BlockLayout::Positions`] shape.
pub const SECTORS_MAX_EXTRA: f64 = 1.05;

impl BlockLayout {
    /// The file kind of this layout.
    pub fn kind(self) -> Kind {
        match self {
            BlockLayout::Positions => Kind::Blocked,
            BlockLayout::Sectors => Kind::BlockedSectors,
            BlockLayout::Salted => Kind::BlockedSalted,
            BlockLayout::Salted256 => Kind::BlockedSalted256,
        }
    }

    /// Short name (`positions` / `sectors` / `salted` / `salted256`).
    pub fn name(self) -> &'static str {
        match self {
            BlockLayout::Positions => "positions",
            BlockLayout::Sectors => "sectors",
            BlockLayout::Salted => "salted",
            BlockLayout::Salted256 => "salted256",
        }
    }

    /// 64-bit words per block: a whole line, or half of one under the salted-256 layout.
    pub(crate) fn block_words(self) -> usize {
        if self == BlockLayout::Salted256 {
            HALF_WORDS
        } else {
            BLOCK_WORDS
        }
    }

    /// True for the layouts hashed with one 64-bit hash (salted and salted-256).
    pub fn is_salted(self) -> bool {
        matches!(self, BlockLayout::Salted | BlockLayout::Salted256)
    }

    /// True for the layouts that set exactly 8 bits per key (all but positions).
    pub fn sets_eight(self) -> bool {
        self != BlockLayout::Positions
    }
}

/// Index of the key's block among `blocks`.
#[inline(always)]
pub(super) fn block_index(h: Hashed, blocks: u64) -> usize {
    reduce(h.lo, blocks) as usize
}

/// The first word of the key's block among `blocks`.
#[inline(always)]
pub(super) fn block_start(h: Hashed, blocks: u64) -> usize {
    block_index(h, blocks) * BLOCK_WORDS
}

/// The key's place under `layout` among `lines` 512-bit lines: the first word of its line and
/// which half of the line holds its block (0 except under the salted-256 layout, whose block
/// is `reduce(h.lo, 2 · lines)`: its line is that index halved, which is
/// `block_index(h, lines)`, the line of every layout).
#[inline(always)]
pub(super) fn place(h: Hashed, lines: u64, layout: BlockLayout) -> (usize, usize) {
    if layout == BlockLayout::Salted256 {
        let b = reduce(h.lo, 2 * lines) as usize;
        ((b >> 1) * BLOCK_WORDS, b & 1)
    } else {
        (block_start(h, lines), 0)
    }
}
