//! Benchmarks live in `benches/`; see docs/BENCHMARKS.md.
