//! Multiset structures: counts per key, deletion, and summaries of streams.
//!
//! Counting filters with deletion ([`counting`], [`blocked_counting`], [`dleft`]), count
//! estimators ([`spectral`], [`count_min`], [`iterative`], [`space_code`]) the heavy hitters
//! of a stream ([`topk`]) and its quantiles ([`tdigest`]). Each module's docs name its paper and say when to pick it.
//! `counter_kind` is how the counting kinds join [`AnyCounter`](crate::AnyCounter).

pub(crate) mod blocked_counting;
pub(crate) mod count_min;
pub(crate) mod count_min32;
pub(crate) mod counter_kind;
pub(crate) mod counting;
pub(crate) mod dleft;
pub(crate) mod iterative;
pub(crate) mod space_code;
pub(crate) mod spectral;
pub(crate) mod tdigest;
pub(crate) mod topk;

#[cfg(test)]
mod family_tests;
