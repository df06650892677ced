//! Routing of `BF.*` and `CF.*` between bloomery's handlers ([`crate::bf`], [`crate::cf`]) and
//! those of values moved from RedisBloom ([`crate::rbbf`], [`crate::rbcf`]).
//!
//! Commands that run on every request ([`fallback`]) try bloomery's handler first and go to
//! the moved value's only when bloomery's meets a key of another type, so the usual path
//! costs nothing; the others ([`first`]) look at the key's type first.

use redis_module::{raw, Context, RedisError, RedisResult, RedisString};

/// A handler of bloomery's own values.
pub type Handler = fn(&Context, Vec<RedisString>) -> RedisResult;

/// What a handler for moved values answers: `None` when the key does not hold one (the
/// command then goes to bloomery's handler).
pub type MovedHandler = fn(&Context, &[RedisString]) -> Option<RedisResult>;

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
pub fn fallback(
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
pub fn first(
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
