//! The one list of structure kinds.
//!
//! [`for_each_kind!`] holds every kind bloomery knows: its variant of [`Kind`], the id stored in
//! files (part of the format: never reused, never changed), the name the CLI and `info` use, the
//! Rust type that holds it, and a one-line summary. Everything that depends on the set of kinds
//! is generated from this list: the [`Kind`] enum and its tables here, and, in `any/`, the
//! run-time types [`AnyFilter`](crate::AnyFilter) (the `sets` group) and
//! [`AnyCounter`](crate::AnyCounter) (the `counters` group) with their dispatch, decoding and
//! capabilities. Adding a structure is its module plus one line here (see `ARCHITECTURE.md`).
//!
//! An entry whose type exists only with a cargo feature carries that `#[cfg]`: the kind is
//! known in every build (its files are recognised and named), and only the code that needs the
//! type is compiled with the feature.
//!
//! Groups: `sets` are held by [`AnyFilter`](crate::AnyFilter), `counters` by
//! [`AnyCounter`](crate::AnyCounter); `others` load through their own types only (structured
//! keys, static structures, sketches with their own commands); `layouts` are further file kinds
//! of a type listed above (the blocked filter's second block layout).

// The structures `Kind`'s variants link to (in its documentation only).
#[cfg(doc)]
use crate::{
    redisbloom::{RedisBloomCuckooFilter, RedisBloomFilter},
    *,
};
/// Calls `$callback!` with the list of kinds (see the [module docs](self)).
macro_rules! for_each_kind {
    ($callback:ident) => {
        $callback! {
            sets {
                Classic = 1, "classic", BloomFilter,
                    "The textbook filter: k bits anywhere in one array.";
                Partitioned = 2, "partitioned", PartitionedBloomFilter,
                    "k independent slices, one bit in each.";
                Blocked = 3, "blocked", BlockedBloomFilter,
                    "One cache line per key: the fast default.";
                SplitBlock = 4, "split-block", SplitBlockBloomFilter,
                    "Parquet's split-block filter, bit for bit.";
                Scalable = 5, "scalable", ScalableBloomFilter,
                    "Grows as items arrive, keeping the compound rate under target.";
                Mlbf = 12, "mlbf", MultiLayerBloomFilter,
                    "Multi-layer filter for URLs: one filter per path segment plus an XOR layer.";
                RedisBloomChain = 22, "redisbloom-bf", RedisBloomFilter,
                    "RedisBloom's scalable Bloom filter, its hashing and layout kept (moved from RedisBloom).";
                RedisBloomCuckoo = 23, "redisbloom-cf", RedisBloomCuckooFilter,
                    "RedisBloom's cuckoo filter, its hashing and layout kept (moved from RedisBloom).";
                Window = 27, "window", AgePartitionedBloomFilter,
                    "Sliding window: remembers the last N insertions, forgets older ones.";
            }
            counters {
                Counting = 6, "counting", CountingBloomFilter,
                    "Counting filter: w-bit saturating counters; deletes.";
                DLeftCounting = 7, "dlcbf", DLeftCountingBloomFilter,
                    "d-left counting filter: fingerprints and small counters; deletes, less memory.";
                Spectral = 8, "spectral", SpectralBloomFilter,
                    "Spectral filter: counts per key (--method ms|mi|rm); deletes except with mi.";
                CountMin = 9, "cms", CountMinSketch,
                    "Count-min sketch: counts with a guaranteed error; no deletion.";
                Iterative = 10, "ibf", IterativeBloomFilter,
                    "Iterative filter: repeats set one more bit; no deletion.";
                SpaceCode = 11, "scbf", SpaceCodeBloomFilter,
                    "Space-code filter: groups of hashes, maximum-likelihood counts; no deletion.";
                BlockedCounting = 21, "blocked-counting", BlockedCountingBloomFilter,
                    "Blocked counting filter: a key's counters in one cache line; deletes.";
            }
            others {
                Breadth = 13, "bbf", BreadthBloomFilter,
                    "Breadth Bloom filter for tree paths: one filter per level.";
                Depth = 14, "dbf", DepthBloomFilter,
                    "Depth Bloom filter for tree paths: one filter per sub-path length.";
                Attenuated = 15, "attenuated", AttenuatedBloomFilter,
                    "Attenuated Bloom filter: d filters per edge, for routing by distance.";
                Bloomier = 16, "bloomier", BloomierFilter,
                    "Bloomier filter: a static key to value map.";
                Xor = 17, "xor", XorFilter,
                    "Static xor filter in the binary-fuse layout: the least memory.";
                Cuckoo = 18, "cuckoo", CuckooFilter,
                    "Cuckoo filter: buckets of fingerprints; deletes.";
                TopK = 19, "topk", TopK,
                    "HeavyKeeper top-k: the heaviest items of a stream.";
                TDigest = 25, "tdigest", TDigest,
                    "Merging t-digest: quantiles, CDF and ranks of a stream of numbers.";
                CountMin32 = 26, "cms32", CountMinSketch32,
                    "Count-min sketch with 32-bit counters (RedisBloom's cell size); no deletion.";
                TimeWindow = 29, "time-window", TimeWindowFilter,
                    "Time window: remembers the keys of the last T ticks of the caller's clock.";
                #[cfg(feature = "parquet")]
                ParquetSidecar = 24, "parquet-sidecar", ParquetSidecar,
                    "Split-block filters for the row groups of one column of a Parquet file.";
            }
            layouts {
                BlockedSectors = 20, "blocked-sectors", Blocked,
                    "The blocked filter in its sectors layout: one bit per 64-bit word.";
                BlockedSalted = 31, "blocked-salted", Blocked,
                    "The blocked filter in its salted layout: one bit per 64-bit word from one 64-bit hash.";
                BlockedSalted256 = 32, "blocked-salted256", Blocked,
                    "The blocked filter in its salted layout on 256-bit blocks: one bit per 32-bit word from one 64-bit hash.";
                TopKSlots = 28, "topk-slots", TopK,
                    "HeavyKeeper top-k with RedisBloom's list of k slots (the Redis module's TOPK.*).";
                WindowBlocked = 30, "window-blocked", Window,
                    "The sliding window in its blocked layout: a key's bits in one block of k + l words.";
            }
        }
    };
}
pub(crate) use for_each_kind;

/// Generates [`Kind`] and its tables from [`for_each_kind!`].
macro_rules! define_kind {
    (
        sets { $($sv:ident = $sid:literal, $sname:literal, $sty:ident, $sdoc:literal;)* }
        counters { $($cv:ident = $cid:literal, $cname:literal, $cty:ident, $cdoc:literal;)* }
        others { $($(#[$om:meta])* $ov:ident = $oid:literal, $oname:literal, $oty:ident, $odoc:literal;)* }
        layouts { $($lv:ident = $lid:literal, $lname:literal, $lof:ident, $ldoc:literal;)* }
    ) => {
        /// Structure kinds. The numeric ids are part of the file format and never change.
        ///
        /// ```
        /// use bloomery::Kind;
        ///
        /// let k = Kind::from_name("blocked").unwrap();
        /// assert_eq!((k, k.id()), (Kind::Blocked, 3));
        /// assert_eq!(Kind::from_id(20), Some(Kind::BlockedSectors));
        /// assert_eq!(Kind::BlockedSectors.rust_type(), Kind::Blocked); // one type, two layouts
        /// assert!(Kind::Blocked.is_set() && Kind::Counting.is_counter());
        /// assert!(Kind::ALL.iter().all(|k| Kind::from_id(k.id()) == Some(*k)));
        /// ```
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[repr(u16)]
        #[non_exhaustive]
        pub enum Kind {
            $(#[doc = concat!("[`", stringify!($sty), "`]: ", $sdoc)] $sv = $sid,)*
            $(#[doc = concat!("[`", stringify!($cty), "`]: ", $cdoc)] $cv = $cid,)*
            $(#[doc = concat!("`", stringify!($oty), "`: ", $odoc)] $ov = $oid,)*
            $(#[doc = $ldoc] $lv = $lid,)*
        }

        impl Kind {
            /// All kinds this build knows.
            pub const ALL: &'static [Kind] = &[
                $(Kind::$sv,)* $(Kind::$cv,)* $(Kind::$ov,)* $(Kind::$lv,)*
            ];

            /// The kinds [`AnyFilter`](crate::AnyFilter) holds (set structures), one per
            /// Rust type.
            pub const SETS: &'static [Kind] = &[$(Kind::$sv,)*];

            /// The kinds [`AnyCounter`](crate::AnyCounter) holds (the counting family).
            pub const COUNTERS: &'static [Kind] = &[$(Kind::$cv,)*];

            /// Decode a stored id.
            pub fn from_id(id: u16) -> Option<Kind> {
                match id {
                    $($sid => Some(Kind::$sv),)*
                    $($cid => Some(Kind::$cv),)*
                    $($oid => Some(Kind::$ov),)*
                    $($lid => Some(Kind::$lv),)*
                    _ => None,
                }
            }

            /// The kind with this name, as [`name`](Self::name) spells it.
            pub fn from_name(name: &str) -> Option<Kind> {
                Self::ALL.iter().copied().find(|k| k.name() == name)
            }

            /// The id stored in files.
            pub fn id(self) -> u16 {
                self as u16
            }

            /// A short stable name, as the CLI spells it.
            pub fn name(self) -> &'static str {
                match self {
                    $(Kind::$sv => $sname,)*
                    $(Kind::$cv => $cname,)*
                    $(Kind::$ov => $oname,)*
                    $(Kind::$lv => $lname,)*
                }
            }

            /// One line saying what the structure is (the CLI's `--kind` help).
            pub fn summary(self) -> &'static str {
                match self {
                    $(Kind::$sv => $sdoc,)*
                    $(Kind::$cv => $cdoc,)*
                    $(Kind::$ov => $odoc,)*
                    $(Kind::$lv => $ldoc,)*
                }
            }

            /// The kind whose Rust type loads this kind: several file kinds can share one type
            /// (the blocked filter's two layouts); loaders accept any kind of their type.
            pub fn rust_type(self) -> Kind {
                match self {
                    $(Kind::$lv => Kind::$lof,)*
                    k => k,
                }
            }

            /// True for the set structures [`AnyFilter`](crate::AnyFilter) holds (including
            /// the multi-layer URL filter).
            pub fn is_set(self) -> bool {
                Self::SETS.contains(&self.rust_type())
            }

            /// True for the counting family [`AnyCounter`](crate::AnyCounter) holds.
            pub fn is_counter(self) -> bool {
                Self::COUNTERS.contains(&self.rust_type())
            }
        }

        impl std::fmt::Display for Kind {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

for_each_kind!(define_kind);

/// What a structure can do besides answering membership queries. Each kind's capabilities
/// come from its type ([`Kind::capabilities`]); one instance may still refuse an operation
/// its kind supports in general (a spectral filter built for Minimal Increase cannot delete).
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::Kind;
/// use bloomery::kinds::Capability;
///
/// let caps = Kind::Counting.capabilities();
/// assert!(caps.remove && caps.has(Capability::Count));
/// assert!(!Kind::Blocked.capabilities().has(Capability::Remove));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Capabilities {
    /// Keys can be added after construction (false for static structures).
    pub insert: bool,
    /// Keys are hashed whole, so the pre-hashed (`*_hashed`) path serves them (false for the
    /// multi-layer URL filter, which hashes each URL segment).
    pub hashed: bool,
    /// Per-key count estimates.
    pub count: bool,
    /// Deletion without false negatives.
    pub remove: bool,
    /// Union and intersection with a filter of the same shape and hasher.
    pub merge: bool,
    /// Halving to a smaller filter of the same keys.
    pub fold: bool,
    /// Size and overlap estimates from the fill (Broder & Mitzenmacher §2.4).
    pub estimate: bool,
    /// A damaged byte range can be marked (set to ones), keeping every key.
    pub mark_damaged: bool,
    /// The plain Bloom filter of the same keys can be extracted (counting filters).
    pub flatten: bool,
}

/// One operation that a kind may lack, for [`Kind::require`].
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::Kind;
/// use bloomery::kinds::Capability;
///
/// assert!(Kind::Blocked.require(Capability::Merge).is_ok());
/// let e = Kind::Blocked.require(Capability::Remove).unwrap_err();
/// assert!(e.to_string().contains("blocked"), "{e}");
/// assert!(Kind::offering(Capability::Remove).contains(&Kind::Counting));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Capability {
    /// [`Capabilities::insert`]
    Insert,
    /// [`Capabilities::hashed`]
    Hashed,
    /// [`Capabilities::count`]
    Count,
    /// [`Capabilities::remove`]
    Remove,
    /// [`Capabilities::merge`]
    Merge,
    /// [`Capabilities::fold`]
    Fold,
    /// [`Capabilities::estimate`]
    Estimate,
    /// [`Capabilities::mark_damaged`]
    MarkDamaged,
    /// [`Capabilities::flatten`]
    Flatten,
}

impl Capability {
    /// What the operation is, for messages ("deletion", "halving", ...).
    pub fn describe(self) -> &'static str {
        match self {
            Capability::Insert => "insertion",
            Capability::Hashed => "pre-hashed keys",
            Capability::Count => "per-key counts",
            Capability::Remove => "deletion",
            Capability::Merge => "union and intersection",
            Capability::Fold => "halving (fold)",
            Capability::Estimate => "size and overlap estimates",
            Capability::MarkDamaged => "marking damaged bytes",
            Capability::Flatten => "plain Bloom filter counterpart (flatten)",
        }
    }
}

impl Capabilities {
    /// Nothing beyond membership queries (the base the kinds' constants build on).
    pub(crate) const NONE: Capabilities = Capabilities {
        insert: false,
        hashed: false,
        count: false,
        remove: false,
        merge: false,
        fold: false,
        estimate: false,
        mark_damaged: false,
        flatten: false,
    };

    /// Whether `cap` is offered.
    pub fn has(self, cap: Capability) -> bool {
        match cap {
            Capability::Insert => self.insert,
            Capability::Hashed => self.hashed,
            Capability::Count => self.count,
            Capability::Remove => self.remove,
            Capability::Merge => self.merge,
            Capability::Fold => self.fold,
            Capability::Estimate => self.estimate,
            Capability::MarkDamaged => self.mark_damaged,
            Capability::Flatten => self.flatten,
        }
    }
}

impl Kind {
    /// The kinds [`AnyFilter`](crate::AnyFilter) and [`AnyCounter`](crate::AnyCounter) hold
    /// that offer `cap` (for messages that say where to turn).
    pub fn offering(cap: Capability) -> Vec<Kind> {
        Self::SETS
            .iter()
            .chain(Self::COUNTERS)
            .copied()
            .filter(|k| k.capabilities().has(cap))
            .collect()
    }

    /// `Ok` when this kind offers `cap`; otherwise an [`Error::Unsupported`](crate::Error)
    /// naming the operation, this kind and the kinds that offer it.
    pub fn require(self, cap: Capability) -> crate::error::Result<()> {
        if self.capabilities().has(cap) {
            return Ok(());
        }
        let others: Vec<&str> = Self::offering(cap).iter().map(|k| k.name()).collect();
        // a layout of a type (the blocked filter's sectors) is named as its type
        let name = self.rust_type().name();
        Err(crate::error::Error::Unsupported(if others.is_empty() {
            format!("{name} structures have no {}", cap.describe())
        } else {
            format!(
                "{name} structures have no {} (kinds that do: {})",
                cap.describe(),
                others.join(", ")
            )
        }))
    }
}
