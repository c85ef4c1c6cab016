// Fuzz target: Megatron layout strings (`plan::parse_megatron_layout`). Bad text is a
// parse_error on line 1 with a column inside the text (or just past it); a layout that reads
// writes back (`write_megatron_layout`) to text that reads to the same stages; the expansion
// stays bounded (10^6 symbols) however the groups nest or repeat.
#include "contract.hpp"

#include <ppsched/plan/layout.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    ppsched::stage_layout stages;
    try {
        stages = ppsched::parse_megatron_layout(text, "fuzz");
    } catch (const ppsched::parse_error& e) {
        PPSCHED_FUZZ_CHECK(e.line() == 1 && e.column() >= 1 && e.column() <= size + 1, e.what());
        return 0;
    }
    std::size_t layers = 0;
    for (const auto& st : stages) layers += st.size();
    PPSCHED_FUZZ_CHECK(layers + stages.size() <= 1'000'001, "expansion beyond its bound");
    const std::string again = ppsched::write_megatron_layout(stages);
    PPSCHED_FUZZ_CHECK(ppsched::parse_megatron_layout(again, "again") == stages, again);
    return 0;
}
