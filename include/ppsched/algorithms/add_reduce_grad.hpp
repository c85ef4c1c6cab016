#pragma once
/// \file algorithms/add_reduce_grad.hpp
/// `add_reduce_grad(order)`: inserts `REDUCE_GRAD` after each stage's last backward, as
/// PyTorch's `_add_reduce_grad` does.

#include <cstddef>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/config.hpp"
#include "ppsched/algorithms/detail/lowering.hpp"
#include "ppsched/error.hpp"
#include "ppsched/order.hpp"

namespace ppsched {
namespace detail {

/// The counting of `add_reduce_grad`: the weight-gradient actions (`W` and `B`, also inside
/// an `OVERLAP_F_B`) per stage. `after(a, emit)` calls `emit(REDUCE_GRAD(s))` for each stage
/// `s` whose count `a` brings to the microbatches the stage runs (`cfg.microbatch_count`: all
/// of them, or its direction's with two pipelines).
class reduce_grad_counter {
  public:
    constexpr explicit reduce_grad_counter(const config& cfg) : cfg_(cfg) {}

    template <class Emit>
    constexpr void after(const action& a, Emit&& emit) {
        // Most actions are F or I, which never finish a stage's weight gradient.
        if (a.kind() == action_kind::forward || a.kind() == action_kind::backward_input) return;
        for_each_part(a, [&](const action& p) {
            // `I` does not finish a stage's weight gradient; `W` or `B` does.
            if (p.kind() != action_kind::backward_weight && p.kind() != action_kind::full_backward)
                return;
            const auto st = static_cast<std::size_t>(p.stage());
            if (st >= count_.size()) count_.resize(st + 1, 0);
            if (++count_[st] == cfg_.microbatch_count(p.stage()))
                emit(action::reduce_grad(p.stage()));
        });
    }

  private:
    config cfg_;
    std::vector<int> count_; // per stage, grown on demand
};

/// One rank of `add_reduce_grad`: copies the row, idle slots dropped, with `REDUCE_GRAD` right
/// after the action that completes a stage (see `reduce_grad_counter`). Linear in the row
/// length.
template <class Row>
constexpr rank_slots reduce_grad_row(const Row& row, const config& cfg) {
    rank_slots out;
    reserve_for(out, row, static_cast<std::size_t>(cfg.stages_per_rank)); // + REDUCE_GRADs
    reduce_grad_counter counter(cfg);
    auto emit = [&](const action& a) { out.push_back(a); };
    for (const auto& s : row) {
        const action* a = slot_action(s);
        if (!a) continue;
        out.push_back(*a);
        counter.after(*a, emit);
    }
    return out;
}

} // namespace detail

/// Inserts `REDUCE_GRAD` into each rank right after the action that completes a stage's weight
/// gradients, i.e. its `cfg.microbatch_count(stage)`-th `W` or `B` (sub-actions of
/// `OVERLAP_F_B` count; with one pipeline that is `cfg.microbatches`, as PyTorch's
/// `_add_reduce_grad` does; with two, the stage's direction's half). Idle slots are dropped. A
/// stage with fewer backwards gets no `REDUCE_GRAD` (PyTorch's behaviour; `validate` reports such
/// orders). Requires: one row per rank. Complexity: linear in the number of slots.
template <order_range R>
[[nodiscard]] constexpr order add_reduce_grad(const R& rows, const config& cfg) {
    std::vector<rank_slots> out;
    for (const auto& row : rows) out.push_back(detail::reduce_grad_row(row, cfg));
    PPSCHED_EXPECTS(out.size() == static_cast<std::size_t>(cfg.ranks),
                    "ppsched::add_reduce_grad: the order has ", out.size(),
                    " rows but the configuration has ", cfg.ranks, " ranks");
    return order(cfg, std::move(out));
}

/// `add_reduce_grad(o, o.cfg())`.
[[nodiscard]] constexpr order add_reduce_grad(const order& o) {
    return add_reduce_grad(o, o.cfg());
}

} // namespace ppsched
