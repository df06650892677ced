//! Which CPU-specific code paths the library takes.
//!
//! Some hot paths have a version for an x86-64 extension (BMI2 for the blocked filter's
//! positions, AVX2 for its sectors layout and for the blocked counting filter's 4-bit line),
//! chosen at run time when the CPU has it. Every such version gives exactly the results of
//! the portable code (each has a test comparing the two), so the choice only changes speed.
//!
//! Setting the environment variable `BLOOMERY_NO_SIMD` (to anything but empty or `0`) before
//! the first filter operation makes the process take the portable paths: to compare speeds on
//! one machine (`line_probe lib` in the benches) or to run the test suite over the portable
//! code on a CPU that has the extensions (`.ci/run` does). `BLOOMERY_NO_AVX512` likewise turns
//! off only the AVX-512 paths (the 512-bit salted layout's single-key kernels), so that a CPU
//! with AVX-512 can run and test the AVX2 ones.

use std::sync::atomic::{AtomicU8, Ordering};

const KNOWN: u8 = 1;
const AVX2: u8 = 2;
const BMI2: u8 = 4;
const POPCNT: u8 = 8;
const AVX512: u8 = 16;

/// [`KNOWN`] once the CPU and the environment were read, with the usable extensions.
static STATE: AtomicU8 = AtomicU8::new(0);

#[inline(always)]
fn state() -> u8 {
    let s = STATE.load(Ordering::Relaxed);
    if s != 0 {
        return s;
    }
    detect()
}

#[cold]
#[inline(never)]
fn detect() -> u8 {
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty() && v != "0");
    let off = set("BLOOMERY_NO_SIMD");
    let mut s = KNOWN;
    #[cfg(target_arch = "x86_64")]
    if !off {
        if std::arch::is_x86_feature_detected!("avx2") {
            s |= AVX2;
        }
        if std::arch::is_x86_feature_detected!("bmi2")
            && std::arch::is_x86_feature_detected!("bmi1")
        {
            s |= BMI2;
        }
        if std::arch::is_x86_feature_detected!("popcnt") {
            s |= POPCNT;
        }
        if s & AVX2 != 0
            && std::arch::is_x86_feature_detected!("avx512f")
            && !set("BLOOMERY_NO_AVX512")
        {
            s |= AVX512;
        }
    }
    let _ = (off, set);
    STATE.store(s, Ordering::Relaxed);
    s
}

/// True when the AVX2 paths may run: the CPU has AVX2 and `BLOOMERY_NO_SIMD` is not set.
#[inline(always)]
pub(crate) fn avx2() -> bool {
    state() & AVX2 != 0
}

/// True when the AVX-512 paths may run: the CPU has AVX-512F (and AVX2), and neither
/// `BLOOMERY_NO_SIMD` nor `BLOOMERY_NO_AVX512` is set.
#[inline(always)]
pub(crate) fn avx512() -> bool {
    state() & AVX512 != 0
}

/// True when the BMI1/BMI2 paths may run: the CPU has both and `BLOOMERY_NO_SIMD` is not set.
#[inline(always)]
pub(crate) fn bmi2() -> bool {
    state() & BMI2 != 0
}

/// True when the POPCNT instruction may be used (bit counts of the fill passes): the CPU has
/// it and `BLOOMERY_NO_SIMD` is not set.
#[inline(always)]
pub(crate) fn popcnt() -> bool {
    state() & POPCNT != 0
}

/// The extensions the library's code paths use in this process, for reports (`"avx2+bmi2"`,
/// `"portable"`, …).
pub fn paths() -> &'static str {
    match (avx2(), bmi2()) {
        (true, true) if avx512() => "avx512+avx2+bmi2",
        (true, true) => "avx2+bmi2",
        (true, false) => "avx2",
        (false, true) => "bmi2",
        (false, false) => "portable",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The switch follows the environment: `.ci/run` runs the library's tests both ways.
    #[test]
    fn the_environment_switches_the_paths_off() {
        let off = std::env::var_os("BLOOMERY_NO_SIMD").is_some_and(|v| !v.is_empty() && v != "0");
        if off {
            assert_eq!(paths(), "portable");
            assert!(!avx2() && !bmi2() && !avx512());
            return;
        }
        #[cfg(target_arch = "x86_64")]
        {
            assert_eq!(avx2(), std::arch::is_x86_feature_detected!("avx2"));
            let no512 =
                std::env::var_os("BLOOMERY_NO_AVX512").is_some_and(|v| !v.is_empty() && v != "0");
            assert_eq!(
                avx512(),
                avx2() && std::arch::is_x86_feature_detected!("avx512f") && !no512
            );
            assert_eq!(
                bmi2(),
                std::arch::is_x86_feature_detected!("bmi1")
                    && std::arch::is_x86_feature_detected!("bmi2")
            );
        }
        #[cfg(not(target_arch = "x86_64"))]
        assert_eq!(paths(), "portable");
    }
}
