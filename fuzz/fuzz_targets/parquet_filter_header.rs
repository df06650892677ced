//! Feed arbitrary bytes to the reader of a Parquet Bloom filter header (the Thrift compact
//! struct before every bitset in a Parquet file). It must never panic, loop or allocate by a
//! declared length; what it accepts must be a valid split-block size, lie inside the input,
//! re-encode to a header it reads back the same way, and, when the bitset follows, load.
#![no_main]

use bloomery::parquet::{read_filter_header, write_filter_header};
use bloomery::SplitBlockBloomFilter;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(h) = read_filter_header(data) else {
        return;
    };
    assert!(h.num_bytes > 0 && h.num_bytes % 32 == 0);
    assert!(h.header_len <= data.len());
    let again = write_filter_header(h.num_bytes);
    let back = read_filter_header(&again).expect("a written header must read");
    assert_eq!(back.num_bytes, h.num_bytes);
    assert_eq!(back.header_len, again.len());
    let rest = &data[h.header_len..];
    if let Some(bits) = rest.get(..h.num_bytes as usize) {
        let f = SplitBlockBloomFilter::from_parquet_bitset(bits).expect("a valid size loads");
        assert_eq!(f.to_parquet_bitset(), bits);
    }
});
