//! Set structures: "is x in S?" with one-sided error.
//!
//! The Bloom filters proper ([`classic`], [`partitioned`], [`blocked`], [`split_block`]), the
//! growable [`scalable`] filter, and the fingerprint filters [`cuckoo`] (deletable) and [`xor`]
//! (static), and the sliding-window [`window`] filter that forgets. Each module's docs name its paper and say when to pick it.

pub(crate) mod bits;
pub(crate) mod blocked;
pub(crate) mod classic;
pub(crate) mod cuckoo;
pub(crate) mod partitioned;
pub(crate) mod scalable;
pub(crate) mod split_block;
pub(crate) mod window;
pub(crate) mod xor;
