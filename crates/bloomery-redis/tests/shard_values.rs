//! The shard values of a sharded filter (`bloomery::shard`, what `bloomery cluster push`
//! loads): a shard cut from a file in the salted layout (what `bloomery create -n -p` makes at
//! 1%) is held, answered and persisted exactly as a shard cut from a sectors file — `BF.ADD`,
//! `BF.EXISTS` (the module's own entry points), `BF.MADD`, `BF.MEXISTS`, `BF.INFO`,
//! `SCANDUMP`/`LOADCHUNK`, `DUMP`/`RESTORE`, `DEBUG RELOAD` (RDB), an AOF rewrite and restart,
//! `MEMORY USAGE` — each answer the one the library's shard gives. A salted value whose bytes
//! were forged to a shape the salted layout cannot have, or to an unknown layout byte, is
//! refused by `LOADCHUNK` and `RESTORE`.

mod common;

use bloomery::builders::BlockLayout;
use bloomery::shard::Layout;
use bloomery::{BlockedBloomFilter, Filter, KeyHasher, Persist, ScalableBloomFilter};
use common::{crc64, have_redis, items, patch_file_bytes, q, reseal, Server};
use redis::Value;

/// Shard 0 of 2 of a 20,000-key filter at 1% in `layout` holding 12,000 members, as the
/// library holds it, and the sharded filter's layout.
fn shard(layout: BlockLayout) -> (ScalableBloomFilter, Layout) {
    let mut b = BlockedBloomFilter::builder()
        .capacity(20_000)
        .fpr(0.01)
        .hasher(KeyHasher::with_seed(5));
    if layout == BlockLayout::Sectors {
        b = b.layout(layout);
    }
    let mut f = b.try_build().unwrap();
    assert_eq!(f.layout(), layout);
    for k in items("m", 12_000) {
        f.insert(k.as_str());
    }
    let l = Layout::of_filter(&f, 2).unwrap();
    assert_eq!(l.block_layout(), layout);
    let s = l.split(&f, 0).unwrap();
    // through the value's bytes, as the module will hold it
    (ScalableBloomFilter::from_bytes(&s.to_bytes()).unwrap(), l)
}

/// Feed file-format bytes to `BF.LOADCHUNK key`: the header, then the rest.
fn loadchunk(c: &mut redis::Connection, key: &str, bytes: &[u8]) -> Result<(), String> {
    let h = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    for (end, chunk) in [(h, &bytes[..h]), (bytes.len(), &bytes[h..])] {
        redis::cmd("BF.LOADCHUNK")
            .arg(key)
            .arg(end)
            .arg(chunk)
            .query::<()>(c)
            .map_err(|e| format!("{} {}", e.code().unwrap_or(""), e.detail().unwrap_or("")))?;
    }
    Ok(())
}

/// Every SCANDUMP chunk of `key`, in order.
fn scan_all(c: &mut redis::Connection, key: &str) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut it = 0i64;
    loop {
        let (next, data): (i64, Vec<u8>) = q(c, &["BF.SCANDUMP", key, &it.to_string()]);
        if next == 0 {
            return out;
        }
        out.push((next, data));
        it = next;
    }
}

fn probes() -> Vec<String> {
    let mut p = items("m", 12_000);
    p.extend(items("stranger", 20_000));
    p.extend(items("late", 3_000));
    p
}

/// The answers of `key` for `keys`: through `BF.MEXISTS` in batches, and through one
/// `BF.EXISTS` each (pipelined, the module's own entry point); both must agree.
fn answers(c: &mut redis::Connection, key: &str, keys: &[String]) -> Vec<bool> {
    let mut multi = Vec::with_capacity(keys.len());
    for part in keys.chunks(1000) {
        let r: Vec<bool> = redis::cmd("BF.MEXISTS")
            .arg(key)
            .arg(part)
            .query(c)
            .unwrap();
        multi.extend(r);
    }
    let mut p = redis::pipe();
    for k in keys {
        p.cmd("BF.EXISTS").arg(key).arg(k);
    }
    let single: Vec<bool> = p.query(c).unwrap();
    assert_eq!(multi, single, "BF.MEXISTS and BF.EXISTS differ on `{key}`");
    single
}

fn local_answers(f: &ScalableBloomFilter, keys: &[String]) -> Vec<bool> {
    keys.iter().map(|k| f.contains(k.as_str())).collect()
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn salted_shards_answer_and_persist_as_sectors_shards() {
    if !have_redis() {
        eprintln!("SKIP: redis-server not found");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let mut s = Server::start_in(
        d.path(),
        &[],
        &["--appendonly", "yes", "--appendfsync", "always"],
    );
    let probes = probes();
    // (key, layout id in the value's trailer, the library's shard)
    let mut held = Vec::new();
    let mut sizes = Vec::new();
    for (key, layout, id) in [
        ("shard-sec", BlockLayout::Sectors, 1u8),
        ("shard-sal", BlockLayout::Salted, 2u8),
    ] {
        let (mut local, sharded) = shard(layout);
        let c = &mut s.con();
        loadchunk(c, key, &local.to_bytes()).unwrap();
        let bytes: Vec<u8> = q(c, &["BLOOMERY.DUMP", key]);
        let params = u32::from_le_bytes(bytes[28..32].try_into().unwrap()) as usize;
        assert_eq!(
            bytes[72 + params - 1],
            id,
            "{key}: the trailer's layout byte"
        );
        assert_eq!(
            bytes[24],
            local.hasher().algorithm().id(),
            "{key}: the hash"
        );
        // the members the shard holds (those routed to shard 0) are all found
        let mine: Vec<String> = probes[..12_000]
            .iter()
            .filter(|k| sharded.shard_of(k.as_bytes()) == 0)
            .cloned()
            .collect();
        assert!(mine.len() > 5_000, "{}", mine.len());
        assert!(
            answers(c, key, &mine).iter().all(|&b| b),
            "{key}: a member not found"
        );
        assert_eq!(
            answers(c, key, &probes),
            local_answers(&local, &probes),
            "{key}"
        );
        // the same inserts on both: BF.ADD one by one (pipelined), then BF.MADD
        let late = items("late", 1_500);
        let mut p = redis::pipe();
        for k in &late[..500] {
            p.cmd("BF.ADD").arg(key).arg(k);
        }
        let added: Vec<bool> = p.query(c).unwrap();
        let want: Vec<bool> = late[..500]
            .iter()
            .map(|k| local.try_insert(k.as_str()).unwrap())
            .collect();
        assert_eq!(added, want, "{key}: BF.ADD");
        let madd: Vec<bool> = redis::cmd("BF.MADD")
            .arg(key)
            .arg(&late[500..])
            .query(c)
            .unwrap();
        let want: Vec<bool> = late[500..]
            .iter()
            .map(|k| local.try_insert(k.as_str()).unwrap())
            .collect();
        assert_eq!(madd, want, "{key}: BF.MADD");
        let now = local_answers(&local, &probes);
        assert_eq!(answers(c, key, &probes), now, "{key} after the inserts");
        // BF.INFO: the shard's capacity and items, one filter, no expansion (non-scaling)
        let info: Vec<Value> = q(c, &["BF.INFO", key]);
        let field = |name: &str| {
            let at = info
                .iter()
                .position(|v| match v {
                    Value::SimpleString(s) => s == name,
                    Value::BulkString(b) => b == name.as_bytes(),
                    _ => false,
                })
                .unwrap_or_else(|| panic!("{key}: no {name} in {info:?}"));
            info[at + 1].clone()
        };
        assert_eq!(field("Capacity"), Value::Int(local.capacity() as i64));
        assert_eq!(
            field("Number of items inserted"),
            Value::Int(local.len() as i64)
        );
        assert_eq!(field("Number of filters"), Value::Int(1));
        assert_eq!(field("Expansion rate"), Value::Nil);
        // SCANDUMP into LOADCHUNK: the same bytes
        let copy = format!("{key}-copy");
        for (it, data) in scan_all(c, key) {
            let _: () = redis::cmd("BF.LOADCHUNK")
                .arg(&copy)
                .arg(it)
                .arg(data)
                .query(c)
                .unwrap();
        }
        let a: Vec<u8> = q(c, &["BLOOMERY.DUMP", key]);
        let b: Vec<u8> = q(c, &["BLOOMERY.DUMP", &copy]);
        assert_eq!(a, b, "{key}: SCANDUMP/LOADCHUNK");
        // DUMP/RESTORE
        let dumped: Vec<u8> = q(c, &["DUMP", key]);
        let restored = format!("{key}-restored");
        let _: () = redis::cmd("RESTORE")
            .arg(&restored)
            .arg(0)
            .arg(&dumped)
            .query(c)
            .unwrap();
        assert_eq!(answers(c, &restored, &probes), now, "{key}: DUMP/RESTORE");
        let mem: i64 = q(c, &["MEMORY", "USAGE", key]);
        let shard_bytes = local.filters()[0].as_words().len() as i64 * 8;
        assert!(
            mem >= shard_bytes,
            "{key}: MEMORY USAGE {mem} < {shard_bytes}"
        );
        sizes.push((field("Size"), mem));
        held.push((key, now));
    }
    // the two layouts hold the same shape: the same size and memory
    assert_eq!(
        sizes[0], sizes[1],
        "sectors vs salted: BF.INFO Size, MEMORY USAGE"
    );
    {
        let c = &mut s.con();
        let _: () = q(c, &["DEBUG", "RELOAD"]);
        for (key, now) in &held {
            assert_eq!(&answers(c, key, &probes), now, "{key}: DEBUG RELOAD");
        }
        let _: Value = q(c, &["BGREWRITEAOF"]);
        common::wait_aof_rewrite(c);
    }
    s.restart(&[]);
    let c = &mut s.con();
    for (key, now) in &held {
        assert_eq!(
            &answers(c, key, &probes),
            now,
            "{key}: AOF rewrite + restart"
        );
    }
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn forged_salted_values_are_refused() {
    if !have_redis() {
        eprintln!("SKIP: redis-server not found");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    // uncompressed strings in DUMP payloads, so the file bytes can be patched in place
    let s = Server::start_in(d.path(), &[], &["--rdbcompression", "no"]);
    let c = &mut s.con();
    loadchunk(c, "ok", &shard(BlockLayout::Salted).0.to_bytes()).unwrap();
    let held: Vec<u8> = q(c, &["BLOOMERY.DUMP", "ok"]);
    let dumped: Vec<u8> = q(c, &["DUMP", "ok"]);
    let params = u32::from_le_bytes(held[28..32].try_into().unwrap()) as usize;
    let trailer = 72 + params - 1;
    let sub = 72 + 41; // the sub-filter's blocks, then its k
    let cases: Vec<(&str, usize, Vec<u8>)> = vec![
        ("layout byte 3", trailer, vec![3]),
        ("layout byte 255", trailer, vec![255]),
        (
            "2^32 + 1 blocks",
            sub,
            ((1u64 << 32) + 1).to_le_bytes().to_vec(),
        ),
        ("k = 7", sub + 8, 7u32.to_le_bytes().to_vec()),
        (
            "hashed with xxh64",
            24,
            vec![bloomery::hashing::HashAlgorithm::Xxh64.id()],
        ),
    ];
    for (what, at, value) in cases {
        let mut forged = held.clone();
        forged[at..at + value.len()].copy_from_slice(&value);
        reseal(&mut forged);
        assert!(loadchunk(c, "lc", &forged).is_err(), "{what}: LOADCHUNK");
        assert_eq!(q::<i64>(c, &["EXISTS", "lc"]), 0, "{what}");
        let mut bad = dumped.clone();
        assert!(
            patch_file_bytes(&mut bad, &held, &forged),
            "the file bytes inside DUMP"
        );
        let n = bad.len() - 8;
        let crc = crc64(&bad[..n]);
        bad[n..].copy_from_slice(&crc.to_le_bytes());
        let r = redis::cmd("RESTORE")
            .arg("rs")
            .arg(0)
            .arg(&bad)
            .query::<Value>(c);
        assert!(r.is_err(), "{what}: RESTORE accepted");
        assert_eq!(q::<i64>(c, &["EXISTS", "rs"]), 0, "{what}");
    }
    assert_eq!(q::<String>(c, &["PING"]), "PONG");
    // the unforged value still answers
    let (local, _) = shard(BlockLayout::Salted);
    let keys = probes();
    let want = local_answers(&local, &keys);
    assert!(want.iter().any(|&b| b));
    assert_eq!(answers(c, "ok", &keys), want);
}
