#!/usr/bin/env bash
# Renders pages of the built DocC site (`make docs`) with headless Chromium to PNG files, to check that they
# show their content and not an empty shell: static DocC pages are a JavaScript app that loads each page's
# JSON from data/, so they only render through an HTTP server, which this script starts on 127.0.0.1.
#
# Usage: scripts/screenshot-docs.sh [OUTPUT_DIR]   (default .build/docs-screenshots)
#   PAGES="documentation/localstoragekit/ …" to choose the pages (paths under the site's root);
#   DOCS_SITE (default .build/docs), DOCS_PORT (default 8765), CHROMIUM (default: chromium on the PATH;
#   Debian: apt-get install chromium).
# Each PNG is checked for size: a page that rendered nothing but the empty shell is a few kilobytes of white.
set -euo pipefail
cd "$(dirname "$0")/.."
site=${DOCS_SITE:-.build/docs}
out=${1:-.build/docs-screenshots}
port=${DOCS_PORT:-8765}
pages=${PAGES:-"documentation/localstoragekit/ documentation/localstoragekit/gettingstarted documentation/localstoragekit/localstorage"}
chromium=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}

if [ ! -f "$site/index.html" ]; then
    echo "screenshots: no site in $site: run 'make docs' first" >&2
    exit 1
fi
if [ -z "$chromium" ]; then
    echo "screenshots: no Chromium found (Debian: apt-get install chromium; or set CHROMIUM)" >&2
    exit 1
fi
mkdir -p "$out"

python3 -m http.server "$port" --bind 127.0.0.1 --directory "$site" >/dev/null 2>&1 &
server=$!
profile=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$profile"' EXIT
for _ in $(seq 50); do
    python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/index.html')" 2>/dev/null && break
    sleep 0.1
done

status=0
for page in $pages; do
    name=$(echo "${page%/}" | sed 's|^documentation/||; s|/|-|g')
    png="$out/$name.png"
    # --virtual-time-budget lets the page's scripts fetch and render its JSON before the capture.
    "$chromium" --headless=new --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$profile" \
        --window-size=1280,1800 --virtual-time-budget=15000 --screenshot="$png" \
        "http://127.0.0.1:$port/$page" >/dev/null 2>&1 || true
    if [ ! -s "$png" ]; then
        echo "screenshots: $page: Chromium wrote no image" >&2
        status=1
        continue
    fi
    size=$(wc -c <"$png")
    if [ "$size" -lt 40000 ]; then
        echo "screenshots: $page: $png is only $size bytes: the page probably did not render" >&2
        status=1
    else
        echo "screenshots: $page -> $png ($size bytes)"
    fi
done
exit "$status"
