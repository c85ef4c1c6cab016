#pragma once
// An order range whose rows are made on the fly: each dereference returns a new row (a
// prvalue), gone once read, as a `views::transform` returning vectors makes them (written out:
// clang 14 cannot compile libstdc++ 12's views). Algorithms must copy such rows, never keep
// views or iterators into them.
#include <ppsched/order.hpp>

#include <cstddef>
#include <iterator>
#include <ranges>
#include <type_traits>

namespace test_support {

struct rows_by_value {
    const ppsched::order* o = nullptr;
    struct iterator {
        using iterator_concept = std::forward_iterator_tag;
        using value_type = ppsched::rank_slots;
        using difference_type = std::ptrdiff_t;
        const ppsched::order* o = nullptr;
        std::size_t r = 0;
        value_type operator*() const { return (*o)[r]; }
        iterator& operator++() {
            ++r;
            return *this;
        }
        iterator operator++(int) {
            iterator before = *this;
            ++r;
            return before;
        }
        bool operator==(const iterator&) const = default;
    };
    [[nodiscard]] iterator begin() const { return {o, 0}; }
    [[nodiscard]] iterator end() const { return {o, static_cast<std::size_t>(o->cfg().ranks)}; }
};
static_assert(ppsched::order_range<rows_by_value>);
static_assert(!std::is_reference_v<std::ranges::range_reference_t<const rows_by_value>>);

} // namespace test_support
