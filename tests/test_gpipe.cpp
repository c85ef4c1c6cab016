#include <ppsched/algorithms/validate.hpp>
#include <ppsched/generate.hpp>
#include <ppsched/schedules/gpipe.hpp>

#include <catch2/catch.hpp>

#include "support/schedule_properties.hpp"

using ppsched::action;
using ppsched::config;

namespace {
// GPipe: every rank runs all m forwards, then all m backwards, with no idle slot; it keeps all
// m activations alive.
constexpr bool gpipe_invariants(int p, int m) {
    const auto o = ppsched::generate<ppsched::gpipe>(config{.ranks = p, .microbatches = m});
    if (!ppsched::validate(o)) return false;
    for (int r = 0; r < p; ++r) {
        const auto& row = o.rank(r);
        if (row.size() != static_cast<std::size_t>(2 * m)) return false;
        for (int i = 0; i < m; ++i) {
            if (row[static_cast<std::size_t>(i)] != action::forward(r, i)) return false;
            if (row[static_cast<std::size_t>(m + i)] != action::full_backward(r, i)) return false;
        }
        if (ppsched_test::peak_activations(o, r) != m) return false;
    }
    return true;
}
} // namespace

TEST_CASE("gpipe runs all forwards then all backwards and validates", "[gpipe][schedule]") {
    STATIC_REQUIRE(gpipe_invariants(1, 1));
    STATIC_REQUIRE(gpipe_invariants(2, 5));
    STATIC_REQUIRE(gpipe_invariants(4, 8));
    STATIC_REQUIRE(gpipe_invariants(8, 3)); // fewer microbatches than ranks is fine
    STATIC_REQUIRE(gpipe_invariants(7, 33));
}

TEST_CASE("gpipe is a single-stage schedule", "[gpipe][schedule][errors]") {
    CHECK_THROWS_WITH(ppsched::generate<ppsched::gpipe>(config{.ranks = 2, .stages_per_rank = 2}),
                      "gpipe: stages_per_rank (2) must be 1 (a single-stage schedule)");
    STATIC_REQUIRE((ppsched::gpipe::name == "gpipe"));
    STATIC_REQUIRE((ppsched::gpipe::pytorch_name == "GPipe"));
}
