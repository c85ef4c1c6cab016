#!/usr/bin/python3
"""A SAT encoding that decides "is there an order faster than T?" (tests only).

A fourth exact oracle of ppsched's scheduling problem (the model of tests/oracle/README.md, the
input of exact_search.cpp), for the problems that the branch and bound (exact_search) and the
time-indexed integer program (ti_oracle.py) cannot decide in hours. The question is written as
clauses and given to CaDiCaL (Debian: `cadical`), whose learned clauses cut the search far more
than a branch and bound's bounds do on these problems. It reuses ti_oracle.py's model (actions,
durations on the grid, dependencies, symmetry chains, windows), not its integer program, and
shares no code with the library or with exact_search.

Usage:
  sat_oracle.py PROBLEM.txt --below T [--grid G | --floor-grid G] [--time-limit S]
                [--csv OUT.csv] [--ppsched PATH [--costs COSTS.json]] [--keep-cnf FILE]
Prints one JSON line:
  {"status": "infeasible"|"feasible"|"unknown", "below": T, "grid": G, "horizon_units": H,
   "variables", "clauses", "seconds", "solver_seconds", ["makespan", "order", "simulated"]}
- "infeasible": CaDiCaL proved that no order has a makespan < T (or the windows show it);
- "feasible": an order with makespan < T: "makespan" is that order replayed exactly (memory
  checked after every F); with --ppsched, `ppsched simulate` must confirm it (else "unknown");
- "unknown": the time limit ran out (or CaDiCaL was killed). The limit covers writing the
  clauses too, which is not interrupted (40-60 s for 20 million); CaDiCaL gets what is left, at
  least 1 s.
--grid G: every duration and the message time must be a multiple of G (exit 2 otherwise); the
answer is exact. --floor-grid G: every duration and the message time is rounded DOWN to a
multiple of G. A schedule's start times are sums of durations and message times, so they can
only fall when those do, and memory depends only on the order: every order is at least as fast
in the rounded problem. "infeasible" there still proves that no order of the real problem is
faster than T (a relaxation, used where costs lie on no grid); an order found is
"relaxation_feasible", unless --ppsched is given and `ppsched simulate` times it with the real
costs (--costs) below T: then it is "feasible" ("simulated" is its real makespan, "makespan" the
rounded one).
Exit 0, or 2 on bad input (including memory limits with input_grad_frees > 0, which the memory
clauses below do not model).

The clauses (order encoding; H = the largest multiple of G below T):
- z[a,t] <=> "a starts at or before t", for t in a's window [ES_a, LS_a) (false before, true
  after), z[a,t] -> z[a,t+1];
- a dependency a -> b with lag L (a's duration, plus the message time between ranks; the
  symmetry chains of ti_oracle.py included): z[b,t] -> z[a,t-L];
- one action at a time: for two actions a, b of a rank whose order no chain of dependencies
  fixes, a variable o_ab: o_ab and z[b,t] -> z[a,t-d_a] (b starts after a ends), not o_ab and
  z[a,t] -> z[b,t-d_b];
- memory: on a stage, F's start and the frees (W, or B when fused) end in microbatch order (the
  symmetry chains), so "at least k F's of stage s have started by t" is the literal
  z[F(s,k-1),t] and "at least k frees have ended by t" is z[W(s,k-1),t-d_W]. For every t and
  every count vector x of F's started and y of frees ended on a rank's stages whose held memory
  sum_s act_s (x_s - y_s) exceeds the room (limit - parameters), one clause forbids it (only
  the largest such y on the last stage). Held memory rises only when an F starts, and the frees
  that end by an F's start are exactly those before it on the rank: this is the simulator's
  check after every F.
Any model of the clauses gives start times on the grid with makespan <= H G < T; sorted by
start on each rank it is an order whose replay starts every action no later (ti_oracle.py's
argument), with the same memory sequence. Conversely an order with makespan < T replays on the
grid (its starts are sums of durations and message times) and satisfies every clause.
"""

import argparse
import itertools
import json
import math
import os
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ti_oracle  # noqa: E402  (the model: actions, durations, dependencies, windows)


class Cnf:
    """Clauses streamed to a DIMACS file (millions of them: not kept in memory)."""

    HEADER = 64  # bytes reserved for the "p cnf" line, written last

    def __init__(self, path):
        self.nvars = 0
        self.nclauses = 0
        self.f = open(path, "w")
        self.f.write(" " * (self.HEADER - 1) + "\n")
        self.buf = []

    def var(self):
        self.nvars += 1
        return self.nvars

    def add(self, lits):
        """lits: ints (DIMACS literals) or booleans (constants); drops satisfied clauses."""
        out = []
        for x in lits:
            if x is True:
                return
            if x is False:
                continue
            out.append(x)
        if not out:
            raise Unsat("a clause lost every literal: the windows, the rank's pairs or its "
                        "memory allow no schedule")
        self.nclauses += 1
        self.buf.append(" ".join(map(str, out)) + " 0\n")
        if len(self.buf) >= 65536:
            self.f.write("".join(self.buf))
            self.buf = []

    def close(self):
        self.f.write("".join(self.buf))
        self.buf = []
        header = f"p cnf {self.nvars} {self.nclauses}"
        self.f.seek(0)
        self.f.write(header.ljust(self.HEADER - 1))
        self.f.close()


class Unsat(Exception):
    pass


def floor_problem(p, grid):
    """The problem with every duration and the message time rounded down to the grid."""
    q = dict(p)
    q["arrays"] = dict(p["arrays"])
    def down(x):  # the largest multiple of the grid <= x (a product within 1e-12 of x counts)
        k = round(x / grid)
        return (k if k * grid <= x * (1 + 1e-12) else k - 1) * grid

    for k in p["kinds"]:
        q["arrays"][k] = [down(x) for x in p["arrays"][k]]
        if min(q["arrays"][k]) <= 0:
            raise ti_oracle.BadInput(f"--floor-grid {grid} rounds a {k} duration to 0")
    q["message"] = down(p["message"])
    return q


class Encoding:
    def __init__(self, model, cnf_path):
        self.m = model
        self.cnf = Cnf(cnf_path)
        self.z = {}
        for a in model.acts:
            for t in range(model.ES[a], model.LS[a]):
                self.z[a, t] = self.cnf.var()

    def Z(self, a, t):
        m = self.m
        if t < m.ES[a]:
            return False
        if t >= m.LS[a]:
            return True
        return self.z[a, t]

    def build(self):
        m, cnf = self.m, self.cnf
        for a in m.acts:  # monotone steps
            for t in range(m.ES[a], m.LS[a] - 1):
                cnf.add([-self.z[a, t], self.z[a, t + 1]])
        for a, b, lag in m.edges:  # dependencies and symmetry chains
            for t in range(m.ES[b], m.LS[b] + 1):
                self.implies(b, t, a, t - lag)
        self.sequence_pairs()
        if m.room is not None:
            self.memory()
        self.cnf.close()

    def implies(self, b, t, a, u, extra=()):
        """Clause: extra or not (b starts by t) or (a starts by u)."""
        zb = self.Z(b, t)
        if zb is False:
            return
        self.cnf.add(list(extra) + [-zb if zb is not True else False, self.Z(a, u)])

    def sequence_pairs(self):
        m = self.m
        # Longest start-to-start path between actions (dependencies and chains): where it is at
        # least the first one's duration, the pair's order is fixed already.
        index = {a: i for i, a in enumerate(m.acts)}
        succ = {a: [] for a in m.acts}
        for a, b, lag in m.edges:
            succ[a].append((b, lag))
        topo = sorted(m.acts, key=lambda a: m.ES[a])  # ES is a longest path: a topological key
        for r, acts in enumerate(m.by_rank):
            if r in m.relaxed:
                continue
            mine = set(acts)
            fixed = set()
            for a in acts:
                dist = {a: 0}
                for x in topo:
                    if x not in dist:
                        continue
                    for y, lag in succ[x]:
                        if dist.get(y, -1) < dist[x] + lag:
                            dist[y] = dist[x] + lag
                for b, d in dist.items():
                    if b is not a and b in mine and d >= m.dur[a]:
                        fixed.add((index[a], index[b]))
            for a, b in itertools.combinations(acts, 2):
                ia, ib = index[a], index[b]
                if (ia, ib) in fixed or (ib, ia) in fixed:
                    continue
                a_first_possible = m.ES[a] + m.dur[a] <= m.LS[b]
                b_first_possible = m.ES[b] + m.dur[b] <= m.LS[a]
                if not a_first_possible and not b_first_possible:
                    raise Unsat(f"two actions of rank {r} cannot both fit their windows")
                if not b_first_possible:
                    o = True
                elif not a_first_possible:
                    o = False
                else:
                    o = self.cnf.var()
                # o: b after a; not o: a after b.
                if o is not False:
                    ex = [] if o is True else [-o]
                    for t in range(m.ES[b], m.LS[b] + 1):
                        self.implies(b, t, a, t - m.dur[a], ex)
                if o is not True:
                    ex = [] if o is False else [o]
                    for t in range(m.ES[a], m.LS[a] + 1):
                        self.implies(a, t, b, t - m.dur[b], ex)

    def memory(self):
        m, p = self.m, self.m.p
        free_kind = "W" if p["backward"] == "split" else "B"  # input_grad_frees is 0 (main)
        M = p["M"]
        act = p["arrays"]["activation"]
        for r, acts in enumerate(m.by_rank):
            if r in m.relaxed:
                continue
            stages = sorted({a[1] for a in acts})
            room = m.room[r]
            lo = min(m.ES[a] for a in acts)
            hi = max(m.LS[a] + m.dur[a] for a in acts)
            for t in range(lo, hi + 1):
                self.memory_at(t, stages, act, room, M, free_kind)

    def memory_at(self, t, stages, act, room, M, free_kind):
        m = self.m
        # f_lit[s][k]: at least k F's of stage s started by t; w_lit[s][k]: k frees ended by t.
        f_lit = {s: [True] + [self.Z(("F", s, k - 1), t) for k in range(1, M + 1)]
                 for s in stages}
        w_lit = {}
        for s in stages:
            d = m.dur[(free_kind, s, 0)]
            w_lit[s] = [True] + [self.Z((free_kind, s, k - 1), t - d) for k in range(1, M + 1)]
        last = stages[-1]
        for x in itertools.product(range(M + 1), repeat=len(stages)):
            if any(f_lit[s][x[i]] is False for i, s in enumerate(stages)):
                continue  # cannot have started that many by t
            if sum(act[s] * x[i] for i, s in enumerate(stages)) <= room + 1e-9:
                continue
            head = [-f_lit[s][x[i]] for i, s in enumerate(stages) if f_lit[s][x[i]] is not True]
            for y in itertools.product(*(range(x[i] + 1) for i in range(len(stages) - 1))):
                held = sum(act[s] * (x[i] - y[i]) for i, s in enumerate(stages[:-1]))
                # The largest y_last with held + act (x_last - y_last) > room.
                xl = x[-1]
                ymax = None
                for yl in range(xl, -1, -1):
                    if held + act[last] * (xl - yl) > room + 1e-9:
                        ymax = yl
                        break
                if ymax is None:
                    continue
                lits = list(head)
                lits += [w_lit[s][y[i] + 1] for i, s in enumerate(stages[:-1]) if y[i] + 1 <= M]
                if ymax + 1 <= M:
                    lits.append(w_lit[last][ymax + 1])
                self.cnf.add(lits)

    def decode(self, true_vars):
        m = self.m
        start = {}
        for a in m.acts:
            start[a] = next((t for t in range(m.ES[a], m.LS[a]) if self.z[a, t] in true_vars),
                            m.LS[a])
        return [sorted(acts, key=lambda a: (start[a], a)) for acts in m.by_rank]


def run_cadical(cnf_path, time_limit):
    cmd = ["cadical", "-q", "-t", str(max(1, int(math.ceil(time_limit)))), cnf_path]
    t0 = time.monotonic()
    try:
        run = subprocess.run(cmd, capture_output=True, text=True)
    except FileNotFoundError:
        raise ti_oracle.BadInput("cadical is not installed (apt-get install cadical)") from None
    seconds = time.monotonic() - t0
    status, true_vars = "unknown", set()
    for line in run.stdout.splitlines():
        if line.startswith("s "):
            status = {"s SATISFIABLE": "feasible", "s UNSATISFIABLE": "infeasible"}.get(
                line.strip(), "unknown")
        elif line.startswith("v "):
            true_vars.update(int(v) for v in line.split()[1:] if int(v) > 0)
    if run.returncode not in (0, 10, 20):  # killed, or out of memory: no answer
        status = "unknown"
    return status, true_vars, seconds


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 epilog="The model and the proofs: this file's doc comment.")
    ap.add_argument("problem", help="exact_search's problem file (tests/oracle/README.md)")
    ap.add_argument("--below", type=float, required=True, metavar="T",
                    help="is there an order whose makespan is below T?")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--grid", type=float, help="every cost is a multiple of G: exact")
    g.add_argument("--floor-grid", type=float,
                   help="round every cost down to G: a relaxation ('infeasible' still proves)")
    ap.add_argument("--time-limit", type=float, default=600.0, metavar="S",
                    help="seconds (default 600); then the answer is 'unknown'")
    ap.add_argument("--csv", help="write the order found to this file")
    ap.add_argument("--ppsched", help="check the order with this ppsched binary's simulate")
    ap.add_argument("--costs", help="cost JSON for ppsched (default: costs.json beside PROBLEM)")
    ap.add_argument("--keep-cnf", help="write the clauses (DIMACS) to this file and keep it")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    grid = args.grid if args.grid is not None else args.floor_grid
    try:
        if not all(math.isfinite(x) and x > 0 for x in (grid, args.below, args.time_limit)):
            raise ti_oracle.BadInput("--grid/--floor-grid, --below and --time-limit must be "
                                     "finite and > 0")
        p = ti_oracle.read_problem(args.problem)
        if any(x < 0 for k in ("activation", "parameters") for x in p["arrays"][k]):
            raise ti_oracle.BadInput("activations and parameters must be >= 0")
        relaxed = args.floor_grid is not None
        if relaxed:
            p = floor_problem(p, grid)
        model = ti_oracle.Model(p, grid, args.below)
        if model.room is not None and p["backward"] == "split" and p["phi"] != 0:
            raise ti_oracle.BadInput("memory limits need input_grad_frees 0 here")
    except (ti_oracle.BadInput, OSError) as e:
        print(f"sat_oracle: {e}", file=sys.stderr)
        return 2
    out = {"status": None, "below": args.below, "grid": grid, "horizon_units": model.H}
    if relaxed:
        out["floored"] = True
    why = model.trivially_infeasible()
    if why:
        out.update(status="infeasible", reason=why, seconds=round(time.monotonic() - t0, 2))
        print(json.dumps(out))
        return 0
    if args.keep_cnf:
        cnf_path = args.keep_cnf
    else:
        fd, cnf_path = tempfile.mkstemp(suffix=".cnf")
        os.close(fd)
    try:
        enc = Encoding(model, cnf_path)
        try:
            enc.build()
        except Unsat as e:
            enc.cnf.f.close()
            with open(cnf_path, "w") as f:  # --keep-cnf: an unsatisfiable file, not a cut one
                f.write("p cnf 0 1\n0\n")
            out.update(status="infeasible", reason=str(e),
                       seconds=round(time.monotonic() - t0, 2))
            print(json.dumps(out))
            return 0
        out["variables"] = enc.cnf.nvars
        out["clauses"] = enc.cnf.nclauses
        out["encode_seconds"] = round(time.monotonic() - t0, 2)
        left = args.time_limit - (time.monotonic() - t0)
        status, true_vars, solver_seconds = run_cadical(cnf_path, max(1.0, left))
    except ti_oracle.BadInput as e:
        print(f"sat_oracle: {e}", file=sys.stderr)
        return 2
    finally:
        if not args.keep_cnf:
            os.remove(cnf_path)
    out["solver_seconds"] = round(solver_seconds, 2)
    if status == "feasible" and relaxed:
        # An order of the rounded problem. Timed with the real costs by `ppsched simulate`
        # (with --ppsched) it may still be faster than T: then it answers the real question.
        order = enc.decode(true_vars)
        real = args.ppsched is not None and ti_oracle.confirm_order(args, p, model, order, grid,
                                                                    out)
        status = "feasible" if real else "relaxation_feasible"
    elif status == "feasible":
        order = enc.decode(true_vars)
        if not ti_oracle.confirm_order(args, p, model, order, grid, out):
            status = "unknown"
    out["status"] = status
    out["seconds"] = round(time.monotonic() - t0, 2)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
