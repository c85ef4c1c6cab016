// The umbrella header: the minimal use from a training framework's unit test, and every
// schedule over configurations beyond PyTorch's conformance grid.

#include <ppsched/registry.hpp>
#include <ppsched/schedules.hpp>

#include <catch2/catch.hpp>

#include <string>

namespace {
constexpr ppsched::config cfg{.ranks = 4, .stages_per_rank = 2, .microbatches = 8};
static_assert(ppsched::validate(ppsched::generate<ppsched::interleaved_1f1b>(cfg)));
} // namespace

TEST_CASE("every schedule validates at compile time through the umbrella header", "[schedules]") {
    STATIC_REQUIRE(ppsched::validate(
        ppsched::generate<ppsched::gpipe>(ppsched::config{.ranks = 4, .microbatches = 8})));
    STATIC_REQUIRE(ppsched::validate(
        ppsched::generate<ppsched::one_f_one_b>(ppsched::config{.ranks = 4, .microbatches = 8})));
    STATIC_REQUIRE(ppsched::validate(ppsched::generate<ppsched::interleaved_1f1b>(cfg)));
    STATIC_REQUIRE(ppsched::validate(ppsched::generate<ppsched::looped_bfs>(cfg)));
    STATIC_REQUIRE(ppsched::validate(ppsched::generate<ppsched::interleaved_zero_bubble>(cfg)));
    STATIC_REQUIRE(ppsched::validate(ppsched::generate<ppsched::zbv_zero_bubble>(cfg)));
    STATIC_REQUIRE(ppsched::validate(ppsched::generate<ppsched::dualpipe_v>(cfg)));
    STATIC_REQUIRE(ppsched::validate(ppsched::generate<ppsched::dualpipe>(cfg)));
    STATIC_REQUIRE(ppsched::validate(
        ppsched::generate<ppsched::zb_1p>(ppsched::config{.ranks = 4, .microbatches = 8})));
    STATIC_REQUIRE(ppsched::validate(ppsched::generate<ppsched::zb_v>(cfg)));
    STATIC_REQUIRE(ppsched::validate(ppsched::generate<ppsched::v_half>(cfg)));
    STATIC_REQUIRE(ppsched::validate(ppsched::generate<ppsched::v_min>(cfg)));
}

namespace {
// Whether the schedule should accept the configuration, from its documented constraints.
bool documented_support(const std::string& name, const ppsched::config& c) {
    const int rounds = c.microbatches / c.ranks > 1 ? c.microbatches / c.ranks : 1;
    if (name == "gpipe") return c.stages_per_rank == 1;
    if (name == "one_f_one_b") return c.stages_per_rank == 1 && c.microbatches >= c.ranks;
    if (name == "interleaved_1f1b" || name == "interleaved_zero_bubble")
        return c.microbatches % rounds == 0;
    if (name == "looped_bfs") return true;
    if (name == "zbv_zero_bubble") return c.stages_per_rank == 2;
    if (name == "dualpipe_v") return c.stages_per_rank == 2 && c.microbatches >= 2 * c.ranks;
    if (name == "dualpipe")
        return c.stages_per_rank == 2 && c.ranks % 2 == 0 && c.microbatches % 2 == 0 &&
               c.microbatches >= 2 * c.ranks;
    // Group size ranks (the default): a remainder of microbatches / ranks is below ranks.
    if (name == "megatron_interleaved")
        return c.stages_per_rank >= 2 && c.microbatches >= c.ranks && c.microbatches % c.ranks == 0;
    if (name == "one_f_one_b_overlap")
        return c.stages_per_rank == 1 && c.microbatches >= 2 * c.ranks - 1;
    if (name == "interleaved_1f1b_overlap")
        return c.microbatches % c.ranks == 0 && c.microbatches >= 2 * c.ranks;
    if (name == "zb_h1" || name == "zb_h2")
        return c.stages_per_rank == 1 && c.microbatches >= 2 * c.ranks;
    if (name == "one_f_one_b_v") return c.stages_per_rank == 2;
    if (name == "zb_1p" || name == "zb_2p" || name == "zb_auto") return c.stages_per_rank == 1;
    if (name == "zb_v" || name == "v_half" || name == "v_min") return c.stages_per_rank == 2;
    return false;
}
} // namespace

TEST_CASE("beyond the conformance grid every accepted configuration validates and the rest "
          "are rejected as documented",
          "[schedules][sweep]") {
    std::size_t accepted = 0, rejected = 0;
    for (const auto& e : ppsched::builtin_schedules().entries()) {
        for (int p : {1, 2, 3, 5, 6, 7, 9, 12})
            for (int v = 1; v <= 4; ++v)
                for (int m : {1, 2, 3, 5, 6, 7, 9, 10, 11, 13, 15, 18, 24, 25, 27, 36}) {
                    const ppsched::config c{.ranks = p, .stages_per_rank = v, .microbatches = m};
                    INFO(e.name << " ranks=" << p << " stages_per_rank=" << v
                                << " microbatches=" << m);
                    if (!documented_support(e.name, c)) {
                        CHECK_THROWS_WITH(ppsched::builtin_schedules().generate(e.name, c),
                                          Catch::Matchers::StartsWith(e.name + ": "));
                        ++rejected;
                        continue;
                    }
                    const auto o = ppsched::builtin_schedules().generate(e.name, c);
                    const auto report = ppsched::validate(o);
                    if (!report) FAIL(ppsched::to_string(report));
                    ++accepted;
                }
    }
    CHECK(accepted > 1000);
    CHECK(rejected > 500);
}
