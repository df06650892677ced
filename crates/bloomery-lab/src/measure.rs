//! Shared measurement helpers: deterministic key streams and the statistical tolerance used
//! to compare a measured false-positive rate with a formula.

use bloomery::hashing::mix64;
use bloomery::Filter;
use bloomery::{Hashed, KeyHasher};
use rayon::prelude::*;

/// The i-th key of the stream for `seed`. Distinct i give distinct keys (a bijection of
/// `base + i`), so inserted keys `0..n` and query keys `n..n+q` never overlap and every
/// positive answer to a query is a false positive.
#[inline]
pub fn key(seed: u64, i: u64) -> u64 {
    mix64(mix64(seed).wrapping_add(i))
}

/// Insert keys `0..n` of the stream.
pub fn fill<F: Filter>(f: &mut F, seed: u64, n: u64) {
    for i in 0..n {
        f.insert(&key(seed, i));
    }
}

/// Query keys `n..n+queries` (never inserted) and count the positives (in parallel; the
/// count does not depend on the number of threads).
pub fn false_positives<F: Filter + Sync>(f: &F, seed: u64, n: u64, queries: u64) -> u64 {
    const CHUNK: u64 = 1 << 16;
    (0..queries.div_ceil(CHUNK))
        .into_par_iter()
        .map(|c| {
            let start = n + c * CHUNK;
            let end = (start + CHUNK).min(n + queries);
            (start..end).filter(|&i| f.contains(&key(seed, i))).count() as u64
        })
        .sum()
}

/// The key stream of [`fill`] and [`false_positives`], hashed once by one hasher, for
/// experiments that build many filters with the same hasher (hashing dominates a debug build).
#[derive(Debug, Clone)]
pub struct HashedKeys {
    /// The hasher the keys went through; filters using these must hash the same way.
    pub hasher: KeyHasher,
    /// Hashes of keys `0..n` (inserted).
    pub inserts: Vec<Hashed>,
    /// Hashes of keys `n..n+queries` (never inserted).
    pub queries: Vec<Hashed>,
}

impl HashedKeys {
    /// Hash the stream of `seed`: `n` inserts and `queries` queries.
    pub fn new(hasher: KeyHasher, seed: u64, n: u64, queries: u64) -> Self {
        let hash = |range: std::ops::Range<u64>| -> Vec<Hashed> {
            range
                .into_par_iter()
                .map(|i| hasher.hash(&key(seed, i)))
                .collect()
        };
        Self {
            hasher,
            inserts: hash(0..n),
            queries: hash(n..n + queries),
        }
    }

    /// Insert every key. Panics if the filter hashes differently (a bug in the experiment).
    pub fn fill<F: Filter>(&self, f: &mut F) {
        assert_eq!(f.hasher(), &self.hasher, "filter and key hashes differ");
        for &h in &self.inserts {
            f.insert_hashed(h);
        }
    }

    /// Count the positives among the queries.
    pub fn false_positives<F: Filter + Sync>(&self, f: &F) -> u64 {
        assert_eq!(f.hasher(), &self.hasher, "filter and key hashes differ");
        self.queries
            .par_chunks(1 << 16)
            .map(|c| c.iter().filter(|&&h| f.contains_hashed(h)).count() as u64)
            .sum()
    }
}

/// A small deterministic random stream (SplitMix64 over [`mix64`]) for the simulations: the
/// same seed gives the same stream on every machine and thread count.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// The stream for `seed`.
    pub fn new(seed: u64) -> Self {
        Self(mix64(seed ^ 0x5EED_1AB5_0F7E_A5E5))
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix64(self.0)
    }

    /// Uniform in `0..n` (`n > 0`).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        bloomery::hashing::reduce(self.next_u64(), n)
    }

    /// True with probability `p`.
    #[inline]
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64) < p
    }
}

/// Relative standard deviation of a classic filter's rate `(ones/m)^k` caused by the
/// fluctuation of its fill: the number of zero bits after `t = kn` uniform throws into `m`
/// bits has variance `≈ m·e^{-c}(1-(1+c)e^{-c})`, `c = t/m`, and `d ln f = k·dZ/(m - Z)`.
pub fn fill_rel_sigma(n: u64, m: u64, k: u32) -> f64 {
    if m == 0 || n == 0 {
        return 0.0;
    }
    let m = m as f64;
    let c = k as f64 * n as f64 / m;
    let p0 = (-c).exp();
    let var = (m * p0 * (1.0 - (1.0 + c) * p0)).max(0.0);
    let ones = m * (1.0 - p0);
    if ones <= 0.0 {
        return 0.0;
    }
    k as f64 * var.sqrt() / ones
}

/// The standard deviation of a measured rate over `queries` queries when the expected rate is
/// `p`: the binomial part `sqrt(p(1-p)/q)` combined with the filter-to-filter fluctuation
/// `p·rel` (see [`fill_rel_sigma`]).
pub fn rate_sigma(p: f64, queries: u64, rel: f64) -> f64 {
    let b = p * (1.0 - p) / queries.max(1) as f64;
    (b + (p * rel).powi(2)).sqrt()
}

/// How many standard deviations `measured` lies from `expected`.
pub fn z_score(measured: f64, expected: f64, sigma: f64) -> f64 {
    if sigma == 0.0 {
        if measured == expected {
            0.0
        } else {
            f64::INFINITY
        }
    } else {
        (measured - expected) / sigma
    }
}

/// True when `measured` is within `z` standard deviations plus a relative model margin of
/// `expected`.
pub fn within(measured: f64, expected: f64, sigma: f64, z: f64, margin: f64) -> bool {
    (measured - expected).abs() <= z * sigma + margin * expected
}

#[cfg(test)]
mod tests {
    use super::*;
    use bloomery::BloomFilter;

    #[test]
    fn rng_is_seeded_and_in_range() {
        let (mut a, mut b) = (Rng::new(5), Rng::new(5));
        assert_eq!(a.next_u64(), b.next_u64());
        assert_ne!(Rng::new(5).next_u64(), Rng::new(6).next_u64());
        assert!((0..1000).all(|_| a.below(7) < 7));
        let hits = (0..10_000).filter(|_| a.chance(0.25)).count();
        assert!((2_200..2_800).contains(&hits), "{hits}");
    }

    #[test]
    fn keys_are_distinct_and_seeded() {
        let a: std::collections::HashSet<u64> = (0..10_000).map(|i| key(7, i)).collect();
        assert_eq!(a.len(), 10_000);
        assert_ne!(key(7, 0), key(8, 0));
    }

    #[test]
    fn no_false_negatives_and_sigma_shape() {
        let mut f = BloomFilter::builder()
            .bits(8_000)
            .hashes(5)
            .seed(3)
            .try_build()
            .unwrap();
        fill(&mut f, 3, 1000);
        assert!((0..1000).all(|i| f.contains(&key(3, i))));
        let fp = false_positives(&f, 3, 1000, 1000);
        assert!(fp < 1000);
        // the pre-hashed stream is the same stream
        let keys = HashedKeys::new(*f.hasher(), 3, 1000, 1000);
        let mut g = BloomFilter::builder()
            .bits(8_000)
            .hashes(5)
            .seed(3)
            .try_build()
            .unwrap();
        keys.fill(&mut g);
        assert_eq!(f, g);
        assert_eq!(keys.false_positives(&g), fp);
        // the fill fluctuation grows with k and shrinks with m
        assert!(fill_rel_sigma(1000, 8000, 8) > fill_rel_sigma(1000, 8000, 2));
        assert!(fill_rel_sigma(10_000, 80_000, 5) < fill_rel_sigma(1000, 8000, 5));
        assert!(within(0.011, 0.01, 0.0005, 4.0, 0.0));
        assert!(!within(0.013, 0.01, 0.0005, 4.0, 0.0));
    }
}
