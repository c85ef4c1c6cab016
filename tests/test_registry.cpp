#include <ppsched/registry.hpp>

#include <catch2/catch.hpp>

#include <string>

using ppsched::config;

TEST_CASE("the registry finds schedules by PyTorch's and C++ names, ignoring case", "[registry]") {
    const auto& reg = ppsched::builtin_schedules();
    // PyTorch's get_schedule_class names.
    for (const char* name : {"1F1B", "Interleaved1F1B", "GPipe", "LoopedBFS",
                             "InterleavedZeroBubble", "ZBVZeroBubble", "DualPipeV"}) {
        INFO(name);
        REQUIRE(reg.find(name) != nullptr);
        CHECK(reg.find(name)->pytorch_name == name);
    }
    CHECK(reg.find("gpipe") == reg.find("GPIPE"));
    CHECK(reg.find("interleaved1f1b")->name == "interleaved_1f1b");
    CHECK(reg.find("zbv_zero_bubble")->pytorch_name == "ZBVZeroBubble");
    CHECK(reg.find("Dualpipe_V")->pytorch_name == "DualPipeV");
    CHECK(reg.find("PipelineScheduleSingle") == nullptr); // a base class, not a schedule
    CHECK(reg.find("") == nullptr);
}

TEST_CASE("the registry lists every schedule with its constraints", "[registry]") {
    const auto entries = ppsched::builtin_schedules().entries();
    // PyTorch's 7, Megatron's interleaved, 2 overlapped 1F1B, DualPipe, ZB-H1, ZB-H2, 1F1B-V,
    // ZB-1P, ZB-2P, ZB, ZB-V, V-Half, V-Min
    REQUIRE(entries.size() == 20);
    for (const auto& e : entries) {
        INFO(e.name);
        CHECK(!e.constraints.empty());
        CHECK(!e.summary.empty());
        CHECK(e.default_stages_per_rank >= 1);
        // The default stage count is one the schedule accepts with enough microbatches.
        CHECK_NOTHROW(e.check(
            config{.ranks = 4, .stages_per_rank = e.default_stages_per_rank, .microbatches = 8},
            {}));
    }
    CHECK(ppsched::builtin_schedules().at("dualpipe_v").placement == ppsched::stage_placement::v);
    CHECK(ppsched::builtin_schedules().at("DualPipeV").constraints ==
          std::string(ppsched::dualpipe_v::constraints()));
}

TEST_CASE("generating through the registry equals generating the policy type", "[registry]") {
    const config cfg{.ranks = 4, .stages_per_rank = 2, .microbatches = 8};
    CHECK(ppsched::builtin_schedules().generate("Interleaved1F1B", cfg) ==
          ppsched::generate<ppsched::interleaved_1f1b>(cfg));
    // The placement comes from the schedule, not from the caller.
    const auto v = ppsched::builtin_schedules().generate("zbvzerobubble", cfg);
    CHECK(v.cfg().placement == ppsched::stage_placement::v);
}

TEST_CASE("the registry rejects unknown names, parameters and unsupported configurations",
          "[registry][errors]") {
    const auto& reg = ppsched::builtin_schedules();
    CHECK_THROWS_WITH(reg.generate("Interleaved2F2B", config{}),
                      Catch::Matchers::StartsWith("ppsched::schedule_registry: unknown schedule "
                                                  "'Interleaved2F2B'; "
                                                  "the valid options are 1F1B (one_f_one_b), "));
    CHECK_THROWS_WITH(reg.generate("1F1B", config{.ranks = 4, .microbatches = 2}),
                      "one_f_one_b: microbatches (2) must be >= ranks (4)");
    CHECK_THROWS_WITH(reg.generate("gpipe", config{}, {.microbatch_group_size = 4}),
                      "gpipe: unknown parameter 'microbatch_group_size' (it takes none)");
    CHECK_THROWS_AS(reg.check("gpipe", config{.ranks = 0}), ppsched::config_error);
}

namespace {
// A user-written policy: every rank forwards then backwards its stage, one microbatch at a time.
struct naive {
    static constexpr std::string_view name = "naive";
    static constexpr std::string_view pytorch_name = "Naive";
    static constexpr ppsched::stage_placement placement = ppsched::stage_placement::loop;
    constexpr void check(const config& cfg) const {
        PPSCHED_EXPECTS(cfg.stages_per_rank == 1, "naive: stages_per_rank must be 1");
    }
    static constexpr std::string_view constraints() { return "stages_per_rank == 1"; }
    constexpr ppsched::order generate(const config& cfg) const {
        ppsched::order o(cfg);
        for (int r = 0; r < cfg.ranks; ++r)
            for (int mb = 0; mb < cfg.microbatches; ++mb) {
                o.push(r, ppsched::action::forward(r, mb));
                o.push(r, ppsched::action::full_backward(r, mb));
            }
        return o;
    }
};
} // namespace

TEST_CASE("a program can register its own schedules, with parameters", "[registry]") {
    ppsched::schedule_registry reg;
    reg.add<naive>({1, "a user's schedule"});
    CHECK(reg.find("NAIVE") != nullptr);
    CHECK_THROWS_AS(reg.add<naive>(), ppsched::config_error); // names are unique

    // A parameterised entry: the group size picks how many microbatches run back to back.
    ppsched::schedule_entry e;
    e.name = "grouped";
    e.pytorch_name = "Grouped";
    e.constraints = "stages_per_rank == 1; group >= 1";
    e.parameters = {{"group", "microbatches run back to back"}};
    auto group_of = [](const ppsched::schedule_params& params) {
        int g = 1;
        for (const auto& p : params.named)
            if (p.name == "group") g = std::stoi(p.value);
        return g;
    };
    e.check = [group_of](const config& cfg, const ppsched::schedule_params& params) {
        PPSCHED_EXPECTS(group_of(params) >= 1, "grouped: group must be >= 1 (got ",
                        group_of(params), ")");
        naive{}.check(cfg);
    };
    e.generate = [e_check = e.check](const config& cfg, const ppsched::schedule_params& params) {
        e_check(cfg, params);
        return ppsched::generate<naive>(cfg);
    };
    reg.add(std::move(e));
    CHECK(
        reg.generate("grouped", config{.ranks = 2, .microbatches = 2}, {.named = {{"group", "2"}}})
            .action_count() == 8);
    CHECK_THROWS_WITH(reg.generate("grouped", config{}, {.named = {{"group", "0"}}}),
                      "grouped: group must be >= 1 (got 0)");
    CHECK_THROWS_WITH(reg.generate("grouped", config{}, {.named = {{"size", "2"}}}),
                      "grouped: unknown parameter 'size' (it takes group)");
}

TEST_CASE("typed parameters reach the schedules that take them and nothing else",
          "[registry][parameters]") {
    const auto& reg = ppsched::builtin_schedules();
    const config cfg{.ranks = 2, .stages_per_rank = 2, .microbatches = 8};
    // MegatronInterleaved takes microbatch_group_size; unset means ranks.
    CHECK(reg.generate("MegatronInterleaved", cfg, {.microbatch_group_size = 4}) ==
          ppsched::generate<ppsched::megatron_interleaved{.microbatch_group_size = 4}>(cfg));
    CHECK(reg.generate("megatroninterleaved", cfg) ==
          ppsched::generate<ppsched::megatron_interleaved>(cfg));
    CHECK_THROWS_WITH(reg.generate("megatron_interleaved", cfg, {.microbatch_group_size = 7}),
                      Catch::Matchers::StartsWith("megatron_interleaved: microbatches % "
                                                  "microbatch_group_size must be 0 or >= ranks"));
    CHECK_THROWS_WITH(reg.check("megatron_interleaved", cfg, {.microbatch_group_size = 1}),
                      Catch::Matchers::Contains("must be in [ranks, microbatches] = [2, 8]"));
    // Cost-aware parameters are rejected by schedules that do not plan with costs.
    CHECK_THROWS_WITH(
        reg.generate("MegatronInterleaved", cfg, {.costs = ppsched::cost_model::uniform_fb(1, 2)}),
        "megatron_interleaved: unknown parameter 'costs' (it takes "
        "microbatch_group_size)");
    CHECK_THROWS_WITH(
        reg.generate("1F1B", config{.ranks = 2, .microbatches = 4}, {.memory_limit = 2.0}),
        "one_f_one_b: unknown parameter 'memory_limit' (it takes none)");
    REQUIRE(reg.at("MegatronInterleaved").parameters.size() == 1);
    CHECK(reg.at("MegatronInterleaved").parameters[0].name == "microbatch_group_size");
    // Aliases are names too, and stay unique.
    CHECK(reg.find("1F1BOverlap") == reg.find("1f1b_overlap"));
    CHECK(reg.find("interleavedoverlap") == reg.find("1f1b_interleave_overlap"));
    ppsched::schedule_registry own;
    own.add<ppsched::gpipe>({1, "", {"AllForward"}});
    CHECK(own.find("allforward") != nullptr);
    CHECK_THROWS_AS(own.add<ppsched::one_f_one_b>({1, "", {"ALLFORWARD"}}), ppsched::config_error);
}
