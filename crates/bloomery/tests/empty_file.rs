//! An empty filter made to be written to a file is never held in memory: the process's peak
//! resident memory stays far below the file's size (its words are zero pages that are only
//! read). One test in its binary, so nothing else moves the peak.

#![cfg(all(target_os = "linux", feature = "mmap"))]

use bloomery::file::SaveOptions;
use bloomery::{AnyFilter, Kind, Sizing, Spec, Verify};

#[path = "common/rss.rs"]
mod rss;
use rss::peak_rss;

#[test]
fn an_empty_file_is_written_without_holding_the_filter_and_as_saved() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.bloom");
    let before = peak_rss();
    // 256 MiB of blocked filter
    let spec = Spec::new(Kind::Blocked).sizing(Sizing::default().bits(1u64 << 31).hashes(8));
    let empty = AnyFilter::empty_file(&spec).unwrap();
    let len = empty.encoded_len();
    assert!(len > 256 << 20, "{len}");
    empty.save_with(&path, SaveOptions::new()).unwrap();
    drop(empty);
    let grew = peak_rss().saturating_sub(before);
    // the save's own buffers are a few MiB; the filter would be 256 MiB
    assert!(grew < 64 << 20, "peak resident memory grew by {grew} bytes");
    assert_eq!(std::fs::metadata(&path).unwrap().len(), len);

    // the file is an ordinary empty filter (its checksum: the small files below are loaded)
    let f = AnyFilter::open_mmap(&path, Verify::HeaderOnly).unwrap();
    assert_eq!((f.len(), f.contains("alice")), (0, false));
    drop(f);
    std::fs::remove_file(&path).unwrap();

    // an empty file has the bytes of the empty filter built in memory and saved
    for (i, spec) in [
        Spec::new(Kind::Blocked).sizing(Sizing::default().bits(1 << 25).hashes(7)),
        Spec::new(Kind::Classic).sizing(Sizing::default().capacity(5_000_000).fpr(0.001)),
        Spec::new(Kind::Scalable).sizing(Sizing::default().capacity(1_000_000).fpr(0.01)),
        Spec::new(Kind::Mlbf).sizing(Sizing::default().capacity(1_000_000).fpr(0.01)),
    ]
    .iter()
    .enumerate()
    {
        let path = dir.path().join(format!("{i}.bloom"));
        let empty = AnyFilter::empty_file(spec).unwrap();
        empty.save_with(&path, SaveOptions::new()).unwrap();
        let mut built = AnyFilter::try_from_spec(spec).unwrap();
        let info = empty.info();
        assert_eq!((info.items, info.fill_ratio), (0, 0.0));
        assert_eq!(info.bits, built.info().bits);
        assert_eq!(
            std::fs::read(&path).unwrap(),
            built.to_bytes(),
            "{:?}",
            spec.kind
        );
        // and takes keys as any file does
        let mut f = AnyFilter::load(&path).unwrap();
        f.insert("https://example.org/a").unwrap();
        built.insert("https://example.org/a").unwrap();
        assert_eq!(f.to_bytes(), built.to_bytes());
    }
}
