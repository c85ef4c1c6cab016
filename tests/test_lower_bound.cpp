// Tests of the makespan lower bound (ppsched/tune/lower_bound.hpp): closed forms derived by hand,
// and soundness: no built-in schedule's simulated makespan is ever below it, and on tiny
// memory-limited problems no part of it exceeds the optimum found by trying every order (nor
// does the exact phase, which bounds its nodes by the same parts, miss that optimum).

#include <ppsched/algorithms/simulate.hpp>
#include <ppsched/registry.hpp>
#include <ppsched/tune/detail/exact_search.hpp>
#include <ppsched/tune/detail/rank_relaxation.hpp>
#include <ppsched/tune/lower_bound.hpp>
#include <ppsched/tune/tune.hpp>

#include <catch2/catch.hpp>

#include "support/exhaustive_optimum.hpp"
#include "support/tune_suite.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <queue>
#include <utility>
#include <vector>

using ppsched::tune_problem;

TEST_CASE("lower_bound: uniform costs, no limit: the last rank starts after p - 1 forwards",
          "[lower_bound]") {
    for (int p : {1, 2, 3, 5, 8})
        for (int m : {p, 2 * p + 1}) {
            tune_problem prob;
            prob.ranks = p;
            prob.microbatches = m;
            INFO("p=" << p << " m=" << m);
            CHECK(ppsched::lower_bound(prob).value == 3.0 * m + p - 1);
        }
}

TEST_CASE("lower_bound: one microbatch: its round trip and its last W", "[lower_bound]") {
    for (int p : {1, 2, 5}) {
        tune_problem prob;
        prob.ranks = p;
        CHECK(ppsched::lower_bound(prob).value == 2.0 * p + 1);
    }
}

TEST_CASE("lower_bound: a message time delays every hop between ranks", "[lower_bound]") {
    // Fused backward, one microbatch: the only order is the round trip, 2 (p - 1) messages.
    tune_problem prob;
    prob.ranks = 4;
    prob.microbatches = 1;
    prob.backward = ppsched::backward_mode::fused;
    prob.costs.p2p_latency = 0.25;
    CHECK(ppsched::lower_bound(prob).value == Approx(4 * 1 + 4 * 2 + 6 * 0.25));
}

TEST_CASE("lower_bound: the memory-time part and the least memory per rank", "[lower_bound]") {
    tune_problem prob;
    prob.ranks = 2;
    prob.microbatches = 4;
    prob.memory_limit = 1;
    const auto b = ppsched::lower_bound(prob);
    // Rank 0 holds each microbatch's activation for F + F + I + I + W = 5 units, one at a time
    // (its room is the limit up to rounding, 1e-12 of it: the bound is that much below 20).
    CHECK(b.memory == Approx(20).epsilon(1e-11));
    CHECK(b.memory <= 20);
    CHECK(b.memory_rank == 0);
    REQUIRE(b.least_memory.size() == 2);
    CHECK(b.least_memory[0] == 1);
    prob.stages_per_rank = 2;
    prob.costs.uniform.parameters = 0.5;
    prob.memory_limit = 10;
    CHECK(ppsched::lower_bound(prob).least_memory[1] == 3); // 2 x 0.5 + 2 activations
}

TEST_CASE("lower_bound: no built-in schedule beats it on the suite", "[lower_bound]") {
    namespace dt = ppsched::detail::tune;
    for (const auto& sp : ppsched_test::tune_suite()) {
        const auto bound = ppsched::lower_bound(sp.problem);
        for (const auto& e : ppsched::builtin_schedules().entries()) {
            if (e.placement != sp.problem.placement) continue;
            ppsched::order o;
            try {
                o = e.generate(sp.problem.cfg(), dt::candidate_params(e, sp.problem));
            } catch (const ppsched::config_error&) {
                continue;
            }
            const auto sim = ppsched::simulate(o, sp.problem.costs, {.timeline = false});
            if (!sim) continue;
            double peak = 0;
            for (const auto& r : sim.ranks) peak = std::max(peak, r.peak_memory);
            // The memory part holds only for orders within the limit.
            const double b = sp.problem.memory_limit && peak > *sp.problem.memory_limit
                                 ? bound.one_machine
                                 : bound.value;
            INFO(sp.name << " " << e.pytorch_name);
            CHECK(b <= sim.makespan * (1 + 1e-12));
        }
    }
}

TEST_CASE("lower_bound: the memory ramp, derived by hand", "[lower_bound]") {
    // 2 ranks, 4 microbatches, room for one activation. Rank 0's first free, W of microbatch 0,
    // ends at 5 at the earliest (F F I I W); before 5 the rank can run one forward and that
    // microbatch's I (from 3) and W (from 4): 3 units, so it idles at least 2 before 5. Its last
    // forward holds the only room: only that forward, its I and its W (3 of its 12 units) come
    // after it, so it starts no earlier than 9 + 2 = 11, and F F I I W (5) follow: 16. (The
    // memory-time part is stronger here: 4 microbatches x 5 units = 20.)
    tune_problem prob;
    prob.ranks = 2;
    prob.microbatches = 4;
    prob.memory_limit = 1;
    CHECK(ppsched::lower_bound(prob).memory_ramp == Approx(16).epsilon(1e-8));

    // 4 ranks, 2 stages per rank (loop), 8 microbatches, room for 5 activations (limit 5.5).
    // Rank 0 holds stages 0 and 4. Its first free, W(4, 0), ends at 13 at the earliest: F on
    // stages 0..7 (8), I on stages 7..4 (4), W. Before 13 it runs at most 5 forwards (5 whole
    // activations fit in 5.5), I(4, 0) from 11 and one more action from 12: 7 units, so it
    // idles at least 6. Its last forward, F(4, 7), holds at most 5 activations with the others:
    // at most 1 + 5 x (I + W) = 11 of its 48 units come after it, so it starts no earlier than
    // 37 + 6 = 43, and the step ends at least 13 later (F on stages 4..7, I on 7..0, W(0, 7)).
    prob.ranks = 4;
    prob.microbatches = 8;
    prob.stages_per_rank = 2;
    prob.memory_limit = 5.5;
    const auto b = ppsched::lower_bound(prob);
    CHECK(b.memory_ramp == Approx(37 + 6 + 13).epsilon(1e-8));
    CHECK(b.memory_ramp_rank == 0);
    CHECK(b.value == b.memory_ramp); // above Jackson's 51 and memory x time
    CHECK(b.one_machine < b.memory_ramp);

    // No limit, no ramp.
    prob.memory_limit.reset();
    CHECK(ppsched::lower_bound(prob).memory_ramp == 0);
}

TEST_CASE("lower_bound: no part exceeds the optimum of tiny memory-limited problems",
          "[lower_bound][exhaustive]") {
    // Random costs, activations of one, two or three sizes per rank, I freeing part of the
    // activation or none, fused and split backwards, limits from the least any order needs up.
    std::uint64_t state = 0x5eed;
    auto uniform01 = [&] {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        return static_cast<double>(state % 10007) / 10006.0;
    };
    struct shape {
        int p, m, v;
        ppsched::stage_placement placement;
        ppsched::backward_mode backward;
    };
    using ppsched::backward_mode;
    using ppsched::stage_placement;
    const shape shapes[] = {
        {2, 2, 1, stage_placement::loop, backward_mode::split},
        {2, 3, 1, stage_placement::loop, backward_mode::fused},
        {2, 1, 2, stage_placement::loop, backward_mode::split},
        {2, 1, 2, stage_placement::v, backward_mode::split},
        {1, 1, 3, stage_placement::loop, backward_mode::split},
        {1, 2, 2, stage_placement::loop, backward_mode::fused},
        {2, 2, 1, stage_placement::loop, backward_mode::fused},
    };
    int limited = 0, ramp_binding = 0, relaxation_binding = 0;
    for (const shape& sh : shapes)
        for (int trial = 0; trial < 24; ++trial) {
            tune_problem prob;
            prob.ranks = sh.p;
            prob.microbatches = sh.m;
            prob.stages_per_rank = sh.v;
            prob.placement = sh.placement;
            prob.backward = sh.backward;
            prob.costs.p2p_latency = trial % 2 == 0 ? 0 : 0.1;
            prob.costs.input_grad_frees = trial % 3 == 0 ? 0.5 : 0;
            const int stages = sh.p * sh.v;
            prob.costs.per_stage.resize(static_cast<std::size_t>(stages));
            for (auto& st : prob.costs.per_stage) {
                st.forward = 0.5 + uniform01();
                st.backward_input = 0.5 + uniform01();
                st.backward_weight = 0.5 + uniform01();
                st.full_backward = 1 + uniform01();
                // One, two or three sizes.
                st.activation = trial % 6 < 2   ? 1.0
                                : trial % 6 < 4 ? (uniform01() < 0.5 ? 1.0 : 2.0)
                                                : 0.5 + uniform01();
            }
            const auto least = ppsched::lower_bound(prob).least_memory;
            const double most = *std::max_element(least.begin(), least.end());
            // From the least any order needs to room for a second microbatch.
            prob.memory_limit = most * (1 + 0.5 * uniform01());
            const double optimum = ppsched_test::exhaustive_optimum(prob);
            INFO("p=" << sh.p << " m=" << sh.m << " v=" << sh.v << " trial " << trial);
            REQUIRE(optimum < std::numeric_limits<double>::infinity());
            const auto b = ppsched::lower_bound(prob);
            ++limited;
            CHECK(b.memory_ramp <= optimum * (1 + 1e-9));
            CHECK(b.memory <= optimum * (1 + 1e-9));
            CHECK(b.value <= optimum * (1 + 1e-9));
            if (b.memory_ramp > std::max(b.one_machine, b.memory)) ++ramp_binding;
            // The rank relaxation of every rank: at most the optimum, exactly it with one rank
            // (there the relaxation is the problem), and a cap it cannot beat comes back.
            const ppsched::detail::tune::model m = ppsched::detail::tune::make_model(prob);
            double relaxed = 0;
            for (int r = 0; r < sh.p; ++r) {
                ppsched::detail::tune::rank_relaxation rel(m, r);
                const auto x = rel.solve(std::numeric_limits<double>::infinity(), 10'000'000);
                REQUIRE(x.complete);
                CHECK(x.value <= optimum * (1 + 1e-9));
                relaxed = std::max(relaxed, x.value);
                const auto capped = rel.solve(x.value * 0.75, 10'000'000);
                CHECK(capped.complete);
                CHECK(capped.value == x.value * 0.75);
            }
            if (sh.p == 1) CHECK(relaxed == Approx(optimum).epsilon(1e-12));
            if (relaxed > b.value * (1 + 1e-9)) ++relaxation_binding;
            // The exact phase bounds every node by the same parts (the ramp from the node's
            // state): from nothing it must still reach the optimum and prove it.
            ppsched::detail::tune::exact_search exact(m);
            const auto found = exact.run(std::numeric_limits<double>::infinity(),
                                         ppsched::detail::tune::exact_limits{});
            CHECK(found.complete);
            REQUIRE(found.improved);
            CHECK(found.best == Approx(optimum).epsilon(1e-12));
        }
    CHECK(limited == 168);
    // The ramp is the strongest part on some of them (else this test would not test it), and
    // the rank relaxation beats every part on some.
    CHECK(ramp_binding > 0);
    CHECK(relaxation_binding > 0);
}

namespace {

// Jackson's pre-emptive schedule the textbook way, for the queue merge to be checked against:
// every action sorted by release, a heap of the released ones by tail.
double one_machine_by_heap(const std::vector<ppsched::detail::tune::job_queue>& queues) {
    struct job {
        double release, left, tail;
    };
    std::vector<job> jobs;
    for (const auto& q : queues)
        for (std::size_t j = 0; j < q.count; ++j)
            jobs.push_back({q.release_of(j), q.duration, q.tail_of(j)});
    std::sort(jobs.begin(), jobs.end(),
              [](const job& a, const job& b) { return a.release < b.release; });
    auto by_tail = [&](std::size_t a, std::size_t b) { return jobs[a].tail < jobs[b].tail; };
    std::priority_queue<std::size_t, std::vector<std::size_t>, decltype(by_tail)> ready(by_tail);
    double t = 0, best = 0;
    std::size_t next = 0;
    while (next < jobs.size() || !ready.empty()) {
        if (ready.empty()) t = std::max(t, jobs[next].release);
        while (next < jobs.size() && jobs[next].release <= t) ready.push(next++);
        const std::size_t j = ready.top();
        const double arrival =
            next < jobs.size() ? jobs[next].release : std::numeric_limits<double>::infinity();
        if (t + jobs[j].left <= arrival) {
            t += jobs[j].left;
            ready.pop();
            best = std::max(best, t + jobs[j].tail);
        } else {
            jobs[j].left -= arrival - t;
            t = arrival;
        }
    }
    return best;
}

} // namespace

TEST_CASE("lower_bound: Jackson's pre-emptive bound over queues, by hand and against a heap",
          "[lower_bound]") {
    using ppsched::detail::tune::job_queue;
    using ppsched::detail::tune::one_machine_bound;
    // Two queues: A (2 actions of 2, released at 0 and 1, tail 5) and B (1 of 1 at 0, tail
    // 10). B first (ends 1: 11), then A's (ends 3 and 5: 8, 10): 11.
    const job_queue a{.duration = 2, .count = 2, .release_step = 1, .tail = 5};
    const job_queue b{.duration = 1, .count = 1, .tail = 10};
    CHECK(one_machine_bound({a, b}) == 11);
    // Pre-emption: C (4, at 0, tail 0) is interrupted at 1 by D (1, tail 10): D ends at 2
    // (12), C at 5. Run whole, C then D would give 15.
    const job_queue c{.duration = 4, .count = 1};
    const job_queue d{.duration = 1, .count = 1, .release = 1, .tail = 10};
    CHECK(one_machine_bound({c, d}) == 12);
    // Falling tails: 3 actions of 1 from 0, tails max(0, 2 + (2 - j) x 1) = 4, 3, 2: each ends
    // with 5.
    const job_queue e{.duration = 1, .count = 3, .tail_last = 2, .tail_step = 1};
    CHECK(one_machine_bound({e}) == 5);
    CHECK(one_machine_bound({}) == 0);
    CHECK(one_machine_bound({job_queue{}}) == 0); // an empty queue
    // Random queues: the same optimum as the heap, up to the sums' rounding.
    std::uint64_t state = 12345;
    auto uniform = [&] { // in [0, 1)
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        return static_cast<double>(state >> 11) / 9007199254740992.0;
    };
    for (int trial = 0; trial < 500; ++trial) {
        std::vector<job_queue> queues(1 + static_cast<std::size_t>(uniform() * 6));
        for (job_queue& q : queues) {
            q.count = static_cast<std::size_t>(uniform() * 12);
            q.duration = uniform() < 0.1 ? 0 : 0.1 + 3 * uniform();
            q.release = 5 * uniform();
            q.release_step = uniform() < 0.5 ? 0 : 2 * uniform();
            q.tail = 6 * uniform();
            if (uniform() < 0.5) {
                q.tail_last = 6 * uniform();
                q.tail_step = 2 * uniform();
            }
        }
        INFO("trial " << trial);
        CHECK(one_machine_bound(queues) == Approx(one_machine_by_heap(queues)).epsilon(1e-12));
    }
}

TEST_CASE("lower_bound: the forwards' work within a memory budget", "[lower_bound]") {
    using ppsched::detail::tune::forward_work_within;
    using items = std::vector<std::pair<double, double>>; // (activation, work)
    // One size: the largest works that fit whole (2 of 3 in 2.9), all when all fit.
    items one{{1, 2}, {1, 5}, {1, 3}};
    CHECK(forward_work_within(one, 2.9) == 8);
    one = {{1, 2}, {1, 5}, {1, 3}};
    CHECK(forward_work_within(one, 5) == 10);
    one = {{1, 2}};
    CHECK(forward_work_within(one, 0.5) == 0);
    // Two sizes, exact by counts: in 2.5, one of size 2 (work 3) beats two of size 1 (1.5);
    // the fractional knapsack would say 3.5. In 3: one of each (1 + 3).
    items two{{1, 0.5}, {1, 1}, {2, 3}, {2, 1}};
    CHECK(forward_work_within(two, 2.5) == 3);
    two = {{1, 0.5}, {1, 1}, {2, 3}, {2, 1}};
    CHECK(forward_work_within(two, 3) == 4);
    // Three sizes: the fractional knapsack by work per activation (3 + half of a 1 per unit).
    items three{{1, 1}, {2, 3}, {3, 3}};
    CHECK(forward_work_within(three, 2.5) == Approx(3.5));
    items none;
    CHECK(forward_work_within(none, 10) == 0);
}

TEST_CASE("rank relaxation: room for one microbatch, derived by hand", "[lower_bound]") {
    // 2 ranks, 3 microbatches, unit F, I and W, message time 0.5, room for one activation.
    // Rank 0 alone: F(0, j) may start only after W(0, j - 1) freed the room, and I(0, j) only
    // after F(0, j), the message, F and I on rank 1 and the message back: 1 + 0.5 + 2 + 0.5.
    // So each microbatch takes 1 + 3 + 1 + 1 = 6 and the rank ends at 18. Rank 1 alone:
    // F(1, j) after F(0, j) and the message (1.5 + j at the earliest) and after W(1, j - 1);
    // F I W back to back from 1.5, so its last I ends at 9.5, and 0.5 + I(0) + W(0) follow: 12.
    namespace dt = ppsched::detail::tune;
    tune_problem prob;
    prob.ranks = 2;
    prob.microbatches = 3;
    prob.memory_limit = 1;
    prob.costs.p2p_latency = 0.5;
    const dt::model m = dt::make_model(prob);
    dt::rank_relaxation rank0(m, 0), rank1(m, 1);
    const auto r0 = rank0.solve(std::numeric_limits<double>::infinity(), 1'000'000);
    const auto r1 = rank1.solve(std::numeric_limits<double>::infinity(), 1'000'000);
    CHECK(r0.complete);
    CHECK(r0.value == Approx(18).epsilon(1e-12));
    CHECK(r1.complete);
    CHECK(r1.value == Approx(12).epsilon(1e-12));
    // The whole problem reaches 18 (rank 1 keeps up), so tune proves it optimal.
    const auto t = ppsched::tune(prob);
    CHECK(t.makespan == Approx(18).epsilon(1e-12));
    CHECK(t.gap == 0);
    // Actions of no duration (W free here, I on one stage): still at most the optimum, and
    // with one rank exactly it.
    for (const int ranks : {1, 2}) {
        tune_problem zero;
        zero.ranks = ranks;
        zero.microbatches = 2;
        zero.stages_per_rank = 3 - ranks;
        zero.costs.per_stage.resize(2);
        for (auto& st : zero.costs.per_stage) st.backward_weight = 0;
        zero.costs.per_stage[1].backward_input = 0;
        const auto least = ppsched::lower_bound(zero).least_memory;
        zero.memory_limit = *std::max_element(least.begin(), least.end());
        const double optimum = ppsched_test::exhaustive_optimum(zero);
        const dt::model zm = dt::make_model(zero);
        double relaxed = 0;
        for (int r = 0; r < ranks; ++r) {
            dt::rank_relaxation rel(zm, r);
            const auto x = rel.solve(std::numeric_limits<double>::infinity(), 1'000'000);
            REQUIRE(x.complete);
            CHECK(x.value <= optimum * (1 + 1e-9));
            relaxed = std::max(relaxed, x.value);
        }
        if (ranks == 1) CHECK(relaxed == Approx(optimum).epsilon(1e-12));
    }
    // Memory summed exactly as simulate sums it, and compared by the memo: with large
    // activations and I freeing a tenth, the same actions freed in another order leave another
    // rounding residue, so at the limit (the least any order needs) one prefix fits its next
    // forward and the other does not. A memo that ignored memory let the one that does not fit
    // dominate the one that does, and the relaxation claimed infinity.
    {
        tune_problem big;
        big.ranks = 1;
        big.microbatches = 2;
        big.stages_per_rank = 2;
        big.costs.input_grad_frees = 0.1;
        big.costs.per_stage.resize(2);
        const double f[] = {1.25, 1}, in[] = {0.5, 0.75}, act[] = {552826608, 413681404};
        for (std::size_t i = 0; i < 2; ++i) {
            big.costs.per_stage[i].forward = f[i];
            big.costs.per_stage[i].backward_input = in[i];
            big.costs.per_stage[i].backward_weight = 1;
            big.costs.per_stage[i].activation = act[i];
        }
        big.memory_limit = 552826608.0 + 413681404.0;
        const double optimum = ppsched_test::exhaustive_optimum(big);
        const dt::model bm = dt::make_model(big);
        dt::rank_relaxation rel(bm, 0);
        const auto x = rel.solve(std::numeric_limits<double>::infinity(), 1'000'000);
        CHECK(x.complete);
        CHECK(x.value == Approx(optimum).epsilon(1e-12));
    }
    // The memory ramp where the work before the last forward equals what fits before the
    // first free (v, fused, one microbatch, forwards of no duration): comparing the two sums
    // without a margin once put the bound at 11.8 above the optimum 8.5.
    {
        tune_problem v;
        v.ranks = 2;
        v.microbatches = 1;
        v.stages_per_rank = 2;
        v.placement = ppsched::stage_placement::v;
        v.backward = ppsched::backward_mode::fused;
        v.costs.p2p_latency = 0.279693;
        v.costs.per_stage.resize(4);
        const double f[] = {0, 1.9094666237026265, 0, 1.7623628376088289};
        const double b[] = {1, 1.7044100588162481, 0, 1};
        const double a[] = {1, 2, 1, 2};
        const double w[] = {0, 0.66585326713774684, 0.8545645771304381, 0.58960433411440782};
        for (std::size_t i = 0; i < 4; ++i) {
            v.costs.per_stage[i].forward = f[i];
            v.costs.per_stage[i].full_backward = b[i];
            v.costs.per_stage[i].activation = a[i];
            v.costs.per_stage[i].parameters = w[i];
        }
        v.memory_limit = 4.5204178442681844;
        const double optimum = ppsched_test::exhaustive_optimum(v);
        CHECK(ppsched::lower_bound(v).value <= optimum * (1 + 1e-9));
    }
    // A budget too small to finish says so.
    ppsched::tune_problem wide = prob;
    wide.ranks = 4;
    wide.microbatches = 8;
    wide.stages_per_rank = 2;
    wide.memory_limit = 5.5;
    const dt::model wide_model = dt::make_model(wide);
    dt::rank_relaxation small(wide_model, 1);
    const auto cut = small.solve(std::numeric_limits<double>::infinity(), 10);
    CHECK_FALSE(cut.complete);
}
