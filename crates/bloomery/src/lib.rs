//! # bloomery — the Bloom-filter family, done properly
//!
//! Fast filters that give the false-positive rate they promise, and files that still load next
//! year.
//!
//! ## Adopter's guide: your job → the structure
//!
//! | your job | the structure | why |
//! |---|---|---|
//! | drop duplicates from a stream ("seen before?") | [`BlockedBloomFilter`] | one cache miss per key; `insert` returns whether the key was new |
//! | "seen among the last N items?", memory fixed forever | [`AgePartitionedBloomFilter`] | a sliding window: keys older than N (plus a bounded slack) are forgotten |
//! | "seen in the last 10 minutes?", whatever the rate | [`TimeWindowFilter`] | a time window on the caller's clock: memory follows the rate, the rate stays at target |
//! | check keys against a blocklist | [`BlockedBloomFilter`], or [`XorFilter`] when the list is fixed | no false negatives; the xor filter is smaller but static |
//! | a set whose final size you do not know | [`ScalableBloomFilter`] | grows by adding filters, keeping the compound rate under target |
//! | a set with deletions | [`CuckooFilter`], [`CountingBloomFilter`] | removable fingerprints or counters |
//! | prune Parquet row groups | [`SplitBlockBloomFilter`], module `parquet` (feature) | the Parquet spec's filter, byte for byte |
//! | count how often keys occur | [`CountMinSketch`] | bounded over-estimate (ε, δ), mergeable |
//! | the heaviest hitters of a stream | [`TopK`] | HeavyKeeper: the k largest counts, never over-estimated |
//! | quantiles, ranks, a CDF of numbers | [`TDigest`] | fixed memory, mergeable |
//! | a static set, least memory | [`XorFilter`] | binary-fuse layout near the lower bound |
//! | a static key → small value map | [`BloomierFilter`] | answers values, not only membership |
//! | URLs (a crawler's URL-seen test) | [`MultiLayerBloomFilter`] | one layer per URL segment, normalised URLs |
//! | path queries over XML or other trees | [`BreadthBloomFilter`], [`DepthBloomFilter`] | per-level or per-length sub-paths; `keys::xml` (feature) reads documents |
//! | a file whose kind you learn when you open it | [`AnyFilter`], [`AnyCounter`] | every kind behind one type |
//!
//! The full list, with the papers each structure follows, is under *Which structure?* below.
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
//! | a set, speed matters (the usual case) | [`BlockedBloomFilter`] | one cache miss per op; batched and parallel paths |
//! | a set shared by threads | [`AtomicBlockedBloomFilter`] | the blocked filter with lock-free inserts through `&self` |
//! | a set, textbook behaviour / halving / papers' shapes | [`BloomFilter`] | exact formulas (Salman §2; Broder & Mitzenmacher §2) |
//! | a set, k independent slices | [`PartitionedBloomFilter`] | Broder & Mitzenmacher §2.1; the layout of scalable filters (Almeida et al.) |
//! | a Parquet column | [`SplitBlockBloomFilter`] (a bitset probed in place: [`SplitBlockBits`]) | the Parquet spec's bits, byte for byte |
//! | row-group filters of a Parquet file, kept beside it (feature `parquet`) | `ParquetSidecar` | one split-block filter per row group of a column, in one file |
//! | a stream, "seen among the last N items?", fixed memory | [`AgePartitionedBloomFilter`] | a sliding window: no false negative inside it, rate ≤ target at every point, older keys forgotten (Shtul, Baquero & Almeida §3–4) |
//! | a stream, "seen in the last T ticks?", time given by the caller | [`TimeWindowFilter`] | age-partitioned slices with a time stamp each, retired when they leave the window (Rodrigues, Shtul, Baquero & Almeida) |
//! | a set of unknown size | [`ScalableBloomFilter`] | grows, keeping the compound rate under target (Almeida et al.) |
//! | a set with deletions, fingerprints | [`CuckooFilter`] | buckets of fingerprints, deletable, about as small as a Bloom filter at low rates (Fan et al.) |
//! | a set with deletions | [`CountingBloomFilter`] | w-bit saturating counters (Broder & Mitzenmacher §2.5); refuses removals that would create false negatives |
//! | a set with deletions, speed matters | [`BlockedCountingBloomFilter`] | a key's counters in one cache line: one miss per op |
//! | a set with deletions, less memory | [`DLeftCountingBloomFilter`] | fingerprints and small counters in d-left buckets (Bonomi et al.) |
//! | counts of a stream, guaranteed error, mergeable | [`CountMinSketch`] | (ε, δ) sizing, conservative update (Broder & Mitzenmacher §8.1, §9) |
//! | counts of a multiset with deletions | [`SpectralBloomFilter`] | Minimum Selection, Minimal Increase or Recurring Minimum (Broder & Mitzenmacher §9) |
//! | small counts, mostly distinct inputs, no deletion | [`IterativeBloomFilter`] | repeats cost one bit each, no counters to size (Matsumoto, Hazeyama & Kadobayashi) |
//! | counts of large flows from one bit array | [`SpaceCodeBloomFilter`] | groups of hashes, maximum-likelihood counts (Kumar et al.) |
//! | URLs for a crawler's URL-seen test | [`MultiLayerBloomFilter`] | one filter per URL segment plus an XOR layer; documented URL normalisation (Cen, Xu & Sun) |
//! | path queries (`/a/b`, `a/b`, `a//b`) over trees such as XML | [`BreadthBloomFilter`], [`DepthBloomFilter`] | per-level names or per-length sub-paths (Salman §6) |
//! | routing towards resources by hop distance | [`AttenuatedBloomFilter`] | d filters per edge, built by union (Broder & Mitzenmacher §6.2) |
//! | a static key → small value map | [`BloomierFilter`] | hypergraph peeling, optional fingerprint (Chazelle et al.; Broder & Mitzenmacher §9) |
//! | a static set, least memory | [`XorFilter`] | binary-fuse layout, ≈ 1.13× the lower bound with 8-bit fingerprints (Graf & Lemire) |
//! | the k heaviest items of a stream, listed | [`TopK`] | HeavyKeeper (Gong et al.): counts with exponential decay plus a min-heap; counts never over-estimate |
//! | quantiles, CDF and ranks of a stream of numbers | [`TDigest`] | merging t-digest with the k₁ scale (Dunning & Ertl §2.1–2.2); fixed memory, mergeable |
//! | data moved from RedisBloom (`BF.*`, `CF.*` SCANDUMP chunks) | [`redisbloom::RedisBloomFilter`], [`redisbloom::RedisBloomCuckooFilter`] | RedisBloom's exact hashing and layout: answers as RedisBloom did ([`RedisBloomValue::from_chunks`](redisbloom::RedisBloomValue::from_chunks)) |
//! | a file whose kind you learn when you open it | [`AnyFilter`], [`AnyCounter`] | every set kind, every counting kind, behind one type |
//!
//! The papers are listed, with what bloomery takes from each, in `docs/PAPERS.md`.
//!
//! ## Layers
//! [`KeyHasher`] (the one hash path: key bytes → [`Hashed`]) → the structures, which keep their
//! bits and counters in one storage layer (64-byte aligned words, owned or memory-mapped) →
//! [`Persist`] (one versioned, checksummed file format; [`compress`] for its compressed and
//! delta forms), with [`params`] (all the math) beside them. See `ARCHITECTURE.md` for the
//! data flow and where to add a structure.
//!
//! ## Configuration
//! Every structure is made the same way: `try_new(capacity, fpr)` where a rate applies,
//! `try_with_shape(..)` for an explicit shape, or `builder()` … `try_build()`. Every builder
//! carries the same [`Sizing`] setters (`capacity`, `fpr`, `hasher`/`seed`/`keyed`,
//! `max_bytes`, and the explicit shape) plus the settings of its own structure only: `growth`
//! is a method of a scalable filter's builder, `layout` of a blocked filter's. A kind chosen
//! at run time is built from a [`Spec`] (kind, sizing, [`KindOptions`](kinds::KindOptions)) by
//! [`AnyFilter::try_from_spec`] or [`AnyCounter::try_from_spec`], which refuse by name an
//! option the kind does not read.
//!
//! ```
//! use bloomery::prelude::*;
//! use bloomery::{AnyFilter, Kind, Sizing, Spec};
//!
//! # fn main() -> bloomery::Result<()> {
//! let sizing = Sizing::default().capacity(100_000).fpr(0.001).seed(42);
//! let blocked = BlockedBloomFilter::builder().sizing(sizing).try_build()?;
//! let scalable = ScalableBloomFilter::builder().sizing(sizing).growth(4).try_build()?;
//! let chosen = AnyFilter::try_from_spec(&Spec::new(Kind::Classic).sizing(sizing))?;
//! // one seed (the blocked filter's salted layout hashes with xxh3-64 under it)
//! assert_eq!(blocked.hasher().seed(), scalable.hasher().seed());
//! assert_eq!(chosen.kind(), Kind::Classic);
//! # Ok(()) }
//! ```
//!
//! ## Cargo features
//! | feature | default | what it adds |
//! |---|---|---|
//! | `serde` | on | `Serialize`/`Deserialize` for every structure (as the file format's bytes) |
//! | `rayon` | on | parallel bulk inserts on rayon's pool: `BlockedBloomFilter::par_insert_all`, `par_insert_hashed`, `par_insert_bucketed`; the `parquet` module's scans run in parallel |
//! | `mmap` | on | files used in place through memory maps (crate `memmap2`): [`Persist::open_mmap`], [`MappedFile`](file::MappedFile), [`FileUpdate`](file::FileUpdate); large arrays in anonymous maps with huge pages |
//! | `tempfile` | on | atomic saves through the `tempfile` crate's temporary files |
//! | `xml` | off | the `xml` module: XML documents to element paths for the Breadth/Depth filters |
//! | `parquet` | off | the `parquet` module: the split-block filters inside Parquet files, sidecar filters, pruning |
//!
//! With `default-features = false` the library needs only `xxhash-rust` and `siphasher` (the
//! hashers), `thiserror`, `getrandom` (keyed hashers), `bytemuck` and `memchr`:
//! - without `rayon`, the `par_insert_*` methods do not exist (`insert_lines` and
//!   `fill_regions` still insert from several threads, on `std` threads);
//! - without `mmap`, `open_mmap`, [`MappedFile::open`](file::MappedFile::open), [`FileUpdate::open`](file::FileUpdate::open) and
//!   `AnyFilter`/`AnyCounter`'s `open_mmap` return [`Error::Unsupported`] saying so (the
//!   types and methods stay, so code compiles either way); `load` reads files into memory;
//! - without `tempfile`, saves stay atomic: the same steps (a new file created exclusively
//!   beside the target, mode 0600, fsync, rename, fsync of the directory) are done by the
//!   library itself.
//!
//! ```toml
//! bloomery = { version = "0.1", default-features = false }  # the filters and files only
//! ```
//!
//! ## Guarantees
//! - No false negatives, ever: every structure is property-tested for it.
//! - No panics on user input: parameters, files and merges return typed [`Error`]s; sizes
//!   beyond [`max_bytes`](tuning::max_bytes) are refused before allocating.
//! - The hash of format version 1 never changes (golden tests pin it), and files of every
//!   released version load.

#![warn(missing_docs)]

mod any;
mod counters;
mod dispatch;
mod error;
mod filter;
mod hash;
mod io;
mod kind;
mod map;
mod multisets;
mod murmur;
pub mod params;
#[cfg(feature = "parquet")]
pub mod parquet;
mod peel;
pub mod redisbloom;
#[cfg(feature = "serde")]
mod serde_impl;
mod sets;
pub mod shard;
mod simd;
mod store;
mod structured;
mod version;

// The crate root: the structures, the core traits, errors, run-time kinds. Everything else
// is in the named modules below.

// Run-time kinds.
pub use any::counter::AnyCounter;
pub use any::filter::AnyFilter;
pub use any::spec::Spec;
pub use kind::Kind;
// Core traits, errors and the one hash path.
pub use error::{Error, FormatError, Incompatibility, Result};
pub use filter::{
    Build, Builder, Count, Filter, KeySet, Merge, Remove, RemoveError, Sizing, Stats,
};
pub use hash::{Hashed, Key, KeyHasher};
pub use io::format::Persist;
pub use io::header::Verify;
pub use multisets::count_min32::CounterOverflow;
pub use peel::PeelError;
// Sets.
pub use sets::blocked::{AtomicBlockedBloomFilter, BlockedBloomFilter};
pub use sets::classic::BloomFilter;
pub use sets::cuckoo::CuckooFilter;
pub use sets::partitioned::PartitionedBloomFilter;
pub use sets::scalable::ScalableBloomFilter;
pub use sets::split_block::{SplitBlockBits, SplitBlockBloomFilter};
pub use sets::window::time::TimeWindowFilter;
pub use sets::window::AgePartitionedBloomFilter;
pub use sets::xor::XorFilter;
// Multisets and sketches.
pub use multisets::blocked_counting::BlockedCountingBloomFilter;
pub use multisets::count_min::CountMinSketch;
pub use multisets::count_min32::CountMinSketch32;
pub use multisets::counting::CountingBloomFilter;
pub use multisets::dleft::DLeftCountingBloomFilter;
pub use multisets::iterative::IterativeBloomFilter;
pub use multisets::space_code::SpaceCodeBloomFilter;
pub use multisets::spectral::SpectralBloomFilter;
pub use multisets::tdigest::TDigest;
pub use multisets::topk::TopK;
// Structured keys.
pub use structured::attenuated::AttenuatedBloomFilter;
pub use structured::bloomier::BloomierFilter;
pub use structured::breadth::BreadthBloomFilter;
pub use structured::depth::DepthBloomFilter;
pub use structured::mlbf::MultiLayerBloomFilter;

/// The builders of the structures (each reached by `Type::builder()`) and their shape options.
pub mod builders {
    pub use crate::multisets::blocked_counting::BlockedCountingBuilder;
    pub use crate::multisets::count_min::CountMinBuilder;
    pub use crate::multisets::counting::CountingBuilder;
    pub use crate::multisets::dleft::DLeftBuilder;
    pub use crate::multisets::iterative::IterativeBuilder;
    pub use crate::multisets::space_code::SpaceCodeBuilder;
    pub use crate::multisets::spectral::{SpectralBuilder, SpectralMethod};
    pub use crate::multisets::topk::TopKBuilder;
    pub use crate::sets::blocked::BlockLayout;
    pub use crate::sets::cuckoo::CuckooBuilder;
    pub use crate::sets::split_block::parquet_num_bytes;
    pub use crate::sets::window::time::{TimeWindowBuilder, TimeWindowOptions};
    pub use crate::sets::window::{AgePartitionedBuilder, AgePartitionedOptions, WindowLayout};
    pub use crate::sets::xor::XorBuilder;
    pub use crate::structured::attenuated::AttenuatedBuilder;
    pub use crate::structured::bloomier::BloomierBuilder;
    pub use crate::structured::breadth::BreadthBuilder;
    pub use crate::structured::depth::DepthBuilder;
    pub use crate::structured::mlbf::MlbfBuilder;
}

/// Run-time kinds: what a [`Kind`] can do, the options of a
/// [`Spec`], and what [`AnyFilter`] and
/// [`AnyCounter`] report about a file.
pub mod kinds {
    pub use crate::any::filter::FilterInfo;
    pub use crate::any::spec::KindOptions;
    pub use crate::any::stream::OverlapInfo;
    pub use crate::kind::{Capabilities, Capability};
    pub use crate::multisets::counter_kind::CounterInfo;
}

/// The file format: headers, peeking at a file, files used in place, save options and
/// progress, and a file of any kind opened once for reading ([`Structure`](file::Structure))
/// or an update ([`Update`](file::Update), the policy that updates a file in place of a
/// copy). [`Persist`] is the user's entry point; the compressed and delta forms are in
/// [`compress`].
pub mod file {
    pub use crate::any::filter::EmptyFile;
    pub use crate::any::open::{
        one_pass_above, Sealer, Stage, StageProgress, Structure, Update, UpdateOptions, UpdatePath,
        RELEASE_ABOVE,
    };
    pub use crate::io::format::{
        encoded_header_len, encoded_range, peek_file, read_file, read_header as peek_header,
        Encode, FileBuf, Progress, SaveOptions,
    };
    pub use crate::io::header::{
        decode as decode_header, peek as peek_header_bytes, Decoded, FileHead, Header, Verify,
        FORMAT_VERSION, PASS_CHUNK,
    };
    pub use crate::io::mapped::{FileUpdate, MappedFile};
}

/// Compressed Bloom filters and delta updates: the compressed and delta forms of the file
/// format (see the module docs of its items), and saves in the compressed form.
pub mod compress {
    pub use crate::io::compress::*;
    pub use crate::io::format::{save_bytes, save_compressed};
}

/// The hash path's parts: algorithms, seeds, the mixing and range-reduction functions, and
/// the masked hash of split-block filters.
pub mod hashing {
    pub use crate::hash::{mix64, reduce, HashAlgorithm, SeedKind, StableHash};
    pub use crate::sets::split_block::MaskedHash;
}

/// Bulk input: keys from lines of text and from Arrow arrays, and the region writers of
/// parallel fills.
pub mod lines {
    pub use crate::any::arrow::ArrowBinaryKeys;
    pub use crate::sets::blocked::lines::{
        LineCounts, LineError, LineKeys, LineSource, WholeLines, LINE_CHUNK, SWEEP_STEP,
    };
    pub use crate::sets::blocked::{InsertRegions, RegionWriter};
}

/// Helpers for structured keys: URL normalisation (multi-layer filters), edit-distance
/// variants, path queries (breadth and depth filters) and, with feature `xml`, XML documents
/// as element paths.
pub mod keys {
    pub use crate::structured::edit::{edit1_variants, PRINTABLE_ASCII};
    pub use crate::structured::mlbf::normalize_url;
    pub use crate::structured::tree_path::PathQuery;
    #[cfg(feature = "xml")]
    pub use crate::structured::xml;
}

/// Memory and speed settings: the memory limit, the allocator switch, the prefetch pipeline of
/// batched inserts and the SIMD paths compiled in.
pub mod tuning {
    pub use crate::any::batch::PREFETCH_AHEAD;
    pub use crate::counters::MAX_WIDTH as MAX_COUNTER_WIDTH;
    pub use crate::simd::paths as simd_paths;
    pub use crate::store::{
        global_allocator_only, max_bytes, set_global_allocator_only, set_max_bytes, Pipeline,
        DEFAULT_MAX_BYTES,
    };
}

/// Everything needed to use the filters: `use bloomery::prelude::*;`.
pub mod prelude {
    pub use crate::{
        AnyFilter, BlockedBloomFilter, BloomFilter, Count, Filter, Key, KeyHasher, KeySet, Merge,
        PartitionedBloomFilter, Persist, Remove, ScalableBloomFilter, SplitBlockBloomFilter, Stats,
    };
}
