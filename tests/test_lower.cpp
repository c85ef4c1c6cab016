#include <ppsched/algorithms/lower.hpp>
#include <ppsched/algorithms/validate.hpp>
#include <ppsched/io/csv.hpp>
#include <ppsched/algorithms/simulate_steps.hpp>
#include <ppsched/io/step_table.hpp>
#include <ppsched/registry.hpp>
#include <ppsched/schedules/dualpipe_v.hpp>
#include <ppsched/schedules/interleaved_1f1b.hpp>

#include <catch2/catch.hpp>

#include "support/order_literal.hpp"

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using ppsched::config;
using ppsched::stage_placement;
using ppsched_test::csv_rows;
using ppsched_test::order_of;

namespace {

const fs::path torch_dir = fs::path(PPSCHED_CONFORMANCE_DIR) / "torch";

/// The configuration a conformance file name states: `<Schedule>_pp<P>_mb<M>_v<V>.csv`; the V
/// placement for the schedules PyTorch runs on it (ZBVZeroBubble, DualPipeV).
config config_of(const std::string& stem) {
    const auto field = [&](const std::string& tag) {
        const std::size_t at = stem.find(tag);
        REQUIRE(at != std::string::npos);
        return std::stoi(stem.substr(at + tag.size()));
    };
    const bool v = stem.rfind("ZBVZeroBubble_", 0) == 0 || stem.rfind("DualPipeV_", 0) == 0;
    return config{.ranks = field("_pp"),
                  .stages_per_rank = field("_v"),
                  .microbatches = field("_mb"),
                  .placement = v ? stage_placement::v : stage_placement::loop};
}

std::size_t count_of(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
        ++n;
    return n;
}

} // namespace

TEST_CASE("lower reproduces every PyTorch comms order from its compute order",
          "[lower][conformance]") {
    std::size_t files = 0, rows = 0;
    for (const auto& entry : fs::directory_iterator(torch_dir / "comms")) {
        const std::string name = entry.path().filename().string();
        const std::string stem = name.substr(0, name.size() - 4);
        INFO(name);
        const config cfg = config_of(stem);
        const auto compute = ppsched::io::read_csv(
            ppsched::io::read_file((torch_dir / "compute" / name).string()), cfg, name);
        const auto expected =
            ppsched::io::read_csv_rows(ppsched::io::read_file(entry.path().string()), name);
        const auto lowered = ppsched::lower(compute);
        const auto got = csv_rows(lowered);
        const auto want = csv_rows(expected);
        REQUIRE(got.size() == want.size());
        for (std::size_t r = 0; r < got.size(); ++r) {
            INFO("rank " << r);
            CHECK(got[r] == want[r]);
        }
        // What the runtime executes must be valid as a lowered order.
        const auto report = ppsched::validate(lowered);
        if (!report) FAIL_CHECK(ppsched::to_string(report));
        ++files;
        rows += got.size();
    }
    // One comms file per accepted case of cases.json.
    const std::string cases = ppsched::io::read_file((torch_dir / "cases.json").string());
    CHECK(files == count_of(cases, "\"comms\""));
    CHECK(files >= 305);
    CHECK(rows > 1000);
}

TEST_CASE("lower prints PyTorch's step table of the lowered misc orders", "[lower][conformance]") {
    const std::string suffix = ".format_comms.txt";
    int files = 0;
    for (const auto& entry : fs::directory_iterator(torch_dir / "misc")) {
        const std::string name = entry.path().filename().string();
        if (name.size() <= suffix.size() || name.substr(name.size() - suffix.size()) != suffix)
            continue;
        const std::string stem = name.substr(0, name.size() - suffix.size());
        INFO(stem);
        const config cfg = config_of(stem);
        const auto compute = ppsched::io::read_csv(
            ppsched::io::read_file((torch_dir / "compute" / (stem + ".csv")).string()), cfg);
        CHECK(ppsched::io::format_step_table(ppsched::lower(compute)) ==
              ppsched::io::read_file(entry.path().string()));
        ++files;
    }
    CHECK(files == 5);
}

TEST_CASE("lower runs unshard/reshard, reduce_grad, then send/recv", "[lower]") {
    const config cfg{.ranks = 2, .stages_per_rank = 1, .microbatches = 1};
    const auto in = order_of(cfg, {"0F0,,0B0", ",1F0,1B0"});
    // Per rank: UNSHARD, compute, REDUCE_GRAD after the last backward, RESHARD. Then the
    // rounds: UNSHARDs; 0F0 sends and 1F0 runs; 0B0 waits while 1B0 sends back; 0B0 runs.
    CHECK(csv_rows(ppsched::lower(in)) ==
          std::vector<std::string>{"0UNSHARD,0F0,0SEND_F0,0RECV_B0,0B0,0REDUCE_GRAD,0RESHARD",
                                   "1UNSHARD,1RECV_F0,1F0,1B0,1SEND_B0,1REDUCE_GRAD,1RESHARD"});
    SECTION("without the FSDP and gradient-reduction passes, idle slots still go") {
        const auto lowered = ppsched::lower(in, {.unshard_reshard = false, .reduce_grad = false});
        CHECK(csv_rows(lowered) ==
              std::vector<std::string>{"0F0,0SEND_F0,0RECV_B0,0B0", "1RECV_F0,1F0,1B0,1SEND_B0"});
    }
}

TEST_CASE("lower can merge split backwards first", "[lower]") {
    const config cfg{.ranks = 2, .stages_per_rank = 1, .microbatches = 1};
    const auto in = order_of(cfg, {"0F0,0I0,0W0", "1F0,1I0,1W0"});
    const auto merged =
        ppsched::lower(in, {.unshard_reshard = false, .reduce_grad = false, .merge_bw = true});
    CHECK(csv_rows(merged) ==
          std::vector<std::string>{"0F0,0SEND_F0,0RECV_B0,0B0", "1RECV_F0,1F0,1B0,1SEND_B0"});
    const auto split = ppsched::lower(in, {.unshard_reshard = false, .reduce_grad = false});
    CHECK(csv_rows(split) == std::vector<std::string>{"0F0,0SEND_F0,0RECV_B0,0I0,0W0",
                                                      "1RECV_F0,1F0,1I0,1SEND_B0,1W0"});
}

TEST_CASE("lower accepts only compute-only orders", "[lower][errors]") {
    const config cfg{.ranks = 1, .stages_per_rank = 1, .microbatches = 1};
    CHECK_THROWS_WITH(ppsched::lower(order_of(cfg, {"0UNSHARD,0F0,0B0"})),
                      Catch::Contains("expected a compute-only order"));
}

TEST_CASE("lower works in constant expressions", "[lower][constexpr]") {
    constexpr config cfg{.ranks = 2, .stages_per_rank = 1, .microbatches = 1};
    STATIC_REQUIRE(ppsched::lower(order_of(cfg, {"0F0,0B0", "1F0,1B0"})) ==
                   order_of(cfg, {"0UNSHARD,0F0,0SEND_F0,0RECV_B0,0B0,0REDUCE_GRAD,0RESHARD",
                                  "1UNSHARD,1RECV_F0,1F0,1B0,1SEND_B0,1REDUCE_GRAD,1RESHARD"}));
    // A lowered order is valid, at compile time too.
    STATIC_REQUIRE(ppsched::validate(ppsched::lower(order_of(cfg, {"0F0,0B0", "1F0,1B0"}))));
}

TEST_CASE("generated schedules lower and validate at compile time", "[lower][constexpr]") {
    constexpr config cfg{.ranks = 4, .stages_per_rank = 2, .microbatches = 8};
    STATIC_REQUIRE(
        ppsched::validate(ppsched::lower(ppsched::generate<ppsched::interleaved_1f1b>(cfg))));
    STATIC_REQUIRE(ppsched::validate(ppsched::lower(ppsched::generate<ppsched::dualpipe_v>(cfg))));
}

TEST_CASE("lower handles every schedule at configurations beyond PyTorch's grid",
          "[lower][general]") {
    // Sizes the conformance grid does not have (odd ranks, more stages per rank, microbatches
    // not a multiple of the ranks). No golden data: the lowered order must validate and run
    // through the unit-step simulation without a deadlock, and it must carry exactly one SEND
    // and one RECV per cross-rank dependency.
    std::size_t lowered_orders = 0;
    for (const auto& entry : ppsched::builtin_schedules().entries()) {
        for (int ranks : {1, 3, 5, 6}) {
            for (int spr : {1, 2, 3, 5}) {
                for (int mb : {1, 3, 5, 7, 12}) {
                    const config cfg{.ranks = ranks, .stages_per_rank = spr, .microbatches = mb};
                    ppsched::order o;
                    try {
                        o = ppsched::builtin_schedules().generate(entry.name, cfg);
                    } catch (const ppsched::config_error&) {
                        continue; // the schedule does not support this configuration
                    }
                    INFO(entry.name << " ranks " << ranks << " spr " << spr << " mb " << mb);
                    const auto lowered = ppsched::lower(o);
                    const auto report = ppsched::validate(lowered);
                    if (!report) FAIL_CHECK(ppsched::to_string(report));
                    CHECK(ppsched::simulate_steps(lowered).completed());
                    // Count the communication the order needs: each F whose next stage is on
                    // another rank, each I/B whose previous stage is.
                    const config& c = o.cfg();
                    std::size_t needed = 0, sends = 0, recvs = 0;
                    for (const auto& row : o)
                        for (const auto& s : row) {
                            if (!s) continue;
                            ppsched::detail::for_each_part(*s, [&](const ppsched::action& p) {
                                const int st = p.stage();
                                const bool fwd = p.kind() == ppsched::action_kind::forward;
                                const bool bwd = p.kind() == ppsched::action_kind::backward_input ||
                                                 p.kind() == ppsched::action_kind::full_backward;
                                const int peer = fwd   ? c.next_stage(st)
                                                 : bwd ? c.previous_stage(st)
                                                       : -1;
                                if (peer >= 0 && c.stage_to_rank(peer) != c.stage_to_rank(st))
                                    ++needed;
                            });
                        }
                    for (const auto& row : lowered)
                        for (const auto& s : row) {
                            if (ppsched::is_send(s->kind())) ++sends;
                            if (ppsched::is_recv(s->kind())) ++recvs;
                        }
                    CHECK(sends == needed);
                    CHECK(recvs == needed);
                    ++lowered_orders;
                }
            }
        }
    }
    CHECK(lowered_orders > 200);
}

TEST_CASE("lower handles the orders of the schedules' own authors", "[lower][general]") {
    // megatron/, zb/, overlap/, dualpipe/ compute orders (configuration inferred from the
    // file: DualPipe's as two opposite pipelines). No golden lowering exists for them: the
    // result must validate and simulate.
    std::size_t lowered_orders = 0, dual = 0;
    for (const auto& entry : fs::recursive_directory_iterator(PPSCHED_CONFORMANCE_DIR)) {
        const std::string path = entry.path().string();
        if (entry.path().extension() != ".csv" || path.find("/compute/") == std::string::npos ||
            path.find("/torch/") != std::string::npos)
            continue;
        INFO(path);
        const auto o = ppsched::io::read_csv_file(path);
        if (o.cfg().placement == stage_placement::dual) ++dual;
        REQUIRE(ppsched::validate(o));
        const auto lowered = ppsched::lower(o);
        const auto report = ppsched::validate(lowered);
        if (!report) FAIL_CHECK(ppsched::to_string(report));
        CHECK(ppsched::simulate_steps(lowered).completed());
        ++lowered_orders;
    }
    CHECK(lowered_orders >= 236);
    CHECK(dual == 6);
}
