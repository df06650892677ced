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
//! [`crate::counting`]) is its own policy.
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
    /// `len` zero counters of `width` bits; refused if the words exceed `limit` bytes.
    pub fn zeroed(len: u64, width: u32, limit: u64) -> Result<Self> {
        check_width(width)?;
        let words = words_needed(len, width).ok_or(crate::Error::TooLarge {
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
        if used % 64 != 0 && words.as_slice()[need - 1] >> (used % 64) != 0 {
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

    /// Counters at the saturation value.
    pub fn count_saturated(&self) -> u64 {
        let max = self.max_value();
        (0..self.len).filter(|&i| self.get(i) == max).count() as u64
    }

    /// Counters that are not zero.
    pub fn count_nonzero(&self) -> u64 {
        if self.width == 1 {
            return crate::store::count_ones(self.words.as_slice());
        }
        (0..self.len).filter(|&i| self.get(i) != 0).count() as u64
    }

    /// Sum of all counters.
    pub fn sum(&self) -> u64 {
        (0..self.len).map(|i| u64::from(self.get(i))).sum()
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
            Err(crate::Error::TooLarge { .. })
        ));
        let w = Words::zeroed(2, u64::MAX).unwrap();
        assert!(Counters::from_words(w.clone(), 10, 4).is_err()); // needs 1 word
        let mut bad = Words::zeroed(1, u64::MAX).unwrap();
        bad.as_mut_slice()[0] = 1 << 60;
        assert!(Counters::from_words(bad, 10, 4).is_err());
    }

    proptest! {
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
