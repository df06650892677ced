//! What the key-list subcommands share: the keys read (and the lines to print), the files
//! walked, the tally of what was answered and the exit status.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use bloomery::parquet::{walk, FileAnswer, FilterSource, KeyList, ParquetError, SidecarState};
use serde_json::{json, Value};

use crate::cli::ParquetKeys;
use crate::input::{self, KeySpec};
use crate::num::group;
use crate::output::{self, note, warn};

/// The keys (and, when a field or hex is taken from them, the lines to print).
pub(super) struct Keys {
    pub(super) keys: KeyList,
    pub(super) lines: Option<KeyList>,
}

impl Keys {
    pub(super) fn line(&self, i: usize) -> &[u8] {
        match &self.lines {
            Some(l) => l.get(i),
            None => self.keys.get(i),
        }
    }
}

/// A single key file at least this long is mapped rather than read: a prune that needs its
/// first keys only touches their pages, and the scan need not wait for the whole file.
pub(super) const MAP_KEYS_FROM: u64 = 1 << 20;

pub(super) fn read_keys(q: &ParquetKeys) -> Result<Keys> {
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
pub(super) struct Tally {
    pub(super) files: u64,
    pub(super) row_groups: u64,
    pub(super) from_parquet: u64,
    pub(super) from_sidecar: u64,
    pub(super) unfiltered: u64,
    pub(super) unfiltered_example: Option<(PathBuf, usize)>,
    pub(super) errors: u64,
    pub(super) not_parquet: u64,
    pub(super) invalid_keys: u64,
    pub(super) invalid_example: Option<String>,
    /// Keys the invalid count covers (the most any file's answer examined).
    pub(super) keys_examined: usize,
    pub(super) ignored_sidecars: u64,
}

impl Tally {
    pub(super) fn add(&mut self, path: &Path, a: &FileAnswer) {
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
    pub(super) fn error(&mut self, e: &ParquetError, explicit: bool) {
        if !explicit && matches!(e, ParquetError::NotParquet { .. }) {
            self.not_parquet += 1;
            return;
        }
        self.errors += 1;
        output::error(&e.to_string());
    }

    /// The warnings and the summary line; `keys` is counted only for a warning about them.
    pub(super) fn summary(&self, what: &str, keys: &KeyList) {
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
pub(super) type Found = (Vec<PathBuf>, Vec<bool>);

/// The keys, read on a thread of their own while the paths are walked; then the walk's
/// errors are reported (after a key error, which ends the command, none is).
pub(super) fn keys_and_files(
    q: &ParquetKeys,
    paths: &[PathBuf],
    tally: &mut Tally,
) -> Result<(Keys, Found)> {
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
pub(super) fn files(paths: &[PathBuf], tally: &mut Tally) -> (Vec<PathBuf>, Vec<bool>) {
    let (found, errors) = walk(paths);
    for e in &errors {
        tally.error(e, true);
    }
    found.into_iter().map(|c| (c.path, c.explicit)).unzip()
}

pub(super) fn source_name(s: FilterSource) -> Value {
    match s {
        FilterSource::Parquet => json!("parquet"),
        FilterSource::Sidecar => json!("sidecar"),
        FilterSource::None => Value::Null,
    }
}

pub(super) fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

pub(super) fn sidecar_json(s: &SidecarState) -> Value {
    match s {
        SidecarState::Unused => Value::Null,
        SidecarState::Used(p) => json!({"file": p.display().to_string(), "used": true}),
        SidecarState::Ignored(p, why) => {
            json!({"file": p.display().to_string(), "used": false, "reason": why})
        }
    }
}

/// grep's status: 2 if a file could not be read, else 0 if something was found, else 1.
pub(super) fn status(found: bool, t: &Tally) -> u8 {
    if t.errors > 0 {
        2
    } else if found {
        0
    } else {
        1
    }
}
