//! `bloomery union`, `intersect`, `fold` and `flatten`: inputs mapped, OUT written atomically.
//! Classic and blocked filters in plain files stream: `fold`, `union` and `intersect` read
//! their inputs front to back through their maps and write OUT as they go
//! (`AnyFilter::fold_file`, `union_files`, `intersect_files`), so their memory is a few 8 MiB
//! pieces whatever the files' sizes. Other kinds and compressed files: `union` and
//! `intersect` copy the first input beside OUT, map the copy writable, combine the other
//! inputs into it in place and rename it to OUT (see `bloomery::file::FileUpdate`); `fold` and
//! `flatten` build their result in memory.

use std::path::Path;

use anyhow::{Context, Result};
use bloomery::file::{FileUpdate, MappedFile};
use bloomery::kinds::{Capability, FilterInfo};
use bloomery::AnyFilter;

use super::open::{self, into_set, read_mapped, Structure};
use crate::cli::{FoldArgs, MergeArgs, PackArgs};
use crate::num::{bytes, count, group, rate};
use crate::output::{note, Progress};

pub fn union(a: MergeArgs, intersect: bool) -> Result<u8> {
    let ins: Vec<&Path> = a.inputs.iter().map(|p| p.as_path()).collect();
    super::check_out(&a.out, &ins, a.force)?;
    let what = if intersect { "intersect" } else { "combine" };
    // each input mapped once: the first one's kind checked from its header before the others
    let first = open::map(&a.inputs[0], false)?;
    open::require(&first, Capability::Merge, what)?;
    let mut files = vec![first];
    for p in &a.inputs[1..] {
        files.push(open::map(p, false)?);
    }
    let verify = a.verify.verify();
    let i = match streamed_union(&a, &files, intersect, verify)? {
        Some(i) => i,
        None => union_in_place(&a, files, intersect, verify)?,
    };
    report_union(&a, intersect, &i);
    Ok(0)
}

/// When every mapped input streams (plain classic, blocked, partitioned or split-block
/// files), combine them into OUT in one pass and return the result's summary, else `None`.
fn streamed_union(
    a: &MergeArgs,
    files: &[MappedFile],
    intersect: bool,
    verify: bool,
) -> Result<Option<FilterInfo>> {
    if !files.iter().all(AnyFilter::streams) {
        return Ok(None);
    }
    // inputs that do not combine take the in-memory path, whose messages name the pair
    let h0 = files[0].header();
    if files[1..].iter().any(|f| {
        let h = f.header();
        h.kind != h0.kind || h.hasher != h0.hasher || h.params != h0.params
    }) {
        return Ok(None);
    }
    let ins: Vec<&MappedFile> = files.iter().collect();
    let mode = open::verify_mode(verify);
    let mut bar = Progress::bytes(
        if intersect {
            "intersecting"
        } else {
            "combining"
        },
        files[0].len(),
    );
    let r = if intersect {
        AnyFilter::intersect_files(&ins, &a.out, mode, &mut |n| bar.set(n))
    } else {
        AnyFilter::union_files(&ins, &a.out, mode, &mut |n| bar.set(n))
    };
    drop(bar);
    let i = r.with_context(|| {
        format!(
            "cannot {} {} into `{}`",
            if intersect { "intersect" } else { "combine" },
            names(&a.inputs),
            a.out.display()
        )
    })?;
    Ok(Some(i))
}

fn names(paths: &[std::path::PathBuf]) -> String {
    paths
        .iter()
        .map(|p| format!("`{}`", p.display()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The first input copied beside OUT (a compressed one: loaded), the others combined into it.
fn union_in_place(
    a: &MergeArgs,
    files: Vec<MappedFile>,
    intersect: bool,
    verify: bool,
) -> Result<FilterInfo> {
    let mut files = files.into_iter();
    let (first, rest) = (files.next().expect("two inputs or more"), files);
    let first_path = &a.inputs[0];
    // the first input, copied beside OUT and mapped writable (a compressed one: in memory)
    let (mut acc, up) = if first.is_compressed() {
        (into_set(read_mapped(&first, verify)?, first_path)?, None)
    } else {
        let mut bar = Progress::bytes("copying", first.len());
        let up = FileUpdate::copy_mapped(first, &a.out, open::verify_mode(verify), &mut |n| {
            bar.set(n)
        })
        .with_context(|| format!("cannot load `{}`", first_path.display()))?;
        drop(bar);
        let f = AnyFilter::from_update(&up)
            .with_context(|| format!("cannot load `{}`", first_path.display()))?;
        (f, Some(up))
    };
    for (file, p) in rest.zip(&a.inputs[1..]) {
        let g = into_set(read_mapped(&file, verify)?, p)?;
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
    Ok(i)
}

fn report_union(a: &MergeArgs, intersect: bool, i: &FilterInfo) {
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
}

pub fn fold(a: FoldArgs) -> Result<u8> {
    super::check_out(&a.out, &[a.input.as_path()], a.force)?;
    let file = open::map(&a.input, false)?;
    open::require(&file, Capability::Fold, "fold")?;
    let verify = a.verify.verify();
    let i = if AnyFilter::streams(&file) {
        // read through the map, OUT written as it is made: a few pieces of memory
        let mode = open::verify_mode(verify);
        let mut bar = Progress::bytes("folding", file.len());
        let r = AnyFilter::fold_file(&file, a.times, &a.out, mode, &mut |n| bar.set(n));
        drop(bar);
        r.with_context(|| {
            format!(
                "cannot fold `{}` {} into `{}`",
                a.input.display(),
                count(u64::from(a.times), "time", "times"),
                a.out.display()
            )
        })?
    } else {
        let mut f = into_set(read_mapped(&file, verify)?, &a.input)?;
        for t in 0..a.times {
            f = f
                .fold()
                .with_context(|| format!("cannot fold `{}` (fold {})", a.input.display(), t + 1))?;
        }
        super::save(&f, &a.out)?;
        f.info()
    };
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
    let file = open::map(&a.input, false)?;
    if file.header().kind != bloomery::Kind::BlockedCounting {
        // the blocked counting filter's refusal says why (the library's own message)
        open::require(&file, Capability::Flatten, "flatten")?;
    }
    let Structure::Counter(c) = read_mapped(&file, a.verify.verify())? else {
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
        bytes(bloomery::file::Encode::encoded_len(&plain)),
        bytes(bloomery::file::Encode::encoded_len(&c)),
    ));
    Ok(0)
}
