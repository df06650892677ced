use super::*;
use crate::io::format::Persist;
use proptest::prelude::*;
use std::collections::VecDeque;

/// Keys never inserted: the high bit set; inserted keys stay below it.
const FRESH: u64 = 1 << 63;

/// A fixed-seed generator (splitmix64).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        crate::hash::mix64(self.0)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn filter(window: u64, capacity: u64, p: f64, seed: u64) -> TimeWindowFilter {
    TimeWindowFilter::builder()
        .window(window)
        .capacity(capacity)
        .fpr(p)
        .seed(seed)
        .try_build()
        .unwrap()
}

#[test]
fn sizing_meets_the_target_with_the_design_slices() {
    for (n, p) in [(1000, 0.01), (100_000, 0.01), (100_000, 0.001), (10, 0.1)] {
        let f = TimeWindowFilter::try_new(60, n, p).unwrap();
        assert!(f.worst_fpr() <= p, "{n} {p}: {}", f.worst_fpr());
        assert_eq!(
            f.design_slices(),
            f.hashes() + 2 * f.generations_per_window() + 1
        );
        assert_eq!(
            f.period(),
            60u64.div_ceil(u64::from(f.generations_per_window()))
        );
        assert_eq!(f.slices(), f.hashes() as usize);
    }
    assert!(TimeWindowFilter::try_new(0, 10, 0.01).is_err());
    assert!(TimeWindowFilter::builder()
        .capacity(10)
        .fpr(0.01)
        .try_build()
        .is_err());
    assert!(TimeWindowFilter::builder()
        .window(5)
        .capacity(10)
        .fpr(0.01)
        .bits(100)
        .try_build()
        .is_err());
}

#[test]
fn a_key_stays_for_the_window_and_goes_after_the_slack() {
    let mut f = filter(600, 1000, 0.01, 1);
    f.insert_at("a", 1000);
    for t in [1000, 1300, 1599, 1600] {
        assert!(f.contains_at("a", t), "{t}");
    }
    // other keys keep arriving: "a" is found to the end of the window
    for (i, t) in (1000..1600).step_by(3).enumerate() {
        f.insert_at(&(i as u64), t);
        assert!(f.contains_at("a", t), "{t}");
    }
    assert!(f.contains_at("a", 1600));
    let gone = 1000 + 600 + f.slack() + 1;
    assert!(!f.contains_at("a", gone));
    f.advance(gone);
    assert!(!f.contains_at("a", gone));
    assert_eq!(f.clock(), gone);
}

#[test]
fn an_idle_gap_longer_than_the_window_forgets_everything() {
    let mut f = filter(100, 500, 0.01, 2);
    for i in 0..2000u64 {
        f.insert_at(&i, i / 10);
    }
    let before = f.slices();
    assert!(before > f.hashes() as usize);
    let later = 200 + 100 + f.slack() + 1;
    f.advance(later);
    assert_eq!(f.slices(), f.hashes() as usize);
    assert_eq!(f.live_slices(later), f.hashes() as usize);
    assert!(f.slice_fill().iter().all(|&(ones, _)| ones == 0));
    assert_eq!(f.oldest_age(later), None);
    assert_eq!(f.current_fpr(later), 0.0);
    assert!((0..2000u64).all(|i| !f.contains_at(&i, later)));
    // and after a gap a little longer than the window, without advance: the query alone
    // stops at the retired slices
    let mut g = filter(100, 500, 0.01, 2);
    g.insert_at("x", 0);
    assert!(g.contains_at("x", 100));
    assert!(!g.contains_at("x", 101 + g.slack()));
    g.insert_at("y", 101 + g.slack());
    assert!(!g.contains_at("x", 101 + g.slack()));
    assert!(g.contains_at("y", 101 + g.slack()));
}

#[test]
fn time_never_runs_backwards() {
    let mut f = filter(100, 100, 0.01, 3);
    f.insert_at("late", 500);
    // a record stamped earlier than the clock is taken as arriving now
    f.insert_at("early", 10);
    assert_eq!(f.clock(), 500);
    assert!(f.contains_at("early", 600));
    assert!(f.contains_at("late", 10));
}

/// Checks every key inserted in the last `window` ticks after each insertion: no false
/// negative, with arrivals in bursts and gaps.
fn check_no_false_negative(seed: u64, window: u64, capacity: u64, steps: &[(u64, u64)]) {
    let mut f = filter(window, capacity, 0.01, seed);
    let mut recent: VecDeque<(u64, u64)> = VecDeque::new();
    let mut now = 0u64;
    let mut key = 0u64;
    for &(gap, burst) in steps {
        now += gap;
        for _ in 0..burst {
            f.insert_at(&key, now);
            recent.push_back((key, now));
            key += 1;
        }
        while recent.front().is_some_and(|&(_, t)| now - t > window) {
            recent.pop_front();
        }
        for &(k, t) in &recent {
            assert!(
                f.contains_at(&k, now),
                "key {k} of time {t} lost at {now} (window {window})"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn no_false_negative_inside_the_window(
        seed in any::<u64>(),
        window in 1u64..200,
        capacity in 1u64..300,
        steps in prop::collection::vec((0u64..120, 0u64..60), 1..120),
    ) {
        check_no_false_negative(seed, window, capacity, &steps);
    }

    #[test]
    fn loading_distrusts_every_byte(pos in 0usize..4096, byte in any::<u8>(), seed in 0u64..4) {
        let mut f = filter(50, 40, 0.01, seed);
        for i in 0..300u64 {
            f.insert_at(&i, i / 3);
        }
        let mut bytes = f.to_bytes();
        let at = pos % bytes.len();
        bytes[at] = byte;
        // either refused or a filter that works (the checksum refuses almost every change)
        if let Ok(g) = TimeWindowFilter::from_bytes(&bytes) {
            let _ = g.contains_at("x", 1000);
            let mut g = g;
            g.insert_at("x", 2000);
        }
    }
}

#[test]
fn bursts_and_gaps_lose_nothing() {
    // a steady trickle, a burst of 50× the capacity in one tick, silence longer than the
    // window, then a burst again
    let mut steps = vec![(1, 1); 300];
    steps.push((1, 5000));
    steps.extend(vec![(0, 20); 10]);
    steps.push((1000, 0));
    steps.push((1, 3000));
    steps.extend(vec![(3, 2); 200]);
    check_no_false_negative(7, 100, 100, &steps);
}

/// The false positives of `probes` fresh keys at `now`.
fn false_positives(f: &TimeWindowFilter, rng: &mut Rng, probes: u64, now: u64) -> u64 {
    (0..probes)
        .filter(|_| f.contains_at(&(FRESH | rng.next()), now))
        .count() as u64
}

#[test]
fn steady_stream_of_a_hundred_windows_keeps_the_target() {
    // 2000 insertions per window of 1000 ticks, 100 windows; probed just before each shift,
    // the worst points of the stream
    let (window, n, p) = (1000u64, 2000u64, 0.01);
    let mut f = filter(window, n, p, 11);
    let mut rng = Rng(5);
    let (mut fp, mut q) = (0u64, 0u64);
    let mut max_model = 0f64;
    let mut key = 0u64;
    for tick in 0..100 * window {
        for _ in 0..2 {
            f.insert_at(&key, tick);
            key += 1;
        }
        if tick > window && tick.is_multiple_of(97) {
            max_model = max_model.max(f.current_fpr(tick));
            fp += false_positives(&f, &mut rng, 400, tick);
            q += 400;
        }
    }
    let (qf, bound) = (
        q as f64,
        q as f64 * p + 3.0 * (q as f64 * p * (1.0 - p)).sqrt(),
    );
    eprintln!(
        "steady: {fp} of {q} fresh keys found ({:.3e}); model at most {max_model:.3e}; \
         {} slices, {} bytes",
        fp as f64 / qf,
        f.slices(),
        f.bytes()
    );
    assert!((fp as f64) <= bound, "{fp} > {bound}");
    assert!(max_model <= p, "{max_model}");
    assert!(f.slices() <= f.design_slices() as usize);
    assert_eq!(f.forgotten_early(), 0);
}

#[test]
fn memory_follows_the_rate_and_the_target_holds_once_it_settles() {
    // the rate goes 1×, 16×, 1/4× the capacity per window, a hundred windows in all; after each
    // change, once a window has passed, the model and the measured rate are under the target
    let (window, n, p) = (500u64, 1000u64, 0.01);
    let mut f = filter(window, n, p, 13);
    let mut rng = Rng(17);
    let mut key = 0u64;
    let (mut fp, mut q) = (0u64, 0u64);
    let mut bytes_at = Vec::new();
    let phases: [(u64, u64, u64); 3] = [(2, 1, 30), (32, 1, 40), (1, 2, 30)]; // per `every` ticks
    let mut tick = 0u64;
    let mut recent: VecDeque<(u64, u64)> = VecDeque::new();
    for (per, every, windows) in phases {
        let start = tick;
        while tick < start + windows * window {
            if tick.is_multiple_of(every) {
                for _ in 0..per {
                    f.insert_at(&key, tick);
                    recent.push_back((key, tick));
                    key += 1;
                }
            }
            while recent.front().is_some_and(|&(_, t)| tick - t > window) {
                recent.pop_front();
            }
            if tick >= start + 2 * window && tick.is_multiple_of(53) {
                let model = f.current_fpr(tick);
                assert!(model <= p, "model {model} at {tick}");
                fp += false_positives(&f, &mut rng, 200, tick);
                q += 200;
                // the oldest of the window is found
                if let Some(&(k, t)) = recent.front() {
                    assert!(f.contains_at(&k, tick), "{k} of {t} at {tick}");
                }
            }
            tick += 1;
        }
        bytes_at.push(f.bytes());
    }
    let bound = q as f64 * p + 3.0 * (q as f64 * p * (1.0 - p)).sqrt();
    eprintln!("varying: {fp} of {q}; bytes at the end of each phase {bytes_at:?}");
    assert!((fp as f64) <= bound, "{fp} > {bound}");
    // 16× the rate takes more memory, and the quiet phase gives it back
    assert!(bytes_at[1] > 4 * bytes_at[0], "{bytes_at:?}");
    assert!(bytes_at[2] < bytes_at[1] / 4, "{bytes_at:?}");
    assert_eq!(f.forgotten_early(), 0);
}

#[test]
fn the_same_calls_make_the_same_filter_and_files_round_trip() {
    let run = || {
        let mut f = filter(300, 200, 0.001, 21);
        let mut rng = Rng(3);
        let mut t = 0;
        for i in 0..5000u64 {
            t += rng.below(3);
            if rng.below(500) == 0 {
                t += 400;
            }
            f.insert_at(&i, t);
        }
        f
    };
    let (a, b) = (run(), run());
    assert_eq!(a, b);
    let back = TimeWindowFilter::from_bytes(&a.to_bytes()).unwrap();
    assert_eq!(back, a);
    assert_eq!(back.to_bytes(), a.to_bytes());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.bloom");
    a.save(&path).unwrap();
    let loaded = TimeWindowFilter::load(&path).unwrap();
    assert_eq!(loaded, a);
    // a loaded filter goes on as the original does
    let (mut x, mut y) = (a, loaded);
    for i in 0..500u64 {
        x.insert_at(&(i + FRESH), 20_000 + i);
        y.insert_at(&(i + FRESH), 20_000 + i);
    }
    assert_eq!(x, y);
}

#[test]
fn the_memory_limit_forgets_early_and_says_so() {
    let mut f = TimeWindowFilter::builder()
        .window(1000)
        .capacity(100)
        .fpr(0.01)
        .max_bytes(4096)
        .try_build()
        .unwrap();
    for i in 0..100_000u64 {
        f.insert_at(&i, i / 100);
        assert!(f.bytes() <= 4096);
    }
    assert!(f.forgotten_early() > 0);
}

/// `relocate_arrays` moves the ring of slice records and every slice's words (as an allocator
/// that defragments does: a copy in a new allocation, the old one freed), in that order; the
/// ring keeps its order (it wraps in its buffer here) and the filter answers and saves exactly
/// as before, and the same insertions give the same filter.
#[test]
fn relocated_arrays_answer_the_same() {
    use std::alloc::{alloc, dealloc, Layout};
    use std::collections::HashMap;
    use std::ptr::NonNull;

    let mut f = filter(1_000, 200, 0.01, 5);
    // bursts grow slices of larger scales; time retires old ones
    let (mut now, mut i) = (0, 0u64);
    while i < 3_000 || f.ring.as_slices().1.is_empty() {
        now += if i % 700 < 400 { 1 } else { 3 };
        f.insert_at(&i, now);
        i += 1;
        assert!(i < 100_000, "the ring wraps in its buffer");
    }
    assert!(f.ring.len() > 3);
    let before = f.clone();
    // the words' layouts by address, as an allocator knows them; the ring's buffer comes first
    let mut words: HashMap<usize, Layout> = f
        .ring
        .iter()
        .map(|s| {
            assert!(!s.words.is_mapped());
            let l = Layout::from_size_align(s.words.allocated_bytes(), 64).unwrap();
            (s.words.as_slice().as_ptr() as usize, l)
        })
        .collect();
    let ring = Layout::array::<Slice>(f.ring.capacity()).unwrap();
    let mut moves = 0;
    let mut mv = |p: NonNull<u8>| -> Option<NonNull<u8>> {
        let l = if moves == 0 {
            ring
        } else {
            words
                .remove(&(p.as_ptr() as usize))
                .expect("a slice's words, once")
        };
        // SAFETY: `l` is the layout `p` was allocated with; the copy stays within both.
        unsafe {
            let new = NonNull::new(alloc(l))?;
            std::ptr::copy_nonoverlapping(p.as_ptr(), new.as_ptr(), l.size());
            dealloc(p.as_ptr(), l);
            moves += 1;
            Some(new)
        }
    };
    // SAFETY: the mover copies into an allocation of the global allocator of the same layout
    // and frees the old one.
    unsafe { f.relocate_arrays(&mut mv) };
    assert!(words.is_empty(), "every slice's words moved");
    assert_eq!(moves, 1 + before.ring.len());
    assert_eq!(f, before);
    assert_eq!(f.to_bytes(), before.to_bytes());
    for i in 0..i + 100 {
        assert_eq!(
            f.contains_at(&i, now),
            before.contains_at(&i, now),
            "key {i}"
        );
    }
    let mut b = before;
    for i in 0..2_000u64 {
        now += 2;
        assert_eq!(
            f.insert_at(&(FRESH + i), now),
            b.insert_at(&(FRESH + i), now)
        );
    }
    assert_eq!(f, b, "the same after the same insertions");
}
