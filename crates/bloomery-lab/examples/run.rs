//! Run lab experiments without the CLI:
//! `cargo run --release -p bloomery-lab --example run -- [--list] [all|NAME...] [--out DIR] [--quick] [--seed S]`.

use std::time::Instant;

use bloomery_lab::{find, registry, RunOptions};

fn main() -> anyhow::Result<()> {
    let mut opts = RunOptions::new("lab-out");
    let mut names = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--list" => {
                for e in registry() {
                    println!("{:<24} {} [{}]", e.name, e.summary, e.source);
                }
                return Ok(());
            }
            "--quick" => opts.quick = true,
            "--out" => {
                opts.out_dir = args
                    .next()
                    .ok_or_else(|| anyhow::anyhow!("--out DIR"))?
                    .into()
            }
            "--seed" => {
                opts.seed = args
                    .next()
                    .ok_or_else(|| anyhow::anyhow!("--seed S"))?
                    .parse()?
            }
            _ => names.push(a),
        }
    }
    let chosen: Vec<_> = if names.is_empty() || names.iter().any(|n| n == "all") {
        registry().iter().collect()
    } else {
        names
            .iter()
            .map(|n| find(n).ok_or_else(|| anyhow::anyhow!("no experiment named {n:?}")))
            .collect::<anyhow::Result<_>>()?
    };
    for e in chosen {
        let t = Instant::now();
        let report = (e.run)(&opts)?;
        eprintln!("{}: {:.1}s", e.name, t.elapsed().as_secs_f64());
        for f in &report.files {
            println!("{}", f.display());
        }
    }
    Ok(())
}
