#!/usr/bin/env bash
# Makes docs/img/report_4x8.png, the README's picture of `ppsched report`, with the browser test
# itself (tests/browser/test_report.py --only compare): Interleaved1F1B and ZBVZeroBubble, 4
# ranks, 8 microbatches, the critical path highlighted and a tooltip showing. The test's checks
# run too, so a broken page never becomes the picture. Needs chromium, chromium-driver and
# python3-selenium (scripts/install-deps.sh).
# Usage: scripts/update-report-screenshot.sh [--tool PATH]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tool=''
while [[ $# -gt 0 ]]; do
  case $1 in
    --tool) tool=$2; shift 2 ;;
    *) echo "usage: scripts/update-report-screenshot.sh [--tool PATH]" >&2; exit 2 ;;
  esac
done
# shellcheck source=scripts/release-tool.sh
source "$root/scripts/release-tool.sh"
tool=$(release_tool "$root" "$tool")
/usr/bin/python3 "$root/tests/browser/test_report.py" --tool "$tool" --only compare \
  --screenshot "$root/docs/img/report_4x8.png"
echo "update-report-screenshot: wrote docs/img/report_4x8.png"
