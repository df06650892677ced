//! What the module's values cost Redis.
//!
//! Every byte a value holds is allocated through Redis's allocator: the module's global
//! allocator is `RedisModule_Alloc`, and at load the library is told to keep every array on
//! the global allocator ([`bloomery::tuning::set_global_allocator_only`]) instead of mapping large
//! ones privately. So `INFO memory`, `maxmemory` and eviction see the module's data.
//!
//! `MEMORY USAGE` reports what a value holds as Redis counts it: each allocation at the size
//! Redis's allocator really gives it. With jemalloc (Redis's default) that is the request
//! rounded up to jemalloc's size class (four classes per power of two: a 10.4 MiB filter
//! takes 12 MiB). [`calibrate`] checks at load that the server's allocator rounds exactly so,
//! by asking it for a few sizes; with any other allocator the requested sizes are reported.

use std::sync::atomic::{AtomicBool, Ordering};

static JEMALLOC_CLASSES: AtomicBool = AtomicBool::new(false);

/// The size class jemalloc (with its default 16-byte quantum and four classes per doubling)
/// gives a request of `n ≥ 1` bytes.
pub fn jemalloc_class(n: u64) -> u64 {
    if n <= 8 {
        return 8;
    }
    // the class group (2^g, 2^(g+1)] holding n is split into four, never finer than 16 bytes
    let g = 63 - (n - 1).leading_zeros();
    let spacing = 1u64 << g.saturating_sub(2).max(4);
    n.div_ceil(spacing).saturating_mul(spacing)
}

/// Bytes Redis counts for an allocation of `n` bytes (0 for none).
pub fn charged(n: u64) -> u64 {
    if n == 0 {
        0
    } else if JEMALLOC_CLASSES.load(Ordering::Relaxed) {
        jemalloc_class(n)
    } else {
        n
    }
}

/// Bytes of the heap allocation behind an array of `words` 64-bit words (the library keeps
/// arrays in whole 64-byte cache lines).
pub fn words_bytes(words: u64) -> u64 {
    words.div_ceil(8).saturating_mul(64)
}

/// Ask the server's allocator what it gives a few request sizes; if every answer is
/// jemalloc's size class, report allocations rounded that way from now on. Returns whether
/// it does.
///
/// The largest probe stays below jemalloc's `oversize_threshold` (8 MiB by default): a larger
/// one would open the arena jemalloc keeps for huge allocations in every server that loads
/// the module, and Redis merges each open arena's statistics at every refresh of its memory
/// figures (ten a second), about 80,000 instructions more per refresh for that arena alone.
/// The classes above 8 MiB follow the same rule as those probed.
pub fn calibrate() -> bool {
    let (Some(alloc), Some(size), Some(free)) = (
        // SAFETY: reading function pointers Redis filled in at module load.
        unsafe { redis_module::raw::RedisModule_Alloc },
        // SAFETY: as above.
        unsafe { redis_module::raw::RedisModule_MallocSize },
        // SAFETY: as above.
        unsafe { redis_module::raw::RedisModule_Free },
    ) else {
        return false;
    };
    let probes: [usize; 10] = [
        1,
        24,
        100,
        1000,
        5000,
        20_000,
        100_000,
        (1 << 20) + 1,
        (3 << 20) + 64,
        (6 << 20) + 4096,
    ];
    let all = probes.iter().all(|&n| {
        // SAFETY: a plain allocation of `n` bytes from Redis's allocator; it is sized and
        // freed right here and never read or written.
        unsafe {
            let p = alloc(n);
            if p.is_null() {
                return false;
            }
            let got = size(p);
            free(p);
            got as u64 == jemalloc_class(n as u64)
        }
    });
    JEMALLOC_CLASSES.store(all, Ordering::Relaxed);
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jemalloc_size_classes() {
        let cases = [
            (1, 8),
            (8, 8),
            (9, 16),
            (17, 32),
            (33, 48),
            (64, 64),
            (65, 80),
            (129, 160),
            (257, 320),
            (4097, 5120),
            (16385, 20480),
            (10 << 20 | 1, 12 << 20),
            (12 << 20, 12 << 20),
            ((12 << 20) + 1, 14 << 20),
        ];
        for (n, class) in cases {
            assert_eq!(jemalloc_class(n), class, "{n}");
        }
        // Classes never shrink a request and are never more than 25% above it past 64 bytes.
        for n in (1..100_000u64).step_by(7) {
            let c = jemalloc_class(n);
            assert!(c >= n);
            assert!(n <= 64 || c * 4 <= n * 5, "{n} → {c}");
        }
    }

    #[test]
    fn words_take_whole_lines() {
        assert_eq!(words_bytes(0), 0);
        assert_eq!(words_bytes(1), 64);
        assert_eq!(words_bytes(8), 64);
        assert_eq!(words_bytes(9), 128);
    }
}
