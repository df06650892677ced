//! The small core traits every structure implements, the shared builder, and the state that
//! all bit-array filters have in common.

use crate::error::{invalid, Error, Incompatibility, Result};
use crate::hash::{Hashed, Key, KeyHasher};
use crate::store;

/// Set membership: insert and query, with a pre-hashed path.
///
/// `insert` returns `true` when the key was (as far as the filter can tell) new: at least one of
/// its bits was zero. `contains` never returns `false` for an inserted key.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{BlockedBloomFilter, BloomFilter, Filter};
///
/// // generic over any set filter
/// fn add_all<F: Filter>(f: &mut F, words: &[&str]) -> u64 {
///     words.iter().map(|w| u64::from(f.insert(*w))).sum()
/// }
/// let mut a = BloomFilter::try_new(100, 0.01)?;
/// let mut b = BlockedBloomFilter::try_new(100, 0.01)?;
/// assert_eq!(add_all(&mut a, &["x", "y", "x"]), 2); // `insert` is true for a new key
/// assert_eq!(add_all(&mut b, &["x", "y", "x"]), 2);
/// assert!(a.contains("y") && b.contains("y") && a.len() == 2);
/// # Ok(()) }
/// ```
pub trait Filter {
    /// The hasher keys go through; hash with it to use the `*_hashed` methods.
    fn hasher(&self) -> &KeyHasher;
    /// Insert a pre-hashed key (see [`KeyHasher::hash`]).
    fn insert_hashed(&mut self, h: Hashed) -> bool;
    /// Query a pre-hashed key.
    fn contains_hashed(&self, h: Hashed) -> bool;
    /// Items inserted: inserts that changed the filter (so duplicates count once).
    fn len(&self) -> u64;

    /// True when nothing was inserted.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Insert a pre-hashed key, told when it cannot be taken: a non-scaling
    /// [`ScalableBloomFilter`](crate::ScalableBloomFilter) at capacity answers
    /// [`Error::Full`] instead of going past its target rate. The structures that never refuse
    /// answer as [`insert_hashed`](Self::insert_hashed).
    fn try_insert_hashed(&mut self, h: Hashed) -> Result<bool> {
        Ok(self.insert_hashed(h))
    }

    /// Insert a key, told when it cannot be taken (see
    /// [`try_insert_hashed`](Self::try_insert_hashed)).
    #[inline]
    fn try_insert<K: Key + ?Sized>(&mut self, key: &K) -> Result<bool>
    where
        Self: Sized,
    {
        let h = self.hasher().hash(key);
        self.try_insert_hashed(h)
    }

    /// Insert a key.
    #[inline]
    fn insert<K: Key + ?Sized>(&mut self, key: &K) -> bool {
        let h = self.hasher().hash(key);
        self.insert_hashed(h)
    }

    /// Query a key: `false` means certainly absent, `true` means present or a false positive.
    #[inline]
    fn contains<K: Key + ?Sized>(&self, key: &K) -> bool {
        self.contains_hashed(self.hasher().hash(key))
    }
}

/// Membership for keys given as bytes, for every set structure: the ones that hash a key whole
/// (every [`Filter`]), the ones keyed by the key's structure (the
/// [`MultiLayerBloomFilter`](crate::MultiLayerBloomFilter) hashes each URL segment, so it has
/// no pre-hashed path and is not a [`Filter`]), and [`AnyFilter`](crate::AnyFilter), which
/// holds either. Generic code over all of them uses this trait.
///
/// ```
/// use bloomery::{AnyFilter, BloomFilter, KeySet, Kind, MultiLayerBloomFilter};
///
/// fn load(set: &mut impl KeySet, lines: &[&str]) -> bloomery::Result<()> {
///     for l in lines {
///         set.try_insert_key(l.as_bytes())?;
///     }
///     Ok(())
/// }
///
/// # fn main() -> bloomery::Result<()> {
/// let urls = ["https://example.org/a/b", "https://example.org/a/c"];
/// let mut classic = BloomFilter::try_new(100, 0.01)?;
/// let mut mlbf = MultiLayerBloomFilter::try_new(4, 100, 0.01)?;
/// let mut any = AnyFilter::builder(Kind::Blocked).capacity(100).fpr(0.01).try_build()?;
/// load(&mut classic, &urls)?;
/// load(&mut mlbf, &urls)?;
/// load(&mut any, &urls)?;
/// assert!(classic.contains_key(urls[0].as_bytes()) && mlbf.contains_key(urls[1].as_bytes()));
/// assert!(any.contains_key(urls[1].as_bytes()));
/// // a key a URL filter could never hold is an error for the checked query, false otherwise
/// assert!(mlbf.try_contains_key(b"").is_err() && !mlbf.contains_key(b""));
/// # Ok(()) }
/// ```
///
/// The structures whose insert can fail or does not exist are key sets too, with the failure
/// as an error: a [`CuckooFilter`](crate::CuckooFilter) whose evictions run out and a
/// [`DLeftCountingBloomFilter`](crate::DLeftCountingBloomFilter) whose bucket is full answer
/// [`Error::Full`](crate::Error::Full), and a static [`XorFilter`](crate::XorFilter), built
/// once from all its keys, answers [`Error::Unsupported`](crate::Error::Unsupported) to an
/// insert and queries like the rest:
///
/// ```
/// use bloomery::{CuckooFilter, DLeftCountingBloomFilter, KeySet, XorFilter};
///
/// fn present(set: &impl KeySet, keys: &[&str]) -> usize {
///     keys.iter().filter(|k| set.contains_key(k.as_bytes())).count()
/// }
///
/// # fn main() -> bloomery::Result<()> {
/// let keys = ["a", "b", "c"];
/// let mut cuckoo = CuckooFilter::try_new(100)?;
/// let mut dleft = DLeftCountingBloomFilter::try_new(100, 0.01)?;
/// for k in keys {
///     assert!(cuckoo.try_insert_key(k.as_bytes())?); // new
///     assert!(dleft.try_insert_key(k.as_bytes())?);
/// }
/// assert!(!cuckoo.try_insert_key(b"a")?); // already there
/// let mut xor = XorFilter::try_from_keys(&keys)?;
/// assert!(xor.try_insert_key(b"d").is_err()); // static
/// assert_eq!((present(&cuckoo, &keys), present(&dleft, &keys), present(&xor, &keys)), (3, 3, 3));
/// # Ok(()) }
/// ```
pub trait KeySet {
    /// Insert a key; `true` when it was new. A key the structure cannot take (an MLBF key
    /// that is not a URL, a non-scaling filter at capacity) is an error and changes nothing.
    fn try_insert_key(&mut self, key: &[u8]) -> Result<bool>;
    /// Query a key: `false` means certainly never inserted. A key the structure could never
    /// have taken is an error.
    fn try_contains_key(&self, key: &[u8]) -> Result<bool>;
    /// [`try_contains_key`](Self::try_contains_key), with a key the structure could never
    /// have taken answered `false` (it cannot have been inserted).
    fn contains_key(&self, key: &[u8]) -> bool {
        self.try_contains_key(key).unwrap_or(false)
    }
}

impl<F: Filter> KeySet for F {
    fn try_insert_key(&mut self, key: &[u8]) -> Result<bool> {
        let h = self.hasher().hash_bytes(key);
        self.try_insert_hashed(h)
    }
    fn try_contains_key(&self, key: &[u8]) -> Result<bool> {
        Ok(self.contains_hashed(self.hasher().hash_bytes(key)))
    }
}

/// Union and intersection with another structure of the same kind, shape and hasher.
///
/// **Item counts after a merge.** A filter cannot tell how many keys two filters share, so
/// after `union_with` [`Filter::len`] is the larger of the two counts (a lower bound on the
/// union) and after `intersect_with` the smaller (an upper bound on the intersection). For an
/// estimate of the true figure use [`Stats::estimated_len`] on the result, or, before merging,
/// the inner-product estimates (`estimate_union`, `estimate_intersection`: Broder &
/// Mitzenmacher §2.4).
///
/// ```
/// use bloomery::prelude::*;
///
/// # fn main() -> bloomery::Result<()> {
/// let mut a = BloomFilter::try_new(10_000, 0.01)?;
/// let mut b = BloomFilter::try_new(10_000, 0.01)?;
/// a.extend(0u32..3000);
/// b.extend(2000u32..5000);
/// let u = (&a | &b)?;
/// assert_eq!(u.len(), 3000); // the larger count: a lower bound
/// let est = u.estimated_len(); // about 5000
/// assert!((est - 5000.0).abs() < 250.0, "{est}");
/// # Ok(()) }
/// ```
pub trait Merge {
    /// In place `self ∪ other` (bitwise OR): contains every key of both.
    fn union_with(&mut self, other: &Self) -> Result<()>;
    /// In place `self ∩ other` (bitwise AND): contains every key inserted into both (and may
    /// answer true for more keys than a filter built from the intersection would).
    fn intersect_with(&mut self, other: &Self) -> Result<()>;
}

/// Introspection shared by the bit-array filters: size, fill, live false-positive rate and
/// the estimates of Broder & Mitzenmacher §2.4.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{BloomFilter, Filter, Stats};
///
/// let mut f = BloomFilter::try_new(1000, 0.01)?;
/// assert_eq!(f.current_fpr(), 0.0);
/// for i in 0..1000u32 {
///     f.insert(&i);
/// }
/// assert_eq!((f.capacity(), f.target_fpr()), (1000, 0.01));
/// assert!((f.current_fpr() - 0.01).abs() < 0.003); // at capacity, about the target
/// assert!((f.estimated_len() - 1000.0).abs() < 50.0); // from the fill (Swamidass & Baldi)
/// # Ok(()) }
/// ```
pub trait Stats {
    /// Bits in the array (m).
    fn bit_len(&self) -> u64;
    /// Bits set to one.
    fn count_ones(&self) -> u64;
    /// Bits set per key (k).
    fn hash_count(&self) -> u32;
    /// The false-positive rate implied by the current contents.
    fn current_fpr(&self) -> f64;
    /// The capacity the filter was sized for (0 if built from an explicit shape).
    fn capacity(&self) -> u64;
    /// The target false-positive rate at capacity (0 if built from an explicit shape).
    fn target_fpr(&self) -> f64;

    /// Fraction of bits set.
    fn fill_ratio(&self) -> f64 {
        let m = self.bit_len();
        if m == 0 {
            0.0
        } else {
            self.count_ones() as f64 / m as f64
        }
    }

    /// Estimated number of distinct items, from the number of zero bits (Broder & Mitzenmacher §2.1).
    fn estimated_len(&self) -> f64 {
        crate::params::estimate_items(self.bit_len(), self.hash_count(), self.count_ones())
    }
}

/// The sizing core every structure's builder embeds: how many keys, at what false-positive
/// rate (or an explicit shape), hashed how, within what memory. Its setters and its checks
/// live here once; a structure's builder adds only the settings that structure reads.
///
/// Every field is optional: `None` means "not given" (the structure's default, or an error
/// when the structure needs it). A `Sizing` can be written as a struct literal, which is how
/// run-time callers fill a [`Spec`](crate::Spec) from their own options, or with the setters:
///
/// ```
/// use bloomery::{BloomFilter, CountingBloomFilter, Sizing};
///
/// # fn main() -> bloomery::Result<()> {
/// let s = Sizing::default().capacity(10_000).fpr(0.01).seed(7);
/// let set = BloomFilter::builder().sizing(s).try_build()?;
/// let counts = CountingBloomFilter::builder().sizing(s).try_build()?;
/// assert_eq!(bloomery::Filter::hasher(&set), bloomery::Filter::hasher(&counts));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sizing {
    /// Expected number of distinct items (n).
    pub capacity: Option<u64>,
    /// Target false-positive rate at capacity (ε).
    pub fpr: Option<f64>,
    /// An exact size, overriding the sizing: bits of a bit-array filter, counters of a
    /// counting filter.
    pub bits: Option<u64>,
    /// An exact number of hash functions, overriding the optimum.
    pub hashes: Option<u32>,
    /// The hasher (`None`: the structure's own default, [`KeyHasher::new`] for all but the
    /// split-block filter, which hashes as Parquet does).
    pub hasher: Option<KeyHasher>,
    /// Refuse to allocate more than this many bytes (`None`: the process-wide
    /// [`max_bytes`](crate::tuning::max_bytes) at build time).
    pub max_bytes: Option<u64>,
}

impl Sizing {
    /// Expected number of distinct items (n).
    pub fn capacity(mut self, n: u64) -> Self {
        self.capacity = Some(n);
        self
    }
    /// Target false-positive rate at capacity (ε).
    pub fn fpr(mut self, p: f64) -> Self {
        self.fpr = Some(p);
        self
    }
    /// An exact number of bits (counters, for a counting filter), overriding the sizing (the
    /// papers' experiments use shapes that are not the optimum, e.g. m/n = 48 with k = 3).
    pub fn bits(mut self, m: u64) -> Self {
        self.bits = Some(m);
        self
    }
    /// An exact number of hash functions, overriding the optimum.
    pub fn hashes(mut self, k: u32) -> Self {
        self.hashes = Some(k);
        self
    }
    /// Hash with this hasher (seeded or keyed). Without it a structure hashes with its own
    /// default: [`KeyHasher::new`] for all but the split-block filter, which uses Parquet's
    /// [`KeyHasher::parquet`]; a hasher given here is used as given (so
    /// `hasher(KeyHasher::new())` makes a split-block filter that Parquet readers cannot use).
    pub fn hasher(mut self, h: KeyHasher) -> Self {
        self.hasher = Some(h);
        self
    }
    /// Shorthand for `hasher(KeyHasher::with_seed(seed))`.
    pub fn seed(self, seed: u64) -> Self {
        self.hasher(KeyHasher::with_seed(seed))
    }
    /// Keyed mode: a random secret seed (see [`hash`](crate::KeyHasher) for when to use it).
    pub fn keyed(self) -> Result<Self> {
        Ok(self.hasher(KeyHasher::keyed()?))
    }
    /// Refuse to allocate more than this many bytes (default: the process-wide
    /// [`max_bytes`](crate::tuning::max_bytes) when the structure is built). A scalable filter keeps
    /// a limit given here in its file, as a bound on its growth wherever it is loaded.
    pub fn max_bytes(mut self, limit: u64) -> Self {
        self.max_bytes = Some(limit);
        self
    }

    /// The hasher given, else [`KeyHasher::new`].
    pub(crate) fn key_hasher(&self) -> KeyHasher {
        self.hasher.unwrap_or_default()
    }

    /// The memory limit given, else the process-wide one.
    pub(crate) fn limit(&self) -> u64 {
        self.max_bytes.unwrap_or_else(store::max_bytes)
    }

    /// Capacity and fpr, both required unless an explicit shape was given.
    pub(crate) fn sized(&self) -> Result<(u64, f64)> {
        let n = self
            .capacity
            .ok_or_else(|| invalid("capacity", "required"))?;
        let p = self.fpr.ok_or_else(|| invalid("fpr", "required"))?;
        crate::params::check_capacity(n)?;
        crate::params::check_fpr(p)?;
        Ok((n, p))
    }

    /// Refuse the sizing fields a structure does not read (`names` among "capacity", "fpr",
    /// "bits", "hashes"), naming the first one given.
    pub(crate) fn refuse(&self, names: &[&'static str], what: &str) -> Result<()> {
        let given = [
            ("capacity", self.capacity.is_some()),
            ("fpr", self.fpr.is_some()),
            ("bits", self.bits.is_some()),
            ("hashes", self.hashes.is_some()),
        ];
        match given.iter().find(|(n, g)| *g && names.contains(n)) {
            Some((name, _)) => Err(invalid(name, format!("does not apply to {what}"))),
            None => Ok(()),
        }
    }
}

/// The [`Sizing`] setters, written once for every builder that embeds a `sizing: Sizing`
/// field.
macro_rules! sizing_setters {
    () => {
        /// Expected number of distinct items (n).
        pub fn capacity(mut self, n: u64) -> Self {
            self.sizing.capacity = Some(n);
            self
        }
        /// Target false-positive rate at capacity (ε).
        pub fn fpr(mut self, p: f64) -> Self {
            self.sizing.fpr = Some(p);
            self
        }
        /// Hash with this hasher (see [`Sizing::hasher`](crate::Sizing::hasher)).
        pub fn hasher(mut self, h: $crate::hash::KeyHasher) -> Self {
            self.sizing.hasher = Some(h);
            self
        }
        $crate::filter::hasher_shorthands!();
        /// Refuse to allocate more than this many bytes (default: the process-wide
        /// [`max_bytes`](crate::tuning::max_bytes) when the structure is built).
        pub fn max_bytes(mut self, limit: u64) -> Self {
            self.sizing.max_bytes = Some(limit);
            self
        }
        /// Take every sizing setting from `s` (a [`Sizing`](crate::Sizing) shared by several
        /// builders, or filled from run-time options).
        pub fn sizing(mut self, s: $crate::filter::Sizing) -> Self {
            self.sizing = s;
            self
        }
    };
}
pub(crate) use sizing_setters;

/// `seed` and `keyed`, the shorthands of a builder's `hasher` setter (in both setter macros).
macro_rules! hasher_shorthands {
    () => {
        /// Shorthand for `hasher(KeyHasher::with_seed(seed))`.
        pub fn seed(self, seed: u64) -> Self {
            self.hasher($crate::hash::KeyHasher::with_seed(seed))
        }
        /// Keyed mode: a random secret seed (see [`hash`](crate::KeyHasher) for when to use
        /// it).
        pub fn keyed(self) -> $crate::error::Result<Self> {
            Ok(self.hasher($crate::hash::KeyHasher::keyed()?))
        }
    };
}
pub(crate) use hasher_shorthands;

/// The hashing and memory setters (`hasher`, `seed`, `keyed`, `max_bytes`), written once for
/// the builders sized by something other than a [`Sizing`] (width × depth, the keys given to
/// `try_build`): they hold `hasher: KeyHasher` and `max_bytes: u64` fields.
macro_rules! hashing_setters {
    () => {
        /// Hash with this hasher (seeded or keyed).
        pub fn hasher(mut self, h: $crate::hash::KeyHasher) -> Self {
            self.hasher = h;
            self
        }
        $crate::filter::hasher_shorthands!();
        /// Refuse to allocate more than this many bytes (default: the process-wide
        /// [`max_bytes`](crate::tuning::max_bytes) when the builder was made).
        pub fn max_bytes(mut self, limit: u64) -> Self {
            self.max_bytes = limit;
            self
        }
    };
}
pub(crate) use hashing_setters;

/// The builder of a bit-array filter: the shared [`Sizing`] plus the options of `T` alone
/// (`T::Options`). Obtain one from the structure, e.g. `BloomFilter::builder()`, and finish
/// with `try_build()`. A structure's own settings are methods of its builder only:
/// `growth` exists on a scalable filter's builder, `layout` on a blocked filter's.
///
/// ```
/// use bloomery::prelude::*;
///
/// let f = BlockedBloomFilter::builder().capacity(1000).fpr(0.01).seed(7).try_build();
/// assert!(f.is_ok());
/// let s = ScalableBloomFilter::builder().capacity(1000).fpr(0.01).growth(4).try_build();
/// assert!(s.is_ok());
/// ```
///
/// Growth and tightening belong to scalable filters; on a blocked filter's builder they do
/// not compile:
///
/// ```compile_fail,E0599
/// use bloomery::prelude::*;
///
/// let f = BlockedBloomFilter::builder().capacity(1000).fpr(0.01).growth(0).tightening(7.0);
/// ```
///
/// and a block layout belongs to blocked filters:
///
/// ```compile_fail,E0599
/// use bloomery::prelude::*;
///
/// let f = BloomFilter::builder().capacity(1000).fpr(0.01).layout(bloomery::builders::BlockLayout::Sectors);
/// ```
pub struct Builder<T: Build> {
    pub(crate) sizing: Sizing,
    pub(crate) opts: T::Options,
}

impl<T: Build> std::fmt::Debug for Builder<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builder")
            .field("sizing", &self.sizing)
            .field("options", &self.opts)
            .finish()
    }
}

impl<T: Build> Clone for Builder<T> {
    fn clone(&self) -> Self {
        Self {
            sizing: self.sizing,
            opts: self.opts.clone(),
        }
    }
}

impl<T: Build> Default for Builder<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Build> Builder<T> {
    /// Defaults: no size yet, the structure's default hasher, the process-wide memory limit.
    pub fn new() -> Self {
        Self {
            sizing: Sizing::default(),
            opts: T::Options::default(),
        }
    }

    /// The same sizing for another structure type (its own options at their defaults).
    pub fn retarget<U: Build>(&self) -> Builder<U> {
        Builder {
            sizing: self.sizing,
            opts: U::Options::default(),
        }
    }

    /// An exact number of bits, overriding the sizing (the papers' experiments use shapes that
    /// are not the optimum, e.g. m/n = 48 with k = 3).
    pub fn bits(mut self, m: u64) -> Self {
        self.sizing.bits = Some(m);
        self
    }
    /// An exact number of hash functions, overriding the optimum.
    pub fn hashes(mut self, k: u32) -> Self {
        self.sizing.hashes = Some(k);
        self
    }

    sizing_setters!();

    /// Build, validating every parameter.
    pub fn try_build(self) -> Result<T> {
        T::build(&self)
    }
}

/// Construction from a [`Builder`]; implemented by each structure.
///
/// Generic code builds any of the bit-array sets through it:
///
/// ```
/// use bloomery::{BlockedBloomFilter, BloomFilter, Build, Builder, Filter};
///
/// fn sized<F: Build>(b: Builder<F>) -> bloomery::Result<F> {
///     b.capacity(10_000).fpr(0.001).try_build()
/// }
/// # fn main() -> bloomery::Result<()> {
/// let classic: BloomFilter = sized(BloomFilter::builder())?;
/// let blocked: BlockedBloomFilter = sized(BlockedBloomFilter::builder())?;
/// assert!(classic.is_empty() && blocked.is_empty());
/// # Ok(()) }
/// ```
pub trait Build: Sized {
    /// The settings only this structure reads (growth for a scalable filter, a block layout
    /// for a blocked one; `()` for most).
    type Options: std::fmt::Debug + Clone + Default;
    /// Build from validated options.
    fn build(b: &Builder<Self>) -> Result<Self>;
}

/// Compute `shape` descriptions for an incompatibility error.
pub(crate) fn shape_mismatch(left: String, right: String) -> Error {
    Error::Incompatible(Incompatibility::Shape { left, right })
}

/// Multiset counting: how many times a key was inserted, as an estimate (the counting family).
/// Where the structure guarantees it (counting filters without saturation, count-min
/// sketches, spectral filters with Minimum Selection) the estimate is never below the truth.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{Count, CountMinSketch, CountingBloomFilter, Filter};
///
/// let mut c = CountingBloomFilter::try_new(100, 0.01)?;
/// c.insert("a");
/// c.insert("a");
/// let mut s = CountMinSketch::try_with_error(0.01, 0.01)?;
/// s.insert_many("a", 2);
/// fn at_least<C: Count>(c: &C, key: &str, n: u64) -> bool {
///     c.count(key) >= n
/// }
/// assert!(at_least(&c, "a", 2) && at_least(&s, "a", 2));
/// # Ok(()) }
/// ```
pub trait Count {
    /// The hasher keys go through, as [`Filter::hasher`] for the structures that are both
    /// (each such structure also has it as an inherent method, so `f.hasher()` is not
    /// ambiguous with both traits in scope).
    fn hasher(&self) -> &KeyHasher;

    /// Estimated count of a pre-hashed key (0: certainly never inserted, or all removed).
    fn count_hashed(&self, h: Hashed) -> u64;

    /// Estimated count of a key.
    #[inline]
    fn count<K: Key + ?Sized>(&self, key: &K) -> u64 {
        self.count_hashed(Count::hasher(self).hash(key))
    }
}

/// Deletion for the structures that support it without creating false negatives.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{BlockedCountingBloomFilter, Count, Filter, Remove, RemoveError};
///
/// let mut f = BlockedCountingBloomFilter::try_new(100, 0.01)?;
/// f.insert("a");
/// f.remove("a")?;
/// assert_eq!(f.count("a"), 0);
/// assert_eq!(f.remove("a"), Err(RemoveError::NotPresent));
/// # Ok(()) }
/// ```
pub trait Remove: Count {
    /// Remove one occurrence of a pre-hashed key. Refused with [`RemoveError::NotPresent`]
    /// (and nothing changed) when the structure can tell the key is absent.
    fn remove_hashed(&mut self, h: Hashed) -> Result<(), RemoveError>;

    /// Remove one occurrence of a key (see [`remove_hashed`](Self::remove_hashed)).
    #[inline]
    fn remove<K: Key + ?Sized>(&mut self, key: &K) -> Result<(), RemoveError> {
        let h = Count::hasher(self).hash(key);
        self.remove_hashed(h)
    }
}

/// Why a removal was refused. Nothing is changed when a removal is refused.
///
/// Through `?` into [`Error`](crate::Error) the reason survives: an absent key becomes
/// [`Error::NotPresent`](crate::Error::NotPresent).
///
/// ```
/// use bloomery::prelude::*;
/// use bloomery::{CountingBloomFilter, Error};
///
/// fn remove_all(f: &mut CountingBloomFilter, keys: &[&str]) -> bloomery::Result<()> {
///     for k in keys {
///         f.remove(k)?;
///     }
///     Ok(())
/// }
///
/// # fn main() -> bloomery::Result<()> {
/// let mut f = CountingBloomFilter::try_new(1000, 0.001)?;
/// f.insert("kept");
/// assert!(matches!(remove_all(&mut f, &["never-added"]), Err(Error::NotPresent)));
/// assert!(f.contains("kept"));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RemoveError {
    /// The key is certainly not present (one of its counters or cells is zero): removing it
    /// would decrement other keys' counters and could create false negatives.
    #[error("key is not present; removing it would create false negatives for other keys")]
    NotPresent,
    /// This structure (or the mode it was built in) cannot delete without risking false
    /// negatives.
    #[error("removal unsupported: {0}")]
    Unsupported(&'static str),
}

/// Through `?`, [`RemoveError::NotPresent`] stays distinguishable ([`Error::NotPresent`]);
/// [`RemoveError::Unsupported`] becomes [`Error::Unsupported`].
impl From<RemoveError> for Error {
    fn from(e: RemoveError) -> Self {
        match e {
            RemoveError::NotPresent => Error::NotPresent,
            RemoveError::Unsupported(why) => Error::Unsupported(format!("removal: {why}")),
        }
    }
}

/// `impl Extend<K>` for a [`Filter`]: insert every key.
macro_rules! impl_extend {
    ($t:ty) => {
        impl<K: $crate::hash::Key> Extend<K> for $t {
            fn extend<I: IntoIterator<Item = K>>(&mut self, iter: I) {
                for k in iter {
                    $crate::filter::Filter::insert(self, &k);
                }
            }
        }
    };
}
pub(crate) use impl_extend;

/// `&a | &b` (union) and `&a & &b` (intersection) for a [`Merge`] type; both return a
/// `Result`, an error when the filters are incompatible.
macro_rules! impl_set_operators {
    ($t:ty) => {
        impl std::ops::BitOr for &$t {
            type Output = $crate::error::Result<$t>;
            /// Union; an error if the filters are incompatible.
            fn bitor(self, rhs: Self) -> Self::Output {
                let mut out = self.clone();
                $crate::filter::Merge::union_with(&mut out, rhs)?;
                Ok(out)
            }
        }

        impl std::ops::BitAnd for &$t {
            type Output = $crate::error::Result<$t>;
            /// Intersection; an error if the filters are incompatible.
            fn bitand(self, rhs: Self) -> Self::Output {
                let mut out = self.clone();
                $crate::filter::Merge::intersect_with(&mut out, rhs)?;
                Ok(out)
            }
        }
    };
}
pub(crate) use impl_set_operators;
