// Fuzz target: action strings (`parse_action`). Bad text is a parse_error with a column inside
// the text; good text round-trips through to_string.
#include "contract.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    ppsched::action a;
    const auto st = ppsched::detail::parse_action(text, a);
    try {
        const ppsched::action b = ppsched::parse_action(text);
        PPSCHED_FUZZ_CHECK(static_cast<bool>(st) && a == b);
        const std::string back = ppsched::to_string(b);
        PPSCHED_FUZZ_CHECK(ppsched::parse_action(back) == b, back);
        PPSCHED_FUZZ_CHECK(ppsched::to_string(ppsched::parse_action(back)) == back, back);
    } catch (const ppsched::parse_error& e) {
        PPSCHED_FUZZ_CHECK(!st);
        PPSCHED_FUZZ_CHECK(e.column() >= 1 && e.column() <= size + 1, e.what());
    }
    return 0;
}
