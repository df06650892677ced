//! # bloomery-redis — bloomery as a Redis module
//!
//! Load `libbloomery_redis.so` into `redis-server` and existing RedisBloom clients work
//! unchanged: `BF.*` runs on bloomery's [`ScalableBloomFilter`](bloomery::ScalableBloomFilter),
//! `CF.*` on its [`CuckooFilter`](bloomery::CuckooFilter), `CMS.*` on its
//! [`CountMinSketch`](bloomery::CountMinSketch); bloomery's own `CBF.*`, `BCBF.*` and `IBF.*`
//! serve its [`CountingBloomFilter`](bloomery::CountingBloomFilter), its
//! [`BlockedCountingBloomFilter`](bloomery::BlockedCountingBloomFilter) and its
//! [`IterativeBloomFilter`](bloomery::IterativeBloomFilter); `TOPK.*` runs on its HeavyKeeper
//! [`TopK`](bloomery::TopK), `TDIGEST.*` on its merging [`TDigest`](bloomery::TDigest) and `MLBF.*` on its
//! [`MultiLayerBloomFilter`](bloomery::MultiLayerBloomFilter). Keys are the raw argument bytes hashed
//! by the library's one hash path, so `BLOOMERY.DUMP key` returns bytes that the `bloomery` CLI
//! loads and answers identically. See `README.md` for loading, configuration and clusters.
//!
//! This file only wires commands to their handlers, one documented function per command:
//! [`bf`], [`cf`], [`cms`], [`topk`], [`tdigest`], [`counting`] (`CBF.*` and `BCBF.*`, one
//! generic shell), [`ibf`], [`mlbf`] (the last three share helpers in [`own`]), [`wbf`] (the
//! windows `WBF.*` and `TWBF.*`, listed with their handlers), [`dump`] (SCANDUMP/LOADCHUNK) and
//! [`export`] (`BLOOMERY.DUMP`); `BF.ADD` and `BF.EXISTS` have entry points of their own in
//! [`hot`] (their usual case without the framework's argument copies); small empty
//! structures are copied from [`templates`]. Beneath them, with
//! no module importing one above it: [`keys`] (the value under a key), [`types`] (the data
//! types, RDB, AOF, `MEMORY USAGE`), [`chunk`] (the byte string a value travels as), and the
//! leaves [`args`], [`reply`], [`errors`], [`limits`], [`memory`] and [`config`] (module
//! arguments). `BF.*` and `CF.*` also serve values moved from RedisBloom: [`route`] hands each
//! command to [`rbbf`] / [`rbcf`] when the key holds one (their types in [`moved`]). Every
//! command names its one key at position 1 (first = last = 1, step 1), so a
//! cluster routes it and answers MOVED/CROSSSLOT as for built-in commands; `CMS.MERGE` and
//! `BF.MERGE`, whose keys depend on `numKeys`, are registered with `getkeys-api` and report the
//! destination and every source when Redis asks (cluster routing, CROSSSLOT, `COMMAND GETKEYS`, ACL key checks).

pub mod args;
pub mod bf;
pub mod cf;
pub mod chunk;
pub mod cms;
pub mod config;
pub mod counting;
#[cfg(test)]
mod defrag_tests;
pub mod dump;
pub mod errors;
pub mod export;
pub mod hot;
pub mod ibf;
pub mod keys;
pub mod limits;
#[cfg(test)]
mod loader_fuzz;
pub mod memory;
pub mod mlbf;
pub mod moved;
pub mod own;
pub mod rbbf;
pub mod rbcf;
pub mod reply;
pub mod route;
pub mod stats;
pub mod tdigest;
pub mod templates;
pub mod topk;
pub mod types;
pub mod value;
pub mod wbf;

#[cfg(not(test))]
mod module {
    use redis_module::{redis_module, AclCategory, Context, RedisResult, RedisString, Status};

    use crate::moved::{RB_BF_TYPE, RB_CF_TYPE};
    use crate::types::{
        BCBF_TYPE, BF_TYPE, CBF_TYPE, CF_TYPE, CMS_TYPE, IBF_TYPE, MLBF_TYPE, TOPK_TYPE,
    };
    use crate::wbf::{self, TWBF_TYPE, WBF_TYPE};
    use crate::{
        bf, cf, cms, config, counting, export, hot, ibf, memory, mlbf, rbbf, rbcf, reply, route,
        stats, topk,
    };
    use crate::{tdigest, types::TDIGEST_TYPE};
    use bloomery::{BlockedCountingBloomFilter, CountingBloomFilter};

    fn init(ctx: &Context, args: &[RedisString]) -> Status {
        if !reply::server_supported() {
            ctx.log_warning("bloomery: needs Redis 7.0 or later (RESP3 replies from modules)");
            return Status::Err;
        }
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
        // The module's INFO section: values and bytes per type (see `stats`). Registered
        // here, after the framework's own (empty) handler, which it replaces.
        redis_module::raw::register_info_function(ctx.ctx, Some(stats::info));
        let mut families = crate::types::families();
        families.extend(crate::moved::families());
        families.extend(crate::wbf::families());
        stats::register(families);
        // Every byte a value holds goes through Redis's allocator (see `memory`).
        bloomery::tuning::set_global_allocator_only(true);
        memory::calibrate();
        // a scalable filter's growth sizes its next sub-filter on this thread: compute the
        // sizing model once now, so growth costs microseconds, not milliseconds
        bloomery::params::warm_blocked_sizing(bloomery::BlockedBloomFilter::BLOCK_BITS);
        if !hot::register(ctx) {
            ctx.log_warning("bloomery: could not register bf.add and bf.exists");
            return Status::Err;
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

    // Bloom filters (RedisBloom-compatible; values moved from RedisBloom answer as there).
    /// `BF.RESERVE key error_rate capacity [EXPANSION expansion] [NONSCALING]`: create an empty scalable Bloom filter.
    fn bf_reserve(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        bf::reserve(ctx, args)
    }
    /// `BF.MADD key item [item ...]`: add items; per item as `BF.ADD`.
    fn bf_madd(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        route::fallback(ctx, args, bf::madd, rbbf::madd)
    }
    /// `BF.INSERT key [CAPACITY c] [ERROR e] [EXPANSION x] [NOCREATE] [NONSCALING] ITEMS item...`: add items, creating the filter with these parameters.
    fn bf_insert(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        route::fallback(ctx, args, bf::insert, rbbf::insert)
    }
    /// `BF.MEXISTS key item [item ...]`: per item as `BF.EXISTS`.
    fn bf_mexists(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        route::fallback(ctx, args, bf::mexists, rbbf::mexists)
    }
    /// `BF.INFO key [CAPACITY | SIZE | FILTERS | ITEMS | EXPANSION]`: the filter's parameters.
    fn bf_info(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        route::first(ctx, args, bf::info, rbbf::info)
    }
    /// `BF.CARD key`: items added.
    fn bf_card(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        route::first(ctx, args, bf::card, rbbf::card)
    }
    /// `BF.SCANDUMP key iterator`: the filter's bytes, chunk by chunk.
    fn bf_scandump(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        route::first(ctx, args, bf::scandump, rbbf::scandump)
    }
    /// `BF.LOADCHUNK key iterator data`: rebuild a filter from `BF.SCANDUMP`'s chunks (bloomery's, or RedisBloom's: a moved value).
    fn bf_loadchunk(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        route::first(ctx, args, bf::loadchunk, rbbf::loadchunk)
    }
    /// `BF.MERGE dest numkeys src [src ...]`: the union of filters made alike (keys reported by the getkeys callback).
    fn bf_merge(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        bf::merge(ctx, args)
    }

    // Cuckoo filters (RedisBloom-compatible; values moved from RedisBloom answer as there).
    /// `CF.RESERVE key capacity [BUCKETSIZE b] [MAXITERATIONS m] [EXPANSION e]`: create an empty cuckoo filter.
    fn cf_reserve(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        cf::reserve(ctx, args)
    }
    /// `CF.ADD key item`: add an item (creating the filter with capacity 1024).
    fn cf_add(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        route::fallback(ctx, args, cf::add, rbcf::add)
    }
    /// `CF.ADDNX key item`: add an item unless it may be present.
    fn cf_addnx(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        route::fallback(ctx, args, cf::addnx, rbcf::addnx)
    }
    /// `CF.INSERT key [CAPACITY c] [NOCREATE] ITEMS item...`: add items.
    fn cf_insert(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        route::fallback(ctx, args, cf::insert, rbcf::insert)
    }
    /// `CF.INSERTNX key [CAPACITY c] [NOCREATE] ITEMS item...`: add the items that are not (as far as the filter can tell) present.
    fn cf_insertnx(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        route::fallback(ctx, args, cf::insertnx, rbcf::insertnx)
    }
    /// `CF.EXISTS key item`: whether the item may be present.
    fn cf_exists(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        route::fallback(ctx, args, cf::exists, rbcf::exists)
    }
    /// `CF.MEXISTS key item [item ...]`: per item as `CF.EXISTS`.
    fn cf_mexists(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        route::fallback(ctx, args, cf::mexists, rbcf::mexists)
    }
    /// `CF.DEL key item`: remove one copy of the item.
    fn cf_del(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        route::first(ctx, args, cf::del, rbcf::del)
    }
    /// `CF.COUNT key item`: copies of the item's fingerprint.
    fn cf_count(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        route::fallback(ctx, args, cf::count, rbcf::count)
    }
    /// `CF.INFO key`: the filter's parameters.
    fn cf_info(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        route::first(ctx, args, cf::info, rbcf::info)
    }
    /// `CF.COMPACT key`: move items into older sub-filters and drop the emptied newest ones.
    fn cf_compact(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        route::first(ctx, args, cf::compact, rbcf::compact)
    }
    /// `CF.SCANDUMP key iterator`: the filter's bytes, chunk by chunk.
    fn cf_scandump(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        route::first(ctx, args, cf::scandump, rbcf::scandump)
    }
    /// `CF.LOADCHUNK key iterator data`: rebuild a filter from `CF.SCANDUMP`'s chunks (bloomery's, or RedisBloom's: a moved value).
    fn cf_loadchunk(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        route::first(ctx, args, cf::loadchunk, rbcf::loadchunk)
    }

    // Count-min sketches (RedisBloom-compatible; SCANDUMP/LOADCHUNK are extensions).
    /// `CMS.INITBYDIM key width depth`: create a count-min sketch of these dimensions.
    fn cms_initbydim(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        cms::initbydim(ctx, args)
    }
    /// `CMS.INITBYPROB key error probability`: create a count-min sketch sized as RedisBloom sizes it.
    fn cms_initbyprob(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        cms::initbyprob(ctx, args)
    }
    /// `CMS.INCRBY key item increment [item increment ...]`: count items.
    fn cms_incrby(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        cms::incrby(ctx, args)
    }
    /// `CMS.QUERY key item [item ...]`: the items' counts (never below the true counts).
    fn cms_query(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        cms::query(ctx, args)
    }
    /// `CMS.MERGE destination numKeys source [source ...] [WEIGHTS weight ...]`: the destination becomes the weighted sum of the sources (keys reported by the getkeys callback).
    fn cms_merge(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        cms::merge(ctx, args)
    }
    /// `CMS.INFO key`: width, depth and total count.
    fn cms_info(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        cms::info(ctx, args)
    }
    /// `CMS.SCANDUMP key iterator`: the sketch's bytes, chunk by chunk (bloomery extension).
    fn cms_scandump(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        cms::scandump(ctx, args)
    }
    /// `CMS.LOADCHUNK key iterator data`: rebuild a sketch from `CMS.SCANDUMP`'s chunks (bloomery extension).
    fn cms_loadchunk(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        cms::loadchunk(ctx, args)
    }

    // Top-k (RedisBloom-compatible; SCANDUMP/LOADCHUNK are extensions).
    /// `TOPK.RESERVE key topk [width depth decay]`: create an empty top-k structure.
    fn topk_reserve(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        topk::reserve(ctx, args)
    }
    /// `TOPK.ADD key item [item ...]`: count items; per item the item expelled from the list, or nil.
    fn topk_add(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        topk::add(ctx, args)
    }
    /// `TOPK.INCRBY key item increment [item increment ...]`: as `TOPK.ADD` with counts.
    fn topk_incrby(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        topk::incrby(ctx, args)
    }
    /// `TOPK.QUERY key item [item ...]`: whether each item is in the list.
    fn topk_query(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        topk::query(ctx, args)
    }
    /// `TOPK.COUNT key item [item ...]`: estimated counts.
    fn topk_count(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        topk::count_cmd(ctx, args)
    }
    /// `TOPK.LIST key [WITHCOUNT]`: the list, largest count first.
    fn topk_list(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        topk::list(ctx, args)
    }
    /// `TOPK.INFO key`: k, width, depth and decay.
    fn topk_info(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        topk::info(ctx, args)
    }
    /// `TOPK.SCANDUMP key iterator`: the structure's bytes, chunk by chunk (bloomery extension).
    fn topk_scandump(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        topk::scandump(ctx, args)
    }
    /// `TOPK.LOADCHUNK key iterator data`: rebuild a structure from `TOPK.SCANDUMP`'s chunks (bloomery extension).
    fn topk_loadchunk(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        topk::loadchunk(ctx, args)
    }

    // t-digest (RedisBloom-compatible; SCANDUMP/LOADCHUNK are extensions).
    /// `TDIGEST.CREATE key [COMPRESSION compression]`: create an empty t-digest (compression 100 by default).
    fn tdigest_create(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        tdigest::create(ctx, args)
    }
    /// `TDIGEST.RESET key`: forget every value.
    fn tdigest_reset(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        tdigest::reset(ctx, args)
    }
    /// `TDIGEST.ADD key value [value ...]`: add values.
    fn tdigest_add(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        tdigest::add(ctx, args)
    }
    /// `TDIGEST.MERGE destination numkeys source [source ...] [COMPRESSION c] [OVERRIDE]`: merge digests into the destination (keys reported by the getkeys callback).
    fn tdigest_merge(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        tdigest::merge(ctx, args)
    }
    /// `TDIGEST.MIN key`: the smallest value added.
    fn tdigest_min(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        tdigest::min(ctx, args)
    }
    /// `TDIGEST.MAX key`: the largest value added.
    fn tdigest_max(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        tdigest::max(ctx, args)
    }
    /// `TDIGEST.QUANTILE key quantile [quantile ...]`: estimated values at these quantiles.
    fn tdigest_quantile(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        tdigest::quantile(ctx, args)
    }
    /// `TDIGEST.CDF key value [value ...]`: estimated fractions of values at or below each (half the equal ones).
    fn tdigest_cdf(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        tdigest::cdf(ctx, args)
    }
    /// `TDIGEST.TRIMMED_MEAN key low high`: the mean of the values between two quantiles.
    fn tdigest_trimmed_mean(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        tdigest::trimmed_mean(ctx, args)
    }
    /// `TDIGEST.RANK key value [value ...]`: estimated ranks.
    fn tdigest_rank(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        tdigest::rank(ctx, args)
    }
    /// `TDIGEST.REVRANK key value [value ...]`: estimated reverse ranks.
    fn tdigest_revrank(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        tdigest::revrank(ctx, args)
    }
    /// `TDIGEST.BYRANK key rank [rank ...]`: estimated values of these ranks.
    fn tdigest_byrank(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        tdigest::byrank(ctx, args)
    }
    /// `TDIGEST.BYREVRANK key rank [rank ...]`: estimated values of these reverse ranks.
    fn tdigest_byrevrank(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        tdigest::byrevrank(ctx, args)
    }
    /// `TDIGEST.INFO key`: compression, capacity, nodes, weights, compressions, memory.
    fn tdigest_info(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        tdigest::info(ctx, args)
    }
    /// `TDIGEST.SCANDUMP key iterator`: the digest's bytes, chunk by chunk (bloomery extension).
    fn tdigest_scandump(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        tdigest::scandump(ctx, args)
    }
    /// `TDIGEST.LOADCHUNK key iterator data`: rebuild a digest from `TDIGEST.SCANDUMP`'s chunks (bloomery extension).
    fn tdigest_loadchunk(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        tdigest::loadchunk(ctx, args)
    }

    // bloomery's own: multi-layer Bloom filter for URLs.
    /// `MLBF.RESERVE key capacity error_rate [LAYERS L]`: create an empty multi-layer URL filter.
    fn mlbf_reserve(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        mlbf::reserve(ctx, args)
    }
    /// `MLBF.ADD key url`: add a URL.
    fn mlbf_add(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        mlbf::add(ctx, args)
    }
    /// `MLBF.EXISTS key url`: whether the URL may have been added.
    fn mlbf_exists(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        mlbf::exists(ctx, args)
    }
    /// `MLBF.INFO key`: the filter's parameters.
    fn mlbf_info(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        mlbf::info(ctx, args)
    }
    /// `MLBF.SCANDUMP key iterator`: the filter's bytes, chunk by chunk.
    fn mlbf_scandump(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        mlbf::scandump(ctx, args)
    }
    /// `MLBF.LOADCHUNK key iterator data`: rebuild a filter from `MLBF.SCANDUMP`'s chunks.
    fn mlbf_loadchunk(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        mlbf::loadchunk(ctx, args)
    }

    // bloomery's own: counting Bloom filter.
    /// `CBF.RESERVE key capacity error [COUNTERBITS w]`: create an empty counting Bloom filter.
    fn cbf_reserve(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        counting::reserve::<CountingBloomFilter>(ctx, args)
    }
    /// `CBF.ADD key item`: add an item.
    fn cbf_add(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        counting::add::<CountingBloomFilter>(ctx, args)
    }
    /// `CBF.DEL key item`: remove an item (refused if it is certainly absent).
    fn cbf_del(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        counting::del::<CountingBloomFilter>(ctx, args)
    }
    /// `CBF.EXISTS key item`: whether the item may be present.
    fn cbf_exists(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        counting::exists::<CountingBloomFilter>(ctx, args)
    }
    /// `CBF.COUNT key item`: the minimum of the item's counters.
    fn cbf_count(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        counting::count::<CountingBloomFilter>(ctx, args)
    }
    /// `CBF.INFO key`: the filter's parameters.
    fn cbf_info(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        counting::info::<CountingBloomFilter>(ctx, args)
    }
    /// `CBF.SCANDUMP key iterator`: the filter's bytes, chunk by chunk.
    fn cbf_scandump(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        counting::scandump::<CountingBloomFilter>(ctx, args)
    }
    /// `CBF.LOADCHUNK key iterator data`: rebuild a filter from `CBF.SCANDUMP`'s chunks.
    fn cbf_loadchunk(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        counting::loadchunk::<CountingBloomFilter>(ctx, args)
    }

    // bloomery's own: blocked counting Bloom filter (a key's counters in one line).
    /// `BCBF.RESERVE key capacity error [COUNTERBITS w]`: create an empty blocked counting Bloom filter.
    fn bcbf_reserve(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        counting::reserve::<BlockedCountingBloomFilter>(ctx, args)
    }
    /// `BCBF.ADD key item`: add an item.
    fn bcbf_add(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        counting::add::<BlockedCountingBloomFilter>(ctx, args)
    }
    /// `BCBF.DEL key item`: remove an item (refused if it is certainly absent).
    fn bcbf_del(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        counting::del::<BlockedCountingBloomFilter>(ctx, args)
    }
    /// `BCBF.EXISTS key item`: whether the item may be present.
    fn bcbf_exists(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        counting::exists::<BlockedCountingBloomFilter>(ctx, args)
    }
    /// `BCBF.COUNT key item`: the minimum of the item's counters.
    fn bcbf_count(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        counting::count::<BlockedCountingBloomFilter>(ctx, args)
    }
    /// `BCBF.INFO key`: the filter's parameters.
    fn bcbf_info(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        counting::info::<BlockedCountingBloomFilter>(ctx, args)
    }
    /// `BCBF.SCANDUMP key iterator`: the filter's bytes, chunk by chunk.
    fn bcbf_scandump(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        counting::scandump::<BlockedCountingBloomFilter>(ctx, args)
    }
    /// `BCBF.LOADCHUNK key iterator data`: rebuild a filter from `BCBF.SCANDUMP`'s chunks.
    fn bcbf_loadchunk(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        counting::loadchunk::<BlockedCountingBloomFilter>(ctx, args)
    }

    // bloomery's own: Iterative Bloom Filter.
    /// `IBF.RESERVE key capacity error`: create an empty Iterative Bloom Filter.
    fn ibf_reserve(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        ibf::reserve(ctx, args)
    }
    /// `IBF.ADD key item`: add an item (a repeat is counted).
    fn ibf_add(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        ibf::add(ctx, args)
    }
    /// `IBF.EXISTS key item`: whether the item may have been added.
    fn ibf_exists(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        ibf::exists(ctx, args)
    }
    /// `IBF.COUNT key item`: the observed count.
    fn ibf_count(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        ibf::count(ctx, args)
    }
    /// `IBF.INFO key`: the filter's parameters.
    fn ibf_info(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        ibf::info(ctx, args)
    }
    /// `IBF.SCANDUMP key iterator`: the filter's bytes, chunk by chunk.
    fn ibf_scandump(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        ibf::scandump(ctx, args)
    }
    /// `IBF.LOADCHUNK key iterator data`: rebuild a filter from `IBF.SCANDUMP`'s chunks.
    fn ibf_loadchunk(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        ibf::loadchunk(ctx, args)
    }

    // bloomery's own.
    /// `BLOOMERY.DUMP key`: the structure's bytes in the library's file format (any type).
    fn bloomery_dump(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
        export::bloomery_dump(ctx, args)
    }

    redis_module! {
        name: "bloomery",
        version: 1,
        allocator: (redis_module::alloc::RedisAlloc, redis_module::alloc::RedisAlloc),
        data_types: [
            BF_TYPE, CF_TYPE, CMS_TYPE, CBF_TYPE, BCBF_TYPE, IBF_TYPE, TOPK_TYPE, MLBF_TYPE,
            RB_BF_TYPE, RB_CF_TYPE, TDIGEST_TYPE, WBF_TYPE, TWBF_TYPE
        ],
        // The ACL categories of RedisBloom in Redis 8 (`@bloom`, `@cuckoo`, `@cms`, `@topk`,
        // `@tdigest`) and `@bloomery` for the module's own types, on servers that let modules
        // add categories (Redis 7.4+, Valkey 8+; older ones log a warning and load without).
        // Commands also keep the categories their flags give (`@write`, `@read`, `@fast`, ...).
        acl_categories: ["bloom", "cuckoo", "cms", "topk", "tdigest", "bloomery",],
        init: init,
        // Names in lower case, as RedisBloom registers them: Redis names the registered
        // command in its errors (`wrong number of arguments for 'bf.add' command`), `COMMAND`
        // and `INFO commandstats`; lookup ignores case.
        commands: [
            // Bloom filters (RedisBloom-compatible; `bf.add` and `bf.exists` are registered
            // by `hot::register`, with entry points of their own).
            ["bf.reserve", bf_reserve, "write deny-oom", 1, 1, 1, "", "bloom"],
            ["bf.madd", bf_madd, "write deny-oom", 1, 1, 1, "", "bloom"],
            ["bf.insert", bf_insert, "write deny-oom", 1, 1, 1, "", "bloom"],
            ["bf.mexists", bf_mexists, "readonly fast", 1, 1, 1, "", "bloom"],
            ["bf.info", bf_info, "readonly fast", 1, 1, 1, "", "bloom"],
            ["bf.card", bf_card, "readonly fast", 1, 1, 1, "", "bloom"],
            ["bf.scandump", bf_scandump, "readonly", 1, 1, 1, "", "bloom"],
            ["bf.loadchunk", bf_loadchunk, "write deny-oom", 1, 1, 1, "", "bloom"],
            ["bf.merge", bf_merge, "write deny-oom getkeys-api", 1, 1, 1, "", "bloom"],
            // Cuckoo filters (RedisBloom-compatible).
            ["cf.reserve", cf_reserve, "write deny-oom", 1, 1, 1, "", "cuckoo"],
            ["cf.add", cf_add, "write deny-oom", 1, 1, 1, "", "cuckoo"],
            ["cf.addnx", cf_addnx, "write deny-oom", 1, 1, 1, "", "cuckoo"],
            ["cf.insert", cf_insert, "write deny-oom", 1, 1, 1, "", "cuckoo"],
            ["cf.insertnx", cf_insertnx, "write deny-oom", 1, 1, 1, "", "cuckoo"],
            ["cf.exists", cf_exists, "readonly fast", 1, 1, 1, "", "cuckoo"],
            ["cf.mexists", cf_mexists, "readonly fast", 1, 1, 1, "", "cuckoo"],
            ["cf.del", cf_del, "write fast", 1, 1, 1, "", "cuckoo"],
            ["cf.count", cf_count, "readonly fast", 1, 1, 1, "", "cuckoo"],
            ["cf.info", cf_info, "readonly fast", 1, 1, 1, "", "cuckoo"],
            ["cf.compact", cf_compact, "write", 1, 1, 1, "", "cuckoo"],
            ["cf.scandump", cf_scandump, "readonly", 1, 1, 1, "", "cuckoo"],
            ["cf.loadchunk", cf_loadchunk, "write deny-oom", 1, 1, 1, "", "cuckoo"],
            // Count-min sketches (RedisBloom-compatible; SCANDUMP/LOADCHUNK are extensions).
            ["cms.initbydim", cms_initbydim, "write deny-oom", 1, 1, 1, "", "cms"],
            ["cms.initbyprob", cms_initbyprob, "write deny-oom", 1, 1, 1, "", "cms"],
            ["cms.incrby", cms_incrby, "write deny-oom", 1, 1, 1, "", "cms"],
            ["cms.query", cms_query, "readonly fast", 1, 1, 1, "", "cms"],
            ["cms.merge", cms_merge, "write deny-oom getkeys-api", 1, 1, 1, "", "cms"],
            ["cms.info", cms_info, "readonly fast", 1, 1, 1, "", "cms"],
            ["cms.scandump", cms_scandump, "readonly", 1, 1, 1, "", "cms"],
            ["cms.loadchunk", cms_loadchunk, "write deny-oom", 1, 1, 1, "", "cms"],
            // Top-k (RedisBloom-compatible; SCANDUMP/LOADCHUNK are extensions).
            ["topk.reserve", topk_reserve, "write deny-oom", 1, 1, 1, "", "topk"],
            ["topk.add", topk_add, "write deny-oom", 1, 1, 1, "", "topk"],
            ["topk.incrby", topk_incrby, "write deny-oom", 1, 1, 1, "", "topk"],
            ["topk.query", topk_query, "readonly", 1, 1, 1, "", "topk"],
            ["topk.count", topk_count, "readonly", 1, 1, 1, "", "topk"],
            ["topk.list", topk_list, "readonly", 1, 1, 1, "", "topk"],
            ["topk.info", topk_info, "readonly fast", 1, 1, 1, "", "topk"],
            ["topk.scandump", topk_scandump, "readonly", 1, 1, 1, "", "topk"],
            ["topk.loadchunk", topk_loadchunk, "write deny-oom", 1, 1, 1, "", "topk"],
            // t-digest (RedisBloom-compatible; SCANDUMP/LOADCHUNK are extensions).
            ["tdigest.create", tdigest_create, "write deny-oom", 1, 1, 1, "", "tdigest"],
            ["tdigest.reset", tdigest_reset, "write", 1, 1, 1, "", "tdigest"],
            ["tdigest.add", tdigest_add, "write deny-oom", 1, 1, 1, "", "tdigest"],
            ["tdigest.merge", tdigest_merge, "write deny-oom getkeys-api", 1, 1, 1, "", "tdigest"],
            ["tdigest.min", tdigest_min, "readonly", 1, 1, 1, "", "tdigest"],
            ["tdigest.max", tdigest_max, "readonly", 1, 1, 1, "", "tdigest"],
            ["tdigest.quantile", tdigest_quantile, "readonly", 1, 1, 1, "", "tdigest"],
            ["tdigest.cdf", tdigest_cdf, "readonly", 1, 1, 1, "", "tdigest"],
            ["tdigest.trimmed_mean", tdigest_trimmed_mean, "readonly", 1, 1, 1, "", "tdigest"],
            ["tdigest.rank", tdigest_rank, "readonly", 1, 1, 1, "", "tdigest"],
            ["tdigest.revrank", tdigest_revrank, "readonly", 1, 1, 1, "", "tdigest"],
            ["tdigest.byrank", tdigest_byrank, "readonly", 1, 1, 1, "", "tdigest"],
            ["tdigest.byrevrank", tdigest_byrevrank, "readonly", 1, 1, 1, "", "tdigest"],
            ["tdigest.info", tdigest_info, "readonly", 1, 1, 1, "", "tdigest"],
            ["tdigest.scandump", tdigest_scandump, "readonly", 1, 1, 1, "", "tdigest"],
            ["tdigest.loadchunk", tdigest_loadchunk, "write deny-oom", 1, 1, 1, "", "tdigest"],
            // bloomery's own: multi-layer Bloom filter for URLs.
            ["mlbf.reserve", mlbf_reserve, "write deny-oom", 1, 1, 1, "", "bloomery"],
            ["mlbf.add", mlbf_add, "write deny-oom", 1, 1, 1, "", "bloomery"],
            ["mlbf.exists", mlbf_exists, "readonly fast", 1, 1, 1, "", "bloomery"],
            ["mlbf.info", mlbf_info, "readonly fast", 1, 1, 1, "", "bloomery"],
            ["mlbf.scandump", mlbf_scandump, "readonly", 1, 1, 1, "", "bloomery"],
            ["mlbf.loadchunk", mlbf_loadchunk, "write deny-oom", 1, 1, 1, "", "bloomery"],
            // bloomery's own: counting Bloom filter.
            ["cbf.reserve", cbf_reserve, "write deny-oom", 1, 1, 1, "", "bloomery"],
            ["cbf.add", cbf_add, "write deny-oom", 1, 1, 1, "", "bloomery"],
            ["cbf.del", cbf_del, "write", 1, 1, 1, "", "bloomery"],
            ["cbf.exists", cbf_exists, "readonly fast", 1, 1, 1, "", "bloomery"],
            ["cbf.count", cbf_count, "readonly fast", 1, 1, 1, "", "bloomery"],
            ["cbf.info", cbf_info, "readonly fast", 1, 1, 1, "", "bloomery"],
            ["cbf.scandump", cbf_scandump, "readonly", 1, 1, 1, "", "bloomery"],
            ["cbf.loadchunk", cbf_loadchunk, "write deny-oom", 1, 1, 1, "", "bloomery"],
            // bloomery's own: blocked counting Bloom filter (a key's counters in one line).
            ["bcbf.reserve", bcbf_reserve, "write deny-oom", 1, 1, 1, "", "bloomery"],
            ["bcbf.add", bcbf_add, "write deny-oom", 1, 1, 1, "", "bloomery"],
            ["bcbf.del", bcbf_del, "write", 1, 1, 1, "", "bloomery"],
            ["bcbf.exists", bcbf_exists, "readonly fast", 1, 1, 1, "", "bloomery"],
            ["bcbf.count", bcbf_count, "readonly fast", 1, 1, 1, "", "bloomery"],
            ["bcbf.info", bcbf_info, "readonly fast", 1, 1, 1, "", "bloomery"],
            ["bcbf.scandump", bcbf_scandump, "readonly", 1, 1, 1, "", "bloomery"],
            ["bcbf.loadchunk", bcbf_loadchunk, "write deny-oom", 1, 1, 1, "", "bloomery"],
            // bloomery's own: Iterative Bloom Filter.
            ["ibf.reserve", ibf_reserve, "write deny-oom", 1, 1, 1, "", "bloomery"],
            ["ibf.add", ibf_add, "write deny-oom", 1, 1, 1, "", "bloomery"],
            ["ibf.exists", ibf_exists, "readonly fast", 1, 1, 1, "", "bloomery"],
            ["ibf.count", ibf_count, "readonly fast", 1, 1, 1, "", "bloomery"],
            ["ibf.info", ibf_info, "readonly fast", 1, 1, 1, "", "bloomery"],
            ["ibf.scandump", ibf_scandump, "readonly", 1, 1, 1, "", "bloomery"],
            ["ibf.loadchunk", ibf_loadchunk, "write deny-oom", 1, 1, 1, "", "bloomery"],
            // bloomery's own: windows that forget (the last N items; the last T ms).
            ["wbf.reserve", wbf::reserve, "write deny-oom", 1, 1, 1, "", "bloomery"],
            ["wbf.add", wbf::add, "write deny-oom", 1, 1, 1, "", "bloomery"],
            ["wbf.madd", wbf::madd, "write deny-oom", 1, 1, 1, "", "bloomery"],
            ["wbf.exists", wbf::exists, "readonly fast", 1, 1, 1, "", "bloomery"],
            ["wbf.mexists", wbf::mexists, "readonly fast", 1, 1, 1, "", "bloomery"],
            ["wbf.info", wbf::info, "readonly fast", 1, 1, 1, "", "bloomery"],
            ["wbf.scandump", wbf::scandump, "readonly", 1, 1, 1, "", "bloomery"],
            ["wbf.loadchunk", wbf::loadchunk, "write deny-oom", 1, 1, 1, "", "bloomery"],
            ["twbf.reserve", wbf::t_reserve, "write deny-oom", 1, 1, 1, "", "bloomery"],
            ["twbf.add", wbf::t_add, "write deny-oom", 1, 1, 1, "", "bloomery"],
            ["twbf.madd", wbf::t_madd, "write deny-oom", 1, 1, 1, "", "bloomery"],
            ["twbf.addat", wbf::t_addat, "write deny-oom", 1, 1, 1, "", "bloomery"],
            ["twbf.exists", wbf::t_exists, "readonly", 1, 1, 1, "", "bloomery"],
            ["twbf.mexists", wbf::t_mexists, "readonly", 1, 1, 1, "", "bloomery"],
            ["twbf.info", wbf::t_info, "readonly", 1, 1, 1, "", "bloomery"],
            ["twbf.scandump", wbf::t_scandump, "readonly", 1, 1, 1, "", "bloomery"],
            ["twbf.loadchunk", wbf::t_loadchunk, "write deny-oom", 1, 1, 1, "", "bloomery"],
            // bloomery's own.
            ["bloomery.dump", bloomery_dump, "readonly", 1, 1, 1, "", "bloomery"],
        ],
    }
}
