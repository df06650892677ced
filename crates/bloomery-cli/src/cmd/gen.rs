//! `bloomery gen-urls` (hidden): deterministic URL-like lines for demos and benchmarks.
//! Line j is `url(offset + h(seed, j) mod distinct)`; `url` is injective, so disjoint id
//! ranges give disjoint sets of lines.

use std::io::{self, BufWriter, Write};

use anyhow::{bail, Result};

use crate::cli::GenArgs;

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

const WORDS: [&str; 16] = [
    "news", "blog", "docs", "shop", "wiki", "forum", "api", "media", "static", "search", "user",
    "item", "tag", "archive", "help", "about",
];
const TLDS: [&str; 4] = ["com", "org", "net", "io"];

fn url(out: &mut impl Write, id: u64) -> io::Result<()> {
    let h = mix(id);
    writeln!(
        out,
        "https://www.site{}.{}/{}/{}/{}",
        h % 50_000,
        TLDS[(h >> 20) as usize % 4],
        WORDS[(h >> 24) as usize % 16],
        WORDS[(h >> 28) as usize % 16],
        id
    )
}

pub fn run(a: GenArgs) -> Result<u8> {
    let distinct = a.distinct.unwrap_or((a.count / 4 * 3).max(1));
    if distinct == 0 {
        bail!("--distinct must be at least 1");
    }
    let mut out = BufWriter::with_capacity(1 << 16, crate::output::stdout());
    for j in 0..a.count {
        let id = if a.sequential {
            a.offset + j
        } else {
            a.offset + mix(a.seed ^ mix(j)) % distinct
        };
        url(&mut out, id)?;
    }
    out.flush()?;
    Ok(0)
}
