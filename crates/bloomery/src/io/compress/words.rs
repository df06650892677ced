//! Read access to the words of bit arrays: slices, little-endian payload bytes, the XOR of
//! two arrays and a structure's arrays in place, and the counts over them.

use crate::error::{invalid, Result};
use crate::io::header as format;
use crate::store::Words;

/// Read access to the words of a bit array: a slice of words, a file's little-endian payload
/// bytes ([`LeWords`]), or the XOR of two arrays ([`XorWords`]). The encoder reads through it,
/// so compressing a file or diffing two copies nothing.
pub(super) trait WordSource {
    /// Number of words.
    fn word_count(&self) -> usize;
    /// Word `i` (`i < word_count()`).
    fn word(&self, i: usize) -> u64;
}

impl WordSource for [u64] {
    #[inline]
    fn word_count(&self) -> usize {
        self.len()
    }
    #[inline]
    fn word(&self, i: usize) -> u64 {
        self[i]
    }
}

/// The words of a little-endian byte array (a payload: a multiple of 8 bytes).
pub(super) struct LeWords<'a>(pub(super) &'a [u8]);

impl WordSource for LeWords<'_> {
    #[inline]
    fn word_count(&self) -> usize {
        self.0.len() / 8
    }
    #[inline]
    fn word(&self, i: usize) -> u64 {
        u64::from_le_bytes(self.0[8 * i..8 * i + 8].try_into().expect("8 bytes"))
    }
}

/// The word-by-word XOR of two arrays (as long as the shorter).
pub(super) struct XorWords<'a, A: ?Sized, B: ?Sized>(pub(super) &'a A, pub(super) &'a B);

impl<A: WordSource + ?Sized, B: WordSource + ?Sized> WordSource for XorWords<'_, A, B> {
    #[inline]
    fn word_count(&self) -> usize {
        self.0.word_count().min(self.1.word_count())
    }
    #[inline]
    fn word(&self, i: usize) -> u64 {
        self.0.word(i) ^ self.1.word(i)
    }
}

/// Words needed for m bits, checked against the source.
pub(super) fn check_words<S: WordSource + ?Sized>(
    words: &S,
    m: u64,
    name: &'static str,
) -> Result<usize> {
    let need =
        usize::try_from(m.div_ceil(64)).map_err(|_| invalid("m", "too large for this platform"))?;
    if words.word_count() < need {
        return Err(invalid(
            name,
            format!("{} words hold fewer than m = {m} bits", words.word_count()),
        ));
    }
    Ok(need)
}

/// Mask of the bits of word `i` that lie below m.
#[inline]
pub(super) fn word_mask(i: usize, m: u64) -> u64 {
    let end = (i as u64 + 1) * 64;
    if end > m {
        (1u64 << (m % 64)) - 1
    } else {
        u64::MAX
    }
}

/// One bits among the first m bits of `words`.
pub(super) fn count_ones_m<S: WordSource + ?Sized>(words: &S, m: u64) -> u64 {
    let full = (m / 64) as usize;
    let mut n: u64 = (0..full)
        .map(|i| u64::from(words.word(i).count_ones()))
        .sum();
    if !m.is_multiple_of(64) {
        n += u64::from((words.word(full) & word_mask(full, m)).count_ones());
    }
    n
}

/// The minority bits of word `i` (one bits, or zero bits when `flip`), masked to m.
#[inline]
pub(super) fn minority_word<S: WordSource + ?Sized>(
    words: &S,
    i: usize,
    m: u64,
    flip: bool,
) -> u64 {
    let w = words.word(i);
    (if flip { !w } else { w }) & word_mask(i, m)
}

/// The words of a structure's payload, its arrays in order, each padded with zero words to a
/// multiple of 64 bytes (the file format's payload), read in place: what the encoder reads to
/// compress a structure without joining its arrays into one buffer.
pub(super) struct PartsWords<'a> {
    pub(super) parts: &'a [&'a Words],
    /// Word offset of each part in the payload, and the payload's words after the last.
    pub(super) starts: Vec<usize>,
}

impl<'a> PartsWords<'a> {
    pub(super) fn new(parts: &'a [&'a Words]) -> Self {
        let mut starts = Vec::with_capacity(parts.len() + 1);
        let mut at = 0usize;
        for p in parts {
            starts.push(at);
            at += (format::padded_len(p.len()) / 8) as usize;
        }
        starts.push(at);
        Self { parts, starts }
    }
}

impl WordSource for PartsWords<'_> {
    #[inline]
    fn word_count(&self) -> usize {
        self.starts[self.parts.len()]
    }
    #[inline]
    fn word(&self, i: usize) -> u64 {
        // the part holding word i: the last whose start is at or before it
        let p = self.starts.partition_point(|&s| s <= i) - 1;
        self.parts[p]
            .as_slice()
            .get(i - self.starts[p])
            .copied()
            .unwrap_or(0)
    }
}
