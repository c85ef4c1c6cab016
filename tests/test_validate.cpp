// validate(): every rule on small hand-written orders (at compile time), every PyTorch order of
// the conformance data, and orders mutated by swapping, dropping, duplicating and moving actions.

#include <ppsched/algorithms/lower.hpp>
#include <ppsched/algorithms/simulate_steps.hpp>
#include <ppsched/algorithms/validate.hpp>
#include <ppsched/io/csv.hpp>
#include <ppsched/registry.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <span>
#include <tuple>
#include <array>
#include <string>
#include <vector>

#include "support/hand_orders.hpp"
#include "support/torch_cases.hpp"
#include "support/torch_orders.hpp"

using ppsched::action;
using ppsched::config;
using ppsched::order;
using ppsched::rule;
using ppsched::validate;

using ppsched_test::case_config;
using ppsched_test::gpipe_2x2;
using ppsched_test::gpipe_2x2_lowered;
using ppsched_test::load;
using ppsched_test::torch_dir;
using ppsched_test::two_ranks;

namespace {

// ---- small orders, usable in constant expressions --------------------------------------------

/// A V placement with 2 ranks: rank 1 holds stages 1 and 2 (adjacent: no communication).
constexpr order v_2x1_split_backward() {
    order o(config{.ranks = 2,
                   .stages_per_rank = 2,
                   .microbatches = 1,
                   .placement = ppsched::stage_placement::v});
    o.push(0, action::forward(0, 0));
    o.push(1, action::forward(1, 0));
    o.push(1, action::forward(2, 0));
    o.push(0, action::forward(3, 0));
    o.push(0, action::full_backward(3, 0));
    o.push(1, action::backward_input(2, 0));
    o.push(1, action::backward_input(1, 0));
    o.push(1, action::backward_weight(2, 0));
    o.push(1, action::backward_weight(1, 0));
    o.push(0, action::full_backward(0, 0));
    return o;
}

template <class F>
constexpr order edited(order o, F f) {
    f(o);
    return o;
}

constexpr bool only(const ppsched::validation_report& r, rule what) {
    return !r.valid() && r.count(what) == r.size();
}

/// The first violations of a report, copied so that a constant can hold them (a report owns a
/// std::vector, which cannot outlive a constant evaluation).
struct summary {
    std::array<ppsched::violation, 4> v{};
    std::size_t size = 0;
    bool only_rule = true;
    constexpr const ppsched::violation& operator[](std::size_t i) const { return v[i]; }
};

constexpr summary summarize(const ppsched::validation_report& r) {
    summary s;
    s.size = r.size();
    for (std::size_t i = 0; i < r.size() && i < s.v.size(); ++i) s.v[i] = r[i];
    for (const auto& x : r) s.only_rule = s.only_rule && x.what == r[0].what;
    return s;
}

/// Two pipelines (dual placement): stages 0-1 (ranks 0, 1) run microbatch 0; stages 2-3
/// (ranks 1, 0) run microbatch 1. Stage 2 starts a pipeline: it needs nothing from stage 1.
constexpr order two_pipelines() {
    order o(config{.ranks = 2,
                   .stages_per_rank = 2,
                   .microbatches = 2,
                   .placement = ppsched::stage_placement::dual});
    o.push(0, action::forward(0, 0));
    o.push(0, action::forward(3, 1));
    o.push(0, action::full_backward(3, 1));
    o.push(0, action::full_backward(0, 0));
    o.push(1, action::forward(2, 1));
    o.push(1, action::forward(1, 0));
    o.push(1, action::full_backward(1, 0));
    o.push(1, action::full_backward(2, 1));
    return o;
}

constexpr config v_2x2{
    .ranks = 2, .stages_per_rank = 2, .microbatches = 2, .placement = ppsched::stage_placement::v};

// ---- run-time helpers ------------------------------------------------------------------------

order load_case(const std::string& schedule, int ranks, int mb, int v, bool comms) {
    for (const auto& c : ppsched_test::read_torch_cases(torch_dir + "/cases.json"))
        if (c.schedule == schedule && c.ranks == ranks && c.microbatches == mb &&
            c.stages_per_rank == v && c.status == "ok")
            return load(comms ? c.comms : c.compute, case_config(c));
    throw std::runtime_error("no such case " + schedule);
}

/// Position of the first slot holding `a` on `rank` (-1 if none).
int find(const order& o, int rank, const action& a) {
    const auto& row = o.rank(rank);
    for (std::size_t i = 0; i < row.size(); ++i)
        if (row[i] && *row[i] == a) return static_cast<int>(i);
    return -1;
}

/// Rank and position of the first slot holding `a` anywhere.
std::pair<int, int> locate(const order& o, const action& a) {
    for (int r = 0; r < o.cfg().ranks; ++r)
        if (int i = find(o, r, a); i >= 0) return {r, i};
    return {-1, -1};
}

void erase_at(order& o, int rank, int step) {
    auto& row = o.rank(rank);
    row.erase(row.begin() + step);
}

/// Moves the slot at `from` so that it ends up at index `to` of the same row.
void move_slot(order& o, int rank, int from, int to) {
    auto& row = o.rank(rank);
    const ppsched::slot s = row[static_cast<std::size_t>(from)];
    row.erase(row.begin() + from);
    row.insert(row.begin() + to, s);
}

/// A deliberately naive reference for compute-only orders (quadratic): each (stage, mb) has
/// exactly one F and either one B or one I and one W; and round-robin execution, where an action
/// runs once what it needs has run, finishes every rank.
bool reference_valid(const order& o) {
    const config& cfg = o.cfg();
    using key = std::tuple<int, int, int>; // kind, stage, mb
    std::map<key, int> count;
    std::vector<std::vector<action>> rows;
    for (int r = 0; r < cfg.ranks; ++r) {
        rows.emplace_back();
        for (const auto& s : o.rank(r)) {
            if (!s) continue;
            if (s->stage() >= cfg.num_stages() || s->microbatch() >= cfg.microbatches ||
                cfg.stage_to_rank(s->stage()) != r)
                return false;
            ++count[{static_cast<int>(s->kind()), s->stage(), s->microbatch()}];
            rows.back().push_back(*s);
        }
    }
    const auto n = [&](ppsched::action_kind k, int s, int mb) {
        auto it = count.find({static_cast<int>(k), s, mb});
        return it == count.end() ? 0 : it->second;
    };
    using ppsched::action_kind;
    for (int s = 0; s < cfg.num_stages(); ++s)
        for (int mb = 0; mb < cfg.microbatches; ++mb) {
            if (n(action_kind::forward, s, mb) != 1) return false;
            const int b = n(action_kind::full_backward, s, mb),
                      i = n(action_kind::backward_input, s, mb),
                      w = n(action_kind::backward_weight, s, mb);
            if (!((b == 1 && i == 0 && w == 0) || (b == 0 && i == 1 && w == 1))) return false;
        }
    std::set<key> done;
    const auto has = [&](action_kind k, int s, int mb) {
        return done.count({static_cast<int>(k), s, mb}) > 0;
    };
    std::vector<std::size_t> head(rows.size(), 0);
    for (bool progress = true; progress;) {
        progress = false;
        for (std::size_t r = 0; r < rows.size(); ++r) {
            if (head[r] == rows[r].size()) continue;
            const action& a = rows[r][head[r]];
            const int s = a.stage(), mb = a.microbatch();
            bool ready = true;
            if (a.kind() == action_kind::forward)
                ready = s == 0 || has(action_kind::forward, s - 1, mb);
            else if (a.kind() == action_kind::backward_weight)
                ready = has(action_kind::backward_input, s, mb);
            else if (s + 1 == cfg.num_stages())
                ready = has(action_kind::forward, s, mb);
            else
                ready = has(action_kind::full_backward, s + 1, mb) ||
                        has(action_kind::backward_input, s + 1, mb);
            // A backward also needs its own forward to have run.
            if (ppsched::is_backward(a.kind()) && !has(action_kind::forward, s, mb)) ready = false;
            if (!ready) continue;
            done.insert({static_cast<int>(a.kind()), s, mb});
            ++head[r];
            progress = true;
        }
    }
    for (std::size_t r = 0; r < rows.size(); ++r)
        if (head[r] != rows[r].size()) return false;
    return true;
}

/// The naive reference for lowered orders: matching SEND/RECV counts, UNSHARD/RESHARD state,
/// and round-robin execution where a receive runs once its send has run, compute once its
/// inputs are on this rank, a send once its data is computed, REDUCE_GRAD once every B/W of
/// the stage has run.
bool reference_lowered_valid(const order& o) {
    using ppsched::action_kind;
    const config& cfg = o.cfg();
    const int S = cfg.num_stages(), M = cfg.microbatches;
    using key = std::tuple<int, int, int>;
    std::map<key, int> count;
    std::vector<std::vector<action>> rows;
    for (int r = 0; r < cfg.ranks; ++r) {
        rows.emplace_back();
        for (const auto& s : o.rank(r))
            if (s) {
                if (cfg.stage_to_rank(s->stage()) != r) return false;
                ++count[{static_cast<int>(s->kind()), s->stage(), s->microbatch()}];
                rows.back().push_back(*s);
            }
    }
    const auto n = [&](action_kind k, int s, int mb) {
        auto it = count.find({static_cast<int>(k), s, mb});
        return it == count.end() ? 0 : it->second;
    };
    for (int s = 0; s < S; ++s)
        for (int mb = 0; mb < M; ++mb) {
            const bool f_remote = s + 1 < S && cfg.stage_to_rank(s + 1) != cfg.stage_to_rank(s);
            const bool b_remote = s > 0 && cfg.stage_to_rank(s - 1) != cfg.stage_to_rank(s);
            if (n(action_kind::send_f, s, mb) != (f_remote ? 1 : 0)) return false;
            if (s + 1 < S && n(action_kind::recv_f, s + 1, mb) != (f_remote ? 1 : 0)) return false;
            if (n(action_kind::send_b, s, mb) != (b_remote ? 1 : 0)) return false;
            if (s > 0 && n(action_kind::recv_b, s - 1, mb) != (b_remote ? 1 : 0)) return false;
            if (n(action_kind::forward, s, mb) != 1) return false;
        }
    std::vector<int> sharded(static_cast<std::size_t>(S), 0),
        backward_left(static_cast<std::size_t>(S), M);
    for (int s = 0; s < S; ++s)
        sharded[static_cast<std::size_t>(s)] =
            n(action_kind::unshard, s, -1) + n(action_kind::reshard, s, -1) > 0;
    std::set<key> done;
    const auto has = [&](action_kind k, int s, int mb) {
        return done.count({static_cast<int>(k), s, mb}) > 0;
    };
    std::vector<std::size_t> head(rows.size(), 0);
    for (bool progress = true; progress;) {
        progress = false;
        for (std::size_t r = 0; r < rows.size(); ++r) {
            if (head[r] == rows[r].size()) continue;
            const action& a = rows[r][head[r]];
            const int s = a.stage(), mb = a.microbatch();
            auto& sh = sharded[static_cast<std::size_t>(s)];
            bool ready = true;
            switch (a.kind()) {
            case action_kind::forward:
                ready = s == 0 || has(action_kind::recv_f, s, mb) ||
                        (cfg.stage_to_rank(s - 1) == static_cast<int>(r) &&
                         has(action_kind::forward, s - 1, mb));
                break;
            case action_kind::full_backward:
            case action_kind::backward_input:
                ready = has(action_kind::forward, s, mb) &&
                        (s + 1 == S || has(action_kind::recv_b, s, mb) ||
                         (cfg.stage_to_rank(s + 1) == static_cast<int>(r) &&
                          (has(action_kind::full_backward, s + 1, mb) ||
                           has(action_kind::backward_input, s + 1, mb))));
                break;
            case action_kind::backward_weight:
                ready = has(action_kind::backward_input, s, mb);
                break;
            case action_kind::send_f:
                ready = has(action_kind::forward, s, mb);
                break;
            case action_kind::send_b:
                ready = has(action_kind::full_backward, s, mb) ||
                        has(action_kind::backward_input, s, mb);
                break;
            case action_kind::recv_f:
                ready = has(action_kind::send_f, s - 1, mb);
                break;
            case action_kind::recv_b:
                ready = has(action_kind::send_b, s + 1, mb);
                break;
            case action_kind::unshard:
                if (!sh) return false;
                sh = 0;
                break;
            case action_kind::reshard:
                if (sh) return false;
                sh = 1;
                break;
            case action_kind::reduce_grad:
                ready = backward_left[static_cast<std::size_t>(s)] == 0;
                break;
            default:
                return false;
            }
            if (!ready) continue;
            if (ppsched::is_compute(a.kind()) && sh) return false;
            if (a.kind() == action_kind::full_backward || a.kind() == action_kind::backward_weight)
                --backward_left[static_cast<std::size_t>(s)];
            done.insert({static_cast<int>(a.kind()), s, mb});
            ++head[r];
            progress = true;
        }
    }
    for (std::size_t r = 0; r < rows.size(); ++r)
        if (head[r] != rows[r].size()) return false;
    return true;
}

/// The verdict of validate's full passes alone (without the one-run check it tries first).
bool full_passes_valid(const order& o) {
    ppsched::detail::validator v(o.cfg(), /*quick=*/false);
    return static_cast<bool>(v.run(o));
}

/// The verdict of the one-run check alone.
bool one_run_valid(const order& o) {
    std::vector<std::span<const ppsched::slot>> rows;
    for (const auto& row : o) rows.emplace_back(row.data(), row.size());
    return ppsched::detail::validity_run(o.cfg(), rows).valid();
}

bool has_at(const ppsched::validation_report& r, rule what, int rank, int step) {
    return std::any_of(r.begin(), r.end(), [&](const ppsched::violation& v) {
        return v.what == what && v.rank == rank && v.step == step;
    });
}

} // namespace

// ---- compile-time rules ----------------------------------------------------------------------

TEST_CASE("a correct compute-only order validates at compile time", "[validate][static]") {
    STATIC_REQUIRE(validate(gpipe_2x2()));
    STATIC_REQUIRE(validate(v_2x1_split_backward()));
    STATIC_REQUIRE(validate(gpipe_2x2_lowered()));
    STATIC_REQUIRE(validate(gpipe_2x2_lowered()).size() == 0);
}

TEST_CASE("any range of per-rank action ranges validates against a config", "[validate]") {
    const std::vector<std::vector<action>> rows{
        {action::forward(0, 0), action::full_backward(0, 0)}};
    CHECK(validate(rows, config{}));
    CHECK(validate(rows, config{.microbatches = 2}).has(rule::missing_forward));
}

TEST_CASE("structural errors are reported with their rule", "[validate][static]") {
    // Wrong number of rows.
    STATIC_REQUIRE(validate(std::vector<std::vector<action>>{}, two_ranks).has(rule::rank_count));
    // Stage and microbatch out of range.
    STATIC_REQUIRE(validate(edited(gpipe_2x2(), [](order& o) {
                       o.push(1, action::forward(2, 0));
                   })).has(rule::stage_out_of_range));
    STATIC_REQUIRE(
        only(validate(edited(gpipe_2x2(), [](order& o) { o.push(1, action::forward(1, 2)); })),
             rule::microbatch_out_of_range));
    // A stage on the wrong rank.
    STATIC_REQUIRE(validate(edited(gpipe_2x2(), [](order& o) {
                       o.rank(0)[0] = action::forward(1, 0);
                       o.rank(1)[0] = action::forward(0, 0);
                   })).has(rule::wrong_rank));
    // A malformed configuration.
    STATIC_REQUIRE(
        validate(std::vector<std::vector<action>>{}, config{.ranks = 0}).has(rule::invalid_config));
}

TEST_CASE("per-(stage, microbatch) rules catch missing, doubled and misordered compute",
          "[validate][static]") {
    STATIC_REQUIRE(only(validate(edited(gpipe_2x2(), [](order& o) { o.rank(1)[1] = {}; })),
                        rule::missing_forward));
    STATIC_REQUIRE(only(validate(edited(gpipe_2x2(), [](order& o) { o.rank(0)[3] = {}; })),
                        rule::missing_backward));
    STATIC_REQUIRE(
        only(validate(edited(gpipe_2x2(), [](order& o) { o.push(0, action::forward(0, 1)); })),
             rule::duplicate_action));
    // I without W, W before I, I/W next to a B.
    STATIC_REQUIRE(
        only(validate(edited(v_2x1_split_backward(), [](order& o) { o.rank(1)[5] = {}; })),
             rule::missing_weight));
    STATIC_REQUIRE(validate(edited(v_2x1_split_backward(), [](order& o) {
                       std::swap(o.rank(1)[3], o.rank(1)[5]);
                   })).has(rule::weight_before_input));
    STATIC_REQUIRE(validate(edited(gpipe_2x2(), [](order& o) {
                       o.push(0, action::backward_weight(0, 0));
                   })).has(rule::mixed_backward));
    // Backward before its own forward (last stage: no other dependency is involved).
    STATIC_REQUIRE(validate(edited(gpipe_2x2(), [](order& o) {
                       std::swap(o.rank(1)[1], o.rank(1)[3]);
                   })).has(rule::backward_before_forward));
}

TEST_CASE("an action before its same-rank dependency breaks dependency_order",
          "[validate][static]") {
    // Rank 1 runs stage 2's forward before stage 1's.
    constexpr auto r = summarize(validate(
        edited(v_2x1_split_backward(), [](order& o) { std::swap(o.rank(1)[0], o.rank(1)[1]); })));
    STATIC_REQUIRE(r.size == 1);
    STATIC_REQUIRE(r[0].what == rule::dependency_order);
    STATIC_REQUIRE(r[0].rank == 1);
    STATIC_REQUIRE(r[0].step == 0);
    STATIC_REQUIRE(r[0].subject == action::forward(2, 0));
    STATIC_REQUIRE(r[0].other == action::forward(1, 0));
    STATIC_REQUIRE(r[0].other_step == 1);
}

TEST_CASE("OVERLAP_F_B is checked through its two sub-actions", "[validate][static]") {
    // Rank 0 holds stages 0 and 3 under V: overlap 3's forward with 0's backward of another
    // microbatch is fine, and each part counts once.
    constexpr auto build = [](bool bad) {
        order o(v_2x2);
        // rank 0: 0F0 0F1 3F0 3B0 (3F1;0B0)OVERLAP 3B1 0B1
        o.push(0, action::forward(0, 0));
        o.push(0, action::forward(0, 1));
        o.push(1, action::forward(1, 0));
        o.push(1, action::forward(2, 0));
        o.push(1, action::forward(1, 1));
        o.push(1, action::forward(2, 1));
        o.push(0, action::forward(3, 0));
        o.push(0, action::full_backward(3, 0));
        o.push(1, action::full_backward(2, 0));
        o.push(1, action::full_backward(1, 0));
        o.push(0, action::overlap(action::forward(3, 1),
                                  bad ? action::full_backward(0, 1) : action::full_backward(0, 0)));
        o.push(0, action::full_backward(3, 1));
        o.push(1, action::full_backward(2, 1));
        o.push(1, action::full_backward(1, 1));
        o.push(0, bad ? action::full_backward(0, 0) : action::full_backward(0, 1));
        return o;
    };
    STATIC_REQUIRE(validate(build(false)));
    // 0B1 inside the overlap needs 1B1, which rank 1 only runs after rank 0 finishes 3B1: a
    // deadlock between the two ranks.
    STATIC_REQUIRE(validate(build(true)).has(rule::deadlock));
}

TEST_CASE("lowered-order rules catch missing, unmatched and needless communication",
          "[validate][static]") {
    // Receive removed: the send is unmatched and the forward lacks its receive.
    constexpr auto no_recv = summarize(validate(
        edited(gpipe_2x2_lowered(), [](order& o) { o.rank(1).erase(o.rank(1).begin()); })));
    STATIC_REQUIRE(no_recv.size == 2);
    STATIC_REQUIRE(no_recv[0].what == rule::unmatched_send);
    STATIC_REQUIRE(no_recv[0].subject == action::send_f(0, 0));
    STATIC_REQUIRE(no_recv[1].what == rule::missing_recv);
    STATIC_REQUIRE(no_recv[1].subject == action::forward(1, 0));
    // Send removed: the receive is unmatched.
    STATIC_REQUIRE(only(validate(edited(gpipe_2x2_lowered(),
                                        [](order& o) { o.rank(0).erase(o.rank(0).begin() + 1); })),
                        rule::unmatched_recv));
    // Send before the compute that produces it.
    STATIC_REQUIRE(only(validate(edited(gpipe_2x2_lowered(),
                                        [](order& o) { std::swap(o.rank(0)[0], o.rank(0)[1]); })),
                        rule::send_before_compute));
    // A send to a stage on the same rank (V turn) or past the last stage.
    STATIC_REQUIRE(validate(edited(v_2x1_split_backward(), [](order& o) {
                       o.rank(1).insert(o.rank(1).begin() + 1, action::send_f(1, 0));
                       o.rank(1).insert(o.rank(1).begin() + 2, action::recv_f(2, 0));
                   })).count(rule::needless_p2p) == 2);
}

TEST_CASE("UNSHARD/RESHARD and REDUCE_GRAD rules", "[validate][static]") {
    constexpr auto fsdp = [](order o) {
        for (int r = 0; r < 2; ++r) {
            auto& row = o.rank(r);
            row.insert(row.begin(), action::unshard(r));
            row.push_back(action::reduce_grad(r));
            row.push_back(action::reshard(r));
        }
        return o;
    };
    STATIC_REQUIRE(validate(fsdp(gpipe_2x2_lowered())));
    // UNSHARD dropped: the stage starts sharded, so its compute runs sharded and the final
    // RESHARD has nothing to free.
    STATIC_REQUIRE(validate(edited(fsdp(gpipe_2x2_lowered()), [](order& o) {
                       o.rank(0)[0] = {};
                   })).count(rule::compute_while_sharded) == 4);
    STATIC_REQUIRE(validate(edited(fsdp(gpipe_2x2_lowered()), [](order& o) {
                       o.rank(0)[0] = {};
                   })).count(rule::shard_mismatch) == 1);
    // RESHARD moved before the last backward (rank 1: ..., 1B0, 1SEND_B0, 1B1, ...).
    STATIC_REQUIRE(only(validate(edited(fsdp(gpipe_2x2_lowered()),
                                        [](order& o) {
                                            auto& row = o.rank(1);
                                            row.pop_back();
                                            row.insert(row.begin() + 7, action::reshard(1));
                                        })),
                        rule::compute_while_sharded));
    // REDUCE_GRAD before the last backward.
    constexpr auto early = summarize(validate(edited(fsdp(gpipe_2x2_lowered()), [](order& o) {
        auto& row = o.rank(0);
        std::swap(row[row.size() - 2], row[row.size() - 3]);
    })));
    STATIC_REQUIRE(early.size == 1);
    STATIC_REQUIRE(early[0].what == rule::reduce_grad_early);
    STATIC_REQUIRE(early[0].other == action::full_backward(0, 1));
}

TEST_CASE("with the dual placement each direction is its own pipeline",
          "[validate][static][dual]") {
    STATIC_REQUIRE(validate(two_pipelines()));
    // As one V pipeline the same actions miss every other (stage, microbatch).
    STATIC_REQUIRE(validate(two_pipelines(), config{.ranks = 2,
                                                    .stages_per_rank = 2,
                                                    .microbatches = 2,
                                                    .placement = ppsched::stage_placement::v})
                       .has(rule::missing_forward));
    // A microbatch of the other direction is out of range for the stage.
    constexpr auto other_direction = summarize(
        validate(edited(two_pipelines(), [](order& o) { o.push(0, action::forward(0, 1)); })));
    STATIC_REQUIRE(other_direction.size == 1);
    STATIC_REQUIRE(other_direction[0].what == rule::microbatch_out_of_range);
    STATIC_REQUIRE(other_direction[0].expected == 0);
    STATIC_REQUIRE(other_direction[0].found == 1);
    CHECK(ppsched::describe(other_direction[0]) ==
          "rank 0, step 4: 0F1: microbatch index out of range (stage 0 runs microbatches 0..0) "
          "[microbatch_out_of_range]");
    // Lowered: sends stay within a direction; a send from stage 1 to stage 2 is needless.
    STATIC_REQUIRE(validate(edited(two_pipelines(), [](order& o) {
                       o.rank(1).push_back(action::send_f(1, 0));
                   })).has(rule::needless_p2p));
    // An odd stages_per_rank cannot be split into two directions.
    STATIC_REQUIRE(only(validate(std::vector<std::vector<action>>{{}, {}},
                                 config{.ranks = 2,
                                        .stages_per_rank = 3,
                                        .microbatches = 2,
                                        .placement = ppsched::stage_placement::dual}),
                        rule::invalid_config));
}

TEST_CASE("a cross-rank wait cycle is reported as a deadlock naming both ranks",
          "[validate][static]") {
    // Rank 0 wants 0B0 (needs 1B0) before 0F1; rank 1 wants 1F1 (needs 0F1) before 1B0.
    constexpr auto build = [] {
        order o(two_ranks);
        for (auto a : {action::forward(0, 0), action::full_backward(0, 0), action::forward(0, 1),
                       action::full_backward(0, 1)})
            o.push(0, a);
        for (auto a : {action::forward(1, 0), action::forward(1, 1), action::full_backward(1, 0),
                       action::full_backward(1, 1)})
            o.push(1, a);
        return o;
    };
    constexpr auto r = summarize(validate(build()));
    STATIC_REQUIRE(r.only_rule);
    STATIC_REQUIRE(r[0].what == rule::deadlock);
    STATIC_REQUIRE(r.size == 2);
    STATIC_REQUIRE(r[0].rank == 0);
    STATIC_REQUIRE(r[0].step == 1);
    STATIC_REQUIRE(r[0].subject == action::full_backward(0, 0));
    STATIC_REQUIRE(r[0].other == action::full_backward(1, 0));
    STATIC_REQUIRE(r[0].other_rank == 1);
    STATIC_REQUIRE(r[1].rank == 1);
    STATIC_REQUIRE(r[1].step == 1);
    STATIC_REQUIRE(r[1].subject == action::forward(1, 1));
    STATIC_REQUIRE(r[1].other == action::forward(0, 1));
    STATIC_REQUIRE(r[1].other_rank == 0);

    const std::string text = ppsched::to_string(validate(build()));
    CHECK(text.find("rank 0, step 1: 0B0 waits forever for 1B0 (rank 1, step 2) [deadlock]") !=
          std::string::npos);
    CHECK(text.find("rank 1, step 1: 1F1 waits forever for 0F1 (rank 0, step 2) [deadlock]") !=
          std::string::npos);
}

TEST_CASE("a lowered receive placed before its peer can send deadlocks", "[validate][static]") {
    // Rank 0 waits for 1's gradient before sending its first activation.
    constexpr auto r = summarize(validate(edited(gpipe_2x2_lowered(), [](order& o) {
        auto& row = o.rank(0);
        row.insert(row.begin(), action::recv_b(0, 0));
        row.erase(row.begin() + 5);
    })));
    STATIC_REQUIRE(r.only_rule);
    STATIC_REQUIRE(r[0].what == rule::deadlock);
    STATIC_REQUIRE(r[0].subject == action::recv_b(0, 0));
    STATIC_REQUIRE(r[0].other == action::send_b(1, 0));
    STATIC_REQUIRE(r[1].subject == action::recv_f(1, 0));
    STATIC_REQUIRE(r[1].other == action::send_f(0, 0));
}

// ---- conformance data ------------------------------------------------------------------------

TEST_CASE("every PyTorch compute order validates", "[validate][conformance]") {
    int n = 0;
    for (const auto& c : ppsched_test::read_torch_cases(torch_dir + "/cases.json")) {
        if (c.status != "ok") continue;
        INFO(c.compute);
        const auto report = validate(load(c.compute, case_config(c)));
        INFO(ppsched::to_string(report));
        CHECK(report);
        ++n;
    }
    CHECK(n == 305);
}

TEST_CASE("every PyTorch lowered order validates", "[validate][conformance]") {
    int n = 0;
    for (const auto& c : ppsched_test::read_torch_cases(torch_dir + "/cases.json")) {
        if (c.status != "ok") continue;
        INFO(c.comms);
        const auto report = validate(load(c.comms, case_config(c)));
        INFO(ppsched::to_string(report));
        CHECK(report);
        ++n;
    }
    CHECK(n == 305);
}

TEST_CASE("the inferred configuration of every compute order validates",
          "[validate][conformance]") {
    for (const auto& c : ppsched_test::read_torch_cases(torch_dir + "/cases.json")) {
        if (c.status != "ok") continue;
        const std::string path = torch_dir + "/" + c.compute;
        const order o = ppsched::io::read_csv(ppsched::io::read_file(path), path);
        INFO(c.compute);
        CHECK(validate(o));
    }
}

// ---- mutations of PyTorch's orders -----------------------------------------------------------

TEST_CASE("mutated compute orders are reported with the right rule and position",
          "[validate][mutation]") {
    const order base = load_case("Interleaved1F1B", 4, 8, 2, false);
    REQUIRE(validate(base));

    SECTION("dropping a forward") {
        order o = base;
        const auto [r, i] = locate(o, action::forward(5, 3));
        erase_at(o, r, i);
        const auto rep = validate(o);
        REQUIRE(rep.find(rule::missing_forward));
        CHECK(rep.find(rule::missing_forward)->subject == action::forward(5, 3));
        CHECK(rep.find(rule::missing_forward)->rank == 1);
    }
    SECTION("dropping a backward") {
        order o = base;
        const auto [r, i] = locate(o, action::full_backward(2, 7));
        o.rank(r)[static_cast<std::size_t>(i)] = {};
        const auto rep = validate(o);
        CHECK(only(rep, rule::missing_backward));
        CHECK(rep[0].subject == action::full_backward(2, 7));
    }
    SECTION("duplicating an action") {
        order o = base;
        const auto [r, i] = locate(o, action::forward(6, 1));
        auto& row = o.rank(r);
        row.push_back(action::forward(6, 1));
        const auto rep = validate(o);
        CHECK(only(rep, rule::duplicate_action));
        CHECK(rep[0].rank == r);
        CHECK(rep[0].step == static_cast<int>(row.size()) - 1);
        CHECK(rep[0].other_step == i);
    }
    SECTION("swapping a forward with the backward of the same microbatch") {
        order o = base;
        const auto [r, i] = locate(o, action::forward(7, 0));
        const int j = find(o, r, action::full_backward(7, 0));
        std::swap(o.rank(r)[static_cast<std::size_t>(i)], o.rank(r)[static_cast<std::size_t>(j)]);
        const auto rep = validate(o);
        CHECK(has_at(rep, rule::backward_before_forward, r, i));
    }
    SECTION("moving a forward after the backward that needs it deadlocks") {
        // Rank 0 holds stages 0 and 4. Moving 4F0 after 0B0 leaves 4B0 waiting for 5B0 on
        // rank 1, whose 5F0 waits for the moved 4F0: a cycle between ranks 0 and 1.
        order o = base;
        const int i = find(o, 0, action::forward(4, 0));
        const int j = find(o, 0, action::full_backward(0, 0));
        move_slot(o, 0, i, j);
        const auto rep = validate(o);
        INFO(ppsched::to_string(rep));
        CHECK(rep.count(rule::deadlock) == 2);
        CHECK(has_at(rep, rule::deadlock, 0, find(o, 0, action::full_backward(4, 0))));
        CHECK(has_at(rep, rule::deadlock, 1, find(o, 1, action::forward(5, 0))));
        CHECK(
            has_at(rep, rule::backward_before_forward, 0, find(o, 0, action::full_backward(4, 0))));
    }
    SECTION("swapping two forwards of consecutive stages on the same rank (V placement)") {
        order v = load_case("ZBVZeroBubble", 4, 8, 2, false);
        REQUIRE(validate(v));
        // Rank 3 holds stages 3 and 4.
        const int i = find(v, 3, action::forward(3, 0));
        const int j = find(v, 3, action::forward(4, 0));
        std::swap(v.rank(3)[static_cast<std::size_t>(i)], v.rank(3)[static_cast<std::size_t>(j)]);
        const auto rep = validate(v);
        CHECK(has_at(rep, rule::dependency_order, 3, i));
    }
}

TEST_CASE("every single-slot deletion of a compute order is caught", "[validate][mutation]") {
    for (const char* schedule : {"Interleaved1F1B", "ZBVZeroBubble", "InterleavedZeroBubble"}) {
        const order base = load_case(schedule, 2, 4, 2, false);
        REQUIRE(validate(base));
        for (int r = 0; r < base.cfg().ranks; ++r) {
            for (std::size_t i = 0; i < base.rank(r).size(); ++i) {
                if (!base.rank(r)[i]) continue;
                order o = base;
                o.rank(r)[i] = {};
                INFO(schedule << " rank " << r << " step " << i);
                CHECK_FALSE(validate(o));
            }
        }
    }
}

TEST_CASE("mutated lowered orders are reported with the right rule and position",
          "[validate][mutation]") {
    const order base = load_case("Interleaved1F1B", 4, 8, 2, true);
    REQUIRE(validate(base));

    SECTION("a send removed") {
        order o = base;
        const auto [r, i] = locate(o, action::send_f(2, 3));
        erase_at(o, r, i);
        const auto [rr, ri] = locate(o, action::recv_f(3, 3));
        const auto rep = validate(o);
        CHECK(only(rep, rule::unmatched_recv));
        CHECK(has_at(rep, rule::unmatched_recv, rr, ri));
    }
    SECTION("a receive removed") {
        order o = base;
        const auto [r, i] = locate(o, action::recv_b(4, 5));
        erase_at(o, r, i);
        const auto rep = validate(o);
        const auto [sr, si] = locate(o, action::send_b(5, 5));
        const auto [br, bi] = locate(o, action::full_backward(4, 5));
        CHECK(has_at(rep, rule::unmatched_send, sr, si));
        CHECK(has_at(rep, rule::missing_recv, br, bi));
        CHECK(rep.size() == 2);
    }
    SECTION("a receive moved after the compute that needs it") {
        order o = base;
        const auto [r, i] = locate(o, action::recv_f(5, 2));
        const int f = find(o, r, action::forward(5, 2));
        move_slot(o, r, i, f);
        const auto rep = validate(o);
        CHECK(only(rep, rule::missing_recv));
        CHECK(rep[0].rank == r);
        CHECK(rep[0].step == f - 1);
        CHECK(rep[0].other_step == f);
    }
    SECTION("a send moved before the compute that produces it") {
        order o = base;
        const auto [r, i] = locate(o, action::send_b(3, 0));
        const int b = find(o, r, action::full_backward(3, 0));
        move_slot(o, r, i, b);
        const auto rep = validate(o);
        CHECK(has_at(rep, rule::send_before_compute, r, b));
    }
    SECTION("a receive moved to the front of its rank") {
        order o = base;
        const auto [r, i] = locate(o, action::recv_b(1, 0));
        move_slot(o, r, i, 0);
        const auto rep = validate(o);
        REQUIRE(rep.has(rule::deadlock));
        CHECK(has_at(rep, rule::deadlock, r, 0));
        INFO(ppsched::to_string(rep));
        CHECK(rep.count(rule::deadlock) >= 2);
    }
    SECTION("a REDUCE_GRAD moved before the stage's last backward") {
        order o = base;
        const auto [r, i] = locate(o, action::reduce_grad(6));
        const int b = find(o, r, action::full_backward(6, 7));
        move_slot(o, r, i, b);
        const auto rep = validate(o);
        CHECK(only(rep, rule::reduce_grad_early));
        CHECK(has_at(rep, rule::reduce_grad_early, r, b));
    }
    SECTION("an UNSHARD removed") {
        order o = base;
        const auto [r, i] = locate(o, action::unshard(0));
        erase_at(o, r, i);
        const auto rep = validate(o);
        REQUIRE(rep.has(rule::compute_while_sharded));
        CHECK(rep.find(rule::compute_while_sharded)->subject == action::forward(0, 0));
    }
}

TEST_CASE("every single send or receive removed from a lowered order is caught",
          "[validate][mutation]") {
    for (const char* schedule : {"1F1B", "Interleaved1F1B", "ZBVZeroBubble", "DualPipeV"}) {
        const int v = std::string(schedule) == "1F1B" ? 1 : 2;
        const order base = load_case(schedule, 4, 8, v, true);
        REQUIRE(validate(base));
        int checked = 0;
        for (int r = 0; r < base.cfg().ranks; ++r) {
            for (std::size_t i = 0; i < base.rank(r).size(); ++i) {
                if (!base.rank(r)[i] || !ppsched::is_p2p(base.rank(r)[i]->kind())) continue;
                order o = base;
                erase_at(o, r, static_cast<int>(i));
                const auto rep = validate(o);
                INFO(schedule << " rank " << r << " step " << i);
                const bool send = ppsched::is_send(base.rank(r)[i]->kind());
                CHECK(rep.has(send ? rule::unmatched_recv : rule::unmatched_send));
                ++checked;
            }
        }
        CHECK(checked > 0);
    }
}

TEST_CASE("validate agrees with a naive reference on every adjacent swap and every move of one "
          "action",
          "[validate][mutation]") {
    int mutations = 0, invalid = 0;
    for (const auto& [schedule, v] : {std::pair{"1F1B", 1}, std::pair{"Interleaved1F1B", 2},
                                      std::pair{"InterleavedZeroBubble", 2},
                                      std::pair{"ZBVZeroBubble", 2}, std::pair{"LoopedBFS", 2}}) {
        const order base = load_case(schedule, 2, 4, v, false);
        REQUIRE(reference_valid(base));
        REQUIRE(validate(base));
        for (int r = 0; r < base.cfg().ranks; ++r) {
            const int len = static_cast<int>(base.rank(r).size());
            for (int from = 0; from < len; ++from) {
                if (!base.rank(r)[static_cast<std::size_t>(from)]) continue;
                for (int to = 0; to < len; ++to) {
                    if (to == from) continue;
                    order o = base;
                    move_slot(o, r, from, to);
                    INFO(schedule << " rank " << r << " move " << from << " -> " << to);
                    const bool expected = reference_valid(o);
                    const auto report = validate(o);
                    INFO(ppsched::to_string(report));
                    CHECK(static_cast<bool>(report) == expected);
                    ++mutations;
                    invalid += expected ? 0 : 1;
                }
            }
        }
    }
    CHECK(invalid > 0);
    CHECK(invalid < mutations);
}

TEST_CASE("every compute order of the other conformance sets validates with its inferred "
          "configuration",
          "[validate][conformance]") {
    // DualPipe's files are inferred as two pipelines in opposite directions (dual placement).
    int n = 0;
    for (const char* set : {"megatron", "zb", "overlap", "dualpipe"}) {
        const std::string dir = std::string(PPSCHED_CONFORMANCE_DIR) + "/" + set + "/compute";
        for (const auto& e : std::filesystem::directory_iterator(dir)) {
            const std::string name = e.path().filename().string();
            const order o =
                ppsched::io::read_csv(ppsched::io::read_file(e.path().string()), e.path().string());
            INFO(set << "/" << name);
            const auto report = validate(o);
            INFO(ppsched::to_string(report));
            CHECK(report);
            ++n;
        }
    }
    CHECK(n > 200);
}

TEST_CASE("validate agrees with a naive reference on every move of a communication or FSDP "
          "action in a lowered order",
          "[validate][mutation]") {
    int mutations = 0, invalid = 0;
    for (const auto& [schedule, v] : {std::pair{"1F1B", 1}, std::pair{"Interleaved1F1B", 2},
                                      std::pair{"ZBVZeroBubble", 2}, std::pair{"DualPipeV", 2}}) {
        const order base = load_case(schedule, 2, 4, v, true);
        const bool overlap = std::string(schedule) == "DualPipeV";
        if (!overlap) REQUIRE(reference_lowered_valid(base));
        REQUIRE(validate(base));
        for (int r = 0; r < base.cfg().ranks; ++r) {
            const int len = static_cast<int>(base.rank(r).size());
            for (int from = 0; from < len; ++from) {
                const auto& moved = base.rank(r)[static_cast<std::size_t>(from)];
                if (!moved || ppsched::is_compute(moved->kind())) continue;
                for (int to = 0; to < len; ++to) {
                    if (to == from) continue;
                    order o = base;
                    move_slot(o, r, from, to);
                    const auto report = validate(o);
                    INFO(schedule << " rank " << r << " move " << from << " -> " << to);
                    INFO(ppsched::to_string(report));
                    // The reference does not know OVERLAP_F_B; there, a valid verdict must at
                    // least mean the order runs through.
                    if (overlap) {
                        if (report) CHECK(ppsched::simulate_steps(o).completed());
                    } else {
                        CHECK(static_cast<bool>(report) == reference_lowered_valid(o));
                    }
                    ++mutations;
                    invalid += report ? 0 : 1;
                }
            }
        }
    }
    CHECK(invalid > mutations / 4);
    CHECK(invalid < mutations);
}

TEST_CASE("the one-run check accepts exactly the orders the full passes accept, on every move, "
          "deletion, copy and change of rank of one slot",
          "[validate][mutation]") {
    // validate trusts a "valid" from the one-run check and runs the full passes otherwise, so
    // the check must never accept more; accepting less would only cost time.
    int orders = 0, valid = 0;
    const auto agree = [&](const order& o, const std::string& what) {
        const bool full = full_passes_valid(o);
        INFO(what);
        CHECK(one_run_valid(o) == full);
        ++orders;
        valid += full ? 1 : 0;
    };
    for (const auto& [schedule, v] :
         {std::pair{"1F1B", 1}, std::pair{"Interleaved1F1B", 2}, std::pair{"LoopedBFS", 2},
          std::pair{"InterleavedZeroBubble", 2}, std::pair{"ZBVZeroBubble", 2},
          std::pair{"DualPipeV", 2}}) {
        for (const bool comms : {false, true}) {
            const order base = load_case(schedule, 2, 4, v, comms);
            const std::string name = std::string(schedule) + (comms ? " lowered" : " compute");
            agree(base, name);
            for (int r = 0; r < base.cfg().ranks; ++r) {
                const int len = static_cast<int>(base.rank(r).size());
                for (int from = 0; from < len; ++from) {
                    const std::string at =
                        name + " rank " + std::to_string(r) + " slot " + std::to_string(from);
                    for (int to = 0; to < len; ++to) {
                        if (to == from) continue;
                        order o = base;
                        move_slot(o, r, from, to);
                        agree(o, at + " moved to " + std::to_string(to));
                    }
                    order deleted = base;
                    erase_at(deleted, r, from);
                    agree(deleted, at + " deleted");
                    for (const int to : {0, from + 1, len}) {
                        order copied = base;
                        auto& row = copied.rank(r);
                        row.insert(row.begin() + to, row[static_cast<std::size_t>(from)]);
                        agree(copied, at + " copied to " + std::to_string(to));
                    }
                    order elsewhere = base;
                    auto& other = elsewhere.rank(1 - r);
                    other.insert(other.begin() + std::min(from, static_cast<int>(other.size())),
                                 base.rank(r)[static_cast<std::size_t>(from)]);
                    erase_at(elsewhere, r, from);
                    agree(elsewhere, at + " moved to the other rank");
                }
            }
        }
    }
    CHECK(valid > 12);
    CHECK(valid < orders / 2);
}

TEST_CASE("every rule has a name and a message that names it", "[validate]") {
    std::set<std::string> names;
    for (std::size_t i = 0; i < ppsched::rule_count; ++i) {
        ppsched::violation v;
        v.what = static_cast<rule>(i);
        v.rank = 1;
        v.step = 2;
        v.subject = action::forward(0, 0);
        v.has_subject = true;
        const std::string name(ppsched::to_string_view(v.what));
        CHECK(name != "?");
        names.insert(name);
        const std::string text = ppsched::describe(v);
        CHECK(text.find("[" + name + "]") != std::string::npos);
    }
    CHECK(names.size() == ppsched::rule_count);
}

// Bounded resources (issue 18): a configuration naming far more microbatches than the order
// holds is rejected without tables sized by it, and a report keeps at most max_stored entries.
TEST_CASE("validate rejects a tiny order with a huge configuration without sizing tables by it",
          "[validate][bounded]") {
    for (const char* text : {"0F0,0B9999999", "0F0,0B2147483646"}) {
        INFO(text);
        // The configuration is given: read_csv refuses such an index when it has to infer one.
        const int named = std::string_view(text).size() > 14 ? 2147483647 : 10000000;
        const ppsched::order o =
            ppsched::io::read_csv(text, ppsched::config{.ranks = 1, .microbatches = named});
        const auto rep = ppsched::validate(o);
        REQUIRE_FALSE(rep.valid());
        CHECK(rep.size() == ppsched::validation_report::max_stored);
        CHECK(rep.truncated());
        // Every microbatch but those present misses its forward or backward.
        const auto m = static_cast<std::size_t>(o.cfg().microbatches);
        CHECK(rep.total() == 2 * m - 2);
        CHECK(rep[0].what == ppsched::rule::missing_backward);
        CHECK(rep[1].what == ppsched::rule::missing_forward);
        CHECK(ppsched::to_string(rep).find("more (" + std::to_string(rep.total())) !=
              std::string::npos);
    }
}

TEST_CASE("a report keeps the first violations and counts all of them", "[validate][bounded]") {
    // 3000 microbatches named, one rank, nothing but forwards: 3000 missing backwards, and the
    // order is small enough for the full passes.
    std::string text;
    for (int mb = 0; mb < 3000; ++mb) text += (mb ? ",0F" : "0F") + std::to_string(mb);
    const ppsched::order o = ppsched::io::read_csv(text);
    const auto rep = ppsched::validate(o);
    CHECK(rep.total() == 3000);
    CHECK(rep.size() == ppsched::validation_report::max_stored);
    CHECK(rep.count(ppsched::rule::missing_backward) == ppsched::validation_report::max_stored);
}

TEST_CASE("the sparse check reports placement and range problems too", "[validate][bounded]") {
    // Two ranks, 100000 microbatches named by 1F99999 on the wrong rank.
    const ppsched::config cfg{.ranks = 2, .stages_per_rank = 1, .microbatches = 100000};
    const std::vector<std::vector<action>> rows{{action::forward(1, 99999)},
                                                {action::forward(0, 100000)}};
    const auto rep = ppsched::validate(rows, cfg);
    REQUIRE_FALSE(rep.valid());
    CHECK(rep.has(ppsched::rule::wrong_rank));
    CHECK(rep.has(ppsched::rule::microbatch_out_of_range));
    CHECK(rep.total() == 2 + 2 * 200000 - 1);
}

TEST_CASE("lowered orders PyTorch's runtime fails on: unused UNSHARD, empty slot, one stage "
          "without REDUCE_GRAD",
          "[validate][fsdp]") {
    using ppsched::rule;
    const std::string rank1 = "1UNSHARD,1RECV_F0,1F0,1RECV_F1,1B0,1SEND_B0,1F1,1B1,1SEND_B1,"
                              "1REDUCE_GRAD,1RESHARD\n";
    const std::string rank0 = "0UNSHARD,0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1,"
                              "0REDUCE_GRAD,0RESHARD";
    // Both paths of validate (the quick run and the full passes) agree on each.
    auto check = [](const std::string& text, const ppsched::validate_options& options) {
        const ppsched::order o = ppsched::io::read_csv(text);
        const auto full = ppsched::detail::validator(o.cfg(), false, options.transport,
                                                     options.idle_slots_in_lowered)
                              .run(o);
        const auto quick = ppsched::validate(o, options);
        CHECK(full.valid() == quick.valid());
        return full;
    };
    const ppsched::validate_options file{.idle_slots_in_lowered = false};
    REQUIRE(check(rank0 + "\n" + rank1, file).valid());
    // RESHARD right after its UNSHARD, and an UNSHARD at the end: used by no compute.
    const auto unused = check("0UNSHARD,0RESHARD," + rank0 + ",0UNSHARD\n" + rank1, file);
    CHECK(unused.total() == 2);
    CHECK(unused.count(rule::unused_unshard) == 2);
    CHECK(unused[0].rank == 0);
    // An empty slot: only where the options say PyTorch's runtime will run the order.
    const std::string idle = "0UNSHARD,," + rank0.substr(9) + "\n" + rank1;
    const auto idle_report = check(idle, file);
    CHECK(idle_report.total() == 1);
    CHECK(idle_report.has(rule::idle_in_lowered));
    CHECK(idle_report[0].step == 1);
    CHECK(check(idle, {}).valid());
    // REDUCE_GRAD on stage 0 only.
    std::string no_reduce = rank1;
    no_reduce.erase(no_reduce.find("1REDUCE_GRAD,"), 13);
    const auto missing = check(rank0 + "\n" + no_reduce, file);
    CHECK(missing.total() == 1);
    CHECK(missing.has(rule::missing_reduce_grad));
    CHECK(missing[0].rank == 1);
    // Every lowering of a built-in schedule passes, FSDP prefetch included.
    for (const auto& entry : ppsched::builtin_schedules().entries()) {
        const ppsched::config cfg{
            .ranks = 4, .stages_per_rank = entry.default_stages_per_rank, .microbatches = 8};
        ppsched::order o;
        try {
            o = ppsched::builtin_schedules().generate(entry.name, cfg);
        } catch (const ppsched::config_error&) {
            continue;
        }
        INFO(entry.name);
        CHECK(ppsched::validate(ppsched::lower(o), file));
    }
}

TEST_CASE("a duplicate is blamed on the copy on the wrong rank", "[validate]") {
    // 1F0 on rank 1, where stage 1 lives, and a stray copy at the end of rank 0.
    const ppsched::order o = ppsched::io::read_csv("0F0,0F1,,0B0,0B1,1F0\n,1F0,1B0,1F1,1B1\n");
    const auto report = ppsched::validate(o);
    REQUIRE(report.has(ppsched::rule::duplicate_action));
    for (const auto& v : report) {
        INFO(ppsched::describe(v));
        CHECK(v.rank == 0);
        CHECK(v.step == 5);
    }
}

TEST_CASE("order::push refuses a rank the order does not have", "[validate]") {
    // A stage index given for a rank (4 stages on 2 ranks) is refused, not written past the rows.
    const ppsched::config cfg{.ranks = 2, .stages_per_rank = 2, .microbatches = 1};
    ppsched::order o(cfg);
    CHECK_NOTHROW(o.push(1, ppsched::action::forward(1, 0)));
    CHECK_THROWS_AS(o.push(2, ppsched::action::forward(2, 0)), ppsched::config_error);
    CHECK_THROWS_WITH(o.push(-1, ppsched::action::forward(0, 0)),
                      Catch::Contains("rank -1 is not one of the order's 2 ranks"));
    CHECK_THROWS_AS(o.push_idle(2), ppsched::config_error);
    CHECK(o.action_count() == 1);
}

TEST_CASE("a stray copy of a receive or REDUCE_GRAD on another rank is the one blamed",
          "[validate]") {
    // A lowered 2 x 2 order, correct but for a second 1RECV_F0 on rank 0 (before the correct
    // one on rank 1 in the checks' order) or a second 1REDUCE_GRAD there.
    const std::string rank0 = "0UNSHARD,0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1,"
                              "0REDUCE_GRAD,0RESHARD";
    const std::string rank1 = "1UNSHARD,1RECV_F0,1F0,1RECV_F1,1B0,1SEND_B0,1F1,1B1,1SEND_B1,"
                              "1REDUCE_GRAD,1RESHARD\n";
    REQUIRE(validate(ppsched::io::read_csv(rank0 + "\n" + rank1)));
    for (const char* stray : {"1RECV_F0", "1REDUCE_GRAD"}) {
        INFO(stray);
        const auto report = validate(ppsched::io::read_csv(rank0 + "," + stray + "\n" + rank1));
        REQUIRE_FALSE(report.valid());
        for (const auto& v : report) {
            INFO(ppsched::to_string(report));
            CHECK(v.rank == 0); // the stray copy, never the correct one on rank 1
            CHECK((v.what == rule::wrong_rank || v.what == rule::duplicate_action));
        }
    }
}

TEST_CASE("a stray backward copy on another rank hides no error of the correct one", "[validate]") {
    // Rank 1 reduces stage 1's gradients before its last backward (1B1): reduce_grad_early,
    // found with or without a stray 1B1 on rank 0 (checked first, at a later step).
    const std::string rank0 = "0UNSHARD,0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1,"
                              "0REDUCE_GRAD,0RESHARD";
    const std::string rank1 = "1UNSHARD,1RECV_F0,1F0,1RECV_F1,1B0,1SEND_B0,1F1,1REDUCE_GRAD,"
                              "1B1,1SEND_B1,1RESHARD\n";
    auto has_early = [](const ppsched::validation_report& report) {
        return std::any_of(report.begin(), report.end(), [](const auto& v) {
            return v.what == rule::reduce_grad_early && v.rank == 1;
        });
    };
    CHECK(has_early(validate(ppsched::io::read_csv(rank0 + "\n" + rank1))));
    CHECK(has_early(validate(ppsched::io::read_csv(rank0 + ",1B1\n" + rank1))));
}

TEST_CASE("a typo in one half of an OVERLAP_F_B leaves the other half counted", "[validate]") {
    const config cfg{.ranks = 1, .microbatches = 3};
    const auto report =
        validate(ppsched::io::read_csv("0F0,0F1,(0F2;0B7)OVERLAP_F_B,0B0,0B1,0B2\n", cfg));
    REQUIRE_FALSE(report.valid());
    CHECK(report.total() == 1);
    CHECK(report[0].what == rule::microbatch_out_of_range); // and no "missing 0F2"
}
