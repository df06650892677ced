//! One module per command family; `run` dispatches. Every command returns its exit status.

mod add;
mod calc;
mod check;
pub mod cluster;
mod compress;
mod create;
mod dedup;
mod export;
mod gen;
mod import_redisbloom;
mod info;
mod lab;
mod merge;
pub mod open;
mod parquet;
mod remove;
pub(crate) mod time_window;
mod xml;

use std::path::Path;

use anyhow::{bail, Context, Result};
use bloomery::AnyFilter;

use crate::cli::Command;

pub fn run(cmd: Command) -> Result<u8> {
    match cmd {
        Command::Create(a) if a.parquet_sizing && a.kind.kind() != bloomery::Kind::SplitBlock => {
            bail!("--parquet-sizing applies to --kind split-block only")
        }
        Command::Create(a) if a.window.is_some() => {
            time_window::create(&a, a.window.unwrap_or_default())
        }
        Command::Create(a) => create::run(a),
        // each file mapped once: its header says whether it is a time window
        Command::Add(a) => match open::map(&a.file, false)? {
            f if time_window::is_time_window(&f) => time_window::add(&a, &f),
            f => add::run(a, f),
        },
        Command::Check(a) => match open::map(&a.file, false)? {
            f if time_window::is_time_window(&f) => time_window::check(&a, &f),
            f => check::run(a, &f),
        },
        Command::Dedup(a) => dedup::run(a),
        Command::Info(a) => match open::map(&a.file, false)? {
            f if time_window::is_time_window(&f) => time_window::info(&a, &f),
            f => info::info(a, &f),
        },
        Command::Estimate(a) => info::estimate(a),
        Command::Union(a) => merge::union(a, false),
        Command::Intersect(a) => merge::union(a, true),
        Command::Fold(a) => merge::fold(a),
        Command::Calc(a) => calc::run(a),
        Command::Lab(a) => lab::run(a),
        Command::Remove(a) => remove::run(&a),
        Command::Count(a) => check::count(&a),
        Command::Flatten(a) => merge::flatten(&a),
        Command::GenUrls(a) => gen::run(a),
        Command::Compress(a) => compress::compress(a),
        Command::Decompress(a) => compress::decompress(a),
        Command::Diff(a) => compress::diff(a),
        Command::Patch(a) => compress::patch(a),
        Command::Xml(c) => xml::run(c),
        Command::Parquet(c) => parquet::run(c),
        Command::Cluster(c) => cluster::run(c),
        Command::Export(a) => export::export(a),
        Command::Import(a) => export::import(a),
    }
}

/// Save atomically, with the path in the error.
pub fn save(f: &AnyFilter, path: &Path) -> Result<()> {
    f.save(path)
        .with_context(|| format!("cannot write `{}`", path.display()))
}

/// Refuse to overwrite `out` unless forced or it is one of `inputs`.
pub fn check_out(out: &Path, inputs: &[&Path], force: bool) -> Result<()> {
    if force || !out.exists() {
        return Ok(());
    }
    let same = |p: &Path| match (out.canonicalize(), p.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if inputs.iter().any(|p| same(p)) {
        return Ok(());
    }
    bail!(
        "`{}` already exists (use --force to overwrite it)",
        out.display()
    )
}

/// True when a structure's rate is past its target: above it once past capacity, or more
/// than 10% above it before (the fill's noise at capacity stays well inside that on any
/// filter of more than a few thousand bits).
pub fn past_target(items: u64, capacity: u64, now: f64, target: f64) -> bool {
    target > 0.0 && now > target && ((capacity > 0 && items > capacity) || now > 1.1 * target)
}

/// Warn when a filter went past its capacity and its rate past its target.
pub fn warn_if_over_info(i: &bloomery::kinds::FilterInfo) {
    if past_target(i.items, i.capacity, i.current_fpr, i.target_fpr) {
        crate::output::warn(&format!(
            "the filter holds {} items (capacity {}): its false-positive rate is now {}, past \
             its target {}; create a larger filter",
            crate::num::group(i.items),
            crate::num::group(i.capacity),
            crate::num::rate(i.current_fpr),
            crate::num::rate(i.target_fpr)
        ));
    }
}
