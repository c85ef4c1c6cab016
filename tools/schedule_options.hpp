#pragma once
/// \file schedule_options.hpp
/// The command-line options that become `schedule_params`, shared by the subcommands that
/// generate a schedule through the registry: append `schedule_param_options` to a command's
/// options and call `read_schedule_params` (and, for the planning options of cost- and
/// memory-aware schedules, `read_planning_params`).

#include <optional>
#include <string_view>

#include <ppsched/cost_model.hpp>
#include <ppsched/error.hpp>
#include <ppsched/registry.hpp>

#include "cli.hpp"
#include "cost_options.hpp"

namespace ppsched::cli {

/// The options of `schedule_params` fields (a schedule that does not take one rejects it).
inline constexpr option schedule_param_options[] = {
    {"--microbatch-group-size", "G",
     "MegatronInterleaved: consecutive microbatches per chunk, in [ranks, microbatches] "
     "(default: ranks)"},
};

/// The planning options of cost- and memory-aware schedules (ZB-1P, ZB-2P, ZB, ZB-V, ...), for
/// commands with no cost model of their own (`generate`): `--f --i --w --comm` become
/// `schedule_params::costs`, `--memory-limit` becomes `schedule_params::memory_limit`.
inline constexpr option planning_options[] = {
    {"--f", "X", "cost-aware schedules: forward time of one stage (default 1)"},
    {"--i", "X", "cost-aware schedules: input-gradient (I) time of one stage (default F)"},
    {"--w", "X", "cost-aware schedules: weight-gradient (W) time of one stage (default F)"},
    {"--comm", "X", "cost-aware schedules: time of a message between ranks (default 0)"},
    {"--memory-limit", "X",
     "memory-aware schedules: activations a rank may hold, one per stage and microbatch (as "
     "the zero-bubble authors count; a V chunk is one)"},
};

/// `params` with the planning options given on the command line (unset ones stay unset).
/// Throws `usage_error` for a bad number or inconsistent costs.
[[nodiscard]] inline schedule_params read_planning_params(const args& a, schedule_params params) {
    auto number = [&a](std::string_view name) -> std::optional<double> {
        const auto text = a.value(name);
        if (!text) return std::nullopt;
        return parse_number(*text, name);
    };
    const auto f = number("--f"), i = number("--i"), w = number("--w"), comm = number("--comm");
    if (f || i || w || comm) {
        cost_model c;
        c.uniform.forward = f;
        c.uniform.backward_input = i;
        c.uniform.backward_weight = w;
        c.p2p_latency = comm.value_or(0.0);
        try {
            c.check();
            (void)c.at(0);
        } catch (const config_error& e) {
            throw usage_error(e.what());
        }
        params.costs = c;
    }
    if (const auto limit = number("--memory-limit")) {
        if (!(*limit > 0))
            throw usage_error("--memory-limit must be > 0 (a limit of 0 fits nothing)");
        params.memory_limit = *limit;
    }
    return params;
}

/// The schedule parameters given on the command line (unset fields stay unset).
[[nodiscard]] inline schedule_params read_schedule_params(const args& a) {
    constexpr long long max_int = (1LL << 31) - 1;
    schedule_params params;
    if (a.has("--microbatch-group-size"))
        params.microbatch_group_size =
            static_cast<int>(a.integer("--microbatch-group-size", 1, max_int, 1));
    return params;
}

} // namespace ppsched::cli
