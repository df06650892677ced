//! The Redis data types: one per structure, each holding a [`Slot`] — a ready structure, or
//! the bytes received so far by a LOADCHUNK sequence.
//!
//! ## RDB encoding
//! The type's encoding version (passed to `rdb_load` as `encver`) selects the layout.
//! Version 1 (the current one):
//!
//! ```text
//! unsigned  state   0 = ready, 1 = LOADCHUNK in progress
//! ready:    string  the library's file format (Persist::to_bytes), fully validated on load
//! loading:  unsigned total length announced by the header chunk
//!           string  the bytes received so far (header validated again on load)
//! ```
//!
//! Version 2 (`BLMRY-CMS` only) has the same layout; its ready bytes are the count-min sketch
//! with 32-bit counters (kind `cms32`), where version 1 held the 64-bit form (kind `cms`):
//! both load, the 64-bit form converted ([`Structure::OLD_KINDS`]).
//!
//! Loading dispatches on `encver` in `rdb_load`; a future version gets its own arm, and
//! older layouts stay loadable (the RedisJSON `backward.rs` pattern). Whatever the bytes, a
//! malformed payload makes `rdb_load` return NULL (RESTORE answers an error, a bad RDB file
//! stops the load) — it never panics or allocates beyond `MAX-BYTES`.

use std::ffi::CStr;
use std::os::raw::{c_int, c_void};

use bloomery::{
    BlockedCountingBloomFilter, CountMinSketch, CountMinSketch32, CountingBloomFilter,
    CuckooFilter, Filter, IterativeBloomFilter, Kind, MultiLayerBloomFilter, Persist,
    ScalableBloomFilter, TDigest, TopK,
};
use redis_module::native_types::RedisType;
use redis_module::raw;

use crate::chunk;
use crate::limits;
use crate::memory::{charged, words_bytes};
use crate::stats::Family;

/// Encoding version written by this build.
pub const ENCODING_VERSION: i32 = 1;

/// Encoding version of `BLMRY-CMS` (2: 32-bit counters; 1, the 64-bit form, still loads).
pub const CMS_ENCODING_VERSION: i32 = 2;

/// A structure stored under a key.
pub trait Structure: Persist + Clone + 'static {
    /// The kind the file-format header must announce.
    const FILE_KIND: Kind;
    /// Its name in the module's `INFO` section (the command family: `bf`, `cms`, …).
    const INFO: &'static str;
    /// The command that rebuilds it from chunks (AOF rewrite).
    const LOADCHUNK: &'static CStr;
    /// Kinds that earlier versions stored for this type, which [`Structure::decode`] converts
    /// (and a LOADCHUNK sequence or partial RDB value may announce).
    const OLD_KINDS: &'static [Kind] = &[];
    /// The highest RDB encoding version this type loads (and the one it writes).
    const ENCODING: i32 = ENCODING_VERSION;
    /// Bytes the structure holds on Redis's heap (its arrays and their bookkeeping, as Redis's
    /// allocator counts them), not counting the structure itself.
    fn held(&self) -> u64;
    /// Checks beyond the library's decoding, applied to every structure loaded from RDB,
    /// RESTORE or LOADCHUNK bytes: every parameter within the limits of the command that
    /// creates the type ([`crate::limits`]), and what the module's commands rely on.
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
    /// Decode the file format, then [`Structure::validate`].
    fn decode(bytes: &[u8]) -> Result<Self, String> {
        let s = Self::from_bytes(bytes).map_err(|e| e.to_string())?;
        s.validate()?;
        Ok(s)
    }
}

/// `Err(what)` unless `ok`.
fn check(ok: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(what())
    }
}

/// [`chunk::check_header`] for `T`'s kind, or one of its [old kinds](Structure::OLD_KINDS).
pub fn check_kind_header<T: Structure>(b: &[u8]) -> Result<chunk::Head, String> {
    chunk::check_header(b, T::FILE_KIND).or_else(|e| {
        T::OLD_KINDS
            .iter()
            .find_map(|&k| chunk::check_header(b, k).ok())
            .ok_or(e)
    })
}

/// Counts a command reports or increments stay at most `i64::MAX` (what a RESP integer
/// carries): a loaded count beyond it could only have been forged, and would overflow.
fn check_count(what: &str, v: u64) -> Result<(), String> {
    check(v <= i64::MAX as u64, || {
        format!("{what} {v} exceeds i64::MAX")
    })
}

/// Bytes of the buffer behind a slice of `len` elements of `T` (a `Vec`'s, when full).
fn vec_bytes<T>(items: &[T]) -> u64 {
    charged(std::mem::size_of_val(items) as u64)
}

impl Structure for ScalableBloomFilter {
    const FILE_KIND: Kind = Kind::Scalable;
    const INFO: &'static str = "bf";
    const LOADCHUNK: &'static CStr = c"BF.LOADCHUNK";
    fn held(&self) -> u64 {
        let arrays: u64 = self
            .filters()
            .iter()
            .map(|f| charged(words_bytes(f.as_words().len() as u64)))
            .sum();
        arrays + vec_bytes(self.filters())
    }
    /// `EXPANSION` as `BF.RESERVE` accepts it; item counts.
    fn validate(&self) -> Result<(), String> {
        check_count("items", self.len())?;
        for f in self.filters() {
            check_count("sub-filter items", f.len())?;
        }
        let g = self.growth();
        check((1..=limits::BF_MAX_EXPANSION).contains(&g), || {
            format!("expansion {g} outside 1..={}", limits::BF_MAX_EXPANSION)
        })
    }
}

impl Structure for CuckooFilter {
    const FILE_KIND: Kind = Kind::Cuckoo;
    const INFO: &'static str = "cf";
    const LOADCHUNK: &'static CStr = c"CF.LOADCHUNK";
    fn held(&self) -> u64 {
        let arrays: u64 = self
            .tables()
            .iter()
            .map(|t| charged(words_bytes(t.slots().div_ceil(8))))
            .sum();
        arrays + vec_bytes(self.tables())
    }
    /// `BUCKETSIZE`, `MAXITERATIONS`, `EXPANSION` and the capacity as `CF.RESERVE` accepts them.
    fn validate(&self) -> Result<(), String> {
        check_count("deletes", self.deletes())?;
        let (b, m, e) = (self.bucket_size(), self.max_iterations(), self.expansion());
        check((1..=limits::CF_MAX_BUCKET_SIZE).contains(&b), || {
            format!("bucket size {b} outside 1..={}", limits::CF_MAX_BUCKET_SIZE)
        })?;
        check((1..=limits::CF_MAX_ITERATIONS).contains(&m), || {
            format!(
                "max iterations {m} outside 1..={}",
                limits::CF_MAX_ITERATIONS
            )
        })?;
        check(e <= limits::CF_MAX_EXPANSION, || {
            format!("expansion {e} outside 0..={}", limits::CF_MAX_EXPANSION)
        })?;
        check(self.capacity() >= 2 * u64::from(b), || {
            format!("capacity {} below twice the bucket size", self.capacity())
        })
    }
}

/// The 64-bit form that `CMS.*` stored before the 32-bit counters (RDB encoding version 1):
/// validated as it was then, then converted ([`CountMinSketch32`]'s `decode`).
impl Structure for CountMinSketch {
    const FILE_KIND: Kind = Kind::CountMin;
    const INFO: &'static str = "cms64";
    const LOADCHUNK: &'static CStr = c"CMS.LOADCHUNK";
    fn held(&self) -> u64 {
        charged(words_bytes(self.as_words().len() as u64))
    }
    /// The depth as `CMS.INITBYDIM` accepts it; and since `CMS.*` keeps every count within
    /// `i64::MAX` by bounding the total, which holds only if no counter exceeds the total: each
    /// row of a plain sketch sums to exactly the total (every update adds it once per row), and
    /// no counter of a conservative one exceeds it.
    fn validate(&self) -> Result<(), String> {
        let depth = self.depth();
        check((1..=limits::CMS_MAX_DEPTH).contains(&depth), || {
            format!("depth {depth} outside 1..={}", limits::CMS_MAX_DEPTH)
        })?;
        let total = self.total();
        if total > limits::CMS_MAX_TOTAL {
            return Err(format!("total count {total} exceeds i64::MAX"));
        }
        let width = usize::try_from(self.width()).map_err(|_| "width too large".to_string())?;
        for (r, row) in self.as_words().chunks(width.max(1)).enumerate() {
            if self.is_conservative() {
                if row.iter().any(|&c| c > total) {
                    return Err(format!("row {r} has a counter above the total count"));
                }
            } else {
                let sum = row.iter().try_fold(0u64, |a, &c| a.checked_add(c));
                if sum != Some(total) {
                    return Err(format!("row {r} does not sum to the total count"));
                }
            }
        }
        Ok(())
    }
}

/// The sketch behind `CMS.*`: 32-bit counters, as RedisBloom's.
impl Structure for CountMinSketch32 {
    const FILE_KIND: Kind = Kind::CountMin32;
    const INFO: &'static str = "cms";
    const LOADCHUNK: &'static CStr = c"CMS.LOADCHUNK";
    const OLD_KINDS: &'static [Kind] = &[Kind::CountMin];
    const ENCODING: i32 = CMS_ENCODING_VERSION;
    fn held(&self) -> u64 {
        charged(words_bytes(self.as_words().len() as u64))
    }
    /// The depth as `CMS.INITBYDIM` accepts it; the total within `i64::MAX` (counters cannot
    /// pass `u32::MAX`: the library's decoding keeps the unused half-word zero).
    fn validate(&self) -> Result<(), String> {
        let depth = self.depth();
        check((1..=limits::CMS_MAX_DEPTH).contains(&depth), || {
            format!("depth {depth} outside 1..={}", limits::CMS_MAX_DEPTH)
        })?;
        let total = self.total();
        check(total <= limits::CMS_MAX_TOTAL, || {
            format!("total count {total} exceeds i64::MAX")
        })
    }
    /// The 32-bit form, or the 64-bit form earlier versions stored (checked as it was then,
    /// then converted: counters above `u32::MAX` become `u32::MAX`).
    fn decode(bytes: &[u8]) -> Result<Self, String> {
        let kind = bytes.get(10..12).map(|b| u16::from_le_bytes([b[0], b[1]]));
        let s = if kind == Some(Kind::CountMin.id()) {
            let wide = <CountMinSketch as Structure>::decode(bytes)?;
            Self::from_wide(&wide).map_err(|e| e.to_string())?
        } else {
            Self::from_bytes(bytes).map_err(|e| e.to_string())?
        };
        s.validate()?;
        Ok(s)
    }
}

/// The counter width as `CBF.RESERVE`/`BCBF.RESERVE` accept it.
fn check_counter_bits(bits: u32) -> Result<(), String> {
    check((1..=limits::COUNTER_BITS.1).contains(&bits), || {
        format!("counter bits {bits} outside 1..={}", limits::COUNTER_BITS.1)
    })
}

impl Structure for CountingBloomFilter {
    const FILE_KIND: Kind = Kind::Counting;
    const INFO: &'static str = "cbf";
    const LOADCHUNK: &'static CStr = c"CBF.LOADCHUNK";
    fn held(&self) -> u64 {
        charged(words_bytes(self.counters().words().len() as u64))
    }
    fn validate(&self) -> Result<(), String> {
        check_count("items", self.len())?;
        check_counter_bits(self.counter_width())
    }
}

impl Structure for BlockedCountingBloomFilter {
    const FILE_KIND: Kind = Kind::BlockedCounting;
    const INFO: &'static str = "bcbf";
    const LOADCHUNK: &'static CStr = c"BCBF.LOADCHUNK";
    fn held(&self) -> u64 {
        charged(words_bytes(self.as_words().len() as u64))
    }
    fn validate(&self) -> Result<(), String> {
        check_count("items", self.len())?;
        check_counter_bits(self.counter_width())
    }
}

impl Structure for IterativeBloomFilter {
    const FILE_KIND: Kind = Kind::Iterative;
    const INFO: &'static str = "ibf";
    const LOADCHUNK: &'static CStr = c"IBF.LOADCHUNK";
    fn held(&self) -> u64 {
        charged(words_bytes(self.as_words().len() as u64))
    }
    fn validate(&self) -> Result<(), String> {
        check_count("items", self.total_inserts())?;
        check_count("distinct items", self.distinct_inserts())?;
        check_count("repeats", self.repeats_counted())
    }
}

impl Structure for TopK {
    const FILE_KIND: Kind = Kind::TopK;
    const INFO: &'static str = "topk";
    const LOADCHUNK: &'static CStr = c"TOPK.LOADCHUNK";
    /// The buckets and every allocation of the top-k list (entries, items, saved form), each
    /// as Redis's allocator counts it.
    fn held(&self) -> u64 {
        charged(words_bytes(self.bucket_bytes() / 8))
            + self.list_allocations().map(charged).sum::<u64>()
    }
    /// k and the depth as `TOPK.RESERVE` accepts them.
    fn validate(&self) -> Result<(), String> {
        let (k, depth) = (self.k(), self.depth());
        check((1..=limits::TOPK_MAX_K).contains(&k), || {
            format!("k {k} outside 1..={}", limits::TOPK_MAX_K)
        })?;
        check((1..=limits::TOPK_MAX_DEPTH).contains(&depth), || {
            format!("depth {depth} outside 1..={}", limits::TOPK_MAX_DEPTH)
        })
    }
}

impl Structure for MultiLayerBloomFilter {
    const FILE_KIND: Kind = Kind::Mlbf;
    const INFO: &'static str = "mlbf";
    const LOADCHUNK: &'static CStr = c"MLBF.LOADCHUNK";
    /// The arrays of every layer (the list of them, a few dozen bytes per layer, aside).
    fn held(&self) -> u64 {
        (0..=self.layers() as usize)
            .filter_map(|i| self.layer_words(i))
            .map(|w| charged(words_bytes(w.len() as u64)))
            .sum()
    }
    /// `LAYERS` as `MLBF.RESERVE` accepts it; the item count.
    fn validate(&self) -> Result<(), String> {
        check_count("items", self.len())?;
        let l = self.layers();
        check((1..=limits::MLBF_LAYERS.1).contains(&l), || {
            format!("{l} layers outside 1..={}", limits::MLBF_LAYERS.1)
        })
    }
}

impl Structure for TDigest {
    const FILE_KIND: Kind = Kind::TDigest;
    const INFO: &'static str = "tdigest";
    const LOADCHUNK: &'static CStr = c"TDIGEST.LOADCHUNK";
    /// The centroid buffer (`6δ + 10` centroids of 16 bytes), and the merged centroids a
    /// query keeps until the next write.
    fn held(&self) -> u64 {
        charged(words_bytes(self.capacity() * 2)) + tdigest_view_bytes(self)
    }
    /// The library checks the compression, the centroids and the weights (at most
    /// `i64::MAX`) on load; a value `TDIGEST.CREATE` could make within `MAX-BYTES`.
    fn validate(&self) -> Result<(), String> {
        check_count("observations", self.count())?;
        let bytes = self.capacity() * 16;
        check(bytes <= crate::config::max_bytes(), || {
            format!("{bytes} bytes of centroids over MAX-BYTES")
        })
    }
}

/// What a ready value holds, as Redis counts it: its [`MEMORY USAGE`](Slot::mem_usage)
/// without the key (the `Size` field of the `INFO` commands).
/// Bytes of the merged centroids a t-digest's queries keep until its next write, as Redis's
/// allocator counts them.
pub fn tdigest_view_bytes(td: &TDigest) -> u64 {
    match td.view_bytes() as u64 {
        0 => 0,
        n => charged(n),
    }
}

pub fn value_size<T: Structure>(f: &T) -> u64 {
    charged(std::mem::size_of::<Slot<T>>() as u64).saturating_add(f.held())
}

/// Bytes of a LOADCHUNK sequence received so far.
#[derive(Debug, Clone, PartialEq)]
pub struct Partial {
    /// The prefix of the file-format bytes received (starts with a validated header).
    pub bytes: Vec<u8>,
    /// The full length announced by the header.
    pub total: u64,
}

/// What a key of our types holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Slot<T> {
    /// A usable structure.
    Ready(T),
    /// A LOADCHUNK sequence in progress.
    Loading(Partial),
}

impl<T: Structure> Slot<T> {
    /// Memory used, for MEMORY USAGE.
    pub fn mem_usage(&self) -> usize {
        let body = match self {
            Slot::Ready(f) => f.held(),
            Slot::Loading(p) => charged(p.bytes.capacity() as u64),
        };
        let total = charged(std::mem::size_of::<Self>() as u64).saturating_add(body);
        usize::try_from(total).unwrap_or(usize::MAX)
    }

    /// The bytes that represent it: the file format (ready) or the prefix received (loading).
    pub fn bytes(&self) -> Vec<u8> {
        match self {
            Slot::Ready(f) => f.to_bytes(),
            Slot::Loading(p) => p.bytes.clone(),
        }
    }
}

pub(crate) const fn methods<T: Structure>() -> raw::RedisModuleTypeMethods {
    raw::RedisModuleTypeMethods {
        version: raw::REDISMODULE_TYPE_METHOD_VERSION as u64,
        rdb_load: Some(rdb_load::<T>),
        rdb_save: Some(rdb_save::<T>),
        aof_rewrite: Some(aof_rewrite::<T>),
        free: Some(free::<T>),
        mem_usage: Some(mem_usage::<T>),
        digest: Some(digest::<T>),
        aux_load: None,
        aux_save: None,
        aux_save2: None,
        aux_save_triggers: 0,
        free_effort: None,
        unlink: None,
        copy: Some(copy::<T>),
        defrag: None,
        copy2: None,
        free_effort2: None,
        mem_usage2: None,
        unlink2: None,
    }
}

/// The scalable Bloom filter type behind `BF.*` (type names are exactly 9 characters).
pub static BF_TYPE: RedisType = RedisType::new(
    "BLMRY-SBF",
    ENCODING_VERSION,
    methods::<ScalableBloomFilter>(),
);

/// The cuckoo filter type behind `CF.*`.
pub static CF_TYPE: RedisType =
    RedisType::new("BLMRY-CUF", ENCODING_VERSION, methods::<CuckooFilter>());

/// The count-min sketch type behind `CMS.*`.
pub static CMS_TYPE: RedisType = RedisType::new(
    "BLMRY-CMS",
    CMS_ENCODING_VERSION,
    methods::<CountMinSketch32>(),
);

/// The counting Bloom filter type behind `CBF.*` (bloomery's own).
pub static CBF_TYPE: RedisType = RedisType::new(
    "BLMRY-CBF",
    ENCODING_VERSION,
    methods::<CountingBloomFilter>(),
);

/// The blocked counting Bloom filter type behind `BCBF.*` (bloomery's own).
pub static BCBF_TYPE: RedisType = RedisType::new(
    "BLMRY-BCB",
    ENCODING_VERSION,
    methods::<BlockedCountingBloomFilter>(),
);

/// The Iterative Bloom Filter type behind `IBF.*` (bloomery's own).
pub static IBF_TYPE: RedisType = RedisType::new(
    "BLMRY-IBF",
    ENCODING_VERSION,
    methods::<IterativeBloomFilter>(),
);

/// The HeavyKeeper top-k type behind `TOPK.*`.
pub static TOPK_TYPE: RedisType = RedisType::new("BLMRY-TPK", ENCODING_VERSION, methods::<TopK>());

/// The multi-layer URL filter type behind `MLBF.*` (bloomery's own).
pub static MLBF_TYPE: RedisType = RedisType::new(
    "BLMRY-MLB",
    ENCODING_VERSION,
    methods::<MultiLayerBloomFilter>(),
);

/// The t-digest type behind `TDIGEST.*`.
pub static TDIGEST_TYPE: RedisType =
    RedisType::new("BLMRY-TDG", ENCODING_VERSION, methods::<TDigest>());

/// Every type of this framework, for the module's `INFO` section.
pub fn families() -> Vec<Family> {
    fn family<T: Structure>(ty: &'static RedisType) -> Family {
        Family {
            name: T::INFO,
            ty,
            measure: mem_usage::<T>,
        }
    }
    vec![
        family::<ScalableBloomFilter>(&BF_TYPE),
        family::<CuckooFilter>(&CF_TYPE),
        family::<CountMinSketch32>(&CMS_TYPE),
        family::<CountingBloomFilter>(&CBF_TYPE),
        family::<BlockedCountingBloomFilter>(&BCBF_TYPE),
        family::<IterativeBloomFilter>(&IBF_TYPE),
        family::<TopK>(&TOPK_TYPE),
        family::<MultiLayerBloomFilter>(&MLBF_TYPE),
        family::<TDigest>(&TDIGEST_TYPE),
    ]
}

const STATE_READY: u64 = 0;
const STATE_LOADING: u64 = 1;

/// Decode an encoding-version-1 value. Every field is checked; errors are messages for the log.
pub fn decode_v1<T: Structure>(state: u64, total: u64, bytes: &[u8]) -> Result<Slot<T>, String> {
    match state {
        STATE_READY => T::decode(bytes).map(Slot::Ready),
        STATE_LOADING => {
            let head = check_kind_header::<T>(bytes)?;
            if head.total != total || (bytes.len() as u64) > total || bytes.len() < head.header_len
            {
                return Err("inconsistent partial load".into());
            }
            Ok(Slot::Loading(Partial {
                bytes: bytes.to_vec(),
                total,
            }))
        }
        s => Err(format!("unknown state {s}")),
    }
}

fn load_v1<T: Structure>(rdb: *mut raw::RedisModuleIO) -> Result<Slot<T>, String> {
    let state = raw::load_unsigned(rdb).map_err(|e| e.to_string())?;
    let total = if state == STATE_LOADING {
        raw::load_unsigned(rdb).map_err(|e| e.to_string())?
    } else {
        0
    };
    let buf = raw::load_string_buffer(rdb).map_err(|e| e.to_string())?;
    decode_v1(state, total, buf.as_ref())
}

unsafe extern "C" fn rdb_load<T: Structure>(
    rdb: *mut raw::RedisModuleIO,
    encver: c_int,
) -> *mut c_void {
    let loaded = match encver {
        // versions 1 and 2 share the layout; what the bytes hold is told by their kind
        v if (1..=T::ENCODING).contains(&v) => load_v1::<T>(rdb),
        v => Err(format!("unknown encoding version {v}")),
    };
    match loaded {
        Ok(slot) => boxed(slot),
        Err(e) => {
            log_io(
                rdb,
                &format!("bloomery: refusing to load a {}: {e}", T::FILE_KIND.name()),
            );
            std::ptr::null_mut()
        }
    }
}

fn log_io(io: *mut raw::RedisModuleIO, msg: &str) {
    if let (Some(log), Ok(msg)) = (
        // SAFETY: reading a function pointer Redis filled in at module load.
        unsafe { raw::RedisModule_LogIOError },
        std::ffi::CString::new(msg),
    ) {
        // SAFETY: `io` is the live IO handle Redis passed to the callback; the format string
        // is a constant "%s" and `msg` a NUL-terminated string that outlives the call.
        unsafe { log(io, c"warning".as_ptr(), c"%s".as_ptr(), msg.as_ptr()) };
    }
}

/// # Safety
/// `value` must be a `Slot<T>` created by this module.
unsafe fn slot<'a, T>(value: *const c_void) -> &'a Slot<T> {
    // SAFETY: guaranteed by the caller: Redis hands back the pointer we registered for this type.
    unsafe { &*value.cast::<Slot<T>>() }
}

unsafe extern "C" fn rdb_save<T: Structure>(rdb: *mut raw::RedisModuleIO, value: *mut c_void) {
    // SAFETY: Redis passes a value of this type.
    let s = unsafe { slot::<T>(value) };
    match s {
        Slot::Ready(f) => {
            raw::save_unsigned(rdb, STATE_READY);
            raw::save_slice(rdb, &f.to_bytes());
        }
        Slot::Loading(p) => {
            raw::save_unsigned(rdb, STATE_LOADING);
            raw::save_unsigned(rdb, p.total);
            raw::save_slice(rdb, &p.bytes);
        }
    }
}

unsafe extern "C" fn aof_rewrite<T: Structure>(
    aof: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
    value: *mut c_void,
) {
    // SAFETY: Redis passes a value of this type.
    let s = unsafe { slot::<T>(value) };
    let bytes = s.bytes();
    let Some(emit) = (
        // SAFETY: reading a function pointer Redis filled in at module load.
        unsafe { raw::RedisModule_EmitAOF }
    ) else {
        return;
    };
    for (end, chunk) in chunk::chunks(&bytes) {
        // SAFETY: `aof` and `key` are live for the callback; the format "slb" takes a
        // RedisModuleString*, a long long and a (pointer, length) buffer, which is what follows.
        unsafe {
            emit(
                aof,
                T::LOADCHUNK.as_ptr(),
                c"slb".as_ptr(),
                key,
                end as std::os::raw::c_longlong,
                chunk.as_ptr(),
                chunk.len(),
            )
        };
    }
}

/// A value handed to Redis (loaded or copied), counted in `INFO`.
fn boxed<T: Structure>(slot: Slot<T>) -> *mut c_void {
    let bytes = slot.mem_usage() as u64;
    let value = Box::into_raw(Box::new(slot)).cast::<c_void>();
    crate::stats::counted(T::INFO, value, bytes, mem_usage::<T>);
    value
}

unsafe extern "C" fn free<T: Structure>(value: *mut c_void) {
    crate::stats::freed(value);
    if !value.is_null() {
        // SAFETY: the pointer came from Box::into_raw of a Slot<T> and Redis frees it once.
        drop(unsafe { Box::from_raw(value.cast::<Slot<T>>()) });
    }
}

pub(crate) unsafe extern "C" fn mem_usage<T: Structure>(value: *const c_void) -> usize {
    // SAFETY: Redis passes a value of this type.
    unsafe { slot::<T>(value) }.mem_usage()
}

unsafe extern "C" fn digest<T: Structure>(md: *mut raw::RedisModuleDigest, value: *mut c_void) {
    // SAFETY: Redis passes a value of this type.
    let bytes = unsafe { slot::<T>(value) }.bytes();
    // SAFETY: `md` is the digest Redis passed to this callback.
    unsafe { digest_bytes(md, &bytes) };
}

/// Feed a value's bytes to the `DEBUG DIGEST` being computed, as one sequence.
///
/// # Safety
/// `md` must be the digest Redis passed to the type's digest callback, still in that call.
pub(crate) unsafe fn digest_bytes(md: *mut raw::RedisModuleDigest, bytes: &[u8]) {
    // SAFETY: reading function pointers Redis filled in at module load; `md` is live for the
    // callback (the caller's contract) and `bytes` outlives the calls.
    unsafe {
        if let (Some(add), Some(end)) = (
            raw::RedisModule_DigestAddStringBuffer,
            raw::RedisModule_DigestEndSequence,
        ) {
            add(md, bytes.as_ptr().cast_mut().cast(), bytes.len());
            end(md);
        }
    }
}

unsafe extern "C" fn copy<T: Structure>(
    _from: *mut raw::RedisModuleString,
    _to: *mut raw::RedisModuleString,
    value: *const c_void,
) -> *mut c_void {
    // SAFETY: Redis passes a value of this type.
    let s = unsafe { slot::<T>(value) };
    boxed(s.clone())
}
