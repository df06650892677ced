//! The multi-layer Bloom filter (Cen, Xu & Sun): eq. 4's rate and the near-miss rate and
//! sizing.

use super::classic::{bits_asymptotic, fpr_exact, Shape};
use super::validate::{check_capacity, check_fpr};
use crate::error::{invalid, Result};

/// Multi-layer Bloom filter rate, eq. 4 of Cen, Xu & Sun: `f_MLBF = f(k, m, n)^L`, with f the exact
/// classic rate of one layer of m bits holding n segments. (The XOR layer is left out of eq. 4;
/// it only lowers the rate further.)
pub fn fpr_mlbf(n: u64, m: u64, k: u32, layers: u32) -> f64 {
    fpr_exact(n, m, k).powi(layers as i32)
}

/// The per-layer rate that makes eq. 4 of Cen, Xu & Sun meet a whole-filter target: `ε^{1/L}`.
/// Eq. 4 holds only for URLs whose every segment is new; see [`mlbf_near_miss_shape`].
pub fn mlbf_layer_fpr(fpr: f64, layers: u32) -> f64 {
    fpr.powf(1.0 / f64::from(layers.max(1)))
}

/// The rate at which an MLBF passes a **near miss** — a URL with one layer value that no
/// inserted URL has at that layer (the paper's own queries: a known page with a unique id
/// appended) — at most, from the fill of that layer and of the XOR layer (fractions of ones)
/// and k.
///
/// Every other layer passes such a URL for certain; its layer and the XOR layer must both
/// pass. They are not independent tests: the XOR layer's j-th position is the reduction of
/// `c_j ⊕ x_j`, `x_j` the new value's j-th hash and `c_j` the XOR of the other layers' (the
/// paper's XOR of addresses), so among inserted URLs that share all the other values (the
/// same `c`) the XOR bit at index j follows from the layer bit at index j. If every inserted
/// URL shares them (the worst case), the layer's bit at index j was set at index j with
/// probability `a = 1 - (1 - fill)^{1/k}`, and then the XOR bit is set too; otherwise the
/// XOR bit can only have been set at the other k-1 indexes, whose share of the XOR layer's
/// fill is `1 - (1 - xor_fill)^{(k-1)/k}`. So at most
/// `(a + (fill - a)·(1 - (1 - xor_fill)^{(k-1)/k}))^k`, exact when m is a power of two
/// (the XOR layer's positions are then the layer's XOR-ed with a constant), below it
/// otherwise. URLs that share none give `(fill·xor_fill)^k`; real ones lie in between.
pub fn mlbf_near_miss_fpr(layer_fill: f64, xor_fill: f64, k: u32) -> f64 {
    let (f, x) = (layer_fill.clamp(0.0, 1.0), xor_fill.clamp(0.0, 1.0));
    let k1 = f64::from(k.max(1));
    let a = -((-f).ln_1p() / k1).exp_m1();
    let others = -((-x).ln_1p() * (k1 - 1.0) / k1).exp_m1();
    (a + (f - a).max(0.0) * others).powi(k as i32)
}

/// The shape (bits per array m, k) of an MLBF sized for `n` distinct URLs so that a near
/// miss is passed at rate at most `fpr` ([`mlbf_near_miss_fpr`] at the fill n URLs give an
/// array, whatever URLs they are: a layer holds at most n values): the smallest m over k.
/// In all, for the L+1 arrays, (L+1)/1.46 (at 0.1) to (L+1)/1.84 (at 1e-6) times the memory of
/// a classic filter at `fpr` ((L+1)/1.65 at 1%). Eq. 4's `fpr^{1/L}` per layer
/// ([`mlbf_layer_fpr`]) gives near misses about `fpr^{2/L}` or more.
pub fn mlbf_near_miss_shape(n: u64, fpr: f64, max_k: u32) -> Result<Shape> {
    check_capacity(n)?;
    check_fpr(fpr)?;
    let rate = |m: u64, k: u32| {
        let fill = -((n as f64) * f64::from(k) * (-1.0 / m as f64).ln_1p()).exp_m1();
        mlbf_near_miss_fpr(fill, fill, k)
    };
    let mut best: Option<Shape> = None;
    for k in 1..=max_k.max(1) {
        // the classic shape at fpr bounds m from above (one array alone at fpr suffices)
        let mut hi = (bits_asymptotic(n, fpr).ceil() as u64).max(64) * 2;
        if rate(hi, k) > fpr {
            continue;
        }
        let mut lo = 1u64;
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if rate(mid, k) <= fpr {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        if !matches!(best, Some(b) if b.m <= hi) {
            best = Some(Shape { m: hi, k });
        }
    }
    best.ok_or_else(|| invalid("fpr", format!("no shape reaches {fpr}")))
}
