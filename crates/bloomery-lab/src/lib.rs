//! bloomery lab: reproductions of the source papers' tables and figures.
//!
//! Each experiment is one module with its parameters as a struct, fixed seeds, and a `quick`
//! size that runs in seconds (used by the tests and CI). Running one writes a markdown table
//! and a plot (SVG) into the chosen output folder.
//!
//! The experiments live in [`experiments`] (one file each, registered in
//! [`experiments::REGISTRY`]); they share [`table`] (markdown tables), [`plot`] (SVG plots
//! through plotters' SVG backend, no system fonts needed), [`measure`] (key streams and the
//! statistical tolerances) and [`write_report`]. Full-size outputs and how to run them:
//! `docs/lab/README.md`.

use std::path::{Path, PathBuf};

pub mod experiments;
pub mod measure;
pub mod pcap;
pub mod plot;
pub mod table;

pub use plot::{Plot, Series, Style};
pub use table::Table;

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
    /// The paper and section it reproduces.
    pub source: &'static str,
    /// Run it.
    pub run: fn(&RunOptions) -> anyhow::Result<Report>,
}

/// Every experiment, in the order `lab all` runs them.
pub fn registry() -> &'static [Experiment] {
    experiments::REGISTRY
}

/// Find an experiment by name.
pub fn find(name: &str) -> Option<&'static Experiment> {
    registry().iter().find(|e| e.name == name)
}

/// Say on stderr that an experiment runs on generated data because a data set is missing.
/// Its report says so too, but someone reading only the terminal must not take the numbers
/// for the real data's.
pub fn note_generated(experiment: &str, missing: &Path, instead: &str, fetch: &str) {
    eprintln!(
        "bloomery lab: {experiment}: `{}` was not found, so this run uses {instead}, not the \
         real data (run `bash scripts/fetch-data.sh {fetch}`, or set BLOOMERY_DATA)",
        missing.display()
    );
}

/// Make sure the output folder exists.
pub fn ensure_dir(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    Ok(())
}

impl RunOptions {
    /// Options writing to `out_dir`, full size, seed 1.
    pub fn new(out_dir: impl Into<PathBuf>) -> Self {
        Self {
            out_dir: out_dir.into(),
            quick: false,
            seed: 1,
        }
    }
}

/// Write an experiment's outputs: `<out_dir>/<name>.md` (the markdown, which links the plot)
/// and `<out_dir>/<name>.svg` (the plot), and return the report.
pub fn write_report(
    opts: &RunOptions,
    name: &'static str,
    markdown: String,
    plot: &Plot,
) -> anyhow::Result<Report> {
    ensure_dir(&opts.out_dir)?;
    let md = opts.out_dir.join(format!("{name}.md"));
    let svg = opts.out_dir.join(format!("{name}.svg"));
    plot.write_svg(&svg)?;
    std::fs::write(&md, &markdown)?;
    Ok(Report {
        name,
        markdown,
        files: vec![md, svg],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_is_consistent() {
        let names: Vec<&str> = registry().iter().map(|e| e.name).collect();
        assert_eq!(
            names,
            [
                "fpr-vs-bits",
                "partitioned-vs-classic",
                "blocked-model",
                "icarus-loops",
                "multicast",
                "resource-routing",
                "planetp",
                "counting-overflow",
                "ibf-vs-cbf",
                "sketch-errors",
                "heavy-flows",
                "geographic-routing",
                "mlbf-urls",
                "xml-cldr",
                "ip-traceback",
                "stochastic-fair-blue",
                "dictionaries",
                "summary-cache",
                "set-reconciliation",
                "set-intersection",
                "differential-files",
                "window-baselines",
            ]
        );
        for e in registry() {
            assert!(find(e.name).is_some());
            assert!(!e.summary.is_empty() && !e.summary.contains('\n'));
            let papers = [
                "Broder & Mitzenmacher",
                "Salman",
                "Cen, Xu & Sun",
                "Matsumoto, Hazeyama & Kadobayashi",
                "Kumar et al.",
                "Shtul, Baquero & Almeida",
            ];
            assert!(
                papers.iter().any(|p| e.source.contains(p)),
                "{}: cite the paper by author (docs/PAPERS.md)",
                e.name
            );
        }
        assert!(find("nope").is_none());
    }
}
