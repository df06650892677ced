//! The classic and partitioned filters (Salman §2, Broder & Mitzenmacher §2.1): exact and
//! asymptotic rates, the optimal k, sizing for (n, ε), foldable sizes, and the lower bound
//! `n·log2(1/ε)` (§2.2).

use super::validate::{check_capacity, check_fpr};
use crate::error::Result;

/// `(1 - 1/m)^e` computed stably for huge m and e.
#[inline]
pub(super) fn pow_one_minus_inv(m: f64, e: f64) -> f64 {
    (e * (-1.0 / m).ln_1p()).exp()
}

/// Exact expected false-positive rate of the classic filter: `(1 - (1-1/m)^{kn})^k` (Broder & Mitzenmacher §2.1).
pub fn fpr_exact(n: u64, m: u64, k: u32) -> f64 {
    if m == 0 || k == 0 {
        return 1.0;
    }
    let p_zero = pow_one_minus_inv(m as f64, k as f64 * n as f64);
    (1.0 - p_zero).powi(k as i32)
}

/// Asymptotic false-positive rate: `(1 - e^{-kn/m})^k` (Broder & Mitzenmacher §2.1).
pub fn fpr_asymptotic(n: u64, m: u64, k: u32) -> f64 {
    if m == 0 || k == 0 {
        return 1.0;
    }
    (1.0 - (-(k as f64) * n as f64 / m as f64).exp()).powi(k as i32)
}

/// False-positive rate of the partitioned filter: k slices of `m/k` bits each (Broder & Mitzenmacher §2.1):
/// `(1 - (1 - 1/s)^n)^k` with `s = ⌊m/k⌋`.
pub fn fpr_partitioned(n: u64, m: u64, k: u32) -> f64 {
    if k == 0 {
        return 1.0;
    }
    let s = m / u64::from(k);
    if s == 0 {
        return 1.0;
    }
    (1.0 - pow_one_minus_inv(s as f64, n as f64)).powi(k as i32)
}

/// The false-positive rate after the fill is known: `(ones/m)^k`.
pub fn fpr_from_fill(ones: u64, m: u64, k: u32) -> f64 {
    if m == 0 {
        return 1.0;
    }
    (ones as f64 / m as f64).powi(k as i32)
}

/// The k that minimises the exact rate for n items in m bits (near `(m/n)·ln 2`, Salman §2).
pub fn optimal_k(n: u64, m: u64) -> u32 {
    optimal_k_by(n, m, 64, fpr_exact)
}

fn optimal_k_by(n: u64, m: u64, max_k: u32, f: impl Fn(u64, u64, u32) -> f64) -> u32 {
    if n == 0 {
        return 1;
    }
    let guess = (m as f64 / n as f64 * std::f64::consts::LN_2).round() as i64;
    let mut best = (f64::INFINITY, 1u32);
    for k in (guess - 2)..=(guess + 2) {
        if k < 1 || k > i64::from(max_k) {
            continue;
        }
        let r = f(n, m, k as u32);
        if r < best.0 {
            best = (r, k as u32);
        }
    }
    if best.0.is_infinite() {
        max_k.max(1)
    } else {
        best.1
    }
}

/// A classic filter's shape: bits and hash count.
///
/// ```
/// use bloomery::params;
///
/// # fn main() -> bloomery::Result<()> {
/// let s = params::classic_shape(1_000_000, 0.01)?;
/// assert_eq!(s.k, 7); // ln 2 · m/n, rounded
/// assert!(params::fpr_asymptotic(1_000_000, s.m, s.k) <= 0.01);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Bits.
    pub m: u64,
    /// Hash functions.
    pub k: u32,
}

/// The optimal asymptotic size for (n, ε): `m = -n·ln ε / (ln 2)²` (Salman §2).
pub fn bits_asymptotic(n: u64, fpr: f64) -> f64 {
    -(n as f64) * fpr.ln() / (std::f64::consts::LN_2 * std::f64::consts::LN_2)
}

/// The smallest classic shape whose *exact* rate is at most `fpr` for `n` items.
pub fn classic_shape(n: u64, fpr: f64) -> Result<Shape> {
    check_capacity(n)?;
    check_fpr(fpr)?;
    Ok(smallest_shape(n, fpr, 64, fpr_exact))
}

/// A classic filter's m rounded up to whole 64-bit words (at most 63 more bits, no more
/// memory: the words are allocated anyway). The rate only falls, and an m with factors of
/// two can be halved by folding (Broder & Mitzenmacher §2.4): 64 | m allows six halvings.
pub fn foldable_bits(m: u64) -> u64 {
    m.checked_next_multiple_of(64).unwrap_or(m)
}

/// A blocked filter's block count rounded up so that it can be halved by folding adjacent
/// block pairs: to a multiple of 2^t, the largest power of two at most `max(2, blocks/256)`.
/// That adds less than one block or 0.4 % of the memory (and the rate only falls); a
/// filter of 19,726 blocks becomes 19,776 = 64·309 (six halvings).
pub fn foldable_blocks(blocks: u64) -> u64 {
    if blocks < 2 {
        return blocks;
    }
    let unit = 1u64 << (63 - (blocks / 256).max(2).leading_zeros());
    blocks.checked_next_multiple_of(unit).unwrap_or(blocks)
}

/// The smallest partitioned shape (m a multiple of k) whose rate is at most `fpr`.
pub fn partitioned_shape(n: u64, fpr: f64) -> Result<Shape> {
    check_capacity(n)?;
    check_fpr(fpr)?;
    let s = smallest_shape(n, fpr, 64, fpr_partitioned);
    let k = u64::from(s.k);
    Ok(Shape {
        m: s.m.div_ceil(k) * k,
        k: s.k,
    })
}

/// Binary search for the least m such that some k gives rate ≤ fpr.
fn smallest_shape(n: u64, fpr: f64, max_k: u32, f: impl Fn(u64, u64, u32) -> f64 + Copy) -> Shape {
    let ok = |m: u64| {
        let k = optimal_k_by(n, m, max_k, f);
        (f(n, m, k) <= fpr, k)
    };
    let guess = bits_asymptotic(n, fpr).ceil().max(1.0);
    let mut hi = (guess * 1.05 + 64.0).min(u64::MAX as f64 / 4.0) as u64;
    while !ok(hi).0 && hi < u64::MAX / 4 {
        hi *= 2;
    }
    let mut lo = ((guess * 0.9) as u64).max(1).min(hi - 1);
    if ok(lo).0 {
        lo = 1;
    }
    // invariant: ok(hi), !ok(lo) or lo == 1
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if ok(mid).0 {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    let m = if ok(lo).0 { lo } else { hi };
    Shape { m, k: ok(m).1 }
}

/// The information-theoretic lower bound on bits for n items at rate ε: `n·log2(1/ε)` (Broder & Mitzenmacher §2.2).
pub fn lower_bound_bits(n: u64, fpr: f64) -> f64 {
    n as f64 * (1.0 / fpr).log2()
}

/// Bits used relative to the lower bound (1.44 for an optimal classic filter, Broder & Mitzenmacher §2.2).
pub fn ratio_to_lower_bound(bits: u64, n: u64, fpr: f64) -> f64 {
    bits as f64 / lower_bound_bits(n, fpr)
}
