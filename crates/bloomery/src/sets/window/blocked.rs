//! The blocked layout of the age-partitioned filter (Shtul, Baquero & Almeida, "Age-Partitioned
//! Bloom Filters", 2020, the age-partitioned blocked Bloom filter): each slice is cut into
//! 64-bit words, and the `k + l` words of equal index, one per slice, sit side by side in a
//! block. A key picks one block; an insertion sets one bit in each of the words of the `k`
//! newest slices (`k` adjacent words, two runs when the ring wraps), and a query reads all the
//! block's words at once: the key's bit of each word gathered into one 64-bit mask of hits,
//! turned from ring order to age order, then tested for a run of `k` set bits by `log2 k`
//! shift-and steps (no branch per slice; blocks of more than 64 words are scanned one slice at
//! a time). A block of `k + l ≤ 32` words is at most four
//! 64-byte cache lines; the `k` words an insertion touches are `⌈8k / 64⌉` lines, one more when
//! they straddle a line boundary.
//!
//! The rate of the blocked layout is not the sliced one's: the keys of one generation fall
//! unevenly on the blocks, and a block that took many keys in a generation is fuller in every
//! slice holding that generation (the fills of a block's words are correlated along the ring).
//! [`blocked_fpr`] is the §4 model — a key never inserted is found when `k` consecutive slices
//! hold its bit — averaged over the blocks' loads: each generation's keys in the query's block
//! are Poisson with mean `generation / blocks` (independent between generations; Poisson
//! overstates the spread of the true binomial, so the model errs high), a word that holds `S`
//! keys is `1 - (63/64)^S` full, and the run probability of those fills is averaged over
//! [`MODEL_SAMPLES`] draws of the loads from a fixed seed (so the model, and the sizing, are
//! reproducible). The sizing ([`blocked_shape`]) bounds the rate by the average plus three
//! standard errors of the draws.

use crate::error::{invalid, Result};
use crate::hash::{mix64, reduce, Hashed};
use crate::kind::Kind;
use crate::params;

/// Bits per slice word.
pub(crate) const WORD_BITS: u64 = 64;

/// Draws of the blocks' loads the model averages.
pub const MODEL_SAMPLES: u32 = 4096;

/// The draws' fixed seed.
const MODEL_SEED: u64 = 0xA9BF_B10C_4ED0_0001;

/// How the slices of an [`AgePartitionedBloomFilter`](super::AgePartitionedBloomFilter) lie in
/// memory. The layout is part of the file's kind (`window` or `window-blocked`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WindowLayout {
    /// Each slice a contiguous array of bits: a key's bit anywhere in its slice (one cache
    /// miss per slice touched). The least memory.
    #[default]
    Sliced,
    /// The slices' 64-bit words interleaved in blocks of `k + l` words: a key's bits all in
    /// one block (a few cache lines per operation), for somewhat more memory.
    Blocked,
}

impl WindowLayout {
    /// The file kind of this layout.
    pub fn kind(self) -> Kind {
        match self {
            WindowLayout::Sliced => Kind::Window,
            WindowLayout::Blocked => Kind::WindowBlocked,
        }
    }

    /// `"sliced"` or `"blocked"`.
    pub fn name(self) -> &'static str {
        match self {
            WindowLayout::Sliced => "sliced",
            WindowLayout::Blocked => "blocked",
        }
    }
}

/// The key's block, `0 .. blocks`.
#[inline]
pub(crate) fn block_of(h: Hashed, blocks: u64) -> u64 {
    reduce(h.lo, blocks)
}

/// The key's bits in the words of a block: ten 6-bit positions per mixed word, word `q`
/// covering physical slices `10q .. 10q + 10`.
#[derive(Clone, Copy)]
pub(crate) struct Positions {
    hi: u64,
    q: u64,
    word: u64,
}

impl Positions {
    #[inline]
    pub(crate) fn new(h: Hashed) -> Self {
        Self {
            hi: h.hi,
            q: u64::MAX,
            word: 0,
        }
    }

    /// The key's bit in the word of physical slice `p`, `0 .. 64`.
    #[inline]
    pub(crate) fn bit(&mut self, p: u64) -> u64 {
        let q = p / 10;
        if q != self.q {
            self.q = q;
            self.word = positions_word(self.hi, q);
        }
        (self.word >> (6 * (p % 10))) & 63
    }
}

/// The mixed word of positions `q`: the key's bits in physical slices `10q .. 10q + 10`,
/// 6 bits each from the low end.
#[inline]
pub(crate) fn positions_word(hi: u64, q: u64) -> u64 {
    mix64(hi ^ q.wrapping_mul(0xD6E8_FEB8_6659_FD93))
}

/// The key's hits in a block of `s ≤ 64` words, bit `p` for physical slice `p`.
#[inline]
pub(crate) fn hits(h: Hashed, block: &[u64]) -> u64 {
    debug_assert!(block.len() <= 64);
    let mut hits = 0u64;
    for (q, group) in block.chunks(10).enumerate() {
        let word = positions_word(h.hi, q as u64);
        for (r, w) in group.iter().enumerate() {
            let bit = (word >> (6 * r)) & 63;
            hits |= ((w >> bit) & 1) << (10 * q + r);
        }
    }
    hits
}

/// The hits of `s` physical slices (bit `p` for slice `p`) in age order (bit `j` for the
/// slice of age `j`, physical `(head + j) % s`).
#[inline]
pub(crate) fn by_age(hits: u64, head: u64, s: u64) -> u64 {
    if head == 0 {
        return hits;
    }
    let low = if s == 64 { u64::MAX } else { (1u64 << s) - 1 };
    ((hits >> head) | (hits << (s - head))) & low
}

/// True when `x` holds `k ≥ 1` consecutive set bits: runs of at least `len` bits are kept
/// at their lowest bit by `x & x >> len`, doubling `len`, then one last step of `k - len`.
#[inline]
pub(crate) fn has_run(mut x: u64, k: u32) -> bool {
    let mut len = 1;
    while len * 2 <= k {
        x &= x >> len;
        len *= 2;
    }
    if len < k {
        x &= x >> (k - len);
    }
    x != 0
}

/// A uniform draw in `[0, 1)` from the counter `i`.
fn uniform(i: u64) -> f64 {
    (mix64(MODEL_SEED ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15)) >> 11) as f64 / (1u64 << 53) as f64
}

/// A Poisson draw of mean `mean` from the uniform `u` (inversion of the distribution; above a
/// mean of 200 the normal approximation, from a second uniform `v`).
fn poisson(mean: f64, u: f64, v: f64) -> u64 {
    if mean <= 0.0 {
        return 0;
    }
    if mean > 200.0 {
        let z = (-2.0 * (1.0 - u).ln()).sqrt() * (std::f64::consts::TAU * v).cos();
        return (mean + mean.sqrt() * z).round().max(0.0) as u64;
    }
    let mut p = (-mean).exp();
    let mut cdf = p;
    let mut x = 0u64;
    while u > cdf && x < 10_000 {
        x += 1;
        p *= mean / x as f64;
        cdf += p;
        if p < 1e-300 && cdf < u {
            // the tail is negligible: the rounding of the cdf kept it below u
            break;
        }
    }
    x
}

/// The blocked layout's rate at the point `(count, shifts)` of the stream (the module docs say
/// what the model is): the average over the draws and its standard error.
pub fn blocked_fpr(
    k: u32,
    l: u32,
    blocks: u64,
    generation: u64,
    count: u64,
    shifts: u64,
) -> (f64, f64) {
    if blocks == 0 {
        return (1.0, 0.0);
    }
    let s = (k + l) as usize;
    let kk = k as usize;
    let full = generation as f64 / blocks as f64;
    let current = count as f64 / blocks as f64;
    let present = shifts.min(s as u64 - 1) as usize;
    let keep = 1.0 - 1.0 / WORD_BITS as f64;
    let mut gens = vec![0u64; s];
    let mut fills = vec![0.0f64; s];
    let (mut sum, mut sum2) = (0.0f64, 0.0f64);
    for n in 0..u64::from(MODEL_SAMPLES) {
        for (t, g) in gens.iter_mut().enumerate() {
            if t > present {
                *g = 0;
                continue;
            }
            let i = (n * 128 + t as u64) * 2;
            let mean = if t == 0 { current } else { full };
            *g = poisson(mean, uniform(i), uniform(i + 1));
        }
        // the slice of age a holds the generations t ≤ a with a - t < k
        let mut load = 0u64;
        for (a, f) in fills.iter_mut().enumerate() {
            load += gens[a];
            if a >= kk {
                load -= gens[a - kk];
            }
            *f = 1.0 - keep.powi(load.min(i32::MAX as u64) as i32);
        }
        let r = params::apbf_run_probability(&fills, k);
        sum += r;
        sum2 += r * r;
    }
    let n = f64::from(MODEL_SAMPLES);
    let mean = sum / n;
    let var = (sum2 / n - mean * mean).max(0.0);
    (mean, (var / (n - 1.0)).sqrt())
}

/// The bound the sizing keeps under the target: the model's average plus three standard
/// errors, at the worst point of an unbounded stream (the steady state, just before a shift).
pub fn blocked_fpr_worst(k: u32, l: u32, blocks: u64, generation: u64) -> f64 {
    let (mean, se) = blocked_fpr(
        k,
        l,
        blocks,
        generation,
        generation.saturating_sub(1),
        u64::from(k) + u64::from(l),
    );
    (mean + 3.0 * se).min(1.0)
}

/// The blocked shape `(k, l, blocks)` for a window of `window` insertions at worst-point rate
/// `fpr`: the `(k, l)` of the sliced sizing ([`params::apbf_shape`]), then the fewest blocks
/// (to within 1/128) whose [`blocked_fpr_worst`] is at most `fpr`: steps of 1/8 up from the
/// sliced layout's memory, then a bisection.
pub fn blocked_shape(window: u64, fpr: f64) -> Result<(u32, u32, u64)> {
    let s = params::apbf_shape(window, fpr)?;
    let words = u64::from(s.k + s.l);
    let meets = |b: u64| blocked_fpr_worst(s.k, s.l, b, s.generation) <= fpr;
    let mut lo = 0u64; // fails (or is no filter)
    let mut hi = s.slice_bits.div_ceil(WORD_BITS).max(1);
    let mut tries = 0;
    while !meets(hi) {
        lo = hi;
        hi = hi.saturating_add((hi / 8).max(1));
        tries += 1;
        if tries > 400 || hi.saturating_mul(words) > u64::MAX / WORD_BITS {
            return Err(invalid("fpr", "no blocked window filter reaches this rate"));
        }
    }
    while hi - lo > (hi / 128).max(1) {
        let mid = lo + (hi - lo) / 2;
        if meets(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok((s.k, s.l, hi))
}
