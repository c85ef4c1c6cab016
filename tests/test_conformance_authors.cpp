// The schedules that also exist in their authors' own code, compared with the orders recorded
// from it (../shared/conformance/{dualpipe,zb,megatron}; rows compared after dropping idle
// cells, as the README says):
// - DualPipeV: DeepSeek's DualPipeV.step();
// - ZB-V-Hand: sail-sg's handcrafted ZB-V, which PyTorch's ZBVZeroBubble follows;
// - Megatron interleaved 1F1B with the default group size (= ranks): PyTorch's Interleaved1F1B
//   wherever both accept the configuration.

#include <ppsched/io/csv.hpp>
#include <ppsched/registry.hpp>

#include <catch2/catch.hpp>

#include <string>

#include "support/torch_cases.hpp"

namespace {

const std::string root = PPSCHED_CONFORMANCE_DIR;

// Compares `schedule`'s order with the CSV of case `c` (idle cells dropped on both sides).
bool same_compact_order(const std::string& dir, const ppsched_test::torch_case& c,
                        const std::string& schedule) {
    const ppsched::config cfg{
        .ranks = c.ranks, .stages_per_rank = c.stages_per_rank, .microbatches = c.microbatches};
    const std::string path = dir + "/" + c.compute;
    auto expected = ppsched::io::read_csv(ppsched::io::read_file(path), path);
    auto got = ppsched::builtin_schedules().generate(schedule, cfg);
    expected.drop_idle();
    got.drop_idle();
    return ppsched::io::write_csv(got) == ppsched::io::write_csv(expected);
}

// The integer value of `"name": N` in a raw JSON object, or -1.
int json_int(const std::string& object, const std::string& name) {
    const auto at = object.find("\"" + name + "\"");
    if (at == std::string::npos) return -1;
    const auto colon = object.find(':', at);
    return std::stoi(object.substr(colon + 1));
}

} // namespace

TEST_CASE("dualpipe_v equals DeepSeek's own DualPipeV", "[conformance][dualpipe_v]") {
    const std::string dir = root + "/dualpipe";
    int compared = 0, rejected = 0;
    for (const auto& c : ppsched_test::read_torch_cases(dir + "/cases.json")) {
        if (c.schedule != "DualPipeV") continue;
        INFO("ranks=" << c.ranks << " microbatches=" << c.microbatches << " " << c.message);
        if (c.status == "ok") {
            CHECK(same_compact_order(dir, c, "dualpipe_v"));
            ++compared;
        } else {
            CHECK_THROWS_AS(ppsched::builtin_schedules().generate(
                                "dualpipe_v", {.ranks = c.ranks,
                                               .stages_per_rank = c.stages_per_rank,
                                               .microbatches = c.microbatches}),
                            ppsched::config_error);
            ++rejected;
        }
    }
    CHECK(compared == 12);
    CHECK(rejected == 1);
}

TEST_CASE("zbv_zero_bubble equals the zero-bubble authors' handcrafted ZB-V",
          "[conformance][zbv_zero_bubble]") {
    const std::string dir = root + "/zb";
    int compared = 0;
    for (const auto& c : ppsched_test::read_torch_cases(dir + "/cases.json")) {
        if (c.schedule != "ZB-V-Hand" || c.status != "ok") continue;
        INFO("ranks=" << c.ranks << " microbatches=" << c.microbatches << " " << c.compute);
        CHECK(same_compact_order(dir, c, "zbv_zero_bubble"));
        ++compared;
    }
    CHECK(compared == 18);
}

TEST_CASE("interleaved_1f1b equals Megatron-LM's interleaved schedule with its default group "
          "size",
          "[conformance][interleaved_1f1b]") {
    const std::string dir = root + "/megatron";
    int compared = 0;
    for (const auto& c : ppsched_test::read_torch_cases(dir + "/cases.json")) {
        if (c.status != "ok" || json_int(c.params, "microbatch_group_size") != c.ranks) continue;
        const ppsched::config cfg{
            .ranks = c.ranks, .stages_per_rank = c.stages_per_rank, .microbatches = c.microbatches};
        try {
            ppsched::interleaved_1f1b{}.check(cfg);
        } catch (const ppsched::config_error&) {
            continue; // PyTorch's rounds rule rejects it; Megatron's group rule does not
        }
        INFO("ranks=" << c.ranks << " stages_per_rank=" << c.stages_per_rank
                      << " microbatches=" << c.microbatches);
        CHECK(same_compact_order(dir, c, "interleaved_1f1b"));
        ++compared;
    }
    CHECK(compared == 27);
}
