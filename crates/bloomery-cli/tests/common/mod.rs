//! Helpers of the integration tests that run the real `bloomery` binary.
#![allow(dead_code)] // each test file uses its own share

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use assert_cmd::Command;

pub const BIN: &str = env!("CARGO_BIN_EXE_bloomery");

/// The binary, in the test's environment.
pub fn bloomery() -> Command {
    Command::new(BIN)
}

/// The binary with `NO_COLOR` set: plain output whatever the environment.
pub fn bloomery_no_color() -> Command {
    let mut c = Command::new(BIN);
    c.env("NO_COLOR", "1");
    c
}

/// The binary with `NO_COLOR` removed from its environment: colours as a user without the
/// variable gets them.
pub fn bloomery_default_color() -> Command {
    let mut c = Command::new(BIN);
    c.env_remove("NO_COLOR");
    c
}

/// `key-{i}` for every `i` of `range`, one a line.
pub fn lines(range: std::ops::Range<u32>) -> String {
    range.map(|i| format!("key-{i}\n")).collect()
}

/// Every key, one a line.
pub fn key_lines<S: AsRef<str>>(keys: impl IntoIterator<Item = S>) -> String {
    keys.into_iter()
        .map(|k| format!("{}\n", k.as_ref()))
        .collect()
}

/// Standard output's lines, in order.
pub fn stdout_lines(out: &std::process::Output) -> Vec<String> {
    String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Standard output's lines, as a set.
pub fn stdout_line_set(out: &std::process::Output) -> BTreeSet<String> {
    stdout_lines(out).into_iter().collect()
}

pub fn json_of(out: &[u8]) -> serde_json::Value {
    serde_json::from_slice(out).expect("valid JSON")
}

/// `bloomery info --json` of `p`, which must succeed.
pub fn info_json(p: &Path) -> serde_json::Value {
    let out = bloomery_no_color()
        .args(["info", "--json"])
        .arg(p)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    json_of(&out.stdout)
}

pub fn create(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let p = dir.join(name);
    bloomery()
        .arg("create")
        .arg(&p)
        .args(args)
        .assert()
        .success();
    p
}

pub fn add(p: &Path, keys: std::ops::Range<u32>) {
    bloomery()
        .arg("add")
        .arg(p)
        .write_stdin(lines(keys))
        .assert()
        .success();
}

pub fn stale_temp_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".bloomery-"))
        .collect()
}

/// A status of a process that ended by itself: 0, 1 or 2, never a signal (a crash).
pub fn clean_status(out: &std::process::Output, what: &str) -> i32 {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{what}: {err}");
    let code = out
        .status
        .code()
        .unwrap_or_else(|| panic!("{what}: killed by a signal: {:?}; {err}", out.status));
    assert!((0..=2).contains(&code), "{what}: status {code}: {err}");
    code
}

/// Start `cmd` (stderr dropped), kill it after a random share (0–1.2) of `whole`, the time a
/// full run took, and wait for it: how long it ran. For the crash-safety tests.
pub fn kill_at_random(
    cmd: &mut std::process::Command,
    whole: std::time::Duration,
    rng: &mut impl rand::Rng,
) -> std::time::Duration {
    let mut child = cmd.stderr(std::process::Stdio::null()).spawn().unwrap();
    let at = whole.mul_f64(rng.gen_range(0.0..1.2));
    std::thread::sleep(at);
    let _ = child.kill();
    let _ = child.wait();
    at
}
