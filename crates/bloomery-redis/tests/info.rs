//! `INFO bloomery`: values and bytes per type, kept as values are created, written, loaded,
//! copied and freed (never by walking the keyspace).

mod common;

use std::collections::BTreeMap;

use common::{have_redis, q, tmp, Server};

fn section(c: &mut redis::Connection) -> BTreeMap<String, u64> {
    let info: String = q(c, &["INFO", "bloomery"]);
    info.lines()
        .filter_map(|l| l.strip_prefix("bloomery_"))
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_string(), v.trim().parse().unwrap()))
        .collect()
}

fn usage(c: &mut redis::Connection, key: &str) -> u64 {
    q(c, &["MEMORY", "USAGE", key])
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn info_counts_values_and_bytes_per_type() {
    if !have_redis() {
        return;
    }
    let d = tmp();
    let s = Server::start_in(d.path(), &[], &[]);
    let c = &mut s.con();
    let zero = section(c);
    assert_eq!(zero["values"], 0);
    assert_eq!(zero["bytes"], 0);
    assert_eq!(
        zero["defrag_moves"], 0,
        "nothing moved before any defragmentation"
    );
    for k in [
        "bf", "cf", "cms", "cbf", "bcbf", "ibf", "topk", "mlbf", "tdigest",
    ] {
        assert_eq!(zero[&format!("{k}_values")], 0, "{k}");
    }

    let _: i64 = q(c, &["BF.ADD", "b", "x"]);
    let _: () = q(c, &["CF.RESERVE", "c", "1000"]);
    let _: () = q(c, &["CMS.INITBYDIM", "m", "1000", "5"]);
    let _: () = q(c, &["TOPK.RESERVE", "t", "10"]);
    let _: () = q(c, &["TDIGEST.CREATE", "d"]);
    let i = section(c);
    for k in ["bf", "cf", "cms", "topk", "tdigest"] {
        assert_eq!(i[&format!("{k}_values")], 1, "{k}");
    }
    assert_eq!(i["values"], 5);
    // the bytes are each value's MEMORY USAGE without its key: the key's part (its name, its
    // entry and object) is the same few dozen bytes for every one-letter key
    let key_part = usage(c, "b") - i["bf_bytes"];
    assert!(key_part < 128, "{key_part}");
    assert_eq!(usage(c, "m") - i["cms_bytes"], key_part);
    assert_eq!(usage(c, "d") - i["tdigest_bytes"], key_part);
    assert_eq!(usage(c, "t") - i["topk_bytes"], key_part);

    // growth is followed
    for n in 0..2000 {
        let _: i64 = q(c, &["BF.ADD", "b", &format!("k{n}")]);
    }
    let grown = section(c);
    assert!(grown["bf_bytes"] > i["bf_bytes"]);
    assert_eq!(usage(c, "b") - grown["bf_bytes"], key_part);

    // loaded and copied values count; freed ones leave nothing behind
    let _: () = q(c, &["DEBUG", "RELOAD"]);
    assert_eq!(section(c), grown);
    let _: bool = q(c, &["COPY", "b", "b2"]);
    let copied = section(c);
    assert_eq!(copied["bf_values"], 2);
    assert_eq!(copied["bf_bytes"], 2 * grown["bf_bytes"]);
    let _: i64 = q(c, &["DEL", "b", "c"]);
    let after_del = section(c);
    assert_eq!(after_del["bf_values"], 1);
    assert_eq!(after_del["cf_values"], 0);
    assert_eq!(after_del["cf_bytes"], 0);
    let _: () = q(c, &["FLUSHALL", "SYNC"]);
    let flushed = section(c);
    assert_eq!(flushed["values"], 0);
    assert_eq!(flushed["bytes"], 0);

    // the general write path (not BF.ADD's own entry point): values created on a missing key
    // are counted, and a value written after INFO measured it is measured again
    let _: i64 = q(c, &["CF.ADD", "c", "x"]);
    let _: Vec<i64> = q(c, &["BF.MADD", "b", "x", "y"]);
    let made = section(c);
    assert_eq!((made["cf_values"], made["bf_values"]), (1, 1));
    assert_eq!(usage(c, "c") - made["cf_bytes"], key_part);
    assert_eq!(usage(c, "b") - made["bf_bytes"], key_part);
    for n in 0..5000 {
        let _: i64 = q(c, &["CF.ADD", "c", &format!("k{n}")]);
        let _: Vec<i64> = q(c, &["BF.MADD", "b", &format!("k{n}")]);
    }
    let grown = section(c);
    assert!(grown["cf_bytes"] > made["cf_bytes"], "{grown:?}");
    assert!(grown["bf_bytes"] > made["bf_bytes"], "{grown:?}");
    assert_eq!(usage(c, "c") - grown["cf_bytes"], key_part);
    assert_eq!(usage(c, "b") - grown["bf_bytes"], key_part);
}

/// The module's ACL categories (`@bloom`, `@cuckoo`, `@cms`, `@topk`, `@tdigest` as in Redis 8,
/// `@bloomery` for its own types) on servers that let modules add categories (Valkey 8+,
/// Redis 7.4+); older servers load the module without them.
#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn acl_categories_where_the_server_has_them() {
    if !have_redis() {
        return;
    }
    let d = tmp();
    let s = Server::start_in(d.path(), &[], &[]);
    let c = &mut s.con();
    let cats: Vec<String> = q(c, &["ACL", "CAT"]);
    let info: String = q(c, &["INFO", "server"]);
    let version = |field: &str| {
        info.lines().find_map(|l| l.strip_prefix(field)).map(|v| {
            let parts: Vec<u32> = v.trim().split('.').filter_map(|p| p.parse().ok()).collect();
            (parts[0], parts.get(1).copied().unwrap_or(0))
        })
    };
    let supported = match version("valkey_version:") {
        Some(v) => v >= (8, 0),
        None => version("redis_version:").is_some_and(|v| v >= (7, 4)),
    };
    if !supported {
        assert!(!cats.iter().any(|c| c == "bloom"), "{cats:?}");
        return;
    }
    for (cat, cmd) in [
        ("bloom", "bf.add"),
        ("cuckoo", "cf.add"),
        ("cms", "cms.incrby"),
        ("topk", "topk.add"),
        ("tdigest", "tdigest.add"),
        ("bloomery", "cbf.add"),
    ] {
        let cmds: Vec<String> = q(c, &["ACL", "CAT", cat]);
        assert!(cmds.iter().any(|c| c == cmd), "{cat}: {cmds:?}");
    }
    // a user limited to @bloom runs BF.* and nothing else of the module
    let _: () = q(c, &["ACL", "SETUSER", "b", "on", "nopass", "~*", "+@bloom"]);
    let _: () = q(c, &["AUTH", "b", "x"]);
    let _: i64 = q(c, &["BF.ADD", "k", "x"]);
    let e = common::err(c, &["CF.ADD", "c", "x"]);
    assert!(e.contains("NOPERM"), "{e}");
}
