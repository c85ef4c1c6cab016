#pragma once
/// \file io/pytorch_trace.hpp
/// Measured runs in PyTorch's profiler form: the Chrome trace event JSON that
/// `torch.profiler` writes (one file per rank, or one merged file), of which only the spans of
/// executed pipeline actions are read. PyTorch's pipelining runtime wraps every action in
/// `record_function("PP:" + action)`, so a run's trace holds complete events like
///
/// ```
/// {"name": "PP:1SEND_F3", "ph": "X", "ts": 1700000000123.5, "dur": 12.25, "pid": 4242,
///  "tid": 4242, "cat": "user_annotation", "args": {"External id": 17}}
/// ```
///
/// and, on a GPU, a `gpu_user_annotation` twin of the same name (same `External id`) that
/// spans the kernels the action launched. The rules (docs/calibration.md has the long form):
/// - Only events whose `name` starts with `PP:` and whose `cat` is `user_annotation` (CPU) or
///   `gpu_user_annotation` (GPU) are read; every other event is ignored (and counted).
/// - A pipeline event must be a complete event (`ph` "X") with numeric `ts` and `dur >= 0`
///   (microseconds) and a name that parses as an action (`PP:2F0`, `PP:0UNSHARD`,
///   `PP:(0F3;3B1)OVERLAP_F_B`); anything else is a `parse_error` naming file, line, column.
/// - Rank of an event: its `args.rank` when present, else the file's top-level
///   `distributedInfo.rank` (what Kineto writes for a distributed job), else the file's
///   position when several files are given (file i = rank i), else, in a single merged file,
///   each CPU process (`pid`) is a rank, numbered in increasing pid order.
/// - GPU side: a rank whose every compute span (F, I, W, B, OVERLAP_F_B) has a GPU twin is
///   read from the GPU side (each action takes its twin's times when it has one) and the result
///   says so; otherwise the CPU side is used (and the result says why). A twin is the GPU event
///   with the same `External id`, or failing ids the same name and occurrence on the same rank.
/// - Ranks must be 0..P-1 without a gap, and when a file states `world_size` (at least 1, the
///   same in every file that states it) every rank below it must be there and none above: a
///   missing or extra rank is a `config_error`. A truncated file is a `parse_error`.
///
/// `write_pytorch_trace` writes one rank's measured actions in the same form (what ppsched's
/// executor records with `action_timeline`), so ppsched's own runs and PyTorch's read alike.

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/error.hpp"
#include "ppsched/io/csv.hpp"
#include "ppsched/io/detail/json.hpp"
#include "ppsched/io/detail/number_text.hpp"

namespace ppsched::io {

/// One executed action: when it started and ended, in microseconds on its rank's clock.
struct measured_action {
    action act;
    double start = 0;
    double end = 0;

    friend bool operator==(const measured_action&, const measured_action&) = default;
};

/// Which events a rank's times come from.
enum class trace_side : std::uint8_t {
    cpu, ///< `user_annotation` spans (the CPU thread that ran the action)
    gpu, ///< `gpu_user_annotation` twins (the device work the action launched)
};

/// The pipeline actions of a measured run.
struct measured_trace {
    /// Per rank, every executed action in execution order (by CPU start time).
    std::vector<std::vector<measured_action>> ranks;
    std::vector<trace_side> side;     ///< per rank
    std::vector<std::string> sources; ///< per rank: the file (and pid) it was read from
    /// Human notes: which side each rank was read from and why, how many events were ignored.
    std::vector<std::string> notes;
    std::size_t ignored_events = 0; ///< events that are not pipeline actions
    /// Every file says (top-level `"ppsched": {"spans_after_input_waits": true}`, as
    /// `write_pytorch_trace` writes) that a compute's span starts after its inputs arrived, as
    /// ppsched's executor records it; PyTorch's spans include the wait.
    bool spans_after_input_waits = false;
};

/// The text of one trace file and the name used in messages.
struct trace_text {
    std::string text;
    std::string source;
};

namespace detail {

namespace json = ppsched::detail::json;

/// A pipeline event as found in a file, before ranks are assigned.
struct raw_pp_event {
    action act;
    double start = 0, end = 0;
    bool gpu = false;
    int rank = -1;      // from args.rank or distributedInfo (-1: not stated)
    double pid = -1;    // for single-file rank inference (a string pid is hashed to -2)
    double ext_id = -1; // args["External id"], -1 when absent
    std::size_t file = 0;
    std::size_t seq = 0; // position in its file, for stable sorting
};

[[noreturn]] inline void trace_fail(std::string_view source, const json::value& v,
                                    const std::string& message) {
    json::parser::fail_at(source, v, message);
}

inline bool is_integer(double v) { return std::isfinite(v) && v == std::floor(v); }

/// A number from the file as text: an integer as digits, anything else (a pid of 1e107, say:
/// no integer type holds it) as the shortest text that reads back to it.
inline std::string number_text(double v) {
    if (is_integer(v) && std::fabs(v) < 9.0e15) return std::to_string(static_cast<long long>(v));
    return ppsched::detail::text::shortest_number(v);
}

/// A non-negative integer member (`rank`, `world_size`), or -1 when absent.
inline int int_member(std::string_view source, const json::value& obj, std::string_view key,
                      std::string_view where) {
    const json::value* v = obj.find(key);
    if (v == nullptr) return -1;
    if (v->kind != json::type::number || !is_integer(v->number) || v->number < 0 || v->number > 1e6)
        trace_fail(source, *v,
                   "expected a non-negative integer (at most 10^6) for " + std::string(where) +
                       "'" + std::string(key) + "', found " +
                       (v->kind != json::type::number ? std::string(json::describe(v->kind))
                        : is_integer(v->number)       ? number_text(v->number)
                                                      : std::string("a non-integer number")));
    return static_cast<int>(v->number);
}

inline void read_events(std::string_view source, std::size_t file_index, const json::value& doc,
                        std::vector<raw_pp_event>& out, measured_trace& result, int& file_rank,
                        int& world_size, bool& after_waits) {
    const json::value* events = nullptr;
    if (doc.kind == json::type::array) {
        events = &doc;
    } else if (doc.kind == json::type::object) {
        events = doc.find("traceEvents");
        if (events == nullptr)
            trace_fail(source, doc, "expected a 'traceEvents' array in the trace object");
        if (events->kind != json::type::array)
            trace_fail(source, *events,
                       std::string("expected an array for 'traceEvents', found ") +
                           json::describe(events->kind));
        if (const json::value* info = doc.find("distributedInfo")) {
            if (info->kind != json::type::object)
                trace_fail(source, *info,
                           std::string("expected an object for 'distributedInfo', found ") +
                               json::describe(info->kind));
            file_rank = int_member(source, *info, "rank", "distributedInfo.");
            world_size = int_member(source, *info, "world_size", "distributedInfo.");
            if (world_size == 0)
                trace_fail(source, *info->find("world_size"),
                           "expected a world_size of at least 1 in 'distributedInfo', found 0");
        }
        if (const json::value* own = doc.find("ppsched"); own && own->kind == json::type::object)
            if (const json::value* f = own->find("spans_after_input_waits"))
                after_waits = f->kind == json::type::boolean && f->boolean;
    } else {
        trace_fail(source, doc,
                   std::string("expected a trace: an object with 'traceEvents' or an array of "
                               "events, found ") +
                       json::describe(doc.kind));
    }
    std::size_t seq = 0;
    for (const json::value& e : events->items) {
        if (e.kind != json::type::object)
            trace_fail(source, e,
                       std::string("expected an event (an object), found ") +
                           json::describe(e.kind));
        const json::value* name = e.find("name");
        if (name == nullptr || name->kind != json::type::string ||
            name->text.rfind("PP:", 0) != 0) {
            ++result.ignored_events;
            continue;
        }
        const json::value* cat = e.find("cat");
        const bool cpu = cat && cat->kind == json::type::string && cat->text == "user_annotation";
        const bool gpu =
            cat && cat->kind == json::type::string && cat->text == "gpu_user_annotation";
        if (!cpu && !gpu) { // e.g. a Python-function event of the same name
            ++result.ignored_events;
            continue;
        }
        const std::string what = "event '" + name->text + "'";
        const json::value* ph = e.find("ph");
        if (ph == nullptr || ph->kind != json::type::string || ph->text != "X")
            trace_fail(source, ph ? *ph : e,
                       what + ": expected a complete event (\"ph\": \"X\") for a pipeline action");
        auto number = [&](std::string_view key) {
            const json::value* v = e.find(key);
            if (v == nullptr)
                trace_fail(source, e, what + ": expected a '" + std::string(key) + "' member");
            if (v->kind != json::type::number || !std::isfinite(v->number))
                trace_fail(source, *v,
                           what + ": expected a number for '" + std::string(key) + "', found " +
                               json::describe(v->kind));
            return v->number;
        };
        raw_pp_event r;
        r.start = number("ts");
        const double dur = number("dur");
        if (dur < 0) trace_fail(source, *e.find("dur"), what + ": expected 'dur' >= 0");
        r.end = r.start + dur;
        r.gpu = gpu;
        {
            action a;
            const std::string_view text = std::string_view(name->text).substr(3);
            if (auto st = ppsched::detail::parse_action(text, a); !st)
                trace_fail(source, *name,
                           what + ": invalid action '" + std::string(text) + "' at column " +
                               std::to_string(st.column + 1) + ": expected " + st.what);
            r.act = a;
        }
        if (const json::value* args = e.find("args")) {
            if (args->kind != json::type::object)
                trace_fail(source, *args,
                           what + ": expected an object for 'args', found " +
                               json::describe(args->kind));
            r.rank = int_member(source, *args, "rank", "args.");
            if (const json::value* id = args->find("External id");
                id && id->kind == json::type::number)
                r.ext_id = id->number;
        }
        if (const json::value* pid = e.find("pid")) {
            if (pid->kind == json::type::number)
                r.pid = pid->number;
            else if (pid->kind == json::type::string)
                r.pid = -2; // a named process: one rank per file in that case
        }
        r.file = file_index;
        r.seq = seq++;
        out.push_back(r);
    }
}

inline bool is_compute_kind(action_kind k) {
    return k == action_kind::forward || k == action_kind::backward_input ||
           k == action_kind::backward_weight || k == action_kind::full_backward ||
           k == action_kind::overlap_f_b;
}

} // namespace detail

/// Reads the pipeline actions of a run from PyTorch profiler traces (see the file comment for
/// the rules). `files` are one merged trace or one per rank. Throws `parse_error` for bad text
/// or a malformed pipeline event, `config_error` for a missing or duplicated rank or a trace
/// with no pipeline action. Complexity: linear in the text plus n log n in the actions.
[[nodiscard]] inline measured_trace read_pytorch_trace(std::span<const trace_text> files) {
    namespace json = ppsched::detail::json;
    PPSCHED_EXPECTS(!files.empty(), "ppsched::io::read_pytorch_trace: no trace given");
    measured_trace result;
    std::vector<detail::raw_pp_event> events;
    std::vector<int> file_rank(files.size(), -1), world(files.size(), -1);
    result.spans_after_input_waits = true;
    for (std::size_t f = 0; f < files.size(); ++f) {
        json::value doc;
        try {
            doc = json::parse(files[f].text, files[f].source);
        } catch (const parse_error& e) {
            const std::string m = e.what();
            if (m.find("found the end of the text") != std::string::npos)
                throw parse_error(m + " (the file is truncated)", e.line(), e.column());
            throw;
        }
        bool after_waits = false;
        detail::read_events(files[f].source, f, doc, events, result, file_rank[f], world[f],
                            after_waits);
        result.spans_after_input_waits = result.spans_after_input_waits && after_waits;
    }
    // Ranks: args.rank, then distributedInfo.rank, then file order, then pids of one file.
    const bool single = files.size() == 1;
    std::map<double, int> pid_rank; // single file without rank information
    if (single && file_rank[0] < 0) {
        for (const auto& e : events)
            if (!e.gpu && e.rank < 0) pid_rank.emplace(e.pid, 0);
        int next = 0;
        for (auto& [pid, r] : pid_rank) r = next++;
    }
    for (auto& e : events) {
        if (e.rank >= 0) continue;
        if (file_rank[e.file] >= 0)
            e.rank = file_rank[e.file];
        else if (!single)
            e.rank = static_cast<int>(e.file);
        else if (!e.gpu)
            e.rank = pid_rank.at(e.pid);
        // A GPU event of a merged file without rank information gets its rank from its twin.
    }
    // Which file each rank came from: a rank spread over two files is a mistake.
    int ranks = 0;
    for (const auto& e : events)
        if (e.rank >= 0) ranks = std::max(ranks, e.rank + 1);
    if (ranks == 0)
        throw config_error("ppsched::io::read_pytorch_trace: " + files[0].source +
                           (files.size() > 1 ? " and the other files" : "") +
                           ": no pipeline action (no user_annotation event named PP:<action>)");
    std::vector<int> rank_file(static_cast<std::size_t>(ranks), -1);
    for (const auto& e : events) {
        if (e.rank < 0 || e.gpu) continue;
        int& rf = rank_file[static_cast<std::size_t>(e.rank)];
        if (rf < 0) rf = static_cast<int>(e.file);
        if (rf != static_cast<int>(e.file))
            throw config_error("ppsched::io::read_pytorch_trace: rank " + std::to_string(e.rank) +
                               " appears in both " + files[static_cast<std::size_t>(rf)].source +
                               " and " + files[e.file].source);
    }
    // A stated world size: the same in every file that states one, and above every rank.
    int stated_world = 0;
    std::size_t stated_in = 0;
    for (std::size_t f = 0; f < files.size(); ++f) {
        if (world[f] < 0) continue;
        if (stated_world > 0 && world[f] != stated_world)
            throw config_error("ppsched::io::read_pytorch_trace: " + files[stated_in].source +
                               " states world_size " + std::to_string(stated_world) + " but " +
                               files[f].source + " states " + std::to_string(world[f]));
        stated_world = world[f];
        stated_in = f;
    }
    if (stated_world > 0 && ranks > stated_world) {
        for (const auto& e : events)
            if (e.rank >= stated_world)
                throw config_error("ppsched::io::read_pytorch_trace: " + files[e.file].source +
                                   " holds rank " + std::to_string(e.rank) +
                                   ", not below the world_size " + std::to_string(stated_world) +
                                   " stated in " + files[stated_in].source);
    }
    const int expected = std::max(ranks, stated_world);
    // The first 20 missing ranks are named, the rest counted (a world of a million ranks
    // would make a message of megabytes).
    std::string missing;
    int absent = 0;
    for (int r = 0; r < expected; ++r)
        if (r >= ranks || rank_file[static_cast<std::size_t>(r)] < 0) {
            if (++absent <= 20) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        }
    if (absent > 20) missing += " and " + std::to_string(absent - 20) + " more";
    if (!missing.empty())
        throw config_error("ppsched::io::read_pytorch_trace: missing rank(s) " + missing + " of " +
                           std::to_string(expected) +
                           " (no CPU pipeline action; give one trace per rank, or a merged "
                           "trace that holds them all)");

    // CPU spans per rank in start order; GPU twins matched by External id, else by name and
    // occurrence on the same rank.
    const auto R = static_cast<std::size_t>(ranks);
    std::vector<std::vector<const detail::raw_pp_event*>> cpu(R);
    std::map<std::pair<std::size_t, double>, const detail::raw_pp_event*> gpu_by_id;
    std::map<std::tuple<int, std::string>, std::vector<const detail::raw_pp_event*>> gpu_by_name;
    for (const auto& e : events) {
        if (!e.gpu) {
            cpu[static_cast<std::size_t>(e.rank)].push_back(&e);
            continue;
        }
        if (e.ext_id >= 0) gpu_by_id.emplace(std::pair{e.file, e.ext_id}, &e);
        if (e.rank >= 0) gpu_by_name[{e.rank, to_string(e.act)}].push_back(&e);
    }
    auto by_time = [](const detail::raw_pp_event* a, const detail::raw_pp_event* b) {
        return a->start != b->start ? a->start < b->start : a->seq < b->seq;
    };
    for (auto& [key, list] : gpu_by_name) std::sort(list.begin(), list.end(), by_time);
    result.ranks.resize(R);
    result.side.assign(R, trace_side::cpu);
    result.sources.resize(R);
    for (std::size_t r = 0; r < R; ++r) {
        auto& spans = cpu[r];
        std::sort(spans.begin(), spans.end(), by_time);
        const std::string& file = files[spans.front()->file].source;
        result.sources[r] = file;
        if (single && file_rank[0] < 0 && spans.front()->rank >= 0 && pid_rank.size() > 1)
            result.sources[r] += " (pid " + detail::number_text(spans.front()->pid) + ")";
        std::vector<const detail::raw_pp_event*> twin(spans.size(), nullptr);
        std::map<std::string, std::size_t> occurrence;
        std::size_t computes = 0, computes_with_twin = 0, twins = 0;
        for (std::size_t i = 0; i < spans.size(); ++i) {
            const auto* s = spans[i];
            const std::string name = to_string(s->act);
            const std::size_t k = occurrence[name]++;
            if (s->ext_id >= 0) {
                if (auto it = gpu_by_id.find({s->file, s->ext_id});
                    it != gpu_by_id.end() && it->second->act == s->act)
                    twin[i] = it->second;
            }
            if (twin[i] == nullptr) {
                if (auto it = gpu_by_name.find({static_cast<int>(r), name});
                    it != gpu_by_name.end() && k < it->second.size())
                    twin[i] = it->second[k];
            }
            const bool compute = detail::is_compute_kind(s->act.kind());
            if (compute) ++computes;
            if (twin[i]) {
                ++twins;
                if (compute) ++computes_with_twin;
            }
        }
        const bool use_gpu = computes > 0 && computes_with_twin == computes;
        auto& out = result.ranks[r];
        out.reserve(spans.size());
        for (std::size_t i = 0; i < spans.size(); ++i) {
            const auto* s = use_gpu && twin[i] ? twin[i] : spans[i];
            out.push_back({spans[i]->act, s->start, s->end});
        }
        const std::string rank = "rank " + std::to_string(r) + " (" + result.sources[r] + "): ";
        if (use_gpu) {
            result.side[r] = trace_side::gpu;
            result.notes.push_back(rank + "GPU side (gpu_user_annotation) for " +
                                   std::to_string(twins) + " of " + std::to_string(spans.size()) +
                                   " actions, CPU side for the rest");
        } else if (twins > 0) {
            result.notes.push_back(rank + "CPU side (user_annotation): only " +
                                   std::to_string(computes_with_twin) + " of " +
                                   std::to_string(computes) + " computes have a GPU twin");
        } else {
            result.notes.push_back(rank + "CPU side (user_annotation): no GPU twins");
        }
    }
    if (result.ignored_events > 0)
        result.notes.push_back(std::to_string(result.ignored_events) +
                               " events that are not pipeline actions were ignored");
    return result;
}

/// Reads trace files (see `read_pytorch_trace`); throws `parse_error` when one cannot be read.
[[nodiscard]] inline measured_trace
read_pytorch_trace_files(const std::vector<std::string>& paths) {
    std::vector<trace_text> files;
    files.reserve(paths.size());
    for (const auto& p : paths)
        files.push_back({read_file(p), ppsched::detail::printable(p, 1024)});
    return read_pytorch_trace(files);
}

/// Writes one rank's measured actions as a PyTorch-style profiler trace: a
/// `distributedInfo` with the rank and world size, and one `user_annotation` complete event
/// named `PP:<action>` per action (`pid` = the rank, `tid` 0, `args.rank`), and
/// `"ppsched": {"spans_after_input_waits": true}` (ppsched's executor starts a compute's span
/// after its input waits). Times are microseconds. `read_pytorch_trace` reads it back to the
/// same actions.
[[nodiscard]] inline std::string write_pytorch_trace(std::span<const measured_action> actions,
                                                     int rank, int world_size) {
    using ppsched::detail::text::shortest_number;
    const std::string r = std::to_string(rank);
    std::string out = "{\"schemaVersion\": 1, \"distributedInfo\": {\"backend\": \"ppsched\", "
                      "\"rank\": " +
                      r + ", \"world_size\": " + std::to_string(world_size) +
                      "},\n\"ppsched\": {\"spans_after_input_waits\": true},\n\"traceEvents\": [";
    bool first = true;
    for (const auto& a : actions) {
        out += first ? "\n" : ",\n";
        first = false;
        out += "{\"name\": \"PP:" + to_string(a.act) +
               "\", \"ph\": \"X\", \"ts\": " + shortest_number(a.start) +
               ", \"dur\": " + shortest_number(a.end - a.start) + ", \"pid\": " + r +
               ", \"tid\": 0, \"cat\": \"user_annotation\", \"args\": {\"rank\": " + r + "}}";
    }
    out += "\n]}\n";
    return out;
}

} // namespace ppsched::io
