// `speculum-cli version`: version, build type, compiler, CPU fast paths and the library versions found.
#include "cli.h"

#include "core/version.h"

#include <nlohmann/json.hpp>

#include <iostream>

namespace speculum::cli {

int cmd_version(int argc, char** argv) {
    Args args("version", {{"json", 0, false, "", "print as JSON"}}, {});
    if (!args.parse(argc, argv)) {
        std::cout << args.help("Print the version, build type and the versions of the libraries found.");
        return 0;
    }
    BuildInfo info = build_info();
    if (args.has("json")) {
        nlohmann::json j;
        j["version"]      = info.version;
        j["build_type"]   = info.build_type;
        j["compiler"]     = info.compiler;
        j["sanitized"]    = info.sanitized;
        j["cpu_features"] = info.cpu_features;
        for (const auto& [name, version] : info.libraries) j["libraries"][name] = version;
        std::cout << j.dump(2) << '\n';
        return 0;
    }
    std::cout << build_info_text(info);
    return 0;
}

}  // namespace speculum::cli
