//! The module's `INFO` section (`INFO bloomery`, also in `INFO modules` and `INFO
//! everything`): how many values of each type the server holds and the bytes they hold, each
//! value counted as its `MEMORY USAGE` counts it without the key.
//!
//! The figures are kept as values change, never by walking the keyspace: a value is counted
//! when it is loaded (RDB, `RESTORE`, `COPY`) or written by a command of the module (every
//! write ends in [`crate::keys::written`]), and dropped when Redis frees it. Each value's
//! last measure is kept beside it, so a free subtracts exactly what was added and the totals
//! never drift.

use std::collections::{BTreeMap, HashMap};
use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::Mutex;

use redis_module::native_types::RedisType;
use redis_module::{raw, Context, RedisString};

/// What a value holds, as its type's `mem_usage` callback answers.
pub type Measure = unsafe extern "C" fn(*const c_void) -> usize;

/// One data type of the module: its name in `INFO`, its registered type, its measure.
pub struct Family {
    /// The field prefix in `INFO` (`bf` → `bloomery_bf_values`, `bloomery_bf_bytes`).
    pub name: &'static str,
    /// The registered Redis type.
    pub ty: &'static RedisType,
    /// Its `mem_usage` callback.
    pub measure: Measure,
}

#[derive(Default)]
struct Book {
    /// A value's address → its type's name and the bytes counted for it.
    values: HashMap<usize, (&'static str, u64)>,
    /// A type's name → its values and bytes.
    totals: BTreeMap<&'static str, (u64, u64)>,
}

static BOOK: Mutex<Option<Book>> = Mutex::new(None);

fn with_book<R>(f: impl FnOnce(&mut Book) -> R) -> R {
    // Redis may free values on a background thread (lazy free): hence the lock.
    let mut guard = BOOK.lock().unwrap_or_else(|e| e.into_inner());
    f(guard.get_or_insert_with(Book::default))
}

/// Count `value` (of the type named `name`) as holding `bytes` from now on.
pub fn counted(name: &'static str, value: *const c_void, bytes: u64) {
    if value.is_null() {
        return;
    }
    with_book(|b| {
        let old = b.values.insert(value as usize, (name, bytes));
        if let Some((old_name, old_bytes)) = old {
            let t = b.totals.entry(old_name).or_default();
            t.0 = t.0.saturating_sub(1);
            t.1 = t.1.saturating_sub(old_bytes);
        }
        let t = b.totals.entry(name).or_default();
        t.0 += 1;
        t.1 = t.1.saturating_add(bytes);
    });
}

/// `value` was freed by Redis.
pub fn freed(value: *const c_void) {
    with_book(|b| {
        if let Some((name, bytes)) = b.values.remove(&(value as usize)) {
            let t = b.totals.entry(name).or_default();
            t.0 = t.0.saturating_sub(1);
            t.1 = t.1.saturating_sub(bytes);
        }
    });
}

/// After a write to `key` by one of the module's commands: measure its value again.
pub fn touched(ctx: &Context, key: &RedisString) {
    let (Some(open), Some(get_type), Some(get_value), Some(close)) = (
        // SAFETY: reading function pointers Redis filled in at module load.
        unsafe { raw::RedisModule_OpenKey },
        // SAFETY: as above.
        unsafe { raw::RedisModule_ModuleTypeGetType },
        // SAFETY: as above.
        unsafe { raw::RedisModule_ModuleTypeGetValue },
        // SAFETY: as above.
        unsafe { raw::RedisModule_CloseKey },
    ) else {
        return;
    };
    // SAFETY: `ctx.ctx` is the live context of the running command and `key.inner` a live
    // string of it; the key is opened for reading, used below and closed once.
    let k = unsafe { open(ctx.ctx, key.inner, raw::REDISMODULE_READ as c_int) };
    if k.is_null() {
        return;
    }
    // SAFETY: `k` is the open key from above (a key of another type answers null).
    let (ty, value) = unsafe { (get_type(k), get_value(k)) };
    let family = families()
        .into_iter()
        .find(|f| !ty.is_null() && *f.ty.raw_type.borrow() == ty);
    if let (Some(f), false) = (family, value.is_null()) {
        // SAFETY: `value` is a live value of `f`'s type, which `f.measure` takes.
        let bytes = unsafe { (f.measure)(value) } as u64;
        counted(f.name, value, bytes);
    }
    // SAFETY: closing the key opened above, once.
    unsafe { close(k) };
}

/// Every data type of the module.
fn families() -> Vec<Family> {
    let mut all = crate::types::families();
    all.extend(crate::moved::families());
    all
}

/// The `INFO` callback: per type `<name>_values` and `<name>_bytes`, then the totals.
pub extern "C" fn info(ctx: *mut raw::RedisModuleInfoCtx, _for_crash_report: c_int) {
    let totals = with_book(|b| b.totals.clone());
    if raw::add_info_section(ctx, None) == raw::Status::Err {
        return;
    }
    let (mut values, mut bytes) = (0u64, 0u64);
    for f in families() {
        let (v, b) = totals.get(f.name).copied().unwrap_or_default();
        values += v;
        bytes = bytes.saturating_add(b);
        raw::add_info_field_unsigned_long_long(ctx, &format!("{}_values", f.name), v);
        raw::add_info_field_unsigned_long_long(ctx, &format!("{}_bytes", f.name), b);
    }
    raw::add_info_field_unsigned_long_long(ctx, "values", values);
    raw::add_info_field_unsigned_long_long(ctx, "bytes", bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_follow_values_and_never_drift() {
        let a = 0x1000 as *const c_void;
        let b = 0x2000 as *const c_void;
        let get = |n: &'static str| with_book(|k| k.totals.get(n).copied().unwrap_or_default());
        let before = get("test-a");
        counted("test-a", a, 100);
        counted("test-a", b, 50);
        assert_eq!(get("test-a"), (before.0 + 2, before.1 + 150));
        // a write measures a value again: the new figure replaces the old
        counted("test-a", a, 300);
        assert_eq!(get("test-a"), (before.0 + 2, before.1 + 350));
        freed(a);
        freed(b);
        freed(b); // a second free of an unknown address changes nothing
        assert_eq!(get("test-a"), before);
    }
}
