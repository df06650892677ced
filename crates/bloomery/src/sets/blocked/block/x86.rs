//! The x86-64 kernels: the positions layout compiled for BMI2 (`shlx`/`shrx`/`andn`), the
//! sectors layout as two 256-bit AVX2 operations, the salted layouts as one per 256 bits of
//! their block (one kernel, generic over the block's width). Each entry point takes its extension when
//! [`crate::simd`] says the CPU has it (and `BLOOMERY_NO_SIMD` is unset), the portable kernel
//! otherwise; both give the same bits (tested).

use super::{scalar, Block, SALTS};
use crate::hash::Hashed;
use std::arch::x86_64::*;

/// [`scalar::check_positions`] compiled for BMI2.
#[target_feature(enable = "bmi1,bmi2")]
fn check_positions_bmi2(block: &Block, h: Hashed, k: u32) -> bool {
    scalar::check_positions(block, h, k)
}

/// [`scalar::insert_positions`] compiled for BMI2.
#[target_feature(enable = "bmi1,bmi2")]
fn insert_positions_bmi2(block: &mut Block, h: Hashed, k: u32) -> bool {
    scalar::insert_positions(block, h, k)
}

#[inline(always)]
pub(super) fn check_positions(block: &Block, h: Hashed, k: u32) -> bool {
    if crate::simd::bmi2() {
        // SAFETY: the CPU supports BMI1 and BMI2 (`simd::bmi2` checked both with std's cached
        // CPUID test), which is all `check_positions_bmi2` requires.
        return unsafe { check_positions_bmi2(block, h, k) };
    }
    scalar::check_positions(block, h, k)
}

#[inline(always)]
pub(super) fn insert_positions(block: &mut Block, h: Hashed, k: u32) -> bool {
    if crate::simd::bmi2() {
        // SAFETY: as in `check_positions`: the CPU supports the features the function enables.
        return unsafe { insert_positions_bmi2(block, h, k) };
    }
    scalar::insert_positions(block, h, k)
}

#[inline(always)]
pub(super) fn check_sectors(block: &Block, h: Hashed) -> bool {
    if crate::simd::avx2() {
        // SAFETY: the CPU supports AVX2 (`simd::avx2` checked it), the only feature
        // `check_sectors_avx2` enables.
        return unsafe { check_sectors_avx2(block, h) };
    }
    scalar::check_sectors(block, h)
}

#[inline(always)]
pub(super) fn insert_sectors(block: &mut Block, h: Hashed) -> bool {
    if crate::simd::avx2() {
        // SAFETY: as in `check_sectors`: the CPU supports AVX2.
        return unsafe { insert_sectors_avx2(block, h) };
    }
    scalar::insert_sectors(block, h)
}

#[inline(always)]
pub(super) fn check_salted<const W: usize>(block: &[u64; W], h: Hashed) -> bool {
    if let (true, Ok(line)) = (crate::simd::avx512(), <&[u64; 8]>::try_from(&block[..])) {
        // SAFETY: the CPU supports AVX-512F and AVX2 (`simd::avx512` checked both), the
        // features `check_salted_avx512` enables.
        return unsafe { check_salted_avx512(line, h) };
    }
    if crate::simd::avx2() {
        // SAFETY: the CPU supports AVX2 (`simd::avx2` checked it), the only feature
        // `check_salted_avx2` enables.
        return unsafe { check_salted_avx2(block, h) };
    }
    scalar::check_salted(block, h)
}

#[inline(always)]
pub(super) fn insert_salted<const W: usize>(block: &mut [u64; W], h: Hashed) -> bool {
    if let (true, Ok(line)) = (
        crate::simd::avx512(),
        <&mut [u64; 8]>::try_from(&mut block[..]),
    ) {
        // SAFETY: as in `check_salted`: the CPU supports AVX-512F and AVX2.
        return unsafe { insert_salted_avx512(line, h) };
    }
    if crate::simd::avx2() {
        // SAFETY: as in `check_salted`: the CPU supports AVX2.
        return unsafe { insert_salted_avx2(block, h) };
    }
    scalar::insert_salted(block, h)
}

/// The eight 32-bit products of the key's low 32 bits and the salts, lane `i` holding the
/// product with `SALTS[order[i]]` (mod 2³²): one `vpmulld` by a constant vector. Always
/// inlined (no target feature of its own), so that kernels compiled for AVX2 and for
/// AVX-512 can both fold it into their code.
///
/// # Safety
/// The CPU has AVX2 (the callers are compiled for it).
#[inline(always)]
unsafe fn salt_products(h: Hashed, order: [usize; 8]) -> __m256i {
    // SAFETY: the caller's contract: the CPU has AVX2, which these intrinsics need.
    unsafe {
        let salts = _mm256_setr_epi32(
            SALTS[order[0]] as i32,
            SALTS[order[1]] as i32,
            SALTS[order[2]] as i32,
            SALTS[order[3]] as i32,
            SALTS[order[4]] as i32,
            SALTS[order[5]] as i32,
            SALTS[order[6]] as i32,
            SALTS[order[7]] as i32,
        );
        _mm256_mullo_epi32(_mm256_set1_epi32(h.lo as u32 as i32), salts)
    }
}

/// The masks of the key's salted bits in a block of `W` words, one per 256-bit vector of the
/// block (`W / 4` of them; the second is unused for the 256-bit block): one `vpmulld` of the
/// broadcast low 32 bits by the eight salts.
/// - For the 512-bit block (`W` = 8) the salts are multiplied in the order word 0, word 4,
///   word 1, word 5, …, so that each 64-bit lane of the products holds word `i`'s product in
///   its low half and word `i + 4`'s in its high half. Each word's bit is the top 6 bits of its
///   32-bit product: bits 26–31 of the lane for word `i` (a shift and a mask), its top 6 bits
///   for word `i + 4` (one shift), turned into one-bit masks by `vpsllvq`. The same bits as
///   the scalar form; no lane crosses the vector's halves.
/// - For the 256-bit block (`W` = 4) a shift to the top 5 bits and one `vpsllvd` on the eight
///   32-bit lanes.
#[inline]
#[target_feature(enable = "avx2")]
fn salted_masks<const W: usize>(h: Hashed) -> [__m256i; 2] {
    const { assert!(W == 8 || W == 4) };
    if W == 8 {
        // SAFETY: this function is compiled for AVX2.
        let product = unsafe { salt_products(h, [0, 4, 1, 5, 2, 6, 3, 7]) };
        let low = _mm256_and_si256(_mm256_srli_epi64(product, 26), _mm256_set1_epi64x(63));
        let high = _mm256_srli_epi64(product, 58);
        let one = _mm256_set1_epi64x(1);
        [_mm256_sllv_epi64(one, low), _mm256_sllv_epi64(one, high)]
    } else {
        // SAFETY: as above.
        let product = unsafe { salt_products(h, [0, 1, 2, 3, 4, 5, 6, 7]) };
        let m = _mm256_sllv_epi32(_mm256_set1_epi32(1), _mm256_srli_epi32(product, 27));
        [m, m]
    }
}

/// What the salted check and insert share: the key's masks, the block's `W / 4` vectors and
/// whether every one of the key's bits is set in them (`vptest`'s carry, ANDed over vectors).
///
/// # Safety
/// `p` points to `W` readable u64s (`W / 4` vectors; no alignment needed).
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn salted_view<const W: usize>(p: *const __m256i, h: Hashed) -> SaltedView {
    let masks = salted_masks::<W>(h);
    // SAFETY: the first of the block's `W / 4 ≥ 1` vectors.
    let b0 = unsafe { _mm256_loadu_si256(p) };
    // the key's bits missing from the block, tested with one `vptest`; written out, not as a
    // loop over vectors, so both vectors stay in registers
    let mut missing = _mm256_andnot_si256(b0, masks[0]);
    let b1 = if W == 8 {
        // SAFETY: the second of the 512-bit block's two vectors.
        let b1 = unsafe { _mm256_loadu_si256(p.add(1)) };
        missing = _mm256_or_si256(missing, _mm256_andnot_si256(b1, masks[1]));
        b1
    } else {
        b0
    };
    SaltedView {
        masks,
        block: [b0, b1],
        all_set: _mm256_testz_si256(missing, missing) == 1,
    }
}

/// A salted block as [`salted_view`] read it.
struct SaltedView {
    masks: [__m256i; 2],
    block: [__m256i; 2],
    all_set: bool,
}

/// True if all eight salted bits are set in a block of `W` words (8 or 4): a `vptest` per
/// vector of the block.
#[inline]
#[target_feature(enable = "avx2")]
pub(in crate::sets::blocked) fn check_salted_avx2<const W: usize>(
    block: &[u64; W],
    h: Hashed,
) -> bool {
    // SAFETY: `block` is `W` readable u64s.
    unsafe { salted_view::<W>(block.as_ptr().cast(), h) }.all_set
}

/// Set the eight salted bits in a block of `W` words (8 or 4); true if any was zero.
#[inline]
#[target_feature(enable = "avx2")]
pub(in crate::sets::blocked) fn insert_salted_avx2<const W: usize>(
    block: &mut [u64; W],
    h: Hashed,
) -> bool {
    let p = block.as_mut_ptr() as *mut __m256i;
    // SAFETY: `block` is `W` u64s borrowed exclusively, readable and writable.
    let v = unsafe { salted_view::<W>(p, h) };
    // SAFETY: the first vector of the block's `W` words (an unaligned store).
    unsafe { _mm256_storeu_si256(p, _mm256_or_si256(v.block[0], v.masks[0])) };
    if W == 8 {
        // SAFETY: the second vector of the 512-bit block's 8 words.
        unsafe { _mm256_storeu_si256(p.add(1), _mm256_or_si256(v.block[1], v.masks[1])) };
    }
    !v.all_set
}

/// The two 4-word masks of the key's sector bits: the eight shifts are two `vpsrlvq`, the
/// masks two `vpsllvq`.
#[inline]
#[target_feature(enable = "avx2")]
fn sector_masks(h: Hashed) -> (__m256i, __m256i) {
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

/// True if all eight sector bits are set: two `vptest` (carry set when every mask bit is set
/// in the block).
#[inline]
#[target_feature(enable = "avx2")]
pub(in crate::sets::blocked) fn check_sectors_avx2(block: &Block, h: Hashed) -> bool {
    let (m0, m1) = sector_masks(h);
    let p = block.0.as_ptr() as *const __m256i;
    // SAFETY: `block` is 8 readable u64s (64 bytes): `p` and `p + 1` cover them exactly,
    // and the unaligned loads have no alignment requirement.
    let (b0, b1) = unsafe { (_mm256_loadu_si256(p), _mm256_loadu_si256(p.add(1))) };
    (_mm256_testc_si256(b0, m0) & _mm256_testc_si256(b1, m1)) == 1
}

/// Set the eight sector bits; true if any was zero.
#[inline]
#[target_feature(enable = "avx2")]
pub(in crate::sets::blocked) fn insert_sectors_avx2(block: &mut Block, h: Hashed) -> bool {
    let (m0, m1) = sector_masks(h);
    let p = block.0.as_mut_ptr() as *mut __m256i;
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

/// The eight one-bit masks of the key's salted bits in a 512-bit block as one AVX-512 vector
/// (one 64-bit lane per word). One `vpmuludq` multiplies the low 32 bits of the hash by the
/// eight salts into full 64-bit products, whose bits 26–31 are the 32-bit products' top 6
/// bits (the low 32 bits of a product are the product mod 2³²): the same bits as
/// [`salted_masks`] without its widening shuffle, and a shorter chain (`vpmulld` takes twice
/// `vpmuludq`'s latency).
#[inline]
#[target_feature(enable = "avx2,avx512f")]
fn salted_masks_avx512(h: Hashed) -> __m512i {
    let salts = _mm512_setr_epi64(
        i64::from(SALTS[0]),
        i64::from(SALTS[1]),
        i64::from(SALTS[2]),
        i64::from(SALTS[3]),
        i64::from(SALTS[4]),
        i64::from(SALTS[5]),
        i64::from(SALTS[6]),
        i64::from(SALTS[7]),
    );
    // each lane: (h.lo mod 2³²) · salt, exact in 64 bits
    let product = _mm512_mul_epu32(_mm512_set1_epi64(h.lo as i64), salts);
    let shifts = _mm512_and_si512(_mm512_srli_epi64(product, 26), _mm512_set1_epi64(63));
    _mm512_sllv_epi64(_mm512_set1_epi64(1), shifts)
}

/// True if all eight salted bits are set in a 512-bit block: one AVX-512 load and test.
#[inline]
#[target_feature(enable = "avx2,avx512f")]
pub(in crate::sets::blocked) fn check_salted_avx512(block: &[u64; 8], h: Hashed) -> bool {
    let m = salted_masks_avx512(h);
    // SAFETY: `block` is 8 readable u64s (64 bytes), an unaligned load.
    let b = unsafe { _mm512_loadu_si512(block.as_ptr().cast()) };
    _mm512_test_epi64_mask(_mm512_andnot_si512(b, m), m) == 0
}

/// Set the eight salted bits in a 512-bit block with one AVX-512 load and store; true if any
/// was zero.
#[inline]
#[target_feature(enable = "avx2,avx512f")]
pub(in crate::sets::blocked) fn insert_salted_avx512(block: &mut [u64; 8], h: Hashed) -> bool {
    let m = salted_masks_avx512(h);
    let p = block.as_mut_ptr();
    // SAFETY: `block` is 8 u64s (64 bytes) borrowed exclusively: an unaligned load and store.
    let b = unsafe { _mm512_loadu_si512(p.cast()) };
    let set = _mm512_or_si512(b, m);
    // SAFETY: as above.
    unsafe { _mm512_storeu_si512(p.cast(), set) };
    _mm512_cmpneq_epi64_mask(set, b) != 0
}
