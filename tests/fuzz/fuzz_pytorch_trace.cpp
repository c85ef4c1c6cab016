// Fuzz target: PyTorch profiler traces (`io::read_pytorch_trace`, one file) and what
// `calibrate` makes of them. Bad text is a parse_error; a trace that is not a pipeline run is a
// config_error; one that reads calibrates to finite costs or says why it cannot.
#include "contract.hpp"

#include <ppsched/calibrate.hpp>
#include <ppsched/io/pytorch_trace.hpp>

#include <array>
#include <cmath>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::array<ppsched::io::trace_text, 1> files{ppsched::io::trace_text{
        std::string(reinterpret_cast<const char*>(data), size), "fuzz.json"}};
    try {
        const ppsched::io::measured_trace trace = ppsched::io::read_pytorch_trace(files);
        const ppsched::calibration c = ppsched::calibrate(trace);
        (void)c;
    } catch (const ppsched::parse_error&) {
        return 0;
    } catch (const ppsched::config_error&) {
        return 0;
    }
    return 0;
}
