// Every case of Megatron-LM's own interleaved schedule (../shared/conformance/megatron):
// accepted configurations must produce Megatron's order (rows compared after dropping idle
// cells), rejected ones a config_error for the same reason Megatron gives. And where PyTorch's
// Interleaved1F1B also runs, the default group size reproduces PyTorch's order.

#include <ppsched/io/csv.hpp>
#include <ppsched/registry.hpp>
#include <ppsched/schedules/megatron_interleaved.hpp>

#include <catch2/catch.hpp>

#include <string>

#include "support/conformance_cases.hpp"
#include "support/torch_cases.hpp"

namespace {

const std::string conformance_dir = PPSCHED_CONFORMANCE_DIR;
const std::string megatron_dir = conformance_dir + "/megatron";

ppsched::order read_order(const std::string& path) {
    return ppsched::io::read_csv(ppsched::io::read_file(path), path);
}

std::string compact_text(ppsched::order o) {
    o.drop_idle();
    return ppsched::io::write_csv(o);
}

} // namespace

TEST_CASE("every configuration Megatron-LM accepts generates Megatron's order",
          "[conformance][megatron]") {
    const auto cases = ppsched_test::read_conformance_cases(megatron_dir + "/cases.json");
    int matched = 0, total = 0;
    for (const auto& c : cases) {
        if (c.get("status") != "ok") continue;
        ++total;
        const ppsched::config cfg{.ranks = c.integer("ranks"),
                                  .stages_per_rank = c.integer("stages_per_rank"),
                                  .microbatches = c.integer("microbatches")};
        const int g = c.integer("params.microbatch_group_size");
        INFO(c.get("schedule") << " ranks=" << cfg.ranks
                               << " stages_per_rank=" << cfg.stages_per_rank
                               << " microbatches=" << cfg.microbatches << " g=" << g);
        const auto expected = read_order(megatron_dir + "/" + c.get("compute"));
        // Through the registry, by the authors' name, with the parameter as a tool passes it.
        const auto got = ppsched::builtin_schedules().generate(c.get("schedule"), cfg,
                                                               {.microbatch_group_size = g});
        CHECK(compact_text(got) == compact_text(expected));
        // And the policy itself.
        CHECK(ppsched::generate(ppsched::megatron_interleaved{.microbatch_group_size = g}, cfg) ==
              got);
        if (compact_text(got) == compact_text(expected)) ++matched;
    }
    CHECK(total == 48);
    CHECK(matched == total);
}

TEST_CASE("every configuration Megatron-LM rejects is rejected for the same reason",
          "[conformance][megatron]") {
    const auto cases = ppsched_test::read_conformance_cases(megatron_dir + "/cases.json");
    int rejected = 0;
    for (const auto& c : cases) {
        if (c.get("status") != "rejected") continue;
        ++rejected;
        const ppsched::config cfg{.ranks = c.integer("ranks"),
                                  .stages_per_rank = c.integer("stages_per_rank"),
                                  .microbatches = c.integer("microbatches")};
        const int g = c.integer("params.microbatch_group_size");
        const std::string message = c.get("message");
        INFO(c.get("schedule") << " ranks=" << cfg.ranks << " stages_per_rank="
                               << cfg.stages_per_rank << " microbatches=" << cfg.microbatches
                               << " g=" << g << ": " << message);
        const ppsched::schedule_params params{.microbatch_group_size = g};
        CHECK_THROWS_AS(ppsched::builtin_schedules().check(c.get("schedule"), cfg, params),
                        ppsched::config_error);
        // Megatron's two messages: the group size range, or the remainder with its value.
        if (message.find("should range in") != std::string::npos) {
            CHECK_THROWS_WITH(ppsched::builtin_schedules().generate(c.get("schedule"), cfg, params),
                              Catch::Matchers::Contains("must be in [ranks, microbatches] = [" +
                                                        std::to_string(cfg.ranks) + ", " +
                                                        std::to_string(cfg.microbatches) + "]"));
        } else {
            const std::string rem = std::to_string(cfg.microbatches % g);
            REQUIRE(message.find("but it is " + rem + ".") != std::string::npos);
            CHECK_THROWS_WITH(
                ppsched::builtin_schedules().generate(c.get("schedule"), cfg, params),
                Catch::Matchers::StartsWith("megatron_interleaved: microbatches % "
                                            "microbatch_group_size must be 0 or >= ranks") &&
                    Catch::Matchers::Contains(" = " + rem + " with ") &&
                    Catch::Matchers::Contains("dependency bubble"));
        }
    }
    CHECK(rejected == 72);
}

TEST_CASE("with the default group size Megatron's order is PyTorch's Interleaved1F1B wherever "
          "both run",
          "[conformance][megatron][torch]") {
    const std::string torch_dir = conformance_dir + "/torch";
    int compared = 0;
    for (const auto& c : ppsched_test::read_torch_cases(torch_dir + "/cases.json")) {
        if (c.schedule != "Interleaved1F1B" || c.status != "ok") continue;
        const ppsched::config cfg{
            .ranks = c.ranks, .stages_per_rank = c.stages_per_rank, .microbatches = c.microbatches};
        try {
            ppsched::megatron_interleaved{}.check(cfg);
        } catch (const ppsched::config_error&) {
            continue;
        }
        INFO("ranks=" << c.ranks << " stages_per_rank=" << c.stages_per_rank
                      << " microbatches=" << c.microbatches);
        CHECK(compact_text(ppsched::builtin_schedules().generate("MegatronInterleaved", cfg)) ==
              compact_text(read_order(torch_dir + "/" + c.compute)));
        ++compared;
    }
    // ranks {1,2,4,8} x microbatches {1,...,16} x 2-4 stages per rank, where microbatches is a
    // multiple of ranks: 27 with at least two ranks (the research notes' count), 15 with one.
    CHECK(compared == 27 + 15);
}
