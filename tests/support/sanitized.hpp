#pragma once
// Whether this test build runs under AddressSanitizer (g++ says so with __SANITIZE_ADDRESS__,
// clang with __has_feature): the heaviest tests then run a part of their problems, as the
// sanitized code runs several times slower; the builds without sanitizers run all of them.

namespace ppsched_test {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool sanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool sanitized = true;
#else
inline constexpr bool sanitized = false;
#endif
#else
inline constexpr bool sanitized = false;
#endif

} // namespace ppsched_test
