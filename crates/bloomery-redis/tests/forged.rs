//! Every loaded byte distrusted: values of every type whose bytes were forged (a parameter the
//! create command refuses, with a valid checksum) are refused on each load path — `RESTORE`,
//! `LOADCHUNK` and an RDB file at startup — and the server stays up (or, for its own RDB
//! file, refuses to start) with nothing half-loaded. A value whose bytes say it may grow
//! without bound grows only to `MAX-BYTES`; a cuckoo filter's eviction limit is the one
//! `CF.RESERVE` allows.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bloomery::{
    BlockedCountingBloomFilter, CountMinSketch, CountingBloomFilter, CuckooFilter, Filter,
    IterativeBloomFilter, MultiLayerBloomFilter, Persist, ScalableBloomFilter, TopK,
};
use common::{crc64, have_redis, patch_file_bytes, q, reseal, Server};
use redis::Value;

fn forge(valid: &[u8], at: usize, value: &[u8]) -> Vec<u8> {
    let mut b = valid.to_vec();
    b[at..at + value.len()].copy_from_slice(value);
    reseal(&mut b);
    b
}

/// A type: the LOADCHUNK command, valid file bytes, and a parameter (offset, value) forged to
/// a value the type's create command refuses.
struct Case {
    name: &'static str,
    loadchunk: &'static str,
    valid: Vec<u8>,
    at: usize,
    value: Vec<u8>,
}

impl Case {
    /// Load the valid bytes under `key` and return the server's own bytes of the value (the
    /// module may store a field differently, e.g. its own memory limit) and their forgery.
    fn load(&self, c: &mut redis::Connection, key: &str) -> (Vec<u8>, Vec<u8>) {
        loadchunk(c, self.loadchunk, key, &self.valid).unwrap();
        let held: Vec<u8> = q(c, &["BLOOMERY.DUMP", key]);
        let forged = forge(&held, self.at, &self.value);
        (held, forged)
    }
}

fn cases() -> Vec<Case> {
    let mut bf = ScalableBloomFilter::try_new(100, 0.01).unwrap();
    let mut cf = CuckooFilter::try_new(100).unwrap();
    let mut cms = CountMinSketch::try_with_shape(100, 4).unwrap();
    let mut topk = TopK::builder(5).try_build().unwrap();
    let mut cbf = CountingBloomFilter::try_new(100, 0.01).unwrap();
    let mut bcbf = BlockedCountingBloomFilter::try_new(100, 0.01).unwrap();
    let mut ibf = IterativeBloomFilter::try_new(100, 0.01).unwrap();
    let mut mlbf = MultiLayerBloomFilter::builder()
        .capacity(100)
        .fpr(0.01)
        .try_build()
        .unwrap();
    for i in 0..50u32 {
        let k = format!("k{i}");
        bf.insert(k.as_str());
        cf.insert(k.as_str()).unwrap();
        cms.insert(k.as_str());
        topk.incr_by(k.as_bytes(), 1);
        cbf.insert(k.as_str());
        bcbf.insert(k.as_str());
        ibf.insert(k.as_str());
        mlbf.insert(&format!("https://example.org/{i}/x")).unwrap();
    }
    // (offset, value) of a parameter each create command refuses; parameters start at 72.
    let case = |name, loadchunk, valid: Vec<u8>, at: usize, value: &[u8]| Case {
        name,
        loadchunk,
        valid,
        at,
        value: value.to_vec(),
    };
    vec![
        // expansion 40000 (BF.RESERVE: at most 32768)
        case(
            "bf",
            "BF.LOADCHUNK",
            bf.to_bytes(),
            88,
            &40_000u32.to_le_bytes(),
        ),
        // max iterations 2^31 + 20 (CF.RESERVE: at most 65535)
        case(
            "cf",
            "CF.LOADCHUNK",
            cf.to_bytes(),
            84,
            &2_147_483_668u32.to_le_bytes(),
        ),
        // depth 65 (CMS.INITBYDIM: at most 64)
        case(
            "cms",
            "CMS.LOADCHUNK",
            cms.to_bytes(),
            80,
            &65u32.to_le_bytes(),
        ),
        // k = 2^21 (TOPK.RESERVE: at most 2^20)
        case(
            "topk",
            "TOPK.LOADCHUNK",
            topk.to_bytes(),
            72,
            &(1u32 << 21).to_le_bytes(),
        ),
        // 33-bit counters (CBF.RESERVE: at most 32)
        case("cbf", "CBF.LOADCHUNK", cbf.to_bytes(), 84, &[33]),
        // 33-bit counters (BCBF.RESERVE: at most 32)
        case("bcbf", "BCBF.LOADCHUNK", bcbf.to_bytes(), 84, &[33]),
        // 65 hash functions (more than any sizing gives; the library's limit is 64)
        case(
            "ibf",
            "IBF.LOADCHUNK",
            ibf.to_bytes(),
            80,
            &65u32.to_le_bytes(),
        ),
        // 33 layers (MLBF.RESERVE: at most 32)
        case(
            "mlbf",
            "MLBF.LOADCHUNK",
            mlbf.to_bytes(),
            72,
            &33u32.to_le_bytes(),
        ),
    ]
}

fn header_len(bytes: &[u8]) -> usize {
    u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize
}

/// Feed `bytes` to `cmd key` as SCANDUMP would chunk them: the header, then the rest.
fn loadchunk(c: &mut redis::Connection, cmd: &str, key: &str, bytes: &[u8]) -> Result<(), String> {
    let h = header_len(bytes);
    for (end, chunk) in [(h, &bytes[..h]), (bytes.len(), &bytes[h..])] {
        redis::cmd(cmd)
            .arg(key)
            .arg(end)
            .arg(chunk)
            .query::<()>(c)
            .map_err(|e| format!("{} {}", e.code().unwrap_or(""), e.detail().unwrap_or("")))?;
    }
    Ok(())
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn forged_values_of_every_type_are_refused_by_restore_and_loadchunk() {
    if !have_redis() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    // uncompressed strings in DUMP payloads, so the file bytes can be patched in place
    let s = Server::start_in(d.path(), &[], &["--rdbcompression", "no"]);
    let c = &mut s.con();
    for case in cases() {
        // The valid bytes load (so what follows tests the forged field, nothing else).
        let ok = format!("{}:ok", case.name);
        let (held, forged) = case.load(c, &ok);
        // LOADCHUNK: the header passes, the last chunk is refused, nothing is left.
        let key = format!("{}:lc", case.name);
        let e = loadchunk(c, case.loadchunk, &key, &forged).unwrap_err();
        assert!(e.contains("invalid chunk"), "{}: {e}", case.name);
        assert_eq!(q::<i64>(c, &["EXISTS", &key]), 0, "{}", case.name);
        // RESTORE: the DUMP of the valid value with the forged file bytes in place.
        let dumped: Vec<u8> = q(c, &["DUMP", &ok]);
        let mut bad = dumped.clone();
        assert!(
            patch_file_bytes(&mut bad, &held, &forged),
            "the file bytes inside DUMP"
        );
        let n = bad.len() - 8;
        let crc = crc64(&bad[..n]);
        bad[n..].copy_from_slice(&crc.to_le_bytes());
        let key = format!("{}:restore", case.name);
        let r = redis::cmd("RESTORE")
            .arg(&key)
            .arg(0)
            .arg(&bad)
            .query::<Value>(c);
        assert!(r.is_err(), "{}: forged RESTORE accepted", case.name);
        assert_eq!(q::<i64>(c, &["EXISTS", &key]), 0, "{}", case.name);
        assert_eq!(q::<String>(c, &["PING"]), "PONG", "{}", case.name);
    }
    assert!(
        s.log().contains("refusing to load"),
        "the refusals are logged"
    );
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn forged_values_of_every_type_are_refused_in_an_rdb_file() {
    if !have_redis() {
        return;
    }
    for case in cases() {
        let d = tempfile::tempdir().unwrap();
        // Uncompressed strings and no RDB checksum, so the file bytes can be patched in place.
        let raw = ["--rdbcompression", "no", "--rdbchecksum", "no"];
        let mut s = Server::start_in(d.path(), &[], &raw);
        let c = &mut s.con();
        let (held, forged) = case.load(c, "v");
        let _: () = q(c, &["SAVE"]);
        s.stop();
        let path = d.path().join("dump.rdb");
        let mut rdb = std::fs::read(&path).unwrap();
        assert!(
            patch_file_bytes(&mut rdb, &held, &forged),
            "the file bytes inside the RDB file"
        );
        std::fs::write(&path, &rdb).unwrap();
        // Redis refuses to start on an RDB file it cannot load, as for any corrupt file: it
        // checks the file and exits. The module says why; nothing crashes or hangs.
        let module = common::module_path();
        let started = Instant::now();
        let out = Command::new(common::server_bin())
            .args([
                "--port",
                &common::free_port().to_string(),
                "--bind",
                "127.0.0.1",
            ])
            .arg("--dir")
            .arg(d.path())
            .args(raw)
            .arg("--loadmodule")
            .arg(&module)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let log = String::from_utf8_lossy(&out.stdout);
        // (it exits after checking the file; `output` returning means it did not keep running)
        assert!(
            log.contains("not able to load"),
            "{}: started with a forged RDB:\n{log}",
            case.name
        );
        assert!(
            log.contains("refusing to load"),
            "{}: no reason logged:\n{log}",
            case.name
        );
        assert!(!log.contains("crashed"), "{}:\n{log}", case.name);
        assert!(started.elapsed() < Duration::from_secs(10), "{}", case.name);
    }
}

/// A scalable filter's bytes saying "grow by 32768, up to 2^63 bytes" (both within what
/// `BF.RESERVE` could have made, the second from a host with more memory): growth stops at the
/// module's `MAX-BYTES`.
#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn a_loaded_filter_grows_only_to_max_bytes() {
    if !have_redis() {
        return;
    }
    let limit: i64 = 1 << 20;
    let d = tempfile::tempdir().unwrap();
    let s = Server::start_in(d.path(), &["MAX-BYTES", &limit.to_string()], &[]);
    let c = &mut s.con();
    let f = ScalableBloomFilter::builder()
        .capacity(100)
        .fpr(0.01)
        .max_bytes(u64::MAX)
        .try_build()
        .unwrap();
    let valid = f.to_bytes();
    let grown = forge(&valid, 88, &32_768u32.to_le_bytes());
    let forged = forge(&grown, 101, &(1u64 << 63).to_le_bytes());
    loadchunk(c, "BF.LOADCHUNK", "bf", &forged).unwrap();
    let before: i64 = q(c, &["MEMORY", "USAGE", "bf"]);
    let items: Vec<String> = (0..300).map(|i| format!("x{i}")).collect();
    let mut madd = redis::cmd("BF.MADD");
    madd.arg("bf").arg(&items);
    // items past the first sub-filter's capacity answer an error element
    let e = madd.query::<Value>(c).unwrap_err();
    assert!(e.to_string().contains("cannot grow"), "{e}");
    let after: i64 = q(c, &["MEMORY", "USAGE", "bf"]);
    assert!(after <= limit, "{after} bytes held, MAX-BYTES {limit}");
    assert!(after < before + 4096, "grew from {before} to {after}");
    let info: Vec<i64> = q(c, &["BF.INFO", "bf", "FILTERS"]);
    assert_eq!(info, [1]);
    // Every item that went in is still found.
    assert_eq!(q::<i64>(c, &["BF.EXISTS", "bf", "x0"]), 1);
}

/// A cuckoo filter at `CF.RESERVE`'s largest eviction limit answers an insert into a full table
/// at once, and its refusal is the usual one.
#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn the_largest_eviction_limit_stays_fast() {
    if !have_redis() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let s = Server::start_in(d.path(), &[], &[]);
    let c = &mut s.con();
    let _: () = q(
        c,
        &[
            "CF.RESERVE",
            "cf",
            "64",
            "BUCKETSIZE",
            "2",
            "MAXITERATIONS",
            "65535",
            "EXPANSION",
            "0",
        ],
    );
    let mut full = false;
    for i in 0..200 {
        let t = Instant::now();
        let r = redis::cmd("CF.ADD")
            .arg("cf")
            .arg(format!("i{i}"))
            .query::<Value>(c);
        // debug builds are slow; a release build answers in a few milliseconds
        assert!(t.elapsed() < Duration::from_secs(2), "insert {i}");
        if let Err(e) = r {
            assert_eq!(e.code(), Some("Filter"), "{e}");
            full = true;
            break;
        }
    }
    assert!(full, "the table filled");
    assert_eq!(q::<String>(c, &["PING"]), "PONG");
}
