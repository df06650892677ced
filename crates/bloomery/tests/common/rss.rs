//! The process's peak resident memory, for the tests that bound it (one test per binary, so
//! nothing else moves the peak).

/// The process's peak resident memory (VmHWM), in bytes.
pub fn peak_rss() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = s.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<u64>()
        .unwrap()
        * 1024
}
