//! `bloomery info` and `bloomery estimate`.

use std::io::Write;

use anyhow::{Context, Result};
use bloomery::file::MappedFile;
use bloomery::{AnyCounter, AnyFilter, Verify};
use serde_json::json;

use super::open::{self as open, Structure};
use crate::cli::{EstimateArgs, InfoArgs};
use crate::num::{bytes, group, rate};
use crate::output::{self, table, Progress};

/// `info`: the header and one pass over the mapped file. A set kind is counted in the
/// checksum's pass (each piece hashed, unless `--no-verify`, then counted while in cache); a
/// counting kind is counted beside it on a second thread. `--fast` prints what the header
/// alone says.
pub fn info(a: InfoArgs, file: &MappedFile) -> Result<u8> {
    let ctx = || format!("cannot load `{}`", a.file.display());
    if a.fast {
        return fast_info(&a, file);
    }
    let verify = a.verify.verify();
    let s = match Structure::from_mapped(file) {
        Ok(s) => s,
        Err(e) => {
            // a damaged payload can fail its kind's own checks first: name the damage
            if verify {
                file.verify(&mut |_| {}).with_context(ctx)?;
            }
            return Err(e).with_context(ctx);
        }
    };
    let header = file.header().clone();
    if let Structure::Set(f) = &s {
        // one pass: each piece of the file is hashed and its bits counted while in cache
        let mut bar = Progress::bytes(if verify { "verifying" } else { "counting" }, file.len());
        let i = f
            .info_mapped(file, verify, &mut |n| bar.set(n))
            .with_context(ctx)?;
        drop(bar);
        return set_info(&a, &header, file, f, i);
    }
    std::thread::scope(|scope| -> Result<u8> {
        let checked = verify.then(|| {
            scope.spawn(|| {
                let mut bar = Progress::bytes("verifying", file.len());
                file.verify(&mut |n| bar.set(n))
            })
        });
        let summary = match &s {
            Structure::Set(f) => Summary::Set(f.info()),
            Structure::Counter(c) => Summary::Counter(c.info()),
        };
        if let Some(h) = checked {
            h.join()
                .map_err(|_| anyhow::anyhow!("the checksum thread failed"))?
                .with_context(ctx)?;
        }
        match (&s, summary) {
            (Structure::Set(f), Summary::Set(i)) => set_info(&a, &header, file, f, i),
            (Structure::Counter(c), Summary::Counter(i)) => counter_info(&a, &header, c, i),
            _ => unreachable!("the summary is of the structure's own kind"),
        }
    })
}

/// A structure's figures, computed beside the checksum pass.
enum Summary {
    Set(bloomery::kinds::FilterInfo),
    Counter(bloomery::kinds::CounterInfo),
}

/// `info --fast`: the header's figures, no pass over the payload.
fn fast_info(a: &InfoArgs, file: &MappedFile) -> Result<u8> {
    let h = file.header();
    let hasher = h.hasher;
    // the seed is shown unless it is a secret (keyed mode, whatever the file's seed kind says)
    let seed = hasher.public_seed().map(|s| s as u64);
    if a.json {
        output::json(&json!({
            "file": a.file.display().to_string(),
            "kind": h.kind.rust_type().name(),
            "format_version": h.version,
            "items": h.items,
            "capacity": h.capacity,
            "target_fpr": h.target_fpr,
            "payload_bytes": file.payload_len(),
            "file_bytes": file.len(),
            "compressed": file.is_compressed(),
            "hash": hasher.algorithm().name(),
            "seed_kind": hasher.seed_kind().name(),
            "seed": seed,
        }))?;
        return Ok(0);
    }
    let rows = vec![
        ("file", a.file.display().to_string()),
        ("kind", h.kind.rust_type().name().to_string()),
        ("format version", h.version.to_string()),
        ("items", group(h.items)),
        (
            "capacity",
            if h.capacity == 0 {
                "none".into()
            } else {
                group(h.capacity)
            },
        ),
        (
            "target fpr",
            if h.target_fpr > 0.0 {
                rate(h.target_fpr)
            } else {
                "none".into()
            },
        ),
        (
            "file size",
            format!(
                "{} ({} bytes){}",
                bytes(file.len()),
                group(file.len()),
                if file.is_compressed() {
                    ", compressed"
                } else {
                    ""
                }
            ),
        ),
        (
            "hash",
            match seed {
                Some(s) => format!(
                    "{} (seed: {}, {s})",
                    hasher.algorithm().name(),
                    hasher.seed_kind().name()
                ),
                None => format!("{} (seed: keyed, secret)", hasher.algorithm().name()),
            },
        ),
        (
            "not shown",
            "fill, rates now and estimates need a pass over the file: drop --fast".into(),
        ),
    ];
    let mut out = crate::output::stdout();
    table(&mut out, &rows)?;
    out.flush()?;
    Ok(0)
}

/// `info` of a set kind: its figures, printed as JSON or as a table.
fn set_info(
    a: &InfoArgs,
    header: &bloomery::file::Header,
    file: &MappedFile,
    f: &AnyFilter,
    i: bloomery::kinds::FilterInfo,
) -> Result<u8> {
    let fig = SetFigures::new(a, file, f, &i)?;
    if a.json {
        set_json(a, header, f, &i, &fig)?;
        return Ok(0);
    }
    let mut rows = set_rows(a, header, &i, &fig);
    structure_rows(f, &i, &fig, &mut rows);
    if let AnyFilter::Window(w) = f {
        window_rows(w, &mut rows);
    }
    size_rows(&fig, &mut rows);
    let mut out = crate::output::stdout();
    table(&mut out, &rows)?;
    out.flush()?;
    Ok(0)
}

/// The figures of a set kind's `info` beyond its [`bloomery::kinds::FilterInfo`].
struct SetFigures {
    /// Plain and compressed sizes.
    packed: bloomery::compress::PackedSizes,
    parquet: Option<bool>,
    sbbf_bytes: Option<u64>,
    mlbf: Option<MlbfRates>,
    /// Where the payload lies: (offset, bytes).
    payload: Option<(u64, u64)>,
    /// The seed, unless it is a secret.
    seed: Option<u64>,
    /// Bits over the lower bound for the items at the target rate (0: n/a).
    ratio: f64,
    /// Bits over the lower bound for the capacity at the target rate (0: n/a).
    cap_ratio: f64,
}

impl SetFigures {
    fn new(
        a: &InfoArgs,
        file: &MappedFile,
        f: &AnyFilter,
        i: &bloomery::kinds::FilterInfo,
    ) -> Result<Self> {
        // Plain and compressed sizes: measured for a compressed file, predicted from the
        // entropy bound m·H(p) for a plain one, from the fill just counted (no second pass).
        let packed = if file.is_compressed() {
            bloomery::compress::packed_sizes(file.bytes(), false)
                .with_context(|| format!("cannot load `{}`", a.file.display()))?
        } else {
            let ones = (i.fill_ratio * i.bits as f64).round() as u64;
            bloomery::compress::predicted_sizes(file.header_len(), file.payload_len(), ones)
        };
        let sbbf_bytes = match f {
            AnyFilter::SplitBlock(s) => Some(s.num_bytes() as u64),
            _ => None,
        };
        Ok(SetFigures {
            packed,
            parquet: parquet_compatible(f),
            sbbf_bytes,
            mlbf: mlbf_rates(f),
            // plain files: a split-block filter's payload starts with its Parquet bitset; a
            // compressed file's payload is its container
            payload: Some((file.header_len(), file.payload_len())),
            // the seed is shown unless it is a secret (keyed mode, whatever the file's seed
            // kind says)
            seed: f.hasher().public_seed().map(|s| s as u64),
            ratio: if i.lower_bound_bits > 0.0 {
                i.bits as f64 / i.lower_bound_bits
            } else {
                0.0
            },
            cap_ratio: if i.capacity > 0 && i.target_fpr > 0.0 {
                bloomery::params::ratio_to_lower_bound(i.bits, i.capacity, i.target_fpr)
            } else {
                0.0
            },
        })
    }
}

/// `info --json` of a set kind.
fn set_json(
    a: &InfoArgs,
    header: &bloomery::file::Header,
    f: &AnyFilter,
    i: &bloomery::kinds::FilterInfo,
    fig: &SetFigures,
) -> Result<()> {
    let SetFigures {
        packed,
        parquet,
        sbbf_bytes,
        mlbf,
        payload,
        seed,
        ratio,
        cap_ratio,
    } = fig;
    let window_json = match f {
        AnyFilter::Window(w) => Some(window_json(w)),
        _ => None,
    };
    output::json(&json!({
        "file": a.file.display().to_string(),
        "kind": i.kind,
        "layout": i.layout,
        "format_version": header.version,
        "bits": i.bits,
        "hashes": i.hashes,
        "bytes": i.bytes,
        "items": i.items,
        "estimated_items": finite(i.estimated_items),
        "capacity": i.capacity,
        "bits_per_item": i.bits_per_item,
        "fill_ratio": i.fill_ratio,
        "current_fpr": i.current_fpr,
        "target_fpr": i.target_fpr,
        "lower_bound_bits": i.lower_bound_bits,
        "lower_bound_ratio": ratio,
        "capacity_lower_bound_ratio": cap_ratio,
        "hash": i.hash,
        "seed_kind": i.seed_kind,
        "seed": seed,
        "sub_filters": i.sub_filters,
        "compressed": packed.compressed_input,
        "plain_file_bytes": packed.plain_bytes,
        "compressed_file_bytes": packed.compressed_bytes,
        "compressed_size_measured": packed.exact,
        "entropy_bits": packed.entropy_bits,
        "compressed_ratio_to_entropy": packed.ratio_to_entropy(),
        "layers": if i.layers > 0 { json!(i.layers) } else { serde_json::Value::Null },
        "parquet_compatible": parquet,
        "payload_offset": payload.map(|p| p.0),
        "payload_bytes": payload.map(|p| p.1),
        "sbbf_bytes": sbbf_bytes,
        "window": window_json,
        "mlbf_rates": mlbf.as_ref().map(|r| json!({
            "near_miss_by_layer": r.near_miss,
            "near_miss_unshared_by_layer": r.unshared,
            "recombined": r.recombined,
            "novel": r.novel,
        })),
    }))?;
    Ok(())
}

/// The sliding window's figures, as JSON.
fn window_json(w: &bloomery::AgePartitionedBloomFilter) -> serde_json::Value {
    json!({
        "window": w.window(),
        "k": w.hashes(),
        "l": w.remembering_slices(),
        "slice_bits": w.slice_bits(),
        "blocks": w.blocks(),
        "generation": w.generation(),
        "slack": w.slack(),
        "position_in_generation": w.position_in_generation(),
        "generations_ended": w.generations_ended(),
        "ring_position": w.ring_position(),
        "slice_fill_newest_first": w
            .slice_ones()
            .iter()
            .map(|&o| o as f64 / w.slice_bits() as f64)
            .collect::<Vec<_>>(),
        "model_fpr_now": w.model_fpr(),
        "model_fpr_worst": w.worst_fpr(),
    })
}

/// The rows of `info` every set kind has.
fn set_rows(
    a: &InfoArgs,
    header: &bloomery::file::Header,
    i: &bloomery::kinds::FilterInfo,
    fig: &SetFigures,
) -> Vec<(&'static str, String)> {
    let (ratio, cap_ratio, seed) = (fig.ratio, fig.cap_ratio, fig.seed);
    vec![
        ("file", a.file.display().to_string()),
        (
            "kind",
            match i.layout {
                Some(l) => format!("{} ({l} layout)", i.kind),
                None => i.kind.to_string(),
            },
        ),
        ("format version", header.version.to_string()),
        ("bits (m)", group(i.bits)),
        (
            "hashes (k)",
            if i.hashes == 0 {
                "varies".into()
            } else {
                i.hashes.to_string()
            },
        ),
        (
            "size",
            format!("{} ({} bytes)", bytes(i.bytes), group(i.bytes)),
        ),
        ("items", group(i.items)),
        ("estimated items", est(i.estimated_items)),
        (
            "capacity",
            if i.capacity == 0 {
                "none (explicit shape)".into()
            } else {
                group(i.capacity)
            },
        ),
        ("bits per item", format!("{:.2}", i.bits_per_item)),
        ("fill ratio", format!("{:.4}", i.fill_ratio)),
        (
            "fpr now",
            format!(
                "{} (target {})",
                rate(i.current_fpr),
                if i.target_fpr > 0.0 {
                    rate(i.target_fpr)
                } else {
                    "none".into()
                }
            ),
        ),
        (
            "lower bound",
            if ratio > 0.0 {
                format!(
                    "{} bits for the items at the target rate; this filter uses {ratio:.2}x",
                    group(i.lower_bound_bits.ceil() as u64)
                )
            } else {
                "n/a (no items or no target)".into()
            },
        ),
        (
            "at capacity",
            if cap_ratio > 0.0 {
                format!("{cap_ratio:.3}x the lower bound for the capacity at the target rate")
            } else {
                "n/a".into()
            },
        ),
        (
            "hash",
            match seed {
                Some(s) => format!("{} (seed: {}, {s})", i.hash, i.seed_kind),
                None => format!("{} (seed: keyed, secret)", i.hash),
            },
        ),
    ]
}

/// The rows of what a structure has of its own: sub-filters, Parquet compatibility, a URL
/// filter's rates and layers.
fn structure_rows(
    f: &AnyFilter,
    i: &bloomery::kinds::FilterInfo,
    fig: &SetFigures,
    rows: &mut Vec<(&'static str, String)>,
) {
    let (kind, parquet, mlbf) = (f.kind(), fig.parquet, &fig.mlbf);
    if matches!(
        kind,
        bloomery::Kind::Scalable
            | bloomery::Kind::RedisBloomChain
            | bloomery::Kind::RedisBloomCuckoo
    ) {
        rows.push(("sub-filters", i.sub_filters.to_string()));
    }
    match parquet {
        Some(true) => rows.push(("parquet", "compatible (xxHash64, seed 0)".into())),
        Some(false) => rows.push((
            "parquet",
            format!(
                "NOT compatible: hashed with {} instead of Parquet's xxHash64 (seed 0), so \
                 Parquet readers would miss its values",
                i.hash
            ),
        )),
        None => {}
    }
    if let Some(r) = &mlbf {
        let list = |v: &[f64]| v.iter().map(|&x| rate(x)).collect::<Vec<_>>().join(", ");
        rows.push((
            "rate by query",
            format!(
                "near miss (one value never seen at its layer, e.g. a known page with a new \
                 last segment), by layer of that value: at most {} (every URL sharing its \
                 other segments, e.g. pages of one directory), about {} when none does; \
                 recombined (every value seen at its layer, in a new combination): {}; novel \
                 (every segment new): {}",
                list(&r.near_miss),
                list(&r.unshared),
                rate(r.recombined),
                rate(r.novel)
            ),
        ));
    }
    if i.layers > 0 {
        rows.push((
            "layers",
            format!(
                "{} URL layers + 1 XOR layer, {} bits each",
                i.layers,
                group(i.bits / (u64::from(i.layers) + 1))
            ),
        ));
    }
}

/// The rows of a sliding window.
fn window_rows(w: &bloomery::AgePartitionedBloomFilter, rows: &mut Vec<(&'static str, String)>) {
    rows.push((
        "window",
        format!(
            "the last {} insertions are always found; a key followed by {} more (window + \
             slack {}) is forgotten",
            group(w.window()),
            group(w.window() + w.slack()),
            group(w.slack())
        ),
    ));
    let blocks = if w.blocks() > 0 {
        format!(
            ", as {} blocks of {} 64-bit words (one per slice)",
            group(w.blocks()),
            w.hashes() + w.remembering_slices()
        )
    } else {
        String::new()
    };
    rows.push((
        "slices",
        format!(
            "k = {} take each insertion, l = {} more remember; {} bits each{blocks}",
            w.hashes(),
            w.remembering_slices(),
            group(w.slice_bits())
        ),
    ));
    rows.push((
        "generation",
        format!(
            "{} of {} insertions; {} generations ended",
            group(w.position_in_generation()),
            group(w.generation()),
            group(w.generations_ended())
        ),
    ));
    let fills = w
        .slice_ones()
        .iter()
        .map(|&o| format!("{:.3}", o as f64 / w.slice_bits() as f64))
        .collect::<Vec<_>>();
    rows.push(("slice fill", format!("newest first: {}", fills.join(" "))));
    rows.push((
        "fpr (model)",
        format!(
            "{} now, {} at the worst point of an unbounded stream",
            rate(w.model_fpr()),
            rate(w.worst_fpr())
        ),
    ));
}

/// The rows of the file's size, compressed and plain, and where its payload lies.
fn size_rows(fig: &SetFigures, rows: &mut Vec<(&'static str, String)>) {
    let (packed, payload, sbbf_bytes) = (&fig.packed, fig.payload, fig.sbbf_bytes);
    rows.push((
        "file size",
        if packed.compressed_input {
            format!(
                "compressed: {} ({:.1}% of the plain {})",
                bytes(packed.compressed_bytes),
                100.0 * packed.compressed_bytes as f64 / packed.plain_bytes as f64,
                bytes(packed.plain_bytes)
            )
        } else {
            format!(
                "plain: {}; compressed it would be about {} ({:.1}%)",
                bytes(packed.plain_bytes),
                bytes(packed.compressed_bytes),
                100.0 * packed.compressed_bytes as f64 / packed.plain_bytes as f64
            )
        },
    ));
    rows.push((
        "entropy bound",
        format!(
            "m·H(p) = {} bits ({}); compressed payload {}{:.4}x of it",
            group(packed.entropy_bits.ceil() as u64),
            bytes((packed.entropy_bits / 8.0).ceil() as u64),
            if packed.exact { "" } else { "about " },
            packed.ratio_to_entropy()
        ),
    ));
    if let Some((off, len)) = payload {
        rows.push((
            "payload",
            match sbbf_bytes {
                Some(sbbf) => format!(
                    "{} bytes at offset {off}; its first {} are the Parquet bitset",
                    group(len),
                    group(sbbf)
                ),
                None => format!("{} bytes at offset {off}", group(len)),
            },
        ));
    }
}

/// `info` of a counting kind: its own figures ([`bloomery::kinds::CounterInfo`]).
fn counter_info(
    a: &InfoArgs,
    header: &bloomery::file::Header,
    f: &AnyCounter,
    i: bloomery::kinds::CounterInfo,
) -> Result<u8> {
    let h = f.hasher();
    let seed = h.public_seed().map(|s| s as u64);
    if a.json {
        counter_json(a, header, f, &i)?;
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

/// `info --json` of a counting kind.
fn counter_json(
    a: &InfoArgs,
    header: &bloomery::file::Header,
    f: &AnyCounter,
    i: &bloomery::kinds::CounterInfo,
) -> Result<()> {
    let h = f.hasher();
    let seed = h.public_seed().map(|s| s as u64);
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
    Ok(())
}

/// For a split-block filter: whether Parquet readers can use its bitset (its hash is
/// Parquet's); `None` for the other kinds.
fn parquet_compatible(f: &AnyFilter) -> Option<bool> {
    match f {
        AnyFilter::SplitBlock(s) => Some(s.is_parquet_compatible()),
        _ => None,
    }
}

/// A multi-layer URL filter's rates by kind of query (its "fpr now" is the worst near miss).
struct MlbfRates {
    near_miss: Vec<f64>,
    unshared: Vec<f64>,
    recombined: f64,
    novel: f64,
}

fn mlbf_rates(f: &AnyFilter) -> Option<MlbfRates> {
    let AnyFilter::Mlbf(m) = f else { return None };
    Some(MlbfRates {
        near_miss: (0..m.layers() as usize)
            .filter_map(|i| m.near_miss_fpr(i))
            .collect(),
        unshared: (0..m.layers() as usize)
            .filter_map(|i| m.near_miss_fpr_unshared(i))
            .collect(),
        recombined: m.recombined_fpr(),
        novel: m.novel_fpr(),
    })
}

fn finite(x: f64) -> serde_json::Value {
    if x.is_finite() {
        json!(x)
    } else {
        serde_json::Value::Null
    }
}

fn est(x: f64) -> String {
    if x.is_finite() {
        group(x.round() as u64)
    } else {
        "unknown (filter full)".into()
    }
}

/// `estimate`: one file's estimated items, counted in the checksum's pass as `info` counts
/// them; two files' items and overlap, counted in one pass over both when they stream (plain
/// classic, blocked and partitioned files: resident memory is a few pieces), else from the
/// filters in place.
pub fn estimate(a: EstimateArgs) -> Result<u8> {
    let verify = a.verify.verify();
    let ctx = |p: &std::path::Path| format!("cannot load `{}`", p.display());
    let first = open::map(&a.file, false)?;
    let counted = |file: &MappedFile, path: &std::path::Path| -> Result<f64> {
        let f = match Structure::from_mapped(file) {
            Ok(Structure::Set(f)) => f,
            Ok(Structure::Counter(c)) => return Err(open::not_a_set(c.kind(), path)),
            Err(e) => {
                if verify {
                    file.verify(&mut |_| {}).with_context(|| ctx(path))?;
                }
                return Err(e).with_context(|| ctx(path));
            }
        };
        let mut bar = Progress::bytes(if verify { "verifying" } else { "counting" }, file.len());
        let i = f
            .info_mapped(file, verify, &mut |n| bar.set(n))
            .with_context(|| ctx(path))?;
        Ok(i.estimated_items)
    };
    // (the other file's items, the intersection, the union)
    let (n_a, other): (f64, Option<(f64, f64, f64)>) = match &a.other {
        None => (counted(&first, &a.file)?, None),
        Some(p) => {
            let second = open::map(p, false)?;
            let cannot = || {
                format!(
                    "cannot compare `{}` with `{}`",
                    a.file.display(),
                    p.display()
                )
            };
            if AnyFilter::streams(&first) && AnyFilter::streams(&second) {
                let verify = if verify {
                    Verify::Checksum
                } else {
                    Verify::HeaderOnly
                };
                let mut bar = Progress::bytes("reading", first.len());
                let o = AnyFilter::estimate_files(&first, &second, verify, &mut |n| bar.set(n))
                    .with_context(cannot)?;
                (
                    o.first.estimated_items,
                    Some((o.second.estimated_items, o.intersection, o.union)),
                )
            } else {
                let f = open::into_set(open::read_mapped(&first, verify)?, &a.file)?;
                let g = open::into_set(open::read_mapped(&second, verify)?, p)?;
                let (inter, union) = f.estimate_overlap(&g).with_context(cannot)?;
                (
                    f.info().estimated_items,
                    Some((g.info().estimated_items, inter, union)),
                )
            }
        }
    };
    if a.json {
        let mut v = json!({ "file": a.file.display().to_string(), "items": finite(n_a) });
        if let (Some((n_b, inter, union)), Some(p)) = (&other, &a.other) {
            let jac = if *union > 0.0 { inter / union } else { 0.0 };
            v["other"] = json!(p.display().to_string());
            v["other_items"] = finite(*n_b);
            v["intersection"] = finite(*inter);
            v["union"] = finite(*union);
            v["jaccard"] = finite(jac);
        }
        output::json(&v)?;
        return Ok(0);
    }
    let mut rows = vec![(a.file.to_str().unwrap_or("file"), est(n_a))];
    let names;
    if let (Some((n_b, inter, union)), Some(p)) = (&other, &a.other) {
        names = p.display().to_string();
        rows.push((names.as_str(), est(*n_b)));
        rows.push(("intersection", est(*inter)));
        rows.push(("union", est(*union)));
        let jac = if *union > 0.0 { inter / union } else { 0.0 };
        rows.push(("jaccard", format!("{jac:.4}")));
    }
    let mut out = crate::output::stdout();
    table(&mut out, &rows)?;
    out.flush()?;
    Ok(0)
}
