// What `speculum-cli export` reads: a manifest or a SpecConfig (made into a manifest), the target it names, a run
// report's measured figures and a hardware profile. Kept apart from cmd_export.cpp so each file stays readable.
#pragma once

#include "core/export/manifest.h"

#include <optional>
#include <string>

namespace speculum::cli {

struct ExportInputs {
    exporting::Manifest manifest;
    bool from_manifest = false;  // --config named a manifest (else a SpecConfig made into one)
    std::string config_path;     // as given
    std::string target_path;     // the target file ("" when it was not needed and not found)
    nlohmann::json run_report;   // --run-report's JSON, null when none
};

struct ExportInputOptions {
    std::string config;        // --config ("" = none: the default config with the bundled target)
    std::string model;         // -m ("" = the manifest's target, else the bundled target)
    std::string run_report;    // --run-report
    std::string hardware;      // --hardware: a profile id or a JSON file
    std::string name;          // --name
    bool need_target = false;  // the target file must exist (manifest, draft-gguf)
    bool hash        = false;  // record the target's SHA-256 (manifest)
};

// Throws std::runtime_error naming the file on bad input; warnings (hash mismatch) go to stderr.
ExportInputs load_export_inputs(const ExportInputOptions& o);

}  // namespace speculum::cli
