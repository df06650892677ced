//! `MAX-BYTES auto` (the default): a structure may be as large as the server's `maxmemory`,
//! or the machine's memory without one, as RedisBloom allows; refusals use RedisBloom's texts
//! ("Insufficient memory to create …") followed by the sizes.

mod common;

use common::{err, have_redis, q, Server};

/// What the server reports as the machine's memory.
fn system_memory(c: &mut redis::Connection) -> u64 {
    let info: String = q(c, &["INFO", "memory"]);
    info.lines()
        .find_map(|l| l.strip_prefix("total_system_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("total_system_memory in INFO memory")
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn auto_limit_follows_maxmemory_then_the_machine() {
    if !have_redis() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let s = Server::start_in(d.path(), &[], &[]);
    let c = &mut s.con();
    // 1e-6 at 300M items: 1.11 GB, refused under a 100 MiB maxmemory with the sizes named
    let _: () = q(c, &["CONFIG", "SET", "maxmemory", "104857600"]);
    let e = err(c, &["BF.RESERVE", "big", "0.000001", "300000000"]);
    assert!(
        e.starts_with("ERR Insufficient memory to create filter: it would need ")
            && e.ends_with("over the module's MAX-BYTES limit of 104857600"),
        "{e}"
    );
    let e = err(c, &["CF.RESERVE", "big", "9223372036854775807"]);
    assert!(e.contains("Insufficient memory to create filter"), "{e}");
    let e = err(c, &["CMS.INITBYDIM", "big", "100000000", "4"]);
    assert!(
        e.starts_with("CMS: Insufficient memory to create the key"),
        "{e}"
    );
    let e = err(c, &["TOPK.RESERVE", "big", "3", "100000000", "7", "0.9"]);
    assert!(
        e.contains("Insufficient memory to create topk data structure"),
        "{e}"
    );
    // a structure that fits is made as usual
    let _: () = q(c, &["BF.RESERVE", "small", "0.01", "1000000"]);

    // without maxmemory the machine's memory bounds it: the 1.11 GB reservation RedisBloom
    // accepts is made (its pages are not touched until items arrive), one bigger than the
    // machine is refused
    let _: () = q(c, &["CONFIG", "SET", "maxmemory", "0"]);
    let system = system_memory(c);
    let _: () = q(c, &["BF.RESERVE", "big", "0.000001", "300000000"]);
    let usage: u64 = q(c, &["MEMORY", "USAGE", "big"]);
    assert!(usage > 1_100_000_000, "{usage}");
    assert_eq!(q::<i64>(c, &["BF.ADD", "big", "x"]), 1);
    assert_eq!(q::<i64>(c, &["BF.EXISTS", "big", "x"]), 1);
    let _: i64 = q(c, &["DEL", "big"]);
    let e = err(c, &["BF.RESERVE", "huge", "0.000001", "100000000000"]);
    assert!(
        e.contains("Insufficient memory to create filter")
            && e.ends_with(&format!("over the module's MAX-BYTES limit of {system}")),
        "{e}"
    );
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn explicit_max_bytes_and_auto_load() {
    if !have_redis() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let s = Server::start_in(d.path(), &["MAX-BYTES", "1048576"], &[]);
    let c = &mut s.con();
    let e = err(c, &["BF.RESERVE", "a", "0.01", "10000000"]);
    assert!(
        e.ends_with("over the module's MAX-BYTES limit of 1048576"),
        "{e}"
    );
    drop(s);
    let d = tempfile::tempdir().unwrap();
    let s = Server::start_in(d.path(), &["MAX-BYTES", "auto"], &[]);
    let c = &mut s.con();
    let _: () = q(c, &["BF.RESERVE", "a", "0.01", "10000000"]);
}
