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
//! | a set, speed matters (the usual case) | [`BlockedBloomFilter`] | one cache miss per op; batched and parallel paths |
//! | a set shared by threads | [`AtomicBlockedBloomFilter`] | the blocked filter with lock-free inserts through `&self` |
//! | a set, textbook behaviour / halving / papers' shapes | [`BloomFilter`] | exact formulas (Salman §2; Broder & Mitzenmacher §2) |
//! | a set, k independent slices | [`PartitionedBloomFilter`] | Broder & Mitzenmacher §2.1; the layout of scalable filters (Almeida et al.) |
//! | a Parquet column | [`SplitBlockBloomFilter`] (a bitset probed in place: [`SplitBlockBits`]) | the Parquet spec's bits, byte for byte |
//! | row-group filters of a Parquet file, kept beside it (feature `parquet`) | `ParquetSidecar` | one split-block filter per row group of a column, in one file |
//! | a stream, "seen among the last N items?", fixed memory | [`AgePartitionedBloomFilter`] | a sliding window: no false negative inside it, rate ≤ target at every point, older keys forgotten (Shtul, Baquero & Almeida §3–4) |
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
//! | data moved from RedisBloom (`BF.*`, `CF.*` SCANDUMP chunks) | [`RedisBloomFilter`], [`RedisBloomCuckooFilter`] | RedisBloom's exact hashing and layout: answers as RedisBloom did ([`RedisBloomValue::from_chunks`]) |
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
//! at run time is built from a [`Spec`] (kind, sizing, [`KindOptions`]) by
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
//! assert_eq!(blocked.hasher(), scalable.hasher());
//! assert_eq!(chosen.kind(), Kind::Classic);
//! # Ok(()) }
//! ```
//!
//! ## Cargo features
//! | feature | default | what it adds |
//! |---|---|---|
//! | `serde` | on | `Serialize`/`Deserialize` for every structure (as the file format's bytes) |
//! | `rayon` | on | parallel bulk inserts on rayon's pool: `BlockedBloomFilter::par_insert_all`, `par_insert_hashed`, `par_insert_bucketed`; the `parquet` module's scans run in parallel |
//! | `mmap` | on | files used in place through memory maps (crate `memmap2`): [`Persist::open_mmap`], [`MappedFile`], [`FileUpdate`]; large arrays in anonymous maps with huge pages |
//! | `tempfile` | on | atomic saves through the `tempfile` crate's temporary files |
//! | `xml` | off | the `xml` module: XML documents to element paths for the Breadth/Depth filters |
//! | `parquet` | off | the `parquet` module: the split-block filters inside Parquet files, sidecar filters, pruning |
//!
//! With `default-features = false` the library needs only `xxhash-rust` and `siphasher` (the
//! hashers), `thiserror`, `getrandom` (keyed hashers), `bytemuck` and `memchr`:
//! - without `rayon`, the `par_insert_*` methods do not exist (`insert_lines` and
//!   `fill_regions` still insert from several threads, on `std` threads);
//! - without `mmap`, `open_mmap`, [`MappedFile::open`], [`FileUpdate::open`] and
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
//!   beyond [`max_bytes`] are refused before allocating.
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
#[cfg(feature = "serde")]
mod serde_impl;
#[cfg(feature = "parquet")]
pub use parquet::ParquetSidecar;
mod redisbloom;
mod sets;
mod simd;
mod store;
mod structured;
mod version;

// Run-time kinds.
pub use any::arrow::ArrowBinaryKeys;
pub use any::batch::PREFETCH_AHEAD;
pub use any::counter::AnyCounter;
#[allow(deprecated)]
pub use any::counter::CounterOptions;
pub use any::filter::{AnyFilter, EmptyFile, FilterInfo};
pub use any::spec::{KindOptions, Spec};
pub use dispatch::CounterInfo;
pub use kind::{Capabilities, Capability, Kind};
// Core traits, errors and the one hash path.
pub use error::{Error, FormatError, Incompatibility, Result};
pub use filter::{
    Build, Builder, Count, Filter, KeySet, Merge, Remove, RemoveError, Sizing, Stats,
};
pub use hash::{mix64, reduce, HashAlgorithm, Hashed, Key, KeyHasher, SeedKind, StableHash};
// Storage: the memory limit and the prefetch pipeline of batched inserts.
pub use counters::MAX_WIDTH as MAX_COUNTER_WIDTH;
pub use simd::paths as simd_paths;
pub use store::{
    global_allocator_only, max_bytes, set_global_allocator_only, set_max_bytes, Pipeline,
    DEFAULT_MAX_BYTES,
};
// The file format.
/// Compressed Bloom filters and delta updates: the compressed and delta forms of the file
/// format (see the module docs of its items), and saves in the compressed form.
pub mod compress {
    pub use crate::io::compress::*;
    pub use crate::io::format::{save_bytes, save_compressed};
}
pub use io::format::{
    peek_file, read_file, read_header as peek_header, Encode, FileBuf, Persist, Progress,
    SaveOptions,
};
pub use io::header::{
    decode as decode_header, peek as peek_header_bytes, Decoded, FileHead, Header, Verify,
    FORMAT_VERSION, PASS_CHUNK,
};
pub use io::mapped::{FileUpdate, MappedFile};
// Sets.
pub use sets::blocked::lines::{
    LineCounts, LineError, LineKeys, LineSource, WholeLines, LINE_CHUNK, SWEEP_STEP,
};
pub use sets::blocked::{
    AtomicBlockedBloomFilter, BlockLayout, BlockedBloomFilter, InsertRegions, RegionWriter,
};
pub use sets::classic::BloomFilter;
#[allow(deprecated)]
pub use sets::cuckoo::{CuckooBuilder, CuckooFilter, CuckooOptions};
pub use sets::partitioned::PartitionedBloomFilter;
pub use sets::scalable::ScalableBloomFilter;
pub use sets::split_block::{parquet_num_bytes, MaskedHash, SplitBlockBits, SplitBlockBloomFilter};
pub use sets::window::{AgePartitionedBloomFilter, AgePartitionedBuilder};
pub use sets::xor::{XorBuilder, XorFilter};
// Multisets.
pub use multisets::blocked_counting::{BlockedCountingBloomFilter, BlockedCountingBuilder};
pub use multisets::count_min::{CountMinBuilder, CountMinSketch};
pub use multisets::count_min32::{CountMinSketch32, CounterOverflow};
pub use multisets::counting::{CountingBloomFilter, CountingBuilder};
pub use multisets::dleft::{DLeftBuilder, DLeftCountingBloomFilter};
pub use multisets::iterative::{IterativeBloomFilter, IterativeBuilder};
pub use multisets::space_code::{SpaceCodeBloomFilter, SpaceCodeBuilder};
pub use multisets::spectral::{SpectralBloomFilter, SpectralBuilder, SpectralMethod};
pub use multisets::tdigest::TDigest;
pub use multisets::topk::{TopK, TopKBuilder};
// RedisBloom's own structures (values moved from RedisBloom) and its SCANDUMP chunks.
pub use redisbloom::{
    RedisBloomChunkError, RedisBloomChunkFile, RedisBloomCuckooFilter, RedisBloomCuckooInsert,
    RedisBloomFilter, RedisBloomLink, RedisBloomType, RedisBloomValue,
};
// Structured keys.
pub use structured::attenuated::{AttenuatedBloomFilter, AttenuatedBuilder};
pub use structured::bloomier::{BloomierBuilder, BloomierFilter};
pub use structured::breadth::{BreadthBloomFilter, BreadthBuilder};
pub use structured::depth::{DepthBloomFilter, DepthBuilder};
pub use structured::edit::{edit1_variants, PRINTABLE_ASCII};
pub use structured::mlbf::{normalize_url, MlbfBuilder, MultiLayerBloomFilter};
pub use structured::peel::PeelError;
pub use structured::tree_path::PathQuery;
#[cfg(feature = "xml")]
pub use structured::xml;

/// Everything needed to use the filters: `use bloomery::prelude::*;`.
pub mod prelude {
    pub use crate::{
        AnyFilter, BlockedBloomFilter, BloomFilter, Count, Filter, Key, KeyHasher, KeySet, Merge,
        PartitionedBloomFilter, Persist, Remove, ScalableBloomFilter, SplitBlockBloomFilter, Stats,
    };
}
