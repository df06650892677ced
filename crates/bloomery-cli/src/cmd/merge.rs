//! `bloomery union`, `intersect` and `fold`: load everything, combine in memory, save OUT
//! atomically.

use std::path::Path;

use anyhow::{Context, Result};

use crate::cli::{FoldArgs, MergeArgs};
use crate::num::{count, group, rate};
use crate::output::note;

pub fn union(a: MergeArgs, intersect: bool) -> Result<u8> {
    let ins: Vec<&Path> = a.inputs.iter().map(|p| p.as_path()).collect();
    super::check_out(&a.out, &ins, a.force)?;
    let mut acc = super::load(&a.inputs[0])?;
    for p in &a.inputs[1..] {
        let g = super::load(p)?;
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
    super::save(&acc, &a.out)?;
    let i = acc.info();
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
    let mut f = super::load(&a.input)?;
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
