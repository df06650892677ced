//! The per-request path of the two commands a Bloom filter's users send most, `BF.ADD` and
//! `BF.EXISTS`, registered with their own entry points.
//!
//! The framework's entry point copies every argument into a vector of retained strings before
//! a handler runs (an allocation and a retain and release per argument): about a tenth of the
//! server's whole work per `BF.EXISTS`, measured with callgrind. These entry points read the
//! key and the item where Redis holds them, and answer the usual case themselves: three
//! arguments and a key that holds one of the module's ready `BF` values (or, for `BF.EXISTS`,
//! no key). Every other case — a wrong arity, a key of another type (a filter moved from
//! RedisBloom included), a value still being loaded, an item the filter cannot take — goes to
//! the framework's path and the handlers in [`crate::bf`], so replies and errors have one
//! source. Writes replicate, mark the value for `INFO` and announce the keyspace event as
//! [`crate::keys::written`] does.

use std::ffi::CStr;
use std::os::raw::c_int;

use bloomery::{Filter, ScalableBloomFilter};
use redis_module::{raw, Context, RedisResult, RedisString};

use crate::bf;
use crate::route::{self, Handler, MovedHandler};
use crate::types::{Slot, BF_TYPE};

/// A command's entry point as Redis calls it.
pub type EntryPoint =
    extern "C" fn(*mut raw::RedisModuleCtx, *mut *mut raw::RedisModuleString, c_int) -> c_int;

/// The commands registered here: name, entry point, flags, ACL category (each with its key
/// at position 1).
pub const COMMANDS: [(&CStr, EntryPoint, &CStr, &CStr); 2] = [
    (c"bf.add", bf_add, c"write deny-oom", c"bloom"),
    (c"bf.exists", bf_exists, c"readonly fast", c"bloom"),
];

/// Register [`COMMANDS`] (called once from the module's load, after the framework's commands);
/// `false` when Redis refuses one.
pub fn register(ctx: &Context) -> bool {
    // SAFETY: reading function pointers Redis filled in at module load.
    let (Some(create), get, set_acl) = (unsafe {
        (
            raw::RedisModule_CreateCommand,
            raw::RedisModule_GetCommand,
            raw::RedisModule_SetCommandACLCategories,
        )
    }) else {
        return false;
    };
    for (name, entry, flags, acl) in COMMANDS {
        // SAFETY: `ctx.ctx` is the context of RedisModule_OnLoad; the strings are static.
        let status =
            unsafe { create(ctx.ctx, name.as_ptr(), Some(entry), flags.as_ptr(), 1, 1, 1) };
        if status != raw::Status::Ok as c_int {
            return false;
        }
        if let (Some(get), Some(set_acl)) = (get, set_acl) {
            // SAFETY: as above; the command was just created.
            let command = unsafe { get(ctx.ctx, name.as_ptr()) };
            // SAFETY: `command` is the live command from above, or null (checked).
            if !command.is_null() && unsafe { set_acl(command, acl.as_ptr()) } != 0 {
                ctx.log_warning(&format!("bloomery: no ACL category for {name:?}"));
            }
        }
    }
    true
}

/// The framework's path: the arguments as retained strings, the handler, its reply.
fn general(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    ours: Handler,
    theirs: MovedHandler,
) -> c_int {
    let context = Context::new(ctx);
    let args: Vec<RedisString> = redis_module::decode_args(ctx, argv, argc);
    let reply: RedisResult = route::fallback(&context, args, ours, theirs);
    context.reply(reply) as c_int
}

/// What a key opened here holds.
enum Held {
    /// Nothing: the key does not exist.
    Nothing,
    /// One of the module's ready `BF` values.
    Filter(*mut ScalableBloomFilter),
    /// Anything else (another type, a value being loaded): the general path decides.
    Other,
}

/// Open `key` with `mode` and say what it holds; the caller closes the key.
///
/// # Safety
/// `ctx` is the running command's context and `key` one of its argument strings.
unsafe fn open(
    ctx: *mut raw::RedisModuleCtx,
    key: *mut raw::RedisModuleString,
    mode: u32,
) -> Option<(*mut raw::RedisModuleKey, Held)> {
    // SAFETY: reading function pointers Redis filled in at module load.
    let (Some(open), Some(key_type), Some(get_type), Some(get_value)) = (unsafe {
        (
            raw::RedisModule_OpenKey,
            raw::RedisModule_KeyType,
            raw::RedisModule_ModuleTypeGetType,
            raw::RedisModule_ModuleTypeGetValue,
        )
    }) else {
        return None;
    };
    // SAFETY: the caller's contract; the key is closed by the caller.
    let k = unsafe { open(ctx, key, mode as c_int) };
    if k.is_null() {
        return Some((k, Held::Nothing));
    }
    // SAFETY: `k` is the open key from above.
    let held = match unsafe { key_type(k) } as isize {
        raw::REDISMODULE_KEYTYPE_EMPTY => Held::Nothing,
        // SAFETY: as above.
        raw::REDISMODULE_KEYTYPE_MODULE if unsafe { get_type(k) } == *BF_TYPE.raw_type.borrow() => {
            // SAFETY: a value of the `BF` type is a `Slot<ScalableBloomFilter>` (the type's
            // callbacks in `types` make and free nothing else); it lives while the key is
            // open and the command runs, and nothing else touches it meanwhile (Redis runs
            // one command at a time).
            match unsafe { &mut *(get_value(k) as *mut Slot<ScalableBloomFilter>) } {
                Slot::Ready(f) => Held::Filter(f),
                Slot::Loading(_) => Held::Other,
            }
        }
        _ => Held::Other,
    };
    Some((k, held))
}

/// Close a key [`open`] opened.
///
/// # Safety
/// `k` is a key [`open`] returned, not yet closed.
unsafe fn close(k: *mut raw::RedisModuleKey) {
    // SAFETY: reading a function pointer Redis filled in at module load; `k` per the contract
    // (closing null is allowed).
    if let Some(close) = unsafe { raw::RedisModule_CloseKey } {
        // SAFETY: as above.
        unsafe { close(k) };
    }
}

/// The bytes of an argument string.
///
/// # Safety
/// `s` is a live argument string of the running command; the slice is used before it returns.
unsafe fn bytes<'a>(s: *mut raw::RedisModuleString) -> &'a [u8] {
    let mut len = 0;
    // SAFETY: reading a function pointer Redis filled in at module load; `s` is live.
    let p = unsafe { raw::RedisModule_StringPtrLen.unwrap()(s, &mut len) };
    // SAFETY: Redis answers the string's bytes and their count, alive as long as `s`.
    unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) }
}

/// Reply a boolean (`true`/`false` in RESP3, `1`/`0` in RESP2).
fn reply_bool(ctx: *mut raw::RedisModuleCtx, b: bool) -> c_int {
    // SAFETY: reading a function pointer Redis filled in at module load (Redis 7.0+, checked
    // when the module loads); `ctx` is the running command's context.
    unsafe { raw::RedisModule_ReplyWithBool.unwrap()(ctx, c_int::from(b)) };
    raw::Status::Ok as c_int
}

/// `BF.EXISTS key item` (see [`bf::exists`]).
extern "C" fn bf_exists(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    if argc == 3 {
        // SAFETY: Redis passes `argc` live argument strings at `argv`.
        let args = unsafe { std::slice::from_raw_parts(argv, 3) };
        // SAFETY: the running command's context and its key argument.
        if let Some((k, held)) = unsafe { open(ctx, args[1], raw::REDISMODULE_READ) } {
            let answer = match held {
                Held::Nothing => Some(false),
                // SAFETY: the item is a live argument; `f` is valid while the key is open.
                Held::Filter(f) => Some(unsafe { (*f).contains(bytes(args[2])) }),
                Held::Other => None,
            };
            // SAFETY: the key opened above, closed once.
            unsafe { close(k) };
            if let Some(b) = answer {
                return reply_bool(ctx, b);
            }
        }
    }
    general(ctx, argv, argc, bf::exists, crate::rbbf::exists)
}

/// `BF.ADD key item` (see [`bf::add`]).
extern "C" fn bf_add(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    if argc == 3 {
        // SAFETY: Redis passes `argc` live argument strings at `argv`.
        let args = unsafe { std::slice::from_raw_parts(argv, 3) };
        let mode = raw::REDISMODULE_READ | raw::REDISMODULE_WRITE;
        // SAFETY: the running command's context and its key argument.
        if let Some((k, held)) = unsafe { open(ctx, args[1], mode) } {
            if let Held::Filter(f) = held {
                // SAFETY: the item is a live argument; `f` is valid while the key is open.
                if let Ok(new) = unsafe { (*f).try_insert(bytes(args[2])) } {
                    let context = Context::new(ctx);
                    context.replicate_verbatim();
                    // SAFETY: `k` is open.
                    unsafe { crate::stats::touched_open(k) };
                    // SAFETY: the key opened above, closed once.
                    unsafe { close(k) };
                    // SAFETY: the key is a live argument of the running command.
                    unsafe { crate::keys::notify_written(&context, args[1]) };
                    return reply_bool(ctx, new);
                }
            }
            // SAFETY: the key opened above, closed once.
            unsafe { close(k) };
        }
    }
    general(ctx, argv, argc, bf::add, crate::rbbf::add)
}
