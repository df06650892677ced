//! `bloomery parquet check|prune|info|index`: key lists against the split-block filters of
//! Parquet files (library module `bloomery::parquet`), with grep's exit codes.

use anyhow::Result;

use crate::cli::ParquetCommand;

mod check;
mod index;
mod info;
mod keys;
mod prune;

use check::check;
use index::index;
use info::info;
use prune::prune;

pub fn run(c: ParquetCommand) -> Result<u8> {
    match c {
        ParquetCommand::Check(a) => check(a),
        ParquetCommand::Prune(a) => prune(a),
        ParquetCommand::Info(a) => info(a),
        ParquetCommand::Index(a) => index(a),
    }
}
