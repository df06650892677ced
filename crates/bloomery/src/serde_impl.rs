//! serde support: every structure serialises as its file-format bytes (a byte string), so an
//! embedded filter gets the same versioning, checksum and validation as a saved one.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::io::format::Persist;

fn ser<T: Persist, S: Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_bytes(&v.to_bytes())
}

fn de<'de, T: Persist, D: Deserializer<'de>>(d: D) -> Result<T, D::Error> {
    let bytes: serde_bytes_compat::ByteBuf = Deserialize::deserialize(d)?;
    T::from_bytes(&bytes.0).map_err(D::Error::custom)
}

mod serde_bytes_compat {
    //! A byte buffer that deserialises from either a byte string or a sequence of u8 (JSON).
    use serde::de::{SeqAccess, Visitor};
    use serde::{Deserialize, Deserializer};
    use std::fmt;

    pub struct ByteBuf(pub Vec<u8>);

    impl<'de> Deserialize<'de> for ByteBuf {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = ByteBuf;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("bloomery filter bytes")
                }
                fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<ByteBuf, E> {
                    Ok(ByteBuf(v.to_vec()))
                }
                fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<ByteBuf, E> {
                    Ok(ByteBuf(v))
                }
                fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ByteBuf, A::Error> {
                    let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 20));
                    while let Some(b) = seq.next_element::<u8>()? {
                        out.push(b);
                    }
                    Ok(ByteBuf(out))
                }
            }
            d.deserialize_byte_buf(V)
        }
    }
}

macro_rules! serde_via_format {
    ($($t:ty),*) => {$(
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                ser(self, s)
            }
        }
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                de(d)
            }
        }
    )*};
}

serde_via_format!(
    crate::sets::classic::BloomFilter,
    crate::sets::partitioned::PartitionedBloomFilter,
    crate::sets::blocked::BlockedBloomFilter,
    crate::sets::split_block::SplitBlockBloomFilter,
    crate::sets::scalable::ScalableBloomFilter,
    crate::multisets::counting::CountingBloomFilter,
    crate::multisets::blocked_counting::BlockedCountingBloomFilter,
    crate::multisets::dleft::DLeftCountingBloomFilter,
    crate::multisets::spectral::SpectralBloomFilter,
    crate::multisets::count_min::CountMinSketch,
    crate::multisets::iterative::IterativeBloomFilter,
    crate::multisets::space_code::SpaceCodeBloomFilter,
    crate::sets::cuckoo::CuckooFilter,
    crate::structured::mlbf::MultiLayerBloomFilter,
    crate::structured::breadth::BreadthBloomFilter,
    crate::structured::depth::DepthBloomFilter,
    crate::structured::attenuated::AttenuatedBloomFilter,
    crate::structured::bloomier::BloomierFilter,
    crate::sets::xor::XorFilter,
    crate::multisets::topk::TopK,
    crate::multisets::tdigest::TDigest,
    crate::redisbloom::RedisBloomFilter,
    crate::redisbloom::RedisBloomCuckooFilter
);

impl Serialize for crate::any::filter::AnyFilter {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.to_bytes())
    }
}

impl<'de> Deserialize<'de> for crate::any::filter::AnyFilter {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let bytes: serde_bytes_compat::ByteBuf = Deserialize::deserialize(d)?;
        crate::any::filter::AnyFilter::from_bytes(&bytes.0).map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use crate::multisets::count_min::CountMinSketch;
    use crate::multisets::counting::CountingBloomFilter;
    use crate::prelude::*;
    use crate::sets::cuckoo::CuckooFilter;
    use crate::structured::mlbf::MultiLayerBloomFilter;

    fn roundtrip<
        T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
    >(
        v: &T,
    ) {
        let json = serde_json::to_string(v).unwrap();
        let back: T = serde_json::from_str(&json).unwrap();
        assert_eq!(&back, v);
    }

    #[test]
    fn newer_kinds_roundtrip_through_serde() {
        let mut c = CountingBloomFilter::try_new(100, 0.01).unwrap();
        c.insert(&7u32);
        roundtrip(&c);
        let mut cf = CuckooFilter::try_new(100).unwrap();
        cf.insert(&7u32).unwrap();
        roundtrip(&cf);
        let mut cms = CountMinSketch::try_with_shape(64, 4).unwrap();
        cms.insert_many(&7u32, 3);
        roundtrip(&cms);
        let mut m = MultiLayerBloomFilter::try_new(3, 100, 0.01).unwrap();
        m.insert("example.org/a/b").unwrap();
        roundtrip(&m);
    }
}
