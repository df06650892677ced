//! Hypergraph peeling, shared by the static structures: the [`crate::BloomierFilter`] (Broder & Mitzenmacher
//! §9, Chazelle, Kilian, Rubinfeld & Tal 2004) and the [`crate::XorFilter`].
//!
//! Each key is an edge of a 3-uniform hypergraph on the table's cells. Peeling repeatedly
//! removes a cell touched by exactly one remaining key and records (key, cell); if every key is
//! removed, assigning the keys in reverse order lets each key fix its own cell so that the XOR
//! of its three cells equals whatever the structure wants to store (a value, a fingerprint).
//! With about 1.23 n cells (three equal blocks) or, with the segmented layout of binary fuse
//! filters (Graf & Lemire 2022), about 1.125 n, peeling succeeds with high probability; if it
//! fails the build is retried with a new seed derived deterministically from the hasher and the
//! attempt number, at most [`MAX_ATTEMPTS`] times, then a typed [`PeelError`] is returned.

use crate::error::{invalid, Error};
use crate::hash::{mix64, Hashed};

/// Build attempts (seeds) before giving up.
pub const MAX_ATTEMPTS: u32 = 64;

/// Why a static structure could not be built.
///
/// ```
/// use bloomery::{BloomierFilter, PeelError};
///
/// // a value wider than the map's 2-bit values cannot be stored
/// match BloomierFilter::builder().value_bits(2).try_build(&[("a", 1u64), ("b", 7)]) {
///     Err(PeelError::ValueTooWide { index, .. }) => assert_eq!(index, 1),
///     other => panic!("expected a value too wide, got {other:?}"),
/// }
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PeelError {
    /// The same key (same 128-bit hash) was given twice, at these input positions.
    #[error("duplicate key at positions {first} and {second}")]
    DuplicateKey {
        /// Input index of the first occurrence.
        first: usize,
        /// Input index of the repeat.
        second: usize,
    },
    /// A value does not fit in the configured width.
    #[error("value {value:#x} at position {index} does not fit in {bits} bits")]
    ValueTooWide {
        /// Input index.
        index: usize,
        /// The value.
        value: u64,
        /// The width.
        bits: u32,
    },
    /// Peeling failed for every seed tried (practically impossible unless the input is
    /// adversarial for the hasher).
    #[error("hypergraph peeling failed after {attempts} seeds")]
    Unpeelable {
        /// Seeds tried.
        attempts: u32,
    },
    /// Any other problem (parameters, memory limit).
    #[error(transparent)]
    Other(#[from] Error),
}

impl From<PeelError> for Error {
    fn from(e: PeelError) -> Self {
        match e {
            PeelError::Other(e) => e,
            PeelError::DuplicateKey { .. } => invalid("keys", e.to_string()),
            PeelError::ValueTooWide { .. } => invalid("values", e.to_string()),
            PeelError::Unpeelable { .. } => Error::Unsupported(e.to_string()),
        }
    }
}

/// The seed of attempt `a` for a structure whose hasher seed is `base`.
pub(crate) fn attempt_seed(base: u128, a: u32) -> u64 {
    mix64((base as u64) ^ ((base >> 64) as u64).rotate_left(29) ^ mix64(u64::from(a) + 1))
}

/// Two independent 64-bit values of a key for a given seed (positions, then fingerprint/mask).
#[inline]
pub(crate) fn derive(h: Hashed, seed: u64) -> (u64, u64, u64) {
    let a = mix64(h.lo ^ seed);
    let b = mix64(h.hi ^ seed.rotate_left(32) ^ 0xA5A5_A5A5_5A5A_5A5A);
    let c = mix64(h.lo.rotate_left(17) ^ h.hi ^ seed ^ 0x3C3C_C3C3_3C3C_C3C3);
    (a, b, c)
}

/// Index of a duplicate pair in `keys`, if any (sort by hash).
pub(crate) fn find_duplicate(keys: &[Hashed]) -> Option<(usize, usize)> {
    let mut idx: Vec<usize> = (0..keys.len()).collect();
    idx.sort_unstable_by_key(|&i| (keys[i].lo, keys[i].hi, i));
    idx.windows(2)
        .find(|w| keys[w[0]] == keys[w[1]])
        .map(|w| (w[0].min(w[1]), w[0].max(w[1])))
}

/// Peel: `pos(i)` gives key i's three distinct cells in `[0, cells)`. Returns the keys and
/// their pivot cells in peeling order, or `None` if a core remains.
pub(crate) fn peel(
    n: usize,
    cells: usize,
    pos: impl Fn(usize) -> [usize; 3],
) -> Option<Vec<(usize, usize)>> {
    let mut count = vec![0u32; cells];
    let mut xk = vec![0usize; cells];
    for i in 0..n {
        for p in pos(i) {
            count[p] += 1;
            xk[p] ^= i;
        }
    }
    let mut queue: Vec<usize> = (0..cells).filter(|&c| count[c] == 1).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(c) = queue.pop() {
        if count[c] != 1 {
            continue;
        }
        let k = xk[c];
        order.push((k, c));
        for p in pos(k) {
            count[p] -= 1;
            xk[p] ^= k;
            if count[p] == 1 {
                queue.push(p);
            }
        }
    }
    (order.len() == n).then_some(order)
}

/// [`peel`] for keys whose three cells are always distinct (the segmented layout of the
/// [`crate::XorFilter`]), with fewer than 2³² keys and cells: the same result (the same keys,
/// pivot cells and order: the stack starts with the degree-1 cells in ascending order and is
/// popped last-in first-out, and no step depends on how keys are numbered), in 8 bytes per
/// cell (degree and XOR of key numbers in one word) and 8 per key, with no other allocation
/// than the stack. `None` if a core remains or the sizes do not fit in 32 bits.
pub(crate) fn peel_compact(
    n: usize,
    cells: usize,
    pos: impl Fn(usize) -> [usize; 3],
) -> Option<Vec<(u32, u32)>> {
    const ONE: u64 = 1 << 32;
    if u32::try_from(n).is_err() || u32::try_from(cells).is_err() {
        return None;
    }
    // high half: degree (at most n < 2³², a key meets each cell once); low half: XOR of the
    // numbers of the keys on the cell, so a degree-1 cell names its key
    let mut cell = vec![0u64; cells];
    for i in 0..n {
        for p in pos(i) {
            cell[p] = cell[p].wrapping_add(ONE) ^ i as u64;
        }
    }
    let mut stack: Vec<u32> = Vec::with_capacity(cells / 4 + 16);
    stack.extend(
        cell.iter()
            .enumerate()
            .filter(|(_, &v)| v >> 32 == 1)
            .map(|(c, _)| c as u32),
    );
    let mut order = Vec::with_capacity(n);
    while let Some(c) = stack.pop() {
        let v = cell[c as usize];
        if v >> 32 != 1 {
            continue;
        }
        let k = v as u32;
        order.push((k, c));
        for p in pos(k as usize) {
            let nv = cell[p].wrapping_sub(ONE) ^ u64::from(k);
            cell[p] = nv;
            if nv >> 32 == 1 {
                stack.push(p as u32);
            }
        }
    }
    (order.len() == n).then_some(order)
}

/// Read cell `i` of width `w` (1..=64) from bit-packed words.
#[inline]
pub(crate) fn get_cell(words: &[u64], i: usize, w: u32) -> u64 {
    let bit = i as u64 * u64::from(w);
    let (word, off) = ((bit / 64) as usize, (bit % 64) as u32);
    let mut v = words[word] >> off;
    if off + w > 64 {
        v |= words[word + 1] << (64 - off);
    }
    v & mask(w)
}

/// XOR `v` (w bits) into cell `i`.
#[inline]
pub(crate) fn xor_cell(words: &mut [u64], i: usize, w: u32, v: u64) {
    let v = v & mask(w);
    let bit = i as u64 * u64::from(w);
    let (word, off) = ((bit / 64) as usize, (bit % 64) as u32);
    words[word] ^= v << off;
    if off + w > 64 {
        words[word + 1] ^= v >> (64 - off);
    }
}

/// The low `w` bits set.
#[inline]
pub(crate) fn mask(w: u32) -> u64 {
    if w >= 64 {
        u64::MAX
    } else {
        (1u64 << w) - 1
    }
}

/// Words holding `cells` cells of `w` bits.
pub(crate) fn words_for(cells: u64, w: u32) -> Option<usize> {
    cells
        .checked_mul(u64::from(w))
        .map(|b| b.div_ceil(64))
        .and_then(|x| usize::try_from(x).ok())
}

/// Check that no bit beyond `cells · w` is set in the last word.
pub(crate) fn tail_clean(words: &[u64], cells: u64, w: u32) -> bool {
    let bits = cells * u64::from(w);
    match words.last() {
        Some(&last) if !bits.is_multiple_of(64) => last >> (bits % 64) == 0,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn cells_roundtrip(w in 1u32..=64, vals in prop::collection::vec(any::<u64>(), 1..40)) {
            let mut words = vec![0u64; words_for(vals.len() as u64, w).unwrap()];
            for (i, v) in vals.iter().enumerate() {
                xor_cell(&mut words, i, w, *v);
            }
            for (i, v) in vals.iter().enumerate() {
                prop_assert_eq!(get_cell(&words, i, w), v & mask(w));
            }
            prop_assert!(tail_clean(&words, vals.len() as u64, w));
        }
    }

    proptest! {
        #[test]
        fn compact_peel_matches_generic(n in 0usize..300, seed in any::<u64>(), seg in 1usize..40) {
            // the xor layout: one cell in each of three consecutive segments
            let segs = n / seg + 3;
            let cells = (segs + 2) * seg;
            let pos = |i: usize| {
                let h = mix64(seed ^ i as u64);
                let s = (h % segs as u64) as usize;
                [s * seg + (h >> 20) as usize % seg, (s + 1) * seg + (h >> 40) as usize % seg, (s + 2) * seg + (h >> 50) as usize % seg]
            };
            let generic = peel(n, cells, pos);
            let compact = peel_compact(n, cells, pos);
            let generic: Option<Vec<(u32, u32)>> = generic.map(|o| o.iter().map(|&(k, c)| (k as u32, c as u32)).collect());
            prop_assert_eq!(compact, generic);
        }
    }

    #[test]
    fn peeling_small_graphs() {
        // two keys on the same three cells form a 2-core: not peelable
        assert!(peel(2, 3, |_| [0, 1, 2]).is_none());
        let order = peel(2, 4, |i| if i == 0 { [0, 1, 2] } else { [1, 2, 3] }).unwrap();
        assert_eq!(order.len(), 2);
        assert!(peel(0, 0, |_| [0, 0, 0]).unwrap().is_empty());
        assert!(peel_compact(2, 3, |_| [0, 1, 2]).is_none());
        let compact = peel_compact(2, 4, |i| if i == 0 { [0, 1, 2] } else { [1, 2, 3] }).unwrap();
        let generic: Vec<(u32, u32)> = order.iter().map(|&(k, c)| (k as u32, c as u32)).collect();
        assert_eq!(compact, generic);
        let ks = [Hashed::new(1, 2), Hashed::new(3, 4), Hashed::new(1, 2)];
        assert_eq!(find_duplicate(&ks), Some((0, 2)));
        assert_eq!(find_duplicate(&ks[..2]), None);
    }
}
