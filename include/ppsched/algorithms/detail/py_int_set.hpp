#pragma once
/// \file algorithms/detail/py_int_set.hpp
/// A set of small non-negative ints that iterates in the order CPython's `set` does.
///
/// PyTorch's UNSHARD/RESHARD pass walks a Python `set` of stage indices when it decides which
/// stages to reshard and in which order. To emit the same RESHARD order in every case we keep
/// the same open-addressing table CPython keeps (hash(n) == n for these ints): linear probing
/// over up to 10 slots, then perturbed probing; deleted slots become dummies; an insertion
/// reuses the last dummy passed on its probe path; the table is rebuilt when 5 * fill >=
/// 3 * mask. Checked against Python 3.11 on thousands of random add/remove traces.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ppsched::detail {

/// A CPython-compatible set of non-negative ints (see the file comment). All operations are
/// constant time for the handful of elements the UNSHARD pass keeps (at most prefetch + 1);
/// iteration is linear in the table size (at most 8 times the element count).
class py_int_set {
  public:
    constexpr py_int_set() : table_(min_size, empty) {}

    [[nodiscard]] constexpr std::size_t size() const noexcept { return used_; }

    [[nodiscard]] constexpr bool contains(int key) const noexcept {
        const std::size_t mask = table_.size() - 1;
        std::size_t i = static_cast<std::size_t>(key) & mask;
        std::size_t perturb = static_cast<std::size_t>(key);
        while (true) {
            const std::size_t probes = i + linear_probes <= mask ? linear_probes : 0;
            for (std::size_t j = 0; j <= probes; ++j) {
                const int e = table_[i + j];
                if (e == empty) return false;
                if (e == key) return true;
            }
            perturb >>= perturb_shift;
            i = (i * 5 + 1 + perturb) & mask;
        }
    }

    /// Adds `key` (>= 0) if absent.
    constexpr void insert(int key) {
        const std::size_t mask = table_.size() - 1;
        std::size_t i = static_cast<std::size_t>(key) & mask;
        std::size_t perturb = static_cast<std::size_t>(key);
        std::size_t free_slot = no_slot;
        while (true) {
            const std::size_t probes = i + linear_probes <= mask ? linear_probes : 0;
            for (std::size_t j = 0; j <= probes; ++j) {
                int& e = table_[i + j];
                if (e == empty) {
                    if (free_slot != no_slot) {
                        table_[free_slot] = key;
                        ++used_;
                        return;
                    }
                    e = key;
                    ++fill_;
                    ++used_;
                    if (fill_ * 5 >= mask * 3) resize(used_ * 4);
                    return;
                }
                if (e == dummy) {
                    free_slot = i + j;
                } else if (e == key) {
                    return;
                }
            }
            perturb >>= perturb_shift;
            i = (i * 5 + 1 + perturb) & mask;
        }
    }

    /// Removes `key` if present.
    constexpr void erase(int key) noexcept {
        const std::size_t mask = table_.size() - 1;
        std::size_t i = static_cast<std::size_t>(key) & mask;
        std::size_t perturb = static_cast<std::size_t>(key);
        while (true) {
            const std::size_t probes = i + linear_probes <= mask ? linear_probes : 0;
            for (std::size_t j = 0; j <= probes; ++j) {
                int& e = table_[i + j];
                if (e == empty) return;
                if (e == key) {
                    e = dummy;
                    --used_;
                    return;
                }
            }
            perturb >>= perturb_shift;
            i = (i * 5 + 1 + perturb) & mask;
        }
    }

    /// Calls `f(key)` for each element in CPython's iteration order (table slot order).
    /// `f` must not modify the set.
    template <class F>
    constexpr void for_each(F&& f) const {
        for (const int e : table_)
            if (e >= 0) f(e);
    }

  private:
    static constexpr int empty = -1;
    static constexpr int dummy = -2;
    static constexpr std::size_t min_size = 8;
    static constexpr std::size_t linear_probes = 9;
    static constexpr unsigned perturb_shift = 5;
    static constexpr std::size_t no_slot = static_cast<std::size_t>(-1);

    // CPython rebuilds the table at the smallest power of two (>= 8) above `min_used`,
    // re-inserting live keys in old slot order into fresh slots.
    constexpr void resize(std::size_t min_used) {
        std::size_t n = min_size;
        while (n <= min_used) n <<= 1;
        std::vector<int> old(n, empty);
        old.swap(table_);
        const std::size_t mask = n - 1;
        for (const int key : old) {
            if (key < 0) continue;
            std::size_t i = static_cast<std::size_t>(key) & mask;
            std::size_t perturb = static_cast<std::size_t>(key);
            bool placed = false;
            while (!placed) {
                const std::size_t probes = i + linear_probes <= mask ? linear_probes : 0;
                for (std::size_t j = 0; j <= probes && !placed; ++j) {
                    if (table_[i + j] == empty) {
                        table_[i + j] = key;
                        placed = true;
                    }
                }
                perturb >>= perturb_shift;
                i = (i * 5 + 1 + perturb) & mask;
            }
        }
        fill_ = used_;
    }

    std::vector<int> table_;
    std::size_t fill_ = 0; // live + dummy slots
    std::size_t used_ = 0; // live slots
};

} // namespace ppsched::detail
