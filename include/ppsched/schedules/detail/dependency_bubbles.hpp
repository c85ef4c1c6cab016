#pragma once
/// \file schedules/detail/dependency_bubbles.hpp
/// Idle-slot insertion by lock-step replay (the behaviour of PyTorch's
/// `_add_bubbles_to_actions`): an action that would run before its input is ready is delayed by
/// idle slots.

#include <climits>
#include <cstddef>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/config.hpp"
#include "ppsched/error.hpp"
#include "ppsched/order.hpp"

namespace ppsched::detail {

/// Replays `in` in lock-step rounds: in each round every unfinished rank, in rank order, takes
/// its next slot. An idle slot is copied. A forward whose previous stage's forward of the same
/// microbatch, or a full backward whose next stage's backward (its own forward on the last
/// stage) did not finish in an *earlier* round, waits: the rank gets an idle slot and retries
/// next round. Other kinds never wait.
/// Requires: every awaited action occurs somewhere in `in` (otherwise `config_error`: the
/// replay cannot finish).
/// Complexity: O(ranks x rounds), i.e. linear in the slots produced when the rows are of
/// comparable length (as in every generated schedule); PyTorch's version is the same with hash
/// sets, here the "finished in round" marks are dense arrays indexed by stage * microbatches + mb.
[[nodiscard]] constexpr order add_dependency_bubbles(const order& in) {
    const config& cfg = in.cfg();
    const int m = cfg.microbatches;
    const auto keys = static_cast<std::size_t>(cfg.num_stages()) * static_cast<std::size_t>(m);
    // Round in which each (stage, mb) forward / full backward ran; INT_MAX = not yet.
    std::vector<int> f_round(keys, INT_MAX), b_round(keys, INT_MAX);
    auto key = [m](int stage, int mb) {
        return static_cast<std::size_t>(stage) * static_cast<std::size_t>(m) +
               static_cast<std::size_t>(mb);
    };
    auto in_range = [&cfg, m](int stage, int mb) {
        return stage >= 0 && stage < cfg.num_stages() && mb >= 0 && mb < m;
    };
    // Whether `a` must wait in `round`.
    auto must_wait = [&](const action& a, int round) {
        if (a.kind() == action_kind::forward) {
            const int prev = cfg.previous_stage(a.stage());
            return prev >= 0 && in_range(prev, a.microbatch()) &&
                   f_round[key(prev, a.microbatch())] >= round;
        }
        if (a.kind() == action_kind::full_backward) {
            const int next = cfg.next_stage(a.stage());
            if (next < 0)
                return in_range(a.stage(), a.microbatch()) &&
                       f_round[key(a.stage(), a.microbatch())] >= round;
            return in_range(next, a.microbatch()) && b_round[key(next, a.microbatch())] >= round;
        }
        return false;
    };

    order out(cfg);
    const std::size_t p = in.num_ranks();
    std::vector<std::size_t> next(p, 0);
    std::size_t unfinished = 0;
    for (std::size_t r = 0; r < p; ++r) {
        out[r].reserve(in[r].size());
        if (!in[r].empty()) ++unfinished;
    }
    for (int round = 0; unfinished > 0; ++round) {
        bool progress = false;
        for (std::size_t r = 0; r < p; ++r) {
            if (next[r] >= in[r].size()) continue;
            const slot& s = in[r][next[r]];
            if (s.is_idle()) {
                out[r].push_back(slot{});
            } else if (must_wait(*s, round)) {
                out[r].push_back(slot{});
                continue;
            } else {
                out[r].push_back(s);
                const action& a = *s;
                if (in_range(a.stage(), a.microbatch())) {
                    if (a.kind() == action_kind::forward)
                        f_round[key(a.stage(), a.microbatch())] = round;
                    if (a.kind() == action_kind::full_backward)
                        b_round[key(a.stage(), a.microbatch())] = round;
                }
            }
            progress = true;
            if (++next[r] == in[r].size()) --unfinished;
        }
        // Every unfinished rank waits on something that never runs: PyTorch would loop forever.
        PPSCHED_EXPECTS(progress,
                        "ppsched::detail::add_dependency_bubbles: the order waits on "
                        "an action that never runs (round ",
                        round, ")");
    }
    return out;
}

} // namespace ppsched::detail
