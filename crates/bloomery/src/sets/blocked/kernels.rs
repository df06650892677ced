//! The 512-bit block's bit kernels: which bits a key sets in its block (both layouts), and the
//! portable, BMI2 and AVX2 ways to test and set them. One definition of the mapping serves every
//! path; the tests pin that all paths agree.

use super::*;

/// Calls `f(p)` for each of the key's k bit positions `p` (0..512) inside its block, in order:
/// position `p` is word `p / 64`, bit `1 << (p % 64)`. This is the one definition of which bits
/// a key sets; [`for_each_bit`], [`block_mask`] and the probes are built on it.
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

/// True if all of the key's bits are set in `block`.
///
/// Written as an AND of `word >> p` (bit 0 of the result is the answer) rather than a mask
/// test: with BMI2 each position is then a shift, a load-and-shift (`shrx` with a memory
/// operand) and an AND, which keeps a single query short enough for the CPU to overlap the
/// cache misses of several consecutive queries.
#[inline(always)]
pub(super) fn test_block(block: &[u64; BLOCK_WORDS], h: Hashed, k: u32) -> bool {
    let mut all = u64::MAX;
    for_each_pos(h, k, |p| all &= block[p >> 6] >> (p & 63));
    all & 1 == 1
}

/// Set the key's bits in `block`; true if any of them was zero (the key is new).
#[inline(always)]
pub(super) fn set_block(block: &mut [u64; BLOCK_WORDS], h: Hashed, k: u32) -> bool {
    let mut all = u64::MAX;
    for_each_pos(h, k, |p| {
        let w = &mut block[p >> 6];
        all &= *w >> (p & 63);
        *w |= 1u64 << (p & 63);
    });
    all & 1 == 0
}

/// [`test_block`] compiled for BMI2 (`shlx`/`shrx`/`andn`), used when the CPU has it.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi1,bmi2")]
pub(super) fn test_block_bmi2(block: &[u64; BLOCK_WORDS], h: Hashed, k: u32) -> bool {
    test_block(block, h, k)
}

/// [`set_block`] compiled for BMI2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi1,bmi2")]
pub(super) fn set_block_bmi2(block: &mut [u64; BLOCK_WORDS], h: Hashed, k: u32) -> bool {
    set_block(block, h, k)
}

/// [`test_block`] with run-time dispatch to the BMI2 build (same bits, fewer instructions).
#[inline(always)]
pub(super) fn probe_block(block: &[u64; BLOCK_WORDS], h: Hashed, k: u32) -> bool {
    #[cfg(target_arch = "x86_64")]
    if crate::simd::bmi2() {
        // SAFETY: the CPU supports BMI1 and BMI2 (`simd::bmi2` checked both with std's cached
        // CPUID test), which is all `test_block_bmi2` requires.
        return unsafe { test_block_bmi2(block, h, k) };
    }
    test_block(block, h, k)
}

/// [`set_block`] with run-time dispatch to the BMI2 build.
#[inline(always)]
pub(super) fn insert_block(block: &mut [u64; BLOCK_WORDS], h: Hashed, k: u32) -> bool {
    #[cfg(target_arch = "x86_64")]
    if crate::simd::bmi2() {
        // SAFETY: as in `probe_block`: the CPU supports the features the function enables.
        return unsafe { set_block_bmi2(block, h, k) };
    }
    set_block(block, h, k)
}

/// How a key's bits are placed inside its 512-bit block. Both layouts pick the block the same
/// way (multiply-shift of the hash's low half); they differ inside it, and each is its own
/// file kind, so a file always reads back with the layout it was written with.
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
        }
    }

    /// Short name (`positions` / `sectors`).
    pub fn name(self) -> &'static str {
        match self {
            BlockLayout::Positions => "positions",
            BlockLayout::Sectors => "sectors",
        }
    }
}

/// Sectors layout: the bit of word `j` (0..8) for hash `h` is `(h.hi >> 6j) & 63`.
#[inline(always)]
pub(super) fn sector_shift(h: Hashed, j: usize) -> u64 {
    (h.hi >> (6 * j)) & 63
}

/// True if all eight sector bits of the key are set in `block` (portable version).
#[inline(always)]
pub(super) fn sector_test(block: &[u64; BLOCK_WORDS], h: Hashed) -> bool {
    let mut all = u64::MAX;
    for (j, w) in block.iter().enumerate() {
        all &= w >> sector_shift(h, j);
    }
    all & 1 == 1
}

/// Set the key's eight sector bits; true if any was zero (portable version).
#[inline(always)]
pub(super) fn sector_set(block: &mut [u64; BLOCK_WORDS], h: Hashed) -> bool {
    let mut all = u64::MAX;
    for (j, w) in block.iter_mut().enumerate() {
        let s = sector_shift(h, j);
        all &= *w >> s;
        *w |= 1u64 << s;
    }
    all & 1 == 0
}

/// The sectors layout with AVX2: the eight shifts are two `vpsrlvq`, the masks two `vpsllvq`,
/// the test two `vptest` (carry set when every mask bit is set in the block).
#[cfg(target_arch = "x86_64")]
pub(super) mod sectors_avx2 {
    use super::{Hashed, BLOCK_WORDS};
    use std::arch::x86_64::*;

    /// The two 4-word masks of the key's sector bits.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn masks(h: Hashed) -> (__m256i, __m256i) {
        let x = _mm256_set1_epi64x(h.hi as i64);
        let low6 = _mm256_set1_epi64x(63);
        let one = _mm256_set1_epi64x(1);
        let s0 = _mm256_and_si256(_mm256_srlv_epi64(x, _mm256_setr_epi64x(0, 6, 12, 18)), low6);
        let s1 = _mm256_and_si256(
            _mm256_srlv_epi64(x, _mm256_setr_epi64x(24, 30, 36, 42)),
            low6,
        );
        (_mm256_sllv_epi64(one, s0), _mm256_sllv_epi64(one, s1))
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    pub(in crate::sets::blocked) fn test(block: &[u64; BLOCK_WORDS], h: Hashed) -> bool {
        let (m0, m1) = masks(h);
        let p = block.as_ptr() as *const __m256i;
        // SAFETY: `block` is 8 readable u64s (64 bytes): `p` and `p + 1` cover them exactly,
        // and the unaligned loads have no alignment requirement.
        let (b0, b1) = unsafe { (_mm256_loadu_si256(p), _mm256_loadu_si256(p.add(1))) };
        (_mm256_testc_si256(b0, m0) & _mm256_testc_si256(b1, m1)) == 1
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    pub(in crate::sets::blocked) fn set(block: &mut [u64; BLOCK_WORDS], h: Hashed) -> bool {
        let (m0, m1) = masks(h);
        let p = block.as_mut_ptr() as *mut __m256i;
        // SAFETY: `block` is 8 writable u64s (64 bytes) borrowed exclusively: `p` and `p + 1`
        // cover them exactly, and unaligned loads/stores have no alignment requirement.
        unsafe {
            let (b0, b1) = (_mm256_loadu_si256(p), _mm256_loadu_si256(p.add(1)));
            let had = _mm256_testc_si256(b0, m0) & _mm256_testc_si256(b1, m1);
            _mm256_storeu_si256(p, _mm256_or_si256(b0, m0));
            _mm256_storeu_si256(p.add(1), _mm256_or_si256(b1, m1));
            had == 0
        }
    }
}

/// [`sector_test`] with run-time dispatch to AVX2 (same answer).
#[inline(always)]
pub(super) fn sector_probe(block: &[u64; BLOCK_WORDS], h: Hashed) -> bool {
    #[cfg(target_arch = "x86_64")]
    if crate::simd::avx2() {
        // SAFETY: the CPU supports AVX2 (`simd::avx2` checked it), the only feature
        // `sectors_avx2::test` enables.
        return unsafe { sectors_avx2::test(block, h) };
    }
    sector_test(block, h)
}

/// [`sector_set`] with run-time dispatch to AVX2 (same bits).
#[inline(always)]
pub(super) fn sector_insert(block: &mut [u64; BLOCK_WORDS], h: Hashed) -> bool {
    #[cfg(target_arch = "x86_64")]
    if crate::simd::avx2() {
        // SAFETY: as in `sector_probe`: the CPU supports AVX2.
        return unsafe { sectors_avx2::set(block, h) };
    }
    sector_set(block, h)
}

/// Query a block under either layout.
#[inline(always)]
pub(super) fn layout_probe(
    block: &[u64; BLOCK_WORDS],
    h: Hashed,
    k: u32,
    layout: BlockLayout,
) -> bool {
    match layout {
        BlockLayout::Positions => probe_block(block, h, k),
        BlockLayout::Sectors => sector_probe(block, h),
    }
}

/// Insert into a block under either layout; true if any bit was new.
#[inline(always)]
pub(super) fn layout_insert(
    block: &mut [u64; BLOCK_WORDS],
    h: Hashed,
    k: u32,
    layout: BlockLayout,
) -> bool {
    match layout {
        BlockLayout::Positions => insert_block(block, h, k),
        BlockLayout::Sectors => sector_insert(block, h),
    }
}

/// The 512-bit mask of a key's bits inside its block.
#[inline(always)]
pub(super) fn block_mask(h: Hashed, k: u32, layout: BlockLayout) -> [u64; BLOCK_WORDS] {
    let mut mask = [0u64; BLOCK_WORDS];
    match layout {
        BlockLayout::Positions => for_each_bit(h, k, |w, bit| mask[w] |= bit),
        BlockLayout::Sectors => {
            for (j, m) in mask.iter_mut().enumerate() {
                *m = 1u64 << sector_shift(h, j);
            }
        }
    }
    mask
}

/// The key's block: words `8b..8b+8` for its block index `b`.
#[inline(always)]
pub(super) fn block_range(h: Hashed, blocks: u64) -> std::ops::Range<usize> {
    let b = block_index(h, blocks) * BLOCK_WORDS;
    b..b + BLOCK_WORDS
}

/// Index of the key's block among `blocks`.
#[inline(always)]
pub(super) fn block_index(h: Hashed, blocks: u64) -> usize {
    reduce(h.lo, blocks) as usize
}
