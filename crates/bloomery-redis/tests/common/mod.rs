//! Shared helpers for the integration tests: a `redis-server` (with the module loaded) on a
//! free loopback port, killed on drop.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use redis::{ConnectionLike, Value};

/// The built module. `cargo test` builds the cdylib into `target/<profile>/deps/` next to the
/// test binary (it is only copied up to `target/<profile>/` by `cargo build`), so look there
/// first.
pub fn module_path() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let deps = exe.parent().expect("deps directory");
    let name = format!(
        "{}bloomery_redis{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    let candidates = [deps.join(&name), deps.parent().unwrap_or(deps).join(&name)];
    if let Some(lib) = candidates.iter().find(|p| p.exists()) {
        return lib.clone();
    }
    // A test binary run on its own, without the library built: build it.
    let status = Command::new(env!("CARGO"))
        .args(["build", "-p", "bloomery-redis"])
        .status()
        .expect("run cargo build");
    assert!(status.success(), "cargo build -p bloomery-redis failed");
    candidates
        .into_iter()
        .find(|p| p.exists())
        .expect("module built by cargo build -p bloomery-redis")
}

/// The server binary the tests run: `BLOOMERY_REDIS_SERVER` (a path to `redis-server` or
/// `valkey-server`; scripts/test-valkey.sh sets it to Valkey's), or `redis-server` on `PATH`.
pub fn server_bin() -> std::ffi::OsString {
    std::env::var_os("BLOOMERY_REDIS_SERVER").unwrap_or_else(|| "redis-server".into())
}

/// Whether the server is Valkey (`INFO server` names it), for the few answers that differ.
pub fn is_valkey(con: &mut redis::Connection) -> bool {
    let info: String = q(con, &["INFO", "server"]);
    info.contains("server_name:valkey")
}

/// The text of a double in a RESP2 reply, which the server formats: `redis7` as Redis 7
/// writes it (`%.17g`, e.g. `0.90000000000000002`), or on Valkey the shortest text that reads
/// back as the same double (`0.9`).
pub fn double_text(con: &mut redis::Connection, redis7: &str) -> String {
    if !is_valkey(con) {
        return redis7.to_string();
    }
    match redis7.parse::<f64>() {
        Ok(x) if x.is_nan() => "nan".to_string(),
        Ok(x) => x.to_string(),
        Err(_) => redis7.to_string(),
    }
}

/// Whether redis-server is installed. The tests that need it are also
/// `#[cfg_attr(not(have_redis), ignore = ...)]`: `build.rs` sets `cfg(have_redis)` when it
/// finds redis-server on `PATH` (or when `CI` is set), so without it they show as ignored in
/// the test summary; this check catches a server removed since the build (a skip with a note,
/// a failure when `CI` is set).
pub fn have_redis() -> bool {
    let ok = Command::new(server_bin())
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "redis-server is required in CI (.ci/run installs it)"
        );
        eprintln!(
            "skipping: redis-server not installed (apt-get install redis-server redis-tools)"
        );
    }
    ok
}

/// A port that is free on 127.0.0.1, and whose cluster bus port (+10000) is free too.
pub fn free_port() -> u16 {
    loop {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let port = l.local_addr().unwrap().port();
        if port < 55535 && TcpListener::bind(("127.0.0.1", port + 10000)).is_ok() {
            return port;
        }
    }
}

/// A running redis-server with the module; killed on drop.
pub struct Server {
    child: Option<Child>,
    pub port: u16,
    pub dir: PathBuf,
    extra: Vec<String>,
}

impl Server {
    /// Start with the module and `extra` server arguments, in `dir`.
    pub fn start_in(dir: &Path, module_args: &[&str], extra: &[&str]) -> Server {
        Self::start_on(free_port(), dir, module_args, extra)
    }

    pub fn start_on(port: u16, dir: &Path, module_args: &[&str], extra: &[&str]) -> Server {
        let mut load = vec![module_path().display().to_string()];
        load.extend(module_args.iter().map(|s| s.to_string()));
        let mut args: Vec<String> = vec![
            "--port".into(),
            port.to_string(),
            "--bind".into(),
            "127.0.0.1".into(),
            "--dir".into(),
            dir.display().to_string(),
            "--save".into(),
            "".into(),
            "--enable-debug-command".into(),
            "local".into(),
            "--loadmodule".into(),
        ];
        args.extend(load);
        args.extend(extra.iter().map(|s| s.to_string()));
        // `--appendonly no` unless the caller set it.
        if !extra.contains(&"--appendonly") {
            args.extend(["--appendonly".into(), "no".into()]);
        }
        let log = std::fs::File::create(dir.join(format!("redis-{port}.log"))).unwrap();
        let child = Command::new(server_bin())
            .args(&args)
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start redis-server");
        let s = Server {
            child: Some(child),
            port,
            dir: dir.to_path_buf(),
            extra: extra.iter().map(|s| s.to_string()).collect(),
        };
        s.wait_ready();
        s
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(mut c) = redis::Client::open(self.url()).and_then(|c| c.get_connection()) {
                if redis::cmd("PING").query::<String>(&mut c).is_ok() {
                    return;
                }
            }
            assert!(
                Instant::now() < deadline,
                "redis-server on port {} did not start; log:\n{}",
                self.port,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join(format!("redis-{}.log", self.port)))
            .unwrap_or_default()
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    pub fn con(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .unwrap()
            .get_connection()
            .unwrap()
    }

    /// A connection speaking RESP3.
    pub fn con3(&self) -> redis::Connection {
        redis::Client::open(format!("{}?protocol=resp3", self.url()))
            .unwrap()
            .get_connection()
            .unwrap()
    }

    /// Stop (SHUTDOWN NOSAVE, then kill) and wait.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Stop and start again on the same port and directory with the same arguments.
    pub fn restart(&mut self, module_args: &[&str]) {
        self.stop();
        let extra: Vec<String> = self.extra.clone();
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        let dir = self.dir.clone();
        *self = Server::start_on(self.port, &dir, module_args, &extra);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Run a command, expecting an error; returns its text as the server sent it (`CODE detail`,
/// e.g. `ERR bad error rate` or `Filter is full`).
pub fn err(con: &mut redis::Connection, args: &[&str]) -> String {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    match c.query::<redis::Value>(con) {
        Ok(v) => panic!("{args:?} should fail, got {v:?}"),
        Err(e) => match (e.code(), e.detail()) {
            (Some(code), Some(detail)) => format!("{code} {detail}"),
            (Some(code), None) => code.to_string(),
            _ => e.to_string(),
        },
    }
}

/// Run a command, returning `T`.
pub fn q<T: redis::FromRedisValue>(con: &mut redis::Connection, args: &[&str]) -> T {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    c.query::<T>(con)
        .unwrap_or_else(|e| panic!("{args:?} failed: {e}"))
}

/// A temporary directory for a server's files.
pub fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// The reply as sent, errors inside arrays included.
pub fn raw(c: &mut redis::Connection, args: &[&str]) -> Value {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    c.req_packed_command(&cmd.get_packed_command())
        .unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// Whether `v` is an error reply whose `CODE detail` contains `text`.
pub fn is_err(v: &Value, text: &str) -> bool {
    matches!(v, Value::ServerError(e) if format!("{} {}", e.code(), e.details().unwrap_or("")).contains(text))
}

/// Recompute the trailer of file-format bytes (xxh3-64 of everything before it), as a forger
/// would.
pub fn reseal(b: &mut [u8]) {
    let n = b.len() - 8;
    let sum = xxhash_rust::xxh3::xxh3_64(&b[..n]);
    b[n..].copy_from_slice(&sum.to_le_bytes());
}

/// Wait until no AOF rewrite is running or scheduled (20 s at most).
pub fn wait_aof_rewrite(c: &mut redis::Connection) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let info: String = q(c, &["INFO", "persistence"]);
        if info.contains("aof_rewrite_in_progress:0") && !info.contains("aof_rewrite_scheduled:1") {
            return;
        }
        assert!(Instant::now() < deadline, "AOF rewrite did not finish");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `n` item names with a prefix.
pub fn items(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

/// Redis's CRC-64 (Jones polynomial, reflected), which seals DUMP payloads.
pub fn crc64(data: &[u8]) -> u64 {
    let mut crc = 0u64;
    for &b in data {
        crc ^= u64::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0x95AC_9329_AC4B_C9B5
            } else {
                crc >> 1
            };
        }
    }
    crc
}

/// Put `forged` where `held` (a value's file bytes, as long) is in `data`, a DUMP payload or
/// an RDB file written uncompressed. The RDB encoding stores the bytes in pieces: the header,
/// then the rest (one piece below 4 MiB). False when they are not there.
pub fn patch_file_bytes(data: &mut [u8], held: &[u8], forged: &[u8]) -> bool {
    let h = u32::from_le_bytes(held[12..16].try_into().unwrap()) as usize;
    let find = |data: &[u8], from: usize, part: &[u8]| {
        (data.get(from..)?.windows(part.len()))
            .position(|w| w == part)
            .map(|at| from + at)
    };
    let Some(head) = find(data, 0, &held[..h]) else {
        return false;
    };
    let Some(rest) = find(data, head + h, &held[h..]) else {
        return false;
    };
    data[head..head + h].copy_from_slice(&forged[..h]);
    data[rest..rest + held.len() - h].copy_from_slice(&forged[h..]);
    true
}
