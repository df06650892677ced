//! `CMS.*` with 32-bit counters, as RedisBloom 2.6: per-item `INCRBY` overflow, signed
//! `MERGE` weights with overflow refusal, `CMS.INFO`'s count, memory per counter, and values
//! stored by earlier versions (64-bit counters, RDB encoding version 1) still loading.

mod common;

use bloomery::{Count, CountMinSketch, CountMinSketch32, Persist};
use common::{err, have_redis, is_err, q, raw, tmp, Server};
use redis::Value;

const U32_MAX: i64 = u32::MAX as i64;

fn count(c: &mut redis::Connection, key: &str) -> i64 {
    let info: Vec<Value> = q(c, &["CMS.INFO", key]);
    match info[5] {
        Value::Int(n) => n,
        ref v => panic!("count {v:?}"),
    }
}

fn digest(c: &mut redis::Connection, key: &str) -> String {
    let d: Vec<String> = q(c, &["DEBUG", "DIGEST-VALUE", key]);
    d[0].clone()
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn incrby_overflow_answers_in_the_item_place_and_saturates() {
    if !have_redis() {
        return;
    }
    let d = tmp();
    let s = Server::start_in(d.path(), &[], &[]);
    let c = &mut s.con();
    let _: () = q(c, &["CMS.INITBYDIM", "cms", "1000", "5"]);
    let large = (1i64 << 31) - 1;
    let l = large.to_string();
    assert_eq!(
        q::<Vec<i64>>(c, &["CMS.INCRBY", "cms", "a", &l, "b", "10"]),
        [large, 10]
    );
    assert_eq!(
        q::<Vec<i64>>(c, &["CMS.INCRBY", "cms", "a", &l, "b", "10"]),
        [2 * large, 20]
    );
    // a's counters would pass u32::MAX: an error in its place, the other items applied
    let v: Value = raw(c, &["CMS.INCRBY", "cms", "a", &l, "b", "10", "c", "7"]);
    let Value::Array(v) = v else { panic!("{v:?}") };
    assert!(is_err(&v[0], "CMS: INCRBY overflow"), "{v:?}");
    assert_eq!(v[1..], [Value::Int(30), Value::Int(7)]);
    // RedisBloom 2.6 leaves the counters at u32::MAX (2·large + 1) and counts the increment
    assert_eq!(
        q::<Vec<i64>>(c, &["CMS.QUERY", "cms", "a", "b", "c"]),
        [U32_MAX, 30, 7]
    );
    assert_eq!(count(c, "cms"), 3 * large + 37);
    // saturated: every later increment of a is an overflow too
    let v: Value = raw(c, &["CMS.INCRBY", "cms", "a", "1"]);
    assert!(matches!(&v, Value::Array(x) if is_err(&x[0], "CMS: INCRBY overflow")));
    // an increment beyond u32::MAX on a fresh item
    let v: Value = raw(c, &["CMS.INCRBY", "cms", "d", "5000000000", "e", "1"]);
    let Value::Array(v) = v else { panic!("{v:?}") };
    assert!(is_err(&v[0], "CMS: INCRBY overflow"), "{v:?}");
    assert_eq!(v[1], Value::Int(1));
    // the total stays within i64 (a RESP integer): refused whole, nothing changed
    let before = digest(c, "cms");
    let max = i64::MAX.to_string();
    assert!(err(c, &["CMS.INCRBY", "cms", "x", "1", "y", &max]).contains("CMS: INCRBY overflow"));
    assert_eq!(digest(c, "cms"), before);
    assert_eq!(q::<Vec<i64>>(c, &["CMS.QUERY", "cms", "x"]), [0]);
    // zero increments answer the current counts
    assert_eq!(
        q::<Vec<i64>>(c, &["CMS.INCRBY", "cms", "b", "0", "c", "0"]),
        [30, 7]
    );
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn merge_with_negative_weights_subtracts() {
    if !have_redis() {
        return;
    }
    let d = tmp();
    let s = Server::start_in(d.path(), &[], &[]);
    let c = &mut s.con();
    for k in ["c1", "c2", "c3", "c5", "c6"] {
        let _: () = q(c, &["CMS.INITBYDIM", k, "1000", "5"]);
    }
    for i in 0..100 {
        for (k, p) in [("c1", "foo"), ("c2", "bar"), ("c3", "baz")] {
            let _: Vec<i64> = q(c, &["CMS.INCRBY", k, &format!("{p}{i}"), "1"]);
        }
    }
    let _: () = q(
        c,
        &[
            "CMS.MERGE",
            "c5",
            "3",
            "c1",
            "c2",
            "c3",
            "WEIGHTS",
            "1",
            "1",
            "1",
        ],
    );
    assert_eq!(count(c, "c5"), 300);
    // c5 − c3 = c1 + c2, in either order of the sources
    for args in [
        ["CMS.MERGE", "c6", "2", "c5", "c3", "WEIGHTS", "1", "-1"],
        ["CMS.MERGE", "c6", "2", "c3", "c5", "WEIGHTS", "-1", "1"],
    ] {
        let _: () = q(c, &args);
        assert_eq!(count(c, "c6"), 200);
        for i in 0..100 {
            let (f, b, z) = (format!("foo{i}"), format!("bar{i}"), format!("baz{i}"));
            assert_eq!(
                q::<Vec<i64>>(c, &["CMS.QUERY", "c6", &f, &b, &z]),
                [1, 1, 0],
                "{args:?}"
            );
        }
    }
    // subtracting c3 again would take counters below zero: refused, nothing changed
    let before = digest(c, "c6");
    for args in [
        ["CMS.MERGE", "c6", "2", "c6", "c3", "WEIGHTS", "1", "-1"],
        ["CMS.MERGE", "c6", "2", "c3", "c6", "WEIGHTS", "-1", "1"],
    ] {
        assert!(err(c, &args).contains("CMS: MERGE overflow"), "{args:?}");
        assert_eq!(digest(c, "c6"), before);
    }
    // the result equals what the library computes from the same sketches
    let lib = |c: &mut redis::Connection, k: &str| {
        let b: Vec<u8> = q(c, &["BLOOMERY.DUMP", k]);
        CountMinSketch32::from_bytes(&b).unwrap()
    };
    let (c1, c2, c6) = (lib(c, "c1"), lib(c, "c2"), lib(c, "c6"));
    let sum = CountMinSketch32::try_weighted_sum(&[(&c1, 1), (&c2, 1)])
        .unwrap()
        .unwrap();
    assert_eq!(sum, c6);
    assert!(err(c, &["CMS.MERGE", "c6", "1", "c1", "WEIGHTS", "x"])
        .contains("CMS: invalid weight value"));
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn merge_overflow_is_refused_and_changes_nothing() {
    if !have_redis() {
        return;
    }
    let d = tmp();
    let s = Server::start_in(d.path(), &[], &[]);
    let c = &mut s.con();
    for k in ["a", "b", "dst"] {
        let _: () = q(c, &["CMS.INITBYDIM", k, "100", "3"]);
    }
    let half = ((1i64 << 31) + 1).to_string();
    let _: Vec<i64> = q(c, &["CMS.INCRBY", "a", "x", &half]);
    let _: Vec<i64> = q(c, &["CMS.INCRBY", "b", "x", "1"]);
    let _: Vec<i64> = q(c, &["CMS.INCRBY", "dst", "keep", "9"]);
    let before = digest(c, "dst");
    let big = i64::MAX.to_string();
    let neg = i64::MIN.to_string();
    for args in [
        // a counter above u32::MAX
        &["CMS.MERGE", "dst", "2", "a", "a"][..],
        &["CMS.MERGE", "dst", "1", "a", "WEIGHTS", "2"],
        // a product beyond i64
        &["CMS.MERGE", "dst", "1", "b", "WEIGHTS", &big],
        &["CMS.MERGE", "dst", "2", "a", "b", "WEIGHTS", "1", &big],
        // below zero
        &["CMS.MERGE", "dst", "1", "b", "WEIGHTS", "-1"],
        &["CMS.MERGE", "dst", "2", "b", "a", "WEIGHTS", "1", &neg],
    ] {
        assert!(err(c, args).contains("CMS: MERGE overflow"), "{args:?}");
        assert_eq!(digest(c, "dst"), before, "{args:?}");
    }
    assert_eq!(q::<Vec<i64>>(c, &["CMS.QUERY", "dst", "keep"]), [9]);
    // weights large in magnitude on empty counters are fine when every result fits
    let _: () = q(c, &["CMS.INITBYDIM", "e", "100", "3"]);
    let _: () = q(
        c,
        &["CMS.MERGE", "dst", "2", "e", "b", "WEIGHTS", &big, "3"],
    );
    assert_eq!(q::<Vec<i64>>(c, &["CMS.QUERY", "dst", "x", "keep"]), [3, 0]);
    assert_eq!(count(c, "dst"), 3);
    // up to u32::MAX exactly
    let _: Vec<i64> = q(
        c,
        &["CMS.INCRBY", "b", "x", &((1i64 << 31) - 3).to_string()],
    );
    let _: () = q(c, &["CMS.MERGE", "dst", "2", "a", "b"]);
    assert_eq!(q::<Vec<i64>>(c, &["CMS.QUERY", "dst", "x"]), [U32_MAX]);
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn memory_of_a_sketch_is_four_bytes_a_counter() {
    if !have_redis() {
        return;
    }
    let d = tmp();
    let s = Server::start_in(d.path(), &[], &[]);
    let c = &mut s.con();
    let _: () = q(c, &["CMS.INITBYDIM", "m", "1000", "5"]);
    let used = q::<i64>(c, &["MEMORY", "USAGE", "m"]);
    // width·depth·4 = 20000 bytes of counters, plus the key and the value's bookkeeping
    // (RedisBloom's own test pins 856 bytes for 20×5 on Redis 7: 400 bytes of counters and
    // 456 of overhead)
    assert!((20_000..20_000 + 1024).contains(&used), "{used}");
}

/// A `DUMP` payload of a sketch written by the version with 64-bit counters (RDB encoding
/// version 1): `CMS.INITBYDIM old 1000 5`, `CMS.INCRBY old a 5 b 42 big 5000000000`.
const OLD_DUMP: &[u8] = include_bytes!("fixtures/cms-v1.dump");

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn values_of_the_64_bit_form_still_load() {
    if !have_redis() {
        return;
    }
    let d = tmp();
    let s = Server::start_in(d.path(), &[], &[]);
    let c = &mut s.con();
    let _: () = redis::cmd("RESTORE")
        .arg("old")
        .arg(0)
        .arg(OLD_DUMP)
        .query(c)
        .unwrap();
    // counts within 32 bits answer as before; the one beyond them reads u32::MAX, as a
    // RedisBloom counter does
    assert_eq!(
        q::<Vec<i64>>(c, &["CMS.QUERY", "old", "a", "b", "big", "none"]),
        [5, 42, U32_MAX, 0]
    );
    assert_eq!(count(c, "old"), 5_000_000_047);
    let info: Vec<Value> = q(c, &["CMS.INFO", "old"]);
    assert_eq!((&info[1], &info[3]), (&Value::Int(1000), &Value::Int(5)));
    assert_eq!(q::<Vec<i64>>(c, &["CMS.INCRBY", "old", "a", "1"]), [6]);
    // stored again in the 32-bit form (RDB encoding version 3: in pieces), it reloads
    let _: () = q(c, &["DEBUG", "RELOAD"]);
    assert_eq!(
        q::<Vec<i64>>(c, &["CMS.QUERY", "old", "a", "b", "big"]),
        [6, 42, U32_MAX]
    );
    let b: Vec<u8> = q(c, &["BLOOMERY.DUMP", "old"]);
    assert!(CountMinSketch32::from_bytes(&b).is_ok());
    assert!(q::<i64>(c, &["MEMORY", "USAGE", "old"]) < 20_000 + 1024);

    // an AOF of the earlier version: its LOADCHUNK sequence carries the 64-bit form
    let mut wide = CountMinSketch::try_with_shape(100, 4).unwrap();
    wide.insert_many("k", 7);
    let bytes = wide.to_bytes();
    let h = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    for (end, part) in [(h, &bytes[..h]), (bytes.len(), &bytes[h..])] {
        let _: () = redis::cmd("CMS.LOADCHUNK")
            .arg("aof")
            .arg(end)
            .arg(part)
            .query(c)
            .unwrap();
    }
    assert_eq!(q::<Vec<i64>>(c, &["CMS.QUERY", "aof", "k"]), [7]);
    assert_eq!(
        q::<Vec<i64>>(c, &["CMS.INCRBY", "aof", "k", "1"]),
        [wide.count("k") as i64 + 1]
    );
    // and a 64-bit sketch merges with a new one of its shape once loaded
    let _: () = q(c, &["CMS.INITBYDIM", "new", "1000", "5"]);
    let _: Vec<i64> = q(c, &["CMS.INCRBY", "new", "a", "4"]);
    let _: () = q(
        c,
        &["CMS.MERGE", "new", "2", "new", "old", "WEIGHTS", "1", "1"],
    );
    assert_eq!(q::<Vec<i64>>(c, &["CMS.QUERY", "new", "a", "b"]), [10, 42]);
}
