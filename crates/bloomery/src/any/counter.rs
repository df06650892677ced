//! [`AnyCounter`]: any multiset structure of the counting family behind one type, chosen at
//! run time — what the CLI loads from files whose kind it does not know in advance (the
//! counterpart of [`crate::AnyFilter`] for the set structures).

use std::path::Path;

use crate::error::{invalid, FormatError, Result};
use crate::filter::{Count, Filter, Remove, RemoveError};
use crate::hash::{Hashed, KeyHasher};
use crate::io::format::{self, Kind, Persist, Source, Verify};
use crate::{
    BlockedCountingBloomFilter, CountMinSketch, CountingBloomFilter, DLeftCountingBloomFilter,
    IterativeBloomFilter, SpaceCodeBloomFilter, SpectralBloomFilter, SpectralMethod,
};

/// Any of the counting-family structures.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum AnyCounter {
    /// [`CountingBloomFilter`]
    Counting(CountingBloomFilter),
    /// [`BlockedCountingBloomFilter`]
    BlockedCounting(BlockedCountingBloomFilter),
    /// [`DLeftCountingBloomFilter`]
    DLeft(DLeftCountingBloomFilter),
    /// [`SpectralBloomFilter`]
    Spectral(SpectralBloomFilter),
    /// [`CountMinSketch`]
    CountMin(CountMinSketch),
    /// [`IterativeBloomFilter`]
    Iterative(IterativeBloomFilter),
    /// [`SpaceCodeBloomFilter`]
    SpaceCode(SpaceCodeBloomFilter),
}

macro_rules! each {
    ($self:expr, $f:ident => $body:expr) => {
        match $self {
            AnyCounter::Counting($f) => $body,
            AnyCounter::BlockedCounting($f) => $body,
            AnyCounter::DLeft($f) => $body,
            AnyCounter::Spectral($f) => $body,
            AnyCounter::CountMin($f) => $body,
            AnyCounter::Iterative($f) => $body,
            AnyCounter::SpaceCode($f) => $body,
        }
    };
}

/// Options for [`AnyCounter::build`]: the shared sizing plus each kind's own parameters.
/// Options that do not apply to the chosen kind are refused with a typed error.
#[derive(Debug, Clone, Default)]
pub struct CounterOptions {
    /// Expected number of distinct keys (n).
    pub capacity: Option<u64>,
    /// Iterative and space-code filters: expected inserts, repeats included (default: n,
    /// every key once). Their fill depends on both counts; the other kinds' on n alone.
    pub occurrences: Option<u64>,
    /// Target membership false-positive rate at capacity.
    pub fpr: Option<f64>,
    /// Exact number of counters (counting, spectral) or bits (ibf, scbf).
    pub bits: Option<u64>,
    /// Exact number of hash functions (counting, spectral, ibf, scbf).
    pub hashes: Option<u32>,
    /// Bits per counter (counting: 1..=32, default 4; spectral: default 16; dlcbf: 1..=31,
    /// default 2).
    pub counter_bits: Option<u32>,
    /// Count-min width (with `depth`).
    pub width: Option<u64>,
    /// Count-min depth (with `width`).
    pub depth: Option<u32>,
    /// Count-min ε (with `delta`).
    pub epsilon: Option<f64>,
    /// Count-min δ (with `epsilon`).
    pub delta: Option<f64>,
    /// Count-min conservative update.
    pub conservative: bool,
    /// Spectral method (default Minimum Selection).
    pub method: Option<SpectralMethod>,
    /// Iterative filter: cap on the total repeats counted.
    pub repeat_cap: Option<u64>,
    /// Iterative filter: expected distinctness rate α used for sizing.
    pub distinctness: Option<f64>,
    /// Space-code filter: groups of hash functions.
    pub groups: Option<u32>,
    /// The hasher.
    pub hasher: KeyHasher,
    /// Memory limit in bytes (`None`: the process-wide limit).
    pub max_bytes: Option<u64>,
}

/// Kind-specific state of a counting-family structure (what `bloomery info` prints).
#[derive(Debug, Clone, PartialEq)]
pub struct CounterInfo {
    /// Kind name.
    pub kind: &'static str,
    /// Inserts so far (minus removals for the kinds that delete).
    pub items: u64,
    /// Bytes of the file format.
    pub bytes: u64,
    /// Bits per item (file bits / items; 0 when empty).
    pub bits_per_item: f64,
    /// Capacity it was sized for (0 if unknown or not applicable).
    pub capacity: u64,
    /// Whether removal is possible.
    pub removable: bool,
    /// Counting, dlcbf, spectral, cms: counters at their maximum value.
    pub saturated_counters: Option<u64>,
    /// Counting, spectral: bits per counter; dlcbf: bits per cell counter.
    pub counter_bits: Option<u32>,
    /// Counting, spectral, ibf, scbf: hash functions (per group for scbf).
    pub hashes: Option<u32>,
    /// Counting, spectral: counters; ibf, scbf: bits; dlcbf: bits of the table.
    pub size: Option<u64>,
    /// Iterative: distinctness rate (distinct inputs / all inputs).
    pub distinctness: Option<f64>,
    /// Iterative: whether counting stopped (repeat cap reached).
    pub counting_stopped: Option<bool>,
    /// Iterative: repeats counted so far.
    pub repeats_counted: Option<u64>,
    /// Space-code: groups.
    pub groups: Option<u32>,
    /// Count-min: width.
    pub width: Option<u64>,
    /// Count-min: depth.
    pub depth: Option<u32>,
    /// Count-min: conservative update.
    pub conservative: Option<bool>,
    /// Spectral: method name (`ms`, `mi`, `rm`).
    pub method: Option<&'static str>,
    /// dlcbf: occupied cells.
    pub occupied_cells: Option<u64>,
    /// Every kind sized by capacity and rate (all but cms): the membership false-positive
    /// rate asked for at capacity (`None` when the shape was given).
    pub target_fpr: Option<f64>,
    /// Every kind but cms: this structure's own membership false-positive rate now, from
    /// its contents ([`Stats::current_fpr`](crate::Stats::current_fpr)).
    pub current_fpr: Option<f64>,
}

/// The target (when sized by a rate) and current false-positive rates of `f`.
fn rates(f: &impl crate::filter::Stats) -> (Option<f64>, Option<f64>) {
    let target = f.target_fpr();
    ((target > 0.0).then_some(target), Some(f.current_fpr()))
}

fn refuse(name: &'static str, kind: Kind) -> crate::Error {
    invalid(
        name,
        format!("does not apply to {} structures", kind.name()),
    )
}

impl AnyCounter {
    /// Build an empty structure of `kind` from `o`, validating every option.
    pub fn build(kind: Kind, o: &CounterOptions) -> Result<Self> {
        let limit = o.max_bytes.unwrap_or_else(crate::store::max_bytes);
        let only = |ok: &[&'static str]| -> Result<()> {
            let given: [(&'static str, bool); 12] = [
                ("occurrences", o.occurrences.is_some()),
                ("bits", o.bits.is_some()),
                ("hashes", o.hashes.is_some()),
                ("counter_bits", o.counter_bits.is_some()),
                ("width", o.width.is_some()),
                ("depth", o.depth.is_some()),
                ("epsilon", o.epsilon.is_some()),
                ("delta", o.delta.is_some()),
                ("conservative", o.conservative),
                ("method", o.method.is_some()),
                (
                    "repeat_cap",
                    o.repeat_cap.is_some() || o.distinctness.is_some(),
                ),
                ("groups", o.groups.is_some()),
            ];
            match given.iter().find(|(n, g)| *g && !ok.contains(n)) {
                Some((n, _)) => Err(refuse(n, kind)),
                None => Ok(()),
            }
        };
        Ok(match kind {
            Kind::Counting => {
                only(&["bits", "hashes", "counter_bits"])?;
                let mut b = CountingBloomFilter::builder()
                    .hasher(o.hasher)
                    .max_bytes(limit);
                if let Some(n) = o.capacity {
                    b = b.capacity(n);
                }
                if let Some(p) = o.fpr {
                    b = b.fpr(p);
                }
                if let Some(m) = o.bits {
                    b = b.counters(m);
                }
                if let Some(k) = o.hashes {
                    b = b.hashes(k);
                }
                if let Some(w) = o.counter_bits {
                    b = b.counter_width(w);
                }
                AnyCounter::Counting(b.try_build()?)
            }
            Kind::BlockedCounting => {
                only(&["bits", "hashes", "counter_bits"])?;
                let mut b = BlockedCountingBloomFilter::builder()
                    .hasher(o.hasher)
                    .max_bytes(limit);
                if let Some(n) = o.capacity {
                    b = b.capacity(n);
                }
                if let Some(p) = o.fpr {
                    b = b.fpr(p);
                }
                if let Some(m) = o.bits {
                    b = b.counters(m);
                }
                if let Some(k) = o.hashes {
                    b = b.hashes(k);
                }
                if let Some(w) = o.counter_bits {
                    b = b.counter_width(w);
                }
                AnyCounter::BlockedCounting(b.try_build()?)
            }
            Kind::DLeftCounting => {
                only(&["counter_bits"])?;
                let mut b = DLeftCountingBloomFilter::builder()
                    .hasher(o.hasher)
                    .max_bytes(limit);
                if let Some(n) = o.capacity {
                    b = b.capacity(n);
                }
                if let Some(p) = o.fpr {
                    b = b.fpr(p);
                }
                if let Some(w) = o.counter_bits {
                    b = b.counter_bits(w);
                }
                AnyCounter::DLeft(b.try_build()?)
            }
            Kind::Spectral => {
                only(&["bits", "hashes", "counter_bits", "method"])?;
                let mut b = SpectralBloomFilter::builder()
                    .hasher(o.hasher)
                    .max_bytes(limit);
                if let Some(n) = o.capacity {
                    b = b.capacity(n);
                }
                if let Some(p) = o.fpr {
                    b = b.fpr(p);
                }
                if let Some(m) = o.bits {
                    b = b.counters(m);
                }
                if let Some(k) = o.hashes {
                    b = b.hashes(k);
                }
                if let Some(w) = o.counter_bits {
                    b = b.counter_width(w);
                }
                if let Some(m) = o.method {
                    b = b.method(m);
                }
                AnyCounter::Spectral(b.try_build()?)
            }
            Kind::CountMin => {
                only(&["width", "depth", "epsilon", "delta", "conservative"])?;
                if o.capacity.is_some() || o.fpr.is_some() {
                    return Err(invalid(
                        "capacity",
                        "a count-min sketch is sized by width/depth or epsilon/delta",
                    ));
                }
                let mut b = CountMinSketch::builder()
                    .hasher(o.hasher)
                    .max_bytes(limit)
                    .conservative(o.conservative);
                match (o.width, o.depth) {
                    (Some(w), Some(d)) => b = b.dimensions(w, d),
                    (None, None) => {}
                    _ => return Err(invalid("width", "give both width and depth")),
                }
                match (o.epsilon, o.delta) {
                    (Some(e), Some(d)) => b = b.error(e, d),
                    (None, None) => {}
                    _ => return Err(invalid("epsilon", "give both epsilon and delta")),
                }
                AnyCounter::CountMin(b.try_build()?)
            }
            Kind::Iterative => {
                only(&["bits", "hashes", "repeat_cap", "occurrences"])?;
                let mut b = IterativeBloomFilter::builder()
                    .hasher(o.hasher)
                    .max_bytes(limit);
                match (o.capacity, o.occurrences) {
                    (Some(n), Some(total)) => {
                        if o.distinctness.is_some() {
                            return Err(invalid(
                                "occurrences",
                                "give the inserts or the distinctness rate, not both",
                            ));
                        }
                        crate::params::check_capacity(n)?;
                        if total < n {
                            return Err(invalid(
                                "occurrences",
                                format!("{total} inserts cannot hold {n} distinct keys"),
                            ));
                        }
                        // the library's capacity counts every input; α the distinct share
                        b = b.capacity(total).distinctness(n as f64 / total as f64);
                    }
                    (Some(n), None) => b = b.capacity(n),
                    (None, Some(_)) => {
                        return Err(invalid("occurrences", "give the distinct keys too"))
                    }
                    (None, None) => {}
                }
                if let Some(p) = o.fpr {
                    b = b.fpr(p);
                }
                if let Some(m) = o.bits {
                    b = b.bits(m);
                }
                if let Some(k) = o.hashes {
                    b = b.hashes(k);
                }
                if let Some(c) = o.repeat_cap {
                    b = b.repeat_cap(c);
                }
                if let Some(a) = o.distinctness {
                    b = b.distinctness(a);
                }
                AnyCounter::Iterative(b.try_build()?)
            }
            Kind::SpaceCode => {
                only(&["bits", "hashes", "groups", "occurrences"])?;
                let mut b = SpaceCodeBloomFilter::builder()
                    .hasher(o.hasher)
                    .max_bytes(limit);
                if let Some(n) = o.capacity {
                    b = b.capacity(n);
                }
                if let Some(total) = o.occurrences {
                    b = b.occurrences(total);
                }
                if let Some(p) = o.fpr {
                    b = b.fpr(p);
                }
                if let Some(m) = o.bits {
                    b = b.bits(m);
                }
                if let Some(k) = o.hashes {
                    b = b.hashes(k);
                }
                if let Some(g) = o.groups {
                    b = b.groups(g);
                }
                AnyCounter::SpaceCode(b.try_build()?)
            }
            k => {
                return Err(crate::Error::Unsupported(format!(
                    "{} is not a counting-family structure",
                    k.name()
                )))
            }
        })
    }

    /// True for the kinds [`AnyCounter`] holds.
    pub fn holds(kind: Kind) -> bool {
        matches!(
            kind,
            Kind::Counting
                | Kind::BlockedCounting
                | Kind::DLeftCounting
                | Kind::Spectral
                | Kind::CountMin
                | Kind::Iterative
                | Kind::SpaceCode
        )
    }

    /// The kind.
    pub fn kind(&self) -> Kind {
        match self {
            AnyCounter::Counting(_) => Kind::Counting,
            AnyCounter::BlockedCounting(_) => Kind::BlockedCounting,
            AnyCounter::DLeft(_) => Kind::DLeftCounting,
            AnyCounter::Spectral(_) => Kind::Spectral,
            AnyCounter::CountMin(_) => Kind::CountMin,
            AnyCounter::Iterative(_) => Kind::Iterative,
            AnyCounter::SpaceCode(_) => Kind::SpaceCode,
        }
    }

    /// Decode any counting-family kind from bytes, verifying the checksum.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        // A compressed file is decompressed first (issue 6).
        let bytes = crate::io::compress::plain_file(bytes)?;
        let d = format::decode(&bytes, Verify::Checksum)?;
        let src = Source::Bytes(&bytes);
        let limit = crate::store::max_bytes();
        Ok(match d.header.kind {
            Kind::Counting => {
                AnyCounter::Counting(CountingBloomFilter::decode_from(&d, src, limit)?)
            }
            Kind::BlockedCounting => AnyCounter::BlockedCounting(
                BlockedCountingBloomFilter::decode_from(&d, src, limit)?,
            ),
            Kind::DLeftCounting => {
                AnyCounter::DLeft(DLeftCountingBloomFilter::decode_from(&d, src, limit)?)
            }
            Kind::Spectral => {
                AnyCounter::Spectral(SpectralBloomFilter::decode_from(&d, src, limit)?)
            }
            Kind::CountMin => AnyCounter::CountMin(CountMinSketch::decode_from(&d, src, limit)?),
            Kind::Iterative => {
                AnyCounter::Iterative(IterativeBloomFilter::decode_from(&d, src, limit)?)
            }
            Kind::SpaceCode => {
                AnyCounter::SpaceCode(SpaceCodeBloomFilter::decode_from(&d, src, limit)?)
            }
            k => {
                return Err(FormatError::WrongKind {
                    expected:
                        "a counting-family structure (counting, blocked-counting, dlcbf, spectral, cms, ibf, scbf)",
                    found: k.name(),
                }
                .into())
            }
        })
    }

    /// Load any counting-family kind from a file, verifying the checksum.
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        Self::from_bytes(&format::read_file(path.as_ref())?)
    }

    /// Save atomically.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        each!(self, f => f.save(path))
    }

    /// The file format as bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        each!(self, f => f.to_bytes())
    }

    /// The hasher keys go through.
    pub fn hasher(&self) -> &KeyHasher {
        each!(self, f => f.key_hasher())
    }

    /// Add one occurrence of a pre-hashed key. Only a full d-left filter fails
    /// ([`crate::Error::Full`], nothing changed).
    pub fn insert_hashed(&mut self, h: Hashed) -> Result<()> {
        match self {
            AnyCounter::Counting(f) => {
                f.insert_hashed(h);
            }
            AnyCounter::BlockedCounting(f) => {
                f.insert_hashed(h);
            }
            AnyCounter::DLeft(f) => {
                f.insert_hashed(h)?;
            }
            AnyCounter::Spectral(f) => {
                f.insert_hashed(h);
            }
            AnyCounter::CountMin(f) => f.update_hashed(h, 1),
            AnyCounter::Iterative(f) => {
                f.insert_hashed(h);
            }
            AnyCounter::SpaceCode(f) => {
                f.insert_hashed(h);
            }
        }
        Ok(())
    }

    /// Hint the CPU to fetch what an insert, count or remove of the key will read, for
    /// streaming callers that hash a key a few keys before they use it (the counting,
    /// blocked counting, d-left and spectral filters and the count-min sketch; nothing for the
    /// iterative filter, whose later probes depend on what it reads, and the space-code
    /// filter, whose insert draws its group at random).
    #[inline]
    pub fn prefetch_hashed(&self, h: Hashed) {
        match self {
            AnyCounter::Counting(f) => f.prefetch_hashed(h),
            AnyCounter::BlockedCounting(f) => f.prefetch_hashed(h),
            AnyCounter::DLeft(f) => f.prefetch_hashed(h),
            AnyCounter::Spectral(f) => f.prefetch_hashed(h),
            AnyCounter::CountMin(f) => f.prefetch_hashed(h),
            AnyCounter::Iterative(_) | AnyCounter::SpaceCode(_) => {}
        }
    }

    /// Estimated count of a pre-hashed key.
    pub fn count_hashed(&self, h: Hashed) -> u64 {
        each!(self, f => f.count_hashed(h))
    }

    /// Present (possibly a false positive) when the estimated count is above 0.
    pub fn contains_hashed(&self, h: Hashed) -> bool {
        self.count_hashed(h) > 0
    }

    /// The plain Bloom filter that answers membership exactly as this structure does, for
    /// broadcasting (the summary-cache protocol, seed 002 §4: each proxy keeps a counting
    /// filter to follow insertions and deletions and sends its peers the bit array): a
    /// classic filter of the same m, k and hasher, bit i set where counter i is non-zero
    /// ([`CountingBloomFilter::to_bloom_filter`]). Only the classic-layout counting filter has
    /// such a counterpart; the other kinds are refused with the reason.
    pub fn to_plain_filter(&self) -> Result<crate::AnyFilter> {
        match self {
            AnyCounter::Counting(f) => Ok(crate::AnyFilter::Classic(f.to_bloom_filter()?)),
            AnyCounter::BlockedCounting(_) => Err(invalid(
                "kind",
                "a blocked counting filter has no plain counterpart (its lines of counters \
                 are not a blocked filter's bit blocks); use the classic-layout counting filter \
                 (--kind counting) for a structure to broadcast",
            )),
            other => Err(invalid(
                "kind",
                format!(
                    "a {} structure has no plain Bloom filter counterpart; only the \
                     classic-layout counting filter (counting) has",
                    other.kind().name()
                ),
            )),
        }
    }

    /// Why this structure cannot delete, or `None` when it can.
    pub fn remove_unsupported(&self) -> Option<RemoveError> {
        match self {
            AnyCounter::Counting(_) | AnyCounter::BlockedCounting(_) | AnyCounter::DLeft(_) => None,
            AnyCounter::Spectral(f) if f.method() != SpectralMethod::MinimalIncrease => None,
            AnyCounter::Spectral(_) => Some(RemoveError::Unsupported(
                "spectral Minimal Increase cannot delete without creating false negatives",
            )),
            AnyCounter::CountMin(_) => Some(RemoveError::Unsupported(
                "a count-min sketch (cms) has no deletion: decrements would break its never-below-the-truth guarantee",
            )),
            AnyCounter::Iterative(_) => Some(RemoveError::Unsupported(
                "an iterative filter (ibf) cannot delete: its bits are shared by keys and repeats",
            )),
            AnyCounter::SpaceCode(_) => Some(RemoveError::Unsupported(
                "a space-code filter (scbf) cannot delete: its bits are shared by keys and groups",
            )),
        }
    }

    /// Remove one occurrence of a pre-hashed key: [`RemoveError::Unsupported`] for the kinds
    /// without deletion, [`RemoveError::NotPresent`] (nothing changed) for an absent key.
    pub fn remove_hashed(&mut self, h: Hashed) -> std::result::Result<(), RemoveError> {
        if let Some(e) = self.remove_unsupported() {
            return Err(e);
        }
        match self {
            AnyCounter::Counting(f) => f.remove_hashed(h),
            AnyCounter::BlockedCounting(f) => f.remove_hashed(h),
            AnyCounter::DLeft(f) => f.remove_hashed(h),
            AnyCounter::Spectral(f) => f.remove_hashed(h),
            _ => Err(RemoveError::Unsupported("no deletion")),
        }
    }

    /// Inserts so far (minus removals where deletion exists; all inserts for cms, ibf, scbf).
    pub fn len(&self) -> u64 {
        match self {
            AnyCounter::Counting(f) => f.len(),
            AnyCounter::BlockedCounting(f) => f.len(),
            AnyCounter::DLeft(f) => f.len(),
            AnyCounter::Spectral(f) => f.len(),
            AnyCounter::CountMin(f) => f.total(),
            AnyCounter::Iterative(f) => f.total_inserts(),
            AnyCounter::SpaceCode(f) => f.total_inserts(),
        }
    }

    /// True when nothing was inserted.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The capacity it was sized for (0: none), the membership rate asked for at capacity
    /// and the rate of its contents now (`None` where they do not apply: cms, an explicit
    /// shape's target), without the rest of [`info`](Self::info) (which serialises the
    /// structure to measure it).
    pub fn rates(&self) -> (u64, Option<f64>, Option<f64>) {
        use crate::filter::Stats;
        let target = |t: f64| (t > 0.0).then_some(t);
        match self {
            AnyCounter::Counting(f) => {
                (f.capacity(), target(f.target_fpr()), Some(f.current_fpr()))
            }
            AnyCounter::BlockedCounting(f) => {
                (f.capacity(), target(f.target_fpr()), Some(f.current_fpr()))
            }
            AnyCounter::DLeft(f) => (f.capacity(), target(f.target_fpr()), Some(f.current_fpr())),
            AnyCounter::Spectral(f) => {
                (f.capacity(), target(f.target_fpr()), Some(f.current_fpr()))
            }
            AnyCounter::CountMin(_) => (0, None, None),
            AnyCounter::Iterative(f) => {
                (f.capacity(), target(f.target_fpr()), Some(f.current_fpr()))
            }
            AnyCounter::SpaceCode(f) => {
                (f.capacity(), target(f.target_fpr()), Some(f.current_fpr()))
            }
        }
    }

    /// Kind-specific state.
    pub fn info(&self) -> CounterInfo {
        use crate::filter::Stats;
        let items = self.len();
        let bytes = self.to_bytes().len() as u64;
        let mut i = CounterInfo {
            kind: self.kind().name(),
            items,
            bytes,
            bits_per_item: if items > 0 {
                bytes as f64 * 8.0 / items as f64
            } else {
                0.0
            },
            capacity: 0,
            removable: self.remove_unsupported().is_none(),
            saturated_counters: None,
            counter_bits: None,
            hashes: None,
            size: None,
            distinctness: None,
            counting_stopped: None,
            repeats_counted: None,
            groups: None,
            width: None,
            depth: None,
            conservative: None,
            method: None,
            occupied_cells: None,
            target_fpr: None,
            current_fpr: None,
        };
        match self {
            AnyCounter::Counting(f) => {
                i.capacity = f.capacity();
                (i.target_fpr, i.current_fpr) = rates(f);
                i.saturated_counters = Some(f.saturated_counters());
                i.counter_bits = Some(f.counter_width());
                i.hashes = Some(f.hashes());
                i.size = Some(f.counter_len());
            }
            AnyCounter::BlockedCounting(f) => {
                i.capacity = f.capacity();
                (i.target_fpr, i.current_fpr) = rates(f);
                i.saturated_counters = Some(f.saturated_counters());
                i.counter_bits = Some(f.counter_width());
                i.hashes = Some(f.hashes());
                i.size = Some(f.counter_len());
            }
            AnyCounter::DLeft(f) => {
                i.capacity = f.capacity();
                i.target_fpr = (f.target_fpr() > 0.0).then_some(f.target_fpr());
                i.current_fpr = Some(f.current_fpr());
                i.saturated_counters = Some(f.saturated_counters());
                i.counter_bits = Some(f.shape().counter_bits);
                i.size = Some(f.bit_len());
                i.occupied_cells = Some(f.occupied_cells());
            }
            AnyCounter::Spectral(f) => {
                i.capacity = f.capacity();
                i.target_fpr = (f.target_fpr() > 0.0).then_some(f.target_fpr());
                i.current_fpr = Some(f.current_fpr());
                i.saturated_counters = Some(f.saturated_counters());
                i.counter_bits = Some(f.counters().width());
                i.hashes = Some(f.hashes());
                i.size = Some(f.counters().len());
                i.method = Some(f.method().name());
            }
            AnyCounter::CountMin(f) => {
                i.saturated_counters = Some(f.saturated_counters());
                i.width = Some(f.width());
                i.depth = Some(f.depth());
                i.conservative = Some(f.is_conservative());
            }
            AnyCounter::Iterative(f) => {
                i.capacity = f.capacity();
                (i.target_fpr, i.current_fpr) = rates(f);
                i.hashes = Some(f.hashes());
                i.size = Some(f.bits());
                i.distinctness = Some(f.distinctness());
                i.counting_stopped = Some(f.counting_stopped());
                i.repeats_counted = Some(f.repeats_counted());
            }
            AnyCounter::SpaceCode(f) => {
                i.capacity = f.capacity();
                (i.target_fpr, i.current_fpr) = rates(f);
                i.hashes = Some(f.hashes());
                i.size = Some(f.bits());
                i.groups = Some(f.groups());
            }
        }
        i
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain counterpart answers like the counting filter, keys and absent keys alike;
    /// kinds without one are refused.
    #[test]
    fn plain_filter_answers_like_the_counting_filter() {
        let mut c = AnyCounter::build(Kind::Counting, &opts()).unwrap();
        for i in 0..800u32 {
            c.insert_hashed(c.hasher().hash(&i)).unwrap();
        }
        for i in 0..100u32 {
            c.remove_hashed(c.hasher().hash(&i)).unwrap();
        }
        let plain = c.to_plain_filter().unwrap();
        assert_eq!(plain.kind(), Kind::Classic);
        for i in 0..20_000u32 {
            let h = c.hasher().hash(&i);
            assert_eq!(plain.contains_hashed(h), c.count_hashed(h) > 0, "{i}");
        }
        for kind in [Kind::BlockedCounting, Kind::Iterative] {
            let e = AnyCounter::build(kind, &opts()).unwrap().to_plain_filter();
            assert!(
                e.unwrap_err().to_string().contains("counterpart"),
                "{kind:?}"
            );
        }
    }

    fn opts() -> CounterOptions {
        CounterOptions {
            capacity: Some(1000),
            fpr: Some(0.01),
            ..CounterOptions::default()
        }
    }

    fn all() -> Vec<AnyCounter> {
        let mut v: Vec<AnyCounter> = [
            Kind::Counting,
            Kind::BlockedCounting,
            Kind::DLeftCounting,
            Kind::Spectral,
            Kind::Iterative,
            Kind::SpaceCode,
        ]
        .iter()
        .map(|&k| AnyCounter::build(k, &opts()).unwrap())
        .collect();
        let cms = CounterOptions {
            width: Some(500),
            depth: Some(4),
            ..CounterOptions::default()
        };
        v.push(AnyCounter::build(Kind::CountMin, &cms).unwrap());
        v
    }

    #[test]
    fn insert_count_round_trip_for_every_kind() {
        for mut f in all() {
            let h = *f.hasher();
            for i in 0..50u32 {
                for _ in 0..=(i % 3) {
                    f.insert_hashed(h.hash(&i.to_le_bytes()[..])).unwrap();
                }
            }
            let back = AnyCounter::from_bytes(&f.to_bytes()).unwrap();
            assert_eq!(back.kind(), f.kind());
            for i in 0..50u32 {
                let k = h.hash(&i.to_le_bytes()[..]);
                assert!(back.count_hashed(k) > 0, "{:?}", f.kind());
                assert_eq!(back.count_hashed(k), f.count_hashed(k));
            }
            assert_eq!(back.info(), f.info());
        }
    }

    #[test]
    fn removal_is_typed() {
        for mut f in all() {
            let h = f.hasher().hash("a");
            f.insert_hashed(h).unwrap();
            let can = matches!(
                f.kind(),
                Kind::Counting | Kind::BlockedCounting | Kind::DLeftCounting | Kind::Spectral
            );
            assert_eq!(f.info().removable, can);
            match f.remove_hashed(h) {
                Ok(()) => assert!(can),
                Err(RemoveError::Unsupported(_)) => assert!(!can),
                Err(e) => panic!("{e}"),
            }
            if can {
                assert_eq!(f.count_hashed(h), 0);
                assert_eq!(f.remove_hashed(h), Err(RemoveError::NotPresent));
            }
        }
        let mi = CounterOptions {
            method: Some(SpectralMethod::MinimalIncrease),
            ..opts()
        };
        let mut f = AnyCounter::build(Kind::Spectral, &mi).unwrap();
        let h = f.hasher().hash("a");
        f.insert_hashed(h).unwrap();
        assert!(matches!(
            f.remove_hashed(h),
            Err(RemoveError::Unsupported(_))
        ));
    }

    #[test]
    fn options_of_other_kinds_and_bad_values_are_refused() {
        let bad = [
            (
                Kind::Counting,
                CounterOptions {
                    width: Some(10),
                    ..opts()
                },
            ),
            (
                Kind::Counting,
                CounterOptions {
                    counter_bits: Some(33),
                    ..opts()
                },
            ),
            (
                Kind::CountMin,
                CounterOptions {
                    width: Some(0),
                    depth: Some(3),
                    ..CounterOptions::default()
                },
            ),
            (Kind::CountMin, opts()),
            (Kind::Blocked, opts()),
        ];
        for (k, o) in bad {
            assert!(AnyCounter::build(k, &o).is_err(), "{k:?} {o:?}");
        }
        let set = crate::BlockedBloomFilter::try_new(10, 0.1).unwrap();
        assert!(AnyCounter::from_bytes(&set.to_bytes()).is_err());
    }
}
