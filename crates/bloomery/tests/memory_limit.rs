//! Behaviour under a small process-wide memory limit. In its own test binary because the
//! limit ([`bloomery::tuning::set_max_bytes`]) is global to the process.

use bloomery::tuning::set_max_bytes;
use bloomery::*;

#[test]
fn collect_over_the_limit_panics_and_try_from_keys_returns_the_error() {
    set_max_bytes(4096);
    let keys: Vec<u64> = (0..100_000).collect();
    assert!(matches!(
        BlockedBloomFilter::try_from_keys(keys.iter(), 0.01),
        Err(Error::TooLarge { limit: 4096, .. })
    ));
    assert!(matches!(
        BlockedCountingBloomFilter::try_from_keys(keys.iter(), 0.01),
        Err(Error::TooLarge { limit: 4096, .. })
    ));
    let panic = std::panic::catch_unwind(|| keys.iter().collect::<BlockedBloomFilter>())
        .expect_err("collect() over the limit panics, as documented");
    let msg = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(msg.contains("try_from_keys"), "{msg}");
    // under the limit both work
    let small: Vec<u64> = (0..100).collect();
    assert!(BlockedBloomFilter::try_from_keys(small.iter(), 0.01).is_ok());
}
