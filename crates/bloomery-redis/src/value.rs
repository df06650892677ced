//! The one framework behind every Redis data type of the module: the [`Value`] a key holds
//! and the type callbacks Redis calls ([`methods`]): RDB load and save, the AOF rewrite,
//! free, `MEMORY USAGE`, `DEBUG DIGEST`, `COPY` and active defragmentation. The module's own
//! structures ([`crate::types`]) and the values moved from RedisBloom ([`crate::moved`]) are
//! both values of it; each says only how it is encoded, measured and rebuilt.
//!
//! ## Active defragmentation
//! Where the server runs active defragmentation (Redis or Valkey built with their own jemalloc
//! and `activedefrag yes`), it calls `defrag` for each value of the module it scans. The
//! value's own allocation (its struct, every type) is handed to `RedisModule_DefragAlloc`,
//! which moves it when jemalloc says its page is worth emptying; then [`Value::defrag`] moves
//! the value's arrays (see the README for which). A value is moved as a whole Rust value (a
//! bitwise move), between callbacks that hold no reference to it. Only allocations of the
//! global allocator (Redis's, through `RedisModule_Alloc`) are handed over: arrays in a map
//! (an anonymous one, or a file's) are never passed (`Words::relocate` skips them).
//!
//! A value's allocations are listed in one fixed order (its struct, then its arrays as its
//! type meets them), and `free_effort` answers how many there are. A value of more than
//! `active-defrag-max-scan-fields` allocations (1000 by default) is defragmented by the
//! server's late defrag in bounded steps: each call moves allocations from the cursor the
//! last one stored (`RedisModule_DefragCursorGet`/`Set`), asks
//! `RedisModule_DefragShouldStop` after every `STEP` (16) of them, and answers 1 to be called
//! again from where it stopped (`defrag_step`). Smaller values, and servers without these
//! functions, are done in one call.

use std::ffi::CStr;
use std::os::raw::{c_int, c_longlong, c_ulong, c_void};
use std::ptr::NonNull;

use redis_module::raw;

use crate::stats::{self, Family};

/// Moves one heap allocation as `RedisModule_DefragAlloc` does: its bytes copied to a new
/// allocation of the same size and the old one freed, or `None` when it stays where it is.
pub type Mover<'a> = dyn FnMut(NonNull<u8>) -> Option<NonNull<u8>> + 'a;

/// A value stored under a key of one of the module's types.
pub trait Value: Clone + 'static {
    /// Its name in log messages.
    fn name() -> &'static str;
    /// Its name in the module's `INFO` section (the command family: `bf`, `cms`, …).
    const INFO: &'static str;
    /// The command its AOF rewrite emits.
    const LOADCHUNK: &'static CStr;
    /// Decode the RDB form written with encoding version `encver`.
    fn rdb_load(rdb: *mut raw::RedisModuleIO, encver: c_int) -> Result<Self, String>;
    /// Write the RDB form.
    fn rdb_save(&self, rdb: *mut raw::RedisModuleIO);
    /// Hand the `LOADCHUNK` iterators and chunks that rebuild it to `emit`, in order (the AOF
    /// rewrite): one chunk is made at a time, so a rewrite of a large value holds one chunk,
    /// not a copy of the value.
    fn load_sequence(&self, emit: &mut dyn FnMut(i64, &[u8]));
    /// Hand the bytes `DEBUG DIGEST` reads to `add`, in pieces (a large value is not copied
    /// whole).
    fn digest_pieces(&self, add: &mut dyn FnMut(&[u8]));
    /// What it holds, its own struct included, as Redis's allocator counts it (`MEMORY USAGE`
    /// without the key).
    fn mem_usage(&self) -> usize;
    /// Move the value's arrays with `mv` (active defragmentation); types that do not know
    /// how leave them where they are.
    ///
    /// # Safety
    /// `mv` must return memory that the global allocator can free, of the allocation's size
    /// and at least its alignment, holding its bytes, the old allocation freed.
    unsafe fn defrag(&mut self, mv: &mut Mover<'_>) {
        let _ = mv;
    }
}

/// The type callbacks of `V`.
pub const fn methods<V: Value>() -> raw::RedisModuleTypeMethods {
    raw::RedisModuleTypeMethods {
        version: raw::REDISMODULE_TYPE_METHOD_VERSION as u64,
        rdb_load: Some(rdb_load::<V>),
        rdb_save: Some(rdb_save::<V>),
        aof_rewrite: Some(aof_rewrite::<V>),
        free: Some(free::<V>),
        mem_usage: Some(mem_usage::<V>),
        digest: Some(digest::<V>),
        aux_load: None,
        aux_save: None,
        aux_save2: None,
        aux_save_triggers: 0,
        free_effort: Some(free_effort::<V>),
        unlink: None,
        copy: Some(copy::<V>),
        defrag: Some(defrag::<V>),
        copy2: None,
        free_effort2: None,
        mem_usage2: None,
        unlink2: None,
    }
}

/// `V`'s entry in the module's `INFO` section.
pub fn family<V: Value>(ty: &'static redis_module::native_types::RedisType) -> Family {
    Family {
        name: V::INFO,
        ty,
        measure: mem_usage::<V>,
    }
}

/// # Safety
/// `value` must be a live `V` this module handed to Redis for the type being called back.
unsafe fn get<'a, V>(value: *const c_void) -> &'a V {
    // SAFETY: guaranteed by the caller.
    unsafe { &*value.cast::<V>() }
}

/// A value handed to Redis (loaded or copied), counted in `INFO`.
fn boxed<V: Value>(v: V) -> *mut c_void {
    let bytes = v.mem_usage() as u64;
    let value = Box::into_raw(Box::new(v)).cast::<c_void>();
    stats::counted(V::INFO, value, bytes, mem_usage::<V>);
    value
}

unsafe extern "C" fn rdb_load<V: Value>(
    rdb: *mut raw::RedisModuleIO,
    encver: c_int,
) -> *mut c_void {
    match V::rdb_load(rdb, encver) {
        Ok(v) => boxed(v),
        Err(e) => {
            log_io(
                rdb,
                &format!("bloomery: refusing to load a {}: {e}", V::name()),
            );
            std::ptr::null_mut()
        }
    }
}

fn log_io(io: *mut raw::RedisModuleIO, msg: &str) {
    if let (Some(log), Ok(msg)) = (
        // SAFETY: reading a function pointer Redis filled in at module load.
        unsafe { raw::RedisModule_LogIOError },
        std::ffi::CString::new(msg),
    ) {
        // SAFETY: `io` is the live IO handle Redis passed to the callback; the format string
        // is a constant "%s" and `msg` a NUL-terminated string that outlives the call.
        unsafe { log(io, c"warning".as_ptr(), c"%s".as_ptr(), msg.as_ptr()) };
    }
}

unsafe extern "C" fn rdb_save<V: Value>(rdb: *mut raw::RedisModuleIO, value: *mut c_void) {
    // SAFETY: Redis passes a value of this type.
    unsafe { get::<V>(value) }.rdb_save(rdb);
}

unsafe extern "C" fn aof_rewrite<V: Value>(
    aof: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
    value: *mut c_void,
) {
    // SAFETY: reading a function pointer Redis filled in at module load.
    let Some(emit) = (unsafe { raw::RedisModule_EmitAOF }) else {
        return;
    };
    // SAFETY: Redis passes a value of this type.
    unsafe { get::<V>(value) }.load_sequence(&mut |it, data| {
        // SAFETY: `aof` and `key` are live for the callback; the format "slb" takes a
        // RedisModuleString*, a long long and a (pointer, length) buffer, which follow.
        unsafe {
            emit(
                aof,
                V::LOADCHUNK.as_ptr(),
                c"slb".as_ptr(),
                key,
                it as c_longlong,
                data.as_ptr(),
                data.len(),
            )
        };
    });
}

unsafe extern "C" fn free<V: Value>(value: *mut c_void) {
    stats::freed(value);
    if !value.is_null() {
        // SAFETY: the pointer came from Box::into_raw of a V and Redis frees it once.
        drop(unsafe { Box::from_raw(value.cast::<V>()) });
    }
}

unsafe extern "C" fn mem_usage<V: Value>(value: *const c_void) -> usize {
    // SAFETY: Redis passes a value of this type.
    unsafe { get::<V>(value) }.mem_usage()
}

unsafe extern "C" fn digest<V: Value>(md: *mut raw::RedisModuleDigest, value: *mut c_void) {
    // SAFETY: reading function pointers Redis filled in at module load.
    let (Some(add), Some(end)) = (unsafe { raw::RedisModule_DigestAddStringBuffer }, unsafe {
        raw::RedisModule_DigestEndSequence
    }) else {
        return;
    };
    // SAFETY: Redis passes a value of this type.
    unsafe { get::<V>(value) }.digest_pieces(&mut |piece| {
        // SAFETY: `md` is the digest Redis passed to this callback; `piece` outlives the call.
        unsafe { add(md, piece.as_ptr().cast_mut().cast(), piece.len()) }
    });
    // SAFETY: as above.
    unsafe { end(md) };
}

unsafe extern "C" fn copy<V: Value>(
    _from: *mut raw::RedisModuleString,
    _to: *mut raw::RedisModuleString,
    value: *const c_void,
) -> *mut c_void {
    // SAFETY: Redis passes a value of this type.
    boxed(unsafe { get::<V>(value) }.clone())
}

/// Moves the value's own allocation, then its arrays, with `mv`; returns where the value is
/// now.
///
/// # Safety
/// `value` must be a live `V` made by [`boxed`] that nothing else references during the call,
/// and `mv` must satisfy [`Value::defrag`]'s contract.
pub(crate) unsafe fn defrag_value<V: Value>(value: *mut c_void, mv: &mut Mover<'_>) -> *mut c_void {
    let mut at = value;
    if let Some(new) = NonNull::new(value.cast::<u8>()).and_then(&mut *mv) {
        at = new.as_ptr().cast();
        stats::relocated(value, at);
    }
    // SAFETY: `at` holds the value's bytes (moved as a whole, a Rust move: the value holds no
    // pointer into itself), and nothing else references it (the caller's contract).
    unsafe { (*at.cast::<V>()).defrag(mv) };
    at
}

/// Allocations a step of late defrag moves between two looks at the server's clock.
pub(crate) const STEP: usize = 16;

/// One step of the defragmentation of a value: its allocations (numbered in [`Value::defrag`]'s
/// fixed order, its own struct first) from `from` on are moved with `mv`, until `stop`, asked
/// after every [`STEP`] of them (so each step moves at least [`STEP`], or the rest), says the
/// time is up. Returns where the value is now and the number of the first allocation not
/// reached, or `None` when the step reached the last one. Allocations before `from` (moved by
/// earlier steps) are passed over without a look.
///
/// # Safety
/// As [`defrag_value`].
pub(crate) unsafe fn defrag_step<V: Value>(
    value: *mut c_void,
    from: usize,
    mv: &mut Mover<'_>,
    stop: &mut dyn FnMut() -> bool,
) -> (*mut c_void, Option<usize>) {
    let mut seen = 0usize;
    let mut resume = None;
    let mut window = |p: NonNull<u8>| {
        let i = seen;
        seen += 1;
        if i < from || resume.is_some() {
            return None;
        }
        let done = i - from;
        if done > 0 && done.is_multiple_of(STEP) && stop() {
            resume = Some(i);
            return None;
        }
        mv(p)
    };
    // SAFETY: the caller's contract; `window` passes on `mv`'s answers or leaves allocations
    // where they are.
    let at = unsafe { defrag_value::<V>(value, &mut window) };
    (at, resume)
}

/// How many allocations the value holds, its own struct included (what a defrag pass visits
/// and a free releases).
pub(crate) fn allocations<V: Value>(v: &mut V) -> usize {
    let mut n = 1;
    let mut count = |_: NonNull<u8>| {
        n += 1;
        None
    };
    // SAFETY: the mover moves nothing (it answers `None` for every allocation), so the
    // contract holds trivially and the value is left as it was.
    unsafe { v.defrag(&mut count) };
    n
}

/// The type's `free_effort` callback: the number of allocations of the value. Redis frees a
/// value of more than 64 on a background thread when it frees lazily (`UNLINK`, the
/// `lazyfree-*` settings: the module's free is safe there), and defragments a value of more
/// than `active-defrag-max-scan-fields` in steps ([`defrag`]).
unsafe extern "C" fn free_effort<V: Value>(
    _key: *mut raw::RedisModuleString,
    value: *const c_void,
) -> usize {
    if value.is_null() {
        return 1;
    }
    // SAFETY: Redis passes a live value of this type, on the main thread, where no command or
    // other callback holds a reference to it during the call; `allocations` changes nothing
    // (its mover moves nothing), so the exclusive borrow writes nothing.
    allocations(unsafe { &mut *value.cast_mut().cast::<V>() })
}

/// The type's defrag callback: the value and its arrays moved with `RedisModule_DefragAlloc`.
/// In one call (answers 0) unless the server defragments the value late, with a time limit
/// and a cursor: then a step from the stored cursor ([`defrag_step`]), which stores where it
/// stopped and answers 1 when allocations are left.
unsafe extern "C" fn defrag<V: Value>(
    ctx: *mut raw::RedisModuleDefragCtx,
    _key: *mut raw::RedisModuleString,
    value: *mut *mut c_void,
) -> c_int {
    // SAFETY: reading function pointers Redis filled in at module load (each `None` where the
    // server lacks it).
    let (alloc, should_stop, cursor_get, cursor_set) = unsafe {
        (
            raw::RedisModule_DefragAlloc,
            raw::RedisModule_DefragShouldStop,
            raw::RedisModule_DefragCursorGet,
            raw::RedisModule_DefragCursorSet,
        )
    };
    let Some(alloc) = alloc else {
        return 0;
    };
    // SAFETY: `value` is the slot Redis passed (checked for NULL first).
    if value.is_null() || unsafe { (*value).is_null() } {
        return 0;
    }
    let mut cursor: c_ulong = 0;
    // A late defrag has a cursor (the call answers OK); a call without one (REDISMODULE_ERR,
    // or a server without the function) does the whole value.
    let late = cursor_get.is_some_and(|get| {
        // SAFETY: `ctx` is the live defrag context of this callback; `cursor` outlives the call.
        unsafe { get(ctx, &mut cursor) == raw::REDISMODULE_OK as c_int }
    }) && cursor_set.is_some();
    let from = if late {
        usize::try_from(cursor).unwrap_or(usize::MAX)
    } else {
        0
    };
    let mut stop = || {
        // SAFETY: `ctx` is the live defrag context of this callback.
        late && should_stop.is_some_and(|f| unsafe { f(ctx) } != 0)
    };
    let mut mv = |p: NonNull<u8>| {
        // SAFETY: `ctx` is the live defrag context of this callback and `p` a live allocation
        // of the value, made by Redis's allocator (the module's global allocator: arrays in a
        // map are never passed, see `Words::relocate`). Redis copies it into an allocation of
        // the same size class (so of the same alignment: the module's arrays are whole
        // multiples of their alignment, which jemalloc's classes keep) and frees the old one,
        // or answers NULL and changes nothing.
        let moved = NonNull::new(unsafe { alloc(ctx, p.as_ptr().cast()) }.cast::<u8>());
        if moved.is_some() {
            stats::defrag_moved();
        }
        moved
    };
    // SAFETY: Redis passes the slot of a live value of this type, which no command or other
    // callback references while it defragments (it runs on the main thread between commands).
    let (at, resume) = unsafe { defrag_step::<V>(*value, from, &mut mv, &mut stop) };
    // SAFETY: as above.
    unsafe { *value = at };
    match (resume, cursor_set) {
        (Some(next), Some(set)) => {
            // SAFETY: `ctx` is the live defrag context of a late defrag (`late` holds: `stop`
            // answers true only then).
            let stored = unsafe { set(ctx, next as c_ulong) } == raw::REDISMODULE_OK as c_int;
            c_int::from(stored)
        }
        _ => 0,
    }
}
