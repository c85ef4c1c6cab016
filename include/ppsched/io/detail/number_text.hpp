#pragma once
/// \file io/detail/number_text.hpp
/// Numbers as text, in the two forms the writers use: the shortest text that reads back to the
/// same double (JSON, traces, cost files) and a short form for people (6 significant digits,
/// or every whole digit of larger numbers: titles, rulers, messages). One place, so every output
/// writes a number alike.

#include <algorithm>
#include <array>
#include <charconv>
#include <string>

namespace ppsched::detail::text {

/// Appends the shortest text that reads back to the same double (`0.1`, `1e+300`).
inline void append_shortest_number(std::string& out, double v) {
    std::array<char, 64> buf{};
    const auto res = std::to_chars(buf.data(), buf.data() + buf.size(), v);
    out.append(buf.data(), res.ptr);
}

/// The shortest text that reads back to the same double.
[[nodiscard]] inline std::string shortest_number(double v) {
    std::string s;
    append_shortest_number(s, v);
    return s;
}

/// A number for people: up to `digits` significant digits (`52`, `0.0833333`, `12.5`), and
/// below 10^15 at least every digit before the point and one after it (`6000002`, not `6e+06`:
/// a makespan of 6000002 beside a bound of 6000001 must not read as two equal numbers).
[[nodiscard]] inline std::string general_number(double v, int digits = 6) {
    if (const double size = v < 0 ? -v : v; size >= 1e6 && size < 1e15) {
        int whole = 0;
        for (double q = 1; q <= size; q *= 10) ++whole;
        digits = std::max(digits, whole + 1);
    }
    std::array<char, 64> buf{};
    const auto res =
        std::to_chars(buf.data(), buf.data() + buf.size(), v, std::chars_format::general, digits);
    return {buf.data(), res.ptr};
}

} // namespace ppsched::detail::text
