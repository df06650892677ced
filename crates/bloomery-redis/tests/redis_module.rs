//! Integration tests: the module loaded into real `redis-server`s on loopback ports.
//!
//! Needs `redis-server` and `redis-cli` (Debian's redis-server and redis-tools; `.ci/run`
//! installs them). Each test starts its own servers and kills them on drop.

mod common;

use std::time::{Duration, Instant};

use bloomery::{CuckooFilter, Filter, Persist, ScalableBloomFilter};
use common::{crc64, err, have_redis, items, q, tmp, Server};
use redis::Value;

/// Answers of BF.EXISTS / CF.EXISTS and INFO for probes, to compare before/after.
fn answers(con: &mut redis::Connection) -> Vec<Value> {
    let mut out = Vec::new();
    for p in items("x", 300) {
        out.push(q::<Value>(con, &["BF.EXISTS", "bf", &p]));
        out.push(q::<Value>(con, &["CF.COUNT", "cf", &p]));
    }
    out.push(q::<Value>(con, &["BF.INFO", "bf"]));
    out.push(q::<Value>(con, &["CF.INFO", "cf"]));
    out.push(q::<Value>(con, &["BF.CARD", "bf"]));
    out
}

fn fill(con: &mut redis::Connection) {
    let _: () = q(con, &["BF.RESERVE", "bf", "0.01", "50"]);
    let _: () = q(
        con,
        &[
            "CF.RESERVE",
            "cf",
            "64",
            "BUCKETSIZE",
            "4",
            "EXPANSION",
            "2",
        ],
    );
    for it in items("x", 150) {
        let _: i64 = q(con, &["BF.ADD", "bf", &it]);
        let _: i64 = q(con, &["CF.ADD", "cf", &it]);
    }
    let _: i64 = q(con, &["CF.DEL", "cf", "x3"]);
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn bf_commands_and_errors() {
    if !have_redis() {
        return;
    }
    let d = tmp();
    let s = Server::start_in(d.path(), &["MAX-BYTES", "1048576"], &[]);
    let c = &mut s.con();

    // Auto-create with RedisBloom's defaults.
    assert_eq!(q::<i64>(c, &["BF.ADD", "auto", "a"]), 1);
    assert_eq!(q::<i64>(c, &["BF.ADD", "auto", "a"]), 0);
    assert_eq!(
        q::<Vec<i64>>(c, &["BF.INFO", "auto", "CAPACITY"]),
        vec![100]
    );
    assert_eq!(q::<Vec<i64>>(c, &["BF.INFO", "auto", "EXPANSION"]), vec![2]);
    assert_eq!(q::<Vec<i64>>(c, &["BF.INFO", "auto", "items"]), vec![1]);
    assert_eq!(q::<Vec<i64>>(c, &["BF.INFO", "auto", "FILTERS"]), vec![1]);
    assert!(q::<Vec<i64>>(c, &["BF.INFO", "auto", "SIZE"])[0] > 0);
    assert!(err(c, &["BF.INFO", "auto", "COLOUR"]).contains("Invalid information value"));
    let all: Vec<Value> = q(c, &["BF.INFO", "auto"]);
    assert_eq!(all.len(), 10);
    assert_eq!(all[0], Value::SimpleString("Capacity".into()));
    assert_eq!(all[8], Value::SimpleString("Expansion rate".into()));

    assert_eq!(
        q::<String>(c, &["BF.RESERVE", "r", "0.001", "1000", "EXPANSION", "4"]),
        "OK"
    );
    assert!(err(c, &["BF.RESERVE", "r", "0.001", "1000"]).contains("item exists"));
    assert_eq!(
        q::<Vec<i64>>(c, &["BF.MADD", "r", "a", "b", "a"]),
        vec![1, 1, 0]
    );
    assert_eq!(q::<i64>(c, &["BF.EXISTS", "r", "a"]), 1);
    assert_eq!(q::<i64>(c, &["BF.EXISTS", "r", "zz"]), 0);
    assert_eq!(q::<i64>(c, &["BF.EXISTS", "missing", "a"]), 0);
    assert_eq!(
        q::<Vec<i64>>(c, &["BF.MEXISTS", "r", "a", "zz", "b"]),
        vec![1, 0, 1]
    );
    assert_eq!(q::<Vec<i64>>(c, &["BF.MEXISTS", "missing", "a"]), vec![0]);
    assert_eq!(q::<i64>(c, &["BF.CARD", "r"]), 2);
    assert_eq!(q::<i64>(c, &["BF.CARD", "missing"]), 0);
    assert_eq!(q::<Vec<i64>>(c, &["BF.INFO", "r", "EXPANSION"]), vec![4]);

    // Growth: a scaling filter keeps every item.
    for it in items("g", 300) {
        let _: i64 = q(c, &["BF.ADD", "grow", &it]);
    }
    assert!(q::<Vec<i64>>(c, &["BF.INFO", "grow", "FILTERS"])[0] > 1);
    for it in items("g", 300) {
        assert_eq!(q::<i64>(c, &["BF.EXISTS", "grow", &it]), 1);
    }
    // BF.MEXISTS (the batched query, sub-filter by sub-filter) answers as BF.EXISTS, for the
    // items and as many others
    let asked: Vec<String> = items("g", 300).into_iter().chain(items("h", 300)).collect();
    let mut mexists = vec!["BF.MEXISTS", "grow"];
    mexists.extend(asked.iter().map(String::as_str));
    let batched: Vec<i64> = q(c, &mexists);
    let single: Vec<i64> = (asked.iter())
        .map(|it| q::<i64>(c, &["BF.EXISTS", "grow", it]))
        .collect();
    assert_eq!(batched, single);
    assert!(batched[..300].iter().all(|&hit| hit == 1));

    // Non-scaling filters fill up.
    let _: () = q(c, &["BF.RESERVE", "ns", "0.01", "2", "NONSCALING"]);
    assert!(err(c, &["BF.MADD", "ns", "a", "b", "c"]).contains("non scaling filter is full"));
    assert_eq!(
        q::<Vec<i64>>(c, &["BF.MEXISTS", "ns", "a", "b"]),
        vec![1, 1]
    );
    assert!(err(c, &["BF.ADD", "ns", "d"]).contains("non scaling filter is full"));
    assert_eq!(
        q::<Vec<Value>>(c, &["BF.INFO", "ns", "EXPANSION"]),
        vec![Value::Nil]
    );

    // BF.INSERT.
    assert_eq!(
        q::<Vec<i64>>(
            c,
            &[
                "BF.INSERT",
                "ins",
                "CAPACITY",
                "1000",
                "ERROR",
                "0.001",
                "ITEMS",
                "a",
                "b"
            ]
        ),
        vec![1, 1]
    );
    assert_eq!(
        q::<Vec<i64>>(c, &["BF.INFO", "ins", "CAPACITY"]),
        vec![1000]
    );
    assert_eq!(
        q::<Vec<i64>>(c, &["BF.INSERT", "ins", "NOCREATE", "ITEMS", "a", "c"]),
        vec![0, 1]
    );
    assert!(err(c, &["BF.INSERT", "nope", "NOCREATE", "ITEMS", "a"]).contains("not found"));
    assert!(err(
        c,
        &[
            "BF.INSERT",
            "nope",
            "NOCREATE",
            "CAPACITY",
            "10",
            "ITEMS",
            "a"
        ]
    )
    .contains("NOCREATE"));
    assert!(err(c, &["BF.INSERT", "nope", "CAPACITY", "10", "ITEMS"]).contains("wrong number"));
    assert_eq!(
        err(c, &["BF.INSERT", "nope", "CAPACITY", "10", "a"]),
        "Unknown argument received"
    );
    let _: Vec<i64> = q(
        c,
        &[
            "BF.INSERT",
            "insns",
            "NONSCALING",
            "CAPACITY",
            "3",
            "ITEMS",
            "a",
        ],
    );
    assert_eq!(
        q::<Vec<Value>>(c, &["BF.INFO", "insns", "EXPANSION"]),
        vec![Value::Nil]
    );

    // Bad arguments: error replies, never a crash or a huge allocation.
    for (args, want) in [
        (&["BF.RESERVE", "e", "abc", "100"][..], "bad error rate"),
        (&["BF.RESERVE", "e", "0", "100"], "error rate"),
        (&["BF.RESERVE", "e", "1", "100"], "error rate"),
        (&["BF.RESERVE", "e", "-0.5", "100"], "error rate"),
        (&["BF.RESERVE", "e", "nan", "100"], "error rate"),
        (&["BF.RESERVE", "e", "inf", "100"], "error rate"),
        (&["BF.RESERVE", "e", "0.01", "0"], "capacity"),
        (&["BF.RESERVE", "e", "0.01", "-5"], "capacity"),
        (&["BF.RESERVE", "e", "0.01", "lots"], "capacity"),
        (
            &["BF.RESERVE", "e", "0.01", "99999999999999999999"],
            "capacity",
        ),
        (
            &["BF.RESERVE", "e", "0.01", "9223372036854775807"],
            "MAX-BYTES",
        ),
        (&["BF.RESERVE", "e", "0.01", "10000000"], "MAX-BYTES"),
        (
            &["BF.RESERVE", "e", "0.01", "100", "EXPANSION", "0"],
            "ERR expansion should be greater or equal to 1",
        ),
        (
            &["BF.RESERVE", "e", "0.01", "100", "EXPANSION", "-1"],
            "ERR expansion should be greater or equal to 1",
        ),
        (
            &["BF.RESERVE", "e", "0.01", "100", "EXPANSION", "x"],
            "ERR bad expansion",
        ),
        (
            &["BF.RESERVE", "e", "0.01", "100", "EXPANSION"],
            "ERR no expansion",
        ),
        (
            &[
                "BF.RESERVE",
                "e",
                "0.01",
                "100",
                "EXPANSION",
                "2",
                "NONSCALING",
            ],
            "cannot expand",
        ),
        (
            &["BF.RESERVE", "e", "0.01", "100", "BOGUS"],
            "unknown argument",
        ),
        (&["BF.RESERVE", "e", "0.01"], "wrong number of arguments"),
        (&["BF.ADD", "e"], "wrong number of arguments"),
        (&["BF.ADD", "e", "a", "b"], "wrong number of arguments"),
        (&["BF.MADD", "e"], "wrong number of arguments"),
        (&["BF.EXISTS", "e"], "wrong number of arguments"),
        (&["BF.MEXISTS", "e"], "wrong number of arguments"),
        (&["BF.CARD"], "wrong number of arguments"),
        (&["BF.INFO", "missing"], "not found"),
        (&["BF.INFO"], "wrong number of arguments"),
        (
            &["BF.INSERT", "e", "ERROR", "2", "ITEMS", "a"],
            "Bad argument received",
        ),
        (
            &["BF.INSERT", "e", "CAPACITY", "0", "ITEMS", "a"],
            "Bad argument received",
        ),
        (&["BF.SCANDUMP", "missing", "0"], "not found"),
        (&["BF.SCANDUMP", "r", "-1"], "must be numeric"),
    ] {
        let e = err(c, args);
        assert!(e.contains(want), "{args:?}: {e}");
    }
    assert_eq!(
        q::<i64>(c, &["EXISTS", "e"]),
        0,
        "failed commands create nothing"
    );

    // WRONGTYPE both ways.
    let _: () = q(c, &["SET", "str", "v"]);
    for args in [
        &["BF.ADD", "str", "a"][..],
        &["BF.EXISTS", "str", "a"],
        &["BF.INFO", "str"],
        &["BF.CARD", "str"],
        &["BF.MADD", "str", "a"],
        &["BF.RESERVE", "str", "0.1", "10"],
        &["CF.ADD", "r", "a"],
        &["CF.EXISTS", "r", "a"],
        &["BF.SCANDUMP", "str", "0"],
    ] {
        let e = err(c, args);
        assert!(
            e.contains("WRONGTYPE") || e.contains("item exists"),
            "{args:?}: {e}"
        );
    }
    assert!(err(c, &["CF.ADD", "r", "a"]).contains("WRONGTYPE"));
    assert_eq!(q::<String>(c, &["PING"]), "PONG");
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn cf_commands_and_errors() {
    if !have_redis() {
        return;
    }
    let d = tmp();
    let s = Server::start_in(d.path(), &["MAX-BYTES", "1048576"], &[]);
    let c = &mut s.con();

    assert_eq!(q::<i64>(c, &["CF.ADD", "auto", "a"]), 1);
    assert_eq!(
        q::<i64>(c, &["CF.ADD", "auto", "a"]),
        1,
        "CF.ADD stores duplicates"
    );
    assert_eq!(q::<i64>(c, &["CF.COUNT", "auto", "a"]), 2);
    assert_eq!(q::<i64>(c, &["CF.ADDNX", "auto", "a"]), 0);
    assert_eq!(q::<i64>(c, &["CF.ADDNX", "auto", "b"]), 1);
    assert_eq!(q::<i64>(c, &["CF.EXISTS", "auto", "b"]), 1);
    assert_eq!(q::<i64>(c, &["CF.EXISTS", "auto", "zz"]), 0);
    assert_eq!(q::<i64>(c, &["CF.EXISTS", "missing", "zz"]), 0);
    assert_eq!(q::<i64>(c, &["CF.COUNT", "missing", "zz"]), 0);
    assert_eq!(
        q::<Vec<i64>>(c, &["CF.MEXISTS", "auto", "a", "zz", "b"]),
        vec![1, 0, 1]
    );
    assert_eq!(q::<i64>(c, &["CF.DEL", "auto", "a"]), 1);
    assert_eq!(q::<i64>(c, &["CF.COUNT", "auto", "a"]), 1);
    assert_eq!(q::<i64>(c, &["CF.DEL", "auto", "zz"]), 0);
    assert!(err(c, &["CF.DEL", "missing", "a"]).contains("Not found"));
    let info: Vec<Value> = q(c, &["CF.INFO", "auto"]);
    assert_eq!(info.len(), 16);
    assert_eq!(info[0], Value::SimpleString("Size".into()));
    assert_eq!(info[7], Value::Int(2), "items inserted");
    assert_eq!(info[9], Value::Int(1), "items deleted");
    assert_eq!(info[11], Value::Int(2), "bucket size");
    assert_eq!(info[13], Value::Int(1), "expansion");
    assert_eq!(info[15], Value::Int(20), "max iterations");

    assert_eq!(
        q::<String>(
            c,
            &[
                "CF.RESERVE",
                "r",
                "1000",
                "BUCKETSIZE",
                "4",
                "MAXITERATIONS",
                "50",
                "EXPANSION",
                "0"
            ]
        ),
        "OK"
    );
    assert!(err(c, &["CF.RESERVE", "r", "1000"]).contains("item exists"));
    let info: Vec<Value> = q(c, &["CF.INFO", "r"]);
    assert_eq!(info[11], Value::Int(4));
    assert_eq!(info[13], Value::Int(0));
    assert_eq!(info[15], Value::Int(50));

    // A non-expanding filter fills: -1 per item, "Filter is full" for CF.ADD.
    let _: () = q(
        c,
        &[
            "CF.RESERVE",
            "small",
            "4",
            "BUCKETSIZE",
            "1",
            "EXPANSION",
            "0",
        ],
    );
    let mut args = vec!["CF.INSERT", "small", "NOCREATE", "ITEMS"];
    let many = items("i", 64);
    args.extend(many.iter().map(String::as_str));
    let res: Vec<i64> = q(c, &args);
    assert!(res.contains(&-1) && res.contains(&1), "{res:?}");
    assert!(err(c, &["CF.ADD", "small", "another-one-z"]).contains("Filter is full"));

    assert_eq!(
        q::<Vec<i64>>(
            c,
            &["CF.INSERT", "ins", "CAPACITY", "100", "ITEMS", "a", "a"]
        ),
        vec![1, 1]
    );
    assert_eq!(
        q::<Vec<i64>>(c, &["CF.INSERTNX", "ins", "ITEMS", "a", "b"]),
        vec![0, 1]
    );
    assert_eq!(
        q::<Vec<i64>>(c, &["CF.INSERTNX", "insnx", "ITEMS", "a", "a"]),
        vec![1, 0]
    );
    assert!(err(c, &["CF.INSERT", "nope", "NOCREATE", "ITEMS", "a"]).contains("not found"));
    assert!(err(c, &["CF.INSERTNX", "nope", "NOCREATE", "ITEMS", "a"]).contains("not found"));
    // RedisBloom ignores CAPACITY with NOCREATE: the key must exist.
    assert!(err(
        c,
        &[
            "CF.INSERT",
            "nope",
            "NOCREATE",
            "CAPACITY",
            "9",
            "ITEMS",
            "a"
        ]
    )
    .contains("not found"));
    assert!(err(c, &["CF.INSERT", "nope", "ITEMS"]).contains("wrong number"));

    for (args, want) in [
        (
            &["CF.RESERVE", "e", "0"][..],
            "Capacity must be at least (BucketSize * 2)",
        ),
        (
            &["CF.RESERVE", "e", "-3"],
            "Capacity must be at least (BucketSize * 2)",
        ),
        (&["CF.RESERVE", "e", "x"], "Bad capacity"),
        (
            &["CF.RESERVE", "e", "3"],
            "Capacity must be at least (BucketSize * 2)",
        ),
        (&["CF.RESERVE", "e", "100000000"], "MAX-BYTES"),
        (&["CF.RESERVE", "e", "9223372036854775807"], "MAX-BYTES"),
        (
            &["CF.RESERVE", "e", "100", "BUCKETSIZE", "0"],
            "BUCKETSIZE: value must be an integer between 1 and 255, inclusive.",
        ),
        (
            &["CF.RESERVE", "e", "100", "BUCKETSIZE", "256"],
            "BUCKETSIZE: value must be an integer between 1 and 255, inclusive.",
        ),
        (
            &["CF.RESERVE", "e", "100", "BUCKETSIZE", "x"],
            "Couldn't parse BUCKETSIZE",
        ),
        (
            &["CF.RESERVE", "e", "100", "MAXITERATIONS", "0"],
            "MAXITERATIONS: value must be an integer between 1 and 65535, inclusive.",
        ),
        (
            &["CF.RESERVE", "e", "100", "MAXITERATIONS", "65536"],
            "MAXITERATIONS: value must be an integer between 1 and 65535, inclusive.",
        ),
        (
            &["CF.RESERVE", "e", "100", "EXPANSION", "-1"],
            "EXPANSION: value must be an integer between 0 and 32768, inclusive.",
        ),
        (&["CF.RESERVE", "e", "100", "EXPANSION"], "wrong number"),
        (
            &["CF.RESERVE", "e", "100", "FOO", "1"],
            "Unknown argument received",
        ),
        (&["CF.RESERVE", "e"], "wrong number"),
        (&["CF.ADD", "e"], "wrong number"),
        (&["CF.ADDNX", "e"], "wrong number"),
        (&["CF.EXISTS", "e"], "wrong number"),
        (&["CF.MEXISTS", "e"], "wrong number"),
        (&["CF.DEL", "e"], "wrong number"),
        (&["CF.COUNT", "e"], "wrong number"),
        (&["CF.INFO", "missing"], "not found"),
        (
            &["CF.INSERT", "e", "CAPACITY", "0", "ITEMS", "a"],
            "Capacity must be at least (BucketSize * 2)",
        ),
        (&["CF.SCANDUMP", "missing", "0"], "not found"),
        (&["CF.LOADCHUNK", "e", "1"], "wrong number"),
    ] {
        let e = err(c, args);
        assert!(e.contains(want), "{args:?}: {e}");
    }
    assert_eq!(q::<i64>(c, &["EXISTS", "e"]), 0);
    let _: () = q(c, &["SET", "str", "v"]);
    for args in [
        &["CF.ADD", "str", "a"][..],
        &["CF.ADDNX", "str", "a"],
        &["CF.EXISTS", "str", "a"],
        &["CF.COUNT", "str", "a"],
        &["CF.DEL", "str", "a"],
        &["CF.INFO", "str"],
        &["BF.ADD", "auto", "a"],
    ] {
        assert!(err(c, args).contains("WRONGTYPE"), "{args:?}");
    }
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn resp3_info_is_a_map() {
    if !have_redis() {
        return;
    }
    let d = tmp();
    let s = Server::start_in(d.path(), &[], &[]);
    let c = &mut s.con3();
    let _: bool = q(c, &["BF.ADD", "bf", "a"]);
    let _: bool = q(c, &["CF.ADD", "cf", "a"]);
    let Value::Map(m) = q::<Value>(c, &["BF.INFO", "bf"]) else {
        panic!("BF.INFO over RESP3 should be a map");
    };
    let names: Vec<_> = m.iter().map(|(k, _)| k.clone()).collect();
    assert_eq!(
        names,
        [
            "Capacity",
            "Size",
            "Number of filters",
            "Number of items inserted",
            "Expansion rate"
        ]
        .map(|n| Value::SimpleString(n.into()))
    );
    assert_eq!(m[0].1, Value::Int(100));
    assert_eq!(m[3].1, Value::Int(1));
    assert_eq!(m[4].1, Value::Int(2));
    let Value::Map(m) = q::<Value>(c, &["CF.INFO", "cf"]) else {
        panic!("CF.INFO over RESP3 should be a map");
    };
    assert_eq!(m.len(), 8);
    assert_eq!(
        m[3],
        (
            Value::SimpleString("Number of items inserted".into()),
            Value::Int(1)
        )
    );
    assert_eq!(
        q::<Value>(c, &["BF.INFO", "bf", "CAPACITY"]),
        Value::Map(vec![(
            Value::SimpleString("Capacity".into()),
            Value::Int(100)
        )])
    );
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn persistence_rdb_aof_debug_reload() {
    if !have_redis() {
        return;
    }
    let d = tmp();
    let mut s = Server::start_in(
        d.path(),
        &[],
        &["--appendonly", "yes", "--appendfsync", "always"],
    );
    let before = {
        let c = &mut s.con();
        fill(c);
        answers(c)
    };
    {
        let c = &mut s.con();
        let _: () = q(c, &["DEBUG", "RELOAD"]);
        assert_eq!(answers(c), before, "DEBUG RELOAD");
        let _: () = q(c, &["SAVE"]);
    }
    // AOF rewrite, then restart from the AOF (appendonly yes loads the AOF, not the RDB).
    {
        let c = &mut s.con();
        let _: Value = q(c, &["BGREWRITEAOF"]);
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let info: String = q(c, &["INFO", "persistence"]);
            if info.contains("aof_rewrite_in_progress:0")
                && !info.contains("aof_rewrite_scheduled:1")
            {
                break;
            }
            assert!(Instant::now() < deadline, "AOF rewrite did not finish");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    s.restart(&[]);
    assert_eq!(answers(&mut s.con()), before, "BGREWRITEAOF + restart");
    // RDB only: restart without AOF.
    {
        let c = &mut s.con();
        let _: () = q(c, &["SAVE"]);
    }
    s.stop();
    let mut s2 = Server::start_on(s.port, d.path(), &[], &[]);
    assert_eq!(answers(&mut s2.con()), before, "SAVE + restart");
    // COPY uses the copy callback; DUMP/RESTORE the RDB callbacks; digest and memory usage.
    let c = &mut s2.con();
    assert_eq!(q::<i64>(c, &["COPY", "bf", "bf2"]), 1);
    assert_eq!(q::<i64>(c, &["COPY", "cf", "cf2"]), 1);
    assert_eq!(q::<i64>(c, &["BF.EXISTS", "bf2", "x7"]), 1);
    assert_eq!(q::<i64>(c, &["CF.COUNT", "cf2", "x7"]), 1);
    let d1: Vec<String> = q(c, &["DEBUG", "DIGEST-VALUE", "bf", "bf2", "cf", "cf2"]);
    assert_eq!(d1[0], d1[1]);
    assert_eq!(d1[2], d1[3]);
    assert_ne!(d1[0], d1[2]);
    let _: i64 = q(c, &["BF.ADD", "bf2", "new-item"]);
    let d2: Vec<String> = q(c, &["DEBUG", "DIGEST-VALUE", "bf", "bf2"]);
    assert_ne!(d2[0], d2[1], "digest follows the contents");
    let dumped: Vec<u8> = q(c, &["DUMP", "cf"]);
    let _: () = redis::cmd("RESTORE")
        .arg("cf3")
        .arg(0)
        .arg(&dumped)
        .query(c)
        .unwrap();
    assert_eq!(q::<i64>(c, &["CF.COUNT", "cf3", "x7"]), 1);
    let mem: i64 = q(c, &["MEMORY", "USAGE", "bf"]);
    assert!(mem > 0);
    s2.stop();
}

fn reseal(mut payload: Vec<u8>) -> Vec<u8> {
    let n = payload.len() - 8;
    payload.truncate(n);
    let crc = crc64(&payload);
    payload.extend_from_slice(&crc.to_le_bytes());
    payload
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn malformed_restore_and_loadchunk_are_refused() {
    if !have_redis() {
        return;
    }
    assert_eq!(crc64(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
    let d = tmp();
    let s = Server::start_in(d.path(), &["MAX-BYTES", "1048576"], &[]);
    let c = &mut s.con();
    fill(c);
    for key in ["bf", "cf"] {
        let dumped: Vec<u8> = q(c, &["DUMP", key]);
        // The untouched payload restores.
        let _: () = redis::cmd("RESTORE")
            .arg(format!("{key}-ok"))
            .arg(0)
            .arg(&dumped)
            .query(c)
            .unwrap();
        let at = dumped
            .windows(8)
            .position(|w| w == b"BLOOMERY")
            .expect("file bytes inside DUMP");
        // Corruptions sealed with a valid CRC, so only the module's validation stands in the way.
        for (offset, value) in [
            (8usize, 9u8),
            (10, 0xee),
            (12, 0xff),
            (19, 0x7f),
            (80, 0x5a),
            (200, 0x01),
        ] {
            let mut bad = dumped.clone();
            bad[at + offset] ^= value;
            let bad = reseal(bad);
            let r = redis::cmd("RESTORE")
                .arg(format!("{key}-bad"))
                .arg(0)
                .arg(&bad)
                .query::<Value>(c);
            assert!(r.is_err(), "{key} corrupted at {offset} was accepted");
            let alive = redis::cmd("PING").query::<String>(c).is_ok();
            assert!(alive, "{key} at {offset}: server died; log:\n{}", s.log());
        }
        assert_eq!(q::<i64>(c, &["EXISTS", &format!("{key}-bad")]), 0);
    }

    // LOADCHUNK: malformed header, out of order, bad final bytes, oversize.
    let good = ScalableBloomFilter::try_new(1000, 0.01).unwrap().to_bytes();
    let h = u32::from_le_bytes(good[12..16].try_into().unwrap()) as usize;
    let lc = |c: &mut redis::Connection, key: &str, it: usize, data: &[u8]| {
        redis::cmd("BF.LOADCHUNK")
            .arg(key)
            .arg(it)
            .arg(data)
            .query::<Value>(c)
    };
    let e = lc(c, "l", 8, b"garbage!").unwrap_err().to_string();
    assert!(e.contains("invalid chunk"), "{e}");
    let e = lc(c, "l", h, &vec![0u8; h]).unwrap_err().to_string();
    assert!(e.contains("bad magic"), "{e}");
    let e = lc(c, "l", h - 1, &good[..h - 1]).unwrap_err().to_string();
    assert!(e.contains("header"), "{e}");
    let cuckoo = CuckooFilter::try_new(100).unwrap().to_bytes();
    let ch = u32::from_le_bytes(cuckoo[12..16].try_into().unwrap()) as usize;
    let e = lc(c, "l", ch, &cuckoo[..ch]).unwrap_err().to_string();
    assert!(e.contains("not a"), "{e}");
    let e = lc(c, "never-started", h + 64, &good[h..h + 64])
        .unwrap_err()
        .to_string();
    assert!(e.contains("not found"), "{e}");
    lc(c, "l", h, &good[..h]).unwrap();
    let e = lc(c, "l", h + 128, &good[h + 64..h + 128])
        .unwrap_err()
        .to_string();
    assert!(e.contains("out of order"), "{e}");
    assert!(err(c, &["BF.ADD", "l", "a"]).contains("being loaded"));
    let mut tail = good[h..].to_vec();
    tail[10] ^= 1;
    let e = lc(c, "l", good.len(), &tail).unwrap_err().to_string();
    assert!(e.contains("checksum"), "{e}");
    assert_eq!(
        q::<i64>(c, &["EXISTS", "l"]),
        0,
        "a failed load leaves nothing"
    );
    let e = lc(c, "bf", h, &good[..h]).unwrap_err().to_string();
    assert!(e.contains("item exists"), "{e}");
    // Over MAX-BYTES (1 MiB): refused at the header, before any allocation.
    let big = ScalableBloomFilter::try_new(2_000_000, 0.01)
        .unwrap()
        .to_bytes();
    let bh = u32::from_le_bytes(big[12..16].try_into().unwrap()) as usize;
    let e = lc(c, "big", bh, &big[..bh]).unwrap_err().to_string();
    assert!(e.contains("MAX-BYTES"), "{e}");
    assert_eq!(q::<String>(c, &["PING"]), "PONG");
}

fn scan_all(c: &mut redis::Connection, cmd: &str, key: &str) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut it = 0i64;
    loop {
        let (next, data): (i64, Vec<u8>) = redis::cmd(cmd).arg(key).arg(it).query(c).unwrap();
        if next == 0 {
            assert!(data.is_empty());
            return out;
        }
        out.push((next, data));
        it = next;
    }
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn scandump_loadchunk_and_bloomery_dump_round_trip() {
    if !have_redis() {
        return;
    }
    let d = tmp();
    let s = Server::start_in(d.path(), &["MAX-BYTES", "33554432"], &[]);
    let c = &mut s.con();
    fill(c);
    // Big enough for several chunks (4 MiB each).
    // 4M buckets of 2 one-byte slots: 8 MiB, cheap to size even in a debug build.
    let _: () = q(c, &["CF.RESERVE", "large", "6000000"]);
    for it in items("x", 200) {
        let _: i64 = q(c, &["CF.ADD", "large", &it]);
    }
    for (key, prefix) in [("bf", "BF"), ("cf", "CF"), ("large", "CF")] {
        let chunks = scan_all(c, &format!("{prefix}.SCANDUMP"), key);
        assert!(chunks.len() >= 2);
        let copy = format!("{key}-copy");
        for (it, data) in &chunks {
            let _: () = redis::cmd(&format!("{prefix}.LOADCHUNK"))
                .arg(&copy)
                .arg(*it)
                .arg(data)
                .query(c)
                .unwrap();
        }
        let joined: Vec<u8> = chunks.iter().flat_map(|(_, d)| d.clone()).collect();
        let server_bytes: Vec<u8> = q(c, &["BLOOMERY.DUMP", key]);
        assert_eq!(joined, server_bytes);
        let copy_bytes: Vec<u8> = q(c, &["BLOOMERY.DUMP", &copy]);
        assert_eq!(copy_bytes, server_bytes, "{key}: the copy is identical");
        let dig: Vec<String> = q(c, &["DEBUG", "DIGEST-VALUE", key, &copy]);
        assert_eq!(dig[0], dig[1]);
    }
    assert!(scan_all(c, "CF.SCANDUMP", "large").len() >= 3);

    // The bytes load in the library (as the CLI does) and answer like the server.
    let bytes: Vec<u8> = q(c, &["BLOOMERY.DUMP", "bf"]);
    let f = ScalableBloomFilter::from_bytes(&bytes).unwrap();
    let cbytes: Vec<u8> = q(c, &["BLOOMERY.DUMP", "cf"]);
    let cf = CuckooFilter::from_bytes(&cbytes).unwrap();
    for p in items("x", 300) {
        assert_eq!(
            f.contains(p.as_str()),
            q::<i64>(c, &["BF.EXISTS", "bf", &p]) == 1,
            "{p}"
        );
        assert_eq!(
            cf.count(p.as_str()) as i64,
            q::<i64>(c, &["CF.COUNT", "cf", &p]),
            "{p}"
        );
    }
    assert_eq!(f.len(), q::<u64>(c, &["BF.CARD", "bf"]));
    assert!(err(c, &["BLOOMERY.DUMP", "missing"]).contains("not found"));
    let _: () = q(c, &["SET", "str", "v"]);
    assert!(err(c, &["BLOOMERY.DUMP", "str"]).contains("WRONGTYPE"));
    // A filter the CLI built loads into the server.
    let mut local = ScalableBloomFilter::try_new(500, 0.001).unwrap();
    local.insert("from-the-cli");
    let lb = local.to_bytes();
    let h = u32::from_le_bytes(lb[12..16].try_into().unwrap()) as usize;
    let _: () = redis::cmd("BF.LOADCHUNK")
        .arg("cli")
        .arg(h)
        .arg(&lb[..h])
        .query(c)
        .unwrap();
    let _: () = redis::cmd("BF.LOADCHUNK")
        .arg("cli")
        .arg(lb.len())
        .arg(&lb[h..])
        .query(c)
        .unwrap();
    assert_eq!(q::<i64>(c, &["BF.EXISTS", "cli", "from-the-cli"]), 1);
    // A load in progress survives DEBUG RELOAD (saved and restored in the "loading" state).
    let _: () = redis::cmd("BF.LOADCHUNK")
        .arg("half")
        .arg(h)
        .arg(&lb[..h])
        .query(c)
        .unwrap();
    let _: () = q(c, &["DEBUG", "RELOAD"]);
    assert!(err(c, &["BF.EXISTS", "half", "x"]).contains("being loaded"));
    let _: () = redis::cmd("BF.LOADCHUNK")
        .arg("half")
        .arg(lb.len())
        .arg(&lb[h..])
        .query(c)
        .unwrap();
    assert_eq!(q::<i64>(c, &["BF.EXISTS", "half", "from-the-cli"]), 1);
    assert_eq!(
        q::<Vec<i64>>(c, &["BF.INFO", "cli", "CAPACITY"]),
        vec![local.capacity() as i64]
    );
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn max_bytes_module_argument() {
    if !have_redis() {
        return;
    }
    let d = tmp();
    let s = Server::start_in(d.path(), &["MAX-BYTES", "65536"], &[]);
    let c = &mut s.con();
    assert!(err(c, &["BF.RESERVE", "a", "0.01", "100000"]).contains("MAX-BYTES"));
    assert!(err(c, &["CF.RESERVE", "a", "200000"]).contains("MAX-BYTES"));
    assert!(err(c, &["BF.INSERT", "a", "CAPACITY", "100000", "ITEMS", "x"]).contains("MAX-BYTES"));
    assert_eq!(q::<String>(c, &["BF.RESERVE", "a", "0.01", "1000"]), "OK");
    // Growth stops at the limit with an error reply; the items added so far stay.
    let mut refused = false;
    for it in items("g", 200_000).chunks(1000) {
        let mut cmd = redis::cmd("BF.MADD");
        cmd.arg("a").arg(it);
        // The client turns an error element of the array into an error.
        if let Err(e) = cmd.query::<Value>(c) {
            assert!(e.to_string().contains("cannot grow"), "{e}");
            refused = true;
            break;
        }
    }
    assert!(refused, "growth past MAX-BYTES must be refused");
    assert_eq!(q::<i64>(c, &["BF.EXISTS", "a", "g0"]), 1);
    assert_eq!(q::<String>(c, &["PING"]), "PONG");

    // Bad module arguments refuse to load.
    let d2 = tmp();
    let out = std::process::Command::new(common::server_bin())
        .args([
            "--port",
            &common::free_port().to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
        ])
        .arg("--loadmodule")
        .arg(common::module_path())
        .args(["MAX-BYTES", "zero"])
        .current_dir(d2.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn replica_answers_like_its_primary() {
    if !have_redis() {
        return;
    }
    let (d1, d2) = (tmp(), tmp());
    let p = Server::start_in(d1.path(), &[], &[]);
    let r = Server::start_in(d2.path(), &[], &[]);
    let pc = &mut p.con();
    let rc = &mut r.con();
    let _: () = q(rc, &["REPLICAOF", "127.0.0.1", &p.port.to_string()]);
    // Some state before the sync (full sync: RDB) and some after (command stream).
    fill(pc);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let info: String = q(rc, &["INFO", "replication"]);
        if info.contains("master_link_status:up") {
            break;
        }
        assert!(Instant::now() < deadline, "replica did not sync");
        std::thread::sleep(Duration::from_millis(50));
    }
    for it in items("late", 50) {
        let _: i64 = q(pc, &["BF.ADD", "bf", &it]);
        let _: i64 = q(pc, &["CF.ADDNX", "cf", &it]);
    }
    let _: Vec<i64> = q(
        pc,
        &["BF.INSERT", "bf-auto", "CAPACITY", "10", "ITEMS", "a", "b"],
    );
    let chunks = scan_all(pc, "CF.SCANDUMP", "cf");
    for (it, data) in &chunks {
        let _: () = redis::cmd("CF.LOADCHUNK")
            .arg("cf-loaded")
            .arg(*it)
            .arg(data)
            .query(pc)
            .unwrap();
    }
    let acked: i64 = q(pc, &["WAIT", "1", "10000"]);
    assert_eq!(acked, 1);
    assert_eq!(answers(pc), answers(rc));
    for key in ["bf", "cf", "bf-auto", "cf-loaded"] {
        let a: Vec<u8> = q(pc, &["BLOOMERY.DUMP", key]);
        let b: Vec<u8> = q(rc, &["BLOOMERY.DUMP", key]);
        assert_eq!(a, b, "{key}");
    }
    let e = err(rc, &["BF.ADD", "bf", "x"]);
    assert!(e.contains("read only") || e.contains("READONLY"), "{e}");
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn three_master_cluster_serves_keys_on_every_node() {
    if !have_redis() {
        return;
    }
    let dirs: Vec<_> = (0..3).map(|_| tmp()).collect();
    let nodes: Vec<Server> = dirs
        .iter()
        .map(|d| {
            Server::start_in(
                d.path(),
                &[],
                &[
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                    "--cluster-node-timeout",
                    "5000",
                ],
            )
        })
        .collect();
    let addrs: Vec<String> = nodes
        .iter()
        .map(|n| format!("127.0.0.1:{}", n.port))
        .collect();
    let out = std::process::Command::new("redis-cli")
        .args(["--cluster", "create"])
        .args(&addrs)
        .args(["--cluster-replicas", "0", "--cluster-yes"])
        .output()
        .expect("redis-cli --cluster create");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    for n in &nodes {
        loop {
            let info: String = q(&mut n.con(), &["CLUSTER", "INFO"]);
            if info.contains("cluster_state:ok") {
                break;
            }
            assert!(Instant::now() < deadline, "cluster did not converge");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    let urls: Vec<String> = nodes.iter().map(|n| n.url()).collect();
    let client = redis::cluster::ClusterClient::new(urls).unwrap();
    let mut cc = client.get_connection().unwrap();
    let keys = items("filter-", 60);
    for k in &keys {
        let _: i64 = redis::cmd("BF.ADD")
            .arg(k)
            .arg("item")
            .query(&mut cc)
            .unwrap();
        let _: i64 = redis::cmd("CF.ADD")
            .arg(format!("cf-{k}"))
            .arg("item")
            .query(&mut cc)
            .unwrap();
    }
    for k in &keys {
        let a: i64 = redis::cmd("BF.EXISTS")
            .arg(k)
            .arg("item")
            .query(&mut cc)
            .unwrap();
        let b: i64 = redis::cmd("BF.EXISTS")
            .arg(k)
            .arg("other")
            .query(&mut cc)
            .unwrap();
        let n: i64 = redis::cmd("CF.COUNT")
            .arg(format!("cf-{k}"))
            .arg("item")
            .query(&mut cc)
            .unwrap();
        assert_eq!((a, b, n), (1, 0, 1), "{k}");
    }
    for n in &nodes {
        let size: i64 = q(&mut n.con(), &["DBSIZE"]);
        assert!(size > 0, "node {} holds no keys", n.port);
    }
    // Keys are declared (first = last = 1): a node redirects keys it does not own.
    let mut moved = 0;
    for k in &keys {
        let r = redis::cmd("BF.EXISTS")
            .arg(k)
            .arg("item")
            .query::<i64>(&mut nodes[0].con());
        if let Err(e) = r {
            assert!(
                e.to_string().contains("MOVED") || e.kind() == redis::ErrorKind::Moved,
                "{e}"
            );
            moved += 1;
        }
    }
    assert!(moved > 0);
}
