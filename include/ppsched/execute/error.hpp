#pragma once
/// \file execute/error.hpp
/// How `execute` ends: `execution_stats` (counts of what ran) when the program ran, an
/// `execution_error` naming the rank, step, action and the `execution_failure` when it did not.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "ppsched/action.hpp"

namespace ppsched {

/// Why `execute` stopped.
enum class execution_failure : std::uint8_t {
    missing_handler, ///< the program has an action kind the handlers do not handle
    invalid_action,  ///< stage not on this rank, index out of range, SEND/RECV without a peer
    missing_input,   ///< a compute or SEND whose data was never received or produced
    duplicate,       ///< an action (or a RECV, an UNSHARD) repeated, a backward before its forward
    sharded,         ///< compute on a stage that has UNSHARD in the program but is sharded now
    wait_failed,     ///< a handle's wait reported a failure
    wait_timed_out,  ///< a handle's wait reported a timeout
    leftover,        ///< received or produced data that nothing consumed by the end
};

/// Short identifier of a failure (`"missing_input"`).
[[nodiscard]] constexpr std::string_view to_string_view(execution_failure f) noexcept {
    switch (f) {
    case execution_failure::missing_handler:
        return "missing_handler";
    case execution_failure::invalid_action:
        return "invalid_action";
    case execution_failure::missing_input:
        return "missing_input";
    case execution_failure::duplicate:
        return "duplicate";
    case execution_failure::sharded:
        return "sharded";
    case execution_failure::wait_failed:
        return "wait_failed";
    case execution_failure::wait_timed_out:
        return "wait_timed_out";
    case execution_failure::leftover:
        return "leftover";
    }
    return "?";
}

/// Thrown by `execute`. `what()` reads
/// `ppsched::execute: rank 1, step 4 (1F0): needs 1RECV_F0 earlier ... [missing_input]`.
class execution_error : public std::runtime_error {
  public:
    execution_error(execution_failure reason, int rank, int step, std::optional<action> subject,
                    const std::string& message)
        : std::runtime_error(message), reason_(reason), rank_(rank), step_(step),
          subject_(subject) {}
    /// What went wrong.
    [[nodiscard]] execution_failure reason() const noexcept { return reason_; }
    /// The rank whose program was running.
    [[nodiscard]] int rank() const noexcept { return rank_; }
    /// The step (index in the program) of the action that failed; -1 after the last action.
    [[nodiscard]] int step() const noexcept { return step_; }
    /// The action that failed, if any.
    [[nodiscard]] const std::optional<action>& subject() const noexcept { return subject_; }

  private:
    execution_failure reason_;
    int rank_;
    int step_;
    std::optional<action> subject_;
};

/// Counts of what one `execute` call did.
struct execution_stats {
    std::size_t actions = 0;         ///< non-idle actions run
    std::size_t computes = 0;        ///< compute handler calls (an overlap handler counts once)
    std::size_t sends = 0;           ///< SEND_F + SEND_B
    std::size_t receives = 0;        ///< RECV_F + RECV_B
    std::size_t local_handovers = 0; ///< values passed between two stages of this rank
    std::size_t waits = 0;           ///< handle waits
};

} // namespace ppsched
