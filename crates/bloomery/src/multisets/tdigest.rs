//! The merging t-digest: [`TDigest`] (its docs say which paper it follows and when to pick it).

use std::sync::OnceLock;

use crate::error::{inconsistent, invalid, Error, Result};
use crate::hash::KeyHasher;
use crate::io::format::{self, Decoded, Header, Kind, ParamReader, ParamWriter, Payload, Persist};
use crate::store::{self, Words};

/// The compression `TDIGEST.CREATE` uses when none is given (RedisBloom's default).
const DEFAULT_COMPRESSION: u64 = 100;
/// The largest compression accepted: its buffer of `6·δ + 10` centroids must be indexable by a
/// 32-bit signed integer, as in RedisBloom (the memory limit usually refuses far less).
const MAX_COMPRESSION: u64 = (i32::MAX as u64 - 10) / 6;
/// The largest total weight: RedisBloom keeps weights in signed 64-bit integers.
const MAX_WEIGHT: u64 = i64::MAX as u64;

/// One centroid as stored: the mean's bits and the weight.
type Node = [u64; 2];

fn mean(n: &Node) -> f64 {
    f64::from_bits(n[0])
}

fn weight(n: &Node) -> f64 {
    n[1] as f64
}

/// The merging t-digest (Dunning & Ertl, "Computing Extremely Accurate Quantiles Using
/// t-Digests", 2019, §2.1 "The merging algorithm", with the k₁ scale function of §2.2), the
/// structure behind the Redis module's `TDIGEST.*` commands.
///
/// A t-digest summarises a stream of real numbers by **centroids** (a mean and a weight, the
/// number of values it stands for), sorted by mean. Values arrive in a buffer; when the buffer
/// is full (or a query needs it) the buffer and the centroids are sorted together and merged
/// left to right: a centroid absorbs its right neighbour as long as its quantile span stays
/// within one unit of the scale function
///
/// ```text
/// k₁(q) = δ/(2π) · asin(2q − 1)        (δ: the compression)
/// ```
///
/// whose slope grows without bound near q = 0 and q = 1, so centroids there stay small (the
/// extremes are kept almost exactly) while those near the median hold many values. About δ/2
/// to δ centroids remain (61 at δ = 100 on 200 000 uniform values); the rank error of a
/// quantile is largest near the median and shrinks like `√(q(1 − q))` toward the tails.
/// Quantiles and the CDF interpolate between centroids; a centroid of weight 1 is one value
/// seen exactly, the smallest and largest values seen are kept exactly.
///
/// Pick it for percentiles of latencies, sizes or scores over a stream, or over shards merged
/// later ([`merge`](Self::merge)): memory is fixed by δ (`16 · (6δ + 10)` bytes, 9,760 at
/// δ = 100), never by the stream's length.
///
/// The query semantics follow RedisBloom 2.6's `TDIGEST.*` commands, including their answers
/// for an empty digest (NaN, and −2 for ranks) and out-of-range arguments.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::TDigest;
///
/// let mut td = TDigest::try_new(100)?;
/// for i in 1..=1000 {
///     td.insert(f64::from(i))?;
/// }
/// assert_eq!((td.min(), td.max(), td.count()), (1.0, 1000.0, 1000));
/// let median = td.quantile(0.5);
/// assert!((median - 500.0).abs() < 5.0, "{median}");
/// assert!((td.cdf(250.0) - 0.25).abs() < 0.005);
/// assert!(td.insert(f64::NAN).is_err());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct TDigest {
    compression: u64,
    /// `cap` nodes: the merged centroids (sorted by mean), then the unmerged buffer, then zeros.
    nodes: Words,
    merged: usize,
    unmerged: usize,
    merged_weight: u64,
    unmerged_weight: u64,
    /// +∞ while empty.
    min: f64,
    /// −∞ while empty.
    max: f64,
    compressions: u64,
    /// The centroids with the buffer merged, made by the first query after a write while the
    /// buffer holds values, and dropped by the next write: queries between two writes share
    /// one merge (the digest itself stays as the writes left it).
    view: OnceLock<Vec<Node>>,
}

impl std::fmt::Debug for TDigest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TDigest")
            .field("compression", &self.compression)
            .field("merged", &self.merged)
            .field("unmerged", &self.unmerged)
            .field("count", &self.count())
            .field("min", &self.min)
            .field("max", &self.max)
            .finish()
    }
}

impl PartialEq for TDigest {
    fn eq(&self, o: &Self) -> bool {
        self.compression == o.compression
            && self.merged == o.merged
            && self.unmerged == o.unmerged
            && self.merged_weight == o.merged_weight
            && self.unmerged_weight == o.unmerged_weight
            && self.min.to_bits() == o.min.to_bits()
            && self.max.to_bits() == o.max.to_bits()
            && self.compressions == o.compressions
            && self.nodes.as_slice() == o.nodes.as_slice()
    }
}

/// Centroids the buffer holds for a compression: `6δ + 10`, as RedisBloom sizes it.
fn capacity_for(compression: u64) -> u64 {
    compression.saturating_mul(6).saturating_add(10)
}

fn check_compression(compression: u64) -> Result<()> {
    if compression == 0 || compression > MAX_COMPRESSION {
        return Err(invalid(
            "compression",
            format!("must be in 1..={MAX_COMPRESSION}, got {compression}"),
        ));
    }
    Ok(())
}

/// k₁(q) = δ/(2π) · asin(2q − 1) (§2.2).
fn k1(q: f64, delta: f64) -> f64 {
    delta / (2.0 * std::f64::consts::PI) * (2.0 * q - 1.0).clamp(-1.0, 1.0).asin()
}

/// The quantile one k₁ unit right of `q` (1 once the scale's top is reached).
fn q_limit(q: f64, delta: f64) -> f64 {
    let k = k1(q, delta) + 1.0;
    if k >= delta / 4.0 {
        return 1.0;
    }
    (1.0 + (2.0 * std::f64::consts::PI * k / delta).sin()) / 2.0
}

/// Sorts `nodes` by mean and merges neighbours (§2.1, Algorithm 1) under k₁; returns how many
/// centroids remain (at the front; the rest is zeroed).
fn compress_nodes(nodes: &mut [Node], total: f64, delta: f64) -> usize {
    nodes.sort_unstable_by(|a, b| mean(a).total_cmp(&mean(b)));
    if nodes.is_empty() {
        return 0;
    }
    let mut cur = 0;
    let mut left = 0.0; // weight left of centroid `cur`
    let mut limit = q_limit(0.0, delta) * total;
    for i in 1..nodes.len() {
        let next = nodes[i];
        if left + weight(&nodes[cur]) + weight(&next) <= limit {
            let w = nodes[cur][1] + next[1];
            let m = mean(&nodes[cur]);
            let moved = m + (mean(&next) - m) * (weight(&next) / w as f64);
            // sorted means: the weighted mean lies between them (up to rounding)
            nodes[cur] = [moved.clamp(m, mean(&next)).to_bits(), w];
        } else {
            left += weight(&nodes[cur]);
            limit = q_limit(left / total, delta) * total;
            cur += 1;
            nodes[cur] = next;
        }
    }
    for n in &mut nodes[cur + 1..] {
        *n = [0, 0];
    }
    cur + 1
}

/// Rounds half toward zero (RedisBloom's rank rounding: 2.5 → 2, 2.6 → 3).
fn half_round_down(x: f64) -> f64 {
    let t = x.trunc();
    if (x - t).abs() <= 0.5 {
        t
    } else if t >= 0.0 {
        t + 1.0
    } else {
        t - 1.0
    }
}

fn weighted_average(x1: f64, w1: f64, x2: f64, w2: f64) -> f64 {
    let (lo, hi) = if x1 <= x2 { (x1, x2) } else { (x2, x1) };
    ((x1 * w1 + x2 * w2) / (w1 + w2)).clamp(lo, hi)
}

impl TDigest {
    /// Move the structure's heap allocations with `mv` (for an allocator that defragments by
    /// moving allocations, as the Redis module's defrag callback does): the centroid buffer, then the merged centroids a query keeps. Arrays in a
    /// map (anonymous or a file's) never move (see `Words::relocate`). `mv` gets an
    /// allocation's address and returns where its bytes are now, or `None` to leave it; it is
    /// called for each allocation once, always in the same order.
    ///
    /// # Safety
    /// A returned address must hold a copy of the allocation's bytes in an allocation of the
    /// global allocator of the same size and at least its alignment (64 bytes for the word
    /// arrays), and the old allocation must have been freed; nothing may reference the
    /// structure during the call.
    #[doc(hidden)]
    pub unsafe fn relocate_arrays(
        &mut self,
        mv: &mut dyn FnMut(std::ptr::NonNull<u8>) -> Option<std::ptr::NonNull<u8>>,
    ) {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.nodes.relocate(mv) };
        if let Some(view) = self.view.get_mut() {
            // SAFETY: as above.
            unsafe { store::relocate_vec(view, mv) };
        }
    }

    /// The compression RedisBloom's `TDIGEST.CREATE` uses when none is given: 100.
    pub const DEFAULT_COMPRESSION: u64 = DEFAULT_COMPRESSION;
    /// The largest compression accepted: its buffer of `6δ + 10` centroids must be indexable
    /// by a 32-bit signed integer, as in RedisBloom (the memory limit usually refuses far less).
    pub const MAX_COMPRESSION: u64 = MAX_COMPRESSION;
    /// The largest total weight (RedisBloom keeps weights in signed 64-bit integers).
    pub const MAX_WEIGHT: u64 = MAX_WEIGHT;

    /// An empty digest of compression δ (1 ..= [`MAX_COMPRESSION`](Self::MAX_COMPRESSION); RedisBloom's default is
    /// [`DEFAULT_COMPRESSION`](Self::DEFAULT_COMPRESSION)), within the process's memory limit
    /// ([`max_bytes`](crate::tuning::max_bytes)).
    pub fn try_new(compression: u64) -> Result<Self> {
        Self::try_with_limit(compression, store::max_bytes())
    }

    /// [`try_new`](Self::try_new) within `max_bytes` bytes.
    pub fn try_with_limit(compression: u64, max_bytes: u64) -> Result<Self> {
        check_compression(compression)?;
        let cap = capacity_for(compression);
        store::check_size(cap.saturating_mul(16), max_bytes)?;
        Ok(Self {
            compression,
            nodes: Words::zeroed(cap as usize * 2, max_bytes)?,
            merged: 0,
            unmerged: 0,
            merged_weight: 0,
            unmerged_weight: 0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            compressions: 0,
            view: OnceLock::new(),
        })
    }

    /// A copy (the allocation can fail, hence a `Result`).
    pub fn try_clone(&self) -> Result<Self> {
        Ok(Self {
            nodes: self.nodes.try_clone()?,
            view: OnceLock::new(),
            ..*self
        })
    }

    fn slots(&self) -> &[Node] {
        bytemuck::cast_slice(self.nodes.as_slice())
    }

    fn slots_mut(&mut self) -> &mut [Node] {
        self.view.take();
        bytemuck::cast_slice_mut(self.nodes.as_mut_slice())
    }

    /// The compression δ.
    pub fn compression(&self) -> u64 {
        self.compression
    }

    /// Centroids the buffer holds (`6δ + 10`; `TDIGEST.INFO`'s `Capacity`).
    pub fn capacity(&self) -> u64 {
        self.slots().len() as u64
    }

    /// Merged centroids.
    pub fn merged_nodes(&self) -> usize {
        self.merged
    }

    /// Values in the buffer, not merged yet.
    pub fn unmerged_nodes(&self) -> usize {
        self.unmerged
    }

    /// Weight of the merged centroids.
    pub fn merged_weight(&self) -> u64 {
        self.merged_weight
    }

    /// Weight in the buffer.
    pub fn unmerged_weight(&self) -> u64 {
        self.unmerged_weight
    }

    /// Compressions (merges of the buffer) since creation or the last [`reset`](Self::reset).
    pub fn compressions(&self) -> u64 {
        self.compressions
    }

    /// Values observed (the total weight).
    pub fn count(&self) -> u64 {
        self.merged_weight + self.unmerged_weight
    }

    /// True when nothing was observed.
    pub fn is_empty(&self) -> bool {
        self.count() == 0
    }

    /// The smallest value observed (NaN when empty).
    pub fn min(&self) -> f64 {
        if self.is_empty() {
            f64::NAN
        } else {
            self.min
        }
    }

    /// The largest value observed (NaN when empty).
    pub fn max(&self) -> f64 {
        if self.is_empty() {
            f64::NAN
        } else {
            self.max
        }
    }

    /// Bytes held: the centroid buffer and the struct.
    pub fn memory_usage(&self) -> usize {
        std::mem::size_of::<Self>() + self.nodes.allocated_bytes() + self.view_bytes()
    }

    /// Bytes of the merged centroids kept for queries (see [`compress`](Self::compress)):
    /// none after a write, at most the buffer's centroids after a query.
    pub fn view_bytes(&self) -> usize {
        self.view
            .get()
            .map_or(0, |v| v.capacity() * std::mem::size_of::<Node>())
    }

    /// Forgets every value (compression and capacity stay).
    pub fn reset(&mut self) {
        self.view.take();
        self.nodes.as_mut_slice().fill(0);
        self.merged = 0;
        self.unmerged = 0;
        self.merged_weight = 0;
        self.unmerged_weight = 0;
        self.min = f64::INFINITY;
        self.max = f64::NEG_INFINITY;
        self.compressions = 0;
    }

    /// Observes `value` once. NaN and ±∞ are refused ([`Error::InvalidParameter`]), as is a
    /// total weight above [`MAX_WEIGHT`](Self::MAX_WEIGHT); nothing changes then.
    pub fn insert(&mut self, value: f64) -> Result<()> {
        self.insert_weighted(value, 1)
    }

    /// Observes `value` `weight` times (weight ≥ 1), as one buffered centroid.
    pub fn insert_weighted(&mut self, value: f64, weight: u64) -> Result<()> {
        if !value.is_finite() {
            return Err(invalid("value", format!("must be finite, got {value}")));
        }
        if weight == 0 {
            return Err(invalid("weight", "must be at least 1"));
        }
        self.view.take();
        if self
            .count()
            .checked_add(weight)
            .is_none_or(|t| t > MAX_WEIGHT)
        {
            return Err(overflow());
        }
        if self.merged + self.unmerged + 1 >= self.slots().len() {
            self.compress();
        }
        let pos = self.merged + self.unmerged;
        if pos >= self.slots().len() {
            // unreachable: k₁ leaves at most about δ centroids of the 6δ + 10 slots
            return Err(overflow());
        }
        self.slots_mut()[pos] = [value.to_bits(), weight];
        self.unmerged += 1;
        self.unmerged_weight += weight;
        self.min = self.min.min(value);
        self.max = self.max.max(value);
        Ok(())
    }

    /// Merges the buffer into the centroids (queries do this on a copy when needed; calling it
    /// first saves them the copy, and is what RedisBloom's queries do).
    pub fn compress(&mut self) {
        if self.unmerged == 0 {
            return;
        }
        let n = self.merged + self.unmerged;
        let total = self.count();
        let delta = self.compression as f64;
        self.merged = compress_nodes(&mut self.slots_mut()[..n], total as f64, delta);
        self.merged_weight = total;
        self.unmerged = 0;
        self.unmerged_weight = 0;
        self.compressions = self.compressions.saturating_add(1);
    }

    /// The merged centroids: the buffer merged into a copy when it is not empty, kept until
    /// the next write.
    fn centroids(&self) -> &[Node] {
        let n = self.merged + self.unmerged;
        if self.unmerged == 0 {
            return &self.slots()[..n];
        }
        self.view.get_or_init(|| {
            let mut v = self.slots()[..n].to_vec();
            let m = compress_nodes(&mut v, self.count() as f64, self.compression as f64);
            v.truncate(m);
            v.shrink_to_fit();
            v
        })
    }

    /// Adds every value of `other` (its centroids, as weighted values) to this digest, which
    /// keeps its own compression. Refused, with nothing changed, if the total weight would pass
    /// [`MAX_WEIGHT`](Self::MAX_WEIGHT).
    pub fn merge(&mut self, other: &TDigest) -> Result<()> {
        if self
            .count()
            .checked_add(other.count())
            .is_none_or(|t| t > MAX_WEIGHT)
        {
            return Err(overflow());
        }
        let theirs = other.centroids().to_vec();
        self.compress();
        for c in &theirs {
            self.insert_weighted(mean(c), c[1])?;
        }
        // the extremes, exactly (a centroid's mean is inside them)
        if !other.is_empty() {
            self.min = self.min.min(other.min);
            self.max = self.max.max(other.max);
        }
        Ok(())
    }

    /// The value below which a fraction `q` of the observations lie (0 ≤ q ≤ 1): the smallest
    /// value at q = 0, the largest at q = 1. NaN when empty or when q is outside [0, 1].
    pub fn quantile(&self, q: f64) -> f64 {
        if !(0.0..=1.0).contains(&q) {
            return f64::NAN;
        }
        let c = self.centroids();
        self.quantile_in(c, q)
    }

    /// [`quantile`](Self::quantile) of each of `qs`, merging the buffer once.
    pub fn quantiles(&self, qs: &[f64]) -> Vec<f64> {
        let c = self.centroids();
        qs.iter()
            .map(|&q| {
                if (0.0..=1.0).contains(&q) {
                    self.quantile_in(c, q)
                } else {
                    f64::NAN
                }
            })
            .collect()
    }

    fn quantile_in(&self, c: &[Node], q: f64) -> f64 {
        match c.len() {
            0 => return f64::NAN,
            1 => return mean(&c[0]),
            _ => {}
        }
        let total = self.count() as f64;
        let index = q * total;
        if index < 1.0 {
            return self.min;
        }
        let first = &c[0];
        if weight(first) > 1.0 && index < weight(first) / 2.0 {
            // one value sits exactly at min: interpolate from it with the rest of the weight
            return self.min
                + (index - 1.0) / (weight(first) / 2.0 - 1.0) * (mean(first) - self.min);
        }
        if index > total - 1.0 {
            return self.max;
        }
        let last = &c[c.len() - 1];
        if weight(last) > 1.0 && total - index <= weight(last) / 2.0 {
            return self.max
                - (total - index - 1.0) / (weight(last) / 2.0 - 1.0) * (self.max - mean(last));
        }
        let mut so_far = weight(first) / 2.0;
        for pair in c.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            let dw = (weight(a) + weight(b)) / 2.0;
            if so_far + dw > index {
                // a singleton is one value exactly at its mean: no interpolation inside it
                let mut left_unit = 0.0;
                if a[1] == 1 {
                    if index - so_far < 0.5 {
                        return mean(a);
                    }
                    left_unit = 0.5;
                }
                let mut right_unit = 0.0;
                if b[1] == 1 {
                    if so_far + dw - index <= 0.5 {
                        return mean(b);
                    }
                    right_unit = 0.5;
                }
                let z1 = index - so_far - left_unit;
                let z2 = so_far + dw - index - right_unit;
                return weighted_average(mean(a), z2, mean(b), z1);
            }
            so_far += dw;
        }
        // between the last centroid's middle and max
        let z1 = (index - (total - weight(last) / 2.0)).max(0.0);
        let z2 = (weight(last) / 2.0 - z1).max(0.0);
        if z1 + z2 == 0.0 {
            return mean(last);
        }
        weighted_average(mean(last), z2, self.max, z1)
    }

    /// The estimated fraction of observations ≤ `x`, counting half of those equal to `x`:
    /// 0 below the smallest value, 1 above the largest, NaN when empty.
    pub fn cdf(&self, x: f64) -> f64 {
        let c = self.centroids();
        self.cdf_in(c, x)
    }

    /// [`cdf`](Self::cdf) of each of `xs`, merging the buffer once.
    pub fn cdfs(&self, xs: &[f64]) -> Vec<f64> {
        let c = self.centroids();
        xs.iter().map(|&x| self.cdf_in(c, x)).collect()
    }

    fn cdf_in(&self, c: &[Node], x: f64) -> f64 {
        if c.is_empty() || x.is_nan() {
            return f64::NAN;
        }
        if x < self.min {
            return 0.0;
        }
        if x > self.max {
            return 1.0;
        }
        if c.len() == 1 {
            // all values between min and max in one centroid: no viable interpolation
            return 0.5;
        }
        let total = self.count() as f64;
        let (first, last) = (&c[0], &c[c.len() - 1]);
        if x < mean(first) {
            let width = mean(first) - self.min;
            if width <= 0.0 {
                return 0.0;
            }
            if x == self.min {
                return 0.5 / total;
            }
            return (1.0 + (x - self.min) / width * (weight(first) / 2.0 - 1.0)) / total;
        }
        if x > mean(last) {
            let width = self.max - mean(last);
            if width <= 0.0 {
                return 1.0;
            }
            if x == self.max {
                return 1.0 - 0.5 / total;
            }
            return 1.0 - (1.0 + (self.max - x) / width * (weight(last) / 2.0 - 1.0)) / total;
        }
        let mut so_far = 0.0;
        let mut i = 0;
        while i + 1 < c.len() {
            let a = &c[i];
            if mean(a) == x {
                // centroids exactly at x count half
                let mut dw = 0.0;
                while i < c.len() && mean(&c[i]) == x {
                    dw += weight(&c[i]);
                    i += 1;
                }
                return (so_far + dw / 2.0) / total;
            }
            let b = &c[i + 1];
            if mean(a) <= x && x < mean(b) {
                let dw = (weight(a) + weight(b)) / 2.0;
                if mean(b) - mean(a) <= 0.0 {
                    return (so_far + dw) / total;
                }
                let (mut left_out, mut right_out) = (0.0, 0.0);
                if a[1] == 1 {
                    if b[1] == 1 {
                        // two singletons: the left one is in, the right one out
                        return (so_far + 1.0) / total;
                    }
                    left_out = 0.5;
                } else if b[1] == 1 {
                    right_out = 0.5;
                }
                let base = so_far + weight(a) / 2.0 + left_out;
                let span = dw - left_out - right_out;
                return (base + span * (x - mean(a)) / (mean(b) - mean(a))) / total;
            }
            so_far += weight(a);
            i += 1;
        }
        1.0 - 0.5 / total
    }

    /// The estimated rank of `x`: observations below it plus half of those equal to it, rounded
    /// as RedisBloom rounds. −2 when empty, −1 below the smallest value, the count above the
    /// largest.
    pub fn rank(&self, x: f64) -> i64 {
        self.ranks(&[x], false)[0]
    }

    /// The estimated reverse rank of `x`: observations above it plus half of those equal to it.
    /// −2 when empty, −1 above the largest value, the count below the smallest.
    pub fn rev_rank(&self, x: f64) -> i64 {
        self.ranks(&[x], true)[0]
    }

    /// [`rank`](Self::rank) (or [`rev_rank`](Self::rev_rank) when `reverse`) of each of `xs`,
    /// merging the buffer once.
    pub fn ranks(&self, xs: &[f64], reverse: bool) -> Vec<i64> {
        let c = self.centroids();
        let n = self.count() as f64;
        xs.iter()
            .map(|&x| {
                if n == 0.0 {
                    -2
                } else if x < self.min {
                    if reverse {
                        n as i64
                    } else {
                        -1
                    }
                } else if x > self.max {
                    if reverse {
                        -1
                    } else {
                        n as i64
                    }
                } else {
                    let at = self.cdf_in(c, x) * n;
                    if reverse {
                        (n - at.round()).round() as i64
                    } else {
                        half_round_down(at) as i64
                    }
                }
            })
            .collect()
    }

    /// The estimated value of rank `r` (0: the smallest): +∞ when `r` ≥ the count, NaN when
    /// empty.
    pub fn by_rank(&self, r: u64) -> f64 {
        self.by_ranks(&[r], false)[0]
    }

    /// The estimated value of reverse rank `r` (0: the largest): −∞ when `r` ≥ the count, NaN
    /// when empty.
    pub fn by_rev_rank(&self, r: u64) -> f64 {
        self.by_ranks(&[r], true)[0]
    }

    /// [`by_rank`](Self::by_rank) (or [`by_rev_rank`](Self::by_rev_rank) when `reverse`) of
    /// each of `rs`, merging the buffer once.
    pub fn by_ranks(&self, rs: &[u64], reverse: bool) -> Vec<f64> {
        let c = self.centroids();
        let n = self.count() as f64;
        rs.iter()
            .map(|&r| {
                let r = r as f64;
                if n == 0.0 {
                    f64::NAN
                } else if r == 0.0 {
                    if reverse {
                        self.max
                    } else {
                        self.min
                    }
                } else if r >= n {
                    if reverse {
                        f64::NEG_INFINITY
                    } else {
                        f64::INFINITY
                    }
                } else {
                    let r = if reverse { n - r - 1.0 } else { r };
                    self.quantile_in(c, r / n)
                }
            })
            .collect()
    }

    /// The mean of the observations between quantiles `lo` and `hi` (0 ≤ lo < hi ≤ 1; a
    /// centroid cut by a bound counts in part). NaN when empty or the cuts are invalid.
    pub fn trimmed_mean(&self, lo: f64, hi: f64) -> f64 {
        if !(0.0..=1.0).contains(&lo) || !(0.0..=1.0).contains(&hi) {
            return f64::NAN;
        }
        let c = self.centroids();
        match c.len() {
            0 => return f64::NAN,
            1 => return mean(&c[0]),
            _ => {}
        }
        let total = self.count() as f64;
        let left = (total * lo).floor();
        let right = (total * hi).ceil();
        let (mut done, mut sum, mut count) = (0.0, 0.0, 0.0);
        for n in c.iter() {
            let w = weight(n);
            let mut add = w - (left - done).max(0.0).min(w);
            add = (right - done).max(0.0).min(add);
            done += w;
            sum += mean(n) * add;
            count += add;
            if done >= right {
                break;
            }
        }
        sum / count
    }

    /// The centroids (mean, weight), merged, in order of mean.
    pub fn centroid_list(&self) -> Vec<(f64, u64)> {
        self.centroids().iter().map(|n| (mean(n), n[1])).collect()
    }
}

fn overflow() -> Error {
    invalid(
        "weight",
        format!("the total weight would exceed {MAX_WEIGHT}"),
    )
}

impl Persist for TDigest {
    const KIND: Kind = Kind::TDigest;

    fn encode_parts(&self) -> (Header, Payload<'_>) {
        let mut h = Header::new(Kind::TDigest, KeyHasher::new());
        h.items = self.count();
        h.params = ParamWriter::new()
            .u64(self.compression)
            .u64(self.merged as u64)
            .u64(self.unmerged as u64)
            .u64(self.merged_weight)
            .u64(self.unmerged_weight)
            .u64(self.compressions)
            .f64(self.min)
            .f64(self.max)
            .finish();
        (h, Payload::new(vec![&self.nodes]))
    }

    fn decode_from(d: &Decoded, src: format::Source<'_>, limit: u64) -> Result<Self> {
        let mut r = ParamReader::new(&d.header.params);
        let compression = r.u64()?;
        let merged = r.u64()?;
        let unmerged = r.u64()?;
        let merged_weight = r.u64()?;
        let unmerged_weight = r.u64()?;
        let compressions = r.u64()?;
        let min = r.f64()?;
        let max = r.f64()?;
        r.finish()?;
        if d.header.capacity != 0 || d.header.target_fpr != 0.0 {
            return Err(inconsistent("a t-digest has no capacity or target rate"));
        }
        if d.header.hasher != KeyHasher::new() {
            return Err(inconsistent(
                "a t-digest hashes nothing: hasher must be the default",
            ));
        }
        check_compression(compression).map_err(|e| inconsistent(e.to_string()))?;
        let cap = capacity_for(compression);
        let words = cap * 2;
        if format::padded_len(words as usize) != d.payload_len as u64 {
            return Err(inconsistent(format!(
                "payload is {} bytes, compression {compression} needs {}",
                d.payload_len,
                format::padded_len(words as usize)
            )));
        }
        if merged.checked_add(unmerged).is_none_or(|n| n > cap) {
            return Err(inconsistent(format!(
                "{merged} merged and {unmerged} unmerged centroids for {cap} slots"
            )));
        }
        let total = merged_weight
            .checked_add(unmerged_weight)
            .filter(|&t| t <= MAX_WEIGHT)
            .ok_or_else(|| inconsistent("total weight too large"))?;
        if total != d.header.items {
            return Err(inconsistent(
                "item count differs from the centroids' weight",
            ));
        }
        if total == 0 {
            if min != f64::INFINITY || max != f64::NEG_INFINITY {
                return Err(inconsistent("an empty t-digest with a minimum or maximum"));
            }
        } else if !(min.is_finite() && max.is_finite() && min <= max) {
            return Err(inconsistent(
                "minimum and maximum must be finite and ordered",
            ));
        }
        store::check_size(cap * 16, limit)?;
        let nodes = src.words(d.payload_offset, words as usize, limit)?;
        let slots: &[Node] = bytemuck::cast_slice(nodes.as_slice());
        let (m, u) = (merged as usize, unmerged as usize);
        let mut sums = [0u64; 2];
        for (i, n) in slots.iter().enumerate() {
            if i >= m + u {
                if *n != [0, 0] {
                    return Err(inconsistent("non-zero slot after the centroids"));
                }
                continue;
            }
            let x = mean(n);
            if !x.is_finite() || x < min || x > max {
                return Err(inconsistent(format!(
                    "centroid {i}: mean {x} outside [min, max]"
                )));
            }
            if n[1] == 0 {
                return Err(inconsistent(format!("centroid {i}: weight 0")));
            }
            if i > 0 && i < m && mean(&slots[i - 1]) > x {
                return Err(inconsistent("merged centroids out of order"));
            }
            let s = &mut sums[usize::from(i >= m)];
            *s = s
                .checked_add(n[1])
                .ok_or_else(|| inconsistent("centroid weights overflow"))?;
        }
        if sums != [merged_weight, unmerged_weight] {
            return Err(inconsistent(
                "centroid weights differ from the recorded totals",
            ));
        }
        Ok(Self {
            compression,
            nodes,
            merged: m,
            unmerged: u,
            merged_weight,
            unmerged_weight,
            min,
            max,
            compressions,
            view: OnceLock::new(),
        })
    }
}

impl crate::dispatch::OtherKind for TDigest {
    const CAPABILITIES: crate::kind::Capabilities = crate::kind::Capabilities {
        insert: true,
        ..crate::kind::Capabilities::NONE
    };
}

#[cfg(test)]
mod tests;
