// Resource lookup (see resources.h).
#include "core/resources.h"

#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

namespace speculum {

static std::filesystem::path executable_dir() {
    char buf[4096];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
    if (n <= 0) return {};
    buf[n] = '\0';
    return std::filesystem::path(buf).parent_path();
}

std::vector<std::filesystem::path> resource_candidates() {
    std::vector<std::filesystem::path> out;
    if (const char* env = std::getenv("SPECULUM_RESOURCES"); env && *env) out.emplace_back(env);
    out.emplace_back(std::filesystem::path(SPECULUM_SOURCE_DIR) / "resources");
    if (auto exe = executable_dir(); !exe.empty())
        out.push_back(exe.parent_path() / "share" / "speculum" / "resources");
    return out;
}

std::optional<std::filesystem::path> resources_dir() {
    std::error_code ec;
    for (const auto& p : resource_candidates())
        if (std::filesystem::is_directory(p, ec)) return p;
    return std::nullopt;
}

std::optional<std::filesystem::path> datasets_dir() {
    std::error_code ec;
    // Datasets sit beside resources/ (source tree and install tree alike).
    for (const auto& p : resource_candidates()) {
        auto d = p.parent_path() / "datasets";
        if (std::filesystem::is_directory(d, ec)) return d;
    }
    return std::nullopt;
}

std::filesystem::path resource_path(const std::filesystem::path& relative) {
    std::error_code ec;
    std::string looked;
    for (const auto& p : resource_candidates()) {
        auto candidate = p / relative;
        if (std::filesystem::exists(candidate, ec)) return candidate;
        looked += (looked.empty() ? "" : ", ") + candidate.string();
    }
    throw std::runtime_error("bundled resource '" + relative.string() + "' not found (looked in: " + looked +
                             "; set SPECULUM_RESOURCES to the folder that holds it)");
}

}  // namespace speculum
