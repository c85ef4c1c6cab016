// add_spacing(): PyTorch's visualizer spacing (misc/*.visualizer_add_spacing.format.txt), and the
// property it promises: in lock-step, no action starts before its dependencies have finished.

#include <ppsched/algorithms/add_spacing.hpp>
#include <ppsched/algorithms/validate.hpp>
#include <ppsched/io/csv.hpp>
#include <ppsched/io/step_table.hpp>

#include <catch2/catch.hpp>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "support/torch_cases.hpp"
#include "support/torch_orders.hpp"

using ppsched::action;
using ppsched::config;
using ppsched::order;

using ppsched_test::case_config;
using ppsched_test::load;
using ppsched_test::torch_dir;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
}

constexpr config two_ranks{.ranks = 2, .stages_per_rank = 1, .microbatches = 2};

constexpr order one_f_one_b_2x2() {
    order o(two_ranks);
    for (auto a : {action::forward(0, 0), action::forward(0, 1), action::full_backward(0, 0),
                   action::full_backward(0, 1)})
        o.push(0, a);
    for (auto a : {action::forward(1, 0), action::full_backward(1, 0), action::forward(1, 1),
                   action::full_backward(1, 1)})
        o.push(1, a);
    return o;
}

/// The slot index of `a` on `rank`, or -1.
constexpr int slot_of(const order& o, int rank, const action& a) {
    const auto& row = o.rank(rank);
    for (std::size_t i = 0; i < row.size(); ++i)
        if (row[i] && *row[i] == a) return static_cast<int>(i);
    return -1;
}

/// Independent check of the promise on a time-faithful (pad_wide) spacing: every sub-action
/// starts no earlier than its dependency's finish time (dependency slot + its duration).
bool dependencies_respected(const order& spaced, const ppsched::spacing_options& opts) {
    const config& cfg = spaced.cfg();
    std::map<std::tuple<int, int, int>, long long> finish; // (kind, stage, mb) -> time
    std::vector<std::tuple<action, long long>> starts;
    for (int r = 0; r < cfg.ranks; ++r) {
        const auto& row = spaced.rank(r);
        for (std::size_t t = 0; t < row.size(); ++t) {
            if (!row[t]) continue;
            std::array<action, 2> parts;
            const int n = row[t]->parts(parts);
            long long end = static_cast<long long>(t);
            for (int k = 0; k < n; ++k) {
                const action& p = parts[static_cast<std::size_t>(k)];
                end += ppsched::detail::spacing_width(opts, p.kind());
                finish[{static_cast<int>(p.kind()), p.stage(), p.microbatch()}] = end;
                starts.emplace_back(p, static_cast<long long>(t));
            }
        }
    }
    const auto done = [&](ppsched::action_kind k, int s, int mb) -> long long {
        auto it = finish.find({static_cast<int>(k), s, mb});
        return it == finish.end() ? -1 : it->second;
    };
    for (const auto& [p, t] : starts) {
        long long need = 0;
        const int s = p.stage(), mb = p.microbatch();
        if (p.kind() == ppsched::action_kind::forward && s > 0)
            need = done(ppsched::action_kind::forward, s - 1, mb);
        else if (p.kind() == ppsched::action_kind::backward_weight)
            need = done(ppsched::action_kind::backward_input, s, mb);
        else if (p.kind() != ppsched::action_kind::forward) {
            if (s + 1 == cfg.num_stages())
                need = done(ppsched::action_kind::forward, s, mb);
            else
                need = std::max(done(ppsched::action_kind::full_backward, s + 1, mb),
                                done(ppsched::action_kind::backward_input, s + 1, mb));
        }
        if (need < 0 || need > t) return false;
    }
    return true;
}

} // namespace

TEST_CASE("spacing a small order at compile time puts each action after its dependencies",
          "[add_spacing][static]") {
    // Rank 1 cannot start before 0F0 has finished; 1B0 is two units wide.
    constexpr auto spaced = [] { return ppsched::add_spacing(one_f_one_b_2x2()); };
    STATIC_REQUIRE(slot_of(spaced(), 0, action::forward(0, 0)) == 0);
    STATIC_REQUIRE(slot_of(spaced(), 1, action::forward(1, 0)) == 1);
    STATIC_REQUIRE(slot_of(spaced(), 1, action::full_backward(1, 0)) == 2);
    // 0B0 needs 1B0, which finishes at time 4: rank 0 idles at times 2 and 3.
    STATIC_REQUIRE(slot_of(spaced(), 0, action::full_backward(0, 0)) == 4);
    STATIC_REQUIRE(spaced().rank(0)[2].is_idle());
    // Dropping the idle slots gives the input back.
    STATIC_REQUIRE([] {
        order o = ppsched::add_spacing(one_f_one_b_2x2());
        o.drop_idle();
        return o == one_f_one_b_2x2();
    }());
    // The time-faithful layout: slot index == time.
    STATIC_REQUIRE(slot_of(ppsched::add_spacing(one_f_one_b_2x2(), {.pad_wide = true}), 0,
                           action::full_backward(0, 0)) == 4);
    STATIC_REQUIRE(slot_of(ppsched::add_spacing(one_f_one_b_2x2(), {.pad_wide = true}), 1,
                           action::forward(1, 1)) == 4);
}

TEST_CASE("add_spacing reproduces PyTorch's visualizer spacing", "[add_spacing][conformance]") {
    const auto cases = ppsched_test::read_torch_cases(torch_dir + "/cases.json");
    int compared = 0;
    for (const char* schedule :
         {"Interleaved1F1B", "InterleavedZeroBubble", "LoopedBFS", "DualPipeV"}) {
        for (const auto& c : cases) {
            if (c.schedule != schedule || c.ranks != 4 || c.microbatches != 8 ||
                c.stages_per_rank != 2)
                continue;
            INFO(schedule);
            const std::string expected = ppsched::io::read_file(
                torch_dir + "/misc/" + schedule + "_pp4_mb8_v2.visualizer_add_spacing.format.txt");
            const order spaced = ppsched::add_spacing(load(c.compute, case_config(c)));
            CHECK(ppsched::io::format_step_table(spaced) == expected);
            ++compared;
        }
    }
    CHECK(compared == 4);
}

TEST_CASE("add_spacing matches PyTorch's ZBVZeroBubble spacing until PyTorch shifts rows",
          "[add_spacing][conformance]") {
    // PyTorch's visualizer drops finished ranks from its list but keeps indexing by list
    // position, so once rank 0 finishes, later ranks' actions land one row to the left. ppsched
    // keeps every rank in its row; the tables agree up to the step where rank 0 finishes.
    const config cfg{.ranks = 4,
                     .stages_per_rank = 2,
                     .microbatches = 8,
                     .placement = ppsched::stage_placement::v};
    const order spaced = ppsched::add_spacing(load("compute/ZBVZeroBubble_pp4_mb8_v2.csv", cfg));
    const auto got = lines_of(ppsched::io::format_step_table(spaced));
    const auto expected = lines_of(ppsched::io::read_file(
        torch_dir + "/misc/ZBVZeroBubble_pp4_mb8_v2.visualizer_add_spacing.format.txt"));
    const std::size_t rank0_last =
        static_cast<std::size_t>(slot_of(spaced, 0, action::backward_weight(0, 7)));
    REQUIRE(rank0_last + 2 < expected.size());
    for (std::size_t i = 0; i <= rank0_last + 1; ++i) { // header + steps 0..rank0_last
        INFO("line " << i);
        CHECK(got[i] == expected[i]);
    }
    CHECK(got[rank0_last + 2] != expected[rank0_last + 2]); // where PyTorch's shift starts
    CHECK(dependencies_respected(ppsched::add_spacing(spaced, {.pad_wide = true}),
                                 {.pad_wide = true}));
}

TEST_CASE("every PyTorch compute order, spaced, respects its dependencies",
          "[add_spacing][conformance]") {
    const ppsched::spacing_options opts{.pad_wide = true};
    int n = 0;
    for (const auto& c : ppsched_test::read_torch_cases(torch_dir + "/cases.json")) {
        if (c.status != "ok") continue;
        INFO(c.compute);
        const order input = load(c.compute, case_config(c));
        const order spaced = ppsched::add_spacing(input, opts);
        CHECK(dependencies_respected(spaced, opts));
        // Spacing only inserts idle slots.
        order compact = spaced, original = input;
        compact.drop_idle();
        original.drop_idle();
        CHECK(compact == original);
        ++n;
    }
    CHECK(n == 305);
}

TEST_CASE("add_spacing rejects a deadlocked order and lowered orders", "[add_spacing]") {
    order o(two_ranks);
    for (auto a : {action::forward(0, 0), action::full_backward(0, 0), action::forward(0, 1),
                   action::full_backward(0, 1)})
        o.push(0, a);
    for (auto a : {action::forward(1, 0), action::forward(1, 1), action::full_backward(1, 0),
                   action::full_backward(1, 1)})
        o.push(1, a);
    CHECK_THROWS_AS(ppsched::add_spacing(o), ppsched::config_error);
    CHECK_THROWS_WITH(ppsched::add_spacing(o), Catch::Contains("deadlock"));
    order lowered(two_ranks);
    lowered.push(0, action::forward(0, 0));
    lowered.push(0, action::send_f(0, 0));
    lowered.push(1, action::recv_f(1, 0));
    CHECK_THROWS_WITH(ppsched::add_spacing(lowered), Catch::Contains("simulate_steps"));
}
