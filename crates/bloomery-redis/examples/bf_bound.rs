//! Prints the space figures `scripts/bench-redis.sh` compares `MEMORY USAGE` against, from the
//! library's math (`bloomery::params`): the information-theoretic lower bound `n·log2(1/ε)`
//! bits and the classic filter's optimal shape for `n` items at rate `ε`.
//!
//! Usage: `cargo run --release -p bloomery-redis --example bf_bound -- <n> <error_rate>`;
//! prints `lower_bound_bits classic_bits classic_k` on one line.

use bloomery::params;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let parsed = (args.len() == 3)
        .then(|| Some((args[1].parse::<u64>().ok()?, args[2].parse::<f64>().ok()?)))
        .flatten();
    let Some((n, p)) = parsed else {
        eprintln!("usage: bf_bound <n> <error_rate>");
        std::process::exit(2);
    };
    match params::classic_shape(n, p) {
        Ok(shape) => println!(
            "{:.0} {} {}",
            params::lower_bound_bits(n, p),
            shape.m,
            shape.k
        ),
        Err(e) => {
            eprintln!("bf_bound: {e}");
            std::process::exit(2);
        }
    }
}
