//! Output helpers: aligned key/value tables, JSON, stderr notes and warnings, progress bars
//! and colour only when stderr is a terminal.

use std::io::{self, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

static QUIET: AtomicBool = AtomicBool::new(false);

pub fn set_quiet(q: bool) {
    QUIET.store(q, Ordering::Relaxed);
}

/// True with `--quiet` (summaries and warnings are not printed, so need not be computed).
pub fn is_quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

fn stderr_tty() -> bool {
    io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

fn paint(code: &str, s: &str) -> String {
    if stderr_tty() {
        format!("\x1b[{code}m{s}\x1b[0m")
    } else {
        s.to_string()
    }
}

/// The one line printed for an error.
pub fn error(msg: &str) {
    let _ = writeln!(io::stderr(), "bloomery: {} {msg}", paint("1;31", "error:"));
}

/// A warning on stderr (unless --quiet).
pub fn warn(msg: &str) {
    if !QUIET.load(Ordering::Relaxed) {
        let _ = writeln!(
            io::stderr(),
            "bloomery: {} {msg}",
            paint("1;33", "warning:")
        );
    }
}

/// A summary line on stderr (unless --quiet).
pub fn note(msg: &str) {
    if !QUIET.load(Ordering::Relaxed) {
        let _ = writeln!(io::stderr(), "bloomery: {msg}");
    }
}

/// Write rows of (label, value) with the values aligned.
pub fn table(out: &mut impl Write, rows: &[(&str, String)]) -> io::Result<()> {
    let w = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    for (k, v) in rows {
        writeln!(out, "{k:<w$}  {v}")?;
    }
    Ok(())
}

/// Standard output, locked, whose write errors say it was standard output (a full disk
/// behind `> file` or `/dev/full` would otherwise read as a failure of the filter file). The
/// error kind is kept, so a closed pipe still ends quietly.
pub fn stdout() -> Stdout {
    Stdout(io::stdout().lock())
}

/// See [`stdout`].
pub struct Stdout(io::StdoutLock<'static>);

fn on_stdout(e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("cannot write to standard output: {e}"))
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf).map_err(on_stdout)
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.0.write_all(buf).map_err(on_stdout)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush().map_err(on_stdout)
    }
}

/// Pretty JSON on stdout.
pub fn json(v: &serde_json::Value) -> anyhow::Result<()> {
    let mut out = stdout();
    serde_json::to_writer_pretty(&mut out, v)?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}

/// Passes over at least this many bytes show a progress bar (on a terminal).
pub const BIG_PASS: u64 = 64 << 20;

/// A spinner counting lines, or a bar of bytes, shown only on a terminal.
pub struct Progress(Option<ProgressBar>);

impl Progress {
    pub fn new(what: &'static str) -> Self {
        if !io::stderr().is_terminal() || QUIET.load(Ordering::Relaxed) {
            return Self(None);
        }
        let pb = ProgressBar::new_spinner();
        pb.set_style(
            ProgressStyle::with_template("{spinner} {human_pos} {msg} ({per_sec}, {elapsed})")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        pb.set_message(what);
        pb.enable_steady_tick(Duration::from_millis(200));
        Self(Some(pb))
    }

    /// A bar with percent and time left for a pass over `total` bytes, shown only on a
    /// terminal and for passes of at least [`BIG_PASS`] bytes (a small file's pass is over
    /// before a bar would help).
    pub fn bytes(what: &str, total: u64) -> Self {
        if total < BIG_PASS || !io::stderr().is_terminal() || QUIET.load(Ordering::Relaxed) {
            return Self(None);
        }
        let pb = ProgressBar::new(total);
        pb.set_style(
            ProgressStyle::with_template(
                "{msg:>12} [{bar:30}] {percent:>3}% {binary_bytes}/{binary_total_bytes} \
                 ({binary_bytes_per_sec}, {eta} left)",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        pb.set_message(what.to_string());
        pb.enable_steady_tick(Duration::from_millis(200));
        Self(Some(pb))
    }

    #[inline]
    pub fn set(&mut self, n: u64) {
        if let Some(pb) = &self.0 {
            pb.set_position(n);
        }
    }

    /// Advance by `n` (from any thread).
    #[inline]
    pub fn inc(&self, n: u64) {
        if let Some(pb) = &self.0 {
            pb.inc(n);
        }
    }

    pub fn finish(&mut self) {
        if let Some(pb) = self.0.take() {
            pb.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
