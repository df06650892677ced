//! Feed arbitrary bytes to the loader of every structure. Loading must never panic; when the
//! bytes do load, every read-only operation must work and the filter must survive a
//! to_bytes → from_bytes round trip unchanged.
//!
//! A random mutation almost never keeps the xxh3-64 checksum trailer valid, so the fuzzer
//! would stop at the checksum. Each input is therefore tried twice: as given, and with its
//! last 8 bytes replaced by the correct checksum of the rest ("resealed"), which lets the
//! mutations reach the header and kind-specific parameter validation.
#![no_main]

use bloomery::AnyFilter;
use libfuzzer_sys::fuzz_target;

fn exercise(data: &[u8]) {
    let Ok(f) = AnyFilter::from_bytes(data) else {
        return;
    };
    let info = f.info();
    assert_eq!(info.kind, f.kind().name());
    let _ = f.len();
    for key in [&b""[..], b"a", b"golden-0", &data[..data.len().min(16)]] {
        let _ = f.contains(key);
    }
    let bytes = f.to_bytes();
    let g = AnyFilter::from_bytes(&bytes).expect("a re-encoded filter must load");
    assert_eq!(g, f, "round trip changed the filter");
    assert_eq!(g.to_bytes(), bytes, "encoding is not stable");
}

fuzz_target!(|data: &[u8]| {
    // Bound what a (valid-looking) file may make the loader allocate.
    bloomery::set_max_bytes(64 << 20);
    exercise(data);
    if data.len() >= 8 {
        let mut sealed = data.to_vec();
        let n = sealed.len() - 8;
        let sum = xxhash_rust::xxh3::xxh3_64(&sealed[..n]);
        sealed[n..].copy_from_slice(&sum.to_le_bytes());
        exercise(&sealed);
    }
});
