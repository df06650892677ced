//! Run-time kinds: [`AnyFilter`](filter::AnyFilter) holds any set structure and
//! [`AnyCounter`](counter::AnyCounter) any counting structure, for callers (the CLI, the Redis
//! module, Python) that load files whose kind they learn from the header. Both are generated
//! from the kinds table ([`for_each_kind!`]) and dispatch to each structure's
//! [`SetKind`](crate::dispatch::SetKind) or [`CounterKind`](crate::multisets::counter_kind::CounterKind).
//! [`open`] holds either behind one type ([`Structure`](open::Structure)) and the policy that
//! updates a file of any kind from one map ([`Update`](open::Update)).

pub(crate) mod arrow;
pub(crate) mod batch;
pub(crate) mod counter;
pub(crate) mod filter;
pub(crate) mod open;
pub(crate) mod spec;
pub(crate) mod stream;

use std::path::Path;

use crate::dispatch::OtherKind;
use crate::error::{at_path, Result};
use crate::io::format::{self, Decoded, Source, Verify};
use crate::io::mapped::{FileUpdate, MappedFile};
use crate::kind::{for_each_kind, Capabilities, Kind};
use crate::multisets::count_min32::CountMinSketch32;
use crate::multisets::tdigest::TDigest;
use crate::multisets::topk::TopK;
#[cfg(feature = "parquet")]
use crate::parquet::ParquetSidecar;
use crate::sets::cuckoo::CuckooFilter;
use crate::sets::window::time::TimeWindowFilter;
use crate::sets::xor::XorFilter;
use crate::structured::attenuated::AttenuatedBloomFilter;
use crate::structured::bloomier::BloomierFilter;
use crate::structured::breadth::BreadthBloomFilter;
use crate::structured::depth::DepthBloomFilter;

/// Generates [`Kind::capabilities`] for the kinds outside [`AnyFilter`](filter::AnyFilter)
/// and [`AnyCounter`](counter::AnyCounter) from the table's `others` group.
macro_rules! define_other_capabilities {
    (
        sets { $($sets:tt)* }
        counters { $($counters:tt)* }
        others { $($(#[$m:meta])* $v:ident = $id:literal, $name:literal, $ty:ident, $doc:literal;)* }
        layouts { $($layouts:tt)* }
    ) => {
        fn other_capabilities(kind: Kind) -> Capabilities {
            match kind.rust_type() {
                $($(#[$m])* Kind::$v => <$ty as OtherKind>::CAPABILITIES,)*
                _ => Capabilities::NONE,
            }
        }
    };
}

for_each_kind!(define_other_capabilities);

/// Seals [`Persist`](crate::Persist) for every type of the table's `sets`, `counters` and
/// `others` groups.
macro_rules! seal_persist {
    (
        sets { $($(#[$sm:meta])* $sv:ident = $sid:literal, $sname:literal, $sty:ident, $sdoc:literal;)* }
        counters { $($(#[$cm:meta])* $cv:ident = $cid:literal, $cname:literal, $cty:ident, $cdoc:literal;)* }
        others { $($(#[$om:meta])* $ov:ident = $oid:literal, $oname:literal, $oty:ident, $odoc:literal;)* }
        layouts { $($layouts:tt)* }
    ) => {
        mod seal {
            #[cfg(feature = "parquet")]
            use crate::parquet::ParquetSidecar;
            use crate::redisbloom::{RedisBloomCuckooFilter, RedisBloomFilter};
            #[allow(unused_imports)]
            use crate::*;
            use crate::io::format::sealed::Sealed;
            $($(#[$sm])* impl Sealed for $sty {})*
            $($(#[$cm])* impl Sealed for $cty {})*
            $($(#[$om])* impl Sealed for $oty {})*
        }
    };
}
for_each_kind!(seal_persist);

/// The ways in from bytes and files that [`AnyFilter`](filter::AnyFilter) and
/// [`AnyCounter`](counter::AnyCounter) share; each holder says only how it decodes a
/// validated file.
pub(crate) trait Holder: Sized {
    /// The structure of a validated file, its words taken from `src`.
    fn decode(d: &Decoded, src: Source<'_>) -> Result<Self>;

    /// From bytes, verifying the checksum; a compressed file is decompressed first.
    fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let plain = crate::io::compress::plain_bytes(bytes)?;
        let d = format::decode(plain.bytes(), Verify::Checksum)?;
        Self::decode(&d, crate::io::format::Source::from(&plain))
    }

    /// From a reader, front to back, verifying the checksum ([`Persist::read_from`]).
    ///
    /// [`Persist::read_from`]: crate::io::format::Persist::read_from
    fn read_from(r: impl std::io::Read) -> Result<Self> {
        crate::io::source::read_stream(r, |d, src| Self::decode(d, src), Self::from_bytes)
    }

    /// From a file read into memory front to back ([`Holder::read_from`]), verifying the
    /// checksum; errors name the file.
    fn load(path: &Path) -> Result<Self> {
        format::read_path(path, |d, src| Self::decode(d, src), Self::from_bytes)
    }

    /// From a read-only map of the file, the checksum verified if `verify` says so.
    fn open_mmap(path: &Path, verify: Verify) -> Result<Self> {
        let file = MappedFile::open(path)?;
        if verify == Verify::Checksum {
            file.verify(&mut |_| {})?;
        }
        Self::from_mapped(&file).map_err(|e| at_path(path, e))
    }

    /// From a mapped file, its words used in place (a compressed file is decompressed).
    fn from_mapped(file: &MappedFile) -> Result<Self> {
        if !file.is_plain() {
            // decompressed into memory; a delta file is refused there
            return Self::from_bytes(file.bytes());
        }
        Self::decode(file.decoded(), Source::Mapped(file.map()))
    }

    /// From a file opened for an update, its words the update's copy.
    fn from_update(up: &FileUpdate) -> Result<Self> {
        Self::decode(up.decoded(), Source::Shared(up.shared_map()))
    }
}

/// The methods [`AnyFilter`](filter::AnyFilter) and [`AnyCounter`](counter::AnyCounter) share:
/// the ways in through [`Holder`], saving and the hasher, through each one's `as_dyn()`.
/// `$any` names what they decode, in the docs.
macro_rules! holder_methods {
    ($any:literal) => {
        #[doc = concat!("Decode ", $any, " from bytes, verifying the checksum. A compressed file is")]
        /// decompressed first (and the plain file's checksum verified).
        pub fn from_bytes(bytes: &[u8]) -> $crate::error::Result<Self> {
            <Self as $crate::any::Holder>::from_bytes(bytes)
        }

        #[doc = concat!("Decode ", $any, " from a reader, front to back, verifying the")]
        /// checksum: each array is read straight into its own memory, so a load needs the
        /// structure's size, not twice it (see
        /// [`Persist::read_from`](crate::io::format::Persist::read_from)).
        pub fn read_from(r: impl std::io::Read) -> $crate::error::Result<Self> {
            <Self as $crate::any::Holder>::read_from(r)
        }

        #[doc = concat!("Load ", $any, " from a file, verifying the checksum.")]
        pub fn load(path: impl AsRef<std::path::Path>) -> $crate::error::Result<Self> {
            <Self as $crate::any::Holder>::load(path.as_ref())
        }

        #[doc = concat!("Open ", $any, " through a read-only memory map (zero-copy; see")]
        /// [`Persist::open_mmap`](crate::io::format::Persist::open_mmap)). With
        /// [`Verify::Checksum`](crate::io::header::Verify::Checksum) the checksum is verified in
        /// one streaming pass that keeps the file's pages out of the process's memory
        /// ([`MappedFile::verify`](crate::io::mapped::MappedFile::verify)).
        pub fn open_mmap(
            path: impl AsRef<std::path::Path>,
            verify: $crate::io::header::Verify,
        ) -> $crate::error::Result<Self> {
            <Self as $crate::any::Holder>::open_mmap(path.as_ref(), verify)
        }

        #[doc = concat!("Decode ", $any, " from a file opened with")]
        /// [`MappedFile::open`](crate::io::mapped::MappedFile::open): the words are the file's
        /// pages, used in place (a compressed file is decompressed into memory). The checksum
        /// is not verified here: call [`MappedFile::verify`](crate::io::mapped::MappedFile::verify)
        /// first for that guarantee.
        pub fn from_mapped(file: &$crate::io::mapped::MappedFile) -> $crate::error::Result<Self> {
            <Self as $crate::any::Holder>::from_mapped(file)
        }

        #[doc = concat!("Decode ", $any, " from a file opened for an update: every change writes")]
        /// into the update's copy of the file; seal it with
        /// [`FileUpdate::commit`](crate::io::mapped::FileUpdate::commit) (see
        /// [`FileUpdate`](crate::io::mapped::FileUpdate)).
        pub fn from_update(up: &$crate::io::mapped::FileUpdate) -> $crate::error::Result<Self> {
            <Self as $crate::any::Holder>::from_update(up)
        }

        /// Save atomically with [`SaveOptions`](crate::io::format::SaveOptions) (the
        /// compressed form, a progress report).
        pub fn save_with(
            &self,
            path: impl AsRef<std::path::Path>,
            opts: $crate::io::format::SaveOptions<'_>,
        ) -> $crate::error::Result<()> {
            $crate::io::format::save_encoded(self, path.as_ref(), opts)
        }

        /// Save atomically.
        pub fn save(&self, path: impl AsRef<std::path::Path>) -> $crate::error::Result<()> {
            self.as_dyn().save(path.as_ref())
        }

        /// The file format as bytes.
        pub fn to_bytes(&self) -> Vec<u8> {
            self.as_dyn().to_bytes()
        }

        /// The hasher keys go through.
        pub fn hasher(&self) -> &$crate::hash::KeyHasher {
            self.as_dyn().hasher()
        }
    };
}
pub(crate) use holder_methods;

impl Kind {
    /// What structures of this kind offer (the capabilities of its Rust type).
    pub fn capabilities(self) -> Capabilities {
        filter::AnyFilter::kind_capabilities(self)
            .or_else(|| counter::AnyCounter::kind_capabilities(self))
            .unwrap_or_else(|| other_capabilities(self))
    }
}

#[cfg(test)]
mod tests {
    use super::counter::AnyCounter;
    use super::filter::AnyFilter;
    use crate::any::spec::KindOptions;
    use crate::any::spec::Spec;
    use crate::filter::KeySet;
    use crate::filter::Sizing;
    use crate::kind::{Capability, Kind};

    /// The table: ids and names are unique, names and ids round-trip, every layout names a
    /// type listed above it, and the groups partition the kinds.
    #[test]
    fn the_kinds_table_is_consistent() {
        let mut ids = std::collections::BTreeSet::new();
        let mut names = std::collections::BTreeSet::new();
        for &k in Kind::ALL {
            assert!(ids.insert(k.id()), "id {} twice", k.id());
            assert!(names.insert(k.name()), "name {} twice", k.name());
            assert_eq!(Kind::from_id(k.id()), Some(k));
            assert_eq!(Kind::from_name(k.name()), Some(k));
            assert!(!k.summary().is_empty());
            assert_eq!(k.rust_type().rust_type(), k.rust_type());
            assert!(
                !(k.is_set() && k.is_counter()),
                "{k} is in two run-time groups"
            );
        }
        assert_eq!(Kind::from_id(0), None);
        assert_eq!(Kind::from_name("no-such-kind"), None);
        assert!(Kind::BlockedSectors.is_set() && Kind::BlockedSectors.rust_type() == Kind::Blocked);
        assert!(Kind::BlockedSalted.is_set() && Kind::BlockedSalted.rust_type() == Kind::Blocked);
        assert!(
            Kind::BlockedSalted256.is_set() && Kind::BlockedSalted256.rust_type() == Kind::Blocked
        );
        assert!(Kind::COUNTERS.iter().all(|k| AnyCounter::holds(*k)));
    }

    /// Every set kind does exactly what its capabilities say: the operations it lacks are
    /// refused with an error naming the kinds that offer them, the others succeed.
    #[test]
    fn set_capabilities_match_behaviour() {
        for &kind in Kind::SETS.iter().chain([
            &Kind::BlockedSectors,
            &Kind::BlockedSalted,
            &Kind::BlockedSalted256,
        ]) {
            let mut f = AnyFilter::builder(kind)
                .capacity(1000)
                .fpr(0.01)
                .try_build()
                .unwrap();
            assert_eq!(f.kind().rust_type(), kind.rust_type());
            let c = f.capabilities();
            assert!(c.insert && !c.count && !c.remove && !c.flatten, "{kind}");
            assert!(f.try_insert_key(b"https://example.org/a/b").unwrap());
            let h = f.hasher().hash_bytes(b"x");
            assert_eq!(f.clone().try_insert_hashed(h).is_ok(), c.hashed, "{kind}");
            assert_eq!(f.try_contains_hashed(h).is_ok(), c.hashed, "{kind}");
            assert_eq!(f.is_structured(), !c.hashed);
            let g = f.clone();
            assert_eq!(f.clone().union_with(&g).is_ok(), c.merge, "{kind}");
            assert_eq!(f.clone().intersect_with(&g).is_ok(), c.merge, "{kind}");
            assert_eq!(f.estimate_overlap(&g).is_ok(), c.estimate, "{kind}");
            assert_eq!(
                f.clone().mark_damaged(0..1).is_ok(),
                c.mark_damaged,
                "{kind}"
            );
            assert_eq!(f.clone().clear().is_ok(), c.mark_damaged, "{kind}");
            if c.fold {
                let hashes = if kind.rust_type() == Kind::Blocked && kind != Kind::Blocked {
                    8
                } else {
                    4
                };
                let pow2 = AnyFilter::builder(kind)
                    .bits(1 << 14)
                    .hashes(hashes)
                    .try_build()
                    .unwrap();
                assert!(pow2.fold().is_ok(), "{kind}");
            } else {
                assert!(f.fold().is_err(), "{kind}");
            }
            for cap in [Capability::Fold, Capability::Estimate, Capability::Remove] {
                if let Err(e) = f.require(cap) {
                    let msg = e.to_string();
                    assert!(
                        // a layout (the blocked filter's sectors) is named as its type
                        msg.contains(kind.rust_type().name()) && msg.contains(cap.describe()),
                        "{msg}"
                    );
                    for other in Kind::offering(cap) {
                        assert!(msg.contains(other.name()), "{msg}");
                    }
                }
            }
            assert!(f.try_insert_key(b"").is_err() || c.hashed);
        }
    }

    /// Every counting kind does exactly what its capabilities say.
    #[test]
    fn counter_capabilities_match_behaviour() {
        for &kind in Kind::COUNTERS {
            let o = if kind == Kind::CountMin {
                Spec::new(kind).options(KindOptions {
                    width: Some(500),
                    depth: Some(4),
                    ..KindOptions::default()
                })
            } else {
                Spec::new(kind).sizing(Sizing::default().capacity(1000).fpr(0.01))
            };
            let mut f = AnyCounter::try_from_spec(&o).unwrap();
            let c = f.capabilities();
            assert!(c.insert && c.count && c.hashed, "{kind}");
            let h = f.hasher().hash_bytes(b"x");
            f.insert_hashed(h).unwrap();
            assert!(f.count_hashed(h) >= 1);
            assert_eq!(f.remove_unsupported().is_none(), c.remove, "{kind}");
            assert_eq!(f.clone().remove_hashed(h).is_ok(), c.remove, "{kind}");
            assert_eq!(f.to_plain_filter().is_ok(), c.flatten, "{kind}");
            assert!(!Kind::is_set(kind) && kind.is_counter());
        }
    }
}
