//! One stream, every surface: the count window (`dedup --window 1000`, `create --kind window`
//! with `add`/`check`) and the time window (`dedup --window 10m --time-field`, with bursts and
//! an idle gap longer than the window) through the real `bloomery` binary, and `WBF.*`/`TWBF.*`
//! on a primary, its replica, an AOF replay and a restart, answer alike for every key. The
//! Python package's side of the same streams is `crates/bloomery-py/tests/test_windows_alike.py`
//! (same generator, answers compared with the CLI's).
//!
//! Runs on Redis 7 (`cargo test`) and on Valkey 9 (`scripts/test-valkey.sh`).

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use bloomery::{AgePartitionedBloomFilter, Filter, Persist, TimeWindowFilter};
use common::{have_redis, q, Server};

/// Lines of the stream, distinct keys among them, the window and the rate.
const LEN: usize = 20_000;
const RANGE: u64 = 3_000;
const WINDOW: u64 = 1_000;
const P: &str = "0.01";
/// The time window, seconds (`10m`).
const SPAN: u64 = 600;

/// The stream: `(epoch seconds, key)`. Keys below [`RANGE`] from a fixed-seed LCG, so a key
/// recurs within the window and beyond it; time rises by 0–2 s a line, stands still for the
/// first 400 lines of every 2,000 (bursts), and jumps by an hour (longer than the window) at
/// line 10,000. `crates/bloomery-py/tests/test_windows_alike.py` generates the same.
fn stream() -> Vec<(u64, String)> {
    let mut x = 0x5EED_u64;
    let mut t = 1_700_000_000u64;
    (0..LEN)
        .map(|i| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            if i % 2000 >= 400 {
                t += (x >> 60) % 3;
            }
            if i == LEN / 2 {
                t += 3600;
            }
            (t, format!("key-{}", (x >> 33) % RANGE))
        })
        .collect()
}

/// Every key of the stream and 1,000 never in it.
fn probes() -> Vec<String> {
    (0..RANGE)
        .map(|i| format!("key-{i}"))
        .chain((0..1000).map(|i| format!("never-{i}")))
        .collect()
}

/// The `bloomery` binary built beside this test (target/<profile>/), built if missing.
fn cli() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile = exe.parent().unwrap().parent().unwrap();
    let bin = profile.join(format!("bloomery{}", std::env::consts::EXE_SUFFIX));
    if !bin.exists() {
        let mut build = Command::new(env!("CARGO"));
        build.args(["build", "-p", "bloomery-cli"]);
        if !cfg!(debug_assertions) {
            build.arg("--release");
        }
        assert!(
            build.status().unwrap().success(),
            "cargo build -p bloomery-cli"
        );
    }
    bin
}

/// Run the CLI in `dir` with `stdin`; its stdout lines.
fn run(dir: &Path, args: &[&str], stdin: &str) -> Vec<String> {
    let mut child = Command::new(cli())
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let text = stdin.to_owned();
    let writer = std::thread::spawn(move || input.write_all(text.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(
        out.status.success(),
        "bloomery {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn text<'a>(lines: impl IntoIterator<Item = &'a str>) -> String {
    lines.into_iter().map(|l| format!("{l}\n")).collect()
}

fn dump(c: &mut redis::Connection, key: &str) -> Vec<u8> {
    q::<Option<Vec<u8>>>(c, &["BLOOMERY.DUMP", key]).expect("key exists")
}

/// `WBF.MEXISTS` over the probes.
fn mexists(c: &mut redis::Connection, probes: &[String]) -> Vec<bool> {
    let mut a = vec!["WBF.MEXISTS", "w"];
    a.extend(probes.iter().map(String::as_str));
    q::<Vec<i64>>(c, &a).into_iter().map(|x| x == 1).collect()
}

/// The time window's answer for every probe at the stream's end and later: inside the window,
/// past it, past window + slack.
fn answers_at(f: &TimeWindowFilter, probes: &[String], end_ms: u64) -> Vec<Vec<bool>> {
    let w = f.window();
    [
        end_ms,
        end_ms + w / 2,
        end_ms + w + 1,
        end_ms + w + f.slack() + 1,
    ]
    .iter()
    .map(|&t| {
        probes
            .iter()
            .map(|k| f.contains_at(k.as_str(), t))
            .collect()
    })
    .collect()
}

#[test]
#[cfg_attr(not(have_redis), ignore = "redis-server not found on PATH")]
fn cli_redis_replica_and_aof_answer_alike_on_one_stream() {
    if !have_redis() {
        return;
    }
    let input = stream();
    let probes = probes();
    let keys: Vec<&str> = input.iter().map(|(_, k)| k.as_str()).collect();
    let dir = common::tmp();
    let d = dir.path();

    // ---- the CLI
    let dedup = run(
        d,
        &["dedup", "--window", "1000", "-p", P, "--state", "dw.bloom"],
        &text(keys.iter().copied()),
    );
    run(
        d,
        &[
            "create", "w.bloom", "--kind", "window", "-n", "1000", "-p", P,
        ],
        "",
    );
    for part in keys.chunks(7_000) {
        run(d, &["add", "w.bloom"], &text(part.iter().copied()));
    }
    let found: std::collections::HashSet<String> = run(
        d,
        &["check", "w.bloom"],
        &text(probes.iter().map(String::as_str)),
    )
    .into_iter()
    .collect();
    let cli_check: Vec<bool> = probes.iter().map(|k| found.contains(k)).collect();
    let timed: Vec<String> = input.iter().map(|(t, k)| format!("{t}\t{k}")).collect();
    let dedup_t = run(
        d,
        &[
            "dedup",
            "--window",
            "10m",
            "-f",
            "2",
            "--time-field",
            "1",
            "-n",
            "1000",
            "-p",
            P,
            "--state",
            "dt.bloom",
        ],
        &text(timed.iter().map(String::as_str)),
    );

    // ---- a primary (AOF on) and its replica
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
    let _: () = q(c, &["WBF.RESERVE", "w", P, "1000"]);
    let window_ms = (SPAN * 1000).to_string();
    let _: () = q(c, &["TWBF.RESERVE", "t", P, &window_ms, "1000"]);
    // the count window: EXISTS then ADD for every line, as dedup does; the time window: each
    // line at its own time
    let mut new = Vec::with_capacity(LEN);
    for part in input.chunks(1000) {
        let mut pipe = redis::pipe();
        for (t, k) in part {
            pipe.cmd("WBF.EXISTS").arg("w").arg(k);
            pipe.cmd("WBF.ADD").arg("w").arg(k);
            pipe.cmd("TWBF.ADDAT").arg("t").arg(t * 1000).arg(k);
        }
        let replies: Vec<redis::Value> = pipe.query(c).unwrap();
        for reply in replies.chunks(3) {
            new.push(matches!(reply[0], redis::Value::Int(0)));
        }
    }
    let redis_dedup: Vec<&str> = keys
        .iter()
        .zip(&new)
        .filter(|(_, &n)| n)
        .map(|(k, _)| *k)
        .collect();
    // the count window: dedup prints exactly the lines Redis found new, in order
    assert_eq!(dedup.len(), redis_dedup.len());
    assert!(dedup.iter().zip(&redis_dedup).all(|(a, b)| a == b));
    // and they are right: a line whose key occurred among the previous 1000 is never printed,
    // one whose key did not occur among the previous window + slack is dropped only as a
    // false positive (at most p, plus 3σ; in between, a key's memory fades)
    let slack = AgePartitionedBloomFilter::try_new(WINDOW, 0.01)
        .unwrap()
        .slack() as usize;
    let mut last_at = std::collections::HashMap::new();
    let (mut fresh, mut dropped) = (0f64, 0f64);
    for (i, k) in keys.iter().enumerate() {
        let ago = last_at.insert(*k, i).map(|j| i - j);
        let repeat = ago.is_some_and(|a| a <= WINDOW as usize);
        assert!(
            !(repeat && new[i]),
            "line {i}: {k} printed, seen within the window"
        );
        if ago.is_none_or(|a| a > WINDOW as usize + slack) {
            fresh += 1.0;
            dropped += f64::from(u8::from(!new[i]));
        }
    }
    assert!(fresh > 5_000.0, "{fresh}");
    assert!(
        dropped <= fresh * 0.01 + 3.0 * (fresh * 0.01).sqrt(),
        "{dropped} of {fresh}"
    );

    // every probe answers alike: the CLI's file, the primary, the replica
    let primary = mexists(c, &probes);
    assert_eq!(primary, cli_check);
    let last: std::collections::HashSet<&str> =
        keys[LEN - WINDOW as usize..].iter().copied().collect();
    for (k, &hit) in probes.iter().zip(&primary) {
        assert!(
            hit || !last.contains(k.as_str()),
            "{k} in the window, not found"
        );
    }
    let acked: i64 = q(c, &["WAIT", "1", "10000"]);
    assert_eq!(acked, 1);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let (want_w, want_t) = (dump(c, "w"), dump(c, "t"));
    while q::<Option<Vec<u8>>>(rc, &["BLOOMERY.DUMP", "t"]).as_ref() != Some(&want_t)
        || q::<Option<Vec<u8>>>(rc, &["BLOOMERY.DUMP", "w"]).as_ref() != Some(&want_w)
    {
        assert!(std::time::Instant::now() < deadline, "replica differs");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(mexists(rc, &probes), cli_check);
    // the same window, bit for bit: the CLI's file, dedup's state, the server's value
    let file =
        AgePartitionedBloomFilter::from_bytes(&std::fs::read(d.join("w.bloom")).unwrap()).unwrap();
    let state =
        AgePartitionedBloomFilter::from_bytes(&std::fs::read(d.join("dw.bloom")).unwrap()).unwrap();
    let server = AgePartitionedBloomFilter::from_bytes(&want_w).unwrap();
    assert_eq!(file, server);
    assert_eq!(state, server);
    assert_eq!(server.len(), LEN as u64);

    // the time window: dedup's lines are those a replay of the stream finds new at their time
    let mut reference = TimeWindowFilter::builder()
        .window(SPAN * 1000)
        .capacity(1000)
        .fpr(0.01)
        .try_build()
        .unwrap();
    let mut printed = Vec::new();
    for (line, (t, k)) in timed.iter().zip(&input) {
        let seen = reference.contains_at(k.as_str(), t * 1000);
        reference.insert_at(k.as_str(), t * 1000);
        if !seen {
            printed.push(line.as_str());
        }
    }
    assert_eq!(dedup_t, printed);
    // within a burst a key is never printed twice; after the idle gap every key is new again
    let after_gap = &input[LEN / 2];
    assert!(dedup_t.contains(&format!("{}\t{}", after_gap.0, after_gap.1)));
    // the CLI's state, the primary's and the replica's values are the replay's, so every key
    // answers alike at every time
    let end_ms = input.last().unwrap().0 * 1000;
    let want_answers = answers_at(&reference, &probes, end_ms);
    // (keys of the last 10 minutes are found; after window + slack, only false positives)
    let recent: std::collections::HashSet<&str> = input
        .iter()
        .filter(|(t, _)| t * 1000 + SPAN * 1000 >= end_ms)
        .map(|(_, k)| k.as_str())
        .collect();
    assert!(recent.len() > 100, "{}", recent.len());
    for (k, &hit) in probes.iter().zip(&want_answers[0]) {
        assert!(
            hit || !recent.contains(k.as_str()),
            "{k}: added in the window, not found"
        );
    }
    let late = want_answers[3].iter().filter(|&&b| b).count() as f64;
    let n = probes.len() as f64;
    assert!(
        late <= n * 0.01 + 3.0 * (n * 0.01).sqrt(),
        "{late} found after window + slack"
    );
    let cli_t = TimeWindowFilter::from_bytes(&std::fs::read(d.join("dt.bloom")).unwrap()).unwrap();
    let server_t = TimeWindowFilter::from_bytes(&want_t).unwrap();
    for f in [&cli_t, &server_t] {
        assert_eq!(f, &reference);
        assert_eq!(answers_at(f, &probes, end_ms), want_answers);
    }

    // an AOF replay, then a rewrite and a restart: the same values and answers
    let _: () = q(c, &["DEBUG", "LOADAOF"]);
    assert_eq!(mexists(c, &probes), cli_check);
    assert_eq!(dump(c, "w"), want_w);
    assert_eq!(dump(c, "t"), want_t);
    let _: () = q(c, &["BGREWRITEAOF"]);
    common::wait_aof_rewrite(c);
    p.restart(&[]);
    let c = &mut p.con();
    assert_eq!(mexists(c, &probes), cli_check);
    assert_eq!(dump(c, "w"), want_w);
    let restarted = TimeWindowFilter::from_bytes(&dump(c, "t")).unwrap();
    assert_eq!(answers_at(&restarted, &probes, end_ms), want_answers);
}
