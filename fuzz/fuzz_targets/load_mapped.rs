//! Arbitrary bytes as a file opened through a memory map *without* checksum verification
//! (`MappedFile::open` + decode, what `--no-verify` does), and updated in place of a copy
//! (`FileUpdate` with `Verify::HeaderOnly`). The header and parameters are validated; the
//! payload is trusted, so it may give wrong answers — but queries, inserts, counts, removals,
//! `info`, merges and the update's commit must never panic or read out of bounds.
//!
//! Every input is tried as given and resealed (its checksum recomputed), as in `load_any`;
//! without verification the checksum only matters to the commit's fresh trailer.
#![no_main]

use bloomery::file::{FileUpdate, MappedFile};
use bloomery::{AnyCounter, AnyFilter, KeySet, Verify};
use libfuzzer_sys::fuzz_target;

const KEYS: [&[u8]; 4] = [b"", b"a", b"golden-0", b"https://example.org/a/b"];

fn exercise_set(f: &mut AnyFilter) {
    let _ = f.info();
    for key in KEYS {
        let _ = f.contains_key(key);
        let _ = f.try_insert_key(key);
    }
    let g = f.clone();
    let _ = f.union_with(&g);
    let _ = f.estimate_overlap(&g);
    let _ = f.fold();
}

fn exercise_counter(c: &mut AnyCounter) {
    let _ = c.info();
    for key in KEYS {
        let h = c.hasher().hash_bytes(key);
        let _ = c.count_hashed(h);
        let _ = c.insert_hashed(h);
        let _ = c.remove_hashed(h);
    }
    let _ = c.to_plain_filter();
}

fn exercise(dir: &std::path::Path, data: &[u8]) {
    let path = dir.join("f.bloom");
    if std::fs::write(&path, data).is_err() {
        return;
    }
    let Ok(file) = MappedFile::open(&path) else {
        return;
    };
    let counter = file.header().kind.is_counter();
    if counter {
        if let Ok(mut c) = AnyCounter::from_mapped(&file) {
            exercise_counter(&mut c);
        }
    } else if let Ok(mut f) = AnyFilter::from_mapped(&file) {
        exercise_set(&mut f);
    }
    drop(file);
    let Ok(up) = FileUpdate::open(&path, Verify::HeaderOnly, &mut |_| {}) else {
        return;
    };
    if counter {
        if let Ok(mut c) = AnyCounter::from_update(&up) {
            exercise_counter(&mut c);
            let _ = up.commit(c, &mut |_| {});
        }
    } else if let Ok(mut f) = AnyFilter::from_update(&up) {
        for key in KEYS {
            let _ = f.try_insert_key(key);
        }
        let _ = up.commit(f, &mut |_| {});
    }
}

fuzz_target!(|data: &[u8]| {
    // Bound what a (valid-looking) file may make the decoder allocate.
    bloomery::tuning::set_max_bytes(64 << 20);
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    exercise(dir.path(), data);
    if data.len() >= 8 {
        let mut sealed = data.to_vec();
        let n = sealed.len() - 8;
        let sum = xxhash_rust::xxh3::xxh3_64(&sealed[..n]);
        sealed[n..].copy_from_slice(&sum.to_le_bytes());
        exercise(dir.path(), &sealed);
    }
});
