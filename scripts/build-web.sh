#!/usr/bin/env bash
# Rebuild the WebUI's vendor bundles from web/frontend (npm registry + package-lock.json) into
# src/argus/web/static/vendor/. The built files are committed: the product never needs Node at run
# time, only this script does. tests/web/test_assets.py checks BUILD-INFO.json against the sources.
#   scripts/build-web.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
fe="$root/web/frontend"
out="$root/src/argus/web/static/vendor"
cd "$fe"
npm ci --no-audit --no-fund
mkdir -p "$out"
npx esbuild src/editor.js --bundle --format=esm --minify --legal-comments=none --outfile="$out/editor.js"
npx esbuild src/charts.js --bundle --format=esm --minify --legal-comments=none --outfile="$out/charts.js"
cp node_modules/uplot/dist/uPlot.min.css "$out/uplot.css"
"$root/.venv/bin/python" -m argus.web.buildinfo write "$fe" "$out"
echo "built: $(ls "$out")"
