//! Compressed Bloom filters (Broder & Mitzenmacher §2.6): the entropy of a filter and the shape
//! that minimises the false-positive rate for a budget of transmitted bits.

use super::classic::fpr_asymptotic;
use super::validate::check_capacity;
use crate::error::{invalid, Result};

/// Binary entropy in bits: `H(p) = -p log2 p - (1-p) log2 (1-p)`.
pub fn entropy(p: f64) -> f64 {
    if p <= 0.0 || p >= 1.0 {
        return 0.0;
    }
    -p * p.log2() - (1.0 - p) * (1.0 - p).log2()
}

/// Expected bits of an ideally compressed filter: `m · H(p)`, p the expected fraction of zero
/// bits `e^{-kn/m}` (Broder & Mitzenmacher §2.6).
pub fn compressed_bits(n: u64, m: u64, k: u32) -> f64 {
    let p = (-(k as f64) * n as f64 / m as f64).exp();
    m as f64 * entropy(p)
}

/// A filter shape chosen for a transmission budget by [`compressed_shape`].
///
/// ```
/// use bloomery::params;
///
/// # fn main() -> bloomery::Result<()> {
/// // 8 transmitted bits per item, up to 32 bits per item in memory (Broder & Mitzenmacher §2.6)
/// let s = params::compressed_shape(10_000, 8.0, 32.0)?;
/// assert!(s.transmitted_bits <= 8.0 * 10_000.0 * 1.001);
/// assert!(s.fpr < params::fpr_asymptotic(10_000, 80_000, params::optimal_k(10_000, 80_000)));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompressedShape {
    /// Array bits (memory at both ends).
    pub m: u64,
    /// Hash functions.
    pub k: u32,
    /// Asymptotic false-positive rate `(1 - e^{-kn/m})^k`.
    pub fpr: f64,
    /// Expected transmitted bits after ideal compression, `m · H(e^{-kn/m})`.
    pub transmitted_bits: f64,
}

/// The m and k minimising the false-positive rate of n items when at most `z_per_item` bits per
/// item may be transmitted after compression (Mitzenmacher, Broder & Mitzenmacher §2.6 and its Table 1), with
/// the array limited to `max_m_per_item` bits per item (memory at the endpoints).
///
/// For each k in 1..=32 the rate falls as m grows while `m · H(e^{-kn/m})` grows (it is
/// increasing in m for every k), so the best m for that k is the largest one within both
/// budgets; it is found exactly over integer m by bisection, which is the finest grid of m/n.
/// The best k wins (ties: fewer hashes).
pub fn compressed_shape(n: u64, z_per_item: f64, max_m_per_item: f64) -> Result<CompressedShape> {
    check_capacity(n)?;
    if !(z_per_item.is_finite() && z_per_item > 0.0) {
        return Err(invalid("z_per_item", "must be a positive number of bits"));
    }
    if !(max_m_per_item.is_finite() && max_m_per_item * n as f64 >= 1.0) {
        return Err(invalid(
            "max_m_per_item",
            "must be finite and allow at least one bit",
        ));
    }
    let budget = z_per_item * n as f64;
    let max_m = (max_m_per_item * n as f64).min((1u64 << 52) as f64) as u64;
    let mut best: Option<CompressedShape> = None;
    for k in 1..=32u32 {
        // Largest m in [1, max_m] with compressed_bits ≤ budget (m = 1 always fits or nothing does).
        if compressed_bits(n, 1, k) > budget {
            continue;
        }
        let (mut lo, mut hi) = (1u64, max_m);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if compressed_bits(n, mid, k) <= budget {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        let shape = CompressedShape {
            m: lo,
            k,
            fpr: fpr_asymptotic(n, lo, k),
            transmitted_bits: compressed_bits(n, lo, k),
        };
        match best {
            Some(b) if b.fpr <= shape.fpr => {}
            _ => best = Some(shape),
        }
    }
    best.ok_or_else(|| invalid("z_per_item", "no shape fits the budget"))
}
