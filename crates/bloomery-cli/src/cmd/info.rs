//! `bloomery info` and `bloomery estimate`.

use std::io::Write;

use anyhow::{Context, Result};
use bloomery::AnyFilter;
use serde_json::json;

use crate::cli::{EstimateArgs, InfoArgs};
use crate::num::{bytes, group, rate};
use crate::output::{self, table};

pub fn info(a: InfoArgs) -> Result<u8> {
    let header = bloomery::peek_header(&a.file)
        .with_context(|| format!("cannot load `{}`", a.file.display()))?;
    let f = super::load(&a.file)?;
    let i = f.info();
    let hasher = *f.hasher();
    let (kind, parquet) = (f.kind(), parquet_compatible(&f));
    let sbbf_bytes = match &f {
        AnyFilter::SplitBlock(s) => Some(s.num_bytes() as u64),
        _ => None,
    };
    let mlbf = mlbf_rates(&f);
    // the sizes below decompress the file again: not while the filter is held too
    drop(f);
    // Plain and compressed sizes : measured for a compressed file, predicted from the
    // entropy bound m·H(p) for a plain one (no compression pass over a large file).
    let file_bytes = bloomery::read_file(&a.file)
        .with_context(|| format!("cannot load `{}`", a.file.display()))?;
    let packed = bloomery::compress::packed_sizes(&file_bytes, false)
        .with_context(|| format!("cannot load `{}`", a.file.display()))?;
    // where the payload lies (plain files: a split-block filter's payload starts with its
    // Parquet bitset); a compressed file's payload is its container
    let payload = match bloomery::decode_header(&file_bytes, bloomery::Verify::HeaderOnly) {
        Ok(d) => Some((d.payload_offset as u64, d.payload_len as u64)),
        Err(_) => None,
    };
    drop(file_bytes);
    // the seed is shown unless it is a secret (keyed mode, whatever the file's seed kind says)
    let seed = hasher.public_seed().map(|s| s as u64);
    let ratio = if i.lower_bound_bits > 0.0 {
        i.bits as f64 / i.lower_bound_bits
    } else {
        0.0
    };
    let cap_ratio = if i.capacity > 0 && i.target_fpr > 0.0 {
        bloomery::params::ratio_to_lower_bound(i.bits, i.capacity, i.target_fpr)
    } else {
        0.0
    };
    if a.json {
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
            "mlbf_rates": mlbf.as_ref().map(|r| json!({
                "near_miss_by_layer": r.near_miss,
                "near_miss_unshared_by_layer": r.unshared,
                "recombined": r.recombined,
                "novel": r.novel,
            })),
        }))?;
        return Ok(0);
    }
    let mut rows = vec![
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
    ];
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
    let mut out = crate::output::stdout();
    table(&mut out, &rows)?;
    out.flush()?;
    Ok(0)
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

pub fn estimate(a: EstimateArgs) -> Result<u8> {
    let f = super::load(&a.file)?;
    let n_a = f.info().estimated_items;
    let other: Option<(AnyFilter, f64, f64)> = match &a.other {
        None => None,
        Some(p) => {
            let g = super::load(p)?;
            let (inter, union) = f.estimate_overlap(&g).with_context(|| {
                format!(
                    "cannot compare `{}` with `{}`",
                    a.file.display(),
                    p.display()
                )
            })?;
            Some((g, inter, union))
        }
    };
    if a.json {
        let mut v = json!({ "file": a.file.display().to_string(), "items": finite(n_a) });
        if let (Some((g, inter, union)), Some(p)) = (&other, &a.other) {
            let jac = if *union > 0.0 { inter / union } else { 0.0 };
            v["other"] = json!(p.display().to_string());
            v["other_items"] = finite(g.info().estimated_items);
            v["intersection"] = finite(*inter);
            v["union"] = finite(*union);
            v["jaccard"] = finite(jac);
        }
        output::json(&v)?;
        return Ok(0);
    }
    let mut rows = vec![(a.file.to_str().unwrap_or("file"), est(n_a))];
    let names;
    if let (Some((g, inter, union)), Some(p)) = (&other, &a.other) {
        names = p.display().to_string();
        rows.push((names.as_str(), est(g.info().estimated_items)));
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
