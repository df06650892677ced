//! Behaviours where RedisBloom 2.6's own test suite and its clients see a difference unless
//! the module matches it: how cuckoo filters fill and report their sub-filters, the ends of
//! `CF.SCANDUMP`, `CF.COMPACT`, `TOPK.INCRBY`'s partial failures, `TOPK.RESERVE`'s limits and
//! arity errors; and what RedisBloom lacks: `BF.MERGE` and keyspace notifications. The
//! expected values are RedisBloom 2.6's implemented behaviour (`rebloom.c`, `cuckoo.c`,
//! `rm_topk.c`); counts that depend on RedisBloom's hash are asserted within tolerances.

mod common;

use common::{err, have_redis, is_err, q, raw, Server};
use redis::{ConnectionLike, Value};

/// `cmd key item` for items `from..to`, pipelined; the raw replies, errors included.
fn pipelined(c: &mut redis::Connection, cmd: &str, key: &str, from: u32, to: u32) -> Vec<Value> {
    let mut p = redis::pipe();
    for i in from..to {
        p.cmd(cmd).arg(key).arg(format!("item-{i}"));
    }
    c.req_packed_commands(&p.get_packed_pipeline(), 0, (to - from) as usize)
        .unwrap()
}

/// A field of `CF.INFO` (RESP2: name/value array).
fn cf_info(c: &mut redis::Connection, key: &str, field: &str) -> i64 {
    let v: Vec<Value> = q(c, &["CF.INFO", key]);
    let i = v
        .iter()
        .position(|x| {
            matches!(x, Value::SimpleString(s) if s == field)
                || matches!(x, Value::BulkString(b) if b == field.as_bytes())
        })
        .unwrap_or_else(|| panic!("no {field} in {v:?}"));
    match &v[i + 1] {
        Value::Int(n) => *n,
        other => panic!("{field}: {other:?}"),
    }
}

/// Inserts look for a free slot in every sub-filter, newest first, before evicting in the
/// newest. `CF.RESERVE a 64 BUCKETSIZE 1` + 1 000 adds: at least 16 sub-filters of 64 slots
/// are needed (1 000 / 64); RedisBloom takes 18. Evicting only in the newest leaves each
/// sub-filter near the 50 % load of two-choice hashing with one slot per bucket (27
/// sub-filters); 20 allows RedisBloom's count plus two for another hash's luck.
///
/// At defaults (capacity 1024, bucket size 2, expansion 1) a filter takes items until its 32nd
/// sub-filter is made, i.e. until 31 sub-filters of 1 024 slots are full: RedisBloom took
/// 30 673 (96.6 % of 31 744 slots), bloomery evicting only in the newest 24 134 (76 %). With
/// every sub-filter searched the older ones end nearly full, so at least 90 % is asked.
#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn cuckoo_inserts_search_every_sub_filter() {
    if !have_redis() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let s = Server::start_in(d.path(), &[], &[]);
    let c = &mut s.con();
    let _: () = q(c, &["CF.RESERVE", "a", "64", "BUCKETSIZE", "1"]);
    for v in pipelined(c, "CF.ADD", "a", 0, 1000) {
        assert_eq!(v, Value::Int(1));
    }
    let filters = cf_info(c, "a", "Number of filters");
    eprintln!("CF.RESERVE a 64 BUCKETSIZE 1 + 1000 adds: {filters} sub-filters");
    assert!((16..=20).contains(&filters), "{filters} sub-filters");
    assert_eq!(cf_info(c, "a", "Number of items inserted"), 1000);

    let mut accepted = 0u32;
    let mut from = 0u32;
    'fill: loop {
        for v in pipelined(c, "CF.ADD", "d", from, from + 2000) {
            match v {
                Value::Int(1) => accepted += 1,
                v if is_err(&v, "Maximum expansions reached") => break 'fill,
                other => panic!("{other:?}"),
            }
        }
        from += 2000;
        assert!(from < 100_000, "never full");
    }
    assert_eq!(cf_info(c, "d", "Number of filters"), 32);
    let slots = 31 * 1024;
    eprintln!("defaults: {accepted} items before Maximum expansions reached");
    assert!(
        f64::from(accepted) >= 0.90 * f64::from(slots),
        "{accepted} items in 31 sub-filters of 1024 slots"
    );
    // every accepted item is found
    for v in pipelined(c, "CF.EXISTS", "d", 0, accepted) {
        assert_eq!(v, Value::Int(1));
    }
}

/// `CF.INFO`'s "Number of buckets" is the first sub-filter's, as RedisBloom reports it.
#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn cf_info_reports_the_first_sub_filter_s_buckets() {
    if !have_redis() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let s = Server::start_in(d.path(), &[], &[]);
    let c = &mut s.con();
    let _: () = q(c, &["CF.RESERVE", "g", "64", "EXPANSION", "2"]);
    pipelined(c, "CF.ADD", "g", 0, 500);
    assert!(cf_info(c, "g", "Number of filters") >= 3);
    assert_eq!(cf_info(c, "g", "Number of buckets"), 32);
}

/// `CF.RESERVE` sizes as RedisBloom: `capacity / bucket size` rounded down, then up to a
/// power of two (`CF.RESERVE a 9`: 4 buckets, not 8), and the expansion rounded up to a power
/// of two.
#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn cf_reserve_sizes_as_redisbloom() {
    if !have_redis() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let s = Server::start_in(d.path(), &[], &[]);
    let c = &mut s.con();
    for (cap, bs, buckets) in [
        ("9", "2", 4),
        ("1024", "2", 512),
        ("1000", "2", 512),
        ("1026", "2", 1024),
        ("100", "3", 64),
    ] {
        let key = format!("r{cap}-{bs}");
        let _: () = q(c, &["CF.RESERVE", &key, cap, "BUCKETSIZE", bs]);
        assert_eq!(cf_info(c, &key, "Number of buckets"), buckets, "{key}");
    }
    // 4 buckets of 2 slots without growth: at most 8 items before `Filter is full`
    let _: () = q(c, &["CF.RESERVE", "n", "9", "EXPANSION", "0"]);
    let replies = pipelined(c, "CF.ADD", "n", 0, 20);
    let ok = replies.iter().filter(|v| **v == Value::Int(1)).count();
    assert!((1..=8).contains(&ok), "{ok} accepted");
    assert!(replies.iter().any(|v| is_err(v, "Filter is full")));
    let _: () = q(c, &["CF.RESERVE", "x", "1000", "EXPANSION", "3"]);
    assert_eq!(cf_info(c, "x", "Expansion rate"), 4);
}

/// `CF.SCANDUMP` of a filter without items is `[0, nil]`, and the end marker is nil (RedisBloom
/// dumps nothing of an empty filter); the chunks of a filter with items still load.
#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn cf_scandump_ends_as_redisbloom() {
    if !have_redis() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let s = Server::start_in(d.path(), &[], &[]);
    for c in [&mut s.con(), &mut s.con3()] {
        let _: () = q(c, &["DEL", "e", "f", "g"]);
        let _: () = q(c, &["CF.RESERVE", "e", "100"]);
        let end = Value::Array(vec![Value::Int(0), Value::Nil]);
        assert_eq!(raw(c, &["CF.SCANDUMP", "e", "0"]), end);
        assert_eq!(raw(c, &["CF.SCANDUMP", "e", "7"]), end);

        pipelined(c, "CF.ADD", "f", 0, 300);
        let mut it = 0i64;
        let mut chunks = Vec::new();
        loop {
            match raw(c, &["CF.SCANDUMP", "f", &it.to_string()]) {
                Value::Array(v) if v == [Value::Int(0), Value::Nil] => break,
                Value::Array(v) => match &v[..] {
                    [Value::Int(n), Value::BulkString(data)] => {
                        assert!(*n > 0);
                        chunks.push((*n, data.clone()));
                        it = *n;
                    }
                    other => panic!("{other:?}"),
                },
                other => panic!("{other:?}"),
            }
        }
        assert!(chunks.len() >= 2);
        for (n, data) in &chunks {
            let _: () = redis::cmd("CF.LOADCHUNK")
                .arg("g")
                .arg(*n)
                .arg(&data[..])
                .query(c)
                .unwrap();
        }
        for v in pipelined(c, "CF.EXISTS", "g", 0, 300) {
            assert!(matches!(v, Value::Int(1) | Value::Boolean(true)), "{v:?}");
        }
        // a filter emptied by deletes dumps nothing too
        let _: () = q(c, &["CF.ADD", "e", "x"]);
        let _: () = q(c, &["CF.DEL", "e", "x"]);
        assert_eq!(raw(c, &["CF.SCANDUMP", "e", "0"]), end);
    }
}

/// `CF.COMPACT key` moves items into older sub-filters, drops the emptied newest ones, resets
/// "Number of items deleted", keeps every item, and answers `OK`; a missing key is
/// `Cuckoo filter was not found`.
#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn cf_compact() {
    if !have_redis() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let s = Server::start_in(d.path(), &[], &[]);
    let c = &mut s.con();
    let _: () = q(c, &["CF.RESERVE", "c", "64", "BUCKETSIZE", "2"]);
    pipelined(c, "CF.ADD", "c", 0, 1000);
    let before = cf_info(c, "c", "Number of filters");
    assert!(before >= 16, "{before}");
    // 80 deletes stay below a tenth of the items: no compaction yet
    for v in pipelined(c, "CF.DEL", "c", 0, 80) {
        assert_eq!(v, Value::Int(1));
    }
    assert_eq!(cf_info(c, "c", "Number of items deleted"), 80);
    assert_eq!(cf_info(c, "c", "Number of filters"), before);
    let ok: String = q(c, &["CF.COMPACT", "c"]);
    assert_eq!(ok, "OK");
    assert_eq!(cf_info(c, "c", "Number of items deleted"), 0);
    assert_eq!(cf_info(c, "c", "Number of items inserted"), 920);
    assert!(cf_info(c, "c", "Number of filters") <= before);
    for v in pipelined(c, "CF.EXISTS", "c", 80, 1000) {
        assert_eq!(v, Value::Int(1));
    }
    // most items gone: deletes compact as in RedisBloom, and what is left fits in few
    // sub-filters (64 slots each for 50 items)
    pipelined(c, "CF.DEL", "c", 80, 950);
    let _: String = q(c, &["CF.COMPACT", "c"]);
    let after = cf_info(c, "c", "Number of filters");
    assert!(after <= 3, "{after} sub-filters for 50 items");
    for v in pipelined(c, "CF.EXISTS", "c", 950, 1000) {
        assert_eq!(v, Value::Int(1));
    }
    assert_eq!(
        err(c, &["CF.COMPACT", "missing"]),
        "Cuckoo filter was not found"
    );
    let _: () = q(c, &["CF.RESERVE", "empty", "100"]);
    let ok: String = q(c, &["CF.COMPACT", "empty"]);
    assert_eq!(ok, "OK");
    assert!(err(c, &["CF.COMPACT"]).contains("wrong number of arguments"));
    let _: () = q(c, &["SET", "str", "x"]);
    assert!(err(c, &["CF.COMPACT", "str"]).starts_with("WRONGTYPE"));
}

/// `TOPK.INCRBY` with one increment out of range answers the error in that item's place and
/// applies the others (RedisBloom's shape).
#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn topk_incrby_reports_bad_increments_per_item() {
    if !have_redis() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let s = Server::start_in(d.path(), &[], &[]);
    let c = &mut s.con();
    let _: () = q(c, &["TOPK.RESERVE", "t", "3"]);
    let r = raw(
        c,
        &["TOPK.INCRBY", "t", "a", "5", "b", "-1", "c", "7", "d", "x"],
    );
    let Value::Array(v) = r else { panic!("{r:?}") };
    assert_eq!(v.len(), 4);
    assert_eq!(v[0], Value::Nil);
    assert!(is_err(&v[1], "TopK: increment must be an integer"), "{v:?}");
    assert_eq!(v[2], Value::Nil);
    assert!(is_err(&v[3], "TopK: increment must be an integer"), "{v:?}");
    let mut list: Vec<String> = q(c, &["TOPK.LIST", "t"]);
    list.sort();
    assert_eq!(list, ["a", "c"]);
}

/// Ties in `TOPK.*` are decided as in RedisBloom 2.6: an item whose count equals the list's
/// first slot expels it, and `TOPK.LIST` shows equal counts in the slots' order. The first
/// sequence is the one of RedisBloom's `test_list_info` (width 50: no shared buckets, the
/// counts are exact); the list survives a reload slot for slot.
#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn topk_ties_expel_and_list_in_slot_order() {
    if !have_redis() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let s = Server::start_in(d.path(), &[], &[]);
    let c = &mut s.con();
    let _: () = q(c, &["TOPK.RESERVE", "topk", "2", "50", "5", "0.9"]);
    let nil = || Option::<String>::None;
    let added: Vec<Option<String>> = q(
        c,
        &[
            "TOPK.ADD", "topk", "foo", "bar", "baz", "42", "foo", "bar", "baz",
        ],
    );
    // [_, _] → foo, bar fill the slots; baz, 42, foo, bar, baz each tie the first slot
    let want = ["foo", "bar", "baz", "42", "foo"].map(|x| Some(x.to_string()));
    assert_eq!(added, [vec![nil(), nil()], want.to_vec()].concat());
    let _: Value = q(c, &["TOPK.ADD", "topk", "foo", "baz", "42", "foo", "baz"]);
    let _: Value = q(c, &["TOPK.ADD", "topk", "foo", "bar", "baz", "foo", "baz"]);
    let list: Vec<String> = q(c, &["TOPK.LIST", "topk"]);
    assert_eq!(list, ["foo", "baz"]);
    let with: Vec<Value> = q(c, &["TOPK.LIST", "topk", "WITHCOUNT"]);
    let bulk = |x: &str| Value::BulkString(x.as_bytes().to_vec());
    assert_eq!(
        with,
        [bulk("foo"), Value::Int(6), bulk("baz"), Value::Int(6)]
    );
    let bar: Vec<Option<String>> = q(c, &["TOPK.ADD", "topk", "bar", "bar", "bar", "bar", "bar"]);
    assert_eq!(bar, [nil(), nil(), Some("foo".into()), nil(), nil()]);
    let list: Vec<String> = q(c, &["TOPK.LIST", "topk"]);
    assert_eq!(list, ["bar", "baz"]);

    // k = 3, equal counts: the slots rotate, the list follows them
    let _: () = q(c, &["TOPK.RESERVE", "t3", "3", "50", "5", "0.9"]);
    let _: Value = q(c, &["TOPK.ADD", "t3", "a", "b", "c"]);
    let before: Vec<String> = q(c, &["TOPK.LIST", "t3"]);
    let _: () = q(c, &["DEBUG", "RELOAD"]);
    let after: Vec<String> = q(c, &["TOPK.LIST", "t3"]);
    assert_eq!(after, before, "the slots' order survives a reload");
    // the first slot holds the item the next tie expels, before and after the reload alike
    let out: Vec<Option<String>> = q(c, &["TOPK.ADD", "t3", "d"]);
    assert!(
        out[0].as_ref().is_some_and(|x| before.contains(x)),
        "{out:?}"
    );
    let list: Vec<String> = q(c, &["TOPK.LIST", "t3"]);
    assert_eq!(list.len(), 3);
    assert!(list.contains(&"d".to_string()));

    // an increment of 0 puts an item of estimate 0 in an empty slot: QUERY 1, not listed,
    // and named when a later item expels it
    let _: () = q(c, &["TOPK.RESERVE", "z", "2", "1", "1", "0.9"]);
    let _: Value = q(c, &["TOPK.INCRBY", "z", "heavy", "1000"]);
    let out: Vec<Option<String>> = q(c, &["TOPK.INCRBY", "z", "ghost", "0"]);
    assert_eq!(out, [nil()]);
    let in_list: Vec<i64> = q(c, &["TOPK.QUERY", "z", "ghost"]);
    assert_eq!(in_list, [1]);
    let list: Vec<String> = q(c, &["TOPK.LIST", "z"]);
    assert_eq!(list, ["heavy"]);
    let out: Vec<Option<String>> = q(c, &["TOPK.ADD", "z", "next"]);
    assert_eq!(out, [Some("ghost".into())]);
}

/// A top-k stored before (the library's own list, kind `topk`) still loads through
/// `TOPK.LOADCHUNK` and keeps its rule: a tie does not expel.
#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn topk_values_of_the_earlier_kind_keep_their_rule() {
    if !have_redis() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let s = Server::start_in(d.path(), &[], &[]);
    let c = &mut s.con();
    let mut t = bloomery::TopK::try_with_shape(2, 50, 5, 0.9).unwrap();
    t.insert("a");
    t.insert("b");
    let bytes = bloomery::Persist::to_bytes(&t);
    let head = bloomery::file::peek_header_bytes(&bytes).unwrap();
    let cut = head.header_len as usize;
    let mut load = |it: usize, chunk: &[u8]| {
        let r: Value = redis::cmd("TOPK.LOADCHUNK")
            .arg("old")
            .arg(it)
            .arg(chunk)
            .query(c)
            .unwrap();
        assert_eq!(r, Value::Okay);
    };
    load(cut, &bytes[..cut]);
    load(bytes.len(), &bytes[cut..]);
    let out: Vec<Option<String>> = q(c, &["TOPK.ADD", "old", "c"]);
    assert_eq!(out, [None], "the library's own rule: ties do not expel");
    let mut list: Vec<String> = q(c, &["TOPK.LIST", "old"]);
    list.sort();
    assert_eq!(list, ["a", "b"]);
}

/// `TOPK.RESERVE` refuses a width or depth beyond 32 bits with RedisBloom's texts.
#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn topk_reserve_refuses_widths_beyond_32_bits() {
    if !have_redis() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let s = Server::start_in(d.path(), &[], &[]);
    let c = &mut s.con();
    for (w, dp, want) in [
        ("4294967296", "7", "TopK: invalid width"),
        ("99999999999999", "7", "TopK: invalid width"),
        ("8", "4294967296", "TopK: invalid depth"),
    ] {
        assert_eq!(err(c, &["TOPK.RESERVE", "t", "3", w, dp, "0.9"]), want);
    }
    // within 32 bits, a shape too big to allocate is refused as such before the row limit
    let e = err(
        c,
        &["TOPK.RESERVE", "t", "3", "4294967295", "4294967295", "1"],
    );
    assert!(
        e.starts_with("ERR Insufficient memory to create topk data structure"),
        "{e}"
    );
    assert_eq!(
        err(c, &["TOPK.RESERVE", "t", "3", "8", "65", "0.9"]),
        "TopK: invalid depth"
    );
}

fn bf_info(c: &mut redis::Connection, key: &str, field: &str) -> i64 {
    let v: Vec<i64> = q(c, &["BF.INFO", key, field]);
    v[0]
}

fn all_in(c: &mut redis::Connection, key: &str, items: impl Iterator<Item = u32>) -> bool {
    items.into_iter().all(|i| {
        let v: i64 = q(c, &["BF.EXISTS", key, &format!("item-{i}")]);
        v == 1
    })
}

/// `BF.MERGE dest numkeys src...`: the union of filters made alike (also when they grew to
/// different numbers of sub-filters), into a new key or an existing one; incompatible
/// filters are refused and nothing changes; replicas and the AOF get the same value.
#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn bf_merge_unites_filters_made_alike() {
    if !have_redis() {
        return;
    }
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let p = Server::start_in(d1.path(), &[], &["--appendonly", "yes"]);
    let r = Server::start_in(d2.path(), &[], &[]);
    let c = &mut p.con();
    let rc = &mut r.con();
    let _: () = q(rc, &["REPLICAOF", "127.0.0.1", &p.port.to_string()]);

    let _: () = q(c, &["BF.RESERVE", "a", "0.01", "100"]);
    let _: () = q(c, &["BF.RESERVE", "b", "0.01", "100"]);
    pipelined(c, "BF.ADD", "a", 0, 50);
    pipelined(c, "BF.ADD", "b", 1000, 1400);
    assert_eq!(bf_info(c, "a", "FILTERS"), 1);
    let grown = bf_info(c, "b", "FILTERS");
    assert!(grown >= 3, "{grown}");

    // a new destination: a copy of the first source, then the union
    let ok: String = q(c, &["BF.MERGE", "m", "2", "a", "b"]);
    assert_eq!(ok, "OK");
    assert!(all_in(c, "m", (0..50).chain(1000..1400)));
    assert_eq!(bf_info(c, "m", "FILTERS"), grown);
    assert_eq!(
        bf_info(c, "m", "ITEMS"),
        400,
        "the larger count, a lower bound"
    );
    // sources are untouched
    assert_eq!(bf_info(c, "a", "FILTERS"), 1);
    // an existing destination, which may be a source too
    let _: String = q(c, &["BF.MERGE", "a", "2", "a", "b"]);
    assert!(all_in(c, "a", (0..50).chain(1000..1400)));
    // the merged filter takes more items and keeps them
    pipelined(c, "BF.ADD", "m", 5000, 5300);
    assert!(all_in(c, "m", (0..50).chain(1000..1400).chain(5000..5300)));
    // filters made by BF.ADD (the defaults) merge
    let _: i64 = q(c, &["BF.ADD", "x", "item-1"]);
    let _: i64 = q(c, &["BF.ADD", "y", "item-2"]);
    let _: String = q(c, &["BF.MERGE", "z", "2", "x", "y"]);
    assert!(all_in(c, "z", 1..3));

    // incompatible parameters: refused, nothing changes
    let _: () = q(c, &["BF.RESERVE", "other", "0.001", "100"]);
    let _: i64 = q(c, &["BF.ADD", "other", "q"]);
    let before: Vec<u8> = q(c, &["BLOOMERY.DUMP", "a"]);
    let e = err(c, &["BF.MERGE", "a", "1", "other"]);
    assert!(e.starts_with("ERR filters cannot be merged"), "{e}");
    let e = err(c, &["BF.MERGE", "fresh", "2", "a", "other"]);
    assert!(e.starts_with("ERR filters cannot be merged"), "{e}");
    let after: Vec<u8> = q(c, &["BLOOMERY.DUMP", "a"]);
    assert_eq!(before, after);
    let exists: i64 = q(c, &["EXISTS", "fresh"]);
    assert_eq!(exists, 0);
    // argument and key errors
    assert_eq!(err(c, &["BF.MERGE", "a", "1", "missing"]), "ERR not found");
    assert_eq!(
        err(c, &["BF.MERGE", "a", "0", "b"]),
        "ERR numkeys must be a positive integer"
    );
    assert_eq!(
        err(c, &["BF.MERGE", "a", "x", "b"]),
        "ERR numkeys must be a positive integer"
    );
    assert_eq!(
        err(c, &["BF.MERGE", "a", "2", "b"]),
        "ERR the number of source keys does not match numkeys"
    );
    assert!(err(c, &["BF.MERGE", "a", "1"]).contains("wrong number of arguments"));
    let _: () = q(c, &["SET", "str", "v"]);
    assert!(err(c, &["BF.MERGE", "a", "1", "str"]).starts_with("WRONGTYPE"));
    let _: () = q(c, &["CF.ADD", "cuckoo", "v"]);
    assert!(err(c, &["BF.MERGE", "cuckoo", "1", "a"]).starts_with("WRONGTYPE"));
    // every key is reported (cluster routing, ACLs)
    let keys: Vec<String> = q(c, &["COMMAND", "GETKEYS", "BF.MERGE", "d", "2", "s1", "s2"]);
    assert_eq!(keys, ["d", "s1", "s2"]);

    // the replica and the AOF hold the same values
    let acked: i64 = q(c, &["WAIT", "1", "10000"]);
    assert_eq!(acked, 1);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let want: Vec<Vec<u8>> = ["m", "a", "z"]
        .iter()
        .map(|k| q(c, &["BLOOMERY.DUMP", k]))
        .collect();
    loop {
        let got: Vec<Option<Vec<u8>>> = ["m", "a", "z"]
            .iter()
            .map(|k| q(rc, &["BLOOMERY.DUMP", k]))
            .collect();
        if got.iter().zip(&want).all(|(g, w)| g.as_ref() == Some(w)) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "replica differs");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _: () = q(c, &["DEBUG", "LOADAOF"]);
    for (k, w) in ["m", "a", "z"].iter().zip(&want) {
        let got: Vec<u8> = q(c, &["BLOOMERY.DUMP", k]);
        assert_eq!(&got, w, "{k} after the AOF reload");
    }
}

/// Arity errors name the command as RedisBloom registers it (lower case), whatever the case
/// typed: `wrong number of arguments for 'bf.add' command`.
#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn arity_errors_name_the_command_in_lower_case() {
    if !have_redis() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let s = Server::start_in(d.path(), &[], &[]);
    let c = &mut s.con();
    for (args, name) in [
        (&["BF.ADD", "k"][..], "bf.add"),
        (&["bf.add", "k"], "bf.add"),
        (&["Cf.Reserve"], "cf.reserve"),
        (&["CMS.QUERY", "k"], "cms.query"),
        (&["TOPK.ADD", "k"], "topk.add"),
        (&["CBF.ADD", "k"], "cbf.add"),
        (&["BLOOMERY.DUMP"], "bloomery.dump"),
    ] {
        assert_eq!(
            err(c, args),
            format!("ERR wrong number of arguments for '{name}' command"),
            "{args:?}"
        );
    }
}

/// Every write announces itself to keyspace subscribers: the event is the command's name in
/// lower case (`bf.add`, `cf.insert`, …) in the generic class, on the key written; reads and
/// writes that change nothing announce nothing.
#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn writes_notify_keyspace_subscribers() {
    if !have_redis() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let s = Server::start_in(d.path(), &[], &[]);
    let c = &mut s.con();
    let _: () = q(c, &["CONFIG", "SET", "notify-keyspace-events", "Eg"]);
    let mut sub = s.con();
    let mut ps = sub.as_pubsub();
    ps.psubscribe("__keyevent@0__:*").unwrap();
    ps.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let writes: &[&[&str]] = &[
        &["BF.RESERVE", "b", "0.01", "100"],
        &["bf.add", "b", "x"],
        &["BF.MADD", "b", "y", "z"],
        &["BF.INSERT", "b2", "ITEMS", "w"],
        &["BF.MERGE", "b3", "1", "b"],
        &["CF.RESERVE", "c", "100"],
        &["CF.ADD", "c", "x"],
        &["CF.ADDNX", "c", "y"],
        &["CF.INSERT", "c", "ITEMS", "z"],
        &["CF.INSERTNX", "c", "ITEMS", "q"],
        &["CF.DEL", "c", "x"],
        &["CF.COMPACT", "c"],
        &["CMS.INITBYDIM", "m", "10", "5"],
        &["CMS.INITBYPROB", "m2", "0.01", "0.01"],
        &["CMS.INCRBY", "m", "a", "1"],
        &["CMS.MERGE", "m", "1", "m"],
        &["TOPK.RESERVE", "t", "3"],
        &["TOPK.ADD", "t", "a"],
        &["TOPK.INCRBY", "t", "a", "2"],
        &["CBF.RESERVE", "n", "100", "0.01"],
        &["CBF.ADD", "n", "a"],
        &["CBF.DEL", "n", "a"],
        &["MLBF.RESERVE", "u", "100", "0.01"],
        &["MLBF.ADD", "u", "http://example.com/"],
        &["TDIGEST.CREATE", "d"],
        &["TDIGEST.ADD", "d", "1.5", "2"],
        &["TDIGEST.MERGE", "d2", "1", "d"],
        &["TDIGEST.RESET", "d"],
    ];
    // reads and refused or empty writes in between: no event
    let silent: &[&[&str]] = &[
        &["BF.EXISTS", "b", "x"],
        &["CF.DEL", "c", "never-added"],
        &["CF.INFO", "c"],
        &["TOPK.LIST", "t"],
        &["CMS.QUERY", "m", "a"],
    ];
    let mut want = Vec::new();
    for (i, w) in writes.iter().enumerate() {
        let _: Value = raw(c, w);
        want.push((
            format!("__keyevent@0__:{}", w[0].to_lowercase()),
            w[1].to_string(),
        ));
        let _: Value = raw(c, silent[i % silent.len()]);
    }
    // chunks of a dump, loaded elsewhere: one event per chunk
    let chunks: Vec<(i64, Vec<u8>)> = {
        let mut out = Vec::new();
        let mut it = 0i64;
        loop {
            let (n, data): (i64, Option<Vec<u8>>) =
                redis::cmd("CF.SCANDUMP").arg("c").arg(it).query(c).unwrap();
            let Some(data) = data.filter(|_| n != 0) else {
                break;
            };
            out.push((n, data));
            it = n;
        }
        out
    };
    for (n, data) in &chunks {
        let _: () = redis::cmd("CF.LOADCHUNK")
            .arg("c2")
            .arg(*n)
            .arg(&data[..])
            .query(c)
            .unwrap();
        want.push(("__keyevent@0__:cf.loadchunk".into(), "c2".into()));
    }
    let got: Vec<(String, String)> = (0..want.len())
        .map(|_| {
            let m = ps.get_message().expect("an event");
            (
                m.get_channel_name().to_string(),
                m.get_payload::<String>().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, want);
    // nothing more
    ps.set_read_timeout(Some(std::time::Duration::from_millis(300)))
        .unwrap();
    assert!(ps.get_message().is_err(), "an extra event");
}
