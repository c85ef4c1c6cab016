#pragma once
/// \file concepts.hpp
/// The `schedule` concept: the contract of a schedule policy type.

#include <concepts>
#include <string_view>

#include "ppsched/config.hpp"
#include "ppsched/order.hpp"

namespace ppsched {

/// A schedule policy: a small value type (usually empty; parameterised policies are structural
/// so they can be template arguments) that names itself, states the configurations it serves,
/// and produces an order.
///
/// Requires of a type `S` and `const S s`:
/// - `S::name`: the C++ name (`"interleaved_1f1b"`);
/// - `S::pytorch_name`: the name PyTorch (or the schedule's authors) use (`"Interleaved1F1B"`);
/// - `S::placement`: the `stage_placement` the schedule runs on;
/// - `s.check(cfg)`: constexpr; returns normally when `cfg` is supported, otherwise fails
///   through `PPSCHED_EXPECTS` (a `config_error` at run time, a diagnostic at compile time);
/// - `s.constraints()`: a one-line human statement of what `check` requires;
/// - and either `s.generate(cfg)` returning an `order`, or `s.rank_actions(cfg, rank)`
///   returning a range of slot-like elements for one rank.
/// `generate<S>(cfg)` calls `check` before asking the policy for actions, with `cfg.placement`
/// set to `S::placement`.
template <class S>
concept schedule = std::semiregular<S> && requires(const S& s, const config& cfg, int rank) {
    { S::name } -> std::convertible_to<std::string_view>;
    { S::pytorch_name } -> std::convertible_to<std::string_view>;
    { S::placement } -> std::convertible_to<stage_placement>;
    s.check(cfg);
    { s.constraints() } -> std::convertible_to<std::string_view>;
} &&(
    requires(const S& s, const config& cfg) {
        { s.generate(cfg) } -> std::same_as<order>;
    } ||
    requires(const S& s, const config& cfg, int rank) {
        { s.rank_actions(cfg, rank) } -> std::ranges::forward_range;
    });

} // namespace ppsched
