//! `bloomery lab`: glue over the `bloomery-lab` registry (the `lab` feature, on by default).

#[cfg(feature = "lab")]
use std::io::Write;

#[cfg(feature = "lab")]
use anyhow::Context;
use anyhow::{bail, Result};
#[cfg(feature = "lab")]
use bloomery_lab::{find, registry, RunOptions};

use crate::cli::LabArgs;
#[cfg(feature = "lab")]
use crate::output::note;

/// A CLI built without the `lab` feature has the subcommand but no experiments: it says so.
#[cfg(not(feature = "lab"))]
pub fn run(_: LabArgs) -> Result<u8> {
    bail!(
        "this bloomery was built without the lab (the cargo feature `lab`, on by default): \
         build it with `cargo build -p bloomery-cli --features lab` to run the experiments"
    )
}

#[cfg(feature = "lab")]
pub fn run(a: LabArgs) -> Result<u8> {
    let mut out = crate::output::stdout();
    if a.list || a.experiment.is_none() {
        if registry().is_empty() {
            writeln!(out, "no experiments registered yet")?;
        }
        let w = registry().iter().map(|e| e.name.len()).max().unwrap_or(0);
        for e in registry() {
            writeln!(out, "{:<w$}  {}  [{}]", e.name, e.summary, e.source)?;
        }
        out.flush()?;
        return Ok(0);
    }
    let name = a.experiment.as_deref().unwrap_or("all");
    let chosen: Vec<_> = if name == "all" {
        registry().iter().collect()
    } else {
        match find(name) {
            Some(e) => vec![e],
            None => {
                let names: Vec<&str> = registry().iter().map(|e| e.name).collect();
                bail!(
                    "no experiment named `{name}` (available: {})",
                    if names.is_empty() {
                        "none yet".to_string()
                    } else {
                        names.join(", ")
                    }
                );
            }
        }
    };
    let opts = RunOptions {
        out_dir: a.out.clone(),
        quick: a.quick,
        seed: a.seed,
    };
    for e in chosen {
        note(&format!("running {} ({})", e.name, e.source));
        let report = (e.run)(&opts).with_context(|| format!("experiment `{}` failed", e.name))?;
        writeln!(out, "## {}\n\n{}", report.name, report.markdown)?;
        for f in &report.files {
            note(&format!("wrote {}", f.display()));
        }
    }
    out.flush()?;
    Ok(0)
}
