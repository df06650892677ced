//! Integration tests for phase 2: `CMS.*` (RedisBloom-compatible), and bloomery's own `CBF.*`,
//! `BCBF.*` and `IBF.*`, against real `redis-server`s on loopback ports (see `redis_module.rs`).

mod common;

use std::time::{Duration, Instant};

use bloomery::{
    BlockedCountingBloomFilter, Count, CountMinSketch, CountMinSketch32, CountingBloomFilter,
    Filter, IterativeBloomFilter, Persist, Remove,
};
use common::{crc64, err, have_redis, items, patch_file_bytes, q, tmp, Server};
use redis::Value;

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
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn cms_commands_and_errors() {
    if !have_redis() {
        return;
    }
    let d = tmp();
    // an explicit limit (the default, `auto`, is the machine's memory): the refusals below
    let s = Server::start_in(d.path(), &["MAX-BYTES", "268435456"], &[]);
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
    // RedisBloom's (ε, δ) sizing: width ⌈2/ε⌉, depth ⌈log₁₀ δ / log₁₀ ½⌉.
    let info: Vec<Value> = q(c, &["CMS.INFO", "p"]);
    assert_eq!(info[1], Value::Int(2000));
    assert_eq!(info[3], Value::Int(7));
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

    // Overflow (32-bit counters, as RedisBloom 2.6; tests/cms32.rs has the details): an item
    // whose counters would pass u32::MAX answers an error in its place; the total count stays
    // within i64 (a RESP integer), refused whole, nothing changed.
    let max = i64::MAX.to_string();
    let _: () = q(c, &["CMS.INITBYDIM", "big", "100", "3"]);
    let e = err(c, &["CMS.INCRBY", "big", "x", &max]);
    assert!(e.contains("INCRBY overflow"), "{e}");
    assert_eq!(
        q::<Vec<i64>>(c, &["CMS.QUERY", "big", "x"]),
        [i64::from(u32::MAX)]
    );
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
    let half = (1u64 << 31).to_string();
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
    assert_eq!(q::<Vec<i64>>(c, &["CMS.QUERY", "big2", "x"]), [1 << 31]);
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
            // RedisBloom's order: a cell count that overflows is invalid; a shape too big to
            // allocate is refused as such, before the row limit
            (
                &["CMS.INITBYDIM", "n", &max, "64"],
                "CMS: invalid init arguments",
            ),
            (
                &["CMS.INITBYDIM", "n", "1000000000", "5"],
                "CMS: Insufficient memory to create the key: it would need 20000000000 bytes, \
                 over the module's MAX-BYTES limit of 268435456",
            ),
            (
                &["CMS.INITBYDIM", "n", "2294967296", "2294967296"],
                "CMS: Insufficient memory to create the key",
            ),
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
            (
                &["CMS.INITBYPROB", "n", "1e-12", "0.1"],
                "CMS: Insufficient memory to create the key",
            ),
            (&["CMS.INITBYDIM", "n", "10"], "wrong number of arguments"),
            (&["CMS.INITBYPROB", "n", "0.1"], "wrong number of arguments"),
            (&["CMS.INCRBY", "a", "foo"], "wrong number of arguments"),
            (
                &["CMS.INCRBY", "a", "foo", "1", "bar"],
                "wrong number of arguments",
            ),
            (
                &["CMS.INCRBY", "a", "foo", "-1"],
                "CMS: Number cannot be negative",
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
            (
                &["CMS.MERGE", "dst", "0", "a"],
                "CMS: Number of keys must be positive",
            ),
            (&["CMS.MERGE", "dst", "x", "a"], "CMS: invalid numkeys"),
            (
                &["CMS.MERGE", "dst", "3", "a", "b"],
                "CMS: wrong number of keys",
            ),
            (
                &["CMS.MERGE", "dst", "1", "a", "b"],
                "CMS: wrong number of keys",
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
                "CMS: MERGE overflow",
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
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
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
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
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
            (&["CBF.RESERVE", "n", "nan", "0.01"], "ERR bad capacity"),
            (
                &["CBF.RESERVE", "n", "100", "0"],
                "ERR (0 < error rate range < 1)",
            ),
            (
                &["CBF.RESERVE", "n", "100", "1.5"],
                "ERR (0 < error rate range < 1)",
            ),
            (&["CBF.RESERVE", "n", "100", "nan"], "ERR bad error rate"),
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
            (&["IBF.RESERVE", "n", "100", "NaN"], "ERR bad error rate"),
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
        out.push(q::<Value>(c, &["BCBF.COUNT", "bcbf", p]));
        out.push(q::<Value>(c, &["IBF.COUNT", "ibf", p]));
    }
    for cmd in [
        "CMS.INFO cms",
        "CBF.INFO cbf",
        "BCBF.INFO bcbf",
        "IBF.INFO ibf",
    ] {
        out.push(q::<Value>(c, &cmd.split(' ').collect::<Vec<_>>()));
    }
    out
}

fn fill(c: &mut redis::Connection) {
    let _: () = q(c, &["CMS.INITBYDIM", "cms", "200", "4"]);
    let _: () = q(c, &["CBF.RESERVE", "cbf", "200", "0.01"]);
    let _: () = q(c, &["BCBF.RESERVE", "bcbf", "200", "0.01"]);
    let _: () = q(c, &["IBF.RESERVE", "ibf", "200", "0.01"]);
    for (i, it) in items("x", 80).iter().enumerate() {
        let n = (i % 5 + 1).to_string();
        let _: Vec<i64> = q(c, &["CMS.INCRBY", "cms", it, &n]);
        for _ in 0..i % 3 + 1 {
            let _: i64 = q(c, &["CBF.ADD", "cbf", it]);
            let _: i64 = q(c, &["BCBF.ADD", "bcbf", it]);
            let _: i64 = q(c, &["IBF.ADD", "ibf", it]);
        }
    }
    let _: i64 = q(c, &["CBF.DEL", "cbf", "x4"]);
    let _: i64 = q(c, &["BCBF.DEL", "bcbf", "x4"]);
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
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
    // appendonly yes: the restart loads the rewritten AOF (an RDB preamble by default; see
    // `bcbf_aof_rewrite_emits_loadchunk` for the LOADCHUNK form).
    s.restart(&[]);
    let c = &mut s.con();
    assert_eq!(answers(c), before, "BGREWRITEAOF + restart");
    // COPY (copy callback), DUMP/RESTORE (RDB callbacks), digest, memory usage.
    for (k, k2) in [
        ("cms", "cms2"),
        ("cbf", "cbf2"),
        ("bcbf", "bcbf2"),
        ("ibf", "ibf2"),
    ] {
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
    assert_eq!(q::<i64>(c, &["BCBF.COUNT", "bcbf2", "x2"]), 3);
    assert_eq!(q::<i64>(c, &["BCBF.COUNT", "bcbf3", "x2"]), 3);
    assert_eq!(q::<i64>(c, &["IBF.COUNT", "ibf3", "x2"]), 3);
    // BLOOMERY.DUMP: the library's file format, loadable by the library (and so the CLI).
    let b: Vec<u8> = q(c, &["BLOOMERY.DUMP", "cms"]);
    let cms = CountMinSketch32::from_bytes(&b).unwrap();
    assert_eq!(cms.count("x3"), 4);
    let b: Vec<u8> = q(c, &["BLOOMERY.DUMP", "cbf"]);
    assert_eq!(CountingBloomFilter::from_bytes(&b).unwrap().count("x2"), 3);
    let b: Vec<u8> = q(c, &["BLOOMERY.DUMP", "bcbf"]);
    let lib = BlockedCountingBloomFilter::from_bytes(&b).unwrap();
    for (i, it) in items("x", 80).iter().enumerate() {
        let truth = (i % 3 + 1) as i64 - i64::from(i == 4);
        assert_eq!(
            q::<i64>(c, &["BCBF.COUNT", "bcbf", it]),
            lib.count(it.as_str()) as i64
        );
        assert!(lib.count(it.as_str()) as i64 >= truth, "{it}");
    }
    let b: Vec<u8> = q(c, &["BLOOMERY.DUMP", "ibf"]);
    assert_eq!(IterativeBloomFilter::from_bytes(&b).unwrap().count("x2"), 3);
    // SCANDUMP / LOADCHUNK round trip (the AOF's path, driven by a client).
    for ty in ["CMS", "CBF", "BCBF", "IBF"] {
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
    // Bytes of the earlier 64-bit form whose counters disagree with their total count (which
    // it relied on to keep counts within i64) are refused, although the library decodes them.
    let mut wide = CountMinSketch::try_with_shape(200, 4).unwrap();
    wide.insert_many("x3", 4);
    let good = wide.to_bytes();
    // and bytes of the 32-bit form whose total is beyond i64::MAX
    let narrow = cms.to_bytes();
    for (good, total) in [
        (&good, wide.total() + 1),
        (&good, u64::MAX),
        (&narrow, i64::MAX as u64 + 1),
    ] {
        let mut b = good.clone();
        b[48..56].copy_from_slice(&total.to_le_bytes());
        let body = b.len() - 8;
        let sum = xxhash_rust::xxh3::xxh3_64(&b[..body]);
        b[body..].copy_from_slice(&sum.to_le_bytes());
        assert!(CountMinSketch::from_bytes(&b).is_ok() || CountMinSketch32::from_bytes(&b).is_ok());
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

/// `BCBF.INFO` field `name` of a RESP2 reply (name-value pairs).
fn info_field(c: &mut redis::Connection, key: &str, name: &str) -> i64 {
    let info: Vec<Value> = q(c, &["BCBF.INFO", key]);
    let at = info
        .iter()
        .position(|v| *v == Value::SimpleString(name.into()))
        .unwrap_or_else(|| panic!("BCBF.INFO {key} has no {name:?}: {info:?}"));
    match info[at + 1] {
        Value::Int(n) => n,
        ref v => panic!("{name}: {v:?}"),
    }
}

/// The key's bytes (file format) and its digest: identical before and after means unchanged.
fn state(c: &mut redis::Connection, key: &str) -> (Vec<u8>, Vec<String>) {
    (
        q(c, &["BLOOMERY.DUMP", key]),
        q(c, &["DEBUG", "DIGEST-VALUE", key]),
    )
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn bcbf_commands_and_errors() {
    if !have_redis() {
        return;
    }
    let d = tmp();
    // an explicit limit (the default, `auto`, is the machine's memory): the refusals below
    let s = Server::start_in(d.path(), &["MAX-BYTES", "268435456"], &[]);
    let c = &mut s.con();
    let _: () = q(c, &["BCBF.RESERVE", "b", "1000", "0.01"]);
    let _: () = q(
        c,
        &["BCBF.RESERVE", "b8", "1000", "0.01", "counterbits", "8"],
    );
    for w in ["1", "3", "32"] {
        let key = format!("b{w}");
        let _: () = q(c, &["BCBF.RESERVE", &key, "1000", "0.01", "COUNTERBITS", w]);
    }
    // a rate near 1 with a huge capacity is sized at once (a small filter), as by CBF.RESERVE
    let _: () = q(c, &["BCBF.RESERVE", "near1", "100000000", "0.999999"]);
    assert_eq!(q::<i64>(c, &["BCBF.ADD", "near1", "a"]), 1);
    assert_eq!(q::<i64>(c, &["DEL", "near1"]), 1);
    assert_eq!(q::<i64>(c, &["BCBF.ADD", "b", "a"]), 1);
    assert_eq!(q::<i64>(c, &["BCBF.ADD", "b", "a"]), 0);
    assert_eq!(q::<i64>(c, &["BCBF.ADD", "b", "b"]), 1);
    assert_eq!(q::<i64>(c, &["BCBF.EXISTS", "b", "a"]), 1);
    assert_eq!(q::<i64>(c, &["BCBF.EXISTS", "b", "zz"]), 0);
    assert_eq!(q::<i64>(c, &["BCBF.COUNT", "b", "a"]), 2);
    assert_eq!(q::<i64>(c, &["BCBF.COUNT", "b", "zz"]), 0);
    assert_eq!(q::<i64>(c, &["BCBF.DEL", "b", "a"]), 1);
    assert_eq!(q::<i64>(c, &["BCBF.COUNT", "b", "a"]), 1);
    assert_eq!(q::<i64>(c, &["BCBF.DEL", "b", "a"]), 1);
    assert_eq!(q::<i64>(c, &["BCBF.EXISTS", "b", "a"]), 0);
    assert_eq!(q::<i64>(c, &["BCBF.EXISTS", "b", "b"]), 1);
    assert_eq!(q::<i64>(c, &["BCBF.EXISTS", "nokey", "b"]), 0);
    assert_eq!(q::<i64>(c, &["BCBF.COUNT", "nokey", "b"]), 0);
    assert_eq!(info_field(c, "b", "Number of items inserted"), 1);
    // A refused DEL (the item is certainly absent) changes nothing, not even the item count.
    let before = state(c, "b");
    for item in ["a", "never-added"] {
        let e = wire_err(c, &["BCBF.DEL", "b", item]);
        assert!(e.contains("ERR item not present"), "{e}");
    }
    assert_eq!(state(c, "b"), before, "a refused DEL changed the filter");
    // The other widths answer the same way.
    for key in ["b8", "b3", "b32"] {
        assert_eq!(q::<i64>(c, &["BCBF.ADD", key, "a"]), 1);
        assert_eq!(q::<i64>(c, &["BCBF.ADD", key, "a"]), 0);
        assert_eq!(q::<i64>(c, &["BCBF.COUNT", key, "a"]), 2);
        assert_eq!(q::<i64>(c, &["BCBF.DEL", key, "a"]), 1);
        assert_eq!(q::<i64>(c, &["BCBF.COUNT", key, "a"]), 1);
        assert_eq!(q::<i64>(c, &["BCBF.EXISTS", key, "zz"]), 0);
    }
    // ADD auto-creates with CBF.ADD's defaults (capacity 100, error 0.01, 4-bit counters).
    assert_eq!(q::<i64>(c, &["BCBF.ADD", "auto", "a"]), 1);
    let info: Vec<Value> = q(c, &["BCBF.INFO", "auto"]);
    let names: Vec<&str> = info
        .iter()
        .step_by(2)
        .map(|v| match v {
            Value::SimpleString(s) => s.as_str(),
            v => panic!("field name {v:?}"),
        })
        .collect();
    assert_eq!(
        names,
        [
            "Capacity",
            "Size",
            "Number of lines",
            "Counters per line",
            "Counter bits",
            "Number of hash functions",
            "Number of items inserted",
            "Saturated counters",
        ]
    );
    assert_eq!(info[1], Value::Int(100));
    assert_eq!(info_field(c, "auto", "Counter bits"), 4);
    assert_eq!(info_field(c, "auto", "Counters per line"), 128);
    assert_eq!(info_field(c, "auto", "Number of items inserted"), 1);
    let lib = BlockedCountingBloomFilter::try_new(100, 0.01).unwrap();
    assert_eq!(
        info_field(c, "auto", "Number of lines"),
        lib.blocks() as i64
    );
    assert_eq!(
        info_field(c, "auto", "Number of hash functions"),
        i64::from(lib.hashes())
    );
    let auto: Vec<u8> = q(c, &["BLOOMERY.DUMP", "auto"]);
    let mut lib = lib;
    lib.insert("a");
    assert_eq!(auto, lib.to_bytes(), "the library's filter with one insert");
    // Each key's shape: ⌊512 / w⌋ counters per line, Size covers the lines.
    for (key, w, per_line) in [
        ("b", 4, 128),
        ("b8", 8, 64),
        ("b1", 1, 512),
        ("b3", 3, 170),
        ("b32", 32, 16),
    ] {
        assert_eq!(info_field(c, key, "Capacity"), 1000, "{key}");
        assert_eq!(info_field(c, key, "Counter bits"), w, "{key}");
        assert_eq!(info_field(c, key, "Counters per line"), per_line, "{key}");
        let lines = info_field(c, key, "Number of lines");
        assert!(
            lines > 0 && info_field(c, key, "Size") >= lines * 64,
            "{key}"
        );
        let k = info_field(c, key, "Number of hash functions");
        assert!((1..=32).contains(&k), "{key}: k = {k}");
    }
    // Saturation: 1-bit counters saturate on the first insert and are never decremented, so
    // the DEL succeeds but the item stays; 4-bit counters stop at 15.
    assert_eq!(q::<i64>(c, &["BCBF.ADD", "b1", "s"]), 1);
    let sat = info_field(c, "b1", "Saturated counters");
    let k = info_field(c, "b1", "Number of hash functions");
    assert!(sat >= 1 && sat <= k, "{sat} saturated, k = {k}");
    assert_eq!(q::<i64>(c, &["BCBF.DEL", "b1", "s"]), 1);
    assert_eq!(q::<i64>(c, &["BCBF.EXISTS", "b1", "s"]), 1);
    assert_eq!(info_field(c, "b", "Saturated counters"), 0);
    for _ in 0..20 {
        let _: i64 = q(c, &["BCBF.ADD", "b", "hot"]);
    }
    assert_eq!(q::<i64>(c, &["BCBF.COUNT", "b", "hot"]), 15);
    assert!(info_field(c, "b", "Saturated counters") >= 1);
    assert_eq!(q::<i64>(c, &["BCBF.DEL", "b", "hot"]), 1);
    assert_eq!(q::<i64>(c, &["BCBF.COUNT", "b", "hot"]), 15);
    // RESP3: INFO is a map.
    let c3 = &mut s.con3();
    let Value::Map(m) = q::<Value>(c3, &["BCBF.INFO", "b8"]) else {
        panic!("BCBF.INFO over RESP3 should be a map");
    };
    assert_eq!(m.len(), 8);
    assert_eq!(
        m[3],
        (
            Value::SimpleString("Counters per line".into()),
            Value::Int(64)
        )
    );
    // Errors.
    let _: () = q(c, &["SET", "str", "v"]);
    let _: () = q(c, &["CBF.RESERVE", "cbf", "100", "0.01"]);
    let _: () = q(c, &["CMS.INITBYDIM", "cms", "10", "2"]);
    let huge = "1000000000000000";
    assert_errors(
        c,
        &[
            (&["BCBF.DEL", "b", "never-added"], "ERR item not present"),
            (&["BCBF.DEL", "nokey", "a"], "ERR not found"),
            (&["BCBF.INFO", "nokey"], "ERR not found"),
            (&["BCBF.SCANDUMP", "nokey", "0"], "ERR not found"),
            (&["BCBF.RESERVE", "b", "100", "0.01"], "ERR item exists"),
            (&["BCBF.RESERVE", "str", "100", "0.01"], "ERR item exists"),
            (&["BCBF.RESERVE", "cbf", "100", "0.01"], "ERR item exists"),
            (
                &["BCBF.RESERVE", "n", "0", "0.01"],
                "ERR (capacity should be larger than 0)",
            ),
            (
                &["BCBF.RESERVE", "n", "-5", "0.01"],
                "ERR (capacity should be larger than 0)",
            ),
            (&["BCBF.RESERVE", "n", "nan", "0.01"], "ERR bad capacity"),
            (&["BCBF.RESERVE", "n", "1.5", "0.01"], "ERR bad capacity"),
            (
                &["BCBF.RESERVE", "n", "100", "0"],
                "ERR (0 < error rate range < 1)",
            ),
            (
                &["BCBF.RESERVE", "n", "100", "1"],
                "ERR (0 < error rate range < 1)",
            ),
            (
                &["BCBF.RESERVE", "n", "100", "1.5"],
                "ERR (0 < error rate range < 1)",
            ),
            (&["BCBF.RESERVE", "n", "100", "nan"], "ERR bad error rate"),
            (
                &["BCBF.RESERVE", "n", "100", "inf"],
                "ERR (0 < error rate range < 1)",
            ),
            (&["BCBF.RESERVE", "n", "100", "x"], "ERR bad error rate"),
            (&["BCBF.RESERVE", "n", huge, "0.01"], "MAX-BYTES"),
            (
                &["BCBF.RESERVE", "n", huge, "0.01", "COUNTERBITS", "1"],
                "MAX-BYTES",
            ),
            (&["BCBF.RESERVE", "n", "100000000", "0.01"], "MAX-BYTES"),
            (&["BCBF.RESERVE", "n", "100", "1e-300"], "below 1e-15"),
            (
                &["BCBF.RESERVE", "n", "100", "0.01", "COUNTERBITS", "0"],
                "ERR bad counter bits (1..=32)",
            ),
            (
                &["BCBF.RESERVE", "n", "100", "0.01", "COUNTERBITS", "33"],
                "ERR bad counter bits (1..=32)",
            ),
            (
                &["BCBF.RESERVE", "n", "100", "0.01", "COUNTERBITS", "-4"],
                "ERR bad counter bits (1..=32)",
            ),
            (
                &["BCBF.RESERVE", "n", "100", "0.01", "COUNTERBITS", "four"],
                "ERR bad counter bits (1..=32)",
            ),
            (
                &["BCBF.RESERVE", "n", "100", "0.01", "WIDTH", "4"],
                "ERR unknown argument 'WIDTH'",
            ),
            (
                &["BCBF.RESERVE", "n", "100", "0.01", "COUNTERBITS"],
                "wrong number of arguments",
            ),
            (
                &["BCBF.RESERVE", "n", "100", "0.01", "COUNTERBITS", "4", "x"],
                "wrong number of arguments",
            ),
            (&["BCBF.RESERVE", "n", "100"], "wrong number of arguments"),
            (&["BCBF.RESERVE", "n"], "wrong number of arguments"),
            (&["BCBF.ADD", "n"], "wrong number of arguments"),
            (&["BCBF.ADD", "n", "a", "b"], "wrong number of arguments"),
            (&["BCBF.DEL", "b"], "wrong number of arguments"),
            (&["BCBF.DEL", "b", "a", "b"], "wrong number of arguments"),
            (&["BCBF.EXISTS", "b"], "wrong number of arguments"),
            (&["BCBF.COUNT", "b", "a", "b"], "wrong number of arguments"),
            (&["BCBF.INFO"], "wrong number of arguments"),
            (&["BCBF.INFO", "b", "Capacity"], "wrong number of arguments"),
            (&["BCBF.SCANDUMP", "b"], "wrong number of arguments"),
            (
                &["BCBF.SCANDUMP", "b", "-1"],
                "ERR Second argument must be numeric",
            ),
            (
                &["BCBF.SCANDUMP", "b", "x"],
                "ERR Second argument must be numeric",
            ),
            (&["BCBF.LOADCHUNK", "n", "1"], "wrong number of arguments"),
            (
                &["BCBF.LOADCHUNK", "n", "x", "data"],
                "ERR Second argument must be numeric",
            ),
            (&["BCBF.LOADCHUNK", "n", "2", "data"], "ERR invalid chunk"),
            (
                &["BCBF.LOADCHUNK", "n", "80", &"x".repeat(80)],
                "ERR invalid chunk",
            ),
            (&["BCBF.ADD", "str", "a"], "WRONGTYPE"),
            (&["BCBF.ADD", "cbf", "a"], "WRONGTYPE"),
            (&["BCBF.DEL", "cbf", "a"], "WRONGTYPE"),
            (&["BCBF.EXISTS", "cms", "a"], "WRONGTYPE"),
            (&["BCBF.COUNT", "str", "a"], "WRONGTYPE"),
            (&["BCBF.INFO", "cbf"], "WRONGTYPE"),
            (&["BCBF.SCANDUMP", "cbf", "0"], "WRONGTYPE"),
            (
                &["BCBF.LOADCHUNK", "str", "80", &"x".repeat(80)],
                "WRONGTYPE",
            ),
            (&["CBF.ADD", "b", "a"], "WRONGTYPE"),
            (&["CBF.INFO", "b"], "WRONGTYPE"),
            (&["IBF.COUNT", "b", "a"], "WRONGTYPE"),
            (&["BF.EXISTS", "b", "a"], "WRONGTYPE"),
            (&["CMS.QUERY", "b", "a"], "WRONGTYPE"),
            (&["GET", "b"], "WRONGTYPE"),
        ],
    );
    assert_eq!(q::<i64>(c, &["EXISTS", "n"]), 0, "nothing was created");
    assert_eq!(q::<String>(c, &["TYPE", "b"]), "BLMRY-BCB");
    // A header chunk of another type (the classic-layout counting filter) is refused.
    let (h, header) = scan_first(c, "CBF.SCANDUMP", "cbf");
    let e = redis::cmd("BCBF.LOADCHUNK")
        .arg("n")
        .arg(h)
        .arg(header.as_slice())
        .query::<Value>(c)
        .unwrap_err()
        .to_string();
    assert!(e.contains("invalid chunk - not a blocked-counting"), "{e}");
    assert_eq!(q::<i64>(c, &["EXISTS", "n"]), 0, "nothing was created");

    // Zero false negatives after a batch of adds and deletes of present items; the same writes
    // in the library give the same counts and the same bytes.
    let _: () = q(c, &["BCBF.RESERVE", "zfn", "2000", "0.01"]);
    let mut lib = BlockedCountingBloomFilter::builder()
        .capacity(2000)
        .fpr(0.01)
        .try_build()
        .unwrap();
    let keys = items("k", 1500);
    let mut pipe = redis::pipe();
    for (i, k) in keys.iter().enumerate() {
        for _ in 0..i % 3 + 1 {
            pipe.cmd("BCBF.ADD").arg("zfn").arg(k);
            lib.insert(k.as_str());
        }
    }
    let _: Vec<i64> = pipe.query(c).unwrap();
    let mut pipe = redis::pipe();
    for k in keys.iter().step_by(2) {
        pipe.cmd("BCBF.DEL").arg("zfn").arg(k);
        lib.remove(k.as_str()).unwrap();
    }
    let dels: Vec<i64> = pipe.query(c).unwrap();
    assert!(dels.iter().all(|&d| d == 1));
    let mut pipe = redis::pipe();
    for k in &keys {
        pipe.cmd("BCBF.COUNT").arg("zfn").arg(k);
    }
    let counts: Vec<i64> = pipe.query(c).unwrap();
    for (i, (k, &n)) in keys.iter().zip(&counts).enumerate() {
        let truth = (i % 3 + 1) as i64 - i64::from(i % 2 == 0);
        assert!(n >= truth, "{k}: count {n} below the true {truth}");
        assert_eq!(n as u64, lib.count(k.as_str()), "{k}");
        if truth > 0 {
            assert_eq!(q::<i64>(c, &["BCBF.EXISTS", "zfn", k]), 1, "{k}");
        }
    }
    assert_eq!(info_field(c, "zfn", "Number of items inserted"), 3000 - 750);
    let dumped: Vec<u8> = q(c, &["BLOOMERY.DUMP", "zfn"]);
    assert_eq!(dumped, lib.to_bytes());
    let mut pipe = redis::pipe();
    for k in items("never", 2000) {
        pipe.cmd("BCBF.EXISTS").arg("zfn").arg(k);
    }
    let fp: i64 = pipe.query::<Vec<i64>>(c).unwrap().iter().sum();
    assert!(fp < 60, "{fp} false positives in 2000 probes at 1%");

    // While a LOADCHUNK sequence is in progress the key answers an error to every command.
    let (h, header) = scan_first(c, "BCBF.SCANDUMP", "b");
    let _: () = redis::cmd("BCBF.LOADCHUNK")
        .arg("ld")
        .arg(h)
        .arg(header.as_slice())
        .query(c)
        .unwrap();
    for cmd in [
        &["BCBF.ADD", "ld", "a"][..],
        &["BCBF.DEL", "ld", "a"],
        &["BCBF.EXISTS", "ld", "a"],
        &["BCBF.COUNT", "ld", "a"],
        &["BCBF.INFO", "ld"],
        &["BCBF.SCANDUMP", "ld", "0"],
        &["BLOOMERY.DUMP", "ld"],
    ] {
        let e = wire_err(c, cmd);
        assert!(e.contains("being loaded"), "{cmd:?}: {e}");
    }
}

/// The first SCANDUMP pair (the header chunk).
fn scan_first(c: &mut redis::Connection, cmd: &str, key: &str) -> (i64, Vec<u8>) {
    redis::cmd(cmd).arg(key).arg(0).query(c).unwrap()
}

/// Every SCANDUMP pair of `key`, in order.
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

fn load_all(c: &mut redis::Connection, cmd: &str, key: &str, chunks: &[(i64, Vec<u8>)]) {
    for (it, data) in chunks {
        let _: () = redis::cmd(cmd)
            .arg(key)
            .arg(*it)
            .arg(data.as_slice())
            .query(c)
            .unwrap();
    }
}

/// Blocked counting filters of several widths, one over 4 MiB (several chunks), and one key
/// whose LOADCHUNK sequence is half done.
fn fill_bcbf(c: &mut redis::Connection) {
    let _: () = q(c, &["BCBF.RESERVE", "w4", "200", "0.01"]);
    let _: () = q(
        c,
        &["BCBF.RESERVE", "w3", "200", "0.01", "COUNTERBITS", "3"],
    );
    let _: () = q(c, &["BCBF.RESERVE", "big", "1000000", "0.01"]);
    for key in ["w4", "w3", "big"] {
        let mut pipe = redis::pipe();
        for (i, it) in items("x", 150).iter().enumerate() {
            for _ in 0..i % 3 + 1 {
                pipe.cmd("BCBF.ADD").arg(key).arg(it);
            }
        }
        let _: Vec<i64> = pipe.query(c).unwrap();
        let _: i64 = q(c, &["BCBF.DEL", key, "x4"]);
    }
    let _: i64 = q(c, &["BCBF.ADD", "auto", "a"]);
    let chunks = scan_all(c, "BCBF.SCANDUMP", "w4");
    load_all(c, "BCBF.LOADCHUNK", "half", &chunks[..1]);
}

/// Everything a client can see of the keys of [`fill_bcbf`] (the half-loaded key by its error).
fn bcbf_answers(c: &mut redis::Connection) -> Vec<Value> {
    let mut out = Vec::new();
    for key in ["w4", "w3", "big", "auto"] {
        let mut pipe = redis::pipe();
        for p in items("x", 200) {
            pipe.cmd("BCBF.COUNT").arg(key).arg(&p);
        }
        out.push(pipe.query::<Value>(c).unwrap());
        out.push(q::<Value>(c, &["BCBF.INFO", key]));
        out.push(q::<Value>(c, &["BLOOMERY.DUMP", key]));
    }
    out.push(Value::SimpleString(wire_err(c, &["BCBF.INFO", "half"])));
    out
}

/// The AOF rewrite without an RDB preamble emits `BCBF.LOADCHUNK` sequences, and a restart
/// from them (and from the RDB) gives back identical filters, the half-loaded key included.
#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn bcbf_aof_rewrite_emits_loadchunk() {
    if !have_redis() {
        return;
    }
    let d = tmp();
    let mut s = Server::start_in(
        d.path(),
        &[],
        &[
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
            "--aof-use-rdb-preamble",
            "no",
        ],
    );
    let before = {
        let c = &mut s.con();
        fill_bcbf(c);
        let big: Vec<u8> = q(c, &["BLOOMERY.DUMP", "big"]);
        assert!(big.len() > 4 << 20, "big spans several chunks");
        bcbf_answers(c)
    };
    {
        let c = &mut s.con();
        let _: () = q(c, &["DEBUG", "RELOAD"]);
        assert_eq!(bcbf_answers(c), before, "DEBUG RELOAD");
        let _: Value = q(c, &["BGREWRITEAOF"]);
        let deadline = Instant::now() + Duration::from_secs(30);
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
    let base: Vec<u8> = std::fs::read_dir(d.path().join("appendonlydir"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".base.aof"))
        .flat_map(|p| std::fs::read(p).unwrap())
        .collect();
    let loadchunks = base
        .windows(b"BCBF.LOADCHUNK".len())
        .filter(|w| w == b"BCBF.LOADCHUNK")
        .count();
    // w4, w3, auto: header + body; big: header + 2 bodies; half: header.
    assert!(
        loadchunks >= 10,
        "{loadchunks} BCBF.LOADCHUNK in the rewritten AOF"
    );
    s.restart(&[]);
    {
        let c = &mut s.con();
        assert_eq!(bcbf_answers(c), before, "BGREWRITEAOF + restart");
        // The half-loaded key finishes loading from where it stopped.
        let chunks = scan_all(c, "BCBF.SCANDUMP", "w4");
        load_all(c, "BCBF.LOADCHUNK", "half", &chunks[1..]);
        let a: Vec<u8> = q(c, &["BLOOMERY.DUMP", "w4"]);
        let b: Vec<u8> = q(c, &["BLOOMERY.DUMP", "half"]);
        assert_eq!(a, b);
        let _: () = q(c, &["DEL", "half"]);
        let _: () = q(c, &["SAVE"]);
    }
    let after = bcbf_answers(&mut s.con());
    s.stop();
    let s2 = Server::start_on(s.port, d.path(), &[], &[]);
    assert_eq!(bcbf_answers(&mut s2.con()), after, "SAVE + restart");
}

/// Bytes the library refuses (a bit set in the unused end of a 3-bit line) are refused by the
/// final LOADCHUNK, which deletes the half-loaded key; SCANDUMP → LOADCHUNK into a new key gives
/// identical answers.
#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn bcbf_loadchunk_validates_and_round_trips() {
    if !have_redis() {
        return;
    }
    let d = tmp();
    let s = Server::start_in(d.path(), &[], &[]);
    let c = &mut s.con();
    fill_bcbf(c);
    for key in ["w4", "w3", "big"] {
        let chunks = scan_all(c, "BCBF.SCANDUMP", key);
        let copy = format!("{key}-loaded");
        load_all(c, "BCBF.LOADCHUNK", &copy, &chunks);
        let dg: Vec<String> = q(c, &["DEBUG", "DIGEST-VALUE", key, &copy]);
        assert_eq!(dg[0], dg[1], "{key}");
        for p in items("x", 200) {
            assert_eq!(
                q::<i64>(c, &["BCBF.COUNT", key, &p]),
                q::<i64>(c, &["BCBF.COUNT", &copy, &p]),
                "{key} {p}"
            );
        }
        assert_eq!(
            q::<Value>(c, &["BCBF.INFO", key]),
            q::<Value>(c, &["BCBF.INFO", &copy])
        );
        // A loaded key is ready: LOADCHUNK's header does not replace it.
        let e = redis::cmd("BCBF.LOADCHUNK")
            .arg(&copy)
            .arg(chunks[0].0)
            .arg(chunks[0].1.as_slice())
            .query::<Value>(c)
            .unwrap_err()
            .to_string();
        assert!(e.contains("item exists"), "{e}");
    }
    // 3-bit counters: 170 per line use 510 of its 512 bits; set the last bit of line 0.
    let good: Vec<u8> = q(c, &["BLOOMERY.DUMP", "w3"]);
    let h = u32::from_le_bytes(good[12..16].try_into().unwrap()) as usize;
    let mut b = good.clone();
    b[h + 63] |= 0x80;
    let body = b.len() - 8;
    let sum = xxhash_rust::xxh3::xxh3_64(&b[..body]);
    b[body..].copy_from_slice(&sum.to_le_bytes());
    let lib = BlockedCountingBloomFilter::from_bytes(&b)
        .unwrap_err()
        .to_string();
    assert!(lib.contains("beyond the last counter"), "{lib}");
    let _: () = redis::cmd("BCBF.LOADCHUNK")
        .arg("forged")
        .arg(h)
        .arg(&b[..h])
        .query(c)
        .unwrap();
    let e = redis::cmd("BCBF.LOADCHUNK")
        .arg("forged")
        .arg(b.len())
        .arg(&b[h..])
        .query::<Value>(c)
        .unwrap_err()
        .to_string();
    assert!(e.contains("invalid chunk") && e.contains("beyond"), "{e}");
    assert_eq!(q::<i64>(c, &["EXISTS", "forged"]), 0);
    // The same bytes through RESTORE are refused too (rdb_load validates), and the server lives.
    // (Without RDB compression the file-format bytes appear verbatim in the DUMP payload, in
    // pieces: the header, then the rest.)
    assert_eq!(crc64(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
    let _: () = q(c, &["CONFIG", "SET", "rdbcompression", "no"]);
    let dumped: Vec<u8> = q(c, &["DUMP", "w3"]);
    let mut forged = dumped.clone();
    assert!(
        patch_file_bytes(&mut forged, &good, &b),
        "the file-format bytes inside the DUMP payload"
    );
    let forged = reseal_dump(forged);
    let e = redis::cmd("RESTORE")
        .arg("forged")
        .arg(0)
        .arg(&forged)
        .query::<Value>(c)
        .unwrap_err()
        .to_string();
    assert!(e.contains("Bad data format"), "{e}");
    assert_eq!(q::<i64>(c, &["EXISTS", "forged"]), 0);
    assert_eq!(q::<String>(c, &["PING"]), "PONG");
}

/// Replace a DUMP payload's trailing CRC-64 after editing it.
fn reseal_dump(mut payload: Vec<u8>) -> Vec<u8> {
    let body = payload.len() - 8;
    let crc = crc64(&payload[..body]);
    payload[body..].copy_from_slice(&crc.to_le_bytes());
    payload
}

/// Writes (ADD, auto-creating ADD, DEL, a refused DEL, RESERVE, LOADCHUNK) reach a replica,
/// which then answers like its primary and refuses writes.
#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn bcbf_replica_answers_like_its_primary() {
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
    fill_bcbf(pc);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let info: String = q(rc, &["INFO", "replication"]);
        if info.contains("master_link_status:up") {
            break;
        }
        assert!(Instant::now() < deadline, "replica did not sync");
        std::thread::sleep(Duration::from_millis(50));
    }
    let _: () = q(
        pc,
        &["BCBF.RESERVE", "late", "500", "0.001", "COUNTERBITS", "8"],
    );
    for it in items("late", 50) {
        let _: i64 = q(pc, &["BCBF.ADD", "w4", &it]);
        let _: i64 = q(pc, &["BCBF.ADD", "late", &it]);
        let _: i64 = q(pc, &["BCBF.ADD", "late-auto", &it]);
    }
    for it in items("late", 20) {
        let _: i64 = q(pc, &["BCBF.DEL", "w4", &it]);
        let _: i64 = q(pc, &["BCBF.DEL", "late", &it]);
    }
    let e = wire_err(pc, &["BCBF.DEL", "late", "never-added"]);
    assert!(e.contains("item not present"), "{e}");
    let chunks = scan_all(pc, "BCBF.SCANDUMP", "w4");
    load_all(pc, "BCBF.LOADCHUNK", "w4-loaded", &chunks);
    let acked: i64 = q(pc, &["WAIT", "1", "10000"]);
    assert_eq!(acked, 1);
    assert_eq!(bcbf_answers(pc), bcbf_answers(rc));
    for key in ["w4", "late", "late-auto", "w4-loaded"] {
        let a: Vec<u8> = q(pc, &["BLOOMERY.DUMP", key]);
        let b: Vec<u8> = q(rc, &["BLOOMERY.DUMP", key]);
        assert_eq!(a, b, "{key}");
    }
    let e = err(rc, &["BCBF.ADD", "w4", "x"]);
    assert!(e.contains("read only") || e.contains("READONLY"), "{e}");
}
