//! Shared pieces of bloomery's benchmarks: fixed-seed keys, the structures under test behind
//! one small trait, and the raw random-read floor. See docs/BENCHMARKS.md ("## Library").
//!
//! * Keys are `u64`s from SplitMix64 over a counter with a fixed seed. SplitMix64's output
//!   function is a bijection, so keys from disjoint counter ranges are distinct: inserted keys
//!   use counters `[0, n)`, negative (absent) keys counters from `2^40` up. Key arrays are
//!   generated before any timing.
//! * Every structure is wrapped in a [`Subject`], used generically (monomorphised, no dynamic
//!   dispatch in the timed loops).

use std::hint::black_box;
use std::time::Duration;

use bloomery::{BlockedBloomFilter, BloomFilter, Filter, SplitBlockBloomFilter, Stats};

pub mod counting;
pub mod mlbf_proto;

/// CPU time consumed so far by the calling thread (`CLOCK_THREAD_CPUTIME_ID`).
///
/// All benchmark timings are differences of this clock, not wall time: the benchmark machine
/// is shared, and time the thread spends descheduled while other processes run must not be
/// counted. Memory stalls are still counted (the thread is on the CPU while it waits).
pub fn cpu_now() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call, and
    // CLOCK_THREAD_CPUTIME_ID is supported on every Linux kernel this runs on.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// The fixed seed of every key array.
pub const KEY_SEED: u64 = 0x5EED_B10E_0000_0001;
/// First counter of the negative keys (far above any `n` used).
pub const NEG_BASE: u64 = 1 << 40;

#[inline]
fn splitmix(state: u64) -> u64 {
    let mut z = state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Key number `i` (SplitMix64 output for counter `i`; distinct for distinct `i`).
#[inline]
pub fn key(i: u64) -> u64 {
    splitmix(KEY_SEED.wrapping_add(i.wrapping_mul(0x9E37_79B9_7F4A_7C15)))
}

/// The `n` inserted keys.
pub fn positive_keys(n: usize) -> Vec<u64> {
    (0..n as u64).map(key).collect()
}

/// `q` keys disjoint from every inserted key.
pub fn negative_keys(q: usize) -> Vec<u64> {
    (0..q as u64).map(|i| key(NEG_BASE + i)).collect()
}

/// Sizes from `BLOOMERY_BENCH_N` (comma-separated, `_` allowed, `M` suffix allowed), default
/// 1M and 10M.
pub fn sizes_from_env() -> Vec<usize> {
    match std::env::var("BLOOMERY_BENCH_N") {
        Ok(s) if !s.trim().is_empty() => s
            .split(',')
            .map(|t| {
                let t = t.trim().replace('_', "");
                let (num, mul) = match t.strip_suffix(['M', 'm']) {
                    Some(x) => (x.to_string(), 1_000_000),
                    None => (t.clone(), 1),
                };
                num.parse::<usize>()
                    .unwrap_or_else(|_| panic!("bad BLOOMERY_BENCH_N entry {t:?}"))
                    * mul
            })
            .collect(),
        _ => vec![1_000_000, 10_000_000],
    }
}

/// The configurations for a set of sizes: every size at 1%, plus 10M at 0.1% when 10M is in.
pub fn configs(sizes: &[usize]) -> Vec<(usize, f64)> {
    let mut v: Vec<(usize, f64)> = sizes.iter().map(|&n| (n, 0.01)).collect();
    if sizes.contains(&10_000_000) || std::env::var("BLOOMERY_BENCH_P001").is_ok() {
        for &n in sizes {
            if n == 10_000_000 || std::env::var("BLOOMERY_BENCH_P001").is_ok() {
                v.push((n, 0.001));
            }
        }
    }
    v
}

/// A short label: `10M@1%`.
pub fn label(n: usize, p: f64) -> String {
    let ns = if n.is_multiple_of(1_000_000) {
        format!("{}M", n / 1_000_000)
    } else {
        n.to_string()
    };
    format!("{ns}@{}%", p * 100.0)
}

/// A structure under test.
pub trait Subject {
    /// Insert one key.
    fn insert(&mut self, k: u64) -> bool;
    /// Query one key.
    fn contains(&self, k: u64) -> bool;
    /// Remove everything (keeps the memory).
    fn clear(&mut self);
    /// Bits of filter memory (payload only).
    fn bits(&self) -> u64;
    /// Bits set per key (k), if meaningful.
    fn k(&self) -> Option<u32>;
}

/// bloomery's blocked filter.
pub struct Blocked(pub BlockedBloomFilter);
impl Blocked {
    /// Sized by the library for (n, p) (the layout `try_new` picks).
    pub fn new(n: usize, p: f64) -> Self {
        Self(BlockedBloomFilter::try_new(n as u64, p).expect("blocked"))
    }

    /// Sized for (n, p) in the positions layout (format kind 3, any k).
    pub fn positions(n: usize, p: f64) -> Self {
        Self::with_layout(n, p, bloomery::builders::BlockLayout::Positions)
    }

    /// Sized for (n, p) in the sectors layout (format kind 20, xxh3-128, k = 8).
    pub fn sectors(n: usize, p: f64) -> Self {
        Self::with_layout(n, p, bloomery::builders::BlockLayout::Sectors)
    }

    /// Sized for (n, p) in the salted layout (format kind 31, 512-bit blocks, xxh3-64, k = 8).
    pub fn salted(n: usize, p: f64) -> Self {
        Self::with_layout(n, p, bloomery::builders::BlockLayout::Salted)
    }

    /// Sized for (n, p) in the salted-256 layout (format kind 32, 256-bit blocks, xxh3-64,
    /// k = 8).
    pub fn salted256(n: usize, p: f64) -> Self {
        Self::with_layout(n, p, bloomery::builders::BlockLayout::Salted256)
    }

    fn with_layout(n: usize, p: f64, layout: bloomery::builders::BlockLayout) -> Self {
        Self(
            BlockedBloomFilter::builder()
                .capacity(n as u64)
                .fpr(p)
                .layout(layout)
                .try_build()
                .expect("blocked"),
        )
    }
}
impl Subject for Blocked {
    #[inline]
    fn insert(&mut self, k: u64) -> bool {
        self.0.insert(&k)
    }
    #[inline]
    fn contains(&self, k: u64) -> bool {
        self.0.contains(&k)
    }
    fn clear(&mut self) {
        self.0.clear()
    }
    fn bits(&self) -> u64 {
        self.0.bit_len()
    }
    fn k(&self) -> Option<u32> {
        Some(self.0.hashes())
    }
}

/// bloomery's classic filter with a given m and k (those of fastbloom).
pub struct Classic(pub BloomFilter);
impl Classic {
    /// Exactly `m` bits and `k` hashes.
    pub fn with_shape(m: u64, k: u32) -> Self {
        Self(BloomFilter::try_with_shape(m, k).expect("classic"))
    }
}
impl Subject for Classic {
    #[inline]
    fn insert(&mut self, k: u64) -> bool {
        self.0.insert(&k)
    }
    #[inline]
    fn contains(&self, k: u64) -> bool {
        self.0.contains(&k)
    }
    fn clear(&mut self) {
        self.0.clear()
    }
    fn bits(&self) -> u64 {
        self.0.bits()
    }
    fn k(&self) -> Option<u32> {
        Some(self.0.hashes())
    }
}

/// bloomery's Parquet split-block filter.
pub struct Split(pub SplitBlockBloomFilter);
impl Split {
    /// Sized by the library for (n, p).
    pub fn new(n: usize, p: f64) -> Self {
        Self(SplitBlockBloomFilter::try_new(n as u64, p).expect("split"))
    }
}
impl Subject for Split {
    #[inline]
    fn insert(&mut self, k: u64) -> bool {
        self.0.insert(&k)
    }
    #[inline]
    fn contains(&self, k: u64) -> bool {
        self.0.contains(&k)
    }
    fn clear(&mut self) {
        self.0.clear()
    }
    fn bits(&self) -> u64 {
        self.0.bit_len()
    }
    fn k(&self) -> Option<u32> {
        Some(8)
    }
}

/// The hasher given to fastbloom: foldhash's fast hasher with a fixed seed.
pub type FoldState = foldhash::fast::FixedState;

/// fastbloom with foldhash.
pub struct FastBloom(pub fastbloom::BloomFilter<FoldState>);
impl FastBloom {
    /// fastbloom's own sizing for (n, p).
    pub fn new(n: usize, p: f64) -> Self {
        Self(
            fastbloom::BloomFilter::with_false_pos(p)
                .hasher(FoldState::with_seed(0x5EED))
                .expected_items(n),
        )
    }
}
impl Subject for FastBloom {
    #[inline]
    fn insert(&mut self, k: u64) -> bool {
        self.0.insert(&k)
    }
    #[inline]
    fn contains(&self, k: u64) -> bool {
        self.0.contains(&k)
    }
    fn clear(&mut self) {
        self.0.clear()
    }
    fn bits(&self) -> u64 {
        self.0.num_bits() as u64
    }
    fn k(&self) -> Option<u32> {
        Some(self.0.num_hashes())
    }
}

/// The 64-bit hash given to sbbf-rs-safe: xxh3-64 (seed 0) of the key's little-endian bytes —
/// the same hash family bloomery uses (bloomery computes the 128-bit variant).
#[inline]
pub fn sbbf_hash(k: u64) -> u64 {
    xxhash_rust::xxh3::xxh3_64(&k.to_le_bytes())
}

/// sbbf-rs-safe (SIMD split-block filter), hashed with [`sbbf_hash`].
pub struct Sbbf {
    /// The filter.
    pub f: sbbf_rs_safe::Filter,
    bits_per_key: usize,
    n: usize,
}
impl Sbbf {
    /// `bits_per_key` bits per key for `n` keys (sbbf-rs-safe has no rate-based sizing).
    pub fn new(bits_per_key: usize, n: usize) -> Self {
        Self {
            f: sbbf_rs_safe::Filter::new(bits_per_key, n),
            bits_per_key,
            n,
        }
    }
    /// The whole number of bits per key that reaches rate `p` for a split-block filter:
    /// bloomery's split-block sizing (the Parquet model), rounded up to whole bits per key.
    pub fn bits_per_key_for(n: usize, p: f64) -> usize {
        let b = SplitBlockBloomFilter::try_new(n as u64, p).expect("split");
        (b.bit_len() as usize).div_ceil(n)
    }
}
impl Subject for Sbbf {
    #[inline]
    fn insert(&mut self, k: u64) -> bool {
        self.f.insert_hash(sbbf_hash(k))
    }
    #[inline]
    fn contains(&self, k: u64) -> bool {
        self.f.contains_hash(sbbf_hash(k))
    }
    fn clear(&mut self) {
        *self = Self::new(self.bits_per_key, self.n);
    }
    fn bits(&self) -> u64 {
        self.f.as_bytes().len() as u64 * 8
    }
    fn k(&self) -> Option<u32> {
        Some(8)
    }
}

/// The `bloomfilter` crate (SipHash-1-3, classic layout).
pub struct RustBloom(pub bloomfilter::Bloom<u64>);
impl RustBloom {
    /// Its own sizing for (n, p), fixed seed.
    pub fn new(n: usize, p: f64) -> Self {
        Self(bloomfilter::Bloom::new_for_fp_rate_with_seed(n, p, &[7u8; 32]).expect("bloomfilter"))
    }
}
impl Subject for RustBloom {
    #[inline]
    fn insert(&mut self, k: u64) -> bool {
        self.0.set(&k);
        true
    }
    #[inline]
    fn contains(&self, k: u64) -> bool {
        self.0.check(&k)
    }
    fn clear(&mut self) {
        self.0.clear()
    }
    fn bits(&self) -> u64 {
        // the serialized form is a small header plus the bitmap
        self.0.as_slice().len() as u64 * 8
    }
    fn k(&self) -> Option<u32> {
        Some(self.0.number_of_hash_functions())
    }
}

/// Build a xorf BinaryFuse8 from keys (static: no inserts).
pub fn build_fuse(keys: &[u64]) -> xorf::BinaryFuse8 {
    xorf::BinaryFuse8::try_from(keys).expect("binary fuse build")
}

/// Bits of a BinaryFuse8's fingerprint array.
pub fn fuse_bits(f: &xorf::BinaryFuse8) -> u64 {
    f.fingerprints.len() as u64 * 8
}

/// Insert every key once (returns the elapsed time: the build cost of a whole filter).
pub fn fill<S: Subject>(s: &mut S, keys: &[u64]) -> Duration {
    let t = cpu_now();
    for &k in keys {
        black_box(s.insert(k));
    }
    cpu_now() - t
}

/// Count how many of `keys` the structure reports present.
pub fn count<S: Subject>(s: &S, keys: &[u64]) -> usize {
    keys.iter().filter(|&&k| s.contains(k)).count()
}

/// The raw random-read floor: one independent 8-byte read per op at a position picked from a
/// key by multiply-shift, over a buffer as large as a filter.
pub trait Floor {
    /// The words.
    fn words(&self) -> &[u64];
}

/// Floor buffer allocated as the library allocates large filters: an anonymous map with
/// transparent huge pages advised.
pub struct WordsFloor(memmap2::MmapMut);
impl WordsFloor {
    /// `len` words, every page written (so reads hit real memory, not the shared zero page).
    pub fn new(len: usize) -> Self {
        let mut map = memmap2::MmapMut::map_anon(len.max(1) * 8).expect("floor");
        #[cfg(target_os = "linux")]
        {
            // Advice only: failure (THP disabled) changes nothing but speed.
            let _ = map.advise(memmap2::Advice::HugePage);
        }
        for (i, x) in map.chunks_exact_mut(8).enumerate() {
            x.copy_from_slice(&(i as u64).to_ne_bytes());
        }
        Self(map)
    }
}
impl Floor for WordsFloor {
    fn words(&self) -> &[u64] {
        // The map is page-aligned, so 8-byte aligned; its length is a multiple of 8.
        bytemuck::cast_slice(&self.0[..])
    }
}

/// Floor buffer in a plain `Vec<u64>` (the global allocator; huge pages only if the system
/// gives them unasked).
pub struct VecFloor(Vec<u64>);
impl VecFloor {
    /// `len` words, every page written.
    pub fn new(len: usize) -> Self {
        Self((0..len as u64).collect())
    }
}
impl Floor for VecFloor {
    fn words(&self) -> &[u64] {
        &self.0
    }
}

/// Sum of the words read for `keys` (one independent random read per key).
#[inline]
pub fn floor_reads(words: &[u64], keys: &[u64]) -> u64 {
    let len = words.len() as u64;
    let mut sum = 0u64;
    for &k in keys {
        let i = ((u128::from(k) * u128::from(len)) >> 64) as usize;
        sum = sum.wrapping_add(words[i]);
    }
    sum
}

/// What one cache miss costs on this host right now: the mean latency, in ns, of a chain of
/// dependent loads visiting every 64-byte line of a `bytes`-sized buffer (allocated like the
/// filters, [`WordsFloor`]) in one random cycle, `steps` loads, thread CPU time.
///
/// The benchmark machine's L3 is shared with other guests, so how much of a structure stays
/// cached changes from minute to minute; printing this beside a run says whether a structure
/// of that size was answered from cache (tens of ns) or from DRAM (≥ 100 ns) during it.
pub fn chase_ns(bytes: usize, steps: usize) -> f64 {
    let lines = (bytes / 64).max(2);
    // A random cyclic order of the lines (Sattolo's shuffle, fixed-seed xorshift).
    let mut order: Vec<u32> = (0..lines as u32).collect();
    let mut x = KEY_SEED;
    for i in (1..lines).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % i as u64) as usize);
    }
    let mut buf = WordsFloor::new(lines * 8);
    let words: &mut [u64] = bytemuck::cast_slice_mut(&mut buf.0[..]);
    for (i, &line) in order.iter().enumerate() {
        words[line as usize * 8] = u64::from(order[(i + 1) % lines]) * 8;
    }
    let mut at = 0usize;
    for _ in 0..lines.min(steps) {
        at = words[at] as usize; // warm up: one lap (or `steps` loads) through the buffer
    }
    let t = cpu_now();
    for _ in 0..steps {
        at = words[at] as usize;
    }
    let ns = (cpu_now() - t).as_nanos() as f64 / steps as f64;
    black_box(at);
    ns
}
