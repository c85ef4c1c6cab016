// Fuzz target: PyTorch CSV orders (`io::read_csv`). Bad text is a parse_error with line and
// column; text that reads writes back to the same rows, and the order then meets the whole
// contract (contract.hpp).
#include "contract.hpp"

namespace {
// write_csv cannot tell a row of one idle slot from an empty row: both are an empty line.
bool same_rows(const ppsched::order& a, const std::vector<ppsched::rank_slots>& b) {
    if (a.num_ranks() != b.size()) return false;
    for (std::size_t r = 0; r < b.size(); ++r) {
        const auto& x = a.rank(static_cast<int>(r));
        const auto& y = b[r];
        const bool x_blank = x.empty() || (x.size() == 1 && !x[0]);
        const bool y_blank = y.empty() || (y.size() == 1 && !y[0]);
        if (x_blank && y_blank) continue;
        if (x.size() != y.size()) return false;
        for (std::size_t i = 0; i < x.size(); ++i)
            if (x[i] != y[i]) return false;
    }
    return true;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    ppsched::order o;
    try {
        // An index no order of the file's size can hold (0F2147483647 once overflowed `int`
        // in infer_config) is a parse_error at the door.
        o = ppsched::io::read_csv(text, "fuzz.csv");
    } catch (const ppsched::parse_error& e) {
        PPSCHED_FUZZ_CHECK(e.line() >= 1, e.what());
        return 0;
    } catch (const ppsched::config_error&) {
        // A configuration the indices imply but `check(config)` refuses (more than 65536
        // stages): refused, not a crash.
        return 0;
    }
    const std::string again = ppsched::io::write_csv(o);
    PPSCHED_FUZZ_CHECK(same_rows(o, ppsched::io::read_csv_rows(again)), again);
    ppsched_fuzz::check_order(o);
    return 0;
}
