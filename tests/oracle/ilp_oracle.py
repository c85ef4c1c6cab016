#!/usr/bin/python3
"""An exact solver of ppsched's scheduling problem, used ONLY as a test oracle for `ppsched tune`.

It solves, with an integer linear program (PuLP + CBC, Debian's python3-pulp and coinor-cbc),
the problem `include/ppsched/algorithms/simulate.hpp` defines for a compute-only order:

- S = P * V stages; stage s runs on rank `stage_to_rank(s)` (config.hpp): `loop`: s % P;
  `v`: pass = s // P, pos = s % P, rank pos on even passes and P-1-pos on odd ones.
- Every microbatch j runs stages 0..S-1. Actions per (s, j): F, I, W ("split") or F, B
  ("fused"). F(s,j) starts after F(s-1,j) ends (+ c when the two stages are on different
  ranks); I(s,j) (or B) after F(s,j) and after I(s+1,j) (+ c across ranks); W(s,j) after I(s,j).
- Each rank runs its actions one at a time, in a sequence of our choice. The simulator starts
  every action as early as its rank and inputs allow, so the best makespan over sequences equals
  the best makespan over (sequence, start times) pairs, which is what the ILP minimises.
- Memory depends on the sequence only: walking a rank's sequence, F adds activation[s], I
  subtracts phi * activation[s], W subtracts (1 - phi) * activation[s], B subtracts
  activation[s]; after every F, parameters(rank) + held <= memory_limit.
  (In split mode ppsched also accepts B; a B never beats its I followed at once by its W, which
  starts I earlier and frees the same memory no later at every F, so the optimum uses I and W.)

Usage:
  ilp_oracle.py PROBLEM.json [--time-limit S] [--csv OUT.csv] [--start ORDER.csv]...
                [--no-symmetry] [--threads N] [--log CBC.log]
      prints {"status", "makespan", "bound", "seconds", "order", ...}: status "optimal" (CBC
      proved it), "feasible" (time ran out; bound is still proven), "infeasible" (the memory
      limit is below the least any order needs) or "unknown" (CBC failed); makespan is the
      order's, replayed by `evaluate`; the time limit is wall-clock and covers everything
  ilp_oracle.py PROBLEM.json --check ORDER.csv
      evaluates a given order under the same model: {"makespan", "peak_memory", ...}
  ilp_oracle.py PROBLEM.json --costs-json OUT.json
      writes the problem's costs as a ppsched cost file (io/cost_json.hpp)

PROBLEM.json ('-' for stdin): {"ranks": P, "microbatches": M, "stages_per_rank": V,
"placement": "loop"|"v", "backward": "split"|"fused", "F": [...], "I": [...], "W": [...],
"B": [...] (fused), "activation": [...], "parameters": [...] (per stage), "message": c,
"input_grad_frees": phi, "memory_limit": L or null, "time_limit": seconds}.
"""

import argparse
import json
import math
import os
import re
import sys
import tempfile
import time

EPS = 1e-9


class ProblemError(ValueError):
    """A malformed problem or order."""


class Problem:
    """A scheduling problem, with its actions and dependencies."""

    def __init__(self, d):
        try:
            self.P = int(d["ranks"])
            self.M = int(d["microbatches"])
            self.V = int(d.get("stages_per_rank", 1))
        except (KeyError, TypeError, ValueError) as e:
            raise ProblemError(f"ranks, microbatches and stages_per_rank must be integers ({e})")
        if self.P < 1 or self.M < 1 or self.V < 1:
            raise ProblemError("ranks, microbatches and stages_per_rank must be >= 1")
        self.placement = d.get("placement", "loop")
        if self.placement not in ("loop", "v"):
            raise ProblemError("placement must be loop or v")
        self.backward = d.get("backward", "split")
        if self.backward not in ("split", "fused"):
            raise ProblemError("backward must be split or fused")
        self.S = self.P * self.V
        kinds = ["F", "I", "W"] if self.backward == "split" else ["F", "B"]
        self.kinds = kinds
        self.cost = {}
        for k in kinds + ["activation", "parameters"]:
            v = d.get(k, 0.0 if k == "parameters" else None)
            if v is None:
                raise ProblemError(f"missing per-stage array '{k}'")
            if not isinstance(v, list):
                v = [v] * self.S
            if len(v) != self.S:
                raise ProblemError(f"'{k}' has {len(v)} entries, expected {self.S} (one per stage)")
            v = [float(x) for x in v]
            if any(not math.isfinite(x) or x < 0 for x in v):
                raise ProblemError(f"'{k}' must be finite and non-negative")
            # Positive durations make the order variables agree with the start times (see
            # `solve`): a zero-length action could share its start with another.
            if k in kinds and any(x <= 0 for x in v):
                raise ProblemError(f"durations '{k}' must be positive")
            self.cost[k] = v
        self.c = float(d.get("message", 0.0))
        self.phi = float(d.get("input_grad_frees", 0.0))
        if not (self.c >= 0 and math.isfinite(self.c)):
            raise ProblemError("message must be finite and >= 0")
        if not 0 <= self.phi <= 1:
            raise ProblemError("input_grad_frees must be in [0, 1]")
        L = d.get("memory_limit")
        self.L = None if L is None else float(L)
        self.time_limit = float(d.get("time_limit", 60))
        self.rank_of_stage = [self.stage_to_rank(s) for s in range(self.S)]
        self.params = [0.0] * self.P
        for s in range(self.S):
            self.params[self.rank_of_stage[s]] += self.cost["parameters"][s]
        self.back = "I" if self.backward == "split" else "B"
        self.actions = [(k, s, j) for s in range(self.S) for j in range(self.M) for k in kinds]
        self.rank_actions = [[] for _ in range(self.P)]
        for a in self.actions:
            self.rank_actions[self.rank(a)].append(a)

    def stage_to_rank(self, s):
        pas, pos = divmod(s, self.P)
        return self.P - 1 - pos if self.placement == "v" and pas % 2 == 1 else pos

    def rank(self, a):
        return self.rank_of_stage[a[1]]

    def dur(self, a):
        return self.cost[a[0]][a[1]]

    def delay(self, s_from, s_to):
        return self.c if self.rank_of_stage[s_from] != self.rank_of_stage[s_to] else 0.0

    def deps(self, a):
        """The actions `a` waits for, each with the delay after its end."""
        k, s, j = a
        if k == "F":
            return [(("F", s - 1, j), self.delay(s - 1, s))] if s > 0 else []
        if k in ("I", "B"):
            out = [(("F", s, j), 0.0)]
            if s + 1 < self.S:
                out.append(((k, s + 1, j), self.delay(s + 1, s)))
            return out
        return [(("I", s, j), 0.0)]  # W

    def least_memory(self):
        """Per rank, the least peak memory any order needs: when F of a microbatch runs on the
        rank's last stage, it holds that microbatch's activations of all its stages (their
        backwards need the last stage's F first)."""
        out = list(self.params)
        for s in range(self.S):
            out[self.rank_of_stage[s]] += self.cost["activation"][s]
        return out

    def exact_text(self):
        """The problem in exact_search's input format (one "key value..." line each)."""
        lines = [f"ranks {self.P}", f"microbatches {self.M}", f"stages_per_rank {self.V}",
                 f"placement {self.placement}", f"backward {self.backward}",
                 f"message {self.c!r}", f"input_grad_frees {self.phi!r}",
                 "memory_limit " + ("none" if self.L is None else repr(self.L))]
        for k in self.kinds + ["activation", "parameters"]:
            lines.append(k + " " + " ".join(repr(x) for x in self.cost[k]))
        return "\n".join(lines) + "\n"

    def ppsched_costs(self):
        """The problem's costs as a ppsched cost file (io/cost_json.hpp)."""
        out = {k: self.cost[k] for k in self.kinds}
        out["activation"] = self.cost["activation"]
        out["parameters"] = self.cost["parameters"]
        out["p2p_latency"] = self.c
        out["input_grad_frees"] = self.phi
        return out


def name(a):
    return f"{a[1]}{a[0]}{a[2]}"


ACTION_RE = re.compile(r"^\s*(\d+)([FIWB])(\d+)\s*$")


def parse_action(text):
    m = ACTION_RE.match(text)
    if not m:
        raise ProblemError(f"not a compute action: '{text}'")
    return (m.group(2), int(m.group(1)), int(m.group(3)))


def read_csv(text):
    """A PyTorch-style CSV (one row per rank, empty cells idle) as lists of actions."""
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        rows.append([parse_action(c) for c in line.split(",") if c.strip()])
    return rows


def write_csv(order):
    return "".join(",".join(name(a) for a in row) + "\n" for row in order)


def evaluate(prob, order):
    """Replays `order` (one action list per rank) as the simulator does: every action starts as
    soon as its rank is free and its inputs have arrived. Returns makespan, start/end times,
    per-rank peaks; raises ProblemError for an incomplete order or a deadlock. In split mode a
    B may stand for an I and its W (as ppsched allows): it lasts I + W and frees everything."""
    if len(order) != prob.P:
        raise ProblemError(f"the order has {len(order)} rows, expected {prob.P}")
    seen = set()
    for r, row in enumerate(order):
        for a in row:
            k, s, j = a
            if s >= prob.S or j >= prob.M or prob.rank(a) != r:
                raise ProblemError(f"{name(a)} is out of range or on the wrong rank ({r})")
            if a in seen:
                raise ProblemError(f"{name(a)} runs twice")
            if k in ("I", "W") and prob.backward == "fused":
                raise ProblemError(f"{name(a)}: the backward is fused (B only)")
            seen.add(a)
    for s in range(prob.S):
        for j in range(prob.M):
            has = lambda k: (k, s, j) in seen
            split = has("I") and has("W") and not has("B")
            if not has("F") or not (split or (has("B") and not has("I") and not has("W"))):
                raise ProblemError(f"stage {s} microbatch {j} lacks F, or I and W, or B")

    def dur(a):
        if a[0] == "B" and prob.backward == "split":
            return prob.cost["I"][a[1]] + prob.cost["W"][a[1]]
        return prob.dur(a)

    fwd, grad = {}, {}  # (s, j) -> end of its F, of its I or B
    end, start = {}, {}
    pos = [0] * prob.P
    free = [0.0] * prob.P
    progress = True
    while progress:
        progress = False
        for r in range(prob.P):
            while pos[r] < len(order[r]):
                a = order[r][pos[r]]
                k, s, j = a
                if k == "F":
                    need = [(fwd, s - 1, prob.delay(s - 1, s))] if s > 0 else []
                elif k == "W":
                    need = [(grad, s, 0.0)]
                else:
                    need = [(fwd, s, 0.0)]
                    if s + 1 < prob.S:
                        need.append((grad, s + 1, prob.delay(s + 1, s)))
                ready = free[r]
                blocked = False
                for table, ps, dl in need:
                    if (ps, j) not in table:
                        blocked = True
                        break
                    ready = max(ready, table[(ps, j)] + dl)
                if blocked:
                    break
                start[a] = ready
                end[a] = ready + dur(a)
                if k == "F":
                    fwd[(s, j)] = end[a]
                elif k != "W":
                    grad[(s, j)] = end[a]
                free[r] = end[a]
                pos[r] += 1
                progress = True
    if any(pos[r] < len(order[r]) for r in range(prob.P)):
        stuck = [f"rank {r} at {name(order[r][pos[r]])}" for r in range(prob.P)
                 if pos[r] < len(order[r])]
        raise ProblemError("deadlock: " + ", ".join(stuck))
    peak_act = []
    for r in range(prob.P):
        held = peak = 0.0
        for k, s, j in order[r]:
            a = prob.cost["activation"][s]
            if k == "F":
                held += a
                peak = max(peak, held)
            elif k == "I":
                held -= a * prob.phi
            elif k == "W":
                held -= a * (1 - prob.phi)
            else:
                held -= a
        peak_act.append(peak)
    peak_mem = [prob.params[r] + peak_act[r] for r in range(prob.P)]
    return {
        "makespan": max(end.values()),
        "start": start,
        "end": end,
        "peak_activations": peak_act,
        "peak_memory": peak_mem,
        "fits": prob.L is None or all(m <= prob.L + 1e-9 for m in peak_mem),
    }


def canonical(prob, order):
    """Relabels microbatches so that on every stage the k-th action of each kind is microbatch
    k. Start times, makespan and memory are unchanged (see `solve`, symmetry breaking)."""
    count = {}
    out = []
    for row in order:
        new = []
        for k, s, j in row:
            n = count.get((k, s), 0)
            count[(k, s)] = n + 1
            new.append((k, s, n))
        out.append(new)
    return out


def serial_order(prob):
    """One microbatch after another: feasible whenever any order is (it needs exactly the
    least memory)."""
    order = [[] for _ in range(prob.P)]
    for j in range(prob.M):
        seq = [("F", s, j) for s in range(prob.S)]
        for s in reversed(range(prob.S)):
            seq.append((prob.back, s, j))
            if prob.backward == "split":
                seq.append(("W", s, j))
        for a in seq:
            order[prob.rank(a)].append(a)
    return order


def greedy(prob, cap, w_last):
    """A list schedule: each rank, when it decides, runs a ready backward first, then a forward
    (if memory and the in-flight cap `cap` allow), then a W (last when `w_last`, else before
    the forward). Returns an order, or None when it gets stuck."""
    nxt = {(k, s): 0 for k in prob.kinds for s in range(prob.S)}
    end = {}
    free = [0.0] * prob.P
    held = [0.0] * prob.P
    started = [0] * prob.P  # microbatches entered on the rank (F of its first stage)
    done = [0] * prob.P  # microbatches that left the rank (backward of its first stage done)
    first = [min(s for s in range(prob.S) if prob.rank_of_stage[s] == r) for r in range(prob.P)]
    order = [[] for _ in range(prob.P)]
    left = len(prob.actions)
    prio = {"I": 0, "B": 0, "F": 1, "W": 2 if w_last else 0.5}
    while left:
        best = None
        for r in range(prob.P):
            cands = []
            for (k, s), j in nxt.items():
                if j >= prob.M or prob.rank_of_stage[s] != r:
                    continue
                a = (k, s, j)
                if k == "F":
                    act = prob.cost["activation"][s]
                    if prob.L is not None and prob.params[r] + held[r] + act > prob.L + 1e-9:
                        continue
                    if s == first[r] and started[r] - done[r] >= cap:
                        continue
                t = free[r]
                ok = True
                for p, dl in prob.deps(a):
                    if p not in end:
                        ok = False
                        break
                    t = max(t, end[p] + dl)
                if ok:
                    cands.append((t, a))
            if not cands:
                continue
            t = min(c[0] for c in cands)
            ready = [a for tt, a in cands if tt <= t + EPS]
            a = min(ready, key=lambda x: (prio[x[0]], x[2], -x[1]))
            if best is None or t < best[0] - EPS:
                best = (t, r, a)
        if best is None:
            return None
        t, r, a = best
        k, s, j = a
        end[a] = t + prob.dur(a)
        free[r] = end[a]
        act = prob.cost["activation"][s]
        held[r] += act if k == "F" else -act * (prob.phi if k == "I" else 1 - prob.phi if k == "W" else 1)
        if k == "F" and s == first[r]:
            started[r] += 1
        last_kind = "W" if prob.backward == "split" else "B"
        if k == last_kind and s == first[r]:
            done[r] += 1
        nxt[(k, s)] += 1
        order[r].append(a)
        left -= 1
    return order


def split_fused(prob, order):
    """In split mode, each B of `order` as its I followed at once by its W (never slower, and
    the same memory at every F; see the module's doc)."""
    if prob.backward != "split":
        return order
    out = []
    for row in order:
        new = []
        for k, s, j in row:
            new += [("I", s, j), ("W", s, j)] if k == "B" else [(k, s, j)]
        out.append(new)
    return out


def improve(prob, order, ev, budget):
    """Hill climbing on adjacent swaps within a rank (first improvement), for `budget`
    seconds: a better warm start for CBC, which then fixes more order pairs and tightens its
    big-M constants. Keeps memory within the limit."""
    deadline = time.monotonic() + budget
    order = [list(row) for row in order]
    improved = True
    while improved and time.monotonic() < deadline:
        improved = False
        for r in range(prob.P):
            row = order[r]
            for i in range(len(row) - 1):
                if time.monotonic() >= deadline:
                    break
                x, y = row[i], row[i + 1]
                if x[:2] == y[:2]:
                    continue  # same kind and stage: only a relabelling
                row[i], row[i + 1] = y, x
                try:
                    cand = evaluate(prob, order)
                except ProblemError:
                    cand = None
                if cand and cand["fits"] and cand["makespan"] < ev["makespan"] - 1e-9:
                    ev = cand
                    improved = True
                else:
                    row[i], row[i + 1] = x, y
    order = canonical(prob, order)
    return order, evaluate(prob, order)


def best_heuristic(prob, starts=(), budget=0.0):
    """The best memory-feasible order of a few heuristics and of `starts` (orders given by the
    caller, e.g. built-in schedules; any that is invalid or does not fit is ignored), improved
    by local search for `budget` seconds, with its evaluation."""
    best = None
    cands = [serial_order(prob)]
    for cap in range(1, prob.M + 1):
        for w_last in (True, False):
            o = greedy(prob, cap, w_last)
            if o is not None:
                cands.append(o)
    for o in starts:
        cands.append(split_fused(prob, o))
    for o in cands:
        try:
            o = canonical(prob, o)
            ev = evaluate(prob, o)
        except ProblemError:
            continue
        if ev["fits"] and (best is None or ev["makespan"] < best[1]["makespan"] - EPS):
            best = (o, ev)
    if budget > 0:
        best = improve(prob, best[0], best[1], budget)
    return best


def jackson_bound(jobs):
    """A lower bound on the makespan of one machine running `jobs` (release, duration, tail):
    the optimum of its preemptive relaxation, Jackson's schedule (always run the released job
    with the longest tail). Each rank is such a machine, with heads as releases and tails as
    the least time after an action ends. O(n log n)."""
    import heapq

    jobs = sorted(jobs)
    heap, t, best, i = [], 0.0, 0.0, 0
    while i < len(jobs) or heap:
        if not heap and t < jobs[i][0]:
            t = jobs[i][0]
        while i < len(jobs) and jobs[i][0] <= t:
            heapq.heappush(heap, (-jobs[i][2], jobs[i][1]))
            i += 1
        negq, left = heapq.heappop(heap)
        run = left if i == len(jobs) else min(left, jobs[i][0] - t)
        t += run
        if run >= left - 1e-12:
            best = max(best, t - negq)
        else:
            heapq.heappush(heap, (negq, left - run))
    return best


def solve(prob, time_limit=None, symmetry=True, threads=1, log=None, starts=()):
    """Solves `prob` exactly (up to the time limit) with CBC. `starts`: orders (lists of
    actions per rank) to start from; the best that fits is CBC's first solution. Returns the
    result dictionary."""
    import pulp  # only the solver needs it (--check does not)

    t0 = time.monotonic()
    time_limit = prob.time_limit if time_limit is None else time_limit
    least = prob.least_memory()
    if prob.L is not None and any(l > prob.L + 1e-9 for l in least):
        return {"status": "infeasible", "makespan": None, "bound": None,
                "seconds": time.monotonic() - t0, "order": None,
                "reason": f"memory limit {prob.L} below the least memory {max(least)} any order needs"}
    # Never None: the serial order fits. Local search gets up to a tenth of the time limit.
    heur_order, heur = best_heuristic(prob, starts, budget=min(10.0, time_limit / 10))
    ub = heur["makespan"]

    # Precedence graph: dependencies, plus (with `symmetry`) T(s,j) before T(s,j+1) for every
    # kind T and stage s.
    #
    # Why the symmetry breaking keeps an optimum: microbatches are identical (costs depend on
    # the stage only). Take any optimal order with its start times; on each stage and for each
    # kind, relabel the k-th action in the rank's sequence as microbatch k, keeping every start
    # time and every position. Each dependency still holds: if x_j >= y_j + d for all j (e.g.
    # start of F(s,j) >= end of F(s-1,j) + c), then the k-th smallest x is >= the k-th smallest
    # y + d, and the relabelled actions are exactly these sorted sequences (a rank's sequence
    # runs in increasing start times, the durations of a stage's actions of one kind are
    # equal). Memory is unchanged: it depends on each position's kind and stage only. So the
    # relabelled order is valid, as fast, as small, and satisfies the ordering.
    succ = {a: [] for a in prob.actions}
    pred = {a: [] for a in prob.actions}
    for a in prob.actions:
        for p, dl in prob.deps(a):
            succ[p].append((a, dl))
            pred[a].append((p, dl))
        if symmetry and a[2] + 1 < prob.M:
            b = (a[0], a[1], a[2] + 1)
            succ[a].append((b, 0.0))
            pred[b].append((a, 0.0))
    # Topological order (Kahn), heads and tails (longest paths before a start, after an end).
    indeg = {a: len(pred[a]) for a in prob.actions}
    topo = [a for a in prob.actions if indeg[a] == 0]
    for a in topo:
        for b, _ in succ[a]:
            indeg[b] -= 1
            if indeg[b] == 0:
                topo.append(b)
    assert len(topo) == len(prob.actions)
    head = {}
    for a in topo:
        head[a] = max((head[p] + prob.dur(p) + dl for p, dl in pred[a]), default=0.0)
    tail = {}
    for a in reversed(topo):
        tail[a] = max((dl + prob.dur(b) + tail[b] for b, dl in succ[a]), default=0.0)
    index = {a: i for i, a in enumerate(topo)}
    desc = {}
    for a in reversed(topo):
        bits = 0
        for b, _ in succ[a]:
            bits |= desc[b] | (1 << index[b])
        desc[a] = bits

    def before(x, y):  # fixed precedence
        return (desc[x] >> index[y]) & 1

    lp = pulp.LpProblem("ppsched", pulp.LpMinimize)
    cmax = pulp.LpVariable("cmax", lowBound=0, upBound=ub + 1e-6)
    lp += cmax
    start = {}
    for a in prob.actions:
        start[a] = pulp.LpVariable("t_" + name(a), lowBound=head[a],
                                   upBound=max(head[a], ub + 1e-6 - prob.dur(a) - tail[a]))
    # Dependencies (the symmetry edges on a rank are sequencing, also start >= end).
    for a in prob.actions:
        for p, dl in pred[a]:
            lp += start[a] >= start[p] + prob.dur(p) + dl
        lp += cmax >= start[a] + prob.dur(a) + tail[a]
    combinatorial = max(head[a] + prob.dur(a) + tail[a] for a in prob.actions)
    # Sequencing on each rank: before[x][y] is 1, 0, or a binary (1 = x before y).
    order_var = {}
    nbin = 0
    rel = {}
    for r in range(prob.P):
        acts = sorted(prob.rank_actions[r], key=lambda a: index[a])
        load = sum(prob.dur(a) for a in acts)
        combinatorial = max(combinatorial, min(head[a] for a in acts) + load
                            + min(tail[a] for a in acts),
                            jackson_bound([(head[a], prob.dur(a), tail[a]) for a in acts]))
        for i, x in enumerate(acts):
            for y in acts[i + 1:]:
                if before(x, y):
                    rel[(x, y)], rel[(y, x)] = 1, 0
                    continue
                # y before x impossible within the upper bound: then x before y.
                y_first_ok = head[y] + prob.dur(y) + prob.dur(x) + tail[x] <= ub + 1e-7
                x_first_ok = head[x] + prob.dur(x) + prob.dur(y) + tail[y] <= ub + 1e-7
                if not y_first_ok:
                    rel[(x, y)], rel[(y, x)] = 1, 0
                    lp += start[y] >= start[x] + prob.dur(x)
                    continue
                if not x_first_ok:
                    rel[(x, y)], rel[(y, x)] = 0, 1
                    lp += start[x] >= start[y] + prob.dur(y)
                    continue
                o = pulp.LpVariable(f"o_{name(x)}_{name(y)}", cat="Binary")
                nbin += 1
                order_var[(x, y)] = o
                rel[(x, y)], rel[(y, x)] = o, 1 - o
                # Big-M: start[x] + d_x <= ub - tail[x] and start[y] >= head[y].
                m_xy = max(0.0, ub - tail[x] - head[y]) + 1e-6
                m_yx = max(0.0, ub - tail[y] - head[x]) + 1e-6
                lp += start[y] >= start[x] + prob.dur(x) - m_xy * (1 - o)
                lp += start[x] >= start[y] + prob.dur(y) - m_yx * o
        # Transitivity along fixed chains (a before b fixed, b an immediate successor of a
        # among the rank's actions): z before a implies z before b, and b before z implies a
        # before z (the same row). Redundant for integer solutions (the start times order
        # them), but they tighten the relaxation; about O(actions^2) rows.
        if os.environ.get("ILP_ORACLE_CHAINS", "1") == "1":
            rank_bits = 0
            for a in acts:
                rank_bits |= 1 << index[a]
            for a in acts:
                later = desc[a] & rank_bits
                nearest = [b for b in acts if (later >> index[b]) & 1 and not any(
                    (desc[c] >> index[b]) & 1 for c in acts if (later >> index[c]) & 1)]
                for b in nearest:
                    for z in acts:
                        if z in (a, b):
                            continue
                        za, zb = rel[(z, a)], rel[(z, b)]
                        if not (isinstance(za, int) and isinstance(zb, int)):
                            lp += zb >= za
        # Energy: whatever follows x on its rank runs between x's end and the makespan, and
        # whatever precedes it runs between the rank's earliest start and x's start.
        h0 = min(head[a] for a in acts)
        for x in acts:
            after = [prob.dur(y) * rel[(x, y)] for y in acts if y != x]
            ahead = [prob.dur(y) * rel[(y, x)] for y in acts if y != x]
            lp += cmax >= start[x] + prob.dur(x) + pulp.lpSum(after)
            lp += start[x] >= h0 + pulp.lpSum(ahead)
        # Memory at each F: parameters + this F + earlier Fs - earlier frees <= limit.
        if prob.L is not None:
            for x in acts:
                if x[0] != "F":
                    continue
                terms = []
                for y in acts:
                    if y == x:
                        continue
                    a = prob.cost["activation"][y[1]]
                    w = {"F": a, "I": -a * prob.phi, "W": -a * (1 - prob.phi), "B": -a}[y[0]]
                    if w != 0:
                        terms.append(w * rel[(y, x)])
                lp += (prob.params[r] + prob.cost["activation"][x[1]] + pulp.lpSum(terms)
                       <= prob.L + 1e-9)
    lp += cmax >= combinatorial
    # Memory over time (a valid cut, linear in the start times): a rank's held activations
    # never exceed limit - parameters at any time (between two Fs they only fall), and a
    # microbatch holds a stage's activation from its F's start to the end of the action that
    # frees it (I frees phi, W the rest; B all). So the integral of the held memory, this sum,
    # is at most (limit - parameters) * makespan.
    if prob.L is not None:
        for r in range(prob.P):
            area = []
            for (k, s, j) in prob.rank_actions[r]:
                a = prob.cost["activation"][s]
                if k == "F" or a == 0:
                    continue
                share = {"I": prob.phi, "W": 1 - prob.phi, "B": 1.0}[k]
                if share > 0:
                    x = (k, s, j)
                    area.append(a * share * (start[x] + prob.dur(x) - start[("F", s, j)]))
            if area:
                lp += pulp.lpSum(area) <= (prob.L - prob.params[r]) * cmax

    # Warm start from the heuristic order (already canonical, so it meets the symmetry order).
    pos = {a: (r, i) for r, row in enumerate(heur_order) for i, a in enumerate(row)}
    for a in prob.actions:
        start[a].setInitialValue(heur["start"][a])
    for (x, y), o in order_var.items():
        o.setInitialValue(1 if pos[x][1] < pos[y][1] else 0)
    cmax.setInitialValue(ub)

    # CBC now and then dies (a segfault in a cut generator, seen once in ~300 solves, not on
    # a rerun): then it is run once more, and a second failure is reported as "unknown".
    crashed = None
    for attempt in range(2):
        tmpdir = tempfile.mkdtemp(prefix="ilp_oracle_")
        logpath = os.path.join(tmpdir, "cbc.log")
        # The time limit covers the whole solve: CBC gets what is left (at least 1 s).
        cbc_limit = max(1.0, time_limit - (time.monotonic() - t0))
        solver = pulp.COIN_CMD(path=pulp_cbc_path(), msg=False, timeLimit=cbc_limit,
                               warmStart=True, threads=threads, logPath=logpath,
                               keepFiles=False, timeMode="elapsed")
        # CBC's defaults (allowableGap 1e-7, increment 1e-10, ratioGap 0) make "optimal" exact
        # to about 1e-7 in makespan units.
        crashed = None
        try:
            lp.solve(solver)
        except pulp.PulpSolverError as e:
            crashed = str(e)
        with open(logpath) as f:
            text = f.read()
        if log:
            with open(log, "w") as f:
                f.write(text)
        os.remove(logpath)
        os.rmdir(tmpdir)
        if crashed is None:
            break
    if crashed is not None:
        return {"status": "optimal" if ub <= combinatorial + 1e-9 else "unknown",
                "makespan": ub, "bound": min(ub, combinatorial),
                "seconds": time.monotonic() - t0,
                "order": [[name(a) for a in row] for row in heur_order],
                "peak_memory": heur["peak_memory"], "heuristic_makespan": ub,
                "reason": "CBC failed twice: " + crashed, "binaries": nbin}

    # CBC's own clock: on a loaded machine its CPU seconds are well below the wall seconds.
    clock = re.search(r"Total time \(CPU seconds\):\s*([0-9.]+)\s*\(Wallclock seconds\):\s*([0-9.]+)",
                      text)
    cbc_times = {"cbc_cpu_seconds": float(clock.group(1)),
                 "cbc_wall_seconds": float(clock.group(2))} if clock else {}
    result_line = re.search(r"^Result - (.*)$", text, re.M)
    result = result_line.group(1).strip() if result_line else ""
    # CBC's solution file starts with "Optimal" only when it proved the optimum (a MIP, or an
    # LP when every order is fixed); a stop on the time limit gives "Stopped on time".
    proven = lp.sol_status == pulp.LpSolutionOptimal
    lower = re.findall(r"^Lower bound:\s*([-0-9.eE+]+)", text, re.M)
    lower += re.findall(r"best possible ([-0-9.eE+]+)", text)
    bound = combinatorial
    if proven:
        bound = max(bound, pulp.value(cmax))
    elif lower:
        bound = max(bound, max(float(x) for x in lower))
    if result.startswith("Problem proven infeasible"):
        # Cannot happen (the warm start is feasible) unless numerics go wrong: say so.
        return {"status": "unknown", "makespan": ub, "bound": bound,
                "seconds": time.monotonic() - t0, "order": [[name(a) for a in row] for row in heur_order],
                "reason": "CBC reported infeasible although a feasible order is known",
                "binaries": nbin}

    # The ILP's order: by start time on each rank, ties by the order variables.
    order = heur_order
    if lp.sol_status in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible):
        order = []
        for r in range(prob.P):
            acts = list(prob.rank_actions[r])
            npred = {x: sum(1 for y in acts if y != x and _val(rel[(y, x)]) > 0.5) for x in acts}
            acts.sort(key=lambda a: (round(start[a].value(), 6), npred[a]))
            order.append(acts)
        try:
            ev = evaluate(prob, order)
        except ProblemError:
            ev = None
        if ev is None or not ev["fits"] or ev["makespan"] > heur["makespan"] + 1e-9:
            order, ev = heur_order, heur
    else:
        ev = heur
    makespan = ev["makespan"]
    # Optimal only when CBC proved it and the order, replayed exactly, reaches it (big-M
    # tolerances could otherwise hide a slightly different value).
    status = "optimal" if proven and makespan <= bound + 1e-6 else "feasible"
    extra = {}
    if proven and makespan < bound - 1e-6:
        # An order faster than the proven optimum: the ILP and the evaluator disagree.
        status = "unknown"
        extra["reason"] = f"the order replays to {makespan}, below CBC's optimum {bound}"
    if status == "optimal":
        bound = makespan  # proven: CBC's optimum, re-evaluated exactly
    return {
        **extra,
        **cbc_times,
        "status": status,
        "makespan": makespan,
        "bound": min(bound, makespan),
        "seconds": time.monotonic() - t0,
        "order": [[name(a) for a in row] for row in order],
        "peak_memory": ev["peak_memory"],
        "heuristic_makespan": heur["makespan"],
        "cbc_result": result,
        "binaries": nbin,
    }


def _val(v):
    return v if isinstance(v, (int, float)) else v.value()


def pulp_cbc_path():
    for p in ("/usr/bin/cbc", "/usr/local/bin/cbc"):
        if os.path.exists(p):
            return p
    import shutil
    return shutil.which("cbc")


def load_problem(path):
    text = sys.stdin.read() if path == "-" else open(path).read()
    return Problem(json.loads(text))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("problem", help="problem JSON file, '-' for stdin")
    ap.add_argument("--time-limit", type=float, help="CBC's time limit in seconds (default: the problem's, else 60)")
    ap.add_argument("--csv", help="write the best order found to this CSV file")
    ap.add_argument("--check", metavar="ORDER.csv", help="evaluate this order instead of solving")
    ap.add_argument("--costs-json", metavar="OUT.json", help="write the ppsched cost file and exit")
    ap.add_argument("--no-symmetry", action="store_true", help="do not order identical microbatches")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--log", help="keep CBC's log in this file")
    ap.add_argument("--start", action="append", default=[], metavar="ORDER.csv",
                    help="an order to start from (repeatable; ignored when it does not fit)")
    args = ap.parse_args(argv)
    try:
        prob = load_problem(args.problem)
        if args.costs_json:
            with open(args.costs_json, "w") as f:
                json.dump(prob.ppsched_costs(), f)
            return 0
        if args.check:
            ev = evaluate(prob, read_csv(open(args.check).read()))
            print(json.dumps({"makespan": ev["makespan"], "peak_memory": ev["peak_memory"],
                              "peak_activations": ev["peak_activations"], "fits": ev["fits"]}))
            return 0
        starts = [read_csv(open(f).read()) for f in args.start]
        res = solve(prob, args.time_limit, symmetry=not args.no_symmetry,
                    threads=args.threads, log=args.log, starts=starts)
    except (ProblemError, OSError, json.JSONDecodeError) as e:
        print(f"ilp_oracle: error: {e}", file=sys.stderr)
        return 2
    if args.csv and res["order"] is not None:
        with open(args.csv, "w") as f:
            f.write(write_csv([[parse_action(a) for a in row] for row in res["order"]]))
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
