//! [`Spec`]: what to build when the kind is chosen at run time — a [`Kind`], the shared
//! [`Sizing`] and the options of the kinds that have their own. The CLI's `create`, the Redis
//! module and the Python constructors fill one from their arguments and build an
//! [`AnyFilter`] or an [`AnyCounter`] from it; which options apply to which kind is decided
//! here, once.

use crate::any::counter::AnyCounter;
use crate::any::filter::{AnyFilter, EmptyFile};
use crate::error::{invalid, Error, Result};
use crate::filter::{Build, Builder, Sizing};
use crate::kind::Kind;
use crate::multisets::blocked_counting::BlockedCountingBloomFilter;
use crate::multisets::count_min::CountMinSketch;
use crate::multisets::counting::CountingBloomFilter;
use crate::multisets::dleft::DLeftCountingBloomFilter;
use crate::multisets::iterative::IterativeBloomFilter;
use crate::multisets::space_code::SpaceCodeBloomFilter;
use crate::multisets::spectral::SpectralBloomFilter;
use crate::multisets::spectral::SpectralMethod;
use crate::redisbloom::{RedisBloomCuckooFilter, RedisBloomFilter};
use crate::sets::blocked::BlockLayout;
use crate::sets::scalable::ScalableBloomFilter;
use crate::structured::mlbf::MultiLayerBloomFilter;

/// The options only some kinds read. Each is `None` (or `false`) unless given; a given option
/// that the spec's kind does not read is refused with [`Error::InvalidParameter`] naming it.
///
/// ```
/// use bloomery::{AnyFilter, Error, Kind, Sizing, Spec};
/// use bloomery::kinds::KindOptions;
///
/// # fn main() -> bloomery::Result<()> {
/// let sizing = Sizing::default().capacity(1000).fpr(0.01);
/// // a multi-layer URL filter with 3 layers instead of 4
/// let layers = KindOptions { layers: Some(3), ..KindOptions::default() };
/// let f = AnyFilter::try_from_spec(&Spec::new(Kind::Mlbf).sizing(sizing).options(layers))?;
/// assert_eq!(f.info().layers, 3);
/// // an option the kind does not read is refused by name
/// let growth = KindOptions { growth: Some(2), ..KindOptions::default() };
/// let e = AnyFilter::try_from_spec(&Spec::new(Kind::Blocked).sizing(sizing).options(growth));
/// assert!(matches!(e, Err(Error::InvalidParameter { name: "growth", .. })));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct KindOptions {
    /// Scalable and RedisBloom chain filters: capacity multiplier per new sub-filter.
    pub growth: Option<u32>,
    /// Scalable filters: error tightening ratio r in (0, 1).
    pub tightening: Option<f64>,
    /// Scalable and RedisBloom chain filters: `Some(false)` refuses inserts past capacity.
    pub scaling: Option<bool>,
    /// Multi-layer filters: URL layers L (default the paper's 4).
    pub layers: Option<u32>,
    /// Iterative and space-code filters: expected inserts, repeats included (default: n,
    /// every key once). Their fill depends on both counts; the other kinds' on n alone.
    pub occurrences: Option<u64>,
    /// Bits per counter (counting: 1..=32, default 4; spectral: default 16; d-left: 1..=31,
    /// default 2).
    pub counter_bits: Option<u32>,
    /// Count-min width (with `depth`).
    pub width: Option<u64>,
    /// Count-min depth (with `width`).
    pub depth: Option<u32>,
    /// Count-min ε (with `delta`).
    pub epsilon: Option<f64>,
    /// Count-min δ (with `epsilon`).
    pub delta: Option<f64>,
    /// Count-min conservative update.
    pub conservative: bool,
    /// Spectral method (default Minimum Selection).
    pub method: Option<SpectralMethod>,
    /// Iterative filter: cap on the total repeats counted.
    pub repeat_cap: Option<u64>,
    /// Iterative filter: expected distinctness rate α used for sizing.
    pub distinctness: Option<f64>,
    /// Space-code filter: groups of hash functions.
    pub groups: Option<u32>,
}

impl KindOptions {
    /// The options given, by name (the names errors use).
    fn given(&self) -> [(&'static str, bool); 14] {
        [
            ("growth", self.growth.is_some()),
            ("tightening", self.tightening.is_some()),
            ("scaling", self.scaling.is_some()),
            ("layers", self.layers.is_some()),
            ("occurrences", self.occurrences.is_some()),
            ("counter_bits", self.counter_bits.is_some()),
            ("width", self.width.is_some()),
            ("depth", self.depth.is_some()),
            ("epsilon", self.epsilon.is_some()),
            ("delta", self.delta.is_some()),
            ("conservative", self.conservative),
            ("method", self.method.is_some()),
            (
                "repeat_cap",
                self.repeat_cap.is_some() || self.distinctness.is_some(),
            ),
            ("groups", self.groups.is_some()),
        ]
    }
}

/// A structure to build, chosen at run time: its [`Kind`], the shared [`Sizing`] and the
/// [`KindOptions`] of the kinds that read them. Callers that learn the kind from their input
/// (a command line, a Redis command, a Python call) fill one as a struct literal and build an
/// [`AnyFilter`] (set kinds) or an [`AnyCounter`] (counting kinds) from it. Every option is
/// validated; one the kind does not read is refused by name.
///
/// ```
/// use bloomery::{AnyCounter, AnyFilter, Error, Kind, Sizing, Spec};
/// use bloomery::kinds::KindOptions;
///
/// # fn main() -> bloomery::Result<()> {
/// let sizing = Sizing { capacity: Some(10_000), fpr: Some(0.01), ..Sizing::default() };
/// let scalable = Spec {
///     kind: Kind::Scalable,
///     sizing,
///     options: KindOptions { growth: Some(4), ..KindOptions::default() },
/// };
/// let f = AnyFilter::try_from_spec(&scalable)?;
/// assert_eq!(f.kind(), Kind::Scalable);
///
/// let counts = AnyCounter::try_from_spec(&Spec::new(Kind::Counting).sizing(sizing))?;
/// assert!(counts.capabilities().remove);
///
/// // growth does not apply to a blocked filter: refused by name, never ignored
/// let blocked = Spec { kind: Kind::Blocked, ..scalable };
/// assert!(matches!(
///     AnyFilter::try_from_spec(&blocked),
///     Err(Error::InvalidParameter { name: "growth", .. })
/// ));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spec {
    /// The structure.
    pub kind: Kind,
    /// Size, rate, hasher and memory limit.
    pub sizing: Sizing,
    /// The options of the kinds that have their own.
    pub options: KindOptions,
}

impl Spec {
    /// A spec for `kind` with nothing given yet.
    pub fn new(kind: Kind) -> Self {
        Self {
            kind,
            sizing: Sizing::default(),
            options: KindOptions::default(),
        }
    }

    /// The same spec with this sizing.
    pub fn sizing(mut self, sizing: Sizing) -> Self {
        self.sizing = sizing;
        self
    }

    /// The same spec with these kind options.
    pub fn options(mut self, options: KindOptions) -> Self {
        self.options = options;
        self
    }

    /// Refuse what the kind does not read, by name: the sizing fields in `sizing_not` and
    /// every kind option not in `applies`.
    fn only(&self, applies: &[&str], sizing_not: &[&'static str]) -> Result<()> {
        let kind = self.kind.name();
        self.sizing
            .refuse(sizing_not, &format!("{kind} structures"))?;
        match self
            .options
            .given()
            .iter()
            .find(|(n, g)| *g && !applies.contains(n))
        {
            Some((name, _)) => Err(invalid(
                name,
                format!("does not apply to {kind} structures"),
            )),
            None => Ok(()),
        }
    }

    /// A set structure, as [`AnyFilter::try_from_spec`].
    pub(crate) fn build_filter(&self) -> Result<AnyFilter> {
        let s = self.sizing;
        let o = &self.options;
        Ok(match self.kind {
            Kind::Classic => {
                self.only(&[], &[])?;
                AnyFilter::Classic(Builder::new().sizing(s).try_build()?)
            }
            Kind::Partitioned => {
                self.only(&[], &[])?;
                AnyFilter::Partitioned(Builder::new().sizing(s).try_build()?)
            }
            Kind::Blocked => {
                self.only(&[], &[])?;
                AnyFilter::Blocked(Builder::new().sizing(s).try_build()?)
            }
            Kind::BlockedSectors => {
                self.only(&[], &[])?;
                AnyFilter::Blocked(
                    crate::sets::blocked::BlockedBloomFilter::builder()
                        .sizing(s)
                        .layout(BlockLayout::Sectors)
                        .try_build()?,
                )
            }
            Kind::BlockedSalted => {
                self.only(&[], &[])?;
                AnyFilter::Blocked(
                    crate::sets::blocked::BlockedBloomFilter::builder()
                        .sizing(s)
                        .layout(BlockLayout::Salted)
                        .try_build()?,
                )
            }
            Kind::BlockedSalted256 => {
                self.only(&[], &[])?;
                AnyFilter::Blocked(
                    crate::sets::blocked::BlockedBloomFilter::builder()
                        .sizing(s)
                        .layout(BlockLayout::Salted256)
                        .try_build()?,
                )
            }
            Kind::SplitBlock => {
                self.only(&[], &[])?;
                AnyFilter::SplitBlock(Builder::new().sizing(s).try_build()?)
            }
            Kind::Scalable => {
                self.only(&["growth", "tightening", "scaling"], &[])?;
                let mut b = ScalableBloomFilter::builder().sizing(s);
                if let Some(g) = o.growth {
                    b = b.growth(g);
                }
                if let Some(r) = o.tightening {
                    b = b.tightening(r);
                }
                if let Some(on) = o.scaling {
                    b = b.scaling(on);
                }
                AnyFilter::Scalable(b.try_build()?)
            }
            Kind::Mlbf => {
                self.only(&["layers"], &[])?;
                AnyFilter::Mlbf(
                    MultiLayerBloomFilter::builder()
                        .layers(o.layers.unwrap_or(crate::structured::mlbf::PAPER_LAYERS))
                        .sizing(s)
                        .try_build()?,
                )
            }
            Kind::Window => {
                self.only(&[], &["bits", "hashes"])?;
                AnyFilter::Window(Builder::new().sizing(s).try_build()?)
            }
            Kind::WindowBlocked => {
                self.only(&[], &["bits", "hashes"])?;
                AnyFilter::Window(
                    crate::sets::window::AgePartitionedBloomFilter::builder()
                        .sizing(s)
                        .layout(crate::sets::window::WindowLayout::Blocked)
                        .try_build()?,
                )
            }
            // what BF.RESERVE and CF.RESERVE make in RedisBloom (its defaults for the rest)
            Kind::RedisBloomChain => {
                self.only(&["growth", "scaling"], &[])?;
                let (n, p) = s.sized()?;
                let scaling = if o.scaling.unwrap_or(true) {
                    0
                } else {
                    RedisBloomFilter::OPT_NO_SCALING
                };
                AnyFilter::RedisBloomChain(RedisBloomFilter::with_options(
                    n,
                    p,
                    RedisBloomFilter::OPT_FORCE64 | RedisBloomFilter::OPT_NOROUND | scaling,
                    o.growth.unwrap_or(2),
                    s.limit(),
                )?)
            }
            Kind::RedisBloomCuckoo => {
                self.only(&[], &[])?;
                let n = s.capacity.ok_or_else(|| invalid("capacity", "required"))?;
                AnyFilter::RedisBloomCuckoo(RedisBloomCuckooFilter::reserve(
                    n,
                    2,
                    20,
                    1,
                    s.limit(),
                )?)
            }
            k => {
                return Err(Error::Unsupported(format!(
                    "{} is not one of AnyFilter's set structures: use its own type",
                    k.name()
                )))
            }
        })
    }

    /// A counting structure, as [`AnyCounter::try_from_spec`].
    pub(crate) fn build_counter(&self) -> Result<AnyCounter> {
        let s = self.sizing;
        let o = &self.options;
        Ok(match self.kind {
            Kind::Counting => {
                self.only(&["counter_bits"], &[])?;
                let mut b = CountingBloomFilter::builder().sizing(s);
                if let Some(w) = o.counter_bits {
                    b = b.counter_width(w);
                }
                AnyCounter::Counting(b.try_build()?)
            }
            Kind::BlockedCounting => {
                self.only(&["counter_bits"], &[])?;
                let mut b = BlockedCountingBloomFilter::builder().sizing(s);
                if let Some(w) = o.counter_bits {
                    b = b.counter_width(w);
                }
                AnyCounter::BlockedCounting(b.try_build()?)
            }
            Kind::DLeftCounting => {
                self.only(&["counter_bits"], &["bits", "hashes"])?;
                let mut b = DLeftCountingBloomFilter::builder().sizing(s);
                if let Some(w) = o.counter_bits {
                    b = b.counter_bits(w);
                }
                AnyCounter::DLeftCounting(b.try_build()?)
            }
            Kind::Spectral => {
                self.only(&["counter_bits", "method"], &[])?;
                let mut b = SpectralBloomFilter::builder().sizing(s);
                if let Some(w) = o.counter_bits {
                    b = b.counter_width(w);
                }
                if let Some(m) = o.method {
                    b = b.method(m);
                }
                AnyCounter::Spectral(b.try_build()?)
            }
            Kind::CountMin => {
                self.only(
                    &["width", "depth", "epsilon", "delta", "conservative"],
                    &["bits", "hashes"],
                )?;
                if s.capacity.is_some() || s.fpr.is_some() {
                    return Err(invalid(
                        "capacity",
                        "a count-min sketch is sized by width/depth or epsilon/delta",
                    ));
                }
                let mut b = CountMinSketch::builder()
                    .hasher(s.key_hasher())
                    .max_bytes(s.limit())
                    .conservative(o.conservative);
                match (o.width, o.depth) {
                    (Some(w), Some(d)) => b = b.dimensions(w, d),
                    (None, None) => {}
                    _ => return Err(invalid("width", "give both width and depth")),
                }
                match (o.epsilon, o.delta) {
                    (Some(e), Some(d)) => b = b.error(e, d),
                    (None, None) => {}
                    _ => return Err(invalid("epsilon", "give both epsilon and delta")),
                }
                AnyCounter::CountMin(b.try_build()?)
            }
            Kind::Iterative => {
                self.only(&["repeat_cap", "occurrences"], &[])?;
                let mut b = IterativeBloomFilter::builder().sizing(s);
                match (s.capacity, o.occurrences) {
                    (Some(n), Some(total)) => {
                        if o.distinctness.is_some() {
                            return Err(invalid(
                                "occurrences",
                                "give the inserts or the distinctness rate, not both",
                            ));
                        }
                        crate::params::check_capacity(n)?;
                        if total < n {
                            return Err(invalid(
                                "occurrences",
                                format!("{total} inserts cannot hold {n} distinct keys"),
                            ));
                        }
                        // the library's capacity counts every input; α the distinct share
                        b = b.capacity(total).distinctness(n as f64 / total as f64);
                    }
                    (None, Some(_)) => {
                        return Err(invalid("occurrences", "give the distinct keys too"))
                    }
                    _ => {}
                }
                if let Some(c) = o.repeat_cap {
                    b = b.repeat_cap(c);
                }
                if let Some(a) = o.distinctness {
                    b = b.distinctness(a);
                }
                AnyCounter::Iterative(b.try_build()?)
            }
            Kind::SpaceCode => {
                self.only(&["groups", "occurrences"], &[])?;
                let mut b = SpaceCodeBloomFilter::builder().sizing(s);
                if let Some(total) = o.occurrences {
                    b = b.occurrences(total);
                }
                if let Some(g) = o.groups {
                    b = b.groups(g);
                }
                AnyCounter::SpaceCode(b.try_build()?)
            }
            k => {
                return Err(Error::Unsupported(format!(
                    "{} is not a counting-family structure",
                    k.name()
                )))
            }
        })
    }
}

/// The settings of [`AnyFilter::builder`]: the kind and the [`KindOptions`] of the set kinds.
#[derive(Debug, Clone, Copy, Default)]
pub struct AnyOptions {
    kind: Option<Kind>,
    options: KindOptions,
}

// The constructors from a spec live beside it: the structures' modules sit below this one.
impl AnyFilter {
    /// An empty structure as `spec` describes it (a set kind; counting kinds are built by
    /// [`AnyCounter::try_from_spec`](crate::AnyCounter::try_from_spec)).
    pub fn try_from_spec(spec: &Spec) -> Result<Self> {
        spec.build_filter()
    }

    /// An empty filter as `spec` describes it, made only to be written to a file
    /// ([`EmptyFile::save_with`]) without holding it in memory: a filter larger than RAM can
    /// be made this way, then queried through a map
    /// ([`Persist::open_mmap`](crate::io::format::Persist::open_mmap)) and updated
    /// ([`FileUpdate`](crate::io::mapped::FileUpdate)).
    ///
    /// The filter's words are borrowed from the kernel as zero pages that are only read, so the
    /// process's memory stays small whatever the filter's size, and the memory limit
    /// (`spec.sizing.max_bytes`, else [`max_bytes`](crate::tuning::max_bytes)) does not apply: nothing
    /// is loaded. The disk must hold the file (a full disk fails the save and leaves no file
    /// behind); the save takes about the time of writing the file. Without the `mmap` feature
    /// the filter is allocated as [`try_from_spec`](Self::try_from_spec) allocates it, within
    /// the memory limit.
    ///
    /// ```
    /// use bloomery::{AnyFilter, Kind, Sizing, Spec};
    /// use bloomery::file::SaveOptions;
    ///
    /// # fn main() -> bloomery::Result<()> {
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("big.bloom");
    /// let spec = Spec::new(Kind::Blocked).sizing(Sizing::default().capacity(10_000_000).fpr(0.01));
    /// let empty = AnyFilter::empty_file(&spec)?;
    /// let size = empty.encoded_len();
    /// empty.save_with(&path, SaveOptions::new())?;
    /// assert_eq!(std::fs::metadata(&path)?.len(), size);
    ///
    /// let mut f = AnyFilter::load(&path)?;
    /// assert_eq!((f.len(), f.info().bits), (0, empty.info().bits));
    /// f.insert("alice")?;
    /// assert!(f.contains("alice"));
    /// # Ok(()) }
    /// ```
    pub fn empty_file(spec: &Spec) -> Result<EmptyFile> {
        let filter = if cfg!(feature = "mmap") {
            let mut spec = *spec;
            spec.sizing.max_bytes = Some(u64::MAX);
            crate::store::untouched_arrays(|| spec.build_filter())?
        } else {
            spec.build_filter()?
        };
        Ok(EmptyFile::new(filter))
    }
}

impl AnyCounter {
    /// An empty structure as `spec` describes it (a counting kind; set kinds are built by
    /// [`AnyFilter::try_from_spec`](crate::AnyFilter::try_from_spec)).
    pub fn try_from_spec(spec: &Spec) -> Result<Self> {
        spec.build_counter()
    }
}

impl Builder<AnyFilter> {
    /// Which structure to build (default [`Kind::Blocked`]).
    pub fn kind(mut self, kind: Kind) -> Self {
        self.opts.kind = Some(kind);
        self
    }
    /// Scalable and RedisBloom chain filters: capacity multiplier per new sub-filter
    /// (refused by the other kinds).
    pub fn growth(mut self, s: u32) -> Self {
        self.opts.options.growth = Some(s);
        self
    }
    /// Scalable filters: error tightening ratio r in (0, 1) (refused by the other kinds).
    pub fn tightening(mut self, r: f64) -> Self {
        self.opts.options.tightening = Some(r);
        self
    }
    /// Scalable and RedisBloom chain filters: `false` refuses inserts past capacity
    /// (refused by the other kinds).
    pub fn scaling(mut self, on: bool) -> Self {
        self.opts.options.scaling = Some(on);
        self
    }
    /// Multi-layer filters: URL layers L (default 4; refused by the other kinds).
    pub fn layers(mut self, l: u32) -> Self {
        self.opts.options.layers = Some(l);
        self
    }
    /// The [`Spec`] this builder holds.
    pub fn spec(&self) -> Spec {
        Spec {
            kind: self.opts.kind.unwrap_or(Kind::Blocked),
            sizing: self.sizing,
            options: self.opts.options,
        }
    }
}

impl Build for AnyFilter {
    type Options = AnyOptions;
    fn build(b: &Builder<Self>) -> Result<Self> {
        b.spec().build_filter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::format::Persist;
    use crate::{BlockedBloomFilter, BloomFilter, KeyHasher, SplitBlockBloomFilter};

    fn sized() -> Sizing {
        Sizing::default().capacity(5000).fpr(0.01).seed(9)
    }

    fn refused(r: Result<impl std::fmt::Debug>) -> &'static str {
        match r {
            Err(Error::InvalidParameter { name, .. }) => name,
            other => panic!("expected a refused parameter, got {other:?}"),
        }
    }

    /// A spec builds the same bytes as the structure's own builder given the same settings.
    #[test]
    fn spec_builds_what_the_typed_builders_build() {
        let s = sized();
        let f = |kind, o: KindOptions| {
            AnyFilter::try_from_spec(&Spec::new(kind).sizing(s).options(o))
                .unwrap()
                .to_bytes()
        };
        let none = KindOptions::default();
        let classic = BloomFilter::builder().sizing(s).try_build().unwrap();
        assert_eq!(f(Kind::Classic, none), classic.to_bytes());
        let blocked = BlockedBloomFilter::builder().sizing(s).try_build().unwrap();
        assert_eq!(f(Kind::Blocked, none), blocked.to_bytes());
        let sectors = BlockedBloomFilter::builder()
            .sizing(s)
            .layout(BlockLayout::Sectors)
            .try_build()
            .unwrap();
        assert_eq!(f(Kind::BlockedSectors, none), sectors.to_bytes());
        let salted = BlockedBloomFilter::builder()
            .sizing(s)
            .layout(BlockLayout::Salted)
            .try_build()
            .unwrap();
        assert_eq!(f(Kind::BlockedSalted, none), salted.to_bytes());
        let grow = KindOptions {
            growth: Some(4),
            tightening: Some(0.8),
            scaling: Some(false),
            ..none
        };
        let scalable = ScalableBloomFilter::builder()
            .sizing(s)
            .growth(4)
            .tightening(0.8)
            .scaling(false)
            .try_build()
            .unwrap();
        assert_eq!(f(Kind::Scalable, grow), scalable.to_bytes());
        let layers = KindOptions {
            layers: Some(3),
            ..none
        };
        let mlbf = MultiLayerBloomFilter::builder()
            .layers(3)
            .sizing(s)
            .try_build()
            .unwrap();
        assert_eq!(f(Kind::Mlbf, layers), mlbf.to_bytes());

        let c = |kind, o: KindOptions| {
            AnyCounter::try_from_spec(&Spec::new(kind).sizing(s).options(o))
                .unwrap()
                .to_bytes()
        };
        let counting = CountingBloomFilter::builder()
            .sizing(s)
            .counter_width(8)
            .try_build()
            .unwrap();
        let w8 = KindOptions {
            counter_bits: Some(8),
            ..none
        };
        assert_eq!(c(Kind::Counting, w8), counting.to_bytes());
        let cms = CountMinSketch::builder()
            .hasher(KeyHasher::with_seed(9))
            .dimensions(300, 4)
            .try_build()
            .unwrap();
        let shape = KindOptions {
            width: Some(300),
            depth: Some(4),
            ..none
        };
        let only_hasher = Spec {
            kind: Kind::CountMin,
            sizing: Sizing::default().seed(9),
            options: shape,
        };
        assert_eq!(
            AnyCounter::try_from_spec(&only_hasher).unwrap().to_bytes(),
            cms.to_bytes()
        );
    }

    /// The split-block filter hashes as Parquet does unless a hasher is given, through a spec
    /// as through its builder.
    #[test]
    fn split_block_default_hasher_survives_the_spec() {
        let plain = Sizing::default().capacity(1000).fpr(0.01);
        let f = AnyFilter::try_from_spec(&Spec::new(Kind::SplitBlock).sizing(plain)).unwrap();
        let g = SplitBlockBloomFilter::builder()
            .sizing(plain)
            .try_build()
            .unwrap();
        assert_eq!(f.hasher(), &KeyHasher::parquet());
        assert_eq!(f.to_bytes(), g.to_bytes());
    }

    /// An option the kind does not read is refused by name, for every group of kinds.
    #[test]
    fn options_a_kind_does_not_read_are_refused_by_name() {
        let s = sized();
        let with = |kind, o: KindOptions| Spec::new(kind).sizing(s).options(o);
        let growth = KindOptions {
            growth: Some(2),
            ..KindOptions::default()
        };
        for kind in [Kind::Classic, Kind::Blocked, Kind::SplitBlock, Kind::Mlbf] {
            assert_eq!(
                refused(AnyFilter::try_from_spec(&with(kind, growth))),
                "growth"
            );
        }
        let tight = KindOptions {
            tightening: Some(0.5),
            ..KindOptions::default()
        };
        assert_eq!(
            refused(AnyFilter::try_from_spec(&with(
                Kind::RedisBloomChain,
                tight
            ))),
            "tightening"
        );
        let layers = KindOptions {
            layers: Some(3),
            ..KindOptions::default()
        };
        assert_eq!(
            refused(AnyFilter::try_from_spec(&with(Kind::Scalable, layers))),
            "layers"
        );
        let width = KindOptions {
            counter_bits: Some(8),
            ..KindOptions::default()
        };
        assert_eq!(
            refused(AnyFilter::try_from_spec(&with(Kind::Blocked, width))),
            "counter_bits"
        );
        assert_eq!(
            refused(AnyCounter::try_from_spec(&with(Kind::Counting, growth))),
            "growth"
        );
        // sizing fields a kind cannot use
        let dleft = Spec::new(Kind::DLeftCounting).sizing(s.bits(1 << 16));
        assert_eq!(refused(AnyCounter::try_from_spec(&dleft)), "bits");
        let dleft = DLeftCountingBloomFilter::builder().sizing(s.hashes(3));
        assert_eq!(refused(dleft.try_build()), "bits");
        let cms = Spec::new(Kind::CountMin).sizing(s);
        assert_eq!(refused(AnyCounter::try_from_spec(&cms)), "capacity");
        // a kind of the other run-time type
        assert!(matches!(
            AnyCounter::try_from_spec(&Spec::new(Kind::Blocked).sizing(s)),
            Err(Error::Unsupported(_))
        ));
        assert!(matches!(
            AnyFilter::try_from_spec(&Spec::new(Kind::Counting).sizing(s)),
            Err(Error::Unsupported(_))
        ));
    }

    /// `AnyFilter::builder` is the fluent form of a spec.
    #[test]
    fn any_filter_builder_is_a_spec() {
        let b = AnyFilter::builder(Kind::Scalable)
            .sizing(sized())
            .growth(4)
            .scaling(false);
        let spec = b.spec();
        assert_eq!(spec.kind, Kind::Scalable);
        assert_eq!(spec.sizing, sized());
        assert_eq!(spec.options.growth, Some(4));
        assert_eq!(spec.options.scaling, Some(false));
        assert_eq!(
            b.try_build().unwrap().to_bytes(),
            AnyFilter::try_from_spec(&spec).unwrap().to_bytes()
        );
        let e = AnyFilter::builder(Kind::Blocked)
            .sizing(sized())
            .growth(0)
            .tightening(7.0)
            .try_build();
        assert_eq!(refused(e), "growth");
    }
}
