//! The one framework behind every Redis data type of the module: the [`Value`] a key holds
//! and the type callbacks Redis calls ([`methods`]): RDB load and save, the AOF rewrite,
//! free, `MEMORY USAGE`, `DEBUG DIGEST`, `COPY` and active defragmentation. The module's own
//! structures ([`crate::types`]) and the values moved from RedisBloom ([`crate::moved`]) are
//! both values of it; each says only how it is encoded, measured and rebuilt.
//!
//! ## Active defragmentation
//! Where the server runs active defragmentation (Redis or Valkey built with their own jemalloc
//! and `activedefrag yes`), it calls [`defrag`] for each value of the module it scans. The
//! value's own allocation (its struct, every type) is handed to `RedisModule_DefragAlloc`,
//! which moves it when jemalloc says its page is worth emptying; then [`Value::defrag`] moves
//! the value's arrays where the type knows how (see the README for which). A value is moved
//! as a whole Rust value (a bitwise move), between callbacks that hold no reference to it.

use std::ffi::CStr;
use std::os::raw::{c_int, c_longlong, c_void};
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
    /// The `LOADCHUNK` iterators and chunks that rebuild it (the AOF rewrite).
    fn load_sequence(&self) -> Vec<(i64, Vec<u8>)>;
    /// The bytes `DEBUG DIGEST` reads.
    fn digest_bytes(&self) -> Vec<u8>;
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
        free_effort: None,
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
    // SAFETY: Redis passes a value of this type.
    let chunks = unsafe { get::<V>(value) }.load_sequence();
    // SAFETY: reading a function pointer Redis filled in at module load.
    let Some(emit) = (unsafe { raw::RedisModule_EmitAOF }) else {
        return;
    };
    for (it, data) in chunks {
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
    }
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
    // SAFETY: Redis passes a value of this type.
    let bytes = unsafe { get::<V>(value) }.digest_bytes();
    // SAFETY: reading function pointers Redis filled in at module load; `md` is the digest
    // Redis passed to this callback and `bytes` outlives the calls.
    unsafe {
        if let (Some(add), Some(end)) = (
            raw::RedisModule_DigestAddStringBuffer,
            raw::RedisModule_DigestEndSequence,
        ) {
            add(md, bytes.as_ptr().cast_mut().cast(), bytes.len());
            end(md);
        }
    }
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

/// The type's defrag callback: the value and its arrays moved with `RedisModule_DefragAlloc`.
/// Always completes in one call (0).
unsafe extern "C" fn defrag<V: Value>(
    ctx: *mut raw::RedisModuleDefragCtx,
    _key: *mut raw::RedisModuleString,
    value: *mut *mut c_void,
) -> c_int {
    // SAFETY: reading a function pointer Redis filled in at module load.
    let Some(alloc) = (unsafe { raw::RedisModule_DefragAlloc }) else {
        return 0;
    };
    if value.is_null() {
        return 0;
    }
    let mut mv = |p: NonNull<u8>| {
        // SAFETY: `ctx` is the live defrag context of this callback and `p` a live allocation
        // of the value, made by Redis's allocator (the module's global allocator). Redis
        // copies it into an allocation of the same size class (so of the same alignment: the
        // module's arrays are whole multiples of their alignment, which jemalloc's classes
        // keep) and frees the old one, or answers NULL and changes nothing.
        NonNull::new(unsafe { alloc(ctx, p.as_ptr().cast()) }.cast::<u8>())
    };
    // SAFETY: Redis passes the slot of a live value of this type, which no command or other
    // callback references while it defragments (it runs on the main thread between commands).
    unsafe { *value = defrag_value::<V>(*value, &mut mv) };
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Partial, Slot};
    use bloomery::TopK;

    /// What `RedisModule_DefragAlloc` does, on the C allocator behind the tests' global one:
    /// the allocation's bytes copied into a new one (64-byte aligned, as jemalloc keeps the
    /// module's arrays), the old one freed. Counts the moves.
    fn mover(moves: &mut usize) -> impl FnMut(NonNull<u8>) -> Option<NonNull<u8>> + '_ {
        move |p| {
            // SAFETY: `p` is a live allocation of the global allocator (the C allocator in
            // the tests); its usable size is what it holds, copied whole before it is freed.
            unsafe {
                let size = libc::malloc_usable_size(p.as_ptr().cast());
                let mut new: *mut c_void = std::ptr::null_mut();
                if libc::posix_memalign(&mut new, 64, size) != 0 {
                    return None;
                }
                std::ptr::copy_nonoverlapping(p.as_ptr(), new.cast::<u8>(), size);
                libc::free(p.as_ptr().cast());
                *moves += 1;
                NonNull::new(new.cast::<u8>())
            }
        }
    }

    /// A top-k value moves whole (its struct, buckets, list entries and items) and answers
    /// exactly as before; a partial LOADCHUNK value moves its bytes.
    #[test]
    fn defrag_moves_values_and_their_arrays() {
        let mut t = TopK::builder(4)
            .width(64)
            .depth(3)
            .redisbloom_list(true)
            .try_build()
            .unwrap();
        for i in 0..200u32 {
            t.insert(&(i % 13));
        }
        let want = t.clone();
        let v = boxed(Slot::Ready(t));
        let mut moves = 0;
        // SAFETY: `v` was made by `boxed` and nothing else references it; the mover copies
        // into memory of the global allocator with the alignment of every array.
        let at = unsafe { defrag_value::<Slot<TopK>>(v, &mut mover(&mut moves)) };
        // the struct, the buckets, the list's entries and its 4 items
        assert_eq!(moves, 3 + want.len());
        // SAFETY: `at` is where the value now is.
        let got = unsafe { get::<Slot<TopK>>(at) };
        let Slot::Ready(t) = got else {
            panic!("still ready")
        };
        assert_eq!(t, &want);
        assert_eq!(t.list(), want.list());
        assert_eq!(got.digest_bytes(), Slot::Ready(want.clone()).digest_bytes());
        let mut again = t.clone();
        let mut w = want;
        assert_eq!(again.insert("x"), w.insert("x"));
        // SAFETY: the value is dropped once, as Redis's free callback does.
        unsafe { free::<Slot<TopK>>(at) };

        let partial = Slot::<TopK>::Loading(Partial {
            bytes: b"BLOOMERY and the rest".to_vec(),
            total: 4096,
        });
        let v = boxed(partial.clone());
        let mut moves = 0;
        // SAFETY: as above.
        let at = unsafe { defrag_value::<Slot<TopK>>(v, &mut mover(&mut moves)) };
        assert_eq!(moves, 2, "the struct and the bytes received");
        // SAFETY: `at` is where the value now is.
        assert_eq!(unsafe { get::<Slot<TopK>>(at) }, &partial);
        // SAFETY: dropped once.
        unsafe { free::<Slot<TopK>>(at) };
    }

    /// A mover that leaves everything in place changes nothing.
    #[test]
    fn defrag_without_moves_keeps_the_value() {
        let t = TopK::try_with_shape(3, 16, 2, 0.9).unwrap();
        let v = boxed(Slot::Ready(t.clone()));
        let mut none = |_: NonNull<u8>| None;
        // SAFETY: `v` was made by `boxed`; the mover moves nothing.
        let at = unsafe { defrag_value::<Slot<TopK>>(v, &mut none) };
        assert_eq!(at, v);
        // SAFETY: dropped once.
        unsafe { free::<Slot<TopK>>(at) };
    }
}
