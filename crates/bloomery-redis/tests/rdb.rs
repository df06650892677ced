//! The RDB encoding: values of encoding version 1 (one string of file bytes), written by
//! earlier versions (`tests/fixtures/*-v1.dump`), still load; values are saved in pieces
//! (version 2), a value larger than a piece included, through `DEBUG RELOAD`, `DUMP` and
//! `RESTORE`.

mod common;

use common::{crc64, have_redis, q, tmp, Server};

/// The encoding version in a `DUMP` payload of a module value: the payload starts with the
/// RDB type (7: a module value) and the module type's 64-bit id (after the 0x81 length
/// prefix, big-endian), whose low 10 bits are the version.
fn encver(dump: &[u8]) -> u64 {
    assert_eq!(&dump[..2], &[7, 0x81], "a module value");
    u64::from_be_bytes(dump[2..10].try_into().unwrap()) & 1023
}

fn restore(c: &mut redis::Connection, key: &str, payload: &[u8]) {
    let _: () = redis::cmd("RESTORE")
        .arg(key)
        .arg(0)
        .arg(payload)
        .query(c)
        .unwrap();
}

/// `BF.RESERVE bf 0.01 100 EXPANSION 2`, `BF.ADD bf item-1` … `item-300` (two sub-filters).
const BF_V1: &[u8] = include_bytes!("fixtures/bf-v1.dump");
/// `CF.RESERVE cf 1000`, `CF.ADD cf a`, `CF.ADD cf b` twice.
const CF_V1: &[u8] = include_bytes!("fixtures/cf-v1.dump");
/// `TOPK.RESERVE tk 3`, `TOPK.INCRBY tk x 10 y 5 z 1 w 7`.
const TK_V1: &[u8] = include_bytes!("fixtures/tk-v1.dump");

fn answers(c: &mut redis::Connection) -> (Vec<i64>, Vec<i64>, Vec<i64>, Vec<String>) {
    let mut exists = vec!["BF.MEXISTS".to_string(), "bf".into()];
    exists.extend((1..=310).map(|i| format!("item-{i}")));
    let exists: Vec<&str> = exists.iter().map(String::as_str).collect();
    let info: Vec<redis::Value> = q(c, &["BF.INFO", "bf"]);
    let ints = info
        .iter()
        .filter_map(|v| match v {
            redis::Value::Int(n) => Some(*n),
            _ => None,
        })
        .collect();
    (
        q(c, &exists),
        ints,
        vec![
            q(c, &["CF.COUNT", "cf", "a"]),
            q(c, &["CF.COUNT", "cf", "b"]),
            q(c, &["CF.COUNT", "cf", "c"]),
        ],
        q(c, &["TOPK.LIST", "tk"]),
    )
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn values_of_encoding_version_1_still_load() {
    if !have_redis() {
        return;
    }
    let d = tmp();
    let s = Server::start_in(d.path(), &[], &[]);
    let c = &mut s.con();
    for (key, v1) in [("bf", BF_V1), ("cf", CF_V1), ("tk", TK_V1)] {
        assert_eq!(encver(v1), 1, "{key}");
        restore(c, key, v1);
    }
    let (hits, info, counts, top) = answers(c);
    // no false negative among the 300 items; the shape as made
    assert!(hits[..300].iter().all(|&h| h == 1));
    assert_eq!(info, [300, 976, 2, 300, 2], "BF.INFO");
    assert_eq!(counts, [1, 2, 0]);
    assert_eq!(top, ["x", "w", "y"]);
    let before = answers(c);
    // saved again in the current encoding, they reload unchanged
    let _: () = q(c, &["DEBUG", "RELOAD"]);
    assert_eq!(answers(c), before, "after DEBUG RELOAD");
    for key in ["bf", "cf", "tk"] {
        let now: Vec<u8> = q(c, &["DUMP", key]);
        assert_eq!(encver(&now), 2, "{key}");
    }
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn a_value_larger_than_a_piece_saves_and_loads() {
    if !have_redis() {
        return;
    }
    let d = tmp();
    // uncompressed: the payload's length shows the value's
    let s = Server::start_in(d.path(), &[], &["--rdbcompression", "no"]);
    let c = &mut s.con();
    // about 5.4 MB of bits: the header and two pieces (4 MiB at most each)
    let _: () = q(c, &["BF.RESERVE", "big", "0.001", "3000000", "NONSCALING"]);
    let items: Vec<String> = (0..2000).map(|i| format!("k{i}")).collect();
    let mut add = vec!["BF.MADD", "big"];
    add.extend(items.iter().map(String::as_str));
    let _: Vec<i64> = q(c, &add);
    let mut exists = add.clone();
    exists[0] = "BF.MEXISTS";
    let info = |c: &mut redis::Connection| q::<Vec<redis::Value>>(c, &["BF.INFO", "big"]);
    let digest =
        |c: &mut redis::Connection, key: &str| q::<Vec<String>>(c, &["DEBUG", "DIGEST-VALUE", key]);
    let (before, shape, sum) = (info(c), q::<Vec<i64>>(c, &exists), digest(c, "big"));
    assert!(shape.iter().all(|&h| h == 1));

    let dump: Vec<u8> = q(c, &["DUMP", "big"]);
    assert_eq!(encver(&dump), 2);
    assert!(dump.len() > 5_000_000, "{}", dump.len());
    restore(c, "copy", &dump);
    assert_eq!(digest(c, "copy"), sum, "RESTORE");
    let _: () = q(c, &["DEBUG", "RELOAD"]);
    assert_eq!(info(c), before, "after DEBUG RELOAD");
    assert_eq!(q::<Vec<i64>>(c, &exists), shape);
    assert_eq!(digest(c, "big"), sum, "after DEBUG RELOAD");
    assert_eq!(digest(c, "copy"), sum);
    // a truncated payload (resealed, so only the module's checks stand in the way) is refused
    // (the payload ends with the 2-byte RDB version and the CRC-64)
    let (body, version) = (
        &dump[..dump.len() - 10],
        &dump[dump.len() - 10..dump.len() - 8],
    );
    let mut cut = body[..body.len() - 1000].to_vec();
    cut.extend_from_slice(version);
    let crc = crc64(&cut);
    cut.extend_from_slice(&crc.to_le_bytes());
    let r = redis::cmd("RESTORE")
        .arg("cut")
        .arg(0)
        .arg(&cut)
        .query::<()>(c);
    assert!(r.is_err(), "a truncated value was accepted");
    assert_eq!(q::<String>(c, &["PING"]), "PONG");
}
