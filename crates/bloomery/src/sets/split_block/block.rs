//! The split-block filter's 256-bit block: [`SplitBlock`], with the Parquet specification's
//! `mask`, `block_check` and `block_insert` as methods.
//!
//! The kernels live one module per instruction set with the same functions (`check`,
//! `insert`): `scalar` (portable, the reference) and, on x86-64, `x86` (the mask as one 8-lane
//! multiply, shift and variable shift; the test one `vptest`), which takes AVX2 when
//! [`crate::simd`] says the CPU has it (and `BLOOMERY_NO_SIMD` is unset) and the portable
//! kernel otherwise. The module a build uses is picked once, by `cfg`, as `imp`.

use super::{MaskedHash, SALT};

#[cfg(not(target_arch = "x86_64"))]
use scalar as imp;
#[cfg(target_arch = "x86_64")]
use x86 as imp;

/// 64-bit words per block.
pub(super) const SPLIT_WORDS: usize = 4;

/// One 256-bit block: eight 32-bit words, word `j` the low (j even) or high (j odd) half of
/// 64-bit word `j / 2`, matching the specification's little-endian bytes. A view over the
/// filter's words (`#[repr(transparent)]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, bytemuck::TransparentWrapper)]
#[repr(transparent)]
pub(crate) struct SplitBlock(pub(crate) [u64; SPLIT_WORDS]);

impl SplitBlock {
    /// The block starting at word `at` of `words`.
    #[inline(always)]
    pub(super) fn at(words: &[u64], at: usize) -> &SplitBlock {
        let w: &[u64; SPLIT_WORDS] = words[at..at + SPLIT_WORDS]
            .try_into()
            .expect("a block is SPLIT_WORDS words");
        bytemuck::TransparentWrapper::wrap_ref(w)
    }

    /// The block starting at word `at` of `words`, writable.
    #[inline(always)]
    pub(super) fn at_mut(words: &mut [u64], at: usize) -> &mut SplitBlock {
        let w: &mut [u64; SPLIT_WORDS] = (&mut words[at..at + SPLIT_WORDS])
            .try_into()
            .expect("a block is SPLIT_WORDS words");
        bytemuck::TransparentWrapper::wrap_mut(w)
    }

    /// A block read from the specification's 32 little-endian bytes.
    #[inline(always)]
    pub(super) fn from_le_bytes(bytes: &[u8; 32]) -> SplitBlock {
        let mut w = [0u64; SPLIT_WORDS];
        for (i, w) in w.iter_mut().enumerate() {
            let mut b = [0u8; 8];
            b.copy_from_slice(&bytes[8 * i..8 * i + 8]);
            *w = u64::from_le_bytes(b);
        }
        SplitBlock(w)
    }

    /// The specification's `mask(x)`: for each 32-bit word `i`, bit `(x · SALT[i]) >> 27`.
    #[inline(always)]
    pub(super) fn mask(x: u32) -> SplitBlock {
        let mut w = [0u64; SPLIT_WORDS];
        for (i, w) in w.iter_mut().enumerate() {
            let lo = 1u32 << (x.wrapping_mul(SALT[2 * i]) >> 27);
            let hi = 1u32 << (x.wrapping_mul(SALT[2 * i + 1]) >> 27);
            *w = u64::from(lo) | (u64::from(hi) << 32);
        }
        SplitBlock(w)
    }

    /// The specification's `block_check`: true if every bit of `mask(x)` is set.
    #[inline(always)]
    pub(super) fn check(&self, x: u32) -> bool {
        imp::check(self, x)
    }

    /// The specification's `block_insert`: set the bits of `mask(x)`; true if any was zero.
    #[inline(always)]
    pub(super) fn insert(&mut self, x: u32) -> bool {
        imp::insert(self, x)
    }

    /// The first of `hashes` the spec's `filter_check` accepts over `bytes`, a bitset of
    /// `blocks` 32-byte little-endian blocks (None: it rejects them all): the probe loop
    /// compiled once per kernel, so the mask and test inline into it.
    #[inline]
    pub(super) fn first_hit_le(bytes: &[u8], blocks: u64, hashes: &[u64]) -> Option<usize> {
        imp::first_hit_le(bytes, blocks, hashes)
    }

    /// [`first_hit_le`](Self::first_hit_le) of hashes whose masks were made before.
    #[inline]
    pub(super) fn first_hit_masked_le(
        bytes: &[u8],
        blocks: u64,
        probes: &[MaskedHash],
    ) -> Option<usize> {
        imp::first_hit_masked_le(bytes, blocks, probes)
    }

    /// How many of `hashes` the spec's `filter_check` accepts over `bytes` (as
    /// [`first_hit_le`](Self::first_hit_le)).
    #[inline]
    pub(super) fn count_hits_le(bytes: &[u8], blocks: u64, hashes: &[u64]) -> usize {
        imp::count_hits_le(bytes, blocks, hashes)
    }

    /// [`first_hit_le`](Self::first_hit_le) on the portable kernel (for tests).
    #[cfg(test)]
    pub(super) fn first_hit_le_scalar(bytes: &[u8], blocks: u64, hashes: &[u64]) -> Option<usize> {
        scalar::first_hit_le(bytes, blocks, hashes)
    }

    /// [`first_hit_masked_le`](Self::first_hit_masked_le) on the portable kernel (for tests).
    #[cfg(test)]
    pub(super) fn first_hit_masked_le_scalar(
        bytes: &[u8],
        blocks: u64,
        probes: &[MaskedHash],
    ) -> Option<usize> {
        scalar::first_hit_masked_le(bytes, blocks, probes)
    }

    /// [`count_hits_le`](Self::count_hits_le) on the portable kernel (for tests).
    #[cfg(test)]
    pub(super) fn count_hits_le_scalar(bytes: &[u8], blocks: u64, hashes: &[u64]) -> usize {
        scalar::count_hits_le(bytes, blocks, hashes)
    }

    /// [`check`](Self::check) on the portable kernel (for tests comparing kernels).
    #[cfg(test)]
    pub(super) fn check_scalar(&self, x: u32) -> bool {
        scalar::check(self, x)
    }

    /// [`insert`](Self::insert) on the portable kernel (for tests comparing kernels).
    #[cfg(test)]
    pub(super) fn insert_scalar(&mut self, x: u32) -> bool {
        scalar::insert(self, x)
    }
}

/// The 32 little-endian bytes of the block `h` probes in the bitset `bytes` of `blocks`
/// blocks (None only when `bytes` is shorter than `32 · blocks`, which callers rule out).
#[inline(always)]
fn block_bytes(bytes: &[u8], blocks: u64, h: u64) -> Option<&[u8; 32]> {
    let b = (((h >> 32) * blocks) >> 32) as usize * 32;
    bytes.get(b..b + 32).and_then(|s| s.try_into().ok())
}

/// The portable kernels.
mod scalar {
    use super::{block_bytes, SplitBlock};
    use crate::sets::split_block::MaskedHash;

    /// True if every bit of the mask `m` is set in `block`.
    #[inline(always)]
    fn covers(block: &SplitBlock, m: &SplitBlock) -> bool {
        let mut miss = 0u64;
        for i in 0..super::SPLIT_WORDS {
            miss |= m.0[i] & !block.0[i];
        }
        miss == 0
    }

    #[inline(always)]
    pub(super) fn check(block: &SplitBlock, x: u32) -> bool {
        covers(block, &SplitBlock::mask(x))
    }

    #[inline(always)]
    pub(super) fn insert(block: &mut SplitBlock, x: u32) -> bool {
        let m = SplitBlock::mask(x);
        let mut miss = 0u64;
        for i in 0..super::SPLIT_WORDS {
            miss |= m.0[i] & !block.0[i];
            block.0[i] |= m.0[i];
        }
        miss != 0
    }

    /// The spec's `filter_check` of `h` over the little-endian bitset `bytes` of `blocks`
    /// blocks (`bytes.len() == 32 · blocks`).
    #[inline(always)]
    pub(super) fn check_le(bytes: &[u8], blocks: u64, h: u64) -> bool {
        // None is unreachable: b + 32 <= len by construction
        block_bytes(bytes, blocks, h).is_none_or(|b| check(&SplitBlock::from_le_bytes(b), h as u32))
    }

    pub(super) fn first_hit_le(bytes: &[u8], blocks: u64, hashes: &[u64]) -> Option<usize> {
        hashes.iter().position(|&h| check_le(bytes, blocks, h))
    }

    pub(super) fn first_hit_masked_le(
        bytes: &[u8],
        blocks: u64,
        probes: &[MaskedHash],
    ) -> Option<usize> {
        probes.iter().position(|p| {
            block_bytes(bytes, blocks, p.hash)
                .is_none_or(|b| covers(&SplitBlock::from_le_bytes(b), &p.mask))
        })
    }

    pub(super) fn count_hits_le(bytes: &[u8], blocks: u64, hashes: &[u64]) -> usize {
        hashes
            .iter()
            .filter(|&&h| check_le(bytes, blocks, h))
            .count()
    }
}

/// The AVX2 kernels: the eight salted products are one `vpmulld`, the shifts one `vpsrld`
/// and one `vpsllvd`, the test one `vptest`.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{block_bytes, scalar, SplitBlock, SALT};
    use crate::sets::split_block::MaskedHash;
    use std::arch::x86_64::*;

    #[inline(always)]
    pub(super) fn check(block: &SplitBlock, x: u32) -> bool {
        if crate::simd::avx2() {
            // SAFETY: the CPU supports AVX2 (`simd::avx2` checked it), the only feature
            // `check_avx2` enables.
            return unsafe { check_avx2(block, x) };
        }
        scalar::check(block, x)
    }

    #[inline(always)]
    pub(super) fn insert(block: &mut SplitBlock, x: u32) -> bool {
        if crate::simd::avx2() {
            // SAFETY: as in `check`: the CPU supports AVX2.
            return unsafe { insert_avx2(block, x) };
        }
        scalar::insert(block, x)
    }

    pub(super) fn first_hit_le(bytes: &[u8], blocks: u64, hashes: &[u64]) -> Option<usize> {
        if crate::simd::avx2() {
            // SAFETY: the CPU supports AVX2, the only feature the kernel enables.
            return unsafe { first_hit_le_avx2(bytes, blocks, hashes) };
        }
        scalar::first_hit_le(bytes, blocks, hashes)
    }

    pub(super) fn first_hit_masked_le(
        bytes: &[u8],
        blocks: u64,
        probes: &[MaskedHash],
    ) -> Option<usize> {
        if crate::simd::avx2() {
            // SAFETY: the CPU supports AVX2, the only feature the kernel enables.
            return unsafe { first_hit_masked_le_avx2(bytes, blocks, probes) };
        }
        scalar::first_hit_masked_le(bytes, blocks, probes)
    }

    pub(super) fn count_hits_le(bytes: &[u8], blocks: u64, hashes: &[u64]) -> usize {
        if crate::simd::avx2() {
            // SAFETY: the CPU supports AVX2, the only feature the kernel enables.
            return unsafe { count_hits_le_avx2(bytes, blocks, hashes) };
        }
        scalar::count_hits_le(bytes, blocks, hashes)
    }

    /// `filter_check` of `h` over the little-endian bitset (as `scalar::check_le`).
    #[inline]
    #[target_feature(enable = "avx2")]
    fn check_le_avx2(bytes: &[u8], blocks: u64, h: u64) -> bool {
        let Some(block) = block_bytes(bytes, blocks, h) else {
            return true; // unreachable: b + 32 <= len by construction
        };
        // SAFETY: `block` is 32 readable bytes, exactly one unaligned 256-bit load; on
        // little-endian x86-64 lane i is the block's 32-bit word i.
        let v = unsafe { _mm256_loadu_si256(block.as_ptr() as *const __m256i) };
        _mm256_testc_si256(v, mask(h as u32)) == 1
    }

    /// The first of `items` that `check` accepts, four at a time: the four answers joined
    /// without branching (so the loads and the products of the four overlap), then the first
    /// of a group with a hit found again.
    #[inline(always)]
    fn first_by_fours<T>(items: &[T], check: impl Fn(&T) -> bool) -> Option<usize> {
        let mut groups = items.chunks_exact(4);
        let mut at = 0;
        for g in &mut groups {
            if check(&g[0]) | check(&g[1]) | check(&g[2]) | check(&g[3]) {
                return g.iter().position(&check).map(|i| at + i);
            }
            at += 4;
        }
        groups.remainder().iter().position(check).map(|i| at + i)
    }

    #[target_feature(enable = "avx2")]
    fn first_hit_le_avx2(bytes: &[u8], blocks: u64, hashes: &[u64]) -> Option<usize> {
        first_by_fours(hashes, |&h| check_le_avx2(bytes, blocks, h))
    }

    /// `filter_check` of a hash whose mask was made before: two loads and a `vptest`.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn check_masked_le_avx2(bytes: &[u8], blocks: u64, p: &MaskedHash) -> bool {
        let Some(block) = block_bytes(bytes, blocks, p.hash) else {
            return true; // unreachable: b + 32 <= len by construction
        };
        // SAFETY: `block` is 32 readable bytes and `p.mask` 4 u64s (32 bytes): one unaligned
        // 256-bit load each; on little-endian x86-64 lane i of both is 32-bit word i.
        let (v, m) = unsafe {
            (
                _mm256_loadu_si256(block.as_ptr() as *const __m256i),
                _mm256_loadu_si256(p.mask.0.as_ptr() as *const __m256i),
            )
        };
        _mm256_testc_si256(v, m) == 1
    }

    /// As `first_hit_le_avx2`, with the masks made before.
    #[target_feature(enable = "avx2")]
    fn first_hit_masked_le_avx2(bytes: &[u8], blocks: u64, probes: &[MaskedHash]) -> Option<usize> {
        first_by_fours(probes, |p| check_masked_le_avx2(bytes, blocks, p))
    }

    #[target_feature(enable = "avx2")]
    fn count_hits_le_avx2(bytes: &[u8], blocks: u64, hashes: &[u64]) -> usize {
        hashes
            .iter()
            .map(|&h| usize::from(check_le_avx2(bytes, blocks, h)))
            .sum()
    }

    /// `mask(x)` as eight 32-bit lanes, lane i = 32-bit word i of the block.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn mask(x: u32) -> __m256i {
        let salts = _mm256_setr_epi32(
            SALT[0] as i32,
            SALT[1] as i32,
            SALT[2] as i32,
            SALT[3] as i32,
            SALT[4] as i32,
            SALT[5] as i32,
            SALT[6] as i32,
            SALT[7] as i32,
        );
        let prod = _mm256_mullo_epi32(_mm256_set1_epi32(x as i32), salts);
        _mm256_sllv_epi32(_mm256_set1_epi32(1), _mm256_srli_epi32::<27>(prod))
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    fn check_avx2(block: &SplitBlock, x: u32) -> bool {
        let m = mask(x);
        // SAFETY: `block` is 4 readable u64s (32 bytes), exactly one unaligned 256-bit load;
        // on little-endian x86-64 lane i is 32-bit word i of the block.
        let b = unsafe { _mm256_loadu_si256(block.0.as_ptr() as *const __m256i) };
        _mm256_testc_si256(b, m) == 1
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    fn insert_avx2(block: &mut SplitBlock, x: u32) -> bool {
        let m = mask(x);
        let p = block.0.as_mut_ptr() as *mut __m256i;
        // SAFETY: `block` is 4 writable u64s (32 bytes) borrowed exclusively: one unaligned
        // 256-bit load and store cover them exactly.
        unsafe {
            let b = _mm256_loadu_si256(p);
            let had = _mm256_testc_si256(b, m);
            _mm256_storeu_si256(p, _mm256_or_si256(b, m));
            had == 0
        }
    }
}
