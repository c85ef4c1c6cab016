#pragma once
/// \file tune/detail/thread_team.hpp
/// `thread_team`: threads kept for a whole beam search (tune/detail/exact_search.hpp) that run
/// one job at a time together with the calling thread. A beam has three parallel passes per
/// depth, hundreds of depths, and some of its passes last only tens of microseconds: starting
/// and joining threads for each one cost about as much as the work. So does waking a sleeping
/// thread (about 40 us for a job and its end on a 2-core machine): a thread of the team, and
/// the caller waiting for the end of a job, first spin for up to `spin` (the gaps between a
/// beam's passes are shorter), then sleep.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace ppsched::detail::tune {

class thread_team {
  public:
    /// Starts up to `extra` threads beside the caller's; when the system refuses one, the
    /// team is the threads started before it (`size` says how many there are).
    explicit thread_team(std::size_t extra) {
        failed_.resize(extra + 1);
        threads_.reserve(extra);
        for (std::size_t t = 1; t <= extra; ++t) {
            try {
                threads_.emplace_back([this, t] { serve(t); });
            } catch (const std::system_error&) {
                break;
            } catch (...) {
                close(); // the started ones must not outlive the half-built team
                throw;
            }
        }
    }
    thread_team(const thread_team&) = delete;
    thread_team& operator=(const thread_team&) = delete;
    ~thread_team() { close(); }

    /// The threads of the team, the caller's included.
    [[nodiscard]] std::size_t size() const { return threads_.size() + 1; }

    /// Runs `work(t)` for t = 0 (on the calling thread) to min(runs, size()) - 1, and returns
    /// when all have returned; returns how many ran. Callers share their work out in pieces
    /// that the running threads take in turn, so the count does not change what is done. An
    /// exception in `work` sets `stop` (for the others to end early) and is thrown again here
    /// once all have returned.
    std::size_t run(std::size_t runs, std::atomic<bool>& stop,
                    const std::function<void(std::size_t)>& work) {
        runs = std::max<std::size_t>(1, std::min(runs, size()));
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            job_ = &work;
            stop_ = &stop;
            runs_ = runs;
            pending_.store(runs - 1, std::memory_order_relaxed);
            round_.fetch_add(1, std::memory_order_release);
        }
        if (runs > 1) wake_.notify_all();
        attempt(0);
        if (!spin_until([&] { return pending_.load(std::memory_order_acquire) == 0; })) {
            std::unique_lock<std::mutex> lock(mutex_);
            done_.wait(lock, [&] { return pending_.load(std::memory_order_acquire) == 0; });
        }
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            job_ = nullptr;
        }
        std::exception_ptr first;
        for (std::exception_ptr& e : failed_)
            if (e && !first)
                first = std::exchange(e, nullptr);
            else
                e = nullptr;
        if (first) std::rethrow_exception(first);
        return runs;
    }

  private:
    void close() {
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            closing_.store(true, std::memory_order_release);
        }
        wake_.notify_all();
        for (std::thread& th : threads_) th.join();
    }

    void attempt(std::size_t t) {
        try {
            (*job_)(t);
        } catch (...) {
            failed_[t] = std::current_exception();
            *stop_ = true;
        }
    }

    /// Spins until `ready()` or for `spin`; whether it became ready.
    template <class Ready>
    static bool spin_until(const Ready& ready) {
        const auto until = std::chrono::steady_clock::now() + spin;
        for (unsigned i = 1;; ++i) {
            if (ready()) return true;
            if (i % 64 == 0 && std::chrono::steady_clock::now() >= until) return ready();
            // Now and then the core goes to a thread with work, where there are more threads
            // than cores (4 threads on 2 cores: 0.13 s for a width-256 beam instead of 0.23 s).
            if (i % 4096 == 0) std::this_thread::yield();
        }
    }

    void serve(std::size_t t) {
        std::uint64_t seen = 0;
        for (;;) {
            // A new round (or the team closing) is seen spinning, or else sleeping.
            (void)spin_until([&] {
                return round_.load(std::memory_order_acquire) != seen ||
                       closing_.load(std::memory_order_acquire);
            });
            {
                std::unique_lock<std::mutex> lock(mutex_);
                wake_.wait(lock, [&] {
                    return closing_ ||
                           (round_.load(std::memory_order_relaxed) != seen && t < runs_);
                });
                if (closing_) return;
                seen = round_.load(std::memory_order_relaxed);
            }
            attempt(t);
            if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
                const std::lock_guard<std::mutex> lock(mutex_); // the caller may be going to sleep
                done_.notify_one();
            }
        }
    }

    std::vector<std::thread> threads_;
    std::vector<std::exception_ptr> failed_; // per thread: what its work threw
    std::mutex mutex_;
    std::condition_variable wake_, done_;
    const std::function<void(std::size_t)>* job_ = nullptr;
    std::atomic<bool>* stop_ = nullptr;
    std::size_t runs_ = 0;
    std::atomic<std::size_t> pending_{0}; // threads of the job still running, the caller's not
    std::atomic<std::uint64_t> round_{0}; // jobs posted so far
    std::atomic<bool> closing_{false};    // read by spinning threads too
    static constexpr std::chrono::microseconds spin{200};
};

} // namespace ppsched::detail::tune
