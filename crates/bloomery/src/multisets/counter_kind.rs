//! What a counting structure provides to be held by [`AnyCounter`](crate::AnyCounter):
//! [`CounterKind`], and what it reports ([`CounterInfo`]). Each counting kind implements it in
//! its own module; [`counting_filter_kind!`] writes the methods of those that are a
//! [`Filter`](crate::filter::Filter) with [`Count`](crate::filter::Count).
//!
//! Operations a kind lacks keep the default (an `Unsupported` error naming the operation); its
//! [`Capabilities`] say which it offers.

use crate::dispatch::unsupported;
use crate::error::Result;
use crate::filter::RemoveError;
use crate::hash::{Hashed, KeyHasher};
use crate::io::format::Persist;
use crate::kind::{Capabilities, Capability};
use crate::sets::classic::BloomFilter;

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
    /// Hint the CPU to fetch what an insert, count or remove of the key will read.
    fn prefetch_hashed(&self, _h: Hashed) {}
    /// Why this instance cannot delete, or `None` when it can: by default, whether its kind
    /// offers [`Capabilities::remove`].
    fn remove_unsupported(&self) -> Option<RemoveError> {
        (!Self::CAPABILITIES.remove).then_some(RemoveError::Unsupported(
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

/// [`CounterKind::rates`] from a structure's capacity, target rate (0: none) and rate now.
pub(crate) fn counter_rates(
    capacity: u64,
    target: f64,
    now: f64,
) -> (u64, Option<f64>, Option<f64>) {
    (capacity, (target > 0.0).then_some(target), Some(now))
}

/// The [`CounterKind`] methods of a counting structure that is a
/// [`Filter`](crate::filter::Filter) with [`Count`](crate::filter::Count): the hasher, inserts
/// and counts through those traits, `len` through the path given (what the structure counts as
/// its inserts), the rates through its `capacity`, `target_fpr` and `current_fpr`. With
/// `remove`, also the prefetch (its own `prefetch_hashed`) and the removal through
/// [`Remove`](crate::filter::Remove), refused first when
/// [`remove_unsupported`](CounterKind::remove_unsupported) says so.
macro_rules! counting_filter_kind {
    (len: $len:path) => {
        fn hasher(&self) -> &$crate::hash::KeyHasher {
            $crate::filter::Filter::hasher(self)
        }
        fn len(&self) -> u64 {
            $len(self)
        }
        fn insert_hashed(&mut self, h: $crate::hash::Hashed) -> $crate::error::Result<()> {
            $crate::filter::Filter::insert_hashed(self, h);
            Ok(())
        }
        fn count_hashed(&self, h: $crate::hash::Hashed) -> u64 {
            $crate::filter::Count::count_hashed(self, h)
        }
        fn rates(&self) -> (u64, Option<f64>, Option<f64>) {
            $crate::multisets::counter_kind::counter_rates(
                self.capacity(),
                self.target_fpr(),
                self.current_fpr(),
            )
        }
    };
    (len: $len:path, remove) => {
        $crate::multisets::counter_kind::counting_filter_kind!(len: $len);
        fn prefetch_hashed(&self, h: $crate::hash::Hashed) {
            Self::prefetch_hashed(self, h)
        }
        fn remove_hashed(
            &mut self,
            h: $crate::hash::Hashed,
        ) -> std::result::Result<(), $crate::filter::RemoveError> {
            if let Some(e) = $crate::multisets::counter_kind::CounterKind::remove_unsupported(self) {
                return Err(e);
            }
            $crate::filter::Remove::remove_hashed(self, h)
        }
    };
}
pub(crate) use counting_filter_kind;
