//! Feed arbitrary bytes, as a Parquet footer's Thrift `FileMetaData`, to the footer reader of
//! the lake scans and to the `parquet` crate's decoder. The scan's reader must never panic,
//! loop or allocate by a declared length, and it must never read a footer differently from
//! the crate: both read it to the same columns, types, row counts and filter offsets, or the
//! scan's reader declines it (and a scan takes the crate's answer), or the crate refuses it
//! for damage inside fields the scan's reader skips.
#![no_main]

use bloomery::parquet::{compare_footer_readers, FooterReaders};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let FooterReaders::Differ(d) = compare_footer_readers(data) {
        panic!("{d}");
    }
});
