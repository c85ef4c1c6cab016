#!/usr/bin/python3
"""Load time of a large `ppsched report` page in headless Chromium (Debian's chromium and
chromium-driver through python3-selenium): the 787,456-action lowered Interleaved1F1B with 64
ranks, 4 stages per rank and 512 microbatches, by default. For each run the page is opened
from file:// in a fresh tab and the time from the start of navigation to the first frame drawn
is read from the page (`performance.now()` when its script is done); then full frames are drawn
at several zoom levels (what a pan or zoom step costs). Prints the file size, the median and
every run. Results: docs/performance.md.

  benchmarks/report_load.py --tool build/release/tools/ppsched [--runs 5] [-- ARGS...]"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "browser"))
import browser  # noqa: E402

DEFAULT = ["Interleaved1F1B", "--ranks", "64", "--stages-per-rank", "4", "--microbatches", "512",
           "--lower"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("args", nargs="*")
    a = ap.parse_args()
    args = a.args or DEFAULT
    out = tempfile.mkdtemp(prefix="ppsched-bench-")
    page = os.path.join(out, "report.html")
    t = time.time()
    subprocess.run([a.tool, "report"] + args + ["--output", page], check=True,
                   stdout=subprocess.DEVNULL)
    write_s = time.time() - t
    size = os.path.getsize(page)
    try:
        d = browser.start()
    except browser.Skip as e:
        print("SKIP: " + str(e))
        return browser.SKIP_CODE
    loads, scripts, frames = [], [], {}
    try:
        for _ in range(a.runs):
            d.get("about:blank")
            d.get(browser.file_url(page))
            for _ in range(600):
                if d.execute_script("return !!(window.ppsched && window.ppsched.ready)"):
                    break
                time.sleep(0.05)
            loads.append(d.execute_script("return window.ppsched.readyAt"))
            scripts.append(d.execute_script("return window.ppsched.scriptMs"))
            count = d.execute_script("return window.ppsched.schedules.reduce((n, S) => n + S.count, 0)")
            errors = [e for e in d.get_log("browser") if e.get("level") == "SEVERE"]
            if errors:
                print("console errors: %r" % errors)
                return 1
        span = d.execute_script("return window.ppsched.view()[1]")
        for name, width in (("everything", span), ("a tenth", span / 10), ("a hundredth", span / 100)):
            d.execute_script("window.ppsched.setView(arguments[0], arguments[1])",
                             span / 3, span / 3 + width)
            times = [d.execute_script("return window.ppsched.timeDraw()") for _ in range(7)]
            frames[name] = (statistics.median(times), min(times))
    finally:
        browser.stop(d)
    print("ppsched report %s" % " ".join(args))
    print("  actions            %d" % count)
    print("  file size          %.1f MB (%d bytes, %.1f bytes per action)" %
          (size / 1e6, size, size / max(count, 1)))
    print("  written in         %.2f s" % write_s)
    print("  load to first frame: median %.0f ms, best %.0f ms (runs: %s)" %
          (statistics.median(loads), min(loads), ", ".join("%.0f" % x for x in loads)))
    print("  of which the script: median %.0f ms" % statistics.median(scripts))
    for name, (median, best) in frames.items():
        print("  one frame, %-12s median %.1f ms, best %.1f ms" % (name + ":", median, best))
    print("  load average       %s" % " ".join(open("/proc/loadavg").read().split()[:3]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
