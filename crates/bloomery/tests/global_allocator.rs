//! `store::set_global_allocator_only`: an embedding program (the Redis module) can make every
//! array the library holds visible to its global allocator. This binary installs a counting
//! global allocator and checks which large arrays it sees, with the switch off and on.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use bloomery::prelude::*;
use bloomery::CountMinSketch;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards every call to the system allocator unchanged; only counts bytes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: same layout contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const BYTES: u64 = 16 << 20;

/// Bytes the global allocator holds for `make`'s result while it lives.
fn held<T>(make: impl FnOnce() -> T) -> usize {
    let before = LIVE.load(Ordering::Relaxed);
    let value = make();
    let after = LIVE.load(Ordering::Relaxed);
    drop(value);
    after.saturating_sub(before)
}

#[test]
fn large_arrays_go_to_the_global_allocator_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.bloom");
    BlockedBloomFilter::try_with_shape(BYTES / 64, 8)
        .unwrap()
        .save(&path)
        .unwrap();
    let big = || BlockedBloomFilter::try_with_shape(BYTES / 64, 8).unwrap();
    let sketch = || CountMinSketch::try_with_shape(BYTES / 8 / 4, 4).unwrap();
    let loaded = || BlockedBloomFilter::load(&path).unwrap();

    // Default: arrays of 1 MiB and more are anonymous maps, invisible to the allocator
    // (memory maps are the `mmap` feature; without it every array is on the heap).
    assert!(!bloomery::tuning::global_allocator_only());
    for (what, bytes) in [
        ("blocked", held(big)),
        ("count-min", held(sketch)),
        ("loaded", held(loaded)),
    ] {
        if cfg!(feature = "mmap") {
            assert!(bytes < 1 << 20, "{what}: {bytes} bytes on the heap");
        } else {
            assert!(
                bytes as u64 >= BYTES,
                "{what}: only {bytes} bytes on the heap"
            );
        }
    }

    bloomery::tuning::set_global_allocator_only(true);
    for (what, bytes) in [
        ("blocked", held(big)),
        ("count-min", held(sketch)),
        ("loaded", held(loaded)),
    ] {
        assert!(
            bytes as u64 >= BYTES,
            "{what}: only {bytes} bytes on the heap"
        );
        assert!((bytes as u64) < BYTES + (1 << 20), "{what}: {bytes} bytes");
    }
    // The arrays behave the same wherever they live.
    let mut f = big();
    assert!(f.insert("a"));
    assert!(f.contains("a"));
    bloomery::tuning::set_global_allocator_only(false);
}
