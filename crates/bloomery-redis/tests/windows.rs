//! `WBF.*` (the count window) and `TWBF.*` (the time window) on a real server: the window's
//! promises, a replica and an AOF restart holding exactly the primary's values (time windows
//! replicate their writes with the primary's time), SCANDUMP/LOADCHUNK, MEMORY USAGE, and
//! loaders that refuse damaged bytes.

mod common;

use bloomery::{Persist, Stats};
use common::{err, have_redis, q, reseal, Server};

fn bools(v: Vec<i64>) -> usize {
    v.into_iter().filter(|&x| x == 1).count()
}

fn madd(c: &mut redis::Connection, cmd: &str, key: &str, items: &[String]) -> Vec<i64> {
    let mut a: Vec<&str> = vec![cmd, key];
    a.extend(items.iter().map(String::as_str));
    q(c, &a)
}

fn dump(c: &mut redis::Connection, key: &str) -> Option<Vec<u8>> {
    q(c, &["BLOOMERY.DUMP", key])
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn count_window_remembers_the_window_and_forgets_the_rest() {
    if !have_redis() {
        return;
    }
    let d = common::tmp();
    let s = Server::start_in(d.path(), &[], &[]);
    let c = &mut s.con();
    let _: () = q(c, &["WBF.RESERVE", "w", "0.01", "1000"]);
    assert!(err(c, &["WBF.RESERVE", "w", "0.01", "1000"]).contains("exists"));
    assert!(err(c, &["WBF.RESERVE", "x", "2", "1000"]).contains("error rate"));
    assert!(err(c, &["WBF.RESERVE", "x", "0.01", "0"]).contains("window"));
    assert!(err(c, &["WBF.ADD", "missing", "a"]).contains("not found"));
    let keys = common::items("k", 5000);
    for chunk in keys.chunks(250) {
        let _ = madd(c, "WBF.MADD", "w", chunk);
    }
    // the last 1000 are found
    let hits = madd(c, "WBF.MEXISTS", "w", &keys[4000..]);
    assert_eq!(bools(hits), 1000);
    let one: i64 = q(c, &["WBF.EXISTS", "w", "k4999"]);
    assert_eq!(one, 1);
    // keys followed by window + slack insertions: found only as false positives
    let info: Vec<redis::Value> = q(c, &["WBF.INFO", "w"]);
    let text = format!("{info:?}");
    assert!(text.contains("Window") && text.contains("Slack"), "{text}");
    let f = bloomery::AgePartitionedBloomFilter::from_bytes(&dump(c, "w").unwrap()).unwrap();
    let gone = 5000 - 1000 - f.slack() as usize;
    let old = bools(madd(c, "WBF.MEXISTS", "w", &keys[..gone]));
    let q_ = gone as f64;
    assert!(
        (old as f64) <= q_ * 0.01 + 3.0 * (q_ * 0.01).sqrt(),
        "{old} of {gone}"
    );
    assert_eq!(f.insertions(), 5000);
    // MEMORY USAGE counts the slices
    let mem: i64 = q(c, &["MEMORY", "USAGE", "w"]);
    assert!(mem as u64 >= f.bit_len() / 8, "{mem}");
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn windows_replicate_exactly_and_survive_an_aof_restart() {
    if !have_redis() {
        return;
    }
    let (d1, d2) = (common::tmp(), common::tmp());
    let mut p = Server::start_in(
        d1.path(),
        &[],
        &["--appendonly", "yes", "--appendfsync", "always"],
    );
    let r = Server::start_in(d2.path(), &[], &[]);
    let c = &mut p.con();
    let rc = &mut r.con();
    let _: () = q(rc, &["REPLICAOF", "127.0.0.1", &p.port.to_string()]);
    let _: () = q(c, &["WBF.RESERVE", "w", "0.01", "500"]);
    let _: () = q(c, &["TWBF.RESERVE", "t", "0.01", "60000", "1000"]);
    let keys = common::items("k", 3000);
    for (i, chunk) in keys.chunks(100).enumerate() {
        let _ = madd(c, "WBF.MADD", "w", chunk);
        // server time for some, explicit times for others
        if i % 2 == 0 {
            let _ = madd(c, "TWBF.MADD", "t", chunk);
        } else {
            let ms = (1_000_000 + i as u64 * 997).to_string();
            let mut a = vec!["TWBF.ADDAT", "t", ms.as_str()];
            a.extend(chunk.iter().map(String::as_str));
            let _: Vec<i64> = q(c, &a);
        }
        let _: i64 = q(c, &["TWBF.ADD", "t", &format!("single-{i}")]);
    }
    // the primary's time, replicated: the replica holds the same bytes whatever its clock
    let acked: i64 = q(c, &["WAIT", "1", "10000"]);
    assert_eq!(acked, 1);
    let want = [dump(c, "w").unwrap(), dump(c, "t").unwrap()];
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let got = [dump(rc, "w"), dump(rc, "t")];
        if got[0].as_ref() == Some(&want[0]) && got[1].as_ref() == Some(&want[1]) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "replica differs");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // every key added in the last minute is found on the replica too
    let hits = bools(madd(rc, "TWBF.MEXISTS", "t", &keys[..100]));
    assert_eq!(hits, 100);
    // an AOF replay (the commands as propagated) rebuilds the same values
    let _: () = q(c, &["DEBUG", "LOADAOF"]);
    assert_eq!(dump(c, "w").unwrap(), want[0]);
    assert_eq!(dump(c, "t").unwrap(), want[1]);
    // and after a rewrite (LOADCHUNK) and a restart
    let _: () = q(c, &["BGREWRITEAOF"]);
    common::wait_aof_rewrite(c);
    p.restart(&[]);
    let c = &mut p.con();
    assert_eq!(dump(c, "w").unwrap(), want[0]);
    assert_eq!(dump(c, "t").unwrap(), want[1]);
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn scandump_loadchunk_and_damaged_bytes() {
    if !have_redis() {
        return;
    }
    let d = common::tmp();
    let s = Server::start_in(d.path(), &[], &[]);
    let c = &mut s.con();
    let _: () = q(c, &["TWBF.RESERVE", "t", "0.001", "1000", "200"]);
    for i in 0..50u64 {
        let ms = (5_000 + i * 40).to_string();
        let _: Vec<i64> = q(
            c,
            &["TWBF.ADDAT", "t", &ms, &format!("a{i}"), &format!("b{i}")],
        );
    }
    let info: Vec<redis::Value> = q(c, &["TWBF.INFO", "t"]);
    let text = format!("{info:?}");
    assert!(
        text.contains("Window ms") && text.contains("Live slices"),
        "{text}"
    );
    // copy by chunks
    let mut it = 0i64;
    let mut chunks = Vec::new();
    loop {
        let (next, data): (i64, Vec<u8>) = q(c, &["TWBF.SCANDUMP", "t", &it.to_string()]);
        if next == 0 {
            break;
        }
        chunks.push((next, data));
        it = next;
    }
    for (n, data) in &chunks {
        let mut cmd = redis::cmd("TWBF.LOADCHUNK");
        cmd.arg("copy").arg(*n).arg(data.as_slice());
        let _: () = cmd.query(c).unwrap();
    }
    assert_eq!(dump(c, "copy"), dump(c, "t"));
    // a forged value (resealed, so only the parameters' checks can refuse it) is refused
    let mut bytes = dump(c, "t").unwrap();
    let at = 64 + 12; // inside the parameters: k
    bytes[at] ^= 0x7f;
    reseal(&mut bytes);
    let mut cmd = redis::cmd("TWBF.LOADCHUNK");
    cmd.arg("bad").arg(1).arg(bytes.as_slice());
    let r: redis::RedisResult<()> = cmd.query(c);
    assert!(r.is_err());
    let exists: i64 = q(c, &["EXISTS", "bad"]);
    assert_eq!(exists, 0);
    // wrong types
    let _: () = q(c, &["SET", "s", "v"]);
    assert!(err(c, &["TWBF.ADD", "s", "x"]).starts_with("WRONGTYPE"));
    assert!(err(c, &["WBF.EXISTS", "t", "x"]).starts_with("WRONGTYPE"));
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn blocked_count_window_keeps_its_layout_through_dump_and_restart() {
    if !have_redis() {
        return;
    }
    let d = common::tmp();
    let mut s = Server::start_in(d.path(), &[], &["--appendonly", "yes"]);
    let c = &mut s.con();
    let _: () = q(c, &["WBF.RESERVE", "w", "0.01", "1000", "BLOCKED"]);
    assert!(err(c, &["WBF.RESERVE", "x", "0.01", "1000", "STRIPED"]).contains("BLOCKED"));
    assert!(err(c, &["WBF.RESERVE", "x", "0.01", "1000", "BLOCKED", "1"]).contains("wrong number"));
    let keys = common::items("k", 5000);
    for chunk in keys.chunks(250) {
        let _ = madd(c, "WBF.MADD", "w", chunk);
    }
    // the last 1000 are found
    assert_eq!(bools(madd(c, "WBF.MEXISTS", "w", &keys[4000..])), 1000);
    let info: Vec<redis::Value> = q(c, &["WBF.INFO", "w"]);
    let text = format!("{info:?}");
    assert!(
        text.contains("Layout") && text.contains("blocked"),
        "{text}"
    );
    let bytes = dump(c, "w").unwrap();
    assert_eq!(
        u16::from_le_bytes([bytes[10], bytes[11]]),
        30,
        "kind window-blocked"
    );
    let f = bloomery::AgePartitionedBloomFilter::from_bytes(&bytes).unwrap();
    assert_eq!(f.layout(), bloomery::builders::WindowLayout::Blocked);
    assert_eq!(f.insertions(), 5000);
    // keys never inserted: at most the rate within three standard deviations
    let fresh = common::items("fresh", 20_000);
    let mut found = 0;
    for chunk in fresh.chunks(1000) {
        found += bools(madd(c, "WBF.MEXISTS", "w", chunk));
    }
    let q_ = 20_000f64;
    assert!(
        (found as f64) <= q_ * 0.01 + 3.0 * (q_ * 0.01).sqrt(),
        "{found} of 20000"
    );
    // SCANDUMP / LOADCHUNK into another key rebuilds the same bytes
    let mut it = 0i64;
    loop {
        let (next, data): (i64, Vec<u8>) = q(c, &["WBF.SCANDUMP", "w", &it.to_string()]);
        if next == 0 {
            break;
        }
        let mut cmd = redis::cmd("WBF.LOADCHUNK");
        cmd.arg("copy").arg(next).arg(data);
        let _: () = cmd.query(c).unwrap();
        it = next;
    }
    assert_eq!(dump(c, "copy").unwrap(), bytes);
    // RDB and AOF: the same bytes after a restart
    let _: () = q(c, &["SAVE"]);
    s.restart(&[]);
    let c = &mut s.con();
    assert_eq!(dump(c, "w").unwrap(), bytes);
}
