//! The limits and defaults of the commands, in one place: what `RESERVE`-style commands accept
//! is exactly what a loaded value (RDB, `RESTORE`, `LOADCHUNK`) must satisfy
//! ([`crate::types::Structure::validate`]), so no payload can carry a parameter its create
//! command would refuse. Where RedisBloom has a limit, it is RedisBloom's.

/// `BF.*`: capacity of auto-created filters (RedisBloom's default).
pub const BF_DEFAULT_CAPACITY: u64 = 100;
/// `BF.*`: error rate of auto-created filters (RedisBloom's default).
pub const BF_DEFAULT_ERROR_RATE: f64 = 0.01;
/// `BF.*`: expansion of auto-created filters (RedisBloom's default).
pub const BF_DEFAULT_EXPANSION: u32 = 2;
/// `BF.*`: largest `EXPANSION` (RedisBloom 2.6 has none; later versions cap it at 32768, as
/// the library caps every scalable filter's growth, on creation and on load).
pub const BF_MAX_EXPANSION: u32 = bloomery::ScalableBloomFilter::MAX_GROWTH;
/// `BF.*`: the tightening ratio r of filters created with the default capacity (`BF.ADD`,
/// `BF.MADD`, `BF.INSERT` without `CAPACITY`). Such a filter's memory is its later sub-filters',
/// so they get most of the error budget: sub-filter i is sized at `ε·(1 − r)·rⁱ`, the first at
/// `ε/5` (Almeida et al. suggest r between 0.8 and 0.9 when many growths are expected).
/// RedisBloom halves the rate at every growth (r = 0.5), which at 1M items (14 sub-filters)
/// costs more memory at a lower rate than the target needs.
pub const BF_TIGHTENING_GROWN: f64 = 0.8;
/// `BF.*`: the tightening ratio of filters created with a capacity (`BF.RESERVE`, `BF.INSERT
/// CAPACITY`): the first sub-filter, sized for that capacity, is at `2ε/3` (RedisBloom: `ε/2`),
/// which makes up for the blocked layout's extra bits at the same rate.
pub const BF_TIGHTENING_RESERVED: f64 = 1.0 / 3.0;
/// `BF.*`: the tightening ratio of `NONSCALING` filters: their one sub-filter gets the whole
/// error budget (as in RedisBloom).
pub const BF_TIGHTENING_NONSCALING: f64 = 1e-9;

/// `CF.*`: capacity of auto-created filters (RedisBloom's default).
pub const CF_DEFAULT_CAPACITY: u64 = 1024;
/// `CF.*`: default `BUCKETSIZE`.
pub const CF_DEFAULT_BUCKET_SIZE: u32 = 2;
/// `CF.*`: largest `BUCKETSIZE`.
pub const CF_MAX_BUCKET_SIZE: u32 = 255;
/// `CF.*`: default `MAXITERATIONS`.
pub const CF_DEFAULT_MAX_ITERATIONS: u32 = 20;
/// `CF.*`: largest `MAXITERATIONS`: one insert tries at most this many evictions.
pub const CF_MAX_ITERATIONS: u32 = 65535;
/// `CF.*`: default `EXPANSION`.
pub const CF_DEFAULT_EXPANSION: u32 = 1;
/// `CF.*`: largest `EXPANSION`.
pub const CF_MAX_EXPANSION: u32 = 32768;
/// `CF.*`: a filter with this many sub-filters takes no more items ("Maximum expansions
/// reached", RedisBloom's `CF_MAX_EXPANSIONS` default).
pub const CF_MAX_FILTERS: usize = 32;

/// `CMS.*`: most rows (the library's limit; a row costs one hash and one counter per item).
pub const CMS_MAX_DEPTH: u32 = bloomery::CountMinSketch::MAX_DEPTH;
/// `CMS.*`: largest total count (RESP integers are signed 64-bit).
pub const CMS_MAX_TOTAL: u64 = i64::MAX as u64;

/// `TOPK.*`: largest k.
pub const TOPK_MAX_K: u32 = bloomery::TopK::MAX_K;
/// `TOPK.*`: most rows.
pub const TOPK_MAX_DEPTH: u32 = bloomery::TopK::MAX_DEPTH;
/// `TOPK.*`: default width, depth and decay (RedisBloom's).
pub const TOPK_DEFAULTS: (u64, u32, f64) = (8, 7, 0.9);
/// `TOPK.INCRBY`: largest increment (RedisBloom's).
pub const TOPK_MAX_INCREMENT: i64 = 100_000;

/// `CBF.*`, `BCBF.*`, `IBF.*`, `MLBF.*`: capacity and error rate of auto-created filters.
pub const OWN_DEFAULT_CAPACITY: u64 = 100;
/// See [`OWN_DEFAULT_CAPACITY`].
pub const OWN_DEFAULT_ERROR_RATE: f64 = 0.01;
/// `CBF.*`, `BCBF.*`: default and largest `COUNTERBITS`.
pub const COUNTER_BITS: (u32, u32) = (
    bloomery::CountingBloomFilter::DEFAULT_COUNTER_WIDTH,
    bloomery::tuning::MAX_COUNTER_WIDTH,
);
/// `MLBF.*`: default (the paper's) and largest `LAYERS`.
pub const MLBF_LAYERS: (u32, u32) = (
    bloomery::MultiLayerBloomFilter::PAPER_LAYERS,
    bloomery::MultiLayerBloomFilter::MAX_LAYERS,
);
