//! The math of the family, in one place: false-positive rates (exact and asymptotic, classic,
//! partitioned, blocked, split-block), optimal k, sizing for (n, ε), the lower bound, size and
//! similarity estimates, the counting-filter overflow bound and the entropy of a filter.
//!
//! References: Salman §2 (the standard filter and its rates), Broder & Mitzenmacher §2.1 (exact
//! `f' = (1-(1-1/m)^{kn})^k`, asymptotic `f = (1-e^{-kn/m})^k`, the partitioned variant),
//! §2.2 (the lower bound `n·log2(1/ε)`), §2.4 (union, intersection by the inner product),
//! §2.5 (counter overflow), §2.6 (compressed filters, `m·H(p)`). The blocked model is the
//! Poisson/binomial mixture of Putze, Sanders & Singler, "Cache-, Hash- and Space-Efficient
//! Bloom Filters" (2007), with the in-block collisions of a key's own probes counted exactly.
//!
//! All functions are pure and total: they return `f64` rates (possibly 0 or 1) and never panic.
//! The sizing functions return typed errors for invalid input.

use crate::error::{invalid, Result};

/// Validate a capacity `n`.
pub fn check_capacity(n: u64) -> Result<()> {
    if n == 0 {
        return Err(invalid("capacity", "must be at least 1"));
    }
    Ok(())
}

/// Validate a false-positive rate: finite and strictly between 0 and 1.
pub fn check_fpr(fpr: f64) -> Result<()> {
    if !fpr.is_finite() || fpr <= 0.0 || fpr >= 1.0 {
        return Err(invalid(
            "fpr",
            format!("must be strictly between 0 and 1, got {}", show(fpr)),
        ));
    }
    if fpr < 1e-15 {
        return Err(invalid(
            "fpr",
            format!(
                "{} is below 1e-15, beyond what 64-bit hashes can deliver",
                show(fpr)
            ),
        ));
    }
    Ok(())
}

/// A number for messages: plain when it reads well, in scientific notation when it is tiny or
/// huge (`1e-300`, not three hundred digits).
pub(crate) fn show(x: f64) -> String {
    if x != 0.0 && x.is_finite() && (x.abs() < 1e-4 || x.abs() >= 1e9) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// Validate a hash count.
pub fn check_hashes(k: u32, max: u32) -> Result<()> {
    if k == 0 || k > max {
        return Err(invalid("hashes", format!("must be in 1..={max}, got {k}")));
    }
    Ok(())
}

/// `(1 - 1/m)^e` computed stably for huge m and e.
#[inline]
fn pow_one_minus_inv(m: f64, e: f64) -> f64 {
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

/// Distribution of the number of distinct values among `k` uniform draws from `b` values:
/// `out[d]` = P(D = d).
fn distinct_draws(k: u32, b: u64) -> Vec<f64> {
    let b = b as f64;
    let mut p = vec![0.0; k as usize + 1];
    p[0] = 1.0;
    for t in 0..k as usize {
        let mut next = vec![0.0; k as usize + 1];
        for d in 0..=t {
            if p[d] == 0.0 {
                continue;
            }
            next[d] += p[d] * d as f64 / b;
            next[d + 1] += p[d] * (b - d as f64) / b;
        }
        p = next;
    }
    p
}

/// Keys per block above which every block model here answers 1 to f64 precision, so the
/// mixture is not computed (its cost grows with the load: a shape such as 10⁸ keys in two
/// blocks, which the sizing searches try for rates near 1, would take gigabytes). A block of at
/// most 512 cells holding 50,000 keys at k = 1 has every cell set with probability at least
/// 1 − 512·e^(−50,000/512) = 1 − 10⁻⁴⁰, and no rate below 1 in f64 (at most 1 − 1.1·10⁻¹⁶)
/// needs more than 512 · ln(512 · 10¹⁶) ≈ 22,000 keys per block.
pub const SATURATED_LOAD: f64 = 50_000.0;

/// True when `n` keys in `blocks` blocks exceed [`SATURATED_LOAD`] per block.
fn saturated(n: u64, blocks: u64) -> bool {
    blocks > 0 && n as f64 / blocks as f64 > SATURATED_LOAD
}

/// True when a rate that rises with the load has stopped rising: near 1, where f64 rounding
/// ends the climb of the models' chains (they may stay a few ulps below 1).
fn stopped_rising(r: f64, last: f64) -> bool {
    r == last && r > 0.5
}

/// Expected rate of a mixture over the number of keys j in a query's block:
/// `Σ_j Binomial(n, 1/blocks)(j) · inner(j)`. `inner` is called with j = 0, 1, 2, … in order.
fn block_mixture(n: u64, blocks: u64, mut inner: impl FnMut(u64) -> f64) -> f64 {
    if blocks == 0 || saturated(n, blocks) {
        return 1.0;
    }
    if blocks == 1 {
        let mut last = -1.0;
        for j in 0..=n {
            let r = inner(j);
            if r >= 1.0 - 1e-15 || stopped_rising(r, last) {
                return r;
            }
            last = r;
        }
        return last;
    }
    mix(&mixture_weights(n, blocks), inner)
}

/// The binomial weights `P(j keys in the query's block)`, j = 0, 1, …, up to far into the
/// tail (`λ + 14√λ + 40`), for `blocks > 1`.
fn mixture_weights(n: u64, blocks: u64) -> Vec<f64> {
    let nf = n as f64;
    let q = 1.0 / blocks as f64;
    let lambda = nf * q;
    let j_max = (lambda + 14.0 * lambda.sqrt() + 40.0).min(nf) as u64;
    let ln_q = q.ln();
    let ln_1mq = (-q).ln_1p();
    let mut log_p = nf * ln_1mq; // P(j = 0)
    let mut w = Vec::with_capacity(j_max as usize + 1);
    for j in 0..=j_max {
        w.push(log_p.exp());
        // P(j+1)/P(j) = (n-j)/(j+1) · q/(1-q)
        log_p += ((nf - j as f64) / (j as f64 + 1.0)).ln() + ln_q - ln_1mq;
    }
    w
}

/// `Σ_j weights[j] · inner(j)`, capped at 1. Once `inner` has [stopped rising](stopped_rising)
/// the remaining weights take its last value, so the cost is bounded by that point rather
/// than by the load.
fn mix(weights: &[f64], mut inner: impl FnMut(u64) -> f64) -> f64 {
    let mut sum = 0.0;
    let mut last = -1.0;
    for (j, w) in weights.iter().enumerate() {
        let r = inner(j as u64);
        if stopped_rising(r, last) {
            sum += r * weights[j..].iter().sum::<f64>();
            break;
        }
        sum += w * r;
        last = r;
    }
    sum.min(1.0)
}

/// False-positive rate of the blocked filter: `blocks` blocks of `block_bits` bits, each key
/// setting `k` uniformly drawn bits (with replacement) in one uniformly chosen block.
///
/// The model is exact up to the binomial occupancy of blocks: given j keys in the query's
/// block, `t = jk` bits were thrown uniformly into it. A Markov chain over t tracks how many of
/// k marked bits were hit (no independence assumption between bits: the positive correlation
/// of a block's bits, which grows with k, is counted). The query's k probes hit D distinct
/// bits, D distributed as k draws with replacement, and by symmetry
/// `P(d given bits set) = Σ_s P(s marked hit)·C(s,d)/C(k,d)`.
pub fn fpr_blocked(n: u64, blocks: u64, block_bits: u64, k: u32) -> f64 {
    BlockedModel::new(block_bits, k).rate(n, blocks)
}

/// The k in `1..=max_k` with the lowest [`fpr_blocked`] for `n` keys in `blocks` blocks of
/// `block_bits` cells (the blocked filter's bits, the blocked counting filter's counters), for
/// a shape whose size is given rather than sized.
pub fn blocked_best_k(n: u64, blocks: u64, block_bits: u64, max_k: u32) -> u32 {
    (1..=max_k.max(1))
        .min_by(|&a, &b| {
            fpr_blocked(n, blocks, block_bits, a).total_cmp(&fpr_blocked(n, blocks, block_bits, b))
        })
        .unwrap_or(1)
}

/// [`fpr_blocked`] for one block size and k, keeping the rate for each block occupancy j
/// (the Markov chain's answer, which depends on neither n nor the block count) between calls.
/// A sizing search evaluates the model at many (n, blocks); with the per-j rates cached each
/// evaluation is one binomial sum instead of the whole chain. Returns exactly the values of
/// [`fpr_blocked`] (the same operations in the same order).
///
/// ```
/// use bloomery::params::{fpr_blocked, BlockedModel};
///
/// let mut model = BlockedModel::new(512, 8);
/// for n in [1_000, 10_000] {
///     assert_eq!(model.rate(n, 100), fpr_blocked(n, 100, 512, 8)); // the same values, cached
/// }
/// ```
#[derive(Debug, Clone)]
pub struct BlockedModel {
    k: usize,
    b: f64,
    dist: Vec<f64>,
    /// `ratio[s][d] = C(s, d) / C(k, d)`
    ratio: Vec<Vec<f64>>,
    /// P(s of the k marked bits hit) after `rates.len() - 1` keys' throws
    chain: Vec<f64>,
    /// `rates[j]`: the rate given j keys in the query's block
    rates: Vec<f64>,
}

impl BlockedModel {
    /// The model of blocks of `block_bits` bits with `k` bits per key.
    pub fn new(block_bits: u64, k: u32) -> Self {
        let kk = k as usize;
        let mut choose = vec![vec![0.0f64; kk + 1]; kk + 1];
        for s in 0..=kk {
            choose[s][0] = 1.0;
            for d in 1..=s {
                choose[s][d] = choose[s - 1][d - 1] + if d < s { choose[s - 1][d] } else { 0.0 };
            }
        }
        let ratio = (0..=kk)
            .map(|s| (0..=kk).map(|d| choose[s][d] / choose[kk][d]).collect())
            .collect();
        let mut chain = vec![0.0f64; kk + 1];
        chain[0] = 1.0;
        Self {
            k: kk,
            b: block_bits as f64,
            dist: if k == 0 || block_bits == 0 {
                Vec::new()
            } else {
                distinct_draws(k, block_bits)
            },
            ratio,
            chain,
            rates: Vec::new(),
        }
    }

    /// The rate given `j` keys in the query's block (computed in order and kept).
    fn rate_given(&mut self, j: u64) -> f64 {
        let k = self.k;
        while self.rates.len() as u64 <= j {
            if !self.rates.is_empty() {
                // one more key: k more bits thrown into the block
                for _ in 0..k {
                    for s in (0..k).rev() {
                        let moved = self.chain[s] * (k - s) as f64 / self.b;
                        self.chain[s] -= moved;
                        self.chain[s + 1] += moved;
                    }
                }
            }
            let r = (1..=k)
                .map(|d| {
                    let all_set: f64 = (d..=k).map(|s| self.chain[s] * self.ratio[s][d]).sum();
                    self.dist[d] * all_set
                })
                .sum();
            self.rates.push(r);
        }
        self.rates[j as usize]
    }

    /// The modelled rate of `n` keys in `blocks` blocks ([`fpr_blocked`]).
    pub fn rate(&mut self, n: u64, blocks: u64) -> f64 {
        if self.k == 0 || self.b == 0.0 {
            return 1.0;
        }
        block_mixture(n, blocks, |j| self.rate_given(j))
    }

    /// [`rate`](Self::rate) with the occupancy weights of (n, blocks > 1) already computed
    /// (shared by every k evaluated at one block count).
    fn rate_weighted(&mut self, weights: &[f64]) -> f64 {
        if self.k == 0 || self.b == 0.0 {
            return 1.0;
        }
        mix(weights, |j| self.rate_given(j))
    }
}

/// False-positive rate of the Parquet split-block filter: 256-bit blocks of eight 32-bit words,
/// each key setting one bit in every word: `Σ_j Binomial(n, 1/blocks)(j) · (1-(31/32)^j)^8`.
pub fn fpr_split_block(n: u64, blocks: u64) -> f64 {
    block_mixture(n, blocks, |j| {
        (1.0 - pow_one_minus_inv(32.0, j as f64)).powi(8)
    })
}

/// False-positive rate of the blocked filter's sectors layout ([`crate::sets::blocked::BlockLayout`]):
/// 512-bit blocks of eight 64-bit words, each key setting one bit in every word:
/// `Σ_j Binomial(n, 1/blocks)(j) · (1-(63/64)^j)^8` — the split-block model with 64-bit words.
pub fn fpr_sectors(n: u64, blocks: u64) -> f64 {
    block_mixture(n, blocks, |j| {
        (1.0 - pow_one_minus_inv(64.0, j as f64)).powi(8)
    })
}

/// The smallest number of 512-bit blocks in the sectors layout whose modelled rate
/// ([`fpr_sectors`]) is at most `fpr`.
pub fn sectors_blocks(n: u64, fpr: f64) -> Result<u64> {
    smallest_blocks(n, fpr, 512.0, fpr_sectors, "sectors")
}

/// The smallest block count (blocks of `block_bits`) for which `rate(n, blocks) ≤ fpr`, by
/// doubling then bisection (the rate falls as blocks grow).
fn smallest_blocks(
    n: u64,
    fpr: f64,
    block_bits: f64,
    rate: fn(u64, u64) -> f64,
    what: &str,
) -> Result<u64> {
    check_capacity(n)?;
    check_fpr(fpr)?;
    let guess = (bits_asymptotic(n, fpr) / block_bits).ceil().max(1.0) as u64;
    let mut hi = guess;
    let mut rounds = 0;
    while rate(n, hi) > fpr {
        hi = hi.saturating_mul(2);
        rounds += 1;
        if rounds > 60 {
            return Err(invalid("fpr", format!("no {what} shape reaches this rate")));
        }
    }
    let mut lo = 0;
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if rate(n, mid) <= fpr {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}

/// A blocked filter's shape.
///
/// ```
/// use bloomery::params;
///
/// # fn main() -> bloomery::Result<()> {
/// // 512-bit blocks sized by the blocked filter's own model (Putze, Sanders & Singler)
/// let s = params::blocked_shape(1_000_000, 0.01, 512)?;
/// assert!(params::fpr_blocked(1_000_000, s.blocks, 512, s.k) <= 0.01);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockedShape {
    /// Number of blocks.
    pub blocks: u64,
    /// Bits set per key (all in one block).
    pub k: u32,
}

/// The largest k the blocked filter supports.
pub const BLOCKED_MAX_K: u32 = 32;

/// The smallest blocked shape (blocks of `block_bits`) whose modelled rate is at most `fpr`.
///
/// The per-occupancy rates of each k's [`BlockedModel`] depend on neither `n` nor `fpr`, so they
/// are kept between calls (per block size, bounded): a scalable filter sizing its next
/// sub-filter re-evaluates mostly rates already computed, and the search is then one binomial
/// sum per probe. The answer is the same as with fresh models: a model's rate for occupancy j is
/// the same sequence of operations however it was reached.
pub fn blocked_shape(n: u64, fpr: f64, block_bits: u64) -> Result<BlockedShape> {
    check_capacity(n)?;
    check_fpr(fpr)?;
    let mut models = ModelCache::take(block_bits);
    let shape = blocked_shape_with(n, fpr, block_bits, &mut models);
    ModelCache::put(block_bits, models);
    shape
}

/// Compute ahead the models [`blocked_shape`] keeps for `block_bits`, over the rates from 0.5 down
/// to 10⁻¹²: afterwards a sizing at any rate in that range evaluates only binomial sums (tens
/// to hundreds of microseconds instead of milliseconds). For a process that sizes filters where
/// a pause matters (a server growing a scalable filter), at start; tens of milliseconds once.
pub fn warm_blocked_sizing(block_bits: u64) {
    let mut p = 0.5;
    while p > 1e-12 {
        // the per-key bits, hence the loads the search probes, depend on the rate only
        let _ = blocked_shape(1_000_000, p, block_bits);
        p /= 4.0;
    }
}

/// Most occupancies whose rates a cached model keeps (per k and block size): enough for any
/// sizing at rates below 0.5 (the search's probes stay within a few hundred keys per block),
/// while a search near rate 1 (thousands of keys per block) computes its long chains in models
/// that are then not kept. At most 32 models of 4,096 rates: 1 MiB per block size.
const CACHED_RATES: usize = 4096;

/// The [`BlockedModel`]s kept between [`blocked_shape`] calls, one list (indexed by k) per block
/// size. A caller takes a block size's list out for the time of its search and puts it back
/// after, so concurrent searches never wait on each other (one of them then starts cold).
struct ModelCache;

type Models = Vec<Option<BlockedModel>>;

impl ModelCache {
    fn cell() -> &'static std::sync::Mutex<Vec<(u64, Models)>> {
        static CELL: std::sync::OnceLock<std::sync::Mutex<Vec<(u64, Models)>>> =
            std::sync::OnceLock::new();
        CELL.get_or_init(|| std::sync::Mutex::new(Vec::new()))
    }

    /// The kept models for `block_bits`, or an empty list (every k `None`).
    fn take(block_bits: u64) -> Models {
        let mut cache = Self::cell().lock().unwrap_or_else(|e| e.into_inner());
        match cache.iter().position(|(b, _)| *b == block_bits) {
            Some(i) => cache.swap_remove(i).1,
            None => vec![None; BLOCKED_MAX_K as usize + 1],
        }
    }

    /// Keep `models` for `block_bits` (those whose chains ran past [`CACHED_RATES`] dropped),
    /// unless another search has put a list back meanwhile. At most 8 block sizes are kept.
    fn put(block_bits: u64, mut models: Models) {
        for m in &mut models {
            if m.as_ref().is_some_and(|m| m.rates.len() > CACHED_RATES) {
                *m = None;
            }
        }
        let mut cache = Self::cell().lock().unwrap_or_else(|e| e.into_inner());
        if cache.iter().all(|(b, _)| *b != block_bits) && cache.len() < 8 {
            cache.push((block_bits, models));
        }
    }
}

/// [`blocked_shape`] with the models (indexed by k, filled as needed) given by the caller.
fn blocked_shape_with(
    n: u64,
    fpr: f64,
    block_bits: u64,
    models: &mut [Option<BlockedModel>],
) -> Result<BlockedShape> {
    let mut best_k = |blocks: u64| -> (f64, u32) {
        if saturated(n, blocks) {
            return (1.0, 1);
        }
        let weights = (blocks > 1).then(|| mixture_weights(n, blocks));
        let mut rate = |k: u32| {
            let model = models[k as usize].get_or_insert_with(|| BlockedModel::new(block_bits, k));
            match &weights {
                Some(w) => model.rate_weighted(w),
                None => model.rate(n, blocks),
            }
        };
        // The rate is unimodal in k: walk downhill from the classic optimum, in both
        // directions. (The blocked optimum can lie far from the classic one: at small rates the
        // crowded blocks dominate and it is well below, e.g. k = 10 against the guess 21 for
        // 128-cell lines at p = 1e-4, so a fixed window around the guess is not enough.)
        let guess = (blocks as f64 * block_bits as f64 / n as f64 * std::f64::consts::LN_2)
            .round()
            .clamp(1.0, BLOCKED_MAX_K as f64) as u32;
        let mut best = (rate(guess), guess);
        for step in [-1i64, 1] {
            let mut k = i64::from(guess) + step;
            while (1..=i64::from(BLOCKED_MAX_K)).contains(&k) {
                let r = rate(k as u32);
                if r >= best.0 {
                    break;
                }
                best = (r, k as u32);
                k += step;
            }
        }
        best
    };
    let guess = (bits_asymptotic(n, fpr) / block_bits as f64)
        .ceil()
        .max(1.0) as u64;
    let mut hi = guess.max(1);
    let mut rounds = 0;
    while best_k(hi).0 > fpr {
        hi = hi.saturating_mul(2);
        rounds += 1;
        if rounds > 60 {
            return Err(invalid("fpr", "no blocked shape reaches this rate"));
        }
    }
    let mut lo = (guess / 2).max(1);
    if best_k(lo).0 <= fpr {
        lo = 1;
        if best_k(1).0 <= fpr {
            return Ok(BlockedShape {
                blocks: 1,
                k: best_k(1).1,
            });
        }
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if best_k(mid).0 <= fpr {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(BlockedShape {
        blocks: hi,
        k: best_k(hi).1,
    })
}

/// The smallest number of blocks of `block_bits` cells for which [`fpr_blocked`] with a fixed
/// `k` is at most `fpr` (doubling, then bisection; one cached [`BlockedModel`]).
pub fn blocked_blocks_for_k(n: u64, fpr: f64, block_bits: u64, k: u32) -> Result<u64> {
    check_capacity(n)?;
    check_fpr(fpr)?;
    check_hashes(k, BLOCKED_MAX_K)?;
    let mut model = BlockedModel::new(block_bits, k);
    let mut hi = (bits_asymptotic(n, fpr) / block_bits as f64)
        .ceil()
        .max(1.0) as u64;
    let mut rounds = 0;
    while model.rate(n, hi) > fpr {
        hi = hi.saturating_mul(2);
        rounds += 1;
        if rounds > 60 {
            return Err(invalid(
                "fpr",
                format!("no blocked shape with k = {k} reaches this rate"),
            ));
        }
    }
    let mut lo = 0;
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if model.rate(n, mid) <= fpr {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}

/// The smallest number of 256-bit split blocks whose modelled rate is at most `fpr`.
pub fn split_block_blocks(n: u64, fpr: f64) -> Result<u64> {
    smallest_blocks(n, fpr, 256.0, fpr_split_block, "split-block")
}

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

// ---------------------------------------------------------------------------------------------
// The counting family: count-min sizing, the Iterative Bloom Filter's estimator and
// rate (Matsumoto, Hazeyama & Kadobayashi eq. 9, 10), the d-left counting filter's rate, counter sizing for a maximum count
// (Matsumoto, Hazeyama & Kadobayashi Table 5) and the Space-Code filter's maximum-likelihood count.
// ---------------------------------------------------------------------------------------------

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

#[cfg(test)]
mod counting_tests {
    use super::*;

    #[test]
    fn count_min_sizing() {
        let (w, d) = count_min_dimensions(0.001, 0.01).unwrap();
        assert_eq!(w, 2719); // ⌈e / 0.001⌉
        assert_eq!(d, 5); // ⌈ln 100⌉
        assert!(count_min_dimensions(0.0, 0.1).is_err());
        assert!(count_min_dimensions(0.1, 1.0).is_err());
        assert!(count_min_dimensions(f64::NAN, 0.1).is_err());
        let (e, dl) = count_min_bounds(w, d);
        assert!(e <= 0.001 && dl <= 0.01);
    }

    #[test]
    fn ibf_formulas() {
        // all distinct: the IBF is a plain filter, eq. 10 is the asymptotic rate
        let (n, m, k) = (1000u64, 10_000u64, 7u32);
        assert!((ibf_fpr(n, m, k, 1.0) - fpr_asymptotic(n, m, k)).abs() < 1e-12);
        // repeats set one bit each: fewer bits than k per input, lower rate
        assert!(ibf_fpr(n, m, k, 0.5) < ibf_fpr(n, m, k, 1.0));
        // eq. 9 shrinks the observed count by p/2
        let p = ibf_collision_probability(n, m, k, 0.5);
        let e = ibf_count_estimate(10, n, m, k, 0.5);
        assert!((e - 10.0 * (1.0 - p / 2.0)).abs() < 1e-12);
        assert!(e < 10.0 && e > 5.0);
    }

    #[test]
    fn table5_counter_bits() {
        assert_eq!(counter_bits_for(0), 1);
        assert_eq!(counter_bits_for(15), 4);
        assert_eq!(counter_bits_for(16), 5);
        // α = 0.5 over 1000 inputs: 500 repeats
        assert_eq!(max_count_for_skew(1000, 0.5, Skew::Small), 2);
        assert_eq!(max_count_for_skew(1000, 0.5, Skew::Medium), 251);
        assert_eq!(max_count_for_skew(1000, 0.5, Skew::Large), 501);
        assert!(cbf_fpr_for_memory(500, 8000, 3, 4) > cbf_fpr_for_memory(500, 8000, 3, 1));
    }

    #[test]
    fn dleft_shape_meets_target() {
        for f in [0.1, 0.01, 0.001] {
            let s = dleft_shape(100_000, f, 4, 8, 2).unwrap();
            assert!(dleft_fpr(100_000, s.buckets, s.remainder_bits) <= f);
            assert!(
                dleft_fpr(100_000, s.buckets, s.remainder_bits - 1) > f || s.remainder_bits == 1
            );
            assert!(s.buckets.is_power_of_two());
        }
        assert!(dleft_shape(0, 0.01, 4, 8, 2).is_err());
        assert!(dleft_shape(10, 0.01, 0, 8, 2).is_err());
    }

    #[test]
    fn scbf_mle_tracks_the_expectation() {
        assert_eq!(scbf_mle(0, 32, 0.0), 0);
        assert_eq!(scbf_mle(1, 32, 0.0), 1);
        // without false matches, θ groups are most likely from about the n whose expected
        // number of distinct groups is θ
        for theta in [4u32, 10, 20, 28] {
            let n = scbf_mle(theta, 32, 0.0) as f64;
            let e = scbf_expected_matched(n, 32, 0.0);
            assert!((e - theta as f64).abs() < 1.5, "θ={theta} n={n} E={e}");
        }
        // false matches lower the estimate
        assert!(scbf_mle(10, 32, 0.1) <= scbf_mle(10, 32, 0.0));
        // all matched: censored, finite, and above the others
        let top = scbf_mle(32, 32, 0.0);
        assert!(top > scbf_mle(31, 32, 0.0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tiny and huge numbers read as scientific notation in messages.
    #[test]
    fn tiny_rates_print_short() {
        let e = check_fpr(1e-300).unwrap_err().to_string();
        assert!(e.contains("1e-300") && e.len() < 120, "{e}");
        assert_eq!(show(0.01), "0.01");
        assert_eq!(show(2.5e-7), "2.5e-7");
        assert_eq!(show(0.0), "0");
    }

    /// Rates near 1 and loads far beyond a block's cells are answered at once: the sizing of
    /// 10⁸ keys at p = 0.999999 used to build mixtures over 5·10⁷ keys per block (minutes and
    /// gigabytes); a given tiny shape with a huge capacity likewise.
    #[test]
    fn saturated_loads_are_answered_without_the_mixture() {
        for b in [512u64, 128, 16] {
            let s = blocked_shape(100_000_000, 0.999_999, b).unwrap();
            assert!(
                fpr_blocked(100_000_000, s.blocks, b, s.k) <= 0.999_999,
                "{s:?}"
            );
            assert!(100_000_000.0 / s.blocks as f64 <= SATURATED_LOAD, "{s:?}");
            let k = blocked_blocks_for_k(100_000_000, 0.999_999, b, 3).unwrap();
            assert!(fpr_blocked(100_000_000, k, b, 3) <= 0.999_999);
        }
        assert_eq!(fpr_blocked(1_000_000_000, 1, 512, 7), 1.0);
        assert_eq!(fpr_blocked(1_000_000_000, 2, 512, 7), 1.0);
        assert_eq!(blocked_best_k(u64::MAX / 2, 3, 512, BLOCKED_MAX_K), 1);
        // the shortcut changes nothing where the mixture is computed: at the limit it is 1
        assert_eq!(fpr_blocked(50_000 * 64, 64, 512, 1), 1.0);
    }

    /// The blocked sizing's k is the best of every k at the chosen block count, and one block
    /// fewer misses the rate whatever the k: the downhill walk in k finds the optimum also where
    /// it lies far below the classic guess (small rates; a ±6 window around the guess used to
    /// stop at its edge: k = 26 instead of 10 for 128-cell lines at p = 1e-4, 34% more cells).
    #[test]
    fn blocked_shape_is_the_smallest_over_every_k() {
        let best = |n: u64, blocks: u64, b: u64| {
            (1..=BLOCKED_MAX_K)
                .map(|k| (fpr_blocked(n, blocks, b, k), k))
                .min_by(|x, y| x.0.total_cmp(&y.0))
                .unwrap()
        };
        for (b, p, n) in [
            (512, 1e-2, 10_000),
            (512, 1e-6, 10_000),
            (128, 1e-2, 20_000),
            (128, 1e-4, 10_000),
            (128, 1e-6, 10_000),
        ] {
            let s = blocked_shape(n, p, b).unwrap();
            let (rate, k) = best(n, s.blocks, b);
            assert_eq!(s.k, k, "B={b} p={p} n={n}");
            assert!(rate <= p, "B={b} p={p} n={n}");
            assert!(best(n, s.blocks - 1, b).0 > p, "B={b} p={p} n={n}");
        }
        // far from the classic guess: 128 cells at 1e-4 need ~31 cells per item, not ~47
        let s = blocked_shape(10_000, 1e-4, 128).unwrap();
        assert!(s.k <= 12 && s.blocks * 128 < 32 * 10_000, "{s:?}");
    }

    /// The cached model returns, bit for bit, the values of the uncached chain (pinned from
    /// the implementation before the cache), whatever order (n, blocks) are asked in.
    #[test]
    fn blocked_model_cache_is_exact() {
        let pinned: [(u64, u64, u32, u64); 5] = [
            (1000, 20, 7, 0x3f81addedfdd6bfd),
            (100_000, 1973, 7, 0x3f82f21bbb3524b6),
            (5, 1, 3, 0x3ef9603b4d9506a8),
            (10_000_000, 307_122, 10, 0x3f4ee4fa6ff58262),
            (50, 3, 16, 0x3ed0045b6210b247),
        ];
        for (n, blocks, k, bits) in pinned {
            assert_eq!(
                fpr_blocked(n, blocks, 512, k).to_bits(),
                bits,
                "n={n} blocks={blocks}"
            );
        }
        let mut model = BlockedModel::new(512, 7);
        for &(n, blocks) in &[
            (100_000u64, 1973u64),
            (1000, 20),
            (100_000, 1500),
            (1000, 1),
            (7, 2),
        ] {
            assert_eq!(
                model.rate(n, blocks).to_bits(),
                fpr_blocked(n, blocks, 512, 7).to_bits()
            );
        }
    }

    fn close(a: f64, b: f64, rel: f64) -> bool {
        ((a - b) / b).abs() <= rel
    }

    #[test]
    fn seed_000_section_2_numbers() {
        // m/n = 10: 1.18% at k = 4, 0.94% at k = 5 (asymptotic formula as the paper uses),
        // 0.82% at the optimum k = 7.
        let n = 1_000_000;
        let m = 10 * n;
        assert!((fpr_asymptotic(n, m, 4) - 0.0118).abs() < 0.00005);
        assert!((fpr_asymptotic(n, m, 5) - 0.0094).abs() < 0.00005);
        assert!((fpr_asymptotic(n, m, 7) - 0.0082).abs() < 0.00005);
        assert_eq!(optimal_k(n, m), 7);
        // exact and asymptotic agree closely for large m
        assert!(close(fpr_exact(n, m, 7), fpr_asymptotic(n, m, 7), 1e-5));
    }

    #[test]
    fn seed_002_eight_bits_per_item_just_over_two_percent() {
        let n = 1_000_000;
        let f = fpr_exact(n, 8 * n, optimal_k(n, 8 * n));
        assert!(f > 0.02 && f < 0.0222, "{f}");
    }

    #[test]
    fn seed_002_table_1() {
        // m/n, k, f (Table 1 of Broder & Mitzenmacher §2.6)
        for (ratio, k, f) in [(16, 11, 0.000459), (28, 4, 0.000314), (48, 3, 0.000222)] {
            let n = 1_000_000;
            let got = fpr_asymptotic(n, ratio * n, k);
            assert!((got - f).abs() < 0.0000005, "m/n={ratio}: {got}");
        }
        // z/n: compressed size per item for the three columns
        for (ratio, k, z) in [(16u64, 11u32, 16.0), (28, 4, 15.846), (48, 3, 15.829)] {
            let n = 1_000_000;
            let bits = compressed_bits(n, ratio * n, k).min((ratio * n) as f64);
            let zn = bits / n as f64;
            // the first column is sent uncompressed (z = m)
            assert!(
                (zn - z).abs() < 0.0006 || (ratio == 16 && zn <= 16.0),
                "{ratio}: {zn}"
            );
        }
    }

    #[test]
    fn overflow_bound_matches_paper() {
        // k = (m/n) ln 2 => e·n·k/(16·m) = e·ln2/16 => bound/m = (e ln 2 / 16)^16 = 1.37e-15
        let n = 1_000_000u64;
        let m = 10_000_000u64;
        let k_real = m as f64 / n as f64 * std::f64::consts::LN_2;
        let x = std::f64::consts::E * k_real / 16.0 / (m as f64 / n as f64);
        let per_m = x.powi(16);
        assert!((per_m - 1.37e-15).abs() < 0.01e-15, "{per_m}");
        // the exact tail is below the loose bound
        assert!(counter_tail(n, m, 7, 16) * m as f64 <= counter_overflow_bound(n, m, 7, 16));
    }

    /// The near-miss shape meets its bound at capacity with the least memory over k, costs
    /// between the independent model's √p per array and a classic filter at p, and the bound
    /// lies between the independent and the fully correlated extremes.
    #[test]
    fn mlbf_near_miss_shape_and_bound() {
        for p in [0.1, 0.01, 1e-4] {
            let n = 100_000;
            let s = mlbf_near_miss_shape(n, p, 64).unwrap();
            let fill =
                |m: u64, k: u32| -((n as f64) * f64::from(k) * (-1.0 / m as f64).ln_1p()).exp_m1();
            let f = fill(s.m, s.k);
            assert!(mlbf_near_miss_fpr(f, f, s.k) <= p);
            assert!(mlbf_near_miss_fpr(fill(s.m - 1, s.k), fill(s.m - 1, s.k), s.k) > p);
            let independent = classic_shape(n, p.sqrt()).unwrap().m;
            assert!(
                s.m > independent && (s.m as f64) < 1.4 * independent as f64,
                "{p}"
            );
            assert!((s.m as f64) < bits_asymptotic(n, p), "{p}");
            // between independent tests and one test (the XOR layer adding nothing)
            assert!(mlbf_near_miss_fpr(f, f, s.k) > (f * f).powi(s.k as i32));
            assert!(mlbf_near_miss_fpr(f, f, s.k) < f.powi(s.k as i32));
        }
        assert_eq!(mlbf_near_miss_fpr(0.0, 0.7, 3), 0.0);
        assert_eq!(mlbf_near_miss_fpr(1.0, 1.0, 3), 1.0);
    }

    /// The binomial tail against exact values: `Σ_{i ≥ j} C(T,i) q^i (1-q)^{T-i}` summed in
    /// 60-digit arithmetic (mpmath, `mp.dps = 60`), down to 1e-60, where `1 - P(c < j)`
    /// cancels to 0 below about 1e-16.
    #[test]
    fn counter_tail_matches_exact_values() {
        // (n, m, k, j, exact P(c ≥ j) with c ~ Binomial(nk, 1/m))
        let cases: [(u64, u64, u32, u32, f64); 7] = [
            (1000, 1000, 1, 2, 0.264_241_086_969_812_7),
            (103_831, 1 << 20, 7, 11, 2.358_189_075_157_738e-10),
            (103_831, 1 << 20, 7, 16, 7.071_689_474_906_08e-17),
            (103_831, 1 << 20, 7, 24, 1.253_460_600_537_53e-28),
            (100, 1000, 7, 30, 2.365_342_560_361_766e-38),
            (10, 1 << 20, 7, 12, 6.021_093_212_269_831e-60),
            // j = nk: the last term only, (1/64)^6
            (2, 64, 3, 6, 1.455_191_522_836_685e-11),
        ];
        for (n, m, k, j, exact) in cases {
            let got = counter_tail(n, m, k, j);
            assert!(
                close(got, exact, 1e-9),
                "n={n} m={m} k={k} j={j}: {got:e} vs {exact:e}"
            );
        }
        // the edges: j = 0 always, j past nk never, one counter takes every trial
        assert_eq!(counter_tail(10, 100, 3, 0), 1.0);
        assert_eq!(counter_tail(2, 64, 3, 7), 0.0);
        assert_eq!(counter_tail(5, 1, 2, 10), 1.0);
        // the tail falls with j all the way down
        let tails: Vec<f64> = (1..=40)
            .map(|j| counter_tail(103_831, 1 << 20, 7, j))
            .collect();
        assert!(
            tails.windows(2).all(|w| w[1] < w[0] && w[1] > 0.0),
            "{tails:?}"
        );
    }

    #[test]
    fn lower_bound_and_ratio() {
        let n = 1000;
        assert!(close(lower_bound_bits(n, 0.01), 1000.0 * 6.643856, 1e-6));
        // an optimal classic filter is ~1.44x the bound
        let s = classic_shape(n, 0.01).unwrap();
        let r = ratio_to_lower_bound(s.m, n, 0.01);
        assert!(r > 1.43 && r < 1.46, "{r}");
    }

    #[test]
    fn classic_shape_is_minimal() {
        for (n, f) in [
            (1u64, 0.5),
            (10, 0.1),
            (1000, 0.01),
            (1_000_000, 0.001),
            (7, 1e-9),
        ] {
            let s = classic_shape(n, f).unwrap();
            assert!(fpr_exact(n, s.m, s.k) <= f);
            let k = optimal_k(n, s.m - 1);
            assert!(s.m == 1 || fpr_exact(n, s.m - 1, k) > f, "{n} {f}");
        }
    }

    #[test]
    fn partitioned_is_slightly_worse_than_classic() {
        let (n, m, k) = (10_000, 100_000, 7);
        assert!(fpr_partitioned(n, m, k) > fpr_exact(n, m, k));
        assert!(close(fpr_partitioned(n, m, k), fpr_exact(n, m, k), 0.02));
        let s = partitioned_shape(n, 0.01).unwrap();
        assert_eq!(s.m % u64::from(s.k), 0);
        assert!(fpr_partitioned(n, s.m, s.k) <= 0.01);
    }

    #[test]
    fn blocked_model_is_worse_than_classic_and_shape_meets_target() {
        let n = 100_000;
        let m = 10 * n;
        let blocked = fpr_blocked(n, m / 512, 512, 7);
        assert!(blocked > fpr_exact(n, m, 7));
        for f in [0.1, 0.01, 0.001, 1e-5] {
            let s = blocked_shape(n, f, 512).unwrap();
            assert!(fpr_blocked(n, s.blocks, 512, s.k) <= f);
            assert!(fpr_blocked(n, s.blocks - 1, 512, s.k) > f);
        }
    }

    #[test]
    fn split_block_shape_meets_target() {
        let b = split_block_blocks(10_000, 0.01).unwrap();
        assert!(fpr_split_block(10_000, b) <= 0.01);
        assert!(fpr_split_block(10_000, b - 1) > 0.01);
    }

    #[test]
    fn estimates_invert_expectations() {
        let (m, k, n) = (1_000_000u64, 7u32, 50_000u64);
        let expected_zeros = m as f64 * (1.0 - 1.0 / m as f64).powf((k as u64 * n) as f64);
        let ones = m - expected_zeros.round() as u64;
        assert!(close(estimate_items(m, k, ones), n as f64, 1e-3));
        assert!(estimate_items(m, k, m).is_infinite());
        assert_eq!(estimate_items(m, k, 0), 0.0);
    }

    #[test]
    fn validation() {
        assert!(check_capacity(0).is_err());
        for bad in [0.0, 1.0, -0.5, f64::NAN, f64::INFINITY, 1e-300] {
            assert!(check_fpr(bad).is_err(), "{bad}");
            assert!(classic_shape(10, bad).is_err());
            assert!(blocked_shape(10, bad, 512).is_err());
        }
        assert!(check_hashes(0, 32).is_err());
        assert!(check_hashes(33, 32).is_err());
    }

    #[test]
    fn entropy_values() {
        assert_eq!(entropy(0.5), 1.0);
        assert_eq!(entropy(0.0), 0.0);
        assert!(close(entropy(0.1), 0.468996, 1e-5));
    }
}

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

// ---------------------------------------------------------------------------------------------
// Compressed Bloom filters (Broder & Mitzenmacher §2.6): the shape that minimises the false-positive rate
// for a budget of transmitted bits.
// ---------------------------------------------------------------------------------------------

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

#[cfg(test)]
mod compressed_shape_tests {
    use super::*;

    #[test]
    fn table_1_shapes_are_found_or_beaten() {
        let n = 100_000;
        // Memory capped at the table's m/n: the optimiser meets the table's rate at ≤ 16 bits.
        for (cap, f) in [(16.0, 0.000459), (28.0, 0.000314), (48.0, 0.000222)] {
            let s = compressed_shape(n, 16.0, cap).unwrap();
            assert!(s.transmitted_bits <= 16.0 * n as f64);
            assert!(s.m as f64 <= cap * n as f64);
            // The table rounds to three significant digits.
            assert!(s.fpr <= f + 0.0000005, "cap {cap}: {s:?}");
        }
        // m/n = 16: the uncompressed optimum k = 11 of the table.
        let s = compressed_shape(n, 16.0, 16.0).unwrap();
        assert_eq!((s.m, s.k), (16 * n, 11));
        // m/n = 48 at the table's budget of 15.829 bits: exactly the table's k = 3.
        let s = compressed_shape(n, 15.83, 48.0).unwrap();
        assert_eq!(s.k, 3);
        assert!((s.fpr - 0.000222).abs() < 0.000001, "{s:?}");
        // Unbounded memory: fewer hashes and a much sparser array win (Broder & Mitzenmacher §2.6).
        let s = compressed_shape(n, 16.0, 1e6).unwrap();
        assert!(s.k <= 2 && s.fpr < 0.0001, "{s:?}");
    }

    #[test]
    fn compressed_shape_validation() {
        assert!(compressed_shape(0, 16.0, 48.0).is_err());
        assert!(compressed_shape(10, 0.0, 48.0).is_err());
        assert!(compressed_shape(10, f64::NAN, 48.0).is_err());
        assert!(compressed_shape(10, 16.0, f64::INFINITY).is_err());
        assert!(compressed_shape(10, 16.0, 0.0).is_err());
    }
}
#[cfg(test)]
mod sizing_cache_tests {
    use super::*;

    /// The search with models built afresh for the one call: the sizing as it was before models
    /// were kept between calls.
    fn uncached(n: u64, fpr: f64, block_bits: u64) -> Result<BlockedShape> {
        check_capacity(n)?;
        check_fpr(fpr)?;
        let mut models = vec![None; BLOCKED_MAX_K as usize + 1];
        blocked_shape_with(n, fpr, block_bits, &mut models)
    }

    /// Kept models answer exactly as fresh ones on every (n, fpr, block bits) of the grid
    /// and along the sub-filter sequences of scalable filters (growth 2 and 4, tightening 0.5),
    /// visited in orders that leave the cache in many states (long chains from rates near 1
    /// first, then small loads, then the reverse).
    fn check_grid(ns: &[u64], ps: &[f64], block_bits: &[u64]) {
        let mut grid = Vec::new();
        for &b in block_bits {
            for &p in ps {
                for &n in ns {
                    grid.push((n, p, b));
                }
            }
        }
        for (n0, g) in [(100u64, 2u64), (1_000, 4)] {
            for i in 0..12u32 {
                let fpr = 0.01 * 0.5 * 0.5f64.powi(i as i32);
                grid.push((n0 * g.pow(i), fpr, 512));
            }
        }
        let fresh: Vec<_> = grid
            .iter()
            .map(|&(n, p, b)| uncached(n, p, b).map_err(|e| e.to_string()))
            .collect();
        for pass in 0..2 {
            let order: Vec<usize> = if pass == 0 {
                (0..grid.len()).collect()
            } else {
                (0..grid.len()).rev().collect()
            };
            for i in order {
                let (n, p, b) = grid[i];
                let kept = blocked_shape(n, p, b).map_err(|e| e.to_string());
                assert_eq!(kept, fresh[i], "n = {n}, fpr = {p}, block bits = {b}");
            }
        }
        // the grid's answers are real shapes, not a shared error
        assert!(fresh.iter().filter(|r| r.is_ok()).count() > grid.len() / 2);
    }

    #[test]
    fn kept_models_size_exactly_as_fresh_ones() {
        check_grid(
            &[1, 7, 1_000, 100_000, 3_000_000, 1_000_000_000],
            &[0.9, 0.2, 0.01, 1e-5, 1e-12],
            &[512, 128],
        );
    }

    #[test]
    #[ignore = "wide grid, minutes in debug: cargo test -p bloomery --release --lib -- --ignored kept_models"]
    fn kept_models_size_exactly_as_fresh_ones_wide() {
        let ns: Vec<u64> = (0..=33)
            .map(|e| (2f64.powf(e as f64 * 1.07) as u64).max(1))
            .collect();
        let ps: Vec<f64> = (0..=26).map(|e| 0.95 * 0.37f64.powi(e)).collect();
        check_grid(&ns, &ps, &[512, 256, 128, 64]);
    }
}

// ---------------------------------------------------------------------------------------------
// Age-partitioned filters (Shtul, Baquero & Almeida, "Age-Partitioned Bloom Filters", 2020,
// §3 the structure, §4 the false-positive analysis).
// ---------------------------------------------------------------------------------------------

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
