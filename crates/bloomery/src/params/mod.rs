//! The math of the family, in one place: false-positive rates (exact and asymptotic, classic,
//! partitioned, blocked, split-block), optimal k, sizing for (n, ε), the lower bound, size and
//! similarity estimates, the counting-filter overflow bound and the entropy of a filter.
//!
//! References: Salman §2 (the standard filter and its rates), Broder & Mitzenmacher §2.1 (exact
//! `f' = (1-(1-1/m)^{kn})^k`, asymptotic `f = (1-e^{-kn/m})^k`, the partitioned variant),
//! §2.2 (the lower bound `n·log2(1/ε)`), §2.4 (union, intersection by the inner product),
//! §2.5 (counter overflow), §2.6 (compressed filters, `m·H(p)`). The blocked model is the
//! Poisson/binomial mixture of Putze, Sanders & Singler, "Cache-, Hash- and Space-Efficient
//! Bloom Filters" (2007), with the in-block collisions of a key's own probes counted exactly.
//!
//! All functions are pure and total: they return `f64` rates (possibly 0 or 1) and never panic.
//! The sizing functions return typed errors for invalid input.
//!
//! One file per concern, everything re-exported here: the validation of inputs, the classic and
//! partitioned filters, the blocked models, estimates from the bits, the counting family,
//! compressed filters, the multi-layer filter and age-partitioned filters; tests in `tests.rs`.

mod blocked;
mod classic;
mod compressed;
mod counting;
mod estimates;
mod mlbf;
#[cfg(test)]
mod tests;
mod validate;
mod window;

pub use blocked::{
    blocked_best_k, blocked_blocks_for_k, blocked_shape, fpr_blocked, fpr_salted256, fpr_sectors,
    fpr_split_block, salted256_lines, sectors_blocks, split_block_blocks, warm_blocked_sizing,
    BlockedModel, BlockedShape, BLOCKED_MAX_K, SATURATED_LOAD,
};
pub use classic::{
    bits_asymptotic, classic_shape, foldable_bits, foldable_blocks, fpr_asymptotic, fpr_exact,
    fpr_from_fill, fpr_partitioned, lower_bound_bits, optimal_k, partitioned_shape,
    ratio_to_lower_bound, Shape,
};
pub use compressed::{compressed_bits, compressed_shape, entropy, CompressedShape};
pub use counting::{
    cbf_fpr_for_memory, count_min_bounds, count_min_dimensions, counter_bits_for,
    counter_overflow_bound, counter_tail, dleft_fpr, dleft_shape, ibf_bits_set,
    ibf_collision_probability, ibf_count_estimate, ibf_fpr, ibf_fpr_bound, max_count_for_skew,
    scbf_expected_matched, scbf_group_fpr, scbf_mle, scbf_pairs, DLeftShape, Skew, SCBF_MAX_GROUPS,
};
pub use estimates::{estimate_intersection, estimate_items};
pub use mlbf::{fpr_mlbf, mlbf_layer_fpr, mlbf_near_miss_fpr, mlbf_near_miss_shape};
pub(crate) use validate::show;
pub use validate::{check_capacity, check_fpr, check_hashes};
pub use window::{
    apbf_fpr, apbf_fpr_worst, apbf_run_probability, apbf_shape, apbf_slice_inserts,
    apbf_time_design_l, apbf_time_shape, ApbfShape, APBF_L_PER_K, APBF_MAX_K, APBF_MAX_L,
};
