//! The spectral Bloom filter: [`SpectralBloomFilter`] (its docs say which paper it follows and when
//! to pick it).

use crate::counters::{self, Counters};
use crate::error::{inconsistent, invalid, Result};
use crate::filter::{Build, Builder, Count, Filter, Remove, RemoveError, Sizing};
use crate::hash::{Hashed, KeyHasher};
use crate::io::format::{self, Decoded, Header, Kind, ParamReader, ParamWriter, Payload, Persist};
use crate::kind::Capabilities;
use crate::multisets::counter_kind::counting_filter_kind;
use crate::params;
use crate::store;

/// Largest k accepted.
pub const MAX_HASHES: u32 = 64;

/// Default counter width in bits.
pub const DEFAULT_COUNTER_WIDTH: u32 = 16;

/// How a spectral filter updates and answers (see the [`SpectralBloomFilter`] docs).
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{Count, Filter, SpectralBloomFilter};
/// use bloomery::builders::SpectralMethod;
///
/// // Minimal Increase raises only the smallest counters: tighter counts, no deletion
/// let mut f = SpectralBloomFilter::try_new(1000, 0.01, SpectralMethod::MinimalIncrease)?;
/// f.insert("x");
/// f.insert("x");
/// assert_eq!(f.count("x"), 2);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum SpectralMethod {
    /// Minimum Selection.
    MinimumSelection = 0,
    /// Minimal Increase.
    MinimalIncrease = 1,
    /// Recurring Minimum, with a secondary filter.
    RecurringMinimum = 2,
}

impl SpectralMethod {
    fn from_id(id: u8) -> Option<Self> {
        match id {
            0 => Some(Self::MinimumSelection),
            1 => Some(Self::MinimalIncrease),
            2 => Some(Self::RecurringMinimum),
            _ => None,
        }
    }

    /// A short stable name (`ms`, `mi`, `rm`).
    pub fn name(self) -> &'static str {
        match self {
            Self::MinimumSelection => "ms",
            Self::MinimalIncrease => "mi",
            Self::RecurringMinimum => "rm",
        }
    }
}

/// The spectral Bloom filter (Cohen & Matias, SIGMOD 2003; Broder & Mitzenmacher §9): a counting filter
/// whose counters estimate each key's multiplicity, with three update and query methods
/// chosen at construction ([`SpectralMethod`]):
///
/// - **Minimum Selection (MS):** insert increments all k counters; the estimate is their
///   minimum. Never below the true count (while no counter saturates); supports deletion.
/// - **Minimal Increase (MI):** insert increments only the counters equal to the current
///   minimum (the others already over-count). Much smaller errors for skewed data, and still
///   never below the truth for inserts, but **no deletion**: decrementing counters that were
///   not incremented would create false negatives, so [`Remove`] refuses with
///   [`RemoveError::Unsupported`].
/// - **Recurring Minimum (RM):** a key whose minimum counter value occurs at least twice among
///   its k counters is probably estimated exactly; keys with a *single* minimum are the likely
///   errors, and they are also recorded in a smaller **secondary filter**. Insert increments
///   the primary; if the key's minimum is not recurring, it is incremented in the secondary
///   when already there, and otherwise entered there with the primary minimum as its count.
///   Query: a recurring minimum is returned as is; otherwise the secondary's minimum when the
///   key is there (capped by the primary minimum, an upper bound too), else the primary's.
///   RM trades the never-below-truth guarantee for accuracy; deletion decrements both filters.
///
/// Counters are packed w-bit fields (`counters`, default 16 bits) that saturate and
/// are never decremented once saturated (see [`counting`](crate::CountingBloomFilter) for why); removing a key with
/// a zero counter is refused, so no false negatives are created.
///
/// **When to pick it:** per-key multiplicities of a multiset in one shared array, with
/// deletions (MS, RM) or the best accuracy for insert-only streams (MI). For guaranteed
/// (ε, δ) error bounds and merging across machines prefer [`crate::CountMinSketch`].
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{Count, Filter, Remove, SpectralBloomFilter};
/// use bloomery::builders::SpectralMethod;
///
/// let mut f = SpectralBloomFilter::try_new(1000, 0.01, SpectralMethod::MinimumSelection)?;
/// for _ in 0..5 {
///     f.insert("word");
/// }
/// assert_eq!(f.count("word"), 5);
/// f.remove("word")?;
/// assert_eq!(f.count("word"), 4);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct SpectralBloomFilter {
    primary: Counters,
    secondary: Option<Counters>,
    k: u32,
    method: SpectralMethod,
    hasher: KeyHasher,
    items: u64,
    capacity: u64,
    target_fpr: f64,
}

/// Builder for [`SpectralBloomFilter`].
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{Count, Filter, SpectralBloomFilter};
/// use bloomery::builders::SpectralMethod;
///
/// let mut f = SpectralBloomFilter::builder()
///     .capacity(1000)
///     .fpr(0.01)
///     .method(SpectralMethod::MinimalIncrease)
///     .try_build()?;
/// f.insert("x");
/// assert_eq!(f.count("x"), 1);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SpectralBuilder {
    sizing: Sizing,
    secondary: Option<u64>,
    width: u32,
    method: SpectralMethod,
}

impl SpectralBuilder {
    crate::filter::sizing_setters!();

    /// An exact number of primary counters (m).
    pub fn counters(mut self, m: u64) -> Self {
        self.sizing.bits = Some(m);
        self
    }
    /// An exact number of hash functions (k).
    pub fn hashes(mut self, k: u32) -> Self {
        self.sizing.hashes = Some(k);
        self
    }
    /// Counters in the secondary filter (Recurring Minimum only; default m/2).
    pub fn secondary_counters(mut self, m2: u64) -> Self {
        self.secondary = Some(m2);
        self
    }
    /// Bits per counter, 1..=32 (default 16).
    pub fn counter_width(mut self, w: u32) -> Self {
        self.width = w;
        self
    }
    /// The update and query method (default Minimum Selection).
    pub fn method(mut self, m: SpectralMethod) -> Self {
        self.method = m;
        self
    }

    /// Build, validating every parameter.
    pub fn try_build(self) -> Result<SpectralBloomFilter> {
        let (m, k, n, p) = match self.sizing.bits {
            Some(m) => {
                let k = match (self.sizing.hashes, self.sizing.capacity) {
                    (Some(k), _) => k,
                    (None, Some(n)) => {
                        params::check_capacity(n)?;
                        params::optimal_k(n, m)
                    }
                    (None, None) => {
                        return Err(invalid("hashes", "give the hash count or a capacity"))
                    }
                };
                (
                    m,
                    k,
                    self.sizing.capacity.unwrap_or(0),
                    self.sizing.fpr.unwrap_or(0.0),
                )
            }
            None => {
                let n = self
                    .sizing
                    .capacity
                    .ok_or_else(|| invalid("capacity", "required"))?;
                let p = self.sizing.fpr.ok_or_else(|| invalid("fpr", "required"))?;
                params::check_capacity(n)?;
                params::check_fpr(p)?;
                let bytes = params::bits_asymptotic(n, p) * f64::from(self.width.min(64)) / 8.0;
                store::check_size(bytes as u64, self.sizing.limit())?;
                let s = params::classic_shape(n, p)?;
                (s.m, self.sizing.hashes.unwrap_or(s.k), n, p)
            }
        };
        if m == 0 {
            return Err(invalid("counters", "must be at least 1"));
        }
        params::check_hashes(k, MAX_HASHES)?;
        let primary = Counters::zeroed(m, self.width, self.sizing.limit())?;
        let secondary = match self.method {
            SpectralMethod::RecurringMinimum => {
                let m2 = self.secondary.unwrap_or((m / 2).max(1));
                if m2 == 0 {
                    return Err(invalid("secondary_counters", "must be at least 1"));
                }
                Some(Counters::zeroed(m2, self.width, self.sizing.limit())?)
            }
            _ if self.secondary.is_some() => {
                return Err(invalid(
                    "secondary_counters",
                    "only the Recurring Minimum method has a secondary filter",
                ))
            }
            _ => None,
        };
        Ok(SpectralBloomFilter {
            primary,
            secondary,
            k,
            method: self.method,
            hasher: self.sizing.key_hasher(),
            items: 0,
            capacity: n,
            target_fpr: if p > 0.0 && p < 1.0 { p } else { 0.0 },
        })
    }
}

/// The k counter indices of a key in an array of m counters.
#[inline]
fn idx(h: Hashed, k: u32, m: u64) -> ([u64; MAX_HASHES as usize], usize) {
    let mut out = [0u64; MAX_HASHES as usize];
    for (slot, i) in out.iter_mut().zip(h.indices(k, m)) {
        *slot = i;
    }
    (out, k as usize)
}

fn min_of(c: &Counters, ix: &[u64]) -> u32 {
    ix.iter().map(|&i| c.get(i)).min().unwrap_or(0)
}

/// True when the minimum value sits in at least two distinct counters.
fn recurring(c: &Counters, ix: &[u64]) -> bool {
    let min = min_of(c, ix);
    let mut first = None;
    for &i in ix {
        if c.get(i) == min {
            match first {
                None => first = Some(i),
                Some(f) if f != i => return true,
                _ => {}
            }
        }
    }
    false
}

/// Decrement every listed counter that is neither zero nor saturated.
fn decrement_all(c: &mut Counters, ix: &[u64]) {
    let max = c.max_value();
    for &i in ix {
        let v = c.get(i);
        if v != 0 && v != max {
            c.set(i, v - 1);
        }
    }
}

impl SpectralBloomFilter {
    /// The hasher keys go through (what [`Filter::hasher`](crate::filter::Filter::hasher) and
    /// [`Count::hasher`](crate::filter::Count::hasher) answer; inherent, so that a call
    /// needs neither trait in scope and is not ambiguous with both).
    pub fn hasher(&self) -> &KeyHasher {
        &self.hasher
    }

    /// A builder (Minimum Selection, 16-bit counters, default hasher).
    pub fn builder() -> SpectralBuilder {
        SpectralBuilder {
            sizing: Sizing::default(),
            secondary: None,
            width: DEFAULT_COUNTER_WIDTH,
            method: SpectralMethod::MinimumSelection,
        }
    }

    /// Sized for `n` distinct keys at rate `p` with the given method.
    pub fn try_new(n: u64, p: f64, method: SpectralMethod) -> Result<Self> {
        Self::builder()
            .capacity(n)
            .fpr(p)
            .method(method)
            .try_build()
    }

    /// The method chosen at construction.
    pub fn method(&self) -> SpectralMethod {
        self.method
    }

    /// Hash functions (k).
    pub fn hashes(&self) -> u32 {
        self.k
    }

    /// The primary counters.
    pub fn counters(&self) -> &Counters {
        &self.primary
    }

    /// The secondary counters (Recurring Minimum only).
    pub fn secondary(&self) -> Option<&Counters> {
        self.secondary.as_ref()
    }

    /// The membership false-positive rate of the current contents: an absent key finds its
    /// k primary counters all non-zero with probability `(non-zero / m)^k`.
    pub fn current_fpr(&self) -> f64 {
        params::fpr_from_fill(self.primary.count_nonzero(), self.primary.len(), self.k)
    }

    /// The distinct keys it was sized for (0 for an explicit shape).
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// The membership rate asked for at capacity (0 for an explicit shape).
    pub fn target_fpr(&self) -> f64 {
        self.target_fpr
    }

    /// Saturated counters in the primary and secondary arrays.
    pub fn saturated_counters(&self) -> u64 {
        self.primary.count_saturated()
            + self.secondary.as_ref().map_or(0, Counters::count_saturated)
    }

    /// Add `n` occurrences of a pre-hashed key.
    pub fn insert_many_hashed(&mut self, h: Hashed, n: u32) -> bool {
        let (ix, k) = idx(h, self.k, self.primary.len());
        let ix = &ix[..k];
        let new = ix.iter().any(|&i| self.primary.get(i) == 0);
        match self.method {
            SpectralMethod::MinimumSelection => {
                for &i in ix {
                    self.primary.add(i, n);
                }
            }
            SpectralMethod::MinimalIncrease => {
                let min = min_of(&self.primary, ix);
                let target = (u64::from(min) + u64::from(n)).min(u64::from(u32::MAX)) as u32;
                for &i in ix {
                    if self.primary.get(i) < target {
                        self.primary.set(i, target);
                    }
                }
            }
            SpectralMethod::RecurringMinimum => {
                for &i in ix {
                    self.primary.add(i, n);
                }
                if !recurring(&self.primary, ix) {
                    let pmin = min_of(&self.primary, ix);
                    if let Some(sec) = self.secondary.as_mut() {
                        let (jx, k2) = idx(h, self.k, sec.len());
                        let jx = &jx[..k2];
                        let add = if jx.iter().all(|&j| sec.get(j) != 0) {
                            n
                        } else {
                            pmin
                        };
                        for &j in jx {
                            sec.add(j, add);
                        }
                    }
                }
            }
        }
        self.items = self.items.saturating_add(u64::from(n));
        new
    }

    /// Insert `n` occurrences of a key at once (each counter saturating); true when the key
    /// was new (a counter was zero). The same call as [`CountMinSketch::insert_many`](crate::CountMinSketch::insert_many).
    pub fn insert_many<K: crate::hash::Key + ?Sized>(&mut self, key: &K, n: u32) -> bool {
        let h = self.hasher.hash(key);
        self.insert_many_hashed(h, n)
    }

    /// Remove every key.
    pub fn clear(&mut self) {
        self.primary.clear();
        if let Some(s) = self.secondary.as_mut() {
            s.clear();
        }
        self.items = 0;
    }
}

/// The shared [`Builder`] sizing goes to this structure's own builder (bits: the number of
/// counters or bits; every other setting at its default).
impl Build for SpectralBloomFilter {
    type Options = ();
    fn build(b: &Builder<Self>) -> Result<Self> {
        SpectralBloomFilter::builder().sizing(b.sizing).try_build()
    }
}

impl SpectralBloomFilter {
    /// Hint the CPU to fetch the words of the key's k primary counters ahead of an insert, a
    /// count or a remove (for streaming callers such as the CLI).
    #[inline]
    pub fn prefetch_hashed(&self, h: Hashed) {
        let (w, width) = (
            self.primary.words().as_slice(),
            u64::from(self.primary.width()),
        );
        for i in h.indices(self.k, self.primary.len()) {
            store::prefetch(w, (i * width / 64) as usize);
        }
    }
}

impl Filter for SpectralBloomFilter {
    fn hasher(&self) -> &KeyHasher {
        &self.hasher
    }
    fn insert_hashed(&mut self, h: Hashed) -> bool {
        self.insert_many_hashed(h, 1)
    }
    fn contains_hashed(&self, h: Hashed) -> bool {
        h.indices(self.k, self.primary.len())
            .all(|i| self.primary.get(i) != 0)
    }
    /// Inserts minus removes.
    fn len(&self) -> u64 {
        self.items
    }
}

impl Count for SpectralBloomFilter {
    fn hasher(&self) -> &KeyHasher {
        &self.hasher
    }

    fn count_hashed(&self, h: Hashed) -> u64 {
        let (ix, k) = idx(h, self.k, self.primary.len());
        let ix = &ix[..k];
        let pmin = min_of(&self.primary, ix);
        if pmin == 0 || self.method != SpectralMethod::RecurringMinimum {
            return u64::from(pmin);
        }
        if recurring(&self.primary, ix) {
            return u64::from(pmin);
        }
        if let Some(sec) = &self.secondary {
            let (jx, k2) = idx(h, self.k, sec.len());
            let smin = min_of(sec, &jx[..k2]);
            if smin > 0 {
                return u64::from(smin.min(pmin));
            }
        }
        u64::from(pmin)
    }
}

impl Remove for SpectralBloomFilter {
    fn remove_hashed(&mut self, h: Hashed) -> Result<(), RemoveError> {
        if self.method == SpectralMethod::MinimalIncrease {
            return Err(RemoveError::Unsupported(
                "Minimal Increase cannot delete without creating false negatives",
            ));
        }
        let (ix, k) = idx(h, self.k, self.primary.len());
        let ix = &ix[..k];
        if ix.iter().any(|&i| self.primary.get(i) == 0) {
            return Err(RemoveError::NotPresent);
        }
        decrement_all(&mut self.primary, ix);
        if let Some(sec) = self.secondary.as_mut() {
            let (jx, k2) = idx(h, self.k, sec.len());
            let jx = &jx[..k2];
            if jx.iter().all(|&j| sec.get(j) != 0) {
                decrement_all(sec, jx);
            }
        }
        self.items = self.items.saturating_sub(1);
        Ok(())
    }
}

impl Persist for SpectralBloomFilter {
    const KIND: Kind = Kind::Spectral;

    fn encode_parts(&self) -> (Header, Payload<'_>) {
        let mut h = Header::new(Kind::Spectral, self.hasher);
        h.items = self.items;
        h.capacity = self.capacity;
        h.target_fpr = self.target_fpr;
        h.params = ParamWriter::new()
            .u64(self.primary.len())
            .u32(self.k)
            .u8(self.primary.width() as u8)
            .u8(self.method as u8)
            .u64(self.secondary.as_ref().map_or(0, Counters::len))
            .finish();
        let mut parts = vec![self.primary.words()];
        if let Some(s) = &self.secondary {
            parts.push(s.words());
        }
        (h, Payload::new(parts))
    }

    fn decode_from(d: &Decoded, src: format::Source<'_>, limit: u64) -> Result<Self> {
        let mut r = ParamReader::new(&d.header.params);
        let m = r.u64()?;
        let k = r.u32()?;
        let width = u32::from(r.u8()?);
        let method_id = r.u8()?;
        let m2 = r.u64()?;
        r.finish()?;
        let method = SpectralMethod::from_id(method_id)
            .ok_or_else(|| inconsistent(format!("spectral method {method_id}")))?;
        if m == 0 || k == 0 || k > MAX_HASHES || width == 0 || width > counters::MAX_WIDTH {
            return Err(inconsistent(format!(
                "spectral shape m={m} k={k} w={width}"
            )));
        }
        if (method == SpectralMethod::RecurringMinimum) != (m2 > 0) {
            return Err(inconsistent(format!(
                "secondary of {m2} counters with method {}",
                method.name()
            )));
        }
        let w1 = counters::words_needed(m, width).ok_or_else(|| inconsistent("m too large"))?;
        let w2 = counters::words_needed(m2, width).ok_or_else(|| inconsistent("m2 too large"))?;
        let need = format::padded_len(w1).saturating_add(format::padded_len(w2));
        if d.payload_len as u64 != need {
            return Err(inconsistent(format!(
                "payload is {} bytes, parameters need {need}",
                d.payload_len
            )));
        }
        let primary = Counters::from_words(src.words(d.payload_offset, w1, limit)?, m, width)?;
        let secondary = if m2 > 0 {
            let off = d.payload_offset + format::padded_len(w1) as usize;
            Some(Counters::from_words(src.words(off, w2, limit)?, m2, width)?)
        } else {
            None
        };
        Ok(Self {
            primary,
            secondary,
            k,
            method,
            hasher: d.header.hasher,
            items: d.header.items,
            capacity: d.header.capacity,
            target_fpr: d.header.target_fpr,
        })
    }
}

impl<K: crate::hash::Key> Extend<K> for SpectralBloomFilter {
    fn extend<I: IntoIterator<Item = K>>(&mut self, iter: I) {
        for k in iter {
            self.insert(&k);
        }
    }
}

impl crate::multisets::counter_kind::CounterKind for SpectralBloomFilter {
    const CAPABILITIES: Capabilities = Capabilities {
        insert: true,
        hashed: true,
        count: true,
        remove: true,
        ..Capabilities::NONE
    };
    counting_filter_kind!(len: Filter::len, remove);
    fn remove_unsupported(&self) -> Option<RemoveError> {
        (self.method() == SpectralMethod::MinimalIncrease).then_some(RemoveError::Unsupported(
            "spectral Minimal Increase cannot delete without creating false negatives",
        ))
    }
    fn describe(&self, i: &mut crate::multisets::counter_kind::CounterInfo) {
        i.capacity = self.capacity();
        i.target_fpr = (self.target_fpr() > 0.0).then_some(self.target_fpr());
        i.current_fpr = Some(self.current_fpr());
        i.saturated_counters = Some(self.saturated_counters());
        i.counter_bits = Some(self.counters().width());
        i.hashes = Some(self.hashes());
        i.size = Some(self.counters().len());
        i.method = Some(self.method().name());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    const METHODS: [SpectralMethod; 3] = [
        SpectralMethod::MinimumSelection,
        SpectralMethod::MinimalIncrease,
        SpectralMethod::RecurringMinimum,
    ];

    #[test]
    fn methods_count_and_mi_refuses_removal() {
        for m in METHODS {
            let mut f = SpectralBloomFilter::try_new(100, 0.01, m).unwrap();
            for _ in 0..5 {
                f.insert("a");
            }
            f.insert("b");
            assert_eq!(f.count("a"), 5, "{m:?}");
            assert_eq!(f.count("b"), 1, "{m:?}");
            assert_eq!(f.count("zzz"), 0);
            match m {
                SpectralMethod::MinimalIncrease => {
                    assert!(matches!(f.remove("a"), Err(RemoveError::Unsupported(_))))
                }
                _ => {
                    f.remove("a").unwrap();
                    assert_eq!(f.count("a"), 4);
                    assert_eq!(f.remove("zzz"), Err(RemoveError::NotPresent));
                }
            }
            let g = SpectralBloomFilter::from_bytes(&f.to_bytes()).unwrap();
            assert_eq!(f, g);
        }
    }

    #[test]
    fn mi_is_no_worse_than_ms_on_skew() {
        let mk = |m| {
            SpectralBloomFilter::builder()
                .counters(200)
                .hashes(3)
                .method(m)
                .try_build()
                .unwrap()
        };
        let (mut ms, mut mi) = (
            mk(SpectralMethod::MinimumSelection),
            mk(SpectralMethod::MinimalIncrease),
        );
        let mut truth: HashMap<u32, u64> = HashMap::new();
        for i in 0..3000u32 {
            let key = (i * i) % 97 + (i % 3) * 50;
            ms.insert(&key);
            mi.insert(&key);
            *truth.entry(key).or_default() += 1;
        }
        let err =
            |f: &SpectralBloomFilter| -> u64 { truth.iter().map(|(k, c)| f.count(k) - c).sum() };
        assert!(err(&mi) <= err(&ms));
    }

    #[test]
    fn bad_parameters() {
        assert!(SpectralBloomFilter::try_new(0, 0.1, SpectralMethod::MinimumSelection).is_err());
        assert!(SpectralBloomFilter::builder()
            .counters(0)
            .hashes(2)
            .try_build()
            .is_err());
        assert!(SpectralBloomFilter::builder()
            .counters(10)
            .hashes(0)
            .try_build()
            .is_err());
        assert!(SpectralBloomFilter::builder()
            .counters(10)
            .hashes(2)
            .counter_width(40)
            .try_build()
            .is_err());
        assert!(SpectralBloomFilter::builder()
            .counters(10)
            .hashes(2)
            .secondary_counters(5)
            .try_build()
            .is_err());
    }

    #[cfg(feature = "mmap")]
    #[test]
    fn two_part_payload_maps_and_validates() {
        let mut f =
            SpectralBloomFilter::try_new(200, 0.01, SpectralMethod::RecurringMinimum).unwrap();
        for i in 0..600u32 {
            f.insert(&(i % 200));
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.bloom");
        f.save(&path).unwrap();
        let g = SpectralBloomFilter::open_mmap(&path, format::Verify::Checksum).unwrap();
        assert_eq!(f, g);
        assert!(g.secondary().is_some());
        // a secondary array with a method that has none is refused
        let mut h = Header::new(Kind::Spectral, KeyHasher::new());
        h.params = ParamWriter::new()
            .u64(64)
            .u32(3)
            .u8(16)
            .u8(0)
            .u64(32)
            .finish();
        let a = crate::store::Words::zeroed(16, u64::MAX).unwrap();
        let b = crate::store::Words::zeroed(8, u64::MAX).unwrap();
        let mut bytes = Vec::new();
        format::write(&h, &Payload::new(vec![&a, &b]), &mut bytes).unwrap();
        assert!(SpectralBloomFilter::from_bytes(&bytes).is_err());
        let mut h2 = h.clone();
        h2.params = ParamWriter::new()
            .u64(64)
            .u32(3)
            .u8(16)
            .u8(2)
            .u64(32)
            .finish();
        let mut ok = Vec::new();
        format::write(&h2, &Payload::new(vec![&a, &b]), &mut ok).unwrap();
        assert!(SpectralBloomFilter::from_bytes(&ok).is_ok());
        h2.params = ParamWriter::new()
            .u64(64)
            .u32(3)
            .u8(16)
            .u8(7)
            .u64(32)
            .finish();
        let mut bad = Vec::new();
        format::write(&h2, &Payload::new(vec![&a, &b]), &mut bad).unwrap();
        assert!(SpectralBloomFilter::from_bytes(&bad).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn no_false_negatives_ms_never_low(
            ops in proptest::collection::vec((0u8..30, any::<bool>()), 1..250),
            method in 0u8..3,
        ) {
            let method = METHODS[method as usize];
            let mut f = SpectralBloomFilter::builder()
                .counters(300).hashes(3).method(method).try_build().unwrap();
            let mut truth: HashMap<u8, u64> = HashMap::new();
            for (key, ins) in &ops {
                let t = truth.entry(*key).or_default();
                if *ins || method == SpectralMethod::MinimalIncrease {
                    f.insert(key);
                    *t += 1;
                } else if *t > 0 {
                    f.remove(key).unwrap();
                    *t -= 1;
                }
            }
            let f = SpectralBloomFilter::from_bytes(&f.to_bytes()).unwrap();
            for (k, c) in &truth {
                if *c > 0 {
                    prop_assert!(f.contains(k));
                    prop_assert!(f.count(k) > 0);
                }
                if method != SpectralMethod::RecurringMinimum {
                    prop_assert!(f.count(k) >= *c);
                }
            }
        }
    }
}
