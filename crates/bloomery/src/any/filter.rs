//! [`AnyFilter`]: any set structure behind one type, chosen at run time — what the CLI and
//! other dynamic callers load from files whose kind they learn from the header.
//!
//! The variants, their decoding and the dispatch to each structure's [`SetKind`]
//! implementation are generated from the kinds table ([`for_each_kind!`]'s `sets` group).
//! The multi-layer filter ([`AnyFilter::Mlbf`]) is keyed by URL, not by one hash of the key's
//! bytes, so `AnyFilter` is a [`KeySet`], not a [`Filter`](crate::Filter): insert and query
//! keys with [`KeySet::try_insert_key`] / [`KeySet::contains_key`]; the pre-hashed methods
//! ([`AnyFilter::try_insert_hashed`], [`AnyFilter::try_contains_hashed`]) answer an error for
//! an MLBF instead of a silent wrong answer.

use super::{holder_methods, Holder};
use std::path::Path;

use crate::dispatch::{SetKind, SetStats};
use crate::error::{Error, FormatError, Incompatibility, Result};
use crate::filter::{Builder, KeySet, Merge};
use crate::hash::{Hashed, Key, KeyHasher};
use crate::io::format::Encode;
use crate::io::format::{self, Persist, SaveOptions, Source};
use crate::io::mapped::{FileUpdate, MappedFile};
use crate::kind::{for_each_kind, Capabilities, Capability, Kind};
use crate::redisbloom::{RedisBloomCuckooFilter, RedisBloomFilter};
use crate::sets::blocked::BlockedBloomFilter;
use crate::sets::classic::BloomFilter;
use crate::sets::partitioned::PartitionedBloomFilter;
use crate::sets::scalable::ScalableBloomFilter;
use crate::sets::split_block::SplitBlockBloomFilter;
use crate::sets::window::AgePartitionedBloomFilter;
use crate::structured::mlbf::MultiLayerBloomFilter;

/// The object-safe part of [`SetKind`], so one `match` serves every method.
trait DynSet {
    fn kind(&self) -> Kind;
    fn hasher(&self) -> &KeyHasher;
    fn len(&self) -> u64;
    fn try_insert_key(&mut self, key: &[u8]) -> Result<bool>;
    fn try_contains_key(&self, key: &[u8]) -> Result<bool>;
    fn try_insert_hashed(&mut self, h: Hashed) -> Result<bool>;
    fn try_contains_hashed(&self, h: Hashed) -> Result<bool>;
    fn prefetch_hashed(&self, h: Hashed);
    fn stats(&self) -> SetStats;
    fn layout_name(&self) -> Option<&'static str>;
    fn mark_damaged(&mut self, bytes: std::ops::Range<u64>) -> Result<()>;
    fn clear(&mut self) -> Result<()>;
    fn save(&self, path: &Path) -> Result<()>;
    fn to_bytes(&self) -> Vec<u8>;
    fn encode_parts(&self) -> (format::Header, format::Payload<'_>);
}

impl<T: SetKind> DynSet for T {
    fn kind(&self) -> Kind {
        SetKind::kind(self)
    }
    fn hasher(&self) -> &KeyHasher {
        SetKind::hasher(self)
    }
    fn len(&self) -> u64 {
        SetKind::len(self)
    }
    fn try_insert_key(&mut self, key: &[u8]) -> Result<bool> {
        SetKind::try_insert_key(self, key)
    }
    fn try_contains_key(&self, key: &[u8]) -> Result<bool> {
        SetKind::try_contains_key(self, key)
    }
    fn try_insert_hashed(&mut self, h: Hashed) -> Result<bool> {
        SetKind::try_insert_hashed(self, h)
    }
    fn try_contains_hashed(&self, h: Hashed) -> Result<bool> {
        SetKind::try_contains_hashed(self, h)
    }
    fn prefetch_hashed(&self, h: Hashed) {
        SetKind::prefetch_hashed(self, h)
    }
    fn stats(&self) -> SetStats {
        SetKind::stats(self)
    }
    fn layout_name(&self) -> Option<&'static str> {
        SetKind::layout_name(self)
    }
    fn mark_damaged(&mut self, bytes: std::ops::Range<u64>) -> Result<()> {
        SetKind::mark_damaged(self, bytes)
    }
    fn clear(&mut self) -> Result<()> {
        SetKind::clear(self)
    }
    fn save(&self, path: &Path) -> Result<()> {
        Persist::save(self, path)
    }
    fn to_bytes(&self) -> Vec<u8> {
        Persist::to_bytes(self)
    }
    fn encode_parts(&self) -> (format::Header, format::Payload<'_>) {
        Persist::encode_parts(self)
    }
}

/// Generates [`AnyFilter`] and its per-kind dispatch from the kinds table's `sets` group.
macro_rules! define_any_filter {
    (
        sets { $($v:ident = $id:literal, $name:literal, $ty:ident, $doc:literal;)* }
        counters { $($counters:tt)* }
        others { $($others:tt)* }
        layouts { $($layouts:tt)* }
    ) => {
        /// Any of the set structures behind one type, chosen at run time — what the CLI and
        /// other dynamic callers load from files whose kind they learn from the header.
        ///
        /// The multi-layer filter ([`AnyFilter::Mlbf`]) is keyed by URL, not by one hash of
        /// the key's bytes, so `AnyFilter` is a [`KeySet`], not a [`Filter`](crate::Filter):
        /// insert and query keys with [`AnyFilter::insert`] / [`AnyFilter::contains`] or the
        /// [`KeySet`] methods; the pre-hashed methods ([`AnyFilter::try_insert_hashed`],
        /// [`AnyFilter::try_contains_hashed`]) answer an error for an MLBF instead of a silent
        /// wrong answer. What each kind offers beyond that is in its
        /// [`capabilities`](AnyFilter::capabilities); an operation it lacks is an error naming
        /// the kinds that offer it.
        ///
        /// ```
        /// use bloomery::{AnyFilter, Kind};
        /// use bloomery::kinds::Capability;
        ///
        /// # fn main() -> bloomery::Result<()> {
        /// let mut f = AnyFilter::builder(Kind::Classic).capacity(1000).fpr(0.01).try_build()?;
        /// assert!(f.insert("alice")?);
        /// assert!(f.contains("alice"));
        /// let back = AnyFilter::from_bytes(&f.to_bytes())?;
        /// assert_eq!(back.kind(), Kind::Classic);
        /// assert!(back.capabilities().fold);
        /// let scalable = AnyFilter::builder(Kind::Scalable).capacity(10).fpr(0.01).try_build()?;
        /// assert!(scalable.require(Capability::Fold).is_err());
        /// # Ok(()) }
        /// ```
        #[derive(Debug, Clone, PartialEq)]
        #[non_exhaustive]
        pub enum AnyFilter {
            $(#[doc = concat!("[`", stringify!($ty), "`]: ", $doc)] $v($ty),)*
        }

        $(
            impl From<$ty> for AnyFilter {
                fn from(f: $ty) -> Self {
                    AnyFilter::$v(f)
                }
            }
        )*

        impl AnyFilter {
            fn as_dyn(&self) -> &dyn DynSet {
                match self {
                    $(AnyFilter::$v(f) => f,)*
                }
            }

            fn as_dyn_mut(&mut self) -> &mut dyn DynSet {
                match self {
                    $(AnyFilter::$v(f) => f,)*
                }
            }

            /// The capabilities of a set kind (its Rust type's), `None` for other kinds.
            pub(crate) fn kind_capabilities(kind: Kind) -> Option<Capabilities> {
                match kind.rust_type() {
                    $(Kind::$v => Some(<$ty as SetKind>::CAPABILITIES),)*
                    _ => None,
                }
            }

            /// The structure of a validated file (see [`Holder`]).
            fn decode_any(d: &format::Decoded, src: Source<'_>) -> Result<Self> {
                let limit = crate::store::max_bytes();
                match d.header.kind.rust_type() {
                    $(Kind::$v => Ok(AnyFilter::$v(<$ty>::decode_from(d, src, limit)?)),)*
                    k => Err(FormatError::WrongKind {
                        expected: concat!("a set structure (", $($name, " ",)* ")"),
                        found: k.name(),
                    }
                    .into()),
                }
            }

            /// Union in place; the kinds, shapes and hashers must match.
            pub fn union_with(&mut self, other: &AnyFilter) -> Result<()> {
                match (self, other) {
                    $((AnyFilter::$v(a), AnyFilter::$v(b)) => a.union_with(b),)*
                    (a, b) => Err(kind_mismatch(a, b)),
                }
            }

            /// Intersection in place; the kinds, shapes and hashers must match.
            pub fn intersect_with(&mut self, other: &AnyFilter) -> Result<()> {
                match (self, other) {
                    $((AnyFilter::$v(a), AnyFilter::$v(b)) => a.intersect_with(b),)*
                    (a, b) => Err(kind_mismatch(a, b)),
                }
            }

            /// Halve the filter ([`Capability::Fold`]: classic and blocked filters).
            pub fn fold(&self) -> Result<AnyFilter> {
                self.require(Capability::Fold)?;
                match self {
                    $(AnyFilter::$v(f) => Ok(AnyFilter::$v(SetKind::fold(f)?)),)*
                }
            }

            /// Estimated `(|A ∩ B|, |A ∪ B|)` for two filters of the same kind and shape
            /// ([`Capability::Estimate`]).
            pub fn estimate_overlap(&self, other: &AnyFilter) -> Result<(f64, f64)> {
                self.require(Capability::Estimate)?;
                match (self, other) {
                    $((AnyFilter::$v(a), AnyFilter::$v(b)) => SetKind::estimate_overlap(a, b),)*
                    (a, b) => Err(kind_mismatch(a, b)),
                }
            }
        }
    };
}

for_each_kind!(define_any_filter);

impl Holder for AnyFilter {
    fn decode(d: &format::Decoded, src: Source<'_>) -> Result<Self> {
        Self::decode_any(d, src)
    }
}

/// A summary of a structure's shape and state (what `bloomery info` prints).
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{AnyFilter, BlockedBloomFilter, Filter};
///
/// let mut f = BlockedBloomFilter::try_new(1000, 0.01)?;
/// f.insert("a");
/// f.insert("b");
/// let info = AnyFilter::from(f).info();
/// assert_eq!(info.kind, "blocked");
/// assert_eq!((info.items, info.capacity), (2, 1000));
/// assert_eq!(info.bytes * 8, info.bits);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct FilterInfo {
    /// Kind name (the structure: both layouts of the blocked filter are `blocked`).
    pub kind: &'static str,
    /// The blocked filter's block layout (`positions` or `sectors`, file kinds 3 and 20), the
    /// window's (`sliced` or `blocked`, file kinds 27 and 30); `None` for the other kinds.
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

/// An empty filter to be written to a file and nothing else ([`AnyFilter::empty_file`]): its
/// words are zero pages lent by the kernel, which a write would have to turn into memory the
/// process may not have, so it offers no way to change them.
///
/// ```
/// use bloomery::{AnyFilter, Kind, Sizing, Spec};
/// use bloomery::file::SaveOptions;
///
/// # fn main() -> bloomery::Result<()> {
/// let dir = tempfile::tempdir()?;
/// let spec = Spec::new(Kind::Blocked).sizing(Sizing::default().capacity(1_000_000).fpr(0.01));
/// let empty = AnyFilter::empty_file(&spec)?; // nothing allocated
/// empty.save_with(dir.path().join("f.bloom"), SaveOptions::new())?;
/// assert_eq!(AnyFilter::load(dir.path().join("f.bloom"))?.len(), 0);
/// # Ok(()) }
/// ```
pub struct EmptyFile {
    filter: AnyFilter,
}

impl EmptyFile {
    /// `filter` (empty, made to be written) as an [`EmptyFile`].
    pub(crate) fn new(filter: AnyFilter) -> Self {
        EmptyFile { filter }
    }

    /// The file kind.
    pub fn kind(&self) -> Kind {
        self.filter.kind()
    }

    /// Bytes of the file [`save_with`](Self::save_with) writes (plain, uncompressed).
    pub fn encoded_len(&self) -> u64 {
        self.filter.encoded_len()
    }

    /// Shape and state summary (a pass over the zero pages: about a second per 10 GB).
    pub fn info(&self) -> FilterInfo {
        self.filter.info()
    }

    /// Write the file atomically, as [`Persist::save_with`] does.
    pub fn save_with(&self, path: impl AsRef<Path>, options: SaveOptions<'_>) -> Result<()> {
        self.filter.save_with(path, options)
    }
}

impl AnyFilter {
    /// A builder for `kind`: the shared sizing setters plus the options of the set kinds
    /// that read them (growth, tightening, scaling, layers), refused by the others.
    pub fn builder(kind: Kind) -> Builder<Self> {
        Builder::new().kind(kind)
    }

    /// The file kind (the blocked filter's depends on its block layout).
    pub fn kind(&self) -> Kind {
        self.as_dyn().kind()
    }

    /// What this filter's kind offers.
    pub fn capabilities(&self) -> Capabilities {
        self.kind().capabilities()
    }

    /// `Ok` when this filter's kind offers `cap`, else an error naming the kinds that do.
    pub fn require(&self, cap: Capability) -> Result<()> {
        self.kind().require(cap)
    }

    holder_methods!("any kind");

    /// Items inserted (inserts that changed the filter).
    pub fn len(&self) -> u64 {
        self.as_dyn().len()
    }

    /// True when nothing was inserted.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Mark a damaged byte range of the bit array as all ones
    /// ([`Capability::MarkDamaged`]: the kinds whose bits are one array).
    pub fn mark_damaged(&mut self, bytes: std::ops::Range<u64>) -> Result<()> {
        self.require(Capability::MarkDamaged)?;
        self.as_dyn_mut().mark_damaged(bytes)
    }

    /// Clear every item (the kinds whose bits are one array).
    pub fn clear(&mut self) -> Result<()> {
        self.require(Capability::MarkDamaged)?;
        self.as_dyn_mut().clear()
    }

    /// Insert a key, routed by kind (an MLBF takes its bytes as a URL): `true` when it was
    /// new; an error, with nothing changed, for a key the filter cannot take (an MLBF key that
    /// is not a URL, a non-scaling filter at capacity). See [`KeySet`].
    pub fn insert<K: Key + ?Sized>(&mut self, key: &K) -> Result<bool> {
        key.with_bytes(|b| self.try_insert_key(b))
    }

    /// Query a key, routed by kind: `false` means certainly never inserted (also for a key
    /// the filter could never have taken). See [`KeySet`].
    pub fn contains<K: Key + ?Sized>(&self, key: &K) -> bool {
        key.with_bytes(|b| self.contains_key(b))
    }

    /// Insert a pre-hashed key: an error for kinds without a pre-hashed path (an MLBF) and
    /// for a non-scaling filter at capacity; nothing changes then.
    pub fn try_insert_hashed(&mut self, h: Hashed) -> Result<bool> {
        self.as_dyn_mut().try_insert_hashed(h)
    }

    /// Query a pre-hashed key: an error for kinds without a pre-hashed path (an MLBF).
    pub fn try_contains_hashed(&self, h: Hashed) -> Result<bool> {
        self.as_dyn().try_contains_hashed(h)
    }

    /// Hint the CPU to fetch what inserting or querying the key will read (the blocked
    /// filter; nothing for the others), for streaming callers that hash a key a few keys
    /// before they use it.
    #[inline]
    pub fn prefetch_hashed(&self, h: Hashed) {
        self.as_dyn().prefetch_hashed(h)
    }

    /// True for kinds whose keys are not hashed whole ([`AnyFilter::Mlbf`]: URLs split into
    /// layers); their pre-hashed methods answer errors.
    pub fn is_structured(&self) -> bool {
        !self.capabilities().hashed
    }

    /// Shape and state summary.
    pub fn info(&self) -> FilterInfo {
        self.info_from(self.as_dyn().stats())
    }

    /// [`info`](Self::info) counted in one pass over the words in
    /// [`PASS_CHUNK`](crate::file::PASS_CHUNK) pieces, calling `behind(range)` with each piece's
    /// byte range in the payload once it is counted: a caller updating a big file drops
    /// those pages ([`FileUpdate::release_range`]), so the pass holds about one piece
    /// resident. Classic, blocked, partitioned and split-block filters count piece by piece;
    /// the other kinds count as [`info`](Self::info) does, then report their whole payload
    /// behind them.
    pub fn info_pass(&self, behind: &mut dyn FnMut(std::ops::Range<u64>)) -> FilterInfo {
        let chunk = crate::io::header::PASS_CHUNK as u64;
        let mut pass = FillPass::new(self);
        let len = pass.len();
        let mut at = 0;
        while at < len {
            let n = chunk.min(len - at);
            pass.advance(at + n);
            behind(at..at + n);
            at += n;
        }
        self.info_from(pass.finish())
    }

    /// Seal an update of this filter ([`FileUpdate::commit`]) and return its
    /// [`info`](Self::info), counted inside the seal's checksum pass (each piece counted before
    /// its pages are dropped): the summary of a big update costs no pass of its own (classic
    /// and blocked filters; the other kinds count first, as [`info_pass`](Self::info_pass)
    /// does, piece by piece for partitioned and split-block filters). `progress` is told the bytes of the checksum pass done.
    ///
    /// ```
    /// use bloomery::{AnyFilter, BlockedBloomFilter, Persist, Verify};
    /// use bloomery::file::FileUpdate;
    ///
    /// # #[cfg(not(feature = "mmap"))] fn main() {} // without the `mmap` feature: Error::Unsupported
    /// # #[cfg(feature = "mmap")]
    /// # fn main() -> bloomery::Result<()> {
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("seen.bloom");
    /// BlockedBloomFilter::try_new(1000, 0.01)?.save(&path)?;
    /// let up = FileUpdate::open(&path, Verify::Checksum, &mut |_| {})?;
    /// let mut f = AnyFilter::from_update(&up)?;
    /// f.insert("alice")?;
    /// let want = f.info();
    /// let info = f.commit_with_info(up, &mut |_| {})?;
    /// assert_eq!((info.items, info.fill_ratio), (1, want.fill_ratio));
    /// # Ok(()) }
    /// ```
    pub fn commit_with_info(
        self,
        up: FileUpdate,
        progress: format::Progress<'_>,
    ) -> Result<FilterInfo> {
        if !matches!(self, AnyFilter::Blocked(_) | AnyFilter::Classic(_)) {
            let info = self.info_pass(&mut |r| {
                up.release_range(up.payload_offset() + r.start, r.end - r.start)
            });
            up.commit(self, progress)?;
            return Ok(info);
        }
        let mut pass = FillPass::new(&self);
        let counted = up.commit_visiting(&self, &mut |done| pass.advance(done), progress)?;
        let stats = if counted {
            pass.finish()
        } else {
            // written whole (a new shape): counted in memory
            drop(pass);
            self.as_dyn().stats()
        };
        Ok(self.info_from(stats))
    }

    /// Insert a batch of pre-hashed keys into this filter, decoded from `up`
    /// ([`from_update`](Self::from_update)), seal the update and return the filter's
    /// [`info`](Self::info). An update opened by [`FileUpdate::open_sweep`] of a blocked filter
    /// does it all in one pass over the file: each piece of the file is read (its checksum
    /// verified, as the update was opened), the keys of its blocks inserted, the new checksum
    /// (all but the header's part, which waits for the new item count) and the fill counted
    /// on it, and it is written to the copy once; the seal then writes the new header and
    /// folds it into the checksum, an fsync and a rename, with no pass over the copy
    /// ([`BlockedBloomFilter::insert_copying`](crate::BlockedBloomFilter::insert_copying)
    /// describes the pass). Any other update inserts the keys, then seals as
    /// [`commit_with_info`](Self::commit_with_info) does. The bits, the item count and the
    /// file written are those of inserting the keys in input order; `hashes` is reordered.
    /// `progress` is told the bytes of the file done.
    ///
    /// ```
    /// use bloomery::{AnyFilter, BlockedBloomFilter, Filter, Persist, Verify};
    /// use bloomery::file::FileUpdate;
    ///
    /// # #[cfg(not(feature = "mmap"))] fn main() {} // without the `mmap` feature: Error::Unsupported
    /// # #[cfg(feature = "mmap")]
    /// # fn main() -> bloomery::Result<()> {
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("seen.bloom");
    /// BlockedBloomFilter::try_new(100_000, 0.01)?.save(&path)?;
    ///
    /// let up = FileUpdate::open_sweep(&path, Verify::Checksum)?;
    /// let f = AnyFilter::from_update(&up)?;
    /// let mut hashes: Vec<_> = (0..1000u32).map(|i| f.hasher().hash(&i)).collect();
    /// let info = f.commit_with_keys(up, &mut hashes, &mut |_| {})?;
    /// assert_eq!(info.items, 1000);
    ///
    /// let g = BlockedBloomFilter::load(&path)?; // checksum verified
    /// assert!((0..1000u32).all(|i| g.contains(&i)));
    /// # Ok(()) }
    /// ```
    pub fn commit_with_keys(
        self,
        up: FileUpdate,
        hashes: &mut [Hashed],
        progress: format::Progress<'_>,
    ) -> Result<FilterInfo> {
        match self {
            AnyFilter::Blocked(b) if up.copied() == 0 => {
                let (b, stats) = b.commit_rewriting(up, hashes, progress)?;
                Ok(AnyFilter::Blocked(b).info_from(stats))
            }
            AnyFilter::Blocked(mut b) => {
                // copied whole already: a sweep in block order, the pages dropped behind it
                up.copy_rest()?;
                let head = up.payload_offset();
                b.insert_sorted(hashes, |r| {
                    up.release_range(head + r.start, r.end - r.start)
                });
                AnyFilter::Blocked(b).commit_with_info(up, progress)
            }
            mut other => {
                // the words must be the file's before they are changed
                up.copy_rest()?;
                other.insert_hashed_batch(hashes).map_err(|(_, e)| e)?;
                other.commit_with_info(up, progress)
            }
        }
    }

    /// [`info`](Self::info) of this filter, decoded from `file` ([`from_mapped`](Self::from_mapped)),
    /// in the same streaming pass as the file's checksum (checked when `verify`): each piece
    /// of the file is hashed and its bits counted while it is in cache, and its pages are
    /// dropped behind the pass, so the file is read once and resident memory stays at about
    /// [`PASS_CHUNK`](crate::file::PASS_CHUNK) bytes (classic and blocked filters; the other kinds
    /// count after the pass, as [`info`](Self::info) does). A checksum mismatch is an error.
    /// `progress` is told the bytes done. A compressed file (decompressed into memory) is
    /// verified, then counted in memory.
    pub fn info_mapped(
        &self,
        file: &MappedFile,
        verify: bool,
        progress: format::Progress<'_>,
    ) -> Result<FilterInfo> {
        if !file.is_plain() {
            if verify {
                file.verify(progress)?;
            }
            return Ok(self.info());
        }
        let head = file.header_len();
        let mut pass = FillPass::new(self);
        file.pass(
            verify,
            &mut |at, n| pass.advance(((at + n) as u64).saturating_sub(head)),
            progress,
        )?;
        Ok(self.info_from(pass.finish()))
    }

    pub(crate) fn info_from(&self, s: SetStats) -> FilterInfo {
        let hasher = *self.hasher();
        let items = self.len();
        let lower = if s.target_fpr > 0.0 && items > 0 {
            crate::params::lower_bound_bits(items, s.target_fpr)
        } else {
            0.0
        };
        FilterInfo {
            kind: self.kind().rust_type().name(),
            layout: self.as_dyn().layout_name(),
            format_version: format::FORMAT_VERSION,
            bits: s.bits,
            hashes: s.hashes,
            items,
            estimated_items: s.estimated_items,
            bytes: s.bits / 8,
            bits_per_item: if items > 0 {
                s.bits as f64 / items as f64
            } else {
                0.0
            },
            capacity: s.capacity,
            target_fpr: s.target_fpr,
            fill_ratio: if s.bits > 0 {
                s.ones as f64 / s.bits as f64
            } else {
                0.0
            },
            current_fpr: s.current_fpr,
            lower_bound_bits: lower,
            hash: hasher.algorithm().name(),
            seed_kind: hasher.seed_kind().name(),
            sub_filters: s.sub_filters,
            layers: s.layers,
        }
    }
}

/// A filter's fill figures counted as a pass over its words reaches them (see
/// [`AnyFilter::info_pass`]).
enum FillPass<'a> {
    Blocked(&'a BlockedBloomFilter, crate::sets::blocked::FillPass),
    Classic {
        f: &'a BloomFilter,
        /// Words counted so far.
        next: usize,
        ones: u64,
    },
    /// Bits set per slice, counted a piece at a time; the rate is their product at the end.
    Partitioned {
        f: &'a PartitionedBloomFilter,
        /// Words counted so far.
        next: usize,
        slice_ones: Vec<u64>,
    },
    /// Bits set and the sum over blocks of each block's rate, in block order (the order
    /// [`Stats::current_fpr`](crate::filter::Stats::current_fpr) sums them in).
    SplitBlock {
        f: &'a SplitBlockBloomFilter,
        /// Words counted so far (whole 4-word blocks).
        next: usize,
        ones: u64,
        fpr_sum: f64,
    },
    /// Counted whole at the end.
    Whole(&'a AnyFilter),
}

impl<'a> FillPass<'a> {
    fn new(f: &'a AnyFilter) -> Self {
        match f {
            AnyFilter::Blocked(b) => Self::Blocked(b, crate::sets::blocked::FillPass::new(b)),
            AnyFilter::Classic(c) => Self::Classic {
                f: c,
                next: 0,
                ones: 0,
            },
            AnyFilter::Partitioned(p) => Self::Partitioned {
                f: p,
                next: 0,
                slice_ones: vec![0; p.hashes() as usize],
            },
            AnyFilter::SplitBlock(b) => Self::SplitBlock {
                f: b,
                next: 0,
                ones: 0,
                fpr_sum: 0.0,
            },
            other => Self::Whole(other),
        }
    }

    /// Bytes of the words counted piece by piece (the whole payload for the other kinds).
    fn len(&self) -> u64 {
        match self {
            Self::Blocked(b, _) => b.as_words().len() as u64 * 8,
            Self::Classic { f, .. } => f.as_words().len() as u64 * 8,
            Self::Partitioned { f, .. } => f.as_words().len() as u64 * 8,
            Self::SplitBlock { f, .. } => f.as_words().len() as u64 * 8,
            Self::Whole(f) => f.encode_parts().1.len(),
        }
    }

    /// Count what lies within the first `bytes` bytes of the words.
    fn advance(&mut self, bytes: u64) {
        match self {
            Self::Blocked(b, p) => p.advance(b, bytes),
            Self::Classic { f, next, ones } => {
                let words = f.as_words();
                let end = usize::try_from(bytes / 8).map_or(words.len(), |e| e.min(words.len()));
                if end > *next {
                    *ones += crate::store::count_ones(&words[*next..end]);
                    *next = end;
                }
            }
            Self::Partitioned {
                f,
                next,
                slice_ones,
            } => {
                let words = f.as_words();
                let end = usize::try_from(bytes / 8).map_or(words.len(), |e| e.min(words.len()));
                if end > *next {
                    let (lo, hi) = (*next as u64 * 64, end as u64 * 64);
                    let s = f.slice_bits();
                    for (i, ones) in slice_ones.iter_mut().enumerate() {
                        let (a, b) = (i as u64 * s, (i as u64 + 1) * s);
                        *ones += crate::store::count_ones_range(words, a.max(lo), b.min(hi));
                    }
                    *next = end;
                }
            }
            Self::SplitBlock {
                f,
                next,
                ones,
                fpr_sum,
            } => {
                let words = f.as_words();
                let end = usize::try_from(bytes / 32)
                    .map_or(words.len(), |e| (e * 4).min(words.len() / 4 * 4));
                if end > *next {
                    for b in words[*next..end].chunks_exact(4) {
                        let mut fpr = 1.0;
                        for w in b.iter().flat_map(|w| [*w as u32, (*w >> 32) as u32]) {
                            *ones += u64::from(w.count_ones());
                            fpr *= f64::from(w.count_ones()) / 32.0;
                        }
                        *fpr_sum += fpr;
                    }
                    *next = end;
                }
            }
            Self::Whole(_) => {}
        }
    }

    fn finish(mut self) -> SetStats {
        self.advance(u64::MAX);
        match self {
            Self::Blocked(b, p) => p.finish(b),
            Self::Classic { f, ones, .. } => SetStats::of_ones(f, ones),
            Self::Partitioned { f, slice_ones, .. } => {
                let s = f.slice_bits() as f64;
                SetStats::of_counted(
                    f,
                    slice_ones.iter().sum(),
                    slice_ones.iter().map(|&o| o as f64 / s).product(),
                )
            }
            Self::SplitBlock {
                f, ones, fpr_sum, ..
            } => {
                use crate::filter::Stats;
                SetStats::of_counted(f, ones, fpr_sum / (f.bit_len() / 256) as f64)
            }
            Self::Whole(f) => f.as_dyn().stats(),
        }
    }
}

/// Keys as bytes, for every kind: an MLBF takes them as URLs (invalid UTF-8 is replaced by
/// U+FFFD, deterministically; a URL without a host is an error), a non-scaling scalable filter
/// at capacity refuses with [`Error::Full`].
impl KeySet for AnyFilter {
    fn try_insert_key(&mut self, key: &[u8]) -> Result<bool> {
        self.as_dyn_mut().try_insert_key(key)
    }
    fn try_contains_key(&self, key: &[u8]) -> Result<bool> {
        self.as_dyn().try_contains_key(key)
    }
}

pub(crate) fn kind_mismatch(a: &AnyFilter, b: &AnyFilter) -> Error {
    Error::Incompatible(Incompatibility::Kind {
        left: a.kind().name(),
        right: b.kind().name(),
    })
}

impl Encode for AnyFilter {
    fn encode_parts(&self) -> (format::Header, format::Payload<'_>) {
        self.as_dyn().encode_parts()
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
            assert!(g.contains_key(u.as_bytes()) && g.try_contains_key(u.as_bytes()).unwrap());
        }
        let fp = (0..2000)
            .filter(|i| g.contains_key(format!("q{i}.net/b/{i}").as_bytes()))
            .count();
        assert!(fp <= 2, "{fp}"); // ≤ 1e-4 each: 0.2 expected, 3σ < 1.6
        assert!(!g.contains_key(b"")); // not a URL: never inserted
        assert!(g.try_contains_key(b"").is_err());
        // the hashed path cannot see URLs: an error, never a silent answer
        assert!(g
            .try_contains_hashed(g.hasher().hash_bytes(b"anything"))
            .is_err());
        let mut h = g.clone();
        assert!(h.try_insert_hashed(g.hasher().hash_bytes(b"x")).is_err());
        assert_eq!(h, g);
        assert!(h.try_insert_key(b"new.org/x").unwrap() && h.contains_key(b"new.org/x"));
        let i = g.info();
        assert_eq!((i.kind, i.items, i.hashes), ("mlbf", 300, g.info().hashes));
        assert_eq!(i.bits % 5, 0);
        assert!(i.current_fpr > 0.0 && i.current_fpr < 1e-4);
        let mut u = g.clone();
        u.union_with(&h).unwrap();
        assert!(u.contains_key(b"new.org/x"));
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

#[cfg(test)]
mod fill_pass_tests {
    use super::*;

    /// The figures counted a piece at a time are those of the whole-filter count, exactly,
    /// whatever the pieces: pieces cutting slices and blocks anywhere, and fills from empty
    /// to dense.
    #[test]
    fn piece_counts_equal_whole_counts() {
        for kind in [Kind::Partitioned, Kind::SplitBlock, Kind::Classic] {
            for n in [0u64, 1, 3_000, 40_000] {
                let mut f = AnyFilter::builder(kind)
                    .capacity(10_000)
                    .fpr(0.01)
                    .try_build()
                    .unwrap();
                for i in 0..n {
                    f.insert(&i).unwrap();
                }
                let whole = f.info();
                assert_eq!(f.info_pass(&mut |_| {}), whole, "{kind:?} n {n}");
                for step in [8u64, 24, 40, 1000, 4096] {
                    let mut pass = FillPass::new(&f);
                    let len = pass.len();
                    let mut at = 0;
                    while at < len {
                        at = (at + step).min(len);
                        pass.advance(at);
                    }
                    assert_eq!(
                        f.info_from(pass.finish()),
                        whole,
                        "{kind:?} n {n} step {step}"
                    );
                }
            }
        }
    }
}
