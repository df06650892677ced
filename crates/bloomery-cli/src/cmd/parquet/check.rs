//! `bloomery parquet check`: which keys may be in which file and row group.

use std::io::{self, BufWriter, StdoutLock, Write};
use std::path::Path;

use anyhow::Result;
use bloomery::parquet::{scan, FileAnswer, Hits, Mode, Query, RowGroupAnswer};
use serde_json::{json, Value};

use crate::cli::ParquetCheckArgs;
use crate::output::{self};

use super::keys::*;

pub(super) fn check(a: ParquetCheckArgs) -> Result<u8> {
    let mut tally = Tally::default();
    let (keys, (paths, explicit)) = keys_and_files(&a.q, &a.paths, &mut tally)?;
    let q = Query {
        column: &a.q.column,
        keys: &keys.keys,
        mode: if a.count { Mode::Count } else { Mode::Keys },
        use_sidecars: !a.q.no_sidecars,
    };
    let mut report = Report::new(&a, &keys);
    let mut i = 0usize;
    scan(&paths, &q, |path, answer| -> Result<()> {
        let explicit = explicit[i];
        i += 1;
        match answer {
            Ok(ans) => {
                tally.add(path, &ans);
                report.file(path, &ans)
            }
            Err(e) => {
                tally.error(&e, explicit);
                Ok(())
            }
        }
    })?;
    // A key is certainly absent only if every row group had a filter.
    let printed = report.finish(tally.unfiltered == 0)?;
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

/// What `check` prints: lines per row group as the files are scanned, or (`--json`, `--invert`)
/// one document at the end.
struct Report<'a> {
    a: &'a ParquetCheckArgs,
    keys: &'a Keys,
    out: BufWriter<StdoutLock<'static>>,
    /// Keys (`--invert`: absent keys) or counts printed: the exit status.
    printed: u64,
    /// `--invert`: which keys some row group may hold.
    hit: Vec<bool>,
    /// `--json` without `--invert`: one object per file.
    files: Vec<Value>,
}

impl<'a> Report<'a> {
    fn new(a: &'a ParquetCheckArgs, keys: &'a Keys) -> Self {
        Report {
            a,
            keys,
            out: BufWriter::with_capacity(1 << 16, io::stdout().lock()),
            printed: 0,
            hit: vec![false; if a.invert { keys.keys.len() } else { 0 }],
            files: Vec::new(),
        }
    }

    /// One file's answer.
    fn file(&mut self, path: &Path, ans: &FileAnswer) -> Result<()> {
        let shown = path.display().to_string();
        let mut row_groups = Vec::new();
        for r in &ans.row_groups {
            if let Some(v) = self.row_group(&shown, r)? {
                row_groups.push(v);
            }
        }
        if self.a.json && !self.a.invert {
            self.files.push(json!({
                "file": shown,
                "column": ans.column,
                "type": ans.column_type.describe(),
                "invalid_keys": ans.invalid_keys,
                "sidecar": sidecar_json(&ans.sidecar),
                "row_groups": row_groups,
            }));
        }
        Ok(())
    }

    /// One row group: its lines are written (text), its object returned (`--json`), or its
    /// keys marked (`--invert`).
    fn row_group(&mut self, shown: &str, r: &RowGroupAnswer) -> Result<Option<Value>> {
        let (a, keys, out) = (self.a, self.keys, &mut self.out);
        let json = match (&r.hits, a.invert) {
            (Hits::Keys(ks), true) => {
                ks.iter().for_each(|&k| self.hit[k as usize] = true);
                None
            }
            (Hits::Keys(ks), false) if a.json => {
                self.printed += ks.len() as u64;
                let matches: Vec<_> = ks.iter().map(|&k| text(keys.line(k as usize))).collect();
                Some(json!({
                    "row_group": r.index,
                    "rows": r.rows,
                    "filter": source_name(r.source),
                    "matches": matches,
                }))
            }
            (Hits::Keys(ks), false) => {
                for &k in ks {
                    out.write_all(shown.as_bytes())?;
                    write!(out, "\t{}\t", r.index)?;
                    out.write_all(keys.line(k as usize))?;
                    out.write_all(b"\n")?;
                }
                self.printed += ks.len() as u64;
                None
            }
            (Hits::Count(n), _) if a.json => {
                self.printed += n;
                Some(json!({
                    "row_group": r.index,
                    "rows": r.rows,
                    "filter": source_name(r.source),
                    "count": n,
                }))
            }
            (Hits::Count(n), _) => {
                writeln!(out, "{shown}\t{}\t{n}", r.index)?;
                self.printed += n;
                None
            }
            (Hits::Unknown, _) if a.json && !a.invert => Some(json!({
                "row_group": r.index,
                "rows": r.rows,
                "filter": Value::Null,
            })),
            (Hits::Unknown, _) if a.count => {
                writeln!(out, "{shown}\t{}\t-", r.index)?;
                None
            }
            _ => None,
        };
        Ok(json)
    }

    /// After the scan: the absent keys (`--invert`, only when `certain`) or the JSON document.
    /// Returns how many keys or counts were printed.
    fn finish(mut self, certain: bool) -> Result<u64> {
        let (a, keys) = (self.a, self.keys);
        if a.invert {
            let absent = self.absent(certain)?;
            if a.json {
                self.out.flush()?;
                output::json(&json!({
                    "column": a.q.column,
                    "keys": keys.keys.len(),
                    "certain": certain,
                    "absent": absent,
                }))?;
            }
        } else if a.json {
            self.out.flush()?;
            output::json(&json!({
                "column": a.q.column,
                "keys": keys.keys.len(),
                "files": self.files,
            }))?;
        }
        self.out.flush()?;
        Ok(self.printed)
    }

    /// `--invert`: the keys no row group may hold, written as lines (text) or returned
    /// (`--json`); none unless `certain`.
    fn absent(&mut self, certain: bool) -> Result<Vec<String>> {
        let mut absent = Vec::new();
        if !certain {
            return Ok(absent);
        }
        for (k, &h) in self.hit.iter().enumerate() {
            if h {
                continue;
            }
            if self.a.json {
                absent.push(text(self.keys.line(k)));
            } else {
                self.out.write_all(self.keys.line(k))?;
                self.out.write_all(b"\n")?;
            }
            self.printed += 1;
        }
        Ok(absent)
    }
}
