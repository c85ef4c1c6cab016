#!/usr/bin/env bash
# Builds ppsched's command-line tool (release preset) and runs the main job on a default example:
# draws ZBVZeroBubble on 4 ranks with 8 microbatches as an SVG picture (build/zbv_4x8.svg),
# prints its summary (makespan, bubble, peak memory per rank), where the picture is, and its
# timeline as text. Installs missing Debian packages first when run as root.
# Usage: scripts/run-example.sh [FILE.csv]   (a PyTorch CSV order instead: build/<name>.svg)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

bash scripts/install-deps.sh
echo "run-example: building the release preset (target ppsched-cli)"
mkdir -p build
cmake --preset release >build/release-configure.log 2>&1 || {
  cat build/release-configure.log
  exit 1
}
cmake --build --preset release --target ppsched-cli

if [[ $# -gt 0 ]]; then
  source=(--csv "$1")
  picture=$root/build/$(basename "${1%.csv}").svg
else
  source=(ZBVZeroBubble --ranks 4 --microbatches 8)
  picture=$root/build/zbv_4x8.svg
fi
run() {
  echo
  echo "\$ ppsched $*"
  build/release/tools/ppsched "$@"
}
run render "${source[@]}" --output "$picture"
run timeline "${source[@]}"
