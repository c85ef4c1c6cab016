// Fuzz target: the auto-scheduler on problems built from bytes. Small shapes (1-4 ranks, 1-6
// microbatches, loop with 1-3 stages per rank or V), per-stage costs on a grid that includes
// zero durations, zero or uneven activations, parameters, I freeing part or all of an
// activation, messages, a fused or split backward, any memory limit (none, below the least,
// at it, above), and the beams on or off. `tune` must either refuse the problem with a
// config_error or return an order that keeps every promise of its result: valid, lowerable,
// re-simulated to the reported makespan and peaks, within the limit, never slower than a
// built-in that fits, and never faster than the bound (the bound holds for every valid order
// within the limit, the built-ins' too).
#include "contract.hpp"

#include <ppsched/memory_limit.hpp>
#include <ppsched/tune/tune.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace {

using ppsched_fuzz::byte_reader;

ppsched::tune_problem read_problem(byte_reader& in) {
    ppsched::tune_problem p;
    p.ranks = 1 + in.below(4);
    p.microbatches = 1 + in.below(6);
    if (in.below(4) == 0) {
        p.placement = ppsched::stage_placement::v;
        p.stages_per_rank = 2;
    } else {
        p.stages_per_rank = 1 + in.below(3);
    }
    p.backward = in.below(4) == 0 ? ppsched::backward_mode::fused : ppsched::backward_mode::split;
    const int stages = p.ranks * p.stages_per_rank;
    p.costs.per_stage.resize(static_cast<std::size_t>(stages));
    const bool uniform = in.flag(); // every stage alike (more ties), else each its own
    for (int s = 0; s < stages; ++s) {
        auto& st = p.costs.per_stage[static_cast<std::size_t>(s)];
        if (uniform && s > 0) {
            st = p.costs.per_stage.front();
            continue;
        }
        st.forward = 0.25 * in.below(9);
        const double i = 0.25 * in.below(9), w = 0.25 * in.below(9);
        st.backward_input = i;
        st.backward_weight = w;
        // B: I + W, or cheaper (a fused kernel), or dearer.
        st.full_backward = std::max(0.0, i + w + 0.25 * (in.below(5) - 2));
        st.activation = 0.5 * in.below(5);
        st.parameters = 0.5 * in.below(3);
    }
    p.costs.p2p_latency = 0.125 * in.below(4);
    p.costs.input_grad_frees = 0.5 * in.below(3);
    // The limit: none, or anywhere from below what one microbatch needs to far above.
    if (in.below(3) != 0) p.memory_limit = 0.25 * in.below(64);
    return p;
}

void check_result(const ppsched::tune_problem& p, const ppsched::tune_result& r) {
    const auto rep = ppsched::validate(r.best);
    PPSCHED_FUZZ_CHECK(rep.valid(), ppsched::to_string(rep));
    PPSCHED_FUZZ_CHECK(ppsched::validate(ppsched::lower(r.best)).valid(), "the lowering");
    const ppsched::simulation sim = ppsched::simulate(r.best, p.costs);
    PPSCHED_FUZZ_CHECK(sim.status == ppsched::simulation_status::ok,
                       ppsched::describe_problem(sim));
    PPSCHED_FUZZ_CHECK(sim.makespan == r.makespan,
                       std::to_string(sim.makespan) + " reported " + std::to_string(r.makespan));
    PPSCHED_FUZZ_CHECK(sim.ranks.size() == r.peak_memory.size());
    for (std::size_t i = 0; i < sim.ranks.size(); ++i) {
        PPSCHED_FUZZ_CHECK(sim.ranks[i].peak_memory == r.peak_memory[i]);
        if (p.memory_limit)
            PPSCHED_FUZZ_CHECK(ppsched::fits_memory_limit(r.peak_memory[i], *p.memory_limit),
                               "rank " + std::to_string(i) + " peaks at " +
                                   std::to_string(r.peak_memory[i]));
    }
    for (const auto& row : r.best)
        for (const auto& s : row) {
            PPSCHED_FUZZ_CHECK(s.has_value(), "an idle slot in a tuned order");
            if (p.backward == ppsched::backward_mode::fused)
                PPSCHED_FUZZ_CHECK(s->kind() != ppsched::action_kind::backward_input &&
                                       s->kind() != ppsched::action_kind::backward_weight,
                                   "I or W where the runtime runs only B");
        }
    const double slack = 1e-9 * (1 + r.makespan);
    PPSCHED_FUZZ_CHECK(r.bound.value <= r.makespan + slack,
                       "bound " + std::to_string(r.bound.value) + " above the makespan " +
                           std::to_string(r.makespan));
    PPSCHED_FUZZ_CHECK(r.gap >= 0 && (r.gap > 0 || r.makespan <= r.bound.value + slack));
    for (const auto& c : r.candidates) {
        if (!c.fits) continue;
        PPSCHED_FUZZ_CHECK(r.makespan <= c.makespan + slack, c.name + " is faster");
        PPSCHED_FUZZ_CHECK(r.bound.value <= c.makespan + slack, c.name + " beats the bound");
    }
    ppsched_fuzz::check_order(r.best, p.costs);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    byte_reader in(data, size);
    const ppsched::tune_problem problem = read_problem(in);
    ppsched::tune_options options;
    options.max_evaluations = 200;
    options.exact_nodes = 2000;
    options.time_limit = 5;
    options.threads = 1 + static_cast<std::size_t>(in.below(2));
    options.seed = in.byte();
    const int beam = in.below(3);
    options.beam_width = beam == 0 ? 0 : beam == 1 ? 4 : 16;
    ppsched::tune_result r;
    try {
        r = ppsched::tune(problem, options);
    } catch (const ppsched::config_error& e) {
        // Refused: only where the limit is below (or within rounding of) the least any order
        // needs: one microbatch's activations on each of a rank's stages, and its parameters.
        PPSCHED_FUZZ_CHECK(problem.memory_limit.has_value(), e.what());
        const ppsched::config cfg = problem.cfg();
        std::vector<double> least(static_cast<std::size_t>(problem.ranks), 0.0);
        for (int s = 0; s < cfg.num_stages(); ++s) {
            const auto& st = problem.costs.per_stage[static_cast<std::size_t>(s)];
            least[static_cast<std::size_t>(cfg.stage_to_rank(s))] +=
                st.activation.value_or(0) + st.parameters.value_or(0);
        }
        const double most = *std::max_element(least.begin(), least.end());
        PPSCHED_FUZZ_CHECK(*problem.memory_limit <= most * (1 + 1e-9) + 1e-9,
                           std::string("refused a limit above the least any order needs: ") +
                               e.what());
        return 0;
    } catch (const std::exception& e) {
        ppsched_fuzz::broken("tune threw something other than config_error", e.what());
    }
    check_result(problem, r);
    return 0;
}
