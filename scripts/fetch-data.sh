#!/usr/bin/env bash
# Real data sets for bloomery's experiments, tests and benchmarks. Nothing is committed:
# everything lands in ${BLOOMERY_DATA:-target/data} (inside the ignored target/ folder).
#
#   scripts/fetch-data.sh [words] [cldr] [pcap] [npm] [urls] [all]   (default: words cldr pcap)
#
#   words  Debian wamerican-insane  -> $D/words            (one English word per line, ~650k)
#   cldr   Debian unicode-cldr-core -> $D/cldr/            (2,039 XML files of the CLDR)
#   pcap   Debian pathspider        -> $D/real.pcap        (its tests/data/real.pcap)
#   npm    npm all-the-package-repos -> $D/npm-urls.txt    (~1.68M repository URLs, needs npm)
#   urls   Debian rust-doc, python3.11-doc -> $D/doc-urls.txt (~150k hierarchical URLs: every
#          page of the two documentation sets at its published address, and every http(s)
#          link in them, relative ones resolved against the page; fragments dropped; needs
#          python3)
#
# The Debian packages are downloaded with `apt-get download` and unpacked with `dpkg-deb -x`,
# so nothing is installed system-wide and no root is needed (beyond a readable apt cache; if
# the package index is missing, run `apt-get update` first). Each step is skipped when its
# output already exists.
set -euo pipefail
cd "$(dirname "$0")/.."
D="${BLOOMERY_DATA:-target/data}"
mkdir -p "$D"
D="$(cd "$D" && pwd)"
want=("$@")
[ "${#want[@]}" -eq 0 ] && want=(words cldr pcap)
[ "${want[0]}" = all ] && want=(words cldr pcap npm urls)

deb() { # deb PACKAGE -> prints the folder the package was unpacked into
  local pkg="$1" dir="$D/deb/$1"
  if [ ! -d "$dir" ]; then
    local tmp; tmp="$(mktemp -d)"
    ( cd "$tmp" && apt-get download -qq "$pkg" >/dev/null 2>&1 ) || {
      echo "fetch-data: apt-get download $pkg failed (try: apt-get update)" >&2; rm -rf "$tmp"; return 1; }
    mkdir -p "$dir.part" && dpkg-deb -x "$tmp"/"$pkg"_*.deb "$dir.part" && mv "$dir.part" "$dir"
    rm -rf "$tmp"
  fi
  echo "$dir"
}

for w in "${want[@]}"; do
  case "$w" in
    words)
      [ -s "$D/words" ] || cp "$(deb wamerican-insane)/usr/share/dict/american-english-insane" "$D/words"
      echo "words: $D/words ($(wc -l < "$D/words") lines)" ;;
    cldr)
      if [ ! -d "$D/cldr" ]; then
        src="$(deb unicode-cldr-core)/usr/share/unicode/cldr"
        cp -r "$src" "$D/cldr.part" && mv "$D/cldr.part" "$D/cldr"
      fi
      echo "cldr: $D/cldr ($(find "$D/cldr" -name '*.xml' | wc -l) XML files)" ;;
    pcap)
      if [ ! -s "$D/real.pcap" ]; then
        f="$(find "$(deb pathspider)" -name real.pcap | head -n1)"
        [ -n "$f" ] || { echo "fetch-data: real.pcap not found in pathspider" >&2; exit 1; }
        cp "$f" "$D/real.pcap"
      fi
      echo "pcap: $D/real.pcap ($(wc -c < "$D/real.pcap") bytes)" ;;
    npm)
      if [ ! -s "$D/npm-urls.txt" ]; then
        npm install --prefix "$D/npm" all-the-package-repos --no-audit --no-fund --silent >&2
        node -e 'const r=require(process.argv[1]); for (const k in r) { const u=r[k]; if (typeof u==="string" && u) process.stdout.write(u+"\n"); }' \
          "$D/npm/node_modules/all-the-package-repos" > "$D/npm-urls.txt.part"
        mv "$D/npm-urls.txt.part" "$D/npm-urls.txt"
      fi
      echo "npm: $D/npm-urls.txt ($(wc -l < "$D/npm-urls.txt") lines)" ;;
    urls)
      if [ ! -s "$D/doc-urls.txt" ]; then
        rust="$(deb rust-doc)/usr/share/doc/rust-doc/html"
        py="$(deb python3.11-doc)/usr/share/doc/python3.11/html"
        python3 - "$rust" "https://doc.rust-lang.org/1.63.0/" "$py" "https://docs.python.org/3.11/" \
          > "$D/doc-urls.txt.part" <<'PY'
import os, re, sys
from urllib.parse import urljoin, urldefrag
href = re.compile(rb'href="([^"]+)"')
seen = set()
def emit(u):
    u = urldefrag(u)[0]
    if u.startswith(("http://", "https://")) and u not in seen and "\n" not in u:
        seen.add(u)
        sys.stdout.write(u + "\n")
args = sys.argv[1:]
for root, base in zip(args[0::2], args[1::2]):
    for d, subdirs, files in sorted(os.walk(root)):
        subdirs.sort()
        for f in sorted(files):
            if not f.endswith(".html"):
                continue
            path = os.path.join(d, f)
            page = base + os.path.relpath(path, root).replace(os.sep, "/")
            emit(page)
            with open(path, "rb") as fh:
                for m in href.finditer(fh.read()):
                    link = m.group(1).decode("utf-8", "replace").replace("&amp;", "&")
                    emit(urljoin(page, link))
PY
        mv "$D/doc-urls.txt.part" "$D/doc-urls.txt"
      fi
      echo "urls: $D/doc-urls.txt ($(wc -l < "$D/doc-urls.txt") lines)" ;;
    *) echo "fetch-data: unknown data set '$w'" >&2; exit 2 ;;
  esac
done
