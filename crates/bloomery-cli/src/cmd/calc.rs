//! `bloomery calc`: sizing for every kind, from the library's `params` (no filter is built).

use std::io::Write;

use anyhow::{bail, Result};
use bloomery::params::{self, BLOCKED_MAX_K};
use serde_json::json;

use crate::cli::CalcArgs;
use crate::num::{bytes, group, rate};
use crate::output;

const BLOCK_BITS: u64 = bloomery::BlockedBloomFilter::BLOCK_BITS;
const SPLIT_BLOCK_BITS: u64 = 256;

struct Row {
    kind: &'static str,
    m: u64,
    k: u32,
    fpr: f64,
    asymptotic: f64,
}

pub fn run(a: CalcArgs) -> Result<u8> {
    let n = a.capacity;
    params::check_capacity(n)?;
    let rows = match (a.fpr, a.bits) {
        (Some(p), None) => {
            params::check_fpr(p)?;
            by_rate(n, p)?
        }
        (None, Some(m)) => {
            if m == 0 {
                bail!("-m/--bits must be at least 1");
            }
            if let Some(k) = a.hashes {
                params::check_hashes(k, 64)?;
            }
            by_bits(n, m, a.hashes)
        }
        _ => bail!("give -p/--fpr or -m/--bits"),
    };
    let target = a.fpr;
    if a.json {
        let kinds: Vec<_> = rows
            .iter()
            .map(|r| {
                let lb = params::lower_bound_bits(n, r.fpr);
                json!({
                    "kind": r.kind,
                    "bits": r.m,
                    "bytes": r.m.div_ceil(8),
                    "hashes": r.k,
                    "bits_per_item": r.m as f64 / n as f64,
                    "fpr": r.fpr,
                    "fpr_asymptotic": r.asymptotic,
                    "lower_bound_bits": lb,
                    "lower_bound_ratio": if lb > 0.0 { r.m as f64 / lb } else { 0.0 },
                })
            })
            .collect();
        output::json(&json!({
            "items": n,
            "target_fpr": target,
            "bits": a.bits,
            "hashes": a.hashes,
            "kinds": kinds,
        }))?;
        return Ok(0);
    }
    let mut out = crate::output::stdout();
    match target {
        Some(p) => writeln!(out, "n = {}, target fpr = {}", group(n), rate(p))?,
        None => writeln!(
            out,
            "n = {}, m = {} bits",
            group(n),
            group(a.bits.unwrap_or(0))
        )?,
    }
    let header = [
        "kind",
        "m (bits)",
        "size",
        "k",
        "bits/item",
        "fpr",
        "fpr (asymptotic)",
        "lower bound",
        "ratio",
    ];
    let mut cells: Vec<Vec<String>> = vec![header.iter().map(|s| s.to_string()).collect()];
    for r in &rows {
        let lb = params::lower_bound_bits(n, r.fpr);
        cells.push(vec![
            r.kind.to_string(),
            group(r.m),
            bytes(r.m.div_ceil(8)),
            r.k.to_string(),
            format!("{:.2}", r.m as f64 / n as f64),
            rate(r.fpr),
            rate(r.asymptotic),
            if lb > 0.0 {
                group(lb.ceil() as u64)
            } else {
                "-".into()
            },
            if lb > 0.0 {
                format!("{:.3}", r.m as f64 / lb)
            } else {
                "-".into()
            },
        ]);
    }
    let widths: Vec<usize> = (0..header.len())
        .map(|c| {
            cells
                .iter()
                .map(|row| row[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in &cells {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            let w = widths[c];
            if c == 0 {
                line.push_str(&format!("{cell:<w$}"));
            } else {
                line.push_str(&format!("  {cell:>w$}"));
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    writeln!(
        out,
        "fpr: exact for classic and partitioned, the blocked and split-block models otherwise; \
         lower bound: n*log2(1/fpr) bits at that fpr"
    )?;
    out.flush()?;
    Ok(0)
}

fn by_rate(n: u64, p: f64) -> Result<Vec<Row>> {
    let c = params::classic_shape(n, p)?;
    let pa = params::partitioned_shape(n, p)?;
    let b = params::blocked_shape(n, p, BLOCK_BITS)?;
    let sb = params::split_block_blocks(n, p)?;
    let bm = b.blocks * BLOCK_BITS;
    let sm = sb * SPLIT_BLOCK_BITS;
    let xb = params::sectors_blocks(n, p)?;
    let hl = params::salted256_lines(n, p)?;
    Ok(vec![
        Row {
            kind: "classic",
            m: c.m,
            k: c.k,
            fpr: params::fpr_exact(n, c.m, c.k),
            asymptotic: params::fpr_asymptotic(n, c.m, c.k),
        },
        Row {
            kind: "partitioned",
            m: pa.m,
            k: pa.k,
            fpr: params::fpr_partitioned(n, pa.m, pa.k),
            asymptotic: params::fpr_asymptotic(n, pa.m, pa.k),
        },
        Row {
            kind: "blocked",
            m: bm,
            k: b.k,
            fpr: params::fpr_blocked(n, b.blocks, BLOCK_BITS, b.k),
            asymptotic: params::fpr_asymptotic(n, bm, b.k),
        },
        Row {
            kind: "blocked-sectors",
            m: xb * BLOCK_BITS,
            k: 8,
            fpr: params::fpr_sectors(n, xb),
            asymptotic: params::fpr_asymptotic(n, xb * BLOCK_BITS, 8),
        },
        // the salted layouts: the sectors shape hashed once with xxh3-64, and the 256-bit
        // blocks (two per 512-bit line)
        Row {
            kind: "blocked-salted",
            m: xb * BLOCK_BITS,
            k: 8,
            fpr: params::fpr_sectors(n, xb),
            asymptotic: params::fpr_asymptotic(n, xb * BLOCK_BITS, 8),
        },
        Row {
            kind: "blocked-salted256",
            m: hl * BLOCK_BITS,
            k: 8,
            fpr: params::fpr_salted256(n, hl),
            asymptotic: params::fpr_asymptotic(n, hl * BLOCK_BITS, 8),
        },
        Row {
            kind: "split-block",
            m: sm,
            k: 8,
            fpr: params::fpr_split_block(n, sb),
            asymptotic: params::fpr_asymptotic(n, sm, 8),
        },
    ])
}

fn by_bits(n: u64, m: u64, k: Option<u32>) -> Vec<Row> {
    let kc = k.unwrap_or_else(|| params::optimal_k(n, m));
    let kp = kc;
    let mp = m.div_ceil(u64::from(kp)) * u64::from(kp);
    let blocks = m.div_ceil(BLOCK_BITS).max(1);
    let kb = match k {
        Some(k) => k.min(BLOCKED_MAX_K),
        None => (1..=BLOCKED_MAX_K)
            .min_by(|&x, &y| {
                params::fpr_blocked(n, blocks, BLOCK_BITS, x)
                    .total_cmp(&params::fpr_blocked(n, blocks, BLOCK_BITS, y))
            })
            .unwrap_or(1),
    };
    let sblocks = m.div_ceil(SPLIT_BLOCK_BITS).max(1);
    vec![
        Row {
            kind: "classic",
            m,
            k: kc,
            fpr: params::fpr_exact(n, m, kc),
            asymptotic: params::fpr_asymptotic(n, m, kc),
        },
        Row {
            kind: "partitioned",
            m: mp,
            k: kp,
            fpr: params::fpr_partitioned(n, mp, kp),
            asymptotic: params::fpr_asymptotic(n, mp, kp),
        },
        Row {
            kind: "blocked",
            m: blocks * BLOCK_BITS,
            k: kb,
            fpr: params::fpr_blocked(n, blocks, BLOCK_BITS, kb),
            asymptotic: params::fpr_asymptotic(n, blocks * BLOCK_BITS, kb),
        },
        Row {
            kind: "blocked-sectors",
            m: blocks * BLOCK_BITS,
            k: 8,
            fpr: params::fpr_sectors(n, blocks),
            asymptotic: params::fpr_asymptotic(n, blocks * BLOCK_BITS, 8),
        },
        Row {
            kind: "blocked-salted",
            m: blocks * BLOCK_BITS,
            k: 8,
            fpr: params::fpr_sectors(n, blocks),
            asymptotic: params::fpr_asymptotic(n, blocks * BLOCK_BITS, 8),
        },
        Row {
            kind: "blocked-salted256",
            m: blocks * BLOCK_BITS,
            k: 8,
            fpr: params::fpr_salted256(n, blocks),
            asymptotic: params::fpr_asymptotic(n, blocks * BLOCK_BITS, 8),
        },
        Row {
            kind: "split-block",
            m: sblocks * SPLIT_BLOCK_BITS,
            k: 8,
            fpr: params::fpr_split_block(n, sblocks),
            asymptotic: params::fpr_asymptotic(n, sblocks * SPLIT_BLOCK_BITS, 8),
        },
    ]
}
