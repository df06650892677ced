//! The fast path of single-key operations for the default 4-bit counters and k ≤ 16: the k
//! positions are the top 7-bit slices of two words — `h.hi` for the first 8, the refreshed
//! word of round 1 for the next 8 ([`digit_words`]; exactly [`CellPositions`]) — counter p is
//! nibble `p % 16` of word `p / 16` of the line, and the line is a fixed array, so no index
//! is bounds-checked and no branch depends on a counter; k is made a compile-time constant
//! ([`with_k`](crate::hash::with_k)), so the k steps are unrolled with constant shifts (20–30%
//! fewer instructions than the loop over a run-time k; `line_probe ops` in the benches).
//! Fewer instructions per key let the CPU overlap the cache misses of more consecutive keys.
//! The results equal those of the counters' views (test `nibbles_match_the_views`).
//!
//! On x86-64 CPUs with AVX2 the filter runs the vector path of [`super::avx2`] instead (same
//! results, about half the instructions); this scalar path serves other CPUs and
//! `BLOOMERY_NO_SIMD` ([`crate::simd`]).

use super::{refresh, DIGITS4};
use crate::hash::{with_k, Hashed};

/// Largest k of the fast path: two words of 8 digits.
pub(super) const MAX_K: u32 = 2 * DIGITS4;

/// The words whose 7-bit slices are the key's counter positions: `h.hi`, and for k > 8 the
/// refreshed word of round 1 (as [`CellPositions`]); the second is 0 when unused.
#[inline(always)]
pub(super) fn digit_words(h: Hashed, k: u32) -> [u64; 2] {
    [h.hi, if k > DIGITS4 { refresh(h, 1) } else { 0 }]
}

/// Word and shift of each of the key's k counters.
#[inline(always)]
fn cells(words: [u64; 2], k: u32) -> impl Iterator<Item = (usize, u32)> + Clone {
    (0..k).map(move |i| {
        let x = words[(i / DIGITS4) as usize];
        let p = ((x << (7 * (i % DIGITS4))) >> 57) as usize;
        (p >> 4, (p as u32 & 15) * 4)
    })
}

/// Add one to each counter (saturating at 15); true when one of them was zero. Out of line on
/// x86-64, where it is the fallback of the AVX2 path (so the filter's dispatch stays short
/// enough to inline into the caller's loop); inlined elsewhere.
#[cfg_attr(target_arch = "x86_64", inline(never))]
#[cfg_attr(not(target_arch = "x86_64"), inline(always))]
pub(super) fn insert(line: &mut [u64; 8], words: [u64; 2], k: u32) -> bool {
    insert_scalar(line, words, k)
}

/// [`insert`] without SIMD.
#[inline(always)]
pub(super) fn insert_scalar(line: &mut [u64; 8], words: [u64; 2], k: u32) -> bool {
    with_k::<MAX_K, _>(k, |k| {
        let mut was_zero = false;
        for (w, s) in cells(words, k) {
            let v = line[w];
            let c = (v >> s) & 15;
            was_zero |= c == 0;
            line[w] = v + (u64::from(c != 15) << s);
        }
        was_zero
    })
}

/// The minimum of the counters (out of line on x86-64, see [`insert`]).
#[cfg_attr(target_arch = "x86_64", inline(never))]
#[cfg_attr(not(target_arch = "x86_64"), inline(always))]
pub(super) fn min(line: &[u64; 8], words: [u64; 2], k: u32) -> u32 {
    min_scalar(line, words, k)
}

/// [`min`] without SIMD.
#[inline(always)]
pub(super) fn min_scalar(line: &[u64; 8], words: [u64; 2], k: u32) -> u32 {
    with_k::<MAX_K, _>(k, |k| min_of(line, words, k))
}

#[inline(always)]
fn min_of(line: &[u64; 8], words: [u64; 2], k: u32) -> u32 {
    cells(words, k).fold(15, |m, (w, s)| m.min(((line[w] >> s) & 15) as u32))
}

/// Refuse (false, nothing changed) when a counter is zero; otherwise subtract one from
/// each in turn unless it is saturated (15) or already zero (a counter the key hits twice
/// at 1 goes to 0 once) — the rule of `ViewMut::decrement_unless_zero` (out of line on
/// x86-64, see [`insert`]).
#[cfg_attr(target_arch = "x86_64", inline(never))]
#[cfg_attr(not(target_arch = "x86_64"), inline(always))]
pub(super) fn remove(line: &mut [u64; 8], words: [u64; 2], k: u32) -> bool {
    remove_scalar(line, words, k)
}

/// [`remove`] without SIMD.
///
/// One pass of read-modify-writes, as short as the insert: if it read no zero, no counter
/// was zero before the call (a counter that was zero is read as zero at its first visit,
/// since nothing decrements a zero), so the pass was the answer. Otherwise (an absent key,
/// or a counter at 1 hit twice) the line is restored and the rule applied in two passes.
#[inline(always)]
pub(super) fn remove_scalar(line: &mut [u64; 8], words: [u64; 2], k: u32) -> bool {
    let before = *line;
    let zero = with_k::<MAX_K, _>(k, |k| {
        let mut zero = false;
        for (w, s) in cells(words, k) {
            let v = line[w];
            let c = (v >> s) & 15;
            zero |= c == 0;
            line[w] = v - (u64::from(c.wrapping_sub(1) < 14) << s);
        }
        zero
    });
    if zero {
        *line = before;
        return remove_two_pass(line, words, k);
    }
    true
}

#[cold]
fn remove_two_pass(line: &mut [u64; 8], words: [u64; 2], k: u32) -> bool {
    if min_of(line, words, k) == 0 {
        return false;
    }
    for (w, s) in cells(words, k) {
        let v = line[w];
        let c = (v >> s) & 15;
        line[w] = v - (u64::from(c.wrapping_sub(1) < 14) << s);
    }
    true
}
