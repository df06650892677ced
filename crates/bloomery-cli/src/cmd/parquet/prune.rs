//! `bloomery parquet prune`: the files (and row groups) that may hold any of the keys.

use std::io::{self, BufWriter, Write};

use anyhow::Result;
use bloomery::parquet::{scan, FilterSource, Mode, Query};
use serde_json::json;

use crate::cli::ParquetPruneArgs;
use crate::num::group;
use crate::output::{self, note};

use super::keys::*;

pub(super) fn prune(a: ParquetPruneArgs) -> Result<u8> {
    let mut tally = Tally::default();
    let (keys, (paths, explicit)) = keys_and_files(&a.q, &a.paths, &mut tally)?;
    let q = Query {
        column: &a.q.column,
        keys: &keys.keys,
        mode: Mode::Any,
        use_sidecars: !a.q.no_sidecars,
    };
    let mut out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let (mut listed, mut listed_rgs) = (0u64, 0u64);
    let mut json_files = Vec::new();
    let mut i = 0usize;
    scan(&paths, &q, |path, answer| -> Result<()> {
        let explicit = explicit[i];
        i += 1;
        let ans = match answer {
            Ok(x) => x,
            Err(e) => {
                tally.error(&e, explicit);
                return Ok(());
            }
        };
        tally.add(path, &ans);
        let keep: Vec<_> = ans
            .row_groups
            .iter()
            .filter(|r| r.hits.may_contain_any())
            .collect();
        if keep.is_empty() {
            return Ok(());
        }
        listed += 1;
        listed_rgs += keep.len() as u64;
        let shown = path.display().to_string();
        if a.json {
            json_files.push(json!({
                "file": shown,
                "row_groups": keep.iter().filter(|r| r.source != FilterSource::None)
                    .map(|r| r.index).collect::<Vec<_>>(),
                "unfiltered_row_groups": keep.iter().filter(|r| r.source == FilterSource::None)
                    .map(|r| r.index).collect::<Vec<_>>(),
            }));
        } else if a.row_groups {
            for r in keep {
                writeln!(out, "{shown}\t{}", r.index)?;
            }
        } else {
            writeln!(out, "{shown}")?;
        }
        Ok(())
    })?;
    if a.json {
        out.flush()?;
        output::json(&json!({
            "column": a.q.column,
            "keys": keys.keys.len(),
            "files_scanned": tally.files,
            "row_groups_scanned": tally.row_groups,
            "files": json_files,
        }))?;
    }
    out.flush()?;
    tally.summary("they are listed", &keys.keys);
    note(&format!(
        "{} of {} files, {} of {} row groups may hold a key",
        group(listed),
        group(tally.files),
        group(listed_rgs),
        group(tally.row_groups)
    ));
    Ok(status(listed > 0, &tally))
}
