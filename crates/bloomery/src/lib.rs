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
//! | a set with deletions | [`CountingBloomFilter`] | w-bit saturating counters (002 §2.5); refuses removals that would create false negatives |
//! | a set with deletions, speed matters | [`BlockedCountingBloomFilter`] | a key's counters in one cache line: one miss per op, 13–14% more memory at 1% |
//! | a set with deletions, less memory | [`DLeftCountingBloomFilter`] | fingerprints and small counters in d-left buckets (Bonomi et al. 2006) |
//! | counts of a stream, guaranteed error, mergeable | [`CountMinSketch`] | (ε, δ) sizing, conservative update (002 §8.1, §9) |
//! | counts of a multiset with deletions | [`SpectralBloomFilter`] | Minimum Selection, Minimal Increase or Recurring Minimum (002 §9) |
//! | small counts, mostly distinct inputs, no deletion | [`IterativeBloomFilter`] | repeats cost one bit each, no counters to size (004) |
//! | counts of large flows from one bit array | [`SpaceCodeBloomFilter`] | groups of hashes, maximum-likelihood counts (003) |
//! | URLs for a crawler's URL-seen test, the layered model of 001 | [`MultiLayerBloomFilter`] | one filter per URL segment plus an XOR layer; documented URL normalisation (001) |
//! | path queries (`/a/b`, `a/b`, `a//b`) over trees such as XML | [`BreadthBloomFilter`], [`DepthBloomFilter`] | per-level names or per-length sub-paths (000 §6) |
//! | routing towards resources by hop distance | [`AttenuatedBloomFilter`] | d filters per edge, built by union (002 §6.2) |
//! | a static key → small value map | [`BloomierFilter`] | hypergraph peeling, optional fingerprint (002 §9) |
//! | a static set, least memory | [`XorFilter`] | binary-fuse layout, ≈ 1.13× the lower bound with 8-bit fingerprints |
//! | the k heaviest items of a stream, listed | [`TopK`] | HeavyKeeper (Gong et al. 2018): counts with exponential decay plus a min-heap; counts never over-estimate |
//!
//! ## Layers
//! [`hash`] (one hash path) → [`store`] (aligned words, owned or mapped) → the structures →
//! [`format`](mod@format) (one file format) with [`params`] (all the math) beside them. See
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
pub mod any_counter;
pub mod attenuated;
pub mod blocked;
pub mod blocked_counting;
pub mod bloomier;
pub mod breadth;
pub mod classic;
pub mod compress;
pub mod count_min;
pub mod counters;
pub mod counting;
#[cfg(test)]
mod counting_family_tests;
pub mod cuckoo;
pub mod depth;
pub mod dleft;
pub mod edit;
pub mod error;
pub mod filter;
pub mod format;
pub mod hash;
pub mod iterative;
pub mod mlbf;
pub mod params;
pub mod partitioned;
pub mod peel;
pub mod scalable;
#[cfg(feature = "serde")]
mod serde_impl;
pub mod simd;
pub mod space_code;
pub mod spectral;
pub mod split_block;
pub mod store;
pub mod topk;
pub mod tree_path;
#[cfg(feature = "xml")]
pub mod xml;
pub mod xor;

pub use any::{AnyFilter, FilterInfo};
pub use any_counter::{AnyCounter, CounterInfo, CounterOptions};
pub use attenuated::AttenuatedBloomFilter;
pub use blocked::{
    AtomicBlockedBloomFilter, BlockLayout, BlockedBloomFilter, InsertRegions, RegionWriter,
};
pub use blocked_counting::BlockedCountingBloomFilter;
pub use bloomier::BloomierFilter;
pub use breadth::BreadthBloomFilter;
pub use classic::BloomFilter;
pub use count_min::CountMinSketch;
pub use counting::CountingBloomFilter;
pub use cuckoo::{CuckooFilter, CuckooOptions};
pub use depth::DepthBloomFilter;
pub use dleft::DLeftCountingBloomFilter;
pub use error::{Error, FormatError, Incompatibility, Result};
pub use filter::{Build, Builder, Count, Filter, Merge, Remove, RemoveError, Stats};
pub use format::{Kind, Persist, Verify, FORMAT_VERSION};
pub use hash::{HashAlgorithm, Hashed, Key, KeyHasher, SeedKind};
pub use iterative::IterativeBloomFilter;
pub use mlbf::{normalize_url, MultiLayerBloomFilter};
pub use partitioned::PartitionedBloomFilter;
pub use scalable::ScalableBloomFilter;
pub use space_code::SpaceCodeBloomFilter;
pub use spectral::{SpectralBloomFilter, SpectralMethod};
pub use split_block::SplitBlockBloomFilter;
pub use store::{global_allocator_only, max_bytes, set_global_allocator_only, set_max_bytes};
pub use topk::TopK;
pub use xor::XorFilter;

/// Everything needed to use the filters: `use bloomery::prelude::*;`.
pub mod prelude {
    pub use crate::{
        AnyFilter, BlockedBloomFilter, BloomFilter, Count, Filter, Key, KeyHasher, Merge,
        PartitionedBloomFilter, Persist, Remove, ScalableBloomFilter, SplitBlockBloomFilter, Stats,
    };
}
