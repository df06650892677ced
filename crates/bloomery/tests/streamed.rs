//! Folds, unions and intersections streamed from mapped files into a new file
//! (`AnyFilter::fold_file`, `union_files`, `intersect_files`): the bytes of the in-memory
//! result saved, for every kind that streams, at sizes of one piece and of several; no key
//! lost; nothing written when an input is refused.
#![cfg(feature = "mmap")]

use std::path::{Path, PathBuf};

use bloomery::builders::BlockLayout;
use bloomery::file::MappedFile;
use bloomery::{AnyFilter, BlockedBloomFilter, BloomFilter, Error, FormatError, Verify};
use proptest::prelude::*;

/// A filter of `kind` with `keys` keys (`salt` tells sets apart), sized by its shape.
#[derive(Clone, Copy, Debug)]
enum Shape {
    /// Classic, m bits, k hashes.
    Classic(u64, u32),
    /// Blocked, blocks, k, layout.
    Blocked(u64, u32, BlockLayout),
}

fn build(shape: Shape, keys: u64, salt: u64) -> AnyFilter {
    let mut f: AnyFilter = match shape {
        Shape::Classic(m, k) => BloomFilter::builder()
            .bits(m)
            .hashes(k)
            .try_build()
            .unwrap()
            .into(),
        Shape::Blocked(blocks, k, layout) => BlockedBloomFilter::builder()
            .bits(blocks * 512)
            .hashes(k)
            .layout(layout)
            .try_build()
            .unwrap()
            .into(),
    };
    for i in 0..keys {
        f.insert(&(salt << 40 | i)).unwrap();
    }
    f
}

fn save(dir: &Path, name: &str, f: &AnyFilter) -> PathBuf {
    let p = dir.join(name);
    f.save(&p).unwrap();
    p
}

fn fold_times(f: &AnyFilter, times: u32) -> AnyFilter {
    (0..times).fold(f.clone(), |g, _| g.fold().unwrap())
}

/// Shapes of one piece (8 MiB) and of several, with a classic m that is no multiple of 128.
fn shapes() -> Vec<(Shape, u32)> {
    vec![
        (Shape::Classic(1000 * 64 + 6, 7), 1),
        (Shape::Classic(3 * 128 * 64, 5), 7),
        (Shape::Classic(1 << 20, 7), 9),
        // 16 MiB: two pieces; 2^27 bits folded to one bit groups 2^21 words, over both pieces
        (Shape::Classic(1 << 27, 3), 27),
        (Shape::Blocked(1000, 7, BlockLayout::Positions), 3),
        (Shape::Blocked(4096, 8, BlockLayout::Sectors), 5),
        // 16 MiB: 2^18 blocks; 18 folds make one block of all
        (Shape::Blocked(1 << 18, 8, BlockLayout::Sectors), 2),
        (Shape::Blocked(1 << 18, 6, BlockLayout::Positions), 18),
    ]
}

#[test]
fn a_streamed_fold_is_the_in_memory_fold_saved_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    for (i, (shape, max_times)) in shapes().into_iter().enumerate() {
        let f = build(shape, 20_000, i as u64);
        let src = save(dir.path(), &format!("in{i}"), &f);
        let file = MappedFile::open(&src).unwrap();
        assert!(AnyFilter::streams(&file));
        // the files of several pieces: the deepest fold only (debug builds are slow)
        let mut times: Vec<u32> = if file.len() > 8 << 20 {
            vec![max_times]
        } else {
            vec![0, 1, max_times]
        };
        times.dedup();
        for t in times {
            let out = dir.path().join(format!("out{i}-{t}"));
            let mut seen = 0;
            let info =
                AnyFilter::fold_file(&file, t, &out, Verify::Checksum, &mut |n| seen = n).unwrap();
            let want = fold_times(&f, t);
            assert!(
                std::fs::read(&out).unwrap() == want.to_bytes(),
                "{shape:?} folded {t} times"
            );
            assert_eq!(seen, file.len());
            let w = want.info();
            assert_eq!(
                (
                    info.items,
                    info.bits,
                    info.capacity,
                    info.fill_ratio,
                    info.current_fpr
                ),
                (w.items, w.bits, w.capacity, w.fill_ratio, w.current_fpr),
                "{shape:?} folded {t} times"
            );
            // the folded file answers for every key
            let g = AnyFilter::load(&out).unwrap();
            assert!((0..20_000u64).all(|k| g.contains(&((i as u64) << 40 | k))));
        }
    }
}

#[test]
fn a_fold_of_an_odd_size_is_refused_as_in_memory_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for (shape, times) in [
        (Shape::Classic(3 * 64 + 2, 3), 2u32),
        (Shape::Blocked(12, 4, BlockLayout::Positions), 3),
    ] {
        let f = build(shape, 10, 1);
        let src = save(dir.path(), "odd", &f);
        let out = dir.path().join("odd-out");
        let e = AnyFilter::fold_file(
            &MappedFile::open(&src).unwrap(),
            times,
            &out,
            Verify::Checksum,
            &mut |_| {},
        )
        .unwrap_err();
        let want = fold_times(&f, times - 1).fold().unwrap_err();
        assert_eq!(e.to_string(), want.to_string());
        assert!(!out.exists());
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn streamed_unions_and_intersections_are_the_in_memory_ones_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let shapes = shapes().into_iter().filter(|(s, _)| match s {
        // one shape of several pieces (debug builds are slow)
        Shape::Classic(m, _) => *m < 1 << 27,
        Shape::Blocked(b, k, _) => *b < 1 << 18 || *k == 8,
    });
    for (i, (shape, _)) in shapes.enumerate() {
        // overlapping key sets: 0..6000, 3000..9000, 4000..10000 (intersections non-empty)
        let fs: Vec<AnyFilter> = [0u64, 3000, 4000]
            .iter()
            .map(|&from| {
                let mut f = build(shape, 0, 0);
                for k in from..from + 6000 {
                    f.insert(&k).unwrap();
                }
                f
            })
            .collect();
        let paths: Vec<PathBuf> = fs
            .iter()
            .enumerate()
            .map(|(j, f)| save(dir.path(), &format!("s{i}-{j}"), f))
            .collect();
        let maps: Vec<MappedFile> = paths.iter().map(|p| MappedFile::open(p).unwrap()).collect();
        let ns: &[usize] = if matches!(shape, Shape::Blocked(b, ..) if b >= 1 << 18) {
            &[3]
        } else {
            &[2, 3]
        };
        for &n in ns {
            let ins: Vec<&MappedFile> = maps[..n].iter().collect();
            for and in [false, true] {
                let mut want = fs[0].clone();
                for g in &fs[1..n] {
                    if and {
                        want.intersect_with(g).unwrap();
                    } else {
                        want.union_with(g).unwrap();
                    }
                }
                let out = dir.path().join(format!("r{i}-{n}-{and}"));
                let info = if and {
                    AnyFilter::intersect_files(&ins, &out, Verify::Checksum, &mut |_| {})
                } else {
                    AnyFilter::union_files(&ins, &out, Verify::Checksum, &mut |_| {})
                }
                .unwrap();
                assert!(
                    std::fs::read(&out).unwrap() == want.to_bytes(),
                    "{shape:?}: {n} inputs, and = {and}"
                );
                let w = want.info();
                assert_eq!(
                    (info.items, info.fill_ratio, info.current_fpr),
                    (w.items, w.fill_ratio, w.current_fpr)
                );
            }
        }
    }
}

#[test]
fn a_union_may_replace_its_first_input() {
    let dir = tempfile::tempdir().unwrap();
    let shape = Shape::Blocked(1000, 8, BlockLayout::Sectors);
    let (a, b) = (build(shape, 3000, 1), build(shape, 3000, 2));
    let (pa, pb) = (save(dir.path(), "a", &a), save(dir.path(), "b", &b));
    let (ma, mb) = (
        MappedFile::open(&pa).unwrap(),
        MappedFile::open(&pb).unwrap(),
    );
    AnyFilter::union_files(&[&ma, &mb], &pa, Verify::Checksum, &mut |_| {}).unwrap();
    let mut want = a.clone();
    want.union_with(&b).unwrap();
    assert!(std::fs::read(&pa).unwrap() == want.to_bytes());
}

#[test]
fn refused_inputs_write_nothing_and_leave_out_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::write(&out, b"old").unwrap();
    let shape = Shape::Classic(64 * 1000, 7);
    let a = save(dir.path(), "a", &build(shape, 1000, 1));
    let other_shape = save(
        dir.path(),
        "b",
        &build(Shape::Classic(64 * 1001, 7), 1000, 2),
    );
    let blocked = save(
        dir.path(),
        "c",
        &build(Shape::Blocked(125, 7, BlockLayout::Positions), 1000, 3),
    );
    let seeded: AnyFilter = BloomFilter::builder()
        .bits(64 * 1000)
        .hashes(7)
        .seed(9)
        .try_build()
        .unwrap()
        .into();
    let seeded = save(dir.path(), "d", &seeded);
    // a damaged payload byte
    let damaged = dir.path().join("e");
    let mut bytes = std::fs::read(&a).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x10;
    std::fs::write(&damaged, &bytes).unwrap();

    let m = |p: &Path| MappedFile::open(p).unwrap();
    let (ma, mb, mc, md, me) = (m(&a), m(&other_shape), m(&blocked), m(&seeded), m(&damaged));
    let union = |ins: &[&MappedFile]| {
        AnyFilter::union_files(ins, &out, Verify::Checksum, &mut |_| {}).unwrap_err()
    };
    assert!(matches!(union(&[&ma, &mb]), Error::Incompatible(_)));
    assert!(matches!(union(&[&ma, &mc]), Error::Incompatible(_)));
    assert!(matches!(union(&[&ma, &md]), Error::Incompatible(_)));
    assert!(matches!(
        union(&[&ma, &me]),
        Error::Format(FormatError::ChecksumMismatch { .. })
    ));
    let e = AnyFilter::fold_file(&me, 1, &out, Verify::Checksum, &mut |_| {}).unwrap_err();
    assert!(matches!(
        e,
        Error::Format(FormatError::ChecksumMismatch { .. })
    ));
    // the same messages as the in-memory merge
    let load = |p: &Path| AnyFilter::load(p).unwrap();
    assert_eq!(
        union(&[&ma, &mb]).to_string(),
        load(&a)
            .union_with(&load(&other_shape))
            .unwrap_err()
            .to_string()
    );
    // without verification the damaged input is trusted
    AnyFilter::fold_file(
        &me,
        1,
        dir.path().join("f"),
        Verify::HeaderOnly,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), b"old");

    // a compressed file does not stream
    let z = dir.path().join("z");
    bloomery::compress::save_compressed(&BloomFilter::try_new(1000, 0.01).unwrap(), &z).unwrap();
    let mz = MappedFile::open(&z).unwrap();
    assert!(!AnyFilter::streams(&mz));
    let e = AnyFilter::fold_file(&mz, 1, &out, Verify::Checksum, &mut |_| {}).unwrap_err();
    assert!(matches!(e, Error::Unsupported(_)), "{e}");
    assert_eq!(std::fs::read(&out).unwrap(), b"old");
    let mut left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(left, ["a", "b", "c", "d", "e", "f", "out", "z"]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    /// No key is lost by a streamed fold or union: every key of either input answers in the
    /// results.
    #[test]
    fn streamed_folds_and_unions_lose_no_key(
        keys_a in prop::collection::vec(any::<u64>(), 0..300),
        keys_b in prop::collection::vec(any::<u64>(), 0..300),
        blocked in any::<bool>(),
        times in 0u32..4,
    ) {
        let shape = if blocked {
            Shape::Blocked(64, 8, BlockLayout::Sectors)
        } else {
            Shape::Classic(64 * 64, 5)
        };
        let dir = tempfile::tempdir().unwrap();
        let (mut a, mut b) = (build(shape, 0, 0), build(shape, 0, 0));
        for k in &keys_a { a.insert(k).unwrap(); }
        for k in &keys_b { b.insert(k).unwrap(); }
        let (pa, pb) = (save(dir.path(), "a", &a), save(dir.path(), "b", &b));
        let (ma, mb) = (MappedFile::open(&pa).unwrap(), MappedFile::open(&pb).unwrap());
        let u = dir.path().join("u");
        AnyFilter::union_files(&[&ma, &mb], &u, Verify::Checksum, &mut |_| {}).unwrap();
        let f = dir.path().join("f");
        AnyFilter::fold_file(&MappedFile::open(&u).unwrap(), times, &f, Verify::Checksum, &mut |_| {}).unwrap();
        for p in [&u, &f] {
            let g = AnyFilter::load(p).unwrap();
            for k in keys_a.iter().chain(&keys_b) {
                prop_assert!(g.contains(k));
            }
        }
    }
}

/// Partitioned and split-block files combine as streams too: the bytes of the in-memory union
/// and intersection, and their figures (the fill counted per slice or per block on the pieces
/// as they are written), for slices that do not start on a word and for files of one piece
/// and of two.
#[test]
fn partitioned_and_split_block_unions_and_intersections_stream() {
    use bloomery::{PartitionedBloomFilter, SplitBlockBloomFilter};
    let dir = tempfile::tempdir().unwrap();
    type Maker = Box<dyn Fn() -> AnyFilter>;
    let makers: Vec<(&str, Maker)> = vec![
        (
            "partitioned, slices of 10007 bits",
            Box::new(|| {
                PartitionedBloomFilter::try_with_shape(10_007, 5)
                    .unwrap()
                    .into()
            }),
        ),
        (
            "partitioned, two pieces",
            Box::new(|| {
                PartitionedBloomFilter::try_with_shape((1 << 24) + 13, 5)
                    .unwrap()
                    .into()
            }),
        ),
        (
            "split-block, 32 KiB",
            Box::new(|| {
                SplitBlockBloomFilter::try_with_bytes(1 << 15)
                    .unwrap()
                    .into()
            }),
        ),
        (
            "split-block, two pieces",
            Box::new(|| {
                SplitBlockBloomFilter::try_with_bytes(3 << 22)
                    .unwrap()
                    .into()
            }),
        ),
    ];
    for (i, (what, make)) in makers.iter().enumerate() {
        let fs: Vec<AnyFilter> = [0u64, 3000, 4000]
            .iter()
            .map(|&from| {
                let mut f = make();
                for k in from..from + 6000 {
                    f.insert(&k).unwrap();
                }
                f
            })
            .collect();
        let paths: Vec<PathBuf> = fs
            .iter()
            .enumerate()
            .map(|(j, f)| save(dir.path(), &format!("k{i}-{j}"), f))
            .collect();
        let maps: Vec<MappedFile> = paths.iter().map(|p| MappedFile::open(p).unwrap()).collect();
        assert!(maps.iter().all(AnyFilter::streams));
        for n in [2, 3] {
            let ins: Vec<&MappedFile> = maps[..n].iter().collect();
            for and in [false, true] {
                let mut want = fs[0].clone();
                for g in &fs[1..n] {
                    if and {
                        want.intersect_with(g).unwrap();
                    } else {
                        want.union_with(g).unwrap();
                    }
                }
                let out = dir.path().join(format!("kr{i}-{n}-{and}"));
                let info = if and {
                    AnyFilter::intersect_files(&ins, &out, Verify::Checksum, &mut |_| {})
                } else {
                    AnyFilter::union_files(&ins, &out, Verify::Checksum, &mut |_| {})
                }
                .unwrap();
                assert!(
                    std::fs::read(&out).unwrap() == want.to_bytes(),
                    "{what}: {n} inputs, and = {and}"
                );
                assert_eq!(info, want.info(), "{what}: {n} inputs, and = {and}");
            }
        }
        // no fold: refused, nothing written
        let out = dir.path().join(format!("kf{i}"));
        assert!(AnyFilter::fold_file(&maps[0], 1, &out, Verify::Checksum, &mut |_| {}).is_err());
        assert!(!out.exists());
    }
}

/// Two files' figures and overlap counted in one streamed pass (`AnyFilter::estimate_files`)
/// are exactly the in-memory ones, for classic, blocked (both layouts) and partitioned
/// filters of one piece and of two; other shapes, hashers and kinds are refused as in memory,
/// and a damaged input by its checksum.
#[test]
fn streamed_estimates_are_the_in_memory_ones() {
    use bloomery::PartitionedBloomFilter;
    let dir = tempfile::tempdir().unwrap();
    let partitioned = |bits: u64, keys: std::ops::Range<u64>| -> AnyFilter {
        let mut f: AnyFilter = PartitionedBloomFilter::try_with_shape(bits, 5)
            .unwrap()
            .into();
        for k in keys {
            f.insert(&k).unwrap();
        }
        f
    };
    let mut pairs: Vec<(String, AnyFilter, AnyFilter)> = shapes()
        .into_iter()
        .map(|(s, _)| (format!("{s:?}"), build(s, 3000, 1), build(s, 2000, 1)))
        .collect();
    // the second shares the first's 2000 first keys; add 1500 of its own
    for (_, _, b) in &mut pairs {
        for i in 0..1500u64 {
            b.insert(&(9u64 << 40 | i)).unwrap();
        }
    }
    pairs.push((
        "partitioned, two pieces".into(),
        partitioned((1 << 24) + 13, 0..6000),
        partitioned((1 << 24) + 13, 4000..9000),
    ));
    for (i, (what, a, b)) in pairs.iter().enumerate() {
        let (pa, pb) = (
            save(dir.path(), &format!("ea{i}"), a),
            save(dir.path(), &format!("eb{i}"), b),
        );
        let (ma, mb) = (
            MappedFile::open(&pa).unwrap(),
            MappedFile::open(&pb).unwrap(),
        );
        let o = AnyFilter::estimate_files(&ma, &mb, Verify::Checksum, &mut |_| {}).unwrap();
        let (inter, union) = a.estimate_overlap(b).unwrap();
        assert_eq!((o.intersection, o.union), (inter, union), "{what}");
        assert_eq!((&o.first, &o.second), (&a.info(), &b.info()), "{what}");
        assert!(inter > 1000.0 && inter.is_finite(), "{what}: {inter}");
    }
    // refusals: another shape, another hasher, a kind without estimates, a damaged payload
    let a = save(
        dir.path(),
        "ra",
        &build(Shape::Classic(64 * 1000, 7), 500, 1),
    );
    let other = save(
        dir.path(),
        "rb",
        &build(Shape::Classic(64 * 1001, 7), 500, 1),
    );
    let seeded: AnyFilter = BloomFilter::builder()
        .bits(64 * 1000)
        .hashes(7)
        .seed(9)
        .try_build()
        .unwrap()
        .into();
    let seeded = save(dir.path(), "rc", &seeded);
    let split: AnyFilter = bloomery::SplitBlockBloomFilter::try_with_bytes(1 << 12)
        .unwrap()
        .into();
    let split = save(dir.path(), "rd", &split);
    let damaged = dir.path().join("re");
    let mut bytes = std::fs::read(&a).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x10;
    std::fs::write(&damaged, &bytes).unwrap();
    let m = |p: &Path| MappedFile::open(p).unwrap();
    let est = |x: &Path, y: &Path| {
        AnyFilter::estimate_files(&m(x), &m(y), Verify::Checksum, &mut |_| {}).unwrap_err()
    };
    assert!(matches!(est(&a, &other), Error::Incompatible(_)));
    assert!(matches!(est(&a, &seeded), Error::Incompatible(_)));
    assert!(est(&split, &split).to_string().contains("estimate"));
    assert!(matches!(
        est(&a, &damaged),
        Error::Format(FormatError::ChecksumMismatch { .. })
    ));
    // without verification the damaged input is trusted
    AnyFilter::estimate_files(&m(&a), &m(&damaged), Verify::HeaderOnly, &mut |_| {}).unwrap();
}
