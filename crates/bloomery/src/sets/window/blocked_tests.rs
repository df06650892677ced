//! Tests of the blocked layout of the age-partitioned filter.

use super::blocked::{blocked_fpr, blocked_fpr_worst, blocked_shape, WORD_BITS};
use super::*;
use crate::error::Error;
use crate::filter::KeySet;
use proptest::prelude::*;

/// Keys never inserted: the high bit set, inserted keys stay below it.
const FRESH: u64 = 1 << 63;

fn blocked(window: u64, p: f64, seed: u64) -> AgePartitionedBloomFilter {
    AgePartitionedBloomFilter::builder()
        .capacity(window)
        .fpr(p)
        .seed(seed)
        .layout(WindowLayout::Blocked)
        .try_build()
        .unwrap()
}

/// Three standard deviations above `p` for `q` binomial queries.
fn three_sigma(p: f64, q: u64) -> f64 {
    p + 3.0 * (p * (1.0 - p) / q as f64).sqrt()
}

#[test]
fn the_model_is_the_sliced_one_when_loads_do_not_vary() {
    // one block: every key in the same block, the load of each generation is its size, so the
    // draws do not vary and the model is the sliced model over 64-bit slices (Poisson draws
    // of a mean of g/1 keys vary; with g = 0 in every generation the filter is empty)
    let (mean, se) = blocked_fpr(3, 2, 1, 0, 0, 5);
    assert_eq!((mean, se), (0.0, 0.0));
    // many blocks, few keys per block: the average over loads is above the rate of the mean
    // load (Jensen: the rate is convex in the load where it matters), and both are small
    let (k, l, g) = (7u32, 7u32, 10_000u64);
    let blocks = 4000u64;
    let (mean, se) = blocked_fpr(k, l, blocks, g, g - 1, u64::from(k + l));
    let sliced = params::apbf_fpr_worst(k, l, blocks * WORD_BITS, g);
    eprintln!("mean {mean:.3e} ± {se:.1e}, sliced at the mean load {sliced:.3e}");
    assert!(mean > sliced, "{mean} vs {sliced}");
    assert!(se < mean / 10.0, "{se} vs {mean}");
}

#[test]
fn the_model_falls_as_blocks_are_added() {
    let (k, l, g) = (7u32, 7u32, 1000u64);
    let mut last = 1.0;
    for blocks in [200u64, 300, 400, 600, 900] {
        let r = blocked_fpr_worst(k, l, blocks, g);
        assert!(r < last, "{blocks}: {r} vs {last}");
        last = r;
    }
}

#[test]
fn shape_meets_the_target_with_the_fewest_blocks() {
    for (n, p) in [
        (1000u64, 0.01),
        (100_000, 0.01),
        (100_000, 0.001),
        (1_000_000, 0.01),
    ] {
        let (k, l, blocks) = blocked_shape(n, p).unwrap();
        let g = n.div_ceil(u64::from(l));
        let worst = blocked_fpr_worst(k, l, blocks, g);
        let sliced = params::apbf_shape(n, p).unwrap();
        let bits = blocks * WORD_BITS * u64::from(k + l);
        eprintln!(
            "window {n} p {p}: k {k} l {l} blocks {blocks} bits/item {:.2} (sliced {:.2}), bound {worst:.3e}",
            bits as f64 / n as f64,
            sliced.bits() as f64 / n as f64
        );
        assert!(worst <= p, "{n} {p}: {worst}");
        assert!(u64::from(l) * g >= n);
        // 1/64 fewer blocks miss the target: the count is the smallest up to the search step
        let fewer = blocks - blocks / 64 - 1;
        assert!(blocked_fpr_worst(k, l, fewer, g) > p, "{n} {p}: {fewer}");
    }
}

#[test]
fn an_insertion_touches_one_block() {
    let mut f = AgePartitionedBloomFilter::builder()
        .capacity(60)
        .shape(4, 6, 8 * WORD_BITS)
        .layout(WindowLayout::Blocked)
        .try_build()
        .unwrap();
    assert_eq!(f.blocks(), 8);
    let h = f.hasher().hash("a");
    f.insert_hashed(h);
    let s = 10usize;
    let block = blocked::block_of(h, 8) as usize;
    for (i, w) in f.core.words.as_slice().iter().enumerate() {
        let expect = if i / s == block && i % s < 4 { 1 } else { 0 };
        assert_eq!(w.count_ones(), expect, "word {i}");
    }
    assert_eq!(f.slice_ones(), vec![1, 1, 1, 1, 0, 0, 0, 0, 0, 0]);
}

#[test]
fn slices_age_and_clear_as_in_the_sliced_layout() {
    let mk = || {
        AgePartitionedBloomFilter::builder()
            .capacity(6)
            .shape(2, 3, WORD_BITS)
            .layout(WindowLayout::Blocked)
            .try_build()
            .unwrap()
    };
    let mut f = mk();
    assert_eq!((f.generation(), f.slack()), (2, 3));
    f.insert("a");
    f.insert("b");
    assert_eq!(f.ring_position(), 4);
    assert_eq!(f.slice_ones()[0], 0);
    for i in 0..4u32 {
        f.insert(&i);
        assert!(f.contains("a") && f.contains("b"), "{i}");
    }
    for i in 4..8u32 {
        f.insert(&i);
    }
    // window + slack further insertions: the bits are those of a filter that never saw them
    let mut other = mk();
    other.insert("c");
    other.insert("d");
    for i in 0..8u32 {
        other.insert(&i);
    }
    assert_eq!(other, f);
}

/// After each of `len` distinct insertions, the key inserted `window - 1` insertions earlier
/// (the oldest the window must hold) is found; bits only leave by ageing, so it was found at
/// every younger age too.
fn check_no_false_negative(window: u64, p: f64, seed: u64, len: u64) {
    let mut f = blocked(window, p, seed);
    for t in 0..len {
        f.insert(&t);
        if t + 1 >= window {
            let oldest = t + 1 - window;
            assert!(
                f.contains(&oldest),
                "window {window}: key {oldest} lost at {t}"
            );
        }
    }
}

#[test]
fn no_false_negative_in_the_window() {
    for (window, seed) in [(1000, 11), (10_000, 12), (100_000, 13)] {
        check_no_false_negative(window, 0.01, seed, 100 * window);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(8))]
    #[test]
    fn no_false_negative_for_any_window(window in 1000u64..2000, seed: u64, pi in 0usize..3) {
        let p = [0.1, 0.01, 0.001][pi];
        check_no_false_negative(window, p, seed, 100 * window);
    }
}

/// The measured rate of keys never inserted at the worst points (just before each shift,
/// once the ring has turned) of a stream of 100 windows, against the target within three
/// standard deviations; and the largest model rate seen at those points.
pub(super) fn worst_point_rate(f: &mut AgePartitionedBloomFilter, probes: u64) -> (f64, u64, f64) {
    let window = f.window();
    let g = f.generation();
    let ring = f.slices() * g;
    let (mut fp, mut q) = (0u64, 0u64);
    let mut probe = FRESH;
    for t in 0..100 * window {
        f.insert(&t);
        if t >= ring && f.position_in_generation() == g - 1 {
            for _ in 0..probes {
                fp += u64::from(f.contains(&probe));
                probe += 1;
                q += 1;
            }
        }
    }
    let model = f.model_fpr();
    (fp as f64 / q as f64, q, model)
}

#[test]
fn rate_at_the_worst_point_is_at_most_the_target() {
    for (window, p, seed, probes) in [
        (1000u64, 0.01, 21, 5000),
        (10_000, 0.01, 22, 2000),
        (10_000, 0.001, 23, 5000),
        (100_000, 0.01, 24, 2000),
    ] {
        let mut f = blocked(window, p, seed);
        assert!(f.worst_fpr() <= p);
        let (rate, q, model) = worst_point_rate(&mut f, probes);
        eprintln!("blocked window {window} p {p}: worst-point rate {rate:.3e} over {q} probes, model {model:.3e}");
        assert!(
            rate <= three_sigma(p, q),
            "window {window} p {p}: {rate} over {q} queries"
        );
    }
}

#[test]
fn keys_past_the_window_and_slack_are_forgotten() {
    let (window, p) = (5000u64, 0.01);
    let mut f = blocked(window, p, 27);
    let gone_after = window + f.slack();
    let (mut present, mut q) = (0u64, 0u64);
    for t in 0..40 * window {
        f.insert(&t);
        if t >= gone_after {
            present += u64::from(f.contains(&(t - gone_after)));
            q += 1;
        }
    }
    let rate = present as f64 / q as f64;
    assert!(
        rate <= three_sigma(p, q),
        "{rate} of {q} old keys still present"
    );
}

#[test]
fn save_load_round_trip_keeps_layout_and_point() {
    let mut f = blocked(500, 0.01, 5);
    for i in 0..1234u32 {
        f.insert(&i);
    }
    let bytes = f.to_bytes();
    assert_eq!(
        crate::file::peek_header_bytes(&bytes).unwrap().header.kind,
        Kind::WindowBlocked
    );
    let g = AgePartitionedBloomFilter::from_bytes(&bytes).unwrap();
    assert_eq!(g.layout(), WindowLayout::Blocked);
    assert_eq!(f, g);
    let (mut a, mut b) = (f.clone(), g);
    for i in 5000..6000u32 {
        a.insert(&i);
        b.insert(&i);
    }
    assert_eq!(a, b);
    let any = crate::any::filter::AnyFilter::from_bytes(&bytes).unwrap();
    assert_eq!(any.kind(), Kind::WindowBlocked);
}

#[test]
fn a_mapped_file_answers_as_the_filter() {
    if !cfg!(feature = "mmap") {
        eprintln!("skipped: needs the mmap feature");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.bloom");
    let mut f = blocked(2000, 0.01, 9);
    for i in 0..3000u32 {
        f.insert(&i);
    }
    f.save(&path).unwrap();
    let file = crate::io::mapped::MappedFile::open(&path).unwrap();
    let m = crate::any::filter::AnyFilter::from_mapped(&file).unwrap();
    assert_eq!(m.kind(), Kind::WindowBlocked);
    for i in 0..4000u32 {
        assert_eq!(
            m.try_contains_key(&i.to_le_bytes()).unwrap(),
            f.contains(&i),
            "{i}"
        );
    }
}

/// Each forged field, encoded with a valid checksum, is refused with a clear error.
#[test]
fn forged_files_are_refused() {
    let mut f = blocked(100, 0.01, 3);
    for i in 0..150u32 {
        f.insert(&i);
    }
    let forge = |edit: &dyn Fn(&mut AgePartitionedBloomFilter)| {
        let mut x = f.clone();
        edit(&mut x);
        AgePartitionedBloomFilter::from_bytes(&x.to_bytes()).unwrap_err()
    };
    let s = f.k + f.l;
    for (what, e) in [
        ("ring", forge(&|x| x.head = s)),
        ("count", forge(&|x| x.count = x.generation)),
        ("k", forge(&|x| x.k = 0)),
        ("l", forge(&|x| x.l = APBF_MAX_L + 1)),
        ("window", forge(&|x| x.window = 0)),
        ("words", forge(&|x| x.slice_bits += 1)),
        ("slices", forge(&|x| x.slice_bits += 64)),
        ("slices", forge(&|x| x.slice_bits = u64::MAX / 128)),
    ] {
        assert!(
            matches!(e, Error::Format(_)),
            "{what}: {e:?} is not a format error"
        );
    }
    // a sliced file whose kind says blocked with slices not whole words
    let mut x = AgePartitionedBloomFilter::try_with_shape(10, 1, 1, 100).unwrap();
    x.layout = WindowLayout::Blocked;
    assert!(matches!(
        AgePartitionedBloomFilter::from_bytes(&x.to_bytes()),
        Err(Error::Format(_))
    ));
}

#[test]
fn a_blocked_shape_needs_whole_words() {
    let e = AgePartitionedBloomFilter::builder()
        .capacity(100)
        .shape(3, 3, 100)
        .layout(WindowLayout::Blocked)
        .try_build()
        .unwrap_err();
    assert!(e.to_string().contains("64-bit words"), "{e}");
}

#[test]
fn any_filter_builds_the_layout_by_kind() {
    let mut f = crate::any::filter::AnyFilter::builder(Kind::WindowBlocked)
        .capacity(1000)
        .fpr(0.01)
        .try_build()
        .unwrap();
    assert!(f.try_insert_key(b"a").unwrap());
    assert!(f.try_contains_key(b"a").unwrap());
    assert_eq!(f.kind(), Kind::WindowBlocked);
    assert_eq!(Kind::WindowBlocked.rust_type(), Kind::Window);
    let back = crate::any::filter::AnyFilter::from_bytes(&f.to_bytes()).unwrap();
    assert_eq!(back, f);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    /// The query over the whole block at once answers as the slice-by-slice scan, at every
    /// head position of the ring, for shapes of up to 64 slices (the one-pass path) and above
    /// (the scan itself); and the run test finds exactly the runs of `k` bits.
    #[test]
    fn the_block_query_answers_as_the_scan(
        k in 1u32..=40,
        l in 1u32..=40,
        blocks in 1u64..40,
        seed: u64,
        inserts in 0u64..600,
    ) {
        let mut f = AgePartitionedBloomFilter::builder()
            .capacity(u64::from(l) * 3)
            .shape(k, l, blocks * WORD_BITS)
            .seed(seed)
            .layout(WindowLayout::Blocked)
            .try_build()
            .unwrap();
        for t in 0..inserts {
            f.insert(&t);
            if t % 7 == 0 {
                for q in [t, t / 2, FRESH + t] {
                    let h = f.hasher().hash(&q);
                    prop_assert_eq!(f.contains_hashed(h), f.contains_blocked_scan(h), "key {}", q);
                }
            }
        }
    }

    #[test]
    fn the_run_test_finds_runs_of_k(x: u64, k in 1u32..=64) {
        let longest = (0..64).fold((0u32, 0u32), |(run, best), i| {
            let run = if x >> i & 1 == 1 { run + 1 } else { 0 };
            (run, best.max(run))
        }).1;
        prop_assert_eq!(super::blocked::has_run(x, k), longest >= k);
    }
}

#[test]
fn the_ring_turns_into_age_order() {
    // physical slice p at bit p; the newest slice at physical `head`
    let s = 5;
    let hits = 0b00110; // physical slices 1 and 2
    assert_eq!(super::blocked::by_age(hits, 0, s), 0b00110);
    assert_eq!(super::blocked::by_age(hits, 1, s), 0b00011); // ages 0, 1
    assert_eq!(super::blocked::by_age(hits, 3, s), 0b11000); // ages 3, 4
    assert_eq!(super::blocked::by_age(u64::MAX, 17, 64), u64::MAX);
    assert_eq!(super::blocked::by_age(1, 63, 64), 1 << 1);
}
