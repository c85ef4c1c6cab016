#include <ppsched/algorithms/lower.hpp>
#include <ppsched/algorithms/simulate.hpp>
#include <ppsched/algorithms/validate.hpp>
#include <ppsched/generate.hpp>
#include <ppsched/io/csv.hpp>
#include <ppsched/schedules/interleaved_1f1b.hpp>
#include <ppsched/transport.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using ppsched::transport;

TEST_CASE("transport names round-trip", "[transport]") {
    STATIC_REQUIRE(ppsched::to_string_view(transport::eager) == "eager");
    STATIC_REQUIRE(ppsched::to_string_view(transport::rendezvous) == "rendezvous");
    transport t = transport::eager;
    CHECK(ppsched::parse_transport("rendezvous", t));
    CHECK(t == transport::rendezvous);
    CHECK_FALSE(ppsched::parse_transport("nccl", t));
    CHECK(t == transport::rendezvous);
}

TEST_CASE("PyTorch's lowering passes under both transports", "[transport]") {
    const ppsched::config cfg{.ranks = 2, .stages_per_rank = 2, .microbatches = 4};
    const auto o = ppsched::lower(ppsched::generate<ppsched::interleaved_1f1b>(cfg));
    CHECK(ppsched::validate(o));
    CHECK(ppsched::validate(o, {.transport = transport::rendezvous}));
}

TEST_CASE("rendezvous finds a send that waits for a receive its peer never reaches",
          "[transport]") {
    // Rank 0 sends 0SEND_F1 before it posts 0RECV_B0; rank 1 sends 1SEND_B0 before it posts
    // 1RECV_F1: with buffered sends both go on, with rendezvous each waits on the other.
    const char* text = "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1\n"
                       "1RECV_F0,1F0,1B0,1SEND_B0,1RECV_F1,1F1,1B1,1SEND_B1\n";
    const auto o = ppsched::io::read_csv(text);
    CHECK(ppsched::validate(o));
    const auto report = ppsched::validate(o, {.transport = transport::rendezvous});
    REQUIRE(report.count(ppsched::rule::deadlock) == 2);
    const auto& v = *report.find(ppsched::rule::deadlock);
    CHECK(ppsched::to_string(v.subject) == "0SEND_F1");
    CHECK(ppsched::to_string(v.other) == "1RECV_F1");
    CHECK(v.other_rank == 1);
    CHECK(ppsched::describe(v).find("waits forever") != std::string::npos);
    // Compute-only orders have no sends: the same under both.
    const auto compute = ppsched::io::read_csv("0F0,0B0\n1F0,1B0\n");
    CHECK(ppsched::validate(compute, {.transport = transport::rendezvous}));
}

TEST_CASE("simulate under rendezvous reports that deadlock with every rank of the cycle",
          "[transport][simulate]") {
    const ppsched::config cfg{.ranks = 2, .stages_per_rank = 2, .microbatches = 4};
    const auto deferred =
        ppsched::lower(ppsched::generate<ppsched::interleaved_1f1b>(cfg), {.defer_recv = true});
    CHECK(ppsched::simulate(deferred));
    const auto sim = ppsched::simulate(deferred, {}, {.transport = transport::rendezvous});
    CHECK(sim.status == ppsched::simulation_status::deadlock);
    REQUIRE(sim.stuck.size() == 2);
    CHECK(sim.stuck[0].waiting_rank == sim.stuck[1].rank);
    CHECK(sim.stuck[1].waiting_rank == sim.stuck[0].rank);
    CHECK(ppsched::describe_problem(sim).find("SEND_F") != std::string::npos);
}
