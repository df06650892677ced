//! Reading the RedisBloom fixtures of `tests/fixtures/redisbloom/` (see its README.md): the
//! key generator, the encoded index lists and the recorded answers. Shared by the library's,
//! the CLI's and the Redis module's tests (`#[path]`-included).
#![allow(dead_code)]

use std::path::PathBuf;

use serde_json::Value;

/// The fixtures directory.
pub fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../bloomery/tests/fixtures/redisbloom")
        .canonicalize()
        .expect("the RedisBloom fixtures directory")
}

/// Every fixture's name.
pub const NAMES: [&str; 10] = [
    "bf-scaling",
    "bf-default",
    "bf-nonscaling",
    "bf-legacy-pow2",
    "bf-legacy-noround",
    "bf-force64-pow2",
    "cf-main",
    "cf-exp2",
    "cf-noexp",
    "cf-empty",
];

/// A fixture: its chunk file's path and its recorded answers.
pub struct Fixture {
    pub name: &'static str,
    pub chunks: PathBuf,
    pub json: Value,
}

pub fn load(name: &'static str) -> Fixture {
    let json = std::fs::read(dir().join(format!("{name}.json"))).expect("fixture json");
    Fixture {
        name,
        chunks: dir().join(format!("{name}.rbchunks")),
        json: serde_json::from_slice(&json).expect("fixture json parses"),
    }
}

impl Fixture {
    pub fn is_bloom(&self) -> bool {
        self.json["type"] == "bf"
    }

    pub fn key(&self) -> &str {
        self.json["key"].as_str().unwrap()
    }

    /// The generated keys a `{"prefix", "seed", "count"}` object describes.
    pub fn keys(&self, path: &[&str]) -> Vec<Vec<u8>> {
        let mut v = &self.json;
        for p in path {
            v = &v[*p];
        }
        keys_of(v)
    }

    /// An encoded index list (`{"count", "leb128_gaps_b64"}`).
    pub fn indices(&self, path: &[&str]) -> Vec<usize> {
        let mut v = &self.json;
        for p in path {
            v = &v[*p];
        }
        indices_of(v)
    }
}

pub fn keys_of(v: &Value) -> Vec<Vec<u8>> {
    // every fixture's absent keys are the same 100 000: generate them once
    static ABSENT: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    if v["prefix"] == "a" && v["seed"] == 2 && v["count"] == 100_000 {
        return ABSENT.get_or_init(|| gen_keys(b"a", 2, 100_000)).clone();
    }
    gen_keys(
        v["prefix"].as_str().unwrap().as_bytes(),
        v["seed"].as_u64().unwrap(),
        v["count"].as_u64().unwrap() as usize,
    )
}

fn splitmix(s: &mut u64) -> u64 {
    *s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *s;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The fixtures' keys: `prefix` then 4 to 24 pseudo-random bytes (SplitMix64 from `seed`: one
/// output picks the length, then little-endian outputs give the bytes).
pub fn gen_keys(prefix: &[u8], seed: u64, n: usize) -> Vec<Vec<u8>> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            let len = 4 + (splitmix(&mut s) % 21) as usize;
            let mut body = Vec::with_capacity(len + 8);
            while body.len() < len {
                body.extend_from_slice(&splitmix(&mut s).to_le_bytes());
            }
            let mut k = prefix.to_vec();
            k.extend_from_slice(&body[..len]);
            k
        })
        .collect()
}

fn leb128(b: &[u8]) -> Vec<u64> {
    let mut out = Vec::new();
    let (mut v, mut shift) = (0u64, 0);
    for &x in b {
        v |= u64::from(x & 0x7f) << shift;
        shift += 7;
        if x & 0x80 == 0 {
            out.push(v);
            v = 0;
            shift = 0;
        }
    }
    out
}

pub fn indices_of(v: &Value) -> Vec<usize> {
    let gaps = leb128(&base64(v["leb128_gaps_b64"].as_str().unwrap()));
    let mut at = 0u64;
    let out: Vec<usize> = gaps
        .into_iter()
        .map(|g| {
            at += g;
            at as usize
        })
        .collect();
    assert_eq!(out.len() as u64, v["count"].as_u64().unwrap());
    out
}

/// (index, count) pairs of a CF.COUNT record.
pub fn counts_of(v: &Value) -> Vec<(usize, u64)> {
    let counts = leb128(&base64(v["counts_leb128_b64"].as_str().unwrap()));
    indices_of(v).into_iter().zip(counts).collect()
}

pub fn base64(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("bad base64"),
    };
    let b: Vec<u8> = s.bytes().filter(|&c| c != b'=').collect();
    let mut out = Vec::with_capacity(b.len() * 3 / 4);
    for q in b.chunks(4) {
        let mut acc = 0u32;
        for (i, &c) in q.iter().enumerate() {
            acc |= u32::from(val(c)) << (18 - 6 * i);
        }
        out.extend_from_slice(&acc.to_be_bytes()[1..q.len()]);
    }
    out
}

pub fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

pub fn fnv1a64<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> String {
    let mut h = 0xCBF2_9CE4_8422_2325u64;
    for p in parts {
        for &b in p {
            h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01B3);
        }
    }
    format!("{h:016x}")
}

/// Indices (ascending) of the keys whose answer differs from `usual`.
pub fn odd_ones(keys: &[Vec<u8>], usual: bool, f: impl Fn(&[u8]) -> bool) -> Vec<usize> {
    keys.iter()
        .enumerate()
        .filter(|(_, k)| f(k) != usual)
        .map(|(i, _)| i)
        .collect()
}
