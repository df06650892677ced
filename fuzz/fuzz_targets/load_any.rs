//! Feed arbitrary bytes to the loader of every structure (the set filters, the counting
//! family, and the kinds with loaders of their own). Loading must never panic; what loads
//! must describe itself, survive a to_bytes → from_bytes round trip unchanged, take a few
//! inserts within bounded time and memory, and answer true for every key it took.
//!
//! A random mutation almost never keeps the xxh3-64 checksum trailer valid, so the fuzzer
//! would stop at the checksum. Each input is therefore tried twice: as given, and with its
//! last 8 bytes replaced by the correct checksum of the rest ("resealed"), which lets the
//! mutations reach the header and kind-specific parameter validation.
#![no_main]

#[path = "common/mod.rs"]
mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Bound what a (valid-looking) file may make the loader and inserts allocate.
    bloomery::tuning::set_max_bytes(common::LIMIT);
    common::exercise_file(data);
    if let Some(sealed) = common::resealed(data) {
        common::exercise_file(&sealed);
    }
});
