//! Feed arbitrary chunk files (the format `scripts/migrate-redisbloom.py save` writes) to the
//! RedisBloom importers: each chunk through the per-chunk API that BF.LOADCHUNK /
//! CF.LOADCHUNK use, and the whole sequence through `RedisBloomValue::from_chunks`. Nothing may panic or
//! allocate past the limit; whatever loads must answer queries, take adds and deletes, dump
//! its chunks, and survive a file-format round trip unchanged.
#![no_main]

use bloomery::redisbloom::{
    RedisBloomChunkFile, RedisBloomCuckooFilter, RedisBloomFilter, RedisBloomType, RedisBloomValue,
};
use bloomery::Persist;
use libfuzzer_sys::fuzz_target;

const LIMIT: u64 = 16 << 20;

fn bloom(file: &RedisBloomChunkFile) {
    let Some((_, header)) = file.chunks.first() else {
        return;
    };
    let Ok(mut f) = RedisBloomFilter::from_header_chunk(header, LIMIT) else {
        return;
    };
    for (it, data) in &file.chunks[1..] {
        let _ = f.load_chunk(*it, data);
    }
    for key in [&b""[..], b"a", &file.key[..]] {
        let _ = f.contains(key);
        let _ = f.try_insert(key);
        assert!(f.allocated_bytes() <= LIMIT);
    }
    let mut it = 1;
    while let Some((next, _)) = f.chunk(it) {
        it = next;
    }
    let g = RedisBloomFilter::from_bytes(&f.to_bytes()).expect("a re-encoded chain must load");
    assert_eq!(g, f);
}

fn cuckoo(file: &RedisBloomChunkFile) {
    let Some((_, header)) = file.chunks.first() else {
        return;
    };
    let Ok(mut f) = RedisBloomCuckooFilter::from_header_chunk(header, LIMIT) else {
        return;
    };
    for (it, data) in &file.chunks[1..] {
        let _ = f.load_chunk(*it, data);
    }
    for key in [&b""[..], b"a", &file.key[..]] {
        let _ = f.count(key);
        let _ = f.add(key);
        let _ = f.insert_unique(key);
        let _ = f.remove(key);
        assert!(f.allocated_bytes() <= LIMIT);
    }
    let mut it = 1;
    while let Some((next, _)) = f.chunk(it) {
        it = next;
    }
    let g = RedisBloomCuckooFilter::from_bytes(&f.to_bytes()).expect("must load again");
    assert_eq!(g, f);
}

fuzz_target!(|data: &[u8]| {
    bloomery::tuning::set_max_bytes(LIMIT);
    let Ok(file) = RedisBloomChunkFile::from_bytes(data) else {
        return;
    };
    match file.value_type {
        RedisBloomType::Bloom => bloom(&file),
        RedisBloomType::Cuckoo => cuckoo(&file),
    }
    let chunks = file.chunks.iter().map(|(i, c)| (*i, &c[..]));
    let _ = RedisBloomValue::from_chunks(file.value_type, chunks, LIMIT);
});
