//! The counting family: counter overflow (Broder & Mitzenmacher §2.5), count-min sizing, the
//! Iterative Bloom Filter's estimator and rate (Matsumoto, Hazeyama & Kadobayashi eq. 9, 10),
//! the d-left counting filter's rate, counter sizing for a maximum count (Matsumoto, Hazeyama &
//! Kadobayashi Table 5) and the Space-Code filter's maximum-likelihood count.

use super::classic::fpr_asymptotic;
use super::validate::{check_capacity, check_fpr, show};
use crate::error::{invalid, Result};

/// Upper bound on the probability that any counter of a counting filter reaches `j`
/// (Broder & Mitzenmacher §2.5): `m · (e·n·k / (j·m))^j`. With `k = (m/n) ln 2` and `j = 16` this is
/// `1.37e-15 · m`.
pub fn counter_overflow_bound(n: u64, m: u64, k: u32, j: u32) -> f64 {
    let x = std::f64::consts::E * n as f64 * k as f64 / (j as f64 * m as f64);
    m as f64 * x.powi(j as i32)
}

/// Exact probability that one counter is at least `j`: the binomial tail
/// `P(c ≥ j)`, `c ~ Binomial(nk, 1/m)` (Broder & Mitzenmacher §2.5).
///
/// Below the median the tail is `1 - P(c < j)`; above it the terms `P(c = i)`, `i ≥ j`, are
/// summed from j upward (relative to `P(c = j)`, in log space), so tails far below the
/// rounding error of 1 (1e-17, 1e-30, 1e-60) keep their full relative precision.
pub fn counter_tail(n: u64, m: u64, k: u32, j: u32) -> f64 {
    let trials = n as f64 * k as f64;
    if j == 0 {
        return 1.0;
    }
    if m == 0 || f64::from(j) > trials {
        return 0.0;
    }
    if m == 1 {
        // every trial lands on the one counter, and there are at least j of them
        return 1.0;
    }
    let q = 1.0 / m as f64;
    let (ln_q, ln_1q) = (q.ln(), (-q).ln_1p());
    // ln P(c = i+1) - ln P(c = i)
    let step = |i: f64| ((trials - i) / (i + 1.0)).ln() + ln_q - ln_1q;
    // ln P(c = i) for i = 0, 1, …, j, and the mass below j
    let mut log_p = trials * ln_1q;
    let mut below = 0.0;
    for i in 0..j {
        below += log_p.exp();
        log_p += step(f64::from(i));
    }
    if below < 0.5 {
        // the tail is above one half: no cancellation in the complement
        return (1.0 - below).clamp(0.0, 1.0);
    }
    // Σ_{i ≥ j} P(c = i) / P(c = j): past the median the ratios fall, so stop once a term
    // no longer changes the sum
    let (mut sum, mut rel, mut i) = (0.0f64, 0.0f64, f64::from(j));
    loop {
        let t = rel.exp();
        sum += t;
        if t <= sum * 1e-18 || i >= trials {
            break;
        }
        rel += step(i);
        i += 1.0;
    }
    (log_p + sum.ln()).exp().min(1.0)
}

/// Count-min dimensions for an additive error `ε·N` (N the total count) with probability at
/// least `1 - δ` (Cormode & Muthukrishnan, cited in Broder & Mitzenmacher §9): `width = ⌈e/ε⌉`,
/// `depth = ⌈ln(1/δ)⌉` (at least 1). Returns `(width, depth)`.
pub fn count_min_dimensions(epsilon: f64, delta: f64) -> Result<(u64, u32)> {
    if !epsilon.is_finite() || epsilon <= 0.0 || epsilon >= 1.0 {
        return Err(invalid(
            "epsilon",
            format!("must be strictly between 0 and 1, got {epsilon}"),
        ));
    }
    if !delta.is_finite() || delta <= 0.0 || delta >= 1.0 {
        return Err(invalid(
            "delta",
            format!("must be strictly between 0 and 1, got {delta}"),
        ));
    }
    let width = (std::f64::consts::E / epsilon).ceil();
    if width > (1u64 << 48) as f64 {
        return Err(invalid(
            "epsilon",
            format!("{epsilon} needs an absurd width"),
        ));
    }
    let depth = (1.0 / delta).ln().ceil().max(1.0);
    if depth > 64.0 {
        return Err(invalid("delta", format!("{delta} needs more than 64 rows")));
    }
    Ok((width as u64, depth as u32))
}

/// The count-min error bounds of a shape: `(ε, δ) = (e / width, e^{-depth})`.
pub fn count_min_bounds(width: u64, depth: u32) -> (f64, f64) {
    (
        std::f64::consts::E / width.max(1) as f64,
        (-(depth as f64)).exp(),
    )
}

/// Bits an Iterative Bloom Filter sets after `n` inputs with distinctness rate `alpha`
/// (Matsumoto, Hazeyama & Kadobayashi §4.3.1): `α·n·k + (1-α)·n` — k per distinct input, one per repeat.
pub fn ibf_bits_set(n: u64, k: u32, alpha: f64) -> f64 {
    let (n, a) = (n as f64, alpha.clamp(0.0, 1.0));
    a * n * k as f64 + (1.0 - a) * n
}

/// Probability that a position of an IBF is already one by collision (Matsumoto, Hazeyama & Kadobayashi §4):
/// `p = 1 - exp(-(α·k·n + (1-α)·n)/m)`.
pub fn ibf_collision_probability(n: u64, m: u64, k: u32, alpha: f64) -> f64 {
    if m == 0 {
        return 1.0;
    }
    -(-ibf_bits_set(n, k, alpha) / m as f64).exp_m1()
}

/// The IBF's estimate of a key's true count from the observed count `j'` (Matsumoto, Hazeyama & Kadobayashi eq. 9):
/// `E(i) = (1 - p/2)·j' = ½·(1 + exp(-(α·k·n + (1-α)·n)/m))·j'`. The paper notes it is less
/// accurate when repeats arrive unevenly.
pub fn ibf_count_estimate(observed: u64, n: u64, m: u64, k: u32, alpha: f64) -> f64 {
    (1.0 - ibf_collision_probability(n, m, k, alpha) / 2.0) * observed as f64
}

/// The IBF's false-positive rate (Matsumoto, Hazeyama & Kadobayashi eq. 10): `(1 - exp(-(α·n·k + (1-α)·n)/m))^k`.
pub fn ibf_fpr(n: u64, m: u64, k: u32, alpha: f64) -> f64 {
    ibf_collision_probability(n, m, k, alpha).powi(k as i32)
}

/// The most an IBF's false-positive rate can be after `distinct` distinct inputs and
/// `repeats` counted repeats, whatever their order. A distinct input sets k random bits; a
/// repeat always sets exactly one bit that was zero. Eq. 10 ([`ibf_fpr`]) treats repeats as
/// random throws too, which holds only when they come early: a repeat after the distinct
/// inputs cannot collide, so in expectation the zeros are at least
/// `m·(1-1/m)^{k·distinct} - repeats` and the rate at most
/// `(1 - (1-1/m)^{k·distinct} + repeats/m)^k` (repeats last: the worst order, and the
/// common one in a skewed stream whose popular keys keep recurring).
pub fn ibf_fpr_bound(distinct: u64, repeats: u64, m: u64, k: u32) -> f64 {
    if m == 0 {
        return 1.0;
    }
    let mf = m as f64;
    let zeros = (distinct as f64 * k as f64 * (-1.0 / mf).ln_1p()).exp();
    let fill = (1.0 - zeros + repeats as f64 / mf).min(1.0);
    fill.powi(k as i32)
}

/// How repeats are spread over the distinct inputs (Matsumoto, Hazeyama & Kadobayashi Table 4).
///
/// ```
/// use bloomery::params::{max_count_for_skew, Skew};
///
/// // 1,000 inputs, half of them distinct: the largest count grows with the skew
/// let n = 1000;
/// assert!(max_count_for_skew(n, 0.5, Skew::Small) < max_count_for_skew(n, 0.5, Skew::Medium));
/// assert_eq!(max_count_for_skew(n, 0.5, Skew::Large), 501);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skew {
    /// Case 1: repeats spread evenly over the distinct inputs.
    Small,
    /// Case 2: half the repeats on one value, the rest spread evenly.
    Medium,
    /// Case 3: all repeats on one value.
    Large,
}

/// The largest count of one value among `n` inputs with distinctness rate `alpha` (Matsumoto,
/// Hazeyama & Kadobayashi Table 5): repeats `(1-α)n` spread per [`Skew`]; the count is 1 (the first occurrence) plus
/// that value's repeats: Small `1 + (1-α)/α`, Medium `1 + (1-α)n/2`, Large `1 + (1-α)n`.
/// (The paper's table lists the repeats; a counter must also hold the first occurrence.)
pub fn max_count_for_skew(n: u64, alpha: f64, skew: Skew) -> u64 {
    let a = alpha.clamp(0.0, 1.0);
    let repeats = (1.0 - a) * n as f64;
    let top = match skew {
        Skew::Small if a > 0.0 => repeats / (a * n as f64),
        Skew::Small => repeats,
        Skew::Medium => repeats / 2.0,
        Skew::Large => repeats,
    };
    1 + top.ceil() as u64
}

/// Bits a counter needs to hold `max_count` without saturating: `⌈log2(max_count + 1)⌉`
/// (at least 1). Matsumoto, Hazeyama & Kadobayashi Table 5 sizes a counting filter's counters this way for the largest count.
pub fn counter_bits_for(max_count: u64) -> u32 {
    (64 - max_count.leading_zeros()).max(1)
}

/// False-positive rate of a counting filter given `memory_bits` of memory in counters of
/// `counter_bits`, holding `distinct` distinct keys with k hashes (Matsumoto, Hazeyama & Kadobayashi §4.3.2): only
/// `m/c` counters fit, so the rate is `(1 - e^{-k·distinct/(m/c)})^k`.
pub fn cbf_fpr_for_memory(distinct: u64, memory_bits: u64, k: u32, counter_bits: u32) -> f64 {
    let counters = memory_bits / u64::from(counter_bits.max(1));
    if counters == 0 {
        return 1.0;
    }
    fpr_asymptotic(distinct, counters, k)
}

/// False-positive rate of a d-left counting filter (Bonomi et al. 2006): `d` subtables of
/// `buckets` buckets each, cells holding `remainder_bits`-bit remainders, `n` items stored.
///
/// A query probes one bucket per subtable; the `n` stored cells are spread over the `d·buckets`
/// buckets, so the probed buckets hold `n / buckets` cells on average, and each matches the
/// query's remainder with probability `2^-r`:
/// `f = 1 - (1 - 2^-r)^{n / buckets} ≈ n / (buckets · 2^r)`.
pub fn dleft_fpr(n: u64, buckets: u64, remainder_bits: u32) -> f64 {
    if buckets == 0 {
        return 1.0;
    }
    let q = 0.5f64.powi(remainder_bits as i32);
    -((n as f64 / buckets as f64) * (-q).ln_1p()).exp_m1()
}

/// A d-left counting filter's shape.
///
/// ```
/// use bloomery::params;
///
/// # fn main() -> bloomery::Result<()> {
/// // 4 tables of 8-cell buckets with 2-bit counters, for 10,000 items at 1%
/// let s = params::dleft_shape(10_000, 0.01, 4, 8, 2)?;
/// assert!(params::dleft_fpr(10_000, s.buckets, s.remainder_bits) <= 0.01);
/// assert_eq!(s.bits(), 4 * s.buckets * 8 * u64::from(s.remainder_bits + 2));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DLeftShape {
    /// Subtables (d).
    pub tables: u32,
    /// Buckets per subtable (a power of two).
    pub buckets: u64,
    /// Cells per bucket.
    pub cells: u32,
    /// Bits of each cell's remainder (fingerprint).
    pub remainder_bits: u32,
    /// Bits of each cell's counter.
    pub counter_bits: u32,
}

impl DLeftShape {
    /// Total bits of the cell arrays.
    pub fn bits(&self) -> u64 {
        u64::from(self.tables)
            * self.buckets
            * u64::from(self.cells)
            * u64::from(self.remainder_bits + self.counter_bits)
    }
}

/// The d-left shape of Bonomi et al. for `n` items at rate `fpr`: d subtables of buckets of
/// `cells` cells, loaded to 3/4 of the cells on average (d-left choice keeps the fullest
/// bucket within a few cells of the mean, so overflow is very unlikely), and the smallest
/// remainder that meets `fpr` by [`dleft_fpr`].
pub fn dleft_shape(
    n: u64,
    fpr: f64,
    tables: u32,
    cells: u32,
    counter_bits: u32,
) -> Result<DLeftShape> {
    check_capacity(n)?;
    check_fpr(fpr)?;
    if !(1..=8).contains(&tables) {
        return Err(invalid("tables", format!("must be in 1..=8, got {tables}")));
    }
    if !(1..=64).contains(&cells) {
        return Err(invalid("cells", format!("must be in 1..=64, got {cells}")));
    }
    let per_bucket = (cells as f64 * 0.75).max(1.0);
    let buckets = (n as f64 / (tables as f64 * per_bucket)).ceil().max(1.0);
    if buckets > (1u64 << 40) as f64 {
        return Err(invalid("capacity", format!("{n} items is too many")));
    }
    let buckets = (buckets as u64).next_power_of_two();
    let mut r = 1;
    while dleft_fpr(n, buckets, r) > fpr {
        r += 1;
        if r + counter_bits > 32 {
            return Err(invalid(
                "fpr",
                format!(
                    "{} needs remainders wider than {} bits",
                    show(fpr),
                    32 - counter_bits
                ),
            ));
        }
    }
    Ok(DLeftShape {
        tables,
        buckets,
        cells,
        remainder_bits: r,
        counter_bits,
    })
}

/// Expected number of groups a Space-Code filter matches for a key inserted `n` times
/// (Kumar et al.): `l` groups, each insert choosing one uniformly, so the distinct groups
/// chosen number `l·(1 - (1-1/l)^n)` on average; each other group matches falsely with
/// probability `f` (its k bits all set by others): `E[θ] = l·(1 - (1-1/l)^n·(1-f))`.
pub fn scbf_expected_matched(n: f64, groups: u32, group_fpr: f64) -> f64 {
    let l = f64::from(groups.max(1));
    l * (1.0 - (1.0 - 1.0 / l).powf(n) * (1.0 - group_fpr.clamp(0.0, 1.0)))
}

/// The most distinct (key, group) pairs an SCBF of l groups can hold after `occurrences`
/// inserts of `distinct` keys, whatever their counts: a key inserted c times sets
/// `l·(1 - (1-1/l)^c)` groups on average, which is concave in c, so spreading the inserts
/// evenly gives the most, `n·l·(1 - (1-1/l)^{N/n})` (equal to n when every key comes once).
pub fn scbf_pairs(distinct: u64, occurrences: u64, groups: u32) -> f64 {
    if distinct == 0 {
        return 0.0;
    }
    let (n, l) = (distinct as f64, f64::from(groups.max(1)));
    let per_key = occurrences.max(distinct) as f64 / n;
    // -expm1(c·ln(1-1/l)) = 1 - (1-1/l)^c, without cancellation for large l
    n * l * -(per_key * (-1.0 / l).ln_1p()).exp_m1()
}

/// The rate one group of k bits may have so that an absent key, tested against all `l`
/// groups, matches none with probability `1 - p`: `1 - (1-p)^{1/l}` (≈ p/l).
pub fn scbf_group_fpr(p: f64, groups: u32) -> f64 {
    -((-p).ln_1p() / f64::from(groups.max(1))).exp_m1()
}

/// Largest group count [`scbf_mle`] accepts (its cost grows as `l² log l`).
pub const SCBF_MAX_GROUPS: u32 = 256;

/// The maximum-likelihood count of a Space-Code filter (Kumar et al., 003 "recent work"):
/// the `n` maximising `P(θ matched groups | n inserts)`.
///
/// With D the number of distinct groups the key's n inserts chose (the occupancy of n uniform
/// draws from l groups) and each of the other `l - D` groups matching falsely and
/// independently with probability `f`:
/// `L(n) = Σ_D P(D | n) · C(l-D, θ-D) f^{θ-D} (1-f)^{l-θ}`.
/// `P(D | n)` follows `P(D | n+1) = P(D | n)·D/l + P(D-1 | n)·(l-D+1)/l`, so the likelihood is
/// evaluated for n = 1, 2, … in `O(l)` each, up to `l·ln(100·l) + θ` draws (by then all but
/// about 1/100 of a group is expected to be chosen, and the likelihood of θ < l only falls);
/// ties go to the smaller n.
///
/// `θ = 0` gives 0 (absent), any other θ at least 1. `θ = l` has no finite maximum (the
/// likelihood keeps growing with n); the estimate is then censored at the n where the
/// expected count reaches `l - ½`, a lower bound: to count higher, use more groups.
pub fn scbf_mle(matched: u32, groups: u32, group_fpr: f64) -> u64 {
    let l = groups.clamp(1, SCBF_MAX_GROUPS);
    let theta = matched.min(l);
    if theta == 0 {
        return 0;
    }
    let f = group_fpr.clamp(0.0, 1.0);
    let lf = f64::from(l);
    if theta == l {
        let miss = 1.0 - 1.0 / lf;
        if miss <= 0.0 {
            return 1; // one group: any insert matches it
        }
        let target = 0.5 / (lf * (1.0 - f).max(1e-300));
        return (target.ln() / miss.ln()).ceil().max(1.0) as u64;
    }
    // B(D) = P(θ - D false matches among the l - D unchosen groups).
    let binom = |trials: u32, x: u32| -> f64 {
        if x > trials {
            return 0.0;
        }
        let mut ln_c = 0.0;
        for i in 0..x {
            ln_c += (f64::from(trials - i)).ln() - (f64::from(i + 1)).ln();
        }
        let pf = if x == 0 { 1.0 } else { f.powi(x as i32) };
        let pq = if trials == x {
            1.0
        } else {
            (1.0 - f).powi((trials - x) as i32)
        };
        ln_c.exp() * pf * pq
    };
    let b: Vec<f64> = (0..=theta).map(|d| binom(l - d, theta - d)).collect();
    let mut p = vec![0.0f64; theta as usize + 1];
    p[0] = 1.0; // n = 0: no group chosen
    let n_max = (lf * (100.0 * lf).ln()).ceil() as u64 + u64::from(theta);
    let (mut best_n, mut best_l) = (0u64, p[0] * b[0]);
    for n in 1..=n_max {
        // one more draw; probability mass that exceeds θ distinct groups is dropped (it has
        // likelihood 0 for this θ)
        for d in (0..=theta as usize).rev() {
            let stay = p[d] * d as f64 / lf;
            let come = if d > 0 {
                p[d - 1] * (lf - (d - 1) as f64) / lf
            } else {
                0.0
            };
            p[d] = stay + come;
        }
        let like: f64 = p.iter().zip(&b).map(|(x, y)| x * y).sum();
        if like > best_l {
            best_l = like;
            best_n = n;
        }
    }
    // A matched group means the key may be present: never answer 0 (when every likelihood
    // underflows, e.g. f ≈ 1, the search above finds nothing better than n = 0).
    best_n.max(1)
}
