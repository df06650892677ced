//! `bloomery`: the command line. Glue only: flags in `cli`, commands in `cmd/*`, line
//! reading in `input`, printing in `output`.

mod cli;
mod cmd;
mod input;
mod num;
mod output;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    output::set_quiet(cli.quiet);
    bloomery::set_max_bytes(cli.max_memory.unwrap_or_else(machine_memory));
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
        .unwrap_or(bloomery::DEFAULT_MAX_BYTES)
}

/// The error and its causes on one line, skipping causes the message already includes (the
/// library's errors repeat their source in their own text).
fn message(e: &anyhow::Error) -> String {
    let mut msg = String::new();
    for c in e.chain() {
        let s = c.to_string();
        if msg.contains(&s) {
            continue;
        }
        if !msg.is_empty() {
            msg.push_str(": ");
        }
        msg.push_str(&s);
        if let Some(bloomery::Error::TooLarge { .. }) = c.downcast_ref::<bloomery::Error>() {
            msg.push_str(" [the limit is the machine's RAM; override it with --max-memory]");
        }
    }
    msg
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
