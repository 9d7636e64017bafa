// `speculum-cli version`: version, build type, compiler, CPU fast paths and the library versions found.
#include "cli.h"
#include "sweep_mpi.h"

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
    // speculum-cli only (core never links MPI): which MPI `sweep --mpi` runs on, "" when built without it.
    std::string mpi = mpi_library_version();
    if (args.has("json")) {
        nlohmann::json j;
        j["version"]      = info.version;
        j["build_type"]   = info.build_type;
        j["compiler"]     = info.compiler;
        j["sanitized"]    = info.sanitized;
        j["cpu_features"] = info.cpu_features;
        for (const auto& [name, version] : info.libraries) j["libraries"][name] = version;
        j["mpi"] = mpi.empty() ? nlohmann::json(nullptr) : nlohmann::json(mpi);
        std::cout << j.dump(2) << '\n';
        return 0;
    }
    std::cout << build_info_text(info);
    std::cout << "MPI (speculum-cli sweep --mpi): " << (mpi.empty() ? "not built (SPECULUM_WITH_MPI=OFF)" : mpi)
              << '\n';
    return 0;
}

}  // namespace speculum::cli
