#pragma once
// The zero-bubble authors' measures of a schedule (../shared/conformance/zb/README and the
// papers), computed from ppsched::simulate's result:
// - a rank's span: end of its last compute action - start of its first (their scheduler's
//   score); its span bubble: the span minus the rank's compute time;
// - peak memory in activations of a full rank: F allocates one unit per stage, I frees none,
//   W or a fused B frees it, and a chunk of a V schedule is 1/stages_per_rank of a rank's
//   activation (so `zb_costs` sets activation = 1 / stages_per_rank).

#include <ppsched/algorithms/simulate.hpp>
#include <ppsched/cost_model.hpp>

#include <cmath>
#include <cstddef>
#include <vector>

namespace ppsched_test {

/// F, I, W per action (B = I + W), messages of `comm`, activation 1/`stages_per_rank` per
/// stage: the authors' cost and memory model.
inline ppsched::cost_model zb_costs(double f, double i, double w, double comm,
                                    int stages_per_rank) {
    ppsched::cost_model c = ppsched::cost_model::uniform_fiw(f, i, w);
    c.p2p_latency = comm;
    c.uniform.activation = 1.0 / stages_per_rank;
    return c;
}

/// Per rank: end of its last compute action - start of its first (0 for an empty rank).
inline std::vector<double> rank_spans(const ppsched::simulation& sim) {
    std::vector<double> first(sim.ranks.size(), -1), last(sim.ranks.size(), 0);
    for (const auto& t : sim.timeline) {
        if (t.on != ppsched::stream::compute || !t.ran) continue;
        const auto r = static_cast<std::size_t>(t.rank);
        if (first[r] < 0 || t.start < first[r]) first[r] = t.start;
        if (t.end > last[r]) last[r] = t.end;
    }
    std::vector<double> span(sim.ranks.size(), 0);
    for (std::size_t r = 0; r < span.size(); ++r) span[r] = first[r] < 0 ? 0 : last[r] - first[r];
    return span;
}

/// Per rank: its span minus its compute time (the idle time inside its span).
inline std::vector<double> rank_span_bubbles(const ppsched::simulation& sim) {
    std::vector<double> b = rank_spans(sim);
    for (std::size_t r = 0; r < b.size(); ++r) b[r] -= sim.ranks[r].busy;
    return b;
}

/// The largest span over the ranks (the case files' `longest_rank_span`).
inline double longest_rank_span(const ppsched::simulation& sim) {
    double m = 0;
    for (double s : rank_spans(sim)) m = s > m ? s : m;
    return m;
}

/// The largest peak activation memory over the ranks (with `zb_costs`: in full-rank units).
inline double peak_activations(const ppsched::simulation& sim) {
    double m = 0;
    for (const auto& r : sim.ranks) m = r.peak_activations > m ? r.peak_activations : m;
    return m;
}

/// Equal up to rounding.
inline bool near(double a, double b) {
    return std::abs(a - b) <= 1e-9 * (1 + std::abs(a) + std::abs(b));
}

} // namespace ppsched_test
