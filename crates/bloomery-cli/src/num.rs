//! Parsing and formatting of numbers: `10M`, `1e6`, `250_000`, `512M` bytes.

/// A count: an integer with optional `_`, an SI suffix (k, M, G, T; powers of 1000) or
/// scientific notation (`1e6`).
pub fn parse_count(s: &str) -> Result<u64, String> {
    let t: String = s
        .trim()
        .chars()
        .filter(|c| *c != '_' && *c != ',')
        .collect();
    let (digits, mult) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1e3),
        Some('m' | 'M') => (&t[..t.len() - 1], 1e6),
        Some('g' | 'G') => (&t[..t.len() - 1], 1e9),
        Some('t' | 'T') => (&t[..t.len() - 1], 1e12),
        _ => (t.as_str(), 1.0),
    };
    if let Ok(v) = digits.parse::<u64>() {
        return v
            .checked_mul(mult as u64)
            .ok_or_else(|| format!("`{s}` is too large"));
    }
    match digits.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 && (v * mult) < 1.8e19 && (v * mult).fract() == 0.0 => {
            Ok((v * mult) as u64)
        }
        _ => Err(format!(
            "`{s}` is not a whole number (examples: 1000000, 10M, 1e6)"
        )),
    }
}

/// A byte size: an integer with an optional binary suffix K, M, G, T (powers of 1024).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s
        .trim()
        .trim_end_matches(['b', 'B'])
        .trim_end_matches(['i']);
    let (digits, shift) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 10),
        Some('m' | 'M') => (&t[..t.len() - 1], 20),
        Some('g' | 'G') => (&t[..t.len() - 1], 30),
        Some('t' | 'T') => (&t[..t.len() - 1], 40),
        _ => (t, 0),
    };
    let v: f64 = digits
        .parse()
        .map_err(|_| format!("`{s}` is not a size (examples: 512M, 8G)"))?;
    let bytes = v * (1u64 << shift) as f64;
    if !bytes.is_finite() || !(1.0..=1.8e19).contains(&bytes) {
        return Err(format!("`{s}` is not a usable size"));
    }
    Ok(bytes as u64)
}

/// `1234567` → `1,234,567`.
pub fn group(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A grouped count with its noun in the right number: `1 line`, `0 lines`, `1,000 lines`.
pub fn count(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", group(n), if n == 1 { one } else { many })
}

/// A target rate as `info` shows it: the rate, or `none` for a filter made without one.
pub fn target(p: f64) -> String {
    if p > 0.0 {
        rate(p)
    } else {
        "none".into()
    }
}

/// A rate in a readable form: `0.01`, `1.23e-5`.
pub fn rate(p: f64) -> String {
    if p == 0.0 {
        "0".into()
    } else if p >= 1e-3 {
        format!("{:.4}", p)
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    } else {
        format!("{p:.3e}")
    }
}

/// Bytes as `12.0 MiB`.
pub fn bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts() {
        assert_eq!(parse_count("10M"), Ok(10_000_000));
        assert_eq!(parse_count("1e6"), Ok(1_000_000));
        assert_eq!(parse_count("250_000"), Ok(250_000));
        assert_eq!(parse_count("1.5k"), Ok(1500));
        assert!(parse_count("-1").is_err());
        assert!(parse_count("abc").is_err());
        assert!(parse_count("99999999999T").is_err());
        assert_eq!(parse_bytes("512M"), Ok(512 << 20));
        assert_eq!(group(1234567), "1,234,567");
        assert_eq!(group(12), "12");
    }
}

/// A window for `--window`: a count of lines, or a duration (with a unit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowArg {
    /// The last N lines.
    Count(u64),
    /// The last so many milliseconds.
    Millis(u64),
}

/// `--window`: `N` (a count: 10000, 10k, 1e6) or a duration `10m`, `30s`, `2h`, `7d`, `500ms`.
pub fn parse_window(s: &str) -> std::result::Result<WindowArg, String> {
    let t = s.trim();
    let units: [(&str, u64); 6] = [
        ("ms", 1),
        ("s", 1000),
        ("m", 60_000),
        ("h", 3_600_000),
        ("d", 86_400_000),
        ("w", 604_800_000),
    ];
    for (u, ms) in units {
        if let Some(num) = t.strip_suffix(u) {
            if num.is_empty() || !num.chars().all(|c| c.is_ascii_digit() || c == '.') {
                continue;
            }
            let v: f64 = num
                .parse()
                .map_err(|_| format!("`{s}`: not a duration (10m, 30s, 2h, 7d, 500ms)"))?;
            let total = v * ms as f64;
            if !(1.0..1e15).contains(&total) {
                return Err(format!(
                    "`{s}`: a window from 1 ms to about 30 000 years, please"
                ));
            }
            return Ok(WindowArg::Millis(total.round() as u64));
        }
    }
    parse_count(t).map(WindowArg::Count).map_err(|e| {
        format!("{e} (a window is a count of lines, or a duration such as 10m, 30s, 2h, 7d)")
    })
}

/// `create --window`: a duration only.
pub fn parse_duration(s: &str) -> std::result::Result<u64, String> {
    match parse_window(s)? {
        WindowArg::Millis(ms) => Ok(ms),
        WindowArg::Count(_) => Err(format!(
            "`{s}`: give a duration with its unit (10m, 30s, 2h, 7d, 500ms); a count window \
             is -n"
        )),
    }
}
