//! bloomery lab: reproductions of the seed papers' tables and figures.
//!
//! Each experiment is one module with its parameters as a struct, fixed seeds, and a `quick`
//! size that runs in seconds (used by the tests and CI). Running one writes a markdown table
//! and a plot (SVG) into the chosen output folder.

use std::path::{Path, PathBuf};

/// How to run an experiment.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Folder the tables and plots go to (created if missing).
    pub out_dir: PathBuf,
    /// Small sizes that run in seconds.
    pub quick: bool,
    /// Base seed for everything random.
    pub seed: u64,
}

/// What an experiment produced.
#[derive(Debug, Clone)]
pub struct Report {
    /// Experiment name.
    pub name: &'static str,
    /// The markdown table (also written to `<out_dir>/<name>.md`).
    pub markdown: String,
    /// Files written.
    pub files: Vec<PathBuf>,
}

/// A registered experiment.
pub struct Experiment {
    /// Name used on the command line (`bloomery lab NAME`).
    pub name: &'static str,
    /// One line for `bloomery lab --list`.
    pub summary: &'static str,
    /// The seed paper and section it reproduces.
    pub source: &'static str,
    /// Run it.
    pub run: fn(&RunOptions) -> anyhow::Result<Report>,
}

/// Every experiment, in the order `lab all` runs them.
pub fn registry() -> &'static [Experiment] {
    &[]
}

/// Find an experiment by name.
pub fn find(name: &str) -> Option<&'static Experiment> {
    registry().iter().find(|e| e.name == name)
}

/// Make sure the output folder exists.
pub fn ensure_dir(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    Ok(())
}
