//! Run-time kinds: [`AnyFilter`](filter::AnyFilter) holds any set structure and
//! [`AnyCounter`](counter::AnyCounter) any counting structure, for callers (the CLI, the Redis
//! module, Python) that load files whose kind they learn from the header.

pub(crate) mod counter;
pub(crate) mod filter;
