//! Integration tests for phase 2: `CMS.*` (RedisBloom-compatible), and bloomery's own `CBF.*`
//! and `IBF.*`, against real `redis-server`s on loopback ports (see `redis_module.rs`).

mod common;

use std::time::{Duration, Instant};

use bloomery::{Count, CountMinSketch, CountingBloomFilter, IterativeBloomFilter, Persist};
use common::{err, have_redis, q, Server};
use redis::Value;

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn items(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

/// The error as the server sent it: `CODE detail`.
fn wire_err(c: &mut redis::Connection, args: &[&str]) -> String {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    match cmd.query::<Value>(c) {
        Ok(v) => panic!("{args:?} should fail, got {v:?}"),
        Err(e) => format!("{} {}", e.code().unwrap_or(""), e.detail().unwrap_or("")),
    }
}

fn assert_errors(c: &mut redis::Connection, cases: &[(&[&str], &str)]) {
    for (args, want) in cases {
        let e = wire_err(c, args);
        assert!(e.contains(want), "{args:?}: got {e:?}, want {want:?}");
    }
}

#[test]
fn cms_commands_and_errors() {
    if !have_redis() {
        return;
    }
    let d = tmp();
    let s = Server::start_in(d.path(), &[], &[]);
    let c = &mut s.con();
    let _: () = q(c, &["CMS.INITBYDIM", "a", "1000", "5"]);
    let _: () = q(c, &["CMS.INITBYPROB", "p", "0.001", "0.01"]);
    assert_eq!(
        q::<Vec<i64>>(
            c,
            &["CMS.INCRBY", "a", "foo", "10", "bar", "42", "foo", "1"]
        ),
        [10, 42, 11]
    );
    assert_eq!(
        q::<Vec<i64>>(c, &["CMS.QUERY", "a", "foo", "bar", "nope"]),
        [11, 42, 0]
    );
    assert_eq!(
        q::<Value>(c, &["CMS.INFO", "a"]),
        Value::Array(vec![
            Value::SimpleString("width".into()),
            Value::Int(1000),
            Value::SimpleString("depth".into()),
            Value::Int(5),
            Value::SimpleString("count".into()),
            Value::Int(53),
        ])
    );
    // (ε, δ) sizing: width ⌈e/ε⌉, depth ⌈ln 1/δ⌉.
    let info: Vec<Value> = q(c, &["CMS.INFO", "p"]);
    assert_eq!(info[1], Value::Int(2719));
    assert_eq!(info[3], Value::Int(5));
    // RESP3: INFO is a map.
    let c3 = &mut s.con3();
    let Value::Map(m) = q::<Value>(c3, &["CMS.INFO", "a"]) else {
        panic!("CMS.INFO over RESP3 should be a map");
    };
    assert_eq!(m[2], (Value::SimpleString("count".into()), Value::Int(53)));

    // MERGE: the destination becomes the (weighted) sum of the sources.
    let _: () = q(c, &["CMS.INITBYDIM", "b", "1000", "5"]);
    let _: () = q(c, &["CMS.INITBYDIM", "dst", "1000", "5"]);
    let _: Vec<i64> = q(c, &["CMS.INCRBY", "b", "foo", "5", "baz", "7"]);
    let _: Vec<i64> = q(c, &["CMS.INCRBY", "dst", "old", "100"]);
    let _: () = q(c, &["CMS.MERGE", "dst", "2", "a", "b"]);
    assert_eq!(
        q::<Vec<i64>>(c, &["CMS.QUERY", "dst", "foo", "bar", "baz", "old"]),
        [16, 42, 7, 0]
    );
    let _: () = q(
        c,
        &["CMS.MERGE", "dst", "2", "a", "b", "WEIGHTS", "3", "10"],
    );
    assert_eq!(
        q::<Vec<i64>>(c, &["CMS.QUERY", "dst", "foo", "bar", "baz"]),
        [83, 126, 70]
    );
    let info: Vec<Value> = q(c, &["CMS.INFO", "dst"]);
    assert_eq!(info[5], Value::Int(3 * 53 + 10 * 12));
    // The destination may be one of the sources; weight 0 drops a source.
    let _: () = q(
        c,
        &["CMS.MERGE", "dst", "2", "dst", "b", "weights", "1", "0"],
    );
    assert_eq!(q::<Vec<i64>>(c, &["CMS.QUERY", "dst", "foo"]), [83]);
    // A huge weight on an empty sketch is fine (nothing to scale).
    let _: () = q(c, &["CMS.INITBYDIM", "empty", "1000", "5"]);
    let w = i64::MAX.to_string();
    let _: () = q(
        c,
        &["CMS.MERGE", "empty", "2", "empty", "a", "WEIGHTS", &w, "0"],
    );
    assert_eq!(q::<Vec<i64>>(c, &["CMS.QUERY", "empty", "foo"]), [0]);
    // Every key is declared: destination and all sources, not WEIGHTS' arguments.
    assert_eq!(
        q::<Vec<String>>(
            c,
            &[
                "COMMAND",
                "GETKEYS",
                "CMS.MERGE",
                "d",
                "3",
                "s1",
                "s2",
                "s3",
                "WEIGHTS",
                "1",
                "2",
                "3"
            ]
        ),
        ["d", "s1", "s2", "s3"]
    );

    // Overflow: counts stay within i64 (RESP integers); refused whole, nothing changes.
    let max = i64::MAX.to_string();
    let _: () = q(c, &["CMS.INITBYDIM", "big", "100", "3"]);
    let _: Vec<i64> = q(c, &["CMS.INCRBY", "big", "x", &max]);
    assert_eq!(q::<Vec<i64>>(c, &["CMS.QUERY", "big", "x"]), [i64::MAX]);
    assert_errors(
        c,
        &[
            (&["CMS.INCRBY", "big", "y", "1"], "CMS: INCRBY overflow"),
            (
                &["CMS.INCRBY", "a", "y", &max, "z", &max],
                "CMS: INCRBY overflow",
            ),
        ],
    );
    assert_eq!(q::<Vec<i64>>(c, &["CMS.QUERY", "big", "y"]), [0]);
    let _: () = q(c, &["CMS.INITBYDIM", "big2", "100", "3"]);
    let half = (i64::MAX / 2 + 1).to_string();
    let _: Vec<i64> = q(c, &["CMS.INCRBY", "big2", "x", &half]);
    assert_errors(
        c,
        &[
            (
                &["CMS.MERGE", "big2", "1", "big2", "WEIGHTS", "2"],
                "CMS: MERGE overflow",
            ),
            (
                &["CMS.MERGE", "big2", "2", "big", "big2"],
                "CMS: MERGE overflow",
            ),
        ],
    );
    assert_eq!(
        q::<Vec<i64>>(c, &["CMS.QUERY", "big2", "x"]),
        [i64::MAX / 2 + 1]
    );
    let _: () = q(c, &["CMS.MERGE", "big2", "1", "big2", "WEIGHTS", "1"]);

    // Argument errors.
    let _: () = q(c, &["SET", "str", "v"]);
    let _: i64 = q(c, &["BF.ADD", "bf", "v"]);
    let _: () = q(c, &["CMS.INITBYDIM", "small", "10", "5"]);
    assert_errors(
        c,
        &[
            (
                &["CMS.INITBYDIM", "a", "10", "5"],
                "CMS: key already exists",
            ),
            (&["CMS.INITBYDIM", "n", "0", "5"], "CMS: invalid width"),
            (&["CMS.INITBYDIM", "n", "-3", "5"], "CMS: invalid width"),
            (&["CMS.INITBYDIM", "n", "wide", "5"], "CMS: invalid width"),
            (&["CMS.INITBYDIM", "n", "10", "0"], "CMS: invalid depth"),
            (&["CMS.INITBYDIM", "n", "10", "65"], "CMS: invalid depth"),
            (&["CMS.INITBYDIM", "n", "10", "nan"], "CMS: invalid depth"),
            (&["CMS.INITBYDIM", "n", &max, "64"], "MAX-BYTES"),
            (&["CMS.INITBYDIM", "n", "1000000000", "5"], "MAX-BYTES"),
            (
                &["CMS.INITBYPROB", "n", "0", "0.1"],
                "CMS: invalid overestimation value",
            ),
            (
                &["CMS.INITBYPROB", "n", "1", "0.1"],
                "CMS: invalid overestimation value",
            ),
            (
                &["CMS.INITBYPROB", "n", "nan", "0.1"],
                "CMS: invalid overestimation value",
            ),
            (
                &["CMS.INITBYPROB", "n", "0.1", "-0.5"],
                "CMS: invalid prob value",
            ),
            (
                &["CMS.INITBYPROB", "n", "0.1", "NaN"],
                "CMS: invalid prob value",
            ),
            (&["CMS.INITBYPROB", "n", "1e-12", "0.1"], "ERR"),
            (&["CMS.INITBYDIM", "n", "10"], "wrong number of arguments"),
            (&["CMS.INITBYPROB", "n", "0.1"], "wrong number of arguments"),
            (&["CMS.INCRBY", "a", "foo"], "wrong number of arguments"),
            (
                &["CMS.INCRBY", "a", "foo", "1", "bar"],
                "wrong number of arguments",
            ),
            (
                &["CMS.INCRBY", "a", "foo", "-1"],
                "CMS: Cannot parse number",
            ),
            (
                &["CMS.INCRBY", "a", "foo", "1.5"],
                "CMS: Cannot parse number",
            ),
            (
                &["CMS.INCRBY", "a", "foo", "1", "bar", "x"],
                "CMS: Cannot parse number",
            ),
            (
                &["CMS.INCRBY", "missing", "foo", "1"],
                "CMS: key does not exist",
            ),
            (&["CMS.QUERY", "a"], "wrong number of arguments"),
            (&["CMS.QUERY", "missing", "foo"], "CMS: key does not exist"),
            (&["CMS.INFO", "missing"], "CMS: key does not exist"),
            (&["CMS.INFO"], "wrong number of arguments"),
            (&["CMS.INFO", "a", "b"], "wrong number of arguments"),
            (&["CMS.MERGE", "dst", "1"], "wrong number of arguments"),
            (&["CMS.MERGE", "dst", "0", "a"], "CMS: wrong number of keys"),
            (&["CMS.MERGE", "dst", "x", "a"], "CMS: wrong number of keys"),
            (
                &["CMS.MERGE", "dst", "3", "a", "b"],
                "CMS: wrong number of keys",
            ),
            (
                &["CMS.MERGE", "dst", "1", "a", "b"],
                "CMS: wrong number of keys/weights",
            ),
            (
                &["CMS.MERGE", "dst", "2", "a", "b", "WEIGHTS", "1"],
                "CMS: wrong number of keys/weights",
            ),
            (
                &["CMS.MERGE", "dst", "1", "a", "WEIGHTS", "1", "2"],
                "CMS: wrong number of keys/weights",
            ),
            (
                &["CMS.MERGE", "dst", "1", "a", "WEIGHTS", "-1"],
                "CMS: invalid weight value",
            ),
            (
                &["CMS.MERGE", "dst", "1", "a", "WEIGHTS", "x"],
                "CMS: invalid weight value",
            ),
            (
                &["CMS.MERGE", "missing", "1", "a"],
                "CMS: key does not exist",
            ),
            (
                &["CMS.MERGE", "dst", "1", "missing"],
                "CMS: key does not exist",
            ),
            (
                &["CMS.MERGE", "dst", "1", "small"],
                "CMS: width/depth is not equal",
            ),
            (
                &["CMS.MERGE", "small", "1", "a"],
                "CMS: width/depth is not equal",
            ),
            (&["CMS.MERGE", "dst", "1", "str"], "WRONGTYPE"),
            (&["CMS.MERGE", "bf", "1", "a"], "WRONGTYPE"),
            (&["CMS.INCRBY", "str", "foo", "1"], "WRONGTYPE"),
            (&["CMS.QUERY", "bf", "foo"], "WRONGTYPE"),
            (&["CMS.INFO", "bf"], "WRONGTYPE"),
            (
                &["CMS.INITBYDIM", "str", "10", "5"],
                "CMS: key already exists",
            ),
            (&["BF.ADD", "a", "x"], "WRONGTYPE"),
            (&["GET", "a"], "WRONGTYPE"),
        ],
    );
    assert_eq!(q::<Vec<i64>>(c, &["CMS.QUERY", "dst", "foo"]), [83]);
    assert!(s.log().lines().all(|l| !l.contains("crashed")));
}

/// A single-node cluster owning every slot answers CROSSSLOT when CMS.MERGE's keys span slots,
/// which it can only do if every key is declared.
#[test]
fn cms_merge_declares_every_key_in_a_cluster() {
    if !have_redis() {
        return;
    }
    let d = tmp();
    let s = Server::start_in(
        d.path(),
        &[],
        &[
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
        ],
    );
    let c = &mut s.con();
    let _: () = q(c, &["CLUSTER", "ADDSLOTSRANGE", "0", "16383"]);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !q::<String>(c, &["CLUSTER", "INFO"]).contains("cluster_state:ok") {
        assert!(Instant::now() < deadline, "cluster did not converge");
        std::thread::sleep(Duration::from_millis(50));
    }
    for k in ["{t}dst", "{t}a", "{t}b", "{u}b"] {
        let _: () = q(c, &["CMS.INITBYDIM", k, "100", "3"]);
    }
    let _: Vec<i64> = q(c, &["CMS.INCRBY", "{t}a", "x", "2"]);
    // A source in another slot than the destination, or than the other sources.
    assert_errors(
        c,
        &[
            (&["CMS.MERGE", "{t}dst", "1", "{u}b"], "CROSSSLOT"),
            (&["CMS.MERGE", "{t}dst", "2", "{t}a", "{u}b"], "CROSSSLOT"),
            (
                &[
                    "CMS.MERGE",
                    "{t}dst",
                    "2",
                    "{t}a",
                    "{u}b",
                    "WEIGHTS",
                    "1",
                    "1",
                ],
                "CROSSSLOT",
            ),
        ],
    );
    let _: () = q(
        c,
        &[
            "CMS.MERGE",
            "{t}dst",
            "2",
            "{t}a",
            "{t}b",
            "WEIGHTS",
            "4",
            "1",
        ],
    );
    assert_eq!(q::<Vec<i64>>(c, &["CMS.QUERY", "{t}dst", "x"]), [8]);
}

#[test]
fn cbf_and_ibf_commands_and_errors() {
    if !have_redis() {
        return;
    }
    let d = tmp();
    let s = Server::start_in(d.path(), &[], &[]);
    let c = &mut s.con();
    // CBF.
    let _: () = q(c, &["CBF.RESERVE", "c", "1000", "0.01"]);
    let _: () = q(
        c,
        &["CBF.RESERVE", "c8", "1000", "0.01", "counterbits", "8"],
    );
    assert_eq!(q::<i64>(c, &["CBF.ADD", "c", "a"]), 1);
    assert_eq!(q::<i64>(c, &["CBF.ADD", "c", "a"]), 0);
    assert_eq!(q::<i64>(c, &["CBF.ADD", "c", "b"]), 1);
    assert_eq!(q::<i64>(c, &["CBF.EXISTS", "c", "a"]), 1);
    assert_eq!(q::<i64>(c, &["CBF.EXISTS", "c", "zz"]), 0);
    assert_eq!(q::<i64>(c, &["CBF.COUNT", "c", "a"]), 2);
    assert_eq!(q::<i64>(c, &["CBF.DEL", "c", "a"]), 1);
    assert_eq!(q::<i64>(c, &["CBF.COUNT", "c", "a"]), 1);
    assert_eq!(q::<i64>(c, &["CBF.DEL", "c", "a"]), 1);
    assert_eq!(q::<i64>(c, &["CBF.EXISTS", "c", "a"]), 0);
    assert_eq!(q::<i64>(c, &["CBF.EXISTS", "c", "b"]), 1);
    assert_eq!(q::<i64>(c, &["CBF.EXISTS", "nokey", "b"]), 0);
    assert_eq!(q::<i64>(c, &["CBF.COUNT", "nokey", "b"]), 0);
    // ADD auto-creates with BF.ADD's defaults.
    assert_eq!(q::<i64>(c, &["CBF.ADD", "auto", "a"]), 1);
    let info: Vec<Value> = q(c, &["CBF.INFO", "auto"]);
    assert_eq!(info[0], Value::SimpleString("Capacity".into()));
    assert_eq!(info[1], Value::Int(100));
    assert_eq!(info[7], Value::Int(4), "counter bits");
    let info: Vec<Value> = q(c, &["CBF.INFO", "c8"]);
    assert_eq!(info[7], Value::Int(8));
    let info: Vec<Value> = q(c, &["CBF.INFO", "c"]);
    assert_eq!(info[11], Value::Int(1), "items inserted");
    // IBF.
    let _: () = q(c, &["IBF.RESERVE", "i", "1000", "0.01"]);
    assert_eq!(q::<i64>(c, &["IBF.ADD", "i", "a"]), 1);
    assert_eq!(q::<i64>(c, &["IBF.ADD", "i", "a"]), 0);
    assert_eq!(q::<i64>(c, &["IBF.ADD", "i", "a"]), 0);
    assert_eq!(q::<i64>(c, &["IBF.ADD", "i", "b"]), 1);
    assert_eq!(q::<i64>(c, &["IBF.COUNT", "i", "a"]), 3);
    assert_eq!(q::<i64>(c, &["IBF.COUNT", "i", "b"]), 1);
    assert_eq!(q::<i64>(c, &["IBF.COUNT", "i", "zz"]), 0);
    assert_eq!(q::<i64>(c, &["IBF.EXISTS", "i", "b"]), 1);
    assert_eq!(q::<i64>(c, &["IBF.EXISTS", "i", "zz"]), 0);
    assert_eq!(q::<i64>(c, &["IBF.EXISTS", "nokey", "zz"]), 0);
    assert_eq!(q::<i64>(c, &["IBF.ADD", "iauto", "a"]), 1);
    let c3 = &mut s.con3();
    let Value::Map(m) = q::<Value>(c3, &["IBF.INFO", "i"]) else {
        panic!("IBF.INFO over RESP3 should be a map");
    };
    assert_eq!(
        m[0],
        (Value::SimpleString("Capacity".into()), Value::Int(1000))
    );
    assert_eq!(
        m[4],
        (
            Value::SimpleString("Number of items inserted".into()),
            Value::Int(4)
        )
    );
    assert_eq!(
        m[5],
        (Value::SimpleString("Distinct items".into()), Value::Int(2))
    );
    let Value::Map(m) = q::<Value>(c3, &["CBF.INFO", "c"]) else {
        panic!("CBF.INFO over RESP3 should be a map");
    };
    assert_eq!(m.len(), 7);
    // Errors.
    let _: () = q(c, &["SET", "str", "v"]);
    let _: () = q(c, &["CMS.INITBYDIM", "cms", "10", "2"]);
    let huge = "1000000000000000";
    assert_errors(
        c,
        &[
            (&["CBF.DEL", "c", "never-added"], "ERR item not present"),
            (&["CBF.DEL", "nokey", "a"], "ERR not found"),
            (&["CBF.INFO", "nokey"], "ERR not found"),
            (&["IBF.INFO", "nokey"], "ERR not found"),
            (&["CBF.RESERVE", "c", "100", "0.01"], "ERR item exists"),
            (&["IBF.RESERVE", "i", "100", "0.01"], "ERR item exists"),
            (&["CBF.RESERVE", "str", "100", "0.01"], "ERR item exists"),
            (
                &["CBF.RESERVE", "n", "0", "0.01"],
                "ERR (capacity should be larger than 0)",
            ),
            (
                &["CBF.RESERVE", "n", "-5", "0.01"],
                "ERR (capacity should be larger than 0)",
            ),
            (
                &["CBF.RESERVE", "n", "nan", "0.01"],
                "ERR (capacity should be larger than 0)",
            ),
            (
                &["CBF.RESERVE", "n", "100", "0"],
                "ERR (0 < error rate range < 1)",
            ),
            (
                &["CBF.RESERVE", "n", "100", "1.5"],
                "ERR (0 < error rate range < 1)",
            ),
            (
                &["CBF.RESERVE", "n", "100", "nan"],
                "ERR (0 < error rate range < 1)",
            ),
            (&["CBF.RESERVE", "n", "100", "x"], "ERR bad error rate"),
            (&["CBF.RESERVE", "n", huge, "0.01"], "MAX-BYTES"),
            (
                &["CBF.RESERVE", "n", "100", "0.01", "COUNTERBITS", "0"],
                "ERR bad counter bits",
            ),
            (
                &["CBF.RESERVE", "n", "100", "0.01", "COUNTERBITS", "33"],
                "ERR bad counter bits",
            ),
            (
                &["CBF.RESERVE", "n", "100", "0.01", "WIDTH", "4"],
                "ERR unknown argument",
            ),
            (
                &["CBF.RESERVE", "n", "100", "0.01", "COUNTERBITS"],
                "wrong number of arguments",
            ),
            (&["CBF.RESERVE", "n", "100"], "wrong number of arguments"),
            (
                &["IBF.RESERVE", "n", "0", "0.01"],
                "ERR (capacity should be larger than 0)",
            ),
            (
                &["IBF.RESERVE", "n", "100", "-0.1"],
                "ERR (0 < error rate range < 1)",
            ),
            (
                &["IBF.RESERVE", "n", "100", "NaN"],
                "ERR (0 < error rate range < 1)",
            ),
            (&["IBF.RESERVE", "n", huge, "0.01"], "MAX-BYTES"),
            (
                &["IBF.RESERVE", "n", "100", "0.01", "x"],
                "wrong number of arguments",
            ),
            (&["CBF.ADD", "c"], "wrong number of arguments"),
            (&["CBF.ADD", "c", "a", "b"], "wrong number of arguments"),
            (&["CBF.DEL", "c"], "wrong number of arguments"),
            (&["CBF.EXISTS", "c"], "wrong number of arguments"),
            (&["CBF.COUNT", "c"], "wrong number of arguments"),
            (&["CBF.INFO"], "wrong number of arguments"),
            (&["IBF.ADD", "i"], "wrong number of arguments"),
            (&["IBF.EXISTS", "i"], "wrong number of arguments"),
            (&["IBF.COUNT", "i", "a", "b"], "wrong number of arguments"),
            (&["IBF.INFO"], "wrong number of arguments"),
            (&["CBF.ADD", "str", "a"], "WRONGTYPE"),
            (&["CBF.ADD", "i", "a"], "WRONGTYPE"),
            (&["CBF.EXISTS", "cms", "a"], "WRONGTYPE"),
            (&["CBF.DEL", "i", "a"], "WRONGTYPE"),
            (&["IBF.ADD", "c", "a"], "WRONGTYPE"),
            (&["IBF.COUNT", "str", "a"], "WRONGTYPE"),
            (&["IBF.INFO", "c"], "WRONGTYPE"),
            (&["CMS.QUERY", "c", "a"], "WRONGTYPE"),
        ],
    );
    assert_eq!(q::<i64>(c, &["EXISTS", "n"]), 0, "nothing was created");
}

/// Answers for every new type, to compare before and after persistence.
fn answers(c: &mut redis::Connection) -> Vec<Value> {
    let probes = items("x", 120);
    let mut out = Vec::new();
    let mut query = vec!["CMS.QUERY", "cms"];
    query.extend(probes.iter().map(String::as_str));
    out.push(q::<Value>(c, &query));
    for p in &probes {
        out.push(q::<Value>(c, &["CBF.COUNT", "cbf", p]));
        out.push(q::<Value>(c, &["IBF.COUNT", "ibf", p]));
    }
    for cmd in ["CMS.INFO cms", "CBF.INFO cbf", "IBF.INFO ibf"] {
        out.push(q::<Value>(c, &cmd.split(' ').collect::<Vec<_>>()));
    }
    out
}

fn fill(c: &mut redis::Connection) {
    let _: () = q(c, &["CMS.INITBYDIM", "cms", "200", "4"]);
    let _: () = q(c, &["CBF.RESERVE", "cbf", "200", "0.01"]);
    let _: () = q(c, &["IBF.RESERVE", "ibf", "200", "0.01"]);
    for (i, it) in items("x", 80).iter().enumerate() {
        let n = (i % 5 + 1).to_string();
        let _: Vec<i64> = q(c, &["CMS.INCRBY", "cms", it, &n]);
        for _ in 0..i % 3 + 1 {
            let _: i64 = q(c, &["CBF.ADD", "cbf", it]);
            let _: i64 = q(c, &["IBF.ADD", "ibf", it]);
        }
    }
    let _: i64 = q(c, &["CBF.DEL", "cbf", "x4"]);
}

#[test]
fn persistence_rdb_aof_copy_restore_and_dump() {
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
    // appendonly yes: the restart loads the rewritten AOF (CMS/CBF/IBF.LOADCHUNK).
    s.restart(&[]);
    let c = &mut s.con();
    assert_eq!(answers(c), before, "BGREWRITEAOF + restart");
    // COPY (copy callback), DUMP/RESTORE (RDB callbacks), digest, memory usage.
    for (k, k2) in [("cms", "cms2"), ("cbf", "cbf2"), ("ibf", "ibf2")] {
        assert_eq!(q::<i64>(c, &["COPY", k, k2]), 1);
        let dg: Vec<String> = q(c, &["DEBUG", "DIGEST-VALUE", k, k2]);
        assert_eq!(dg[0], dg[1], "{k}");
        let dumped: Vec<u8> = q(c, &["DUMP", k]);
        let k3 = format!("{k}3");
        let _: () = redis::cmd("RESTORE")
            .arg(&k3)
            .arg(0)
            .arg(&dumped)
            .query(c)
            .unwrap();
        let dg: Vec<String> = q(c, &["DEBUG", "DIGEST-VALUE", k, &k3]);
        assert_eq!(dg[0], dg[1], "{k} RESTORE");
        assert!(q::<i64>(c, &["MEMORY", "USAGE", k]) > 0);
    }
    let _: Vec<i64> = q(c, &["CMS.INCRBY", "cms2", "new", "1"]);
    let dg: Vec<String> = q(c, &["DEBUG", "DIGEST-VALUE", "cms", "cms2"]);
    assert_ne!(dg[0], dg[1], "digest follows the contents");
    assert_eq!(q::<Vec<i64>>(c, &["CMS.QUERY", "cms3", "x3"]), [4]);
    assert_eq!(q::<i64>(c, &["CBF.COUNT", "cbf3", "x2"]), 3);
    assert_eq!(q::<i64>(c, &["IBF.COUNT", "ibf3", "x2"]), 3);
    // BLOOMERY.DUMP: the library's file format, loadable by the library (and so the CLI).
    let b: Vec<u8> = q(c, &["BLOOMERY.DUMP", "cms"]);
    let cms = CountMinSketch::from_bytes(&b).unwrap();
    assert_eq!(cms.count("x3"), 4);
    let b: Vec<u8> = q(c, &["BLOOMERY.DUMP", "cbf"]);
    assert_eq!(CountingBloomFilter::from_bytes(&b).unwrap().count("x2"), 3);
    let b: Vec<u8> = q(c, &["BLOOMERY.DUMP", "ibf"]);
    assert_eq!(IterativeBloomFilter::from_bytes(&b).unwrap().count("x2"), 3);
    // SCANDUMP / LOADCHUNK round trip (the AOF's path, driven by a client).
    for ty in ["CMS", "CBF", "IBF"] {
        let key = ty.to_lowercase();
        let mut it = 0i64;
        let mut chunks = Vec::new();
        loop {
            let (next, data): (i64, Vec<u8>) =
                q(c, &[&format!("{ty}.SCANDUMP"), &key, &it.to_string()]);
            if next == 0 {
                break;
            }
            chunks.push((next, data));
            it = next;
        }
        let copy = format!("{key}-loaded");
        for (next, data) in &chunks {
            let _: () = redis::cmd(&format!("{ty}.LOADCHUNK"))
                .arg(&copy)
                .arg(*next)
                .arg(data.as_slice())
                .query(c)
                .unwrap();
        }
        let dg: Vec<String> = q(c, &["DEBUG", "DIGEST-VALUE", &key, &copy]);
        assert_eq!(dg[0], dg[1], "{ty} LOADCHUNK");
    }
    // A header chunk that is not a count-min sketch's is refused.
    let e = err(c, &["CMS.LOADCHUNK", "bad", "80", &"x".repeat(80)]);
    assert!(e.contains("invalid chunk"), "{e}");
    // Bytes whose counters disagree with their total count (which CMS.* relies on to keep
    // counts within i64) are refused, although the library decodes them.
    let good: Vec<u8> = q(c, &["BLOOMERY.DUMP", "cms"]);
    for total in [cms.total() + 1, u64::MAX] {
        let mut b = good.clone();
        b[48..56].copy_from_slice(&total.to_le_bytes());
        let body = b.len() - 8;
        let sum = xxhash_rust::xxh3::xxh3_64(&b[..body]);
        b[body..].copy_from_slice(&sum.to_le_bytes());
        assert!(CountMinSketch::from_bytes(&b).is_ok());
        let h = u32::from_le_bytes(b[12..16].try_into().unwrap()) as usize;
        let _: () = redis::cmd("CMS.LOADCHUNK")
            .arg("forged")
            .arg(h)
            .arg(&b[..h])
            .query(c)
            .unwrap();
        let e = redis::cmd("CMS.LOADCHUNK")
            .arg("forged")
            .arg(b.len())
            .arg(&b[h..])
            .query::<Value>(c)
            .unwrap_err()
            .to_string();
        assert!(e.contains("total"), "{e}");
        assert_eq!(q::<i64>(c, &["EXISTS", "forged"]), 0);
    }
    // SAVE + restart without the AOF.
    let _: () = q(c, &["SAVE"]);
    s.stop();
    let s2 = Server::start_on(s.port, d.path(), &[], &[]);
    assert_eq!(answers(&mut s2.con()), before, "SAVE + restart");
}
