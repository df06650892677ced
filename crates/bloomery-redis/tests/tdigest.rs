//! Integration tests for `TDIGEST.*` (RedisBloom-compatible, on the library's merging
//! t-digest), against real `redis-server`s on loopback ports: every command's replies and
//! errors, `MERGE`'s compression rules, RDB/AOF/DUMP/COPY/SCANDUMP round trips, a replica,
//! `MEMORY USAGE` and `maxmemory`.

mod common;

use std::time::{Duration, Instant};

use bloomery::{Persist, TDigest};
use common::{err, have_redis, q, reseal, tmp, wait_aof_rewrite, Server};
use redis::Value;

fn assert_errors(c: &mut redis::Connection, cases: &[(&[&str], &str)]) {
    for (args, want) in cases {
        let e = err(c, args);
        assert_eq!(&e, want, "{args:?}");
    }
}

/// Doubles as a RESP2 client sees them: bulk strings in `%.17g`.
fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn add(c: &mut redis::Connection, key: &str, values: &[f64]) {
    let mut cmd = redis::cmd("TDIGEST.ADD");
    cmd.arg(key);
    for v in values {
        cmd.arg(v.to_string());
    }
    let _: () = cmd.query(c).unwrap();
}

fn info(c: &mut redis::Connection, key: &str) -> Vec<(String, i64)> {
    let v: Vec<Value> = q(c, &["TDIGEST.INFO", key]);
    v.chunks(2)
        .map(|p| {
            let name = match &p[0] {
                Value::SimpleString(s) => s.clone(),
                other => panic!("field name {other:?}"),
            };
            let Value::Int(n) = p[1] else {
                panic!("{name}: {:?}", p[1])
            };
            (name, n)
        })
        .collect()
}

fn field(c: &mut redis::Connection, key: &str, name: &str) -> i64 {
    info(c, key)
        .into_iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("{name}"))
        .1
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn tdigest_replies_as_redisbloom() {
    if !have_redis() {
        return;
    }
    let d = tmp();
    let s = Server::start_in(d.path(), &[], &[]);
    let c = &mut s.con();
    // RedisBloom's documented examples.
    let _: () = q(c, &["TDIGEST.CREATE", "t", "COMPRESSION", "1000"]);
    let _: () = q(
        c,
        &[
            "TDIGEST.ADD",
            "t",
            "1",
            "2",
            "2",
            "3",
            "3",
            "3",
            "4",
            "4",
            "4",
            "4",
            "5",
            "5",
            "5",
            "5",
            "5",
        ],
    );
    let cdf: Vec<String> = [
        "0",
        "0.033333333333333333",
        "0.13333333333333333",
        "0.29999999999999999",
        "0.53333333333333333",
        "0.83333333333333337",
        "1",
    ]
    .iter()
    .map(|t| common::double_text(c, t))
    .collect();
    assert_eq!(
        q::<Vec<String>>(c, &["TDIGEST.CDF", "t", "0", "1", "2", "3", "4", "5", "6"]),
        cdf
    );
    let ranks: Vec<String> = (0..=15).map(|i| i.to_string()).collect();
    let mut byrank = vec!["TDIGEST.BYRANK", "t"];
    byrank.extend(ranks.iter().map(String::as_str));
    assert_eq!(
        q::<Vec<String>>(c, &byrank),
        strs(&["1", "2", "2", "3", "3", "3", "4", "4", "4", "4", "5", "5", "5", "5", "5", "inf"])
    );
    byrank[0] = "TDIGEST.BYREVRANK";
    assert_eq!(
        q::<Vec<String>>(c, &byrank),
        strs(&["5", "5", "5", "5", "5", "4", "4", "4", "4", "3", "3", "3", "2", "2", "1", "-inf"])
    );
    assert_eq!(
        q::<Vec<String>>(
            c,
            &[
                "TDIGEST.QUANTILE",
                "t",
                "0",
                "0.1",
                "0.2",
                "0.3",
                "0.4",
                "0.5",
                "0.6",
                "0.7",
                "0.8",
                "0.9",
                "1"
            ]
        ),
        strs(&["1", "2", "3", "3", "4", "4", "4", "5", "5", "5", "5"])
    );
    assert_eq!(q::<String>(c, &["TDIGEST.MIN", "t"]), "1");
    assert_eq!(q::<String>(c, &["TDIGEST.MAX", "t"]), "5");
    assert_eq!(
        info(c, "t")[..8],
        [
            ("Compression".to_string(), 1000),
            ("Capacity".to_string(), 6010),
            ("Merged nodes".to_string(), 0),
            ("Unmerged nodes".to_string(), 15),
            ("Merged weight".to_string(), 0),
            ("Unmerged weight".to_string(), 15),
            ("Observations".to_string(), 15),
            ("Total compressions".to_string(), 0),
        ]
    );
    assert!(field(c, "t", "Memory usage") >= 6010 * 16);

    let _: () = q(c, &["TDIGEST.CREATE", "s", "COMPRESSION", "1000"]);
    let _: () = q(c, &["TDIGEST.ADD", "s", "10", "20", "30", "40", "50", "60"]);
    let xs = ["0", "10", "20", "30", "40", "50", "60", "70"];
    let mut rank = vec!["TDIGEST.RANK", "s"];
    rank.extend(xs);
    assert_eq!(q::<Vec<i64>>(c, &rank), [-1, 0, 1, 2, 3, 4, 5, 6]);
    rank[0] = "TDIGEST.REVRANK";
    assert_eq!(q::<Vec<i64>>(c, &rank), [6, 5, 4, 3, 2, 1, 0, -1]);

    let _: () = q(c, &["TDIGEST.CREATE", "m"]);
    assert_eq!(field(c, "m", "Compression"), 100);
    let _: () = q(
        c,
        &[
            "TDIGEST.ADD",
            "m",
            "1",
            "2",
            "3",
            "4",
            "5",
            "6",
            "7",
            "8",
            "9",
            "10",
        ],
    );
    for (lo, hi, want) in [
        ("0.1", "0.6", "4"),
        ("0.3", "0.9", "6.5"),
        ("0", "1", "5.5"),
    ] {
        assert_eq!(q::<String>(c, &["TDIGEST.TRIMMED_MEAN", "m", lo, hi]), want);
    }

    // Empty: nan, and -2 for ranks.
    let _: () = q(c, &["TDIGEST.RESET", "m"]);
    assert_eq!(field(c, "m", "Observations"), 0);
    assert_eq!(field(c, "m", "Compression"), 100);
    for cmd in ["TDIGEST.MIN", "TDIGEST.MAX"] {
        assert_eq!(q::<String>(c, &[cmd, "m"]), "nan");
    }
    assert_eq!(
        q::<Vec<String>>(c, &["TDIGEST.QUANTILE", "m", "0.5"]),
        ["nan"]
    );
    assert_eq!(q::<Vec<String>>(c, &["TDIGEST.CDF", "m", "1"]), ["nan"]);
    assert_eq!(q::<Vec<String>>(c, &["TDIGEST.BYRANK", "m", "0"]), ["nan"]);
    assert_eq!(q::<Vec<i64>>(c, &["TDIGEST.RANK", "m", "1", "2"]), [-2, -2]);
    assert_eq!(q::<Vec<i64>>(c, &["TDIGEST.REVRANK", "m", "1"]), [-2]);
    assert_eq!(
        q::<String>(c, &["TDIGEST.TRIMMED_MEAN", "m", "0.1", "0.9"]),
        "nan"
    );

    // RESP3: doubles and a map.
    let c3 = &mut s.con3();
    assert_eq!(
        q::<Value>(c3, &["TDIGEST.QUANTILE", "t", "0", "1"]),
        Value::Array(vec![Value::Double(1.0), Value::Double(5.0)])
    );
    let Value::Map(m) = q::<Value>(c3, &["TDIGEST.INFO", "t"]) else {
        panic!("TDIGEST.INFO over RESP3 should be a map");
    };
    assert_eq!(
        m[0],
        (Value::SimpleString("Compression".into()), Value::Int(1000))
    );
    assert_eq!(m.len(), 9);
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn tdigest_errors_as_redisbloom() {
    if !have_redis() {
        return;
    }
    let d = tmp();
    // an explicit limit (the default, `auto`, is the machine's memory): the refusal below
    let s = Server::start_in(d.path(), &["MAX-BYTES", "268435456"], &[]);
    let c = &mut s.con();
    let _: () = q(c, &["TDIGEST.CREATE", "t"]);
    let _: () = q(c, &["SET", "str", "x"]);
    let _: () = q(c, &["TDIGEST.ADD", "t", "1", "2", "3"]);
    const NO_KEY: &str = "ERR T-Digest: key does not exist";
    const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
    assert_errors(
        c,
        &[
            (&["TDIGEST.CREATE", "t"], "ERR T-Digest: key already exists"),
            (&["TDIGEST.CREATE", "str"], WRONGTYPE),
            (
                &["TDIGEST.CREATE", "n", "FOO", "10"],
                "ERR T-Digest: wrong keyword",
            ),
            (
                &["TDIGEST.CREATE", "n", "COMPRESSION", "abc"],
                "ERR T-Digest: error parsing compression parameter",
            ),
            (
                &["TDIGEST.CREATE", "n", "COMPRESSION", "0"],
                "ERR T-Digest: compression parameter needs to be a positive integer",
            ),
            (
                &["TDIGEST.CREATE", "n", "COMPRESSION", "-3"],
                "ERR T-Digest: compression parameter needs to be a positive integer",
            ),
            (
                &["TDIGEST.CREATE", "n", "COMPRESSION", "1000000000"],
                "ERR T-Digest: allocation failed",
            ),
            (&["TDIGEST.ADD", "n", "1"], NO_KEY),
            (&["TDIGEST.ADD", "str", "1"], WRONGTYPE),
            (
                &["TDIGEST.ADD", "t", "1", "abc"],
                "ERR T-Digest: error parsing val parameter",
            ),
            (
                &["TDIGEST.ADD", "t", "nan"],
                "ERR T-Digest: error parsing val parameter",
            ),
            (
                &["TDIGEST.ADD", "t", "inf"],
                "ERR T-Digest: val parameter needs to be a finite number",
            ),
            (
                &["TDIGEST.ADD", "t", "-inf"],
                "ERR T-Digest: val parameter needs to be a finite number",
            ),
            (&["TDIGEST.RESET", "n"], NO_KEY),
            (&["TDIGEST.MIN", "n"], NO_KEY),
            (&["TDIGEST.MAX", "str"], WRONGTYPE),
            (&["TDIGEST.INFO", "n"], NO_KEY),
            (
                &["TDIGEST.QUANTILE", "t", "1.5"],
                "ERR T-Digest: quantile should be in [0,1]",
            ),
            (
                &["TDIGEST.QUANTILE", "t", "-0.1"],
                "ERR T-Digest: quantile should be in [0,1]",
            ),
            (
                &["TDIGEST.QUANTILE", "t", "x"],
                "ERR T-Digest: error parsing quantile",
            ),
            (&["TDIGEST.QUANTILE", "n", "0.5"], NO_KEY),
            (
                &["TDIGEST.CDF", "t", "x"],
                "ERR T-Digest: error parsing cdf",
            ),
            (
                &["TDIGEST.RANK", "t", "x"],
                "ERR T-Digest: error parsing value",
            ),
            (
                &["TDIGEST.RANK", "t", "nan"],
                "ERR T-Digest: error parsing value",
            ),
            (
                &["TDIGEST.REVRANK", "t", "1", "x"],
                "ERR T-Digest: error parsing value",
            ),
            (
                &["TDIGEST.BYRANK", "t", "1.5"],
                "ERR T-Digest: error parsing rank",
            ),
            (
                &["TDIGEST.BYREVRANK", "t", "-1"],
                "ERR T-Digest: rank needs to be non negative",
            ),
            (
                &["TDIGEST.TRIMMED_MEAN", "t", "x", "1"],
                "ERR T-Digest: error parsing low_cut_percentile",
            ),
            (
                &["TDIGEST.TRIMMED_MEAN", "t", "0", "y"],
                "ERR T-Digest: error parsing high_cut_percentile",
            ),
            (
                &["TDIGEST.TRIMMED_MEAN", "t", "0", "2"],
                "ERR T-Digest: low_cut_percentile and high_cut_percentile should be in [0,1]",
            ),
            (
                &["TDIGEST.TRIMMED_MEAN", "t", "0.5", "0.5"],
                "ERR T-Digest: low_cut_percentile should be lower than high_cut_percentile",
            ),
            (
                &["TDIGEST.MERGE", "d", "x", "t"],
                "ERR T-Digest: error parsing numkeys",
            ),
            (
                &["TDIGEST.MERGE", "d", "0", "t"],
                "ERR T-Digest: numkeys needs to be a positive integer",
            ),
            (
                &["TDIGEST.MERGE", "d", "1", "t", "FOO"],
                "ERR T-Digest: wrong keyword",
            ),
            (
                &["TDIGEST.MERGE", "d", "1", "t", "COMPRESSION", "0"],
                "ERR T-Digest: compression parameter needs to be a positive integer",
            ),
            (&["TDIGEST.MERGE", "d", "2", "t", "n"], NO_KEY),
            (&["TDIGEST.MERGE", "d", "1", "d"], NO_KEY),
            (&["TDIGEST.MERGE", "str", "1", "t"], WRONGTYPE),
            (&["TDIGEST.MERGE", "d", "1", "str"], WRONGTYPE),
        ],
    );
    // Arity errors.
    for args in [
        &["TDIGEST.CREATE"][..],
        &["TDIGEST.CREATE", "n", "COMPRESSION"],
        &["TDIGEST.ADD", "t"],
        &["TDIGEST.MIN", "t", "x"],
        &["TDIGEST.QUANTILE", "t"],
        &["TDIGEST.TRIMMED_MEAN", "t", "0.1"],
        &["TDIGEST.MERGE", "d", "3", "t"],
        &["TDIGEST.MERGE", "d", "1", "t", "COMPRESSION"],
        &["TDIGEST.INFO"],
    ] {
        let e = err(c, args);
        assert!(e.contains("wrong number of arguments"), "{args:?}: {e}");
    }
    // Over MAX-BYTES (256 MiB here): the module's limit, named.
    let e = err(c, &["TDIGEST.CREATE", "n", "COMPRESSION", "100000000"]);
    assert!(e.contains("MAX-BYTES"), "{e}");
    // Nothing was applied by the refused ADDs; no key was created by the refused commands.
    assert_eq!(field(c, "t", "Observations"), 3);
    assert_eq!(q::<i64>(c, &["EXISTS", "n", "d"]), 0);
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn merge_follows_redisbloom_compression_rules() {
    if !have_redis() {
        return;
    }
    let d = tmp();
    let s = Server::start_in(d.path(), &[], &[]);
    let c = &mut s.con();
    let _: () = q(c, &["TDIGEST.CREATE", "a", "COMPRESSION", "100"]);
    let _: () = q(c, &["TDIGEST.CREATE", "b", "COMPRESSION", "200"]);
    let _: () = q(c, &["TDIGEST.CREATE", "e", "COMPRESSION", "50"]);
    add(c, "a", &(1..=100).map(f64::from).collect::<Vec<_>>());
    add(c, "b", &(101..=300).map(f64::from).collect::<Vec<_>>());
    add(c, "e", &[1000.0, 2000.0]);
    // A new destination: the largest compression of the sources.
    let _: () = q(c, &["TDIGEST.MERGE", "new", "2", "a", "b"]);
    assert_eq!(field(c, "new", "Compression"), 200);
    assert_eq!(field(c, "new", "Observations"), 300);
    assert_eq!(q::<String>(c, &["TDIGEST.MIN", "new"]), "1");
    assert_eq!(q::<String>(c, &["TDIGEST.MAX", "new"]), "300");
    let med: Vec<String> = q(c, &["TDIGEST.QUANTILE", "new", "0.5"]);
    let med: f64 = med[0].parse().unwrap();
    assert!((med - 150.5).abs() <= 3.0, "{med}");
    // An existing destination keeps its compression and its values.
    let _: () = q(c, &["TDIGEST.MERGE", "e", "1", "a"]);
    assert_eq!(field(c, "e", "Compression"), 50);
    assert_eq!(field(c, "e", "Observations"), 102);
    assert_eq!(q::<String>(c, &["TDIGEST.MAX", "e"]), "2000");
    // COMPRESSION wins; OVERRIDE drops the destination's values.
    let _: () = q(c, &["TDIGEST.MERGE", "e", "1", "b", "COMPRESSION", "300"]);
    assert_eq!(field(c, "e", "Compression"), 300);
    assert_eq!(field(c, "e", "Observations"), 302);
    let _: () = q(c, &["TDIGEST.MERGE", "e", "2", "a", "b", "OVERRIDE"]);
    assert_eq!(field(c, "e", "Compression"), 200);
    assert_eq!(field(c, "e", "Observations"), 300);
    assert_eq!(q::<String>(c, &["TDIGEST.MAX", "e"]), "300");
    let _: () = q(
        c,
        &[
            "TDIGEST.MERGE",
            "e",
            "1",
            "a",
            "OVERRIDE",
            "COMPRESSION",
            "40",
        ],
    );
    assert_eq!(field(c, "e", "Compression"), 40);
    assert_eq!(field(c, "e", "Observations"), 100);
    // The destination among the sources counts again, as in RedisBloom.
    let _: () = q(c, &["TDIGEST.MERGE", "a", "2", "a", "b"]);
    assert_eq!(field(c, "a", "Observations"), 400);
    // Cluster routing and ACLs see every key.
    let keys: Vec<String> = q(
        c,
        &["COMMAND", "GETKEYS", "TDIGEST.MERGE", "d", "2", "x", "y"],
    );
    assert_eq!(keys, ["d", "x", "y"]);
}

fn fill(c: &mut redis::Connection) {
    let _: () = q(c, &["TDIGEST.CREATE", "big", "COMPRESSION", "50"]);
    // 5000 values: merged centroids and a buffer not merged yet
    let v: Vec<f64> = (0..5000)
        .map(|i| ((i * 7919) % 5000) as f64 / 7.0)
        .collect();
    for part in v.chunks(500) {
        add(c, "big", part);
    }
    let _: () = q(c, &["TDIGEST.CREATE", "empty"]);
    let _: () = q(c, &["TDIGEST.CREATE", "small", "COMPRESSION", "10"]);
    add(c, "small", &[1.5, -3.0, 8.25]);
    let _: () = q(c, &["TDIGEST.MERGE", "merged", "2", "big", "small"]);
    let _: () = q(c, &["TDIGEST.CREATE", "reset"]);
    add(c, "reset", &[1.0]);
    let _: () = q(c, &["TDIGEST.RESET", "reset"]);
}

const KEYS: [&str; 5] = ["big", "empty", "small", "merged", "reset"];

fn answers(c: &mut redis::Connection) -> Vec<Value> {
    let mut out = Vec::new();
    for k in KEYS {
        out.push(q::<Value>(c, &["TDIGEST.INFO", k]));
        out.push(q::<Value>(
            c,
            &["TDIGEST.QUANTILE", k, "0", "0.01", "0.5", "0.99", "1"],
        ));
        out.push(q::<Value>(c, &["TDIGEST.CDF", k, "-1", "100", "400"]));
        out.push(q::<Value>(c, &["TDIGEST.RANK", k, "5", "300"]));
        out.push(q::<Value>(c, &["TDIGEST.BYREVRANK", k, "0", "10"]));
        out.push(q::<Value>(c, &["TDIGEST.TRIMMED_MEAN", k, "0.1", "0.9"]));
    }
    out
}

/// DEBUG RELOAD (RDB), the AOF replayed as written and as rewritten (`TDIGEST.LOADCHUNK`),
/// COPY, DUMP/RESTORE, SCANDUMP/LOADCHUNK and `BLOOMERY.DUMP`: the same digests, buffer
/// included; forged bytes refused.
#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn persistence_round_trips() {
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
        assert!(field(c, "big", "Unmerged nodes") > 0, "a buffer to keep");
        answers(c)
    };
    // the AOF as written: the commands replayed
    s.restart(&[]);
    {
        let c = &mut s.con();
        assert_eq!(answers(c), before, "AOF replay");
        let _: () = q(c, &["DEBUG", "RELOAD"]);
        assert_eq!(answers(c), before, "DEBUG RELOAD");
        let _: Value = q(c, &["BGREWRITEAOF"]);
        wait_aof_rewrite(c);
    }
    s.restart(&[]);
    let c = &mut s.con();
    assert_eq!(answers(c), before, "BGREWRITEAOF + restart");
    assert_eq!(q::<i64>(c, &["COPY", "big", "big2"]), 1);
    let dg: Vec<String> = q(c, &["DEBUG", "DIGEST-VALUE", "big", "big2"]);
    assert_eq!(dg[0], dg[1]);
    let dumped: Vec<u8> = q(c, &["DUMP", "big"]);
    let _: () = redis::cmd("RESTORE")
        .arg("big3")
        .arg(0)
        .arg(&dumped)
        .query(c)
        .unwrap();
    let dg: Vec<String> = q(c, &["DEBUG", "DIGEST-VALUE", "big", "big3"]);
    assert_eq!(dg[0], dg[1], "RESTORE");
    add(c, "big2", &[1.0]);
    let dg: Vec<String> = q(c, &["DEBUG", "DIGEST-VALUE", "big", "big2"]);
    assert_ne!(dg[0], dg[1], "the digest follows the contents");
    // BLOOMERY.DUMP: the library's file format.
    let b: Vec<u8> = q(c, &["BLOOMERY.DUMP", "big"]);
    let td = TDigest::from_bytes(&b).unwrap();
    assert_eq!(td.count(), 5000);
    let got: Vec<String> = q(c, &["TDIGEST.QUANTILE", "big", "0.3"]);
    assert_eq!(got[0].parse::<f64>().unwrap(), td.quantile(0.3));
    // SCANDUMP / LOADCHUNK.
    let mut it = 0i64;
    let mut chunks = Vec::new();
    loop {
        let (next, data): (i64, Vec<u8>) = q(c, &["TDIGEST.SCANDUMP", "big", &it.to_string()]);
        if next == 0 {
            break;
        }
        chunks.push((next, data));
        it = next;
    }
    for (next, data) in &chunks {
        let _: () = redis::cmd("TDIGEST.LOADCHUNK")
            .arg("loaded")
            .arg(*next)
            .arg(data.as_slice())
            .query(c)
            .unwrap();
    }
    let dg: Vec<String> = q(c, &["DEBUG", "DIGEST-VALUE", "big", "loaded"]);
    assert_eq!(dg[0], dg[1], "LOADCHUNK");
    // Forged: an unsorted merged centroid (checksum fixed) is refused, nothing left behind.
    let mut forged = b.clone();
    let h = u32::from_le_bytes(forged[12..16].try_into().unwrap()) as usize;
    forged[h..h + 8].copy_from_slice(&1e9f64.to_le_bytes());
    reseal(&mut forged);
    let _: () = redis::cmd("TDIGEST.LOADCHUNK")
        .arg("forged")
        .arg(h)
        .arg(&forged[..h])
        .query(c)
        .unwrap();
    let e = redis::cmd("TDIGEST.LOADCHUNK")
        .arg("forged")
        .arg(forged.len())
        .arg(&forged[h..])
        .query::<Value>(c)
        .unwrap_err()
        .to_string();
    assert!(e.contains("invalid chunk"), "{e}");
    assert_eq!(q::<i64>(c, &["EXISTS", "forged"]), 0);
    // SAVE + restart without the AOF.
    let after = answers(c);
    let _: () = q(c, &["SAVE"]);
    s.stop();
    let s2 = Server::start_on(s.port, d.path(), &[], &[]);
    assert_eq!(answers(&mut s2.con()), after, "SAVE + restart");
}

/// Writes reach a replica, which then holds the primary's digests byte for byte (queries on
/// the primary in between change nothing there) and refuses writes.
#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn replica_holds_the_primary_digests() {
    if !have_redis() {
        return;
    }
    let (d1, d2) = (tmp(), tmp());
    let p = Server::start_in(d1.path(), &[], &[]);
    let r = Server::start_in(d2.path(), &[], &[]);
    let pc = &mut p.con();
    let rc = &mut r.con();
    let _: () = q(pc, &["TDIGEST.CREATE", "early", "COMPRESSION", "30"]);
    add(pc, "early", &(0..1000).map(f64::from).collect::<Vec<_>>());
    let _: () = q(rc, &["REPLICAOF", "127.0.0.1", &p.port.to_string()]);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let info: String = q(rc, &["INFO", "replication"]);
        if info.contains("master_link_status:up") {
            break;
        }
        assert!(Instant::now() < deadline, "replica did not sync");
        std::thread::sleep(Duration::from_millis(50));
    }
    fill(pc);
    for i in 0..20 {
        add(pc, "early", &[f64::from(i) * 0.5]);
        let _: Value = q(pc, &["TDIGEST.QUANTILE", "early", "0.5"]);
    }
    let acked: i64 = q(pc, &["WAIT", "1", "10000"]);
    assert_eq!(acked, 1);
    assert_eq!(answers(pc), answers(rc));
    for key in KEYS.iter().chain(&["early"]) {
        let a: Vec<u8> = q(pc, &["BLOOMERY.DUMP", key]);
        let b: Vec<u8> = q(rc, &["BLOOMERY.DUMP", key]);
        assert_eq!(a, b, "{key}");
    }
    let e = err(rc, &["TDIGEST.ADD", "early", "1"]);
    assert!(e.contains("READONLY"), "{e}");
}

/// `MEMORY USAGE` is what the value holds (its buffer of 6δ + 10 centroids), and `maxmemory`
/// refuses new digests with OOM.
#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn memory_usage_and_maxmemory() {
    if !have_redis() {
        return;
    }
    let d = tmp();
    // no slow log (a debug build logs commands as slow, keeping their arguments) and no
    // latency histograms (allocated on a command's first call)
    let s = Server::start_in(
        d.path(),
        &[],
        &[
            "--maxmemory-policy",
            "noeviction",
            "--slowlog-log-slower-than",
            "-1",
            "--latency-tracking",
            "no",
        ],
    );
    let c = &mut s.con();
    let used = |c: &mut redis::Connection| -> i64 {
        let info: String = q(c, &["INFO", "memory"]);
        info.lines()
            .find_map(|l| l.strip_prefix("used_memory:"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    let _: () = q(c, &["DEBUG", "PAUSE-CRON", "1"]);
    let _: () = q(c, &["TDIGEST.CREATE", "warm", "COMPRESSION", "20000"]);
    // SYNC: Valkey frees a flushed database in the background by default.
    let _: () = q(c, &["FLUSHALL", "SYNC"]);
    let before = used(c);
    let _: () = q(c, &["TDIGEST.CREATE", "a", "COMPRESSION", "20000"]);
    let usage: i64 = q(c, &["MEMORY", "USAGE", "a"]);
    let added = used(c) - before;
    assert!(usage >= 120_010 * 16, "{usage}");
    assert!(
        (added - usage).abs() <= usage / 100 + 1024,
        "used_memory grew by {added}, MEMORY USAGE says {usage}"
    );
    let limit = used(c) + 3 * usage;
    let _: () = q(c, &["CONFIG", "SET", "maxmemory", &limit.to_string()]);
    let mut accepted = 0;
    let mut refusal = None;
    for i in 0..20 {
        match redis::cmd("TDIGEST.CREATE")
            .arg(format!("k{i}"))
            .arg("COMPRESSION")
            .arg("20000")
            .query::<()>(c)
        {
            Ok(()) => accepted += 1,
            Err(e) => {
                refusal = Some(e.to_string());
                break;
            }
        }
    }
    let refusal = refusal.expect("a refusal");
    assert!(refusal.contains("OOM"), "{refusal}");
    assert!((2..=4).contains(&accepted), "{accepted} accepted");
    let _: () = q(c, &["CONFIG", "SET", "maxmemory", "0"]);
}
