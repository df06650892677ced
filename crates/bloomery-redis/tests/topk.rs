//! Integration tests for `TOPK.*` (RedisBloom-compatible, on the library's HeavyKeeper) and
//! bloomery's own `MLBF.*`, against real `redis-server`s on loopback ports.

mod common;

use bloomery::{Count, MultiLayerBloomFilter, Persist, TopK};
use common::{have_redis, items, q, reseal, tmp, wait_aof_rewrite, Server};
use redis::Value;

/// The error as the server sent it: `CODE detail`.
fn wire_err(c: &mut redis::Connection, args: &[&[u8]]) -> String {
    let mut cmd = redis::cmd(std::str::from_utf8(args[0]).unwrap());
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
        let a: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
        let e = wire_err(c, &a);
        assert!(e.contains(want), "{args:?}: got {e:?}, want {want:?}");
    }
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// A double in RESP2: a bulk string the server formats (see `common::double_text`).
fn resp2_double(c: &mut redis::Connection, redis7: &str) -> Value {
    Value::BulkString(common::double_text(c, redis7).into_bytes())
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn topk_commands_and_errors() {
    if !have_redis() {
        return;
    }
    let d = tmp();
    // an explicit limit (the default, `auto`, is the machine's memory): the refusals below
    let s = Server::start_in(d.path(), &["MAX-BYTES", "268435456"], &[]);
    let c = &mut s.con();
    // Defaults: width 8, depth 7, decay 0.9.
    let _: () = q(c, &["TOPK.RESERVE", "t", "3"]);
    assert_eq!(
        q::<Value>(c, &["TOPK.INFO", "t"]),
        Value::Array(vec![
            Value::SimpleString("k".into()),
            Value::Int(3),
            Value::SimpleString("width".into()),
            Value::Int(8),
            Value::SimpleString("depth".into()),
            Value::Int(7),
            Value::SimpleString("decay".into()),
            resp2_double(c, "0.90000000000000002"),
        ])
    );
    let c3 = &mut s.con3();
    let Value::Map(m) = q::<Value>(c3, &["TOPK.INFO", "t"]) else {
        panic!("TOPK.INFO over RESP3 should be a map");
    };
    assert_eq!(
        m[3],
        (Value::SimpleString("decay".into()), Value::Double(0.9))
    );
    assert_eq!(
        q::<Vec<String>>(c, &["TOPK.LIST", "t"]),
        Vec::<String>::new()
    );

    // Wide rows: these few items never share a bucket, so the answers are exact.
    let _: () = q(c, &["TOPK.RESERVE", "w", "2", "4096", "3", "0.925"]);
    assert_eq!(
        q::<Vec<Option<String>>>(c, &["TOPK.ADD", "w", "a", "a", "a", "b", "b", "c"]),
        [None, None, None, None, None, None]
    );
    // c (1) does not beat the list's minimum (b, 2); an increment of 5 does, expelling b.
    assert_eq!(
        q::<Vec<Option<String>>>(c, &["TOPK.INCRBY", "w", "c", "5", "a", "1"]),
        [Some("b".to_string()), None]
    );
    assert_eq!(
        q::<Vec<i64>>(c, &["TOPK.QUERY", "w", "a", "b", "c", "nope"]),
        [1, 0, 1, 0]
    );
    assert_eq!(
        q::<Vec<i64>>(c, &["TOPK.COUNT", "w", "a", "b", "c", "nope"]),
        [4, 2, 6, 0]
    );
    assert_eq!(q::<Vec<String>>(c, &["TOPK.LIST", "w"]), ["c", "a"]);
    assert_eq!(
        q::<Value>(c, &["TOPK.LIST", "w", "withcount"]),
        Value::Array(vec![
            Value::BulkString(b"c".to_vec()),
            Value::Int(6),
            Value::BulkString(b"a".to_vec()),
            Value::Int(4),
        ])
    );
    let info: Vec<Value> = q(c, &["TOPK.INFO", "w"]);
    assert_eq!(info[7], resp2_double(c, "0.92500000000000004"));
    // The empty string is an item like any other.
    let _: Vec<Option<String>> = q(c, &["TOPK.INCRBY", "w", "", "100"]);
    assert_eq!(q::<Vec<i64>>(c, &["TOPK.QUERY", "w", ""]), [1]);

    // Heavy hitters among many light items, default shape: the three heaviest are listed.
    let _: () = q(c, &["TOPK.RESERVE", "z", "5"]);
    let mut stream: Vec<String> = Vec::new();
    for i in 0..400 {
        stream.push(format!("mouse{i}"));
        for (h, every) in [("h0", 2), ("h1", 3), ("h2", 4), ("h3", 6), ("h4", 8)] {
            if i % every == 0 {
                stream.push(h.to_string());
            }
        }
    }
    let mut add = vec!["TOPK.ADD".to_string(), "z".to_string()];
    add.extend(stream);
    let _: Vec<Option<String>> = q(c, &strs(&add));
    let listed: Vec<String> = q(c, &["TOPK.LIST", "z"]);
    for h in ["h0", "h1", "h2"] {
        assert!(listed.iter().any(|x| x == h), "{h} not in {listed:?}");
    }
    let counts: Vec<i64> = q(c, &["TOPK.COUNT", "z", "h0", "h1", "h2"]);
    assert!(
        counts[0] <= 200 && counts[1] <= 134 && counts[2] <= 100,
        "{counts:?}"
    );

    // Errors: nothing is created or changed.
    let _: () = q(c, &["SET", "str", "v"]);
    let _: i64 = q(c, &["BF.ADD", "bf", "v"]);
    let max = i64::MAX.to_string();
    assert_errors(
        c,
        &[
            (&["TOPK.RESERVE", "t", "3"], "TopK: key already exists"),
            (&["TOPK.RESERVE", "str", "3"], "TopK: key already exists"),
            (&["TOPK.RESERVE", "n", "0"], "TopK: invalid k"),
            (&["TOPK.RESERVE", "n", "-2"], "TopK: invalid k"),
            (&["TOPK.RESERVE", "n", "x"], "TopK: invalid k"),
            (&["TOPK.RESERVE", "n", &max], "TopK: invalid k"),
            (
                &["TOPK.RESERVE", "n", "2", "0", "7", "0.9"],
                "TopK: invalid width",
            ),
            (
                &["TOPK.RESERVE", "n", "2", "-8", "7", "0.9"],
                "TopK: invalid width",
            ),
            (
                &["TOPK.RESERVE", "n", "2", "8", "0", "0.9"],
                "TopK: invalid depth",
            ),
            (
                &["TOPK.RESERVE", "n", "2", "8", "65", "0.9"],
                "TopK: invalid depth",
            ),
            (
                &["TOPK.RESERVE", "n", "2", "8", "7", "0"],
                "TopK: invalid decay",
            ),
            (
                &["TOPK.RESERVE", "n", "2", "8", "7", "1.5"],
                "TopK: invalid decay",
            ),
            (
                &["TOPK.RESERVE", "n", "2", "8", "7", "nan"],
                "TopK: invalid decay",
            ),
            (
                &["TOPK.RESERVE", "n", "2", "8", "7", "x"],
                "TopK: invalid decay",
            ),
            (
                &["TOPK.RESERVE", "n", "2", &max, "7", "0.9"],
                "TopK: invalid width",
            ),
            (
                &["TOPK.RESERVE", "n", "2", "100000000", "7", "0.9"],
                "Insufficient memory to create topk data structure: it would need",
            ),
            (&["TOPK.RESERVE", "n"], "wrong number of arguments"),
            (
                &["TOPK.RESERVE", "n", "2", "8"],
                "wrong number of arguments",
            ),
            (
                &["TOPK.RESERVE", "n", "2", "8", "7"],
                "wrong number of arguments",
            ),
            (&["TOPK.ADD", "w"], "wrong number of arguments"),
            (&["TOPK.ADD", "missing", "a"], "TopK: key does not exist"),
            (&["TOPK.INCRBY", "w", "a"], "wrong number of arguments"),
            (
                &["TOPK.INCRBY", "w", "a", "1", "b"],
                "wrong number of arguments",
            ),
            (&["TOPK.INCRBY", "w", "a", "-1"], "TopK: increment"),
            (&["TOPK.INCRBY", "w", "a", "100001"], "TopK: increment"),
            (&["TOPK.INCRBY", "w", "a", "1.5"], "TopK: increment"),
            (&["TOPK.INCRBY", "w", "a", "1", "b", "x"], "TopK: increment"),
            (
                &["TOPK.INCRBY", "missing", "a", "1"],
                "TopK: key does not exist",
            ),
            (&["TOPK.QUERY", "w"], "wrong number of arguments"),
            (&["TOPK.QUERY", "missing", "a"], "TopK: key does not exist"),
            (&["TOPK.COUNT", "w"], "wrong number of arguments"),
            (&["TOPK.COUNT", "missing", "a"], "TopK: key does not exist"),
            (&["TOPK.LIST"], "wrong number of arguments"),
            (
                &["TOPK.LIST", "w", "WITHCOUNT", "x"],
                "wrong number of arguments",
            ),
            (&["TOPK.LIST", "w", "COUNTS"], "WITHCOUNT keyword expected"),
            (&["TOPK.LIST", "missing"], "TopK: key does not exist"),
            (&["TOPK.INFO"], "wrong number of arguments"),
            (&["TOPK.INFO", "w", "x"], "wrong number of arguments"),
            (&["TOPK.INFO", "missing"], "TopK: key does not exist"),
            (&["TOPK.ADD", "str", "a"], "WRONGTYPE"),
            (&["TOPK.INCRBY", "bf", "a", "1"], "WRONGTYPE"),
            (&["TOPK.QUERY", "bf", "a"], "WRONGTYPE"),
            (&["TOPK.LIST", "str"], "WRONGTYPE"),
            (&["TOPK.INFO", "bf"], "WRONGTYPE"),
            (&["BF.ADD", "w", "a"], "WRONGTYPE"),
            (&["CMS.QUERY", "w", "a"], "WRONGTYPE"),
            (&["GET", "w"], "WRONGTYPE"),
        ],
    );
    assert_eq!(q::<i64>(c, &["EXISTS", "n", "missing"]), 0);
    // An INCRBY with a bad second increment applied its first pair (RedisBloom's shape: the
    // error in the bad item's place).
    assert_eq!(q::<Vec<i64>>(c, &["TOPK.COUNT", "w", "a"]), [5]);
    assert!(s.log().lines().all(|l| !l.contains("crashed")));
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn mlbf_commands_and_errors() {
    if !have_redis() {
        return;
    }
    let d = tmp();
    let s = Server::start_in(d.path(), &[], &[]);
    let c = &mut s.con();
    let _: () = q(c, &["MLBF.RESERVE", "u", "1000", "0.01"]);
    let _: () = q(c, &["MLBF.RESERVE", "u3", "1000", "0.001", "layers", "3"]);
    assert_eq!(
        q::<i64>(c, &["MLBF.ADD", "u", "http://Example.com/a/b/"]),
        1
    );
    // The same URL after normalisation (protocol, host case, trailing slash, fragment).
    assert_eq!(
        q::<i64>(c, &["MLBF.ADD", "u", "https://example.COM/a/b#top"]),
        0
    );
    assert_eq!(q::<i64>(c, &["MLBF.EXISTS", "u", "example.com/a/b"]), 1);
    assert_eq!(q::<i64>(c, &["MLBF.EXISTS", "u", "example.com/a/B"]), 0);
    assert_eq!(q::<i64>(c, &["MLBF.EXISTS", "u", "example.com/a"]), 0);
    assert_eq!(q::<i64>(c, &["MLBF.EXISTS", "nokey", "example.com/a"]), 0);
    for i in 0..50 {
        let u = format!("http://h{}.example/d{}/p{i}", i % 3, i % 5);
        assert_eq!(q::<i64>(c, &["MLBF.ADD", "u3", &u]), 1, "{u}");
    }
    for i in 0..50 {
        let u = format!("h{}.example/d{}/p{i}", i % 3, i % 5);
        assert_eq!(q::<i64>(c, &["MLBF.EXISTS", "u3", &u]), 1, "{u}");
    }
    // ADD auto-creates: BF.ADD's defaults, four layers.
    assert_eq!(q::<i64>(c, &["MLBF.ADD", "auto", "example.org/x"]), 1);
    let info: Vec<Value> = q(c, &["MLBF.INFO", "auto"]);
    assert_eq!(info[0], Value::SimpleString("Capacity".into()));
    assert_eq!(info[1], Value::Int(100));
    assert_eq!(info[4], Value::SimpleString("Number of layers".into()));
    assert_eq!(info[5], Value::Int(4));
    assert_eq!(info[11], Value::Int(1), "items inserted");
    let c3 = &mut s.con3();
    let Value::Map(m) = q::<Value>(c3, &["MLBF.INFO", "u3"]) else {
        panic!("MLBF.INFO over RESP3 should be a map");
    };
    assert_eq!(m.len(), 7);
    assert_eq!(
        m[2],
        (
            Value::SimpleString("Number of layers".into()),
            Value::Int(3)
        )
    );
    assert_eq!(
        m[5],
        (
            Value::SimpleString("Number of items inserted".into()),
            Value::Int(50)
        )
    );
    assert_eq!(
        m[6],
        (
            Value::SimpleString("Error rate".into()),
            Value::Double(0.001)
        )
    );
    // Errors; nothing is created.
    let _: () = q(c, &["SET", "str", "v"]);
    let _: () = q(c, &["TOPK.RESERVE", "tk", "2"]);
    let huge = "1000000000000000";
    assert_errors(
        c,
        &[
            (&["MLBF.ADD", "new", ""], "ERR invalid URL"),
            (&["MLBF.ADD", "new", "   "], "ERR invalid URL"),
            (&["MLBF.ADD", "new", "http:///path"], "ERR invalid URL"),
            (&["MLBF.EXISTS", "u", "http://"], "ERR invalid URL"),
            (&["MLBF.RESERVE", "u", "100", "0.01"], "ERR item exists"),
            (&["MLBF.RESERVE", "str", "100", "0.01"], "ERR item exists"),
            (
                &["MLBF.RESERVE", "new", "0", "0.01"],
                "ERR (capacity should be larger than 0)",
            ),
            (
                &["MLBF.RESERVE", "new", "100", "1.5"],
                "ERR (0 < error rate range < 1)",
            ),
            (&["MLBF.RESERVE", "new", "100", "nan"], "ERR bad error rate"),
            (&["MLBF.RESERVE", "new", "100", "x"], "ERR bad error rate"),
            (
                &["MLBF.RESERVE", "new", "100", "0.01", "LAYERS", "0"],
                "ERR bad layers",
            ),
            (
                &["MLBF.RESERVE", "new", "100", "0.01", "LAYERS", "33"],
                "ERR bad layers",
            ),
            (
                &["MLBF.RESERVE", "new", "100", "0.01", "DEPTH", "3"],
                "ERR unknown argument",
            ),
            (&["MLBF.RESERVE", "new", huge, "0.01"], "MAX-BYTES"),
            (&["MLBF.RESERVE", "new", "100"], "wrong number of arguments"),
            (
                &["MLBF.RESERVE", "new", "100", "0.01", "LAYERS"],
                "wrong number of arguments",
            ),
            (&["MLBF.ADD", "u"], "wrong number of arguments"),
            (
                &["MLBF.ADD", "u", "a.b", "c.d"],
                "wrong number of arguments",
            ),
            (&["MLBF.EXISTS", "u"], "wrong number of arguments"),
            (&["MLBF.INFO"], "wrong number of arguments"),
            (&["MLBF.INFO", "new"], "ERR not found"),
            (&["MLBF.ADD", "str", "a.b"], "WRONGTYPE"),
            (&["MLBF.EXISTS", "tk", "a.b"], "WRONGTYPE"),
            (&["MLBF.INFO", "tk"], "WRONGTYPE"),
            (&["BF.EXISTS", "u", "a.b"], "WRONGTYPE"),
            (&["TOPK.ADD", "u", "a.b"], "WRONGTYPE"),
        ],
    );
    let e = wire_err(c, &[b"MLBF.ADD", b"new", b"\xff\xfe/x"]);
    assert!(e.contains("not UTF-8"), "{e}");
    assert_eq!(q::<i64>(c, &["EXISTS", "new"]), 0, "nothing was created");
}

fn fill(c: &mut redis::Connection) {
    let _: () = q(c, &["TOPK.RESERVE", "tk", "5", "16", "4", "0.9"]);
    let _: () = q(c, &["MLBF.RESERVE", "ml", "500", "0.01", "LAYERS", "3"]);
    for (i, it) in items("x", 60).iter().enumerate() {
        // Narrow rows and 60 items: many decays, so the generator's state matters.
        let n = ((i % 7) * (i % 5) + 1).to_string();
        let _: Vec<Option<String>> = q(c, &["TOPK.INCRBY", "tk", it, &n]);
        let _: Vec<Option<String>> = q(c, &["TOPK.ADD", "tk", it, "x3", "x4"]);
        let _: i64 = q(
            c,
            &["MLBF.ADD", "ml", &format!("site{}.example/{it}/p", i % 4)],
        );
    }
}

/// Answers for both types, to compare before and after persistence.
fn answers(c: &mut redis::Connection) -> Vec<Value> {
    let probes = items("x", 80);
    let mut out = Vec::new();
    for cmd in ["TOPK.QUERY", "TOPK.COUNT"] {
        let mut a = vec![cmd, "tk"];
        a.extend(probes.iter().map(String::as_str));
        out.push(q::<Value>(c, &a));
    }
    out.push(q::<Value>(c, &["TOPK.LIST", "tk", "WITHCOUNT"]));
    out.push(q::<Value>(c, &["TOPK.INFO", "tk"]));
    for (i, p) in probes.iter().enumerate() {
        let u = format!("site{}.example/{p}/p", i % 4);
        out.push(q::<Value>(c, &["MLBF.EXISTS", "ml", &u]));
    }
    out.push(q::<Value>(c, &["MLBF.INFO", "ml"]));
    out
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
        wait_aof_rewrite(c);
    }
    // appendonly yes: the restart loads the rewritten AOF (TOPK/MLBF.LOADCHUNK).
    s.restart(&[]);
    let c = &mut s.con();
    assert_eq!(answers(c), before, "BGREWRITEAOF + restart");
    for (k, k2) in [("tk", "tk2"), ("ml", "ml2")] {
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
    // The decay generator travels with the value: the same writes on the original and on the
    // copy (made after a reload and an AOF replay) give identical structures.
    for key in ["tk", "tk2"] {
        for it in items("y", 40) {
            let _: Vec<Option<String>> = q(c, &["TOPK.INCRBY", key, &it, "3"]);
        }
    }
    let dg: Vec<String> = q(c, &["DEBUG", "DIGEST-VALUE", "tk", "tk2"]);
    assert_eq!(dg[0], dg[1], "same writes, same top-k");
    let dg: Vec<String> = q(c, &["DEBUG", "DIGEST-VALUE", "tk", "tk3"]);
    assert_ne!(dg[0], dg[1], "digest follows the contents");
    // BLOOMERY.DUMP: the library's file format, loadable by the library (and so the CLI).
    let b: Vec<u8> = q(c, &["BLOOMERY.DUMP", "tk"]);
    let t = TopK::from_bytes(&b).unwrap();
    let listed: Vec<String> = q(c, &["TOPK.LIST", "tk"]);
    let lib: Vec<String> = t
        .list()
        .iter()
        .map(|(k, _)| String::from_utf8(k.to_vec()).unwrap())
        .collect();
    assert_eq!(listed, lib);
    assert_eq!(
        q::<Vec<i64>>(c, &["TOPK.COUNT", "tk", "x3"])[0] as u64,
        t.count("x3")
    );
    let b: Vec<u8> = q(c, &["BLOOMERY.DUMP", "ml"]);
    let m = MultiLayerBloomFilter::from_bytes(&b).unwrap();
    assert!(m.contains("site1.example/x5/p").unwrap());
    // SCANDUMP / LOADCHUNK round trip.
    for ty in ["TOPK", "MLBF"] {
        let key = if ty == "TOPK" { "tk" } else { "ml" };
        let mut it = 0i64;
        let mut chunks = Vec::new();
        loop {
            let (next, data): (i64, Vec<u8>) =
                q(c, &[&format!("{ty}.SCANDUMP"), key, &it.to_string()]);
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
        let dg: Vec<String> = q(c, &["DEBUG", "DIGEST-VALUE", key, &copy]);
        assert_eq!(dg[0], dg[1], "{ty} LOADCHUNK");
    }
    // Forged top-k bytes (decay 2, checksum fixed) are refused and the half-loaded key removed.
    let good: Vec<u8> = q(c, &["BLOOMERY.DUMP", "tk"]);
    let mut b = good.clone();
    b[72 + 16..72 + 24].copy_from_slice(&2.0f64.to_le_bytes());
    reseal(&mut b);
    let h = u32::from_le_bytes(b[12..16].try_into().unwrap()) as usize;
    let _: () = redis::cmd("TOPK.LOADCHUNK")
        .arg("forged")
        .arg(h)
        .arg(&b[..h])
        .query(c)
        .unwrap();
    let e = redis::cmd("TOPK.LOADCHUNK")
        .arg("forged")
        .arg(b.len())
        .arg(&b[h..])
        .query::<Value>(c)
        .unwrap_err()
        .to_string();
    assert!(e.contains("invalid chunk"), "{e}");
    assert_eq!(q::<i64>(c, &["EXISTS", "forged"]), 0);
    // A top-k header announced into an MLBF key's loader is refused.
    let e = redis::cmd("MLBF.LOADCHUNK")
        .arg("forged")
        .arg(h)
        .arg(&good[..h])
        .query::<Value>(c)
        .unwrap_err()
        .to_string();
    assert!(e.contains("invalid chunk"), "{e}");
    // SAVE + restart without the AOF.
    let after = answers(c);
    let _: () = q(c, &["SAVE"]);
    s.stop();
    let s2 = Server::start_on(s.port, d.path(), &[], &[]);
    assert_eq!(answers(&mut s2.con()), after, "SAVE + restart");
}
