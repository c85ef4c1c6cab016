// The ppsched benchmark driver: heap accounting, workloads, and registration of every
// algorithm for every schedule of the built-in registry at every size.

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <utility>

#include <ppsched/algorithms/add_reduce_grad.hpp>
#include <ppsched/algorithms/add_unshard_reshard.hpp>
#include <ppsched/algorithms/lower.hpp>
#include <ppsched/io/csv.hpp>

#include "support.hpp"

// ---- heap accounting -----------------------------------------------------------------------
// Every allocation carries a 16-byte header with its size, so unsized deletes are counted too
// and alignment stays what operator new promises. Relaxed atomics: the benchmarks run on one
// thread, the library's own threads (if any) only need the counts not to tear.

namespace {
std::atomic<std::size_t> heap_current{0};
std::atomic<std::size_t> heap_peak{0};
constexpr std::size_t header = 16;

void* counted_alloc(std::size_t n) {
    void* p = std::malloc(n + header);
    if (p == nullptr) throw std::bad_alloc();
    *static_cast<std::size_t*>(p) = n;
    const std::size_t now = heap_current.fetch_add(n, std::memory_order_relaxed) + n;
    std::size_t peak = heap_peak.load(std::memory_order_relaxed);
    while (now > peak && !heap_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {}
    return static_cast<char*>(p) + header;
}
void counted_free(void* p) noexcept {
    if (p == nullptr) return;
    char* base = static_cast<char*>(p) - header;
    heap_current.fetch_sub(*reinterpret_cast<std::size_t*>(base), std::memory_order_relaxed);
    std::free(base);
}
} // namespace

void* operator new(std::size_t n) { return counted_alloc(n); }
void* operator new[](std::size_t n) { return counted_alloc(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
    try {
        return counted_alloc(n);
    } catch (...) {
        return nullptr;
    }
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
    try {
        return counted_alloc(n);
    } catch (...) {
        return nullptr;
    }
}
void operator delete(void* p) noexcept { counted_free(p); }
void operator delete[](void* p) noexcept { counted_free(p); }
void operator delete(void* p, std::size_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::size_t) noexcept { counted_free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { counted_free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { counted_free(p); }

namespace ppsched::bench {

heap_stats heap() noexcept {
    return {heap_current.load(std::memory_order_relaxed),
            heap_peak.load(std::memory_order_relaxed)};
}
void reset_peak() noexcept {
    heap_peak.store(heap_current.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

// ---- workloads -----------------------------------------------------------------------------

std::optional<config> config_for(const schedule_entry& entry, long long target) {
    config probe{.ranks = 4, .stages_per_rank = entry.default_stages_per_rank, .microbatches = 16};
    double probe_actions = 0;
    try {
        probe_actions = static_cast<double>(entry.generate(probe, {}).action_count());
    } catch (const config_error&) {
        return std::nullopt;
    }
    // actions = k * ranks * stages_per_rank * microbatches, with microbatches = 4 * ranks.
    const double per_cell = probe_actions / (4.0 * probe.stages_per_rank * 16.0);
    const double ranks =
        std::sqrt(static_cast<double>(target) / (4.0 * per_cell * probe.stages_per_rank));
    const int base = ranks < 2 ? 2 : static_cast<int>(std::lround(ranks));
    // A schedule may restrict the ranks (e.g. to even numbers): take the nearest accepted.
    for (int delta = 0; delta < 8; ++delta) {
        for (const int p : {base + delta, base - delta}) {
            if (p < 2) continue;
            config cfg = probe;
            cfg.ranks = p;
            cfg.microbatches = 4 * p;
            try {
                entry.check(cfg, {});
                return cfg;
            } catch (const config_error&) {}
        }
    }
    return std::nullopt;
}

const order& workload::compact() {
    if (!compact_) {
        compact_ = compute;
        compact_->drop_idle();
    }
    return *compact_;
}
const order& workload::lowered() {
    if (!lowered_) lowered_ = lower(compute);
    return *lowered_;
}
std::size_t workload::lowered_actions() { return lowered().action_count(); }
const order& workload::before_send_recv() {
    if (!before_send_recv_) before_send_recv_ = add_reduce_grad(add_unshard_reshard(compact()));
    return *before_send_recv_;
}
const std::string& workload::lowered_csv() {
    if (!lowered_csv_) lowered_csv_ = io::write_csv(lowered());
    return *lowered_csv_;
}
const std::vector<std::string_view>& workload::lowered_strings() {
    if (!lowered_strings_) {
        const std::string_view text = lowered_csv();
        std::vector<std::string_view> cells;
        cells.reserve(lowered_actions());
        std::size_t start = 0;
        for (std::size_t i = 0; i <= text.size(); ++i) {
            if (i < text.size() && text[i] != ',' && text[i] != '\n') continue;
            if (i > start) cells.push_back(text.substr(start, i - start));
            start = i + 1;
        }
        lowered_strings_ = std::move(cells);
    }
    return *lowered_strings_;
}

namespace {
std::unique_ptr<workload> cached;
}

workload& get_workload(const schedule_entry& entry, const config& cfg, long long target) {
    if (!cached || cached->entry != &entry || cached->target != target) {
        cached.reset(); // free the previous one first: 10^7-action inputs are large
        auto w = std::make_unique<workload>();
        w->entry = &entry;
        w->target = target;
        w->cfg = cfg;
        w->compute = entry.generate(w->cfg, {});
        w->compute_actions = w->compute.action_count();
        cached = std::move(w);
    }
    return *cached;
}
void drop_workload() { cached.reset(); }

} // namespace ppsched::bench

int main(int argc, char** argv) {
    using namespace ppsched::bench;
    std::vector<algorithm> algorithms;
    for (auto part : {generate_benchmarks, validate_benchmarks, lower_benchmarks,
                      simulate_benchmarks, io_benchmarks})
        for (const algorithm& a : part()) algorithms.push_back(a);

    // Schedule by schedule, size by size, so that the cached workload serves every algorithm.
    for (const ppsched::schedule_entry& entry : ppsched::builtin_schedules().entries()) {
        for (const long long n : sizes) {
            const std::optional<ppsched::config> cfg = config_for(entry, n);
            if (!cfg) {
                std::fprintf(stderr,
                             "ppsched_benchmarks: no configuration of %s with about %lld "
                             "actions; skipped\n",
                             entry.name.c_str(), n);
                continue;
            }
            for (const algorithm& a : algorithms) {
                if (n > a.max_size) continue;
                const std::string name =
                    std::string(a.name) + "/" + entry.name + "/" + std::to_string(n);
                benchmark::RegisterBenchmark(name.c_str(), [fn = a.fn, e = &entry, c = *cfg,
                                                            n](benchmark::State& state) {
                    fn(state, get_workload(*e, c, n));
                })->Unit(n >= 1'000'000 ? benchmark::kMillisecond : benchmark::kMicrosecond);
            }
        }
    }
    register_reference_benchmarks();
    register_tune_benchmarks();

    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    drop_workload();
    return 0;
}
