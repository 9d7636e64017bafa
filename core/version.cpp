// Collects the versions of the libraries this binary was built against (and runs against, where they say).
#include "core/version.h"

#include "kernels/cpu_info.h"

#include <oneapi/tbb/version.h>
#include <sqlite3.h>
#include <nlohmann/json.hpp>

#include <sstream>

namespace speculum {

BuildInfo build_info() {
    BuildInfo info;
    info.version    = SPECULUM_VERSION;
    info.build_type = SPECULUM_BUILD_TYPE;
#if defined(__clang__)
    info.compiler = "Clang " __clang_version__;
#elif defined(__GNUC__)
    info.compiler  = "GCC " __VERSION__;
#else
    info.compiler = "unknown";
#endif
#if defined(__SANITIZE_ADDRESS__)
    info.sanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    info.sanitized = true;
#endif
#endif
    info.libraries.emplace_back("oneTBB", std::string(TBB_VERSION_STRING) + " (runtime " + TBB_runtime_version() + ")");
    info.libraries.emplace_back("OpenBLAS", kernels::blas_config());
    info.libraries.emplace_back("SQLite", sqlite3_libversion());
    info.libraries.emplace_back("nlohmann-json", std::to_string(NLOHMANN_JSON_VERSION_MAJOR) + "." +
                                                     std::to_string(NLOHMANN_JSON_VERSION_MINOR) + "." +
                                                     std::to_string(NLOHMANN_JSON_VERSION_PATCH));
    info.cpu_features = kernels::cpu_features_string();
    return info;
}

std::string build_info_text(const BuildInfo& info) {
    std::ostringstream out;
    out << "speculum " << info.version << '\n';
    out << "  build type   " << info.build_type << (info.sanitized ? " (ASan+UBSan)" : "") << '\n';
    out << "  compiler     " << info.compiler << '\n';
    out << "  cpu          " << info.cpu_features << '\n';
    for (const auto& [name, version] : info.libraries) {
        out << "  " << name << std::string(name.size() < 13 ? 13 - name.size() : 1, ' ') << version << '\n';
    }
    return out.str();
}

}  // namespace speculum
