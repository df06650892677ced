//! Finds `redis-server` for the integration tests: when it is on `PATH` (or named by
//! `BLOOMERY_REDIS_SERVER`, or when the
//! environment variable `CI` is set, where its absence must fail the tests rather than skip
//! them) this sets `cfg(have_redis)`; without it every test that needs a server is compiled
//! as `#[ignore = "redis-server not found on PATH"]`, so the skip shows in the test summary.

use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(have_redis)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=PATH");
    println!("cargo::rerun-if-env-changed=CI");
    println!("cargo::rerun-if-env-changed=BLOOMERY_REDIS_SERVER");
    let dirs: Vec<PathBuf> = env::var_os("PATH")
        .map(|p| env::split_paths(&p).collect())
        .unwrap_or_default();
    let found = dirs.iter().any(|d| d.join("redis-server").is_file());
    // Installing redis-server later (same PATH) changes a PATH directory: look again then.
    for d in dirs.iter().filter(|d| d.is_dir()) {
        println!("cargo::rerun-if-changed={}", d.display());
    }
    // BLOOMERY_REDIS_SERVER names the server binary (e.g. Valkey's valkey-server) directly.
    let named = env::var_os("BLOOMERY_REDIS_SERVER").is_some();
    if found || named || env::var_os("CI").is_some() {
        println!("cargo::rustc-cfg=have_redis");
    }
}
