//! Empty structures already sized, by creation parameters.
//!
//! Sizing a blocked filter runs the library's exact model of its false-positive rate, about a
//! millisecond; a client creating one small filter per key with `BF.ADD` would pay that for
//! every key. An empty filter made with the same parameters is the same filter, so the first
//! one made is kept (if it is small) and later ones are copies of it.
//!
//! At most [`SLOTS`] templates of at most [`MAX_TEMPLATE_BYTES`] each are kept (the oldest
//! is replaced), so the cache holds at most a few MiB, on Redis's allocator like everything
//! else; it belongs to no key.

use std::any::Any;
use std::sync::Mutex;

use crate::types::{value_size, Structure};

/// Most templates kept.
pub const SLOTS: usize = 32;
/// Largest template kept (bytes it holds); bigger structures are sized every time, which
/// costs little beside allocating and zeroing them.
pub const MAX_TEMPLATE_BYTES: u64 = 64 << 10;

struct Entry {
    key: String,
    value: Box<dyn Any + Send>,
}

static CACHE: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

/// A copy of the empty structure made by `make` for the parameters `key` (a description of
/// every parameter `make` depends on), made once.
pub fn get_or_make<T, E>(key: &str, make: impl FnOnce() -> Result<T, E>) -> Result<T, E>
where
    T: Structure + Send,
{
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(v) = cache
        .iter()
        .find(|e| e.key == key)
        .and_then(|e| e.value.downcast_ref::<T>())
    {
        return Ok(v.clone());
    }
    let made = make()?;
    if value_size(&made) <= MAX_TEMPLATE_BYTES {
        if cache.len() >= SLOTS {
            cache.remove(0);
        }
        cache.push(Entry {
            key: key.to_string(),
            value: Box::new(made.clone()),
        });
    }
    Ok(made)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bloomery::{Filter, ScalableBloomFilter};

    #[test]
    fn copies_equal_what_make_gives_and_are_independent() {
        let make = || {
            ScalableBloomFilter::builder()
                .capacity(100)
                .fpr(0.01)
                .max_bytes(u64::MAX)
                .try_build()
        };
        let a: ScalableBloomFilter = get_or_make("test-sbf", make).unwrap();
        let mut b: ScalableBloomFilter =
            get_or_make("test-sbf", || -> Result<_, bloomery::Error> {
                panic!("made twice")
            })
            .unwrap();
        assert_eq!(a, make().unwrap());
        assert_eq!(b, a);
        b.insert("x");
        let c: ScalableBloomFilter = get_or_make("test-sbf", || -> Result<_, bloomery::Error> {
            panic!("made twice")
        })
        .unwrap();
        assert!(
            !c.contains("x"),
            "a copy's insert does not reach the template"
        );
    }

    #[test]
    fn large_structures_are_not_kept() {
        let _limit = crate::config::default_limit_for_test();
        let mut made = 0;
        for _ in 0..2 {
            let _: ScalableBloomFilter = get_or_make("test-large", || {
                made += 1;
                ScalableBloomFilter::builder()
                    .capacity(1_000_000)
                    .fpr(0.01)
                    .max_bytes(u64::MAX)
                    .try_build()
            })
            .unwrap();
        }
        assert_eq!(made, 2);
    }
}
