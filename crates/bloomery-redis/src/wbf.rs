//! `WBF.*` and `TWBF.*`: filters that forget. `WBF.*` is the count window (the last N
//! insertions: [`AgePartitionedBloomFilter`], Shtul, Baquero & Almeida), `TWBF.*` the time
//! window (the last T milliseconds: [`TimeWindowFilter`], after Rodrigues, Shtul, Baquero &
//! Almeida), each its own Redis type stored in the library's file format.
//!
//! ```text
//! WBF.RESERVE key error window [BLOCKED] TWBF.RESERVE key error window_ms capacity
//! WBF.ADD key item                      TWBF.ADD key item
//! WBF.MADD key item [item ...]          TWBF.MADD key item [item ...]
//! WBF.EXISTS key item                   TWBF.EXISTS key item
//! WBF.MEXISTS key item [item ...]       TWBF.MEXISTS key item [item ...]
//! WBF.INFO key                          TWBF.INFO key
//! WBF.SCANDUMP / WBF.LOADCHUNK          TWBF.SCANDUMP / TWBF.LOADCHUNK
//!                                       TWBF.ADDAT key ms item [item ...]
//! ```
//!
//! Time is the server's clock in milliseconds, read by the command, never by the filter. A
//! time-window write is replicated as its effect with its time: `TWBF.ADD`/`TWBF.MADD` on the
//! primary propagate `TWBF.ADDAT key <ms> item ...` with the time the primary used, so a
//! replica and an AOF replay hold exactly the primary's slices, whatever their clocks.
//! Expiry is O(1) per generation (a retired slice is dropped from the ring; nothing scans).
//! `EXISTS` on a time window answers for the window ending at the server's now (a replica: its
//! own clock). Items added are never refused; `ADD`/`MADD` answer whether each changed a bit.

use std::ffi::CStr;

use bloomery::builders::WindowLayout;
use bloomery::{AgePartitionedBloomFilter, Filter, Kind, Stats, TimeWindowFilter};
use redis_module::native_types::RedisType;
use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

use crate::args;
use crate::config;
use crate::dump;
use crate::errors::{lib_error, ITEM_EXISTS};
use crate::keys;
use crate::memory::{charged, words_bytes};
use crate::own::{info_generic, size, with_filter};
use crate::reply::{self, int};
use crate::stats::Family;
use crate::types::{Slot, Structure, ENCODING_VERSION};
use crate::value::{family, methods, Mover};

impl Structure for AgePartitionedBloomFilter {
    const FILE_KIND: Kind = Kind::Window;
    /// The blocked layout (`WBF.RESERVE ... BLOCKED`) is the same type in its other file kind.
    const OLD_KINDS: &'static [Kind] = &[Kind::WindowBlocked];
    const INFO: &'static str = "wbf";
    const LOADCHUNK: &'static CStr = c"WBF.LOADCHUNK";
    /// The words of every slice (one array, in either layout).
    unsafe fn defrag(&mut self, mv: &mut Mover<'_>) {
        // SAFETY: the caller's contract is the library's (memory of the global allocator,
        // of the allocation's size and alignment, the old allocation freed).
        unsafe { self.relocate_arrays(mv) }
    }
    fn held(&self) -> u64 {
        charged(words_bytes(self.bit_len().div_ceil(64)))
    }
    fn validate(&self) -> Result<(), String> {
        if self.insertions() > i64::MAX as u64 {
            return Err(format!("{} insertions exceed i64::MAX", self.insertions()));
        }
        Ok(())
    }
}

impl Structure for TimeWindowFilter {
    const FILE_KIND: Kind = Kind::TimeWindow;
    const INFO: &'static str = "twbf";
    const LOADCHUNK: &'static CStr = c"TWBF.LOADCHUNK";
    /// The ring of slice records, then each slice's words, newest first.
    unsafe fn defrag(&mut self, mv: &mut Mover<'_>) {
        // SAFETY: the caller's contract is the library's (memory of the global allocator,
        // of the allocation's size and alignment, the old allocation freed).
        unsafe { self.relocate_arrays(mv) }
    }
    /// Each slice's words, and the ring of slice records.
    fn held(&self) -> u64 {
        let words: u64 = self
            .slice_fill()
            .iter()
            .map(|&(_, bits)| charged(words_bytes(bits.div_ceil(64))))
            .sum();
        words + charged(self.slices() as u64 * 64)
    }
    fn validate(&self) -> Result<(), String> {
        if self.insertions() > i64::MAX as u64 {
            return Err(format!("{} insertions exceed i64::MAX", self.insertions()));
        }
        Ok(())
    }
}

/// The count window type behind `WBF.*`.
pub static WBF_TYPE: RedisType = RedisType::new(
    "BLMRY-WBF",
    ENCODING_VERSION,
    methods::<Slot<AgePartitionedBloomFilter>>(),
);

/// The time window type behind `TWBF.*`.
pub static TWBF_TYPE: RedisType = RedisType::new(
    "BLMRY-TWB",
    ENCODING_VERSION,
    methods::<Slot<TimeWindowFilter>>(),
);

/// Both types, for the module's `INFO` section.
pub fn families() -> Vec<Family> {
    vec![
        family::<Slot<AgePartitionedBloomFilter>>(&WBF_TYPE),
        family::<Slot<TimeWindowFilter>>(&TWBF_TYPE),
    ]
}

/// `BLOOMERY.DUMP` of a window key.
pub fn bloomery_dump(k: &redis_module::key::RedisKey) -> Option<RedisResult> {
    if let Ok(Some(s)) = k.get_value::<Slot<AgePartitionedBloomFilter>>(&WBF_TYPE) {
        return Some(ready(s));
    }
    if let Ok(Some(s)) = k.get_value::<Slot<TimeWindowFilter>>(&TWBF_TYPE) {
        return Some(ready(s));
    }
    None
}

fn ready<T: Structure>(s: &Slot<T>) -> RedisResult {
    match s {
        Slot::Ready(f) => Ok(RedisValue::StringBuffer(f.to_bytes())),
        Slot::Loading(_) => Err(RedisError::Str(crate::errors::LOADING)),
    }
}

/// The error rate at `arg`, as `BF.RESERVE` checks it.
fn error_rate(arg: &RedisString) -> Result<f64, RedisError> {
    let e = args::float(arg).ok_or(RedisError::Str("ERR bad error rate"))?;
    if !(e > 0.0 && e < 1.0) {
        return Err(RedisError::Str("ERR (0 < error rate range < 1) "));
    }
    Ok(e)
}

/// A positive integer at `arg`.
fn positive(arg: &RedisString, what: &'static str) -> Result<u64, RedisError> {
    match args::int(arg) {
        Some(v) if v >= 1 => Ok(v as u64),
        _ => Err(RedisError::String(format!(
            "ERR {what} must be a positive integer"
        ))),
    }
}

/// The server's clock, in milliseconds.
fn now_ms() -> u64 {
    // SAFETY: reading a function pointer Redis filled in at module load.
    match unsafe { redis_module::raw::RedisModule_Milliseconds } {
        // SAFETY: RedisModule_Milliseconds takes no argument and only reads the clock.
        Some(f) => u64::try_from(unsafe { f() }).unwrap_or(0),
        None => 0,
    }
}

/// `WBF.RESERVE key error window [BLOCKED]`: `BLOCKED` takes the blocked layout (a key's bits
/// in one block of k + l words: fewer cache lines per command, a little more memory).
pub fn reserve(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 4 && args.len() != 5 {
        return Err(RedisError::WrongArity);
    }
    keys::must_be_missing(ctx, &args[1], ITEM_EXISTS)?;
    let error = error_rate(&args[2])?;
    let window = positive(&args[3], "window")?;
    let layout = match args.get(4) {
        None => WindowLayout::Sliced,
        Some(a) if a.as_slice().eq_ignore_ascii_case(b"BLOCKED") => WindowLayout::Blocked,
        Some(_) => return Err(RedisError::Str("ERR unknown option (expected BLOCKED)")),
    };
    let f = AgePartitionedBloomFilter::builder()
        .capacity(window)
        .fpr(error)
        .layout(layout)
        .max_bytes(config::max_bytes())
        .try_build()
        .map_err(lib_error)?;
    keys::create(ctx, &WBF_TYPE, &args[1], ITEM_EXISTS, f)
}

/// `WBF.ADD key item` / `WBF.MADD key item...`: each item enters the window (a repeat stays
/// fresh); whether each changed a bit. Replicated verbatim (the count window has no clock).
fn add_items(ctx: &Context, args: &[RedisString], many: bool) -> RedisResult {
    if args.len() < 3 || (!many && args.len() != 3) {
        return Err(RedisError::WrongArity);
    }
    let news = with_filter(
        ctx,
        &WBF_TYPE,
        &args[1],
        None,
        |f: &mut AgePartitionedBloomFilter| {
            args[2..]
                .iter()
                .map(|a| f.insert(a.as_slice()))
                .collect::<Vec<_>>()
        },
    )?;
    keys::written(ctx, &args[1]);
    Ok(if many {
        RedisValue::Array(news.into_iter().map(reply::bool).collect())
    } else {
        reply::bool(news[0])
    })
}

/// `WBF.ADD key item`.
pub fn add(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    add_items(ctx, &args, false)
}

/// `WBF.MADD key item [item ...]`.
pub fn madd(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    add_items(ctx, &args, true)
}

fn exists_items(ctx: &Context, args: &[RedisString], many: bool) -> RedisResult {
    if args.len() < 3 || (!many && args.len() != 3) {
        return Err(RedisError::WrongArity);
    }
    let hits = keys::read(
        ctx,
        &WBF_TYPE,
        &args[1],
        |f: Option<&AgePartitionedBloomFilter>| {
            args[2..]
                .iter()
                .map(|a| f.is_some_and(|f| f.contains(a.as_slice())))
                .collect::<Vec<_>>()
        },
    )?;
    Ok(if many {
        RedisValue::Array(hits.into_iter().map(reply::bool).collect())
    } else {
        reply::bool(hits[0])
    })
}

/// `WBF.EXISTS key item`: whether the item is among the last `window` insertions (false
/// positives at most the error rate; false for a missing key).
pub fn exists(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    exists_items(ctx, &args, false)
}

/// `WBF.MEXISTS key item [item ...]`.
pub fn mexists(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    exists_items(ctx, &args, true)
}

/// `WBF.INFO key`.
pub fn info(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    info_generic(ctx, &WBF_TYPE, &args, |f: &AgePartitionedBloomFilter| {
        vec![
            ("Window", int(f.window())),
            ("Slack", int(f.slack())),
            ("Error rate", RedisValue::Float(f.target_fpr())),
            ("Size", size(f)),
            ("Number of hash functions", int(u64::from(f.hashes()))),
            ("Remembering slices", int(u64::from(f.remembering_slices()))),
            ("Slice bits", int(f.slice_bits())),
            ("Layout", RedisValue::SimpleStringStatic(f.layout().name())),
            ("Generation", int(f.generation())),
            ("Position in generation", int(f.position_in_generation())),
            ("Number of items inserted", int(f.insertions())),
            ("Current error rate", RedisValue::Float(f.model_fpr())),
        ]
    })
}

/// `WBF.SCANDUMP key iterator`.
pub fn scandump(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    dump::scandump::<AgePartitionedBloomFilter>(ctx, args, &WBF_TYPE)
}

/// `WBF.LOADCHUNK key iterator data`.
pub fn loadchunk(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    dump::loadchunk::<AgePartitionedBloomFilter>(ctx, args, &WBF_TYPE)
}

/// `TWBF.RESERVE key error window_ms capacity`: a time window of `window_ms` milliseconds,
/// first sized for `capacity` items per window.
pub fn t_reserve(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 5 {
        return Err(RedisError::WrongArity);
    }
    keys::must_be_missing(ctx, &args[1], ITEM_EXISTS)?;
    let error = error_rate(&args[2])?;
    let window = positive(&args[3], "window")?;
    let capacity = positive(&args[4], "capacity")?;
    let f = TimeWindowFilter::builder()
        .window(window)
        .capacity(capacity)
        .fpr(error)
        .max_bytes(config::max_bytes())
        .try_build()
        .map_err(lib_error)?;
    keys::create(ctx, &TWBF_TYPE, &args[1], ITEM_EXISTS, f)
}

/// Insert `items` at `ms`, then replicate `TWBF.ADDAT key ms items...` (the effect, with its
/// time) and announce `event`.
fn add_at(
    ctx: &Context,
    key: &RedisString,
    ms: u64,
    items: &[RedisString],
    event: &str,
) -> RedisResult<Vec<bool>> {
    let news = with_filter(ctx, &TWBF_TYPE, key, None, |f: &mut TimeWindowFilter| {
        items
            .iter()
            .map(|a| f.insert_at(a.as_slice(), ms))
            .collect::<Vec<_>>()
    })?;
    let ms_text = ms.to_string();
    let mut rep: Vec<&[u8]> = Vec::with_capacity(items.len() + 2);
    rep.push(key.as_slice());
    rep.push(ms_text.as_bytes());
    rep.extend(items.iter().map(RedisString::as_slice));
    ctx.replicate("TWBF.ADDAT", rep.as_slice());
    crate::stats::touched(ctx, key);
    ctx.notify_keyspace_event(redis_module::NotifyEvent::GENERIC, event, key);
    Ok(news)
}

/// `TWBF.ADD key item`: the item enters the window at the server's now.
pub fn t_add(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 3 {
        return Err(RedisError::WrongArity);
    }
    let news = add_at(ctx, &args[1], now_ms(), &args[2..], "twbf.add")?;
    Ok(reply::bool(news[0]))
}

/// `TWBF.MADD key item [item ...]`.
pub fn t_madd(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 3 {
        return Err(RedisError::WrongArity);
    }
    let news = add_at(ctx, &args[1], now_ms(), &args[2..], "twbf.madd")?;
    Ok(RedisValue::Array(
        news.into_iter().map(reply::bool).collect(),
    ))
}

/// `TWBF.ADDAT key ms item [item ...]`: the items enter the window at time `ms` (a time
/// before the filter's clock is taken as its clock). What `TWBF.ADD` replicates; callers with
/// their own time stamps may use it too.
pub fn t_addat(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 4 {
        return Err(RedisError::WrongArity);
    }
    let ms = match args::int(&args[2]) {
        Some(v) if v >= 0 => v as u64,
        _ => return Err(RedisError::Str("ERR time must be milliseconds since 1970")),
    };
    let news = add_at(ctx, &args[1], ms, &args[3..], "twbf.addat")?;
    Ok(RedisValue::Array(
        news.into_iter().map(reply::bool).collect(),
    ))
}

fn t_exists_items(ctx: &Context, args: &[RedisString], many: bool) -> RedisResult {
    if args.len() < 3 || (!many && args.len() != 3) {
        return Err(RedisError::WrongArity);
    }
    let now = now_ms();
    let hits = keys::read(ctx, &TWBF_TYPE, &args[1], |f: Option<&TimeWindowFilter>| {
        args[2..]
            .iter()
            .map(|a| f.is_some_and(|f| f.contains_at(a.as_slice(), now)))
            .collect::<Vec<_>>()
    })?;
    Ok(if many {
        RedisValue::Array(hits.into_iter().map(reply::bool).collect())
    } else {
        reply::bool(hits[0])
    })
}

/// `TWBF.EXISTS key item`: whether the item was added in the window ending now.
pub fn t_exists(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    t_exists_items(ctx, &args, false)
}

/// `TWBF.MEXISTS key item [item ...]`.
pub fn t_mexists(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    t_exists_items(ctx, &args, true)
}

/// `TWBF.INFO key`: the figures at the server's now.
pub fn t_info(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let now = now_ms();
    info_generic(ctx, &TWBF_TYPE, &args, |f: &TimeWindowFilter| {
        let now = now.max(f.clock());
        vec![
            ("Window ms", int(f.window())),
            ("Slack ms", int(f.slack())),
            ("Error rate", RedisValue::Float(f.target_fpr())),
            ("Capacity per window", int(f.capacity())),
            ("Size", size(f)),
            ("Number of hash functions", int(u64::from(f.hashes()))),
            ("Slices", int(f.slices() as u64)),
            ("Live slices", int(f.live_slices(now) as u64)),
            ("Design slices", int(u64::from(f.design_slices()))),
            (
                "Oldest slice age ms",
                f.oldest_age(now).map_or(RedisValue::Null, int),
            ),
            ("Items in the last window", int(f.recent_insertions(now))),
            ("Number of items inserted", int(f.insertions())),
            ("Current error rate", RedisValue::Float(f.current_fpr(now))),
            ("Clock ms", int(f.clock())),
        ]
    })
}

/// `TWBF.SCANDUMP key iterator`.
pub fn t_scandump(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    dump::scandump::<TimeWindowFilter>(ctx, args, &TWBF_TYPE)
}

/// `TWBF.LOADCHUNK key iterator data`.
pub fn t_loadchunk(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    dump::loadchunk::<TimeWindowFilter>(ctx, args, &TWBF_TYPE)
}
