#pragma once
/// \file order.hpp
/// A pipeline order: for each rank, a sequence of slots, each an action or idle. Also the
/// `order_range` concept that lets generic algorithms take any range of per-rank ranges a user
/// already has (of `action`, `slot` or `std::optional<action>`).

#include <cstddef>
#include <optional>
#include <ranges>
#include <type_traits>
#include <utility>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/config.hpp"
#include "ppsched/error.hpp"

namespace ppsched {

/// An action or an idle step, in 16 bytes (idle is encoded in the kind byte).
/// Behaves like `std::optional<action>`.
class slot {
  public:
    /// An idle slot.
    constexpr slot() noexcept { a_.kind_ = idle_kind; }
    constexpr slot(const action& a) noexcept : a_(a) {} // NOLINT: implicit on purpose
    constexpr slot(std::nullopt_t) noexcept : slot() {} // NOLINT

    [[nodiscard]] constexpr bool has_value() const noexcept { return a_.kind_ != idle_kind; }
    [[nodiscard]] constexpr bool is_idle() const noexcept { return !has_value(); }
    [[nodiscard]] constexpr explicit operator bool() const noexcept { return has_value(); }
    /// Requires has_value().
    [[nodiscard]] constexpr const action& operator*() const noexcept { return a_; }
    [[nodiscard]] constexpr const action* operator->() const noexcept { return &a_; }
    /// The action, or nullptr when idle.
    [[nodiscard]] constexpr const action* get() const noexcept {
        return has_value() ? &a_ : nullptr;
    }

    friend constexpr bool operator==(const slot& x, const slot& y) noexcept {
        return x.is_idle() ? y.is_idle() : (y.has_value() && x.a_ == y.a_);
    }

  private:
    static constexpr auto idle_kind = static_cast<action_kind>(0xff);
    action a_;
};

static_assert(sizeof(slot) == 16);
static_assert(std::is_trivially_copyable_v<slot>);

/// The slots of one rank.
using rank_slots = std::vector<slot>;

/// A pipeline order: a configuration and, per rank, its slots in execution order.
/// It is a range of per-rank ranges, so every generic algorithm takes it directly.
class order {
  public:
    constexpr order() = default;
    /// An empty order (no slots) for `cfg`; one row per rank.
    constexpr explicit order(const config& cfg) : cfg_(cfg), rows_(checked_ranks(cfg.ranks)) {}
    /// An order from rows already built. Requires: one row per rank.
    constexpr order(const config& cfg, std::vector<rank_slots> rows)
        : cfg_(cfg), rows_(std::move(rows)) {
        PPSCHED_EXPECTS(rows_.size() == static_cast<std::size_t>(cfg.ranks),
                        "ppsched::order: expected one row per rank (", cfg.ranks, "), got ",
                        rows_.size());
    }

    [[nodiscard]] constexpr const config& cfg() const noexcept { return cfg_; }
    [[nodiscard]] constexpr std::size_t num_ranks() const noexcept { return rows_.size(); }

    /// A rank's slots. Requires: 0 <= rank < num_ranks() (not checked: the generators' inner
    /// loops use these, as `std::vector::operator[]`).
    [[nodiscard]] constexpr rank_slots& operator[](std::size_t rank) noexcept {
        return rows_[rank];
    }
    [[nodiscard]] constexpr const rank_slots& operator[](std::size_t rank) const noexcept {
        return rows_[rank];
    }
    [[nodiscard]] constexpr rank_slots& rank(int r) noexcept {
        return rows_[static_cast<std::size_t>(r)];
    }
    [[nodiscard]] constexpr const rank_slots& rank(int r) const noexcept {
        return rows_[static_cast<std::size_t>(r)];
    }

    [[nodiscard]] constexpr auto begin() noexcept { return rows_.begin(); }
    [[nodiscard]] constexpr auto end() noexcept { return rows_.end(); }
    [[nodiscard]] constexpr auto begin() const noexcept { return rows_.begin(); }
    [[nodiscard]] constexpr auto end() const noexcept { return rows_.end(); }
    [[nodiscard]] constexpr std::size_t size() const noexcept { return rows_.size(); }

    /// Appends an action to a rank. Throws `config_error` unless 0 <= r < num_ranks() (a stage
    /// given for a rank is an easy mistake with several stages per rank).
    constexpr void push(int r, const action& a) {
        check_rank(r);
        rank(r).push_back(a);
    }
    /// Appends an idle slot to a rank (the same check).
    constexpr void push_idle(int r) {
        check_rank(r);
        rank(r).push_back(slot{});
    }

    /// Number of non-idle slots over all ranks.
    [[nodiscard]] constexpr std::size_t action_count() const noexcept {
        std::size_t n = 0;
        for (const auto& row : rows_)
            for (const auto& s : row)
                if (s.has_value()) ++n;
        return n;
    }
    /// Length of the longest row (slots, idle included).
    [[nodiscard]] constexpr std::size_t max_row_length() const noexcept {
        std::size_t n = 0;
        for (const auto& row : rows_) n = row.size() > n ? row.size() : n;
        return n;
    }

    /// Removes every idle slot (a compact order: what PyTorch's runtime executes).
    constexpr void drop_idle() {
        for (auto& row : rows_) {
            std::size_t w = 0;
            for (std::size_t i = 0; i < row.size(); ++i)
                if (row[i].has_value()) row[w++] = row[i];
            row.resize(w);
        }
    }
    /// Removes idle slots at the end of each row.
    constexpr void trim_trailing_idle() {
        for (auto& row : rows_)
            while (!row.empty() && row.back().is_idle()) row.pop_back();
    }

    friend constexpr bool operator==(const order&, const order&) = default;

  private:
    static constexpr std::size_t checked_ranks(int ranks) {
        PPSCHED_EXPECTS(ranks >= 0, "ppsched::order: negative rank count (", ranks, ")");
        return static_cast<std::size_t>(ranks);
    }
    constexpr void check_rank(int r) const {
        PPSCHED_EXPECTS(r >= 0 && static_cast<std::size_t>(r) < rows_.size(),
                        "ppsched::order::push: rank ", r, " is not one of the order's ",
                        rows_.size(), " ranks");
    }
    config cfg_{};
    std::vector<rank_slots> rows_;
};

namespace detail {
/// The action in a slot-like element, or nullptr when idle.
[[nodiscard]] constexpr const action* slot_action(const action& a) noexcept { return &a; }
[[nodiscard]] constexpr const action* slot_action(const slot& s) noexcept { return s.get(); }
[[nodiscard]] constexpr const action* slot_action(const std::optional<action>& s) noexcept {
    return s ? &*s : nullptr;
}
} // namespace detail

/// An element of a rank's sequence: an action, a slot, or an optional action.
template <class T>
concept slot_like = requires(const T& s) {
    { detail::slot_action(s) } -> std::same_as<const action*>;
};

/// Any range of per-rank ranges of slot-like elements (e.g. `order`,
/// `std::vector<std::vector<action>>`, `std::vector<std::vector<std::optional<action>>>`), that
/// can be read, rows included, through `const` references (the algorithms take them: a
/// `filter_view` cannot).
template <class R>
concept order_range = std::ranges::forward_range<const R> && std::ranges::forward_range<
    const std::remove_reference_t<std::ranges::range_reference_t<const R>>> &&
    slot_like<std::remove_cvref_t<std::ranges::range_reference_t<
        const std::remove_reference_t<std::ranges::range_reference_t<const R>>>>>;

/// Copies any order range into an `order` for `cfg`. Requires: one row per rank.
template <order_range R>
[[nodiscard]] constexpr order to_order(const R& rows, const config& cfg) {
    std::vector<rank_slots> out;
    for (const auto& row : rows) {
        rank_slots r;
        for (const auto& s : row) {
            const action* a = detail::slot_action(s);
            r.push_back(a ? slot(*a) : slot());
        }
        out.push_back(std::move(r));
    }
    return order(cfg, std::move(out));
}

static_assert(order_range<order>);
static_assert(order_range<std::vector<std::vector<action>>>);
static_assert(order_range<std::vector<std::vector<std::optional<action>>>>);

} // namespace ppsched
