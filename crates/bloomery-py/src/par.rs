//! Large read-only batches split over threads.
//!
//! A batch query answers each key independently, so `contains_many` can cut its keys into
//! consecutive parts, answer each part on its own thread (the GIL is released, the structure
//! held by a shared detached guard) and write each answer into its own slot of the result:
//! the answers are the same, in the same order, as one thread's. Batches that mutate a
//! structure stay on one thread (the structure's write guard is one `&mut`).

use std::ops::Range;
use std::sync::{Mutex, OnceLock};

use pyo3::PyResult;

/// Keys per part below which a batch is not split: starting a thread costs tens of
/// microseconds, answering 65,536 keys a millisecond or more.
const MIN_PART: usize = 1 << 16;

/// Upper bound on the threads of one call, whatever the machine reports.
const MAX_THREADS: usize = 16;

/// Threads a batch may use: `BLOOMERY_THREADS` if set to a positive integer (read once, at
/// the first large batch), else the machine's available parallelism; at most [`MAX_THREADS`].
pub fn threads() -> usize {
    static N: OnceLock<usize> = OnceLock::new();
    *N.get_or_init(|| {
        std::env::var("BLOOMERY_THREADS")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|&n| n > 0)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
            .min(MAX_THREADS)
    })
}

/// Run `f(range, slots)` over consecutive parts of `0..out.len()`, each with its own slice of
/// `out` (`slots[i]` is `out[range.start + i]`): the whole batch on the calling thread when it
/// is small, else parts of at least [`MIN_PART`] keys shared out to [`threads`] threads (the
/// calling one included) as each finishes its previous part, so a thread slowed by other work
/// on the machine takes fewer parts. Returns the error of the first failing part in key order
/// (the error one thread's run would have met first), `Ok` if none failed. When a thread
/// cannot be started, the others do its share.
pub fn for_parts<T: Send>(
    out: &mut [T],
    f: impl Fn(Range<usize>, &mut [T]) -> PyResult<()> + Sync,
) -> PyResult<()> {
    let n = out.len();
    let threads = threads();
    let parts = (n / MIN_PART).min(4 * threads);
    if parts <= 1 || threads <= 1 {
        return f(0..n, out);
    }
    let per = n.div_ceil(parts);
    // the parts, last first, so that `pop` hands them out in key order
    let mut queue: Vec<(usize, Range<usize>, &mut [T])> = out
        .chunks_mut(per)
        .enumerate()
        .map(|(i, slots)| (i, i * per..i * per + slots.len(), slots))
        .collect();
    queue.reverse();
    let queue = Mutex::new(queue);
    let work = || {
        let mut done = Vec::new();
        loop {
            let next = queue.lock().unwrap_or_else(|p| p.into_inner()).pop();
            let Some((i, r, slots)) = next else {
                return done;
            };
            done.push((i, f(r, slots)));
        }
    };
    let mut done = std::thread::scope(|s| {
        let helpers: Vec<_> = (1..threads.min(parts))
            .filter_map(|_| {
                std::thread::Builder::new()
                    .name("bloomery-batch".into())
                    .spawn_scoped(s, work)
                    .ok()
            })
            .collect();
        let mut done = work();
        for h in helpers {
            done.extend(h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
        }
        done
    });
    done.sort_unstable_by_key(|&(i, _)| i);
    done.into_iter().try_for_each(|(_, r)| r)
}
