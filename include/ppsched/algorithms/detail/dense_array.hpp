#pragma once
/// \file algorithms/detail/dense_array.hpp
/// A fixed-size, value-initialised array for the dense (kind, stage, microbatch) tables of the
/// constexpr algorithms.
///
/// Why not `std::vector`: during constant evaluation, filling a `std::vector` costs about 24
/// evaluation steps per element on clang 14 with libstdc++ 12 (its uninitialised-fill path),
/// so the tables alone took a large share of clang's default 1,048,576-step budget; `new T[n]{}`
/// costs nothing per element there, and the same at run time (one allocation, zeroed or
/// default-initialised).

#include <cstddef>
#include <utility>

namespace ppsched::detail {

/// `n` value-initialised `T`s (default member initialisers apply), owned; movable, not
/// copyable. Usable in constant expressions (transiently, like `std::vector`).
template <class T>
class dense_array {
  public:
    constexpr dense_array() noexcept = default;
    constexpr explicit dense_array(std::size_t n) : data_(n ? new T[n]{} : nullptr), size_(n) {}
    /// `n` copies of `value`.
    constexpr dense_array(std::size_t n, const T& value) : dense_array(n) {
        for (std::size_t i = 0; i < n; ++i) data_[i] = value;
    }
    constexpr dense_array(dense_array&& other) noexcept
        : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
    constexpr dense_array& operator=(dense_array&& other) noexcept {
        if (this != &other) {
            delete[] data_;
            data_ = std::exchange(other.data_, nullptr);
            size_ = std::exchange(other.size_, 0);
        }
        return *this;
    }
    dense_array(const dense_array&) = delete;
    dense_array& operator=(const dense_array&) = delete;
    constexpr ~dense_array() { delete[] data_; }

    [[nodiscard]] constexpr std::size_t size() const noexcept { return size_; }
    [[nodiscard]] constexpr T& operator[](std::size_t i) noexcept { return data_[i]; }
    [[nodiscard]] constexpr const T& operator[](std::size_t i) const noexcept { return data_[i]; }
    [[nodiscard]] constexpr T* begin() noexcept { return data_; }
    [[nodiscard]] constexpr T* end() noexcept { return data_ + size_; }
    [[nodiscard]] constexpr const T* begin() const noexcept { return data_; }
    [[nodiscard]] constexpr const T* end() const noexcept { return data_ + size_; }

  private:
    T* data_ = nullptr;
    std::size_t size_ = 0;
};

} // namespace ppsched::detail
