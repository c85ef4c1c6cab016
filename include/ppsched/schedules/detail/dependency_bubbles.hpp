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
[[nodiscard]] constexpr order add_dependency_bubbles(order in) {
    const config cfg = in.cfg();
    const int m = cfg.microbatches;
    const int stages = cfg.num_stages();
    const auto keys = static_cast<std::size_t>(stages) * static_cast<std::size_t>(m);
    // Round in which each (stage, mb) forward / full backward ran; INT_MAX = not yet.
    std::vector<int> f_round(keys, INT_MAX), b_round(keys, INT_MAX);
    // Each stage's neighbours, looked up once (the loop below is also run by the compiler in
    // `static_assert`s, where every call and expression counts against its step limit).
    std::vector<int> prev_stage(static_cast<std::size_t>(stages), 0),
        next_stage(static_cast<std::size_t>(stages), 0);
    for (int s = 0; s < stages; ++s) {
        prev_stage[static_cast<std::size_t>(s)] = cfg.previous_stage(s);
        next_stage[static_cast<std::size_t>(s)] = cfg.next_stage(s);
    }

    // The result is the input row by row, edited in place: a rank that never waits keeps its
    // row untouched (no copy, no new memory). At a rank's first wait its remaining slots are
    // copied aside (`rest`) and from then on written back shifted by one slot per wait.
    order out = std::move(in);
    const std::size_t p = out.num_ranks();
    std::vector<rank_slots> rest(p);
    std::vector<std::size_t> pos(p, 0), shift(p, 0), size(p, 0);
    std::size_t unfinished = 0;
    for (std::size_t r = 0; r < p; ++r) {
        size[r] = out[r].size();
        if (size[r] != 0) ++unfinished;
    }
    // Writes slot `x` at `at` in rank r's row (at most one past its end).
    auto put = [&out](std::size_t r, std::size_t at, const slot& x) {
        rank_slots& row = out[r];
        if (at < row.size())
            row[at] = x;
        else
            row.push_back(x);
    };

    for (int round = 0; unfinished > 0; ++round) {
        bool progress = false;
        for (std::size_t r = 0; r < p; ++r) {
            const std::size_t i = pos[r];
            if (i == size[r]) continue;
            // Slot i of the input: still in place until the rank first waits.
            const slot& s = shift[r] == 0 ? out[r][i] : rest[r][i];
            if (!s.is_idle()) {
                const action& a = *s;
                const int stage = a.stage(), mb = a.microbatch();
                const bool fwd = a.kind() == action_kind::forward;
                const bool bwd = a.kind() == action_kind::full_backward;
                if ((fwd || bwd) && stage < stages && mb >= 0 && mb < m) {
                    // What it waits for: the previous stage's forward, the next stage's
                    // backward, or (a backward on the last stage) its own forward.
                    const int dep = fwd ? prev_stage[static_cast<std::size_t>(stage)]
                                        : next_stage[static_cast<std::size_t>(stage)];
                    const int* ran = fwd || dep < 0 ? f_round.data() : b_round.data();
                    const int awaited = fwd || dep >= 0 ? dep : stage;
                    if (awaited >= 0 && ran[awaited * m + mb] >= round) {
                        // Waits: an idle slot here, the slot again next round.
                        if (shift[r] == 0) rest[r] = out[r]; // the input, before any edit
                        put(r, i + shift[r], slot{});
                        ++shift[r];
                        continue;
                    }
                    (fwd ? f_round : b_round)[static_cast<std::size_t>(stage * m + mb)] = round;
                }
            }
            if (shift[r] != 0) put(r, i + shift[r], s);
            progress = true;
            if (++pos[r] == size[r]) --unfinished;
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
