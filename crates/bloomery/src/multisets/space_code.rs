//! The Space-Code Bloom filter: [`SpaceCodeBloomFilter`] (its docs say which paper it follows and
//! when to pick it).

use crate::error::{inconsistent, invalid, Result};
use crate::filter::{Build, Builder, Count, Filter, Sizing, Stats};
use crate::hash::{mix64, reduce, Hashed, KeyHasher};
use crate::io::format::{self, Decoded, Header, Kind, ParamReader, ParamWriter, Payload, Persist};
use crate::kind::Capabilities;
use crate::multisets::counter_kind::counting_filter_kind;
use crate::params;
use crate::store::{self, Words};

/// Largest k per group.
pub const MAX_HASHES: u32 = 64;

/// Most groups (the MLE costs `O(l² log l)` per query).
pub const MAX_GROUPS: u32 = params::SCBF_MAX_GROUPS;

/// Default number of groups.
pub const DEFAULT_GROUPS: u32 = 32;

const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// The Space-Code Bloom filter (SCBF; Kumar, Xu, Li & Wang, IMC 2003 / INFOCOM 2004; named
/// in the "recent work" of Broder & Mitzenmacher's survey, see docs/PAPERS.md): approximate multiplicities from
/// one bit array and maximum-likelihood estimation.
///
/// There are `l` **groups** of k hash functions each (group g uses values `g·k … g·k + k - 1`
/// of the key's enhanced double-hashing sequence, [`hash`](crate::KeyHasher)). Each insert of x picks one
/// group uniformly at random and sets that group's k bits. A key inserted n times has then set
/// the bits of about `l·(1 - (1-1/l)^n)` distinct groups — more inserts, more groups — so the
/// number θ of groups whose k bits are all set ("matched") encodes n.
///
/// **The estimate** is the maximum-likelihood n given θ ([`params::scbf_mle`]). Let D be the
/// number of distinct groups x's n inserts chose: D has the occupancy distribution of n
/// uniform draws from l values. Every other group matches falsely, independently, with the
/// probability `f` that k given bits are all set, estimated from the fill as `(ones/m)^k`.
/// Then `P(θ | n) = Σ_D P(D | n) · C(l-D, θ-D) f^{θ-D} (1-f)^{l-θ}`, and the estimate is the n
/// maximising it (evaluated exactly by a recurrence over n). Its expectation form is
/// `E[θ | n] = l·(1 - (1-1/l)^n·(1-f))` ([`params::scbf_expected_matched`]). When all l groups
/// match the likelihood has no finite maximum; the estimate is then censored where the
/// expected number of matched groups reaches `l - ½` — the counting range of an SCBF is about
/// `l·ln l` (Kumar et al. extend it with several filters at different sampling rates, the
/// multi-resolution SCBF, which remains to be built).
///
/// The random group choice comes from a SplitMix64 stream stored with the filter (seeded from
/// the hasher), so runs are reproducible and a saved filter continues the same stream.
///
/// **Sizing.** [`capacity`](SpaceCodeBuilder::capacity) is the number of distinct keys n,
/// [`occurrences`](SpaceCodeBuilder::occurrences) the inserts N (repeats included), and
/// [`fpr`](SpaceCodeBuilder::fpr) the membership false-positive rate p of the whole
/// structure: the bits are sized for the most (key, group) pairs N inserts of n keys can set
/// ([`params::scbf_pairs`]), each group at `1 - (1-p)^{1/l}`. (Files written before this
/// sizing recorded the rate of one group as their target.)
///
/// Membership: θ ≥ 1 (no false negatives). **No deletion:** an insert's group is random and
/// not recorded, and bits are shared, so a removal cannot know which bits to clear.
///
/// **When to pick it:** per-flow packet counts of large flows at line rate, where a count
/// within a relative error suffices and one bit array must serve every flow; for exact
/// never-below bounds use [`crate::CountMinSketch`] or [`crate::CountingBloomFilter`].
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{Count, Filter, SpaceCodeBloomFilter};
///
/// // 2^16 bits, 3 hashes per group, 32 groups
/// let mut f = SpaceCodeBloomFilter::try_with_shape(1 << 16, 3, 32)?;
/// for _ in 0..10 {
///     f.insert("flow");
/// }
/// assert!(f.contains("flow"));
/// let c = f.count("flow"); // a maximum-likelihood estimate of 10
/// assert!((5..=20).contains(&c), "{c}");
/// # Ok(()) }
/// ```
#[derive(Clone, PartialEq)]
pub struct SpaceCodeBloomFilter {
    words: Words,
    m: u64,
    k: u32,
    groups: u32,
    hasher: KeyHasher,
    inserts: u64,
    rng: u64,
    /// Bits set (kept up to date on insert, recounted on load).
    ones: u64,
    capacity: u64,
    target_fpr: f64,
}

/// `Debug` without the group generator's state of a keyed filter (it starts from the secret).
impl std::fmt::Debug for SpaceCodeBloomFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpaceCodeBloomFilter")
            .field("words", &self.words)
            .field("m", &self.m)
            .field("k", &self.k)
            .field("groups", &self.groups)
            .field("hasher", &self.hasher)
            .field("inserts", &self.inserts)
            .field(
                "rng",
                &crate::hash::MaybeSecret(self.hasher.is_secret(), self.rng),
            )
            .field("ones", &self.ones)
            .field("capacity", &self.capacity)
            .field("target_fpr", &self.target_fpr)
            .finish()
    }
}

/// Builder for [`SpaceCodeBloomFilter`].
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{Count, Filter, SpaceCodeBloomFilter};
///
/// // an explicit shape: 2^16 bits, 3 hashes per group, 32 groups
/// let mut f = SpaceCodeBloomFilter::builder().bits(1 << 16).hashes(3).groups(32).try_build()?;
/// f.insert("flow");
/// assert!(f.contains("flow") && f.count("flow") >= 1);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SpaceCodeBuilder {
    sizing: Sizing,
    occurrences: Option<u64>,
    groups: u32,
}

impl SpaceCodeBuilder {
    crate::filter::sizing_setters!();

    /// Expected number of inserts N, repeats included (default: n, every key once). The
    /// fill depends on both: the n keys' N inserts set at most
    /// [`params::scbf_pairs`]`(n, N, l)` distinct (key, group) pairs, k bits each.
    pub fn occurrences(mut self, total: u64) -> Self {
        self.occurrences = Some(total);
        self
    }
    /// An exact number of bits.
    pub fn bits(mut self, m: u64) -> Self {
        self.sizing.bits = Some(m);
        self
    }
    /// An exact number of hash functions per group.
    pub fn hashes(mut self, k: u32) -> Self {
        self.sizing.hashes = Some(k);
        self
    }
    /// Groups (l), 1..=256 (default 32).
    pub fn groups(mut self, l: u32) -> Self {
        self.groups = l;
        self
    }

    /// Build, validating every parameter.
    pub fn try_build(self) -> Result<SpaceCodeBloomFilter> {
        if self.groups == 0 || self.groups > MAX_GROUPS {
            return Err(invalid(
                "groups",
                format!("must be in 1..={MAX_GROUPS}, got {}", self.groups),
            ));
        }
        let (m, k, n, p) = match (self.sizing.bits, self.sizing.hashes) {
            (Some(m), Some(k)) => (
                m,
                k,
                self.sizing.capacity.unwrap_or(0),
                self.sizing.fpr.unwrap_or(0.0),
            ),
            (Some(m), None) => {
                let n = self.sizing.capacity.ok_or_else(|| {
                    invalid("hashes", "give the hash count or a capacity with the bits")
                })?;
                params::check_capacity(n)?;
                (
                    m,
                    params::optimal_k(n, m),
                    n,
                    self.sizing.fpr.unwrap_or(0.0),
                )
            }
            (None, k) => {
                let n = self
                    .sizing
                    .capacity
                    .ok_or_else(|| invalid("capacity", "required"))?;
                let p = self.sizing.fpr.ok_or_else(|| invalid("fpr", "required"))?;
                params::check_capacity(n)?;
                params::check_fpr(p)?;
                let total = self.occurrences.unwrap_or(n);
                if total < n {
                    return Err(invalid(
                        "occurrences",
                        format!("{total} inserts cannot hold {n} distinct keys"),
                    ));
                }
                let pairs = params::scbf_pairs(n, total, self.groups).ceil().max(1.0) as u64;
                let f = params::scbf_group_fpr(p, self.groups);
                if f <= 0.0 || f.is_nan() {
                    return Err(invalid(
                        "fpr",
                        format!("{p} is too small for {} groups", self.groups),
                    ));
                }
                store::check_size(
                    (params::bits_asymptotic(pairs, f) / 8.0) as u64,
                    self.sizing.limit(),
                )?;
                let s = params::classic_shape(pairs, f)?;
                let (m, k) = match k {
                    None => (s.m, s.k),
                    Some(k) => {
                        // the smallest m at which this k reaches the group rate
                        params::check_hashes(k, MAX_HASHES)?;
                        let mut m = s.m;
                        while params::fpr_exact(pairs, m, k) > f {
                            m = m.checked_add(m / 64 + 1).ok_or_else(|| {
                                invalid("hashes", "no size reaches the rate with this k")
                            })?;
                            store::check_size(m / 8, self.sizing.limit())?;
                        }
                        (m, k)
                    }
                };
                // the capacity recorded is the inserts it was sized for (what `len` counts)
                (m, k, total, p)
            }
        };
        if m == 0 {
            return Err(invalid("bits", "must be at least 1"));
        }
        params::check_hashes(k, MAX_HASHES)?;
        let words = usize::try_from(m.div_ceil(64))
            .map_err(|_| invalid("bits", "too large for this platform"))?;
        Ok(SpaceCodeBloomFilter {
            words: Words::zeroed(words, self.sizing.limit())?,
            m,
            k,
            groups: self.groups,
            hasher: self.sizing.key_hasher(),
            inserts: 0,
            rng: mix64(self.sizing.key_hasher().seed() as u64 ^ GOLDEN),
            ones: 0,
            capacity: n,
            target_fpr: if p > 0.0 && p < 1.0 { p } else { 0.0 },
        })
    }
}

impl SpaceCodeBloomFilter {
    /// The hasher keys go through (what [`Filter::hasher`](crate::filter::Filter::hasher) and
    /// [`Count::hasher`](crate::filter::Count::hasher) answer; inherent, so that a call
    /// needs neither trait in scope and is not ambiguous with both).
    pub fn hasher(&self) -> &KeyHasher {
        &self.hasher
    }

    /// A builder (32 groups, default hasher).
    pub fn builder() -> SpaceCodeBuilder {
        SpaceCodeBuilder {
            sizing: Sizing::default(),
            occurrences: None,
            groups: DEFAULT_GROUPS,
        }
    }

    /// Sized for `n` distinct keys, each inserted once, at membership false-positive rate
    /// `p` (the builder takes the expected inserts, repeats included, as well).
    ///
    /// ```
    /// use bloomery::{Filter, SpaceCodeBloomFilter};
    ///
    /// # fn main() -> bloomery::Result<()> {
    /// let mut f = SpaceCodeBloomFilter::try_new(1000, 0.01)?;
    /// f.insert("flow-7");
    /// assert!(f.contains("flow-7"));
    /// # Ok(()) }
    /// ```
    pub fn try_new(n: u64, p: f64) -> Result<Self> {
        Self::builder().capacity(n).fpr(p).try_build()
    }

    /// An exact shape: `m` bits, `k` hashes per group, `l` groups.
    pub fn try_with_shape(m: u64, k: u32, groups: u32) -> Result<Self> {
        Self::builder().bits(m).hashes(k).groups(groups).try_build()
    }

    /// Bits (m).
    pub fn bits(&self) -> u64 {
        self.m
    }

    /// Hash functions per group (k).
    pub fn hashes(&self) -> u32 {
        self.k
    }

    /// Groups (l).
    pub fn groups(&self) -> u32 {
        self.groups
    }

    /// All inserts so far.
    pub fn total_inserts(&self) -> u64 {
        self.inserts
    }

    /// The raw words.
    pub fn as_words(&self) -> &[u64] {
        self.words.as_slice()
    }

    /// The k indices of group `g` of a key.
    fn group(&self, h: Hashed, g: u32) -> impl Iterator<Item = u64> {
        let m = self.m;
        h.sequence(self.k * (g + 1))
            .skip((self.k * g) as usize)
            .map(move |x| reduce(x, m))
    }

    /// Groups of a pre-hashed key whose k bits are all set (θ).
    pub fn matched_groups_hashed(&self, h: Hashed) -> u32 {
        let (w, m, k) = (self.words.as_slice(), self.m, self.k as usize);
        let mut seq = h.sequence(self.k * self.groups);
        let mut matched = 0;
        for _ in 0..self.groups {
            // consume all k values of the group, so the next group starts at the right place
            let all = seq
                .by_ref()
                .take(k)
                .fold(true, |acc, x| acc & store::get_bit(w, reduce(x, m)));
            matched += u32::from(all);
        }
        matched
    }

    /// The probability that a group of k bits is all set by others, from the fill: `(ones/m)^k`.
    pub fn group_fpr(&self) -> f64 {
        params::fpr_from_fill(self.ones, self.m, self.k)
    }
}

/// The shared [`Builder`] sizing goes to this structure's own builder (bits: the number of
/// counters or bits; every other setting at its default).
impl Build for SpaceCodeBloomFilter {
    type Options = ();
    fn build(b: &Builder<Self>) -> Result<Self> {
        SpaceCodeBloomFilter::builder().sizing(b.sizing).try_build()
    }
}

impl Filter for SpaceCodeBloomFilter {
    fn hasher(&self) -> &KeyHasher {
        &self.hasher
    }

    /// Set the bits of one uniformly chosen group; true when one of them was zero.
    fn insert_hashed(&mut self, h: Hashed) -> bool {
        self.rng = self.rng.wrapping_add(GOLDEN);
        let g = reduce(mix64(self.rng), u64::from(self.groups)) as u32;
        let mut idx = [0u64; MAX_HASHES as usize];
        for (slot, i) in idx.iter_mut().zip(self.group(h, g)) {
            *slot = i;
        }
        let k = self.k as usize;
        let w = self.words.as_mut_slice();
        let mut new = false;
        for &i in &idx[..k] {
            let fresh = store::set_bit(w, i);
            self.ones += u64::from(fresh);
            new |= fresh;
        }
        self.inserts = self.inserts.saturating_add(1);
        new
    }

    /// True when at least one group matches.
    fn contains_hashed(&self, h: Hashed) -> bool {
        self.matched_groups_hashed(h) > 0
    }

    /// All inserts (an SCBF cannot tell repeats from new keys).
    fn len(&self) -> u64 {
        self.inserts
    }
}

impl Count for SpaceCodeBloomFilter {
    fn hasher(&self) -> &KeyHasher {
        &self.hasher
    }

    /// The maximum-likelihood count (see the module docs); 0 when no group matches.
    fn count_hashed(&self, h: Hashed) -> u64 {
        let theta = self.matched_groups_hashed(h);
        if theta == 0 {
            return 0;
        }
        params::scbf_mle(theta, self.groups, self.group_fpr())
    }
}

impl Stats for SpaceCodeBloomFilter {
    fn bit_len(&self) -> u64 {
        self.m
    }
    fn count_ones(&self) -> u64 {
        self.ones
    }
    fn hash_count(&self) -> u32 {
        self.k
    }
    /// Probability that an absent key matches at least one of the l groups.
    fn current_fpr(&self) -> f64 {
        1.0 - (1.0 - self.group_fpr()).powi(self.groups as i32)
    }
    fn capacity(&self) -> u64 {
        self.capacity
    }
    fn target_fpr(&self) -> f64 {
        self.target_fpr
    }
}

impl Persist for SpaceCodeBloomFilter {
    const KIND: Kind = Kind::SpaceCode;

    fn encode_parts(&self) -> (Header, Payload<'_>) {
        let mut h = Header::new(Kind::SpaceCode, self.hasher);
        h.items = self.inserts;
        h.capacity = self.capacity;
        h.target_fpr = self.target_fpr;
        h.params = ParamWriter::new()
            .u64(self.m)
            .u32(self.k)
            .u32(self.groups)
            .u64(self.rng)
            .finish();
        (h, Payload::new(vec![&self.words]))
    }

    fn decode_from(d: &Decoded, src: format::Source<'_>, limit: u64) -> Result<Self> {
        let mut r = ParamReader::new(&d.header.params);
        let m = r.u64()?;
        let k = r.u32()?;
        let groups = r.u32()?;
        let rng = r.u64()?;
        r.finish()?;
        if m == 0 || k == 0 || k > MAX_HASHES || groups == 0 || groups > MAX_GROUPS {
            return Err(inconsistent(format!(
                "space-code shape m={m} k={k} l={groups}"
            )));
        }
        let words = usize::try_from(m.div_ceil(64)).map_err(|_| inconsistent("m too large"))?;
        format::check_payload(d, words)?;
        let w = src.words(d.payload_offset, words, limit)?;
        if m % 64 != 0 && w.as_slice()[words - 1] >> (m % 64) != 0 {
            return Err(inconsistent("bits set beyond m"));
        }
        let ones = store::count_ones(w.as_slice());
        Ok(Self {
            words: w,
            m,
            k,
            groups,
            ones,
            hasher: d.header.hasher,
            inserts: d.header.items,
            rng,
            capacity: d.header.capacity,
            target_fpr: d.header.target_fpr,
        })
    }
}

impl<K: crate::hash::Key> Extend<K> for SpaceCodeBloomFilter {
    fn extend<I: IntoIterator<Item = K>>(&mut self, iter: I) {
        for k in iter {
            self.insert(&k);
        }
    }
}

impl crate::multisets::counter_kind::CounterKind for SpaceCodeBloomFilter {
    const CAPABILITIES: Capabilities = Capabilities {
        insert: true,
        hashed: true,
        count: true,
        ..Capabilities::NONE
    };
    // `len`: every insert, repeats included.
    counting_filter_kind!(len: Self::total_inserts);
    fn remove_unsupported(&self) -> Option<crate::filter::RemoveError> {
        Some(crate::filter::RemoveError::Unsupported(
            "a space-code filter (scbf) cannot delete: its bits are shared by keys and groups",
        ))
    }
    fn describe(&self, i: &mut crate::multisets::counter_kind::CounterInfo) {
        i.capacity = self.capacity();
        (i.target_fpr, i.current_fpr) = crate::multisets::counter_kind::rates(self);
        i.hashes = Some(self.hashes());
        i.size = Some(self.bits());
        i.groups = Some(self.groups());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn mle_count_tracks_truth() {
        let mut f = SpaceCodeBloomFilter::try_with_shape(1 << 16, 3, 32).unwrap();
        for (key, n) in [(1u32, 1u64), (2, 5), (3, 20), (4, 40)] {
            for _ in 0..n {
                f.insert(&key);
            }
        }
        assert_eq!(f.count(&1u32), 1);
        assert_eq!(f.count(&999u32), 0);
        for (key, n) in [(2u32, 5.0), (3, 20.0), (4, 40.0)] {
            let est = f.count(&key) as f64;
            assert!(est > n * 0.5 && est < n * 2.0, "key {key}: {est} vs {n}");
        }
        let g = SpaceCodeBloomFilter::from_bytes(&f.to_bytes()).unwrap();
        assert_eq!(f, g);
    }

    #[test]
    fn bad_parameters() {
        assert!(SpaceCodeBloomFilter::try_with_shape(0, 3, 4).is_err());
        assert!(SpaceCodeBloomFilter::try_with_shape(64, 0, 4).is_err());
        assert!(SpaceCodeBloomFilter::try_with_shape(64, 3, 0).is_err());
        assert!(SpaceCodeBloomFilter::try_with_shape(64, 3, 257).is_err());
        assert!(SpaceCodeBloomFilter::builder()
            .capacity(0)
            .fpr(0.1)
            .try_build()
            .is_err());
        let f = SpaceCodeBloomFilter::builder()
            .capacity(1000)
            .fpr(0.01)
            .try_build()
            .unwrap();
        assert_eq!(f.groups(), DEFAULT_GROUPS);
    }

    /// Absent keys that match at least one group, out of `trials`.
    fn measured_fpr(f: &SpaceCodeBloomFilter, trials: u64) -> f64 {
        let hits = (0..trials).filter(|i| f.contains(&(u64::MAX - i))).count();
        hits as f64 / trials as f64
    }

    /// `-p` is the membership rate of the whole structure: at capacity an absent key matches
    /// some group at rate p (not l·p), and the structure's own estimate says so.
    #[test]
    fn fpr_is_the_membership_rate_at_capacity() {
        let (n, p, trials) = (5_000u64, 0.02, 50_000u64);
        let mut f = SpaceCodeBloomFilter::builder()
            .capacity(n)
            .fpr(p)
            .seed(3)
            .try_build()
            .unwrap();
        for i in 0..n {
            f.insert(&i);
        }
        let measured = measured_fpr(&f, trials);
        // binomial: 5 standard deviations of the measured rate around p
        let tol = 5.0 * (p * (1.0 - p) / trials as f64).sqrt();
        assert!((measured - p).abs() <= tol, "measured {measured} vs {p}");
        let now = f.current_fpr();
        assert!((now - p).abs() <= 0.1 * p, "current_fpr {now} vs {p}");
        assert!((measured / now - 1.0).abs() < 0.25, "{measured} vs {now}");
    }

    /// With repeats, the inserts N size the structure too: 2,000 keys inserted 16,000
    /// times (a skewed stream) still stay under p, and the recorded capacity is N.
    #[test]
    fn occurrences_size_for_repeats() {
        let (n, total, p, trials) = (2_000u64, 16_000u64, 0.02, 50_000u64);
        let mut f = SpaceCodeBloomFilter::builder()
            .capacity(n)
            .occurrences(total)
            .fpr(p)
            .seed(5)
            .try_build()
            .unwrap();
        assert_eq!(f.capacity(), total);
        // key i gets about total/(i+1)/H_n inserts (Zipf), at least one each
        let h: f64 = (1..=n).map(|i| 1.0 / i as f64).sum();
        let mut inserted = 0u64;
        for i in 0..n {
            let c = ((total as f64 / h / (i + 1) as f64).round() as u64).max(1);
            for _ in 0..c {
                f.insert(&i);
            }
            inserted += c;
        }
        assert!(inserted.abs_diff(total) < total / 10, "{inserted}");
        let measured = measured_fpr(&f, trials);
        let tol = 5.0 * (p * (1.0 - p) / trials as f64).sqrt();
        assert!(measured <= p + tol, "measured {measured} vs {p}");
        // evenly spread repeats are the worst case the sizing covers
        let mut g = SpaceCodeBloomFilter::builder()
            .capacity(n)
            .occurrences(total)
            .fpr(p)
            .seed(5)
            .try_build()
            .unwrap();
        for r in 0..total {
            g.insert(&(r % n));
        }
        let measured = measured_fpr(&g, trials);
        assert!(
            (measured - p).abs() <= tol + 0.1 * p,
            "measured {measured} vs {p}"
        );
        assert!(SpaceCodeBloomFilter::builder()
            .capacity(10)
            .occurrences(5)
            .fpr(0.01)
            .try_build()
            .is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]
        #[test]
        fn no_false_negatives(keys in proptest::collection::vec(0u16..100, 1..200)) {
            let mut f = SpaceCodeBloomFilter::try_with_shape(1 << 14, 3, 8).unwrap();
            for k in &keys {
                f.insert(k);
            }
            let f = SpaceCodeBloomFilter::from_bytes(&f.to_bytes()).unwrap();
            for k in &keys {
                prop_assert!(f.contains(k));
                prop_assert!(f.count(k) >= 1);
            }
        }
    }
}
