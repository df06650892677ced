//! Every command opens and maps each filter file once: the real binary runs under
//! `strace -f -e trace=openat,mmap,close`, and each file's `openat` calls and the `mmap` calls
//! of the descriptors they return (until closed) are counted. Where strace is missing or
//! cannot trace (ptrace refused), each test prints SKIP and passes; CI installs strace
//! (`.ci/run`, `scripts/test.sh`).

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};

use tempfile::TempDir;

mod common;
use common::{lines, BIN};

/// Whether strace runs here (installed, and ptrace allowed).
fn strace_works() -> bool {
    let ok = Command::new("strace")
        .args(["-f", "-o", "/dev/null", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "strace is required in CI (.ci/run installs it)"
        );
        eprintln!("SKIP: strace is missing or cannot trace here (install strace to run this test)");
    }
    ok
}

/// One traced run of the binary in `dir`: its trace, the syscalls' lines joined where strace
/// split them (`<unfinished ...>` / `<... resumed>`).
fn traced(dir: &Path, args: &[&str], stdin: &str) -> Vec<String> {
    let log = dir.join("strace.log");
    let mut child = Command::new("strace")
        .args(["-f", "-e", "trace=openat,mmap,close", "-o"])
        .arg(&log)
        .arg(BIN)
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), stdin.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "bloomery {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&log).unwrap();
    std::fs::remove_file(&log).unwrap();
    let mut pending: HashMap<String, String> = HashMap::new();
    let mut calls = Vec::new();
    for line in text.lines() {
        let Some((pid, rest)) = line.trim_start().split_once(' ') else {
            continue;
        };
        let rest = rest.trim_start();
        if let Some(head) = rest.strip_suffix("<unfinished ...>") {
            pending.insert(pid.to_string(), head.to_string());
        } else if rest.starts_with("<... ") {
            let tail = rest.split_once("resumed>").map_or("", |(_, t)| t);
            let head = pending.remove(pid).unwrap_or_default();
            calls.push(format!("{head}{tail}"));
        } else {
            calls.push(rest.to_string());
        }
    }
    calls
}

/// The opens of `name` (as the command line names it) and the maps of the descriptors they
/// returned.
fn opens_and_maps(calls: &[String], name: &str) -> (usize, usize) {
    let quoted = format!("\"{name}\"");
    let mut open_fds: Vec<String> = Vec::new();
    let (mut opens, mut maps) = (0, 0);
    for c in calls {
        let ret = c.rsplit_once(" = ").map(|(_, r)| r.trim().to_string());
        if c.starts_with("openat(") && c.contains(&quoted) {
            opens += 1;
            if let Some(fd) = ret.filter(|r| !r.starts_with('-')) {
                open_fds.push(fd);
            }
        } else if let Some(args) = c.strip_prefix("mmap(") {
            // mmap(addr, len, prot, flags, fd, offset)
            let fd = args.split(", ").nth(4).unwrap_or("");
            if open_fds.iter().any(|f| f == fd) {
                maps += 1;
            }
        } else if let Some(args) = c.strip_prefix("close(") {
            let fd = args.split(')').next().unwrap_or("");
            open_fds.retain(|f| f != fd);
        }
    }
    (opens, maps)
}

struct T(TempDir);

impl T {
    fn new() -> Self {
        Self(tempfile::tempdir().unwrap())
    }

    fn run(&self, args: &[&str], stdin: &str) {
        let out = Command::new(BIN)
            .args(args)
            .current_dir(self.0.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                std::io::Write::write_all(&mut c.stdin.take().unwrap(), stdin.as_bytes())?;
                c.wait_with_output()
            })
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A filter file of `kind` holding 1,000 keys.
    fn filter(&self, name: &str, kind: &str) {
        self.run(
            &["create", "-n", "20000", "-p", "0.01", "--kind", kind, name],
            "",
        );
        self.run(&["add", name], &lines(0..1000));
    }

    /// Run `args` traced and assert that each of `files` is opened once and mapped once.
    fn once(&self, args: &[&str], stdin: &str, files: &[&str]) {
        let calls = traced(self.0.path(), args, stdin);
        for f in files {
            assert_eq!(
                opens_and_maps(&calls, f),
                (1, 1),
                "bloomery {args:?}: `{f}` (opens, maps)\n{}",
                calls.join("\n")
            );
        }
    }
}

#[test]
fn the_counter_sees_a_second_open() {
    // the count itself: a file opened twice by one command is counted twice
    if !strace_works() {
        return;
    }
    let t = T::new();
    t.filter("f.bloom", "blocked");
    let calls = traced(t.0.path(), &["union", "u.bloom", "f.bloom", "f.bloom"], "");
    assert_eq!(opens_and_maps(&calls, "f.bloom"), (2, 2));
    assert_eq!(opens_and_maps(&calls, "absent.bloom"), (0, 0));
}

#[test]
fn reading_commands_open_each_file_once() {
    if !strace_works() {
        return;
    }
    let t = T::new();
    t.filter("f.bloom", "blocked");
    t.filter("g.bloom", "blocked");
    let keys = lines(500..1500);
    t.once(&["check", "f.bloom"], &keys, &["f.bloom"]);
    t.once(&["check", "--no-verify", "f.bloom"], &keys, &["f.bloom"]);
    t.once(&["count", "f.bloom"], &keys, &["f.bloom"]);
    t.once(&["info", "f.bloom"], "", &["f.bloom"]);
    t.once(&["info", "--fast", "f.bloom"], "", &["f.bloom"]);
    t.once(
        &["estimate", "f.bloom", "g.bloom"],
        "",
        &["f.bloom", "g.bloom"],
    );
    t.once(&["compress", "f.bloom", "c.bloom"], "", &["f.bloom"]);
    t.once(&["decompress", "c.bloom", "d.bloom"], "", &["c.bloom"]);
    t.once(&["check", "c.bloom"], &keys, &["c.bloom"]);
    t.once(&["info", "c.bloom"], "", &["c.bloom"]);
}

#[test]
fn writing_commands_open_each_input_once() {
    if !strace_works() {
        return;
    }
    let t = T::new();
    t.filter("f.bloom", "blocked");
    t.filter("g.bloom", "blocked");
    t.filter("k.bloom", "classic");
    t.filter("n.bloom", "counting");
    t.run(&["compress", "k.bloom", "kc.bloom"], "");
    let keys = lines(1000..3000);
    // add: one thread (the sweep's policy), several, unverified, a compressed file
    t.once(&["add", "--threads", "1", "f.bloom"], &keys, &["f.bloom"]);
    t.once(&["add", "--threads", "2", "f.bloom"], &keys, &["f.bloom"]);
    t.once(&["add", "--no-verify", "f.bloom"], &keys, &["f.bloom"]);
    t.once(&["add", "kc.bloom"], &keys, &["kc.bloom"]);
    t.once(&["add", "n.bloom"], &keys, &["n.bloom"]);
    t.once(&["remove", "n.bloom"], &lines(0..10), &["n.bloom"]);
    t.once(&["dedup", "--state", "g.bloom"], &keys, &["g.bloom"]);
    // fold: streamed (blocked), and built in memory (a compressed classic filter)
    t.once(&["fold", "f.bloom", "f2.bloom"], "", &["f.bloom"]);
    t.once(&["fold", "kc.bloom", "k2.bloom"], "", &["kc.bloom"]);
    // union and intersect: streamed, and through a copy of the first input
    t.once(
        &["union", "u.bloom", "f.bloom", "g.bloom"],
        "",
        &["f.bloom", "g.bloom"],
    );
    t.once(
        &["intersect", "i.bloom", "f.bloom", "g.bloom"],
        "",
        &["f.bloom", "g.bloom"],
    );
    t.once(&["compress", "f.bloom", "fc.bloom"], "", &["f.bloom"]);
    t.once(
        &["union", "u2.bloom", "fc.bloom", "g.bloom"],
        "",
        &["fc.bloom", "g.bloom"],
    );
    t.once(&["flatten", "n.bloom", "p.bloom"], "", &["n.bloom"]);
}

#[test]
fn a_time_window_is_opened_once() {
    if !strace_works() {
        return;
    }
    let t = T::new();
    t.run(
        &[
            "create", "-n", "1000", "-p", "0.01", "--kind", "window", "--window", "10m", "w.bloom",
        ],
        "",
    );
    let keys = lines(0..100);
    t.once(&["add", "w.bloom"], &keys, &["w.bloom"]);
    t.once(&["check", "w.bloom"], &keys, &["w.bloom"]);
    t.once(&["info", "w.bloom"], "", &["w.bloom"]);
}
