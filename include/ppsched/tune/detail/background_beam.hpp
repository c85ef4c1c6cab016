#pragma once
/// \file tune/detail/background_beam.hpp
/// `background_beam`: a beam search (`exact_search::beam`) on a thread of its own, while the
/// caller's thread does other work (`tune` runs its first late beam beside the exact phase
/// and the rank relaxation, which use one thread each). The beam is the one the caller would
/// run itself with the same incumbent and width, for any thread count; the caller takes what
/// it found, or cancels it, and it is cancelled and joined however the caller's work ends.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <exception>
#include <optional>
#include <system_error>
#include <thread>
#include <utility>

#include "ppsched/tune/detail/exact_search.hpp"
#include "ppsched/tune/detail/model.hpp"

namespace ppsched::detail::tune {

class background_beam {
  public:
    background_beam() = default;
    background_beam(const background_beam&) = delete; // the thread holds `this`
    background_beam& operator=(const background_beam&) = delete;
    ~background_beam() {
        if (!thread_.joinable()) return;
        cancel_ = true;
        thread_.join(); // (what it threw goes with it: the caller is already unwinding or done)
    }

    /// Starts `exact_search(m).beam(incumbent, width, limits, threads)` on a new thread (`m`
    /// must outlive it), stopping at `deadline` or when cancelled. False where the system
    /// gives no thread: then nothing runs. At most one beam per object.
    bool start(const model& m, double incumbent, std::size_t width,
               std::chrono::steady_clock::time_point deadline, std::size_t threads) {
        if (thread_.joinable()) return false;
        exact_limits limits;
        limits.deadline = deadline;
        limits.cancel = &cancel_; // no tick: a progress line is the caller's
        try {
            thread_ = std::thread([this, &m, incumbent, width, limits, threads] {
                try {
                    exact_search guide(m);
                    found_ = guide.beam(incumbent, width, limits, threads);
                } catch (...) {
                    error_ = std::current_exception();
                }
            });
        } catch (const std::system_error&) {
            return false;
        }
        return true;
    }

    /// Waits for the beam, cancelled first unless `take`: what it found where it was taken
    /// (empty where none was started, or it was cancelled). Throws what the beam threw.
    std::optional<exact_outcome> join(bool take) {
        if (!thread_.joinable()) return std::nullopt;
        if (!take) cancel_ = true;
        thread_.join();
        if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
        if (!take) return std::nullopt;
        return std::exchange(found_, std::nullopt);
    }

  private:
    std::atomic<bool> cancel_{false};
    std::optional<exact_outcome> found_;
    std::exception_ptr error_;
    std::thread thread_; // last: started after the members it writes, joined before they go
};

} // namespace ppsched::detail::tune
