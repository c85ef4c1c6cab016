#pragma once
// Test helper: the zero-bubble authors' cases (../shared/conformance/zb/cases.json), read the
// same way by the deterministic and the heuristic conformance tests.

#include <ppsched/config.hpp>

#include <catch2/catch.hpp>

#include <string>

#include "support/conformance_cases.hpp"

namespace ppsched_test {

/// Where the authors' cases are.
inline const std::string zb_dir = std::string(PPSCHED_CONFORMANCE_DIR) + "/zb";

/// The number a case gives for `key` (a test failure when it gives none).
inline double number(const conformance_case& c, const std::string& key) {
    REQUIRE(c.has(key));
    return std::stod(c.get(key));
}

/// The configuration of a case (loop placement; the V schedules set theirs).
inline ppsched::config config_of(const conformance_case& c) {
    return ppsched::config{.ranks = c.integer("ranks"),
                           .stages_per_rank = c.integer("stages_per_rank"),
                           .microbatches = c.integer("microbatches")};
}

} // namespace ppsched_test
