#include <ppsched/algorithms/defer_recv.hpp>
#include <ppsched/algorithms/lower.hpp>
#include <ppsched/algorithms/validate.hpp>
#include <ppsched/generate.hpp>
#include <ppsched/io/csv.hpp>
#include <ppsched/registry.hpp>
#include <ppsched/schedules/interleaved_1f1b.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

using ppsched::config;
using ppsched::transport;

namespace {

// The actions of row `r` as text.
std::vector<std::string> row_text(const ppsched::order& o, int r) {
    std::vector<std::string> out;
    for (const auto& s : o[static_cast<std::size_t>(r)])
        if (s) out.push_back(ppsched::to_string(*s));
    return out;
}

// True when `row` holds `run` as consecutive actions.
bool has_run(const std::vector<std::string>& row, const std::vector<std::string>& run) {
    return std::search(row.begin(), row.end(), run.begin(), run.end()) != row.end();
}

// Every action of an order, sorted (to compare what two lowerings contain).
std::vector<std::string> multiset(const ppsched::order& o) {
    std::vector<std::string> out;
    for (int r = 0; r < o.cfg().ranks; ++r) {
        auto row = row_text(o, r);
        out.insert(out.end(), row.begin(), row.end());
    }
    std::sort(out.begin(), out.end());
    return out;
}

} // namespace

TEST_CASE("deferring receives rebuilds the hang of PyTorch issue 172668", "[defer_recv]") {
    // The thread (pp=2, total_stages=4, receives deferred to their consumers by the proposed
    // patch) reports, stuck on two nodes:
    //   rank 0: [... 0SendF1, 2RecvF0, 2F0]   rank 1: [... 1SendF0, 1RecvF1, 1F1]
    const config cfg{.ranks = 2, .stages_per_rank = 2, .microbatches = 4};
    const auto compute = ppsched::generate<ppsched::interleaved_1f1b>(cfg);
    const auto deferred = ppsched::lower(compute, {.defer_recv = true});
    CHECK(has_run(row_text(deferred, 0), {"0SEND_F1", "2RECV_F0", "2F0"}));
    CHECK(has_run(row_text(deferred, 1), {"1SEND_F0", "1RECV_F1", "1F1"}));
    // Fine with buffered sends (why it worked on one node) ...
    CHECK(ppsched::validate(deferred));
    // ... a cycle of the two ranks, each at its send, when a send waits for its receive.
    const auto report = ppsched::validate(deferred, {.transport = transport::rendezvous});
    REQUIRE(report.count(ppsched::rule::deadlock) == 2);
    std::vector<std::string> waiting;
    for (const auto& v : report) {
        if (v.what != ppsched::rule::deadlock) continue;
        waiting.push_back(ppsched::to_string(v.subject) + " on " + std::to_string(v.rank));
    }
    std::sort(waiting.begin(), waiting.end());
    CHECK(waiting == std::vector<std::string>{"0SEND_F1 on 0", "1SEND_F0 on 1"});
}

TEST_CASE("defer_recv puts each receive right before its consumer", "[defer_recv]") {
    // (With rendezvous each SEND+RECV pair is placed at its consumer's simulated start.)
    const config cfg{.ranks = 2, .stages_per_rank = 2, .microbatches = 4};
    const auto lowered = ppsched::lower(ppsched::generate<ppsched::interleaved_1f1b>(cfg));
    for (transport t : {transport::eager, transport::rendezvous}) {
        const auto d = ppsched::defer_recv(lowered, t);
        CHECK(multiset(d) == multiset(lowered));
        for (int r = 0; r < 2; ++r) {
            const auto row = row_text(d, r);
            for (std::size_t i = 0; i < row.size(); ++i) {
                const auto& a = row[i];
                const auto at = a.find("RECV_");
                if (at == std::string::npos) continue;
                // 2RECV_F0 -> 2F0, 1RECV_B3 -> 1B3 (compute here is F and B only).
                const std::string consumer = a.substr(0, at) + a.substr(at + 5);
                // Eager: the very next action. Rendezvous: only SENDs of pairs placed at the
                // same instant may come between.
                std::size_t j = i + 1;
                while (t == transport::rendezvous && j < row.size() &&
                       row[j].find("SEND_") != std::string::npos)
                    ++j;
                REQUIRE(j < row.size());
                CHECK(row[j] == consumer);
            }
        }
    }
}

TEST_CASE("defer_recv refuses an order that is not valid", "[defer_recv]") {
    const auto o =
        ppsched::io::read_csv("0F0,0SEND_F0,0RECV_B0,0B0\n1F0,1B0,1SEND_B0\n"); // no 1RECV_F0
    CHECK_THROWS_AS(ppsched::defer_recv(o), ppsched::config_error);
}

TEST_CASE("every built-in schedule lowers without a rendezvous deadlock, deferred or not",
          "[defer_recv][transport][general]") {
    // The conformance grid and the sizes beyond it (odd ranks, odd stages per rank and
    // microbatches). PyTorch's placement is safe under rendezvous; the deferred one is safe
    // when asked for rendezvous (each SEND moves with its RECV), whatever the schedule.
    std::size_t orders = 0, eager_only = 0;
    for (const auto& entry : ppsched::builtin_schedules().entries()) {
        for (int ranks : {1, 2, 3, 4, 5, 6, 8}) {
            for (int spr : {1, 2, 3, 4, 5}) {
                for (int mb : {1, 2, 3, 4, 5, 7, 8, 12, 16}) {
                    const config cfg{.ranks = ranks, .stages_per_rank = spr, .microbatches = mb};
                    ppsched::order o;
                    try {
                        o = ppsched::builtin_schedules().generate(entry.name, cfg);
                    } catch (const ppsched::config_error&) {
                        continue;
                    }
                    INFO(entry.name << " ranks " << ranks << " spr " << spr << " mb " << mb);
                    const ppsched::validate_options rdv{.transport = transport::rendezvous};
                    const auto plain = ppsched::lower(o);
                    if (auto r = ppsched::validate(plain, rdv); !r)
                        FAIL_CHECK(ppsched::to_string(r));
                    const auto safe =
                        ppsched::lower(o, {.defer_recv = true, .transport = transport::rendezvous});
                    if (auto r = ppsched::validate(safe, rdv); !r)
                        FAIL_CHECK(ppsched::to_string(r));
                    CHECK(ppsched::validate(safe));
                    CHECK(multiset(safe) == multiset(plain));
                    // How often deferring receives alone would hang (the reason for pairing).
                    if (!ppsched::validate(ppsched::lower(o, {.defer_recv = true}), rdv))
                        ++eager_only;
                    ++orders;
                }
            }
        }
    }
    CHECK(orders > 1000);
    CHECK(eager_only > 0);
}
