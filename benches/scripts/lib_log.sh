#!/usr/bin/env bash
# Watch how the host's cache share moves the 1M ratios: every INTERVAL seconds for MINUTES
# minutes, one `line_probe lib N 5` (classic filter against the blocked counting filter at the
# same k, with the dependent-load latency at both filters' sizes before and after), one line
# per run with the time and the load average, appended to LOG.
# Usage: benches/scripts/lib_log.sh [LOG] [MINUTES] [INTERVAL] [N]
#   (default /tmp/lib_log.txt, 60 minutes, 60 s, 1000000 keys)
set -euo pipefail
cd "$(dirname "$0")/../.."
log=${1:-/tmp/lib_log.txt}
minutes=${2:-60}
interval=${3:-60}
n=${4:-1000000}
cargo build --release -q -p bloomery-benches --bin line_probe
bin=target/release/line_probe
run() { if command -v chrt >/dev/null && chrt -f 50 true 2>/dev/null; then chrt -f 50 "$@"; else "$@"; fi; }
end=$(($(date +%s) + 60 * minutes))
while [ "$(date +%s)" -lt "$end" ]; do
  t=$(date -u +%H:%M:%S)
  load=$(cut -d' ' -f1 /proc/loadavg)
  echo "$t load $load | $(run "$bin" lib "$n" 5 | sed -n '1p;$p' | paste -sd' ' -)" >>"$log"
  sleep "$interval"
done
