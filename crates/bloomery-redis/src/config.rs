//! Module arguments (`--loadmodule libbloomery_redis.so MAX-BYTES 268435456`).
//!
//! `MAX-BYTES n` — the largest structure (in bytes of filter storage) a client may create, grow
//! to, or load through LOADCHUNK/RESTORE/RDB. Requests beyond it get an error reply; nothing
//! is allocated. `MAX-BYTES auto`, the default, takes the memory the server may use: its
//! `maxmemory` when one is set (read at each check, so a `CONFIG SET maxmemory` applies at
//! once), otherwise the machine's memory (`total_system_memory`). So a
//! reservation RedisBloom accepts on a server with the memory for it is accepted here too, and
//! a forged size in a loaded payload is still bounded by what the server could hold.

use std::sync::atomic::{AtomicU64, Ordering};

/// The limit of `MAX-BYTES auto` where the server cannot be asked (the module's unit tests).
pub const FALLBACK_MAX_BYTES: u64 = 256 << 20;

/// `MAX-BYTES` as set: 0 is `auto`.
static MAX_BYTES: AtomicU64 = AtomicU64::new(0);

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
    match MAX_BYTES.load(Ordering::Relaxed) {
        0 => auto_limit(),
        set => set,
    }
}

/// `MAX-BYTES auto`: the server's `maxmemory` when set, else the machine's memory.
fn auto_limit() -> u64 {
    let (maxmemory, system) = server_memory();
    match (maxmemory, system) {
        (Some(m), _) if m > 0 => m,
        (_, Some(t)) if t > 0 => t,
        _ => FALLBACK_MAX_BYTES,
    }
}

/// `maxmemory` and `total_system_memory` from the server's `INFO memory`, asked at each check
/// (a few microseconds; checks come with creations and loads, not with writes to existing
/// values); `None` without a server (unit tests) or without the field.
fn server_memory() -> (Option<u64>, Option<u64>) {
    use redis_module::raw;
    let (Some(get), Some(field), Some(free)) = (
        // SAFETY: reading function pointers Redis filled in at module load (None outside a
        // server).
        unsafe { raw::RedisModule_GetServerInfo },
        // SAFETY: as above.
        unsafe { raw::RedisModule_ServerInfoGetFieldUnsigned },
        // SAFETY: as above.
        unsafe { raw::RedisModule_FreeServerInfo },
    ) else {
        return (None, None);
    };
    // SAFETY: RM_GetServerInfo accepts a NULL context (no automatic memory management) and a
    // NUL-terminated section name; it returns an owned snapshot we free below.
    let info = unsafe { get(std::ptr::null_mut(), c"memory".as_ptr()) };
    if info.is_null() {
        return (None, None);
    }
    let read = |name: &std::ffi::CStr| {
        let mut err: std::os::raw::c_int = 0;
        // SAFETY: `info` is the live snapshot from above; `name` is NUL-terminated; `err` is a
        // valid out pointer.
        let v = unsafe { field(info, name.as_ptr(), &mut err) };
        (err == 0).then_some(v)
    };
    let out = (read(c"maxmemory"), read(c"total_system_memory"));
    // SAFETY: the snapshot made above with a NULL context, freed once.
    unsafe { free(std::ptr::null_mut(), info) };
    out
}

/// The limit the library holds every allocation to (loads included): `MAX-BYTES`, or with
/// `auto` the machine's memory (a later `CONFIG SET maxmemory` cannot lower it below that; the
/// module's own checks use [`max_bytes`], which follows it).
fn library_limit() -> u64 {
    match MAX_BYTES.load(Ordering::Relaxed) {
        0 => server_memory()
            .1
            .filter(|&t| t > 0)
            .unwrap_or(FALLBACK_MAX_BYTES),
        set => set,
    }
}

/// Parse the module's arguments (pairs `NAME value`, names case-insensitive) and apply them.
pub fn apply(args: &[Vec<u8>]) -> Result<(), String> {
    let mut it = args.iter();
    while let Some(name) = it.next() {
        let value = it
            .next()
            .ok_or_else(|| format!("module argument {} needs a value", show(name)))?;
        if name.eq_ignore_ascii_case(b"MAX-BYTES") {
            let v = if value.eq_ignore_ascii_case(b"auto") {
                0
            } else {
                parse_size(value).ok_or_else(|| {
                    format!(
                        "MAX-BYTES must be a positive integer or auto, got {}",
                        show(value)
                    )
                })?
            };
            MAX_BYTES.store(v, Ordering::Relaxed);
        } else {
            return Err(format!("unknown module argument {}", show(name)));
        }
    }
    // The library refuses anything bigger too (RDB loads, growth), with the same limit.
    bloomery::tuning::set_max_bytes(library_limit());
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

    #[test]
    fn auto_without_a_server_is_the_fallback() {
        let _w = TEST_LIMIT.write().unwrap_or_else(|e| e.into_inner());
        apply(&[b"MAX-BYTES".to_vec(), b"1000".to_vec()]).unwrap();
        assert_eq!(max_bytes(), 1000);
        apply(&[b"max-bytes".to_vec(), b"AUTO".to_vec()]).unwrap();
        assert_eq!(max_bytes(), FALLBACK_MAX_BYTES);
        assert!(apply(&[b"MAX-BYTES".to_vec(), b"0".to_vec()]).is_err());
        apply(&[]).unwrap();
        assert_eq!(bloomery::tuning::max_bytes(), FALLBACK_MAX_BYTES);
    }
}
