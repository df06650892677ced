//! `bloomery`: the command line. Glue only: flags in `cli`, commands in `cmd/*`, line
//! reading in `input`, printing in `output`.

// The flags' doc comments are clap's terminal help, where `FILE<TAB>KEY` reads as meant.
#![allow(rustdoc::invalid_html_tags)]

mod cli;
mod cmd;
mod input;
mod num;
mod output;
mod pagecache;

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    output::set_quiet(cli.quiet);
    LIMIT_FROM_FLAG.store(cli.max_memory.is_some(), Ordering::Relaxed);
    bloomery::tuning::set_max_bytes(cli.max_memory.unwrap_or_else(machine_memory));
    match cmd::run(cli.command) {
        Ok(code) => ExitCode::from(code),
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            output::error(&message(&e));
            ExitCode::from(2)
        }
    }
}

/// The memory limit for one filter: the machine's total RAM (from /proc/meminfo), or the
/// library default where that is unknown.
fn machine_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            kb.checked_mul(1024)
        })
        .unwrap_or(bloomery::tuning::DEFAULT_MAX_BYTES)
}

/// True when the memory limit came from `--max-memory` (else it is the machine's RAM).
pub(crate) fn memory_limit_from_flag() -> bool {
    LIMIT_FROM_FLAG.load(Ordering::Relaxed)
}

/// See [`memory_limit_from_flag`].
static LIMIT_FROM_FLAG: AtomicBool = AtomicBool::new(false);

/// The error and its causes on one line, skipping causes the message already includes (the
/// library's errors repeat their source in their own text).
fn message(e: &anyhow::Error) -> String {
    let mut msg = String::new();
    for c in e.chain() {
        let s = match c.downcast_ref::<bloomery::Error>() {
            Some(&bloomery::Error::TooLarge { requested, limit }) => {
                too_large(requested, limit, !msg.is_empty())
            }
            _ => c.to_string(),
        };
        if msg.contains(&s) {
            continue;
        }
        // a file error naming its path (`` `f.bloom`: No such file``, ``invalid filter data:
        // `f.bloom`: bad magic``) after a context that names it already (``cannot load
        // `f.bloom` ``): the path once
        let s = without_named_paths(&s, &msg);
        if msg.contains(&s) {
            continue;
        }
        if !msg.is_empty() {
            msg.push_str(": ");
        }
        msg.push_str(&s);
    }
    msg
}

/// `s` without each `` `PATH`: `` that names a path `msg` already names.
fn without_named_paths(s: &str, msg: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(open) = rest.find('`') {
        let after = &rest[open + 1..];
        match after.split_once("`: ") {
            Some((path, tail)) if !path.contains('`') && msg.contains(&format!("`{path}`")) => {
                out.push_str(&rest[..open]);
                rest = tail;
            }
            _ => {
                out.push_str(&rest[..open + 1]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A size over the memory limit, in the command line's terms: where the limit came from and
/// what to change (the library's own message names its `max_bytes` setting). `in_context`:
/// the error comes with a context (loading or writing a named file), not from sizing a new
/// filter, so smaller sizing options are no remedy.
fn too_large(requested: u64, limit: u64, in_context: bool) -> String {
    use num::{bytes, group};
    let process = bloomery::tuning::max_bytes();
    let source = if LIMIT_FROM_FLAG.load(Ordering::Relaxed) {
        format!("the memory limit of {} set by --max-memory", bytes(process))
    } else {
        format!(
            "the memory limit of {} (this machine's RAM; --max-memory sets another)",
            bytes(process)
        )
    };
    // the file reader allows header room above the limit: still the process limit. A
    // smaller limit is a structure's own (given when it was built and stored in its file: a
    // scalable or cuckoo filter grows within it), which --max-memory cannot raise
    if limit < process {
        return format!(
            "this needs {} ({} bytes), over the filter's own limit of {} (stored in its file, \
             below {source})",
            bytes(requested),
            group(requested),
            bytes(limit)
        );
    }
    let over = format!("over {source}");
    let flag = LIMIT_FROM_FLAG.load(Ordering::Relaxed);
    let remedy = match (in_context, flag) {
        (false, false) => "; ask for a smaller capacity or a larger error rate",
        (false, true) => {
            "; ask for a smaller capacity or a larger error rate, or raise --max-memory"
        }
        (true, false) => "",
        (true, true) => "; raise --max-memory",
    };
    format!(
        "this needs {} ({} bytes), {over}{remedy}",
        bytes(requested),
        group(requested)
    )
}

/// A write to a closed pipe (`bloomery check ... | head`) ends quietly with status 0.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        let io = c
            .downcast_ref::<std::io::Error>()
            .or(match c.downcast_ref::<bloomery::Error>() {
                Some(bloomery::Error::Io(io)) => Some(io),
                _ => None,
            });
        io.is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
