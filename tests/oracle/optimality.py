#!/usr/bin/python3
"""Issue 16's optimality suite: `ppsched tune` against the exact ILP (ilp_oracle.py).

Problems: p in {2, 4}; m in {p, 2p}; placements loop v=1, loop v=2, v (v=2); costs uniform
(F = I = W = 1), first stage +30% / last stage +60%, random +-25% per stage and action (seeded
by the shape), W = 0.5 I, W = 1.5 I (activation 1 per stage, no parameters); message time 0 and
0.1 F; memory limit none, the peak of the 1F1B of the placement (1F1B, Interleaved1F1B, 1F1B-V)
and half of it (at least the least memory any order needs). Each is solved by the ILP (CBC, a
time limit per problem) and by `ppsched tune ... --format json` (its "makespan" and
"lower_bound"); the table reports both and their ratio.

usage: optimality.py PPSCHED [--time-limit S] [--tune-time-limit S] [--ranks 2,4]
         [--placements loop1,loop2,v] [--costs uniform,skew,random,w05,w15] [--latency 0,0.1]
         [--memory none,1f1b,half] [--backward split] [--results FILE.jsonl] [--output FILE.md]
         [--ilp-from FILE.jsonl]... [--limit N] [--no-tune]
         [--exact EXACT_SEARCH [--exact-time-limit S]] [--no-ilp] [--sat [--sat-time-limit S]]
With --exact (the branch and bound of exact_search.cpp, built by ctest as `exact_search`), every
problem is searched for an order faster than tune's, with tune's makespan as the target:
"optimal" with no faster order proves tune optimal (also where tune proved it itself: an
independent check); a faster order is checked by the oracle's own evaluator. --no-ilp skips CBC.
With --sat (and --exact), every problem exact_search leaves undecided goes to the SAT oracle
(sat_oracle.py, CaDiCaL): where the costs lie on a grid of 0.1 it finds the optimum, asking for an
order faster than tune's, then faster than each order it finds, until none exists; otherwise
(random costs) it asks, on the costs rounded down to 0.01, for an order faster than tune / 1.01:
none proves tune within 1 % of the optimum. It also runs on the rows of a --results file that
lack it, and rewrites that file.
The --results file keeps every solved problem: rerunning with it skips those (resume).
--ilp-from reuses the ILP answers of earlier runs (the slow part) and runs only tune again.
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ilp_oracle  # noqa: E402

PLACEMENTS = {"loop1": ("loop", 1), "loop2": ("loop", 2), "v": ("v", 2)}
ONE_F_ONE_B = {"loop1": "1F1B", "loop2": "Interleaved1F1B", "v": "1F1B-V"}
# Built-in orders given to the ILP as starting points (each is re-evaluated by the oracle and
# used only if it fits the memory limit; the proof of optimality does not depend on them).
STARTS = {
    "loop1": ["1F1B", "GPipe", "ZB-H1", "ZB-H2", "ZB-1P", "ZB-2P", "ZB"],
    "loop2": ["Interleaved1F1B", "InterleavedZeroBubble", "LoopedBFS", "MegatronInterleaved"],
    "v": ["1F1B-V", "ZBVZeroBubble", "ZB-V", "V-Half", "V-Min", "DualPipeV"],
}


def costs_for(kind, P, V, placement):
    S = P * V
    F, I, W = [1.0] * S, [1.0] * S, [1.0] * S
    if kind == "skew":
        for arr in (F, I, W):
            arr[0] *= 1.3
            arr[-1] *= 1.6
    elif kind == "random":
        rng = random.Random(f"ppsched-16-{P}-{V}-{placement}")  # string seeds are stable
        for arr in (F, I, W):
            for s in range(S):
                arr[s] = round(arr[s] * rng.uniform(0.75, 1.25), 4)
    elif kind == "w05":
        W = [0.5] * S
    elif kind == "w15":
        W = [1.5] * S
    return F, I, W


def problems(args):
    for P in args.ranks:
        for M in (P, 2 * P):
            if M > 2 * P + 2:
                continue
            for pl in args.placements:
                placement, V = PLACEMENTS[pl]
                S = P * V
                for ck in args.costs:
                    F, I, W = costs_for(ck, P, V, placement)
                    for lat in args.latency:
                        for mem in args.memory:
                            for bw in args.backward:
                                d = {"ranks": P, "microbatches": M, "stages_per_rank": V,
                                     "placement": placement, "backward": bw, "F": F,
                                     "activation": [1.0] * S, "parameters": [0.0] * S,
                                     "message": lat, "input_grad_frees": 0.0,
                                     "memory_limit": None}
                                if bw == "split":
                                    d["I"], d["W"] = I, W
                                else:
                                    d["B"] = [i + w for i, w in zip(I, W)]
                                key = f"p{P} m{M} {pl} {ck} c{lat} mem:{mem} {bw}"
                                yield key, pl, mem, d


def run(cmd, timeout=None):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        return subprocess.CompletedProcess(cmd, 127, "", str(e))


def one_f_one_b_peak(ppsched, pl, prob):
    """The peak memory (max over ranks) of the placement's 1F1B, replayed by the oracle."""
    gen = run([ppsched, "generate", ONE_F_ONE_B[pl], "--ranks", str(prob.P), "--microbatches",
               str(prob.M), "--stages-per-rank", str(prob.V)])
    if gen.returncode != 0:
        return None
    ev = ilp_oracle.evaluate(prob, ilp_oracle.read_csv(gen.stdout))
    return max(ev["peak_memory"])


def builtin_orders(ppsched, pl, prob):
    out = []
    for name in STARTS[pl]:
        gen = run([ppsched, "generate", name, "--ranks", str(prob.P), "--microbatches",
                   str(prob.M), "--stages-per-rank", str(prob.V)])
        if gen.returncode == 0:
            try:
                out.append(ilp_oracle.read_csv(gen.stdout))
            except ilp_oracle.ProblemError:
                pass
    return out


def tune(args, prob, costs_file):
    cmd = [args.ppsched, "tune", "--ranks", str(prob.P), "--microbatches", str(prob.M),
           "--stages-per-rank", str(prob.V), "--placement", prob.placement, "--costs",
           costs_file, "--backward", prob.backward, "--format", "json"]
    if prob.L is not None:
        cmd += ["--memory-limit", repr(prob.L)]
    if args.tune_time_limit is not None:
        cmd += ["--time-limit", str(args.tune_time_limit)]
    t0 = time.monotonic()
    p = run(cmd, timeout=600)
    secs = time.monotonic() - t0
    if p.returncode != 0:
        lines = p.stderr.strip().splitlines() or [f"exit status {p.returncode}"]
        errors = [x for x in lines if "error" in x] or lines
        return {"error": errors[0][:120], "seconds": secs}
    try:
        js = json.loads(p.stdout)
        return {"makespan": float(js["makespan"]), "lower_bound": float(js["lower_bound"]),
                "seconds": secs}
    except (ValueError, KeyError, TypeError) as e:
        return {"error": f"unreadable output ({e})", "seconds": secs}


def exact(args, prob, tune_makespan, tmp):
    """Runs exact_search with tune's makespan as the target. Returns its JSON answer plus
    "optimum" when proven (tune's makespan, or the faster order it found, re-evaluated)."""
    path = os.path.join(tmp, "problem.txt")
    order = os.path.join(tmp, "exact.csv")
    with open(path, "w") as f:
        f.write(prob.exact_text())
    if os.path.exists(order):
        os.remove(order)
    p = run([args.exact, path, "--target", repr(tune_makespan), "--time-limit",
             str(args.exact_time_limit), "--order", order], timeout=args.exact_time_limit + 60)
    if p.returncode != 0:
        return {"status": "error", "error": (p.stderr.strip() or "failed")[:120]}
    res = json.loads(p.stdout)
    if res["makespan"] is not None:
        with open(order) as f:
            ev = ilp_oracle.evaluate(prob, ilp_oracle.read_csv(f.read()))
        if not ev["fits"] or abs(ev["makespan"] - res["makespan"]) > 1e-9 * res["makespan"]:
            return {"status": "error", "error": "the faster order does not replay: " +
                    f"{ev['makespan']} fits={ev['fits']}"}
    if res["status"] == "optimal":
        res["optimum"] = res["makespan"] if res["makespan"] is not None else tune_makespan
    return res


def sat(args, prob, costs_file, tune_makespan, tmp):
    """The SAT oracle on a problem exact_search left undecided (see the module's doc)."""
    path = os.path.join(tmp, "problem.txt")
    with open(path, "w") as f:
        f.write(prob.exact_text())
    oracle = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sat_oracle.py")

    def ask(below, grid_flag, grid):
        p = run([sys.executable, oracle, path, grid_flag, str(grid), "--below", repr(below),
                 "--time-limit", str(args.sat_time_limit), "--ppsched", args.ppsched,
                 "--costs", costs_file], timeout=args.sat_time_limit + 600)
        if p.returncode != 0:
            return {"status": "error", "error": (p.stderr.strip() or "failed")[-160:]}
        out = json.loads(p.stdout)
        out.pop("order", None)
        return out

    steps, below = [], tune_makespan
    while True:
        out = ask(below, "--grid", 0.1)
        if out["status"] == "error" and "not a multiple of the grid" in out["error"]:
            steps = []
            break
        steps.append(out)
        if out["status"] != "feasible":
            break
        below = out["simulated"]  # an order faster than `below`, confirmed by simulate
    if steps:
        res = {"grid": 0.1, "steps": steps}
        if steps[-1]["status"] == "infeasible":
            res["optimum"] = below
        return res
    out = ask(tune_makespan / 1.01, "--floor-grid", 0.01)
    return {"floor_grid": 0.01, "steps": [out],
            "within_1pct": "proven" if out["status"] == "infeasible" else "unknown"}


def fmt(x, digits=4):
    return "-" if x is None else f"{x:.{digits}f}".rstrip("0").rstrip(".")


def exact_table(rows):
    out = ["| problem | tune makespan | tune bound | proven by | optimum | exact s | "
           "tune / optimum |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        tn, ex = r.get("tune") or {}, r.get("exact") or {}
        opt = optimum_of(r)
        sa = r.get("sat") or {}
        by = "exact search" if ex.get("status") == "optimal" else ex.get("status", "-")
        if ex.get("within_1pct"):
            by += f" (within 1%: {ex['within_1pct']})"
        if sa.get("optimum") is not None:
            by += ", SAT: optimum"
        elif sa.get("within_1pct"):
            by += f", SAT within 1%: {sa['within_1pct']}"
        if tn.get("makespan") and tn["makespan"] <= tn.get("lower_bound", 0) * (1 + 1e-9):
            by += " and tune"
        ratio = tn["makespan"] / opt if opt and "makespan" in tn else None
        out.append(f"| {r['key']} | {fmt(tn.get('makespan'))} | {fmt(tn.get('lower_bound'))} | "
                   f"{by} | {fmt(opt)} | {fmt(ex.get('seconds'), 1)} | {fmt(ratio, 4)} |")
    return "\n".join(out) + "\n"


def optimum_of(r):
    """The proven optimum of a row (exact search, or the SAT oracle), or None."""
    opt = (r.get("exact") or {}).get("optimum")
    return opt if opt is not None else (r.get("sat") or {}).get("optimum")


def exact_summary(rows):
    ratios, by_tune, by_exact, unproven, faster = [], 0, 0, [], 0
    by_key = {r["key"]: r for r in rows}
    alarms = []
    for r in rows:
        opt, tn, ex = optimum_of(r), r.get("tune") or {}, r.get("exact") or {}
        if "makespan" not in tn:
            continue
        if ex.get("lower_bound") is not None and tn["makespan"] < ex["lower_bound"] - 1e-6:
            alarms.append(f"{r['key']}: tune {tn['makespan']} below the proven bound")
        tune_proven = tn["makespan"] <= tn["lower_bound"] * (1 + 1e-9)
        if tune_proven and ex.get("makespan") is not None:
            alarms.append(f"{r['key']}: tune claims {tn['makespan']} optimal, exact_search found "
                          f"{ex['makespan']}")
        ilp = r.get("ilp") or {}
        if opt is not None and ilp.get("status") == "optimal" and \
                abs(ilp["makespan"] - opt) > 1e-6 * opt:
            alarms.append(f"{r['key']}: the ILP's optimum {ilp['makespan']} differs from the "
                          f"exact search's {opt}")
        if opt is None:
            unproven.append(r["key"])
            continue
        by_tune += tune_proven
        by_exact += ex.get("status") == "optimal"
        faster += ex.get("makespan") is not None and ex.get("status") == "optimal"
        ratios.append(tn["makespan"] / opt)
    lines = []
    if ratios:
        q = sorted(ratios)
        by_sat = sum(1 for r in rows if (r.get("exact") or {}).get("optimum") is None and
                     (r.get("sat") or {}).get("optimum") is not None)
        lines.append(f"proven optima: {len(q)} of {len(q) + len(unproven)} ({by_exact} by "
                     f"exact_search, {by_sat} by the SAT oracle); tune "
                     f"proved {by_tune} of them itself (its bound or its exact phase)")
        lines.append(f"tune / optimum: min {q[0]:.4f}, median {statistics.median(q):.4f}, "
                     f"max {q[-1]:.4f}; exactly optimal {sum(1 for x in q if x <= 1 + 1e-9)}, "
                     f"within 1% {sum(1 for x in q if x <= 1.01 + 1e-9)}, above 1% "
                     f"{sum(1 for x in q if x > 1.01 + 1e-9)}; exact_search found a faster "
                     f"order than tune on {faster}")
    if unproven:
        within = [k for k in unproven
                  if (by_key[k].get("exact") or {}).get("within_1pct") == "proven" or
                  (by_key[k].get("sat") or {}).get("within_1pct") == "proven"]
        rest = [k for k in unproven if k not in within]
        lines.append(f"optimum unproven: {len(unproven)}; of these, tune proven within 1% of the "
                     f"optimum on {len(within)}: " + (", ".join(within) or "none") +
                     "; undecided: " + (", ".join(rest) or "none"))
        for k in unproven:
            if (by_key[k].get("exact") or {}).get("within_1pct") == "refuted":
                alarms.append(f"{k}: an order more than 1% faster than tune's exists")
    for a in alarms:
        lines.append("CONTRADICTION: " + a)
    return "\n".join(lines) + "\n"


def table(rows):
    out = ["| problem | ILP status | ILP makespan | ILP bound | CBC s | tune makespan | "
           "tune bound | tune / ILP |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ilp, tn = r["ilp"], r.get("tune") or {}
        ratio = None
        if ilp.get("makespan") and tn.get("makespan"):
            ratio = tn["makespan"] / ilp["makespan"]
        tune_ms = fmt(tn.get("makespan")) if "makespan" in tn else ("n/a: " + tn["error"]
                                                                     if "error" in tn else "-")
        out.append(f"| {r['key']} | {ilp['status']} | {fmt(ilp.get('makespan'))} | "
                   f"{fmt(ilp.get('bound'))} | {fmt(ilp.get('seconds'), 1)} | {tune_ms} | "
                   f"{fmt(tn.get('lower_bound'))} | {fmt(ratio, 4)} |")
    return "\n".join(out) + "\n"


def summary(rows):
    lines = []
    by = {}
    for r in rows:
        by.setdefault(r["ilp"]["status"], []).append(r)
    lines.append("ILP: " + ", ".join(f"{k} {len(v)}" for k, v in sorted(by.items())))
    sizes = {}
    for r in rows:
        k = r["key"].split(" mem")[0].rsplit(" ", 2)[0]  # p, m, placement
        sizes.setdefault(k, []).append(r["ilp"])
    lines.append("CBC seconds by size (problem: optimal/total, median s, max s):")
    for k, v in sizes.items():
        secs = [x["seconds"] for x in v if x.get("seconds") is not None]
        cpu = [x["cbc_cpu_seconds"] for x in v if x.get("cbc_cpu_seconds") is not None]
        opt = sum(1 for x in v if x["status"] == "optimal")
        lines.append(f"  {k}: {opt}/{len(v)} optimal, median {statistics.median(secs):.1f} s, "
                     f"max {max(secs):.1f} s" + (f" (CBC CPU: median {statistics.median(cpu):.1f} s, "
                                                 f"max {max(cpu):.1f} s)" if cpu else ""))
    ratios, bound_tight, tune_over, alarms, jointly = [], 0, 0, [], 0
    unproven = []
    for r in rows:
        tn, ilp = r.get("tune") or {}, r["ilp"]
        if "makespan" not in tn or ilp.get("makespan") is None:
            continue
        ratio = tn["makespan"] / ilp["makespan"]
        # Contradictions (a model mismatch or an unsound bound): never expected.
        if ilp.get("bound") is not None and tn["makespan"] < ilp["bound"] - 1e-6:
            alarms.append(f"{r['key']}: tune's makespan {tn['makespan']} is below the ILP's "
                          f"proven bound {ilp['bound']}")
        if ilp["status"] == "optimal" and tn["lower_bound"] > ilp["makespan"] + 1e-6:
            alarms.append(f"{r['key']}: tune's lower bound {tn['lower_bound']} is above the "
                          f"optimum {ilp['makespan']}")
        optimum = ilp["makespan"] if ilp["status"] == "optimal" else None
        if optimum is None:
            # Proven together: the best order either found reaches the better of both bounds.
            best = min(ilp["makespan"], tn["makespan"])
            if max(ilp.get("bound") or 0, tn["lower_bound"]) >= best - 1e-6 * best:
                optimum = best
                jointly += 1
        if optimum is None:
            unproven.append((ratio, tn["makespan"] / ilp["bound"] if ilp.get("bound") else None))
            continue
        ratio = tn["makespan"] / optimum
        ratios.append(ratio)
        tune_over += ratio > 1.01 + 1e-9
        bound_tight += abs(tn["lower_bound"] - optimum) <= 1e-6 * optimum
    if ratios:
        q = sorted(ratios)
        lines.append(f"tune / optimum on {len(q)} proven problems: min {q[0]:.4f}, median "
                     f"{statistics.median(q):.4f}, max {q[-1]:.4f}; exactly optimal "
                     f"{sum(1 for x in q if x <= 1 + 1e-9)}, within 1% {len(q) - tune_over}, "
                     f"above 1% {tune_over}; tune's bound equals the optimum on {bound_tight}; "
                     f"{jointly} of them proven only by the ILP's and tune's bounds together")
    if unproven:
        worst = max(u[0] for u in unproven)
        lines.append(f"unproven problems: {len(unproven)}; tune / ILP incumbent max "
                     f"{worst:.4f}; tune / ILP bound max "
                     f"{max((u[1] for u in unproven if u[1]), default=float('nan')):.4f}")
    if not ratios and not unproven:
        lines.append("tune: no result to compare")
    for a in alarms:
        lines.append("CONTRADICTION: " + a)
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description="issue 16's optimality suite")
    ap.add_argument("ppsched")
    ap.add_argument("--time-limit", type=float, default=60, help="CBC seconds per problem")
    ap.add_argument("--tune-time-limit", type=float, help="passed to ppsched tune --time-limit")
    ap.add_argument("--ranks", default="2,4")
    ap.add_argument("--placements", default="loop1,loop2,v")
    ap.add_argument("--costs", default="uniform,skew,random,w05,w15")
    ap.add_argument("--latency", default="0,0.1")
    ap.add_argument("--memory", default="none,1f1b,half")
    ap.add_argument("--backward", default="split")
    ap.add_argument("--results", help="JSON lines file: appended to, and read to resume")
    ap.add_argument("--ilp-from", action="append", default=[], metavar="FILE.jsonl",
                    help="reuse the ILP results of an earlier --results file (tune still runs)")
    ap.add_argument("--output", help="write the markdown table and summary here")
    ap.add_argument("--limit", type=int, help="solve at most N problems")
    ap.add_argument("--no-tune", action="store_true", help="only the ILP")
    ap.add_argument("--exact", metavar="EXACT_SEARCH",
                    help="prove tune's makespan optimal (or beat it) with exact_search")
    ap.add_argument("--exact-time-limit", type=float, default=60,
                    help="exact_search seconds per problem")
    ap.add_argument("--no-ilp", action="store_true", help="skip CBC (with --exact)")
    ap.add_argument("--sat", action="store_true",
                    help="decide what exact_search leaves open with sat_oracle.py (cadical)")
    ap.add_argument("--sat-time-limit", type=float, default=600,
                    help="seconds per SAT question")
    args = ap.parse_args()
    args.ranks = [int(x) for x in args.ranks.split(",")]
    args.placements = args.placements.split(",")
    args.costs = args.costs.split(",")
    args.latency = [float(x) for x in args.latency.split(",")]
    args.memory = args.memory.split(",")
    args.backward = args.backward.split(",")
    for pl in args.placements:
        if pl not in PLACEMENTS:
            ap.error(f"unknown placement {pl}")
    if args.sat and not args.exact:
        ap.error("--sat decides what --exact leaves open: give --exact too")

    done = {}
    if args.results and os.path.exists(args.results):
        with open(args.results) as f:
            for line in f:
                if line.strip():
                    r = json.loads(line)
                    done[r["key"]] = r
    known_ilp = {}
    for path in args.ilp_from:
        with open(path) as f:
            for line in f:
                if line.strip():
                    r = json.loads(line)
                    known_ilp[r["key"]] = r
    tmp = tempfile.mkdtemp(prefix="oracle_opt_")
    rows = []
    solved = 0
    updated = {}  # rows of the --results file given the SAT oracle's answer now

    def needs_sat(row):
        return (args.sat and "sat" not in row and "makespan" in (row.get("tune") or {}) and
                (row.get("exact") or {}).get("status") == "unknown")

    for key, pl, mem, d in problems(args):
        if key in done and not needs_sat(done[key]):
            rows.append(done[key])
            continue
        if args.limit is not None and solved >= args.limit:
            break
        prob = ilp_oracle.Problem(d)
        if mem != "none":
            peak = one_f_one_b_peak(args.ppsched, pl, prob)
            if peak is None:
                print(f"{key}: skipped ({ONE_F_ONE_B[pl]} does not apply)", file=sys.stderr)
                continue
            limit = peak if mem == "1f1b" else max(peak / 2, max(prob.least_memory()))
            d = dict(d, memory_limit=limit)
            prob = ilp_oracle.Problem(d)
        if key in done:  # only the SAT oracle is new
            row = done[key]
            costs_file = os.path.join(tmp, "costs.json")
            with open(costs_file, "w") as f:
                json.dump(prob.ppsched_costs(), f)
            row["sat"] = sat(args, prob, costs_file, row["tune"]["makespan"], tmp)
            print(f"{key}: SAT {json.dumps({k: v for k, v in row['sat'].items() if k != 'steps'})}",
                  file=sys.stderr, flush=True)
            updated[key] = row
            solved += 1
            rows.append(row)
            continue
        if args.no_ilp:
            res = {"status": "skipped", "makespan": None, "bound": None, "seconds": 0}
        elif key in known_ilp and known_ilp[key]["memory_limit"] == prob.L:
            res = known_ilp[key]["ilp"]
        else:
            res = ilp_oracle.solve(prob, args.time_limit,
                                   starts=builtin_orders(args.ppsched, pl, prob))
        res.pop("order", None)
        row = {"key": key, "memory_limit": prob.L, "ilp": res}
        if not args.no_tune:
            costs_file = os.path.join(tmp, "costs.json")
            with open(costs_file, "w") as f:
                json.dump(prob.ppsched_costs(), f)
            row["tune"] = tune(args, prob, costs_file)
            tn = row["tune"]
            if args.exact and "makespan" in tn:
                # Always searched, also where tune proves its order optimal itself: the
                # oracle checks that proof independently.
                row["exact"] = exact(args, prob, tn["makespan"], tmp)
                if row["exact"].get("status") == "unknown":
                    # No proof of the optimum in time: is tune at least within 1% of it?
                    one = exact(args, prob, tn["makespan"] / 1.01, tmp)
                    row["exact"]["within_1pct"] = (
                        "proven" if one.get("status") == "optimal" and one.get("makespan") is None
                        else "refuted" if one.get("makespan") is not None else "unknown")
                if needs_sat(row):
                    row["sat"] = sat(args, prob, costs_file, tn["makespan"], tmp)
        solved += 1
        rows.append(row)
        tn = row.get("tune") or {}
        if "exact" in row:
            print(f"{key}: tune {fmt(tn.get('makespan'))}, exact: {row['exact'].get('status')} "
                  f"{fmt(row['exact'].get('optimum'))}", file=sys.stderr, flush=True)
        print(f"{key}: ILP {res['status']} {fmt(res['makespan'])} (bound {fmt(res['bound'])}, "
              f"{res['seconds']:.1f} s, CBC CPU {res.get('cbc_cpu_seconds', '-')} s, "
              f"{res.get('binaries')} binaries); tune "
              f"{fmt(tn.get('makespan')) if 'makespan' in tn else tn.get('error', '-')}",
              file=sys.stderr, flush=True)
        if args.results:
            with open(args.results, "a") as f:
                f.write(json.dumps(row) + "\n")
    if updated:  # rewrite the --results file with the SAT oracle's answers
        with open(args.results) as f:
            lines = [json.loads(x) for x in f if x.strip()]
        with open(args.results + ".tmp", "w") as f:
            for r in lines:
                f.write(json.dumps(updated.get(r["key"], r)) + "\n")
        os.replace(args.results + ".tmp", args.results)
    if not rows:
        text = "no problems\n"
    elif args.exact:
        text = exact_table(rows) + "\n" + exact_summary(rows)
        if not args.no_ilp:
            text += "\n" + table(rows) + "\n" + summary(rows)
    else:
        text = table(rows) + "\n" + summary(rows)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
