//! The counting kinds (counting, blocked-counting, dlcbf, spectral, cms, ibf, scbf) through
//! `bloomery::AnyCounter`: create, add (increments), remove, count, check, info and flatten.

use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::{bail, Context, Result};
use bloomery::Pipeline;
use bloomery::{AnyCounter, CounterOptions, Hashed, KeyHasher, KeySet, Kind, RemoveError};
use serde_json::json;

use crate::cli::{AddArgs, CheckArgs, CountArgs, CreateArgs, InfoArgs, PackArgs};
use crate::input::{self, KeySpec};
use crate::num::{bytes, group};
use crate::output::{self, note, table};

/// How many keys `add`, `remove` and `count` read ahead of the one they insert, remove or
/// count (the library's pipelines use the same depth).
const AHEAD: usize = 16;

/// True when `path` holds a counting-family file (errors name the path).
pub fn is_counter(path: &Path) -> Result<bool> {
    let h =
        bloomery::peek_header(path).with_context(|| format!("cannot load `{}`", path.display()))?;
    Ok(AnyCounter::holds(h.kind))
}

pub fn load(path: &Path) -> Result<AnyCounter> {
    AnyCounter::load(path).with_context(|| format!("cannot load `{}`", path.display()))
}

fn save(f: &AnyCounter, path: &Path) -> Result<()> {
    f.save(path)
        .with_context(|| format!("cannot write `{}`", path.display()))
}

/// `flatten`: the plain Bloom filter of a counting file, saved atomically.
pub fn flatten(a: &PackArgs) -> Result<u8> {
    super::check_out(&a.out, &[&a.input], a.force)?;
    if !is_counter(&a.input)? {
        bail!(
            "`{}` is not a counting structure (it is already a plain filter kind)",
            a.input.display()
        );
    }
    let c = load(&a.input)?;
    let plain = c
        .to_plain_filter()
        .with_context(|| format!("cannot flatten `{}`", a.input.display()))?;
    super::save(&plain, &a.out)?;
    note(&format!(
        "wrote {}: {} filter, {} (from {} of counters)",
        a.out.display(),
        plain.kind().name(),
        bytes(plain.to_bytes().len() as u64),
        bytes(c.to_bytes().len() as u64),
    ));
    Ok(0)
}

pub fn create(a: &CreateArgs, kind: Kind) -> Result<u8> {
    if a.layers.is_some() {
        bail!("--layers applies to --kind mlbf only");
    }
    if a.growth.is_some() || a.tightening.is_some() || a.no_scaling {
        bail!("--growth, --tightening and --no-scaling apply to --kind scalable only");
    }
    let hasher = if a.keyed {
        KeyHasher::keyed()?
    } else if let Some(s) = a.seed {
        KeyHasher::with_seed(s)
    } else {
        KeyHasher::new()
    };
    let o = CounterOptions {
        capacity: a.capacity,
        occurrences: a.occurrences,
        fpr: a.fpr,
        bits: a.bits,
        hashes: a.hashes,
        counter_bits: a.counter_bits,
        width: a.width,
        depth: a.depth,
        epsilon: a.epsilon,
        delta: a.delta,
        conservative: a.conservative,
        method: a.method.map(|m| m.method()),
        repeat_cap: a.repeat_cap,
        groups: a.groups,
        hasher,
        ..CounterOptions::default()
    };
    let f = AnyCounter::build(kind, &o).map_err(flag_names)?;
    save(&f, &a.file)?;
    let i = f.info();
    note(&format!(
        "created {}: {} structure, {}",
        a.file.display(),
        i.kind,
        bytes(i.bytes)
    ));
    Ok(0)
}

/// The library's parameter names as the CLI spells its flags.
fn flag_names(e: bloomery::Error) -> anyhow::Error {
    if let bloomery::Error::InvalidParameter { name, reason } = &e {
        let flag = match *name {
            "capacity" => "-n/--capacity",
            "fpr" => "-p/--fpr",
            "counters" | "bits" => "--bits",
            "hashes" => "--hashes",
            "counter_bits" | "counter_width" => "--counter-bits",
            "width" => "--width",
            "depth" => "--depth",
            "epsilon" => "--epsilon",
            "delta" => "--delta",
            "conservative" => "--conservative",
            "method" => "--method",
            "repeat_cap" => "--repeat-cap",
            "occurrences" => "--occurrences",
            "groups" => "--groups",
            "dimensions" => "--width/--depth or --epsilon/--delta",
            _ => return e.into(),
        };
        return anyhow::anyhow!("invalid {flag}: {reason}");
    }
    e.into()
}

pub fn add(a: &AddArgs) -> Result<u8> {
    let spec = KeySpec::new(&a.keys)?;
    let mut f = load(&a.file)?;
    if a.threads != 1 {
        output::warn("--threads applies to blocked filters; inserting with one thread");
    }
    let hasher = *f.hasher();
    let before = f.len();
    let mut n = 0u64;
    // Each key's memory is prefetched when it is read and the key inserted AHEAD keys later
    // (in input order, so the result is that of inserting one by one), so the cache misses
    // of consecutive keys overlap on a filter larger than the caches.
    let mut pipe = Pipeline::<(u64, Hashed), AHEAD>::default();
    let insert = |f: &mut AnyCounter, (n, h): (u64, Hashed)| -> Result<()> {
        if let Err(e) = f.insert_hashed(h) {
            if let bloomery::Error::Full { .. } = e {
                bail!(
                    "line {n}: the d-left filter is full (every bucket this key maps to is \
                     full); nothing was saved: create it with a larger -n"
                );
            }
            return Err(e.into());
        }
        Ok(())
    };
    let counts = input::for_each_line(&a.inputs, &spec, |_, key| {
        n += 1;
        if let Some(k) = key {
            let h = hasher.hash_bytes(k);
            f.prefetch_hashed(h);
            if let Some(due) = pipe.push((n, h)) {
                insert(&mut f, due)?;
            }
        }
        Ok(())
    })?;
    for due in pipe.drain() {
        insert(&mut f, due)?;
    }
    super::compress::save_in_place(&f.to_bytes(), &a.file)?;
    let (capacity, target_fpr, current_fpr) = f.rates();
    let rates = match (current_fpr, target_fpr) {
        (Some(now), Some(target)) => format!(
            "; fpr now {} (target {})",
            crate::num::rate(now),
            crate::num::rate(target)
        ),
        (Some(now), None) => format!("; fpr now {} (target none)", crate::num::rate(now)),
        _ => String::new(),
    };
    note(&format!(
        "{} read, {}, {} in total{rates}",
        crate::num::count(counts.lines, "line", "lines"),
        crate::num::count(f.len().saturating_sub(before), "increment", "increments"),
        group(f.len())
    ));
    if let (Some(now), Some(target)) = (current_fpr, target_fpr) {
        if super::past_target(f.len(), capacity, now, target) {
            output::warn(&format!(
                "the {} structure is past its target false-positive rate: {} now (target {}); \
                 it was sized for {} {}; create a larger one",
                f.kind().name(),
                crate::num::rate(now),
                crate::num::rate(target),
                group(capacity),
                match f.kind() {
                    Kind::Iterative | Kind::SpaceCode => "adds (--occurrences, repeats included)",
                    _ => "distinct keys (-n)",
                }
            ));
        }
    }
    Ok(0)
}

pub fn remove(a: &CountArgs) -> Result<u8> {
    if !is_counter(&a.file)? {
        let k = bloomery::peek_header(&a.file)?.kind;
        bail!(
            "cannot remove from `{}`: {} filters have no deletion (use --kind counting, blocked-counting, dlcbf or spectral)",
            a.file.display(),
            k.name()
        );
    }
    let spec = KeySpec::new(&a.keys)?;
    let mut f = load(&a.file)?;
    if let Some(e) = f.remove_unsupported() {
        bail!("cannot remove from `{}`: {e}", a.file.display());
    }
    let (mut removed, mut absent) = (0u64, 0u64);
    let counts = for_each_ahead(&a.inputs, &spec, &mut f, |f, key| {
        let Some(h) = key.hash else { return Ok(()) };
        match f.remove_hashed(h) {
            Ok(()) => removed += 1,
            Err(RemoveError::NotPresent) => {
                absent += 1;
                output::warn(&format!(
                    "line {}: not present, not removed: {}",
                    key.number,
                    String::from_utf8_lossy(&key.line)
                ));
            }
            Err(e) => bail!("line {}: {e}", key.number),
        }
        Ok(())
    })?;
    super::compress::save_in_place(&f.to_bytes(), &a.file)?;
    note(&format!(
        "{} read, {} removed, {} not present",
        crate::num::count(counts.lines, "line", "lines"),
        group(removed),
        group(absent)
    ));
    Ok(if absent > 0 { 1 } else { 0 })
}

/// A line waiting in [`for_each_ahead`]'s ring.
#[derive(Clone, Default)]
struct Ahead {
    /// 1-based line number.
    number: u64,
    /// The key's hash (none for a line without a key).
    hash: Option<Hashed>,
    /// The line, for output and warnings.
    line: Vec<u8>,
}

/// Call `due` on every line of the inputs AHEAD lines after reading it, in input order: each
/// key's memory is prefetched when it is read, so the cache misses of consecutive keys
/// overlap on a filter larger than the caches. The waiting lines live in a ring of reused
/// buffers (`remove` and `count` need their text).
fn for_each_ahead(
    inputs: &[String],
    spec: &KeySpec,
    f: &mut AnyCounter,
    mut due: impl FnMut(&mut AnyCounter, &Ahead) -> Result<()>,
) -> Result<input::Counts> {
    let hasher = *f.hasher();
    let mut ring = vec![Ahead::default(); AHEAD];
    let mut read = 0u64;
    let counts = input::for_each_line(inputs, spec, |line, key| {
        let slot = &mut ring[read as usize % AHEAD];
        if read as usize >= AHEAD {
            due(f, slot)?;
        }
        read += 1;
        slot.number = read;
        slot.hash = key.map(|k| hasher.hash_bytes(k));
        if let Some(h) = slot.hash {
            f.prefetch_hashed(h);
        }
        slot.line.clear();
        slot.line.extend_from_slice(line);
        Ok(())
    })?;
    for i in read.saturating_sub(AHEAD as u64)..read {
        due(f, &ring[i as usize % AHEAD])?;
    }
    Ok(counts)
}

pub fn count(a: &CountArgs) -> Result<u8> {
    let spec = KeySpec::new(&a.keys)?;
    let mut out = BufWriter::with_capacity(1 << 16, crate::output::stdout());
    let mut print = |est: u64, line: &[u8]| -> Result<()> {
        write!(out, "{est}\t")?;
        out.write_all(line)?;
        out.write_all(b"\n")?;
        Ok(())
    };
    if is_counter(&a.file)? {
        let mut f = load(&a.file)?;
        for_each_ahead(&a.inputs, &spec, &mut f, |f, key| {
            print(key.hash.map_or(0, |h| f.count_hashed(h)), &key.line)
        })?;
    } else {
        let f = super::load(&a.file)?;
        input::for_each_line(&a.inputs, &spec, |line, key| {
            // contains_key: every set kind, including an mlbf (keyed by URL)
            let hit = key.is_some_and(|k| f.contains_key(k));
            print(u64::from(hit), line)
        })?;
    }
    out.flush()?;
    Ok(0)
}

pub fn check(a: &CheckArgs) -> Result<u8> {
    let spec = KeySpec::new(&a.keys)?;
    let f = load(&a.file)?;
    let hasher = *f.hasher();
    let mut out = BufWriter::with_capacity(1 << 16, crate::output::stdout());
    let mut matched = 0u64;
    input::for_each_line(&a.inputs, &spec, |line, key| {
        let hit = key.is_some_and(|k| f.contains_hashed(hasher.hash_bytes(k)));
        if hit != a.invert {
            matched += 1;
            if !a.count {
                out.write_all(line)?;
                out.write_all(b"\n")?;
            }
        }
        Ok(())
    })?;
    if a.count {
        writeln!(out, "{matched}")?;
    }
    out.flush()?;
    Ok(if matched > 0 { 0 } else { 1 })
}

pub fn info(a: &InfoArgs) -> Result<u8> {
    let header = bloomery::peek_header(&a.file)
        .with_context(|| format!("cannot load `{}`", a.file.display()))?;
    let f = load(&a.file)?;
    let i = f.info();
    let h = f.hasher();
    let seed = h.public_seed().map(|s| s as u64);
    if a.json {
        output::json(&json!({
            "file": a.file.display().to_string(),
            "kind": i.kind,
            "format_version": header.version,
            "items": i.items,
            "bytes": i.bytes,
            "bits_per_item": i.bits_per_item,
            "capacity": i.capacity,
            "removable": i.removable,
            "saturated_counters": i.saturated_counters,
            "counter_bits": i.counter_bits,
            "hashes": i.hashes,
            "size": i.size,
            "distinctness": i.distinctness,
            "counting_stopped": i.counting_stopped,
            "repeats_counted": i.repeats_counted,
            "groups": i.groups,
            "width": i.width,
            "depth": i.depth,
            "conservative": i.conservative,
            "method": i.method,
            "occupied_cells": i.occupied_cells,
            "current_fpr": i.current_fpr,
            "target_fpr": i.target_fpr,
            "hash": h.algorithm().name(),
            "seed_kind": h.seed_kind().name(),
            "seed": seed,
        }))?;
        return Ok(0);
    }
    let mut rows = vec![
        ("file", a.file.display().to_string()),
        ("kind", i.kind.to_string()),
        ("format version", header.version.to_string()),
        ("items", group(i.items)),
        (
            "size",
            format!("{} ({} bytes)", bytes(i.bytes), group(i.bytes)),
        ),
        ("bits per item", format!("{:.2}", i.bits_per_item)),
        (
            "capacity",
            if i.capacity == 0 {
                "none".into()
            } else {
                group(i.capacity)
            },
        ),
        ("removal", if i.removable { "yes" } else { "no" }.into()),
    ];
    let opt = |rows: &mut Vec<(&str, String)>, name, v: Option<String>| {
        if let Some(v) = v {
            rows.push((name, v));
        }
    };
    opt(&mut rows, "method", i.method.map(str::to_string));
    opt(&mut rows, "counters/bits", i.size.map(group));
    opt(
        &mut rows,
        "counter bits",
        i.counter_bits.map(|w| w.to_string()),
    );
    opt(&mut rows, "hashes (k)", i.hashes.map(|k| k.to_string()));
    opt(&mut rows, "width", i.width.map(group));
    opt(&mut rows, "depth", i.depth.map(|d| d.to_string()));
    opt(
        &mut rows,
        "conservative",
        i.conservative.map(|c| c.to_string()),
    );
    opt(&mut rows, "groups", i.groups.map(|g| g.to_string()));
    opt(&mut rows, "occupied cells", i.occupied_cells.map(group));
    opt(
        &mut rows,
        "saturated counters",
        i.saturated_counters.map(group),
    );
    opt(
        &mut rows,
        "distinctness rate",
        i.distinctness.map(|d| format!("{d:.4}")),
    );
    opt(&mut rows, "repeats counted", i.repeats_counted.map(group));
    // as `info` shows a filter's: its own rate from its contents, and the rate asked for
    opt(
        &mut rows,
        "fpr now",
        i.current_fpr.map(|p| {
            let target = i.target_fpr.map_or("none".into(), crate::num::rate);
            format!("{} (target {target})", crate::num::rate(p))
        }),
    );
    opt(
        &mut rows,
        "counting stopped",
        i.counting_stopped.map(|c| c.to_string()),
    );
    rows.push((
        "hash",
        match seed {
            Some(s) => format!(
                "{} (seed: {}, {s})",
                h.algorithm().name(),
                h.seed_kind().name()
            ),
            None => format!("{} (seed: keyed, secret)", h.algorithm().name()),
        },
    ));
    let mut out = crate::output::stdout();
    table(&mut out, &rows)?;
    out.flush()?;
    Ok(0)
}
