//! [`AnyFilter`]: any set structure behind one type, chosen at run time — what the CLI and
//! other dynamic callers load from files whose kind they do not know in advance.

use std::path::Path;

use crate::error::{Error, Incompatibility, Result};
use crate::filter::{Build, Builder, Filter, Merge, Stats};
use crate::format::{self, Kind, Persist, Source, Verify};
use crate::hash::{Hashed, KeyHasher};
use crate::{
    BlockedBloomFilter, BloomFilter, PartitionedBloomFilter, ScalableBloomFilter,
    SplitBlockBloomFilter,
};

/// Any of the set structures.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum AnyFilter {
    /// [`BloomFilter`]
    Classic(BloomFilter),
    /// [`PartitionedBloomFilter`]
    Partitioned(PartitionedBloomFilter),
    /// [`BlockedBloomFilter`]
    Blocked(BlockedBloomFilter),
    /// [`SplitBlockBloomFilter`]
    SplitBlock(SplitBlockBloomFilter),
    /// [`ScalableBloomFilter`]
    Scalable(ScalableBloomFilter),
}

/// Apply `$body` to the inner structure, whatever its kind.
macro_rules! each {
    ($self:expr, $f:ident => $body:expr) => {
        match $self {
            AnyFilter::Classic($f) => $body,
            AnyFilter::Partitioned($f) => $body,
            AnyFilter::Blocked($f) => $body,
            AnyFilter::SplitBlock($f) => $body,
            AnyFilter::Scalable($f) => $body,
        }
    };
}

/// The error for a kind [`AnyFilter`] does not hold (the counting family: multisets and
/// sketches, which are built and loaded through their own types).
fn not_a_set(k: Kind) -> Error {
    Error::Unsupported(format!(
        "{} is not one of AnyFilter's set structures: use its own type",
        k.name()
    ))
}

/// A summary of a structure's shape and state (what `bloomery info` prints).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct FilterInfo {
    /// Kind name.
    pub kind: &'static str,
    /// Format version it is written with.
    pub format_version: u16,
    /// Bits in the bit arrays.
    pub bits: u64,
    /// Bits set per key (0 when it varies, e.g. across scalable sub-filters).
    pub hashes: u32,
    /// Items inserted (counted on insert).
    pub items: u64,
    /// Items estimated from the fill.
    pub estimated_items: f64,
    /// Bytes of the bit arrays.
    pub bytes: u64,
    /// Bits per inserted item.
    pub bits_per_item: f64,
    /// Capacity it was sized for (0 if none).
    pub capacity: u64,
    /// Target false-positive rate (0 if none).
    pub target_fpr: f64,
    /// Fraction of bits set.
    pub fill_ratio: f64,
    /// False-positive rate implied by the current contents.
    pub current_fpr: f64,
    /// The lower bound on bits for `items` at `target_fpr`, n·log2(1/ε) (0 if unknown).
    pub lower_bound_bits: f64,
    /// Hash algorithm name.
    pub hash: &'static str,
    /// Seed kind name.
    pub seed_kind: &'static str,
    /// Sub-filters (scalable) or 1.
    pub sub_filters: usize,
}

impl Build for AnyFilter {
    fn build(b: &Builder<Self>) -> Result<Self> {
        Ok(match b.kind.unwrap_or(Kind::Blocked) {
            Kind::Classic => AnyFilter::Classic(b.retarget().try_build()?),
            Kind::Partitioned => AnyFilter::Partitioned(b.retarget().try_build()?),
            Kind::Blocked => AnyFilter::Blocked(b.retarget().try_build()?),
            Kind::SplitBlock => AnyFilter::SplitBlock(b.retarget().try_build()?),
            Kind::Scalable => AnyFilter::Scalable(b.retarget().try_build()?),
            k @ (Kind::Counting
            | Kind::DLeftCounting
            | Kind::Spectral
            | Kind::CountMin
            | Kind::Iterative
            | Kind::SpaceCode
            | Kind::Mlbf
            | Kind::Breadth
            | Kind::Depth
            | Kind::Attenuated
            | Kind::Bloomier
            | Kind::Xor
            | Kind::Cuckoo) => return Err(not_a_set(k)),
        })
    }
}

impl AnyFilter {
    /// A builder for `kind`.
    pub fn builder(kind: Kind) -> Builder<Self> {
        Builder::new().kind(kind)
    }

    /// The kind.
    pub fn kind(&self) -> Kind {
        match self {
            AnyFilter::Classic(_) => Kind::Classic,
            AnyFilter::Partitioned(_) => Kind::Partitioned,
            AnyFilter::Blocked(_) => Kind::Blocked,
            AnyFilter::SplitBlock(_) => Kind::SplitBlock,
            AnyFilter::Scalable(_) => Kind::Scalable,
        }
    }

    /// Decode any kind from bytes, verifying the checksum.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let d = format::decode(bytes, Verify::Checksum)?;
        Self::decode(&d, Source::Bytes(bytes))
    }

    fn decode(d: &format::Decoded, src: Source<'_>) -> Result<Self> {
        let limit = crate::store::max_bytes();
        Ok(match d.header.kind {
            Kind::Classic => AnyFilter::Classic(BloomFilter::decode_from(d, src, limit)?),
            Kind::Partitioned => {
                AnyFilter::Partitioned(PartitionedBloomFilter::decode_from(d, src, limit)?)
            }
            Kind::Blocked => AnyFilter::Blocked(BlockedBloomFilter::decode_from(d, src, limit)?),
            Kind::SplitBlock => {
                AnyFilter::SplitBlock(SplitBlockBloomFilter::decode_from(d, src, limit)?)
            }
            Kind::Scalable => AnyFilter::Scalable(ScalableBloomFilter::decode_from(d, src, limit)?),
            k @ (Kind::Counting
            | Kind::DLeftCounting
            | Kind::Spectral
            | Kind::CountMin
            | Kind::Iterative
            | Kind::SpaceCode
            | Kind::Mlbf
            | Kind::Breadth
            | Kind::Depth
            | Kind::Attenuated
            | Kind::Bloomier
            | Kind::Xor
            | Kind::Cuckoo) => {
                return Err(crate::error::FormatError::WrongKind {
                    expected:
                        "a set structure (classic, partitioned, blocked, split-block, scalable)",
                    found: k.name(),
                }
                .into())
            }
        })
    }

    /// Load any kind from a file, verifying the checksum.
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        Self::from_bytes(&format::read_limited(path.as_ref())?)
    }

    /// Open any kind through a read-only memory map (zero-copy; see [`Persist::open_mmap`]).
    pub fn open_mmap(path: impl AsRef<Path>, verify: Verify) -> Result<Self> {
        let map = format::map_file(path.as_ref())?;
        let d = format::decode(&map, verify)?;
        Self::decode(&d, Source::Mapped(&map))
    }

    /// Save atomically.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        each!(self, f => f.save(path))
    }

    /// The file format as bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        each!(self, f => f.to_bytes())
    }

    /// Union in place; the kinds, shapes and hashers must match.
    pub fn union_with(&mut self, other: &AnyFilter) -> Result<()> {
        match (self, other) {
            (AnyFilter::Classic(a), AnyFilter::Classic(b)) => a.union_with(b),
            (AnyFilter::Partitioned(a), AnyFilter::Partitioned(b)) => a.union_with(b),
            (AnyFilter::Blocked(a), AnyFilter::Blocked(b)) => a.union_with(b),
            (AnyFilter::SplitBlock(a), AnyFilter::SplitBlock(b)) => a.union_with(b),
            (AnyFilter::Scalable(a), AnyFilter::Scalable(b)) => a.union_with(b),
            (a, b) => Err(kind_mismatch(a, b)),
        }
    }

    /// Intersection in place; the kinds, shapes and hashers must match.
    pub fn intersect_with(&mut self, other: &AnyFilter) -> Result<()> {
        match (self, other) {
            (AnyFilter::Classic(a), AnyFilter::Classic(b)) => a.intersect_with(b),
            (AnyFilter::Partitioned(a), AnyFilter::Partitioned(b)) => a.intersect_with(b),
            (AnyFilter::Blocked(a), AnyFilter::Blocked(b)) => a.intersect_with(b),
            (AnyFilter::SplitBlock(a), AnyFilter::SplitBlock(b)) => a.intersect_with(b),
            (AnyFilter::Scalable(a), AnyFilter::Scalable(b)) => a.intersect_with(b),
            (a, b) => Err(kind_mismatch(a, b)),
        }
    }

    /// Halve (classic and blocked filters with a power-of-two size).
    pub fn fold(&self) -> Result<AnyFilter> {
        match self {
            AnyFilter::Classic(f) => Ok(AnyFilter::Classic(f.fold()?)),
            AnyFilter::Blocked(f) => Ok(AnyFilter::Blocked(f.fold()?)),
            other => Err(Error::Unsupported(format!(
                "{} filters cannot be folded",
                other.kind().name()
            ))),
        }
    }

    /// Estimated `(|A ∩ B|, |A ∪ B|)` for two filters of the same kind and shape.
    pub fn estimate_overlap(&self, other: &AnyFilter) -> Result<(f64, f64)> {
        match (self, other) {
            (AnyFilter::Classic(a), AnyFilter::Classic(b)) => {
                Ok((a.estimate_intersection(b)?, a.estimate_union(b)?))
            }
            (AnyFilter::Partitioned(a), AnyFilter::Partitioned(b)) => {
                Ok((a.estimate_intersection(b)?, a.estimate_union(b)?))
            }
            (AnyFilter::Blocked(a), AnyFilter::Blocked(b)) => {
                Ok((a.estimate_intersection(b)?, a.estimate_union(b)?))
            }
            (AnyFilter::SplitBlock(_), AnyFilter::SplitBlock(_))
            | (AnyFilter::Scalable(_), AnyFilter::Scalable(_)) => Err(Error::Unsupported(format!(
                "overlap estimates are not defined for {} filters",
                self.kind().name()
            ))),
            (a, b) => Err(kind_mismatch(a, b)),
        }
    }

    /// Mark a damaged byte range of the bit array as all ones (not for scalable filters).
    pub fn mark_damaged(&mut self, bytes: std::ops::Range<u64>) -> Result<()> {
        match self {
            AnyFilter::Classic(f) => f.mark_damaged(bytes),
            AnyFilter::Partitioned(f) => f.mark_damaged(bytes),
            AnyFilter::Blocked(f) => f.mark_damaged(bytes),
            AnyFilter::SplitBlock(f) => f.mark_damaged(bytes),
            AnyFilter::Scalable(_) => Err(Error::Unsupported(
                "mark_damaged on a scalable filter".into(),
            )),
        }
    }

    /// Clear every item.
    pub fn clear(&mut self) -> Result<()> {
        match self {
            AnyFilter::Classic(f) => f.clear(),
            AnyFilter::Partitioned(f) => f.clear(),
            AnyFilter::Blocked(f) => f.clear(),
            AnyFilter::SplitBlock(f) => f.clear(),
            AnyFilter::Scalable(_) => {
                return Err(Error::Unsupported("clear on a scalable filter".into()))
            }
        }
        Ok(())
    }

    /// Insert, reporting when a non-scaling filter is full.
    pub fn try_insert_hashed(&mut self, h: Hashed) -> Result<bool> {
        match self {
            AnyFilter::Scalable(f) => f.try_insert_hashed(h),
            other => Ok(other.insert_hashed(h)),
        }
    }

    /// Shape and state summary.
    pub fn info(&self) -> FilterInfo {
        let hasher = *self.hasher();
        let (bits, hashes, ones, fpr_now, capacity, target, estimated, subs) = match self {
            AnyFilter::Scalable(f) => (
                f.bit_len(),
                0,
                f.count_ones(),
                f.current_fpr(),
                f.capacity(),
                f.target_fpr(),
                f.estimated_len(),
                f.filters().len(),
            ),
            AnyFilter::Classic(f) => stats(f),
            AnyFilter::Partitioned(f) => stats(f),
            AnyFilter::Blocked(f) => stats(f),
            AnyFilter::SplitBlock(f) => stats(f),
        };
        let items = self.len();
        let lower = if target > 0.0 && items > 0 {
            crate::params::lower_bound_bits(items, target)
        } else {
            0.0
        };
        FilterInfo {
            kind: self.kind().name(),
            format_version: format::FORMAT_VERSION,
            bits,
            hashes,
            items,
            estimated_items: estimated,
            bytes: bits / 8,
            bits_per_item: if items > 0 {
                bits as f64 / items as f64
            } else {
                0.0
            },
            capacity,
            target_fpr: target,
            fill_ratio: if bits > 0 {
                ones as f64 / bits as f64
            } else {
                0.0
            },
            current_fpr: fpr_now,
            lower_bound_bits: lower,
            hash: hasher.algorithm().name(),
            seed_kind: hasher.seed_kind().name(),
            sub_filters: subs,
        }
    }
}

type StatTuple = (u64, u32, u64, f64, u64, f64, f64, usize);

fn stats<S: Stats>(f: &S) -> StatTuple {
    (
        f.bit_len(),
        f.hash_count(),
        f.count_ones(),
        f.current_fpr(),
        f.capacity(),
        f.target_fpr(),
        f.estimated_len(),
        1,
    )
}

fn kind_mismatch(a: &AnyFilter, b: &AnyFilter) -> Error {
    Error::Incompatible(Incompatibility::Kind {
        left: a.kind().name(),
        right: b.kind().name(),
    })
}

impl Filter for AnyFilter {
    fn hasher(&self) -> &KeyHasher {
        each!(self, f => f.hasher())
    }
    fn insert_hashed(&mut self, h: Hashed) -> bool {
        each!(self, f => f.insert_hashed(h))
    }
    fn contains_hashed(&self, h: Hashed) -> bool {
        each!(self, f => f.contains_hashed(h))
    }
    fn len(&self) -> u64 {
        each!(self, f => f.len())
    }
}
