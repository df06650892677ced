//! Helpers of the integration tests that run the real binary on big (and not so big) files.
#![allow(dead_code)] // each test file uses its own share

use std::path::{Path, PathBuf};

use assert_cmd::Command;

pub const BIN: &str = env!("CARGO_BIN_EXE_bloomery");

pub fn bloomery() -> Command {
    Command::new(BIN)
}

pub fn lines(range: std::ops::Range<u32>) -> String {
    range.map(|i| format!("key-{i}\n")).collect()
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
