// An exact solver of ppsched's scheduling problem, written for the tests only: a depth-first
// branch and bound that either finds an order faster than a target makespan or proves that none
// exists. Used with the target set to `ppsched tune`'s makespan, "none exists" proves the tuned
// order optimal. It shares no code with the library (its own model, its own timing), so the two
// check each other; the model is the one tests/oracle/README.md describes (and ilp_oracle.py
// solves with CBC).
//
// usage: exact_search PROBLEM.txt [--target T] [--time-limit S] [--node-limit N] [--order OUT.csv]
//        [--memo on|off] [--branch one|all] [--rank-relaxation on|off]
// PROBLEM.txt (ilp_oracle.py --exact-input writes it): lines "key value..." with keys ranks,
// microbatches, stages_per_rank, placement (loop|v), backward (split|fused), message,
// input_grad_frees, memory_limit (a number or none), and per-stage arrays F, I, W (split) or B
// (fused), activation, parameters.
// Prints one JSON line: {"status": "optimal"|"unknown", "makespan": best order found (or null),
// "lower_bound": proven, "target": T, "nodes": N, "memo_hits": H, "rank_bound": the best rank
// relaxation (min(its optimum, T); null when none finished), "seconds": S}. "optimal" with makespan
// null means no order beats the target: the target is then the proven lower bound. Exit 0, or 2 on
// bad input.
//
// The search (why each rule keeps an optimum; durations are positive):
// - Symmetry: microbatches are identical (costs depend on the stage only), so some optimal order
//   runs each (kind, stage) queue in microbatch order (relabel the k-th action of every queue as
//   microbatch k: every dependency x_j >= y_j + d survives sorting both sides, memory depends on
//   positions' kinds and stages only). The search only extends queues in that order.
// - Generation: a node is a partial schedule whose actions all have their dependencies and rank
//   predecessors scheduled, each at its earliest start. Children append one action; they are
//   appended in (start, rank) order, so every schedule is generated exactly once.
// - One rank per node (--branch one, the default; with the memo): children are the actions of
//   one rank only, those that can start by the time c a ready memory-freeing action y of that
//   rank would end, when every other action of the rank must start at c or later (see
//   branching_rank: Giffler and Thompson's rule, kept safe for memory). Were the rank's next
//   action in an optimal completion one that starts after c, running y just before it delays
//   nothing and frees memory sooner. --branch all appends any rank's action instead.
// - Active rule: a child x is cut when another backward-side action y (I, W or B, which only
//   free memory) of x's rank could run and finish before x starts. Moving y into that gap keeps
//   the order valid, within memory and no slower, and lowers the sum of start times; so the
//   optimal order with the least such sum is never cut.
// - Bounds (a node is cut when one reaches the target): every unscheduled action's earliest
//   start (head, through dependencies and queue order) + its duration + the longest path after
//   it (tail); Jackson's preemptive schedule of each rank's unscheduled actions with those heads
//   and tails; memory x time: what a rank must still hold until each held or future
//   activation can be freed at the earliest, over its memory room, after the current time;
//   and the memory ramp (ramp_bound): the idle a rank's room forces before its first frees,
//   and its last forward, after which only the work of what it then holds can remain.
// - The rank relaxation first (rank_relaxation, --rank-relaxation on, the default): each rank
//   alone, solved exactly; when one cannot finish before the target, no order can.
// Worst case exponential, as any exact method for this NP-hard problem: it is a test oracle.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <unordered_map>
#include <queue>
#include <sstream>
#include <string>
#include <vector>

namespace {

enum kind_t { F = 0, I = 1, W = 2, B = 3 };
constexpr char kind_letter[] = {'F', 'I', 'W', 'B'};

struct problem_t {
    int P = 0, M = 0, V = 1, S = 0;
    bool v_placement = false, split = true;
    double message = 0, phi = 0;
    bool limited = false;
    double limit = 0;
    std::map<std::string, std::vector<double>> arrays;
};

[[noreturn]] void fail(const std::string& what) {
    std::cerr << "exact_search: " << what << '\n';
    std::exit(2);
}

problem_t read_problem(const std::string& path) {
    std::ifstream in(path);
    if (!in) fail("cannot read " + path);
    problem_t p;
    std::string line;
    std::map<std::string, std::string> scalars;
    while (std::getline(in, line)) {
        std::istringstream ls(line);
        std::string key;
        if (!(ls >> key)) continue;
        if (key == "F" || key == "I" || key == "W" || key == "B" || key == "activation" ||
            key == "parameters") {
            std::vector<double> v;
            double x;
            while (ls >> x) v.push_back(x);
            p.arrays[key] = v;
        } else {
            std::string value;
            ls >> value;
            scalars[key] = value;
        }
    }
    auto num = [&](const char* k, const char* dflt) -> double {
        auto it = scalars.find(k);
        const std::string s = it == scalars.end() ? std::string(dflt) : it->second;
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        if (s.empty() || *end != '\0' || !std::isfinite(v)) fail(std::string("bad ") + k);
        return v;
    };
    p.P = static_cast<int>(num("ranks", ""));
    p.M = static_cast<int>(num("microbatches", ""));
    p.V = static_cast<int>(num("stages_per_rank", "1"));
    if (p.P < 1 || p.M < 1 || p.V < 1 || p.P > 64 || p.M > 64 || p.V > 8) fail("bad sizes");
    p.S = p.P * p.V;
    p.v_placement = scalars["placement"] == "v";
    if (!p.v_placement && scalars["placement"] != "loop") fail("placement must be loop or v");
    p.split = scalars.count("backward") == 0 || scalars["backward"] == "split";
    if (!p.split && scalars["backward"] != "fused") fail("backward must be split or fused");
    p.message = num("message", "0");
    p.phi = num("input_grad_frees", "0");
    if (scalars.count("memory_limit") && scalars["memory_limit"] != "none") {
        p.limited = true;
        p.limit = num("memory_limit", "");
    }
    const std::vector<std::string> need =
        p.split ? std::vector<std::string>{"F", "I", "W", "activation"}
                : std::vector<std::string>{"F", "B", "activation"};
    for (const auto& k : need)
        if (p.arrays[k].size() != static_cast<std::size_t>(p.S))
            fail(k + " needs one value per stage");
    if (p.arrays["parameters"].empty()) p.arrays["parameters"].assign(p.S, 0.0);
    if (p.arrays["parameters"].size() != static_cast<std::size_t>(p.S)) fail("bad parameters");
    for (const auto& [k, v] : p.arrays)
        for (double x : v)
            if (!std::isfinite(x) || x < 0 || (k != "activation" && k != "parameters" && x <= 0))
                fail(k + ": durations must be positive, activations non-negative");
    return p;
}

// One queue per (kind, stage); action id = queue * M + microbatch.
struct solver_t {
    const problem_t& pb;
    int P, M, S, Q, N;
    std::vector<int> q_kind, q_stage, q_rank;
    std::vector<double> q_dur, q_mem; // duration; memory change (+ for F, - for frees)
    std::vector<std::vector<std::pair<int, double>>> q_deps; // (queue, delay), same microbatch
    std::vector<int> topo;                                   // queues in dependency order
    std::vector<double> tail;                                // per action, static
    std::vector<double> room;                                // per rank: limit - parameters
    std::vector<double> hold_after_f; // per queue of F: least time from F's start to its free

    // State.
    std::vector<int> cnt; // per queue: scheduled microbatches
    std::vector<double> end_t, start_t;
    std::vector<double> free_t, held;
    double t_last = 0;
    int r_last = 0;
    std::vector<std::vector<int>> seq; // per rank, scheduled action ids

    double target;
    double best = std::numeric_limits<double>::infinity();
    std::vector<std::vector<int>> best_seq;
    long long nodes = 0, node_limit;
    double deadline;
    bool stopped = false;
    std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();

    // Scratch.
    std::vector<double> head;
    std::vector<std::vector<std::pair<double, double>>> frees; // per rank: (earliest end, amount)
    std::vector<std::vector<int>> rank_stage_list;             // per rank, increasing

    // Memo (with --memo): for each set of scheduled actions (the queue counters), the times of
    // explored nodes that had it; a node whose times are all >= a stored node's is dominated.
    bool use_memo = false;
    bool one_rank = false; // branch on one rank per node (branching_rank)
    std::vector<std::vector<int>> q_succ;
    std::unordered_map<std::string, std::vector<double>> memo;
    std::size_t memo_doubles = 0, memo_cap = 100'000'000;
    long long memo_hits = 0;

    int rank_of_stage(int s) const {
        const int pass = s / P, pos = s % P;
        return pb.v_placement && pass % 2 == 1 ? P - 1 - pos : pos;
    }
    int queue(int k, int s) const {
        return (pb.split ? (k == B ? 1 : k) : (k == F ? 0 : 1)) * S + s;
    }
    double delay(int s_from, int s_to) const {
        return rank_of_stage(s_from) != rank_of_stage(s_to) ? pb.message : 0.0;
    }

    solver_t(const problem_t& p, double target_, long long node_limit_, double seconds)
        : pb(p), P(p.P), M(p.M), S(p.S), target(target_), node_limit(node_limit_),
          deadline(seconds) {
        const int kinds = p.split ? 3 : 2;
        Q = kinds * S;
        N = Q * M;
        for (int k = 0; k < kinds; ++k) {
            const int kind = p.split ? k : (k == 0 ? F : B);
            for (int s = 0; s < S; ++s) {
                q_kind.push_back(kind);
                q_stage.push_back(s);
                q_rank.push_back(rank_of_stage(s));
                const char* name = kind == F ? "F" : kind == I ? "I" : kind == W ? "W" : "B";
                q_dur.push_back(p.arrays.at(name)[s]);
                const double a = p.arrays.at("activation")[s];
                q_mem.push_back(kind == F   ? a
                                : kind == I ? -a * p.phi
                                : kind == W ? -a * (1 - p.phi)
                                            : -a);
            }
        }
        q_deps.resize(Q);
        for (int q = 0; q < Q; ++q) {
            const int k = q_kind[q], s = q_stage[q];
            if (k == F && s > 0) q_deps[q].push_back({queue(F, s - 1), delay(s - 1, s)});
            if (k == I || k == B) {
                q_deps[q].push_back({queue(F, s), 0.0});
                if (s + 1 < S) q_deps[q].push_back({queue(k, s + 1), delay(s + 1, s)});
            }
            if (k == W) q_deps[q].push_back({queue(I, s), 0.0});
        }
        for (int s = 0; s < S; ++s) topo.push_back(queue(F, s));
        for (int s = S - 1; s >= 0; --s) topo.push_back(queue(p.split ? I : B, s));
        if (p.split)
            for (int s = 0; s < S; ++s) topo.push_back(queue(W, s));
        // Tails: the longest path after an action ends, through dependents and queue order.
        tail.assign(N, 0.0);
        std::vector<std::vector<std::pair<int, double>>> q_succ_dl(Q);
        q_succ.resize(Q);
        for (int q = 0; q < Q; ++q)
            for (auto [d, dl] : q_deps[q]) {
                q_succ_dl[d].push_back({q, dl});
                q_succ[d].push_back(q);
            }
        for (int j = M - 1; j >= 0; --j)
            for (int t = Q - 1; t >= 0; --t) {
                const int q = topo[t], id = q * M + j;
                double v = 0;
                for (auto [z, dl] : q_succ_dl[q]) v = std::max(v, dl + q_dur[z] + tail[z * M + j]);
                if (j + 1 < M) v = std::max(v, q_dur[q] + tail[id + 1]);
                tail[id] = v;
            }
        room.assign(P, std::numeric_limits<double>::infinity());
        if (p.limited) {
            for (int r = 0; r < P; ++r) room[r] = p.limit;
            for (int s = 0; s < S; ++s) room[rank_of_stage(s)] -= p.arrays.at("parameters")[s];
        }
        // The least time an activation of stage s is held: from F's start, F, the path down and
        // back (the backward of every later stage) to its own backward, and, split, its W.
        hold_after_f.assign(Q, 0.0);
        for (int s = 0; s < S; ++s) {
            const int bk = p.split ? I : B;
            double t = q_dur[queue(F, s)];
            for (int u = s + 1; u < S; ++u) t += delay(u - 1, u) + q_dur[queue(F, u)];
            for (int u = S - 1; u > s; --u) t += q_dur[queue(bk, u)] + delay(u, u - 1);
            t += q_dur[queue(bk, s)];
            if (p.split) t += q_dur[queue(W, s)];
            hold_after_f[queue(F, s)] = t;
        }
        cnt.assign(Q, 0);
        end_t.assign(N, 0.0);
        start_t.assign(N, 0.0);
        free_t.assign(P, 0.0);
        held.assign(P, 0.0);
        seq.assign(P, {});
        head.assign(N, 0.0);
        frees.assign(P, {});
        rank_stage_list.assign(P, {});
        for (int st = 0; st < S; ++st) rank_stage_list[rank_of_stage(st)].push_back(st);
    }

    bool scheduled(int q, int j) const { return cnt[q] > j; }

    // Earliest start of the head of queue q, or -1 when a dependency is not scheduled.
    double earliest(int q) const {
        const int j = cnt[q];
        double t = free_t[q_rank[q]];
        for (auto [d, dl] : q_deps[q]) {
            if (!scheduled(d, j)) return -1;
            t = std::max(t, end_t[d * M + j] + dl);
        }
        return t;
    }

    double lower_bound() {
        double lb = 0;
        for (int r = 0; r < P; ++r) lb = std::max(lb, free_t[r]);
        // Heads in dependency order (microbatch-major, then queues). With a memory limit, an F
        // also waits until enough is freed: the Fs that must precede it (its queue's earlier
        // microbatches and the rank's earlier stages' up to its own) plus what the rank holds now
        // must fit, and only frees of earlier microbatches can come first (a later microbatch's
        // backward needs this stage's forward of it, which FIFO puts after this F).
        const bool memory = pb.limited;
        for (int r = 0; r < P && memory; ++r) frees[r].clear();
        for (int j = 0; j < M; ++j) {
            for (int q : topo) {
                if (scheduled(q, j)) continue;
                const int id = q * M + j;
                const int r = q_rank[q];
                double h = std::max(t_last, free_t[r]);
                for (auto [d, dl] : q_deps[q]) {
                    const int did = d * M + j;
                    h = std::max(h, scheduled(d, j) ? end_t[did] + dl : head[did] + q_dur[d] + dl);
                }
                if (j > 0 && !scheduled(q, j - 1)) h = std::max(h, head[id - 1] + q_dur[q]);
                if (memory && q_kind[q] == F) {
                    double need = held[r] - room[r];
                    for (int st : rank_stage_list[r]) {
                        if (st > q_stage[q]) break;
                        need +=
                            pb.arrays.at("activation")[st] * std::max(0, j + 1 - cnt[queue(F, st)]);
                    }
                    if (need > 1e-9) {
                        double got = 0, at = std::numeric_limits<double>::infinity();
                        for (auto [t, amount] : frees[r]) {
                            got += amount;
                            if (got >= need - 1e-9) {
                                at = t;
                                break;
                            }
                        }
                        h = std::max(h, at); // infinite: this F can never fit
                    }
                }
                head[id] = h;
                lb = std::max(lb, h + q_dur[q] + tail[id]);
            }
            if (!memory || !std::isfinite(lb)) continue;
            for (int q : topo) {
                if (scheduled(q, j) || q_mem[q] >= 0) continue;
                const int r = q_rank[q];
                const std::pair<double, double> f{head[q * M + j] + q_dur[q], -q_mem[q]};
                frees[r].insert(std::upper_bound(frees[r].begin(), frees[r].end(), f), f);
            }
        }
        if (lb >= target) return lb;
        // Jackson's preemptive schedule per rank (the optimum of the preemptive one-machine
        // relaxation with release times and tails).
        struct job {
            double r, p, q;
        };
        std::vector<job> jobs;
        for (int r = 0; r < P; ++r) {
            jobs.clear();
            for (int q = 0; q < Q; ++q) {
                if (q_rank[q] != r) continue;
                for (int j = cnt[q]; j < M; ++j)
                    jobs.push_back({head[q * M + j], q_dur[q], tail[q * M + j]});
            }
            if (jobs.empty()) continue;
            std::sort(jobs.begin(), jobs.end(),
                      [](const job& a, const job& b) { return a.r < b.r; });
            std::priority_queue<std::pair<double, double>> ready; // (tail, remaining)
            double t = jobs[0].r;
            std::size_t i = 0;
            while (i < jobs.size() || !ready.empty()) {
                if (ready.empty() && t < jobs[i].r) t = jobs[i].r;
                while (i < jobs.size() && jobs[i].r <= t) {
                    ready.push({jobs[i].q, jobs[i].p});
                    ++i;
                }
                auto [qq, left] = ready.top();
                ready.pop();
                const double run = i < jobs.size() ? std::min(left, jobs[i].r - t) : left;
                t += run;
                if (run >= left)
                    lb = std::max(lb, t + qq);
                else
                    ready.push({qq, left - run});
            }
            if (lb >= target) return lb;
        }
        // Memory x time: after t_last, rank r must hold every activation it holds or will take
        // until that activation's earliest free; at most room[r] at a time.
        if (pb.limited) {
            for (int r = 0; r < P; ++r) {
                if (!(room[r] > 0)) continue;
                double area = 0;
                // Every action of the rank still to come starts after `now`.
                const double now = std::max(t_last, free_t[r]);
                for (int s = 0; s < S; ++s) {
                    if (rank_of_stage(s) != r) continue;
                    const double a = pb.arrays.at("activation")[s];
                    if (a <= 0) continue;
                    const int qf = queue(F, s);
                    // Each part of an activation (split: phi freed by I, the rest by W; fused: all
                    // by B) is held until the action that frees it ends.
                    const int kinds = pb.split ? 2 : 1;
                    for (int part = 0; part < kinds; ++part) {
                        const int qfree = pb.split ? queue(part == 0 ? I : W, s) : queue(B, s);
                        const double share = pb.split ? (part == 0 ? pb.phi : 1 - pb.phi) : 1.0;
                        if (share <= 0) continue;
                        // Taken, not yet freed: until the free's earliest end.
                        for (int j = cnt[qfree]; j < cnt[qf]; ++j)
                            area +=
                                share * a * std::max(0.0, head[qfree * M + j] + q_dur[qfree] - now);
                        // Not taken yet: at least the least holding time each.
                        double hold = hold_after_f[qf];
                        if (pb.split && part == 0) hold -= q_dur[queue(W, s)];
                        area += share * a * (M - cnt[qf]) * hold;
                    }
                }
                lb = std::max(lb, now + area / room[r]);
            }
        }
        if (pb.limited && lb < target) lb = std::max(lb, ramp_bound());
        return lb;
    }

    // The memory ramp per rank (ppsched's lower_bound.hpp has its own version at the root):
    // forwards starting before t take at most room - held + what frees end before t (each no
    // earlier than its head's end), so before t the rank does at most that many forwards'
    // work plus the other actions as released; and its last forward (last stage, last
    // microbatch) leaves after it only itself and the I/W work of what it then holds (<= room),
    // with the step lasting its duration and tail after it. Needs the heads of lower_bound().
    struct rjob {
        double head, dur, take, give;
    };
    std::vector<rjob> rjobs;
    std::vector<double> rends;
    std::vector<std::pair<double, double>> rfwd; // (work before t, activation)
    double forward_work(double budget) {
        // Whole forwards when all have one size (floor), else fractional by work per activation.
        if (rfwd.empty() || budget <= 1e-12) return 0;
        bool one = true;
        for (auto& x : rfwd) one = one && x.second == rfwd[0].second;
        double w = 0;
        if (one) {
            std::sort(rfwd.begin(), rfwd.end(), std::greater<>());
            const double k = std::floor(budget / rfwd[0].second + 1e-9);
            for (std::size_t i = 0; i < rfwd.size() && static_cast<double>(i) < k; ++i)
                w += rfwd[i].first;
            return w;
        }
        std::sort(rfwd.begin(), rfwd.end(),
                  [](auto& a, auto& b) { return a.first * b.second > b.first * a.second; });
        for (auto& [work, act] : rfwd) {
            if (budget <= 0) break;
            w += act <= budget ? work : work * budget / act;
            budget -= act;
        }
        return w;
    }
    double ramp_bound() {
        double lb = 0;
        for (int r = 0; r < P; ++r) {
            rjobs.clear();
            double work = 0, least_tail = std::numeric_limits<double>::infinity();
            for (int q = 0; q < Q; ++q) {
                if (q_rank[q] != r) continue;
                for (int j = cnt[q]; j < M; ++j) {
                    const int id = q * M + j;
                    rjobs.push_back(
                        {head[id], q_dur[q], std::max(0.0, q_mem[q]), std::max(0.0, -q_mem[q])});
                    work += q_dur[q];
                    least_tail = std::min(least_tail, tail[id]);
                }
            }
            if (rjobs.empty()) continue;
            std::sort(rjobs.begin(), rjobs.end(),
                      [](const rjob& a, const rjob& b) { return a.head < b.head; });
            const double now = free_t[r];
            const double budget0 = room[r] - held[r];
            // Ramp down: the rank's last forward, if still to run.
            const int last = rank_stage_list[r].back();
            const int qf = queue(F, last);
            double early = -1, reach = 0, last_head = 0;
            if (cnt[qf] < M) {
                const int id = qf * M + M - 1;
                const double a = pb.arrays.at("activation")[last];
                // The I/W work of held activations within room - a: items per stage of the rank.
                std::vector<std::pair<double, double>> items; // (work, memory)
                double free_work = 0;
                for (int st : rank_stage_list[r]) {
                    const double act = pb.arrays.at("activation")[st];
                    const double iw =
                        pb.split ? q_dur[queue(I, st)] + q_dur[queue(W, st)] : q_dur[queue(B, st)];
                    if (act <= 0) {
                        free_work += iw * M;
                        continue;
                    }
                    for (int j = 0; j < M; ++j) items.push_back({iw, act});
                    if (pb.split && pb.phi > 0)
                        for (int j = 0; j < M; ++j)
                            items.push_back({q_dur[queue(W, st)], act * (1 - pb.phi)});
                }
                rfwd = items;
                const double late = q_dur[qf] +
                                    (pb.split ? q_dur[queue(I, last)] + q_dur[queue(W, last)]
                                              : q_dur[queue(B, last)]) +
                                    free_work + forward_work(room[r] - a);
                early = work - late;
                reach = q_dur[qf] + tail[id];
                last_head = head[id];
                lb = std::max(lb, std::max(last_head, now + std::max(0.0, early)) + reach);
            }
            // Ramp up: candidate times t, the earliest ends of the frees (the first 8).
            rends.clear();
            for (const rjob& j : rjobs)
                if (j.give > 0) rends.push_back(j.head + j.dur);
            std::sort(rends.begin(), rends.end());
            rends.erase(std::unique(rends.begin(), rends.end()), rends.end());
            if (rends.size() > 8) rends.resize(8);
            for (double t : rends) {
                const double slack = 1e-9 * std::max(1.0, t);
                double freed = 0, others = 0, all = 0, c_o = now, c_a = now;
                rfwd.clear();
                for (const rjob& j : rjobs) {
                    if (j.head >= t) break;
                    if (j.give > 0 && j.head + j.dur < t - slack) freed += j.give;
                    c_a = std::max(c_a, j.head);
                    all += std::max(0.0, std::min(j.dur, t - c_a));
                    c_a += j.dur;
                    if (j.take > 0) {
                        rfwd.push_back({std::min(j.dur, t - j.head), j.take});
                    } else {
                        c_o = std::max(c_o, j.head);
                        others += std::max(0.0, std::min(j.dur, t - c_o));
                        c_o += j.dur;
                    }
                }
                const double done = std::min(all, others + forward_work(budget0 + freed));
                const double idle = std::max(0.0, t - slack - now - done);
                lb = std::max(lb, now + work + idle + least_tail);
                if (early > done) lb = std::max(lb, now + early + idle + reach);
            }
        }
        return lb;
    }

    bool out_of_budget() {
        if (stopped) return true;
        if ((nodes & 1023) == 0) {
            const double secs =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            if (secs > deadline || nodes > node_limit) stopped = true;
        }
        return stopped;
    }

    // The memo's key (the queue counters) and the times that decide every completion: each
    // rank's free time and the end of every scheduled action a later one still waits for.
    void state(std::string& key, std::vector<double>& times) const {
        key.assign(cnt.begin(), cnt.end());
        times.assign(free_t.begin(), free_t.end());
        for (int q = 0; q < Q; ++q) {
            int lo = cnt[q];
            for (int z : q_succ[q]) lo = std::min(lo, cnt[z]);
            for (int j = lo; j < cnt[q]; ++j) times.push_back(end_t[q * M + j]);
        }
    }

    bool dominated(const std::string& key, const std::vector<double>& times) const {
        auto it = memo.find(key);
        if (it == memo.end()) return false;
        const std::size_t n = times.size();
        for (std::size_t at = 0; at + n <= it->second.size(); at += n) {
            bool le = true;
            for (std::size_t i = 0; i < n && le; ++i) le = it->second[at + i] <= times[i];
            if (le) return true;
        }
        return false;
    }

    void remember(const std::string& key, const std::vector<double>& times) {
        if (memo_doubles + times.size() > memo_cap) return;
        auto& v = memo[key];
        v.insert(v.end(), times.begin(), times.end());
        memo_doubles += times.size();
    }

    // One rank per node (with the memo): a rank r and a ready action y of r that only frees
    // memory (or any ready action, when r's memory can no longer bind) end at c = est(y) +
    // dur(y). If every other action of r that could come next starts at or after c unless it
    // is ready with est <= c (its head bounds the start of one not ready), then some optimal
    // completion runs next on r one of those ready actions: were it an action x starting
    // after c, moving y just before x would delay nothing, free memory no later and start y
    // earlier. So only r's children are needed (Giffler and Thompson's rule, made safe for
    // memory). Returns the valid rank with the fewest such children, or -1 (all ranks).
    // Needs the heads of lower_bound().
    int branching_rank(const std::vector<double>& est_q) const {
        int best_r = -1, best_n = std::numeric_limits<int>::max();
        for (int r = 0; r < P; ++r) {
            double taking = 0;
            for (int st : rank_stage_list[r])
                taking += q_mem[queue(F, st)] * (M - cnt[queue(F, st)]);
            const bool binding = held[r] + taking > room[r] + 1e-9;
            double c = std::numeric_limits<double>::infinity();
            for (int q = 0; q < Q; ++q)
                if (q_rank[q] == r && est_q[q] >= 0 && q_dur[q] > 0 && (!binding || q_kind[q] != F))
                    c = std::min(c, est_q[q] + q_dur[q]);
            if (!std::isfinite(c)) continue;
            int n = 0;
            bool valid = true;
            for (int q = 0; q < Q && valid; ++q) {
                if (q_rank[q] != r || cnt[q] >= M) continue;
                const bool fits = q_kind[q] != F || held[r] + q_mem[q] <= room[r] + 1e-9;
                if (est_q[q] >= 0 && fits) {
                    if (est_q[q] <= c) ++n;
                } else if (head[q * M + cnt[q]] < c) {
                    valid = false;
                }
            }
            if (valid && n < best_n) {
                best_n = n;
                best_r = r;
            }
        }
        return best_r;
    }

    void search(int left) {
        ++nodes;
        if (out_of_budget()) return;
        if (left == 0) {
            double ms = 0;
            for (int r = 0; r < P; ++r) ms = std::max(ms, free_t[r]);
            if (ms < target) {
                best = ms;
                best_seq = seq;
                target = ms * (1 - 1e-9);
            }
            return;
        }
        if (lower_bound() >= target) return;
        std::string key;
        std::vector<double> times;
        if (use_memo) {
            state(key, times);
            if (dominated(key, times)) {
                ++memo_hits;
                return;
            }
        }
        // Candidates: queue heads whose dependencies are scheduled, within memory.
        struct cand {
            double est;
            int q;
        };
        std::vector<cand> c(static_cast<std::size_t>(Q));
        int nc = 0;
        std::vector<double> est_q(Q, -1);
        for (int q = 0; q < Q; ++q) {
            if (cnt[q] >= M) continue;
            const double e = earliest(q);
            if (e < 0) continue;
            est_q[q] = e;
        }
        // Each rank must be able to run its next action at or after the current time.
        for (int r = 0; r < P && !use_memo; ++r) {
            bool pending = false, possible = false;
            for (int q = 0; q < Q; ++q) {
                if (q_rank[q] != r || cnt[q] >= M) continue;
                pending = true;
                if (est_q[q] < 0 || est_q[q] > t_last || (est_q[q] == t_last && r >= r_last))
                    possible = true;
            }
            if (pending && !possible) return;
        }
        const int only = use_memo && one_rank ? branching_rank(est_q) : -1;
        for (int q = 0; q < Q; ++q) {
            const double e = est_q[q];
            if (e < 0) continue;
            const int r = q_rank[q];
            if (only >= 0 && r != only) continue;
            if (!use_memo && (e < t_last || (e == t_last && r < r_last))) continue;
            if (q_kind[q] == F && held[r] + q_mem[q] > room[r] + 1e-9) continue;
            bool shift = false; // the active rule
            for (int y = 0; y < Q && !shift; ++y)
                shift = y != q && q_rank[y] == r && q_kind[y] != F && est_q[y] >= 0 &&
                        est_q[y] < e && est_q[y] + q_dur[y] <= e;
            if (shift) continue;
            c[nc++] = {e, q};
        }
        std::sort(c.begin(), c.begin() + nc, [&](const cand& a, const cand& b) {
            if (a.est != b.est) return a.est < b.est;
            return q_kind[a.q] != q_kind[b.q] ? (q_kind[a.q] == F) < (q_kind[b.q] == F) : a.q < b.q;
        });
        for (int i = 0; i < nc; ++i) {
            const int q = c[i].q, r = q_rank[q], j = cnt[q], id = q * M + j;
            const double saved_free = free_t[r], saved_t = t_last;
            const int saved_r = r_last;
            start_t[id] = c[i].est;
            end_t[id] = c[i].est + q_dur[q];
            free_t[r] = end_t[id];
            held[r] += q_mem[q];
            if (!use_memo) {
                t_last = c[i].est;
                r_last = r;
            }
            ++cnt[q];
            seq[r].push_back(id);
            search(left - 1);
            seq[r].pop_back();
            --cnt[q];
            held[r] -= q_mem[q];
            free_t[r] = saved_free;
            t_last = saved_t;
            r_last = saved_r;
            if (stopped) return;
        }
        if (use_memo) remember(key, times);
    }

    // The rank relaxation: a lower bound from one rank alone. Every other rank is taken as
    // infinitely parallel, so between two actions of rank r only the longest path of durations
    // and message times through the others remains (a lag), and r's own order, its memory room
    // and every action's head and tail stay exact. Any valid order, restricted to r, is a
    // sequence of this smaller problem with a makespan (max of end + tail) no later, so its
    // optimum is a lower bound; some optimum of the full problem keeps the queues in microbatch
    // order (the symmetry above), so the relaxation may too. Solved exactly by its own depth-
    // first branch and bound (active rule, a memo of dominated prefixes, Jackson's preemptive
    // bound), with `cap` as the incumbent: returns min(optimum, cap), or -1 when `node_cap`
    // nodes did not suffice. Worst case exponential in the rank's actions (48 for 4 ranks x 2
    // stages x 8 microbatches take 10^3-10^6 nodes).
    struct rank_model {
        std::vector<int> mine, loc, rq; // rank's actions; action -> local index; its queues
        std::vector<std::vector<std::pair<int, double>>> pred; // (local, lag) per local
        std::vector<double> hd;                                // static heads, per action
    };
    rank_model model_of(int r) const {
        rank_model m;
        // Longest paths over the whole action graph: dependencies and queue order.
        std::vector<std::vector<std::pair<int, double>>> out(N); // (action, lag after end)
        std::vector<int> order;                                  // a topological order
        for (int j = 0; j < M; ++j)
            for (int q : topo) {
                const int id = q * M + j;
                order.push_back(id);
                for (auto [d, dl] : q_deps[q]) out[d * M + j].push_back({id, dl});
                if (j > 0) out[id - 1].push_back({id, 0.0});
            }
        std::vector<int> pos(N);
        for (int i = 0; i < N; ++i) pos[order[i]] = i;
        m.hd.assign(N, 0.0);
        for (int a : order)
            for (auto [b, dl] : out[a]) m.hd[b] = std::max(m.hd[b], m.hd[a] + q_dur[a / M] + dl);
        m.loc.assign(N, -1);
        for (int a = 0; a < N; ++a)
            if (q_rank[a / M] == r) {
                m.loc[a] = static_cast<int>(m.mine.size());
                m.mine.push_back(a);
            }
        const int n = static_cast<int>(m.mine.size());
        constexpr double none = -std::numeric_limits<double>::infinity();
        m.pred.assign(n, {});
        std::vector<double> d(N);
        for (int i = 0; i < n; ++i) {
            std::fill(d.begin(), d.end(), none);
            for (auto [b, dl] : out[m.mine[i]]) d[b] = std::max(d[b], dl);
            for (int k = pos[m.mine[i]] + 1; k < N; ++k) {
                const int x = order[k];
                if (d[x] == none) continue;
                if (m.loc[x] >= 0) m.pred[m.loc[x]].push_back({i, d[x]});
                for (auto [b, dl] : out[x]) d[b] = std::max(d[b], d[x] + q_dur[x / M] + dl);
            }
        }
        for (int q = 0; q < Q; ++q)
            if (q_rank[q] == r) m.rq.push_back(q);
        return m;
    }

    double rank_relaxation(int r, double cap, long long node_cap) const {
        const rank_model m = model_of(r);
        const std::vector<int>& mine = m.mine;
        const std::vector<int>& loc = m.loc;
        const std::vector<int>& rq = m.rq;
        const auto& pred = m.pred;
        const std::vector<double>& hd = m.hd;
        const int n = static_cast<int>(mine.size());
        std::vector<int> idx(rq.size(), 0);
        std::vector<char> done(n, 0);
        std::vector<double> endt(n, 0.0);
        double best_r = cap;
        long long count = 0;
        bool out_of_nodes = false;
        std::map<std::vector<int>, std::vector<std::vector<double>>> seen;
        auto release = [&](int i, bool all_done_needed) {
            double t = hd[mine[i]];
            for (auto [k, lag] : pred[i]) {
                if (!done[k]) {
                    if (all_done_needed) return -1.0;
                    continue;
                }
                t = std::max(t, endt[k] + lag);
            }
            return t;
        };
        std::vector<std::pair<double, int>> rem;
        std::vector<double> left(n);
        auto jackson = [&](double now) { // preemptive, heads = releases, tails static
            rem.clear();
            for (int i = 0; i < n; ++i)
                if (!done[i]) rem.push_back({std::max(now, release(i, false)), i});
            std::sort(rem.begin(), rem.end());
            double lb = 0;
            std::priority_queue<std::pair<double, int>> ready; // (tail, local)
            std::size_t k = 0;
            while (k < rem.size() || !ready.empty()) {
                if (ready.empty()) now = std::max(now, rem[k].first);
                while (k < rem.size() && rem[k].first <= now) {
                    const int i = rem[k++].second;
                    left[i] = q_dur[mine[i] / M];
                    ready.push({tail[mine[i]], i});
                }
                const int i = ready.top().second;
                const double run = std::min(left[i], k < rem.size() ? rem[k].first - now : left[i]);
                now += run;
                left[i] -= run;
                if (left[i] <= 0) {
                    ready.pop();
                    lb = std::max(lb, now + tail[mine[i]]);
                }
            }
            return lb;
        };
        std::function<void(double, double, double, int)> dfs = [&](double t, double hold,
                                                                   double obj, int depth) {
            if (++count > node_cap) out_of_nodes = true;
            if (out_of_nodes) return;
            if (depth == n) {
                best_r = std::min(best_r, obj);
                return;
            }
            if (std::max(obj, jackson(t)) >= best_r) return;
            std::vector<double> sig{t, obj, hold}; // dominance: same set, times and memory no later
            for (int i = 0; i < n; ++i)
                if (!done[i]) sig.push_back(release(i, false));
            auto& stored = seen[idx];
            for (const auto& o : stored) {
                bool dominated = true;
                for (std::size_t x = 0; x < sig.size() && dominated; ++x)
                    dominated = o[x] <= sig[x];
                if (dominated) return;
            }
            if (stored.size() < 128) stored.push_back(sig);
            struct cand {
                int u, i;
                double est;
            };
            std::vector<cand> cs;
            for (std::size_t u = 0; u < rq.size(); ++u) {
                if (idx[u] >= M) continue;
                const int q = rq[u], i = loc[q * M + idx[u]];
                const double rel = release(i, true);
                if (rel < 0) continue;
                if (q_kind[q] == F && hold + q_mem[q] > room[r] + 1e-9) continue;
                const double est = std::max(t, rel);
                cs.push_back({static_cast<int>(u), i, est});
            }
            std::sort(cs.begin(), cs.end(),
                      [](const cand& a, const cand& b) { return a.est < b.est; });
            for (const cand& c : cs) {
                bool shift = false; // the active rule: another free that fits before goes first
                for (const cand& y : cs)
                    shift = shift || (y.i != c.i && q_kind[rq[y.u]] != F && y.est < c.est &&
                                      y.est + q_dur[rq[y.u]] <= c.est);
                if (shift) continue;
                const int q = rq[c.u];
                done[c.i] = 1;
                endt[c.i] = c.est + q_dur[q];
                ++idx[c.u];
                dfs(endt[c.i], hold + q_mem[q], std::max(obj, endt[c.i] + tail[mine[c.i]]),
                    depth + 1);
                --idx[c.u];
                done[c.i] = 0;
            }
        };
        dfs(0.0, 0.0, 0.0, 0);
        return out_of_nodes ? -1.0 : best_r;
    }

    std::string csv() const {
        std::string out;
        for (int r = 0; r < P; ++r) {
            for (std::size_t i = 0; i < best_seq[r].size(); ++i) {
                const int id = best_seq[r][i], q = id / M, j = id % M;
                if (i) out += ',';
                out += std::to_string(q_stage[q]) + kind_letter[q_kind[q]] + std::to_string(j);
            }
            out += '\n';
        }
        return out;
    }
};

} // namespace

int main(int argc, char** argv) {
    if (argc < 2 || std::string(argv[1]) == "--help") {
        std::cerr << "usage: exact_search PROBLEM.txt [--target T] [--time-limit S] "
                     "[--node-limit N] [--order OUT.csv] [--memo on|off] [--branch one|all] "
                     "[--rank-relaxation on|off]\n";
        return argc < 2 ? 2 : 0;
    }
    double target = std::numeric_limits<double>::infinity(), seconds = 60;
    long long node_limit = std::numeric_limits<long long>::max();
    std::string order_path;
    bool memo = true, one_rank = true, relax = true;
    for (int i = 2; i < argc; ++i) {
        const std::string a = argv[i];
        if (i + 1 >= argc) fail("missing value after " + a);
        const std::string v = argv[++i];
        if (a == "--target")
            target = std::strtod(v.c_str(), nullptr);
        else if (a == "--time-limit")
            seconds = std::strtod(v.c_str(), nullptr);
        else if (a == "--node-limit")
            node_limit = std::strtoll(v.c_str(), nullptr, 10);
        else if (a == "--order")
            order_path = v;
        else if (a == "--memo")
            memo = v == "on";
        else if (a == "--rank-relaxation" && (v == "on" || v == "off"))
            relax = v == "on";
        else if (a == "--branch" && (v == "one" || v == "all"))
            one_rank = v == "one";
        else
            fail("unknown option " + a);
    }
    if (!(target > 0) || !(seconds > 0) || node_limit <= 0)
        fail("bad --target, --time-limit or --node-limit");
    const problem_t pb = read_problem(argv[1]);
    solver_t s(pb, target * (1 - 1e-9), node_limit, seconds);
    s.use_memo = memo;
    s.one_rank = one_rank;
    bool memory_ok = true;
    if (pb.limited) {
        // Least memory any order needs: every activation of the rank at once.
        std::vector<double> least(pb.P, 0.0);
        for (int st = 0; st < pb.S; ++st)
            least[s.rank_of_stage(st)] += pb.arrays.at("activation")[st];
        for (int r = 0; r < pb.P; ++r) memory_ok = memory_ok && least[r] <= s.room[r] + 1e-9;
    }
    // The rank relaxation first: when one rank alone cannot finish before the target, no order
    // can, and the search is not needed.
    double rank_bound = -1;
    if (memory_ok && relax)
        for (int r = 0; r < pb.P && rank_bound < s.target; ++r)
            rank_bound = std::max(rank_bound, s.rank_relaxation(r, s.target, 1'000'000));
    if (memory_ok && rank_bound < s.target) s.search(s.N);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - s.t0).count();
    const bool found = std::isfinite(s.best);
    auto number = [](double x) {
        char b[40];
        std::snprintf(b, sizeof b, "%.17g", x);
        return std::string(b);
    };
    const char* status = !memory_ok ? "infeasible" : s.stopped ? "unknown" : "optimal";
    const std::string lb = s.stopped || !memory_ok ? "null" : number(found ? s.best : target);
    const std::string buf = std::string("{\"status\": \"") + status +
                            "\", \"makespan\": " + (found ? number(s.best) : "null") +
                            ", \"lower_bound\": " + lb + ", \"target\": " + number(target) +
                            ", \"nodes\": " + std::to_string(s.nodes) +
                            ", \"memo_hits\": " + std::to_string(s.memo_hits) +
                            ", \"rank_bound\": " + (rank_bound >= 0 ? number(rank_bound) : "null") +
                            ", \"seconds\": " + number(secs) + "}";
    std::cout << buf << '\n';
    if (found && !order_path.empty()) std::ofstream(order_path) << s.csv();
    return 0;
}
