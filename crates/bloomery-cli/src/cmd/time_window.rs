//! The time window (`bloomery::TimeWindowFilter`) in the CLI: `create --kind window --window
//! 10m`, `add`/`check`/`info` on its files and `dedup --window 10m`. Time is milliseconds since
//! the Unix epoch, read here (the library never reads a clock): the arrival time of each line,
//! or a field of it (`--time-field`, epoch seconds or RFC 3339).

use std::io::{BufWriter, Write};

use anyhow::{bail, Context, Result};
use bloomery::file::MappedFile;
use bloomery::{Kind, Persist, TimeWindowFilter};
use serde_json::json;

use crate::cli::{AddArgs, CheckArgs, CreateArgs, DedupArgs, InfoArgs, KeyArgs};
use crate::input::{self, KeySpec};
use crate::num::{bytes, count, group, rate};
use crate::output::{note, table};

/// A duration in milliseconds, in the largest unit that divides it (`10m`, `1500ms`).
pub fn duration(ms: u64) -> String {
    for (u, n) in [
        ("w", 604_800_000u64),
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1000),
    ] {
        if ms >= n && ms.is_multiple_of(n) {
            return format!("{}{u}", ms / n);
        }
    }
    format!("{ms}ms")
}

/// Milliseconds since the Unix epoch, now.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A time stamp field: epoch seconds (`1700000000`, `1700000000.25`) or RFC 3339
/// (`2026-12-01T10:00:00Z`, `2026-12-01T10:00:00.5+01:00`), as milliseconds since the epoch.
pub fn parse_time(field: &[u8]) -> Result<u64> {
    let s = std::str::from_utf8(field)
        .ok()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .context("an empty or non-UTF-8 time field")?;
    if s.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        let secs: f64 = s
            .parse()
            .with_context(|| format!("`{s}` is not epoch seconds"))?;
        if !(0.0..1e13).contains(&secs) {
            bail!("`{s}`: epoch seconds out of range");
        }
        return Ok((secs * 1000.0).round() as u64);
    }
    let t = chrono::DateTime::parse_from_rfc3339(s)
        .with_context(|| format!("`{s}` is neither epoch seconds nor an RFC 3339 time"))?;
    u64::try_from(t.timestamp_millis()).with_context(|| format!("`{s}` is before 1970"))
}

/// Field `n` (1-based) of `line` split on `delim`.
fn field<'a>(line: &'a [u8], delim: &[u8], n: usize) -> Option<&'a [u8]> {
    let mut rest = line;
    for _ in 1..n {
        let at = memchr::memmem::find(rest, delim)?;
        rest = &rest[at + delim.len()..];
    }
    let end = memchr::memmem::find(rest, delim).unwrap_or(rest.len());
    Some(&rest[..end])
}

/// True when the mapped file holds a time window.
pub fn is_time_window(file: &MappedFile) -> bool {
    file.header().kind == Kind::TimeWindow
}

/// The time window of a mapped file, read into memory (its checksum verified).
fn load(file: &MappedFile) -> Result<TimeWindowFilter> {
    TimeWindowFilter::from_bytes(file.bytes())
        .with_context(|| format!("cannot load `{}`", file.path().display()))
}

/// `create F --kind window -n N -p P --window 10m`: `-n` is the lines per window the base
/// slices are sized for (memory follows the rate when it differs).
pub fn create(a: &CreateArgs, window: u64) -> Result<u8> {
    if a.kind.kind() != Kind::Window {
        bail!("--window applies to --kind window only");
    }
    if a.layout.is_some() {
        bail!("--layout applies to a count window (no --window DURATION)");
    }
    if a.file.exists() && !a.force {
        bail!(
            "`{}` already exists (use --force to overwrite it)",
            a.file.display()
        );
    }
    let (Some(n), Some(p)) = (a.capacity, a.fpr) else {
        bail!("give -n (lines per window at the expected rate) and -p (the target rate)");
    };
    if a.bits.is_some() || a.hashes.is_some() {
        bail!("--bits and --hashes do not apply to a time window (sized by -n and -p)");
    }
    let mut b = TimeWindowFilter::builder()
        .window(window)
        .capacity(n)
        .fpr(p);
    if a.keyed {
        b = b.keyed()?;
    } else if let Some(s) = a.seed {
        b = b.seed(s);
    }
    let f = b.try_build()?;
    f.save(&a.file)
        .with_context(|| format!("cannot write `{}`", a.file.display()))?;
    note(&format!(
        "created {}: time window of {}, sized for {} per window at {} ({} now, growing \
         with the rate); k={}, {} generations per window",
        a.file.display(),
        duration(window),
        count(n, "line", "lines"),
        rate(p),
        bytes(f.bytes()),
        f.hashes(),
        f.generations_per_window()
    ));
    Ok(0)
}

/// `add` on a time window: each key inserted at its arrival time.
pub fn add(a: &AddArgs, file: &MappedFile) -> Result<u8> {
    let spec = KeySpec::new(&a.keys)?;
    let mut f = load(file)?;
    let hasher = *f.hasher();
    let before = f.insertions();
    let counts = input::for_each_line(&a.inputs, &spec, |_, key| {
        if let Some(k) = key {
            f.insert_hashed_at(hasher.hash_bytes(k), now_ms());
        }
        Ok(())
    })?;
    let now = f.advance(now_ms());
    f.save(&a.file)
        .with_context(|| format!("cannot write `{}`", a.file.display()))?;
    note(&format!(
        "{} read, {} added; {} in the last {} ({}); fpr now {} (target {})",
        count(counts.lines, "line", "lines"),
        group(f.insertions() - before),
        group(f.recent_insertions(now)),
        duration(f.window()),
        bytes(f.bytes()),
        rate(f.current_fpr(now)),
        rate(f.target_fpr())
    ));
    Ok(0)
}

/// `check` on a time window: the lines whose key arrived in the window ending now.
pub fn check(a: &CheckArgs, file: &MappedFile) -> Result<u8> {
    if a.edit_distance > 0 || a.alphabet.is_some() {
        bail!("--edit-distance does not apply to a time window");
    }
    let spec = KeySpec::new(&a.keys)?;
    let f = load(file)?;
    let hasher = *f.hasher();
    let now = now_ms();
    let mut out = BufWriter::with_capacity(1 << 16, crate::output::stdout());
    let mut matched = 0u64;
    input::for_each_line(&a.inputs, &spec, |line, key| {
        let hit = key.is_some_and(|k| f.contains_hashed_at(hasher.hash_bytes(k), now));
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

/// `info` on a time window, at the current time.
pub fn info(a: &InfoArgs, file: &MappedFile) -> Result<u8> {
    let f = load(file)?;
    let now = now_ms().max(f.clock());
    let fill: Vec<f64> = f
        .slice_fill()
        .iter()
        .map(|&(ones, bits)| ones as f64 / bits as f64)
        .collect();
    let oldest = f.oldest_age(now);
    let hasher = f.hasher();
    if a.json {
        let v = json!({
            "kind": Kind::TimeWindow.name(),
            "bytes": f.bytes(),
            "items": f.insertions(),
            "target_fpr": f.target_fpr(),
            "current_fpr": f.current_fpr(now),
            "hash": hasher.algorithm().name(),
            "seed": hasher.public_seed().map(|s| s as u64),
            "time_window": {
                "window_ms": f.window(),
                "slack_ms": f.slack(),
                "period_ms": f.period(),
                "k": f.hashes(),
                "l": f.generations_per_window(),
                "capacity_per_window": f.capacity(),
                "base_slice_bits": f.base_slice_bits(),
                "base_generation": f.base_generation(),
                "slices": f.slices(),
                "live_slices": f.live_slices(now),
                "design_slices": f.design_slices(),
                "slice_fill_newest_first": fill,
                "oldest_slice_age_ms": oldest,
                "insertions_last_window": f.recent_insertions(now),
                "clock_ms": f.clock(),
                "now_ms": now,
                "model_fpr_now": f.current_fpr(now),
                "model_fpr_design": f.worst_fpr(),
                "forgotten_early": f.forgotten_early(),
            }
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(0);
    }
    let fills: Vec<String> = fill.iter().map(|x| format!("{:.0}%", x * 100.0)).collect();
    let rows: Vec<(&str, String)> = vec![
        ("kind", "time-window".into()),
        ("window", duration(f.window())),
        (
            "slack",
            format!(
                "{} (keys older than window + slack are forgotten)",
                duration(f.slack())
            ),
        ),
        (
            "slices",
            format!(
                "{} live of {} ({} allowed for at the target; k={}, {} generations per \
                 window, one ends every {} at the latest)",
                f.live_slices(now),
                f.slices(),
                f.design_slices(),
                f.hashes(),
                f.generations_per_window(),
                duration(f.period())
            ),
        ),
        ("slice fill", fills.join(" ")),
        (
            "oldest slice",
            oldest.map_or("no key in the window".to_string(), |ms| {
                format!("last insertion {} ago", duration(ms))
            }),
        ),
        (
            "rate",
            format!(
                "{} in the last {} (sized for {})",
                count(f.recent_insertions(now), "insertion", "insertions"),
                duration(f.window()),
                group(f.capacity())
            ),
        ),
        (
            "fpr (model)",
            format!(
                "{} now; target {}",
                rate(f.current_fpr(now)),
                rate(f.target_fpr())
            ),
        ),
        ("memory", bytes(f.bytes())),
        ("insertions", group(f.insertions())),
    ];
    let mut rows = rows;
    if f.forgotten_early() > 0 {
        rows.push((
            "forgotten early",
            format!(
                "{} slices retired inside the window (memory limit)",
                group(f.forgotten_early())
            ),
        ));
    }
    table(&mut crate::output::stdout(), &rows)?;
    Ok(0)
}

/// `dedup --window 10m`: a line is printed unless its key arrived in the window before it.
pub fn dedup(a: &DedupArgs, window: u64) -> Result<u8> {
    // --delimiter may serve --time-field alone
    let spec = if a.keys.field.is_none() && a.time_field.is_some() {
        KeySpec::new(&KeyArgs {
            delimiter: None,
            field: None,
            hex: a.keys.hex,
        })?
    } else {
        KeySpec::new(&a.keys)?
    };
    let delim = match &a.keys.delimiter {
        None => b"\t".to_vec(),
        Some(d) => input::unescape(d)?,
    };
    if a.time_field == Some(0) {
        bail!("fields are numbered from 1 (--time-field 1 is the first field)");
    }
    let mut f = match &a.state {
        Some(p) if p.exists() => {
            let file = super::open::map(p, false)?;
            if !is_time_window(&file) {
                bail!(
                    "`{}` is not a time window file: --window {} needs one",
                    p.display(),
                    duration(window)
                );
            }
            let f = load(&file)?;
            if f.window() != window {
                bail!(
                    "`{}` holds a window of {}, not {}",
                    p.display(),
                    duration(f.window()),
                    duration(window)
                );
            }
            f
        }
        _ => {
            let mut b = TimeWindowFilter::builder()
                .window(window)
                .capacity(a.capacity.unwrap_or(1_000_000))
                .fpr(a.fpr);
            if let Some(s) = a.seed {
                b = b.seed(s);
            }
            b.try_build()?
        }
    };
    let hasher = *f.hasher();
    let mut out = BufWriter::with_capacity(1 << 16, crate::output::stdout());
    let (mut printed, mut n) = (0u64, 0u64);
    let counts = input::for_each_line(&a.inputs, &spec, |line, key| {
        n += 1;
        let Some(k) = key else { return Ok(()) };
        let t = match a.time_field {
            Some(tf) => {
                let raw = field(line, &delim, tf)
                    .with_context(|| format!("line {n}: no field {tf} (--time-field)"))?;
                parse_time(raw).with_context(|| format!("line {n}"))?
            }
            None => now_ms(),
        };
        let h = hasher.hash_bytes(k);
        // every line enters the window (repeats too: they stay fresh)
        let seen = f.contains_hashed_at(h, t);
        f.insert_hashed_at(h, t);
        if !seen {
            printed += 1;
            out.write_all(line)?;
            out.write_all(b"\n")?;
        }
        Ok(())
    })?;
    out.flush()?;
    drop(out);
    if let Some(p) = &a.state {
        f.save(p)
            .with_context(|| format!("cannot write `{}`", p.display()))?;
    }
    let now = f.clock();
    let dropped = counts.lines - printed - counts.skipped;
    note(&format!(
        "{} read, {} printed, {} dropped (repeats within {}, or keys taken for seen at a rate \
         of {} now, target {}); {} in the last {} ({})",
        count(counts.lines, "line", "lines"),
        group(printed),
        group(dropped),
        duration(window),
        rate(f.current_fpr(now)),
        rate(f.target_fpr()),
        count(f.recent_insertions(now), "line", "lines"),
        duration(window),
        bytes(f.bytes())
    ));
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::num::{parse_window, WindowArg};

    #[test]
    fn windows_and_times_parse() {
        assert_eq!(parse_window("10m"), Ok(WindowArg::Millis(600_000)));
        assert_eq!(parse_window("1.5s"), Ok(WindowArg::Millis(1500)));
        assert_eq!(parse_window("500ms"), Ok(WindowArg::Millis(500)));
        assert_eq!(parse_window("7d"), Ok(WindowArg::Millis(604_800_000)));
        assert_eq!(parse_window("10k"), Ok(WindowArg::Count(10_000)));
        assert_eq!(parse_window("500"), Ok(WindowArg::Count(500)));
        assert!(parse_window("0s").is_err());
        assert!(parse_window("ten minutes").is_err());
        assert_eq!(duration(600_000), "10m");
        assert_eq!(duration(1500), "1500ms");
        assert_eq!(parse_time(b"1700000000").unwrap(), 1_700_000_000_000);
        assert_eq!(parse_time(b"1700000000.25").unwrap(), 1_700_000_000_250);
        assert_eq!(
            parse_time(b"2023-11-14T22:13:20Z").unwrap(),
            1_700_000_000_000
        );
        assert_eq!(
            parse_time(b"2023-11-14T23:13:20.5+01:00").unwrap(),
            1_700_000_000_500
        );
        assert!(parse_time(b"yesterday").is_err());
        assert!(parse_time(b"1969-12-31T23:59:59Z").is_err());
        assert_eq!(field(b"a\tb\tc", b"\t", 2), Some(&b"b"[..]));
        assert_eq!(field(b"a\tb\tc", b"\t", 4), None);
    }
}
