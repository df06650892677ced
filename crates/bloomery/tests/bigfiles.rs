//! Big files: the streaming checksum of a mapped file, updates through a writable map of a
//! copy (`FileUpdate`), saves with options, and structures decoded from a damaged payload
//! without verification (wrong answers allowed, panics not).
#![cfg_attr(not(feature = "mmap"), allow(unused_imports, dead_code))]

/// Every other test of this file maps files: without the `mmap` feature they are not built,
/// and this shows them as skipped.
#[cfg(not(feature = "mmap"))]
#[test]
#[ignore = "the big-file tests need the `mmap` feature"]
fn big_files_need_the_mmap_feature() {}

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use bloomery::file::{FileUpdate, MappedFile, SaveOptions};
use bloomery::kinds::KindOptions;
use bloomery::{
    AnyCounter, AnyFilter, BlockedBloomFilter, BloomFilter, Filter, KeySet, Kind, Persist,
    ScalableBloomFilter, Sizing, Spec, Verify,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn filter(kind: Kind, n: u64) -> AnyFilter {
    let mut f = AnyFilter::builder(kind)
        .capacity(n)
        .fpr(0.01)
        .try_build()
        .unwrap();
    for i in 0..n / 2 {
        f.try_insert_key(format!("https://h{i}.org/a/{i}").as_bytes())
            .unwrap();
    }
    f
}

fn counter(kind: Kind) -> AnyCounter {
    let o = if kind == Kind::CountMin {
        Spec::new(kind).options(KindOptions {
            width: Some(700),
            depth: Some(4),
            ..KindOptions::default()
        })
    } else {
        Spec::new(kind).sizing(Sizing::default().capacity(2000).fpr(0.01))
    };
    let mut c = AnyCounter::try_from_spec(&o).unwrap();
    for i in 0..1000u32 {
        c.insert_hashed(c.hasher().hash(&(i % 700))).unwrap();
    }
    c
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[cfg(feature = "mmap")]
/// The streaming pass accepts the saved file, reports every byte, and refuses one flipped
/// payload bit anywhere, in the first chunk or past it.
#[test]
fn streaming_verify_accepts_good_files_and_finds_one_flipped_bit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.bloom");
    // 20 MB: more than two chunks of the pass
    let mut f = BlockedBloomFilter::builder()
        .bits(160_000_000)
        .hashes(8)
        .try_build()
        .unwrap();
    for i in 0..10_000u32 {
        f.insert(&i);
    }
    f.save(&path).unwrap();
    let len = std::fs::metadata(&path).unwrap().len();
    assert!(len > 2 * bloomery::file::PASS_CHUNK as u64);
    let file = MappedFile::open(&path).unwrap();
    let mut seen = Vec::new();
    file.verify(&mut |done| seen.push(done)).unwrap();
    assert_eq!(*seen.last().unwrap(), len - 8);
    assert!(seen.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(file.header().kind, Kind::Blocked);
    assert_eq!(file.decode::<BlockedBloomFilter>().unwrap(), f);
    for at in [100, len / 2, len - 9] {
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[at as usize] ^= 0x10;
        let bad = dir.path().join("bad.bloom");
        std::fs::write(&bad, &bytes).unwrap();
        let err = MappedFile::open(&bad).and_then(|m| m.verify(&mut |_| {}));
        let e = err.expect_err("a flipped bit must be found").to_string();
        assert!(e.contains("checksum") || at < 128, "{at}: {e}");
        assert!(
            AnyFilter::open_mmap(&bad, Verify::Checksum).is_err(),
            "{at}"
        );
    }
}

#[cfg(feature = "mmap")]
/// An update through the writable copy ends with the bytes an in-memory update saves, for
/// every set kind and every counting kind; the answers are those of the in-memory structure.
#[test]
fn mapped_updates_write_what_a_load_and_save_writes() {
    let dir = tempfile::tempdir().unwrap();
    for &kind in Kind::SETS.iter().chain([&Kind::BlockedSectors]) {
        let path = dir.path().join(format!("{kind}.bloom"));
        let f = filter(kind, 2000);
        f.save(&path).unwrap();
        let mut expect = f.clone();
        let up = FileUpdate::open(&path, Verify::Checksum, &mut |_| {}).unwrap();
        let mut g = AnyFilter::from_update(&up).unwrap();
        assert_eq!(g, f);
        for i in 1000..1400u32 {
            let k = format!("https://x{i}.net/b/{i}");
            assert_eq!(
                g.try_insert_key(k.as_bytes()).unwrap(),
                expect.try_insert_key(k.as_bytes()).unwrap()
            );
            if i % 100 == 0 {
                up.release_memory();
            }
        }
        up.commit(g, &mut |_| {}).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), expect.to_bytes(), "{kind}");
        assert_eq!(files_in(dir.path()).len(), 1, "{kind}: no temp file left");
        std::fs::remove_file(&path).unwrap();
    }
    for &kind in Kind::COUNTERS {
        let path = dir.path().join(format!("{kind}.bloom"));
        let c = counter(kind);
        c.save(&path).unwrap();
        let mut expect = c.clone();
        let up = FileUpdate::open(&path, Verify::HeaderOnly, &mut |_| {}).unwrap();
        let mut g = AnyCounter::from_update(&up).unwrap();
        for i in 0..300u32 {
            let h = g.hasher().hash(&i);
            g.insert_hashed(h).unwrap();
            expect.insert_hashed(h).unwrap();
            if g.capabilities().remove && i % 3 == 0 {
                assert_eq!(g.remove_hashed(h), expect.remove_hashed(h), "{kind}");
            }
        }
        if kind == Kind::SpaceCode {
            // its inserts draw a group at random: compare answers, not bytes
            up.commit(g, &mut |_| {}).unwrap();
            let back = AnyCounter::load(&path).unwrap();
            assert_eq!(back.len(), expect.len());
        } else {
            up.commit(g, &mut |_| {}).unwrap();
            assert_eq!(std::fs::read(&path).unwrap(), expect.to_bytes(), "{kind}");
        }
        std::fs::remove_file(&path).unwrap();
    }
}

#[cfg(feature = "mmap")]
/// A scalable filter that grows a sub-filter during the update changes the file's length:
/// the commit writes the new file whole, and it loads with every key.
#[test]
fn a_scalable_filter_that_grows_is_written_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.bloom");
    let mut s = ScalableBloomFilter::builder()
        .capacity(100)
        .fpr(0.01)
        .try_build()
        .unwrap();
    for i in 0..50u32 {
        s.insert(&i);
    }
    s.save(&path).unwrap();
    let up = FileUpdate::open(&path, Verify::Checksum, &mut |_| {}).unwrap();
    let mut g = up.decode::<ScalableBloomFilter>().unwrap();
    for i in 50..1000u32 {
        g.insert(&i);
        s.insert(&i);
    }
    assert!(g.filters().len() > 1);
    up.commit(g, &mut |_| {}).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), s.to_bytes());
}

#[cfg(feature = "mmap")]
/// An update dropped without a commit leaves the file byte for byte as it was, and no copy.
#[test]
fn an_abandoned_update_leaves_the_file_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.bloom");
    let f = filter(Kind::Classic, 1000);
    f.save(&path).unwrap();
    let before = std::fs::read(&path).unwrap();
    {
        let up = FileUpdate::open(&path, Verify::Checksum, &mut |_| {}).unwrap();
        let mut g = AnyFilter::from_update(&up).unwrap();
        for i in 0..500u32 {
            g.insert(&i).unwrap();
        }
        drop(up);
        // the structure still works on its (now unlinked) copy
        assert!(g.contains(&7u32));
    }
    assert_eq!(std::fs::read(&path).unwrap(), before);
    assert_eq!(files_in(dir.path()), vec!["f.bloom".to_string()]);
}

#[cfg(feature = "mmap")]
/// A damaged source is refused by a verified update (it is not re-sealed with a fresh
/// checksum), and a compressed file is refused with the reason.
#[test]
fn a_verified_update_refuses_a_damaged_or_compressed_source() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.bloom");
    let f = filter(Kind::Blocked, 5000);
    let mut bytes = f.to_bytes();
    let n = bytes.len();
    bytes[n / 2] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    let e = FileUpdate::open(&path, Verify::Checksum, &mut |_| {}).unwrap_err();
    assert!(e.to_string().contains("checksum"), "{e}");
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    assert_eq!(files_in(dir.path()).len(), 1);
    f.save_with(&path, SaveOptions::new().compressed(true))
        .unwrap();
    let e = FileUpdate::open(&path, Verify::Checksum, &mut |_| {}).unwrap_err();
    assert!(e.to_string().contains("compressed"), "{e}");
}

#[cfg(feature = "mmap")]
/// A compressed save made from the structure is byte for byte the compression of its plain
/// file, for single- and multi-array payloads, and loads back equal.
#[test]
fn compressed_saves_equal_compressing_the_plain_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.bloomz");
    let mut scal = ScalableBloomFilter::builder()
        .capacity(50)
        .fpr(0.01)
        .try_build()
        .unwrap();
    for i in 0..400u32 {
        scal.insert(&i);
    }
    assert!(scal.filters().len() >= 3);
    let sets: Vec<AnyFilter> = vec![
        filter(Kind::Blocked, 3000),
        filter(Kind::Mlbf, 3000),
        AnyFilter::from(scal),
    ];
    for f in sets {
        f.save_with(&path, SaveOptions::new().compressed(true))
            .unwrap();
        let want = bloomery::compress::compress_file(&f.to_bytes()).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), want, "{}", f.kind());
        assert_eq!(AnyFilter::load(&path).unwrap(), f);
    }
    let c = counter(Kind::Spectral);
    c.save_with(&path, SaveOptions::new().compressed(true))
        .unwrap();
    let want = bloomery::compress::compress_file(&c.to_bytes()).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), want);
    let b = BloomFilter::try_new(1000, 0.01).unwrap();
    bloomery::compress::save_compressed(&b, &path).unwrap();
    assert_eq!(
        std::fs::read(&path).unwrap(),
        bloomery::compress::compress_file(&b.to_bytes()).unwrap()
    );
    // a plain save with a progress report writes the same bytes and reports them all
    let mut last = 0;
    let f = filter(Kind::Classic, 100_000);
    f.save_with(&path, SaveOptions::new().progress(&mut |d| last = d))
        .unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), f.to_bytes());
    assert_eq!(last, f.to_bytes().len() as u64);
}

#[cfg(feature = "mmap")]
/// Every kind opened from a map without verification, its payload damaged at random: queries,
/// inserts, counts, removals, merges and `info` may answer anything but must not panic.
#[test]
fn unverified_maps_of_damaged_payloads_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.bloom");
    let mut rng = StdRng::seed_from_u64(19);
    let mut seeds: Vec<Vec<u8>> = Kind::SETS
        .iter()
        .chain([&Kind::BlockedSectors])
        .map(|&k| filter(k, 300).to_bytes())
        .collect();
    seeds.extend(Kind::COUNTERS.iter().map(|&k| counter(k).to_bytes()));
    for seed in &seeds {
        let h = u32::from_le_bytes(seed[12..16].try_into().unwrap()) as usize;
        for round in 0..40 {
            let mut b = seed.clone();
            let payload = h..b.len() - 8;
            for _ in 0..rng.gen_range(1..64) {
                let at = rng.gen_range(payload.clone());
                b[at] = match round % 3 {
                    0 => rng.gen(),
                    1 => 0xff,
                    _ => b[at] ^ (1 << rng.gen_range(0..8)),
                };
            }
            std::fs::write(&path, &b).unwrap();
            let kind = Kind::from_id(u16::from_le_bytes([b[10], b[11]])).unwrap();
            let r = catch_unwind(AssertUnwindSafe(|| exercise(&path, kind)));
            assert!(r.is_ok(), "{kind} round {round} panicked");
        }
    }
}

fn exercise(path: &Path, kind: Kind) {
    let file = MappedFile::open(path).unwrap();
    if kind.is_counter() {
        let Ok(mut c) = AnyCounter::from_mapped(&file) else {
            return;
        };
        let _ = c.info();
        for i in 0..200u32 {
            let h = c.hasher().hash(&i);
            let _ = c.count_hashed(h);
            let _ = c.insert_hashed(h);
            let _ = c.remove_hashed(h);
        }
        let _ = c.to_plain_filter();
        let _ = c.to_bytes();
        return;
    }
    let Ok(mut f) = AnyFilter::from_mapped(&file) else {
        return;
    };
    let _ = f.info();
    for i in 0..200u32 {
        let k = format!("https://h{i}.org/a/{i}");
        let _ = f.contains_key(k.as_bytes());
        let _ = f.try_insert_key(k.as_bytes());
    }
    let g = f.clone();
    let _ = f.union_with(&g);
    let _ = f.estimate_overlap(&g);
    let _ = f.fold();
    let _ = f.to_bytes();
}

#[cfg(feature = "mmap")]
/// `peek_header_bytes` reads the header from a file's first bytes alone (the header, no
/// payload): it agrees with the full decoder, names a missing piece as truncation, and tells
/// the compressed form; `peek_file` reads as much from a path.
#[test]
fn peek_reads_the_header_from_the_first_bytes() {
    let dir = tempfile::tempdir().unwrap();
    for f in [filter(Kind::Blocked, 5000), filter(Kind::Mlbf, 500)] {
        let bytes = f.to_bytes();
        let full = bloomery::file::decode_header(&bytes, Verify::Checksum).unwrap();
        let h = full.payload_offset;
        let head = bloomery::file::peek_header_bytes(&bytes[..h]).unwrap();
        assert_eq!(head.header, full.header);
        assert_eq!(head.header_len, h as u64);
        assert_eq!(head.payload_len, full.payload_len as u64);
        assert_eq!(head.file_len, bytes.len() as u64);
        assert!(!head.compressed && !head.delta);
        assert_eq!(bloomery::file::peek_header_bytes(&bytes).unwrap(), head);
        let short = bloomery::file::peek_header_bytes(&bytes[..h - 1]).unwrap_err();
        assert!(short.to_string().contains("truncated"), "{short}");
        let mut bad = bytes[..h].to_vec();
        bad[0] = b'X';
        assert!(bloomery::file::peek_header_bytes(&bad).is_err());
        let path = dir.path().join("f.bloom");
        f.save_with(&path, SaveOptions::new().compressed(true))
            .unwrap();
        let packed = bloomery::file::peek_file(&path).unwrap();
        assert!(packed.compressed);
        assert_eq!(packed.header, full.header);
        assert_eq!(packed.file_len, std::fs::metadata(&path).unwrap().len());
        assert_eq!(bloomery::file::peek_header(&path).unwrap(), full.header);
    }
}
