//! `bloomery dedup`: first occurrences only, in order, in memory bounded by the filter. With
//! `--state FILE` an existing seen-set is updated in place of a copy and renamed over FILE at
//! the end (the library's `bloomery::file::Update`).

use std::io::{BufWriter, Write};

use anyhow::Result;
use bloomery::KeySet;

use bloomery::AnyFilter;

use bloomery::file::{Sealer, UpdateOptions};

use super::open::{self, Structure, Update};
use crate::cli::DedupArgs;
use crate::cmd::create::{build, Sizing};
use crate::input::{self, KeySpec};
use crate::num::{bytes, count, group, rate};
use crate::output::note;

pub fn run(mut a: DedupArgs) -> Result<u8> {
    use crate::num::WindowArg;
    match a.window {
        Some(WindowArg::Millis(ms)) => return crate::cmd::time_window::dedup(&a, ms),
        Some(WindowArg::Count(n)) => {
            if a.capacity.is_some() {
                anyhow::bail!("-n does not apply to a count --window (the window is N)");
            }
            a.kind = crate::cli::KindArg::WINDOW;
            a.capacity = Some(n);
        }
        None => {}
    }
    if a.time_field.is_some() {
        anyhow::bail!("--time-field needs a time --window (10m, 30s, 2h, ...)");
    }
    let windowed = a.kind.kind() == bloomery::Kind::Window;
    if !a.kind.kind().is_set() {
        anyhow::bail!("dedup needs a set kind ({})", super::open::set_kind_names());
    }
    let spec = KeySpec::new(&a.keys)?;
    let (mut f, sealer) = open_state(&a, windowed)?;
    let hasher = *f.hasher();
    let before = f.len();
    let mut out = BufWriter::with_capacity(1 << 16, crate::output::stdout());
    let mut printed = 0u64;
    let structured = f.is_structured();
    let mut n = 0u64;
    let mut invalid = 0u64;
    let counts = input::for_each_line(&a.inputs, &spec, |line, key| {
        n += 1;
        if let Some(k) = key {
            // an mlbf takes the key as a URL (its segments are hashed, not the whole key)
            let new = if structured {
                match f.try_insert_key(k) {
                    Ok(new) => new,
                    Err(_) if a.skip_invalid => {
                        invalid += 1;
                        return Ok(());
                    }
                    Err(e) => anyhow::bail!("line {n}: {e}"),
                }
            } else if windowed {
                // every line enters the window, repeats too (they stay fresh); a line is new
                // when it was not among the previous N
                let h = hasher.hash_bytes(k);
                let seen = f.try_contains_hashed(h)?;
                f.try_insert_hashed(h)?;
                !seen
            } else {
                f.try_insert_hashed(hasher.hash_bytes(k))?
            };
            if new {
                printed += 1;
                out.write_all(line)?;
                out.write_all(b"\n")?;
            }
        }
        Ok(())
    })?;
    out.flush()?;
    drop(out);
    let i = f.info();
    let new_items = f.len() - before;
    // a window's rate rises and falls with its slices: its bound is the worst point of the
    // stream; a plain filter's rate only grows, so the rate now bounds every earlier one
    let (rate_bound, window_len) = match &f {
        AnyFilter::Window(w) => (w.worst_fpr().max(i.current_fpr), w.window()),
        _ => (i.current_fpr, 0),
    };
    match (sealer, &a.state) {
        (Some(sealer), _) => open::commit(Update {
            structure: Structure::Set(f),
            sealer,
        })?,
        (None, Some(p)) => super::save(&f, p)?,
        (None, None) => {}
    }
    let invalid_note = if a.skip_invalid && structured {
        format!(", {} skipped as invalid URLs", group(invalid))
    } else {
        String::new()
    };
    let dropped = counts.lines - printed - counts.skipped - invalid;
    let held = if windowed {
        // every line enters the window (repeats too): the lines new to it are those printed
        format!(
            "{} new to the window of the last {} ({})",
            count(printed, "line", "lines"),
            group(window_len),
            bytes(i.bytes)
        )
    } else {
        format!(
            "{} ({} in the filter, {})",
            count(new_items, "new item", "new items"),
            group(i.items),
            bytes(i.bytes)
        )
    };
    note(&format!(
        "{} read, {} printed, {} dropped{invalid_note} ({}); {held}; fpr now {}",
        count(counts.lines, "line", "lines"),
        group(printed),
        group(dropped),
        wrongly_dropped(printed, rate_bound),
        rate(i.current_fpr)
    ));
    super::warn_if_over_info(&i);
    Ok(0)
}

/// The seen-set: the `--state` file opened for an update when it exists (a counting file, or
/// a window file without `--window`, refused from its header before the copy), else a new
/// filter.
fn open_state(a: &DedupArgs, windowed: bool) -> Result<(AnyFilter, Option<Sealer>)> {
    Ok(match &a.state {
        Some(p) if p.exists() => {
            // a counting file is refused from its header, before the copy and checksum pass
            let file = open::map(p, false)?;
            let kind = file.header().kind;
            if !kind.is_set() {
                return Err(super::open::not_a_set(kind, p));
            }
            if windowed != (kind == bloomery::Kind::Window) {
                anyhow::bail!(
                    "`{}` is a {kind} file: --window needs a window file and a window file \
                     needs --window",
                    p.display()
                );
            }
            let opts = UpdateOptions::default()
                .verify(open::verify_mode(a.verify.verify()))
                .write_plain(true);
            let up = open::update_mapped(file, opts)?;
            match up.structure {
                Structure::Set(f) => (f, Some(up.sealer)),
                Structure::Counter(c) => return Err(super::open::not_a_set(c.kind(), p)),
            }
        }
        _ => (
            build(
                a.kind.kind(),
                &Sizing {
                    capacity: Some(a.capacity.unwrap_or(1_000_000)),
                    fpr: Some(a.fpr),
                    seed: a.seed,
                    layers: a.layers,
                    ..Sizing::default()
                },
            )?,
            None,
        ),
    })
}

/// How many of the dropped lines are expected to be distinct lines taken for seen (false
/// positives), as a sentence. Each new line is dropped with the filter's false-positive rate
/// at that moment, at most `r` (the rate now for a plain filter, whose fill only grows; the
/// worst point of the stream for a window): of the `printed + x` distinct
/// lines, `x` are expected to be dropped with `x ≤ r·(printed + x)`, so `x ≤ printed·r/(1-r)`.
fn wrongly_dropped(printed: u64, r: f64) -> String {
    if r >= 1.0 || r.is_nan() {
        return "repeats, or distinct lines wrongly dropped: the filter is full".into();
    }
    let x = printed as f64 * r / (1.0 - r);
    format!(
        "repeats, and an expected {} distinct lines at most wrongly dropped as false \
         positives, at a rate of at most {} per new line",
        expected(x),
        rate(r)
    )
}

/// An expected count: whole numbers when large, two significant digits when small.
fn expected(x: f64) -> String {
    if x >= 100.0 {
        group(x.round() as u64)
    } else if x >= 0.01 {
        format!("{x:.2}")
    } else if x > 0.0 {
        format!("{x:.1e}")
    } else {
        "0".into()
    }
}
