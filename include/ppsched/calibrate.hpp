#pragma once
/// \file calibrate.hpp
/// `calibrate(trace)`: from a measured run (`io::measured_trace`, read from PyTorch profiler
/// traces or written by ppsched's executor) to the order that ran, a fitted `cost_model`, and a
/// report that replays the measured order with the fitted costs through `simulate` and compares
/// it with what was measured.
///
/// How, in order (docs/calibration.md has the details and the measured accuracy):
/// 1. Iterations: a rank's actions are cut into iterations where an action repeats; every
///    rank's iterations must run the same sequence (an iteration that differs, e.g. cut off by
///    the profiler, is dropped with a note). The first iteration is the executed order; it is
///    validated (`validate`) and its configuration inferred (`infer_config`).
/// 2. Clocks: every message (a SEND, or without SEND/RECV the producing compute, and the
///    compute that consumes it on the other rank) bounds the offset between two ranks' clocks
///    from one side: the consumer cannot start its work before the data was sent. The bounds of
///    both directions give a window; clocks are left alone when 0 lies in it (they already
///    agree), else moved to the window's midpoint (symmetric message time). Ranks are aligned
///    along a breadth-first tree from rank 0. When spans include waits (PyTorch), where the work
///    started is only known up to the compute's own duration: a first round takes none (a
///    bound that always holds), a few more the fitted medians, so a clock shift is found to
///    within a fraction of a compute; for executor traces the span start is the work's start.
/// 3. Costs: a compute's own duration is its span minus any part spent before its input could
///    have arrived (PyTorch's spans include the wait for a receive; ppsched's executor starts
///    its spans after the wait and says so in its traces, and then the span is the work). Per stage
///    and kind: the median (the fitted cost), min, max, a robust spread (1.4826 x the median
///    absolute deviation) and the outliers (further than max(3 spreads, 5 % of the median) from
///    it), named by rank, iteration and action.
/// 4. Messages: for consumers that waited (their rank was idle just before them), the time from
///    the send to the start of their work is the message time; its lower quartile (a busy
///    machine only makes messages look longer) becomes
///    `p2p_latency` (traces carry no message sizes, so latency and transfer cannot be told
///    apart: `p2p_transfer` stays 0). UNSHARD and REDUCE_GRAD spans time only the issue of an
///    asynchronous operation and are not fitted.
/// 5. Replay: `simulate(order, costs)` against the iteration with the median step time: step
///    time (predicted makespan vs measured first start to last end), per-rank idle, and the
///    actions whose end differs most.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/algorithms/simulate.hpp"
#include "ppsched/algorithms/validate.hpp"
#include "ppsched/config.hpp"
#include "ppsched/cost_model.hpp"
#include "ppsched/error.hpp"
#include "ppsched/infer_config.hpp"
#include "ppsched/io/pytorch_trace.hpp"
#include "ppsched/order.hpp"

namespace ppsched {

/// Options of `calibrate`.
struct calibration_options {
    /// Cost units per trace time unit: traces are in microseconds, and the default 1e-3 gives
    /// costs (and the report) in milliseconds.
    double time_scale = 1e-3;
};

/// One measured duration far from its group's median.
struct cost_outlier {
    int rank = 0;
    int iteration = 0;
    action act;
    double duration = 0; ///< in cost units
};

/// The fitted cost of one stage and action kind (durations in cost units).
struct cost_fit {
    int stage = 0;
    action_kind kind = action_kind::forward; ///< F, I, W, B or OVERLAP_F_B (keyed by its F stage)
    std::size_t samples = 0;
    double median = 0; ///< the fitted cost
    double min = 0;
    double max = 0;
    double mean = 0;                    ///< the mean (outliers included)
    double spread = 0;                  ///< 1.4826 x median absolute deviation (a robust sigma)
    std::size_t outlier_count = 0;      ///< how many samples are outliers
    std::vector<cost_outlier> outliers; ///< the largest few, by distance from the median
};

/// An action whose replayed end differs from its measured end (cost units, from the start of
/// the shown iteration).
struct action_difference {
    int rank = 0;
    action act;
    double measured_end = 0;
    double predicted_end = 0;
};

/// What `calibrate` found, for people and for pictures.
struct calibration_report {
    int iterations = 0;      ///< complete iterations used
    int shown_iteration = 0; ///< the iteration with the median step time (compared below)
    std::vector<cost_fit> fits;
    std::vector<double> clock_offsets;  ///< per rank, in trace units, added to its clock
    std::size_t messages = 0;           ///< matched messages (over all iterations)
    std::size_t waited_messages = 0;    ///< of which the consumer waited (they give the fit)
    double message_time = 0;            ///< fitted, cost units
    std::vector<double> measured_steps; ///< per iteration, cost units
    double measured_step = 0;           ///< of the shown iteration
    double predicted_step = 0;          ///< the replay's makespan
    /// The replay's makespan with each stage's mean instead of its median (outliers included):
    /// close to the measured step when the difference is noise (a busy machine) rather than a
    /// wrong model. A diagnostic; the fitted costs are the medians.
    double predicted_step_mean = 0;
    std::vector<double> measured_idle;                  ///< per rank: step - own compute time
    std::vector<double> predicted_idle;                 ///< per rank, from the replay
    std::vector<action_difference> largest_differences; ///< at most 5, largest first
    /// The shown iteration as a timeline (aligned clocks, cost units from its first start;
    /// computes span their own work only).
    std::vector<timed_action> measured;
    simulation predicted;           ///< the replay
    bool valid = true;              ///< the executed order passed `validate` and the replay ran
    std::string problem;            ///< why not, when `valid` is false
    std::vector<std::string> notes; ///< from reading the trace and from fitting
};

/// The result of `calibrate`.
struct calibration {
    order executed;   ///< the executed per-rank order (lowered when the trace has SEND/RECV)
    cost_model costs; ///< per stage F/I/W/B/OVERLAP_F_B medians and p2p_latency
    calibration_report report;
};

namespace detail {

inline double median_of(std::vector<double> v) {
    if (v.empty()) return 0;
    const std::size_t n = v.size() / 2;
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n), v.end());
    const double hi = v[n];
    if (v.size() % 2 == 1) return hi;
    const double lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n));
    return (lo + hi) / 2;
}

inline bool calibrated_compute(action_kind k) {
    return k == action_kind::forward || k == action_kind::backward_input ||
           k == action_kind::backward_weight || k == action_kind::full_backward ||
           k == action_kind::overlap_f_b;
}

/// The (stage, kind) group of a compute: an overlap is keyed by its forward's stage.
inline std::pair<int, int> fit_key(const action& a) {
    const int stage = a.is_overlap() ? a.forward_part().stage() : a.stage();
    return {stage, static_cast<int>(a.kind())};
}

/// The field of `sc` that holds the cost of `kind`.
inline std::optional<double>* cost_field(stage_costs& sc, action_kind kind) {
    switch (kind) {
    case action_kind::forward:
        return &sc.forward;
    case action_kind::backward_input:
        return &sc.backward_input;
    case action_kind::backward_weight:
        return &sc.backward_weight;
    case action_kind::full_backward:
        return &sc.full_backward;
    default:
        return &sc.overlap_f_b;
    }
}

inline stream stream_of(action_kind k) {
    if (calibrated_compute(k)) return stream::compute;
    if (is_p2p(k)) return stream::p2p;
    return stream::comm;
}

} // namespace detail

/// Fits a cost model to a measured run and replays it (see the file comment).
/// Throws `config_error` when the trace holds no complete iteration or its actions do not fit a
/// configuration. An executed order that fails `validate` (or a replay that fails) is reported
/// in `report.valid`/`report.problem`, with costs fitted from the raw spans.
/// Complexity: O(n log n) in the measured actions.
[[nodiscard]] inline calibration calibrate(const io::measured_trace& trace,
                                           const calibration_options& options = {}) {
    PPSCHED_EXPECTS(!trace.ranks.empty(), "ppsched::calibrate: the trace has no rank");
    PPSCHED_EXPECTS(options.time_scale > 0, "ppsched::calibrate: time_scale must be positive");
    const double scale = options.time_scale;
    const std::size_t R = trace.ranks.size();
    calibration out;
    calibration_report& rep = out.report;
    rep.notes = trace.notes;

    // A rank is taken to run one compute at a time: where its compute spans overlap (two
    // processes read as one rank, or a clock that jumped), its measured idle time and the
    // fitted costs mean little, so the report says so.
    for (std::size_t r = 0; r < R; ++r) {
        std::size_t overlaps = 0;
        double latest_end = -std::numeric_limits<double>::infinity(), most = 0;
        const io::measured_action* worst[2] = {nullptr, nullptr};
        const io::measured_action* holder = nullptr; // the span that ends at latest_end
        for (const auto& m : trace.ranks[r]) {
            if (!io::detail::is_compute_kind(m.act.kind())) continue;
            // Timestamps are microseconds since the epoch (about 1.7e12): 1e-3 is well above
            // their rounding.
            if (holder != nullptr && m.start < latest_end - 1e-3) {
                ++overlaps;
                if (latest_end - m.start > most) {
                    most = latest_end - m.start;
                    worst[0] = holder;
                    worst[1] = &m;
                }
            }
            if (holder == nullptr || m.end > latest_end) {
                latest_end = m.end;
                holder = &m;
            }
        }
        if (overlaps > 0)
            rep.notes.push_back(
                "rank " + std::to_string(r) + ": " + std::to_string(overlaps) +
                " compute span(s) start before an earlier one ends (the most: " +
                to_string(worst[1]->act) + " starts " + io::detail::number_text(most) +
                " us before " + to_string(worst[0]->act) +
                " ends); a rank is taken to run one compute at a time, so its measured idle "
                "time and the costs fitted from it are not reliable");
    }

    // 1. Iterations: a new one starts where a rank's action repeats.
    std::vector<std::vector<std::vector<io::measured_action>>> its(R);
    for (std::size_t r = 0; r < R; ++r) {
        std::set<action> seen;
        for (const auto& m : trace.ranks[r]) {
            if (its[r].empty() || seen.count(m.act)) {
                its[r].emplace_back();
                seen.clear();
            }
            seen.insert(m.act);
            its[r].back().push_back(m);
        }
    }
    std::size_t n_it = std::numeric_limits<std::size_t>::max();
    for (const auto& v : its) n_it = std::min(n_it, v.size());
    for (std::size_t r = 0; r < R; ++r)
        if (its[r].size() != n_it)
            rep.notes.push_back("rank " + std::to_string(r) + " ran " +
                                std::to_string(its[r].size()) + " iterations, another rank " +
                                std::to_string(n_it) + ": the first " + std::to_string(n_it) +
                                " are used");
    auto same_sequence = [](const std::vector<io::measured_action>& a,
                            const std::vector<io::measured_action>& b) {
        if (a.size() != b.size()) return false;
        for (std::size_t i = 0; i < a.size(); ++i)
            if (!(a[i].act == b[i].act)) return false;
        return true;
    };
    std::vector<std::size_t> kept; // iteration indices whose sequences match iteration 0's
    for (std::size_t k = 0; k < n_it; ++k) {
        bool ok = true;
        for (std::size_t r = 0; r < R; ++r) ok = ok && same_sequence(its[r][k], its[r][0]);
        if (ok)
            kept.push_back(k);
        else
            rep.notes.push_back("iteration " + std::to_string(k) +
                                " ran a different order than iteration 0 (cut off?): dropped");
    }
    PPSCHED_EXPECTS(!kept.empty(), "ppsched::calibrate: the trace holds no complete iteration");
    rep.iterations = static_cast<int>(kept.size());

    // The executed order: the first iteration's sequences.
    std::vector<rank_slots> rows(R);
    for (std::size_t r = 0; r < R; ++r)
        for (const auto& m : its[r][0]) rows[r].push_back(m.act);
    const config cfg = infer_config(rows);
    out.executed = order(cfg, rows);
    if (const validation_report v = validate(out.executed); !v) {
        rep.valid = false;
        rep.problem = "the executed order is not valid: " + describe(v[0]) +
                      (v.size() > 1 ? " (and " + std::to_string(v.size() - 1) + " more)" : "");
    }

    // Where each action stands (the same in every kept iteration).
    std::map<action, std::pair<std::size_t, std::size_t>> pos;
    for (std::size_t r = 0; r < R; ++r)
        for (std::size_t i = 0; i < rows[r].size(); ++i) pos.emplace(*rows[r][i], std::pair{r, i});
    auto find = [&](const action& a) -> const std::pair<std::size_t, std::size_t>* {
        auto it = pos.find(a);
        return it == pos.end() ? nullptr : &it->second;
    };
    // The messages a compute consumes: (sender rank, sender index, true when the sender is a
    // SEND (its start counts) rather than the producing compute (its end counts)).
    struct input_ref {
        std::size_t rank, index;
        bool is_send;
    };
    std::vector<std::vector<std::vector<input_ref>>> inputs(R);
    const bool has_sends =
        std::any_of(pos.begin(), pos.end(), [](const auto& p) { return is_send(p.first.kind()); });
    for (std::size_t r = 0; r < R; ++r) {
        inputs[r].resize(rows[r].size());
        for (std::size_t i = 0; i < rows[r].size(); ++i) {
            const action a = *rows[r][i];
            if (!detail::calibrated_compute(a.kind())) continue;
            std::array<action, 2> parts;
            const int n = a.parts(parts);
            for (int p = 0; p < n; ++p) {
                const action x = parts[static_cast<std::size_t>(p)];
                const bool fwd = x.kind() == action_kind::forward;
                if (!fwd && x.kind() != action_kind::backward_input &&
                    x.kind() != action_kind::full_backward)
                    continue;
                const int peer = fwd ? cfg.previous_stage(x.stage()) : cfg.next_stage(x.stage());
                if (peer < 0 || cfg.stage_to_rank(peer) == static_cast<int>(r)) continue;
                const int mb = x.microbatch();
                const std::pair<std::size_t, std::size_t>* at = nullptr;
                bool send = has_sends;
                if (has_sends) {
                    at = find(fwd ? action::send_f(peer, mb) : action::send_b(peer, mb));
                } else {
                    at = find(fwd ? action::forward(peer, mb) : action::full_backward(peer, mb));
                    if (!at && !fwd) at = find(action::backward_input(peer, mb));
                }
                if (at) inputs[r][i].push_back({at->first, at->second, send});
            }
        }
    }
    auto span = [&](std::size_t k, std::size_t r, std::size_t i) -> const io::measured_action& {
        return its[r][kept[k]][i];
    };

    // Raw minimum duration per group (a bound on each sample's own work, for the clocks).
    std::map<std::pair<int, int>, double> min_raw;
    for (std::size_t k = 0; k < kept.size(); ++k)
        for (std::size_t r = 0; r < R; ++r)
            for (std::size_t i = 0; i < rows[r].size(); ++i) {
                const auto& m = span(k, r, i);
                if (!detail::calibrated_compute(m.act.kind())) continue;
                const auto key = detail::fit_key(m.act);
                const double d = m.end - m.start;
                auto [it, fresh] = min_raw.emplace(key, d);
                if (!fresh) it->second = std::min(it->second, d);
            }

    // 2. Clocks: per ordered pair of ranks, the smallest gap between a send and the latest
    // time its consumer can have started its own work (end - a duration estimate), on the
    // clocks as aligned so far; the gaps of both directions bound the pair's offset.
    auto sent_at = [&](std::size_t k, const input_ref& in) {
        const auto& m = span(k, in.rank, in.index);
        return in.is_send ? m.start : m.end;
    };
    const double inf = std::numeric_limits<double>::infinity();
    rep.clock_offsets.assign(R, 0);
    auto at = [&](std::size_t r, double t) { return t + rep.clock_offsets[r]; };
    std::vector<char> reached(R, 0);
    // Spans that start after their input waits (ppsched's executor) start at the latest when
    // their work starts: no estimate needed.
    const bool after_waits = trace.spans_after_input_waits;
    auto align = [&](const std::map<std::pair<int, int>, double>& work) {
        std::vector<double> min_gap(R * R, inf);
        for (std::size_t k = 0; k < kept.size(); ++k)
            for (std::size_t r = 0; r < R; ++r)
                for (std::size_t i = 0; i < rows[r].size(); ++i)
                    for (const auto& in : inputs[r][i]) {
                        const auto& m = span(k, r, i);
                        const double ready = after_waits
                                                 ? at(r, m.start)
                                                 : at(r, m.end) - work.at(detail::fit_key(m.act));
                        double& g = min_gap[in.rank * R + r];
                        g = std::min(g, ready - at(in.rank, sent_at(k, in)));
                    }
        std::vector<double> delta(R, 0);
        std::fill(reached.begin(), reached.end(), 0);
        std::deque<std::size_t> queue{0};
        reached[0] = 1;
        while (!queue.empty()) {
            const std::size_t a = queue.front();
            queue.pop_front();
            for (std::size_t b = 0; b < R; ++b) {
                if (reached[b]) continue;
                const double ab = min_gap[a * R + b], ba = min_gap[b * R + a];
                if (ab == inf && ba == inf) continue;
                // d = offset_b - offset_a lies in [lo, hi]; keep the clocks when 0 does.
                const double lo = ab == inf ? -inf : -ab, hi = ba == inf ? inf : ba;
                double d = 0;
                if (lo > 0 || hi < 0) d = lo == -inf ? hi : hi == inf ? lo : (lo + hi) / 2;
                delta[b] = delta[a] + d;
                reached[b] = 1;
                queue.push_back(b);
            }
        }
        for (std::size_t r = 0; r < R; ++r) rep.clock_offsets[r] += delta[r];
    };
    // Own durations: the span after the input could have arrived (`msg` after its send).
    auto own = [&](std::size_t k, std::size_t r, std::size_t i, double msg) {
        const auto& m = span(k, r, i);
        if (after_waits) return std::max(0.0, m.end - m.start);
        double ready = at(r, m.start);
        for (const auto& in : inputs[r][i])
            ready = std::max(ready, at(in.rank, sent_at(k, in)) + msg);
        return std::max(0.0, at(r, m.end) - std::max(ready, at(r, m.start)));
    };
    auto fit_medians = [&](double msg) {
        std::map<std::pair<int, int>, std::vector<double>> g;
        for (std::size_t k = 0; k < kept.size(); ++k)
            for (std::size_t r = 0; r < R; ++r)
                for (std::size_t i = 0; i < rows[r].size(); ++i)
                    if (detail::calibrated_compute(rows[r][i]->kind()))
                        g[detail::fit_key(*rows[r][i])].push_back(own(k, r, i, msg));
        return g;
    };
    std::map<std::pair<int, int>, double> med;
    auto refit = [&] {
        for (const auto& [key, v] : fit_medians(0)) med[key] = detail::median_of(v);
    };
    // First with no work at all (ready = end: a bound that always holds, so clocks that agree
    // stay as they are), then a few rounds with the medians of the own durations on the clocks
    // aligned so far, which narrow the window. Linear per round.
    {
        std::map<std::pair<int, int>, double> none = min_raw;
        for (auto& [key, v] : none) v = 0;
        align(none);
    }
    for (int round = 0; round < 4; ++round) {
        refit();
        align(med);
    }
    refit();
    if (R > 1)
        for (std::size_t r = 0; r < R; ++r)
            if (!reached[r])
                rep.notes.push_back("rank " + std::to_string(r) +
                                    ": no message links it to rank 0; its clock is not aligned");
    for (std::size_t r = 1; r < R; ++r)
        if (rep.clock_offsets[r] != 0) {
            // As many digits as it takes, without "%f"'s six trailing zeros.
            char shift[40];
            std::snprintf(shift, sizeof shift, "%.15g", rep.clock_offsets[r]);
            rep.notes.push_back("rank " + std::to_string(r) + "'s clock moved by " + shift +
                                " trace units to agree with its messages");
        }

    // 3./4. The message time, from the consumers that waited for theirs.
    std::vector<double> gaps;
    for (std::size_t k = 0; k < kept.size(); ++k)
        for (std::size_t r = 0; r < R; ++r)
            for (std::size_t i = 0; i < rows[r].size(); ++i) {
                if (inputs[r][i].empty()) continue;
                const auto& m = span(k, r, i);
                const double d = med[detail::fit_key(m.act)];
                const double ready = after_waits ? at(r, m.start) : at(r, m.end) - d;
                const double prev_end = i > 0 ? at(r, span(k, r, i - 1).end) : -inf;
                double sent = -inf;
                for (const auto& in : inputs[r][i])
                    sent = std::max(sent, at(in.rank, sent_at(k, in)));
                ++rep.messages;
                if (ready > prev_end + 0.05 * d) {
                    gaps.push_back(std::max(0.0, ready - sent));
                    ++rep.waited_messages;
                }
            }
    // The lower quartile: a rank that loses its core (a busy machine) only makes gaps longer.
    double msg = 0;
    if (!gaps.empty()) {
        const auto q = static_cast<std::ptrdiff_t>((gaps.size() - 1) / 4);
        std::nth_element(gaps.begin(), gaps.begin() + q, gaps.end());
        msg = gaps[static_cast<std::size_t>(q)];
    }
    if (rep.messages > 0 && gaps.empty())
        rep.notes.push_back("no consumer waited for a message: the message time is not "
                            "observable and is set to 0");
    rep.message_time = msg * scale;

    out.costs.per_stage.resize(static_cast<std::size_t>(cfg.num_stages()));
    out.costs.p2p_latency = rep.message_time;
    for (auto& [key, v] : fit_medians(msg)) {
        cost_fit f;
        f.stage = key.first;
        f.kind = static_cast<action_kind>(key.second);
        f.samples = v.size();
        for (double& x : v) x *= scale;
        f.median = detail::median_of(v);
        f.mean = 0;
        for (double x : v) f.mean += x / static_cast<double>(v.size());
        f.min = *std::min_element(v.begin(), v.end());
        f.max = *std::max_element(v.begin(), v.end());
        std::vector<double> dev(v.size());
        for (std::size_t j = 0; j < v.size(); ++j) dev[j] = std::abs(v[j] - f.median);
        f.spread = 1.4826 * detail::median_of(dev);
        const double limit = std::max(3 * f.spread, 0.05 * f.median);
        // Name the outliers: walk the samples in the order fit_medians collected them.
        std::vector<std::pair<double, cost_outlier>> far;
        std::size_t j = 0;
        for (std::size_t k = 0; k < kept.size(); ++k)
            for (std::size_t r = 0; r < R; ++r)
                for (std::size_t i = 0; i < rows[r].size(); ++i) {
                    if (!detail::calibrated_compute(rows[r][i]->kind()) ||
                        detail::fit_key(*rows[r][i]) != key)
                        continue;
                    const double x = v[j++];
                    if (std::abs(x - f.median) > limit)
                        far.push_back(
                            {std::abs(x - f.median),
                             {static_cast<int>(r), static_cast<int>(kept[k]), *rows[r][i], x}});
                }
        f.outlier_count = far.size();
        std::sort(far.begin(), far.end(),
                  [](const auto& a, const auto& b) { return a.first > b.first; });
        for (std::size_t q = 0; q < far.size() && q < 3; ++q) f.outliers.push_back(far[q].second);
        stage_costs& sc = out.costs.per_stage[static_cast<std::size_t>(f.stage)];
        switch (f.kind) {
        case action_kind::forward:
            sc.forward = f.median;
            break;
        case action_kind::backward_input:
            sc.backward_input = f.median;
            break;
        case action_kind::backward_weight:
            sc.backward_weight = f.median;
            break;
        case action_kind::full_backward:
            sc.full_backward = f.median;
            break;
        default:
            sc.overlap_f_b = f.median;
            break;
        }
        rep.fits.push_back(std::move(f));
    }
    // A stage with both B and a separate I or W (a partly merged order): B must cover them.
    for (auto& sc : out.costs.per_stage)
        if (sc.full_backward && sc.backward_input && sc.backward_weight)
            sc.full_backward =
                std::max({*sc.full_backward, *sc.backward_input, *sc.backward_weight});
        else if (sc.full_backward && (sc.backward_input || sc.backward_weight)) {
            const double part = sc.backward_input ? *sc.backward_input : *sc.backward_weight;
            sc.full_backward = std::max(*sc.full_backward, part);
        }

    // 5. Measured step times, the shown iteration, and the replay.
    for (std::size_t k = 0; k < kept.size(); ++k) {
        double first = inf, last = -inf;
        for (std::size_t r = 0; r < R; ++r)
            for (std::size_t i = 0; i < rows[r].size(); ++i) {
                first = std::min(first, at(r, span(k, r, i).start));
                last = std::max(last, at(r, span(k, r, i).end));
            }
        rep.measured_steps.push_back((last - first) * scale);
    }
    {
        std::vector<std::size_t> idx(kept.size());
        for (std::size_t k = 0; k < idx.size(); ++k) idx[k] = k;
        std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
            return rep.measured_steps[a] != rep.measured_steps[b]
                       ? rep.measured_steps[a] < rep.measured_steps[b]
                       : a < b;
        });
        const std::size_t k = idx[(idx.size() - 1) / 2];
        rep.shown_iteration = static_cast<int>(kept[k]);
        rep.measured_step = rep.measured_steps[k];
        double first = inf;
        for (std::size_t r = 0; r < R; ++r)
            for (std::size_t i = 0; i < rows[r].size(); ++i)
                first = std::min(first, at(r, span(k, r, i).start));
        rep.measured_idle.assign(R, rep.measured_step);
        for (std::size_t r = 0; r < R; ++r)
            for (std::size_t i = 0; i < rows[r].size(); ++i) {
                const auto& m = span(k, r, i);
                timed_action t;
                t.act = m.act;
                t.rank = static_cast<int>(r);
                t.slot = static_cast<int>(i);
                t.on = detail::stream_of(m.act.kind());
                t.ran = true;
                t.end = (at(r, m.end) - first) * scale;
                t.start = (at(r, m.start) - first) * scale;
                if (t.on == stream::compute) {
                    const double d = own(k, r, i, msg) * scale;
                    t.start = t.end - d;
                    rep.measured_idle[r] -= d;
                }
                rep.measured.push_back(t);
            }
    }
    if (rep.valid) {
        rep.predicted = simulate(out.executed, out.costs);
        if (!rep.predicted) {
            rep.valid = false;
            rep.problem = "the replay failed: " + describe_problem(rep.predicted);
        } else {
            rep.predicted_step = rep.predicted.makespan;
            cost_model means = out.costs;
            for (const auto& f : rep.fits)
                *detail::cost_field(means.per_stage[static_cast<std::size_t>(f.stage)], f.kind) =
                    f.mean;
            for (auto& sc : means.per_stage) // B must still cover I and W
                if (sc.full_backward && (sc.backward_input || sc.backward_weight))
                    sc.full_backward = std::max({*sc.full_backward, sc.backward_input.value_or(0),
                                                 sc.backward_weight.value_or(0)});
            if (const simulation m = simulate(out.executed, means, {.timeline = false}))
                rep.predicted_step_mean = m.makespan;
            for (const auto& s : rep.predicted.ranks) rep.predicted_idle.push_back(s.idle);
            // Timelines list ranks in order and each rank's actions in its order.
            std::vector<std::pair<double, action_difference>> diffs;
            for (std::size_t j = 0; j < rep.measured.size() && j < rep.predicted.timeline.size();
                 ++j) {
                const timed_action& m = rep.measured[j];
                const timed_action& p = rep.predicted.timeline[j];
                if (m.on != stream::compute || m.rank != p.rank || m.slot != p.slot) continue;
                diffs.push_back({std::abs(m.end - p.end), {m.rank, m.act, m.end, p.end}});
            }
            std::sort(diffs.begin(), diffs.end(),
                      [](const auto& a, const auto& b) { return a.first > b.first; });
            for (std::size_t j = 0; j < diffs.size() && j < 5; ++j)
                rep.largest_differences.push_back(diffs[j].second);
        }
    }
    return out;
}

/// A text report of a calibration: iterations, clock offsets, the fitted costs with their
/// spread and outliers, messages, predicted against measured step time, per-rank idle, and the
/// largest differences. Units: the cost units of `calibrate` (milliseconds by default).
[[nodiscard]] inline std::string format_calibration(const calibration& c) {
    const calibration_report& r = c.report;
    auto num = [](double v) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.4g", v);
        return std::string(buf);
    };
    const config& cfg = c.executed.cfg();
    std::string out =
        "calibrated: " + std::to_string(cfg.ranks) + (cfg.ranks == 1 ? " rank, " : " ranks, ") +
        std::to_string(cfg.stages_per_rank) + (cfg.stages_per_rank == 1 ? " stage" : " stages") +
        " per rank (" + std::string(to_string_view(cfg.placement)) + "), " +
        std::to_string(cfg.microbatches) + " microbatches; " + std::to_string(r.iterations) +
        " iterations (iteration " + std::to_string(r.shown_iteration) +
        ", the median step, is compared)\n";
    out += "\ncosts (median per stage and kind; spread = 1.4826 x MAD)\n";
    out +=
        "  stage kind         samples  median      min         max         spread      outliers\n";
    // Each column padded to its width, and at least one space after a value that fills it.
    auto pad = [](std::string& line, std::size_t to) {
        line.resize(std::max(to, line.size() + 1), ' ');
    };
    for (const auto& f : r.fits) {
        std::string line = "  " + std::to_string(f.stage);
        pad(line, 8);
        line += std::string(code(f.kind));
        pad(line, 21);
        line += std::to_string(f.samples);
        pad(line, 30);
        for (double v : {f.median, f.min, f.max, f.spread}) {
            line += num(v);
            line.resize(line.size() + (12 - std::min<std::size_t>(11, num(v).size())), ' ');
        }
        line += std::to_string(f.outlier_count);
        for (const auto& o : f.outliers)
            line += "; rank " + std::to_string(o.rank) + " iteration " +
                    std::to_string(o.iteration) + " " + to_string(o.act) + " " + num(o.duration);
        out += line + "\n";
    }
    out += "\nmessages: " + std::to_string(r.messages) + " matched, " +
           std::to_string(r.waited_messages) + " waited for; message time " + num(r.message_time) +
           " (p2p_latency; p2p_transfer 0: the trace has no sizes)\n";
    out += "clock offsets:";
    for (std::size_t k = 0; k < r.clock_offsets.size(); ++k)
        out += " rank " + std::to_string(k) + " " + num(r.clock_offsets[k]);
    out += " (microseconds, the trace's own unit)\n";
    out += "\nstep time: measured " + num(r.measured_step);
    if (r.measured_steps.size() > 1) {
        const auto [lo, hi] = std::minmax_element(r.measured_steps.begin(), r.measured_steps.end());
        out += " (iterations " + num(*lo) + " .. " + num(*hi) + ")";
    }
    if (r.valid) {
        // Differences within rounding of the sums print as 0, not as 1e-14.
        auto rounded = [](double d, double of) {
            return std::fabs(d) <= 1e-9 * std::max(1.0, std::fabs(of)) ? 0.0 : d;
        };
        const double err =
            r.measured_step > 0
                ? rounded(100 * (r.predicted_step - r.measured_step) / r.measured_step, 100)
                : 0;
        out += ", predicted " + num(r.predicted_step) + " (" + (err >= 0 ? "+" : "") + num(err) +
               " %)\n";
        if (r.predicted_step_mean > 0)
            out += "  with each stage's mean instead of its median (outliers in): predicted " +
                   num(r.predicted_step_mean) + "\n";
        out += "  rank  measured idle  predicted idle\n";
        for (std::size_t k = 0; k < r.measured_idle.size(); ++k) {
            std::string line = "  " + std::to_string(k);
            pad(line, 8);
            line += num(r.measured_idle[k]);
            pad(line, 23);
            line += num(k < r.predicted_idle.size() ? r.predicted_idle[k] : 0);
            out += line + "\n";
        }
        out += "largest differences (end of an action, measured vs predicted):\n";
        for (const auto& d : r.largest_differences) {
            // The sign of the difference as printed (a rounded 0 is "+0").
            const double diff = rounded(d.predicted_end - d.measured_end, d.measured_end);
            out += "  rank " + std::to_string(d.rank) + " " + to_string(d.act) + ": measured " +
                   num(d.measured_end) + ", predicted " + num(d.predicted_end) + " (" +
                   (diff >= 0 ? "+" : "") + num(diff) + ")\n";
        }
    } else {
        out += "\nno replay: " + r.problem + "\n";
    }
    if (!r.notes.empty()) {
        out += "\nnotes:\n";
        for (const auto& n : r.notes) out += "  " + n + "\n";
    }
    return out;
}

} // namespace ppsched
