//! Validation of the sizing inputs (capacity, rate, hash count) and numbers for messages.

use crate::error::{invalid, Result};

/// Validate a capacity `n`.
pub fn check_capacity(n: u64) -> Result<()> {
    if n == 0 {
        return Err(invalid("capacity", "must be at least 1"));
    }
    Ok(())
}

/// Validate a false-positive rate: finite and strictly between 0 and 1.
pub fn check_fpr(fpr: f64) -> Result<()> {
    if !fpr.is_finite() || fpr <= 0.0 || fpr >= 1.0 {
        return Err(invalid(
            "fpr",
            format!("must be strictly between 0 and 1, got {}", show(fpr)),
        ));
    }
    if fpr < 1e-15 {
        return Err(invalid(
            "fpr",
            format!(
                "{} is below 1e-15, beyond what 64-bit hashes can deliver",
                show(fpr)
            ),
        ));
    }
    Ok(())
}

/// A number for messages: plain when it reads well, in scientific notation when it is tiny or
/// huge (`1e-300`, not three hundred digits).
pub(crate) fn show(x: f64) -> String {
    if x != 0.0 && x.is_finite() && (x.abs() < 1e-4 || x.abs() >= 1e9) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// Validate a hash count.
pub fn check_hashes(k: u32, max: u32) -> Result<()> {
    if k == 0 || k > max {
        return Err(invalid("hashes", format!("must be in 1..={max}, got {k}")));
    }
    Ok(())
}
