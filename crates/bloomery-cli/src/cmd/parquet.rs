//! `bloomery parquet check|prune|info|index`: key lists against the split-block filters of
//! Parquet files (library module `bloomery::parquet`), with grep's exit codes.

use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use bloomery::parquet::{
    build_filters, rewrite_with_filters, scan, walk, FileAnswer, FilterSource, Hits, KeyList, Mode,
    ParquetError, ParquetFile, ParquetSidecar, Query, SidecarFilter, SidecarState, Sizing,
};
use bloomery::{Persist, Stats};
use rayon::prelude::*;
use serde_json::{json, Value};

use crate::cli::{
    ParquetCheckArgs, ParquetCommand, ParquetIndexArgs, ParquetInfoArgs, ParquetKeys,
    ParquetPruneArgs,
};
use crate::input::{self, KeySpec};
use crate::num::{bytes, group, rate};
use crate::output::{self, note, warn};

pub fn run(c: ParquetCommand) -> Result<u8> {
    match c {
        ParquetCommand::Check(a) => check(a),
        ParquetCommand::Prune(a) => prune(a),
        ParquetCommand::Info(a) => info(a),
        ParquetCommand::Index(a) => index(a),
    }
}

/// The keys (and, when a field or hex is taken from them, the lines to print).
struct Keys {
    keys: KeyList,
    lines: Option<KeyList>,
}

impl Keys {
    fn line(&self, i: usize) -> &[u8] {
        match &self.lines {
            Some(l) => l.get(i),
            None => self.keys.get(i),
        }
    }
}

/// A single key file at least this long is mapped rather than read: a prune that needs its
/// first keys only touches their pages, and the scan need not wait for the whole file.
const MAP_KEYS_FROM: u64 = 1 << 20;

fn read_keys(q: &ParquetKeys) -> Result<Keys> {
    let spec = KeySpec::new(&q.spec)?;
    let mut keys = KeyList::new(q.spec.hex);
    let transformed = q.spec.hex || q.spec.field.is_some();
    let mut lines = transformed.then(|| KeyList::new(false));
    for k in &q.keys {
        // a --key is the key itself (hex-decoded with --hex), never split into fields
        let mut buf = Vec::new();
        let one = KeySpec::new(&crate::cli::KeyArgs {
            delimiter: None,
            field: None,
            hex: q.spec.hex,
        })?;
        match input::key_of(k.as_bytes(), &one, &mut buf) {
            Ok(Some(key)) => keys.push(key),
            Ok(None) => {}
            Err(e) => bail!("--key {k}: {e}"),
        }
        if let Some(l) = &mut lines {
            l.push(k.as_bytes());
        }
    }
    if !q.key_files.is_empty() && !transformed {
        // whole lines from regular, uncompressed files: each read in one go and split in place
        let names = input::names(&q.key_files);
        let mut plain = Vec::with_capacity(names.len());
        for n in &names {
            match input::open_plain(n)? {
                Some((f, len)) => plain.push((n, f, len)),
                None => break,
            }
        }
        if plain.len() == names.len() {
            let single = plain.len() == 1 && keys.is_empty();
            for (name, mut f, len) in plain {
                if single && len >= MAP_KEYS_FROM {
                    // SAFETY: a read-only map of a regular file opened here. The keys are read
                    // through it while the scan runs; if another process truncates the file in
                    // that time, a read past its new end faults (SIGBUS), as any mapped read
                    // does (docs/CLI.md, "Parquet"): bloomery never writes it.
                    let map = unsafe { memmap2::Mmap::map(&f) }
                        .with_context(|| format!("cannot read `{name}`"))?;
                    keys = KeyList::from_shared_lines(std::sync::Arc::new(map), q.spec.hex);
                    continue;
                }
                let mut text = Vec::with_capacity(len as usize);
                f.seek(SeekFrom::Start(0))
                    .and_then(|_| f.read_to_end(&mut text))
                    .with_context(|| format!("cannot read `{name}`"))?;
                if single {
                    // split only as far as the scan reads (a prune often needs the first keys)
                    keys = KeyList::from_lines(text, q.spec.hex);
                } else {
                    keys.push_lines(text);
                }
            }
            if keys.len_bound() > u32::MAX as usize && keys.len() > u32::MAX as usize {
                bail!("at most {} keys per query", group(u64::from(u32::MAX)));
            }
            return Ok(Keys { keys, lines });
        }
    }
    if !q.key_files.is_empty() || q.keys.is_empty() {
        let mut missing = 0u64;
        input::for_each_line(&q.key_files, &spec, |line, key| {
            match key {
                Some(k) => {
                    keys.push(k);
                    if let Some(l) = &mut lines {
                        l.push(line);
                    }
                }
                None => missing += 1,
            }
            Ok(())
        })?;
        if missing > 0 {
            warn(&format!(
                "{} lines without field {} were left out",
                group(missing),
                q.spec.field.unwrap_or(1)
            ));
        }
    }
    if keys.len() > u32::MAX as usize {
        bail!("at most {} keys per query", group(u64::from(u32::MAX)));
    }
    Ok(Keys { keys, lines })
}

/// Tallies of a scan, for the summary and the warnings.
#[derive(Default)]
struct Tally {
    files: u64,
    row_groups: u64,
    from_parquet: u64,
    from_sidecar: u64,
    unfiltered: u64,
    unfiltered_example: Option<(PathBuf, usize)>,
    errors: u64,
    not_parquet: u64,
    invalid_keys: u64,
    invalid_example: Option<String>,
    /// Keys the invalid count covers (the most any file's answer examined).
    keys_examined: usize,
    ignored_sidecars: u64,
}

impl Tally {
    fn add(&mut self, path: &Path, a: &FileAnswer) {
        self.files += 1;
        for r in &a.row_groups {
            self.row_groups += 1;
            match r.source {
                FilterSource::Parquet => self.from_parquet += 1,
                FilterSource::Sidecar => self.from_sidecar += 1,
                FilterSource::None => {
                    self.unfiltered += 1;
                    if self.unfiltered_example.is_none() {
                        self.unfiltered_example = Some((path.to_path_buf(), r.index));
                    }
                }
            }
        }
        self.keys_examined = self.keys_examined.max(a.keys_examined);
        if a.invalid_keys > 0 {
            self.invalid_keys = self.invalid_keys.max(a.invalid_keys);
            if self.invalid_example.is_none() {
                if let Some((_, e)) = &a.invalid_example {
                    self.invalid_example = Some(format!("column `{}`: {e}", a.column));
                }
            }
        }
        if let SidecarState::Ignored(p, why) = &a.sidecar {
            self.ignored_sidecars += 1;
            warn(&format!("sidecar `{}` ignored: {why}", p.display()));
        }
    }

    /// An error for one file: reported, counted, and the scan goes on. Files found in
    /// directories that are not Parquet are skipped.
    fn error(&mut self, e: &ParquetError, explicit: bool) {
        if !explicit && matches!(e, ParquetError::NotParquet { .. }) {
            self.not_parquet += 1;
            return;
        }
        self.errors += 1;
        output::error(&e.to_string());
    }

    /// The warnings and the summary line; `keys` is counted only for a warning about them.
    fn summary(&self, what: &str, keys: &KeyList) {
        if self.invalid_keys > 0 {
            // a prune stops reading keys once every row group may hold one
            let of = if self.keys_examined < keys.len() {
                format!(
                    " of the first {} (all the prune needed)",
                    group(self.keys_examined as u64)
                )
            } else {
                String::new()
            };
            warn(&format!(
                "up to {} keys{of} cannot be values of the column and are certainly absent ({})",
                group(self.invalid_keys),
                self.invalid_example.as_deref().unwrap_or("")
            ));
        }
        if self.unfiltered > 0 {
            let (p, rg) = self.unfiltered_example.clone().unwrap_or_default();
            warn(&format!(
                "{} row groups have no bloom filter for the column (e.g. `{}` row group {rg}): \
                 they may hold any key; {what}; build filters with `bloomery parquet index`",
                group(self.unfiltered),
                p.display()
            ));
        }
        let mut s = format!(
            "{} files, {} row groups ({} with a filter in the file, {} from sidecars, {} \
             without)",
            group(self.files),
            group(self.row_groups),
            group(self.from_parquet),
            group(self.from_sidecar),
            group(self.unfiltered)
        );
        if self.not_parquet > 0 {
            s.push_str(&format!(
                "; {} files in the directories are not Parquet (skipped)",
                group(self.not_parquet)
            ));
        }
        if self.errors > 0 {
            s.push_str(&format!("; {} files could not be read", group(self.errors)));
        }
        note(&s);
    }
}

/// The candidates' paths and whether each was named explicitly.
type Found = (Vec<PathBuf>, Vec<bool>);

/// The keys, read on a thread of their own while the paths are walked; then the walk's
/// errors are reported (after a key error, which ends the command, none is).
fn keys_and_files(q: &ParquetKeys, paths: &[PathBuf], tally: &mut Tally) -> Result<(Keys, Found)> {
    let (keys, (found, errors)) = std::thread::scope(|s| {
        let keys = s.spawn(|| read_keys(q));
        let walked = walk(paths);
        let keys = keys.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        (keys, walked)
    });
    let keys = keys?;
    for e in &errors {
        tally.error(e, true);
    }
    Ok((
        keys,
        found.into_iter().map(|c| (c.path, c.explicit)).unzip(),
    ))
}

/// Walk the paths; the candidates' paths and whether each was named explicitly.
fn files(paths: &[PathBuf], tally: &mut Tally) -> (Vec<PathBuf>, Vec<bool>) {
    let (found, errors) = walk(paths);
    for e in &errors {
        tally.error(e, true);
    }
    found.into_iter().map(|c| (c.path, c.explicit)).unzip()
}

fn source_name(s: FilterSource) -> Value {
    match s {
        FilterSource::Parquet => json!("parquet"),
        FilterSource::Sidecar => json!("sidecar"),
        FilterSource::None => Value::Null,
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn check(a: ParquetCheckArgs) -> Result<u8> {
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

fn sidecar_json(s: &SidecarState) -> Value {
    match s {
        SidecarState::Unused => Value::Null,
        SidecarState::Used(p) => json!({"file": p.display().to_string(), "used": true}),
        SidecarState::Ignored(p, why) => {
            json!({"file": p.display().to_string(), "used": false, "reason": why})
        }
    }
}

/// grep's status: 2 if a file could not be read, else 0 if something was found, else 1.
fn status(found: bool, t: &Tally) -> u8 {
    if t.errors > 0 {
        2
    } else if found {
        0
    } else {
        1
    }
}

fn prune(a: ParquetPruneArgs) -> Result<u8> {
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

fn info(a: ParquetInfoArgs) -> Result<u8> {
    let pf = ParquetFile::open(&a.file)?;
    let cols: Vec<usize> = match &a.column {
        Some(c) => vec![pf.find_column(c)?],
        None => (0..pf.column_paths().len()).collect(),
    };
    // sidecars of the listed columns, where present and current
    let mut sidecars = Vec::new();
    for &c in &cols {
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

fn index(a: ParquetIndexArgs) -> Result<u8> {
    bloomery::params::check_fpr(a.fpr)?;
    if let Some(out) = &a.rewrite {
        let [input] = a.paths.as_slice() else {
            bail!("--rewrite takes one input file, got {}", a.paths.len());
        };
        super::check_out(out, &[input.as_path()], a.force)?;
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
