//! Keys typed by a column's physical type: the Parquet specification hashes a value's plain
//! encoding (xxHash64, seed 0), so the key `42` is four bytes in an INT32 column, eight in an
//! INT64 column and two in a BYTE_ARRAY column, and each hashes differently.

use std::fmt;

use crate::hash::KeyHasher;

/// Parquet's physical types (parquet-format `Type`).
///
/// ```
/// use bloomery::parquet::{ColumnType, PhysicalType};
///
/// let t = PhysicalType::Int32;
/// assert_eq!(t.name(), "INT32");
/// assert_eq!(PhysicalType::from_id(t.id()), Some(t));
/// assert_eq!(PhysicalType::from_id(8), None);
/// // the same key is a different value, and hash, in each physical type
/// let mut buf = Vec::new();
/// let int32 = ColumnType::new(PhysicalType::Int32, 0).hash(b"42", false, &mut buf)?;
/// let int64 = ColumnType::new(PhysicalType::Int64, 0).hash(b"42", false, &mut buf)?;
/// let bytes = ColumnType::new(PhysicalType::ByteArray, 0).hash(b"42", false, &mut buf)?;
/// assert!(int32 != int64 && int64 != bytes && int32 != bytes);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PhysicalType {
    /// BOOLEAN (no writer puts Bloom filters on it; keys are `true`/`false`, one byte).
    Boolean,
    /// INT32, little-endian.
    Int32,
    /// INT64, little-endian.
    Int64,
    /// INT96 (legacy timestamps): 12 raw bytes, given in hex.
    Int96,
    /// FLOAT, IEEE 754 little-endian.
    Float,
    /// DOUBLE, IEEE 754 little-endian.
    Double,
    /// BYTE_ARRAY: the value's bytes (the plain encoding's length prefix is not hashed).
    ByteArray,
    /// FIXED_LEN_BYTE_ARRAY: exactly `type_length` bytes.
    FixedLenByteArray,
}

impl PhysicalType {
    /// The name the specification uses.
    pub fn name(self) -> &'static str {
        match self {
            PhysicalType::Boolean => "BOOLEAN",
            PhysicalType::Int32 => "INT32",
            PhysicalType::Int64 => "INT64",
            PhysicalType::Int96 => "INT96",
            PhysicalType::Float => "FLOAT",
            PhysicalType::Double => "DOUBLE",
            PhysicalType::ByteArray => "BYTE_ARRAY",
            PhysicalType::FixedLenByteArray => "FIXED_LEN_BYTE_ARRAY",
        }
    }

    /// The id in parquet-format's `Type` enum.
    pub fn id(self) -> u32 {
        match self {
            PhysicalType::Boolean => 0,
            PhysicalType::Int32 => 1,
            PhysicalType::Int64 => 2,
            PhysicalType::Int96 => 3,
            PhysicalType::Float => 4,
            PhysicalType::Double => 5,
            PhysicalType::ByteArray => 6,
            PhysicalType::FixedLenByteArray => 7,
        }
    }

    /// The type of an id of parquet-format's `Type` enum.
    pub fn from_id(id: u32) -> Option<Self> {
        Some(match id {
            0 => PhysicalType::Boolean,
            1 => PhysicalType::Int32,
            2 => PhysicalType::Int64,
            3 => PhysicalType::Int96,
            4 => PhysicalType::Float,
            5 => PhysicalType::Double,
            6 => PhysicalType::ByteArray,
            7 => PhysicalType::FixedLenByteArray,
            _ => return None,
        })
    }
}

/// Logical types that change how a key's text is read (all others read by the physical type).
///
/// ```
/// use bloomery::parquet::{days_since_epoch, ColumnType, PhysicalType, TextForm};
///
/// let plain = ColumnType::new(PhysicalType::Int32, 0);
/// let date = ColumnType { text: TextForm::Date, ..plain };
/// assert_eq!(date.describe(), "INT32 DATE");
/// let mut buf = Vec::new();
/// // a DATE column takes `YYYY-MM-DD` as well as the number of days
/// let days = days_since_epoch("2024-02-29").expect("a real date");
/// assert_eq!(days, 19_782);
/// assert_eq!(
///     date.hash(b"2024-02-29", false, &mut buf)?,
///     date.hash(days.to_string().as_bytes(), false, &mut buf)?
/// );
/// // a plain INT32 column does not
/// assert!(plain.hash(b"2024-02-29", false, &mut buf).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TextForm {
    /// By the physical type only.
    Plain,
    /// DATE (INT32 days since 1970-01-01): `YYYY-MM-DD` is also accepted.
    Date,
    /// UUID (16-byte FIXED_LEN_BYTE_ARRAY): the 36-character form is also accepted.
    Uuid,
}

/// How a column's values are encoded for hashing.
///
/// ```
/// use bloomery::parquet::{ColumnType, PhysicalType};
///
/// let t = ColumnType::new(PhysicalType::Int64, 0);
/// assert_eq!(t.describe(), "INT64");
/// assert_eq!(t.fixed_size(), Some(8));
/// // text keys are parsed by the type and hashed by their plain encoding ...
/// let mut out = Vec::new();
/// t.encode(b"-7", false, &mut out)?;
/// assert_eq!(out, (-7i64).to_le_bytes());
/// // ... so a text key and its raw encoding hash alike
/// let mut buf = Vec::new();
/// assert_eq!(
///     t.hash(b"-7", false, &mut buf)?,
///     t.hash(&(-7i64).to_le_bytes(), true, &mut buf)?
/// );
/// let uuid = ColumnType::new(PhysicalType::FixedLenByteArray, 16);
/// assert_eq!(uuid.fixed_size(), Some(16));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ColumnType {
    /// Physical type.
    pub physical: PhysicalType,
    /// Bytes per value of a FIXED_LEN_BYTE_ARRAY (0 otherwise).
    pub type_length: u32,
    /// Extra text forms from the logical type.
    pub text: TextForm,
}

/// A key that cannot be a value of the column (so it is certainly not in it).
///
/// ```
/// use bloomery::parquet::{ColumnType, KeyError, PhysicalType};
///
/// let t = ColumnType::new(PhysicalType::Int32, 0);
/// let mut buf = Vec::new();
/// let err: KeyError = t.hash(b"forty-two", false, &mut buf).unwrap_err();
/// assert_eq!(err.expected, "INT32");
/// assert!(err.to_string().starts_with("not a INT32 value"));
/// // too large for 32 bits, and raw bytes of the wrong size
/// assert!(t.hash(b"4294967296", false, &mut buf).is_err());
/// assert!(t.hash(&[1, 2, 3], true, &mut buf).is_err());
///
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyError {
    /// The column type's description.
    pub expected: String,
    /// What was wrong.
    pub reason: String,
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not a {} value: {}", self.expected, self.reason)
    }
}

impl std::error::Error for KeyError {}

impl ColumnType {
    /// A column of a physical type read plainly.
    pub fn new(physical: PhysicalType, type_length: u32) -> Self {
        Self {
            physical,
            type_length,
            text: TextForm::Plain,
        }
    }

    /// E.g. `INT64`, `FIXED_LEN_BYTE_ARRAY(16) UUID`.
    pub fn describe(&self) -> String {
        let mut s = self.physical.name().to_string();
        if self.physical == PhysicalType::FixedLenByteArray {
            s.push_str(&format!("({})", self.type_length));
        }
        match self.text {
            TextForm::Plain => {}
            TextForm::Date => s.push_str(" DATE"),
            TextForm::Uuid => s.push_str(" UUID"),
        }
        s
    }

    fn err(&self, reason: impl Into<String>) -> KeyError {
        KeyError {
            expected: self.describe(),
            reason: reason.into(),
        }
    }

    /// Bytes of a fixed-size value (None: variable).
    pub fn fixed_size(&self) -> Option<usize> {
        match self.physical {
            PhysicalType::Boolean => Some(1),
            PhysicalType::Int32 | PhysicalType::Float => Some(4),
            PhysicalType::Int64 | PhysicalType::Double => Some(8),
            PhysicalType::Int96 => Some(12),
            PhysicalType::FixedLenByteArray => Some(self.type_length as usize),
            PhysicalType::ByteArray => None,
        }
    }

    /// The plain encoding of a key into `out` (cleared first). `raw`: the key already is the
    /// value's bytes (e.g. decoded from hex); it must then have the type's size. Otherwise it
    /// is text: a decimal integer (INT32 also takes 0..2³²−1, as UINT_32 stores it; INT64 up
    /// to 2⁶⁴−1), a float, `true`/`false`, a date or UUID where the logical type says so, or
    /// the bytes themselves for byte arrays.
    pub fn encode(&self, key: &[u8], raw: bool, out: &mut Vec<u8>) -> Result<(), KeyError> {
        out.clear();
        if raw || matches!(self.physical, PhysicalType::ByteArray) {
            return self.bytes(key, out);
        }
        // integers straight from the bytes (the common key type: no UTF-8 pass)
        match (self.physical, parse_int(key)) {
            (PhysicalType::Int64, Some(v))
                if (i128::from(i64::MIN)..=i128::from(u64::MAX)).contains(&v) =>
            {
                out.extend_from_slice(&(v as i64 as u64).to_le_bytes());
                return Ok(());
            }
            (PhysicalType::Int32, Some(v))
                if (i128::from(i32::MIN)..=i128::from(u32::MAX)).contains(&v) =>
            {
                out.extend_from_slice(&(v as i64 as u32).to_le_bytes());
                return Ok(());
            }
            _ => {}
        }
        let text = std::str::from_utf8(key).map_err(|_| self.err("not UTF-8 text"))?;
        match self.physical {
            PhysicalType::Boolean => out.push(match text {
                "true" | "1" => 1,
                "false" | "0" => 0,
                _ => return Err(self.err(format!("`{text}` is not true or false"))),
            }),
            PhysicalType::Int32 => {
                let v = match (self.text, parse_int(text.as_bytes())) {
                    (_, Some(v)) if (i128::from(i32::MIN)..=i128::from(u32::MAX)).contains(&v) => {
                        v as i64 as u32
                    }
                    (_, Some(_)) => return Err(self.err(format!("{text} is out of range"))),
                    (TextForm::Date, None) => days_since_epoch(text)
                        .ok_or_else(|| self.err(format!("`{text}` is not a YYYY-MM-DD date")))?
                        as u32,
                    (_, None) => return Err(self.err(format!("`{text}` is not an integer"))),
                };
                out.extend_from_slice(&v.to_le_bytes());
            }
            PhysicalType::Int64 => {
                let v = parse_int(text.as_bytes())
                    .filter(|v| (i128::from(i64::MIN)..=i128::from(u64::MAX)).contains(v))
                    .ok_or_else(|| self.err(format!("`{text}` is not a 64-bit integer")))?;
                out.extend_from_slice(&(v as i64 as u64).to_le_bytes());
            }
            PhysicalType::Float => {
                let v: f32 = text
                    .parse()
                    .map_err(|_| self.err(format!("`{text}` is not a number")))?;
                out.extend_from_slice(&v.to_le_bytes());
            }
            PhysicalType::Double => {
                let v: f64 = text
                    .parse()
                    .map_err(|_| self.err(format!("`{text}` is not a number")))?;
                out.extend_from_slice(&v.to_le_bytes());
            }
            PhysicalType::FixedLenByteArray if self.text == TextForm::Uuid && text.len() == 36 => {
                let hex: String = text.chars().filter(|&c| c != '-').collect();
                let dashes = [8, 13, 18, 23]
                    .iter()
                    .all(|&i| text.as_bytes().get(i) == Some(&b'-'));
                match (dashes, hex.len() == 32, decode_hex(hex.as_bytes())) {
                    (true, true, Some(b)) => out.extend_from_slice(&b),
                    _ => return Err(self.err(format!("`{text}` is not a UUID"))),
                }
            }
            PhysicalType::FixedLenByteArray => return self.bytes(key, out),
            PhysicalType::Int96 => {
                return Err(self.err("INT96 keys are given as 12 bytes in hex (--hex)"))
            }
            PhysicalType::ByteArray => unreachable!("handled above"),
        }
        Ok(())
    }

    fn bytes(&self, key: &[u8], out: &mut Vec<u8>) -> Result<(), KeyError> {
        if let Some(n) = self.fixed_size() {
            if key.len() != n {
                return Err(self.err(format!("{} bytes, the type has {n}", key.len())));
            }
        }
        out.extend_from_slice(key);
        Ok(())
    }

    /// The 64-bit hash the specification uses for a key (None: the key cannot be a value of
    /// this column).
    pub fn hash(&self, key: &[u8], raw: bool, buf: &mut Vec<u8>) -> Result<u64, KeyError> {
        // integer text (the common key list): parsed and hashed on the stack, without the
        // buffer; the same bytes as `encode` writes, so the same hash
        if !raw {
            match self.physical {
                PhysicalType::Int64 => {
                    if let Some(v) = parse_int64(key) {
                        return Ok(xxhash_rust::xxh64::xxh64(&v.to_le_bytes(), 0));
                    }
                }
                PhysicalType::Int32 => {
                    if let Some(v) = parse_int64(key)
                        .filter(|v| (i64::from(i32::MIN)..=i64::from(u32::MAX)).contains(v))
                    {
                        return Ok(xxhash_rust::xxh64::xxh64(&(v as u32).to_le_bytes(), 0));
                    }
                }
                _ => {}
            }
        }
        self.encode(key, raw, buf)?;
        Ok(KeyHasher::parquet().hash_bytes(buf).lo)
    }
}

/// A decimal integer of at most 18 digits with an optional sign (always within i64): the
/// common case of [`parse_int`], in 64-bit arithmetic. None for anything else (longer, or not
/// an integer), which the general path then decides.
#[inline]
fn parse_int64(s: &[u8]) -> Option<i64> {
    let (neg, digits) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || digits.len() > 18 {
        return None;
    }
    let mut v: i64 = 0;
    for &b in digits {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v * 10 + i64::from(d);
    }
    Some(if neg { -v } else { v })
}

/// A decimal integer with an optional sign, of at most 20 digits (enough for u64::MAX).
fn parse_int(s: &[u8]) -> Option<i128> {
    let (neg, digits) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || digits.len() > 20 {
        return None;
    }
    let mut v: u128 = 0;
    for &b in digits {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v * 10 + u128::from(d);
    }
    let v = v as i128; // < 10^20, fits
    Some(if neg { -v } else { v })
}

fn decode_hex(h: &[u8]) -> Option<Vec<u8>> {
    let nib = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    h.chunks_exact(2)
        .map(|p| Some(nib(p[0])? << 4 | nib(p[1])?))
        .collect()
}

/// Days from 1970-01-01 of a proleptic Gregorian `YYYY-MM-DD` (None if not a real date).
pub fn days_since_epoch(s: &str) -> Option<i32> {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = &s[r];
        t.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| t.parse().ok())?
    };
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&m) || d < 1 || d > month_days[(m - 1) as usize] {
        return None;
    }
    // days from civil (Hinnant's algorithm)
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some((era * 146_097 + doe - 719_468) as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(t: ColumnType, k: &str) -> Result<Vec<u8>, KeyError> {
        let mut out = Vec::new();
        t.encode(k.as_bytes(), false, &mut out).map(|_| out)
    }

    #[test]
    fn plain_encodings() {
        let i32t = ColumnType::new(PhysicalType::Int32, 0);
        assert_eq!(enc(i32t, "42").unwrap(), 42i32.to_le_bytes());
        assert_eq!(enc(i32t, "-1").unwrap(), (-1i32).to_le_bytes());
        assert_eq!(enc(i32t, "4294967295").unwrap(), (-1i32).to_le_bytes());
        assert!(enc(i32t, "4294967296").is_err());
        assert!(enc(i32t, "abc").is_err());
        assert!(enc(i32t, "").is_err());
        let i64t = ColumnType::new(PhysicalType::Int64, 0);
        assert_eq!(enc(i64t, "-7").unwrap(), (-7i64).to_le_bytes());
        assert_eq!(
            enc(i64t, "18446744073709551615").unwrap(),
            (-1i64).to_le_bytes()
        );
        assert!(enc(i64t, "18446744073709551616").is_err());
        assert_eq!(
            enc(ColumnType::new(PhysicalType::Double, 0), "1.5").unwrap(),
            1.5f64.to_le_bytes()
        );
        assert_eq!(
            enc(ColumnType::new(PhysicalType::Float, 0), "1.5").unwrap(),
            1.5f32.to_le_bytes()
        );
        assert_eq!(
            enc(ColumnType::new(PhysicalType::ByteArray, 0), "42").unwrap(),
            b"42"
        );
        let fl = ColumnType::new(PhysicalType::FixedLenByteArray, 3);
        assert_eq!(enc(fl, "abc").unwrap(), b"abc");
        assert!(enc(fl, "ab").is_err());
        let mut out = Vec::new();
        assert!(ColumnType::new(PhysicalType::Int64, 0)
            .encode(&[1, 2, 3, 4, 5, 6, 7, 8], true, &mut out)
            .is_ok());
        assert_eq!(out, [1, 2, 3, 4, 5, 6, 7, 8]);
        assert!(ColumnType::new(PhysicalType::Int64, 0)
            .encode(&[1, 2, 3], true, &mut out)
            .is_err());
    }

    #[test]
    fn dates_and_uuids() {
        assert_eq!(days_since_epoch("1970-01-01"), Some(0));
        assert_eq!(days_since_epoch("2000-03-01"), Some(11_017));
        assert_eq!(days_since_epoch("1969-12-31"), Some(-1));
        assert_eq!(days_since_epoch("2024-02-29"), Some(19_782));
        assert_eq!(days_since_epoch("2023-02-29"), None);
        assert_eq!(days_since_epoch("2023-13-01"), None);
        let date = ColumnType {
            text: TextForm::Date,
            ..ColumnType::new(PhysicalType::Int32, 0)
        };
        assert_eq!(enc(date, "1970-01-02").unwrap(), 1i32.to_le_bytes());
        assert_eq!(enc(date, "5").unwrap(), 5i32.to_le_bytes());
        let uuid = ColumnType {
            text: TextForm::Uuid,
            ..ColumnType::new(PhysicalType::FixedLenByteArray, 16)
        };
        assert_eq!(
            enc(uuid, "00112233-4455-6677-8899-aabbccddeeff").unwrap(),
            (0u8..16).map(|i| i * 0x11).collect::<Vec<_>>()
        );
        assert!(enc(uuid, "00112233-4455-6677-8899-aabbccddeefg").is_err());
    }

    /// The general path: the plain encoding, hashed as the specification says.
    fn hash_via_encode(t: ColumnType, k: &[u8]) -> Option<u64> {
        let mut out = Vec::new();
        t.encode(k, false, &mut out).ok()?;
        Some(xxhash_rust::xxh64::xxh64(&out, 0))
    }

    #[test]
    fn integer_fast_path_edges() {
        for t in [PhysicalType::Int32, PhysicalType::Int64] {
            let ct = ColumnType::new(t, 0);
            for k in [
                "0",
                "-0",
                "+0",
                "7",
                "-7",
                "+7",
                "2147483647",
                "2147483648",
                "-2147483648",
                "-2147483649",
                "4294967295",
                "4294967296",
                "999999999999999999",
                "-999999999999999999",
                "1000000000000000000",
                "9223372036854775807",
                "9223372036854775808",
                "-9223372036854775808",
                "-9223372036854775809",
                "18446744073709551615",
                "18446744073709551616",
                "",
                "-",
                "+",
                "1a",
                " 1",
                "1 ",
                "0x10",
                "1970-01-01",
            ] {
                let mut buf = Vec::new();
                assert_eq!(
                    ct.hash(k.as_bytes(), false, &mut buf).ok(),
                    hash_via_encode(ct, k.as_bytes()),
                    "{t:?} {k:?}"
                );
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

        /// The integer fast path hashes exactly what the plain encoding hashes, and rejects
        /// exactly what it rejects: integers of any size and sign, and arbitrary text.
        #[test]
        fn integer_fast_path_is_the_encoding(
            v in proptest::prelude::any::<i128>(),
            small in proptest::prelude::any::<i64>(),
            text in "[-+0-9a ]{0,22}",
        ) {
            for t in [PhysicalType::Int32, PhysicalType::Int64] {
                let ct = ColumnType::new(t, 0);
                for k in [v.to_string(), small.to_string(), (small >> 32).to_string(), text.clone()] {
                    let mut buf = Vec::new();
                    proptest::prop_assert_eq!(
                        ct.hash(k.as_bytes(), false, &mut buf).ok(),
                        hash_via_encode(ct, k.as_bytes())
                    );
                }
            }
        }
    }
}
