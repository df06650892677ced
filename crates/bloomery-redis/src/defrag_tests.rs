//! Active defragmentation of every type ([`crate::value`]'s defrag callback), with a mover that
//! really moves: each allocation's bytes copied to a new allocation and the old one freed, as
//! `RedisModule_DefragAlloc` does. Every value must move whole (its struct and each array once)
//! and answer, digest and take writes exactly as before; a value defragmented in late-defrag
//! steps must resume from its cursor and end with each allocation moved once.

use std::os::raw::c_void;
use std::ptr::NonNull;

use bloomery::builders::WindowLayout;
use bloomery::redisbloom::{RedisBloomCuckooFilter, RedisBloomFilter};
use bloomery::{
    AgePartitionedBloomFilter, BlockedCountingBloomFilter, Count, CountMinSketch32,
    CountingBloomFilter, CuckooFilter, Filter, IterativeBloomFilter, MultiLayerBloomFilter,
    ScalableBloomFilter, TDigest, TimeWindowFilter, TopK,
};

use crate::loader_fuzz::{keys, Case};
use crate::types::{Partial, Slot, Structure};
use crate::value::{allocations, defrag_step, defrag_value, Value, STEP};

/// A value as Redis holds it: boxed, handed over as a raw pointer.
fn boxed<V>(v: V) -> *mut c_void {
    Box::into_raw(Box::new(v)).cast()
}

/// The value at `at`.
///
/// # Safety
/// `at` must hold a live `V` that nothing else references while the borrow lives.
unsafe fn get<'a, V>(at: *mut c_void) -> &'a mut V {
    // SAFETY: the caller's contract.
    unsafe { &mut *at.cast::<V>() }
}

/// Drop the value at `at`, as Redis's free callback does.
///
/// # Safety
/// `at` must hold a live `V` made by [`boxed`], dropped once.
unsafe fn free<V>(at: *mut c_void) {
    // SAFETY: the caller's contract.
    drop(unsafe { Box::from_raw(at.cast::<V>()) });
}

/// What `RedisModule_DefragAlloc` does, on the C allocator behind the tests' global one:
/// the allocation's bytes copied into a new one (64-byte aligned, as jemalloc keeps the
/// module's arrays), the old one freed. Counts the moves.
fn mover(moves: &mut usize) -> impl FnMut(NonNull<u8>) -> Option<NonNull<u8>> + '_ {
    move |p| {
        // SAFETY: `p` is a live allocation of the global allocator (the C allocator in
        // the tests); its usable size is what it holds, copied whole before it is freed.
        unsafe {
            let size = libc::malloc_usable_size(p.as_ptr().cast());
            let mut new: *mut c_void = std::ptr::null_mut();
            if libc::posix_memalign(&mut new, 64, size) != 0 {
                return None;
            }
            std::ptr::copy_nonoverlapping(p.as_ptr(), new.cast::<u8>(), size);
            libc::free(p.as_ptr().cast());
            *moves += 1;
            NonNull::new(new.cast::<u8>())
        }
    }
}

/// The keys the answers are asked for: the first 50 of every salt the seeds insert, and
/// keys never inserted.
fn probe_keys() -> Vec<Vec<u8>> {
    (1..=23).flat_map(|salt| keys(50, salt)).collect()
}

/// A structure under test: how many heap allocations it holds beyond its value's struct
/// (counted from its shape, not from the defrag code) and what it answers.
trait Probe: Case + Structure + PartialEq {
    fn arrays(&self) -> usize;
    fn answers(&self) -> Vec<u64>;
}

impl Probe for ScalableBloomFilter {
    /// The list of sub-filters and each one's bit array.
    fn arrays(&self) -> usize {
        1 + self.filters().len()
    }
    fn answers(&self) -> Vec<u64> {
        probe_keys()
            .iter()
            .map(|k| u64::from(self.contains(k.as_slice())))
            .collect()
    }
}

impl Probe for CuckooFilter {
    /// The list of tables and each one's slots.
    fn arrays(&self) -> usize {
        1 + self.tables().len()
    }
    fn answers(&self) -> Vec<u64> {
        probe_keys()
            .iter()
            .map(|k| self.count(k.as_slice()))
            .collect()
    }
}

impl Probe for CountMinSketch32 {
    fn arrays(&self) -> usize {
        1
    }
    fn answers(&self) -> Vec<u64> {
        let mut a: Vec<u64> = probe_keys()
            .iter()
            .map(|k| Count::count(self, k.as_slice()))
            .collect();
        a.push(self.total());
        a
    }
}

impl Probe for CountingBloomFilter {
    fn arrays(&self) -> usize {
        1
    }
    fn answers(&self) -> Vec<u64> {
        probe_keys()
            .iter()
            .map(|k| Count::count(self, k.as_slice()))
            .collect()
    }
}

impl Probe for BlockedCountingBloomFilter {
    fn arrays(&self) -> usize {
        1
    }
    fn answers(&self) -> Vec<u64> {
        probe_keys()
            .iter()
            .map(|k| Count::count(self, k.as_slice()))
            .collect()
    }
}

impl Probe for IterativeBloomFilter {
    fn arrays(&self) -> usize {
        1
    }
    fn answers(&self) -> Vec<u64> {
        probe_keys()
            .iter()
            .map(|k| Count::count(self, k.as_slice()))
            .collect()
    }
}

impl Probe for MultiLayerBloomFilter {
    /// The list of layers and each layer's bit array (the XOR layer included).
    fn arrays(&self) -> usize {
        1 + self.layers() as usize + 1
    }
    fn answers(&self) -> Vec<u64> {
        (0..300)
            .flat_map(|i| {
                [
                    format!("https://example.org/a{}/b{i}/c", i % 7),
                    format!("https://example.net/x{}/y{i}", i % 11),
                ]
            })
            .map(|u| match self.contains(&u) {
                Ok(b) => u64::from(b),
                Err(_) => 2,
            })
            .collect()
    }
}

impl Probe for TDigest {
    /// The centroid buffer, and the merged centroids a query keeps until the next write.
    fn arrays(&self) -> usize {
        1 + usize::from(self.view_bytes() > 0)
    }
    fn answers(&self) -> Vec<u64> {
        let qs: Vec<f64> = (0..=20).map(|i| f64::from(i) / 20.0).collect();
        let xs: Vec<f64> = (-10..=60).map(|i| f64::from(i) * 25.0).collect();
        let mut a: Vec<u64> = self.quantiles(&qs).iter().map(|q| q.to_bits()).collect();
        a.extend(self.cdfs(&xs).iter().map(|c| c.to_bits()));
        a.push(self.count());
        a
    }
}

/// Moves the value at a fresh box whole with [`mover`]: `expected` allocations moved (the
/// allocation count `free_effort` answers too), the value equal to `want`, its `DEBUG
/// DIGEST` bytes and `answers` unchanged; then the same writes on both give the same value.
fn moves_whole<V: Value + PartialEq>(
    name: &str,
    v: V,
    expected: usize,
    answers: &dyn Fn(&V) -> Vec<u64>,
    write: &dyn Fn(&mut V),
) {
    let mut want = v.clone();
    assert_eq!(allocations(&mut want), expected, "{name}: allocations");
    let at = boxed(v);
    let mut moves = 0;
    // SAFETY: `at` was made by `boxed` and nothing else references it; the mover copies into
    // memory of the global allocator with the alignment of every array.
    let at = unsafe { defrag_value::<V>(at, &mut mover(&mut moves)) };
    assert_eq!(
        moves, expected,
        "{name}: the struct and every array moved once"
    );
    // SAFETY: `at` is where the value now is; no other reference to it lives.
    let got = unsafe { get::<V>(at) };
    assert!(*got == want, "{name}: the value is unchanged");
    assert_eq!(digest(got), digest(&want), "{name}: digest");
    assert_eq!(answers(got), answers(&want), "{name}: answers");
    // writes land in the moved arrays as they would have in the old ones
    write(got);
    write(&mut want);
    assert!(*got == want, "{name}: the same after the same writes");
    assert_eq!(digest(got), digest(&want), "{name}: digest after writes");
    assert_eq!(answers(got), answers(&want), "{name}: answers after writes");
    // SAFETY: the value is dropped once, as Redis's free callback does.
    unsafe { free::<V>(at) };
}

/// The pieces `DEBUG DIGEST` reads of `v`.
fn digest<V: Value>(v: &V) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    v.digest_pieces(&mut |p| out.push(p.to_vec()));
    out
}

fn slot_answers<T: Probe>(s: &Slot<T>) -> Vec<u64> {
    match s {
        Slot::Ready(t) => t.answers(),
        Slot::Loading(p) => vec![p.total, p.bytes.len() as u64],
    }
}

fn slot_write<T: Probe>(s: &mut Slot<T>) {
    if let Slot::Ready(t) = s {
        t.exercise();
    }
}

/// Every seed of `T` moves whole as a ready value (its struct, then its arrays), and a
/// partial LOADCHUNK value of `T` moves its struct and the bytes received.
fn every_seed_moves<T: Probe>() {
    for (i, t) in T::seeds().into_iter().enumerate() {
        let expected = 1 + t.arrays();
        moves_whole(
            &format!("{} seed {i}", T::NAME),
            Slot::Ready(t),
            expected,
            &slot_answers::<T>,
            &slot_write::<T>,
        );
    }
    let partial = Slot::<T>::Loading(Partial {
        bytes: b"BLOOMERY and the rest".to_vec(),
        total: 4096,
    });
    moves_whole(
        &format!("{} partial", T::NAME),
        partial,
        2,
        &slot_answers::<T>,
        &slot_write::<T>,
    );
}

#[test]
fn bloom_values_move_whole() {
    every_seed_moves::<ScalableBloomFilter>();
}

#[test]
fn cuckoo_values_move_whole() {
    every_seed_moves::<CuckooFilter>();
}

#[test]
fn count_min_values_move_whole() {
    every_seed_moves::<CountMinSketch32>();
}

#[test]
fn counting_values_move_whole() {
    every_seed_moves::<CountingBloomFilter>();
    every_seed_moves::<BlockedCountingBloomFilter>();
}

#[test]
fn iterative_and_multi_layer_values_move_whole() {
    every_seed_moves::<IterativeBloomFilter>();
    every_seed_moves::<MultiLayerBloomFilter>();
}

/// With and without the merged centroids a query keeps.
#[test]
fn tdigest_values_move_whole() {
    every_seed_moves::<TDigest>();
    let mut t = TDigest::try_new(50).unwrap();
    for i in 0..500u32 {
        t.insert(f64::from(i % 97)).unwrap();
    }
    let _ = t.quantiles(&[0.5]);
    assert!(t.view_bytes() > 0, "a query after writes keeps the merge");
    let expected = 1 + t.arrays();
    assert_eq!(expected, 3);
    moves_whole(
        "tdigest with its merge",
        Slot::Ready(t),
        expected,
        &slot_answers::<TDigest>,
        &slot_write::<TDigest>,
    );
}

/// Count windows of both layouts (`WBF.RESERVE`, with and without `BLOCKED`), empty, within
/// their first window and after many shifts.
fn count_windows() -> Vec<AgePartitionedBloomFilter> {
    let mut out = Vec::new();
    for layout in [WindowLayout::Sliced, WindowLayout::Blocked] {
        for n in [0u64, 300, 5_000] {
            let mut f = AgePartitionedBloomFilter::builder()
                .capacity(1_000)
                .fpr(0.01)
                .layout(layout)
                .try_build()
                .unwrap();
            for k in keys(n as usize, 1) {
                f.insert(k.as_slice());
            }
            out.push(f);
        }
    }
    out
}

/// Time windows (`TWBF.RESERVE`): fresh (its `k` first slices), and after bursts that grew
/// slices of larger scales and gaps that retired old ones (a ring that wraps in its buffer).
fn time_windows() -> Vec<TimeWindowFilter> {
    let fresh = TimeWindowFilter::try_new(10_000, 500, 0.01).unwrap();
    let mut aged = fresh.clone();
    let mut now = 0;
    for (i, k) in keys(6_000, 2).iter().enumerate() {
        now += if i % 1_500 < 1_000 { 1 } else { 40 };
        aged.insert_at(k.as_slice(), now);
    }
    assert!(aged.slices() > fresh.slices(), "the stream grew the ring");
    vec![fresh, aged]
}

fn count_window_answers(s: &Slot<AgePartitionedBloomFilter>) -> Vec<u64> {
    match s {
        Slot::Ready(f) => probe_keys()
            .iter()
            .map(|k| u64::from(f.contains(k.as_slice())))
            .chain([f.insertions()])
            .collect(),
        Slot::Loading(p) => vec![p.total, p.bytes.len() as u64],
    }
}

fn time_window_answers(s: &Slot<TimeWindowFilter>) -> Vec<u64> {
    match s {
        Slot::Ready(f) => probe_keys()
            .iter()
            .map(|k| u64::from(f.contains_at(k.as_slice(), f.clock())))
            .chain([f.insertions(), f.clock()])
            .collect(),
        Slot::Loading(p) => vec![p.total, p.bytes.len() as u64],
    }
}

/// Count windows move their struct and their one array of words; time windows their struct,
/// the ring of slice records and each slice's words; both answer, digest and take writes as
/// before. Partial LOADCHUNK values of either move their struct and the bytes received.
#[test]
fn window_values_move_whole() {
    let write_count = |s: &mut Slot<AgePartitionedBloomFilter>| {
        if let Slot::Ready(f) = s {
            for k in keys(700, 3) {
                f.insert(k.as_slice());
            }
        }
    };
    for (i, f) in count_windows().into_iter().enumerate() {
        moves_whole(
            &format!("wbf seed {i} ({:?})", f.layout()),
            Slot::Ready(f),
            2,
            &count_window_answers,
            &write_count,
        );
    }
    let write_time = |s: &mut Slot<TimeWindowFilter>| {
        if let Slot::Ready(f) = s {
            let now = f.clock();
            for (i, k) in keys(700, 3).iter().enumerate() {
                f.insert_at(k.as_slice(), now + i as u64 * 20);
            }
        }
    };
    for (i, f) in time_windows().into_iter().enumerate() {
        let expected = 2 + f.slices();
        moves_whole(
            &format!("twbf seed {i}"),
            Slot::Ready(f),
            expected,
            &time_window_answers,
            &write_time,
        );
    }
    let partial = Partial {
        bytes: b"BLOOMERY and the rest".to_vec(),
        total: 4096,
    };
    moves_whole(
        "wbf partial",
        Slot::<AgePartitionedBloomFilter>::Loading(partial.clone()),
        2,
        &count_window_answers,
        &write_count,
    );
    moves_whole(
        "twbf partial",
        Slot::<TimeWindowFilter>::Loading(partial),
        2,
        &time_window_answers,
        &write_time,
    );
}

#[test]
fn values_moved_from_redisbloom_move_whole() {
    let answers_bf = |f: &RedisBloomFilter| -> Vec<u64> {
        probe_keys()
            .iter()
            .map(|k| u64::from(f.contains(k)))
            .collect()
    };
    for (i, f) in RedisBloomFilter::seeds().into_iter().enumerate() {
        // the struct, the list of links, each link's bit array
        let expected = 2 + f.links().len();
        moves_whole(
            &format!("moved bf seed {i}"),
            f,
            expected,
            &answers_bf,
            &|f| f.exercise(),
        );
    }
    let answers_cf = |f: &RedisBloomCuckooFilter| -> Vec<u64> {
        probe_keys().iter().map(|k| f.count(k)).collect()
    };
    for (i, f) in RedisBloomCuckooFilter::seeds().into_iter().enumerate() {
        // the struct, the list of sub-filters, each one's slots
        let expected = 2 + f.filters();
        moves_whole(
            &format!("moved cf seed {i}"),
            f,
            expected,
            &answers_cf,
            &|f| f.exercise(),
        );
    }
}

/// A top-k value moves whole (its struct, buckets, list entries and items) and answers
/// exactly as before; a partial LOADCHUNK value moves its bytes.
#[test]
fn defrag_moves_values_and_their_arrays() {
    let mut t = TopK::builder(4)
        .width(64)
        .depth(3)
        .redisbloom_list(true)
        .try_build()
        .unwrap();
    for i in 0..200u32 {
        t.insert(&(i % 13));
    }
    let want = t.clone();
    let v = boxed(Slot::Ready(t));
    let mut moves = 0;
    // SAFETY: `v` was made by `boxed` and nothing else references it; the mover copies
    // into memory of the global allocator with the alignment of every array.
    let at = unsafe { defrag_value::<Slot<TopK>>(v, &mut mover(&mut moves)) };
    // the struct, the buckets, the list's entries and its 4 items
    assert_eq!(moves, 3 + want.len());
    // SAFETY: `at` is where the value now is.
    let got = unsafe { get::<Slot<TopK>>(at) };
    let Slot::Ready(t) = &*got else {
        panic!("still ready")
    };
    assert_eq!(t, &want);
    assert_eq!(t.list(), want.list());
    assert_eq!(digest(got), digest(&Slot::Ready(want.clone())));
    let mut again = t.clone();
    let mut w = want;
    assert_eq!(again.insert("x"), w.insert("x"));
    // SAFETY: the value is dropped once, as Redis's free callback does.
    unsafe { free::<Slot<TopK>>(at) };
}

/// A mover that leaves everything in place changes nothing.
#[test]
fn defrag_without_moves_keeps_the_value() {
    let t = TopK::try_with_shape(3, 16, 2, 0.9).unwrap();
    let v = boxed(Slot::Ready(t.clone()));
    let mut none = |_: NonNull<u8>| None;
    // SAFETY: `v` was made by `boxed`; the mover moves nothing.
    let at = unsafe { defrag_value::<Slot<TopK>>(v, &mut none) };
    assert_eq!(at, v);
    // SAFETY: `at` holds the value.
    assert!(unsafe { get::<Slot<TopK>>(at) } == &Slot::Ready(t));
    // SAFETY: dropped once.
    unsafe { free::<Slot<TopK>>(at) };
}

/// Defragments `v` in late-defrag steps whose clock always says stop: each step moves
/// [`STEP`] allocations (the last one the rest) from the cursor the previous one returned,
/// and the steps together move each allocation once; the value is unchanged.
fn in_steps<V: Value + PartialEq>(name: &str, v: V, expected: usize) {
    assert!(
        expected > 2 * STEP,
        "{name}: more than two steps of allocations"
    );
    let mut want = v.clone();
    assert_eq!(allocations(&mut want), expected, "{name}: allocations");
    let mut at = boxed(v);
    let (mut from, mut steps, mut total) = (0, 0, 0);
    loop {
        let mut moves = 0;
        let mut stop = || true;
        // SAFETY: `at` holds the value (made by `boxed`, moved only by earlier steps) and
        // nothing else references it; the mover copies into memory of the global allocator
        // with the alignment of every array.
        let (now, resume) =
            unsafe { defrag_step::<V>(at, from, &mut mover(&mut moves), &mut stop) };
        at = now;
        steps += 1;
        total += moves;
        assert_eq!(moves, STEP.min(expected - from), "{name}: step {steps}");
        match resume {
            Some(next) => {
                assert_eq!(next, from + STEP, "{name}: the cursor after step {steps}");
                from = next;
            }
            None => break,
        }
    }
    assert_eq!(total, expected, "{name}: every allocation moved once");
    assert_eq!(steps, expected.div_ceil(STEP), "{name}: steps");
    // SAFETY: `at` is where the value now is.
    let got = unsafe { get::<V>(at) };
    assert!(*got == want, "{name}: the value is unchanged");
    assert_eq!(digest(got), digest(&want), "{name}: digest");
    // a step whose clock never says stop does the whole value in one call (a top-k list's
    // digest keeps its saved form: one allocation more)
    let expected = allocations(got);
    let mut moves = 0;
    // SAFETY: as above.
    let (now, resume) = unsafe { defrag_step::<V>(at, 0, &mut mover(&mut moves), &mut || false) };
    assert_eq!((moves, resume), (expected, None), "{name}: one whole step");
    // SAFETY: dropped once.
    unsafe { free::<V>(now) };
}

/// Values of more allocations than one step (a top-k list of 150 items, a Bloom filter of
/// 40 sub-filters, a cuckoo filter moved from RedisBloom with many sub-filters, a time window
/// of more than 32 slices) resume from
/// their cursor and end with everything moved once.
#[test]
fn large_values_defragment_in_steps() {
    let mut t = TopK::builder(150)
        .width(256)
        .depth(3)
        .redisbloom_list(true)
        .try_build()
        .unwrap();
    for i in 0..3000u32 {
        t.insert(&(i % 400));
    }
    assert_eq!(t.len(), 150);
    let expected = 3 + t.len();
    in_steps("topk", Slot::Ready(t), expected);

    let mut b = ScalableBloomFilter::builder()
        .capacity(8)
        .fpr(0.01)
        .growth(1)
        .try_build()
        .unwrap();
    let mut i = 0u64;
    while b.filters().len() < 40 {
        b.insert(&i);
        i += 1;
    }
    let expected = 2 + b.filters().len();
    in_steps("bf", Slot::Ready(b), expected);

    let mut c = RedisBloomCuckooFilter::reserve(4, 1, 1, 1, 1 << 20).unwrap();
    let mut i = 0u64;
    while c.filters() < 40 {
        c.add(&i.to_le_bytes());
        i += 1;
    }
    let expected = 2 + c.filters();
    in_steps("moved cf", c, expected);

    // a time window whose bursts grew a ring of more than two steps of slices
    let mut t = TimeWindowFilter::try_new(100_000, 200, 0.01).unwrap();
    let (mut now, mut i) = (0u64, 0u64);
    while t.slices() <= 2 * STEP {
        now += 1;
        t.insert_at(&i, now);
        i += 1;
    }
    let expected = 2 + t.slices();
    in_steps("twbf", Slot::Ready(t), expected);
}
