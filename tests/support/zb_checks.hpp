#pragma once
// Checks shared by the zero-bubble schedule tests: the order validates, lowers, and simulates
// without deadlock both compute-only and lowered, with the same makespan when messages are
// free (the lowering only adds communication).

#include <ppsched/algorithms/lower.hpp>
#include <ppsched/algorithms/simulate.hpp>
#include <ppsched/algorithms/validate.hpp>
#include <ppsched/order.hpp>

#include <string>

#include "support/zb_measures.hpp"

namespace ppsched_test {

/// An empty string when `o` validates, lowers (and the lowered order validates), and both
/// simulate to the end with equal makespans under `costs` (free messages); otherwise what
/// failed.
inline std::string runs_everywhere(const ppsched::order& o, const ppsched::cost_model& costs) {
    if (const auto report = ppsched::validate(o); !report)
        return "compute order: " + ppsched::to_string(report);
    const ppsched::order lowered = ppsched::lower(o);
    if (const auto report = ppsched::validate(lowered); !report)
        return "lowered order: " + ppsched::to_string(report);
    const auto plain = ppsched::simulate(o, costs);
    if (!plain) return "compute order: " + ppsched::describe_problem(plain);
    const auto low = ppsched::simulate(lowered, costs);
    if (!low) return "lowered order: " + ppsched::describe_problem(low);
    if (costs.message_time() == 0 && !near(plain.makespan, low.makespan))
        return "makespan " + std::to_string(plain.makespan) + " compute-only but " +
               std::to_string(low.makespan) + " lowered";
    return {};
}

} // namespace ppsched_test
