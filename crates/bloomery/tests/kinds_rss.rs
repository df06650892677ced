//! `info` of a mapped file, a one-key update and an estimate of two files (what `bloomery info`,
//! `bloomery add` and `bloomery estimate A B` do) of
//! 64 MiB partitioned and split-block files hold a few pieces, not the file: their fill is
//! counted a piece at a time inside the passes that drop the pages behind them. One test in
//! its binary, so nothing else moves the peak.

#![cfg(all(target_os = "linux", feature = "mmap"))]

use bloomery::file::{FileUpdate, MappedFile, SaveOptions};
use bloomery::{AnyFilter, Kind, Sizing, Spec, Verify};

#[path = "common/rss.rs"]
mod rss;
use rss::peak_rss;

#[test]
fn info_and_a_one_key_add_hold_a_few_pieces_of_every_piece_counted_kind() {
    let dir = tempfile::tempdir().unwrap();
    let kinds = [(Kind::Partitioned, 7), (Kind::SplitBlock, 8)];
    let mut paths = Vec::new();
    for (kind, k) in kinds {
        let path = dir.path().join(format!("{}.bloom", kind.name()));
        let spec = Spec::new(kind).sizing(Sizing::default().bits(1 << 29).hashes(k));
        AnyFilter::empty_file(&spec)
            .unwrap()
            .save_with(&path, SaveOptions::new())
            .unwrap();
        assert!(std::fs::metadata(&path).unwrap().len() >= 64 << 20);
        paths.push(path);
    }
    let before = peak_rss();
    for path in &paths {
        let file = MappedFile::open(path).unwrap();
        let f = AnyFilter::from_mapped(&file).unwrap();
        let info = f.info_mapped(&file, true, &mut |_| {}).unwrap();
        assert_eq!((info.items, info.fill_ratio), (0, 0.0));
        drop((f, file));

        let up = FileUpdate::open(path, Verify::Checksum, &mut |_| {}).unwrap();
        let mut f = AnyFilter::from_update(&up).unwrap();
        f.insert("hello").unwrap();
        let info = f.commit_with_info(up, &mut |_| {}).unwrap();
        assert_eq!(info.items, 1);
        assert!(info.fill_ratio > 0.0);
    }
    // estimate of two files: one pass over both, pages dropped behind
    let (a, b) = (
        MappedFile::open(&paths[0]).unwrap(),
        MappedFile::open(&paths[0]).unwrap(),
    );
    let o = AnyFilter::estimate_files(&a, &b, Verify::Checksum, &mut |_| {}).unwrap();
    // the file holds the one key added above
    assert!(
        (o.intersection - 1.0).abs() < 0.01 && (o.union - 1.0).abs() < 0.01,
        "{o:?}"
    );
    drop((a, b));
    let grew = peak_rss().saturating_sub(before);
    // a few 8 MiB pieces; each file is 64 MiB
    assert!(grew < 32 << 20, "peak resident memory grew by {grew} bytes");
}
