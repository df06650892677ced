//! Module arguments (`--loadmodule libbloomery_redis.so MAX-BYTES 268435456`).
//!
//! `MAX-BYTES n` — the largest structure (in bytes of filter storage) a client may create, grow
//! to, or load through LOADCHUNK/RESTORE. Default 256 MiB. Requests beyond it get an error
//! reply; nothing is allocated.

use std::sync::atomic::{AtomicU64, Ordering};

/// Default `MAX-BYTES`: 256 MiB.
pub const DEFAULT_MAX_BYTES: u64 = 256 << 20;

static MAX_BYTES: AtomicU64 = AtomicU64::new(DEFAULT_MAX_BYTES);

/// Unit tests that change `MAX-BYTES` hold this for writing (and restore the default before
/// letting go); tests that build structures larger than those tests' limit hold it for reading.
#[cfg(test)]
pub(crate) static TEST_LIMIT: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// Read access to the default limit for a unit test (see [`TEST_LIMIT`]).
#[cfg(test)]
pub(crate) fn default_limit_for_test() -> std::sync::RwLockReadGuard<'static, ()> {
    TEST_LIMIT.read().unwrap_or_else(|e| e.into_inner())
}

/// The limit in force.
pub fn max_bytes() -> u64 {
    MAX_BYTES.load(Ordering::Relaxed)
}

/// Parse the module's arguments (pairs `NAME value`, names case-insensitive) and apply them.
pub fn apply(args: &[Vec<u8>]) -> Result<(), String> {
    let mut it = args.iter();
    while let Some(name) = it.next() {
        let value = it
            .next()
            .ok_or_else(|| format!("module argument {} needs a value", show(name)))?;
        if name.eq_ignore_ascii_case(b"MAX-BYTES") {
            let v = parse_size(value).ok_or_else(|| {
                format!("MAX-BYTES must be a positive integer, got {}", show(value))
            })?;
            MAX_BYTES.store(v, Ordering::Relaxed);
        } else {
            return Err(format!("unknown module argument {}", show(name)));
        }
    }
    // The library refuses anything bigger too (RDB loads, growth), with the same limit.
    bloomery::set_max_bytes(max_bytes());
    Ok(())
}

fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn parse_size(b: &[u8]) -> Option<u64> {
    let v: u64 = std::str::from_utf8(b).ok()?.trim().parse().ok()?;
    (v > 0).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size(b"1024"), Some(1024));
        assert_eq!(parse_size(b"0"), None);
        assert_eq!(parse_size(b"-5"), None);
        assert_eq!(parse_size(b"lots"), None);
    }
}
