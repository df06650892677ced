//! Loading a 64 MiB file into memory (`AnyFilter::load`, `Persist::load`) reads it front to
//! back, each array straight into the structure: the process's peak resident memory grows by
//! the structure, not by the file's bytes and the structure. One test in its binary, so
//! nothing else moves the peak.

#![cfg(target_os = "linux")]

use bloomery::file::SaveOptions;
use bloomery::{AnyFilter, BloomFilter, Kind, Persist, Sizing, Spec};

#[path = "common/rss.rs"]
mod rss;
use rss::peak_rss;

#[test]
fn a_load_holds_the_structure_not_the_file_too() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("classic.bloom");
    let spec = Spec::new(Kind::Classic).sizing(Sizing::default().bits(1 << 29).hashes(3));
    AnyFilter::empty_file(&spec)
        .unwrap()
        .save_with(&path, SaveOptions::new())
        .unwrap();
    let len = std::fs::metadata(&path).unwrap().len();
    assert!(len >= 64 << 20);
    let before = peak_rss();
    let f = AnyFilter::load(&path).unwrap();
    assert!(!f.contains("absent"));
    drop(f);
    let typed = BloomFilter::load(&path).unwrap();
    assert_eq!(typed.bits(), 1 << 29);
    drop(typed);
    let grew = peak_rss().saturating_sub(before);
    // the 64 MiB structure and a read buffer; the file's bytes as well would be 128 MiB
    assert!(
        grew < len + (len >> 2),
        "peak resident memory grew by {grew} bytes loading a {len}-byte file"
    );
    println!("loading a {len}-byte file: peak resident memory grew by {grew} bytes");
}
