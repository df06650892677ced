//! What a structure provides to be held at run time: [`SetKind`] for the kinds
//! [`AnyFilter`](crate::AnyFilter) holds, [`CounterKind`] for those of
//! [`AnyCounter`](crate::AnyCounter). Each structure implements its trait in its own module;
//! the run-time types in `any/` dispatch to it, for every kind listed in
//! [`for_each_kind!`](crate::kind::for_each_kind).
//!
//! Operations a kind lacks keep the default (an [`Error::Unsupported`] naming the operation);
//! its [`Capabilities`] say which it offers, and a test checks the two agree for every kind.

use crate::error::{Error, Result};
use crate::filter::{Merge, RemoveError};
use crate::hash::{Hashed, KeyHasher};
use crate::io::format::Persist;
use crate::kind::{Capabilities, Capability, Kind};
use crate::sets::classic::BloomFilter;

/// The error of an operation `kind` does not offer.
pub(crate) fn unsupported(kind: Kind, cap: Capability) -> Error {
    match kind.require(cap) {
        Err(e) => e,
        Ok(()) => Error::Unsupported(format!(
            "{} is not implemented for {} structures",
            cap.describe(),
            kind.name()
        )),
    }
}

/// Shape and state figures every set structure reports (see
/// [`FilterInfo`](crate::kinds::FilterInfo)).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SetStats {
    pub bits: u64,
    /// Bits set per key; 0 when it varies (scalable sub-filters).
    pub hashes: u32,
    pub ones: u64,
    pub current_fpr: f64,
    pub capacity: u64,
    pub target_fpr: f64,
    pub estimated_items: f64,
    /// Sub-filters (scalable) or 1.
    pub sub_filters: usize,
    /// URL layers of a multi-layer filter, else 0.
    pub layers: u32,
}

impl SetStats {
    /// The figures of a single bit-array filter.
    pub fn of<S: crate::filter::Stats>(f: &S) -> Self {
        Self {
            bits: f.bit_len(),
            hashes: f.hash_count(),
            ones: f.count_ones(),
            current_fpr: f.current_fpr(),
            capacity: f.capacity(),
            target_fpr: f.target_fpr(),
            estimated_items: f.estimated_len(),
            sub_filters: 1,
            layers: 0,
        }
    }

    /// The figures of a single bit-array filter whose `ones` bits set and current rate are
    /// already counted (by a pass over its words a piece at a time), as [`of`](Self::of)
    /// gives them.
    pub fn of_counted<S: crate::filter::Stats>(f: &S, ones: u64, current_fpr: f64) -> Self {
        let (bits, k) = (f.bit_len(), f.hash_count());
        Self {
            bits,
            hashes: k,
            ones,
            current_fpr,
            capacity: f.capacity(),
            target_fpr: f.target_fpr(),
            estimated_items: crate::params::estimate_items(bits, k, ones),
            sub_filters: 1,
            layers: 0,
        }
    }

    /// The figures of a classic filter (a rate that follows from the fill alone) whose
    /// `ones` bits set are already counted.
    pub fn of_ones(f: &crate::sets::classic::BloomFilter, ones: u64) -> Self {
        use crate::filter::Stats;
        let (bits, k) = (f.bit_len(), f.hash_count());
        Self {
            bits,
            hashes: k,
            ones,
            current_fpr: crate::params::fpr_from_fill(ones, bits, k),
            capacity: f.capacity(),
            target_fpr: f.target_fpr(),
            estimated_items: crate::params::estimate_items(bits, k, ones),
            sub_filters: 1,
            layers: 0,
        }
    }
}

/// The [`SetKind`] methods of a structure that hashes keys whole (a [`Filter`]): they
/// delegate to its [`Filter`] and [`KeySet`] implementations.
///
/// [`Filter`]: crate::Filter
/// [`KeySet`]: crate::KeySet
macro_rules! hashed_set_kind {
    () => {
        fn hasher(&self) -> &$crate::hash::KeyHasher {
            $crate::filter::Filter::hasher(self)
        }
        fn len(&self) -> u64 {
            $crate::filter::Filter::len(self)
        }
        fn try_insert_key(&mut self, key: &[u8]) -> $crate::error::Result<bool> {
            $crate::filter::KeySet::try_insert_key(self, key)
        }
        fn try_contains_key(&self, key: &[u8]) -> $crate::error::Result<bool> {
            $crate::filter::KeySet::try_contains_key(self, key)
        }
        fn try_insert_hashed(&mut self, h: $crate::hash::Hashed) -> $crate::error::Result<bool> {
            $crate::filter::Filter::try_insert_hashed(self, h)
        }
        fn try_contains_hashed(&self, h: $crate::hash::Hashed) -> $crate::error::Result<bool> {
            Ok($crate::filter::Filter::contains_hashed(self, h))
        }
    };
}
pub(crate) use hashed_set_kind;

/// A set structure held by [`AnyFilter`](crate::AnyFilter).
pub(crate) trait SetKind: Persist + Merge + Clone + std::fmt::Debug + PartialEq {
    /// What this kind offers.
    const CAPABILITIES: Capabilities;

    /// The file kind of this instance (the blocked filter's depends on its layout).
    fn kind(&self) -> Kind {
        Self::KIND
    }
    /// The hasher keys go through.
    fn hasher(&self) -> &KeyHasher;
    /// Items inserted (inserts that changed the structure).
    fn len(&self) -> u64;
    /// Insert a key given as bytes; a key the structure cannot take is an error.
    fn try_insert_key(&mut self, key: &[u8]) -> Result<bool>;
    /// Query a key given as bytes; a key the structure could never have taken is an error.
    fn try_contains_key(&self, key: &[u8]) -> Result<bool>;
    /// Insert a pre-hashed key (kinds with [`Capabilities::hashed`]).
    fn try_insert_hashed(&mut self, _h: Hashed) -> Result<bool> {
        Err(unsupported(self.kind(), Capability::Hashed))
    }
    /// Query a pre-hashed key (kinds with [`Capabilities::hashed`]).
    fn try_contains_hashed(&self, _h: Hashed) -> Result<bool> {
        Err(unsupported(self.kind(), Capability::Hashed))
    }
    /// Hint the CPU to fetch what inserting or querying the key will read.
    fn prefetch_hashed(&self, _h: Hashed) {}
    /// Shape and state figures.
    fn stats(&self) -> SetStats;
    /// The block layout's name, for the kinds that have several.
    fn layout_name(&self) -> Option<&'static str> {
        None
    }
    /// Halve ([`Capabilities::fold`]).
    fn fold(&self) -> Result<Self> {
        Err(unsupported(self.kind(), Capability::Fold))
    }
    /// Estimated `(|A ∩ B|, |A ∪ B|)` ([`Capabilities::estimate`]).
    fn estimate_overlap(&self, _other: &Self) -> Result<(f64, f64)> {
        Err(unsupported(self.kind(), Capability::Estimate))
    }
    /// Set every bit of a damaged byte range ([`Capabilities::mark_damaged`]).
    fn mark_damaged(&mut self, _bytes: std::ops::Range<u64>) -> Result<()> {
        Err(unsupported(self.kind(), Capability::MarkDamaged))
    }
    /// Forget every item ([`Capabilities::mark_damaged`] kinds, whose bits are one array).
    fn clear(&mut self) -> Result<()> {
        Err(unsupported(self.kind(), Capability::MarkDamaged))
    }
}

/// The target (when sized by a rate) and current false-positive rates of `f`.
pub(crate) fn rates(f: &impl crate::filter::Stats) -> (Option<f64>, Option<f64>) {
    let target = f.target_fpr();
    ((target > 0.0).then_some(target), Some(f.current_fpr()))
}

/// Kind-specific state of a counting-family structure (what `bloomery info` prints).
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{AnyCounter, CountingBloomFilter, Filter};
///
/// let mut f = CountingBloomFilter::try_new(1000, 0.01)?;
/// f.insert("a");
/// let info = AnyCounter::from(f).info();
/// assert_eq!(info.kind, "counting");
/// assert_eq!(info.items, 1);
/// assert!(info.removable);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
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
    /// Counting, blocked counting, ibf, scbf: the false-positive rate asked for at sizing
    /// (`None` when the shape was given).
    pub target_fpr: Option<f64>,
    /// Counting, blocked counting, ibf, scbf: this structure's own false-positive rate now,
    /// from its contents ([`Stats::current_fpr`](crate::Stats::current_fpr)).
    pub current_fpr: Option<f64>,
}

/// A counting structure held by [`AnyCounter`](crate::AnyCounter).
pub(crate) trait CounterKind: Persist + Clone + std::fmt::Debug {
    /// What this kind offers.
    const CAPABILITIES: Capabilities;

    /// The hasher keys go through.
    fn hasher(&self) -> &KeyHasher;
    /// Inserts so far (minus removals where deletion exists).
    fn len(&self) -> u64;
    /// Add one occurrence of a pre-hashed key (only a full structure fails, nothing changed).
    fn insert_hashed(&mut self, h: Hashed) -> Result<()>;
    /// Estimated count of a pre-hashed key.
    fn count_hashed(&self, h: Hashed) -> u64;
    /// Whether the estimated count of a pre-hashed key is above 0 (a kind whose count needs
    /// more than the key's cells answers without it).
    fn contains_hashed(&self, h: Hashed) -> bool {
        self.count_hashed(h) > 0
    }
    /// Hint the CPU to fetch what an insert, count or remove of the key will read.
    fn prefetch_hashed(&self, _h: Hashed) {}
    /// Why this instance cannot delete, or `None` when it can.
    fn remove_unsupported(&self) -> Option<RemoveError> {
        Some(RemoveError::Unsupported(
            "this structure has no deletion without false negatives",
        ))
    }
    /// Remove one occurrence of a pre-hashed key.
    fn remove_hashed(&mut self, _h: Hashed) -> std::result::Result<(), RemoveError> {
        Err(self
            .remove_unsupported()
            .unwrap_or(RemoveError::Unsupported(
                "this structure has no deletion without false negatives",
            )))
    }
    /// The plain Bloom filter answering membership as this structure does
    /// ([`Capabilities::flatten`]).
    fn to_plain_filter(&self) -> Result<BloomFilter> {
        Err(unsupported(Self::KIND, Capability::Flatten))
    }
    /// Fill in the kind-specific figures of `info` (the common ones are set by the caller).
    fn describe(&self, info: &mut CounterInfo);
    /// Capacity, the rate asked for at capacity and the rate now (what `add` checks after
    /// inserting), without the rest of [`describe`](Self::describe)'s passes; none by default.
    fn rates(&self) -> (u64, Option<f64>, Option<f64>) {
        (0, None, None)
    }
}

/// A kind loaded through its own type only (the table's `others` group): what it offers.
pub(crate) trait OtherKind {
    /// What this kind offers.
    const CAPABILITIES: Capabilities;
}

/// [`CounterKind::rates`] from a structure's capacity, target rate (0: none) and rate now.
pub(crate) fn counter_rates(
    capacity: u64,
    target: f64,
    now: f64,
) -> (u64, Option<f64>, Option<f64>) {
    (capacity, (target > 0.0).then_some(target), Some(now))
}
