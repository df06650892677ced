//! Estimates from a filter's bits: the number of items (Swamidass & Baldi) and the size of an
//! intersection (Broder & Mitzenmacher §2.4).

/// Estimated number of distinct items from the count of set bits (Swamidass & Baldi 2007,
/// inverting the expected zero count `m(1-1/m)^{kn}` of Broder & Mitzenmacher §2.1):
/// `n̂ = ln(1 - X/m) / (k·ln(1 - 1/m))`. Returns infinity for a full filter.
pub fn estimate_items(m: u64, k: u32, ones: u64) -> f64 {
    if m == 0 || k == 0 {
        return 0.0;
    }
    if ones >= m {
        return f64::INFINITY;
    }
    let zeros_frac = 1.0 - ones as f64 / m as f64;
    zeros_frac.ln() / (k as f64 * (-1.0 / m as f64).ln_1p())
}

/// Estimated `|S1 ∩ S2|` from two filters of the same shape (Broder & Mitzenmacher §2.4):
/// `(1/m)(1-1/m)^{-k|S1∩S2|} ≈ (Z1 + Z2 - Z12)/(Z1·Z2)`, where Z1, Z2 are the zero counts of the
/// two filters and Z12 the zero count of their bitwise AND (the inner product).
pub fn estimate_intersection(m: u64, k: u32, zeros1: u64, zeros2: u64, zeros_and: u64) -> f64 {
    if m == 0 || k == 0 || zeros1 == 0 || zeros2 == 0 {
        return f64::NAN;
    }
    let num = zeros1 as f64 + zeros2 as f64 - zeros_and as f64;
    if num <= 0.0 {
        return 0.0;
    }
    let ratio = m as f64 * num / (zeros1 as f64 * zeros2 as f64);
    if ratio <= 1.0 {
        return 0.0;
    }
    ratio.ln() / -(k as f64 * (-1.0 / m as f64).ln_1p())
}
