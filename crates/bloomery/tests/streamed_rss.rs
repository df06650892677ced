//! A streamed fold (`AnyFilter::fold_file`) of a 256 MiB filter file holds a few 8 MiB
//! pieces, not the filters: the process's peak resident memory stays far below the file's
//! size. (A streamed union reads and writes through the same steps.) One test in its binary,
//! so nothing else moves the peak.

#![cfg(all(target_os = "linux", feature = "mmap"))]

use bloomery::file::{MappedFile, SaveOptions};
use bloomery::{AnyFilter, Kind, Sizing, Spec, Verify};

#[path = "common/rss.rs"]
mod rss;
use rss::peak_rss;

#[test]
fn a_streamed_fold_of_a_256_mib_file_holds_a_few_pieces() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.bloom");
    // 256 MiB of blocked filter, made without holding it (its pages are the file's, read as
    // any others: a fold that held them would grow by the file's size)
    let spec = Spec::new(Kind::Blocked).sizing(Sizing::default().bits(1u64 << 31).hashes(8));
    AnyFilter::empty_file(&spec)
        .unwrap()
        .save_with(&path, SaveOptions::new())
        .unwrap();
    let file = MappedFile::open(&path).unwrap();
    assert!(file.len() > 256 << 20);
    let before = peak_rss();
    let half = dir.path().join("half.bloom");
    let info = AnyFilter::fold_file(&file, 1, &half, Verify::Checksum, &mut |_| {}).unwrap();
    let grew = peak_rss().saturating_sub(before);
    // a few 8 MiB pieces; the input is 256 MiB, the folded filter 128 MiB
    assert!(grew < 48 << 20, "peak resident memory grew by {grew} bytes");
    assert_eq!((info.bits, info.items), (1 << 30, 0));
    assert_eq!(
        std::fs::metadata(&half).unwrap().len(),
        (file.len() - file.header_len() - 8) / 2 + file.header_len() + 8
    );
}
