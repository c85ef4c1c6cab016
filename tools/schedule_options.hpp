#pragma once
/// \file schedule_options.hpp
/// The command-line options that become `schedule_params`, shared by the subcommands that
/// generate a schedule through the registry: append `schedule_param_options` to a command's
/// options and call `read_schedule_params`.

#include <ppsched/registry.hpp>

#include "cli.hpp"

namespace ppsched::cli {

/// The options of `schedule_params` fields (a schedule that does not take one rejects it).
inline constexpr option schedule_param_options[] = {
    {"--microbatch-group-size", "G",
     "MegatronInterleaved: consecutive microbatches per chunk, in [ranks, microbatches] "
     "(default: ranks)"},
};

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
