#pragma once
// Test helper: small orders written by hand, usable in constant expressions.

#include <ppsched/action.hpp>
#include <ppsched/config.hpp>
#include <ppsched/order.hpp>

namespace ppsched_test {

/// 2 ranks, one stage each, 2 microbatches.
inline constexpr ppsched::config two_ranks{.ranks = 2, .stages_per_rank = 1, .microbatches = 2};

/// GPipe for `two_ranks`, compute only.
constexpr ppsched::order gpipe_2x2() {
    using ppsched::action;
    ppsched::order o(two_ranks);
    o.push(0, action::forward(0, 0));
    o.push(0, action::forward(0, 1));
    o.push(0, action::full_backward(0, 0));
    o.push(0, action::full_backward(0, 1));
    o.push(1, action::forward(1, 0));
    o.push(1, action::forward(1, 1));
    o.push(1, action::full_backward(1, 0));
    o.push(1, action::full_backward(1, 1));
    return o;
}

/// The same, lowered by hand: sends right after the compute, receives right before it.
constexpr ppsched::order gpipe_2x2_lowered() {
    using ppsched::action;
    ppsched::order o(two_ranks);
    for (int mb = 0; mb < 2; ++mb) {
        o.push(0, action::forward(0, mb));
        o.push(0, action::send_f(0, mb));
    }
    for (int mb = 0; mb < 2; ++mb) {
        o.push(0, action::recv_b(0, mb));
        o.push(0, action::full_backward(0, mb));
    }
    for (int mb = 0; mb < 2; ++mb) {
        o.push(1, action::recv_f(1, mb));
        o.push(1, action::forward(1, mb));
    }
    for (int mb = 0; mb < 2; ++mb) {
        o.push(1, action::full_backward(1, mb));
        o.push(1, action::send_b(1, mb));
    }
    return o;
}

} // namespace ppsched_test
