//! The Iterative Bloom Filter: [`IterativeBloomFilter`] (its docs say which paper it follows and
//! when to pick it).

use crate::error::{inconsistent, invalid, Result};
use crate::filter::{Build, Builder, Count, Filter, Sizing, Stats};
use crate::hash::{reduce, Hashed, Key, KeyHasher};
use crate::io::format::{self, Decoded, Header, Kind, ParamReader, ParamWriter, Payload, Persist};
use crate::kind::Capabilities;
use crate::multisets::counter_kind::counting_filter_kind;
use crate::params;
use crate::store::{self, Words};

/// Largest k accepted.
pub const MAX_HASHES: u32 = 64;

/// The longest run a count query or a repeat insert follows (the sequence is cut there, which
/// caps one key's count at this value plus one).
pub const MAX_RUN: u64 = 1 << 24;

/// Positions `h_{k+1}, h_{k+2}, …` of a key (at most [`MAX_RUN`] of them, and at most m).
fn tail(h: Hashed, k: u32, m: u64) -> impl Iterator<Item = u64> {
    let len = u64::from(k) + MAX_RUN.min(m);
    h.sequence(u32::try_from(len).unwrap_or(u32::MAX))
        .skip(k as usize)
        .map(move |x| reduce(x, m))
}

/// The Iterative Bloom Filter (IBF; Matsumoto, Hazeyama & Kadobayashi, in Japanese, see
/// docs/PAPERS.md): a counting filter with no counters.
///
/// One array of m bits. Inserting x sets its k positions as in a plain filter. If all k were
/// already one (a repeat, or a false positive the filter cannot tell from one), it keeps
/// iterating the key's hash sequence — `h_{k+1}, h_{k+2}, …`, the same enhanced
/// double-hashing sequence ([`hash`](crate::KeyHasher)) continued past the first k — up to the first
/// position holding zero, and sets that one bit. Each repeat costs one bit; nothing can
/// overflow. The count query is zero when one of the first k positions is zero, and otherwise
/// `1 + j`, j the run of ones from `h_{k+1}` on: never below the true count, because every
/// repeat extended exactly that run.
///
/// The run over-counts where positions were already one by collision; the paper's estimate
/// of the true count (Matsumoto, Hazeyama & Kadobayashi eq. 9, [`params::ibf_count_estimate`]) corrects the observed count
/// with the **distinctness rate** α = distinct inputs / all inputs, which the filter tracks
/// (an insert is distinct when it set one of its first k bits). The false-positive rate with
/// repeats is `(1 - exp(-(α·n·k + (1-α)·n)/m))^k` (Matsumoto, Hazeyama & Kadobayashi eq. 10, [`params::ibf_fpr`]).
///
/// Repeats keep adding bits, so the false-positive rate rises with them; as the paper advises
/// (Matsumoto, Hazeyama & Kadobayashi §5.1, §5.6.3), a **cap on the total counted repeats** can be set
/// ([`IterativeBuilder::repeat_cap`]), after which repeats are still tallied in α but set no
/// more bits: counting stops, membership stays exact.
///
/// **No deletion.** The membership bits and the counting bits live in the same array: the run
/// bits of one key are the membership bits of others, and which bits a repeat set is not
/// recorded, so clearing any bit could erase another key (a false negative). The paper's use —
/// per-time-window traffic digests for IP traceback — drops whole filters instead; so
/// [`IterativeBloomFilter`] does not implement [`crate::Remove`].
///
/// **When to pick it:** approximate counts where most inputs are distinct and counts are
/// small or very skewed, without sizing counters for the largest count in advance (a counting
/// filter must, Matsumoto, Hazeyama & Kadobayashi Table 5, [`params::max_count_for_skew`]).
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{Count, Filter, IterativeBloomFilter};
///
/// let mut f = IterativeBloomFilter::try_new(1000, 0.01)?;
/// for _ in 0..3 {
///     f.insert("flow-7");
/// }
/// f.insert("flow-8");
/// assert!(f.count("flow-7") >= 3); // never below the true count
/// assert!(f.count("flow-8") >= 1);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct IterativeBloomFilter {
    words: Words,
    m: u64,
    k: u32,
    hasher: KeyHasher,
    inserts: u64,
    distinct: u64,
    repeats_counted: u64,
    repeat_cap: u64,
    capacity: u64,
    target_fpr: f64,
}

/// Builder for [`IterativeBloomFilter`].
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{Count, Filter, IterativeBloomFilter};
///
/// // sized for 1,000 distinct flows at 1%, counts capped at 100 repeats
/// let mut f = IterativeBloomFilter::builder().capacity(1000).fpr(0.01).repeat_cap(100).try_build()?;
/// f.insert("flow-1");
/// f.insert("flow-1");
/// assert!(f.count("flow-1") >= 2);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct IterativeBuilder {
    sizing: Sizing,
    alpha: f64,
    repeat_cap: u64,
}

impl IterativeBuilder {
    crate::filter::sizing_setters!();

    /// Expected distinctness rate α in (0, 1] used for sizing (default 1: all distinct,
    /// the safe choice: repeats set fewer bits than distinct inputs).
    pub fn distinctness(mut self, alpha: f64) -> Self {
        self.alpha = alpha;
        self
    }
    /// An exact number of bits.
    pub fn bits(mut self, m: u64) -> Self {
        self.sizing.bits = Some(m);
        self
    }
    /// An exact number of hash functions.
    pub fn hashes(mut self, k: u32) -> Self {
        self.sizing.hashes = Some(k);
        self
    }
    /// Stop counting after this many repeats in total (Matsumoto, Hazeyama & Kadobayashi §5.6.3; default: never stop).
    pub fn repeat_cap(mut self, cap: u64) -> Self {
        self.repeat_cap = cap;
        self
    }

    /// Build, validating every parameter.
    pub fn try_build(self) -> Result<IterativeBloomFilter> {
        if !(self.alpha > 0.0 && self.alpha <= 1.0) {
            return Err(invalid(
                "distinctness",
                format!("must be in (0, 1], got {}", self.alpha),
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
                let distinct = ((n as f64 * self.alpha).ceil() as u64).max(1);
                (
                    m,
                    params::optimal_k(distinct, m),
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
                let bits_set = params::ibf_bits_set(n, 1, self.alpha).max(1.0);
                store::check_size(
                    (params::bits_asymptotic(bits_set as u64, p) / 8.0) as u64,
                    self.sizing.limit(),
                )?;
                // repeats past the cap set no bit: size for the ones that can
                let distinct = ((n as f64 * self.alpha).ceil() as u64).clamp(1, n);
                let repeats = (n - distinct).min(self.repeat_cap);
                let (m, k) = ibf_shape(distinct, repeats, p, k)?;
                (m, k, n, p)
            }
        };
        if m == 0 {
            return Err(invalid("bits", "must be at least 1"));
        }
        params::check_hashes(k, MAX_HASHES)?;
        let words = usize::try_from(m.div_ceil(64))
            .map_err(|_| invalid("bits", "too large for this platform"))?;
        Ok(IterativeBloomFilter {
            words: Words::zeroed(words, self.sizing.limit())?,
            m,
            k,
            hasher: self.sizing.key_hasher(),
            inserts: 0,
            distinct: 0,
            repeats_counted: 0,
            repeat_cap: self.repeat_cap,
            capacity: n,
            target_fpr: if p > 0.0 && p < 1.0 { p } else { 0.0 },
        })
    }
}

/// The smallest m (over k = 1..=32, or the given k) whose rate after `distinct` distinct
/// inputs and `repeats` counted repeats is at most `p` in any order
/// ([`params::ibf_fpr_bound`]).
fn ibf_shape(distinct: u64, repeats: u64, p: f64, fixed_k: Option<u32>) -> Result<(u64, u32)> {
    let ks: Vec<u32> = match fixed_k {
        Some(k) => {
            params::check_hashes(k, MAX_HASHES)?;
            vec![k]
        }
        None => (1..=32).collect(),
    };
    let mut best: Option<(u64, u32)> = None;
    for k in ks {
        let (mut lo, mut hi) = (1u64, 1u64 << 60);
        if params::ibf_fpr_bound(distinct, repeats, hi, k) > p {
            continue;
        }
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if params::ibf_fpr_bound(distinct, repeats, mid, k) <= p {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        if !matches!(best, Some((m, _)) if m <= lo) {
            best = Some((lo, k));
        }
    }
    best.ok_or_else(|| invalid("fpr", format!("no shape reaches {}", params::show(p))))
}

impl IterativeBloomFilter {
    /// Move the structure's heap allocations with `mv` (for an allocator that defragments by
    /// moving allocations, as the Redis module's defrag callback does): the bit array. Arrays in a
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
        unsafe { self.words.relocate(mv) };
    }

    /// The hasher keys go through (what [`Filter::hasher`](crate::filter::Filter::hasher) and
    /// [`Count::hasher`](crate::filter::Count::hasher) answer; inherent, so that a call
    /// needs neither trait in scope and is not ambiguous with both).
    pub fn hasher(&self) -> &KeyHasher {
        &self.hasher
    }

    /// A builder.
    pub fn builder() -> IterativeBuilder {
        IterativeBuilder {
            sizing: Sizing::default(),
            alpha: 1.0,
            repeat_cap: u64::MAX,
        }
    }

    /// Sized for `n` inputs at rate `p` assuming all distinct, no repeat cap.
    pub fn try_new(n: u64, p: f64) -> Result<Self> {
        Self::builder().capacity(n).fpr(p).try_build()
    }

    /// An exact shape: `m` bits, `k` hashes.
    pub fn try_with_shape(m: u64, k: u32) -> Result<Self> {
        Self::builder().bits(m).hashes(k).try_build()
    }

    /// Bits (m).
    pub fn bits(&self) -> u64 {
        self.m
    }

    /// Hash functions (k).
    pub fn hashes(&self) -> u32 {
        self.k
    }

    /// All inputs so far (n), repeats included.
    pub fn total_inserts(&self) -> u64 {
        self.inserts
    }

    /// Inputs that set one of their first k bits (distinct as far as the filter can tell).
    pub fn distinct_inserts(&self) -> u64 {
        self.distinct
    }

    /// The distinctness rate α = distinct / all inputs (1 when empty).
    pub fn distinctness(&self) -> f64 {
        if self.inserts == 0 {
            1.0
        } else {
            self.distinct as f64 / self.inserts as f64
        }
    }

    /// Repeats that set a bit (at most the cap).
    pub fn repeats_counted(&self) -> u64 {
        self.repeats_counted
    }

    /// The cap on counted repeats (`u64::MAX`: none).
    pub fn repeat_cap(&self) -> u64 {
        self.repeat_cap
    }

    /// True once the cap is reached: repeats no longer set bits.
    pub fn counting_stopped(&self) -> bool {
        self.repeats_counted >= self.repeat_cap
    }

    /// The raw words.
    pub fn as_words(&self) -> &[u64] {
        self.words.as_slice()
    }

    /// The paper's estimate of a key's true count (Matsumoto, Hazeyama & Kadobayashi eq. 9) from its observed count, with the
    /// tracked distinctness rate.
    pub fn estimate_hashed(&self, h: Hashed) -> f64 {
        params::ibf_count_estimate(
            self.count_hashed(h),
            self.inserts,
            self.m,
            self.k,
            self.distinctness(),
        )
    }

    /// [`estimate_hashed`](Self::estimate_hashed) for a key.
    pub fn estimate<K: Key + ?Sized>(&self, key: &K) -> f64 {
        self.estimate_hashed(self.hasher.hash(key))
    }

    /// The false-positive rate by eq. 10 at the current n and α.
    pub fn model_fpr(&self) -> f64 {
        params::ibf_fpr(self.inserts, self.m, self.k, self.distinctness())
    }
}

/// The shared [`Builder`] sizing goes to this structure's own builder (bits: the number of
/// counters or bits; every other setting at its default).
impl Build for IterativeBloomFilter {
    type Options = ();
    fn build(b: &Builder<Self>) -> Result<Self> {
        IterativeBloomFilter::builder().sizing(b.sizing).try_build()
    }
}

impl Filter for IterativeBloomFilter {
    fn hasher(&self) -> &KeyHasher {
        &self.hasher
    }

    /// Insert; a repeat sets the first zero bit past its k positions (unless counting has
    /// stopped). True when the input was distinct.
    fn insert_hashed(&mut self, h: Hashed) -> bool {
        let mut new = false;
        {
            let w = self.words.as_mut_slice();
            for i in h.indices(self.k, self.m) {
                new |= store::set_bit(w, i);
            }
        }
        self.inserts = self.inserts.saturating_add(1);
        if new {
            self.distinct = self.distinct.saturating_add(1);
        } else if self.repeats_counted < self.repeat_cap {
            let w = self.words.as_mut_slice();
            if let Some(i) = tail(h, self.k, self.m).find(|&i| !store::get_bit(w, i)) {
                store::set_bit(w, i);
                self.repeats_counted += 1;
            }
        }
        new
    }

    fn contains_hashed(&self, h: Hashed) -> bool {
        let w = self.words.as_slice();
        h.indices(self.k, self.m).all(|i| store::get_bit(w, i))
    }

    /// Distinct inputs.
    fn len(&self) -> u64 {
        self.distinct
    }
}

impl Count for IterativeBloomFilter {
    fn hasher(&self) -> &KeyHasher {
        &self.hasher
    }

    /// The observed count `1 + j` (0 when absent), j the run of ones past the first k
    /// positions: never below the true count while counting has not stopped (by the cap, or
    /// in a filter so full that a repeat found no zero within `MAX_RUN` positions).
    fn count_hashed(&self, h: Hashed) -> u64 {
        if !self.contains_hashed(h) {
            return 0;
        }
        let w = self.words.as_slice();
        1 + tail(h, self.k, self.m)
            .take_while(|&i| store::get_bit(w, i))
            .count() as u64
    }
}

impl Stats for IterativeBloomFilter {
    fn bit_len(&self) -> u64 {
        self.m
    }
    /// Counted a step at a time, a mapped file's pages dropped behind the pass.
    fn count_ones(&self) -> u64 {
        store::count_ones_behind(&self.words)
    }
    fn hash_count(&self) -> u32 {
        self.k
    }
    fn current_fpr(&self) -> f64 {
        params::fpr_from_fill(self.count_ones(), self.m, self.k)
    }
    fn capacity(&self) -> u64 {
        self.capacity
    }
    fn target_fpr(&self) -> f64 {
        self.target_fpr
    }
}

impl Persist for IterativeBloomFilter {
    const KIND: Kind = Kind::Iterative;

    fn encode_parts(&self) -> (Header, Payload<'_>) {
        let mut h = Header::new(Kind::Iterative, self.hasher);
        h.items = self.distinct;
        h.capacity = self.capacity;
        h.target_fpr = self.target_fpr;
        h.params = ParamWriter::new()
            .u64(self.m)
            .u32(self.k)
            .u64(self.inserts)
            .u64(self.repeats_counted)
            .u64(self.repeat_cap)
            .finish();
        (h, Payload::new(vec![&self.words]))
    }

    fn decode_from(d: &Decoded, src: format::Source<'_>, limit: u64) -> Result<Self> {
        let mut r = ParamReader::new(&d.header.params);
        let m = r.u64()?;
        let k = r.u32()?;
        let inserts = r.u64()?;
        let repeats_counted = r.u64()?;
        let repeat_cap = r.u64()?;
        r.finish()?;
        let distinct = d.header.items;
        if m == 0 || k == 0 || k > MAX_HASHES {
            return Err(inconsistent(format!("iterative shape m={m} k={k}")));
        }
        if distinct > inserts
            || repeats_counted > inserts - distinct
            || repeats_counted > repeat_cap
        {
            return Err(inconsistent(format!(
                "iterative counts: {inserts} inputs, {distinct} distinct, {repeats_counted} \
                 repeats counted, cap {repeat_cap}"
            )));
        }
        let words = usize::try_from(m.div_ceil(64)).map_err(|_| inconsistent("m too large"))?;
        format::check_payload(d, words)?;
        let w = src.words(d.payload_offset, words, limit)?;
        if m % 64 != 0 && w.as_slice()[words - 1] >> (m % 64) != 0 {
            return Err(inconsistent("bits set beyond m"));
        }
        Ok(Self {
            words: w,
            m,
            k,
            hasher: d.header.hasher,
            inserts,
            distinct,
            repeats_counted,
            repeat_cap,
            capacity: d.header.capacity,
            target_fpr: d.header.target_fpr,
        })
    }
}

impl<K: crate::hash::Key> Extend<K> for IterativeBloomFilter {
    fn extend<I: IntoIterator<Item = K>>(&mut self, iter: I) {
        for k in iter {
            self.insert(&k);
        }
    }
}

impl crate::multisets::counter_kind::CounterKind for IterativeBloomFilter {
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
            "an iterative filter (ibf) cannot delete: its bits are shared by keys and repeats",
        ))
    }
    fn describe(&self, i: &mut crate::multisets::counter_kind::CounterInfo) {
        i.capacity = self.capacity();
        (i.target_fpr, i.current_fpr) = crate::multisets::counter_kind::rates(self);
        i.hashes = Some(self.hashes());
        i.size = Some(self.bits());
        i.distinctness = Some(self.distinctness());
        i.counting_stopped = Some(self.counting_stopped());
        i.repeats_counted = Some(self.repeats_counted());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// Sized for its inputs and their distinctness, the filter meets its rate on a skewed
    /// stream with repeats (10,000 keys, 40,000 inputs, Zipf counts) in any order: at the
    /// rate when the repeats come last (each sets a new bit), below it when they come first;
    /// sized as if every input were distinct it overfills, and says so.
    #[test]
    fn sized_for_repeats_meets_the_rate() {
        let (distinct, total, p) = (10_000u64, 40_000u64, 0.02);
        let h: f64 = (1..=distinct).map(|i| 1.0 / i as f64).sum();
        let counts: Vec<u64> = (0..distinct)
            .map(|i| ((total as f64 / h / (i + 1) as f64).round() as u64).max(1))
            .collect();
        let n: u64 = counts.iter().sum();
        // every key once, then the repeats (the worst order)
        let repeats_last = |f: &mut IterativeBloomFilter| {
            for i in 0..distinct {
                f.insert(&i);
            }
            for (i, &c) in counts.iter().enumerate() {
                for _ in 1..c {
                    f.insert(&(i as u64));
                }
            }
        };
        // each key's inserts together, the most frequent first
        let repeats_first = |f: &mut IterativeBloomFilter| {
            for (i, &c) in counts.iter().enumerate() {
                for _ in 0..c {
                    f.insert(&(i as u64));
                }
            }
        };
        let trials = 50_000u64;
        let measured = |f: &IterativeBloomFilter| {
            (0..trials).filter(|i| f.contains(&(u64::MAX - i))).count() as f64 / trials as f64
        };
        let tol = 5.0 * (p * (1.0 - p) / trials as f64).sqrt();
        let sized = |cap: u64| {
            IterativeBloomFilter::builder()
                .capacity(n)
                .distinctness(distinct as f64 / n as f64)
                .repeat_cap(cap)
                .fpr(p)
                .try_build()
                .unwrap()
        };
        let mut f = sized(u64::MAX);
        repeats_last(&mut f);
        let got = measured(&f);
        assert!(
            (got - p).abs() <= tol,
            "repeats last: measured {got} vs {p}"
        );
        assert!((f.current_fpr() - p).abs() < 0.1 * p, "{}", f.current_fpr());
        let mut f = sized(u64::MAX);
        repeats_first(&mut f);
        let got = measured(&f);
        assert!(got <= p + tol, "repeats first: measured {got} vs {p}");
        // sized for distinct inputs only, the same stream goes far past the rate
        let mut g = IterativeBloomFilter::try_new(distinct, p).unwrap();
        repeats_last(&mut g);
        assert!(measured(&g) > 5.0 * p && g.current_fpr() > 5.0 * p);
        // a repeat cap bounds the bits repeats can set, and the sizing counts on it
        let cap = (n - distinct) / 10;
        let mut c = sized(cap);
        assert!(c.bits() < sized(u64::MAX).bits());
        repeats_last(&mut c);
        let got = measured(&c);
        assert!((got - p).abs() <= tol, "capped: measured {got} vs {p}");
    }

    #[test]
    fn counts_runs_and_tracks_distinctness() {
        let mut f = IterativeBloomFilter::try_new(1000, 0.01).unwrap();
        for _ in 0..7 {
            f.insert("a");
        }
        f.insert("b");
        assert_eq!(f.count("b"), 1);
        assert!(f.count("a") >= 7);
        assert_eq!(f.count("never"), 0);
        assert_eq!(f.total_inserts(), 8);
        assert_eq!(f.distinct_inserts(), 2);
        assert!((f.distinctness() - 0.25).abs() < 1e-12);
        let e = f.estimate("a");
        assert!(e > 6.0 && e <= f.count("a") as f64);
        assert!(f.model_fpr() > 0.0);
    }

    #[test]
    fn cap_stops_counting() {
        let mut f = IterativeBloomFilter::builder()
            .bits(4096)
            .hashes(4)
            .repeat_cap(3)
            .try_build()
            .unwrap();
        for _ in 0..10 {
            f.insert("a");
        }
        assert!(f.counting_stopped());
        assert_eq!(f.repeats_counted(), 3);
        assert_eq!(f.count("a"), 4);
        assert_eq!(f.total_inserts(), 10);
        assert!(f.contains("a"));
    }

    #[test]
    fn roundtrip_and_bad_parameters() {
        let mut f = IterativeBloomFilter::builder()
            .capacity(500)
            .fpr(0.01)
            .distinctness(0.5)
            .seed(3)
            .try_build()
            .unwrap();
        assert!(params::ibf_fpr(500, f.bits(), f.hashes(), 0.5) <= 0.01);
        for i in 0..500u32 {
            f.insert(&(i % 250));
        }
        let g = IterativeBloomFilter::from_bytes(&f.to_bytes()).unwrap();
        assert_eq!(f, g);
        assert!(IterativeBloomFilter::try_with_shape(0, 3).is_err());
        assert!(IterativeBloomFilter::try_with_shape(64, 0).is_err());
        assert!(IterativeBloomFilter::try_new(0, 0.1).is_err());
        assert!(IterativeBloomFilter::builder()
            .capacity(10)
            .fpr(0.1)
            .distinctness(0.0)
            .try_build()
            .is_err());
        assert!(IterativeBloomFilter::builder()
            .capacity(10)
            .fpr(0.1)
            .distinctness(f64::NAN)
            .try_build()
            .is_err());
    }

    #[test]
    fn a_full_filter_terminates() {
        let mut f = IterativeBloomFilter::try_with_shape(16, 2).unwrap();
        for i in 0..200u32 {
            f.insert(&(i % 3));
        }
        assert!(f.count(&0u32) >= 1);
    }

    #[test]
    fn fpr_within_three_sigma_of_eq_10() {
        let mut f = IterativeBloomFilter::try_with_shape(1 << 15, 4).unwrap();
        for i in 0..4000u32 {
            f.insert(&(i / 2)); // every key twice: α = 0.5
        }
        let want = f.model_fpr();
        let q = 40_000u32;
        let got = (1_000_000..1_000_000 + q).filter(|i| f.contains(i)).count() as f64 / q as f64;
        let sigma = (want * (1.0 - want) / q as f64).sqrt();
        assert!(
            (got - want).abs() < 3.0 * sigma,
            "measured {got}, eq. 10 {want}"
        );
        // the shared builder works too
        let g: IterativeBloomFilter = Builder::new().capacity(100).fpr(0.01).try_build().unwrap();
        assert!(g.bits() > 0);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn no_false_negatives_counts_never_low(keys in proptest::collection::vec(0u8..40, 1..300)) {
            let mut f = IterativeBloomFilter::try_with_shape(8192, 4).unwrap();
            let mut truth: HashMap<u8, u64> = HashMap::new();
            for k in &keys {
                f.insert(k);
                *truth.entry(*k).or_default() += 1;
            }
            let f = IterativeBloomFilter::from_bytes(&f.to_bytes()).unwrap();
            for (k, c) in &truth {
                prop_assert!(f.contains(k));
                prop_assert!(f.count(k) >= *c);
            }
        }
    }
}
