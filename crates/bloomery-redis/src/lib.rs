//! # bloomery-redis — bloomery as a Redis module
//!
//! Load `libbloomery_redis.so` into `redis-server` and existing RedisBloom clients work
//! unchanged: `BF.*` runs on bloomery's [`ScalableBloomFilter`](bloomery::ScalableBloomFilter),
//! `CF.*` on its [`CuckooFilter`](bloomery::CuckooFilter), `CMS.*` on its
//! [`CountMinSketch`](bloomery::CountMinSketch); bloomery's own `CBF.*`, `BCBF.*` and `IBF.*`
//! serve its [`CountingBloomFilter`](bloomery::CountingBloomFilter), its
//! [`BlockedCountingBloomFilter`](bloomery::BlockedCountingBloomFilter) and its
//! [`IterativeBloomFilter`](bloomery::IterativeBloomFilter); `TOPK.*` runs on its HeavyKeeper
//! [`TopK`](bloomery::TopK) and `MLBF.*` on its
//! [`MultiLayerBloomFilter`](bloomery::MultiLayerBloomFilter). Keys are the raw argument bytes hashed
//! by the library's one hash path, so `BLOOMERY.DUMP key` returns bytes that the `bloomery` CLI
//! loads and answers identically. See `README.md` for loading, configuration and clusters.
//!
//! This file only wires commands to their handlers: [`bf`], [`cf`], [`cms`], [`topk`], [`cbf`],
//! [`bcbf`], [`ibf`], [`mlbf`] (the last four share helpers in [`own`]) and [`dump`]; `BF.*`
//! and `CF.*` go through [`migrate`], which serves values moved from RedisBloom; arguments
//! are parsed in [`args`], data types and persistence live in [`types`], module arguments in
//! [`config`]. Every command names its one key at position 1 (first = last = 1, step 1), so a
//! cluster routes it and answers MOVED/CROSSSLOT as for built-in commands; `CMS.MERGE`, whose
//! keys depend on `numKeys`, is registered with `getkeys-api` and reports the destination and
//! every source when Redis asks (cluster routing, CROSSSLOT, `COMMAND GETKEYS`, ACL key checks).

pub mod args;
pub mod bcbf;
pub mod bf;
pub mod cbf;
pub mod cf;
pub mod cms;
pub mod config;
pub mod dump;
pub mod ibf;
pub mod migrate;
pub mod mlbf;
pub mod own;
pub mod topk;
pub mod types;

#[cfg(not(test))]
mod module {
    use redis_module::{redis_module, Context, RedisString, Status};

    use crate::migrate::{RB_BF_TYPE, RB_CF_TYPE};
    use crate::types::{
        BCBF_TYPE, BF_TYPE, CBF_TYPE, CF_TYPE, CMS_TYPE, IBF_TYPE, MLBF_TYPE, TOPK_TYPE,
    };
    use crate::{bcbf, bf, cbf, cf, cms, config, dump, ibf, migrate, mlbf, topk};

    fn init(ctx: &Context, args: &[RedisString]) -> Status {
        // We check every RDB read ourselves (raw::load_* report IO errors), so a truncated or
        // corrupt RESTORE payload fails the load instead of Redis panicking on a short read.
        // SAFETY: reading a function pointer Redis filled in at module load; `ctx.ctx` is the
        // live context of RedisModule_OnLoad.
        if let Some(set_options) = unsafe { redis_module::raw::RedisModule_SetModuleOptions } {
            // SAFETY: as above; the flag is a documented module option.
            unsafe {
                set_options(
                    ctx.ctx,
                    redis_module::raw::REDISMODULE_OPTIONS_HANDLE_IO_ERRORS as i32,
                )
            };
        }
        let raw: Vec<Vec<u8>> = args.iter().map(|a| a.as_slice().to_vec()).collect();
        match config::apply(&raw) {
            Ok(()) => Status::Ok,
            Err(e) => {
                ctx.log_warning(&format!("bloomery: {e}"));
                Status::Err
            }
        }
    }

    redis_module! {
        name: "bloomery",
        version: 1,
        allocator: (redis_module::alloc::RedisAlloc, redis_module::alloc::RedisAlloc),
        data_types: [
            BF_TYPE, CF_TYPE, CMS_TYPE, CBF_TYPE, BCBF_TYPE, IBF_TYPE, TOPK_TYPE, MLBF_TYPE,
            RB_BF_TYPE, RB_CF_TYPE
        ],
        init: init,
        commands: [
            // Bloom filters (RedisBloom-compatible). Routed through `migrate`, which answers
            // for values moved from RedisBloom and hands every other key to `bf`.
            ["BF.RESERVE", bf::reserve, "write deny-oom", 1, 1, 1, ""],
            ["BF.ADD", migrate::bf_add, "write deny-oom", 1, 1, 1, ""],
            ["BF.MADD", migrate::bf_madd, "write deny-oom", 1, 1, 1, ""],
            ["BF.INSERT", migrate::bf_insert, "write deny-oom", 1, 1, 1, ""],
            ["BF.EXISTS", migrate::bf_exists, "readonly fast", 1, 1, 1, ""],
            ["BF.MEXISTS", migrate::bf_mexists, "readonly fast", 1, 1, 1, ""],
            ["BF.INFO", migrate::bf_info, "readonly fast", 1, 1, 1, ""],
            ["BF.CARD", migrate::bf_card, "readonly fast", 1, 1, 1, ""],
            ["BF.SCANDUMP", migrate::bf_scandump, "readonly", 1, 1, 1, ""],
            ["BF.LOADCHUNK", migrate::bf_loadchunk, "write deny-oom", 1, 1, 1, ""],
            // Cuckoo filters (RedisBloom-compatible), routed like BF.
            ["CF.RESERVE", cf::reserve, "write deny-oom", 1, 1, 1, ""],
            ["CF.ADD", migrate::cf_add, "write deny-oom", 1, 1, 1, ""],
            ["CF.ADDNX", migrate::cf_addnx, "write deny-oom", 1, 1, 1, ""],
            ["CF.INSERT", migrate::cf_insert, "write deny-oom", 1, 1, 1, ""],
            ["CF.INSERTNX", migrate::cf_insertnx, "write deny-oom", 1, 1, 1, ""],
            ["CF.EXISTS", migrate::cf_exists, "readonly fast", 1, 1, 1, ""],
            ["CF.MEXISTS", migrate::cf_mexists, "readonly fast", 1, 1, 1, ""],
            ["CF.DEL", migrate::cf_del, "write", 1, 1, 1, ""],
            ["CF.COUNT", migrate::cf_count, "readonly fast", 1, 1, 1, ""],
            ["CF.INFO", migrate::cf_info, "readonly fast", 1, 1, 1, ""],
            ["CF.SCANDUMP", migrate::cf_scandump, "readonly", 1, 1, 1, ""],
            ["CF.LOADCHUNK", migrate::cf_loadchunk, "write deny-oom", 1, 1, 1, ""],
            // Count-min sketches (RedisBloom-compatible; SCANDUMP/LOADCHUNK are extensions).
            ["CMS.INITBYDIM", cms::initbydim, "write deny-oom", 1, 1, 1, ""],
            ["CMS.INITBYPROB", cms::initbyprob, "write deny-oom", 1, 1, 1, ""],
            ["CMS.INCRBY", cms::incrby, "write deny-oom", 1, 1, 1, ""],
            ["CMS.QUERY", cms::query, "readonly fast", 1, 1, 1, ""],
            // Keys: destination and numKeys sources, reported by the getkeys callback.
            ["CMS.MERGE", cms::merge, "write deny-oom getkeys-api", 1, 1, 1, ""],
            ["CMS.INFO", cms::info, "readonly fast", 1, 1, 1, ""],
            ["CMS.SCANDUMP", cms::scandump, "readonly", 1, 1, 1, ""],
            ["CMS.LOADCHUNK", cms::loadchunk, "write deny-oom", 1, 1, 1, ""],
            // Top-k (RedisBloom-compatible; SCANDUMP/LOADCHUNK are extensions).
            ["TOPK.RESERVE", topk::reserve, "write deny-oom", 1, 1, 1, ""],
            ["TOPK.ADD", topk::add, "write deny-oom", 1, 1, 1, ""],
            ["TOPK.INCRBY", topk::incrby, "write deny-oom", 1, 1, 1, ""],
            ["TOPK.QUERY", topk::query, "readonly", 1, 1, 1, ""],
            ["TOPK.COUNT", topk::count_cmd, "readonly", 1, 1, 1, ""],
            ["TOPK.LIST", topk::list, "readonly", 1, 1, 1, ""],
            ["TOPK.INFO", topk::info, "readonly fast", 1, 1, 1, ""],
            ["TOPK.SCANDUMP", topk::scandump, "readonly", 1, 1, 1, ""],
            ["TOPK.LOADCHUNK", topk::loadchunk, "write deny-oom", 1, 1, 1, ""],
            // bloomery's own: multi-layer Bloom filter for URLs.
            ["MLBF.RESERVE", mlbf::reserve, "write deny-oom", 1, 1, 1, ""],
            ["MLBF.ADD", mlbf::add, "write deny-oom", 1, 1, 1, ""],
            ["MLBF.EXISTS", mlbf::exists, "readonly fast", 1, 1, 1, ""],
            ["MLBF.INFO", mlbf::info, "readonly fast", 1, 1, 1, ""],
            ["MLBF.SCANDUMP", mlbf::scandump, "readonly", 1, 1, 1, ""],
            ["MLBF.LOADCHUNK", mlbf::loadchunk, "write deny-oom", 1, 1, 1, ""],
            // bloomery's own: counting Bloom filter.
            ["CBF.RESERVE", cbf::reserve, "write deny-oom", 1, 1, 1, ""],
            ["CBF.ADD", cbf::add, "write deny-oom", 1, 1, 1, ""],
            ["CBF.DEL", cbf::del, "write", 1, 1, 1, ""],
            ["CBF.EXISTS", cbf::exists, "readonly fast", 1, 1, 1, ""],
            ["CBF.COUNT", cbf::count, "readonly fast", 1, 1, 1, ""],
            ["CBF.INFO", cbf::info, "readonly fast", 1, 1, 1, ""],
            ["CBF.SCANDUMP", cbf::scandump, "readonly", 1, 1, 1, ""],
            ["CBF.LOADCHUNK", cbf::loadchunk, "write deny-oom", 1, 1, 1, ""],
            // bloomery's own: blocked counting Bloom filter (a key's counters in one line).
            ["BCBF.RESERVE", bcbf::reserve, "write deny-oom", 1, 1, 1, ""],
            ["BCBF.ADD", bcbf::add, "write deny-oom", 1, 1, 1, ""],
            ["BCBF.DEL", bcbf::del, "write", 1, 1, 1, ""],
            ["BCBF.EXISTS", bcbf::exists, "readonly fast", 1, 1, 1, ""],
            ["BCBF.COUNT", bcbf::count, "readonly fast", 1, 1, 1, ""],
            ["BCBF.INFO", bcbf::info, "readonly fast", 1, 1, 1, ""],
            ["BCBF.SCANDUMP", bcbf::scandump, "readonly", 1, 1, 1, ""],
            ["BCBF.LOADCHUNK", bcbf::loadchunk, "write deny-oom", 1, 1, 1, ""],
            // bloomery's own: Iterative Bloom Filter.
            ["IBF.RESERVE", ibf::reserve, "write deny-oom", 1, 1, 1, ""],
            ["IBF.ADD", ibf::add, "write deny-oom", 1, 1, 1, ""],
            ["IBF.EXISTS", ibf::exists, "readonly fast", 1, 1, 1, ""],
            ["IBF.COUNT", ibf::count, "readonly fast", 1, 1, 1, ""],
            ["IBF.INFO", ibf::info, "readonly fast", 1, 1, 1, ""],
            ["IBF.SCANDUMP", ibf::scandump, "readonly", 1, 1, 1, ""],
            ["IBF.LOADCHUNK", ibf::loadchunk, "write deny-oom", 1, 1, 1, ""],
            // bloomery's own.
            ["BLOOMERY.DUMP", dump::bloomery_dump, "readonly", 1, 1, 1, ""],
        ],
    }
}
