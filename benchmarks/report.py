#!/usr/bin/env python3
"""Summarises ppsched_benchmarks JSON output (one or more files) as Markdown tables.

Usage: benchmarks/report.py RESULT.json [MORE.json ...] [--sizes 1000,...] [--schedules a,b]

For every (benchmark, size) the best run over all repetitions and files is kept (highest
actions/s, i.e. lowest CPU time), which is what docs/performance.md reports: the machine may be
shared, and the best run is the one least disturbed.

Prints:
  0. a summary line per target: how many schedules meet it at every size, the slowest;
  1. the targets of issue 8 (generate, validate, lower, simulate) per schedule, at 10^6 and 10^7;
  2. time per action at each size and its largest deviation from the 10^3 figure (the linear
     scaling target is +-30%);
  3. memory: bytes per action of each result and of the peak heap use.
"""

import json
import sys
from collections import defaultdict

TARGETS = [  # (algorithm, counter, actions/s, what is counted)
    ("generate", "actions/s", 100e6, "compute actions produced"),
    ("validate", "actions/s", 50e6, "actions of a compute-only order"),
    ("validate_lowered", "actions/s", 50e6, "actions of a lowered order"),
    ("lower", "actions/s", 50e6, "compute actions read"),
    ("lower", "out_actions/s", 50e6, "lowered actions written"),
    ("simulate", "actions/s", 20e6, "actions of a compute-only order"),
    ("simulate_lowered", "actions/s", 20e6, "actions of a lowered order"),
    ("simulate_summary", "actions/s", 20e6, "actions of a compute-only order, no timeline"),
    ("simulate_summary_lowered", "actions/s", 20e6, "actions of a lowered order, no timeline"),
]
SCALING_LIMIT = 0.30


def load(paths):
    best = {}  # (algorithm, schedule, size) -> run
    context = None
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        context = context or data.get("context", {})
        for run in data["benchmarks"]:
            if run.get("run_type", "iteration") != "iteration" or "error_occurred" in run:
                continue
            parts = run["name"].split("/")
            if parts[0] == "reference":
                key = ("reference/" + parts[1], parts[2], parts[3])
            else:
                key = (parts[0], parts[1], parts[2])
            rate = run.get("actions/s", 0.0)
            if key not in best or rate > best[key].get("actions/s", 0.0):
                best[key] = run
    return best, context


def fmt_rate(r):
    return f"{r / 1e6:.1f}M" if r >= 1e6 else f"{r / 1e3:.0f}k"


def ns_per_action(run):
    return 1e9 / run["actions/s"] if run.get("actions/s") else float("nan")


def main(argv):
    paths = [a for a in argv if not a.startswith("--")]
    opts = dict(a[2:].split("=", 1) for a in argv if a.startswith("--") and "=" in a)
    if not paths:
        print(__doc__)
        return 2
    best, context = load(paths)
    schedules = sorted({s for (_, s, _) in best if not _.startswith("reference")})
    if "schedules" in opts:
        schedules = [s for s in opts["schedules"].split(",") if s in schedules]
    sizes = sorted({int(n) for (a, _, n) in best if not a.startswith("reference")})
    algorithms = []
    for (a, _, _) in sorted(best, key=lambda k: k[0]):
        if not a.startswith("reference") and a not in algorithms:
            algorithms.append(a)
    order = ["generate", "validate", "validate_lowered", "lower", "add_unshard_reshard",
             "add_reduce_grad", "add_send_recv", "simulate", "simulate_lowered", "simulate_summary",
             "simulate_summary_lowered",
             "simulate_steps", "add_spacing", "csv_write", "csv_read", "parse_action"]
    algorithms = [a for a in order if a in algorithms] + [a for a in algorithms if a not in order]

    if context:
        print(f"Machine: {context.get('num_cpus')} CPUs at {context.get('mhz_per_cpu')} MHz, "
              f"load average {', '.join(f'{x:.2f}' for x in context.get('load_avg', []))} "
              f"(at the start of the first file's run).\n")

    # 0. Summary: one line per target.
    print("### Summary (best run, one core; slowest and median schedule over all sizes)\n")
    print("| algorithm | counted | target | schedules meeting it at every size | slowest "
          "(schedule, size) | median at 10^6 |")
    print("|---|---|---|---|---|---|")
    for alg, counter, target, counted in TARGETS:
        met, total, slowest, at_million = 0, 0, None, []
        for s in schedules:
            rates = [(best.get((alg, s, str(n)), {}).get(counter), n) for n in sizes]
            rates = [(r, n) for r, n in rates if r]
            if not rates:
                continue
            total += 1
            met += all(r >= target for r, _ in rates)
            low = min(rates)
            if slowest is None or low[0] < slowest[0]:
                slowest = (low[0], s, low[1])
            at_million += [r for r, n in rates if n == 1_000_000]
        if total == 0:
            continue
        at_million.sort()
        median = fmt_rate(at_million[len(at_million) // 2]) if at_million else "-"
        print(f"| {alg} | {counted} | {target / 1e6:.0f}M/s | {met} of {total} | "
              f"{fmt_rate(slowest[0])} ({slowest[1]}, 10^{len(str(slowest[2])) - 1}) | {median} |")
    print()

    # 1. Targets.
    print("### Targets (best run, actions per second on one core, by size)\n")
    print("| algorithm | target | counted | schedule | " +
          " | ".join(f"10^{len(str(n)) - 1}" for n in sizes) + " | met at all sizes |")
    print("|---|---|---|---|" + "---|" * len(sizes) + "---|")
    for alg, counter, target, counted in TARGETS:
        for s in schedules:
            rates = [best.get((alg, s, str(n)), {}).get(counter) for n in sizes]
            if not any(rates):
                continue
            met = all(r and r >= target for r in rates)
            print(f"| {alg} | {target / 1e6:.0f}M/s | {counted} | {s} | " +
                  " | ".join(fmt_rate(r) if r else "-" for r in rates) +
                  f" | {'yes' if met else 'no'} |")
    print()

    # 2. Scaling.
    print("### Time per action (ns, best run) and the largest deviation from 10^3\n")
    print("| algorithm | schedule | " + " | ".join(f"10^{len(str(n)) - 1}" for n in sizes) +
          " | max deviation | within 30% |")
    print("|---|---|" + "---|" * len(sizes) + "---|---|")
    for alg in algorithms:
        for s in schedules:
            runs = [best.get((alg, s, str(n))) for n in sizes]
            if not runs[0]:
                continue
            ns = [ns_per_action(r) if r else None for r in runs]
            base = ns[0]
            devs = [(x / base - 1) for x in ns if x is not None]
            worst = max(devs, key=abs) if devs else 0
            print(f"| {alg} | {s} | " + " | ".join(f"{x:.1f}" if x is not None else "-"
                                                     for x in ns) +
                  f" | {worst * 100:+.0f}% | {'yes' if abs(worst) <= SCALING_LIMIT else 'no'} |")
    print()

    # 3. Memory.
    n_mem = str(max(sizes))
    print(f"### Memory at the largest size (bytes per action)\n")
    print("| algorithm | schedule | result | peak (result + transient) |")
    print("|---|---|---|---|")
    for alg in algorithms:
        for s in schedules:
            r = best.get((alg, s, n_mem))
            if not r or "result_B/action" not in r:
                continue
            extra = f" ({r['slots/action']:.3f} slots/action)" if "slots/action" in r else ""
            print(f"| {alg} | {s} | {r['result_B/action']:.1f}{extra} | "
                  f"{r['peak_B/action']:.1f} |")
    print()

    # 4. Reference configurations.
    refs = sorted((k, v) for k, v in best.items() if k[0].startswith("reference"))
    if refs:
        print("### The reference configurations of issue 8 (seconds per call, best run)\n")
        print("| what | schedule | ranks x stages/rank x microbatches | compute actions | "
              "seconds |")
        print("|---|---|---|---|---|")
        for (a, s, shape), r in refs:
            unit = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[r["time_unit"]]
            print(f"| {a.split('/')[1]} | {s} | {shape} | {int(r['actions'])} | "
                  f"{r['cpu_time'] * unit:.4f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
