//! [`AnyFilter`]: any set structure behind one type, chosen at run time — what the CLI and
//! other dynamic callers load from files whose kind they do not know in advance.
//!
//! The multi-layer filter ([`AnyFilter::Mlbf`], seed 001) is keyed by URL, not by one hash of
//! the key's bytes: use [`AnyFilter::try_insert_key`] / [`AnyFilter::contains_key`] (or
//! [`Filter::insert`] / [`Filter::contains`], which this type routes the same way) for every
//! kind; the pre-hashed `*_hashed` methods cannot serve an MLBF (see the variant).

use std::path::Path;

use crate::error::{Error, Incompatibility, Result};
use crate::filter::{Build, Builder, Filter, Merge, Stats};
use crate::hash::Key;
use crate::hash::{Hashed, KeyHasher};
use crate::io::format::{self, Kind, Persist, Source, Verify};
use crate::{
    BlockedBloomFilter, BloomFilter, MultiLayerBloomFilter, PartitionedBloomFilter,
    ScalableBloomFilter, SplitBlockBloomFilter,
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
    /// [`MultiLayerBloomFilter`] (URLs, seed 001). Its keys are URLs split into layers, so it
    /// has no single-hash path: `insert_hashed` does nothing and returns false,
    /// `contains_hashed` answers true (never a false negative), `try_insert_hashed` is an
    /// error. Insert and query keys with [`AnyFilter::try_insert_key`] /
    /// [`AnyFilter::contains_key`] or [`Filter::insert`] / [`Filter::contains`].
    Mlbf(MultiLayerBloomFilter),
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
            AnyFilter::Mlbf($f) => $body,
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
    /// Kind name (the structure: both layouts of the blocked filter are `blocked`).
    pub kind: &'static str,
    /// The blocked filter's block layout (`positions` or `sectors`, file kinds 3 and 20);
    /// `None` for the other kinds.
    pub layout: Option<&'static str>,
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
    /// URL layers L of a multi-layer filter (its bits are L + 1 arrays of bits / (L + 1)); 0
    /// for the other kinds.
    pub layers: u32,
}

impl Build for AnyFilter {
    fn build(b: &Builder<Self>) -> Result<Self> {
        Ok(match b.kind.unwrap_or(Kind::Blocked) {
            Kind::Classic => AnyFilter::Classic(b.retarget().try_build()?),
            Kind::Partitioned => AnyFilter::Partitioned(b.retarget().try_build()?),
            Kind::Blocked => AnyFilter::Blocked(b.retarget().try_build()?),
            Kind::BlockedSectors => AnyFilter::Blocked(
                b.retarget()
                    .layout(crate::sets::blocked::BlockLayout::Sectors)
                    .try_build()?,
            ),
            Kind::SplitBlock => AnyFilter::SplitBlock(b.retarget().try_build()?),
            Kind::Scalable => AnyFilter::Scalable(b.retarget().try_build()?),
            Kind::Mlbf => {
                // the paper's L = 4; other L through MultiLayerBloomFilter::builder()
                let mut m = MultiLayerBloomFilter::builder()
                    .hasher(b.hasher)
                    .max_bytes(b.max_bytes);
                if let Some(n) = b.capacity {
                    m = m.capacity(n);
                }
                if let Some(p) = b.fpr {
                    m = m.fpr(p);
                }
                if let Some(bits) = b.bits {
                    m = m.bits(bits);
                }
                if let Some(k) = b.hashes {
                    m = m.hashes(k);
                }
                AnyFilter::Mlbf(m.try_build()?)
            }
            k @ (Kind::Counting
            | Kind::BlockedCounting
            | Kind::DLeftCounting
            | Kind::Spectral
            | Kind::CountMin
            | Kind::Iterative
            | Kind::SpaceCode
            | Kind::Breadth
            | Kind::Depth
            | Kind::Attenuated
            | Kind::Bloomier
            | Kind::Xor
            | Kind::Cuckoo
            | Kind::TopK) => return Err(not_a_set(k)),
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
            AnyFilter::Blocked(f) => f.layout().kind(),
            AnyFilter::SplitBlock(_) => Kind::SplitBlock,
            AnyFilter::Scalable(_) => Kind::Scalable,
            AnyFilter::Mlbf(_) => Kind::Mlbf,
        }
    }

    /// Decode any kind from bytes, verifying the checksum. A compressed file is decompressed
    /// first (and the plain file's checksum verified).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let bytes = crate::io::compress::plain_file(bytes)?;
        let d = format::decode(&bytes, Verify::Checksum)?;
        Self::decode(&d, Source::Bytes(&bytes))
    }

    fn decode(d: &format::Decoded, src: Source<'_>) -> Result<Self> {
        let limit = crate::store::max_bytes();
        Ok(match d.header.kind {
            Kind::Classic => AnyFilter::Classic(BloomFilter::decode_from(d, src, limit)?),
            Kind::Partitioned => {
                AnyFilter::Partitioned(PartitionedBloomFilter::decode_from(d, src, limit)?)
            }
            Kind::Blocked | Kind::BlockedSectors => {
                AnyFilter::Blocked(BlockedBloomFilter::decode_from(d, src, limit)?)
            }
            Kind::SplitBlock => {
                AnyFilter::SplitBlock(SplitBlockBloomFilter::decode_from(d, src, limit)?)
            }
            Kind::Scalable => AnyFilter::Scalable(ScalableBloomFilter::decode_from(d, src, limit)?),
            Kind::Mlbf => AnyFilter::Mlbf(MultiLayerBloomFilter::decode_from(d, src, limit)?),
            k @ (Kind::Counting
            | Kind::BlockedCounting
            | Kind::DLeftCounting
            | Kind::Spectral
            | Kind::CountMin
            | Kind::Iterative
            | Kind::SpaceCode
            | Kind::Breadth
            | Kind::Depth
            | Kind::Attenuated
            | Kind::Bloomier
            | Kind::Xor
            | Kind::Cuckoo
            | Kind::TopK) => {
                return Err(crate::error::FormatError::WrongKind {
                    expected: "a set structure (classic, partitioned, blocked, split-block, \
                               scalable, mlbf)",
                    found: k.name(),
                }
                .into())
            }
        })
    }

    /// Load any kind from a file, verifying the checksum.
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        Self::from_bytes(&format::read_file(path.as_ref())?)
    }

    /// Open any kind through a read-only memory map (zero-copy; see [`Persist::open_mmap`]).
    pub fn open_mmap(path: impl AsRef<Path>, verify: Verify) -> Result<Self> {
        let map = format::map_file(path.as_ref())?;
        if crate::io::compress::is_packed(&map) {
            // A compressed file cannot be used in place: decompress it into memory.
            return Self::from_bytes(&map);
        }
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
            (AnyFilter::Mlbf(a), AnyFilter::Mlbf(b)) => a.union_with(b),
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
            (AnyFilter::Mlbf(a), AnyFilter::Mlbf(b)) => a.intersect_with(b),
            (a, b) => Err(kind_mismatch(a, b)),
        }
    }

    /// Halve (classic filters with an even bit count, blocked filters with an even block count).
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
            | (AnyFilter::Scalable(_), AnyFilter::Scalable(_))
            | (AnyFilter::Mlbf(_), AnyFilter::Mlbf(_)) => Err(Error::Unsupported(format!(
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
            AnyFilter::Mlbf(_) => Err(Error::Unsupported(
                "mark_damaged on a multi-layer filter".into(),
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
            AnyFilter::Mlbf(_) => {
                return Err(Error::Unsupported("clear on a multi-layer filter".into()))
            }
        }
        Ok(())
    }

    /// Insert, reporting when a non-scaling filter is full.
    pub fn try_insert_hashed(&mut self, h: Hashed) -> Result<bool> {
        match self {
            AnyFilter::Scalable(f) => f.try_insert_hashed(h),
            AnyFilter::Mlbf(_) => Err(Error::Unsupported(
                "a multi-layer filter is keyed by URL, not by one hash: use try_insert_key".into(),
            )),
            other => Ok(other.insert_hashed(h)),
        }
    }

    /// True for kinds whose keys are not hashed whole ([`AnyFilter::Mlbf`]: URLs split into
    /// layers); their `*_hashed` methods cannot be used.
    pub fn is_structured(&self) -> bool {
        matches!(self, AnyFilter::Mlbf(_))
    }

    /// Insert a key given as bytes, for every kind; true when it was new. A scalable filter
    /// with scaling off reports being full; for an MLBF the bytes are a URL (invalid UTF-8 is
    /// replaced by U+FFFD, deterministically) and a URL without a host is an error (see
    /// [`crate::structured::mlbf::normalize_url`]).
    pub fn try_insert_key(&mut self, key: &[u8]) -> Result<bool> {
        match self {
            AnyFilter::Mlbf(f) => f.insert(&String::from_utf8_lossy(key)),
            other => {
                let h = other.hasher().hash_bytes(key);
                other.try_insert_hashed(h)
            }
        }
    }

    /// Query a key given as bytes, for every kind: false means certainly never inserted. For
    /// an MLBF a key that is not a URL (no host) is false: it cannot have been inserted.
    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.try_contains_key(key).unwrap_or(false)
    }

    /// [`contains_key`](Self::contains_key), with a key that cannot be inserted (an MLBF key
    /// that is not a URL) an error instead of false, for callers that skip such keys.
    pub fn try_contains_key(&self, key: &[u8]) -> Result<bool> {
        match self {
            AnyFilter::Mlbf(f) => f.contains(&String::from_utf8_lossy(key)),
            other => Ok(other.contains_hashed(other.hasher().hash_bytes(key))),
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
            AnyFilter::Mlbf(f) => stats(f),
        };
        let items = self.len();
        let lower = if target > 0.0 && items > 0 {
            crate::params::lower_bound_bits(items, target)
        } else {
            0.0
        };
        FilterInfo {
            kind: self.kind().rust_type().name(),
            layout: match self {
                AnyFilter::Blocked(f) => Some(f.layout().name()),
                _ => None,
            },
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
            layers: match self {
                AnyFilter::Mlbf(f) => f.layers(),
                _ => 0,
            },
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
    /// For [`AnyFilter::Mlbf`]: does nothing and returns false (see the variant).
    fn insert_hashed(&mut self, h: Hashed) -> bool {
        match self {
            AnyFilter::Classic(f) => f.insert_hashed(h),
            AnyFilter::Partitioned(f) => f.insert_hashed(h),
            AnyFilter::Blocked(f) => f.insert_hashed(h),
            AnyFilter::SplitBlock(f) => f.insert_hashed(h),
            AnyFilter::Scalable(f) => f.insert_hashed(h),
            AnyFilter::Mlbf(_) => false,
        }
    }
    /// For [`AnyFilter::Mlbf`]: true, the only answer without a false negative (see the
    /// variant).
    fn contains_hashed(&self, h: Hashed) -> bool {
        match self {
            AnyFilter::Classic(f) => f.contains_hashed(h),
            AnyFilter::Partitioned(f) => f.contains_hashed(h),
            AnyFilter::Blocked(f) => f.contains_hashed(h),
            AnyFilter::SplitBlock(f) => f.contains_hashed(h),
            AnyFilter::Scalable(f) => f.contains_hashed(h),
            AnyFilter::Mlbf(_) => true,
        }
    }
    fn len(&self) -> u64 {
        each!(self, f => f.len())
    }
    /// Routed by kind: an MLBF inserts the key as a URL (an invalid URL is not inserted and
    /// returns false; use [`AnyFilter::try_insert_key`] to see the error).
    fn insert<K: Key + ?Sized>(&mut self, key: &K) -> bool {
        key.with_bytes(|b| match self {
            AnyFilter::Mlbf(f) => f.insert(&String::from_utf8_lossy(b)).unwrap_or(false),
            other => {
                let h = other.hasher().hash_bytes(b);
                other.insert_hashed(h)
            }
        })
    }
    /// Routed by kind, as [`AnyFilter::contains_key`].
    fn contains<K: Key + ?Sized>(&self, key: &K) -> bool {
        key.with_bytes(|b| self.contains_key(b))
    }
}

#[cfg(test)]
mod mlbf_tests {
    use super::*;

    #[test]
    fn mlbf_behind_any_filter() {
        let mut f = AnyFilter::builder(Kind::Mlbf)
            .capacity(500)
            .fpr(1e-4)
            .try_build()
            .unwrap();
        assert!(f.is_structured() && Kind::Mlbf.is_set());
        assert_eq!(f.info().layers, 4);
        for i in 0..300 {
            assert!(f
                .try_insert_key(format!("h{i}.org/a/{i}").as_bytes())
                .unwrap());
        }
        assert!(!f.try_insert_key(b"HTTP://h7.org/a/7/").unwrap());
        assert!(f.try_insert_key(b"").is_err());
        assert!(f.try_insert_hashed(f.hasher().hash_bytes(b"x")).is_err());
        let g = AnyFilter::from_bytes(&f.to_bytes()).unwrap();
        assert_eq!(g, f);
        for i in 0..300 {
            let u = format!("https://h{i}.org/a/{i}#x");
            assert!(g.contains_key(u.as_bytes()) && g.contains(u.as_str()));
        }
        let fp = (0..2000)
            .filter(|i| g.contains_key(format!("q{i}.net/b/{i}").as_bytes()))
            .count();
        assert!(fp <= 2, "{fp}"); // ≤ 1e-4 each: 0.2 expected, 3σ < 1.6
        assert!(!g.contains_key(b"")); // not a URL: never inserted
                                       // the hashed path cannot see URLs: conservative answers, never a false negative
        assert!(g.contains_hashed(g.hasher().hash_bytes(b"anything")));
        let mut h = g.clone();
        assert!(!h.insert_hashed(g.hasher().hash_bytes(b"x")));
        assert_eq!(h, g);
        assert!(h.insert("new.org/x") && h.contains("new.org/x"));
        let i = g.info();
        assert_eq!((i.kind, i.items, i.hashes), ("mlbf", 300, g.info().hashes));
        assert_eq!(i.bits % 5, 0);
        assert!(i.current_fpr > 0.0 && i.current_fpr < 1e-4);
        let mut u = g.clone();
        u.union_with(&h).unwrap();
        assert!(u.contains("new.org/x"));
        assert!(u.fold().is_err() && u.clear().is_err() && u.mark_damaged(0..1).is_err());
        assert!(u.estimate_overlap(&g).is_err());
        let blocked = AnyFilter::builder(Kind::Blocked)
            .capacity(10)
            .fpr(0.1)
            .try_build()
            .unwrap();
        assert!(u.union_with(&blocked).is_err());
        assert_eq!(blocked.info().layers, 0);
    }
}
