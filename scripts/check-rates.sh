#!/usr/bin/env bash
# The rate `bloomery info` prints at capacity against the rate measured, for every kind sized
# by -n/-p, on real data: English words (Debian wamerican-insane) for the set and counting
# kinds, documentation URLs (Debian rust-doc and python3.11-doc links) and npm repository URLs
# for the multi-layer URL filter. Fails when a printed rate is off by more than 1.25x.
#
#   bash scripts/check-rates.sh [N] [P]        (default N = 100000 keys, P = 0.01)
#   BLOOMERY_BIN=path/to/bloomery bash scripts/check-rates.sh   (skip the release build)
#
# Data: scripts/fetch-data.sh words urls [npm] (npm is used when present). Members are every
# third word in the file's (alphabetical) order, the queries the 400,000 other words:
# absent keys right next to present ones ("abandon" in, "abandoned" out). The iterative and
# space-code filters get each member 1 to 4 times (-n distinct, --occurrences adds, every key
# once before the repeats: the order that fills them most). URLs: every URL is inserted, and
# the queries are the paper's near misses, each URL with ten unique last segments appended; the
# filter prints, for the layer each query's new segment lands in, the most such a query can
# be passed at (URLs sharing its other segments) and the rate when none does: the measured
# rate must lie between the two and under P.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-100000}"
P="${2:-0.01}"
D="${BLOOMERY_DATA:-target/data}"
bash scripts/fetch-data.sh words urls >&2
if [ -n "${BLOOMERY_BIN:-}" ]; then
  B="$BLOOMERY_BIN"   # a binary built already
else
  cargo build --release -q -p bloomery-cli
  B="$PWD/target/release/bloomery"
fi
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT

awk -v n="$N" 'NR % 3 == 0 && ++k <= n' "$D/words" > "$T/in"
awk 'NR % 3 != 0 && ++k <= 400000' "$D/words" > "$T/out"
awk '{ for (i = 0; i <= NR % 4; i++) print > ("'"$T"'/rep" i) }' "$T/in"
cat "$T/rep0" "$T/rep1" "$T/rep2" "$T/rep3" > "$T/stream"
members=$(wc -l < "$T/in")
queries=$(wc -l < "$T/out")
adds=$(wc -l < "$T/stream")

fail=0
row() { # kind printed measured queries target
  awk -v k="$1" -v pr="$2" -v me="$3" -v q="$4" -v t="$5" 'BEGIN {
    r = (me > 0) ? pr / me : 0
    sd = (me > 0) ? sqrt(me * (1 - me) / q) / me : 1
    ok = (r >= 0.8 && r <= 1.25) ? "ok" : "OFF"
    printf "| %-16s | %8s | %9.5f | %9.5f | %6.3f | %5.3f | %-3s |\n", k, t, pr, me, r, sd, ok
    exit (ok == "ok") ? 0 : 1 }' || fail=1
}
json() { "$B" info --json "$1" | python3 -c "import json,sys; print(json.load(sys.stdin)$2)"; }

echo "N = $members members, $queries absent words queried, P = $P ($(date -u +%F), $(nproc) cores)"
echo
echo "| kind             | target   | printed   | measured  | ratio  | ±1σ   |     |"
echo "| ---------------- | -------- | --------- | --------- | ------ | ----- | --- |"
for spec in blocked classic partitioned split-block scalable \
            counting blocked-counting dlcbf spectral ibf scbf; do
  f="$T/$spec.bf"
  case "$spec" in
    ibf|scbf)
      "$B" -q create "$f" --kind "$spec" -n "$members" --occurrences "$adds" -p "$P"
      "$B" -q add "$f" "$T/stream" ;;
    *)
      "$B" -q create "$f" --kind "$spec" -n "$members" -p "$P"
      "$B" -q add "$f" "$T/in" ;;
  esac
  printed=$(json "$f" '["current_fpr"]')
  hits=$("$B" check -c "$f" "$T/out" || true)
  row "$spec" "$printed" "$(awk -v h="$hits" -v q="$queries" 'BEGIN { print h / q }')" "$queries" "$P"
done

# Multi-layer URL filter: near misses, each query's printed rates those of its layer: the
# bound (URLs sharing the query's other segments) and the rate when none does; the measured
# rate must lie between them (within 1.25x or 3 standard deviations), and under P.
mlbf() { # name file
  local name="$1" src="$2" L=4 f="$T/$1.bloom"
  grep -v '[?#]' "$src" | sed 's:/*$::' | awk 'length > 0 && !seen[$0]++' > "$T/$name.urls"
  local n; n=$(wc -l < "$T/$name.urls")
  "$B" -q create "$f" --kind mlbf --layers "$L" -n "$n" -p "$P"
  "$B" -q add --skip-invalid "$f" "$T/$name.urls"
  # ten near misses per URL (each a unique last segment): a tighter measurement than one
  awk '{ for (r = 0; r < 10; r++) print $0 "/id" NR "r" r "q" }' "$T/$name.urls" > "$T/$name.near"
  local hits; hits=$("$B" check -c "$f" "$T/$name.near" || true)
  local q=$((n * 10))
  local me; me=$(awk -v h="$hits" -v q="$q" 'BEGIN { print h / q }')
  # the layer a query's new segment lands in: after the URL's last value, or the last layer
  local hi lo
  hi=$(json "$f" '["mlbf_rates"]["near_miss_by_layer"]' | tr -d '[] ')
  lo=$(json "$f" '["mlbf_rates"]["near_miss_unshared_by_layer"]' | tr -d '[] ')
  local pred; pred=$(sed -E 's,^[A-Za-z][A-Za-z0-9+.-]*://,,' "$T/$name.urls" | awk -F/ -v L="$L" -v h="$hi" -v l="$lo" '
    BEGIN { split(h, H, ","); split(l, W, ",") }
    { i = (NF < L ? NF : L - 1) + 1; hs += H[i]; ls += W[i] }
    END { print hs / NR, ls / NR }')
  awk -v k="mlbf ($name)" -v t="$P" -v me="$me" -v q="$q" -v pred="$pred" 'BEGIN {
    split(pred, x, " "); hi = x[1]; lo = x[2]
    sd = sqrt(hi * (1 - hi) / q)   # of the measured rate, were it at the bound
    ok = (me <= hi * 1.25 + 3 * sd && me >= lo / 1.25 - 3 * sd && me <= t + 3 * sd) ? "ok" : "OFF"
    printf "| %-16s | %8s | %9.5f | %9.5f | %6.3f | %5.3f | %-3s |\n", k " bound", t, hi, me, (me > 0 ? hi / me : 0), (me > 0 ? sd / me : 1), ok
    printf "| %-16s |          | %9.5f |           | %6.3f |       |     |\n", "  unshared", lo, (me > 0 ? lo / me : 0)
    exit (ok == "ok") ? 0 : 1 }' || fail=1
}
mlbf docs "$D/doc-urls.txt"
[ -s "$D/npm-urls.txt" ] && mlbf npm <(awk '!seen[$0]++ && ++k <= 400000' "$D/npm-urls.txt")
echo
echo "cms: sized by --width/--depth or --epsilon/--delta, no membership rate to check"
exit "$fail"
