#pragma once
// Test helper: PyTorch's orders from the conformance data (../shared/conformance/torch), read
// with the configuration their cases.json entry names.

#include <ppsched/config.hpp>
#include <ppsched/io/csv.hpp>
#include <ppsched/order.hpp>

#include <string>

#include "support/torch_cases.hpp"

namespace ppsched_test {

/// Where PyTorch's orders are.
inline const std::string torch_dir = std::string(PPSCHED_CONFORMANCE_DIR) + "/torch";

/// The configuration of a case: its sizes, with the V placement for the V schedules.
inline ppsched::config case_config(const torch_case& c) {
    const bool v = c.schedule == "ZBVZeroBubble" || c.schedule == "DualPipeV";
    return ppsched::config{.ranks = c.ranks,
                           .stages_per_rank = c.stages_per_rank,
                           .microbatches = c.microbatches,
                           .placement =
                               v ? ppsched::stage_placement::v : ppsched::stage_placement::loop};
}

/// The order in `relative` (a path below `torch_dir`), read for `cfg`.
inline ppsched::order load(const std::string& relative, const ppsched::config& cfg) {
    const std::string path = torch_dir + "/" + relative;
    return ppsched::io::read_csv(ppsched::io::read_file(path), cfg, path);
}

} // namespace ppsched_test
