//! Packed w-bit counters (w = 1..=32) in the storage layer's [`Words`].
//!
//! Counter `i` occupies bits `[i·w, i·w + w)` of the word array, little-endian within and
//! across words, so a counter may straddle two words and no bit is wasted: m counters of
//! w bits take `⌈m·w / 64⌉` words. Like every bit array in bloomery the storage is a [`Words`]
//! value (aligned, size-checked before allocation, owned or mapped copy-on-write).
//!
//! **Arithmetic never wraps.** [`Counters::increment`] and [`Counters::add`] saturate at the
//! maximum `2^w - 1`; [`Counters::decrement`] and [`Counters::sub`] saturate at 0. What a
//! structure does with a saturated counter (the counting filter never decrements one, see
//! [`crate::multisets::counting`]) is its own policy.
//!
//! # Why a runtime width, not a const generic
//! The width is a field read on every access (`shift` and `mask` are computed from it), not a
//! type parameter. The cost is a couple of register operations next to a memory access that
//! dominates; the benefit is one compiled code path for every width: a file's width is known
//! only when it is read, so a const generic would force every loader (the CLI, the file
//! readers) to dispatch over 32 instantiations and would multiply code size by 32. The
//! structures stay single types (`CountingBloomFilter`, not `CountingBloomFilter<4>`), which
//! keeps their file format, `PartialEq` and merge checks simple.

use crate::error::{inconsistent, invalid, Result};
use crate::store::Words;

/// Widest counter supported, in bits.
pub const MAX_WIDTH: u32 = 32;

/// `len` counters of `width` bits packed into words (see the [module docs](self)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counters {
    words: Words,
    len: u64,
    width: u32,
}

/// Words needed for `len` counters of `width` bits, or `None` if that overflows.
pub fn words_needed(len: u64, width: u32) -> Option<usize> {
    let bits = len.checked_mul(u64::from(width))?;
    usize::try_from(bits.div_ceil(64)).ok()
}

fn check_width(width: u32) -> Result<()> {
    if width == 0 || width > MAX_WIDTH {
        return Err(invalid(
            "counter_width",
            format!("must be in 1..={MAX_WIDTH}, got {width}"),
        ));
    }
    Ok(())
}

impl Counters {
    /// Move the counters' words with `mv` (see [`Words::relocate`]).
    ///
    /// # Safety
    /// As [`Words::relocate`].
    pub(crate) unsafe fn relocate(
        &mut self,
        mv: &mut dyn FnMut(std::ptr::NonNull<u8>) -> Option<std::ptr::NonNull<u8>>,
    ) {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.words.relocate(mv) };
    }

    /// `len` zero counters of `width` bits; refused if the words exceed `limit` bytes.
    pub fn zeroed(len: u64, width: u32, limit: u64) -> Result<Self> {
        check_width(width)?;
        let words = words_needed(len, width).ok_or(crate::error::Error::TooLarge {
            requested: u64::MAX,
            limit,
        })?;
        Ok(Self {
            words: Words::zeroed(words, limit)?,
            len,
            width,
        })
    }

    /// Wrap decoded words, validating the word count and that no bit beyond the last counter
    /// is set.
    pub fn from_words(words: Words, len: u64, width: u32) -> Result<Self> {
        check_width(width).map_err(|e| inconsistent(e.to_string()))?;
        let need = words_needed(len, width).ok_or_else(|| inconsistent("counters overflow"))?;
        if words.len() != need {
            return Err(inconsistent(format!(
                "{} words hold {len} counters of {width} bits, need {need}",
                words.len()
            )));
        }
        let used = len * u64::from(width);
        if !used.is_multiple_of(64) && words.as_slice()[need - 1] >> (used % 64) != 0 {
            return Err(inconsistent("bits set beyond the last counter"));
        }
        Ok(Self { words, len, width })
    }

    /// Number of counters.
    #[inline]
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True when there are no counters.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bits per counter.
    #[inline]
    pub fn width(&self) -> u32 {
        self.width
    }

    /// The saturation value `2^w - 1`.
    #[inline]
    pub fn max_value(&self) -> u32 {
        (u64::MAX >> (64 - self.width)) as u32
    }

    /// The underlying words (for saving).
    pub fn words(&self) -> &Words {
        &self.words
    }

    /// True when the words are a read-only view of a mapped file.
    pub fn is_mapped(&self) -> bool {
        self.words.is_mapped()
    }

    #[inline(always)]
    fn mask(&self) -> u64 {
        u64::MAX >> (64 - self.width)
    }

    /// Counter `i` (`i < len`; out-of-range indices are a caller bug and panic).
    #[inline(always)]
    pub fn get(&self, i: u64) -> u32 {
        debug_assert!(i < self.len);
        let w = self.words.as_slice();
        let bit = i * u64::from(self.width);
        let (wi, off) = ((bit >> 6) as usize, (bit & 63) as u32);
        let mut v = w[wi] >> off;
        if off + self.width > 64 {
            v |= w[wi + 1] << (64 - off);
        }
        (v & self.mask()) as u32
    }

    /// Set counter `i` to `min(v, max_value)`.
    #[inline(always)]
    pub fn set(&mut self, i: u64, v: u32) {
        debug_assert!(i < self.len);
        let width = self.width;
        let mask = self.mask();
        let v = u64::from(v).min(mask);
        let w = self.words.as_mut_slice();
        let bit = i * u64::from(width);
        let (wi, off) = ((bit >> 6) as usize, (bit & 63) as u32);
        w[wi] = (w[wi] & !(mask << off)) | (v << off);
        if off + width > 64 {
            let hi = off + width - 64; // bits in the next word
            let hmask = (1u64 << hi) - 1;
            w[wi + 1] = (w[wi + 1] & !hmask) | (v >> (64 - off));
        }
    }

    /// Add `d`, saturating at `max_value`; returns the new value.
    #[inline(always)]
    pub fn add(&mut self, i: u64, d: u32) -> u32 {
        let v = (u64::from(self.get(i)) + u64::from(d)).min(self.mask()) as u32;
        self.set(i, v);
        v
    }

    /// Subtract `d`, saturating at 0; returns the new value.
    #[inline]
    pub fn sub(&mut self, i: u64, d: u32) -> u32 {
        let v = self.get(i).saturating_sub(d);
        self.set(i, v);
        v
    }

    /// Add one, saturating; returns the new value.
    #[inline]
    pub fn increment(&mut self, i: u64) -> u32 {
        self.add(i, 1)
    }

    /// Subtract one, saturating at 0; returns the new value.
    #[inline]
    pub fn decrement(&mut self, i: u64) -> u32 {
        self.sub(i, 1)
    }

    /// A read-only view for hot loops: the words, width and mask read once (see [`View`]).
    #[inline(always)]
    pub(crate) fn view(&self) -> View<'_> {
        View {
            words: self.words.as_slice(),
            width: self.width,
            mask: self.mask(),
        }
    }

    /// A mutable view for hot loops (a mapped view is first copied, once, here).
    #[inline(always)]
    pub(crate) fn view_mut(&mut self) -> ViewMut<'_> {
        let (width, mask) = (self.width, self.mask());
        ViewMut {
            words: self.words.as_mut_slice(),
            width,
            mask,
        }
    }

    /// Counters at the saturation value.
    pub fn count_saturated(&self) -> u64 {
        let max = self.max_value();
        let mut n = 0;
        self.scan(|v| n += u64::from(v == max));
        n
    }

    /// Counters that are not zero.
    pub fn count_nonzero(&self) -> u64 {
        if self.width == 1 {
            return crate::store::count_ones_behind(&self.words);
        }
        let mut n = 0;
        self.scan(|v| n += u64::from(v != 0));
        n
    }

    /// Sum of all counters.
    pub fn sum(&self) -> u64 {
        let mut n = 0u64;
        self.scan(|v| n = n.saturating_add(u64::from(v)));
        n
    }

    /// Every counter in order, `f(value)`, the file's pages dropped behind the pass
    /// ([`Behind`](crate::store::Behind)): a count over a mapped file holds a step of it
    /// resident, not the file.
    pub(crate) fn scan(&self, mut f: impl FnMut(u32)) {
        let mut behind = crate::store::Behind::new(&self.words);
        let (w, width, mask) = (self.words.as_slice(), self.width, self.mask());
        // counters between two checks of the pass's position
        const STEP: u64 = 1 << 16;
        let mut i = 0;
        while i < self.len {
            let end = (i + STEP).min(self.len);
            for j in i..end {
                // SAFETY: j < len, and the words hold `len` counters of `width` bits.
                f(unsafe { read(w, width, mask, j) });
            }
            behind.reached(locate(end, width).0);
            i = end;
        }
    }

    /// Set every counter to zero.
    pub fn clear(&mut self) {
        self.words.as_mut_slice().fill(0);
    }

    /// Bytes of the packed words.
    pub fn byte_len(&self) -> u64 {
        self.words.len() as u64 * 8
    }
}

/// Where counter `i` lives: word index and bit offset.
#[inline(always)]
fn locate(i: u64, width: u32) -> (usize, u32) {
    let bit = i * u64::from(width);
    ((bit >> 6) as usize, (bit & 63) as u32)
}

/// Counter `i` of `width` bits (`mask = 2^width - 1`) in `words`.
///
/// # Safety
/// `i < len`, where `words` holds at least `len` counters of `width` bits.
#[inline(always)]
unsafe fn read(words: &[u64], width: u32, mask: u64, i: u64) -> u32 {
    let (wi, off) = locate(i, width);
    // SAFETY: i < len, so bit i·w < len·w ≤ 64·words.len() (the words were sized by
    // `words_needed`) and wi = ⌊i·w / 64⌋ < words.len().
    let mut v = unsafe { *words.get_unchecked(wi) } >> off;
    if off + width > 64 {
        // only widths that do not divide 64 straddle two words; the next word exists because
        // the counter's last bit i·w + w - 1 < len·w lies in it
        v |= words[wi + 1] << (64 - off);
    }
    (v & mask) as u32
}

/// Set counter `i` to `v ≤ mask`.
///
/// # Safety
/// As for [`read`].
#[inline(always)]
unsafe fn write(words: &mut [u64], width: u32, mask: u64, i: u64, v: u32) {
    let v = u64::from(v) & mask;
    let (wi, off) = locate(i, width);
    // SAFETY: as in `read`, i < len implies wi < words.len().
    let w = unsafe { words.get_unchecked_mut(wi) };
    *w = (*w & !(mask << off)) | (v << off);
    if off + width > 64 {
        let hi = off + width - 64;
        let hmask = (1u64 << hi) - 1;
        let n = &mut words[wi + 1];
        *n = (*n & !hmask) | (v >> (64 - off));
    }
}

/// Evaluate `$body` with `$width` and `$mask` bound to compile-time constants for the default
/// 4-bit counters (shifts and masks fold to immediates and the straddle test disappears) and
/// to the run-time values otherwise: the body is expanded twice, so the 4-bit copy is always
/// specialised (a closure called from both branches was outlined instead). The bits are the
/// same either way.
macro_rules! with_width {
    ($w:expr, $m:expr, |$width:ident, $mask:ident| $body:block) => {
        if $w == 4 {
            let ($width, $mask): (u32, u64) = (4, 0xF);
            $body
        } else {
            let ($width, $mask): (u32, u64) = ($w, $m);
            $body
        }
    };
}

/// A borrowed, read-only view of [`Counters`] for the structures' hot loops: the word slice,
/// width and mask are loaded once per operation instead of once per counter, and indices are
/// not bounds-checked (the callers' indices come from [`crate::hash::reduce`] into `[0, len)`).
#[derive(Clone, Copy)]
pub(crate) struct View<'a> {
    words: &'a [u64],
    width: u32,
    mask: u64,
}

impl<'a> View<'a> {
    /// A view of the counters of `width` bits (1..=32) packed from bit 0 of `words`: the
    /// blocked counting filter views one 64-byte line at a time this way.
    #[inline(always)]
    pub(crate) fn over(words: &'a [u64], width: u32) -> Self {
        debug_assert!((1..=MAX_WIDTH).contains(&width));
        View {
            words,
            width,
            mask: u64::MAX >> (64 - width),
        }
    }

    /// Counter `i` (bounds-checked: panics when `i` is beyond the words, a caller bug).
    #[inline]
    pub(crate) fn get(&self, i: u64) -> u32 {
        assert!((i + 1) * u64::from(self.width) <= self.words.len() as u64 * 64);
        // SAFETY: the counter's bits lie inside the words (checked above).
        unsafe { read(self.words, self.width, self.mask, i) }
    }

    /// The minimum of the counters at `idx`, or 0 as soon as one is 0 (the rest are not read).
    ///
    /// # Safety
    /// Every index is `< len`.
    #[inline(always)]
    pub(crate) unsafe fn min_of(&self, idx: impl Iterator<Item = u64> + Clone) -> u32 {
        let words = self.words;
        with_width!(self.width, self.mask, |width, mask| {
            let mut min = u32::MAX;
            for i in idx.clone() {
                // SAFETY: the caller guarantees i < len.
                let v = unsafe { read(words, width, mask, i) };
                if v == 0 {
                    return 0;
                }
                min = min.min(v);
            }
            min
        })
    }
}

/// A borrowed, mutable view of [`Counters`] for hot loops (see [`View`]).
pub(crate) struct ViewMut<'a> {
    words: &'a mut [u64],
    width: u32,
    mask: u64,
}

impl<'a> ViewMut<'a> {
    /// A mutable view of the counters of `width` bits packed from bit 0 of `words` (see
    /// [`View::over`]).
    #[inline(always)]
    pub(crate) fn over(words: &'a mut [u64], width: u32) -> Self {
        debug_assert!((1..=MAX_WIDTH).contains(&width));
        ViewMut {
            words,
            width,
            mask: u64::MAX >> (64 - width),
        }
    }

    /// Counter `i` (bounds-checked like [`View::get`]).
    #[inline]
    pub(crate) fn get(&self, i: u64) -> u32 {
        View::over(self.words, self.width).get(i)
    }

    /// Set counter `i` to `min(v, 2^w - 1)` (bounds-checked like [`View::get`]).
    #[inline]
    pub(crate) fn set(&mut self, i: u64, v: u32) {
        assert!((i + 1) * u64::from(self.width) <= self.words.len() as u64 * 64);
        let v = u64::from(v).min(self.mask) as u32;
        // SAFETY: the counter's bits lie inside the words (checked above).
        unsafe { write(self.words, self.width, self.mask, i, v) }
    }

    /// Add `d` to each counter at `idx` in turn (saturating at the maximum); true when one of
    /// them was zero before. One read-modify-write per counter: the counters' loads do not
    /// depend on each other's stores, so their cache misses overlap.
    ///
    /// # Safety
    /// Every index is `< len`.
    #[inline(always)]
    pub(crate) unsafe fn add_each(
        &mut self,
        idx: impl Iterator<Item = u64> + Clone,
        d: u32,
    ) -> bool {
        let words = &mut *self.words;
        with_width!(self.width, self.mask, |width, mask| {
            let mut was_zero = false;
            for i in idx.clone() {
                // SAFETY: the caller guarantees i < len.
                let old = unsafe { read(words, width, mask, i) };
                was_zero |= old == 0;
                let new = (u64::from(old) + u64::from(d)).min(mask) as u32;
                // SAFETY: as above.
                unsafe { write(words, width, mask, i, new) };
            }
            was_zero
        })
    }

    /// Subtract one from each counter at `idx` (at most 64 indices) in turn, except counters
    /// at the maximum (saturated counters are never decremented, see [`crate::multisets::counting`]) —
    /// unless one of them was zero **before** this call, in which case nothing is changed and
    /// `false` is returned.
    ///
    /// The result is that of checking every counter first and decrementing second, but done
    /// in one branch-free pass of read-modify-writes (whose cache misses overlap; a check
    /// pass followed by a write pass measured several times slower on tables beyond the
    /// cache): a zero seen at position p was zero before the call unless an earlier position
    /// decremented the same counter (then the two-pass rule skips it as well); on a refusal
    /// every decrement is undone.
    ///
    /// # Safety
    /// Every index is `< len`.
    #[inline(always)]
    pub(crate) unsafe fn decrement_unless_zero(
        &mut self,
        idx: impl Iterator<Item = u64> + Clone,
    ) -> bool {
        let words = &mut *self.words;
        with_width!(self.width, self.mask, |width, mask| {
            let mut done = 0u64; // bit p: position p was decremented
            let mut zero = 0u64; // bit p: position p read zero
            for (p, i) in idx.clone().enumerate().take(64) {
                // SAFETY: the caller guarantees i < len.
                let v = unsafe { read(words, width, mask, i) };
                // no branch on the (possibly missing) counter: the next key's loads go ahead
                let dec = u32::from(v != 0 && u64::from(v) != mask);
                // SAFETY: as above.
                unsafe { write(words, width, mask, i, v - dec) };
                done |= u64::from(dec) << p;
                zero |= u64::from(v == 0) << p;
            }
            // A zero read at position p was zero before the call unless an earlier position
            // decremented the same counter (rare: only then is this loop entered at all).
            let refused = zero != 0
                && idx.clone().enumerate().take(64).any(|(p, i)| {
                    zero & (1 << p) != 0
                        && !idx
                            .clone()
                            .take(p)
                            .enumerate()
                            .any(|(q, j)| j == i && done & (1 << q) != 0)
                });
            if refused {
                // undo every decrement (each counter was below the maximum before it)
                for (q, j) in idx.clone().enumerate().take(64) {
                    if done & (1 << q) != 0 {
                        // SAFETY: as above.
                        let v = unsafe { read(words, width, mask, j) };
                        // SAFETY: as above.
                        unsafe { write(words, width, mask, j, v + 1) };
                    }
                }
            }
            !refused
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn every_width_roundtrips_and_saturates() {
        for width in 1..=MAX_WIDTH {
            let mut c = Counters::zeroed(203, width, u64::MAX).unwrap();
            let max = c.max_value();
            assert_eq!(u64::from(max), (1u64 << width) - 1);
            for i in 0..203 {
                c.set(i, (i as u32).wrapping_mul(2_654_435_761) & max);
            }
            for i in 0..203 {
                assert_eq!(
                    c.get(i),
                    (i as u32).wrapping_mul(2_654_435_761) & max,
                    "w={width}"
                );
            }
            c.set(7, max);
            assert_eq!(c.increment(7), max, "never wraps");
            assert_eq!(c.add(7, u32::MAX), max);
            c.set(8, 0);
            assert_eq!(c.decrement(8), 0, "never wraps below zero");
            assert_eq!(c.get(9), (9u32.wrapping_mul(2_654_435_761)) & max);
        }
    }

    #[test]
    fn bad_widths_and_sizes() {
        assert!(Counters::zeroed(10, 0, u64::MAX).is_err());
        assert!(Counters::zeroed(10, 33, u64::MAX).is_err());
        assert!(matches!(
            Counters::zeroed(u64::MAX, 32, 1 << 20),
            Err(crate::error::Error::TooLarge { .. })
        ));
        let w = Words::zeroed(2, u64::MAX).unwrap();
        assert!(Counters::from_words(w.clone(), 10, 4).is_err()); // needs 1 word
        let mut bad = Words::zeroed(1, u64::MAX).unwrap();
        bad.as_mut_slice()[0] = 1 << 60;
        assert!(Counters::from_words(bad, 10, 4).is_err());
    }

    /// The two-pass rule the fast remove must reproduce: refuse (nothing changed) if any
    /// counter is zero; otherwise decrement each in turn unless zero or saturated.
    fn remove_reference(c: &mut Counters, idx: &[u64]) -> bool {
        if idx.iter().any(|&i| c.get(i) == 0) {
            return false;
        }
        for &i in idx {
            let v = c.get(i);
            if v != 0 && v != c.max_value() {
                c.set(i, v - 1);
            }
        }
        true
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        /// The hot-loop views agree with `get`/`set`/`add` for every width, including repeated
        /// indices, saturated counters and refusals (which must change nothing).
        #[test]
        fn views_match_the_reference(
            width in prop_oneof![Just(4u32), 1u32..=32],
            init in proptest::collection::vec(0u32..6, 40),
            idx in proptest::collection::vec(0u64..40, 1..12),
            d in 1u32..4,
        ) {
            let mut a = Counters::zeroed(40, width, u64::MAX).unwrap();
            for (i, v) in init.iter().enumerate() {
                // small values, and some at the maximum
                let v = if *v == 5 { a.max_value() } else { *v };
                a.set(i as u64, v);
            }
            let start = a.clone();
            // min_of
            let want = idx.iter().map(|&i| a.get(i)).min().unwrap();
            // SAFETY: every index is below 40 = len.
            prop_assert_eq!(unsafe { a.view().min_of(idx.iter().copied()) }, want);
            // add_each
            let mut b = a.clone();
            let was_zero = idx.iter().any(|&i| b.get(i) == 0);
            for &i in &idx {
                b.add(i, d);
            }
            // SAFETY: as above.
            let got = unsafe { a.view_mut().add_each(idx.iter().copied(), d) };
            prop_assert_eq!(got, was_zero);
            prop_assert_eq!(&a, &b);
            // decrement_unless_zero, from the initial state and from the incremented one
            for s in [start, b] {
                let (mut fast, mut slow) = (s.clone(), s.clone());
                let want = remove_reference(&mut slow, &idx);
                // SAFETY: as above.
                let got = unsafe { fast.view_mut().decrement_unless_zero(idx.iter().copied()) };
                prop_assert_eq!(got, want);
                prop_assert_eq!(&fast, &slow);
                if !want {
                    prop_assert_eq!(&fast, &s);
                }
            }
        }

        #[test]
        fn neighbours_untouched(width in 1u32..=32, i in 0u64..100, v in any::<u32>()) {
            let mut c = Counters::zeroed(101, width, u64::MAX).unwrap();
            let max = c.max_value();
            for j in 0..101 { c.set(j, max); }
            c.set(i, v);
            prop_assert_eq!(c.get(i), v.min(max));
            for j in (0..101).filter(|&j| j != i) {
                prop_assert_eq!(c.get(j), max);
            }
        }
    }
}
