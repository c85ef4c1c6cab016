#include <ppsched/cost_model.hpp>

#include <catch2/catch.hpp>

#include <limits>
#include <vector>

using ppsched::action;
using ppsched::cost_model;
using ppsched::resolved_stage_costs;

namespace {
constexpr resolved_stage_costs stage0(const cost_model& c) { return c.at(0); }

constexpr double overlap_cost(const cost_model& c, action bwd) {
    std::vector<resolved_stage_costs> costs{c.at(0), c.at(1)};
    return ppsched::duration(action::overlap(action::forward(0, 0), bwd), costs);
}

// A model with per-stage overrides built and read in one constant expression.
constexpr double per_stage_forward(int stage) {
    cost_model c = cost_model::uniform_fb(1, 2);
    c.per_stage.resize(3);
    c.per_stage[2].forward = 5;
    return c.at(stage).forward;
}
} // namespace

TEST_CASE("a default cost model costs F = I = W = 1, B = 2, one activation unit, nothing else",
          "[cost_model][constexpr]") {
    constexpr cost_model c{};
    STATIC_REQUIRE(stage0(c).forward == 1);
    STATIC_REQUIRE(stage0(c).backward_input == 1);
    STATIC_REQUIRE(stage0(c).backward_weight == 1);
    STATIC_REQUIRE(stage0(c).full_backward == 2);
    STATIC_REQUIRE(stage0(c).unshard == 0);
    STATIC_REQUIRE(stage0(c).reduce_grad == 0);
    STATIC_REQUIRE(stage0(c).activation == 1);
    STATIC_REQUIRE(stage0(c).parameters == 0);
    STATIC_REQUIRE(c.message_time() == 0);
}

TEST_CASE("B defaults to I + W, and I or W to what B leaves", "[cost_model]") {
    STATIC_REQUIRE(stage0(cost_model::uniform_fiw(1, 1.25, 0.75)).full_backward == 2);
    STATIC_REQUIRE(stage0(cost_model::uniform_fb(1, 3)).backward_input == 1.5);
    STATIC_REQUIRE(stage0(cost_model::uniform_fb(1, 3)).backward_weight == 1.5);
    constexpr auto b_and_w = [] {
        cost_model c;
        c.uniform.full_backward = 3;
        c.uniform.backward_weight = 1;
        return c;
    }();
    STATIC_REQUIRE(stage0(b_and_w).backward_input == 2);
    // I and W default to F when B is not given.
    constexpr auto only_f = [] {
        cost_model c;
        c.uniform.forward = 2;
        return c;
    }();
    STATIC_REQUIRE(stage0(only_f).full_backward == 4);
    // B may be given below I + W (a fused backward can be cheaper).
    constexpr auto fused = [] {
        cost_model c = cost_model::uniform_fiw(1, 1, 1);
        c.uniform.full_backward = 1.5;
        return c;
    }();
    STATIC_REQUIRE(stage0(fused).full_backward == 1.5);
}

TEST_CASE("an overlapped F+B costs the sum of its parts unless given", "[cost_model]") {
    constexpr cost_model c = cost_model::uniform_fiw(1, 2, 3);
    STATIC_REQUIRE(overlap_cost(c, action::full_backward(1, 0)) == 1 + 5);
    STATIC_REQUIRE(overlap_cost(c, action::backward_input(1, 0)) == 1 + 2);
    constexpr auto given = [] {
        cost_model m = cost_model::uniform_fiw(1, 2, 3);
        m.uniform.overlap_f_b = 4;
        return m;
    }();
    STATIC_REQUIRE(overlap_cost(given, action::full_backward(1, 0)) == 4);
}

TEST_CASE("per-stage values override the uniform ones field by field", "[cost_model]") {
    STATIC_REQUIRE(per_stage_forward(0) == 1);
    STATIC_REQUIRE(per_stage_forward(2) == 5);
    STATIC_REQUIRE(per_stage_forward(7) == 1); // beyond the per-stage list: uniform
    cost_model c = cost_model::uniform_fb(1, 2);
    c.per_stage.resize(2);
    c.per_stage[1].backward_weight = 0.5;
    CHECK(c.at(1).backward_input == 1.5); // B (uniform) - W (stage 1)
    CHECK(c.at(1).forward == 1);
}

TEST_CASE("send, receive and reshard take no time on the rank", "[cost_model]") {
    const std::vector<resolved_stage_costs> costs{cost_model{}.at(0)};
    CHECK(ppsched::duration(action::send_f(0, 0), costs) == 0);
    CHECK(ppsched::duration(action::recv_b(0, 0), costs) == 0);
    CHECK(ppsched::duration(action::reshard(0), costs) == 0);
}

TEST_CASE("negative or inconsistent costs are configuration errors", "[cost_model][errors]") {
    cost_model c;
    c.uniform.forward = -1;
    CHECK_THROWS_WITH(c.at(0),
                      "ppsched::cost_model: F of stage 0 must be a finite non-negative number "
                      "(got -1)");
    cost_model d;
    d.uniform.full_backward = 1;
    d.uniform.backward_input = 2;
    CHECK_THROWS_WITH(d.at(0), "ppsched::cost_model: B must be >= the given I or W (stage 0)");
    cost_model e;
    e.input_grad_frees = 1.5;
    CHECK_THROWS_AS(e.check(), ppsched::config_error);
    cost_model f;
    f.p2p_latency = std::numeric_limits<double>::quiet_NaN();
    CHECK_THROWS_AS(f.check(), ppsched::config_error);
}

TEST_CASE("non-finite costs and totals that would overflow are refused by one rule",
          "[cost_model][errors]") {
    constexpr double inf = std::numeric_limits<double>::infinity();
    cost_model a;
    a.uniform.forward = inf;
    CHECK_THROWS_WITH(a.at(0),
                      "ppsched::cost_model: F of stage 0 must be a finite non-negative number "
                      "(got inf)");
    // A per-stage value names its stage and the value; a scalar field its value.
    cost_model w;
    w.per_stage.resize(16);
    w.per_stage[11].backward_weight = std::numeric_limits<double>::quiet_NaN();
    CHECK_NOTHROW(w.at(10));
    CHECK_THROWS_WITH(w.at(11),
                      "ppsched::cost_model: W of stage 11 must be a finite non-negative number "
                      "(got nan)");
    cost_model latency;
    latency.p2p_latency = -3;
    CHECK_THROWS_WITH(latency.check(),
                      "ppsched::cost_model: p2p_latency must be a finite non-negative number "
                      "(got -3)");
    cost_model n;
    n.uniform.full_backward = std::numeric_limits<double>::quiet_NaN();
    CHECK_THROWS_AS(n.at(0), ppsched::config_error);
    cost_model l;
    l.p2p_latency = inf;
    CHECK_THROWS_AS(l.check(), ppsched::config_error);
    // Each value finite, but a sum over the order is not.
    cost_model big = cost_model::uniform_fb(1e308, 1e308);
    CHECK_NOTHROW(big.at(0));
    CHECK_THROWS_AS(big.check_totals(16, 2), ppsched::config_error);
    cost_model fine = cost_model::uniform_fb(1e300, 2e300);
    CHECK_NOTHROW(fine.check_totals(1000, 4));
    cost_model memory;
    memory.uniform.activation = 1e308;
    CHECK_THROWS_AS(memory.check_totals(10, 1), ppsched::config_error);
}
