// config: the placements (loop, v, dual), the stage chains and which microbatches each stage
// runs, and the well-formedness check.

#include <ppsched/config.hpp>

#include <catch2/catch.hpp>

#include <string_view>

using ppsched::config;
using ppsched::stage_placement;

namespace {

constexpr config dual_4x8{
    .ranks = 4, .stages_per_rank = 2, .microbatches = 8, .placement = stage_placement::dual};

/// rank_to_stage is the inverse of stage_to_rank / local_stage_index, rank by rank, and each
/// rank's stages increase.
constexpr bool placement_is_consistent(const config& c) {
    int seen = 0;
    for (int r = 0; r < c.ranks; ++r) {
        for (int l = 0; l < c.stages_per_rank; ++l) {
            const int s = c.rank_to_stage(r, l);
            if (s < 0 || s >= c.num_stages() || c.stage_to_rank(s) != r) return false;
            if (c.local_stage_index(s) != l) return false;
            if (l > 0 && s <= c.rank_to_stage(r, l - 1)) return false;
            ++seen;
        }
    }
    return seen == c.num_stages();
}

/// Following next_stage from each first stage visits every stage once, previous_stage walks it
/// back, and every stage of a chain runs the same microbatches.
constexpr bool chains_cover_stages(const config& c) {
    int visited = 0, chains = 0;
    for (int s = 0; s < c.num_stages(); ++s) {
        if (c.previous_stage(s) != -1) continue;
        ++chains;
        for (int t = s; t != -1; t = c.next_stage(t)) {
            ++visited;
            const int n = c.next_stage(t);
            if (n != -1 &&
                (c.previous_stage(n) != t || c.stage_direction(n) != c.stage_direction(t) ||
                 c.first_microbatch(n) != c.first_microbatch(t) ||
                 c.microbatch_count(n) != c.microbatch_count(t)))
                return false;
        }
    }
    return visited == c.num_stages() && chains == c.direction_count();
}

/// Every microbatch flows through exactly one chain: the stages running it are one direction's.
constexpr bool microbatches_partitioned(const config& c) {
    for (int mb = 0; mb < c.microbatches; ++mb) {
        int stages = 0;
        for (int s = 0; s < c.num_stages(); ++s) {
            const bool runs = c.stage_runs_microbatch(s, mb);
            const bool in_range =
                mb >= c.first_microbatch(s) && mb < c.first_microbatch(s) + c.microbatch_count(s);
            if (runs != in_range) return false;
            if (runs != (c.microbatch_direction(mb) == c.stage_direction(s))) return false;
            stages += runs ? 1 : 0;
        }
        if (stages != c.num_stages() / c.direction_count()) return false;
    }
    return !c.stage_runs_microbatch(0, -1) && !c.stage_runs_microbatch(0, c.microbatches);
}

} // namespace

TEST_CASE("loop and v place stages as PyTorch's generate_stage_to_rank_mapping does",
          "[config][static]") {
    constexpr config loop{.ranks = 4, .stages_per_rank = 3, .microbatches = 4};
    constexpr config v{
        .ranks = 4, .stages_per_rank = 3, .microbatches = 4, .placement = stage_placement::v};
    STATIC_REQUIRE(loop.stage_to_rank(5) == 1);
    STATIC_REQUIRE(v.stage_to_rank(5) == 2); // second pass, reversed
    STATIC_REQUIRE(v.stage_to_rank(9) == 1); // third pass, forwards again
    STATIC_REQUIRE(v.rank_to_stage(0, 1) == 7);
    STATIC_REQUIRE(placement_is_consistent(loop));
    STATIC_REQUIRE(placement_is_consistent(v));
    // One pipeline: a single chain through every stage, every stage runs every microbatch.
    STATIC_REQUIRE(v.direction_count() == 1);
    STATIC_REQUIRE(v.previous_stage(0) == -1);
    STATIC_REQUIRE(v.previous_stage(4) == 3);
    STATIC_REQUIRE(v.next_stage(11) == -1);
    STATIC_REQUIRE(chains_cover_stages(loop));
    STATIC_REQUIRE(chains_cover_stages(v));
    STATIC_REQUIRE(microbatches_partitioned(v));
    STATIC_REQUIRE(v.microbatch_count(7) == 4);
    STATIC_REQUIRE(v.first_microbatch(7) == 0);
}

TEST_CASE("the dual placement holds two opposite pipelines, each with half the microbatches",
          "[config][static]") {
    // Direction 0: stages 0..3 on ranks 0..3; direction 1: stage 4 + s on rank 3 - s.
    STATIC_REQUIRE(dual_4x8.direction_count() == 2);
    STATIC_REQUIRE(dual_4x8.stage_to_rank(0) == 0);
    STATIC_REQUIRE(dual_4x8.stage_to_rank(3) == 3);
    STATIC_REQUIRE(dual_4x8.stage_to_rank(4) == 3);
    STATIC_REQUIRE(dual_4x8.stage_to_rank(7) == 0);
    STATIC_REQUIRE(dual_4x8.rank_to_stage(1, 0) == 1);
    STATIC_REQUIRE(dual_4x8.rank_to_stage(1, 1) == 6);
    STATIC_REQUIRE(placement_is_consistent(dual_4x8));
    // No data flows between stage 3 and stage 4.
    STATIC_REQUIRE(dual_4x8.next_stage(3) == -1);
    STATIC_REQUIRE(dual_4x8.previous_stage(4) == -1);
    STATIC_REQUIRE(dual_4x8.next_stage(4) == 5);
    STATIC_REQUIRE(dual_4x8.previous_stage(3) == 2);
    STATIC_REQUIRE(chains_cover_stages(dual_4x8));
    // Microbatches 0..3 go through stages 0..3, microbatches 4..7 through stages 4..7.
    STATIC_REQUIRE(dual_4x8.stage_direction(3) == 0);
    STATIC_REQUIRE(dual_4x8.stage_direction(4) == 1);
    STATIC_REQUIRE(dual_4x8.microbatch_direction(3) == 0);
    STATIC_REQUIRE(dual_4x8.microbatch_direction(4) == 1);
    STATIC_REQUIRE(dual_4x8.first_microbatch(6) == 4);
    STATIC_REQUIRE(dual_4x8.microbatch_count(6) == 4);
    STATIC_REQUIRE(dual_4x8.stage_runs_microbatch(2, 3));
    STATIC_REQUIRE(!dual_4x8.stage_runs_microbatch(2, 4));
    STATIC_REQUIRE(microbatches_partitioned(dual_4x8));
}

TEST_CASE("with more stages per rank each dual direction is a V, the second mirrored",
          "[config][static]") {
    constexpr config c{
        .ranks = 3, .stages_per_rank = 4, .microbatches = 7, .placement = stage_placement::dual};
    // Direction 0 = stages 0..5 as a V; direction 1 = stages 6..11, the mirror image.
    STATIC_REQUIRE(c.stage_to_rank(5) == 0);
    STATIC_REQUIRE(c.stage_to_rank(6) == 2);
    STATIC_REQUIRE(c.stage_to_rank(8) == 0);
    STATIC_REQUIRE(c.stage_to_rank(9) == 0);
    STATIC_REQUIRE(c.stage_to_rank(11) == 2);
    STATIC_REQUIRE(placement_is_consistent(c));
    STATIC_REQUIRE(chains_cover_stages(c));
    // An odd number of microbatches: the second direction takes the larger half.
    STATIC_REQUIRE(c.microbatch_count(0) == 3);
    STATIC_REQUIRE(c.microbatch_count(11) == 4);
    STATIC_REQUIRE(microbatches_partitioned(c));
}

TEST_CASE("placements have command-line names", "[config]") {
    stage_placement p = stage_placement::loop;
    CHECK(ppsched::parse_placement("dual", p));
    CHECK(p == stage_placement::dual);
    CHECK(ppsched::parse_placement("v", p));
    CHECK(p == stage_placement::v);
    CHECK_FALSE(ppsched::parse_placement("zigzag", p));
    CHECK(p == stage_placement::v); // unchanged
    for (const auto q : {stage_placement::loop, stage_placement::v, stage_placement::dual}) {
        stage_placement back = stage_placement::loop;
        CHECK(ppsched::parse_placement(ppsched::to_string_view(q), back));
        CHECK(back == q);
    }
}

TEST_CASE("check names the malformed field", "[config][errors]") {
    CHECK_THROWS_WITH(ppsched::check(config{.ranks = 0}),
                      "ppsched::config: ranks must be >= 1 (got 0)");
    CHECK_THROWS_WITH(
        ppsched::check(
            config{.ranks = 2, .stages_per_rank = 3, .placement = stage_placement::dual}),
        "ppsched::config: the dual placement needs an even stages_per_rank (got 3): each "
        "direction holds half of every rank's stages");
    CHECK_NOTHROW(ppsched::check(dual_4x8));
}
