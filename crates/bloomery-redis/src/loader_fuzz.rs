//! Structured fuzzing of every type's loader: valid values of each type, with fields of their
//! header and parameters forged to interesting values (and payload bytes flipped), resealed
//! with a valid checksum so that only validation stands in the way, go through
//! [`Structure::decode`] — what RDB loads, `RESTORE` and the last `LOADCHUNK` call — and, cut
//! into pieces, through the RDB loader of encoding version 2, which reads them front to back
//! ([`crate::types::read_ready`]): both must load the same value or both refuse. Whatever
//! loads is then used the way the type's commands use it. Required, for every case: no panic;
//! no single-item operation (or batch of a few hundred reads) using more CPU than the budget (100
//! ms in release builds; debug builds run about ten times slower and sizing code far more, so they
//! get 2 s); no value holding more than `MAX-BYTES`, and no operation allocating more than the
//! value, its encoding, a few copies of the input and a work area bounded by the create limits
//! (the test binary counts every byte through its global allocator, with the library's arrays
//! on it as in the module); and every parameter of a loaded value within the limits of its
//! create command.
//!
//! `cargo test -p bloomery-redis` runs a few hundred cases per type (part of CI);
//! `BLOOMERY_FUZZ_CASES=200000 cargo test --release -p bloomery-redis --lib loader_fuzz` runs
//! as many as asked for (`BLOOMERY_FUZZ_SEED` picks another sequence).
//!
//! A unit test module (not an integration test) because the test binary needs its own
//! counting global allocator, and the crate's module build installs Redis's. Bytes are
//! counted per thread, so the cases of the types run in parallel without seeing each other.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;
use std::time::{Duration, Instant};

use bloomery::redisbloom::{RedisBloomCuckooFilter, RedisBloomFilter};
use bloomery::{
    BlockedCountingBloomFilter, Count, CountMinSketch, CountMinSketch32, CountingBloomFilter,
    CuckooFilter, Filter, IterativeBloomFilter, MultiLayerBloomFilter, Persist, Remove,
    ScalableBloomFilter, TDigest, TopK,
};

use crate::limits;
use crate::moved::Moved;
use crate::types::Structure;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The module's `MAX-BYTES` in this test: small, so that growth reaches it quickly.
const MAX_BYTES: u64 = 256 << 10;

struct Counting;

thread_local! {
    /// Bytes this thread allocated minus bytes it freed, and the most since the last reset.
    /// Signed: a thread may free what another allocated (the library's process-wide sizing
    /// models move between threads), which takes its count below where it started.
    static LIVE: Cell<i64> = const { Cell::new(0) };
    static PEAK: Cell<i64> = const { Cell::new(0) };
}

fn live() -> i64 {
    LIVE.with(Cell::get)
}

fn reset_peak() -> i64 {
    let now = live();
    PEAK.with(|p| p.set(now));
    now
}

fn peak() -> i64 {
    PEAK.with(Cell::get)
}

// SAFETY: forwards every call to the system allocator unchanged; only counts bytes (in
// const-initialised thread-locals, which never allocate).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same layout contract as the caller's.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            let size = layout.size() as i64;
            let _ = LIVE.try_with(|l| {
                let now = l.get().wrapping_add(size);
                l.set(now);
                let _ = PEAK.try_with(|p| p.set(p.get().max(now)));
            });
        }
        ptr
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let size = layout.size() as i64;
        let _ = LIVE.try_with(|l| l.set(l.get().wrapping_sub(size)));
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The module's limit set to [`MAX_BYTES`] while held; the default again when dropped.
struct Limit(#[allow(dead_code)] std::sync::RwLockWriteGuard<'static, ()>);

impl Drop for Limit {
    fn drop(&mut self) {
        crate::config::apply(&[b"MAX-BYTES".to_vec(), b"auto".to_vec()]).unwrap();
    }
}

fn setup() -> Limit {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| bloomery::tuning::set_global_allocator_only(true));
    let guard = crate::config::TEST_LIMIT
        .write()
        .unwrap_or_else(|e| e.into_inner());
    crate::config::apply(&[b"MAX-BYTES".to_vec(), MAX_BYTES.to_string().into()]).unwrap();
    Limit(guard)
}

fn budget() -> Duration {
    if cfg!(debug_assertions) {
        Duration::from_secs(2)
    } else {
        Duration::from_millis(100)
    }
}

fn cases() -> usize {
    std::env::var("BLOOMERY_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(150)
}

fn seed() -> u64 {
    std::env::var("BLOOMERY_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5EED_2026)
}

fn reseal(b: &mut [u8]) {
    if b.len() >= 8 {
        let n = b.len() - 8;
        let sum = xxhash_rust::xxh3::xxh3_64(&b[..n]);
        b[n..].copy_from_slice(&sum.to_le_bytes());
    }
}

const INTS: [u64; 24] = [
    0,
    1,
    2,
    3,
    7,
    8,
    63,
    64,
    255,
    256,
    32_768,
    32_769,
    65_535,
    65_536,
    4_000_000,
    6_000_000,
    1 << 24,
    1 << 31,
    (1 << 31) + 20,
    u32::MAX as u64,
    1 << 32,
    1 << 53,
    1 << 63,
    u64::MAX,
];

const FLOATS: [f64; 12] = [
    0.0,
    -0.0,
    1.0,
    0.5,
    0.999_999,
    1e-15,
    1e-300,
    f64::MIN_POSITIVE,
    1e300,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::NAN,
];

/// Forge one to four fields of `valid`: one of the type's known parameter fields (`fields`:
/// offset and width in the file), or any field of the header, set to an interesting integer
/// or float, or payload bytes changed; then reseal.
fn forge(rng: &mut StdRng, valid: &[u8], fields: &[(usize, usize)]) -> Vec<u8> {
    let mut b = valid.to_vec();
    let header = u32::from_le_bytes(b[12..16].try_into().unwrap()) as usize;
    for _ in 0..rng.gen_range(1..=4) {
        if !fields.is_empty() && rng.gen_bool(0.7) {
            let (at, width) = fields[rng.gen_range(0..fields.len())];
            let v = if width == 8 && rng.gen_bool(0.3) {
                FLOATS[rng.gen_range(0..FLOATS.len())].to_bits()
            } else {
                INTS[rng.gen_range(0..INTS.len())]
            };
            b[at..at + width].copy_from_slice(&v.to_le_bytes()[..width]);
            continue;
        }
        match rng.gen_range(0..10) {
            0..=5 => {
                // a header field (after the magic), at any byte offset
                let at = rng.gen_range(8..header);
                let width = [1usize, 2, 4, 8][rng.gen_range(0..4)];
                let v = if width == 8 && rng.gen_bool(0.3) {
                    FLOATS[rng.gen_range(0..FLOATS.len())].to_bits()
                } else {
                    INTS[rng.gen_range(0..INTS.len())]
                };
                let end = (at + width).min(header);
                b[at..end].copy_from_slice(&v.to_le_bytes()[..end - at]);
            }
            6..=8 => {
                // payload bytes
                if b.len() > header + 8 {
                    let at = rng.gen_range(header..b.len() - 8);
                    b[at] = if rng.gen_bool(0.5) { rng.gen() } else { 0xff };
                }
            }
            _ => {
                // a field of the parameters region, at a 4-byte-aligned offset
                let at = 72 + 4 * rng.gen_range(0..((header - 72) / 4).max(1));
                let v = INTS[rng.gen_range(0..INTS.len())].to_le_bytes();
                let end = (at + 4).min(header);
                b[at..end].copy_from_slice(&v[..end - at]);
            }
        }
    }
    reseal(&mut b);
    b
}

/// CPU time this thread has used, so that the budget holds however many other processes share
/// the machine's cores.
fn thread_cpu() -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_THREAD_CPUTIME_ID needs no other
    // argument and only writes `ts`.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

/// Time one operation against the budget: its CPU time where the system reports it, and its
/// wall-clock time within 20 budgets (a shared machine's scheduling).
fn timed<R>(what: &str, f: impl FnOnce() -> R) -> R {
    let (t, cpu) = (Instant::now(), thread_cpu());
    let r = f();
    let took = t.elapsed();
    match (cpu, thread_cpu()) {
        (Some(a), Some(b)) => {
            let used = b.saturating_sub(a);
            assert!(used <= budget(), "{what} used {used:?} of CPU");
            assert!(took <= budget() * 20, "{what} took {took:?}");
        }
        _ => assert!(took <= budget(), "{what} took {took:?}"),
    }
    r
}

pub(crate) fn keys(n: usize, salt: u64) -> Vec<Vec<u8>> {
    (0..n as u64)
        .map(|i| format!("k{salt}-{i}").into_bytes())
        .collect()
}

/// A type, its seeds and how its commands use it.
pub(crate) trait Case: Persist + Clone + 'static {
    const NAME: &'static str;
    /// The parameter fields of its file (offset, width): the header's items (48), capacity
    /// (56) and target rate (64), then the kind's own parameters from byte 72. Fields that
    /// bound memory or work are listed three times, so they are forged more often.
    const FIELDS: &'static [(usize, usize)];
    fn seeds() -> Vec<Self>;
    /// What the type's commands do with a loaded value (each call under the budget).
    fn exercise(&mut self);
    /// Every parameter that bounds work or memory is within its create command's limits.
    fn within_create_limits(&self);
    /// What the module's load paths (RDB, `RESTORE`, the last `LOADCHUNK`) do with the bytes.
    fn load_value(bytes: &[u8]) -> Result<Self, String>;
    /// What the RDB loader of encoding version 2 does with the bytes in pieces ([`pieces`]),
    /// read front to back.
    fn load_pieces(bytes: &[u8]) -> Result<Self, String>;
    /// Its `MEMORY USAGE`.
    fn usage(&self) -> u64;
}

/// [`Case::load_value`] and [`Case::usage`] of the module's own types.
macro_rules! structure_io {
    () => {
        fn load_value(bytes: &[u8]) -> Result<Self, String> {
            <Self as Structure>::decode(bytes)
        }
        fn load_pieces(bytes: &[u8]) -> Result<Self, String> {
            let mut each = pieces(bytes).into_iter();
            crate::types::read_ready(bytes.len() as u64, || {
                each.next().ok_or_else(|| "no more pieces".to_string())
            })
        }
        fn usage(&self) -> u64 {
            crate::types::value_size(self)
        }
    };
}

/// [`Case::load_value`] and [`Case::usage`] of the values moved from RedisBloom.
macro_rules! moved_io {
    () => {
        fn load_value(bytes: &[u8]) -> Result<Self, String> {
            crate::moved::decode::<Self>(bytes)
        }
        fn load_pieces(bytes: &[u8]) -> Result<Self, String> {
            let mut each = pieces(bytes).into_iter();
            crate::moved::read_pieces(bytes.len() as u64, || {
                each.next().ok_or_else(|| "no more pieces".to_string())
            })
        }
        fn usage(&self) -> u64 {
            std::mem::size_of::<Self>() as u64 + <Self as Moved>::held(self)
        }
    };
}

impl Case for ScalableBloomFilter {
    const NAME: &'static str = "bf";
    structure_io!();
    const FIELDS: &'static [(usize, usize)] = &[
        (48, 8),
        (56, 8),
        (64, 8),
        (72, 8),
        (80, 8),
        (88, 4),
        (92, 8),
        (100, 1),
        (101, 8),
        (109, 4),
    ];
    fn seeds() -> Vec<Self> {
        let mut a = ScalableBloomFilter::builder()
            .capacity(50)
            .fpr(0.01)
            .try_build()
            .unwrap();
        let mut b = ScalableBloomFilter::builder()
            .capacity(500)
            .fpr(0.001)
            .growth(4)
            .max_bytes(MAX_BYTES)
            .try_build()
            .unwrap();
        for k in keys(300, 1) {
            a.insert(k.as_slice());
            b.insert(k.as_slice());
        }
        let c = ScalableBloomFilter::builder()
            .capacity(100)
            .fpr(0.01)
            .scaling(false)
            .try_build()
            .unwrap();
        // made where memory was plentiful: its file says it may grow without bound
        let mut d = ScalableBloomFilter::builder()
            .capacity(500)
            .fpr(0.01)
            .max_bytes(u64::MAX)
            .try_build()
            .unwrap();
        for k in keys(300, 1) {
            d.insert(k.as_slice());
        }
        vec![a, b, c, d]
    }
    fn exercise(&mut self) {
        // BF.ADD of 1000 items, each timed (a growth sizes a new sub-filter)
        for k in keys(1000, 2) {
            if timed("BF.ADD", || self.try_insert(k.as_slice())).is_err() {
                break;
            }
        }
        timed("BF.MEXISTS", || {
            for k in keys(250, 3) {
                std::hint::black_box(self.contains(k.as_slice()));
            }
        });
    }
    fn within_create_limits(&self) {
        assert!((1..=limits::BF_MAX_EXPANSION).contains(&self.growth()));
        assert!(self.filters().len() <= 64);
    }
}

impl Case for CuckooFilter {
    const NAME: &'static str = "cf";
    structure_io!();
    const FIELDS: &'static [(usize, usize)] = &[
        (48, 8),
        (56, 8),
        (72, 8),
        (80, 4),
        (84, 4),
        (88, 4),
        (92, 8),
        (100, 8),
        (108, 4),
    ];
    fn seeds() -> Vec<Self> {
        let mut a = CuckooFilter::try_new(64).unwrap();
        let mut b = CuckooFilter::builder()
            .capacity(256)
            .bucket_size(4)
            .max_iterations(500)
            .expansion(2)
            .try_build()
            .unwrap();
        // made where memory was plentiful: its file says it may grow without bound
        let mut c = CuckooFilter::builder()
            .capacity(128)
            .expansion(4)
            .max_bytes(u64::MAX)
            .try_build()
            .unwrap();
        for k in keys(200, 4) {
            let _ = a.insert(k.as_slice());
            let _ = b.insert(k.as_slice());
            let _ = c.insert(k.as_slice());
        }
        vec![a, b, c]
    }
    fn exercise(&mut self) {
        // CF.ADD of 1000 items, each timed (a full table tries up to MAXITERATIONS evictions)
        for k in keys(1000, 5) {
            if self.tables().len() >= limits::CF_MAX_FILTERS {
                break;
            }
            let _ = timed("CF.ADD", || self.insert(k.as_slice()));
        }
        for k in keys(100, 6) {
            let _ = timed("CF.ADDNX", || self.insert_unique(k.as_slice()));
            std::hint::black_box(timed("CF.COUNT", || self.count(k.as_slice())));
            let _ = timed("CF.DEL", || self.remove(k.as_slice()));
        }
    }
    fn within_create_limits(&self) {
        assert!((1..=limits::CF_MAX_BUCKET_SIZE).contains(&self.bucket_size()));
        assert!((1..=limits::CF_MAX_ITERATIONS).contains(&self.max_iterations()));
        assert!(self.expansion() <= limits::CF_MAX_EXPANSION);
        assert!(self.capacity() >= 2 * u64::from(self.bucket_size()));
    }
}

/// The 64-bit form of earlier versions: loaded as `CMS.*` loads it (checked, then converted to
/// the 32-bit form), and as itself to exercise it.
impl Case for CountMinSketch {
    const NAME: &'static str = "cms";
    fn load_value(bytes: &[u8]) -> Result<Self, String> {
        let narrow = <CountMinSketch32 as Structure>::decode(bytes)?;
        let wide = <Self as Structure>::decode(bytes)?;
        assert_eq!(
            (narrow.width(), narrow.depth()),
            (wide.width(), wide.depth())
        );
        Ok(wide)
    }
    fn load_pieces(bytes: &[u8]) -> Result<Self, String> {
        let total = bytes.len() as u64;
        let mut each = pieces(bytes).into_iter();
        let narrow: CountMinSketch32 = crate::types::read_ready(total, || {
            each.next().ok_or_else(|| "no more pieces".to_string())
        })?;
        let mut each = pieces(bytes).into_iter();
        let wide: Self = crate::types::read_ready(total, || {
            each.next().ok_or_else(|| "no more pieces".to_string())
        })?;
        assert_eq!(
            (narrow.width(), narrow.depth()),
            (wide.width(), wide.depth())
        );
        Ok(wide)
    }
    fn usage(&self) -> u64 {
        crate::types::value_size(self)
    }
    const FIELDS: &'static [(usize, usize)] = &[(48, 8), (72, 8), (80, 4), (84, 1)];
    fn seeds() -> Vec<Self> {
        let mut a = CountMinSketch::try_with_shape(200, 5).unwrap();
        for (i, k) in keys(300, 7).iter().enumerate() {
            a.insert_many(k.as_slice(), i as u64 % 7 + 1);
        }
        vec![a]
    }
    fn exercise(&mut self) {
        timed("CMS.INCRBY", || {
            for k in keys(500, 8) {
                if self.total() < limits::CMS_MAX_TOTAL - 10 {
                    self.insert_many(k.as_slice(), 3);
                }
                std::hint::black_box(self.count(k.as_slice()));
            }
        });
    }
    fn within_create_limits(&self) {
        assert!((1..=limits::CMS_MAX_DEPTH).contains(&self.depth()));
        assert!(self.width() >= 1);
        assert!(self.total() <= limits::CMS_MAX_TOTAL);
    }
}

impl Case for CountMinSketch32 {
    const NAME: &'static str = "cms32";
    structure_io!();
    const FIELDS: &'static [(usize, usize)] = &[(48, 8), (72, 8), (72, 8), (80, 4), (80, 4)];
    fn seeds() -> Vec<Self> {
        let mut a = CountMinSketch32::try_with_shape(200, 5).unwrap();
        for (i, k) in keys(300, 7).iter().enumerate() {
            a.insert_many(k.as_slice(), i as u64 % 7 + 1);
        }
        let mut odd = CountMinSketch32::try_with_shape(33, 3).unwrap();
        odd.insert_many(b"x".as_slice(), u64::from(u32::MAX));
        vec![a, odd]
    }
    fn exercise(&mut self) {
        timed("CMS.INCRBY", || {
            for k in keys(500, 8) {
                if self.total() < limits::CMS_MAX_TOTAL - 10 {
                    let h = self.hasher().hash(k.as_slice());
                    let _ = self.try_insert_many_hashed(h, 3);
                    self.insert_many_hashed(h, 3);
                }
                std::hint::black_box(self.count(k.as_slice()));
            }
        });
        timed("CMS.MERGE", || {
            let mut acc = Vec::new();
            if self.accumulate_weighted(&mut acc, -1).is_ok() {
                std::hint::black_box(self.clone().assign_accumulated(&acc, 0).is_err());
            }
        });
    }
    fn within_create_limits(&self) {
        assert!((1..=limits::CMS_MAX_DEPTH).contains(&self.depth()));
        assert!(self.width() >= 1);
        assert!(self.total() <= limits::CMS_MAX_TOTAL);
    }
}

impl Case for TopK {
    const NAME: &'static str = "topk";
    structure_io!();
    const FIELDS: &'static [(usize, usize)] = &[
        (72, 4),
        (76, 8),
        (84, 4),
        (88, 8),
        (96, 8),
        (104, 4),
        (108, 8),
    ];
    fn seeds() -> Vec<Self> {
        let mut a = TopK::builder(10).width(50).depth(4).try_build().unwrap();
        for (i, k) in keys(400, 9).iter().enumerate() {
            a.incr_by(k.as_slice(), (i % 13 + 1) as u32);
        }
        vec![a]
    }
    fn exercise(&mut self) {
        timed("TOPK.INCRBY", || {
            for k in keys(500, 10) {
                std::hint::black_box(self.incr_by(k.as_slice(), 5));
            }
        });
        timed("TOPK.LIST/QUERY", || {
            std::hint::black_box(self.list());
            for k in keys(100, 10) {
                std::hint::black_box(self.contains(k.as_slice()));
            }
        });
    }
    fn within_create_limits(&self) {
        assert!((1..=limits::TOPK_MAX_K).contains(&self.k()));
        assert!((1..=limits::TOPK_MAX_DEPTH).contains(&self.depth()));
        assert!(self.decay() > 0.0 && self.decay() <= 1.0);
        assert!(self.len() <= self.k() as usize);
    }
}

impl Case for TDigest {
    const NAME: &'static str = "tdigest";
    structure_io!();
    const FIELDS: &'static [(usize, usize)] = &[
        (48, 8),
        (72, 8),
        (72, 8),
        (72, 8),
        (80, 8),
        (88, 8),
        (96, 8),
        (104, 8),
        (112, 8),
        (120, 8),
        (128, 8),
    ];
    fn seeds() -> Vec<Self> {
        let mut a = TDigest::try_new(50).unwrap();
        for i in 0..3000u32 {
            a.insert(f64::from(i % 977) * 1.5 - 200.0).unwrap();
        }
        let mut b = TDigest::try_new(7).unwrap();
        b.insert(2.5).unwrap();
        vec![a, b, TDigest::try_new(100).unwrap()]
    }
    fn exercise(&mut self) {
        timed("TDIGEST.ADD", || {
            for i in 0..500u32 {
                std::hint::black_box(self.insert(f64::from(i)).is_ok());
            }
        });
        timed("TDIGEST queries", || {
            let qs = [0.0, 0.01, 0.5, 0.99, 1.0];
            std::hint::black_box(self.quantiles(&qs));
            std::hint::black_box(self.cdfs(&[-1.0, 10.0, 1e9]));
            std::hint::black_box(self.ranks(&[3.0, 400.0], true));
            std::hint::black_box(self.by_ranks(&[0, 5, u64::MAX], false));
            std::hint::black_box(self.trimmed_mean(0.1, 0.9));
        });
        timed("TDIGEST.MERGE", || {
            let mut out = TDigest::try_new(self.compression()).unwrap();
            std::hint::black_box(out.merge(self).is_ok());
        });
    }
    fn within_create_limits(&self) {
        assert!((1..=TDigest::MAX_COMPRESSION).contains(&self.compression()));
        assert!(self.capacity() * 16 <= MAX_BYTES);
        assert!(self.count() <= TDigest::MAX_WEIGHT);
    }
}

impl Case for CountingBloomFilter {
    const NAME: &'static str = "cbf";
    structure_io!();
    const FIELDS: &'static [(usize, usize)] =
        &[(48, 8), (56, 8), (64, 8), (72, 8), (80, 4), (84, 1)];
    fn seeds() -> Vec<Self> {
        let mut a = CountingBloomFilter::builder()
            .capacity(300)
            .fpr(0.01)
            .counter_width(4)
            .try_build()
            .unwrap();
        for k in keys(200, 11) {
            a.insert(k.as_slice());
        }
        vec![a]
    }
    fn exercise(&mut self) {
        timed("CBF.ADD/DEL/COUNT", || {
            for k in keys(500, 12) {
                self.insert(k.as_slice());
                std::hint::black_box(self.count(k.as_slice()));
                let _ = self.remove(k.as_slice());
            }
        });
    }
    fn within_create_limits(&self) {
        assert!((1..=limits::COUNTER_BITS.1).contains(&self.counter_width()));
    }
}

impl Case for BlockedCountingBloomFilter {
    const NAME: &'static str = "bcbf";
    structure_io!();
    const FIELDS: &'static [(usize, usize)] =
        &[(48, 8), (56, 8), (64, 8), (72, 8), (80, 4), (84, 1)];
    fn seeds() -> Vec<Self> {
        let mut a = BlockedCountingBloomFilter::builder()
            .capacity(300)
            .fpr(0.01)
            .counter_width(4)
            .try_build()
            .unwrap();
        for k in keys(200, 13) {
            a.insert(k.as_slice());
        }
        vec![a]
    }
    fn exercise(&mut self) {
        timed("BCBF.ADD/DEL/COUNT", || {
            for k in keys(500, 14) {
                self.insert(k.as_slice());
                std::hint::black_box(self.count(k.as_slice()));
                let _ = self.remove(k.as_slice());
            }
        });
    }
    fn within_create_limits(&self) {
        assert!((1..=limits::COUNTER_BITS.1).contains(&self.counter_width()));
    }
}

impl Case for IterativeBloomFilter {
    const NAME: &'static str = "ibf";
    structure_io!();
    const FIELDS: &'static [(usize, usize)] = &[
        (48, 8),
        (56, 8),
        (64, 8),
        (72, 8),
        (80, 4),
        (84, 8),
        (92, 8),
        (100, 8),
    ];
    fn seeds() -> Vec<Self> {
        let mut a = IterativeBloomFilter::builder()
            .capacity(300)
            .fpr(0.01)
            .try_build()
            .unwrap();
        for k in keys(200, 15).iter().chain(keys(50, 15).iter()) {
            a.insert(k.as_slice());
        }
        vec![a]
    }
    fn exercise(&mut self) {
        timed("IBF.ADD/COUNT", || {
            for k in keys(500, 16) {
                self.insert(k.as_slice());
                self.insert(k.as_slice());
                std::hint::black_box(self.count(k.as_slice()));
            }
        });
    }
    fn within_create_limits(&self) {
        assert!((1..=64).contains(&self.hashes()));
    }
}

impl Case for MultiLayerBloomFilter {
    const NAME: &'static str = "mlbf";
    structure_io!();
    const FIELDS: &'static [(usize, usize)] =
        &[(48, 8), (56, 8), (64, 8), (72, 4), (76, 8), (84, 4)];
    fn seeds() -> Vec<Self> {
        let mut a = MultiLayerBloomFilter::builder()
            .layers(4)
            .capacity(300)
            .fpr(0.01)
            .try_build()
            .unwrap();
        for i in 0..200 {
            let _ = a.insert(&format!("https://example.org/a{}/b{i}/c", i % 7));
        }
        vec![a]
    }
    fn exercise(&mut self) {
        timed("MLBF.ADD/EXISTS", || {
            for i in 0..500 {
                let u = format!("https://example.net/x{}/y{i}", i % 11);
                let _ = self.insert(&u);
                let _ = std::hint::black_box(self.contains(&u));
            }
        });
    }
    fn within_create_limits(&self) {
        assert!((1..=limits::MLBF_LAYERS.1).contains(&self.layers()));
    }
}

impl Case for RedisBloomFilter {
    const NAME: &'static str = "moved bf";
    moved_io!();
    /// Options, growth, link count; the first two links' entries, error, bits per entry,
    /// bits, bytes, size, hashes and n2.
    const FIELDS: &'static [(usize, usize)] = &[
        (48, 8),
        (56, 8),
        (64, 8),
        (72, 4),
        (76, 4),
        (76, 4),
        (76, 4),
        (80, 4),
        (80, 4),
        (84, 4),
        (88, 8),
        (88, 8),
        (96, 8),
        (96, 8),
        (104, 8),
        (112, 8),
        (112, 8),
        (120, 8),
        (120, 8),
        (128, 8),
        (136, 4),
        (136, 4),
        (140, 1),
        (144, 8),
        (152, 8),
        (168, 8),
        (176, 8),
        (192, 4),
        (196, 1),
    ];
    fn seeds() -> Vec<Self> {
        let scaling = RedisBloomFilter::OPT_FORCE64 | RedisBloomFilter::OPT_NOROUND;
        // grown to several links, at growth 2 and 4
        let mut a = RedisBloomFilter::with_options(50, 0.01, scaling, 2, MAX_BYTES).unwrap();
        let mut b = RedisBloomFilter::with_options(100, 0.001, scaling, 4, MAX_BYTES).unwrap();
        // RedisBloom 1.x's hash and rounding
        let mut c = RedisBloomFilter::with_options(64, 0.05, 0, 2, MAX_BYTES).unwrap();
        for k in keys(400, 17) {
            a.try_insert(&k).unwrap();
            b.try_insert(&k).unwrap();
            c.try_insert(&k).unwrap();
        }
        // full and non-scaling
        let mut d = RedisBloomFilter::with_options(
            100,
            0.01,
            scaling | RedisBloomFilter::OPT_NO_SCALING,
            2,
            MAX_BYTES,
        )
        .unwrap();
        for k in keys(100, 18) {
            let _ = d.try_insert(&k);
        }
        vec![a, b, c, d]
    }
    fn exercise(&mut self) {
        // BF.ADD of 1000 items, each timed (a growth sizes and allocates a new link)
        for k in keys(1000, 19) {
            if timed("BF.ADD", || self.try_insert(&k)).is_err() {
                break;
            }
        }
        timed("BF.MEXISTS", || {
            for k in keys(250, 20) {
                std::hint::black_box(self.contains(&k));
            }
        });
        timed("BF.SCANDUMP", || {
            // the header chunk is iterator 1; data chunks follow it
            let mut it = 1;
            while let Some((next, data)) = self.chunk(it) {
                std::hint::black_box(data);
                it = next;
            }
        });
    }
    fn within_create_limits(&self) {
        assert!(self.growth() <= limits::BF_MAX_EXPANSION);
        assert!(self.links().len() <= RedisBloomFilter::MAX_LINKS);
        for l in self.links() {
            assert!((1..=RedisBloomFilter::MAX_HASHES).contains(&l.hashes()));
            assert!(l.bytes() <= MAX_BYTES);
        }
    }
}

impl Case for RedisBloomCuckooFilter {
    const NAME: &'static str = "moved cf";
    moved_io!();
    /// Buckets of the first sub-filter, deletes, sub-filters, bucket size, max iterations,
    /// expansion.
    const FIELDS: &'static [(usize, usize)] = &[
        (48, 8),
        (56, 8),
        (72, 8),
        (72, 8),
        (72, 8),
        (80, 8),
        (88, 4),
        (88, 4),
        (88, 4),
        (92, 4),
        (92, 4),
        (92, 4),
        (96, 4),
        (96, 4),
        (96, 4),
        (100, 4),
        (100, 4),
    ];
    fn seeds() -> Vec<Self> {
        // grown to several sub-filters
        let mut a = RedisBloomCuckooFilter::reserve(64, 2, 20, 1, MAX_BYTES).unwrap();
        let mut b = RedisBloomCuckooFilter::reserve(256, 4, 500, 2, MAX_BYTES).unwrap();
        // never grows
        let mut c = RedisBloomCuckooFilter::reserve(128, 2, 50, 0, MAX_BYTES).unwrap();
        for k in keys(400, 21) {
            a.add(&k);
            b.add(&k);
            c.add(&k);
        }
        for k in keys(50, 21) {
            let _ = a.remove(&k);
        }
        vec![a, b, c]
    }
    fn exercise(&mut self) {
        // CF.ADD of 1000 items, each timed (a full table tries up to MAXITERATIONS evictions)
        for k in keys(1000, 22) {
            if self.filters() >= RedisBloomCuckooFilter::MAX_FILTERS {
                break;
            }
            std::hint::black_box(timed("CF.ADD", || self.add(&k)));
        }
        for k in keys(100, 23) {
            std::hint::black_box(timed("CF.ADDNX", || self.insert_unique(&k)));
            std::hint::black_box(timed("CF.COUNT", || self.count(&k)));
            let _ = std::hint::black_box(timed("CF.DEL", || self.remove(&k)));
        }
        timed("CF.SCANDUMP", || {
            // the header chunk is iterator 1; data chunks follow it
            let mut it = 1;
            while let Some((next, data)) = self.chunk(it) {
                std::hint::black_box(data);
                it = next;
            }
        });
    }
    fn within_create_limits(&self) {
        assert!((1..=limits::CF_MAX_BUCKET_SIZE).contains(&u32::from(self.bucket_size())));
        assert!((1..=limits::CF_MAX_ITERATIONS).contains(&u32::from(self.max_iterations())));
        assert!(u32::from(self.expansion()) <= limits::CF_MAX_EXPANSION);
        assert!(self.filters() <= RedisBloomCuckooFilter::MAX_FILTERS);
    }
}

/// `bytes` cut as a value saved in pieces is: the header (as long as the bytes say, when
/// they can), then pieces of 4 KiB (the RDB's are 4 MiB; any size reads the same).
fn pieces(bytes: &[u8]) -> Vec<&[u8]> {
    let h = bytes.get(12..16).map_or(bytes.len(), |b| {
        u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize
    });
    // a header length no file has: the whole as one piece (its header is then refused)
    let h = if h == 0 || h > bytes.len() {
        bytes.len()
    } else {
        h
    };
    let (head, rest) = bytes.split_at(h);
    std::iter::once(head).chain(rest.chunks(4096)).collect()
}

fn run<T: Case>() {
    let _limit = setup();
    let seeds: Vec<Vec<u8>> = T::seeds().iter().map(|s| s.to_bytes()).collect();
    for s in &seeds {
        assert!(
            T::load_value(s).is_ok(),
            "{}: a valid seed must load: {:?}",
            T::NAME,
            T::load_value(s).err()
        );
    }
    let mut rng = StdRng::seed_from_u64(seed() ^ u64::from(T::KIND.id()));
    let (mut loaded, total) = (0usize, cases());
    for case in 0..total {
        let seed = &seeds[case % seeds.len()];
        let forged = forge(&mut rng, seed, T::FIELDS);
        // the RDB loader reads the same bytes in pieces into the same value, or refuses them
        let outcomes = catch_unwind(AssertUnwindSafe(|| {
            let whole = T::load_value(&forged).map(|v| v.to_bytes());
            let read = timed("read", || T::load_pieces(&forged)).map(|v| v.to_bytes());
            (whole, read)
        }));
        match outcomes {
            Ok((Ok(a), Ok(b))) => assert!(a == b, "{}: case {case}: pieces differ", T::NAME),
            Ok((Err(_), Err(_))) => {}
            Ok((a, b)) => panic!(
                "{}: case {case}: whole {:?}, in pieces {:?}; forged bytes: {}",
                T::NAME,
                a.err(),
                b.err(),
                hex(&forged)
            ),
            Err(_) => panic!(
                "{}: case {case} failed in pieces; forged bytes: {}",
                T::NAME,
                hex(&forged)
            ),
        }
        let base = reset_peak();
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let Ok(mut v) = timed("decode", || T::load_value(&forged)) else {
                return false;
            };
            v.within_create_limits();
            v.exercise();
            let held = (live() - base).max(0) as u64;
            assert!(
                held <= MAX_BYTES + (64 << 10),
                "{}: holds {held} bytes, MAX-BYTES is {MAX_BYTES}",
                T::NAME
            );
            // what the module's RDB save and SCANDUMP do, and its MEMORY USAGE
            let again = timed("encode", || v.to_bytes());
            assert!(
                T::load_value(&again).is_ok(),
                "{}: re-encoded value refused",
                T::NAME
            );
            let usage = v.usage();
            assert!(
                usage <= MAX_BYTES + (64 << 10),
                "{}: MEMORY USAGE {usage}, MAX-BYTES is {MAX_BYTES}",
                T::NAME
            );
            true
        }));
        let peak = (peak() - base).max(0) as u64;
        match outcome {
            Ok(ok) => loaded += usize::from(ok),
            Err(_) => panic!(
                "{}: case {case} failed; forged bytes: {}",
                T::NAME,
                hex(&forged)
            ),
        }
        // Beside a value within MAX-BYTES and its encoding: decoding copies the input a few
        // times at most, and an operation's work area is bounded by the create limits (a
        // cuckoo insert's undo log: 16 bytes per eviction, at most 65535 evictions).
        let work_area = 16 * u64::from(limits::CF_MAX_ITERATIONS) * 2;
        let allowed = 2 * MAX_BYTES + 3 * forged.len() as u64 + work_area + (256 << 10);
        assert!(
            peak <= allowed,
            "{}: case {case} peaked at {peak} bytes (allowed {allowed}); forged bytes: {}",
            T::NAME,
            hex(&forged)
        );
    }
    eprintln!("{}: {loaded} of {total} forged values loaded", T::NAME);
    // Some forged values must load (payload bits, counts), or the cases never get past
    // validation to the operations (a count-min sketch's rows must still sum to its total, so
    // few of its forgeries load); most must be refused.
    assert!(loaded > 0, "{}: none loaded", T::NAME);
    assert!(loaded < total, "{}: every forged value loaded", T::NAME);
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn bf_loader() {
    run::<ScalableBloomFilter>();
}

#[test]
fn cf_loader() {
    run::<CuckooFilter>();
}

#[test]
fn cms_loader() {
    run::<CountMinSketch>();
}

#[test]
fn cms32_loader() {
    run::<CountMinSketch32>();
}

#[test]
fn topk_loader() {
    run::<TopK>();
}

#[test]
fn tdigest_loader() {
    run::<TDigest>();
}

#[test]
fn cbf_loader() {
    run::<CountingBloomFilter>();
}

#[test]
fn bcbf_loader() {
    run::<BlockedCountingBloomFilter>();
}

#[test]
fn ibf_loader() {
    run::<IterativeBloomFilter>();
}

#[test]
fn mlbf_loader() {
    run::<MultiLayerBloomFilter>();
}

#[test]
fn moved_bf_loader() {
    run::<RedisBloomFilter>();
}

#[test]
fn moved_cf_loader() {
    run::<RedisBloomCuckooFilter>();
}
