//! RedisBloom values moved in by SCANDUMP / LOADCHUNK, answering as RedisBloom 2.x did.
//!
//! RedisBloom's RDB types (`MBbloom--`, `MBbloomCF`) do not load into this module: Redis
//! finds no module type of those names and refuses the RDB (or the RESTORE payload) with an
//! error, without calling any of our code. Values move instead through RedisBloom's own dump
//! commands (`scripts/migrate-redisbloom.py`, see the README): `BF.SCANDUMP`/`CF.SCANDUMP` on
//! the old server give a header chunk (iterator 1) and data chunks, and `BF.LOADCHUNK`/
//! `CF.LOADCHUNK` here rebuild the value.
//!
//! Such a value keeps RedisBloom's hashing and layout ([`bloomery::RedisBloomFilter`],
//! [`bloomery::RedisBloomCuckooFilter`]) in its own Redis types, `BLMRY-RBB` and `BLMRY-RBC`,
//! and every `BF.*` / `CF.*` command on it answers as RedisBloom 2.6 does: the same results,
//! reply types (RESP3 booleans and maps), error texts and growth. Only the size limit is
//! ours: a header announcing more than `MAX-BYTES` is refused, and a value cannot grow past it
//! (RedisBloom's "ERR problem inserting into filter" / "Memory allocation failure").
//!
//! The command table routes `BF.*` and `CF.*` here. Commands that run on every request try
//! bloomery's handler first and come here only when it meets a key of another type, so the
//! usual path costs nothing; the others look at the key's type first.
//!
//! Persistence: the RDB holds the library's file format (kinds 22 and 23, fully validated on
//! load, bounded by `MAX-BYTES`); the AOF rewrite emits RedisBloom's LOADCHUNK sequence.

use std::ffi::CStr;
use std::os::raw::{c_int, c_longlong, c_void};

use bloomery::{
    Error, Persist, RedisBloomChunkError, RedisBloomCuckooFilter, RedisBloomCuckooInsert,
    RedisBloomFilter,
};
use redis_module::native_types::RedisType;
use redis_module::{raw, Context, ContextFlags, RedisError, RedisResult, RedisString, RedisValue};

use crate::config;

/// Encoding version of the two types' RDB layout.
const ENCODING_VERSION: i32 = 1;

/// RedisBloom's default `CF_MAX_EXPANSIONS`: inserts stop once a cuckoo filter has this many
/// sub-filters.
pub const CF_MAX_EXPANSIONS: usize = 32;

/// A value type of this module.
trait Moved: Persist + Clone + 'static {
    /// Name in log messages.
    const NAME: &'static str;
    /// The command the AOF rewrite emits.
    const LOADCHUNK: &'static CStr;
    /// The value as RedisBloom's LOADCHUNK sequence.
    fn load_sequence(&self) -> Vec<(i64, Vec<u8>)>;
    /// Bytes held beyond the value's own struct (for `MEMORY USAGE`).
    fn storage(&self) -> u64;
}

fn sequence(header: Vec<u8>, chunk: impl Fn(i64) -> Option<(i64, Vec<u8>)>) -> Vec<(i64, Vec<u8>)> {
    let mut out = vec![(1, header)];
    let mut it = 1;
    while let Some((next, data)) = chunk(it) {
        out.push((next, data));
        it = next;
    }
    out
}

impl Moved for RedisBloomFilter {
    const NAME: &'static str = "RedisBloom bloom filter";
    const LOADCHUNK: &'static CStr = c"BF.LOADCHUNK";
    fn load_sequence(&self) -> Vec<(i64, Vec<u8>)> {
        sequence(self.header_chunk(), |it| self.chunk(it))
    }
    fn storage(&self) -> u64 {
        let link = std::mem::size_of::<bloomery::RedisBloomLink>() as u64;
        self.held_bytes() + link * self.links().len() as u64
    }
}

impl Moved for RedisBloomCuckooFilter {
    const NAME: &'static str = "RedisBloom cuckoo filter";
    const LOADCHUNK: &'static CStr = c"CF.LOADCHUNK";
    fn load_sequence(&self) -> Vec<(i64, Vec<u8>)> {
        if self.is_empty() {
            // every slot is empty: the header rebuilds it all
            return vec![(1, self.header_chunk())];
        }
        sequence(self.header_chunk(), |it| self.chunk(it))
    }
    fn storage(&self) -> u64 {
        // each sub-filter: its slots and its entry in the list (words handle and count)
        self.held_bytes() + 48 * self.filters() as u64
    }
}

const fn methods<T: Moved>() -> raw::RedisModuleTypeMethods {
    raw::RedisModuleTypeMethods {
        version: raw::REDISMODULE_TYPE_METHOD_VERSION as u64,
        rdb_load: Some(rdb_load::<T>),
        rdb_save: Some(rdb_save::<T>),
        aof_rewrite: Some(aof_rewrite::<T>),
        free: Some(free::<T>),
        mem_usage: Some(mem_usage::<T>),
        digest: Some(digest::<T>),
        aux_load: None,
        aux_save: None,
        aux_save2: None,
        aux_save_triggers: 0,
        free_effort: None,
        unlink: None,
        copy: Some(copy::<T>),
        defrag: None,
        copy2: None,
        free_effort2: None,
        mem_usage2: None,
        unlink2: None,
    }
}

/// RedisBloom Bloom chains moved in by `BF.LOADCHUNK`.
pub static RB_BF_TYPE: RedisType =
    RedisType::new("BLMRY-RBB", ENCODING_VERSION, methods::<RedisBloomFilter>());

/// RedisBloom cuckoo filters moved in by `CF.LOADCHUNK`.
pub static RB_CF_TYPE: RedisType = RedisType::new(
    "BLMRY-RBC",
    ENCODING_VERSION,
    methods::<RedisBloomCuckooFilter>(),
);

unsafe extern "C" fn rdb_load<T: Moved>(
    rdb: *mut raw::RedisModuleIO,
    encver: c_int,
) -> *mut c_void {
    let loaded = match encver {
        1 => raw::load_string_buffer(rdb)
            .map_err(|e| e.to_string())
            .and_then(|b| T::from_bytes(b.as_ref()).map_err(|e| e.to_string())),
        v => Err(format!("unknown encoding version {v}")),
    };
    match loaded {
        Ok(v) => Box::into_raw(Box::new(v)).cast::<c_void>(),
        Err(e) => {
            log_io(
                rdb,
                &format!("bloomery: refusing to load a {}: {e}", T::NAME),
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
        // SAFETY: `io` is the live IO handle Redis passed to the callback; the format string is
        // a constant "%s" and `msg` a NUL-terminated string that outlives the call.
        unsafe { log(io, c"warning".as_ptr(), c"%s".as_ptr(), msg.as_ptr()) };
    }
}

/// # Safety
/// `value` must be a `T` this module registered for the type Redis calls back for.
unsafe fn value<'a, T>(value: *const c_void) -> &'a T {
    // SAFETY: guaranteed by the caller.
    unsafe { &*value.cast::<T>() }
}

unsafe extern "C" fn rdb_save<T: Moved>(rdb: *mut raw::RedisModuleIO, v: *mut c_void) {
    // SAFETY: Redis passes a value of this type.
    raw::save_slice(rdb, &unsafe { value::<T>(v) }.to_bytes());
}

unsafe extern "C" fn aof_rewrite<T: Moved>(
    aof: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
    v: *mut c_void,
) {
    // SAFETY: Redis passes a value of this type.
    let chunks = unsafe { value::<T>(v) }.load_sequence();
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
                T::LOADCHUNK.as_ptr(),
                c"slb".as_ptr(),
                key,
                it as c_longlong,
                data.as_ptr(),
                data.len(),
            )
        };
    }
}

unsafe extern "C" fn free<T: Moved>(v: *mut c_void) {
    if !v.is_null() {
        // SAFETY: the pointer came from Box::into_raw of a T and Redis frees it once.
        drop(unsafe { Box::from_raw(v.cast::<T>()) });
    }
}

unsafe extern "C" fn mem_usage<T: Moved>(v: *const c_void) -> usize {
    // SAFETY: Redis passes a value of this type.
    let t = unsafe { value::<T>(v) };
    std::mem::size_of::<T>() + t.storage() as usize
}

unsafe extern "C" fn digest<T: Moved>(md: *mut raw::RedisModuleDigest, v: *mut c_void) {
    // SAFETY: Redis passes a value of this type.
    let bytes = unsafe { value::<T>(v) }.to_bytes();
    // SAFETY: reading function pointers Redis filled in at module load; `md` is live for the
    // callback and `bytes` outlives the calls.
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

unsafe extern "C" fn copy<T: Moved>(
    _from: *mut raw::RedisModuleString,
    _to: *mut raw::RedisModuleString,
    v: *const c_void,
) -> *mut c_void {
    // SAFETY: Redis passes a value of this type.
    let t = unsafe { value::<T>(v) };
    Box::into_raw(Box::new(t.clone())).cast::<c_void>()
}

// -------------------------------------------------------------------------------------------
// Routing
// -------------------------------------------------------------------------------------------

type Handler = fn(&Context, Vec<RedisString>) -> RedisResult;

/// What a handler for moved values answers: `None` when the key does not hold one (the
/// command then goes to bloomery's handler).
type MovedHandler = fn(&Context, &[RedisString]) -> Option<RedisResult>;

fn is_wrong_type(e: &RedisError) -> bool {
    match e {
        RedisError::WrongType => true,
        RedisError::Str(s) => s.starts_with("WRONGTYPE"),
        RedisError::String(s) => s.starts_with("WRONGTYPE"),
        _ => false,
    }
}

/// The argument pointers of a command, kept across a call that consumes its `RedisString`s:
/// inline for the usual few arguments, so the common path does not allocate.
enum SavedArgs {
    Few([*mut raw::RedisModuleString; 8], usize),
    Many(Vec<*mut raw::RedisModuleString>),
}

impl SavedArgs {
    fn new(args: &[RedisString]) -> Self {
        if args.len() <= 8 {
            let mut a = [std::ptr::null_mut(); 8];
            for (d, s) in a.iter_mut().zip(args) {
                *d = s.inner;
            }
            SavedArgs::Few(a, args.len())
        } else {
            SavedArgs::Many(args.iter().map(|a| a.inner).collect())
        }
    }

    /// The arguments again (each retained, as Redis hands them to commands).
    fn restore(&self, ctx: &Context) -> Vec<RedisString> {
        let ptrs = match self {
            SavedArgs::Few(a, n) => &a[..*n],
            SavedArgs::Many(v) => &v[..],
        };
        ptrs.iter()
            .map(|&p| RedisString::new(std::ptr::NonNull::new(ctx.ctx), p))
            .collect()
    }
}

/// bloomery's handler first; only when it meets a key of another type, the handler of moved
/// values. The argument strings stay alive for the whole command (Redis's client holds them),
/// so their pointers can be taken up again after bloomery's handler dropped its copies.
fn fallback(
    ctx: &Context,
    args: Vec<RedisString>,
    ours: Handler,
    theirs: MovedHandler,
) -> RedisResult {
    let saved = SavedArgs::new(&args);
    match ours(ctx, args) {
        Err(e) if is_wrong_type(&e) => theirs(ctx, &saved.restore(ctx)).unwrap_or(Err(e)),
        r => r,
    }
}

/// The handler of moved values first (it answers `None` for other keys), then bloomery's.
fn first(
    ctx: &Context,
    args: Vec<RedisString>,
    ours: Handler,
    theirs: MovedHandler,
) -> RedisResult {
    match theirs(ctx, &args) {
        Some(r) => r,
        None => ours(ctx, args),
    }
}

macro_rules! routes {
    ($($(#[$doc:meta])* $name:ident: $how:ident($ours:path, $theirs:path);)*) => {$(
        $(#[$doc])*
        pub fn $name(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
            $how(ctx, args, $ours, $theirs)
        }
    )*};
}

routes! {
    /// `BF.ADD`.
    bf_add: fallback(crate::bf::add, bf::add);
    /// `BF.MADD`.
    bf_madd: fallback(crate::bf::madd, bf::madd);
    /// `BF.INSERT`.
    bf_insert: fallback(crate::bf::insert, bf::insert);
    /// `BF.EXISTS`.
    bf_exists: fallback(crate::bf::exists, bf::exists);
    /// `BF.MEXISTS`.
    bf_mexists: fallback(crate::bf::mexists, bf::mexists);
    /// `BF.INFO`.
    bf_info: first(crate::bf::info, bf::info);
    /// `BF.CARD`.
    bf_card: first(crate::bf::card, bf::card);
    /// `BF.SCANDUMP`.
    bf_scandump: first(crate::bf::scandump, bf::scandump);
    /// `BF.LOADCHUNK`: RedisBloom's sequence (header at iterator 1) makes a moved value.
    bf_loadchunk: first(crate::bf::loadchunk, bf::loadchunk);
    /// `CF.ADD`.
    cf_add: fallback(crate::cf::add, cf::add);
    /// `CF.ADDNX`.
    cf_addnx: fallback(crate::cf::addnx, cf::addnx);
    /// `CF.INSERT`.
    cf_insert: fallback(crate::cf::insert, cf::insert);
    /// `CF.INSERTNX`.
    cf_insertnx: fallback(crate::cf::insertnx, cf::insertnx);
    /// `CF.EXISTS`.
    cf_exists: fallback(crate::cf::exists, cf::exists);
    /// `CF.MEXISTS`.
    cf_mexists: fallback(crate::cf::mexists, cf::mexists);
    /// `CF.COUNT`.
    cf_count: fallback(crate::cf::count, cf::count);
    /// `CF.DEL`.
    cf_del: first(crate::cf::del, cf::del);
    /// `CF.INFO`.
    cf_info: first(crate::cf::info, cf::info);
    /// `CF.SCANDUMP`.
    cf_scandump: first(crate::cf::scandump, cf::scandump);
    /// `CF.LOADCHUNK`: RedisBloom's sequence (header at position 1) makes a moved value.
    cf_loadchunk: first(crate::cf::loadchunk, cf::loadchunk);
}

/// `BLOOMERY.DUMP` of a moved value: its file-format bytes.
pub fn bloomery_dump(key: &redis_module::key::RedisKey) -> Option<RedisResult> {
    if let Ok(Some(v)) = key.get_value::<RedisBloomFilter>(&RB_BF_TYPE) {
        return Some(Ok(RedisValue::StringBuffer(v.to_bytes())));
    }
    if let Ok(Some(v)) = key.get_value::<RedisBloomCuckooFilter>(&RB_CF_TYPE) {
        return Some(Ok(RedisValue::StringBuffer(v.to_bytes())));
    }
    None
}

fn resp3(ctx: &Context) -> bool {
    ctx.get_flags().contains(ContextFlags::FLAGS_RESP3)
}

fn int(v: u64) -> RedisValue {
    RedisValue::Integer(i64::try_from(v).unwrap_or(i64::MAX))
}

/// A whole-number argument as `RedisModule_StringToLongLong` reads it.
fn long_long(a: &RedisString) -> Option<i64> {
    a.parse_integer().ok()
}

/// A number argument as `RedisModule_StringToDouble` reads it.
fn double(a: &RedisString) -> Option<f64> {
    a.parse_float().ok()
}

fn too_large(e: &RedisBloomChunkError) -> Option<RedisError> {
    match e {
        RedisBloomChunkError::TooLarge { requested, limit } => Some(RedisError::String(format!(
            "ERR filter would need {requested} bytes, over the module's MAX-BYTES limit of {limit}"
        ))),
        _ => None,
    }
}

/// An ordered map reply: a RESP3 map, or RedisBloom's flat name/value array in RESP2.
fn reply_map(ctx: &Context, pairs: Vec<(&'static str, RedisValue)>) -> RedisResult {
    raw::reply_with_map(ctx.ctx, pairs.len() as std::os::raw::c_long);
    for (name, v) in pairs {
        ctx.reply(Ok(RedisValue::SimpleStringStatic(name)));
        ctx.reply(Ok(v));
    }
    Ok(RedisValue::NoReply)
}

/// `BF.*` on moved RedisBloom chains (RedisBloom 2.6's `rebloom.c` behaviour).
mod bf {
    use super::*;

    fn read(
        ctx: &Context,
        key: &RedisString,
        f: impl FnOnce(&RedisBloomFilter) -> RedisResult,
    ) -> Option<RedisResult> {
        match ctx.open_key(key).get_value::<RedisBloomFilter>(&RB_BF_TYPE) {
            Ok(Some(b)) => Some(f(b)),
            _ => None,
        }
    }

    /// `SBChain_Add`'s outcome as RedisBloom replies it.
    fn add_one(b: &mut RedisBloomFilter, item: &RedisString) -> Result<bool, &'static str> {
        match b.try_insert(item.as_slice()) {
            Ok(new) => Ok(new),
            Err(Error::Full { .. }) => Err("ERR non scaling filter is full"),
            Err(_) => Err("ERR problem inserting into filter"),
        }
    }

    fn with_chain(
        ctx: &Context,
        key: &RedisString,
        f: impl FnOnce(&mut RedisBloomFilter) -> RedisResult,
    ) -> Option<RedisResult> {
        let k = ctx.open_key_writable(key);
        match k.get_value::<RedisBloomFilter>(&RB_BF_TYPE) {
            Ok(Some(b)) => {
                let r = f(b);
                ctx.replicate_verbatim();
                Some(r)
            }
            _ => None,
        }
    }

    pub fn add(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
        if args.len() != 3 {
            return None;
        }
        with_chain(ctx, &args[1], |b| match add_one(b, &args[2]) {
            Ok(new) => Ok(RedisValue::Bool(new)),
            Err(e) => Err(RedisError::Str(e)),
        })
    }

    /// Add items until the chain is full (RedisBloom stops there; other errors go on).
    fn add_items(b: &mut RedisBloomFilter, items: &[RedisString]) -> RedisResult {
        let mut out = Vec::with_capacity(items.len());
        for it in items {
            match add_one(b, it) {
                Ok(new) => out.push(RedisValue::Bool(new)),
                Err(e) => {
                    out.push(RedisValue::StaticError(e));
                    if e == "ERR non scaling filter is full" {
                        break;
                    }
                }
            }
        }
        Ok(RedisValue::Array(out))
    }

    pub fn madd(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
        if args.len() < 3 {
            return None;
        }
        with_chain(ctx, &args[1], |b| add_items(b, &args[2..]))
    }

    /// `BF.INSERT`, its arguments read as RedisBloom reads them (by first letter).
    pub fn insert(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
        if args.len() < 4 {
            return None;
        }
        let (mut error, mut capacity, mut expansion) = (0.01f64, 100i64, 2i64);
        let mut at = 2;
        let mut items = None;
        while at < args.len() && items.is_none() {
            let a = args[at].as_slice();
            let next = |at: usize| args.get(at + 1).ok_or(RedisError::WrongArity);
            let r: Result<(), RedisError> = match a.first().map(u8::to_ascii_lowercase) {
                Some(b'i') => {
                    at += 1;
                    items = Some(at);
                    Ok(())
                }
                Some(b'e') => next(at).and_then(|v| {
                    at += 2;
                    if a.get(1).map(u8::to_ascii_lowercase) == Some(b'r') {
                        error = double(v).ok_or(RedisError::Str("Bad error rate"))?;
                    } else {
                        expansion = long_long(v).ok_or(RedisError::Str("Bad expansion"))?;
                    }
                    Ok(())
                }),
                Some(b'c') => next(at).and_then(|v| {
                    at += 2;
                    capacity = long_long(v).ok_or(RedisError::Str("Bad capacity"))?;
                    Ok(())
                }),
                Some(b'n') => {
                    at += 1;
                    Ok(())
                }
                _ => Err(RedisError::Str("Unknown argument received")),
            };
            if let Err(e) = r {
                return Some(Err(e));
            }
        }
        let Some(items) = items.filter(|&i| i < args.len()) else {
            return Some(Err(RedisError::WrongArity));
        };
        if !(error > 0.0 && error < 1.0) || capacity < 1 || expansion < 1 {
            return Some(Err(RedisError::Str("Bad argument received")));
        }
        with_chain(ctx, &args[1], |b| add_items(b, &args[items..]))
    }

    pub fn exists(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
        if args.len() != 3 {
            return None;
        }
        read(ctx, &args[1], |b| {
            Ok(RedisValue::Bool(b.contains(args[2].as_slice())))
        })
    }

    pub fn mexists(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
        if args.len() < 3 {
            return None;
        }
        read(ctx, &args[1], |b| {
            Ok(RedisValue::Array(
                args[2..]
                    .iter()
                    .map(|it| RedisValue::Bool(b.contains(it.as_slice())))
                    .collect(),
            ))
        })
    }

    pub fn card(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
        if args.len() != 2 {
            return None;
        }
        read(ctx, &args[1], |b| Ok(int(b.len())))
    }

    pub fn info(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
        if !(2..=3).contains(&args.len()) {
            return None;
        }
        read(ctx, &args[1], |b| {
            let expansion = if b.is_scaling() {
                int(u64::from(b.growth()))
            } else {
                RedisValue::Null
            };
            let fields = [
                ("Capacity", "capacity", int(b.total_entries())),
                ("Size", "size", int(b.redisbloom_memory())),
                ("Number of filters", "filters", int(b.links().len() as u64)),
                ("Number of items inserted", "items", int(b.len())),
                ("Expansion rate", "expansion", expansion),
            ];
            let Some(which) = args.get(2) else {
                return reply_map(ctx, fields.into_iter().map(|(n, _, v)| (n, v)).collect());
            };
            let Some((name, _, v)) = fields
                .into_iter()
                .find(|(_, kw, _)| which.as_slice().eq_ignore_ascii_case(kw.as_bytes()))
            else {
                return Err(RedisError::Str("Invalid information value"));
            };
            // one field: a one-pair map in RESP3, a one-element array in RESP2
            if resp3(ctx) {
                reply_map(ctx, vec![(name, v)])
            } else {
                Ok(RedisValue::Array(vec![v]))
            }
        })
    }

    pub fn scandump(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
        if args.len() != 3 {
            return None;
        }
        read(ctx, &args[1], |b| {
            let it =
                long_long(&args[2]).ok_or(RedisError::Str("Second argument must be numeric"))?;
            let (next, data) = if it == 0 {
                (1, b.header_chunk())
            } else {
                b.chunk(it).unwrap_or((0, Vec::new()))
            };
            Ok(RedisValue::Array(vec![
                RedisValue::Integer(next),
                RedisValue::StringBuffer(data),
            ]))
        })
    }

    pub fn loadchunk(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
        if args.len() != 4 {
            return None;
        }
        let Some(it) = long_long(&args[2]) else {
            // RedisBloom's text; bloomery's own sequence never has a non-numeric iterator
            return Some(Err(RedisError::Str("ERR Second argument must be numeric")));
        };
        let data = args[3].as_slice();
        let k = ctx.open_key_writable(&args[1]);
        if k.is_empty() && it == 1 {
            let r = match RedisBloomFilter::from_header_chunk(data, config::max_bytes()) {
                Ok(b) => k
                    .set_value(&RB_BF_TYPE, b)
                    .map(|()| RedisValue::SimpleStringStatic("OK")),
                Err(e) => Err(too_large(&e).unwrap_or(RedisError::Str("ERR received bad data"))),
            };
            if r.is_ok() {
                ctx.replicate_verbatim();
            }
            return Some(r);
        }
        let b = match k.get_value::<RedisBloomFilter>(&RB_BF_TYPE) {
            Ok(Some(b)) => b,
            _ => return None,
        };
        Some(match b.load_chunk(it, data) {
            Ok(()) => {
                ctx.replicate_verbatim();
                Ok(RedisValue::SimpleStringStatic("OK"))
            }
            Err(RedisBloomChunkError::NoSubFilter { .. }) => {
                Err(RedisError::Str("ERR invalid offset - no link found"))
            }
            Err(RedisBloomChunkError::CrossesEnd { .. }) => Err(RedisError::Str(
                "ERR invalid chunk - Too big for current filter",
            )),
            Err(_) => Err(RedisError::Str("ERR received bad data")),
        })
    }
}

/// `CF.*` on moved RedisBloom cuckoo filters (RedisBloom 2.6's `rebloom.c` behaviour).
mod cf {
    use super::*;

    fn read(
        ctx: &Context,
        key: &RedisString,
        f: impl FnOnce(&RedisBloomCuckooFilter) -> RedisResult,
    ) -> Option<RedisResult> {
        match ctx
            .open_key(key)
            .get_value::<RedisBloomCuckooFilter>(&RB_CF_TYPE)
        {
            Ok(Some(c)) => Some(f(c)),
            _ => None,
        }
    }

    fn with_filter(
        ctx: &Context,
        key: &RedisString,
        f: impl FnOnce(&mut RedisBloomCuckooFilter) -> RedisResult,
    ) -> Option<RedisResult> {
        let k = ctx.open_key_writable(key);
        match k.get_value::<RedisBloomCuckooFilter>(&RB_CF_TYPE) {
            Ok(Some(c)) => Some(f(c)),
            _ => None,
        }
    }

    /// `cfInsertCommon` on an existing filter.
    fn insert_items(
        ctx: &Context,
        c: &mut RedisBloomCuckooFilter,
        items: &[RedisString],
        nx: bool,
        multi: bool,
    ) -> RedisResult {
        if c.filters() >= CF_MAX_EXPANSIONS {
            return Err(RedisError::Str("Maximum expansions reached"));
        }
        let r3 = resp3(ctx);
        let mut out = Vec::with_capacity(items.len());
        for it in items {
            let r = if nx {
                c.insert_unique(it.as_slice())
            } else {
                c.insert(it.as_slice())
            };
            let bools = r3 && (!nx || !multi);
            out.push(match r {
                RedisBloomCuckooInsert::Inserted if bools => RedisValue::Bool(true),
                RedisBloomCuckooInsert::Inserted => RedisValue::Integer(1),
                RedisBloomCuckooInsert::Exists if bools => RedisValue::Bool(false),
                RedisBloomCuckooInsert::Exists => RedisValue::Integer(0),
                RedisBloomCuckooInsert::NoSpace if !multi => {
                    return Err(RedisError::Str("Filter is full"));
                }
                RedisBloomCuckooInsert::NoSpace if r3 && !nx => RedisValue::Bool(false),
                RedisBloomCuckooInsert::NoSpace => RedisValue::Integer(-1),
                RedisBloomCuckooInsert::NoMemory if !multi => {
                    ctx.replicate_verbatim();
                    return Err(RedisError::Str("Memory allocation failure"));
                }
                RedisBloomCuckooInsert::NoMemory => RedisValue::Integer(-1),
            });
        }
        ctx.replicate_verbatim();
        Ok(if multi {
            RedisValue::Array(out)
        } else {
            out.pop().unwrap_or(RedisValue::Null)
        })
    }

    fn add_generic(ctx: &Context, args: &[RedisString], nx: bool) -> Option<RedisResult> {
        if args.len() != 3 {
            return None;
        }
        with_filter(ctx, &args[1], |c| {
            insert_items(ctx, c, &args[2..], nx, false)
        })
    }

    pub fn add(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
        add_generic(ctx, args, false)
    }

    pub fn addnx(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
        add_generic(ctx, args, true)
    }

    /// `CF.INSERT`/`CF.INSERTNX`, arguments read as RedisBloom reads them (by first letter).
    fn insert_generic(ctx: &Context, args: &[RedisString], nx: bool) -> Option<RedisResult> {
        if args.len() < 4 {
            return None;
        }
        let mut at = 2;
        let mut items = None;
        while at < args.len() && items.is_none() {
            match args[at].as_slice().first().map(u8::to_ascii_lowercase) {
                Some(b'c') => {
                    at += 1;
                    let Some(v) = args.get(at) else {
                        return Some(Err(RedisError::WrongArity));
                    };
                    at += 1;
                    match long_long(v) {
                        None => return Some(Err(RedisError::Str("Bad capacity"))),
                        Some(cap) if cap < 4 => {
                            return Some(Err(RedisError::Str(
                                "Capacity must be at least (BucketSize * 2)",
                            )))
                        }
                        Some(_) => {}
                    }
                }
                Some(b'i') => {
                    at += 1;
                    items = Some(at);
                }
                Some(b'n') => at += 1,
                _ => return Some(Err(RedisError::Str("Unknown argument received"))),
            }
        }
        let Some(items) = items.filter(|&i| i < args.len()) else {
            return Some(Err(RedisError::WrongArity));
        };
        with_filter(ctx, &args[1], |c| {
            insert_items(ctx, c, &args[items..], nx, true)
        })
    }

    pub fn insert(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
        insert_generic(ctx, args, false)
    }

    pub fn insertnx(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
        insert_generic(ctx, args, true)
    }

    pub fn exists(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
        if args.len() != 3 {
            return None;
        }
        read(ctx, &args[1], |c| {
            Ok(RedisValue::Bool(c.contains(args[2].as_slice())))
        })
    }

    pub fn mexists(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
        if args.len() < 3 {
            return None;
        }
        read(ctx, &args[1], |c| {
            Ok(RedisValue::Array(
                args[2..]
                    .iter()
                    .map(|it| RedisValue::Bool(c.contains(it.as_slice())))
                    .collect(),
            ))
        })
    }

    pub fn count(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
        if args.len() != 3 {
            return None;
        }
        read(ctx, &args[1], |c| Ok(int(c.count(args[2].as_slice()))))
    }

    pub fn del(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
        if args.len() != 3 {
            return None;
        }
        with_filter(ctx, &args[1], |c| {
            ctx.replicate_verbatim();
            Ok(RedisValue::Bool(c.remove(args[2].as_slice())))
        })
    }

    pub fn info(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
        if args.len() != 2 {
            return None;
        }
        read(ctx, &args[1], |c| {
            reply_map(
                ctx,
                vec![
                    ("Size", int(c.redisbloom_memory())),
                    ("Number of buckets", int(c.first_buckets())),
                    ("Number of filters", int(c.filters() as u64)),
                    ("Number of items inserted", int(c.len())),
                    ("Number of items deleted", int(c.deletes())),
                    ("Bucket size", int(u64::from(c.bucket_size()))),
                    ("Expansion rate", int(u64::from(c.expansion()))),
                    ("Max iterations", int(u64::from(c.max_iterations()))),
                ],
            )
        })
    }

    pub fn scandump(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
        if args.len() != 3 {
            return None;
        }
        let pos = long_long(&args[2]).filter(|&p| p >= 0);
        read(ctx, &args[1], |c| {
            let pos = pos.ok_or(RedisError::Str("Invalid position"))?;
            let (next, data) = if c.is_empty() {
                (0, RedisValue::Null) // RedisBloom dumps nothing of a filter without items
            } else if pos == 0 {
                (1, RedisValue::StringBuffer(c.header_chunk()))
            } else {
                c.chunk(pos).map_or((0, RedisValue::Null), |(n, d)| {
                    (n, RedisValue::StringBuffer(d))
                })
            };
            Ok(RedisValue::Array(vec![RedisValue::Integer(next), data]))
        })
    }

    pub fn loadchunk(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
        if args.len() != 4 {
            return None;
        }
        let k = ctx.open_key_writable(&args[1]);
        let pos = long_long(&args[2]);
        let blob = args[3].as_slice();
        if k.is_empty() && pos == Some(1) {
            if blob.len() != RedisBloomCuckooFilter::HEADER_LEN {
                return Some(Err(RedisError::Str("Invalid header")));
            }
            let r = match RedisBloomCuckooFilter::from_header_chunk(blob, config::max_bytes()) {
                Ok(c) => k
                    .set_value(&RB_CF_TYPE, c)
                    .map(|()| RedisValue::SimpleStringStatic("OK")),
                Err(e) => Err(too_large(&e).unwrap_or(RedisError::Str("Couldn't create filter!"))),
            };
            if r.is_ok() {
                ctx.replicate_verbatim();
            }
            return Some(r);
        }
        let c = match k.get_value::<RedisBloomCuckooFilter>(&RB_CF_TYPE) {
            Ok(Some(c)) => c,
            _ => return None,
        };
        Some(match pos {
            None | Some(0) => Err(RedisError::Str("Invalid position")),
            Some(1) => Err(RedisError::Str("ERR item exists")),
            Some(pos) => match c.load_chunk(pos, blob) {
                Ok(()) => {
                    ctx.replicate_verbatim();
                    Ok(RedisValue::SimpleStringStatic("OK"))
                }
                Err(_) => Err(RedisError::Str("Couldn't load chunk!")),
            },
        })
    }
}
