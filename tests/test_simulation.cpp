#include <ppsched/simulation.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <string_view>

using ppsched::action;
using ppsched::action_kind;
using ppsched::rank_summary;
using ppsched::simulation;
using ppsched::simulation_status;
using ppsched::stream;
using ppsched::stream_of;

namespace {

// Two ranks: rank 0 busy 3 of 4, rank 1 busy 1 of 4, with parameters on rank 1.
constexpr simulation two_ranks() {
    simulation s;
    s.makespan = 4;
    s.ranks.push_back(rank_summary{.rank = 0, .busy = 3, .peak_activations = 2});
    s.ranks.push_back(rank_summary{.rank = 1, .busy = 1, .peak_activations = 1, .parameters = 5});
    ppsched::detail::summarize_ranks(s);
    return s;
}

} // namespace

TEST_CASE("each action kind runs on its stream", "[simulation]") {
    STATIC_REQUIRE(stream_of(action_kind::forward) == stream::compute);
    STATIC_REQUIRE(stream_of(action_kind::overlap_f_b) == stream::compute);
    STATIC_REQUIRE(stream_of(action_kind::unshard) == stream::comm);
    STATIC_REQUIRE(stream_of(action_kind::reduce_grad) == stream::comm);
    STATIC_REQUIRE(stream_of(action_kind::send_f) == stream::p2p);
    STATIC_REQUIRE(stream_of(action_kind::recv_b) == stream::p2p);
}

TEST_CASE("a stream has a name, as a view and as a C string", "[simulation]") {
    STATIC_REQUIRE(to_string_view(stream::compute) == "compute");
    STATIC_REQUIRE(to_string_view(stream::comm) == "comm");
    STATIC_REQUIRE(to_string_view(stream::p2p) == "p2p");
    CHECK(std::string(to_chars(stream::comm)) == std::string(to_string_view(stream::comm)));
}

TEST_CASE("the summary arithmetic derives idle time, bubble and memory from busy time",
          "[simulation]") {
    STATIC_REQUIRE(two_ranks().total_compute == 4);
    STATIC_REQUIRE(two_ranks().ideal == 2);
    STATIC_REQUIRE(two_ranks().bubble_fraction == 0.5);
    STATIC_REQUIRE(two_ranks().bubble_ratio == 1);
    STATIC_REQUIRE(two_ranks().ranks[0].idle == 1);
    STATIC_REQUIRE(two_ranks().ranks[1].bubble_fraction == 0.75);
    STATIC_REQUIRE(two_ranks().ranks[1].peak_memory == 6);
}

TEST_CASE("a summary of no ranks stays zero", "[simulation]") {
    simulation s;
    ppsched::detail::summarize_ranks(s);
    CHECK(s.ideal == 0);
    CHECK(s.bubble_fraction == 0);
}

TEST_CASE("a failed simulation describes itself in one line", "[simulation]") {
    simulation s;
    CHECK(describe_problem(s).empty());
    s.status = simulation_status::invalid;
    s.problem = {1, 3, action::forward(1, 0), "stage out of range for the configuration"};
    CHECK(describe_problem(s) == "invalid: rank 1 slot 3 (1F0): stage out of range for the "
                                 "configuration");
    s.status = simulation_status::deadlock;
    s.stuck.push_back({0, 2, action::forward(0, 1), action::full_backward(1, 1), 1});
    CHECK(describe_problem(s) == "deadlock: rank 0 waits at slot 2 (0F1) for 1B1 (or 1I1) on "
                                 "rank 1");
}
