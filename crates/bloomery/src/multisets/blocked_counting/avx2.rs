//! The 4-bit fast path with AVX2 (x86-64, chosen at run time by [`crate::simd`]): a key's
//! counters are read 8 at once (each word of digits, see [`super::nibbles::digit_words`]),
//! one per 32-bit lane, instead of one after the other: the line's part of an operation takes
//! about half the instructions of the scalar path ([`super::nibbles`]; 37 against 85 for a
//! count at k = 7), so the core overlaps the cache misses of more consecutive keys.
//!
//! * The 8 digits of `h.hi` (the counter positions of [`super::CellPositions`]) come from one
//!   broadcast and one variable shift: even lanes hold bits 8–39 of `hi` (digits 7, 6, 5, 4
//!   at bits 0, 7, 14, 21), odd lanes bits 32–63 (digits 3, 2, 1, 0 at bits 4, 11, 18, 25).
//! * Counter p is nibble `p % 8` of 32-bit word `p / 8` of the line (little-endian words, as
//!   everywhere on x86-64): two `vpermd` over the line's two halves and a blend by bit 3 of
//!   the word index fetch each lane's word, a variable shift and a mask its counter.
//! * The count is the minimum over the lanes of digits < k. An insert adds `1 << shift` to
//!   each lane's word unless its counter is 15, one lane after the other (so a counter hit
//!   twice gets 2). A remove refuses on a zero counter and otherwise subtracts 1 from each
//!   lane's counter unless it is 15.
//!
//! A key that hits one counter m ≥ 2 times (about 15% of keys at k = 7) needs
//! `min(c + m, 15)` on an insert and `max(c - m, 0)` on a remove (the scalar path's visit by
//! visit rule). A remove gets it exactly: of the counter's m lanes only those with fewer than
//! c equal lanes before them subtract (their *rank*, from seven lane rotations, computed
//! only when four rotations found a repeat).
//! An insert's lane-by-lane adds are exact unless they would pass 15, which needs a counter
//! between 8 and 14 hit twice or more (rare outside heavy multisets); only then does it rank
//! the lanes, and of the m lanes those with fewer than 15 - c before them add. So every
//! result equals the scalar path's (test `avx2_matches_the_scalar_path`, with forced
//! repeats), and the lanes never call back into the scalar path.

use std::arch::x86_64::*;

use crate::hash::Hashed;

/// Right shift of each lane that brings its digit to the bottom (see the module docs).
const SHIFTS: [i32; 8] = [0, 4, 7, 11, 14, 18, 21, 25];

/// The lane that holds digit i.
const LANE: [usize; 8] = [7, 5, 3, 1, 6, 4, 2, 0];

/// `USED[k]`: all ones in the lanes of digits 0..k.
static USED: [[i32; 8]; 9] = {
    let mut t = [[0i32; 8]; 9];
    let mut k = 0;
    while k <= 8 {
        let mut i = 0;
        while i < k {
            t[k][LANE[i]] = -1;
            i += 1;
        }
        k += 1;
    }
    t
};

/// A key's counters, one per lane.
struct Lanes {
    /// The digit (counter position 0..128); in the unused lanes 128 + lane, so no two lanes
    /// are equal unless the key hits one counter twice.
    digit: __m256i,
    /// The 32-bit word of the line that holds the counter (0..16).
    word: __m256i,
    /// The counter's bit offset in that word.
    shift: __m256i,
    /// The counter's value.
    count: __m256i,
    /// All ones in the lanes of digits 0..k.
    used: __m256i,
}

/// The 8 lanes of a table row.
#[inline]
#[target_feature(enable = "avx2")]
fn load(v: &[i32; 8]) -> __m256i {
    // SAFETY: `v` is 8 readable i32s (32 bytes); the unaligned load has no alignment
    // requirement.
    unsafe { _mm256_loadu_si256(v.as_ptr().cast()) }
}

/// The lanes of the key `hi` (k ≤ 8) in `line`.
#[inline]
#[target_feature(enable = "avx2")]
fn lanes(line: &[u64; 8], hi: u64, k: u32) -> Lanes {
    let y = (hi & 0xFFFF_FFFF_0000_0000) | ((hi >> 8) & 0xFFFF_FFFF);
    let x = _mm256_set1_epi64x(y as i64);
    let d = _mm256_and_si256(_mm256_srlv_epi32(x, load(&SHIFTS)), _mm256_set1_epi32(127));
    let word = _mm256_srli_epi32(d, 3);
    let shift = _mm256_and_si256(_mm256_slli_epi32(d, 2), _mm256_set1_epi32(28));
    let p = line.as_ptr().cast::<__m256i>();
    // SAFETY: `line` is 8 readable u64s (64 bytes): `p` and `p + 1` cover them exactly, and
    // the unaligned loads have no alignment requirement.
    let (low, high) = unsafe { (_mm256_loadu_si256(p), _mm256_loadu_si256(p.add(1))) };
    let from_low = _mm256_permutevar8x32_epi32(low, word);
    let from_high = _mm256_permutevar8x32_epi32(high, word);
    // the sign bit of each lane is bit 3 of its word index: set for words 8..16
    let v = _mm256_castps_si256(_mm256_blendv_ps(
        _mm256_castsi256_ps(from_low),
        _mm256_castsi256_ps(from_high),
        _mm256_castsi256_ps(_mm256_slli_epi32(word, 28)),
    ));
    let count = _mm256_and_si256(_mm256_srlv_epi32(v, shift), _mm256_set1_epi32(15));
    let used = load(&USED[(k as usize).min(8)]);
    let spare = _mm256_add_epi32(
        _mm256_set1_epi32(128),
        _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
    );
    let digit = _mm256_blendv_epi8(spare, d, used);
    Lanes {
        digit,
        word,
        shift,
        count,
        used,
    }
}

/// True when some used lane's counter equals `c`.
#[inline]
#[target_feature(enable = "avx2")]
fn any_equal(l: &Lanes, c: i32) -> bool {
    let hit = _mm256_and_si256(_mm256_cmpeq_epi32(l.count, _mm256_set1_epi32(c)), l.used);
    _mm256_movemask_ps(_mm256_castsi256_ps(hit)) != 0
}

/// Add `delta` (0 in the unused lanes) to each lane's word, lane by lane, so lanes on the
/// same word add up.
#[inline]
#[target_feature(enable = "avx2")]
fn add_to_words(line: &mut [u64; 8], word: __m256i, delta: __m256i) {
    let (mut w, mut v) = ([0u32; 8], [0u32; 8]);
    // SAFETY: `w` and `v` are 8 writable u32s (32 bytes) each; unaligned stores have no
    // alignment requirement.
    unsafe {
        _mm256_storeu_si256(w.as_mut_ptr().cast(), word);
        _mm256_storeu_si256(v.as_mut_ptr().cast(), delta);
    }
    let words = line.as_mut_ptr().cast::<u32>();
    for j in 0..8 {
        // SAFETY: the line is 16 u32s (64 bytes, 8-aligned, borrowed exclusively), and the
        // index is masked below 16. x86-64 is little-endian, so u32 word i is bits
        // 32i..32i + 32 of the line, as the lanes assume.
        unsafe {
            let p = words.add(w[j] as usize & 15);
            *p = (*p).wrapping_add(v[j]);
        }
    }
}

/// The minimum of the key's counters for k ≤ 8 (digits of `hi`), as
/// [`super::nibbles::min_scalar`].
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn min(line: &[u64; 8], hi: u64, k: u32) -> u32 {
    smallest(counts(line, hi, k))
}

/// [`min`] for 8 < k ≤ 16 (digits of both words, [`super::nibbles::digit_words`]).
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn min_wide(line: &[u64; 8], h: Hashed, k: u32) -> u32 {
    min2(line, super::nibbles::digit_words(h, k), k)
}

#[inline]
#[target_feature(enable = "avx2")]
fn min2(line: &[u64; 8], words: [u64; 2], k: u32) -> u32 {
    smallest(_mm256_min_epu32(
        counts(line, words[0], 8),
        counts(line, words[1], k - 8),
    ))
}

/// The counters of the digits of `hi` (k ≤ 8), 15 in the unused lanes.
#[inline]
#[target_feature(enable = "avx2")]
fn counts(line: &[u64; 8], hi: u64, k: u32) -> __m256i {
    let l = lanes(line, hi, k);
    _mm256_or_si256(l.count, _mm256_andnot_si256(l.used, _mm256_set1_epi32(15)))
}

/// The smallest of the 8 lanes.
#[inline]
#[target_feature(enable = "avx2")]
fn smallest(c: __m256i) -> u32 {
    let m = _mm_min_epu32(_mm256_castsi256_si128(c), _mm256_extracti128_si256(c, 1));
    let m = _mm_min_epu32(m, _mm_shuffle_epi32(m, 0b01_00_11_10));
    let m = _mm_min_epu32(m, _mm_shuffle_epi32(m, 0b10_11_00_01));
    _mm_cvtsi128_si32(m) as u32
}

/// Add one to each of the key's counters for k ≤ 8 (saturating at 15); true when one of
/// them was zero, as [`super::nibbles::insert_scalar`].
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn insert(line: &mut [u64; 8], hi: u64, k: u32) -> bool {
    add_one(line, hi, k)
}

/// [`insert`] for 8 < k ≤ 16: the second word's digits are added after the first's, as the
/// scalar path visits them.
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn insert_wide(line: &mut [u64; 8], h: Hashed, k: u32) -> bool {
    insert2(line, super::nibbles::digit_words(h, k), k)
}

#[inline]
#[target_feature(enable = "avx2")]
fn insert2(line: &mut [u64; 8], words: [u64; 2], k: u32) -> bool {
    let first = add_one(line, words[0], 8);
    add_one(line, words[1], k - 8) | first
}

/// [`insert`] for the digits of one word (k ≤ 8).
#[inline]
#[target_feature(enable = "avx2")]
fn add_one(line: &mut [u64; 8], hi: u64, k: u32) -> bool {
    let l = lanes(line, hi, k);
    let fifteen = _mm256_set1_epi32(15);
    let saturated = _mm256_cmpeq_epi32(l.count, fifteen);
    // A counter hit m times ends at min(c + m, 15): the lane-by-lane adds are exact unless
    // c < 15 and c + m > 15, which needs m ≥ 2 and, as m ≤ 8, c ≥ 8.
    let high = _mm256_andnot_si256(saturated, _mm256_cmpgt_epi32(l.count, _mm256_set1_epi32(7)));
    let mut grow = _mm256_andnot_si256(saturated, l.used);
    let high = _mm256_and_si256(high, l.used);
    if _mm256_testz_si256(high, high) == 0 {
        // of the counter's m lanes, those with fewer than 15 - c equal lanes before them add
        let room = _mm256_sub_epi32(fifteen, l.count);
        grow = _mm256_and_si256(grow, _mm256_cmpgt_epi32(room, rank(&l)));
    }
    let was_zero = any_equal(&l, 0);
    let one = _mm256_and_si256(_mm256_sllv_epi32(_mm256_set1_epi32(1), l.shift), grow);
    add_to_words(line, l.word, one);
    was_zero
}

/// Subtract one from each of the key's counters for k ≤ 8 unless it is 15; false (nothing
/// changed) when one of them is zero, as [`super::nibbles::remove_scalar`].
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn remove(line: &mut [u64; 8], hi: u64, k: u32) -> bool {
    let l = lanes(line, hi, k);
    if any_equal(&l, 0) {
        return false;
    }
    subtract_one(line, &l);
    true
}

/// [`remove`] for 8 < k ≤ 16: nothing changes if any of the counters is zero; otherwise the
/// second word's counters are decremented as the first word's left them, as the scalar path
/// visits them.
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn remove_wide(line: &mut [u64; 8], h: Hashed, k: u32) -> bool {
    remove2(line, super::nibbles::digit_words(h, k), k)
}

#[inline]
#[target_feature(enable = "avx2")]
fn remove2(line: &mut [u64; 8], words: [u64; 2], k: u32) -> bool {
    let first = lanes(line, words[0], 8);
    if any_equal(&first, 0) || any_equal(&lanes(line, words[1], k - 8), 0) {
        return false;
    }
    subtract_one(line, &first);
    subtract_one(line, &lanes(line, words[1], k - 8));
    true
}

/// Subtract one from each lane's counter unless it is 15 or 0, so that a counter hit m times
/// ends at max(c - m, 0): of its m lanes, those with fewer than c equal lanes before them
/// subtract.
#[inline]
#[target_feature(enable = "avx2")]
fn subtract_one(line: &mut [u64; 8], l: &Lanes) {
    let mut shrink =
        _mm256_andnot_si256(_mm256_cmpeq_epi32(l.count, _mm256_set1_epi32(15)), l.used);
    let floor = if repeated(l) {
        rank(l)
    } else {
        _mm256_setzero_si256()
    };
    shrink = _mm256_and_si256(shrink, _mm256_cmpgt_epi32(l.count, floor));
    let one = _mm256_and_si256(_mm256_sllv_epi32(_mm256_set1_epi32(1), l.shift), shrink);
    add_to_words(line, l.word, _mm256_sub_epi32(_mm256_setzero_si256(), one));
}

/// `vpermd` indices: lane j reads lane j - r - 1 (mod 8), r = 0..7.
static BACK: [[i32; 8]; 7] = {
    let mut t = [[0i32; 8]; 7];
    let mut r = 0;
    while r < 7 {
        let mut j = 0;
        while j < 8 {
            t[r][j] = ((j + 8 - r - 1) % 8) as i32;
            j += 1;
        }
        r += 1;
    }
    t
};

/// All ones in lane j when j > r (lane j - r - 1 comes before it), r = 0..7.
static BEFORE: [[i32; 8]; 7] = {
    let mut t = [[0i32; 8]; 7];
    let mut r = 0;
    while r < 7 {
        let mut j = 0;
        while j < 8 {
            t[r][j] = if j > r { -1 } else { 0 };
            j += 1;
        }
        r += 1;
    }
    t
};

/// True when two lanes hold the same digit (the key hits a counter twice; the unused lanes'
/// digits are distinct from every other): a cheaper test than [`rank`], which only such keys
/// (about 15% at k = 7) need.
#[inline]
#[target_feature(enable = "avx2")]
fn repeated(l: &Lanes) -> bool {
    // every pair of lanes is 1–4 apart one way round
    let mut same = _mm256_setzero_si256();
    for back in &BACK[..4] {
        let other = _mm256_permutevar8x32_epi32(l.digit, load(back));
        same = _mm256_or_si256(same, _mm256_cmpeq_epi32(l.digit, other));
    }
    _mm256_movemask_ps(_mm256_castsi256_ps(same)) != 0
}

/// Each lane's rank: how many lanes before it hold the same digit.
#[inline]
#[target_feature(enable = "avx2")]
fn rank(l: &Lanes) -> __m256i {
    let mut rank = _mm256_setzero_si256();
    for (back, before) in BACK.iter().zip(&BEFORE) {
        let other = _mm256_permutevar8x32_epi32(l.digit, load(back));
        let same = _mm256_and_si256(_mm256_cmpeq_epi32(l.digit, other), load(before));
        rank = _mm256_sub_epi32(rank, same);
    }
    rank
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::multisets::blocked_counting::nibbles;
    use proptest::prelude::*;

    /// A word with the 8 given digits (7 bits each, from the top) and `low` in its low byte.
    fn word_of(digits: &[u64], low: u64) -> u64 {
        digits
            .iter()
            .enumerate()
            .fold(low & 255, |x, (i, d)| x | ((d & 127) << (57 - 7 * i)))
    }

    /// The vector path for either k.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    unsafe fn min_words(line: &[u64; 8], words: [u64; 2], k: u32) -> u32 {
        // SAFETY: the caller guarantees AVX2.
        unsafe {
            if k <= 8 {
                min(line, words[0], k)
            } else {
                min2(line, words, k)
            }
        }
    }

    /// # Safety
    /// The CPU must support AVX2.
    unsafe fn insert_words(line: &mut [u64; 8], words: [u64; 2], k: u32) -> bool {
        // SAFETY: the caller guarantees AVX2.
        unsafe {
            if k <= 8 {
                insert(line, words[0], k)
            } else {
                insert2(line, words, k)
            }
        }
    }

    /// # Safety
    /// The CPU must support AVX2.
    unsafe fn remove_words(line: &mut [u64; 8], words: [u64; 2], k: u32) -> bool {
        // SAFETY: the caller guarantees AVX2.
        unsafe {
            if k <= 8 {
                remove(line, words[0], k)
            } else {
                remove2(line, words, k)
            }
        }
    }

    /// Same count, same insert, same remove (result and line) as the scalar path.
    fn same_as_scalar(line: [u64; 8], words: [u64; 2], k: u32) -> Result<(), TestCaseError> {
        // SAFETY: the callers check that the CPU supports AVX2.
        unsafe {
            prop_assert_eq!(
                min_words(&line, words, k),
                nibbles::min_scalar(&line, words, k)
            );
            let (mut fast, mut slow) = (line, line);
            let (a, b) = (
                insert_words(&mut fast, words, k),
                nibbles::insert_scalar(&mut slow, words, k),
            );
            prop_assert_eq!(a, b);
            prop_assert_eq!(fast, slow, "insert k={}", k);
            for start in [line, fast] {
                let (mut fast, mut slow) = (start, start);
                let (a, b) = (
                    remove_words(&mut fast, words, k),
                    nibbles::remove_scalar(&mut slow, words, k),
                );
                prop_assert_eq!(a, b);
                prop_assert_eq!(fast, slow, "remove k={}", k);
            }
        }
        Ok(())
    }

    /// A line and a key's digits drawn from `seed`: cells full of the edge values (0, 1, 2, 7,
    /// 8, 13, 14, 15, one of them eight times in nine) and digits that hit a few counters many
    /// times (drawn from 0..4 half of the time). Drawn here rather than by proptest strategies
    /// of 144 elements, whose generation dominated the test's time in debug builds.
    fn drawn(seed: u64) -> ([u64; 8], [u64; 16]) {
        const EDGES: [u64; 8] = [0, 1, 2, 7, 8, 13, 14, 15];
        let mut state = seed;
        let mut next = || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            crate::hash::mix64(state)
        };
        let mut line = [0u64; 8];
        for j in 0..128 {
            let r = next();
            let c = match r % 9 {
                8 => (r >> 32) % 16,
                e => EDGES[e as usize],
            };
            line[j / 16] |= c << (4 * (j % 16));
        }
        let mut digits = [0u64; 16];
        for d in &mut digits {
            let r = next();
            *d = if r & 1 == 0 {
                (r >> 32) % 4
            } else {
                (r >> 32) % 128
            };
        }
        (line, digits)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        /// On lines full of the edge values, and keys that hit a few counters many times,
        /// within and across the two words.
        #[test]
        fn avx2_matches_the_scalar_path(seed: u64, low in 0u64..256, k in 1u32..=16) {
            if !crate::simd::avx2() {
                return Ok(()); // nothing to compare on this CPU
            }
            let (line, digits) = drawn(seed);
            let words = [word_of(&digits[..8], low), word_of(&digits[8..], low >> 3)];
            same_as_scalar(line, words, k)?;
        }
    }

    #[test]
    fn a_counter_hit_many_times() {
        if !crate::simd::avx2() {
            return;
        }
        // counter 5 hit 5 times in the first word and 3 times in the second, counter 9 twice
        // in the first and once in the second, counter 100 once in each
        let words = [
            word_of(&[5, 5, 5, 5, 9, 9, 100, 5], 0),
            word_of(&[5, 9, 100, 5, 5, 60, 61, 62], 0),
        ];
        for (c5, c9) in [
            (0, 0),
            (1, 1),
            (2, 3),
            (7, 13),
            (8, 14),
            (10, 1),
            (15, 15),
            (11, 2),
        ] {
            let mut line = [0u64; 8];
            line[0] = (c5 << 20) | (c9 << 36);
            line[6] = 3 << 16; // counter 100
            line[3] = 1 << 48 | 1 << 52 | 1 << 56 | 1 << 60; // counters 60–63
            for k in 1..=16 {
                same_as_scalar(line, words, k).unwrap_or_else(|e| panic!("c5={c5} c9={c9}: {e}"));
            }
        }
    }
}
