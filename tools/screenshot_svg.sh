#!/usr/bin/env bash
# tools/screenshot_svg.sh SVG [PNG]: renders an SVG (training_curves.svg) in
# a real browser — headless Chromium — and saves a screenshot, to look at what
# `loom plot` drew the way a user's browser shows it (fonts, layout, text).
# A look-at tool, not a build or test dependency: needs Debian's chromium
# (apt-get install chromium). The window is sized from the SVG's width and
# height attributes. PNG defaults to SVG with "_chromium.png".
set -euo pipefail
svg="${1:?usage: tools/screenshot_svg.sh SVG [PNG]}"
png="${2:-${svg%.svg}_chromium.png}"
[[ -f "$svg" ]] || { echo "screenshot_svg: $svg: no such file" >&2; exit 1; }
browser="$(command -v chromium || command -v chromium-browser || true)"
[[ -n "$browser" ]] || { echo "screenshot_svg: chromium not found (apt-get install chromium)" >&2; exit 1; }
# The <svg> element's width="..." height="..." (pixels).
size() { sed -n "s/.*<svg[^>]* $1=\"\([0-9]*\)[.0-9]*\".*/\1/p" "$svg" | head -1; }
width="$(size width)"; height="$(size height)"
abs="$(cd "$(dirname "$svg")" && pwd)/$(basename "$svg")"
profile="$(mktemp -d)"
trap 'rm -rf "$profile"' EXIT
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$profile" \
  --window-size="${width:-1000},${height:-800}" --screenshot="$png" "file://$abs" >/dev/null 2>&1
[[ -s "$png" ]] || { echo "screenshot_svg: chromium wrote no $png" >&2; exit 1; }
echo "wrote $png (${width}x${height})"
