#!/usr/bin/env bash
# Builds ppsched's command-line tool (release preset) and runs the main job: the step table of
# an example pipeline order. Installs missing Debian packages first when run as root.
# Usage: scripts/run-example.sh [FILE.csv]   (default: examples/interleaved_1f1b_4x8.csv)
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

example=${1:-examples/interleaved_1f1b_4x8.csv}
echo
echo "\$ ppsched show $example"
build/release/tools/ppsched show "$example"
