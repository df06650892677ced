//! `BLOOMERY.DUMP key`: any value's bytes in the library's file format, whatever its type (so
//! `bloomery info` can read what the server built). The chunked form is in [`crate::dump`].

use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

use crate::types::{Slot, Structure};

/// `BLOOMERY.DUMP key`: the structure's bytes in the library's file format, whatever its type
/// (so `bloomery info` can read what the server built).
pub fn bloomery_dump(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 2 {
        return Err(RedisError::WrongArity);
    }
    let k = ctx.open_key(&args[1]);
    if let Ok(Some(s)) = k.get_value::<Slot<bloomery::ScalableBloomFilter>>(&crate::types::BF_TYPE)
    {
        return ready_bytes(s);
    }
    if let Ok(Some(s)) = k.get_value::<Slot<bloomery::CuckooFilter>>(&crate::types::CF_TYPE) {
        return ready_bytes(s);
    }
    if let Ok(Some(s)) = k.get_value::<Slot<bloomery::CountMinSketch32>>(&crate::types::CMS_TYPE) {
        return ready_bytes(s);
    }
    if let Ok(Some(s)) = k.get_value::<Slot<bloomery::CountingBloomFilter>>(&crate::types::CBF_TYPE)
    {
        return ready_bytes(s);
    }
    if let Ok(Some(s)) =
        k.get_value::<Slot<bloomery::BlockedCountingBloomFilter>>(&crate::types::BCBF_TYPE)
    {
        return ready_bytes(s);
    }
    if let Ok(Some(s)) =
        k.get_value::<Slot<bloomery::IterativeBloomFilter>>(&crate::types::IBF_TYPE)
    {
        return ready_bytes(s);
    }
    if let Ok(Some(s)) = k.get_value::<Slot<bloomery::TopK>>(&crate::types::TOPK_TYPE) {
        return ready_bytes(s);
    }
    if let Ok(Some(s)) =
        k.get_value::<Slot<bloomery::MultiLayerBloomFilter>>(&crate::types::MLBF_TYPE)
    {
        return ready_bytes(s);
    }
    if let Ok(Some(s)) = k.get_value::<Slot<bloomery::TDigest>>(&crate::types::TDIGEST_TYPE) {
        return ready_bytes(s);
    }
    if let Some(r) = crate::moved::bloomery_dump(&k) {
        return r;
    }
    if let Some(r) = crate::wbf::bloomery_dump(&k) {
        return r;
    }
    if k.is_null() {
        return Err(RedisError::Str("ERR not found"));
    }
    Err(RedisError::WrongType)
}

fn ready_bytes<T: Structure>(s: &Slot<T>) -> RedisResult {
    match s {
        Slot::Ready(f) => Ok(RedisValue::StringBuffer(f.to_bytes())),
        Slot::Loading(_) => Err(RedisError::Str(
            "ERR filter is being loaded (LOADCHUNK in progress)",
        )),
    }
}
