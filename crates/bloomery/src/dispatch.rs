//! What a structure provides to be held at run time: [`SetKind`] for the kinds
//! [`AnyFilter`](crate::AnyFilter) holds, [`OtherKind`] for those loaded through their own
//! types (the counting kinds' `CounterKind` is in `multisets/`, beside them). Each structure
//! implements its trait in its own module; the run-time types in `any/` dispatch to it, for
//! every kind listed in [`for_each_kind!`](crate::kind::for_each_kind). This module is part of
//! the core: it names no structure.
//!
//! Operations a kind lacks keep the default (an [`Error::Unsupported`] naming the operation);
//! its [`Capabilities`] say which it offers, and a test checks the two agree for every kind.

use crate::error::{Error, Result};
use crate::filter::Merge;
use crate::hash::{Hashed, KeyHasher};
use crate::io::format::Persist;
use crate::kind::{Capabilities, Capability, Kind};

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

    /// The figures of a filter whose rate follows from its fill alone (a classic filter),
    /// its `ones` bits set already counted.
    pub fn of_ones<S: crate::filter::Stats>(f: &S, ones: u64) -> Self {
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

/// A kind loaded through its own type only (the table's `others` group): what it offers.
pub(crate) trait OtherKind {
    /// What this kind offers.
    const CAPABILITIES: Capabilities;
}
