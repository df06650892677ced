//! Migration from RedisBloom: the fixtures captured from RedisBloom 2.6 (SCANDUMP chunks and
//! RedisBloom's answers, see crates/bloomery/tests/fixtures/redisbloom/README.md) are loaded
//! with BF.LOADCHUNK / CF.LOADCHUNK into a server running this module, which must then answer
//! exactly as RedisBloom did — the same results for 100 000 present and 100 000 absent keys,
//! the same reply bytes in RESP2 and RESP3, the same growth as keys are added and deleted —
//! and keep the values through RDB, AOF and the migration script. RedisBloom's own RDB types
//! are refused without harm.
//!
//! Needs `redis-server` (and `python3` for the migration script test), like the other
//! integration tests.

mod common;
#[path = "../../bloomery/tests/support/redisbloom_fixtures.rs"]
mod fixtures;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use bloomery::redisbloom::RedisBloomChunkFile;
use common::{crc64, have_redis, patch_file_bytes, Server};
use fixtures::{fnv1a64, hex, Fixture};
use serde_json::{json, Value};

/// A reply, as RESP2 sends it.
#[derive(Debug, Clone, PartialEq)]
enum Reply {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Vec<Reply>),
}

impl Reply {
    /// As the fixtures record replies: strings, numbers, null, `{"error": text}`.
    fn json(&self) -> Value {
        match self {
            Reply::Simple(s) => json!(s),
            Reply::Error(e) => json!({ "error": e }),
            Reply::Int(i) => json!(i),
            Reply::Bulk(None) => Value::Null,
            Reply::Bulk(Some(b)) => json!(String::from_utf8_lossy(b)),
            Reply::Array(a) => Value::Array(a.iter().map(Reply::json).collect()),
        }
    }
    fn array(self) -> Vec<Reply> {
        match self {
            Reply::Array(a) => a,
            other => panic!("not an array: {other:?}"),
        }
    }
    fn int(&self) -> i64 {
        match self {
            Reply::Int(i) => *i,
            other => panic!("not an integer: {other:?}"),
        }
    }
    fn bytes(self) -> Option<Vec<u8>> {
        match self {
            Reply::Bulk(b) => b,
            other => panic!("not a bulk string: {other:?}"),
        }
    }
}

/// A plain RESP client on a socket (binary arguments, pipelines, raw reply bytes).
struct Raw {
    out: TcpStream,
    inp: BufReader<TcpStream>,
}

impl Raw {
    fn connect(port: u16) -> Self {
        let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        Self {
            out: s.try_clone().unwrap(),
            inp: BufReader::new(s),
        }
    }

    fn encode(args: &[&[u8]]) -> Vec<u8> {
        let mut b = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            b.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            b.extend_from_slice(a);
            b.extend_from_slice(b"\r\n");
        }
        b
    }

    fn line(&mut self) -> String {
        let mut l = String::new();
        self.inp.read_line(&mut l).unwrap();
        assert!(l.ends_with("\r\n"), "connection closed: {l:?}");
        l.truncate(l.len() - 2);
        l
    }

    fn read(&mut self) -> Reply {
        let l = self.line();
        let (t, rest) = l.split_at(1);
        match t {
            "+" => Reply::Simple(rest.into()),
            "-" => Reply::Error(rest.into()),
            ":" => Reply::Int(rest.parse().unwrap()),
            "$" => {
                let n: i64 = rest.parse().unwrap();
                if n < 0 {
                    return Reply::Bulk(None);
                }
                let mut b = vec![0; n as usize + 2];
                self.inp.read_exact(&mut b).unwrap();
                b.truncate(n as usize);
                Reply::Bulk(Some(b))
            }
            "*" => {
                let n: i64 = rest.parse().unwrap();
                Reply::Array((0..n.max(0)).map(|_| self.read()).collect())
            }
            _ => panic!("unexpected reply line {l:?}"),
        }
    }

    fn cmd(&mut self, args: &[&[u8]]) -> Reply {
        self.out.write_all(&Self::encode(args)).unwrap();
        self.read()
    }

    fn pipeline(&mut self, cmds: &[Vec<Vec<u8>>]) -> Vec<Reply> {
        let mut b = Vec::new();
        for c in cmds {
            let args: Vec<&[u8]> = c.iter().map(|a| &a[..]).collect();
            b.extend_from_slice(&Self::encode(&args));
        }
        self.out.write_all(&b).unwrap();
        cmds.iter().map(|_| self.read()).collect()
    }

    /// The next `n` bytes the server sends.
    fn raw(&mut self, args: &[&[u8]], n: usize) -> Vec<u8> {
        self.out.write_all(&Self::encode(args)).unwrap();
        let mut b = vec![0; n];
        self.inp.read_exact(&mut b).unwrap();
        b
    }
}

fn s(x: &str) -> &[u8] {
    x.as_bytes()
}

fn chunk_file(f: &Fixture) -> RedisBloomChunkFile {
    RedisBloomChunkFile::from_bytes(&std::fs::read(&f.chunks).unwrap()).unwrap()
}

fn family(f: &Fixture) -> &'static str {
    if f.is_bloom() {
        "BF"
    } else {
        "CF"
    }
}

fn load(c: &mut Raw, f: &Fixture) {
    let cmd = format!("{}.LOADCHUNK", family(f));
    for (it, data) in chunk_file(f).chunks {
        let r = c.cmd(&[s(&cmd), s(f.key()), it.to_string().as_bytes(), &data]);
        assert_eq!(r, Reply::Simple("OK".into()), "{}: chunk {it}", f.name);
    }
}

/// Indices of `keys` whose MEXISTS answer is not `usual`.
fn mexists(c: &mut Raw, f: &Fixture, keys: &[Vec<u8>], usual: i64) -> Vec<usize> {
    let cmd = format!("{}.MEXISTS", family(f));
    let mut odd = Vec::new();
    for (b, batch) in keys.chunks(1000).enumerate() {
        let mut args: Vec<&[u8]> = vec![s(&cmd), s(f.key())];
        args.extend(batch.iter().map(|k| &k[..]));
        for (j, r) in c.cmd(&args).array().into_iter().enumerate() {
            if r.int() != usual {
                odd.push(b * 1000 + j);
            }
        }
    }
    odd
}

/// One command per key, pipelined; `[index, reply]` of the replies other than `usual`.
fn per_key(c: &mut Raw, cmd: &str, key: &str, keys: &[Vec<u8>], usual: &Value) -> Value {
    let mut out = Vec::new();
    for (b, batch) in keys.chunks(1000).enumerate() {
        let cmds: Vec<Vec<Vec<u8>>> = batch
            .iter()
            .map(|k| vec![cmd.into(), key.into(), k.clone()])
            .collect();
        for (j, r) in c.pipeline(&cmds).into_iter().enumerate() {
            let v = r.json();
            if v != *usual {
                out.push(json!([b * 1000 + j, v]));
            }
        }
    }
    Value::Array(out)
}

/// The value's state as the fixtures record it (SCANDUMP header, data digest, INFO).
fn state(c: &mut Raw, f: &Fixture) -> Value {
    let fam = family(f);
    let scandump = format!("{fam}.SCANDUMP");
    let mut chunks = Vec::new();
    let mut it = 0i64;
    loop {
        let r = c
            .cmd(&[s(&scandump), s(f.key()), it.to_string().as_bytes()])
            .array();
        let next = r[0].int();
        if next == 0 {
            break;
        }
        chunks.push(r.into_iter().nth(1).unwrap().bytes().unwrap());
        it = next;
    }
    let info = c.cmd(&[s(&format!("{fam}.INFO")), s(f.key())]).json();
    let header = if chunks.is_empty() {
        // a cuckoo filter without items: RedisBloom dumps nothing, the header is CF.INFO's
        let n = |i: usize| info[i].as_u64().unwrap();
        let mut h = Vec::new();
        for v in [n(7), n(3), n(9), n(5)] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        for v in [n(11), n(15), n(13)] {
            h.extend_from_slice(&(v as u16).to_le_bytes());
        }
        h
    } else {
        chunks.remove(0)
    };
    json!({
        "header_hex": header.iter().map(|b| format!("{b:02x}")).collect::<String>(),
        "data_fnv1a64": fnv1a64(chunks.iter().map(|d| &d[..])),
        "data_bytes": chunks.iter().map(Vec::len).sum::<usize>(),
        "info": info,
    })
}

/// The recorded raw replies, in RESP2 and RESP3.
fn probes(port: u16, f: &Fixture) {
    for p in f.json["probes"].as_array().unwrap() {
        let mut c = Raw::connect(port);
        if p["protocol"] == 3 {
            c.out
                .write_all(&Raw::encode(&[s("HELLO"), s("3")]))
                .unwrap();
            // the HELLO map: skip it by reading until the module list's end marker
            let hello = c.line();
            assert!(hello.starts_with('%'), "{hello}");
            let pairs: usize = hello[1..].parse().unwrap();
            for _ in 0..2 * pairs {
                skip3(&mut c);
            }
        }
        let args: Vec<Vec<u8>> = p["command"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| hex(a.as_str().unwrap()))
            .collect();
        let args: Vec<&[u8]> = args.iter().map(|a| &a[..]).collect();
        let want = hex(p["reply_hex"].as_str().unwrap());
        let got = c.raw(&args, want.len());
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&want),
            "{}: RESP{} reply to {:?}",
            f.name,
            p["protocol"],
            String::from_utf8_lossy(args[0])
        );
    }
}

/// Skip one RESP3 reply.
fn skip3(c: &mut Raw) {
    let l = c.line();
    let n = || l[1..].parse::<i64>().unwrap();
    match &l[..1] {
        "$" | "=" | "!" if n() >= 0 => {
            let mut b = vec![0; n() as usize + 2];
            c.inp.read_exact(&mut b).unwrap();
        }
        "*" | "~" | ">" => (0..n().max(0)).for_each(|_| skip3(c)),
        "%" => (0..2 * n().max(0)).for_each(|_| skip3(c)),
        _ => {}
    }
}

fn check_answers(c: &mut Raw, f: &Fixture) {
    let j = &f.json;
    assert_eq!(state(c, f), j["state"], "{}: state", f.name);
    if j["present"].is_null() {
        return; // cf-empty
    }
    let present = f.keys(&["present"]);
    let absent = f.keys(&["absent"]);
    if f.is_bloom() {
        let n = j["inserted"].as_u64().unwrap() as usize;
        assert_eq!(
            mexists(c, f, &present[..n], 1),
            f.indices(&["present_not_1"])
        );
        let card = c.cmd(&[s("BF.CARD"), s(f.key())]);
        assert_eq!(card.json(), j["card"]);
    } else {
        assert_eq!(mexists(c, f, &present, 1), f.indices(&["present_not_1"]));
        let counted = j["count_keys"].as_u64().unwrap() as usize;
        for (keys, usual, rec) in [
            (&present, 1, "present_count_not_1"),
            (&absent, 0, "absent_count_not_0"),
        ] {
            let n = counted.min(keys.len());
            let got = per_key(c, "CF.COUNT", f.key(), &keys[..n], &json!(usual));
            let want: Vec<Value> = fixtures::counts_of(&j[rec])
                .into_iter()
                .map(|(i, v)| json!([i, v]))
                .collect();
            assert_eq!(got, json!(want), "{}: {rec}", f.name);
        }
    }
    assert_eq!(
        mexists(c, f, &absent, 0),
        f.indices(&["absent_1"]),
        "{}: absent keys",
        f.name
    );
}

fn then_bloom(c: &mut Raw, f: &Fixture) {
    let t = &f.json["then"];
    let more = f.keys(&["then", "madd"]);
    let (mut zero, mut errors, mut replies) = (Vec::new(), Vec::new(), 0);
    for (b, batch) in more.chunks(1000).enumerate() {
        let mut args: Vec<&[u8]> = vec![s("BF.MADD"), s(f.key())];
        args.extend(batch.iter().map(|k| &k[..]));
        let r = c.cmd(&args).array();
        let got = r.len();
        for (j, v) in r.into_iter().enumerate() {
            match v {
                Reply::Int(0) => zero.push(b * 1000 + j),
                Reply::Int(1) => {}
                Reply::Error(e) => errors.push(json!([b * 1000 + j, e])),
                other => panic!("{other:?}"),
            }
        }
        replies += got;
        if got < batch.len() {
            break;
        }
    }
    let r = &t["madd_replies"];
    assert_eq!(replies as u64, r["replies"].as_u64().unwrap(), "{}", f.name);
    assert_eq!(zero, fixtures::indices_of(&r["zero"]), "{}: adds", f.name);
    assert_eq!(json!(errors), r["errors"], "{}: add errors", f.name);
    assert_eq!(c.cmd(&[s("BF.CARD"), s(f.key())]).json(), t["card"]);
}

fn then_cuckoo(c: &mut Raw, f: &Fixture) {
    let t = &f.json["then"];
    let present = f.keys(&["present"]);
    let d = t["del_first"].as_u64().unwrap() as usize;
    let del = per_key(c, "CF.DEL", f.key(), &present[..d], &json!(1));
    assert_eq!(del, t["del_not_1"], "{}: deletes", f.name);
    let add = per_key(c, "CF.ADD", f.key(), &f.keys(&["then", "add"]), &json!(1));
    assert_eq!(add, t["add_not_1"], "{}: adds", f.name);
    let (a, b) = (
        t["addnx_range"][0].as_u64().unwrap() as usize,
        t["addnx_range"][1].as_u64().unwrap() as usize,
    );
    let nx = per_key(c, "CF.ADDNX", f.key(), &present[a..b], &json!(0));
    assert_eq!(nx, t["addnx_not_0"], "{}: unique adds", f.name);
}

/// Load fixture `name` with LOADCHUNK and check every recorded answer, then the persistence
/// of the value through an RDB reload.
fn replay(name: &'static str) {
    if !have_redis() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start_in(dir.path(), &[], &[]);
    let mut c = Raw::connect(srv.port);
    let f = fixtures::load(name);
    load(&mut c, &f);
    let ty = c.cmd(&[s("TYPE"), s(f.key())]);
    let want = if f.is_bloom() {
        "BLMRY-RBB"
    } else {
        "BLMRY-RBC"
    };
    assert_eq!(ty, Reply::Simple(want.into()));
    check_answers(&mut c, &f);
    if f.json["probes"].is_array() {
        probes(srv.port, &f);
    }
    if f.json["then"].is_null() {
        return;
    }
    if f.is_bloom() {
        then_bloom(&mut c, &f);
    } else {
        then_cuckoo(&mut c, &f);
    }
    let after = state(&mut c, &f);
    assert_eq!(
        after, f.json["then"]["state"],
        "{}: state after more",
        f.name
    );
    // RDB: the library's file format inside the module's type, fully validated on load
    assert_eq!(
        c.cmd(&[s("DEBUG"), s("RELOAD")]),
        Reply::Simple("OK".into())
    );
    assert_eq!(state(&mut c, &f), after, "{}: after DEBUG RELOAD", f.name);
}

macro_rules! replay_tests {
    ($($t:ident => $name:literal),* $(,)?) => {$(
        #[test]
        #[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
        fn $t() {
            replay($name);
        }
    )*
    #[test]
    fn every_fixture_is_loaded() {
        assert_eq!(fixtures::NAMES.to_vec(), vec![$($name),*]);
    }};
}

replay_tests!(
    loadchunk_bf_scaling => "bf-scaling",
    loadchunk_bf_default => "bf-default",
    loadchunk_bf_nonscaling => "bf-nonscaling",
    loadchunk_bf_legacy_pow2 => "bf-legacy-pow2",
    loadchunk_bf_legacy_noround => "bf-legacy-noround",
    loadchunk_bf_force64_pow2 => "bf-force64-pow2",
    loadchunk_cf_main => "cf-main",
    loadchunk_cf_exp2 => "cf-exp2",
    loadchunk_cf_noexp => "cf-noexp",
    loadchunk_cf_empty => "cf-empty",
);

/// `DUMP` payloads of moved values written by the module before their encoding version 2
/// (one string): fixture `bf-default` loaded with `BF.LOADCHUNK`, and `cf-exp2` with
/// `CF.LOADCHUNK`.
const MOVED_V1: [(&str, &[u8]); 2] = [
    ("bf-default", include_bytes!("fixtures/rbb-v1.dump")),
    ("cf-exp2", include_bytes!("fixtures/rbc-v1.dump")),
];

/// The encoding version of a module value's `DUMP` payload: the low 10 bits of the module
/// type's id, which follows the RDB type (7) and the 0x81 length prefix, big-endian.
fn encver(dump: &[u8]) -> u64 {
    assert_eq!(&dump[..2], &[7, 0x81], "a module value");
    u64::from_be_bytes(dump[2..10].try_into().unwrap()) & 1023
}

fn dump(c: &mut Raw, key: &str) -> Vec<u8> {
    match c.cmd(&[s("DUMP"), s(key)]) {
        Reply::Bulk(Some(d)) => d,
        other => panic!("DUMP {key}: {other:?}"),
    }
}

fn restore(c: &mut Raw, key: &str, payload: &[u8]) -> Reply {
    c.cmd(&[s("RESTORE"), s(key), s("0"), payload])
}

/// Moved values saved whole (encoding version 1) still load and answer as RedisBloom did;
/// they are saved again in pieces (version 2), which reload, restore and digest the same; a
/// payload of one type under the other's id is refused.
#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn moved_values_of_encoding_version_1_still_load() {
    if !have_redis() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start_in(dir.path(), &[], &[]);
    let mut c = Raw::connect(srv.port);
    let mut v2 = Vec::new();
    for (name, v1) in MOVED_V1 {
        let f = fixtures::load(name);
        assert_eq!(encver(v1), 1, "{name}");
        assert_eq!(restore(&mut c, f.key(), v1), Reply::Simple("OK".into()));
        check_answers(&mut c, &f);
        let now = dump(&mut c, f.key());
        assert_eq!(encver(&now), 2, "{name}");
        assert_eq!(restore(&mut c, "copy", &now), Reply::Simple("OK".into()));
        let digest = |c: &mut Raw, key: &str| c.cmd(&[s("DEBUG"), s("DIGEST-VALUE"), s(key)]);
        assert_eq!(digest(&mut c, "copy"), digest(&mut c, f.key()), "{name}");
        assert_eq!(c.cmd(&[s("DEL"), s("copy")]), Reply::Int(1));
        v2.push(now);
    }
    assert_eq!(
        c.cmd(&[s("DEBUG"), s("RELOAD")]),
        Reply::Simple("OK".into())
    );
    for (name, _) in MOVED_V1 {
        check_answers(&mut c, &fixtures::load(name));
    }
    // the cuckoo filter's pieces under the Bloom type's id (resealed: the payload ends with
    // the 2-byte RDB version and the CRC-64 of everything before it)
    let mut forged = v2[1][..v2[1].len() - 8].to_vec();
    forged[2..10].copy_from_slice(&v2[0][2..10]);
    let crc = crc64(&forged);
    forged.extend_from_slice(&crc.to_le_bytes());
    let r = restore(&mut c, "forged", &forged);
    assert!(matches!(r, Reply::Error(_)), "{r:?}");
    assert_eq!(c.cmd(&[s("EXISTS"), s("forged")]), Reply::Int(0));
    assert_eq!(c.cmd(&[s("PING")]), Reply::Simple("PONG".into()));
}

/// The AOF rewrite emits RedisBloom's LOADCHUNK sequence; replaying it restores the values.
#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn aof_rewrite_replays_moved_values() {
    if !have_redis() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let extra = ["--appendonly", "yes", "--aof-use-rdb-preamble", "no"];
    let mut srv = Server::start_in(dir.path(), &[], &extra);
    let names = ["bf-default", "cf-exp2", "cf-empty", "bf-legacy-noround"];
    let fx: Vec<Fixture> = names.iter().map(|n| fixtures::load(n)).collect();
    let mut c = Raw::connect(srv.port);
    for f in &fx {
        load(&mut c, f);
    }
    let before: Vec<Value> = fx.iter().map(|f| state(&mut c, f)).collect();
    c.cmd(&[s("BGREWRITEAOF")]);
    wait_rewrite(&mut c);
    let aof = std::fs::read_dir(dir.path().join("appendonlydir"))
        .unwrap()
        .filter_map(|e| e.ok())
        .find(|e| e.file_name().to_string_lossy().contains(".base.aof"))
        .map(|e| std::fs::read(e.path()).unwrap())
        .expect("a base AOF");
    assert!(contains(&aof, b"BF.LOADCHUNK") && contains(&aof, b"CF.LOADCHUNK"));
    drop(c);
    srv.restart(&[]);
    let mut c = Raw::connect(srv.port);
    for (f, b) in fx.iter().zip(&before) {
        assert_eq!(&state(&mut c, f), b, "{} after AOF replay", f.name);
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn wait_rewrite(c: &mut Raw) {
    for _ in 0..500 {
        let info = c.cmd(&[s("INFO"), s("persistence")]).bytes().unwrap();
        let info = String::from_utf8(info).unwrap();
        if info.contains("aof_rewrite_in_progress:0") && info.contains("aof_rewrite_scheduled:0") {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("AOF rewrite did not finish");
}

/// `scripts/migrate-redisbloom.py copy` moves every RedisBloom key from one server to
/// another (here both run this module, which answers SCANDUMP as RedisBloom does), keeps time
/// to live, and `--verify` reads the values back.
#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn migration_script_copies_every_key() {
    if !have_redis() || !have_python() {
        return;
    }
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (old, new) = (
        Server::start_in(d1.path(), &[], &[]),
        Server::start_in(d2.path(), &[], &[]),
    );
    let mut c = Raw::connect(old.port);
    let fx: Vec<Fixture> = fixtures::NAMES.iter().map(|n| fixtures::load(n)).collect();
    for f in &fx {
        load(&mut c, f);
    }
    c.cmd(&[s("PEXPIRE"), s("fx:bf:default"), s("600000")]);
    // bloomery's own values are not RedisBloom's: the script leaves them
    c.cmd(&[s("BF.ADD"), s("own:bf"), s("x")]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/migrate-redisbloom.py");
    let run = |args: &[&str]| {
        let out = Command::new("python3")
            .arg(&script)
            .args(args)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (src, dst) = (
        format!("redis://127.0.0.1:{}", old.port),
        format!("redis://127.0.0.1:{}", new.port),
    );
    let (ok, log) = run(&["copy", "--from", &src, "--to", &dst, "--verify"]);
    assert!(ok, "{log}");
    assert!(log.contains("10 keys copied, 0 failed"), "{log}");
    let mut n = Raw::connect(new.port);
    for f in &fx {
        assert_eq!(state(&mut n, f), state(&mut c, f), "{} copied", f.name);
    }
    let ttl = n.cmd(&[s("PTTL"), s("fx:bf:default")]).int();
    assert!(ttl > 500_000 && ttl <= 600_000, "{ttl}");
    assert_eq!(n.cmd(&[s("EXISTS"), s("own:bf")]).int(), 0);
    // a second copy refuses to overwrite, and replaces with --replace
    let (ok, log) = run(&["copy", "--from", &src, "--to", &dst]);
    assert!(!ok && log.contains("exists on the target"), "{log}");
    let (ok, log) = run(&[
        "copy",
        "--from",
        &src,
        "--to",
        &dst,
        "--replace",
        "--match",
        "fx:cf:*",
    ]);
    assert!(ok && log.contains("4 keys copied"), "{log}");
    // save to files, load them elsewhere
    let files = tempfile::tempdir().unwrap();
    let d3 = tempfile::tempdir().unwrap();
    let third = Server::start_in(d3.path(), &[], &[]);
    let dir = files.path().to_str().unwrap();
    let (ok, log) = run(&["save", "--from", &src, "--dir", dir]);
    assert!(ok, "{log}");
    let (ok, log) = run(&[
        "load",
        "--to",
        &format!("redis://127.0.0.1:{}", third.port),
        "--dir",
        dir,
        "--verify",
    ]);
    assert!(ok && log.contains("10 keys loaded"), "{log}");
    let mut t = Raw::connect(third.port);
    for f in &fx {
        assert_eq!(
            state(&mut t, f),
            state(&mut c, f),
            "{} saved and loaded",
            f.name
        );
    }
}

fn have_python() -> bool {
    let ok = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "python3 is required in CI for the migration script test"
        );
        eprintln!("skipping: python3 not installed");
    }
    ok
}

/// RedisBloom's own RDB types do not load here: RESTORE of its DUMP payloads is an error
/// reply, and a server started on its RDB file refuses the file and stops with a message
/// naming the type, before it serves anything — nothing crashes, nothing half-loads.
#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn redisbloom_rdb_values_are_refused_cleanly() {
    if !have_redis() {
        return;
    }
    let rec: Value =
        serde_json::from_slice(&std::fs::read(fixtures::dir().join("rdb.json")).unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    {
        let srv = Server::start_in(dir.path(), &[], &[]);
        let mut c = Raw::connect(srv.port);
        for (key, payload) in rec["keys"].as_object().unwrap() {
            let r = c.cmd(&[
                s("RESTORE"),
                s(key),
                s("0"),
                &hex(payload.as_str().unwrap()),
            ]);
            assert!(
                matches!(&r, Reply::Error(e) if e.contains("Bad data format")),
                "{key}: {r:?}"
            );
        }
        assert_eq!(c.cmd(&[s("PING")]), Reply::Simple("PONG".into()));
        assert_eq!(c.cmd(&[s("DBSIZE")]).int(), 0);
    }
    // a server given RedisBloom's RDB file stops at once, naming the missing type
    std::fs::copy(
        fixtures::dir().join("redisbloom-values.rdb"),
        dir.path().join("dump.rdb"),
    )
    .unwrap();
    let port = common::free_port();
    let log_path = dir.path().join("refused.log");
    let mut child = Command::new(common::server_bin())
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--dir"])
        .arg(dir.path())
        .args(["--save", "", "--appendonly", "no", "--logfile"])
        .arg(&log_path)
        .arg("--loadmodule")
        .arg(common::module_path())
        .spawn()
        .unwrap();
    // Redis stops loading at the first value of an unknown module type, runs its RDB check
    // (which exits the process; the check itself needs no module and passes) and never serves
    let stopped = (0..500).any(|_| {
        std::thread::sleep(Duration::from_millis(20));
        child.try_wait().unwrap().is_some()
    });
    if !stopped {
        let _ = child.kill();
    }
    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
    assert!(
        stopped,
        "redis-server kept running on RedisBloom's RDB file: {log}"
    );
    assert!(
        log.contains("no matching module type 'MBbloom")
            && !log.contains("Ready to accept connections")
            && !log.contains("crashed")
            && !log.contains("BUG REPORT"),
        "the refusal names RedisBloom's type: {log}"
    );
}

/// LOADCHUNK refuses malformed RedisBloom chunks with RedisBloom's errors, and headers past
/// MAX-BYTES with bloomery's, allocating nothing.
#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn loadchunk_refuses_bad_redisbloom_chunks() {
    if !have_redis() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start_in(dir.path(), &["MAX-BYTES", "100000"], &[]);
    let mut c = Raw::connect(srv.port);
    let err = |r: Reply| match r {
        Reply::Error(e) => e,
        other => panic!("expected an error, got {other:?}"),
    };
    let bf = chunk_file(&fixtures::load("bf-default")).chunks;
    let cf = chunk_file(&fixtures::load("cf-exp2")).chunks;
    // truncated headers
    let r = c.cmd(&[s("BF.LOADCHUNK"), s("b"), s("1"), &bf[0].1[..30]]);
    assert_eq!(err(r), "ERR received bad data");
    let r = c.cmd(&[s("CF.LOADCHUNK"), s("c"), s("1"), &cf[0].1[..30]]);
    assert_eq!(err(r), "Invalid header");
    // a forged link (hash count not matching its bits per entry)
    let mut h = bf[0].1.clone();
    h[20 + 40] ^= 1;
    let r = c.cmd(&[s("BF.LOADCHUNK"), s("b"), s("1"), &h]);
    assert_eq!(err(r), "ERR received bad data");
    // a cuckoo header with a bucket count that is not a power of two
    let mut h = cf[0].1.clone();
    h[8] = 3;
    let r = c.cmd(&[s("CF.LOADCHUNK"), s("c"), s("1"), &h]);
    assert_eq!(err(r), "Couldn't create filter!");
    // past MAX-BYTES: refused before allocating
    let big = fixtures::load("bf-scaling");
    let r = c.cmd(&[
        s("BF.LOADCHUNK"),
        s("b"),
        s("1"),
        &chunk_file(&big).chunks[0].1,
    ]);
    assert!(err(r).contains("MAX-BYTES"));
    let big = fixtures::load("cf-main");
    let r = c.cmd(&[
        s("CF.LOADCHUNK"),
        s("c"),
        s("1"),
        &chunk_file(&big).chunks[0].1,
    ]);
    assert!(err(r).contains("MAX-BYTES"));
    assert_eq!(c.cmd(&[s("DBSIZE")]).int(), 0);
    // data chunks that do not fit
    let it = |i: i64| i.to_string().into_bytes();
    assert_eq!(
        c.cmd(&[s("BF.LOADCHUNK"), s("b"), s("1"), &bf[0].1]),
        Reply::Simple("OK".into())
    );
    let r = c.cmd(&[s("BF.LOADCHUNK"), s("b"), &it(1_000_000), s("xx")]);
    assert_eq!(err(r), "ERR invalid offset - no link found");
    let (end, first) = (&bf[1].0, &bf[1].1);
    let mut long = first.clone();
    long.push(0);
    let r = c.cmd(&[s("BF.LOADCHUNK"), s("b"), &it(end + 1), &long]);
    assert_eq!(err(r), "ERR invalid chunk - Too big for current filter");
    let r = c.cmd(&[s("BF.LOADCHUNK"), s("b"), s("1"), &bf[0].1]);
    assert_eq!(err(r), "ERR received bad data");
    assert_eq!(
        c.cmd(&[s("CF.LOADCHUNK"), s("c"), s("1"), &cf[0].1]),
        Reply::Simple("OK".into())
    );
    let r = c.cmd(&[s("CF.LOADCHUNK"), s("c"), s("1"), &cf[0].1]);
    assert_eq!(err(r), "ERR item exists");
    let r = c.cmd(&[s("CF.LOADCHUNK"), s("c"), s("0"), s("x")]);
    assert_eq!(err(r), "Invalid position");
    let r = c.cmd(&[s("CF.LOADCHUNK"), s("c"), &it(1_000_000), s("x")]);
    assert_eq!(err(r), "Couldn't load chunk!");
    // a moved value is of its own type: the other family's commands see the wrong type
    let r = c.cmd(&[s("CF.EXISTS"), s("b"), s("x")]);
    assert!(err(r).starts_with("WRONGTYPE"));
    let r = c.cmd(&[s("BF.EXISTS"), s("c"), s("x")]);
    assert!(err(r).starts_with("WRONGTYPE"));
    let r = c.cmd(&[s("BF.RESERVE"), s("b"), s("0.01"), s("100")]);
    assert_eq!(err(r), "ERR item exists");
    // and bloomery's own values keep their own chunk sequence
    c.cmd(&[s("BF.ADD"), s("own"), s("x")]);
    let r = c.cmd(&[s("BF.SCANDUMP"), s("own"), s("0")]).array();
    assert!(r[0].int() > 1);
    // BLOOMERY.DUMP hands out the library's file format (kind 22)
    let bytes = c.cmd(&[s("BLOOMERY.DUMP"), s("b")]).bytes().unwrap();
    assert_eq!(&bytes[..8], b"BLOOMERY");
    assert_eq!(u16::from_le_bytes([bytes[10], bytes[11]]), 22);
}

/// `bytes` with the first occurrence of `find` replaced by `with` and the file's checksum
/// trailer made valid again.
fn forge_file(bytes: &[u8], find: &[u8], with: &[u8]) -> Vec<u8> {
    let at = bytes
        .windows(find.len())
        .position(|w| w == find)
        .expect("the field in the file");
    let mut b = bytes.to_vec();
    b[at..at + with.len()].copy_from_slice(with);
    let n = b.len() - 8;
    let sum = xxhash_rust::xxh3::xxh3_64(&b[..n]);
    b[n..].copy_from_slice(&sum.to_le_bytes());
    b
}

/// Values moved from RedisBloom are held to the limits of `BF.RESERVE` and `CF.RESERVE` on
/// every load path: an `EXPANSION` past 32768, which the library's decoding accepts (RedisBloom's
/// header has room for it), is refused by `LOADCHUNK`'s header and by `RESTORE` (whose decoder
/// is the RDB loader's), leaving nothing behind and the server up.
#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn forged_moved_values_are_refused_on_every_load_path() {
    if !have_redis() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // uncompressed strings in DUMP payloads, so the file bytes can be patched in place
    let srv = Server::start_in(dir.path(), &[], &["--rdbcompression", "no"]);
    let mut c = Raw::connect(srv.port);
    let err = |r: Reply| match r {
        Reply::Error(e) => e,
        other => panic!("expected an error, got {other:?}"),
    };
    let big = 40_000u32;
    // LOADCHUNK headers: the chain's growth (u32 at 16), the cuckoo filter's expansion (u16 at 36)
    let bf = fixtures::load("bf-default");
    let mut h = chunk_file(&bf).chunks[0].1.clone();
    h[16..20].copy_from_slice(&big.to_le_bytes());
    assert!(bloomery::redisbloom::RedisBloomFilter::from_header_chunk(&h, 1 << 30).is_ok());
    let r = c.cmd(&[s("BF.LOADCHUNK"), s("b"), s("1"), &h]);
    assert_eq!(err(r), "ERR received bad data");
    // (one sub-filter: a forged expansion alone does not make it larger)
    let cf = fixtures::load("cf-noexp");
    let mut h = chunk_file(&cf).chunks[0].1.clone();
    h[36..38].copy_from_slice(&(big as u16).to_le_bytes());
    assert!(bloomery::redisbloom::RedisBloomCuckooFilter::from_header_chunk(&h, 1 << 30).is_ok());
    let r = c.cmd(&[s("CF.LOADCHUNK"), s("c"), s("1"), &h]);
    assert_eq!(err(r), "Couldn't create filter!");
    assert_eq!(c.cmd(&[s("DBSIZE")]).int(), 0);
    // RESTORE: a valid moved value's DUMP with its file bytes forged (and resealed)
    for f in [&bf, &cf] {
        load(&mut c, f);
        let held = c.cmd(&[s("BLOOMERY.DUMP"), s(f.key())]).bytes().unwrap();
        let forged = if f.is_bloom() {
            use bloomery::Persist;
            let v = bloomery::redisbloom::RedisBloomFilter::from_bytes(&held).unwrap();
            let mut find = v.options().to_le_bytes().to_vec();
            find.extend_from_slice(&v.growth().to_le_bytes());
            let mut with = find.clone();
            with[4..].copy_from_slice(&big.to_le_bytes());
            let forged = forge_file(&held, &find, &with);
            assert!(bloomery::redisbloom::RedisBloomFilter::from_bytes(&forged).is_ok());
            forged
        } else {
            use bloomery::Persist;
            let v = bloomery::redisbloom::RedisBloomCuckooFilter::from_bytes(&held).unwrap();
            let mut find = u32::from(v.max_iterations()).to_le_bytes().to_vec();
            find.extend_from_slice(&u32::from(v.expansion()).to_le_bytes());
            let mut with = find.clone();
            with[4..].copy_from_slice(&big.to_le_bytes());
            let forged = forge_file(&held, &find, &with);
            assert!(bloomery::redisbloom::RedisBloomCuckooFilter::from_bytes(&forged).is_ok());
            forged
        };
        let dumped = c.cmd(&[s("DUMP"), s(f.key())]).bytes().unwrap();
        let mut bad = dumped.clone();
        assert!(
            patch_file_bytes(&mut bad, &held, &forged),
            "the file bytes inside DUMP"
        );
        let n = bad.len() - 8;
        let crc = crc64(&bad[..n]);
        bad[n..].copy_from_slice(&crc.to_le_bytes());
        // the untouched payload restores (so the refusal below is the forged field's)
        let r = c.cmd(&[s("RESTORE"), s("copy"), s("0"), &dumped]);
        assert_eq!(r, Reply::Simple("OK".into()), "{}", f.name);
        let r = c.cmd(&[s("RESTORE"), s("forged"), s("0"), &bad]);
        assert!(matches!(r, Reply::Error(_)), "{}: {r:?}", f.name);
        assert_eq!(c.cmd(&[s("EXISTS"), s("forged")]).int(), 0);
        assert_eq!(c.cmd(&[s("DEL"), s("copy")]).int(), 1);
    }
    assert_eq!(c.cmd(&[s("PING")]), Reply::Simple("PONG".into()));
    assert!(
        srv.log().contains("expansion 40000 outside"),
        "the reason is logged"
    );
}

/// `used_memory` without the clients' buffers (see tests/memory.rs).
fn used_by_data(c: &mut Raw) -> i64 {
    let start = std::time::Instant::now();
    loop {
        let info = c.cmd(&[s("INFO"), s("memory")]).bytes().unwrap();
        let info = String::from_utf8(info).unwrap();
        let field = |name: &str| -> Option<i64> {
            let prefix = format!("{name}:");
            info.lines()
                .find_map(|l| l.strip_prefix(prefix.as_str()))
                .and_then(|v| v.trim().parse().ok())
        };
        // values freed on the background thread (lazy free) are gone first
        let pending = field("lazyfree_pending_objects").unwrap_or(0);
        if pending == 0 || start.elapsed() > std::time::Duration::from_secs(10) {
            let get = |name: &str| field(name).unwrap_or_else(|| panic!("{name} in INFO memory"));
            return get("used_memory") - get("mem_clients_normal");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Moved values are on Redis's allocator and `MEMORY USAGE` is what they hold: loading them
/// adds it to `used_memory`, deleting them gives it back.
#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn memory_usage_of_moved_values_is_what_they_hold() {
    if !have_redis() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let quiet = [
        "--slowlog-log-slower-than",
        "-1",
        "--latency-tracking",
        "no",
    ];
    let srv = Server::start_in(dir.path(), &[], &quiet);
    let mut c = Raw::connect(srv.port);
    // the server's cron resizes clients' buffers on its own schedule, between two readings
    c.cmd(&[s("DEBUG"), s("PAUSE-CRON"), s("1")]);
    let (bf, cf) = (fixtures::load("bf-scaling"), fixtures::load("cf-main"));
    // once before, deleted: what the server sets up once is not part of any value
    load(&mut c, &bf);
    load(&mut c, &cf);
    c.cmd(&[s("DEL"), s(bf.key()), s(cf.key())]);
    let before = used_by_data(&mut c);
    load(&mut c, &bf);
    load(&mut c, &cf);
    let after = used_by_data(&mut c);
    let usage = |c: &mut Raw, k: &str| c.cmd(&[s("MEMORY"), s("USAGE"), s(k)]).int();
    let (b, k) = (usage(&mut c, bf.key()), usage(&mut c, cf.key()));
    assert!(b > 100_000 && k > 100_000, "{b} {k}");
    let tolerance = (b + k) / 100 + 2048;
    let added = after - before;
    assert!(
        (added - b - k).abs() <= tolerance,
        "grew by {added}, MEMORY USAGE says {b} + {k}"
    );
    c.cmd(&[s("DEL"), s(bf.key()), s(cf.key())]);
    let freed = after - used_by_data(&mut c);
    assert!(
        (freed - b - k).abs() <= tolerance,
        "freed {freed}, MEMORY USAGE said {b} + {k}"
    );
}
