//! [`AnyCounter`]: any multiset structure of the counting family behind one type, chosen at
//! run time — what the CLI loads from files whose kind it does not know in advance (the
//! counterpart of [`crate::AnyFilter`] for the set structures).

use super::{holder_methods, Holder};
use std::path::Path;

use crate::error::{invalid, FormatError, Result};
use crate::filter::RemoveError;
use crate::hash::{Hashed, KeyHasher};
use crate::io::format::Encode;
use crate::io::format::{self, Persist, Source};
use crate::multisets::counter_kind::{CounterInfo, CounterKind};

use crate::kind::{for_each_kind, Capabilities, Capability, Kind};
use crate::multisets::blocked_counting::BlockedCountingBloomFilter;
use crate::multisets::count_min::CountMinSketch;
use crate::multisets::counting::CountingBloomFilter;
use crate::multisets::dleft::DLeftCountingBloomFilter;
use crate::multisets::iterative::IterativeBloomFilter;
use crate::multisets::space_code::SpaceCodeBloomFilter;
use crate::multisets::spectral::SpectralBloomFilter;

/// The object-safe part of [`CounterKind`], so one `match` serves every method.
trait DynCounter {
    fn kind(&self) -> Kind;
    fn hasher(&self) -> &KeyHasher;
    fn len(&self) -> u64;
    fn insert_hashed(&mut self, h: Hashed) -> Result<()>;
    fn count_hashed(&self, h: Hashed) -> u64;
    fn contains_hashed(&self, h: Hashed) -> bool;
    fn prefetch_hashed(&self, h: Hashed);
    fn remove_unsupported(&self) -> Option<RemoveError>;
    fn remove_hashed(&mut self, h: Hashed) -> std::result::Result<(), RemoveError>;
    fn to_plain_filter(&self) -> Result<crate::sets::classic::BloomFilter>;
    fn describe(&self, info: &mut CounterInfo);
    fn rates(&self) -> (u64, Option<f64>, Option<f64>);
    fn encoded_len(&self) -> u64;
    fn save(&self, path: &Path) -> Result<()>;
    fn to_bytes(&self) -> Vec<u8>;
    fn encode_parts(&self) -> (format::Header, format::Payload<'_>);
}

impl<T: CounterKind> DynCounter for T {
    fn kind(&self) -> Kind {
        T::KIND
    }
    fn hasher(&self) -> &KeyHasher {
        CounterKind::hasher(self)
    }
    fn len(&self) -> u64 {
        CounterKind::len(self)
    }
    fn insert_hashed(&mut self, h: Hashed) -> Result<()> {
        CounterKind::insert_hashed(self, h)
    }
    fn count_hashed(&self, h: Hashed) -> u64 {
        CounterKind::count_hashed(self, h)
    }
    fn contains_hashed(&self, h: Hashed) -> bool {
        CounterKind::contains_hashed(self, h)
    }
    fn prefetch_hashed(&self, h: Hashed) {
        CounterKind::prefetch_hashed(self, h)
    }
    fn remove_unsupported(&self) -> Option<RemoveError> {
        CounterKind::remove_unsupported(self)
    }
    fn remove_hashed(&mut self, h: Hashed) -> std::result::Result<(), RemoveError> {
        CounterKind::remove_hashed(self, h)
    }
    fn to_plain_filter(&self) -> Result<crate::sets::classic::BloomFilter> {
        CounterKind::to_plain_filter(self)
    }
    fn rates(&self) -> (u64, Option<f64>, Option<f64>) {
        CounterKind::rates(self)
    }
    fn describe(&self, info: &mut CounterInfo) {
        CounterKind::describe(self, info)
    }
    fn encoded_len(&self) -> u64 {
        Persist::encoded_len(self)
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

/// Generates [`AnyCounter`] and its per-kind dispatch from the kinds table's `counters` group.
macro_rules! define_any_counter {
    (
        sets { $($sets:tt)* }
        counters { $($v:ident = $id:literal, $name:literal, $ty:ident, $doc:literal;)* }
        others { $($others:tt)* }
        layouts { $($layouts:tt)* }
    ) => {
        /// Any of the counting-family structures behind one type, chosen at run time (the
        /// counterpart of [`AnyFilter`](crate::AnyFilter) for multisets and sketches). What
        /// each kind offers (deletion, a plain-filter counterpart) is in its
        /// [`capabilities`](AnyCounter::capabilities).
        ///
        /// ```
        /// use bloomery::{AnyCounter, Kind, Sizing, Spec};
        ///
        /// # fn main() -> bloomery::Result<()> {
        /// let sizing = Sizing::default().capacity(1000).fpr(0.01);
        /// let mut c = AnyCounter::try_from_spec(&Spec::new(Kind::Counting).sizing(sizing))?;
        /// let h = c.hasher().hash("flow-7");
        /// c.insert_hashed(h)?;
        /// c.insert_hashed(h)?;
        /// assert_eq!(c.count_hashed(h), 2);
        /// assert!(c.capabilities().remove);
        /// # Ok(()) }
        /// ```
        #[derive(Debug, Clone)]
        #[non_exhaustive]
        pub enum AnyCounter {
            $(#[doc = concat!("[`", stringify!($ty), "`]: ", $doc)] $v($ty),)*
        }

        $(
            impl From<$ty> for AnyCounter {
                fn from(f: $ty) -> Self {
                    AnyCounter::$v(f)
                }
            }
        )*

        impl AnyCounter {
            fn as_dyn(&self) -> &dyn DynCounter {
                match self {
                    $(AnyCounter::$v(f) => f,)*
                }
            }

            fn as_dyn_mut(&mut self) -> &mut dyn DynCounter {
                match self {
                    $(AnyCounter::$v(f) => f,)*
                }
            }

            /// The capabilities of a counting kind, `None` for other kinds.
            pub(crate) fn kind_capabilities(kind: Kind) -> Option<Capabilities> {
                match kind.rust_type() {
                    $(Kind::$v => Some(<$ty as CounterKind>::CAPABILITIES),)*
                    _ => None,
                }
            }

            /// The structure of a validated file (see [`Holder`]).
            fn decode_any(d: &format::Decoded, src: Source<'_>) -> Result<Self> {
                let limit = crate::store::max_bytes();
                match d.header.kind.rust_type() {
                    $(Kind::$v => Ok(AnyCounter::$v(<$ty>::decode_from(d, src, limit)?)),)*
                    k => Err(FormatError::WrongKind {
                        expected: concat!("a counting-family structure (", $($name, " ",)* ")"),
                        found: k.name(),
                    }
                    .into()),
                }
            }
        }
    };
}

for_each_kind!(define_any_counter);

impl Holder for AnyCounter {
    fn decode(d: &format::Decoded, src: Source<'_>) -> Result<Self> {
        Self::decode_any(d, src)
    }
}

impl AnyCounter {
    /// True for the kinds [`AnyCounter`] holds.
    pub fn holds(kind: Kind) -> bool {
        kind.is_counter()
    }

    /// The kind.
    pub fn kind(&self) -> Kind {
        self.as_dyn().kind()
    }

    /// What this structure's kind offers.
    pub fn capabilities(&self) -> Capabilities {
        self.kind().capabilities()
    }

    /// `Ok` when this structure's kind offers `cap`, else an error naming the kinds that do.
    pub fn require(&self, cap: Capability) -> Result<()> {
        self.kind().require(cap)
    }

    holder_methods!("any counting-family kind");

    /// Add one occurrence of a pre-hashed key. Only a full d-left filter fails
    /// ([`crate::Error::Full`], nothing changed).
    pub fn insert_hashed(&mut self, h: Hashed) -> Result<()> {
        self.as_dyn_mut().insert_hashed(h)
    }

    /// Hint the CPU to fetch what an insert, count or remove of the key will read, for
    /// streaming callers that hash a key a few keys before they use it (the counting,
    /// blocked counting, d-left and spectral filters and the count-min sketch; nothing for the
    /// iterative filter, whose later probes depend on what it reads, and the space-code
    /// filter, whose insert draws its group at random).
    #[inline]
    pub fn prefetch_hashed(&self, h: Hashed) {
        self.as_dyn().prefetch_hashed(h)
    }

    /// Estimated count of a pre-hashed key.
    pub fn count_hashed(&self, h: Hashed) -> u64 {
        self.as_dyn().count_hashed(h)
    }

    /// Present (possibly a false positive) when the estimated count is above 0.
    pub fn contains_hashed(&self, h: Hashed) -> bool {
        self.as_dyn().contains_hashed(h)
    }

    /// The plain Bloom filter that answers membership exactly as this structure does, for
    /// broadcasting (the summary-cache protocol, Broder & Mitzenmacher §4: each proxy keeps a
    /// counting filter to follow insertions and deletions and sends its peers the bit array):
    /// a classic filter of the same m, k and hasher, bit i set where counter i is non-zero
    /// ([`CountingBloomFilter::to_bloom_filter`]). Only the classic-layout counting filter has
    /// such a counterpart ([`Capability::Flatten`]); the other kinds are refused with the
    /// reason.
    pub fn to_plain_filter(&self) -> Result<crate::any::filter::AnyFilter> {
        if self.kind() == Kind::BlockedCounting {
            return Err(invalid(
                "kind",
                "a blocked counting filter has no plain counterpart (its lines of counters \
                 are not a blocked filter's bit blocks); use the classic-layout counting filter \
                 (--kind counting) for a structure to broadcast",
            ));
        }
        self.require(Capability::Flatten)?;
        Ok(crate::any::filter::AnyFilter::Classic(
            self.as_dyn().to_plain_filter()?,
        ))
    }

    /// Why this structure cannot delete, or `None` when it can.
    pub fn remove_unsupported(&self) -> Option<RemoveError> {
        self.as_dyn().remove_unsupported()
    }

    /// Remove one occurrence of a pre-hashed key: [`RemoveError::Unsupported`] for the kinds
    /// without deletion, [`RemoveError::NotPresent`] (nothing changed) for an absent key.
    pub fn remove_hashed(&mut self, h: Hashed) -> std::result::Result<(), RemoveError> {
        if let Some(e) = self.remove_unsupported() {
            return Err(e);
        }
        self.as_dyn_mut().remove_hashed(h)
    }

    /// Inserts so far (minus removals where deletion exists; all inserts for cms, ibf, scbf).
    pub fn len(&self) -> u64 {
        self.as_dyn().len()
    }

    /// True when nothing was inserted.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The capacity it was sized for (0: none), the membership rate asked for at capacity
    /// and the rate of its contents now (`None` where they do not apply: cms, an explicit
    /// shape's target), without the rest of [`info`](Self::info) (which serialises the
    /// structure to measure it).
    pub fn rates(&self) -> (u64, Option<f64>, Option<f64>) {
        self.as_dyn().rates()
    }

    /// Kind-specific state.
    pub fn info(&self) -> CounterInfo {
        let items = self.len();
        let bytes = self.as_dyn().encoded_len();
        let mut i = CounterInfo {
            kind: self.kind().name(),
            items,
            bytes,
            bits_per_item: if items > 0 {
                bytes as f64 * 8.0 / items as f64
            } else {
                0.0
            },
            removable: self.remove_unsupported().is_none(),
            ..CounterInfo::default()
        };
        self.as_dyn().describe(&mut i);
        i
    }
}

impl Encode for AnyCounter {
    fn encode_parts(&self) -> (format::Header, format::Payload<'_>) {
        self.as_dyn().encode_parts()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::any::spec::{KindOptions, Spec};
    use crate::filter::Sizing;
    use crate::multisets::spectral::SpectralMethod;

    /// The plain counterpart answers like the counting filter, keys and absent keys alike;
    /// kinds without one are refused.
    #[test]
    fn plain_filter_answers_like_the_counting_filter() {
        let mut c = AnyCounter::try_from_spec(&spec(Kind::Counting, opts())).unwrap();
        for i in 0..800u32 {
            c.insert_hashed(c.hasher().hash(&i)).unwrap();
        }
        for i in 0..100u32 {
            c.remove_hashed(c.hasher().hash(&i)).unwrap();
        }
        let plain = c.to_plain_filter().unwrap();
        assert_eq!(plain.kind(), Kind::Classic);
        for i in 0..20_000u32 {
            let h = c.hasher().hash(&i);
            assert_eq!(
                plain.try_contains_hashed(h).unwrap(),
                c.count_hashed(h) > 0,
                "{i}"
            );
        }
        for kind in [Kind::BlockedCounting, Kind::Iterative] {
            let e = AnyCounter::try_from_spec(&spec(kind, opts()))
                .unwrap()
                .to_plain_filter();
            assert!(
                e.unwrap_err().to_string().contains("counterpart"),
                "{kind:?}"
            );
        }
    }

    /// `kind` for 1000 keys at 1 %, with `options`.
    fn spec(kind: Kind, options: KindOptions) -> Spec {
        Spec::new(kind)
            .sizing(Sizing::default().capacity(1000).fpr(0.01))
            .options(options)
    }

    fn opts() -> KindOptions {
        KindOptions::default()
    }

    fn all() -> Vec<AnyCounter> {
        let mut v: Vec<AnyCounter> = [
            Kind::Counting,
            Kind::BlockedCounting,
            Kind::DLeftCounting,
            Kind::Spectral,
            Kind::Iterative,
            Kind::SpaceCode,
        ]
        .iter()
        .map(|&k| AnyCounter::try_from_spec(&spec(k, opts())).unwrap())
        .collect();
        let cms = KindOptions {
            width: Some(500),
            depth: Some(4),
            ..opts()
        };
        v.push(AnyCounter::try_from_spec(&Spec::new(Kind::CountMin).options(cms)).unwrap());
        v
    }

    #[test]
    fn insert_count_round_trip_for_every_kind() {
        for mut f in all() {
            let h = *f.hasher();
            for i in 0..50u32 {
                for _ in 0..=(i % 3) {
                    f.insert_hashed(h.hash(&i.to_le_bytes()[..])).unwrap();
                }
            }
            let back = AnyCounter::from_bytes(&f.to_bytes()).unwrap();
            assert_eq!(back.kind(), f.kind());
            for i in 0..50u32 {
                let k = h.hash(&i.to_le_bytes()[..]);
                assert!(back.count_hashed(k) > 0, "{:?}", f.kind());
                assert_eq!(back.count_hashed(k), f.count_hashed(k));
            }
            assert_eq!(back.info(), f.info());
        }
    }

    #[test]
    fn removal_is_typed() {
        for mut f in all() {
            let h = f.hasher().hash("a");
            f.insert_hashed(h).unwrap();
            let can = matches!(
                f.kind(),
                Kind::Counting | Kind::BlockedCounting | Kind::DLeftCounting | Kind::Spectral
            );
            assert_eq!(f.info().removable, can);
            match f.remove_hashed(h) {
                Ok(()) => assert!(can),
                Err(RemoveError::Unsupported(_)) => assert!(!can),
                Err(e) => panic!("{e}"),
            }
            if can {
                assert_eq!(f.count_hashed(h), 0);
                assert_eq!(f.remove_hashed(h), Err(RemoveError::NotPresent));
            }
        }
        let mi = KindOptions {
            method: Some(SpectralMethod::MinimalIncrease),
            ..opts()
        };
        let mut f = AnyCounter::try_from_spec(&spec(Kind::Spectral, mi)).unwrap();
        let h = f.hasher().hash("a");
        f.insert_hashed(h).unwrap();
        assert!(matches!(
            f.remove_hashed(h),
            Err(RemoveError::Unsupported(_))
        ));
    }

    #[test]
    fn options_of_other_kinds_and_bad_values_are_refused() {
        let bad = [
            spec(
                Kind::Counting,
                KindOptions {
                    width: Some(10),
                    ..opts()
                },
            ),
            spec(
                Kind::Counting,
                KindOptions {
                    counter_bits: Some(33),
                    ..opts()
                },
            ),
            Spec::new(Kind::CountMin).options(KindOptions {
                width: Some(0),
                depth: Some(3),
                ..opts()
            }),
            spec(Kind::CountMin, opts()),
            spec(Kind::Blocked, opts()),
        ];
        for s in bad {
            assert!(AnyCounter::try_from_spec(&s).is_err(), "{s:?}");
        }
        let set = crate::sets::blocked::BlockedBloomFilter::try_new(10, 0.1).unwrap();
        assert!(AnyCounter::from_bytes(&set.to_bytes()).is_err());
    }
}
