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

/// A count over a structure's whole array (the space-code filter's bits set, the d-left
/// filter's occupied cells), made the first time a figure needs it — a pass a step at a time,
/// a mapped file's pages dropped behind it ([`crate::store::Behind`]) — and kept up to date by
/// the structure's updates from then on. Opening a file reads none of the array, so a query
/// touches only its key's pages. Always equal to another (it is a function of the array,
/// which the structure compares).
#[derive(Clone, Default)]
pub(crate) struct LazyCount(std::sync::OnceLock<u64>);

impl LazyCount {
    /// A count already known.
    pub(crate) fn known(n: u64) -> Self {
        Self(std::sync::OnceLock::from(n))
    }

    /// The count, made by `count` (over the array as it is now) when not made yet.
    pub(crate) fn get_or(&self, count: impl FnOnce() -> u64) -> u64 {
        *self.0.get_or_init(count)
    }

    /// One more (a count not made yet will count the array as it is then).
    pub(crate) fn add(&mut self, n: u64) {
        if let Some(c) = self.0.get_mut() {
            *c = c.saturating_add(n);
        }
    }

    /// One less (as [`add`](Self::add)).
    pub(crate) fn sub(&mut self, n: u64) {
        if let Some(c) = self.0.get_mut() {
            *c = c.saturating_sub(n);
        }
    }
}

impl PartialEq for LazyCount {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for LazyCount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.get() {
            Some(n) => write!(f, "{n}"),
            None => f.write_str("not counted yet"),
        }
    }
}
