//! `bloomery union`, `intersect`, `fold` and `flatten`: inputs mapped, OUT written atomically.
//! `union` and `intersect` copy the first input beside OUT, map the copy writable, combine
//! the other inputs into it in place and rename it to OUT (see `bloomery::FileUpdate`), so
//! their memory is the pages they touch, not a copy of every filter.

use std::path::Path;

use anyhow::{Context, Result};
use bloomery::{AnyFilter, Capability, FileUpdate, Verify};

use super::open::{open_read, open_set, Structure};
use crate::cli::{FoldArgs, MergeArgs, PackArgs};
use crate::num::{bytes, count, group, rate};
use crate::output::{note, Progress};

pub fn union(a: MergeArgs, intersect: bool) -> Result<u8> {
    let ins: Vec<&Path> = a.inputs.iter().map(|p| p.as_path()).collect();
    super::check_out(&a.out, &ins, a.force)?;
    let what = if intersect { "intersect" } else { "combine" };
    super::open::require(&a.inputs[0], Capability::Merge, what)?;
    let verify = a.verify.verify();
    let first = &a.inputs[0];
    let compressed = bloomery::peek_file(first)
        .with_context(|| format!("cannot load `{}`", first.display()))?
        .compressed;
    // the first input, copied beside OUT and mapped writable (a compressed one: in memory)
    let (mut acc, up) = if compressed {
        (open_set(first, verify)?, None)
    } else {
        let mode = if verify {
            Verify::Checksum
        } else {
            Verify::HeaderOnly
        };
        let len = std::fs::metadata(first).map(|m| m.len()).unwrap_or(0);
        let mut bar = Progress::bytes("copying", len);
        let up = FileUpdate::copy_to(first, &a.out, mode, &mut |n| bar.set(n))
            .with_context(|| format!("cannot load `{}`", first.display()))?;
        drop(bar);
        let f = AnyFilter::from_update(&up)
            .with_context(|| format!("cannot load `{}`", first.display()))?;
        (f, Some(up))
    };
    for p in &a.inputs[1..] {
        let g = open_set(p, verify)?;
        let r = if intersect {
            acc.intersect_with(&g)
        } else {
            acc.union_with(&g)
        };
        r.with_context(|| {
            format!(
                "cannot combine `{}` with `{}`",
                a.inputs[0].display(),
                p.display()
            )
        })?;
    }
    let i = acc.info();
    match up {
        Some(up) => {
            let mut bar = Progress::bytes("checksum", up.len());
            up.commit(acc, &mut |n| bar.set(n))
                .with_context(|| format!("cannot write `{}`", a.out.display()))?;
        }
        None => super::save(&acc, &a.out)?,
    }
    let items = if intersect {
        // the AND of two filters has more bits than the filter of A ∩ B, so its fill
        // overstates the items; the library set them from the inner-product estimate
        format!(
            "about {} items in common ({}), fpr now {}",
            group(i.items),
            if a.inputs.len() == 2 {
                "the inner-product estimate of Broder & Mitzenmacher §2.4"
            } else {
                "estimated pair by pair, Broder & Mitzenmacher §2.4: an overestimate for more \
                 than two filters"
            },
            rate(i.current_fpr)
        )
    } else {
        format!(
            "about {} items, fpr now {}",
            if i.estimated_items.is_finite() {
                group(i.estimated_items.round() as u64)
            } else {
                "?".into()
            },
            rate(i.current_fpr)
        )
    };
    note(&format!(
        "wrote {}: {} of {}, fill {:.4}, {items}",
        a.out.display(),
        if intersect { "intersection" } else { "union" },
        count(a.inputs.len() as u64, "filter", "filters"),
        i.fill_ratio,
    ));
    Ok(0)
}

pub fn fold(a: FoldArgs) -> Result<u8> {
    super::check_out(&a.out, &[a.input.as_path()], a.force)?;
    super::open::require(&a.input, Capability::Fold, "fold")?;
    let mut f = open_set(&a.input, a.verify.verify())?;
    for t in 0..a.times {
        f = f
            .fold()
            .with_context(|| format!("cannot fold `{}` (fold {})", a.input.display(), t + 1))?;
    }
    super::save(&f, &a.out)?;
    let i = f.info();
    let target = if i.target_fpr > 0.0 && i.capacity > 0 {
        format!(
            " (target {} up to {} items, half the capacity before folding; it holds {})",
            rate(i.target_fpr),
            group(i.capacity),
            group(i.items)
        )
    } else {
        String::new()
    };
    note(&format!(
        "wrote {}: {} bits, fill {:.4}, fpr now {}{target}",
        a.out.display(),
        group(i.bits),
        i.fill_ratio,
        rate(i.current_fpr),
    ));
    super::warn_if_over_info(&i);
    Ok(0)
}

/// `flatten`: the plain Bloom filter of a counting file, saved atomically.
pub fn flatten(a: &PackArgs) -> Result<u8> {
    super::check_out(&a.out, &[&a.input], a.force)?;
    let kind = bloomery::peek_file(&a.input)
        .with_context(|| format!("cannot load `{}`", a.input.display()))?
        .header
        .kind;
    if kind != bloomery::Kind::BlockedCounting {
        // the blocked counting filter's refusal says why (the library's own message)
        super::open::require(&a.input, Capability::Flatten, "flatten")?;
    }
    let Structure::Counter(c) = open_read(&a.input, a.verify.verify())? else {
        anyhow::bail!("cannot flatten `{}`", a.input.display());
    };
    let plain = c
        .to_plain_filter()
        .with_context(|| format!("cannot flatten `{}`", a.input.display()))?;
    super::save(&plain, &a.out)?;
    note(&format!(
        "wrote {}: {} filter, {} (from {} of counters)",
        a.out.display(),
        plain.kind().name(),
        bytes(bloomery::Encode::encoded_len(&plain)),
        bytes(bloomery::Encode::encoded_len(&c)),
    ));
    Ok(0)
}
