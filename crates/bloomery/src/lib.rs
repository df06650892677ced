//! # bloomery — the Bloom-filter family, done properly
//!
//! Fast filters that give the false-positive rate they promise, and files that still load next
//! year.
//!
//! ```
//! use bloomery::prelude::*;
//!
//! # fn main() -> bloomery::Result<()> {
//! // The fast default: one cache line per key, sized by an exact model of blocked filters.
//! let mut seen = BlockedBloomFilter::try_new(1_000_000, 0.01)?;
//! assert!(seen.insert("https://example.org/"));   // new
//! assert!(!seen.insert("https://example.org/"));  // already there
//! assert!(seen.contains("https://example.org/"));
//!
//! // One versioned, checksummed file format for every structure; saves are atomic.
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("seen.bloom");
//! seen.save(&path)?;
//! let back = BlockedBloomFilter::load(&path)?;
//! assert_eq!(back, seen);
//! # Ok(()) }
//! ```
//!
//! ## Which structure?
//!
//! | you have | pick | why |
//! |---|---|---|
//! | a set, speed matters (the usual case) | [`BlockedBloomFilter`] | one cache miss per op; concurrent, parallel and batched paths |
//! | a set, textbook behaviour / halving / papers' shapes | [`BloomFilter`] | exact formulas of 000 §2, 002 §2 |
//! | a set, k independent slices | [`PartitionedBloomFilter`] | 002 §2.1; the layout of scalable filters in Almeida et al. |
//! | a Parquet column | [`SplitBlockBloomFilter`] | the Parquet spec's bits, byte for byte |
//! | a set of unknown size | [`ScalableBloomFilter`] | grows, keeping the compound rate under target |
//!
//! ## Layers
//! [`hash`] (one hash path) → [`store`] (aligned words, owned or mapped) → the structures →
//! [`format`] (one file format) with [`params`] (all the math) beside them. See
//! `ARCHITECTURE.md` for the data flow and where to add a structure.
//!
//! ## Guarantees
//! - No false negatives, ever: every structure is property-tested for it.
//! - No panics on user input: parameters, files and merges return typed [`Error`]s; sizes
//!   beyond [`store::max_bytes`] are refused before allocating.
//! - The hash of format version 1 never changes (golden tests pin it), and files of every
//!   released version load.

#![warn(missing_docs)]

pub mod any;
pub mod blocked;
pub mod classic;
pub mod error;
pub mod filter;
pub mod format;
pub mod hash;
pub mod params;
pub mod partitioned;
pub mod scalable;
#[cfg(feature = "serde")]
mod serde_impl;
pub mod split_block;
pub mod store;

pub use any::{AnyFilter, FilterInfo};
pub use blocked::{AtomicBlockedBloomFilter, BlockedBloomFilter};
pub use classic::BloomFilter;
pub use error::{Error, FormatError, Incompatibility, Result};
pub use filter::{Build, Builder, Filter, Merge, Stats};
pub use format::{Kind, Persist, Verify};
pub use hash::{HashAlgorithm, Hashed, Key, KeyHasher, SeedKind};
pub use partitioned::PartitionedBloomFilter;
pub use scalable::ScalableBloomFilter;
pub use split_block::SplitBlockBloomFilter;

/// Everything needed to use the filters: `use bloomery::prelude::*;`.
pub mod prelude {
    pub use crate::{
        AnyFilter, BlockedBloomFilter, BloomFilter, Filter, Key, KeyHasher, Merge,
        PartitionedBloomFilter, Persist, ScalableBloomFilter, SplitBlockBloomFilter, Stats,
    };
}
