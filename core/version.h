// Build identity of this Speculum binary: version, build type, compiler and the library versions it found.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace speculum {

struct BuildInfo {
    std::string version;                                         // e.g. "0.1.0"
    std::string build_type;                                      // CMake build type: Release, Debug, RelWithDebInfo
    std::string compiler;                                        // e.g. "GCC 12.2.0"
    bool sanitized = false;                                      // built with ASan+UBSan
    std::vector<std::pair<std::string, std::string>> libraries;  // (name, version) found at build/run time
    std::string cpu_features;                                    // fast paths this machine can take
};

BuildInfo build_info();

// Multi-line, human-readable form of build_info() for `speculum-cli version` and the app's About box.
std::string build_info_text(const BuildInfo& info);

}  // namespace speculum
