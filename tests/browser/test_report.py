#!/usr/bin/python3
"""Browser tests of `ppsched report`: each page is opened from file:// in headless Chromium
(Debian's chromium + chromium-driver through python3-selenium) and checked against what
`ppsched simulate --format json` says of the same input, never against numbers from the page's
own writer.

  test_report.py --tool PATH [--only NAME] [--screenshot OUT.png] [--keep DIR]

Exit status 0 when every check passes, 1 when one fails, 77 (ctest's SKIP_RETURN_CODE) when no
browser can be found. --screenshot writes the picture of the 4 x 8 report the README shows
(scripts/update-report-screenshot.sh calls it so)."""

import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import browser  # noqa: E402

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL: " + what)
    return cond


def run_tool(tool, args, expect=0):
    p = subprocess.run([tool] + args, capture_output=True, text=True)
    if p.returncode != expect:
        raise SystemExit("ppsched %s: exit %d (expected %d)\n%s%s" %
                         (" ".join(args), p.returncode, expect, p.stdout, p.stderr))
    return p


def simulate_json(tool, args):
    return json.loads(run_tool(tool, ["simulate"] + args + ["--format", "json", "--timeline"]).stdout)


def console_errors(d):
    return [e for e in d.get_log("browser") if e.get("level") == "SEVERE"]


def open_page(d, path):
    d.get(browser.file_url(path))
    for _ in range(100):
        if d.execute_script("return !!(window.ppsched && window.ppsched.ready)"):
            return True
        time.sleep(0.05)
    return False


def same(a, b):
    return a == b or (isinstance(a, float) and isinstance(b, float) and a != a and b != b)


def table_rows(d, table):
    """Each body row of a table as {field: (data-value, text)} plus the row's data attributes."""
    return d.execute_script("""
        const rows = [];
        for (const tr of document.querySelectorAll('#' + arguments[0] + ' tbody tr')) {
          const r = {schedule: tr.dataset.schedule, rank: tr.dataset.rank, cells: {}};
          for (const td of tr.cells) r.cells[td.dataset.field] = [td.dataset.value, td.textContent];
          rows.push(r);
        }
        return rows;""", table)


def check_tables(d, sims, label):
    """The summary numbers on the page equal `simulate --format json` for each schedule."""
    rows = table_rows(d, "schedules-table")
    check(len(rows) == len(sims), "%s: %d schedule rows, expected %d" % (label, len(rows), len(sims)))
    for row in rows:
        sim = sims[int(row["schedule"])]
        for field in ("makespan", "ideal", "bubble_ratio", "bubble_fraction"):
            value = float(row["cells"][field][0])
            check(value == sim[field], "%s: schedule %s %s on the page is %r, simulate says %r" %
                  (label, row["schedule"], field, value, sim[field]))
        shown = float(row["cells"]["makespan"][1])
        check(abs(shown - sim["makespan"]) <= 1e-5 * max(1, abs(sim["makespan"])),
              "%s: the makespan shown (%s) differs from %r" % (label, shown, sim["makespan"]))
        peak = max(r["peak_activations"] for r in sim["ranks"])
        check(float(row["cells"]["peak_activations"][0]) == peak,
              "%s: the peak activations of the memory chart (%s) differ from simulate's %r" %
              (label, row["cells"]["peak_activations"][0], peak))
    ranks = table_rows(d, "ranks-table")
    check(len(ranks) == sum(len(s["ranks"]) for s in sims), "%s: rank rows" % label)
    for row in ranks:
        want = sims[int(row["schedule"])]["ranks"][int(row["rank"])]
        for field in ("busy", "idle", "bubble_fraction", "comm_busy", "peak_activations",
                      "peak_activations_at", "peak_memory"):
            value = float(row["cells"][field][0])
            check(value == want[field], "%s: schedule %s rank %s %s is %r, simulate says %r" %
                  (label, row["schedule"], row["rank"], field, value, want[field]))


def check_memory(d, sims, label):
    """Each memory curve's maximum equals the rank's peak activations."""
    for s, sim in enumerate(sims):
        for r in sim["ranks"]:
            got = d.execute_script("return window.ppsched.memoryMax(arguments[0], arguments[1])",
                                   s, r["rank"])
            check(got == r["peak_activations"], "%s: schedule %d rank %d memory chart max %r, "
                  "peak %r" % (label, s, r["rank"], got, r["peak_activations"]))


def hover(d, s, rank, name, want_start, want_end, label):
    """Moves the mouse over an action and reads its tooltip."""
    from selenium.webdriver.common.action_chains import ActionChains
    i = d.execute_script("return window.ppsched.find(arguments[0], arguments[1], arguments[2])",
                         s, rank, name)
    if not check(i >= 0, "%s: %s not found on rank %d" % (label, name, rank)):
        return
    p = d.execute_script("return window.ppsched.point(arguments[0], arguments[1])", s, i)
    if p["y"] < 40 or p["y"] > d.execute_script("return window.innerHeight") - 10:
        d.execute_script("window.scrollBy(0, arguments[0])", p["y"] - 200)
        p = d.execute_script("return window.ppsched.point(arguments[0], arguments[1])", s, i)
    canvas = d.find_element("id", "chart")
    rect = d.execute_script("return document.getElementById('chart').getBoundingClientRect().toJSON()")
    # Selenium 4 offsets are from the element's centre.
    ActionChains(d).move_to_element_with_offset(
        canvas, int(p["x"] - rect["left"] - rect["width"] / 2),
        int(p["y"] - rect["top"] - rect["height"] / 2)).perform()
    tip = d.find_element("id", "tooltip")
    if not check(tip.is_displayed(), "%s: no tooltip over %s" % (label, name)):
        return
    text = tip.text
    check(name in text, "%s: tooltip %r does not name %s" % (label, text, name))
    start = float(tip.find_element("class name", "start").text)
    end = float(tip.find_element("class name", "end").text)
    check(abs(start - want_start) <= 1e-9 * max(1, abs(want_start)) and
          abs(end - want_end) <= 1e-9 * max(1, abs(want_end)),
          "%s: tooltip of %s says start %r end %r, simulate says %r %r" %
          (label, name, start, end, want_start, want_end))
    return text


def check_zoom_and_pan(d, label):
    """The wheel zooms in around the pointer, a drag pans, `0` shows everything again."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.actions.wheel_input import ScrollOrigin
    canvas = d.find_element("id", "chart")
    full = d.execute_script("return window.ppsched.view()")
    ActionChains(d).scroll_from_origin(ScrollOrigin.from_element(canvas, 0, -100), 0, -400).perform()
    time.sleep(0.1)
    zoomed = d.execute_script("return window.ppsched.view()")
    check(zoomed[1] - zoomed[0] < 0.8 * (full[1] - full[0]),
          "%s: the wheel did not zoom in: %r -> %r" % (label, full, zoomed))
    ActionChains(d).move_to_element_with_offset(canvas, 0, -100).click_and_hold() \
        .move_by_offset(-150, 0).release().perform()
    time.sleep(0.1)
    panned = d.execute_script("return window.ppsched.view()")
    check(panned[0] > zoomed[0] and abs((panned[1] - panned[0]) - (zoomed[1] - zoomed[0])) < 1e-6,
          "%s: dragging left did not pan right: %r -> %r" % (label, zoomed, panned))
    ActionChains(d).send_keys("0").perform()
    time.sleep(0.1)
    back = d.execute_script("return window.ppsched.view()")
    check(abs(back[1] - full[1]) < 1e-9 and abs(back[0] - full[0]) < 1e-9,
          "%s: '0' did not show everything again: %r" % (label, back))


def check_critical_path(d, s, sim, label):
    """The critical path from the last action runs back in time to an action that starts at 0,
    each step ending no later than the next one starts."""
    tl = sim["timeline"]
    last = max(range(len(tl)), key=lambda k: (tl[k]["stream"] == "compute", tl[k]["end"]))
    n = d.execute_script("return window.ppsched.schedules[arguments[0]].count", s)
    path = d.execute_script("""
        const S = window.ppsched.schedules[arguments[0]];
        let best = -1;
        for (let i = 0; i < S.count; i++)
          if (S.kind[i] <= 4 && (best < 0 || S.T[S.t1[i]] > S.T[S.t1[best]])) best = i;
        return window.ppsched.criticalPath(arguments[0], best).map(i => [
          window.ppsched.actionName(arguments[0], i), S.T[S.t0[i]], S.T[S.t1[i]]]);""", s)
    check(n == len(tl), "%s: %d actions on the page, simulate has %d" % (label, n, len(tl)))
    check(path[0][2] == tl[last]["end"], "%s: the critical path ends at %r, the makespan is %r" %
          (label, path[0][2], tl[last]["end"]))
    check(path[-1][1] == 0, "%s: the critical path starts at %r, not 0" % (label, path[-1][1]))
    for a, b in zip(path, path[1:]):
        check(b[2] <= a[1] + 1e-9 or b[0].find("RECV") >= 0,
              "%s: critical path step %s (ends %r) after %s starts (%r)" % (label, b[0], b[2], a[0], a[1]))


def read_png(path):
    """Decodes an 8-bit, non-interlaced RGB or RGBA PNG: (width, height, channels, rows)."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", chunk)
            assert depth == 8 and ctype in (2, 6) and interlace == 0, "unsupported PNG"
            ch = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    raw, stride, rows, prev = zlib.decompress(idat), width * ch, [], bytearray(width * ch)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - ch] if x >= ch else 0
            b, c = prev[x], (prev[x - ch] if x >= ch else 0)
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, ch, rows


def check_screenshot(path, label):
    """The picture is not blank: the canvas drew boxes of the forward and backward colours and
    many colours in all."""
    w, h, ch, rows = read_png(path)
    colours, forward, backward = set(), 0, 0
    for row in rows[::2]:
        for x in range(0, w * ch, ch * 2):
            px = row[x:x + 3]
            colours.add(px)
            forward += px == b"\x4c\x78\xa8"
            backward += px in (b"\xe4\x57\x56", b"\xf5\x85\x18")
    check(forward > 500 and backward > 500 and len(colours) > 30,
          "%s: the screenshot looks blank (%d forward, %d backward pixels, %d colours)" %
          (label, forward, backward, len(colours)))


def test_compare_4x8(d, tool, out, screenshot):
    """Two schedules stacked, 4 ranks x 8 microbatches: tables, hover, memory, critical path,
    sorting, and the screenshot of the README."""
    label = "4x8"
    names = ["Interleaved1F1B", "ZBVZeroBubble"]
    common = ["--ranks", "4", "--microbatches", "8"]
    page = os.path.join(out, "report_4x8.html")
    run_tool(tool, ["report"] + names + common + ["--memory-limit", "12", "--output", page])
    sims = [simulate_json(tool, [n] + common) for n in names]
    check(open_page(d, page), "%s: the page did not get ready" % label)
    check(not console_errors(d), "%s: console errors: %r" % (label, console_errors(d)))
    check_tables(d, sims, label)
    check_memory(d, sims, label)
    for s in range(2):
        check_critical_path(d, s, sims[s], label)
    # Hover over the fifth action of rank 1 of the second schedule.
    t = [a for a in sims[1]["timeline"] if a["rank"] == 1][4]
    hover(d, 1, 1, t["action"], t["start"], t["end"], label)
    # Sorting by makespan puts the shorter schedule first, then last.
    d.execute_script("document.querySelector('#schedules-table th[data-field=makespan]').click()")
    order = [r["cells"]["makespan"][0] for r in table_rows(d, "schedules-table")]
    check([float(x) for x in order] == sorted(s["makespan"] for s in sims),
          "%s: ascending sort by makespan gave %r" % (label, order))
    d.execute_script("document.querySelector('#schedules-table th[data-field=makespan]').click()")
    order = [r["cells"]["makespan"][0] for r in table_rows(d, "schedules-table")]
    check([float(x) for x in order] == sorted((s["makespan"] for s in sims), reverse=True),
          "%s: descending sort by makespan gave %r" % (label, order))
    check_zoom_and_pan(d, label)
    # The picture: the critical path of the step highlighted and a tooltip showing.
    d.execute_script("document.getElementById('critical').click()")
    # Down to the schedules table: the picture shows the charts and the summary.
    height = d.execute_script(
        "return document.getElementById('schedules-table').getBoundingClientRect().bottom"
        " + window.scrollY + 12")
    d.set_window_size(1400, int(height))
    inner = d.execute_script("return window.innerHeight")
    if inner != int(height):  # the window's frame, if any
        d.set_window_size(1400, 2 * int(height) - inner)
    d.execute_script("window.scrollTo(0, 0)")
    t = [a for a in sims[1]["timeline"] if a["rank"] == 2][9]
    hover(d, 1, 2, t["action"], t["start"], t["end"], label)
    shot = screenshot or os.path.join(out, "report_4x8.png")
    d.save_screenshot(shot)
    check_screenshot(shot, label)
    check(not console_errors(d), "%s: console errors after interaction: %r" % (label, console_errors(d)))
    # The bound and gap of an order from an auto-scheduler (`report_schedule::lower_bound`,
    # filled by a tuner; checked in C++ by test_html_report): set in the data, shown in the table.
    html = open(page).read()
    bounded = os.path.join(out, "report_4x8_bound.html")
    with open(bounded, "w") as f:
        f.write(html.replace('"lowerBound":null', '"lowerBound":50', 1))
    check(open_page(d, bounded), "%s: the page with a bound did not get ready" % label)
    row = table_rows(d, "schedules-table")[0]["cells"]
    want = (sims[0]["makespan"] - 50) / 50
    check(float(row["lower_bound"][0]) == 50 and abs(float(row["gap"][0]) - want) < 1e-12,
          "%s: bound %r and gap %r, expected 50 and %r" % (label, row["lower_bound"], row["gap"], want))


def test_lowered(d, tool, out):
    """A lowered order with message time: sends, receives and FSDP actions; a RECV's tooltip."""
    label = "lowered"
    args = ["1F1B", "--ranks", "4", "--microbatches", "8", "--lower", "--p2p", "0.25"]
    page = os.path.join(out, "lowered.html")
    run_tool(tool, ["report"] + args + ["--output", page])
    sim = simulate_json(tool, args)
    check(open_page(d, page), "%s: the page did not get ready" % label)
    check(not console_errors(d), "%s: console errors: %r" % (label, console_errors(d)))
    check_tables(d, [sim], label)
    check_memory(d, [sim], label)
    recv = [a for a in sim["timeline"] if a["rank"] == 2 and "RECV_B" in a["action"]][2]
    d.execute_script("window.ppsched.setView(arguments[0], arguments[1])",
                     recv["start"] - 1, recv["end"] + 1)
    time.sleep(0.1)
    hover(d, 0, 2, recv["action"], recv["start"], recv["end"], label)
    # Under FSDP the first forward waits for its stage's UNSHARD, and says so.
    args = ["Interleaved1F1B", "--ranks", "4", "--microbatches", "8", "--lower", "--unshard", "3"]
    run_tool(tool, ["report"] + args + ["--output", page])
    sim = simulate_json(tool, args)
    check(open_page(d, page), "%s: the page did not get ready" % label)
    first = [a for a in sim["timeline"] if a["rank"] == 0 and a["stream"] == "compute"][0]
    text = hover(d, 0, 0, first["action"], first["start"], first["end"], label + " fsdp") or ""
    check("waited 3 for its parameters (UNSHARD)" in text,
          "%s: the tooltip of %s does not name its UNSHARD: %r" % (label, first["action"], text))
    # A REDUCE_GRAD that ends the step: the critical path button starts there, not at the last
    # compute action.
    args = ["1F1B", "--ranks", "2", "--microbatches", "2", "--lower", "--reduce-grad", "5"]
    run_tool(tool, ["report"] + args + ["--output", page])
    sim = simulate_json(tool, args)
    check(open_page(d, page), "%s: the page did not get ready" % label)
    last = max(sim["timeline"], key=lambda a: a["end"])
    name = d.execute_script("return window.ppsched.actionName(0, window.ppsched.lastAction(0))")
    check(name == last["action"] and "REDUCE_GRAD" in name,
          "%s: the critical path starts at %r, the step ends with %r" % (label, name, last["action"]))
    # A send (instant) inside a receive's span on the same rank can be hovered.
    args = ["ZBVZeroBubble", "--ranks", "4", "--microbatches", "8", "--p2p", "0.25", "--lower",
            "--f", "1.1", "--b", "2.3", "--w", "0.7"]
    run_tool(tool, ["report"] + args + ["--output", page])
    sim = simulate_json(tool, args)
    check(open_page(d, page), "%s: the page did not get ready" % label)
    tl = sim["timeline"]
    inside = [a for a in tl if "SEND" in a["action"] and any(
        b["rank"] == a["rank"] and "RECV" in b["action"] and b["start"] < a["start"] < b["end"]
        for b in tl)]
    check(inside, "%s: no send inside a receive's span to hover" % label)
    if inside:
        a = inside[0]
        d.execute_script("window.ppsched.setView(arguments[0], arguments[1])",
                         a["start"] - 2, a["end"] + 2)
        time.sleep(0.1)
        hover(d, 0, a["rank"], a["action"], a["start"], a["end"], label + " send in a receive")


def test_deadlock(d, tool, out, data):
    """An order that deadlocks: exit 1, the waiting ranks named above and on the picture."""
    label = "deadlock"
    page = os.path.join(out, "deadlock.html")
    run_tool(tool, ["report", "--csv", os.path.join(data, "deadlock.csv"), "--output", page], 1)
    check(open_page(d, page), "%s: the page did not get ready" % label)
    check(not console_errors(d), "%s: console errors: %r" % (label, console_errors(d)))
    problems = [e.text for e in d.find_elements("css selector", "#problems .problem")]
    check(any("rank 0 waits" in p for p in problems) and any("rank 1 waits" in p for p in problems),
          "%s: the waiting ranks are not listed: %r" % (label, problems))
    status = table_rows(d, "schedules-table")[0]["cells"]["status"][1]
    check(status == "deadlock", "%s: status %r" % (label, status))
    # An order that runs but fails validation (a dropped backward) is not "ok".
    label = "fails validation"
    page = os.path.join(out, "dropped.html")
    run_tool(tool, ["report", "--csv", os.path.join(data, "dropped_backward.csv"), "--output", page], 1)
    check(open_page(d, page), "%s: the page did not get ready" % label)
    status = table_rows(d, "schedules-table")[0]["cells"]["status"][1]
    check(status == "fails validation", "%s: status %r" % (label, status))
    # An order the simulator refuses (1F0 on rank 0): every action drawn at its step, the
    # failing one named.
    label = "invalid"
    csv = os.path.join(out, "wrong_rank.csv")
    with open(csv, "w") as f:
        f.write("0F0,1F0,0B0\n1B0,,\n")
    page = os.path.join(out, "invalid.html")
    run_tool(tool, ["report", "--csv", csv, "--output", page], 1)
    check(open_page(d, page), "%s: the page did not get ready" % label)
    check(not console_errors(d), "%s: console errors: %r" % (label, console_errors(d)))
    problems = [e.text for e in d.find_elements("css selector", "#problems .problem")]
    check(any("rank 0 step 1 (1F0)" in p for p in problems),
          "%s: the failing step is not named: %r" % (label, problems))
    n = d.execute_script("return window.ppsched.schedules[0].count")
    check(n == 4, "%s: %r actions drawn, expected the order's 4" % (label, n))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--data", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                   "..", "cli", "data"))
    ap.add_argument("--only", choices=["compare", "lowered", "deadlock"])
    ap.add_argument("--screenshot")
    ap.add_argument("--keep")
    a = ap.parse_args()
    try:
        d = browser.start()
    except browser.Skip as e:
        print("SKIP: " + str(e))
        return browser.SKIP_CODE
    out = a.keep or tempfile.mkdtemp(prefix="ppsched-report-")
    os.makedirs(out, exist_ok=True)
    try:
        if a.only in (None, "compare"):
            test_compare_4x8(d, a.tool, out, a.screenshot)
        if a.only in (None, "lowered"):
            d.set_window_size(1400, 1000)
            test_lowered(d, a.tool, out)
        if a.only in (None, "deadlock"):
            test_deadlock(d, a.tool, out, a.data)
    finally:
        browser.stop(d)
    if FAILURES:
        print("%d check(s) failed" % len(FAILURES))
        return 1
    print("all report checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
