#!/usr/bin/python3
"""A time-indexed integer program that decides "is there an order faster than T?" (tests only).

A third exact oracle of ppsched's scheduling problem (the model of tests/oracle/README.md, the
input of exact_search.cpp), for the problems whose big-M ILP (ilp_oracle.py) and branch and
bound (exact_search) cannot close the gap. It shares no code with either or with the library.

Usage:
  ti_oracle.py PROBLEM.txt --grid G --below T [--time-limit S] [--minimize] [--csv OUT.csv]
               [--ppsched PATH [--costs COSTS.json]] [--log CBC.log] [--relax-ranks R,R...]
PROBLEM.txt is exact_search's format (ranks, microbatches, stages_per_rank, placement loop|v,
backward split|fused, message, input_grad_frees, memory_limit L|none, per-stage F I W | B,
activation, parameters). Every duration and the message time must be a multiple of G (checked
to 1e-9 relative; exit 2 otherwise). Prints one JSON line:
  {"status": "infeasible"|"feasible"|"unknown", "below": T, "grid": G, "horizon_units": H,
   "variables", "rows", "nonzeros", "seconds", "cbc_result", ["makespan", "order",
   "lower_bound", "simulated"]}
- "infeasible": CBC proved (or the longest path / a rank's load shows) that no order has a
  makespan < T;
- "feasible": an order with makespan < T was found: "makespan" is that order replayed here
  exactly (every action as early as its rank and inputs allow; memory checked after every F),
  "order" its CSV rows, also written to --csv; with --ppsched, "simulated" is the makespan that
  `ppsched simulate --csv ... --memory-limit L` prints (it must exit 0), and a failure of either
  check turns the status into "unknown";
- "unknown": the time limit ran out first. With --minimize (minimise the makespan inside the
  horizon) "lower_bound" is then CBC's proven bound rounded up to the grid: no order is faster.
--relax-ranks drops the one-action-at-a-time and memory rows of the ranks named (their actions
keep their dependencies and symmetry chains): a relaxation, so "infeasible" still proves that no
order is faster than T, while an order it finds need not be valid ("relaxation_feasible", not
replayed). It decides what one rank alone (tune's rank relaxation) cannot, with a smaller
integer program than the whole problem's.
Exit 0, or 2 on bad input. CBC runs single-threaded; --time-limit is CBC's wall-clock limit.

Why the answer is exact:
- Grid: the simulator starts every action at the end of its rank's previous action or at the
  end of an input plus the message time, so every start and end of the replayed best order is
  a sum of durations and message times, a multiple of G. An order with makespan < T therefore
  has a schedule with integer start units and makespan <= H = the largest multiple of G below T.
  Conversely any integer schedule satisfying the rows below gives, sorted by start on each rank,
  an order whose replay starts every action no later (induction along the order) with the same
  memory sequence: its makespan is <= H G < T.
- Symmetry (proved in exact_search.cpp): some optimal order runs each (kind, stage) queue in
  microbatch order, so start(k,s,j+1) >= end(k,s,j) is added as a dependency (same rank).
- Windows: action a starts in [ES_a, LS_a], ES = longest path of durations and message times
  into a, LS = H - duration - longest path out of a (both through those symmetry chains).
- Variables z[a,t] = 1 iff a starts at or before t (t in [ES_a, LS_a - 1]; 0 before ES_a, 1
  from LS_a on), non-decreasing in t (the step form of the usual x[a,t] "starts at t"
  variables, x = z[t] - z[t-1]: the same polytope up to a unimodular change of variables).
  - dependency a -> b with lag L (a's duration + message): z[b,t] <= z[a,t-L] for all t;
  - one action at a time: for every rank and t, sum over the rank's actions of
    z[a,t] - z[a,t-p_a] (= 1 iff a runs in [t, t+1)) <= 1;
  - memory: a rank is sequential, so a free is before an F in its order iff it ends at or
    before the F starts; the memory after the F starting at t is then
    sum_F act z[F,t] - sum_frees amount z[w,t-p_w], which must be <= limit - parameters.
    The row is also valid at any other t (held memory only falls between two F's), so it is
    written at every t at which one of the rank's F's may start.
"""

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time

KINDS_SPLIT = ("F", "I", "W")
KINDS_FUSED = ("F", "B")


class BadInput(ValueError):
    pass


def read_problem(path):
    scalars, arrays = {}, {}
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].split()
            if not line:
                continue
            key, vals = line[0], line[1:]
            if key in ("F", "I", "W", "B", "activation", "parameters"):
                arrays[key] = [float(v) for v in vals]
            elif vals:
                scalars[key] = vals[0]
    try:
        p = {
            "P": int(scalars["ranks"]),
            "M": int(scalars["microbatches"]),
            "V": int(scalars.get("stages_per_rank", "1")),
            "placement": scalars.get("placement", "loop"),
            "backward": scalars.get("backward", "split"),
            "message": float(scalars.get("message", "0")),
            "phi": float(scalars.get("input_grad_frees", "0")),
        }
        lim = scalars.get("memory_limit", "none")
        p["limit"] = None if lim == "none" else float(lim)
    except (KeyError, ValueError) as e:
        raise BadInput(f"bad problem file: {e}")
    if p["placement"] not in ("loop", "v") or p["backward"] not in ("split", "fused"):
        raise BadInput("placement must be loop|v, backward split|fused")
    S = p["P"] * p["V"]
    p["S"] = S
    kinds = KINDS_SPLIT if p["backward"] == "split" else KINDS_FUSED
    p["kinds"] = kinds
    arrays.setdefault("parameters", [0.0] * S)
    for k in kinds + ("activation", "parameters"):
        if len(arrays.get(k, [])) != S:
            raise BadInput(f"{k} needs {S} values")
        if k in kinds and min(arrays[k]) <= 0:
            raise BadInput(f"{k}: durations must be positive")
    p["arrays"] = arrays
    return p


def rank_of(p, s):
    P = p["P"]
    pas, pos = divmod(s, P)
    return P - 1 - pos if p["placement"] == "v" and pas % 2 == 1 else pos


def to_units(x, g, what):
    u = x / g
    r = round(u)
    if abs(u - r) > 1e-9 * max(1.0, abs(u)):
        raise BadInput(f"{what} = {x!r} is not a multiple of the grid {g!r}")
    return int(r)


class Model:
    """Actions, durations in grid units, dependencies (with the symmetry chains), windows."""

    def __init__(self, p, grid, below, relaxed=()):
        self.p = p
        self.relaxed = set(relaxed)  # ranks without the one-at-a-time and memory rows
        P, M, S = p["P"], p["M"], p["S"]
        A = p["arrays"]
        c = to_units(p["message"], grid, "message")
        u = below / grid
        # T on a grid point (to float noise: 1e-9 relative, as to_units) excludes that point.
        on_point = abs(u - round(u)) <= 1e-9 * max(1.0, abs(u))
        self.H = round(u) - 1 if on_point else math.floor(u)
        self.acts = [(k, s, j) for k in p["kinds"] for s in range(S) for j in range(M)]
        self.rank = {a: rank_of(p, a[1]) for a in self.acts}
        self.dur = {a: to_units(A[a[0]][a[1]], grid, f"{a[0]}[{a[1]}]") for a in self.acts}
        if min(self.dur.values()) <= 0:
            raise BadInput(f"a duration is less than the grid {grid!r}")
        back = "I" if p["backward"] == "split" else "B"
        edges = []  # (a, b, lag): b starts >= a's start + lag

        def lag(a, b):
            return self.dur[a] + (c if self.rank[a] != self.rank[b] else 0)

        for s in range(S):
            for j in range(M):
                f, bk = ("F", s, j), (back, s, j)
                if s > 0:
                    edges.append((("F", s - 1, j), f))
                edges.append((f, bk))
                if s + 1 < S:
                    edges.append(((back, s + 1, j), bk))
                if back == "I":
                    edges.append((bk, ("W", s, j)))
                for k in p["kinds"]:  # symmetry: each queue in microbatch order
                    if j + 1 < M:
                        edges.append(((k, s, j), (k, s, j + 1)))
        self.edges = [(a, b, lag(a, b)) for a, b in edges]
        preds = {a: [] for a in self.acts}
        succs = {a: [] for a in self.acts}
        for a, b, L in self.edges:
            preds[b].append((a, L))
            succs[a].append((b, L))
        self.succs = succs
        # Topological order (Kahn).
        indeg = {a: len(preds[a]) for a in self.acts}
        order = [a for a in self.acts if indeg[a] == 0]
        for a in order:
            for b, _ in succs[a]:
                indeg[b] -= 1
                if indeg[b] == 0:
                    order.append(b)
        assert len(order) == len(self.acts), "dependency cycle"
        head = {}
        for a in order:
            head[a] = max((head[x] + L for x, L in preds[a]), default=0)
        tail = {}  # longest path from a's end to the makespan
        for a in reversed(order):
            tail[a] = max((L - self.dur[a] + self.dur[b] + tail[b] for b, L in succs[a]),
                          default=0)
        self.ES = head
        self.LS = {a: self.H - self.dur[a] - tail[a] for a in self.acts}
        self.sinks = [a for a in self.acts if not succs[a]]
        self.by_rank = [[a for a in self.acts if self.rank[a] == r] for r in range(P)]
        self.room = None
        if p["limit"] is not None:
            self.room = [p["limit"] for _ in range(P)]
            for s in range(S):
                self.room[rank_of(p, s)] -= A["parameters"][s]
        # Memory change of each action: F adds, I/W/B free.
        self.mem = {}
        for (k, s, j) in self.acts:
            act = A["activation"][s]
            self.mem[(k, s, j)] = {"F": act, "I": -p["phi"] * act, "W": -(1 - p["phi"]) * act,
                                   "B": -act}[k]

    def trivially_infeasible(self):
        for a in self.acts:
            if self.LS[a] < self.ES[a]:
                return f"longest path through {a[1]}{a[0]}{a[2]} exceeds the horizon"
        for r, acts in enumerate(self.by_rank):
            if r in self.relaxed:
                continue
            lo = min(self.ES[a] for a in acts)
            hi = max(self.LS[a] + self.dur[a] for a in acts)
            if sum(self.dur[a] for a in acts) > hi - lo:
                return f"rank {r}'s load does not fit in its window"
        if self.room is not None:
            for r, acts in enumerate(self.by_rank):
                if r in self.relaxed:
                    continue
                # Every F needs at least its own activation held.
                if any(self.mem[a] > self.room[r] + 1e-9 for a in acts if a[0] == "F"):
                    return f"rank {r}: an activation exceeds the memory room"
        return None


def replay(model, order):
    """Replays per-rank orders as the simulator does; returns (makespan units, memory ok)."""
    p = model.p
    preds = {a: [] for a in model.acts}
    for a, b, L in model.edges:
        if a[2] == b[2]:  # real dependencies only, not the symmetry chains
            preds[b].append((a, L))
    end, pos, free_at = {}, [0] * p["P"], [0] * p["P"]
    held = [0.0] * p["P"]
    ok = True
    done = 0
    while done < len(model.acts):
        progressed = False
        for r in range(p["P"]):
            while pos[r] < len(order[r]):
                a = order[r][pos[r]]
                if any(x not in end for x, _ in preds[a]):
                    break
                st = max([free_at[r]] + [end[x] - model.dur[x] + L for x, L in preds[a]])
                end[a] = st + model.dur[a]
                free_at[r] = end[a]
                held[r] += model.mem[a]
                if a[0] == "F" and model.room is not None and held[r] > model.room[r] + 1e-9:
                    ok = False
                pos[r] += 1
                done += 1
                progressed = True
        if not progressed:
            raise RuntimeError("the order deadlocks")
    return max(end.values()), ok


def solve(model, time_limit, minimize, log_path):
    import pulp

    H = model.H
    ES, LS, dur = model.ES, model.LS, model.dur
    lp = pulp.LpProblem("ti", pulp.LpMinimize)
    z = {}
    for n, a in enumerate(model.acts):
        for t in range(ES[a], LS[a]):
            z[a, t] = pulp.LpVariable(f"z{n}_{t}", cat="Binary")

    def Z(a, t):  # returns (constant, variable or None)
        if t < ES[a]:
            return 0, None
        if t >= LS[a]:
            return 1, None
        return 0, z[a, t]

    rows = 0
    nnz = 0

    def add(terms, rhs):  # sum coef * Z(..) <= rhs, terms = [(coef, a, t)]
        nonlocal rows, nnz
        const, lin = 0.0, {}
        for coef, a, t in terms:
            c0, v = Z(a, t)
            if v is None:
                const += coef * c0
            else:
                lin[v] = lin.get(v, 0.0) + coef
        lin = {v: c for v, c in lin.items() if c != 0}
        if not lin:
            if const > rhs + 1e-9:
                raise RuntimeError("a constant row is violated: windows are inconsistent")
            return
        # Skip rows that cannot bind: max of the left side <= rhs.
        if const + sum(c for c in lin.values() if c > 0) <= rhs + 1e-9:
            return
        lp.addConstraint(pulp.LpAffineExpression(list(lin.items())) <= rhs - const)
        rows += 1
        nnz += len(lin)

    # Monotone steps.
    for a in model.acts:
        for t in range(ES[a], LS[a] - 1):
            add([(1, a, t), (-1, a, t + 1)], 0)
    # Dependencies and symmetry chains.
    for a, b, L in model.edges:
        for t in range(ES[b], LS[b]):
            add([(1, b, t), (-1, a, t - L)], 0)
    # One action at a time.
    for r, acts in enumerate(model.by_rank):
        if r in model.relaxed:
            continue
        for t in range(0, H):
            terms = []
            for a in acts:
                if ES[a] <= t < LS[a] + dur[a]:
                    terms += [(1, a, t), (-1, a, t - dur[a])]
            add(terms, 1)
    # Memory.
    if model.room is not None:
        for r, acts in enumerate(model.by_rank):
            if r in model.relaxed:
                continue
            fs = [a for a in acts if a[0] == "F"]
            frees = [a for a in acts if a[0] != "F" and model.mem[a] < 0]
            times = sorted({t for a in fs for t in range(ES[a], LS[a] + 1)})
            for t in times:
                terms = [(model.mem[a], a, t) for a in fs]
                terms += [(model.mem[w], w, t - dur[w]) for w in frees]
                add(terms, model.room[r])
    if minimize:
        cmax = pulp.LpVariable("cmax", lowBound=0, upBound=H)
        lp += cmax
        for a in model.sinks:
            # start = ES + sum_t (1 - z[a,t]); end <= cmax.
            ts = range(ES[a], LS[a])
            expr = pulp.LpAffineExpression([(z[a, t], -1) for t in ts])
            lp.addConstraint(expr - cmax <= -(ES[a] + len(ts) + dur[a]))
            rows += 1
            nnz += len(ts) + 1
    else:
        lp += pulp.LpAffineExpression()  # feasibility only

    tmpdir = tempfile.mkdtemp(prefix="ti_oracle_")
    logpath = log_path or os.path.join(tmpdir, "cbc.log")
    solver = pulp.COIN_CMD(path="/usr/bin/cbc" if os.path.exists("/usr/bin/cbc") else None,
                           msg=False, timeLimit=time_limit, threads=1, logPath=logpath,
                           keepFiles=False, timeMode="elapsed")
    t0 = time.monotonic()
    lp.solve(solver)
    cbc_seconds = time.monotonic() - t0
    with open(logpath) as f:
        text = f.read()
    if not log_path:
        os.remove(logpath)
    try:
        os.rmdir(tmpdir)
    except OSError:
        pass
    m = re.search(r"^Result - (.*)$", text, re.M)
    result = m.group(1).strip() if m else ""
    info = {"variables": len(z) + (1 if minimize else 0), "rows": rows, "nonzeros": nnz,
            "cbc_seconds": round(cbc_seconds, 2), "cbc_result": result}
    # Every variable is bounded, so CBC's preprocessing "infeasible or unbounded" is infeasible.
    if re.search(r"Problem proven infeasible|Linear relaxation infeasible", result) or (
            not result and re.search(r"^Problem is infeasible|^Pre-processing says infeasible",
                                     text, re.M)):
        return "infeasible", None, info
    has_solution = lp.sol_status in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible)
    if has_solution:
        start = {}
        for a in model.acts:
            start[a] = next((t for t in range(ES[a], LS[a]) if z[a, t].value() > 0.5), LS[a])
        order = [sorted(acts, key=lambda a: start[a]) for acts in model.by_rank]
        return "feasible", order, info
    if minimize:
        bounds = re.findall(r"best possible ([-0-9.eE+]+)", text)
        bounds += re.findall(r"^Lower bound:\s*([-0-9.eE+]+)", text, re.M)
        if bounds:
            info["bound_units"] = max(float(b) for b in bounds)
    return "unknown", None, info


def action_name(a):
    return f"{a[1]}{a[0]}{a[2]}"


def confirm_order(args, p, model, order, grid, out):
    """Checks an order found below args.below (per-rank action lists): replays it here
    (makespan and memory) and, with args.ppsched, has `ppsched simulate` confirm it; writes it
    to args.csv if given. Fills out["order"], ["makespan"] and, on failure, ["reason"] (also
    ["simulated"], ["simulate_exit"]). True when every check passes. Shared with sat_oracle.py."""
    out["order"] = [",".join(action_name(a) for a in row) for row in order]
    units, mem_ok = replay(model, order)
    out["makespan"] = units * grid
    ok = True
    if units > model.H or not mem_ok:
        ok = False
        out["reason"] = "the order found does not replay below T within memory"
    csv_path, tmp_csv = args.csv, None
    if args.ppsched and not csv_path:
        fd, tmp_csv = tempfile.mkstemp(suffix=".csv")
        os.close(fd)
        csv_path = tmp_csv
    if csv_path:
        with open(csv_path, "w") as f:
            f.write("".join(r + "\n" for r in out["order"]))
    if args.ppsched:
        costs = args.costs or os.path.join(os.path.dirname(os.path.abspath(args.problem)),
                                           "costs.json")
        cmd = [args.ppsched, "simulate", "--csv", csv_path, "--costs", costs,
               "--placement", p["placement"], "--format", "json"]
        if p["limit"] is not None:
            cmd += ["--memory-limit", repr(p["limit"])]
        run = subprocess.run(cmd, capture_output=True, text=True)
        sim = None
        try:
            sim = json.loads(run.stdout)["makespan"]
        except (ValueError, KeyError, TypeError):
            pass
        out["simulated"] = sim
        out["simulate_exit"] = run.returncode
        if run.returncode != 0 or sim is None or not sim < args.below - 1e-9:
            ok = False
            out["reason"] = "ppsched simulate does not confirm the order"
    if tmp_csv:
        os.remove(tmp_csv)
    return ok


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("problem")
    ap.add_argument("--grid", type=float, required=True)
    ap.add_argument("--below", type=float, required=True)
    ap.add_argument("--time-limit", type=float, default=600.0)
    ap.add_argument("--minimize", action="store_true",
                    help="minimise the makespan within the horizon instead of any feasible order")
    ap.add_argument("--csv", help="write the order found to this file")
    ap.add_argument("--ppsched", help="check the order with this ppsched binary's simulate")
    ap.add_argument("--costs", help="cost JSON for ppsched (default: costs.json beside PROBLEM)")
    ap.add_argument("--log", help="keep CBC's log in this file")
    ap.add_argument("--relax-ranks", default="",
                    help="comma-separated ranks without one-at-a-time and memory rows")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    try:
        if not (args.grid > 0 and args.below > 0):
            raise BadInput("--grid and --below must be positive")
        p = read_problem(args.problem)
        try:
            relaxed = [int(x) for x in args.relax_ranks.split(",") if x.strip()]
        except ValueError:
            raise BadInput("--relax-ranks takes comma-separated rank numbers") from None
        if any(not 0 <= r < p["P"] for r in relaxed):
            raise BadInput(f"--relax-ranks: ranks are 0..{p['P'] - 1}")
        model = Model(p, args.grid, args.below, relaxed)
    except (BadInput, OSError) as e:
        print(f"ti_oracle: {e}", file=sys.stderr)
        return 2
    out = {"status": None, "below": args.below, "grid": args.grid, "horizon_units": model.H}
    if relaxed:
        out["relaxed_ranks"] = sorted(set(relaxed))
    why = model.trivially_infeasible()
    if why:
        out.update(status="infeasible", reason=why, variables=0, rows=0,
                   seconds=round(time.monotonic() - t0, 2))
        print(json.dumps(out))
        return 0
    status, order, info = solve(model, args.time_limit, args.minimize, args.log)
    out.update(info)
    if status == "unknown" and "bound_units" in info:
        out["lower_bound"] = math.ceil(info["bound_units"] - 1e-6) * args.grid
    if order is not None and model.relaxed:
        status = "relaxation_feasible"  # an order of the relaxation: not replayed
    elif order is not None:
        if not confirm_order(args, p, model, order, args.grid, out):
            status = "unknown"
    out["status"] = status
    out["seconds"] = round(time.monotonic() - t0, 2)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
