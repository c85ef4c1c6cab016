#pragma once
/// \file io/detail/utf8_text.hpp
/// Well-formed UTF-8 for the text writers: XML and JSON must be valid UTF-8, and file names
/// and user titles need not be.

#include <cstddef>
#include <string_view>

namespace ppsched::detail::text {

/// U+FFFD, the replacement character, in UTF-8.
inline constexpr std::string_view utf8_replacement = "\xEF\xBF\xBD";

/// The length of the well-formed UTF-8 sequence that starts `s` at `i` (1 to 4 bytes: no
/// overlong forms, no surrogates, nothing above U+10FFFF), or 0 when the bytes there are not
/// one (a stray continuation byte, a truncated or overlong sequence).
[[nodiscard]] constexpr std::size_t utf8_sequence_length(std::string_view s,
                                                         std::size_t i) noexcept {
    const auto at = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char b = at(i);
    if (b < 0x80) return 1;
    std::size_t n = 0;
    unsigned char lo = 0x80, hi = 0xBF; // the second byte's range
    if (b >= 0xC2 && b <= 0xDF) {
        n = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
        n = 3;
        if (b == 0xE0) lo = 0xA0; // overlong
        if (b == 0xED) hi = 0x9F; // surrogates
    } else if (b >= 0xF0 && b <= 0xF4) {
        n = 4;
        if (b == 0xF0) lo = 0x90; // overlong
        if (b == 0xF4) hi = 0x8F; // above U+10FFFF
    } else {
        return 0;
    }
    if (i + n > s.size()) return 0;
    if (at(i + 1) < lo || at(i + 1) > hi) return 0;
    for (std::size_t k = 2; k < n; ++k)
        if (at(i + k) < 0x80 || at(i + k) > 0xBF) return 0;
    return n;
}

} // namespace ppsched::detail::text
