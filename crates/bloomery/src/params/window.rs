//! Age-partitioned filters (Shtul, Baquero & Almeida, "Age-Partitioned Bloom Filters", 2020,
//! §3 the structure, §4 the false-positive analysis).

use super::classic::pow_one_minus_inv;
use super::validate::{check_capacity, check_fpr, show};
use crate::error::{invalid, Result};

/// Largest k of an age-partitioned filter.
pub const APBF_MAX_K: u32 = 64;
/// Largest l of an age-partitioned filter.
pub const APBF_MAX_L: u32 = 64;
/// The sizing ([`apbf_shape`]) takes `l ≤ APBF_L_PER_K · k`. Memory per window item falls as
/// `l` grows, slower and slower, while a query for a key never inserted probes about `l`
/// slices (each a cache miss on a large filter): the paper's configurations keep `l` near `k`
/// (Shtul et al. §4). Under the exact fill model, the least memory with `l ≤ 2k` is within
/// 6% (p = 1%) and 11% (p = 0.1%) of the least with `l ≤ 64`, at a third of its probes, and
/// below the memory of the paper's own configurations at their rates.
pub const APBF_L_PER_K: u32 = 2;

/// Insertions each slice of an age-partitioned filter holds, newest slice first: `k` slices
/// receive insertions, `l` more keep them; a generation is `generation` insertions; `count` of
/// the current one happened and `shifts` generations ended since the filter was empty.
///
/// The slice at age `j` was, `a` generations ago, at age `j - a`, and received that
/// generation's insertions when `j - a < k`; it was cleared `j` generations ago (or was empty at
/// the start, when `j > shifts`).
pub fn apbf_slice_inserts(k: u32, l: u32, generation: u64, count: u64, shifts: u64) -> Vec<u64> {
    let s = u64::from(k) + u64::from(l);
    (0..s)
        .map(|j| {
            (0..=j.min(shifts))
                .filter(|&a| j - a < u64::from(k))
                .map(|a| if a == 0 { count } else { generation })
                .fold(0u64, u64::saturating_add)
        })
        .collect()
}

/// Probability that a sequence of independent trials, trial j succeeding with probability
/// `fills[j]`, holds a run of `k` consecutive successes: the chance that a key never inserted
/// finds `k` consecutive slices with its bit set (Shtul et al. §4). Dynamic programming over
/// the length of the current run.
pub fn apbf_run_probability(fills: &[f64], k: u32) -> f64 {
    let k = k.max(1) as usize;
    if fills.len() < k {
        return 0.0;
    }
    // run[r]: no run of k yet, and the last r trials succeeded
    let mut run = vec![0.0f64; k];
    run[0] = 1.0;
    let mut hit = 0.0;
    for &f in fills {
        let f = f.clamp(0.0, 1.0);
        hit += run[k - 1] * f;
        let alive: f64 = run.iter().sum();
        for r in (1..k).rev() {
            run[r] = run[r - 1] * f;
        }
        run[0] = alive * (1.0 - f);
    }
    hit.clamp(0.0, 1.0)
}

/// The false-positive rate of an age-partitioned filter with slices of `m` bits at the point
/// `(count, shifts)` (see [`apbf_slice_inserts`]): each slice's fill is `1 - (1-1/m)^i` for
/// its `i` insertions, and a query succeeds on `k` consecutive set bits.
pub fn apbf_fpr(k: u32, l: u32, m: u64, generation: u64, count: u64, shifts: u64) -> f64 {
    if m == 0 {
        return 1.0;
    }
    let fills: Vec<f64> = apbf_slice_inserts(k, l, generation, count, shifts)
        .into_iter()
        .map(|i| 1.0 - pow_one_minus_inv(m as f64, i as f64))
        .collect();
    apbf_run_probability(&fills, k)
}

/// The worst rate over an unbounded stream: the steady state (every slice aged at least once)
/// just before a shift, when every slice holds the most it ever holds.
pub fn apbf_fpr_worst(k: u32, l: u32, m: u64, generation: u64) -> f64 {
    apbf_fpr(
        k,
        l,
        m,
        generation,
        generation.saturating_sub(1),
        u64::from(k) + u64::from(l),
    )
}

/// The worst-point rate in the limit of large slices, as a function of `r = m / generation`
/// (slice bits per insertion of a generation): the fills are `1 - e^{-(j+1)/r}` for the `k`
/// slices taking insertions and `1 - e^{-k/r}` for the `l` older ones.
fn apbf_fpr_ratio(k: u32, l: u32, r: f64) -> f64 {
    let fills: Vec<f64> = (0..k + l)
        .map(|j| 1.0 - (-(f64::from(j.min(k - 1) + 1)) / r).exp())
        .collect();
    apbf_run_probability(&fills, k)
}

/// The shape of an age-partitioned filter: `k + l` slices of `slice_bits` bits, a shift every
/// `generation` insertions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApbfShape {
    /// Slices taking each insertion.
    pub k: u32,
    /// Further slices that only remember.
    pub l: u32,
    /// Bits per slice.
    pub slice_bits: u64,
    /// Insertions per generation (`ceil(window / l)`).
    pub generation: u64,
}

impl ApbfShape {
    /// Total bits, `(k + l) · slice_bits`.
    pub fn bits(&self) -> u64 {
        (u64::from(self.k) + u64::from(self.l)).saturating_mul(self.slice_bits)
    }
}

/// For each `(k, l)`, the smallest `r = m / generation` meeting `fpr` in the large-slice limit;
/// the pair with the least memory per window item, `(k + l) · r / l`. Depends on `fpr` alone,
/// so it is computed once per rate.
fn apbf_best_ratio(fpr: f64, max_l: u32) -> Option<(u32, u32, f64)> {
    use std::sync::Mutex;
    /// `(rate bits, max l)` → `(k, l, r)`.
    type Memo = Vec<((u64, u32), (u32, u32, f64))>;
    static MEMO: Mutex<Memo> = Mutex::new(Vec::new());
    let key = (fpr.to_bits(), max_l);
    if let Ok(memo) = MEMO.lock() {
        if let Some(&(_, v)) = memo.iter().find(|(k, _)| *k == key) {
            return Some(v);
        }
    }
    let bits = (1.0 / fpr).log2();
    let k_lo = (bits.floor() as i64 - 2).clamp(1, i64::from(APBF_MAX_K)) as u32;
    let k_hi = (bits.ceil() as i64 + 16).clamp(1, i64::from(APBF_MAX_K)) as u32;
    let mut best: Option<(u32, u32, f64, f64)> = None;
    for k in k_lo..=k_hi {
        for l in 1..=max_l.min(APBF_MAX_L).min(APBF_L_PER_K * k) {
            // bracket r: the rate falls as r grows
            let (mut lo, mut hi) = (0.01f64, 1.0f64);
            while apbf_fpr_ratio(k, l, hi) > fpr {
                lo = hi;
                hi *= 2.0;
                if hi > 1e9 {
                    break;
                }
            }
            if apbf_fpr_ratio(k, l, hi) > fpr {
                continue;
            }
            // a pair that cannot beat the best even at the lower end is skipped
            let cost = |r: f64| f64::from(k + l) * r / f64::from(l);
            if best.is_some_and(|b| cost(lo) >= b.3) {
                continue;
            }
            for _ in 0..40 {
                let mid = 0.5 * (lo + hi);
                if apbf_fpr_ratio(k, l, mid) > fpr {
                    lo = mid;
                } else {
                    hi = mid;
                }
                if hi - lo < hi * 1e-5 {
                    break;
                }
            }
            let c = cost(hi);
            if best.is_none_or(|b| c < b.3) {
                best = Some((k, l, hi, c));
            }
        }
    }
    let v = best.map(|(k, l, r, _)| (k, l, r))?;
    if let Ok(mut memo) = MEMO.lock() {
        if memo.len() < 64 {
            memo.push((key, v));
        }
    }
    Some(v)
}

/// Remembering slices a time window's sizing allows for, `2l + 1`: at a steady rate a time
/// window holds `l + 1` generations ended by the clock, and bursts end further generations by
/// count (see [`apbf_time_shape`]).
pub fn apbf_time_design_l(l: u32) -> u32 {
    2 * l + 1
}

/// Size a time window (Rodrigues, Shtul, Baquero & Almeida, "Time-limited Bloom Filter",
/// 2023) for `capacity` insertions per window at worst-point rate `fpr`: the `(k, l)` of
/// [`apbf_shape`], a base generation of `⌈capacity / l⌉` insertions, and the smallest base
/// slice for which `k +` [`apbf_time_design_l`]`(l)` slices, every older one holding `k`
/// full generations, meet `fpr`.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::params::{apbf_fpr_worst, apbf_time_design_l, apbf_time_shape};
///
/// let s = apbf_time_shape(100_000, 0.01)?;
/// let l = apbf_time_design_l(s.l);
/// assert!(apbf_fpr_worst(s.k, l, s.slice_bits, s.generation) <= 0.01);
/// # Ok(()) }
/// ```
pub fn apbf_time_shape(capacity: u64, fpr: f64) -> Result<ApbfShape> {
    let s = apbf_shape(capacity, fpr)?;
    let l = apbf_time_design_l(s.l);
    let mut m = s.slice_bits;
    let mut tries = 0;
    while apbf_fpr_worst(s.k, l, m, s.generation) > fpr {
        m = m.saturating_add((m / 256).max(1));
        tries += 1;
        if tries > 10_000 {
            return Err(invalid("fpr", "no slice size reaches this rate"));
        }
    }
    Ok(ApbfShape { slice_bits: m, ..s })
}

/// Size an age-partitioned filter for a window of `window` insertions at worst-point rate
/// `fpr` (Shtul et al. §4): among k ≤ [`APBF_MAX_K`] and l ≤ min([`APBF_MAX_L`],
/// [`APBF_L_PER_K`]·k), the pair needing the least memory, then the smallest slice whose exact worst-point rate
/// ([`apbf_fpr_worst`]) is at most `fpr`.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::params::{apbf_fpr_worst, apbf_shape};
///
/// let s = apbf_shape(100_000, 0.01)?;
/// assert!(apbf_fpr_worst(s.k, s.l, s.slice_bits, s.generation) <= 0.01);
/// assert!(u64::from(s.l) * s.generation >= 100_000);
/// # Ok(()) }
/// ```
pub fn apbf_shape(window: u64, fpr: f64) -> Result<ApbfShape> {
    check_capacity(window)?;
    check_fpr(fpr)?;
    let max_l = u32::try_from(window.min(u64::from(APBF_MAX_L))).unwrap_or(APBF_MAX_L);
    let (k, l, r) = apbf_best_ratio(fpr, max_l)
        .ok_or_else(|| invalid("fpr", format!("no window filter reaches {}", show(fpr))))?;
    let generation = window.div_ceil(u64::from(l));
    let mut m = ((r * generation as f64).ceil() as u64).max(1);
    let mut tries = 0;
    while apbf_fpr_worst(k, l, m, generation) > fpr {
        m = m.saturating_add((m / 256).max(1));
        tries += 1;
        if tries > 10_000 {
            return Err(invalid("fpr", "no slice size reaches this rate"));
        }
    }
    Ok(ApbfShape {
        k,
        l,
        slice_bits: m,
        generation,
    })
}
