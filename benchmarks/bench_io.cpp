// Text: CSV writing and reading of the lowered order (every action kind occurs), and
// parse_action over each of its cells.

#include <ppsched/action.hpp>
#include <ppsched/io/csv.hpp>

#include "support.hpp"

namespace ppsched::bench {
namespace {

void csv_write(benchmark::State& state, workload& w) {
    const order& in = w.lowered();
    const std::size_t bytes = w.lowered_csv().size();
    for (auto _ : state) {
        std::string text = io::write_csv(in);
        benchmark::DoNotOptimize(text);
    }
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(bytes));
    finish(state, in.action_count(), [&] { return io::write_csv(in); });
}

void csv_read(benchmark::State& state, workload& w) {
    const std::string& text = w.lowered_csv();
    for (auto _ : state) {
        order o = io::read_csv(text);
        benchmark::DoNotOptimize(o);
    }
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(text.size()));
    finish(state, w.lowered_actions(), [&] { return io::read_csv(text); });
}

void parse(benchmark::State& state, workload& w) {
    const std::vector<std::string_view>& cells = w.lowered_strings();
    for (auto _ : state) {
        for (const std::string_view s : cells) {
            action a = parse_action(s);
            benchmark::DoNotOptimize(a);
        }
    }
    finish(state, cells.size(), [&] {
        action last;
        for (const std::string_view s : cells) last = parse_action(s);
        return last;
    });
}

} // namespace

std::vector<algorithm> io_benchmarks() {
    return {{"csv_write", csv_write}, {"csv_read", csv_read}, {"parse_action", parse}};
}

} // namespace ppsched::bench
