//! `bloomery parquet check`: which keys may be in which file and row group.

use std::io::{self, BufWriter, Write};

use anyhow::Result;
use bloomery::parquet::{scan, Hits, Mode, Query};
use serde_json::{json, Value};

use crate::cli::ParquetCheckArgs;
use crate::output::{self};

use super::keys::*;

pub(super) fn check(a: ParquetCheckArgs) -> Result<u8> {
    let mut tally = Tally::default();
    let (keys, (paths, explicit)) = keys_and_files(&a.q, &a.paths, &mut tally)?;
    let mode = if a.count { Mode::Count } else { Mode::Keys };
    let q = Query {
        column: &a.q.column,
        keys: &keys.keys,
        mode,
        use_sidecars: !a.q.no_sidecars,
    };
    let mut out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let mut printed = 0u64;
    let mut hit = vec![false; if a.invert { keys.keys.len() } else { 0 }];
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
        let shown = path.display().to_string();
        let mut rgs = Vec::new();
        for r in &ans.row_groups {
            match (&r.hits, a.invert) {
                (Hits::Keys(ks), true) => ks.iter().for_each(|&k| hit[k as usize] = true),
                (Hits::Keys(ks), false) if a.json => {
                    printed += ks.len() as u64;
                    rgs.push(json!({
                    "row_group": r.index,
                    "rows": r.rows,
                    "filter": source_name(r.source),
                    "matches": ks.iter().map(|&k| text(keys.line(k as usize))).collect::<Vec<_>>(),
                    }))
                }
                (Hits::Keys(ks), false) => {
                    for &k in ks {
                        out.write_all(shown.as_bytes())?;
                        write!(out, "\t{}\t", r.index)?;
                        out.write_all(keys.line(k as usize))?;
                        out.write_all(b"\n")?;
                    }
                    printed += ks.len() as u64;
                }
                (Hits::Count(n), _) if a.json => {
                    printed += n;
                    rgs.push(json!({
                        "row_group": r.index,
                        "rows": r.rows,
                        "filter": source_name(r.source),
                        "count": n,
                    }))
                }
                (Hits::Count(n), _) => {
                    writeln!(out, "{shown}\t{}\t{n}", r.index)?;
                    printed += n;
                }
                (Hits::Unknown, _) if a.json && !a.invert => rgs.push(json!({
                    "row_group": r.index,
                    "rows": r.rows,
                    "filter": Value::Null,
                })),
                (Hits::Unknown, _) if a.count => writeln!(out, "{shown}\t{}\t-", r.index)?,
                _ => {}
            }
        }
        if a.json && !a.invert {
            json_files.push(json!({
                "file": shown,
                "column": ans.column,
                "type": ans.column_type.describe(),
                "invalid_keys": ans.invalid_keys,
                "sidecar": sidecar_json(&ans.sidecar),
                "row_groups": rgs,
            }));
        }
        Ok(())
    })?;
    if a.invert {
        let certain = tally.unfiltered == 0;
        let mut absent = Vec::new();
        if certain {
            for (k, &h) in hit.iter().enumerate() {
                if !h {
                    if a.json {
                        absent.push(text(keys.line(k)));
                    } else {
                        out.write_all(keys.line(k))?;
                        out.write_all(b"\n")?;
                    }
                    printed += 1;
                }
            }
        }
        if a.json {
            out.flush()?;
            output::json(&json!({
                "column": a.q.column,
                "keys": keys.keys.len(),
                "certain": certain,
                "absent": absent,
            }))?;
        }
    } else if a.json {
        out.flush()?;
        output::json(&json!({
            "column": a.q.column,
            "keys": keys.keys.len(),
            "files": json_files,
        }))?;
    }
    out.flush()?;
    tally.summary(
        if a.invert {
            "so no key is certainly absent and none is printed"
        } else {
            "they are not listed per key"
        },
        &keys.keys,
    );
    Ok(status(printed > 0, &tally))
}
