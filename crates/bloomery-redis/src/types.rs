//! The Redis data types: one per structure, each holding a [`Slot`] — a ready structure, or
//! the bytes received so far by a LOADCHUNK sequence.
//!
//! ## RDB encoding
//! The type's encoding version (passed to `rdb_load` as `encver`) selects the layout.
//! Version 2 (the current one; 3 for `BLMRY-CMS`):
//!
//! ```text
//! unsigned  state   0 = ready, 1 = LOADCHUNK in progress
//! ready:    unsigned total length of the library's file format (Persist::to_bytes)
//!           strings those bytes in order: the header, then pieces of at most 4 MiB
//!                   (SCANDUMP's chunks); fully validated on load
//! loading:  unsigned total length announced by the header chunk
//!           string  the bytes received so far (header validated again on load)
//! ```
//!
//! Version 1 had the same layout but for the ready bytes, which were one string: saving a
//! value (BGSAVE, DUMP, a replica's full sync) then encoded a second copy of the whole value
//! in memory. In pieces, a save holds one piece at a time, whatever the value's size.
//!
//! `BLMRY-CMS` versions 1 and 2 both have version 1's layout; version 2's ready bytes are the
//! count-min sketch with 32-bit counters (kind `cms32`), where version 1 held the 64-bit form
//! (kind `cms`): both load, the 64-bit form converted ([`Structure::OLD_KINDS`]). Its version
//! 3 is version 2 in pieces.
//!
//! Loading dispatches on `encver` in `rdb_load`; a future version gets its own arm, and
//! older layouts stay loadable (the RedisJSON `backward.rs` pattern; the DUMP payloads of
//! `tests/fixtures` were written by earlier versions). Whatever the bytes, a malformed
//! payload makes `rdb_load` return NULL (RESTORE answers an error, a bad RDB file stops the
//! load) — it never panics, and memory grows only with the bytes actually read.

use std::ffi::CStr;
use std::os::raw::c_int;

use bloomery::{
    BlockedCountingBloomFilter, CountMinSketch, CountMinSketch32, CountingBloomFilter,
    CuckooFilter, Filter, IterativeBloomFilter, Kind, MultiLayerBloomFilter, Persist,
    ScalableBloomFilter, TDigest, TopK,
};
use redis_module::native_types::RedisType;
use redis_module::raw;

use crate::chunk;
use crate::config;
use crate::limits;
use crate::memory::{charged, words_bytes};
use crate::stats::Family;
use crate::value::{family, methods, Mover, Value};

/// Encoding version written by this build (2: the ready bytes in pieces; 1, one string,
/// still loads).
pub const ENCODING_VERSION: i32 = 2;

/// Encoding version of `BLMRY-CMS` (3: in pieces; 2: 32-bit counters in one string; 1: the
/// 64-bit form in one string; both still load).
pub const CMS_ENCODING_VERSION: i32 = 3;

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
    /// The first encoding version that saves the ready bytes in pieces (the ones before it
    /// save them as one string).
    const PIECES_SINCE: i32 = 2;
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
    /// Move the structure's arrays with `mv` (active defragmentation); by default they stay.
    ///
    /// # Safety
    /// As [`Value::defrag`].
    unsafe fn defrag(&mut self, mv: &mut Mover<'_>) {
        let _ = mv;
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
    kind_header::<T>(b, chunk::check_header)
}

/// `check(b, kind)` for `T`'s kind, or else for one of its old kinds.
fn kind_header<T: Structure>(
    b: &[u8],
    check: fn(&[u8], Kind) -> Result<chunk::Head, String>,
) -> Result<chunk::Head, String> {
    check(b, T::FILE_KIND).or_else(|e| T::OLD_KINDS.iter().find_map(|&k| check(b, k).ok()).ok_or(e))
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
    /// The list of sub-filters, then each one's bit array.
    unsafe fn defrag(&mut self, mv: &mut Mover<'_>) {
        // SAFETY: the caller's contract is the library's (memory of the global allocator,
        // of the allocation's size and alignment, the old allocation freed).
        unsafe { self.relocate_arrays(mv) }
    }
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
    /// The list of tables, then each one's slots.
    unsafe fn defrag(&mut self, mv: &mut Mover<'_>) {
        // SAFETY: the caller's contract is the library's (memory of the global allocator,
        // of the allocation's size and alignment, the old allocation freed).
        unsafe { self.relocate_arrays(mv) }
    }
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
    const PIECES_SINCE: i32 = 3;
    /// The counters.
    unsafe fn defrag(&mut self, mv: &mut Mover<'_>) {
        // SAFETY: the caller's contract is the library's (memory of the global allocator,
        // of the allocation's size and alignment, the old allocation freed).
        unsafe { self.relocate_arrays(mv) }
    }
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
    /// The counters.
    unsafe fn defrag(&mut self, mv: &mut Mover<'_>) {
        // SAFETY: the caller's contract is the library's (memory of the global allocator,
        // of the allocation's size and alignment, the old allocation freed).
        unsafe { self.relocate_arrays(mv) }
    }
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
    /// The counter blocks.
    unsafe fn defrag(&mut self, mv: &mut Mover<'_>) {
        // SAFETY: the caller's contract is the library's (memory of the global allocator,
        // of the allocation's size and alignment, the old allocation freed).
        unsafe { self.relocate_arrays(mv) }
    }
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
    /// The bit array.
    unsafe fn defrag(&mut self, mv: &mut Mover<'_>) {
        // SAFETY: the caller's contract is the library's (memory of the global allocator,
        // of the allocation's size and alignment, the old allocation freed).
        unsafe { self.relocate_arrays(mv) }
    }
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
    /// `TOPK.RESERVE` makes RedisBloom-style lists (kind `topk-slots`); values stored before
    /// (kind `topk`, the library's own heap) load and keep their rule.
    const FILE_KIND: Kind = Kind::TopKSlots;
    const OLD_KINDS: &'static [Kind] = &[Kind::TopK];
    const INFO: &'static str = "topk";
    const LOADCHUNK: &'static CStr = c"TOPK.LOADCHUNK";
    /// The buckets and every allocation of the top-k list (entries, items, saved form), each
    /// as Redis's allocator counts it.
    fn held(&self) -> u64 {
        charged(words_bytes(self.bucket_bytes() / 8))
            + self.list_allocations().map(charged).sum::<u64>()
    }
    /// The buckets, the list's entries and every item.
    unsafe fn defrag(&mut self, mv: &mut Mover<'_>) {
        // SAFETY: the caller's contract is the library's (memory of the global allocator,
        // of the allocation's size and alignment, the old allocation freed).
        unsafe { self.relocate_arrays(mv) }
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
    /// The list of layers, then each layer's bit array.
    unsafe fn defrag(&mut self, mv: &mut Mover<'_>) {
        // SAFETY: the caller's contract is the library's (memory of the global allocator,
        // of the allocation's size and alignment, the old allocation freed).
        unsafe { self.relocate_arrays(mv) }
    }
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
    /// The centroid buffer, then the merged centroids a query keeps.
    unsafe fn defrag(&mut self, mv: &mut Mover<'_>) {
        // SAFETY: the caller's contract is the library's (memory of the global allocator,
        // of the allocation's size and alignment, the old allocation freed).
        unsafe { self.relocate_arrays(mv) }
    }
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
}

/// The scalable Bloom filter type behind `BF.*` (type names are exactly 9 characters).
pub static BF_TYPE: RedisType = RedisType::new(
    "BLMRY-SBF",
    ENCODING_VERSION,
    methods::<Slot<ScalableBloomFilter>>(),
);

/// The cuckoo filter type behind `CF.*`.
pub static CF_TYPE: RedisType = RedisType::new(
    "BLMRY-CUF",
    ENCODING_VERSION,
    methods::<Slot<CuckooFilter>>(),
);

/// The count-min sketch type behind `CMS.*`.
pub static CMS_TYPE: RedisType = RedisType::new(
    "BLMRY-CMS",
    CMS_ENCODING_VERSION,
    methods::<Slot<CountMinSketch32>>(),
);

/// The counting Bloom filter type behind `CBF.*` (bloomery's own).
pub static CBF_TYPE: RedisType = RedisType::new(
    "BLMRY-CBF",
    ENCODING_VERSION,
    methods::<Slot<CountingBloomFilter>>(),
);

/// The blocked counting Bloom filter type behind `BCBF.*` (bloomery's own).
pub static BCBF_TYPE: RedisType = RedisType::new(
    "BLMRY-BCB",
    ENCODING_VERSION,
    methods::<Slot<BlockedCountingBloomFilter>>(),
);

/// The Iterative Bloom Filter type behind `IBF.*` (bloomery's own).
pub static IBF_TYPE: RedisType = RedisType::new(
    "BLMRY-IBF",
    ENCODING_VERSION,
    methods::<Slot<IterativeBloomFilter>>(),
);

/// The HeavyKeeper top-k type behind `TOPK.*`.
pub static TOPK_TYPE: RedisType =
    RedisType::new("BLMRY-TPK", ENCODING_VERSION, methods::<Slot<TopK>>());

/// The multi-layer URL filter type behind `MLBF.*` (bloomery's own).
pub static MLBF_TYPE: RedisType = RedisType::new(
    "BLMRY-MLB",
    ENCODING_VERSION,
    methods::<Slot<MultiLayerBloomFilter>>(),
);

/// The t-digest type behind `TDIGEST.*`.
pub static TDIGEST_TYPE: RedisType =
    RedisType::new("BLMRY-TDG", ENCODING_VERSION, methods::<Slot<TDigest>>());

/// Every type of this framework, for the module's `INFO` section.
pub fn families() -> Vec<Family> {
    vec![
        family::<Slot<ScalableBloomFilter>>(&BF_TYPE),
        family::<Slot<CuckooFilter>>(&CF_TYPE),
        family::<Slot<CountMinSketch32>>(&CMS_TYPE),
        family::<Slot<CountingBloomFilter>>(&CBF_TYPE),
        family::<Slot<BlockedCountingBloomFilter>>(&BCBF_TYPE),
        family::<Slot<IterativeBloomFilter>>(&IBF_TYPE),
        family::<Slot<TopK>>(&TOPK_TYPE),
        family::<Slot<MultiLayerBloomFilter>>(&MLBF_TYPE),
        family::<Slot<TDigest>>(&TDIGEST_TYPE),
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

/// The ready bytes of a value saved in pieces (encoding version 2) of an old kind of its type
/// ([`read_ready`] reads one of the type's own kind straight into the structure), put
/// together as they are read: the first piece must be a header of the type's kind announcing
/// `total` bytes, and the pieces must fill exactly `total`. Nothing is reserved beyond the
/// bytes read, except the whole length at once when it is within `MAX-BYTES` (a forged
/// length allocates nothing).
#[derive(Debug)]
pub struct Pieces {
    bytes: Vec<u8>,
    total: u64,
}

impl Pieces {
    /// Expect `total` bytes.
    pub fn new(total: u64) -> Self {
        Self {
            bytes: Vec::new(),
            total,
        }
    }

    /// True once `total` bytes are in.
    pub fn done(&self) -> bool {
        self.bytes.len() as u64 >= self.total
    }

    /// Append the next piece, checking the first as `T`'s header.
    pub fn push<T: Structure>(&mut self, piece: &[u8]) -> Result<(), String> {
        if piece.is_empty() {
            return Err("empty piece".into());
        }
        if self.bytes.is_empty() {
            let head = kind_header::<T>(piece, chunk::read_header)?;
            if head.total != self.total || head.header_len != piece.len() {
                return Err("header and pieces disagree on the lengths".into());
            }
            let limit = config::max_bytes().saturating_add(64 * 64 + piece.len() as u64);
            if self.total <= limit {
                let total = usize::try_from(self.total).unwrap_or(usize::MAX);
                (self.bytes.try_reserve_exact(total))
                    .map_err(|_| "cannot allocate the announced length")?;
            }
        } else if self.bytes.len() as u64 + piece.len() as u64 > self.total {
            return Err("pieces longer than the announced length".into());
        }
        (self.bytes.try_reserve(piece.len())).map_err(|_| "cannot allocate the next piece")?;
        self.bytes.extend_from_slice(piece);
        Ok(())
    }

    /// Decode the bytes once all are in.
    pub fn finish<T: Structure>(self) -> Result<T, String> {
        if !self.done() {
            return Err("pieces shorter than the announced length".into());
        }
        T::decode(&self.bytes)
    }
}

/// The rest of a value saved in pieces, after its header piece, as one [`Read`]: each piece
/// as `next` gives it, `left` bytes in all; a piece that is empty or goes past `left` is an
/// error (the checks of [`Pieces::push`]).
///
/// [`Read`]: std::io::Read
pub struct PieceReader<P, F> {
    next: F,
    piece: Option<P>,
    at: usize,
    left: u64,
}

impl<P: AsRef<[u8]>, F: FnMut() -> Result<P, String>> PieceReader<P, F> {
    /// The pieces `next` gives, `left` bytes in all.
    pub fn new(left: u64, next: F) -> Self {
        Self {
            next,
            piece: None,
            at: 0,
            left,
        }
    }
}

impl<P: AsRef<[u8]>, F: FnMut() -> Result<P, String>> std::io::Read for PieceReader<P, F> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let have = self.piece.as_ref().map_or(0, |p| p.as_ref().len());
        if self.at == have {
            if self.left == 0 || buf.is_empty() {
                return Ok(0);
            }
            let piece = (self.next)().map_err(std::io::Error::other)?;
            let n = piece.as_ref().len() as u64;
            if n == 0 {
                return Err(std::io::Error::other("empty piece"));
            }
            if n > self.left {
                return Err(std::io::Error::other(
                    "pieces longer than the announced length",
                ));
            }
            self.left -= n;
            (self.piece, self.at) = (Some(piece), 0);
        }
        let piece = self.piece.as_ref().map_or(&[][..], |p| p.as_ref());
        let n = buf.len().min(piece.len() - self.at);
        buf[..n].copy_from_slice(&piece[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// A value of `total` bytes saved in pieces, read front to back ([`Persist::read_from`]):
/// the first piece, `head`, must be exactly the header `h` read from it, announcing `total`;
/// the rest come from `next` ([`PieceReader`]). Loading holds one piece beside the value,
/// not a second copy of it.
pub fn read_in_pieces<T: Persist, P: AsRef<[u8]>>(
    h: chunk::Head,
    head: &[u8],
    total: u64,
    next: impl FnMut() -> Result<P, String>,
) -> Result<T, String> {
    if h.total != total || h.header_len != head.len() {
        return Err("header and pieces disagree on the lengths".to_string());
    }
    let rest = PieceReader::new(total - head.len() as u64, next);
    T::read_from(std::io::Read::chain(head, rest)).map_err(|e| e.to_string())
}

/// A ready value saved in pieces (`total` bytes), each `next` one: the first must be a header
/// of `T`'s kind (or an old kind) announcing `total`. A value of `T`'s own kind is read front
/// to back into the structure ([`Persist::read_from`]), so loading it holds one piece beside
/// the structure, not a second copy of it; an old kind is put together first and converted.
pub fn read_ready<T: Structure, P: AsRef<[u8]>>(
    total: u64,
    mut next: impl FnMut() -> Result<P, String>,
) -> Result<T, String> {
    let first = next()?;
    let head = first.as_ref();
    let h = kind_header::<T>(head, chunk::read_header)?;
    if u16::from_le_bytes([head[10], head[11]]) != T::FILE_KIND.id() {
        // (`push` checks the header's lengths as `read_in_pieces` does)
        let mut pieces = Pieces::new(total);
        pieces.push::<T>(head)?;
        while !pieces.done() {
            pieces.push::<T>(next()?.as_ref())?;
        }
        return pieces.finish();
    }
    let s: T = read_in_pieces(h, head, total, next)?;
    s.validate()?;
    Ok(s)
}

fn load_pieces<T: Structure>(rdb: *mut raw::RedisModuleIO) -> Result<Slot<T>, String> {
    let state = raw::load_unsigned(rdb).map_err(|e| e.to_string())?;
    let total = raw::load_unsigned(rdb).map_err(|e| e.to_string())?;
    match state {
        STATE_READY => read_ready::<T, _>(total, || {
            raw::load_string_buffer(rdb).map_err(|e| e.to_string())
        })
        .map(Slot::Ready),
        STATE_LOADING => {
            let buf = raw::load_string_buffer(rdb).map_err(|e| e.to_string())?;
            decode_v1(state, total, buf.as_ref())
        }
        s => Err(format!("unknown state {s}")),
    }
}

impl<T: Structure> Value for Slot<T> {
    fn name() -> &'static str {
        T::FILE_KIND.name()
    }
    const INFO: &'static str = T::INFO;
    const LOADCHUNK: &'static CStr = T::LOADCHUNK;
    fn rdb_load(rdb: *mut raw::RedisModuleIO, encver: c_int) -> Result<Self, String> {
        match encver {
            // the versions before pieces share one layout; what the bytes hold is told by
            // their kind
            v if (1..T::PIECES_SINCE).contains(&v) => load_v1::<T>(rdb),
            v if (T::PIECES_SINCE..=T::ENCODING).contains(&v) => load_pieces::<T>(rdb),
            v => Err(format!("unknown encoding version {v}")),
        }
    }
    fn rdb_save(&self, rdb: *mut raw::RedisModuleIO) {
        match self {
            Slot::Ready(f) => {
                raw::save_unsigned(rdb, STATE_READY);
                raw::save_unsigned(rdb, f.encoded_len());
                chunk::each_chunk_of(f, |_, piece| raw::save_slice(rdb, piece));
            }
            Slot::Loading(p) => {
                raw::save_unsigned(rdb, STATE_LOADING);
                raw::save_unsigned(rdb, p.total);
                raw::save_slice(rdb, &p.bytes);
            }
        }
    }
    /// The file-format bytes in SCANDUMP's chunks, each encoded as it is emitted (a partial
    /// load: the bytes received).
    fn load_sequence(&self, emit: &mut dyn FnMut(i64, &[u8])) {
        match self {
            Slot::Ready(f) => chunk::each_chunk_of(f, |next, c| emit(next as i64, c)),
            Slot::Loading(p) => {
                for (end, c) in chunk::chunks(&p.bytes) {
                    emit(end as i64, c);
                }
            }
        }
    }
    /// The file-format bytes in SCANDUMP's chunks (a partial load: the bytes received).
    fn digest_pieces(&self, add: &mut dyn FnMut(&[u8])) {
        match self {
            Slot::Ready(f) => chunk::each_chunk_of(f, |_, piece| add(piece)),
            Slot::Loading(p) => add(&p.bytes),
        }
    }
    fn mem_usage(&self) -> usize {
        Slot::mem_usage(self)
    }
    unsafe fn defrag(&mut self, mv: &mut Mover<'_>) {
        match self {
            // SAFETY: the caller's contract, passed on.
            Slot::Ready(f) => unsafe { f.defrag(mv) },
            // SAFETY: as above; the bytes are a Vec<u8> of the global allocator.
            Slot::Loading(p) => unsafe { relocate_bytes(&mut p.bytes, mv) },
        }
    }
}

/// Move a byte vector's buffer with `mv`.
///
/// # Safety
/// As [`Value::defrag`].
pub(crate) unsafe fn relocate_bytes(v: &mut Vec<u8>, mv: &mut Mover<'_>) {
    if v.capacity() == 0 {
        return;
    }
    let Some(old) = std::ptr::NonNull::new(v.as_mut_ptr()) else {
        return;
    };
    if let Some(new) = mv(old) {
        let (len, cap) = (v.len(), v.capacity());
        // SAFETY: `new` holds the buffer's `cap` bytes (its first `len` initialised) in memory
        // of the global allocator (the caller's contract); the old buffer is freed, so the
        // vector is rebuilt over the new one without dropping the old.
        unsafe { std::ptr::write(v, Vec::from_raw_parts(new.as_ptr(), len, cap)) };
    }
}

#[cfg(test)]
pub(crate) mod pieces_tests {
    use super::*;

    /// `f`'s file-format bytes in the pieces `rdb_save` writes.
    pub(crate) fn pieces_of<T: Persist>(f: &T) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        chunk::each_chunk_of(f, |_, piece| out.push(piece.to_vec()));
        out
    }

    /// The value in `pieces` as the RDB loader reads it ([`read_ready`]).
    fn load<T: Structure>(total: u64, pieces: &[Vec<u8>]) -> Result<T, String> {
        let mut each = pieces.iter();
        read_ready(total, || {
            (each.next()).ok_or_else(|| "pieces shorter than the announced length".to_string())
        })
    }

    #[test]
    fn a_value_of_several_pieces_loads_as_saved() {
        let _limit = crate::config::default_limit_for_test();
        // 9 MB of bits: the header, 4 MiB pieces and the rest
        let mut f = ScalableBloomFilter::try_new(5_000_000, 0.001).unwrap();
        for i in 0..1000u32 {
            f.insert(&i);
        }
        let pieces = pieces_of(&f);
        let last = pieces.len() - 1;
        assert!(last >= 3, "{last}");
        assert!(pieces[1..last].iter().all(|p| p.len() == chunk::CHUNK));
        assert_eq!(pieces.concat(), f.to_bytes());
        let back: ScalableBloomFilter = load(f.encoded_len(), &pieces).unwrap();
        assert_eq!(back, f);
    }

    #[test]
    fn pieces_that_disagree_with_their_header_are_refused() {
        let mut f = CuckooFilter::try_new(1000).unwrap();
        f.insert("a").unwrap();
        let total = f.encoded_len();
        let pieces = pieces_of(&f);
        assert_eq!(pieces.len(), 2);
        let err = |total: u64, pieces: &[Vec<u8>]| load::<CuckooFilter>(total, pieces).unwrap_err();
        // another length than the header's
        assert!(err(total + 1, &pieces).contains("lengths"));
        assert!(err(total - 1, &pieces).contains("lengths"));
        // a type's bytes under another type
        let e = load::<ScalableBloomFilter>(total, &pieces).unwrap_err();
        assert!(e.contains("not a"), "{e}");
        // the header split, or a piece missing, empty or too long
        let (head, rest) = (&pieces[0], &pieces[1]);
        let split = [head[..8].to_vec(), head[8..].to_vec(), rest.clone()];
        assert!(err(total, &split).contains("header"));
        assert!(err(total, &pieces[..1]).contains("shorter"));
        assert!(err(total, &[head.clone(), Vec::new()]).contains("empty"));
        let mut long = rest.clone();
        long.push(0);
        assert!(err(total, &[head.clone(), long]).contains("longer"));
        // a flipped bit in the last piece fails the file's checksum
        let mut bad = rest.clone();
        bad[10] ^= 1;
        assert!(load::<CuckooFilter>(total, &[head.clone(), bad]).is_err());
        // and the true pieces load
        assert_eq!(load::<CuckooFilter>(total, &pieces).unwrap(), f);
    }

    #[test]
    fn an_old_kind_is_put_together_and_converted() {
        // the 64-bit sketch earlier versions stored under the 32-bit type
        let mut wide = CountMinSketch::try_with_shape(1000, 5).unwrap();
        wide.insert_many("a", 7);
        let (total, pieces) = (wide.encoded_len(), pieces_of(&wide));
        let narrow: CountMinSketch32 = load(total, &pieces).unwrap();
        assert_eq!(bloomery::Count::count(&narrow, "a"), 7);
        assert_eq!(narrow, CountMinSketch32::from_wide(&wide).unwrap());
    }

    #[test]
    fn a_forged_length_reserves_nothing_beyond_max_bytes() {
        let f = CuckooFilter::try_new(1000).unwrap();
        let mut head = pieces_of(&f).swap_remove(0);
        // the payload length the header announces (bytes 16..24), forged to 2^50 bytes
        head[16..24].copy_from_slice(&(1u64 << 50).to_le_bytes());
        let h = bloomery::file::peek_header_bytes(&head).unwrap();
        assert!(h.file_len > 1 << 50);
        let mut p = Pieces::new(h.file_len);
        p.push::<CuckooFilter>(&head).unwrap();
        assert!(p.bytes.capacity() < 1 << 20, "{}", p.bytes.capacity());
        assert!(p.push::<CuckooFilter>(&[0; 100]).is_ok());
        assert!(p.finish::<CuckooFilter>().unwrap_err().contains("shorter"));
    }
}
