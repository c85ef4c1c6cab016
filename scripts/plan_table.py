#!/usr/bin/env python3
"""Prints the table of docs/planning.md: `ppsched plan` on the example models for p in
{4, 8, 16} and several microbatch counts, against the default split with its best built-in
schedule. usage: python3 scripts/plan_table.py PATH/TO/ppsched [--time-limit S]"""
import json
import subprocess
import sys

tool = sys.argv[1]
limit = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--time-limit" else "5"
print("| model | p | M | plan: v, placement | plan step (ms) | default: v, placement, schedule "
      "| default step (ms) | speedup | plan peak / capacity (GB) |")
print("|---|---|---|---|---|---|---|---|---|")
for model in ("llama_dense", "deepseek_v3"):
    path = f"examples/models/{model}.json"
    capacity = json.load(open(path))["memory_capacity"]
    for p in (4, 8, 16):
        for m in (p, 2 * p, 4 * p):
            out = subprocess.run([tool, "plan", path, "--ranks", str(p), "--microbatches", str(m),
                                  "--time-limit", limit, "--format", "json"],
                                 capture_output=True, text=True, check=True).stdout
            r = json.loads(out)
            d = r["default"]
            peak = max(r["peak_memory"])
            assert peak <= capacity + 1e-9, (model, p, m, peak)
            assert d is None or r["makespan"] <= d["makespan"] + 1e-9, (model, p, m)
            dtext = (f"{d['stages_per_rank']}, {d['placement']}, {d['schedule']}"
                     if d else "none fits")
            dstep = f"{d['makespan']:.1f}" if d else "-"
            speedup = "-" if r["speedup"] is None else f"{r['speedup']:.3f}"
            print(f"| {model} | {p} | {m} | {r['stages_per_rank']}, {r['placement']} "
                  f"| {r['makespan']:.1f} | {dtext} | {dstep} | {speedup} "
                  f"| {peak:.1f} / {capacity:g} |", flush=True)
