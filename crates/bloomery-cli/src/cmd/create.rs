//! `bloomery create`.

use anyhow::{bail, Context, Result};
use bloomery::{AnyCounter, AnyFilter, CounterOptions, KeyHasher, Kind, SaveOptions};

use crate::cli::CreateArgs;
use crate::num::{bytes, group, rate};
use crate::output::{note, Progress};

/// Sizing options shared by `create` and `dedup`.
#[derive(Debug, Default)]
pub struct Sizing {
    pub capacity: Option<u64>,
    pub fpr: Option<f64>,
    pub seed: Option<u64>,
    pub keyed: bool,
    pub bits: Option<u64>,
    pub hashes: Option<u32>,
    pub growth: Option<u32>,
    pub tightening: Option<f64>,
    pub no_scaling: bool,
    /// Mlbf only: URL layers.
    pub layers: Option<u32>,
}

/// Build an empty filter, validating every option.
pub fn build(kind: Kind, s: &Sizing) -> Result<AnyFilter> {
    if kind != Kind::Scalable && (s.growth.is_some() || s.tightening.is_some() || s.no_scaling) {
        bail!("--growth, --tightening and --no-scaling apply to --kind scalable only");
    }
    if let Some(n) = s.capacity {
        bloomery::params::check_capacity(n)?;
    }
    if let Some(p) = s.fpr {
        bloomery::params::check_fpr(p)?;
    }
    if s.bits.is_none() && (s.capacity.is_none() || s.fpr.is_none()) {
        bail!("give -n/--capacity and -p/--fpr (or an exact shape with --bits and --hashes)");
    }
    if kind == Kind::Mlbf {
        return build_mlbf(s);
    }
    if s.layers.is_some() {
        bail!("--layers applies to --kind mlbf only");
    }
    let mut b = AnyFilter::builder(kind);
    if let Some(n) = s.capacity {
        b = b.capacity(n);
    }
    if let Some(p) = s.fpr {
        b = b.fpr(p);
    }
    if let Some(m) = s.bits {
        b = b.bits(m);
    }
    if let Some(k) = s.hashes {
        b = b.hashes(k);
    }
    if let Some(g) = s.growth {
        b = b.growth(g);
    }
    if let Some(r) = s.tightening {
        b = b.tightening(r);
    }
    if s.no_scaling {
        b = b.scaling(false);
    }
    if let Some(seed) = s.seed {
        b = b.seed(seed);
    }
    if s.keyed {
        b = b.keyed()?;
    }
    Ok(b.try_build()?)
}

/// The multi-layer URL filter: -n/-p size the whole filter by eq. 4 (each layer at p^(1/L)),
/// --bits/--hashes are the shape of each layer (001 §V: --bits 16829152 --hashes 3).
fn build_mlbf(s: &Sizing) -> Result<AnyFilter> {
    use bloomery::{KeyHasher, MultiLayerBloomFilter};
    let mut b = MultiLayerBloomFilter::builder()
        .layers(
            s.layers
                .unwrap_or(bloomery::MultiLayerBloomFilter::PAPER_LAYERS),
        )
        .max_bytes(bloomery::max_bytes());
    if let Some(n) = s.capacity {
        b = b.capacity(n);
    }
    if let Some(p) = s.fpr {
        b = b.fpr(p);
    }
    if let Some(m) = s.bits {
        b = b.bits(m);
    }
    if let Some(k) = s.hashes {
        b = b.hashes(k);
    }
    if let Some(seed) = s.seed {
        b = b.hasher(KeyHasher::with_seed(seed));
    }
    if s.keyed {
        b = b.hasher(KeyHasher::keyed()?);
    }
    let f = b.try_build().map_err(|e| match e {
        bloomery::Error::InvalidParameter { name, reason } => {
            let flag = match name {
                "layers" => "--layers",
                "capacity" => "-n/--capacity",
                "fpr" => "-p/--fpr",
                "bits" => "--bits",
                "hashes" => "--hashes",
                other => other,
            };
            anyhow::anyhow!("invalid {flag}: {reason}")
        }
        other => other.into(),
    })?;
    Ok(AnyFilter::Mlbf(f))
}

pub fn run(a: CreateArgs) -> Result<u8> {
    if a.file.exists() && !a.force {
        bail!(
            "`{}` already exists (use --force to overwrite it)",
            a.file.display()
        );
    }
    let kind = a.kind.kind();
    if kind.is_counter() {
        return create_counter(&a, kind);
    }
    if a.counter_bits.is_some()
        || a.width.is_some()
        || a.depth.is_some()
        || a.epsilon.is_some()
        || a.delta.is_some()
        || a.conservative
        || a.method.is_some()
        || a.repeat_cap.is_some()
        || a.groups.is_some()
    {
        bail!(
            "--counter-bits, --width, --depth, --epsilon, --delta, --conservative, --method, \
             --repeat-cap and --groups apply to the counting kinds only"
        );
    }
    let sizing = Sizing {
        capacity: a.capacity,
        fpr: a.fpr,
        seed: a.seed,
        keyed: a.keyed,
        bits: a.bits,
        hashes: a.hashes,
        growth: a.growth,
        tightening: a.tightening,
        no_scaling: a.no_scaling,
        layers: a.layers,
    };
    let f = build(kind, &sizing)?;
    // a big filter: written with a progress bar, at about the speed of writing the file
    let mut bar = Progress::bytes("writing", bloomery::Encode::encoded_len(&f));
    f.save_with(&a.file, SaveOptions::new().progress(&mut |n| bar.set(n)))
        .with_context(|| format!("cannot write `{}`", a.file.display()))?;
    drop(bar);
    let i = f.info();
    let layers = if i.layers > 0 {
        format!(" ({} layers + XOR layer)", i.layers)
    } else {
        String::new()
    };
    note(&format!(
        "created {}: {} filter{layers}, {} bits ({}), k={}, capacity {}, target fpr {}",
        a.file.display(),
        i.kind,
        group(i.bits),
        bytes(i.bytes),
        i.hashes,
        group(i.capacity),
        rate(i.target_fpr)
    ));
    Ok(0)
}

/// `create` of a counting kind: its own options ([`CounterOptions`]).
fn create_counter(a: &CreateArgs, kind: Kind) -> Result<u8> {
    if a.layers.is_some() {
        bail!("--layers applies to --kind mlbf only");
    }
    if a.growth.is_some() || a.tightening.is_some() || a.no_scaling {
        bail!("--growth, --tightening and --no-scaling apply to --kind scalable only");
    }
    let hasher = if a.keyed {
        KeyHasher::keyed()?
    } else if let Some(s) = a.seed {
        KeyHasher::with_seed(s)
    } else {
        KeyHasher::new()
    };
    let o = CounterOptions {
        capacity: a.capacity,
        fpr: a.fpr,
        bits: a.bits,
        hashes: a.hashes,
        counter_bits: a.counter_bits,
        width: a.width,
        depth: a.depth,
        epsilon: a.epsilon,
        delta: a.delta,
        conservative: a.conservative,
        method: a.method.map(|m| m.method()),
        repeat_cap: a.repeat_cap,
        groups: a.groups,
        hasher,
        ..CounterOptions::default()
    };
    let f = AnyCounter::build(kind, &o).map_err(flag_names)?;
    let mut bar = Progress::bytes("writing", bloomery::Encode::encoded_len(&f));
    f.save_with(&a.file, SaveOptions::new().progress(&mut |n| bar.set(n)))
        .with_context(|| format!("cannot write `{}`", a.file.display()))?;
    drop(bar);
    let i = f.info();
    note(&format!(
        "created {}: {} structure, {}",
        a.file.display(),
        i.kind,
        bytes(i.bytes)
    ));
    Ok(0)
}

/// The library's parameter names as the CLI spells its flags.
fn flag_names(e: bloomery::Error) -> anyhow::Error {
    if let bloomery::Error::InvalidParameter { name, reason } = &e {
        let flag = match *name {
            "capacity" => "-n/--capacity",
            "fpr" => "-p/--fpr",
            "counters" | "bits" => "--bits",
            "hashes" => "--hashes",
            "counter_bits" | "counter_width" => "--counter-bits",
            "width" => "--width",
            "depth" => "--depth",
            "epsilon" => "--epsilon",
            "delta" => "--delta",
            "conservative" => "--conservative",
            "method" => "--method",
            "repeat_cap" => "--repeat-cap",
            "groups" => "--groups",
            "dimensions" => "--width/--depth or --epsilon/--delta",
            _ => return e.into(),
        };
        return anyhow::anyhow!("invalid {flag}: {reason}");
    }
    e.into()
}
