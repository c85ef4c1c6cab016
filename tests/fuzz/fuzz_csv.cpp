// Fuzz target: PyTorch CSV orders (`io::read_csv`). Bad text is a parse_error with line and
// column; text that reads writes back to the same rows, and the order then meets the whole
// contract (contract.hpp).
#include "contract.hpp"

namespace {
// write_csv cannot tell a row of one idle slot from an empty row: both are an empty line; and
// empty lines at the end of a text are not read as ranks (an editor's trailing newlines), so
// blank rows at the end of an order do not come back.
bool same_rows(const ppsched::order& a, const std::vector<ppsched::rank_slots>& b) {
    const auto blank = [](const ppsched::rank_slots& row) {
        return row.empty() || (row.size() == 1 && !row[0]);
    };
    std::size_t kept = a.num_ranks();
    while (kept > b.size() && blank(a.rank(static_cast<int>(kept - 1)))) --kept;
    if (kept != b.size()) return false;
    for (std::size_t r = 0; r < b.size(); ++r) {
        const auto& x = a.rank(static_cast<int>(r));
        const auto& y = b[r];
        if (blank(x) && blank(y)) continue;
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
        // An index no size linear in the file can hold (0B2147483647 once overflowed `int` in
        // infer_config) is a parse_error at the door.
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
