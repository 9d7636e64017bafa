// Hardware profiles for the analytic cost model: bandwidths, peak throughputs, capacity and per-call overhead of
// one device, each figure with a source. Bundled profiles live in resources/hardware/*.json; "this machine" is
// measured by core/hw/microbench. A profile is data, not a measurement of Speculum's own runs.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace speculum::hw {

struct HardwareProfile {
    std::string id;                   // file stem, e.g. "rtx4090"
    std::string name;                 // "NVIDIA GeForce RTX 4090"
    std::string kind        = "cpu";  // "gpu" (discrete memory), "soc" (unified memory), "cpu"
    double mem_bw_gbps      = 0;      // main-memory read bandwidth, GB/s (1e9 B/s)
    double mem_gb           = 0;      // memory capacity available to the model, GB
    double fp16_tflops      = 0;      // dense peak, TFLOP/s (0 = not available / not stated)
    double bf16_tflops      = 0;      // dense peak, TFLOP/s
    double fp32_tflops      = 0;      // dense peak, TFLOP/s
    double int8_tops        = 0;      // dense peak, TOP/s
    double call_overhead_us = 0;      // fixed time per forward call (launch/dispatch), microseconds
    double flash_bw_gbps    = 0;      // storage → DRAM bandwidth for streamed layers, GB/s (0 = not modeled)
    std::map<std::string, std::string> sources;             // JSON field name → citation text
    std::vector<std::string> estimates;                     // JSON field names whose value is an estimate, not a spec
    bool measured                                 = false;  // produced by microbenchmarks on this machine
    bool operator==(const HardwareProfile&) const = default;

    // Peak for a compute type ("fp16", "bf16", "fp32", "int8"), in FLOP/s; falls back to fp32 when the type is
    // not stated; throws on an unknown name.
    double peak_flops(const std::string& compute) const;
};

// Throws std::invalid_argument naming the field: positive bandwidth and capacity, at least one peak, non-negative
// figures, a known kind, and a source for every non-zero figure.
void validate(const HardwareProfile& p);

void to_json(nlohmann::json& j, const HardwareProfile& p);
void from_json(const nlohmann::json& j, HardwareProfile& p);  // strict: unknown keys are errors

// Load and validate one file; errors name the file.
HardwareProfile load_profile(const std::filesystem::path& file);

// Where "This machine" (a profile measured by the microbenchmarks, hw::profile_from_microbench) is cached between
// runs: $XDG_CACHE_HOME/speculum/this_machine.json, else ~/.cache/speculum/this_machine.json; empty when neither
// variable is set.
std::filesystem::path machine_profile_cache();
inline constexpr const char* kMachineProfileId = "this_machine";
void save_profile(const HardwareProfile& p, const std::filesystem::path& file);

// resources/hardware: `override_dir` if non-empty, else $SPECULUM_RESOURCES/hardware, else the source tree's
// (SPECULUM_SOURCE_DIR)/resources/hardware. Throws if none exists.
std::filesystem::path hardware_dir(const std::filesystem::path& override_dir = {});
// Every *.json profile in a directory, sorted by id.
std::vector<HardwareProfile> list_profiles(const std::filesystem::path& dir);
// The profile with this id (file stem) in dir; the error lists the available ids.
HardwareProfile find_profile(const std::filesystem::path& dir, const std::string& id);

}  // namespace speculum::hw
