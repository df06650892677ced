//! `bloomery parquet index`: filters for row groups without one, in sidecars or a rewrite.

use std::path::Path;

use anyhow::{bail, Result};
use bloomery::parquet::{
    build_filters, rewrite_with_filters, ParquetError, ParquetFile, ParquetSidecar, SidecarFilter,
    Sizing,
};
use bloomery::Persist;
use rayon::prelude::*;

use crate::cli::ParquetIndexArgs;
use crate::num::{bytes, group, rate};
use crate::output::note;

use super::keys::*;

pub(super) fn index(a: ParquetIndexArgs) -> Result<u8> {
    bloomery::params::check_fpr(a.fpr)?;
    if let Some(out) = &a.rewrite {
        let [input] = a.paths.as_slice() else {
            bail!("--rewrite takes one input file, got {}", a.paths.len());
        };
        crate::cmd::check_out(out, &[input.as_path()], a.force)?;
        let r = rewrite_with_filters(input, out, &a.column, a.fpr)?;
        note(&format!(
            "wrote {} ({}): {} row groups, {} filters built for `{}` at {}, {} filters kept; \
             read back and verified",
            out.display(),
            bytes(r.bytes),
            r.row_groups,
            r.built,
            a.column,
            rate(a.fpr),
            r.kept
        ));
        return Ok(0);
    }
    let mut tally = Tally::default();
    let (paths, explicit) = files(&a.paths, &mut tally);
    let results: Vec<Result<Option<String>, ParquetError>> = paths
        .par_iter()
        .map(|p| index_one(p, &a.column, a.fpr))
        .collect();
    let (mut written, mut complete) = (0u64, 0u64);
    for (r, explicit) in results.iter().zip(explicit) {
        match r {
            Ok(Some(msg)) => {
                written += 1;
                note(msg);
            }
            Ok(None) => complete += 1,
            Err(e) => tally.error(e, explicit),
        }
    }
    note(&format!(
        "{} sidecar files written; {} Parquet files already have a filter in every row group \
         for `{}`",
        group(written),
        group(complete),
        a.column
    ));
    Ok(if tally.errors > 0 { 2 } else { 0 })
}

/// Build the sidecar of one file (None: every row group has a filter already).
fn index_one(path: &Path, column: &str, fpr: f64) -> Result<Option<String>, ParquetError> {
    let pf = ParquetFile::open(path)?;
    let col = pf.find_column(column)?;
    let name = pf.column_path(col);
    let missing: Vec<usize> = (0..pf.row_groups())
        .filter(|&rg| pf.filter_location(rg, col).is_none())
        .collect();
    if missing.is_empty() {
        return Ok(None);
    }
    let built = build_filters(&pf, col, &missing, fpr, Sizing::Tight)?;
    let mut rgs: Vec<Option<SidecarFilter>> = vec![None; pf.row_groups()];
    let (mut size, mut distinct) = (0u64, 0u64);
    for b in built {
        size += b.filter.num_bytes() as u64;
        distinct += b.distinct;
        rgs[b.row_group] = Some(SidecarFilter {
            filter: b.filter,
            distinct: b.distinct,
            fpr,
        });
    }
    let bloomery = |e: bloomery::Error| ParquetError::Bloomery {
        path: path.to_path_buf(),
        source: e,
    };
    let side = ParquetSidecar::new(pf.len(), pf.footer_hash(), &name, pf.column_type(col), rgs)
        .map_err(bloomery)?;
    let out = ParquetSidecar::path_for(path, &name);
    side.save(&out).map_err(|e| ParquetError::Bloomery {
        path: out.clone(),
        source: e,
    })?;
    Ok(Some(format!(
        "wrote {}: {} row groups of {} ({} distinct values), {} of filters at {}",
        out.display(),
        missing.len(),
        pf.row_groups(),
        group(distinct),
        bytes(size),
        rate(fpr)
    )))
}
