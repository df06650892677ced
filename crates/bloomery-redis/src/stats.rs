//! The module's `INFO` section (`INFO bloomery`, also in `INFO modules` and `INFO
//! everything`): how many values of each type the server holds and the bytes they hold, each
//! value counted as its `MEMORY USAGE` counts it without the key.
//!
//! The figures are kept as values change, never by walking the keyspace: a value is counted
//! when it is loaded (RDB, `RESTORE`, `COPY`) or created by a command of the module, marked
//! when a command writes it (every write ends in [`crate::keys::written`]) and measured again
//! when `INFO` next asks, and dropped when Redis frees it. Each value's last measure is kept
//! beside it, so a free subtracts exactly what was added and the totals never drift.
//! `defrag_moves` counts the allocations of the module's values that active defragmentation
//! moved (see [`crate::value`]).

use std::collections::{BTreeMap, HashMap};
use std::ffi::c_void;
use std::hash::{BuildHasherDefault, Hasher};
use std::os::raw::c_int;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

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

/// What is known of one value.
struct Entry {
    /// Its type's name.
    name: &'static str,
    /// The bytes counted for it in its type's total.
    bytes: u64,
    /// How to measure it again.
    measure: Measure,
    /// Written since it was last measured: measured again when `INFO` asks.
    dirty: bool,
}

/// The hash of a value's address in the book: a multiply and a fold (the addresses are the
/// server's own, so SipHash's defence against chosen keys buys nothing here and costs about a
/// hundred instructions per write command).
#[derive(Default)]
struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(self.0.rotate_left(8) ^ u64::from(b));
        }
    }
    fn write_u64(&mut self, n: u64) {
        let x = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = x ^ (x >> 29);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

#[derive(Default)]
struct Book {
    /// A value's address → what is known of it.
    values: HashMap<usize, Entry, BuildHasherDefault<AddressHasher>>,
    /// A type's name → its values and bytes.
    totals: BTreeMap<&'static str, (u64, u64)>,
}

static BOOK: Mutex<Option<Book>> = Mutex::new(None);

/// The address of the last value marked written, while that mark stands: a run of writes to
/// one value (a big filter taking adds, the common case) costs one load and compare each
/// after the first. Cleared under the book's lock whenever a mark is taken away (`INFO`
/// measures) or an address may change hands (a value counted, freed or moved), so a stale
/// address never skips the mark of another value.
static LAST_MARKED: AtomicUsize = AtomicUsize::new(0);

fn with_book<R>(f: impl FnOnce(&mut Book) -> R) -> R {
    // Redis may free values on a background thread (lazy free): hence the lock.
    let mut guard = BOOK.lock().unwrap_or_else(|e| e.into_inner());
    f(guard.get_or_insert_with(Book::default))
}

/// Mark the value at `value` written (measured again when `INFO` next asks); false when the
/// book does not know it.
fn mark_written(value: usize) -> bool {
    if LAST_MARKED.load(Ordering::Acquire) == value {
        return true;
    }
    with_book(|b| match b.values.get_mut(&value) {
        Some(e) => {
            e.dirty = true;
            LAST_MARKED.store(value, Ordering::Release);
            true
        }
        None => false,
    })
}

impl Book {
    fn add(&mut self, name: &'static str, bytes: u64) {
        let t = self.totals.entry(name).or_default();
        t.0 += 1;
        t.1 = t.1.saturating_add(bytes);
    }

    fn remove(&mut self, name: &'static str, bytes: u64) {
        let t = self.totals.entry(name).or_default();
        t.0 = t.0.saturating_sub(1);
        t.1 = t.1.saturating_sub(bytes);
    }
}

/// Count `value` (of the type named `name`, measured by `measure`) as holding `bytes`.
pub fn counted(name: &'static str, value: *const c_void, bytes: u64, measure: Measure) {
    if value.is_null() {
        return;
    }
    with_book(|b| {
        LAST_MARKED.store(0, Ordering::Release);
        let entry = Entry {
            name,
            bytes,
            measure,
            dirty: false,
        };
        if let Some(old) = b.values.insert(value as usize, entry) {
            b.remove(old.name, old.bytes);
        }
        b.add(name, bytes);
    });
}

/// `value` was freed by Redis (called before it is dropped).
pub fn freed(value: *const c_void) {
    with_book(|b| {
        LAST_MARKED.store(0, Ordering::Release);
        if let Some(old) = b.values.remove(&(value as usize)) {
            b.remove(old.name, old.bytes);
        }
    });
}

/// `value` was moved from `old` (active defragmentation): what is known of it follows it.
pub fn relocated(old: *const c_void, value: *const c_void) {
    with_book(|b| {
        LAST_MARKED.store(0, Ordering::Release);
        if let Some(e) = b.values.remove(&(old as usize)) {
            b.values.insert(value as usize, e);
        }
    });
}

/// Allocations of the module's values moved by active defragmentation since the module loaded.
static DEFRAG_MOVES: AtomicU64 = AtomicU64::new(0);

/// One allocation of a value was moved by active defragmentation.
pub fn defrag_moved() {
    DEFRAG_MOVES.fetch_add(1, Ordering::Relaxed);
}

static FAMILIES: OnceLock<Vec<(usize, Family)>> = OnceLock::new();

/// Every data type of the module, called once when the module loads, after the types were
/// registered (their addresses are read here).
pub fn register(all: Vec<Family>) {
    let _ = FAMILIES.set(
        all.into_iter()
            .map(|f| (*f.ty.raw_type.borrow() as usize, f))
            .collect(),
    );
}

/// Every data type of the module, with its registered type's address.
fn families() -> &'static [(usize, Family)] {
    FAMILIES.get().map_or(&[], Vec::as_slice)
}

/// After a write to `key` by one of the module's commands: its value is measured again when
/// `INFO` next asks (a write costs a key lookup and a flag, not a measure); a value created
/// by the command is counted now.
pub fn touched(ctx: &Context, key: &RedisString) {
    let (Some(open), Some(close)) = (
        // SAFETY: reading function pointers Redis filled in at module load.
        unsafe { raw::RedisModule_OpenKey },
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
    // SAFETY: `k` is the open key from above.
    unsafe { touched_open(k) };
    // SAFETY: closing the key opened above, once.
    unsafe { close(k) };
}

/// As [`touched`], for a key the command already holds open.
///
/// # Safety
/// `k` must be a key of the running command, open and not yet closed.
pub unsafe fn touched_open(k: *mut raw::RedisModuleKey) {
    let (Some(get_type), Some(get_value)) = (
        // SAFETY: reading function pointers Redis filled in at module load.
        unsafe { raw::RedisModule_ModuleTypeGetType },
        // SAFETY: as above.
        unsafe { raw::RedisModule_ModuleTypeGetValue },
    ) else {
        return;
    };
    // SAFETY: `k` is open (the caller's contract); a key of another type answers null.
    let value = unsafe { get_value(k) };
    if value.is_null() {
        return;
    }
    if !mark_written(value as usize) {
        // SAFETY: `k` is open (the caller's contract).
        let ty = unsafe { get_type(k) } as usize;
        if let Some((_, f)) = families().iter().find(|(t, _)| *t == ty) {
            // SAFETY: `value` is a live value of `f`'s type, which `f.measure` takes.
            let bytes = unsafe { (f.measure)(value) } as u64;
            counted(f.name, value, bytes, f.measure);
        }
    }
}

/// As [`touched_open`], for the value `value` of the module type `ty` (a command that holds
/// the value already: no second opening of the key).
///
/// # Safety
/// `value` is null or a live value of the module type `ty`, held by the running command.
pub unsafe fn written_value(ty: &RedisType, value: *const c_void) {
    if value.is_null() || mark_written(value as usize) {
        return;
    }
    let ty = *ty.raw_type.borrow() as usize;
    if let Some((_, f)) = families().iter().find(|(t, _)| *t == ty) {
        // SAFETY: `value` is a live value of `f`'s type (the caller's contract), which
        // `f.measure` takes.
        let bytes = unsafe { (f.measure)(value) } as u64;
        counted(f.name, value, bytes, f.measure);
    }
}

/// Measure the values written since `INFO` last asked; the totals per type.
fn totals() -> BTreeMap<&'static str, (u64, u64)> {
    with_book(|b| {
        LAST_MARKED.store(0, Ordering::Release);
        let Book { values, totals } = b;
        for (&addr, e) in values.iter_mut().filter(|(_, e)| e.dirty) {
            // SAFETY: a value in the book is alive: Redis calls the type's free callback,
            // which takes it out of the book under this lock, before dropping it.
            let now = unsafe { (e.measure)(addr as *const c_void) } as u64;
            let t = totals.entry(e.name).or_default();
            t.1 = t.1.saturating_sub(e.bytes).saturating_add(now);
            e.bytes = now;
            e.dirty = false;
        }
        totals.clone()
    })
}

/// The `INFO` callback: per type `<name>_values` and `<name>_bytes`, then the totals.
pub extern "C" fn info(ctx: *mut raw::RedisModuleInfoCtx, _for_crash_report: c_int) {
    let totals = totals();
    if matches!(raw::add_info_section(ctx, None), raw::Status::Err) {
        return;
    }
    let (mut values, mut bytes) = (0u64, 0u64);
    for (_, f) in families() {
        let (v, b) = totals.get(f.name).copied().unwrap_or_default();
        values += v;
        bytes = bytes.saturating_add(b);
        raw::add_info_field_unsigned_long_long(ctx, &format!("{}_values", f.name), v);
        raw::add_info_field_unsigned_long_long(ctx, &format!("{}_bytes", f.name), b);
    }
    raw::add_info_field_unsigned_long_long(ctx, "values", values);
    raw::add_info_field_unsigned_long_long(ctx, "bytes", bytes);
    raw::add_info_field_unsigned_long_long(
        ctx,
        "defrag_moves",
        DEFRAG_MOVES.load(Ordering::Relaxed),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_follow_values_and_never_drift() {
        unsafe extern "C" fn size(v: *const c_void) -> usize {
            v as usize / 16
        }
        let a = 0x1000 as *const c_void;
        let b = 0x2000 as *const c_void;
        let get = |n: &'static str| with_book(|k| k.totals.get(n).copied().unwrap_or_default());
        let before = get("test-a");
        counted("test-a", a, 100, size);
        counted("test-a", b, 50, size);
        assert_eq!(get("test-a"), (before.0 + 2, before.1 + 150));
        // a value counted again: the new figure replaces the old
        counted("test-a", a, 300, size);
        assert_eq!(get("test-a"), (before.0 + 2, before.1 + 350));
        // a written value is measured again when the totals are asked for
        with_book(|k| k.values.get_mut(&(b as usize)).unwrap().dirty = true);
        assert_eq!(totals()["test-a"], (before.0 + 2, before.1 + 300 + 0x200));
        // a value moved by defragmentation keeps its entry
        let c = 0x3000 as *const c_void;
        relocated(a, c);
        assert_eq!(get("test-a"), (before.0 + 2, before.1 + 300 + 0x200));
        freed(a); // its old address is no longer known
        assert_eq!(get("test-a"), (before.0 + 2, before.1 + 300 + 0x200));
        freed(c);
        freed(b);
        freed(b); // a second free of an unknown address changes nothing
        assert_eq!(get("test-a"), before);
    }

    /// Every write after a measure is measured again, and a value at an address freed and
    /// reused is marked, whatever the last marked address was.
    #[test]
    fn a_write_is_never_skipped_by_the_last_mark() {
        static SIZE: AtomicUsize = AtomicUsize::new(10);
        unsafe extern "C" fn size(_: *const c_void) -> usize {
            SIZE.load(Ordering::Relaxed)
        }
        let a = 0x5000 as *const c_void;
        let bytes = |n: &'static str| totals().get(n).copied().unwrap_or_default().1;
        counted("test-b", a, 10, size);
        assert!(mark_written(a as usize));
        SIZE.store(20, Ordering::Relaxed);
        assert_eq!(bytes("test-b"), 20);
        // the same value written again after INFO measured it: measured again
        assert!(mark_written(a as usize));
        SIZE.store(30, Ordering::Relaxed);
        assert_eq!(bytes("test-b"), 30);
        // marked twice in a row, measured once with the latest size
        assert!(mark_written(a as usize));
        assert!(mark_written(a as usize));
        SIZE.store(40, Ordering::Relaxed);
        assert_eq!(bytes("test-b"), 40);
        // written, freed, and a new value counted at the same address: its write is marked
        assert!(mark_written(a as usize));
        freed(a);
        assert!(!mark_written(a as usize));
        counted("test-b", a, 40, size);
        assert!(mark_written(a as usize));
        SIZE.store(50, Ordering::Relaxed);
        assert_eq!(bytes("test-b"), 50);
        freed(a);
        assert_eq!(bytes("test-b"), 0);
    }
}
