// Hardware profile data, JSON round-trip, validation and lookup (see profile.h).
#include "core/hw/profile.h"
#include "core/json_reader.h"

#include "core/file_io.h"
#include "core/json_input.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

namespace speculum::hw {

namespace {

const std::set<std::string> kKinds{"gpu", "soc", "cpu"};

struct NumField {
    const char* key;
    double HardwareProfile::*member;
};
const NumField kNumFields[] = {
    {"memory_bandwidth_gbps", &HardwareProfile::mem_bw_gbps}, {"memory_gb", &HardwareProfile::mem_gb},
    {"fp16_tflops", &HardwareProfile::fp16_tflops},           {"bf16_tflops", &HardwareProfile::bf16_tflops},
    {"fp32_tflops", &HardwareProfile::fp32_tflops},           {"int8_tops", &HardwareProfile::int8_tops},
    {"call_overhead_us", &HardwareProfile::call_overhead_us}, {"flash_bandwidth_gbps", &HardwareProfile::flash_bw_gbps},
};

void fail(const std::string& field, const std::string& what) {
    throw std::invalid_argument("hardware profile field '" + field + "': " + what);
}

}  // namespace

double HardwareProfile::peak_flops(const std::string& compute) const {
    double t = 0;
    if (compute == "fp16")
        t = fp16_tflops;
    else if (compute == "bf16")
        t = bf16_tflops;
    else if (compute == "fp32")
        t = fp32_tflops;
    else if (compute == "int8")
        t = int8_tops;
    else
        throw std::invalid_argument("unknown compute type '" + compute + "' (fp16, bf16, fp32, int8)");
    if (t <= 0) t = fp32_tflops;
    return t * 1e12;
}

void validate(const HardwareProfile& p) {
    if (p.id.empty()) fail("id", "must not be empty");
    if (p.name.empty()) fail("name", "must not be empty");
    if (!kKinds.count(p.kind)) fail("kind", "must be gpu, soc or cpu, got '" + p.kind + "'");
    for (const auto& f : kNumFields) {
        double v = p.*f.member;
        if (!std::isfinite(v) || v < 0) fail(f.key, "must be finite and >= 0");
        if (v > 0 && !p.measured && !p.sources.count(f.key)) fail("sources", std::string("no source for ") + f.key);
    }
    if (p.mem_bw_gbps <= 0) fail("memory_bandwidth_gbps", "must be > 0");
    if (p.mem_gb <= 0) fail("memory_gb", "must be > 0");
    if (p.fp32_tflops <= 0 && p.fp16_tflops <= 0 && p.bf16_tflops <= 0)
        fail("fp32_tflops", "at least one floating-point peak must be > 0");
    for (const auto& e : p.estimates) {
        bool known = false;
        for (const auto& f : kNumFields) known |= e == f.key;
        if (!known) fail("estimates", "unknown field '" + e + "'");
    }
}

void to_json(nlohmann::json& j, const HardwareProfile& p) {
    j         = nlohmann::json::object();
    j["id"]   = p.id;
    j["name"] = p.name;
    j["kind"] = p.kind;
    for (const auto& f : kNumFields) j[f.key] = p.*f.member;
    j["sources"]   = p.sources;
    j["estimates"] = p.estimates;
    j["measured"]  = p.measured;
}

void from_json(const nlohmann::json& j, HardwareProfile& p) {
    JsonReader r(j, "hardware profile");
    p = HardwareProfile{};
    for (const char* required : {"name", "kind"})
        if (!r.has(required)) r.fail(r.at(required), "missing");
    r.get("id", p.id);
    r.get("name", p.name);
    r.get("kind", p.kind);
    for (const auto& f : kNumFields) r.get(f.key, p.*f.member);
    if (const nlohmann::json* sources = r.sub("sources")) {
        if (!sources->is_object()) r.fail(r.at("sources"), "must be an object of field -> citation");
        for (const auto& [k, v] : sources->items()) p.sources[k] = r.string(v, json_path(r.at("sources"), k));
    }
    if (const nlohmann::json* estimates = r.sub("estimates")) {
        if (!estimates->is_array()) r.fail(r.at("estimates"), "must be an array of field names");
        for (size_t i = 0; i < estimates->size(); ++i)
            p.estimates.push_back(r.string((*estimates)[i], json_path(r.at("estimates"), i)));
    }
    r.get("measured", p.measured);
    r.finish();
}

HardwareProfile load_profile(const std::filesystem::path& file) {
    const std::string text = read_input_file(file.string(), kMaxConfigFileBytes, "hardware profile");
    try {
        nlohmann::json j = parse_json(text, file.string());
        HardwareProfile p;
        from_json(j, p);
        if (p.id.empty()) p.id = file.stem().string();
        validate(p);
        return p;
    } catch (const std::exception& e) {
        throw std::runtime_error(file.string() + ": " + e.what());
    }
}

void save_profile(const HardwareProfile& p, const std::filesystem::path& file) {
    validate(p);
    nlohmann::json j;
    to_json(j, p);
    write_file_atomic(file.string(), j.dump(2) + "\n");  // a failed write never leaves a partial profile
}

std::filesystem::path machine_profile_cache() {
    const char* xdg  = std::getenv("XDG_CACHE_HOME");
    const char* home = std::getenv("HOME");
    std::filesystem::path dir;
    if (xdg && *xdg)
        dir = xdg;
    else if (home && *home)
        dir = std::filesystem::path(home) / ".cache";
    else
        return {};
    return dir / "speculum" / (std::string(kMachineProfileId) + ".json");
}

std::filesystem::path hardware_dir(const std::filesystem::path& override_dir) {
    std::vector<std::filesystem::path> tried;
    if (!override_dir.empty()) {
        auto d = std::filesystem::is_directory(override_dir / "hardware") ? override_dir / "hardware" : override_dir;
        if (std::filesystem::is_directory(d)) return d;
        throw std::runtime_error("resources directory " + override_dir.string() + " does not exist");
    }
    if (const char* env = std::getenv("SPECULUM_RESOURCES"); env && *env)
        tried.push_back(std::filesystem::path(env) / "hardware");
#ifdef SPECULUM_SOURCE_DIR
    tried.push_back(std::filesystem::path(SPECULUM_SOURCE_DIR) / "resources" / "hardware");
#endif
    for (const auto& d : tried)
        if (std::filesystem::is_directory(d)) return d;
    std::string list;
    for (const auto& d : tried) list.append(" ").append(d.string());
    throw std::runtime_error("no resources/hardware directory found (tried:" + list + "); pass --resources DIR");
}

std::vector<HardwareProfile> list_profiles(const std::filesystem::path& dir) {
    std::vector<HardwareProfile> out;
    for (const auto& e : std::filesystem::directory_iterator(dir))
        if (e.is_regular_file() && e.path().extension() == ".json") out.push_back(load_profile(e.path()));
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
    return out;
}

HardwareProfile find_profile(const std::filesystem::path& dir, const std::string& id) {
    auto file = dir / (id + ".json");
    if (std::filesystem::is_regular_file(file)) return load_profile(file);
    std::string ids;
    for (const auto& e : std::filesystem::directory_iterator(dir))
        if (e.path().extension() == ".json") ids += (ids.empty() ? "" : ", ") + e.path().stem().string();
    throw std::runtime_error("no hardware profile '" + id + "' in " + dir.string() + " (available: " + ids + ")");
}

}  // namespace speculum::hw
