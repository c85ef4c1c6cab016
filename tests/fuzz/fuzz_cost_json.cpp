// Fuzz target: cost files (`io::read_cost_json`). Bad text is a parse_error with line and
// column (a value the model refuses: config_error); costs that read simulate a small pipeline
// whose outputs hold no inf or nan.
#include "contract.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    ppsched::cost_model costs;
    try {
        costs = ppsched::io::read_cost_json(text, "fuzz.json");
        costs.check();
        for (int s = 0; s < 4; ++s) (void)costs.at(s);
    } catch (const ppsched::parse_error& e) {
        // A position, except for values inconsistent with each other (a B below a given I or
        // W), which read_cost_json documents as line 0: no single place is wrong ("fuzz.json:
        // B must be ...", not "fuzz.json:1:25: ...").
        PPSCHED_FUZZ_CHECK(e.line() >= 1 || std::string_view(e.what()).starts_with("fuzz.json: "),
                           e.what());
        return 0;
    } catch (const ppsched::config_error&) {
        return 0;
    }
    static const ppsched::order o = ppsched::generate<ppsched::interleaved_1f1b>(
        {.ranks = 2, .stages_per_rank = 2, .microbatches = 4});
    try {
        const ppsched::simulation sim = ppsched::simulate(o, costs);
        PPSCHED_FUZZ_CHECK(sim.status == ppsched::simulation_status::ok);
        // Non-finite results are issue 15's door check (cost_model::check); here the outputs
        // must refuse them rather than write them.
        ppsched_fuzz::check_outputs(sim, o.cfg());
    } catch (const ppsched::config_error&) {}
    return 0;
}
