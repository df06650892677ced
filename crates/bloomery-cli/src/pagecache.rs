//! How much memory the kernel can give this process's files in the page cache: the machine's
//! `MemAvailable` (free memory plus the page cache and other memory it can reclaim), and, when
//! the process is in a memory cgroup, what its limit leaves (limit minus usage, the cgroup's
//! page cache counted as free: the kernel reclaims it for new pages), for the process's cgroup
//! and every ancestor that has a limit. `add` compares a file's length with it to choose how to update the file
//! (`cmd/add.rs`).

use std::path::{Path, PathBuf};

/// The bytes of page cache this process's files can hold now: the least of `MemAvailable`
/// and the room left under each memory cgroup limit on the way to the root. `None` where none
/// of these can be read (not Linux).
pub fn budget() -> Option<u64> {
    let read = |p: &Path| std::fs::read_to_string(p).ok();
    let available = read(Path::new("/proc/meminfo")).and_then(|s| mem_available(&s));
    let cgroup = read(Path::new("/proc/self/cgroup"))
        .and_then(|s| cgroup_room(&s, Path::new("/sys/fs/cgroup"), &read));
    match (available, cgroup) {
        (Some(a), Some(c)) => Some(a.min(c)),
        (a, c) => a.or(c),
    }
}

/// `MemAvailable` of `/proc/meminfo`, in bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kb.checked_mul(1024)
}

/// The least room (limit minus usage) of the memory cgroups named in `proc_cgroup` (the text
/// of `/proc/self/cgroup`) and their ancestors, read under `root` (`/sys/fs/cgroup`): cgroup
/// v1, the `memory` controller's `memory.limit_in_bytes` and `memory.usage_in_bytes` under
/// `root/memory/PATH`; cgroup v2 (the `0::PATH` line), `memory.max` and `memory.current` under
/// `root/PATH`. A cgroup without a limit (`max`, or v1's page-rounded `i64::MAX`), or whose
/// files cannot be read (not mounted there, as in a container that sees its own cgroup as the
/// root), does not bound it; `None` when none does.
fn cgroup_room(
    proc_cgroup: &str,
    root: &Path,
    read: &dyn Fn(&Path) -> Option<String>,
) -> Option<u64> {
    let mut room: Option<u64> = None;
    for line in proc_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        // (directory, limit file, usage file, the page-cache keys of memory.stat)
        let (base, limit_file, usage_file, cache_keys): (_, _, _, &[&str]) =
            if controllers.split(',').any(|c| c == "memory") {
                (
                    root.join("memory"),
                    "memory.limit_in_bytes",
                    "memory.usage_in_bytes",
                    &["total_cache", "cache"],
                )
            } else if id == "0" && controllers.is_empty() {
                (
                    root.to_path_buf(),
                    "memory.max",
                    "memory.current",
                    &["file"],
                )
            } else {
                continue;
            };
        for dir in ancestors(&base, path) {
            let number = |f: &str| read(&dir.join(f)).and_then(|s| s.trim().parse::<u64>().ok());
            // "max" (v2) does not parse: no limit
            let (Some(limit), Some(usage)) = (number(limit_file), number(usage_file)) else {
                continue;
            };
            // v1 reports "no limit" as i64::MAX rounded down to a page
            if limit >= 1 << 62 {
                continue;
            }
            // the cgroup's page cache is reclaimable: room for this file's pages too
            let cache = read(&dir.join("memory.stat"))
                .and_then(|st| stat_value(&st, cache_keys))
                .unwrap_or(0);
            let left = limit.saturating_sub(usage.saturating_sub(cache));
            room = Some(room.map_or(left, |r| r.min(left)));
        }
    }
    room
}

/// The first of `keys` that `memory.stat` (lines of "key value") has.
fn stat_value(stat: &str, keys: &[&str]) -> Option<u64> {
    keys.iter().find_map(|k| {
        stat.lines().find_map(|l| {
            let (key, value) = l.split_once(' ')?;
            (key == *k).then(|| value.trim().parse().ok()).flatten()
        })
    })
}

/// `base/path` and each of its parents up to `base` (the cgroup root itself excluded: its
/// files, where present, describe the whole machine).
fn ancestors(base: &Path, path: &str) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let mut dir = base.to_path_buf();
    for part in path.split('/').filter(|p| !p.is_empty() && *p != "..") {
        dir.push(part);
        dirs.push(dir.clone());
    }
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn files(entries: &[(&str, &str)]) -> impl Fn(&Path) -> Option<String> {
        let map: HashMap<PathBuf, String> = entries
            .iter()
            .map(|(p, s)| (PathBuf::from(p), s.to_string()))
            .collect();
        move |p: &Path| map.get(p).cloned()
    }

    #[test]
    fn mem_available_is_read_in_bytes() {
        let text = "MemTotal:       24576000 kB\nMemFree:  100 kB\nMemAvailable:   23470308 kB\n";
        assert_eq!(mem_available(text), Some(23_470_308 * 1024));
        assert_eq!(mem_available("MemTotal: 1 kB\n"), None);
    }

    #[test]
    fn a_v1_memory_cgroup_limits_by_its_room_and_its_parents() {
        let proc = "9:name=systemd:/\n4:memory:/outer/bench\n3:cpuset:/\n0::/\n";
        let read = files(&[
            (
                "/cg/memory/outer/memory.limit_in_bytes",
                "9223372036854771712\n",
            ),
            ("/cg/memory/outer/memory.usage_in_bytes", "7961964544\n"),
            (
                "/cg/memory/outer/bench/memory.limit_in_bytes",
                "2147483648\n",
            ),
            (
                "/cg/memory/outer/bench/memory.usage_in_bytes",
                "1073741824\n",
            ),
        ]);
        assert_eq!(cgroup_room(proc, Path::new("/cg"), &read), Some(1 << 30));
        // its page cache (a file read in it) is room too
        let read = files(&[
            (
                "/cg/memory/outer/bench/memory.limit_in_bytes",
                "2147483648\n",
            ),
            (
                "/cg/memory/outer/bench/memory.usage_in_bytes",
                "2000000000\n",
            ),
            (
                "/cg/memory/outer/bench/memory.stat",
                "cache 1900000000\nrss 1000\ntotal_cache 1900000000\ntotal_rss 1000\n",
            ),
        ]);
        assert_eq!(
            cgroup_room(proc, Path::new("/cg"), &read),
            Some(2_147_483_648 - 100_000_000)
        );
        // a parent with less room bounds it
        let read = files(&[
            ("/cg/memory/outer/memory.limit_in_bytes", "1000\n"),
            ("/cg/memory/outer/memory.usage_in_bytes", "600\n"),
            (
                "/cg/memory/outer/bench/memory.limit_in_bytes",
                "2147483648\n",
            ),
            (
                "/cg/memory/outer/bench/memory.usage_in_bytes",
                "1073741824\n",
            ),
        ]);
        assert_eq!(cgroup_room(proc, Path::new("/cg"), &read), Some(400));
        // unlimited all the way, or not mounted: no bound
        let read = files(&[(
            "/cg/memory/outer/memory.limit_in_bytes",
            "9223372036854771712\n",
        )]);
        assert_eq!(cgroup_room(proc, Path::new("/cg"), &read), None);
    }

    #[test]
    fn a_v2_cgroup_limits_by_memory_max_and_current() {
        let proc = "0::/user.slice/job\n";
        let read = files(&[
            ("/cg/user.slice/memory.max", "max\n"),
            ("/cg/user.slice/memory.current", "5000000\n"),
            ("/cg/user.slice/job/memory.max", "4294967296\n"),
            ("/cg/user.slice/job/memory.current", "294967296\n"),
        ]);
        assert_eq!(
            cgroup_room(proc, Path::new("/cg"), &read),
            Some(4_000_000_000)
        );
        // usage over the limit (reclaim pending): no room
        let read = files(&[
            ("/cg/user.slice/job/memory.max", "100\n"),
            ("/cg/user.slice/job/memory.current", "150\n"),
        ]);
        assert_eq!(cgroup_room(proc, Path::new("/cg"), &read), Some(0));
        assert_eq!(cgroup_room("0::/\n", Path::new("/cg"), &read), None);
        // its page cache ("file" in memory.stat) is room too
        let read = files(&[
            ("/cg/user.slice/job/memory.max", "1000\n"),
            ("/cg/user.slice/job/memory.current", "900\n"),
            ("/cg/user.slice/job/memory.stat", "anon 100\nfile 700\n"),
        ]);
        assert_eq!(cgroup_room(proc, Path::new("/cg"), &read), Some(800));
    }
}
