#include <ppsched/algorithms/validate.hpp>
#include <ppsched/generate.hpp>
#include <ppsched/schedules/looped_bfs.hpp>

#include <catch2/catch.hpp>

#include <string>

#include "support/schedule_properties.hpp"

using ppsched::action_kind;
using ppsched::config;

namespace {
// Looped BFS: r leading idle slots, every forward before every backward on a rank, forwards
// by increasing stage, backwards by decreasing stage; all m * v activations alive at the peak.
constexpr bool looped_bfs_invariants(int p, int v, int m) {
    const auto o = ppsched::generate<ppsched::looped_bfs>(
        config{.ranks = p, .stages_per_rank = v, .microbatches = m});
    if (!ppsched::validate(o)) return false;
    for (int r = 0; r < p; ++r) {
        if (ppsched_test::leading_idle(o, r) != r) return false;
        if (ppsched_test::peak_activations(o, r) != m * v) return false;
        int last_f_stage = -1, last_b_stage = p * v, backwards = 0;
        for (const auto& s : o.rank(r)) {
            if (!s) continue;
            if (s->kind() == action_kind::forward) {
                if (backwards > 0 || s->stage() < last_f_stage) return false;
                last_f_stage = s->stage();
            } else {
                if (s->stage() > last_b_stage) return false;
                last_b_stage = s->stage();
                ++backwards;
            }
        }
        if (backwards != m * v) return false;
    }
    return true;
}
} // namespace

TEST_CASE("looped_bfs runs stage after stage and validates", "[looped_bfs][schedule]") {
    STATIC_REQUIRE(looped_bfs_invariants(1, 1, 1));
    STATIC_REQUIRE(looped_bfs_invariants(2, 3, 5));
    STATIC_REQUIRE(looped_bfs_invariants(4, 2, 8));
    STATIC_REQUIRE(looped_bfs_invariants(3, 4, 2));
    STATIC_REQUIRE(looped_bfs_invariants(8, 2, 16));
}

TEST_CASE("looped_bfs accepts every well-formed configuration", "[looped_bfs][schedule]") {
    CHECK_NOTHROW(
        ppsched::looped_bfs{}.check(config{.ranks = 3, .stages_per_rank = 5, .microbatches = 7}));
    CHECK(std::string(ppsched::looped_bfs::constraints()) == "any configuration");
}
