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
