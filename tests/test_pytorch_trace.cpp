// io/pytorch_trace.hpp: reading the PP:<action> spans of PyTorch profiler traces. The traces
// below are written by hand in the event format torch.profiler writes (name, ph, ts, dur, pid,
// tid, cat, args).
#include <catch2/catch.hpp>

#include <ppsched/io/pytorch_trace.hpp>

#include <string>
#include <vector>

using ppsched::action;
using ppsched::io::measured_trace;
using ppsched::io::read_pytorch_trace;
using ppsched::io::trace_side;
using ppsched::io::trace_text;

namespace {

// Rank 0 of a 2-rank 1F1B step with one microbatch, with profiler noise around it: an ATen op,
// a ProfilerStep span, a metadata event, and GPU twins of every action.
const std::string rank0 = R"({
  "schemaVersion": 1,
  "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 2},
  "traceEvents": [
    {"name": "process_name", "ph": "M", "pid": 4242, "tid": 0, "args": {"name": "python"}},
    {"name": "ProfilerStep#3", "ph": "X", "ts": 990, "dur": 500, "pid": 4242, "tid": 4242,
     "cat": "user_annotation", "args": {"External id": 1}},
    {"name": "PP:0F0", "ph": "X", "ts": 1000, "dur": 100, "pid": 4242, "tid": 4242,
     "cat": "user_annotation", "args": {"External id": 2}},
    {"name": "aten::mm", "ph": "X", "ts": 1010, "dur": 50, "pid": 4242, "tid": 4242,
     "cat": "cpu_op", "args": {"External id": 3}},
    {"name": "PP:0SEND_F0", "ph": "X", "ts": 1100, "dur": 5, "pid": 4242, "tid": 4242,
     "cat": "user_annotation", "args": {"External id": 4}},
    {"name": "PP:0RECV_B0", "ph": "X", "ts": 1105, "dur": 5, "pid": 4242, "tid": 4242,
     "cat": "user_annotation", "args": {"External id": 5}},
    {"name": "PP:0B0", "ph": "X", "ts": 1110, "dur": 300, "pid": 4242, "tid": 4242,
     "cat": "user_annotation", "args": {"External id": 6}},
    {"name": "PP:0F0", "ph": "X", "ts": 1020, "dur": 90, "pid": 0, "tid": 7,
     "cat": "gpu_user_annotation", "args": {"External id": 2}},
    {"name": "PP:0B0", "ph": "X", "ts": 1300, "dur": 150, "pid": 0, "tid": 7,
     "cat": "gpu_user_annotation", "args": {"External id": 6}}
  ],
  "traceName": "rank0.json"
})";

// Rank 1: CPU spans only.
const std::string rank1 = R"({
  "distributedInfo": {"backend": "nccl", "rank": 1, "world_size": 2},
  "traceEvents": [
    {"name": "PP:1RECV_F0", "ph": "X", "ts": 1000, "dur": 4, "pid": 4343, "tid": 4343,
     "cat": "user_annotation", "args": {}},
    {"name": "PP:1F0", "ph": "X", "ts": 1004, "dur": 200, "pid": 4343, "tid": 4343,
     "cat": "user_annotation", "args": {}},
    {"name": "PP:1B0", "ph": "X", "ts": 1204, "dur": 100, "pid": 4343, "tid": 4343,
     "cat": "user_annotation", "args": {}},
    {"name": "PP:1SEND_B0", "ph": "X", "ts": 1304, "dur": 3, "pid": 4343, "tid": 4343,
     "cat": "user_annotation", "args": {}}
  ]
})";

measured_trace read(std::vector<trace_text> files) { return read_pytorch_trace(files); }

std::string error_of(std::vector<trace_text> files) {
    try {
        (void)read_pytorch_trace(files);
    } catch (const ppsched::parse_error& e) {
        return std::string("parse_error: ") + e.what();
    } catch (const ppsched::config_error& e) {
        return std::string("config_error: ") + e.what();
    }
    return "no error";
}

// One event of rank `pid`'s CPU in a one-line trace.
std::string ev(const std::string& name, double ts, double dur, int pid,
               const std::string& extra = "") {
    return R"({"name": ")" + name + R"(", "ph": "X", "ts": )" + std::to_string(ts) +
           R"(, "dur": )" + std::to_string(dur) + R"(, "pid": )" + std::to_string(pid) +
           R"(, "tid": 1, "cat": "user_annotation", "args": {)" + extra + "}}";
}

} // namespace

TEST_CASE("a trace per rank reads each rank's pipeline actions in order", "[pytorch_trace]") {
    const measured_trace t = read({{rank1, "r1.json"}, {rank0, "r0.json"}});
    REQUIRE(t.ranks.size() == 2);
    // distributedInfo.rank wins over the file order.
    REQUIRE(t.ranks[0].size() == 4);
    CHECK(t.ranks[0][0].act == action::forward(0, 0));
    CHECK(t.ranks[0][1].act == action::send_f(0, 0));
    CHECK(t.ranks[0][3].act == action::full_backward(0, 0));
    CHECK(t.sources[0] == "r0.json");
    REQUIRE(t.ranks[1].size() == 4);
    CHECK(t.ranks[1][0].act == action::recv_f(1, 0));
    CHECK(t.ranks[1][2].start == 1204);
    CHECK(t.ranks[1][2].end == 1304);
    // The ATen op, the ProfilerStep span and the metadata event are ignored, and counted.
    CHECK(t.ignored_events == 3);
}

TEST_CASE("the GPU twins are used when every compute of a rank has one", "[pytorch_trace]") {
    const measured_trace t = read({{rank0, "r0.json"}, {rank1, "r1.json"}});
    CHECK(t.side[0] == trace_side::gpu);
    CHECK(t.side[1] == trace_side::cpu);
    // Compute times from the GPU; the SEND/RECV have no twin and keep their CPU times.
    CHECK(t.ranks[0][0].start == 1020);
    CHECK(t.ranks[0][0].end == 1110);
    CHECK(t.ranks[0][3].start == 1300);
    CHECK(t.ranks[0][1].start == 1100);
    bool said = false;
    for (const auto& n : t.notes) said = said || n.find("rank 0 (r0.json): GPU side") == 0;
    CHECK(said);
}

TEST_CASE("a rank with some computes lacking a GPU twin is read from the CPU side",
          "[pytorch_trace]") {
    std::string partial = rank0;
    // Drop the twin of 0B0.
    const auto at = partial.find(R"({"name": "PP:0B0", "ph": "X", "ts": 1300)");
    REQUIRE(at != std::string::npos);
    partial.erase(partial.rfind(',', at),
                  partial.find('}', partial.find('}', at) + 1) + 1 - partial.rfind(',', at));
    const measured_trace t = read({{partial, "r0.json"}, {rank1, "r1.json"}});
    CHECK(t.side[0] == trace_side::cpu);
    CHECK(t.ranks[0][0].start == 1000);
    bool said = false;
    for (const auto& n : t.notes)
        said = said || n.find("only 1 of 2 computes") != std::string::npos;
    CHECK(said);
}

TEST_CASE("GPU twins without External id match by name and occurrence", "[pytorch_trace]") {
    const std::string text = R"({"distributedInfo": {"rank": 0, "world_size": 1}, "traceEvents": [
      {"name": "PP:0F0", "ph": "X", "ts": 10, "dur": 5, "pid": 1, "tid": 1, "cat": "user_annotation"},
      {"name": "PP:0F1", "ph": "X", "ts": 20, "dur": 5, "pid": 1, "tid": 1, "cat": "user_annotation"},
      {"name": "PP:0F1", "ph": "X", "ts": 31, "dur": 2, "pid": 0, "tid": 7, "cat": "gpu_user_annotation"},
      {"name": "PP:0F0", "ph": "X", "ts": 12, "dur": 3, "pid": 0, "tid": 7, "cat": "gpu_user_annotation"}
    ]})";
    const measured_trace t = read({{text, "one.json"}});
    CHECK(t.side[0] == trace_side::gpu);
    CHECK(t.ranks[0][0].start == 12);
    CHECK(t.ranks[0][1].start == 31);
}

TEST_CASE("a merged trace numbers its processes as ranks in pid order", "[pytorch_trace]") {
    const std::string merged = "[" + ev("PP:1F0", 5, 1, 300) + ",\n" + ev("PP:0F0", 1, 1, 200) +
                               ",\n" + ev("aten::add", 1, 1, 200) + "]";
    const measured_trace t = read({{merged, "merged.json"}});
    REQUIRE(t.ranks.size() == 2);
    CHECK(t.ranks[0][0].act == action::forward(0, 0));
    CHECK(t.ranks[1][0].act == action::forward(1, 0));
    CHECK(t.sources[1] == "merged.json (pid 300)");
    CHECK(t.ignored_events == 1);
}

TEST_CASE("args.rank places an event on its rank", "[pytorch_trace]") {
    const std::string merged = R"({"traceEvents": [)" + ev("PP:1F0", 5, 1, 7, R"("rank": 1)") +
                               ",\n" + ev("PP:0F0", 1, 1, 7, R"("rank": 0)") + "]}";
    const measured_trace t = read({{merged, "merged.json"}});
    REQUIRE(t.ranks.size() == 2);
    CHECK(t.ranks[1][0].act == action::forward(1, 0));
}

TEST_CASE("files without rank information are ranks in file order", "[pytorch_trace]") {
    const measured_trace t = read({{"[" + ev("PP:0F0", 1, 1, 9) + "]", "a.json"},
                                   {"[" + ev("PP:1F0", 1, 1, 9) + "]", "b.json"}});
    REQUIRE(t.ranks.size() == 2);
    CHECK(t.sources[1] == "b.json");
    CHECK(t.ranks[1][0].act == action::forward(1, 0));
}

TEST_CASE("a missing rank is a config_error naming it", "[pytorch_trace]") {
    auto with_rank = [](int r, int world) {
        return R"({"distributedInfo": {"rank": )" + std::to_string(r) + R"(, "world_size": )" +
               std::to_string(world) + R"(}, "traceEvents": [)" +
               ev("PP:" + std::to_string(r) + "F0", 1, 1, r) + "]}";
    };
    CHECK_THAT(error_of({{with_rank(0, 3), "r0"}, {with_rank(2, 3), "r2"}}),
               Catch::StartsWith("config_error") && Catch::Contains("missing rank(s) 1 of 3"));
    // world_size says 3, only two files.
    CHECK_THAT(error_of({{with_rank(0, 3), "r0"}, {with_rank(1, 3), "r1"}}),
               Catch::Contains("missing rank(s) 2 of 3"));
    // The same rank twice.
    CHECK_THAT(error_of({{with_rank(1, 2), "a"}, {with_rank(1, 2), "b"}}),
               Catch::Contains("rank 1 appears in both a and b"));
    // A rank at or above the stated world size is named as such, not as missing ranks below.
    CHECK_THAT(error_of({{with_rank(0, 2), "r0"}, {with_rank(5, 2), "r5"}}),
               Catch::StartsWith("config_error") &&
                   Catch::Contains("r5 holds rank 5, not below the world_size 2"));
    // Files that disagree on the world size.
    CHECK_THAT(error_of({{with_rank(0, 2), "r0"}, {with_rank(1, 4), "r1"}}),
               Catch::Contains("r0 states world_size 2 but r1 states 4"));
    // A world of no rank, and a negative rank, each said as it is.
    CHECK_THAT(error_of({{with_rank(0, 0), "zero.json"}}),
               Catch::StartsWith("parse_error: zero.json:") &&
                   Catch::Contains("world_size of at least 1"));
    CHECK_THAT(error_of({{with_rank(-1, 2), "neg.json"}}),
               Catch::StartsWith("parse_error: neg.json:") && Catch::Contains("found -1"));
}

TEST_CASE("a trace without pipeline actions is a config_error", "[pytorch_trace]") {
    CHECK_THAT(error_of({{"[" + ev("aten::mm", 1, 1, 1) + "]", "plain.json"}}),
               Catch::StartsWith("config_error") && Catch::Contains("no pipeline action"));
}

TEST_CASE("a truncated trace is a parse_error that says so", "[pytorch_trace]") {
    for (std::size_t cut : {rank0.size() / 3, rank0.size() / 2, rank0.size() - 3}) {
        const std::string msg = error_of({{rank0.substr(0, cut), "cut.json"}, {rank1, "r1.json"}});
        INFO(msg);
        CHECK_THAT(msg, Catch::StartsWith("parse_error: cut.json:") &&
                            Catch::Contains("(the file is truncated)"));
    }
}

TEST_CASE("malformed pipeline events are parse_errors with their position", "[pytorch_trace]") {
    auto one = [](const std::string& event) {
        return error_of({{"[\n" + event + "\n]", "bad.json"}});
    };
    CHECK_THAT(one(R"({"name": "PP:0F0", "ph": "B", "ts": 1, "pid": 1, "tid": 1,
                       "cat": "user_annotation"})"),
               Catch::StartsWith("parse_error: bad.json:2:") && Catch::Contains("complete event"));
    CHECK_THAT(one(R"({"name": "PP:2X0", "ph": "X", "ts": 1, "dur": 1, "pid": 1, "tid": 1,
                       "cat": "user_annotation"})"),
               Catch::StartsWith("parse_error: bad.json:2:") &&
                   Catch::Contains("invalid action '2X0'"));
    CHECK_THAT(one(R"({"name": "PP:0F0", "ph": "X", "ts": "1", "dur": 1, "pid": 1,
                       "cat": "user_annotation"})"),
               Catch::Contains("expected a number for 'ts'"));
    CHECK_THAT(one(R"({"name": "PP:0F0", "ph": "X", "ts": 1, "pid": 1,
                       "cat": "user_annotation"})"),
               Catch::Contains("expected a 'dur' member"));
    CHECK_THAT(one(R"({"name": "PP:0F0", "ph": "X", "ts": 1, "dur": -2, "pid": 1,
                       "cat": "user_annotation"})"),
               Catch::Contains("'dur' >= 0"));
    CHECK_THAT(one(R"({"name": "PP:0F0", "ph": "X", "ts": 1, "dur": 2, "pid": 1,
                       "cat": "user_annotation", "args": {"rank": -1}})"),
               Catch::Contains("non-negative integer (at most 10^6) for args.'rank', found -1"));
    CHECK_THAT(one(R"(42)"), Catch::Contains("expected an event (an object)"));
    CHECK_THAT(error_of({{R"({"traceEvents": 3})", "bad.json"}}),
               Catch::Contains("expected an array for 'traceEvents'"));
    CHECK_THAT(error_of({{R"({"events": []})", "bad.json"}}),
               Catch::Contains("expected a 'traceEvents' array"));
    CHECK_THAT(error_of({{R"("text")", "bad.json"}}), Catch::Contains("expected a trace"));
    CHECK_THAT(error_of({{"", "empty.json"}}), Catch::StartsWith("parse_error: empty.json:1:1"));
}

TEST_CASE("events that only look like pipeline actions are ignored", "[pytorch_trace]") {
    // A python_function event named PP:... and a PP: instant of another category.
    const std::string text = "[" + ev("PP:0F0", 1, 1, 1) +
                             R"(, {"name": "PP:0F0", "ph": "X", "ts": 1, "dur": 1, "pid": 1,
                                  "tid": 1, "cat": "python_function"},
                               {"name": "PP:garbage", "ph": "i", "ts": 1, "pid": 1,
                                "cat": "instant"}])";
    const measured_trace t = read({{text, "t.json"}});
    CHECK(t.ranks[0].size() == 1);
    CHECK(t.ignored_events == 2);
}

TEST_CASE("write_pytorch_trace reads back to the same actions", "[pytorch_trace]") {
    const std::vector<ppsched::io::measured_action> r0{{action::forward(0, 0), 10.5, 20.25},
                                                       {action::send_f(0, 0), 20.25, 21}};
    const std::vector<ppsched::io::measured_action> r1{{action::recv_f(1, 0), 3, 4},
                                                       {action::forward(1, 0), 22, 30.125}};
    // Given in the other order: distributedInfo carries the rank.
    const measured_trace t = read({{ppsched::io::write_pytorch_trace(r1, 1, 2), "1"},
                                   {ppsched::io::write_pytorch_trace(r0, 0, 2), "0"}});
    REQUIRE(t.ranks.size() == 2);
    CHECK(t.ranks[0] == r0);
    CHECK(t.ranks[1] == r1);
}

TEST_CASE("a trace says when its spans start after the input waits", "[pytorch_trace]") {
    const std::vector<ppsched::io::measured_action> r0{{action::forward(0, 0), 1, 2}};
    CHECK(read({{ppsched::io::write_pytorch_trace(r0, 0, 1), "own"}}).spans_after_input_waits);
    const std::string own = ppsched::io::write_pytorch_trace(r0, 0, 2); // with rank 1 below
    // PyTorch's traces do not; and all files must say it.
    CHECK_FALSE(read({{rank0, "r0"}, {rank1, "r1"}}).spans_after_input_waits);
    const std::vector<ppsched::io::measured_action> r1{{action::forward(1, 0), 3, 4}};
    CHECK_FALSE(
        read({{own, "own"}, {"[" + ev("PP:1F0", 3, 1, 1) + "]", "torch"}}).spans_after_input_waits);
    CHECK(read({{own, "own"}, {ppsched::io::write_pytorch_trace(r1, 1, 2), "own1"}})
              .spans_after_input_waits);
}

TEST_CASE("every truncation of a trace is a parse_error, never a crash", "[pytorch_trace]") {
    // A short cut can still be valid JSON only at the very end (nothing is optional before it).
    std::size_t errors = 0;
    for (std::size_t cut = 0; cut + 1 < rank1.size(); ++cut) {
        const std::string msg = error_of({{rank1.substr(0, cut), "cut.json"}});
        if (msg.rfind("parse_error: cut.json:", 0) == 0) ++errors;
    }
    // Only cuts inside the trailing white space after the closing brace read fine.
    CHECK(errors >= rank1.size() - 3);
}

TEST_CASE("a merged trace with args.rank pairs each rank's GPU twins by External id",
          "[pytorch_trace]") {
    // Two ranks in one file, both on device 0 in their own process; External ids are per
    // process and collide, the rank tells them apart through the name check.
    const std::string text = R"({"traceEvents": [
      {"name": "PP:0F0", "ph": "X", "ts": 10, "dur": 5, "pid": 11, "tid": 11,
       "cat": "user_annotation", "args": {"External id": 1, "rank": 0}},
      {"name": "PP:1F0", "ph": "X", "ts": 20, "dur": 5, "pid": 22, "tid": 22,
       "cat": "user_annotation", "args": {"External id": 1, "rank": 1}},
      {"name": "PP:0F0", "ph": "X", "ts": 11, "dur": 3, "pid": 0, "tid": 7,
       "cat": "gpu_user_annotation", "args": {"External id": 1, "rank": 0}},
      {"name": "PP:1F0", "ph": "X", "ts": 22, "dur": 2, "pid": 0, "tid": 7,
       "cat": "gpu_user_annotation", "args": {"External id": 1, "rank": 1}}
    ]})";
    const measured_trace t = read({{text, "merged.json"}});
    REQUIRE(t.ranks.size() == 2);
    CHECK(t.side[0] == trace_side::gpu);
    CHECK(t.side[1] == trace_side::gpu);
    CHECK(t.ranks[0][0].start == 11);
    CHECK(t.ranks[1][0].start == 22);
    CHECK(t.ranks[1][0].end == 24);
}
