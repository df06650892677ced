//! What RedisBloom clients see: the reply types of both protocols (booleans in RESP3), the
//! shapes of partial failures, the error texts clients match on, `CMS.INITBYPROB`'s
//! dimensions, and the rates of filters created by `BF.ADD` and `BF.RESERVE` (measured on
//! their own keys: at most the target, no false negatives). The expected values are
//! RedisBloom 2.6's documented and implemented behaviour.

mod common;

use common::{err, have_redis, is_err, q, raw, Server};
use redis::Value;

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn resp3_booleans_and_resp2_integers() {
    if !have_redis() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let s = Server::start_in(d.path(), &[], &[]);
    let c3 = &mut s.con3();
    let t = Value::Boolean(true);
    let f = Value::Boolean(false);
    for (args, want) in [
        (&["BF.ADD", "bf", "a"][..], t.clone()),
        (&["BF.ADD", "bf", "a"], f.clone()),
        (&["BF.EXISTS", "bf", "a"], t.clone()),
        (&["BF.EXISTS", "bf", "zz"], f.clone()),
        (&["BF.EXISTS", "missing", "a"], f.clone()),
        (
            &["BF.MADD", "bf", "a", "b"],
            Value::Array(vec![f.clone(), t.clone()]),
        ),
        (
            &["BF.MEXISTS", "bf", "a", "zz"],
            Value::Array(vec![t.clone(), f.clone()]),
        ),
        (
            &["BF.INSERT", "bf", "ITEMS", "c", "a"],
            Value::Array(vec![t.clone(), f.clone()]),
        ),
        (&["CF.ADD", "cf", "a"], t.clone()),
        (&["CF.ADDNX", "cf", "a"], f.clone()),
        (&["CF.ADDNX", "cf", "b"], t.clone()),
        (&["CF.EXISTS", "cf", "a"], t.clone()),
        (&["CF.EXISTS", "missing", "a"], f.clone()),
        (
            &["CF.MEXISTS", "cf", "a", "zz"],
            Value::Array(vec![t.clone(), f.clone()]),
        ),
        (
            &["CF.INSERT", "cf", "ITEMS", "c"],
            Value::Array(vec![t.clone()]),
        ),
        // CF.INSERTNX and CF.COUNT stay integers in RESP3, as in RedisBloom
        (
            &["CF.INSERTNX", "cf", "ITEMS", "c", "d"],
            Value::Array(vec![Value::Int(0), Value::Int(1)]),
        ),
        (&["CF.COUNT", "cf", "a"], Value::Int(1)),
        (&["CF.DEL", "cf", "a"], t.clone()),
        (&["CF.DEL", "cf", "a"], f.clone()),
        (&["BF.CARD", "bf"], Value::Int(3)),
    ] {
        assert_eq!(raw(c3, args), want, "{args:?}");
    }
    let _: () = q(c3, &["TOPK.RESERVE", "tk", "2"]);
    let _: Value = q(c3, &["TOPK.ADD", "tk", "x", "x", "y"]);
    assert_eq!(
        raw(c3, &["TOPK.QUERY", "tk", "x", "nope"]),
        Value::Array(vec![t.clone(), f.clone()])
    );
    // BF.INFO with one field: a one-entry map in RESP3 …
    assert_eq!(
        raw(c3, &["BF.INFO", "bf", "CAPACITY"]),
        Value::Map(vec![(
            Value::SimpleString("Capacity".into()),
            Value::Int(100)
        )])
    );
    assert_eq!(
        raw(c3, &["BF.INFO", "bf", "EXPANSION"]),
        Value::Map(vec![(
            Value::SimpleString("Expansion rate".into()),
            Value::Int(2)
        )])
    );
    // … a one-element array in RESP2; and integers for every yes/no.
    let c2 = &mut s.con();
    assert_eq!(
        raw(c2, &["BF.INFO", "bf", "CAPACITY"]),
        Value::Array(vec![Value::Int(100)])
    );
    for (args, want) in [
        (&["BF.ADD", "bf", "e"][..], Value::Int(1)),
        (&["BF.EXISTS", "bf", "zz"], Value::Int(0)),
        (&["CF.ADDNX", "cf", "e"], Value::Int(1)),
        (&["CF.DEL", "cf", "e"], Value::Int(1)),
        (
            &["TOPK.QUERY", "tk", "x", "nope"],
            Value::Array(vec![Value::Int(1), Value::Int(0)]),
        ),
    ] {
        assert_eq!(raw(c2, args), want, "{args:?}");
    }
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn partial_failures_have_redisbloom_shapes() {
    if !have_redis() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let s = Server::start_in(d.path(), &[], &[]);
    let c = &mut s.con();
    // A full non-scaling filter ends BF.MADD's array with its error …
    let _: () = q(c, &["BF.RESERVE", "ns", "0.01", "2", "NONSCALING"]);
    let Value::Array(v) = raw(c, &["BF.MADD", "ns", "a", "b", "c", "d"]) else {
        panic!("an array");
    };
    assert_eq!(v.len(), 3, "{v:?}");
    assert_eq!(v[..2], [Value::Int(1), Value::Int(1)]);
    assert!(is_err(&v[2], "ERR non scaling filter is full"), "{v:?}");
    // … and BF.INSERT's: when full from the start, one error.
    let Value::Array(v) = raw(c, &["BF.INSERT", "ns", "ITEMS", "x", "y", "z"]) else {
        panic!("an array");
    };
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(is_err(&v[0], "ERR non scaling filter is full"), "{v:?}");
    // CF.INSERT on a full filter: -1 per item that did not fit (RESP2).
    let _: () = q(
        c,
        &["CF.RESERVE", "cf", "4", "BUCKETSIZE", "1", "EXPANSION", "0"],
    );
    let items: Vec<String> = (0..40).map(|i| format!("i{i}")).collect();
    let mut args = vec!["CF.INSERT", "cf", "ITEMS"];
    args.extend(items.iter().map(String::as_str));
    let Value::Array(v) = raw(c, &args) else {
        panic!("an array");
    };
    assert_eq!(v.len(), 40);
    assert!(v.contains(&Value::Int(-1)) && v.contains(&Value::Int(1)));
    // … and false in RESP3.
    let c3 = &mut s.con3();
    let Value::Array(v) = raw(c3, &args) else {
        panic!("an array");
    };
    assert!(v.iter().all(|x| *x == Value::Boolean(false)), "{v:?}");
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn error_texts_are_redisbloom_s() {
    if !have_redis() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let s = Server::start_in(d.path(), &[], &[]);
    let c = &mut s.con();
    let _: () = q(c, &["BF.RESERVE", "bf", "0.01", "100"]);
    let _: () = q(c, &["CMS.INITBYDIM", "cms", "100", "5"]);
    let _: () = q(c, &["TOPK.RESERVE", "tk", "3"]);
    for (args, want) in [
        (
            &["BF.RESERVE", "x", "0.01", "100", "EXPANSION", "0"][..],
            "ERR expansion should be greater or equal to 1",
        ),
        (&["BF.RESERVE", "x", "abc", "100"], "ERR bad error rate"),
        (
            &["BF.RESERVE", "x", "1.5", "100"],
            "ERR (0 < error rate range < 1) ",
        ),
        (&["BF.RESERVE", "x", "0.01", "x"], "ERR bad capacity"),
        (
            &["BF.RESERVE", "x", "0.01", "0"],
            "ERR (capacity should be larger than 0)",
        ),
        (
            &[
                "BF.RESERVE",
                "x",
                "0.01",
                "100",
                "EXPANSION",
                "2",
                "NONSCALING",
            ],
            "Nonscaling filters cannot expand",
        ),
        (&["BF.RESERVE", "bf", "0.01", "100"], "ERR item exists"),
        (
            &["BF.INSERT", "x", "ERROR", "1.5", "ITEMS", "a"],
            "Bad argument received",
        ),
        (
            &["BF.INSERT", "x", "CAPACITY", "x", "ITEMS", "a"],
            "Bad capacity",
        ),
        (
            &["BF.INSERT", "x", "ERROR", "x", "ITEMS", "a"],
            "Bad error rate",
        ),
        (
            &["BF.INSERT", "x", "EXPANSION", "x", "ITEMS", "a"],
            "Bad expansion",
        ),
        (
            &["BF.INSERT", "x", "BOGUS", "ITEMS", "a"],
            "Unknown argument received",
        ),
        (&["BF.INFO", "bf", "COLOUR"], "Invalid information value"),
        (&["BF.INFO", "missing"], "ERR not found"),
        (
            &["CF.RESERVE", "x", "3"],
            "Capacity must be at least (BucketSize * 2)",
        ),
        (
            &["CF.RESERVE", "x", "100", "BUCKETSIZE", "256"],
            "BUCKETSIZE: value must be an integer between 1 and 255, inclusive.",
        ),
        (
            &["CF.RESERVE", "x", "100", "MAXITERATIONS", "0"],
            "MAXITERATIONS: value must be an integer between 1 and 65535, inclusive.",
        ),
        (
            &["CF.RESERVE", "x", "100", "EXPANSION", "32769"],
            "EXPANSION: value must be an integer between 0 and 32768, inclusive.",
        ),
        (&["CF.RESERVE", "x", "x"], "Bad capacity"),
        (&["CF.DEL", "missing", "a"], "Not found"),
        (&["CF.INFO", "missing"], "ERR not found"),
        (
            &["CMS.INCRBY", "cms", "a", "-1"],
            "CMS: Number cannot be negative",
        ),
        (&["CMS.INCRBY", "cms", "a", "x"], "CMS: Cannot parse number"),
        (
            &["CMS.INCRBY", "missing", "a", "1"],
            "CMS: key does not exist",
        ),
        (
            &["CMS.INITBYDIM", "cms", "10", "2"],
            "CMS: key already exists",
        ),
        (&["CMS.MERGE", "cms", "x", "a"], "CMS: invalid numkeys"),
        (&["TOPK.LIST", "tk", "COUNTS"], "WITHCOUNT keyword expected"),
        (&["TOPK.RESERVE", "tk", "3"], "TopK: key already exists"),
        (&["TOPK.ADD", "missing", "a"], "TopK: key does not exist"),
    ] {
        assert_eq!(err(c, args), want, "{args:?}");
    }
}

/// RedisBloom's `CMS.INITBYPROB` dimensions, computed here as its source does (single-precision
/// logarithms for the depth).
fn redisbloom_dims(epsilon: f64, delta: f64) -> (i64, i64) {
    let width = (2.0 / epsilon).ceil() as i64;
    let depth = ((delta as f32).log10() / 0.5f32.log10()).ceil() as i64;
    (width, depth)
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn cms_initbyprob_has_redisbloom_s_dimensions_and_merges_with_initbydim() {
    if !have_redis() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let s = Server::start_in(d.path(), &[], &[]);
    let c = &mut s.con();
    for (i, (e, p)) in [
        ("0.001", "0.01"),
        ("0.01", "0.001"),
        ("0.1", "0.5"),
        ("0.0001", "0.0001"),
        ("0.5", "0.9"),
        ("0.003", "1e-9"),
    ]
    .into_iter()
    .enumerate()
    {
        let key = format!("p{i}");
        let _: () = q(c, &["CMS.INITBYPROB", &key, e, p]);
        let info: Vec<Value> = q(c, &["CMS.INFO", &key]);
        let (w, dep) = redisbloom_dims(e.parse().unwrap(), p.parse().unwrap());
        assert_eq!(
            (info[1].clone(), info[3].clone()),
            (Value::Int(w), Value::Int(dep)),
            "{e} {p}"
        );
        // a sketch made by INITBYDIM with those dimensions merges with it
        let dim = format!("d{i}");
        let _: () = q(
            c,
            &["CMS.INITBYDIM", &dim, &w.to_string(), &dep.to_string()],
        );
        let _: Vec<i64> = q(c, &["CMS.INCRBY", &dim, "a", "3"]);
        let _: Vec<i64> = q(c, &["CMS.INCRBY", &key, "a", "4"]);
        let _: () = q(c, &["CMS.MERGE", &key, "2", &key, &dim]);
        assert_eq!(q::<Vec<i64>>(c, &["CMS.QUERY", &key, "a"]), [7]);
    }
    // more rows than the module keeps (δ below about 5·10⁻²⁰) is refused, not truncated
    assert_eq!(
        err(c, &["CMS.INITBYPROB", "tiny", "0.01", "1e-21"]),
        "CMS: invalid init arguments"
    );
}

/// The rate of a filter, measured: `probes` keys never added, and every added key found.
fn measured_rate(c: &mut redis::Connection, key: &str, added: usize, probes: usize) -> f64 {
    for chunk in (0..added).collect::<Vec<_>>().chunks(1000) {
        let mut cmd = redis::cmd("BF.MEXISTS");
        cmd.arg(key);
        for i in chunk {
            cmd.arg(format!("item-{i}"));
        }
        let found: Vec<i64> = cmd.query(c).unwrap();
        assert!(found.iter().all(|&f| f == 1), "a false negative in {key}");
    }
    let mut hits = 0;
    for start in (0..probes).step_by(1000) {
        let mut cmd = redis::cmd("BF.MEXISTS");
        cmd.arg(key);
        for i in start..start + 1000 {
            cmd.arg(format!("absent-{i}"));
        }
        let found: Vec<i64> = cmd.query(c).unwrap();
        hits += found.iter().sum::<i64>();
    }
    hits as f64 / probes as f64
}

fn add_all(c: &mut redis::Connection, key: &str, n: usize) {
    for chunk in (0..n).collect::<Vec<_>>().chunks(1000) {
        let mut cmd = redis::cmd("BF.MADD");
        cmd.arg(key);
        for i in chunk {
            cmd.arg(format!("item-{i}"));
        }
        let _: Vec<i64> = cmd.query(c).unwrap();
    }
}

/// Filters made by `BF.ADD` (grown from 100 items to 11 sub-filters) and by `BF.RESERVE`
/// (filled to capacity, scaling and not) deliver at most their target rate. The tolerance is
/// three standard deviations of the binomial count at the target.
#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn created_filters_keep_their_target_rate() {
    if !have_redis() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let s = Server::start_in(d.path(), &[], &[]);
    let c = &mut s.con();
    let probes = 50_000;
    let within = |rate: f64, target: f64| {
        let sigma = (target * (1.0 - target) / probes as f64).sqrt();
        rate <= target + 3.0 * sigma
    };
    add_all(c, "grown", 120_000);
    let filters: Vec<i64> = q(c, &["BF.INFO", "grown", "FILTERS"]);
    assert!(filters[0] >= 11, "{filters:?}");
    let r = measured_rate(c, "grown", 120_000, probes);
    assert!(within(r, 0.01), "grown: {r}");
    for (key, args) in [
        ("reserved", &["0.01", "50000"][..]),
        ("reserved-tight", &["0.001", "50000"]),
        ("nonscaling", &["0.01", "50000", "NONSCALING"]),
    ] {
        let mut cmd = vec!["BF.RESERVE", key];
        cmd.extend_from_slice(args);
        let _: () = q(c, &cmd);
        add_all(c, key, 50_000);
        let filters: Vec<i64> = q(c, &["BF.INFO", key, "FILTERS"]);
        assert_eq!(filters, [1], "{key} did not grow at capacity");
        let target: f64 = args[0].parse().unwrap();
        let r = measured_rate(c, key, 50_000, probes);
        assert!(within(r, target), "{key}: {r} over {target}");
    }
}
