//! Reply shapes shared by the commands, matching RedisBloom's in both protocols: booleans
//! (`true`/`false` in RESP3, `1`/`0` in RESP2 — Redis converts), ordered maps (RESP3 maps,
//! flattened name/value arrays in RESP2) and single-field maps.

use redis_module::{raw, Context, ContextFlags, RedisResult, RedisValue};

/// A count as an integer reply (saturating at `i64::MAX`, the largest RESP integer).
pub fn int(v: u64) -> RedisValue {
    RedisValue::Integer(i64::try_from(v).unwrap_or(i64::MAX))
}

/// A yes/no answer: `true`/`false` in RESP3, `1`/`0` in RESP2.
pub fn bool(b: bool) -> RedisValue {
    RedisValue::Bool(b)
}

/// Whether the calling client speaks RESP3.
pub fn is_resp3(ctx: &Context) -> bool {
    ctx.get_flags().contains(ContextFlags::FLAGS_RESP3)
}

/// Reply with an ordered map: a RESP3 map, flattened to name/value pairs by Redis for RESP2.
pub fn map(ctx: &Context, pairs: Vec<(&'static str, RedisValue)>) -> RedisResult {
    raw::reply_with_map(ctx.ctx, pairs.len() as std::os::raw::c_long);
    for (name, v) in pairs {
        ctx.reply(Ok(RedisValue::SimpleStringStatic(name)));
        ctx.reply(Ok(v));
    }
    Ok(RedisValue::NoReply)
}

/// One field of an `INFO`: `{name: value}` in RESP3, `[value]` in RESP2 (RedisBloom's shape
/// for `BF.INFO key CAPACITY` and the like).
pub fn field(ctx: &Context, name: &'static str, value: RedisValue) -> RedisResult {
    if is_resp3(ctx) {
        map(ctx, vec![(name, value)])
    } else {
        Ok(RedisValue::Array(vec![value]))
    }
}

/// Whether the server has the reply calls this module needs (maps and booleans: Redis 7.0).
pub fn server_supported() -> bool {
    // SAFETY: reading (copying) function pointers Redis filled in at module load.
    let (map, boolean) = unsafe {
        (
            raw::RedisModule_ReplyWithMap,
            raw::RedisModule_ReplyWithBool,
        )
    };
    map.is_some() && boolean.is_some()
}
