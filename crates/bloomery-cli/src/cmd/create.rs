//! `bloomery create`.

use anyhow::{bail, Context, Result};
use bloomery::file::SaveOptions;
use bloomery::kinds::KindOptions;
use bloomery::{AnyCounter, AnyFilter, KeyHasher, Kind, Spec};

use crate::cli::{CreateArgs, WindowLayoutArg};
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
    match AnyFilter::try_from_spec(&spec(kind, s)?) {
        // the multi-layer filter's shape errors name the flags (Cen, Xu & Sun §V: --bits
        // 16829152 --hashes 3 is the shape of each layer)
        Err(e) if kind == Kind::Mlbf => Err(flag_names(e)),
        r => Ok(r?),
    }
}

/// The spec of a set kind's filter, validating every option.
fn spec(kind: Kind, s: &Sizing) -> Result<Spec> {
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
    if kind == Kind::SplitBlock && (s.seed.is_some() || s.keyed) {
        // A seeded or keyed split-block filter has Parquet's layout but not its bits: Parquet
        // readers would answer "absent" for values it holds. Refused rather than made quietly.
        bail!(
            "--seed and --keyed do not apply to --kind split-block: its bits must be Parquet's \
             (xxHash64, seed 0) for Parquet readers to use it; for a seeded or keyed filter \
             with the same speed use --kind blocked"
        );
    }
    if kind != Kind::Mlbf && s.layers.is_some() {
        bail!("--layers applies to --kind mlbf only");
    }
    Ok(Spec {
        kind,
        sizing: bloomery::Sizing {
            capacity: s.capacity,
            fpr: s.fpr,
            bits: s.bits,
            hashes: s.hashes,
            hasher: hasher(s.seed, s.keyed)?,
            max_bytes: None,
        },
        options: KindOptions {
            growth: s.growth,
            tightening: s.tightening,
            scaling: s.no_scaling.then_some(false),
            layers: s.layers,
            ..KindOptions::default()
        },
    })
}

/// `--keyed` (a secret seed) or `--seed`; `None`: the kind's default hasher.
fn hasher(seed: Option<u64>, keyed: bool) -> Result<Option<KeyHasher>> {
    Ok(if keyed {
        Some(KeyHasher::keyed()?)
    } else {
        seed.map(KeyHasher::with_seed)
    })
}

/// `--kind split-block --parquet-sizing`: the bytes Parquet writers give -n values at -p.
fn parquet_sized(s: &Sizing) -> Result<AnyFilter> {
    let (Some(n), Some(p)) = (s.capacity, s.fpr) else {
        bail!("--parquet-sizing needs -n/--capacity and -p/--fpr");
    };
    if s.seed.is_some() || s.keyed || s.hashes.is_some() {
        bail!("--parquet-sizing keeps Parquet's hashing: no --seed, --keyed or --hashes");
    }
    bloomery::params::check_capacity(n)?;
    bloomery::params::check_fpr(p)?;
    Ok(AnyFilter::SplitBlock(
        bloomery::SplitBlockBloomFilter::try_with_parquet_sizing(n, p)?,
    ))
}

pub fn run(a: CreateArgs) -> Result<u8> {
    if a.file.exists() && !a.force {
        bail!(
            "`{}` already exists (use --force to overwrite it)",
            a.file.display()
        );
    }
    let mut kind = a.kind.kind();
    if let Some(layout) = a.layout {
        if kind != Kind::Window {
            bail!("--layout applies to --kind window only");
        }
        if layout == WindowLayoutArg::Blocked {
            kind = Kind::WindowBlocked;
        }
    }
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
    if a.occurrences.is_some() {
        bail!(
            "--occurrences applies to --kind ibf and scbf only (a set kind's fill depends on \
             the distinct keys, -n, alone)"
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
    // a big filter: written with a progress bar, at about the speed of writing the file, and
    // never held in memory (a filter larger than RAM is made as any other)
    let i = if a.parquet_sizing {
        let f = parquet_sized(&sizing)?;
        write(&a.file, bloomery::file::Encode::encoded_len(&f), |o| {
            f.save_with(&a.file, o)
        })?;
        f.info()
    } else {
        let f = match AnyFilter::empty_file(&spec(kind, &sizing)?) {
            // more than the address space can lend: more than any disk holds, too
            Err(bloomery::Error::AllocationFailed { bytes }) => {
                room_for(&a.file, bytes)?;
                Err(bloomery::Error::AllocationFailed { bytes }.into())
            }
            Err(e) if kind == Kind::Mlbf => Err(flag_names(e)),
            r => Ok(r?),
        }?;
        room_for(&a.file, f.encoded_len())?;
        write(&a.file, f.encoded_len(), |o| f.save_with(&a.file, o))?;
        f.info()
    };
    let layers = if i.layers > 0 {
        format!(" ({} layers + XOR layer)", i.layers)
    } else {
        String::new()
    };
    let target = if kind == Kind::Mlbf && i.target_fpr > 0.0 {
        format!(
            "{} for a near miss (a URL with one segment never seen at its layer); about {} for \
             one recombining segments seen at their layers",
            rate(i.target_fpr),
            rate(i.target_fpr.sqrt())
        )
    } else {
        crate::num::target(i.target_fpr)
    };
    note(&format!(
        "created {}: {} filter{layers}, {} bits ({}), k={}, capacity {}, target fpr {target}",
        a.file.display(),
        i.kind,
        group(i.bits),
        bytes(i.bytes),
        i.hashes,
        if i.capacity > 0 {
            group(i.capacity)
        } else {
            "none".into()
        },
    ));
    Ok(0)
}

/// A new filter is written, never held in memory: the machine's RAM does not bound it, but
/// `--max-memory` (when given: the largest filter this user means to load) and the free space
/// of the disk that will hold it do (a typo in -n must not fill the disk).
fn room_for(path: &std::path::Path, len: u64) -> Result<()> {
    if crate::memory_limit_from_flag() {
        let limit = bloomery::tuning::max_bytes();
        if len > limit {
            return Err(bloomery::Error::TooLarge {
                requested: len,
                limit,
            }
            .into());
        }
    }
    #[cfg(unix)]
    {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => std::path::Path::new("."),
        };
        if let Ok(st) = rustix::fs::statvfs(dir) {
            let free = st.f_bavail.saturating_mul(st.f_frsize);
            if len > free {
                bail!(
                    "this needs {} ({} bytes) on disk, and the disk holding `{}` has {} free; \
                     ask for a smaller capacity or a larger error rate, or write it elsewhere",
                    bytes(len),
                    group(len),
                    dir.display(),
                    bytes(free)
                );
            }
        }
    }
    Ok(())
}

/// Write a new file of `len` bytes with `save`, showing a progress bar on a terminal.
fn write(
    path: &std::path::Path,
    len: u64,
    save: impl FnOnce(SaveOptions<'_>) -> bloomery::Result<()>,
) -> Result<()> {
    let mut bar = Progress::bytes("writing", len);
    save(SaveOptions::new().progress(&mut |n| bar.set(n)))
        .with_context(|| format!("cannot write `{}`", path.display()))
}

/// `create` of a counting kind: its own options ([`KindOptions`]).
fn create_counter(a: &CreateArgs, kind: Kind) -> Result<u8> {
    if a.layers.is_some() {
        bail!("--layers applies to --kind mlbf only");
    }
    if a.growth.is_some() || a.tightening.is_some() || a.no_scaling {
        bail!("--growth, --tightening and --no-scaling apply to --kind scalable only");
    }
    let spec = Spec {
        kind,
        sizing: bloomery::Sizing {
            capacity: a.capacity,
            fpr: a.fpr,
            bits: a.bits,
            hashes: a.hashes,
            hasher: Some(hasher(a.seed, a.keyed)?.unwrap_or_default()),
            max_bytes: None,
        },
        options: KindOptions {
            occurrences: a.occurrences,
            counter_bits: a.counter_bits,
            width: a.width,
            depth: a.depth,
            epsilon: a.epsilon,
            delta: a.delta,
            conservative: a.conservative,
            method: a.method.map(|m| m.method()),
            repeat_cap: a.repeat_cap,
            groups: a.groups,
            ..KindOptions::default()
        },
    };
    let f = AnyCounter::try_from_spec(&spec).map_err(flag_names)?;
    let mut bar = Progress::bytes("writing", bloomery::file::Encode::encoded_len(&f));
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
            "occurrences" => "--occurrences",
            "groups" => "--groups",
            "layers" => "--layers",
            "dimensions" => "--width/--depth or --epsilon/--delta",
            _ => return e.into(),
        };
        return anyhow::anyhow!("invalid {flag}: {reason}");
    }
    e.into()
}
