//! A key checked in, the figures of `info` of, and a one-key update of 64 MiB files of every
//! counting kind (what `bloomery check`, `info` and `add` do) hold a few pieces, not the file:
//! opening reads none of the array, and the whole-array counts (counters set, saturated,
//! occupied cells, bits set) drop the file's pages behind them. One test in its binary, so
//! nothing else moves the peak.

#![cfg(all(target_os = "linux", feature = "mmap"))]

use bloomery::file::{FileUpdate, MappedFile};
use bloomery::kinds::KindOptions;
use bloomery::{AnyCounter, Kind, Sizing, Spec, Verify};

#[path = "common/rss.rs"]
mod rss;
use rss::peak_rss;

/// Reset the process's peak resident memory to its current one (`/proc/self/clear_refs`);
/// false where the kernel does not allow it.
fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Every counting kind, about 64 MiB each.
fn specs() -> Vec<Spec> {
    let shape = |bits: u64, k: u32| Sizing::default().bits(bits).hashes(k);
    let opts = KindOptions::default();
    vec![
        Spec::new(Kind::Counting).sizing(shape(1 << 27, 4)),
        Spec::new(Kind::BlockedCounting).sizing(shape(1 << 27, 4)),
        Spec::new(Kind::Spectral).sizing(shape(1 << 25, 4)),
        Spec::new(Kind::Iterative).sizing(shape(1 << 29, 4)),
        // few groups: every bit a query reads maps the page-cache folio holding it (2 MiB
        // where the file system caches in large folios), and an absent key reads a bit or
        // more of each group
        Spec::new(Kind::SpaceCode)
            .sizing(shape(1 << 29, 3))
            .options(KindOptions {
                groups: Some(4),
                ..opts
            }),
        Spec::new(Kind::DLeftCounting).sizing(Sizing::default().capacity(20_000_000).fpr(0.01)),
        Spec::new(Kind::CountMin).options(KindOptions {
            width: Some(1 << 21),
            depth: Some(4),
            ..opts
        }),
    ]
}

#[test]
fn check_info_and_a_one_key_add_hold_a_few_pieces_of_every_counting_kind() {
    let dir = tempfile::tempdir().unwrap();
    let mut paths = Vec::new();
    for spec in specs() {
        let path = dir.path().join(format!("{}.bloom", spec.kind.name()));
        AnyCounter::try_from_spec(&spec)
            .unwrap()
            .save(&path)
            .unwrap();
        let len = std::fs::metadata(&path).unwrap().len();
        assert!(
            (48 << 20..=96 << 20).contains(&len),
            "{:?}: {len} bytes",
            spec.kind
        );
        paths.push((spec.kind, path));
    }
    if !reset_peak() {
        println!("skipped: /proc/self/clear_refs cannot reset the peak resident memory here");
        return;
    }
    let before = peak_rss();
    for (kind, path) in &paths {
        // check: the checksum pass, then one key
        let file = MappedFile::open(path).unwrap();
        file.verify(&mut |_| {}).unwrap();
        let c = AnyCounter::from_mapped(&file).unwrap();
        let h = c.hasher().hash("hello");
        assert!(!c.contains_hashed(h), "{kind:?}");
        // info: every figure
        let i = c.info();
        assert_eq!(i.items, 0, "{kind:?}");
        assert!(i.saturated_counters.unwrap_or(0) == 0, "{kind:?}");
        drop((c, file));

        // add: one key into a copy, the rates add reports, the seal
        let up = FileUpdate::open(path, Verify::Checksum, &mut |_| {}).unwrap();
        let mut c = AnyCounter::from_update(&up).unwrap();
        c.insert_hashed(h).unwrap();
        // (a whole-array count for most kinds)
        let _ = c.rates();
        up.commit(c, &mut |_| {}).unwrap();
        let c = AnyCounter::open_mmap(path, Verify::HeaderOnly).unwrap();
        assert!(c.contains_hashed(h), "{kind:?}");
        assert_eq!(c.len(), 1, "{kind:?}");
    }
    let grew = peak_rss().saturating_sub(before);
    // a few 8 MiB pieces; each file is about 64 MiB
    assert!(grew < 32 << 20, "peak resident memory grew by {grew} bytes");
}
