//! `bloomery parquet info`: the columns, row groups and filters of Parquet files.

use std::io::{self, Write};

use anyhow::Result;
use bloomery::parquet::{FilterSource, ParquetFile, ParquetSidecar, SidecarFilter};
use bloomery::{Persist, Stats};
use serde_json::{json, Value};

use crate::cli::ParquetInfoArgs;
use crate::num::{bytes, group, rate};
use crate::output::{self, warn};

use super::keys::*;

pub(super) fn info(a: ParquetInfoArgs) -> Result<u8> {
    let pf = ParquetFile::open(&a.file)?;
    let cols: Vec<usize> = match &a.column {
        Some(c) => vec![pf.find_column(c)?],
        None => (0..pf.column_paths().len()).collect(),
    };
    let sidecars = current_sidecars(&a, &pf, &cols);
    let meta = pf.metadata();
    let fm = meta.file_metadata();
    let mut json_rgs = Vec::new();
    let mut lines: Vec<[String; 8]> = Vec::new();
    for rg in 0..pf.row_groups() {
        let mut jcols = Vec::new();
        for (ci, &c) in cols.iter().enumerate() {
            let name = pf.column_path(c);
            let ty = pf.column_type(c).describe();
            let loc = pf.filter_location(rg, c);
            let stats_ndv = meta
                .row_group(rg)
                .column(c)
                .statistics()
                .and_then(|s| s.distinct_count_opt());
            let (filter, source, ndv, fpp) = match (pf.read_filter(rg, c)?, &sidecars[ci]) {
                (Some(f), _) => (Some(f), FilterSource::Parquet, stats_ndv, None),
                (None, Some(s)) => match s.row_groups.get(rg).and_then(|r| r.as_ref()) {
                    Some(SidecarFilter {
                        filter,
                        distinct,
                        fpr,
                    }) => (
                        Some(filter.clone()),
                        FilterSource::Sidecar,
                        Some(*distinct),
                        Some(*fpr),
                    ),
                    None => (None, FilterSource::None, stats_ndv, None),
                },
                (None, None) => (None, FilterSource::None, stats_ndv, None),
            };
            match &filter {
                Some(f) => {
                    let est = f.estimated_len();
                    jcols.push(json!({
                        "column": name,
                        "type": ty,
                        "filter": source_name(source),
                        "offset": if source == FilterSource::Parquet { json!(loc.map(|l| l.offset)) } else { Value::Null },
                        "length": if source == FilterSource::Parquet { json!(loc.and_then(|l| l.length)) } else { Value::Null },
                        "bitset_bytes": f.num_bytes(),
                        "fill": f.fill_ratio(),
                        "estimated_distinct": if est.is_finite() { json!(est.round() as u64) } else { Value::Null },
                        "current_fpr": f.current_fpr(),
                        "ndv": ndv,
                        "fpp": fpp,
                    }));
                    lines.push([
                        rg.to_string(),
                        name,
                        ty,
                        match source {
                            FilterSource::Sidecar => "sidecar".into(),
                            _ => "parquet".into(),
                        },
                        bytes(f.num_bytes() as u64),
                        format!("{:.4}", f.fill_ratio()),
                        if est.is_finite() {
                            format!(
                                "~{}{}",
                                group(est.round() as u64),
                                ndv.map(|n| format!(" (ndv {})", group(n)))
                                    .unwrap_or_default()
                            )
                        } else {
                            "full".into()
                        },
                        format!(
                            "{}{}",
                            rate(f.current_fpr()),
                            fpp.map(|p| format!(" (sized for {})", rate(p)))
                                .unwrap_or_default()
                        ),
                    ]);
                }
                None => {
                    jcols.push(
                        json!({"column": name, "type": ty, "filter": Value::Null, "ndv": ndv}),
                    );
                    lines.push([
                        rg.to_string(),
                        name,
                        ty,
                        "none".into(),
                        "-".into(),
                        "-".into(),
                        ndv.map(|n| format!("ndv {}", group(n)))
                            .unwrap_or_else(|| "-".into()),
                        "-".into(),
                    ]);
                }
            }
        }
        json_rgs.push(json!({
            "row_group": rg,
            "rows": pf.rows(rg),
            "columns": jcols,
        }));
    }
    if a.json {
        output::json(&json!({
            "file": a.file.display().to_string(),
            "bytes": pf.len(),
            "created_by": fm.created_by(),
            "rows": fm.num_rows(),
            "row_groups": json_rgs,
        }))?;
        return Ok(0);
    }
    print_table(&a, &pf, &lines)
}

/// The sidecars of the listed columns, where present and current (a stale or unreadable one
/// is ignored with a warning).
fn current_sidecars(
    a: &ParquetInfoArgs,
    pf: &ParquetFile,
    cols: &[usize],
) -> Vec<Option<ParquetSidecar>> {
    let mut sidecars = Vec::new();
    for &c in cols {
        let name = pf.column_path(c);
        let p = ParquetSidecar::path_for(&a.file, &name);
        let s = if p.is_file() {
            match ParquetSidecar::load(&p) {
                Ok(s) if s.source_len == pf.len() && s.source_footer_hash == pf.footer_hash() => {
                    Some(s)
                }
                Ok(_) => {
                    warn(&format!(
                        "sidecar `{}` ignored: it was built for another version of the file",
                        p.display()
                    ));
                    None
                }
                Err(e) => {
                    warn(&format!("sidecar `{}` ignored: {e}", p.display()));
                    None
                }
            }
        } else {
            None
        };
        sidecars.push(s);
    }
    sidecars
}

/// The file's summary, then one line per row group and column.
fn print_table(a: &ParquetInfoArgs, pf: &ParquetFile, lines: &[[String; 8]]) -> Result<u8> {
    let meta = pf.metadata();
    let fm = meta.file_metadata();
    let mut out = io::stdout().lock();
    output::table(
        &mut out,
        &[
            ("file", a.file.display().to_string()),
            (
                "size",
                format!("{} ({} bytes)", bytes(pf.len()), group(pf.len())),
            ),
            (
                "created by",
                fm.created_by().unwrap_or("unknown").to_string(),
            ),
            (
                "rows",
                format!(
                    "{} in {} row groups, {} columns",
                    group(fm.num_rows().max(0) as u64),
                    pf.row_groups(),
                    pf.column_paths().len()
                ),
            ),
        ],
    )?;
    writeln!(out)?;
    let header = [
        "rg", "column", "type", "filter", "size", "fill", "distinct", "fpr now",
    ]
    .map(String::from);
    let all: Vec<&[String; 8]> = std::iter::once(&header).chain(lines.iter()).collect();
    let widths: Vec<usize> = (0..8)
        .map(|i| all.iter().map(|l| l[i].chars().count()).max().unwrap_or(0))
        .collect();
    for l in all {
        let mut s = String::new();
        for (i, cell) in l.iter().enumerate() {
            if i + 1 == l.len() {
                s.push_str(cell);
            } else {
                s.push_str(&format!("{cell:<w$}  ", w = widths[i]));
            }
        }
        writeln!(out, "{}", s.trim_end())?;
    }
    out.flush()?;
    Ok(0)
}
