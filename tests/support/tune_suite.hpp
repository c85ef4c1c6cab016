#pragma once
// The auto-scheduler's problem suite (issue 16): p in {2, 4, 8}, m in {p, 2p, 4p}; placements
// loop with 1 and 2 stages per rank and v; five cost shapes; p2p latency 0 and 0.1 F; memory
// limit none, 1F1B's peak and half of it. Shared by the tests and the benchmarks.

#include <ppsched/tune/problem.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ppsched_test {

enum class cost_shape { uniform, uneven_ends, random, cheap_w, dear_w };
enum class memory_case { none, one_f_one_b, half };

inline const char* to_chars(cost_shape c) {
    switch (c) {
    case cost_shape::uniform:
        return "uniform";
    case cost_shape::uneven_ends:
        return "first+30%,last+60%";
    case cost_shape::random:
        return "random+-25%";
    case cost_shape::cheap_w:
        return "W=0.5I";
    default:
        return "W=1.5I";
    }
}
inline const char* to_chars(memory_case c) {
    return c == memory_case::none ? "none" : c == memory_case::one_f_one_b ? "1F1B" : "half";
}

/// A problem of the suite and its description.
struct suite_problem {
    ppsched::tune_problem problem;
    std::string name;
};

/// The costs of one shape for `stages` stages (F = I = W = 1 unless the shape says otherwise;
/// the random shape draws each stage's factor in [0.75, 1.25] from `seed`).
inline ppsched::cost_model suite_costs(cost_shape shape, int stages, double latency,
                                       std::uint64_t seed) {
    ppsched::cost_model c;
    c.p2p_latency = latency;
    c.per_stage.resize(static_cast<std::size_t>(stages));
    std::uint64_t state = seed * 0x9e3779b97f4a7c15ULL + 1;
    for (int s = 0; s < stages; ++s) {
        double factor = 1, w = 1;
        if (shape == cost_shape::uneven_ends) factor = s == 0 ? 1.3 : s == stages - 1 ? 1.6 : 1.0;
        if (shape == cost_shape::random) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            factor = 0.75 + 0.5 * static_cast<double>(state % 1000) / 999.0;
        }
        if (shape == cost_shape::cheap_w) w = 0.5;
        if (shape == cost_shape::dear_w) w = 1.5;
        auto& st = c.per_stage[static_cast<std::size_t>(s)];
        st.forward = factor;
        st.backward_input = factor;
        st.backward_weight = factor * w;
        st.activation = 1.0;
    }
    return c;
}

/// The limit of a memory case: 1F1B's peak is min(p, m) microbatches of a rank's activations
/// (every stage of the rank holds one per microbatch); half of it is at least the least any
/// order needs (one microbatch's).
inline std::optional<double> suite_limit(memory_case mem, int p, int m, int v) {
    if (mem == memory_case::none) return std::nullopt;
    const double peak = std::min(p, m) * static_cast<double>(v);
    if (mem == memory_case::one_f_one_b) return peak;
    return std::max(static_cast<double>(v), peak / 2);
}

/// Every problem of the suite with `ranks` in `ps`.
inline std::vector<suite_problem> tune_suite(std::vector<int> ps = {2, 4, 8}) {
    std::vector<suite_problem> out;
    for (int p : ps) {
        for (int mult : {1, 2, 4}) {
            const int m = p * mult;
            for (int layout = 0; layout < 3; ++layout) {
                const int v = layout == 0 ? 1 : 2;
                const auto placement =
                    layout == 2 ? ppsched::stage_placement::v : ppsched::stage_placement::loop;
                for (auto shape : {cost_shape::uniform, cost_shape::uneven_ends, cost_shape::random,
                                   cost_shape::cheap_w, cost_shape::dear_w}) {
                    for (double latency : {0.0, 0.1}) {
                        for (auto mem :
                             {memory_case::none, memory_case::one_f_one_b, memory_case::half}) {
                            suite_problem sp;
                            sp.problem.ranks = p;
                            sp.problem.microbatches = m;
                            sp.problem.stages_per_rank = v;
                            sp.problem.placement = placement;
                            sp.problem.costs =
                                suite_costs(shape, p * v, latency,
                                            static_cast<std::uint64_t>(p * 1000 + m * 10 + layout));
                            sp.problem.memory_limit = suite_limit(mem, p, m, v);
                            sp.name = "p=" + std::to_string(p) + " m=" + std::to_string(m) + " " +
                                      (layout == 2 ? "v" : "loop") + " v=" + std::to_string(v) +
                                      " costs=" + to_chars(shape) +
                                      " p2p=" + (latency > 0 ? "0.1" : "0") +
                                      " memory=" + to_chars(mem);
                            out.push_back(std::move(sp));
                        }
                    }
                }
            }
        }
    }
    return out;
}

} // namespace ppsched_test
