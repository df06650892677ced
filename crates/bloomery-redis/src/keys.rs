//! Access to the value under a key, shared by every command: open it for reading or writing,
//! refuse the wrong type (`WRONGTYPE`) and values a LOADCHUNK sequence is still filling,
//! create it on demand.

use redis_module::native_types::RedisType;
use redis_module::{raw, Context, NotifyEvent, RedisError, RedisResult, RedisString, RedisValue};

use crate::errors::LOADING;
use crate::types::{Slot, Structure};

/// After a write to `key`: replicate the command verbatim, measure the value again for the
/// module's `INFO` section ([`crate::stats`]) and announce the write to keyspace subscribers, the event being the command's registered name (`bf.add`, `cf.insert`,
/// `cms.incrby`, …) in the generic class (`notify-keyspace-events` with `g` or `A`, and `K`
/// or `E`), the class valkey-bloom uses.
pub fn written(ctx: &Context, key: &RedisString) {
    ctx.replicate_verbatim();
    crate::stats::touched(ctx, key);
    // SAFETY: `key` is a live argument of the running command.
    unsafe { notify_written(ctx, key.inner) };
}

/// After a write through [`write()`] to `key`, which already marked its value for the module's
/// `INFO` section: replicate and announce, as [`written`] does, without opening the key again.
pub fn written_through(ctx: &Context, key: &RedisString) {
    ctx.replicate_verbatim();
    // SAFETY: `key` is a live argument of the running command.
    unsafe { notify_written(ctx, key.inner) };
}

/// The keyspace event of a write to `key` by the running command (see [`written`]).
///
/// # Safety
/// `key` is a live string of the running command (one of its arguments).
pub unsafe fn notify_written(ctx: &Context, key: *mut raw::RedisModuleString) {
    // SAFETY: reading function pointers Redis filled in at module load.
    let (Some(current), Some(notify)) = (unsafe {
        (
            raw::RedisModule_GetCurrentCommandName,
            raw::RedisModule_NotifyKeyspaceEvent,
        )
    }) else {
        return;
    };
    // SAFETY: `ctx.ctx` is the live context of the running command; Redis answers the name
    // of the command it runs, or null.
    let name = unsafe { current(ctx.ctx) };
    if name.is_null() {
        return;
    }
    // SAFETY: `name` is a NUL-terminated string owned by Redis for the command's lifetime and
    // `key` a live argument string of the running command.
    unsafe { notify(ctx.ctx, NotifyEvent::GENERIC.bits(), name, key) };
}

/// Run `f` on the structure under `key`, creating it with `create` if the key is missing
/// (`None`: reply `missing` instead). The value is marked written for the module's `INFO`
/// section (or counted, when created) while the key is open, so the command ends with
/// [`written_through`].
pub fn write<T: Structure, R>(
    ctx: &Context,
    ty: &RedisType,
    key: &RedisString,
    create: Option<&dyn Fn() -> Result<T, RedisError>>,
    missing: &'static str,
    f: impl FnOnce(&mut T) -> R,
) -> Result<R, RedisError> {
    let k = ctx.open_key_writable(key);
    match k
        .get_value::<Slot<T>>(ty)
        .map_err(|_| RedisError::WrongType)?
    {
        Some(slot) => {
            let address = std::ptr::from_mut(slot).cast();
            match slot {
                Slot::Ready(value) => {
                    // SAFETY: `address` is the value of type `ty` under the key open here.
                    unsafe { crate::stats::written_value(ty, address) };
                    Ok(f(value))
                }
                Slot::Loading(_) => Err(RedisError::Str(LOADING)),
            }
        }
        None => {
            let make = create.ok_or(RedisError::Str(missing))?;
            let mut value = make()?;
            let r = f(&mut value);
            k.set_value(ty, Slot::Ready(value))?;
            if let Ok(Some(slot)) = k.get_value::<Slot<T>>(ty) {
                // SAFETY: the value of type `ty` just set under the key open here.
                unsafe { crate::stats::written_value(ty, std::ptr::from_mut(slot).cast()) };
            }
            Ok(r)
        }
    }
}

/// Run `f` on the structure under `key` (`None` when the key is missing).
pub fn read<T: Structure, R>(
    ctx: &Context,
    ty: &RedisType,
    key: &RedisString,
    f: impl FnOnce(Option<&T>) -> R,
) -> Result<R, RedisError> {
    let k = ctx.open_key(key);
    match k
        .get_value::<Slot<T>>(ty)
        .map_err(|_| RedisError::WrongType)?
    {
        Some(Slot::Ready(value)) => Ok(f(Some(value))),
        Some(Slot::Loading(_)) => Err(RedisError::Str(LOADING)),
        None => Ok(f(None)),
    }
}

/// Run `f` on the structure under `key`; a missing key is the error `missing`.
pub fn read_existing<T: Structure, R>(
    ctx: &Context,
    ty: &RedisType,
    key: &RedisString,
    missing: &'static str,
    f: impl FnOnce(&T) -> R,
) -> Result<R, RedisError> {
    read(ctx, ty, key, |v: Option<&T>| v.map(f))?.ok_or(RedisError::Str(missing))
}

/// Store a new structure under `key`, which must not exist (`exists`: the error if it does),
/// replicate the command and answer `OK`.
pub fn create<T: Structure>(
    ctx: &Context,
    ty: &RedisType,
    key: &RedisString,
    exists: &'static str,
    value: T,
) -> RedisResult {
    let k = ctx.open_key_writable(key);
    if !k.is_empty() {
        return Err(RedisError::Str(exists));
    }
    k.set_value(ty, Slot::Ready(value))?;
    crate::keys::written(ctx, key);
    Ok(RedisValue::SimpleStringStatic("OK"))
}

/// Refuse when `key` exists (RESERVE-style commands check this before their arguments, as
/// RedisBloom does for `CMS.*` and `TOPK.*`).
pub fn must_be_missing(ctx: &Context, key: &RedisString, exists: &'static str) -> RedisResult<()> {
    if ctx.open_key(key).is_null() {
        Ok(())
    } else {
        Err(RedisError::Str(exists))
    }
}

/// Store `value` under `key`, replacing a value of the same type (a value still being
/// loaded by LOADCHUNK included) or creating the key.
pub fn replace<T: Structure>(
    ctx: &Context,
    ty: &RedisType,
    key: &RedisString,
    value: T,
) -> Result<(), RedisError> {
    let k = ctx.open_key_writable(key);
    match k
        .get_value::<Slot<T>>(ty)
        .map_err(|_| RedisError::WrongType)?
    {
        Some(slot) => *slot = Slot::Ready(value),
        None => k.set_value(ty, Slot::Ready(value))?,
    }
    Ok(())
}

/// Where `CMD destination numkeys source [source ...]` names its keys (the `MERGE` commands):
/// the destination and `numkeys` sources, with nothing after them when `exact` (options may
/// follow otherwise). `None` when the arguments do not name them.
pub fn dest_and_sources(args: &[RedisString], exact: bool) -> Option<Vec<usize>> {
    let n = usize::try_from(crate::args::int(args.get(2)?)?).ok()?;
    let fits = if exact {
        args.len() == 3 + n
    } else {
        args.len() >= 3 + n
    };
    (n > 0 && fits).then(|| std::iter::once(1).chain(3..3 + n).collect())
}

/// Answers a key-positions request (`COMMAND GETKEYS`, cluster routing) for such a command:
/// `true` when the call was one (the command then replies nothing else).
pub fn answered_key_positions(ctx: &Context, args: &[RedisString], exact: bool) -> bool {
    if !ctx.is_keys_position_request() {
        return false;
    }
    for p in dest_and_sources(args, exact).unwrap_or_default() {
        ctx.key_at_pos(p as i32);
    }
    true
}
