//! The blocked filters: the Poisson/binomial mixture of Putze, Sanders & Singler, "Cache-,
//! Hash- and Space-Efficient Bloom Filters" (2007), with the in-block collisions of a key's own
//! probes counted exactly; the split-block (Parquet) and sectors models; their sizing, with the
//! models kept between calls.

use super::classic::{bits_asymptotic, pow_one_minus_inv};
use super::validate::{check_capacity, check_fpr, check_hashes};
use crate::error::{invalid, Result};

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

/// False-positive rate of the blocked filter's salted-256 layout
/// ([`crate::sets::blocked::BlockLayout::Salted256`]) with `lines` 512-bit lines, that is
/// `2 · lines` blocks of 256 bits, each key setting one bit in each of a block's eight 32-bit
/// lanes.
///
/// The blocked-filter model of Putze, Sanders & Singler (§3: the binomial occupancy of the
/// query's block, here with B = 2·lines blocks of 256 bits) with the bits of a block set lane
/// by lane: given j keys in the query's block, each of its eight 32-bit lanes has received j
/// uniform bits, so a given bit of a lane is set with probability `1 − (31/32)^j`, and the
/// query, one bit per lane, is a false positive with probability `(1 − (31/32)^j)^8`:
/// `Σ_j Binomial(n, 1/(2·lines))(j) · (1 − (31/32)^j)^8` — the split-block model
/// ([`fpr_split_block`]) on twice as many blocks as lines. Against the 512-bit salted block
/// ([`fpr_sectors`]) it crowds more unevenly (the relative spread of a block's load, `1/√λ`,
/// grows by √2 at half the block), which costs a few per cent more bits at equal rate.
pub fn fpr_salted256(n: u64, lines: u64) -> f64 {
    fpr_split_block(n, lines.saturating_mul(2))
}

/// The smallest number of 512-bit lines (each two 256-bit blocks) in the salted-256 layout
/// whose modelled rate ([`fpr_salted256`]) is at most `fpr`: the split-block sizing's block
/// count, rounded up to whole lines.
pub fn salted256_lines(n: u64, fpr: f64) -> Result<u64> {
    Ok(split_block_blocks(n, fpr)?.div_ceil(2))
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
pub(super) fn blocked_shape_with(
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
