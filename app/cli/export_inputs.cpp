// Loading the inputs of `speculum-cli export` (see export_inputs.h).
#include "export_inputs.h"

#include "cli.h"
#include "core/file_io.h"
#include "core/json_input.h"

#include "core/export/report.h"
#include "core/model/model.h"
#include "core/resources.h"

#include <filesystem>
#include <fstream>
#include <iostream>

namespace speculum::cli {

namespace {

nlohmann::json read_json_file(const std::string& path, const char* what) {
    const std::string text = read_input_file(path, kMaxConfigFileBytes, what);
    try {
        return parse_json(text, path);
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error(e.what());
    }
}

hw::HardwareProfile find_hardware(const std::string& arg) {
    std::error_code ec;
    if (arg.ends_with(".json") || std::filesystem::is_regular_file(arg, ec)) return hw::load_profile(arg);
    try {
        return hw::find_profile(hw::hardware_dir(), arg);
    } catch (const std::exception& e) {
        throw UsageError(std::string("--hardware: ") + e.what());
    }
}

}  // namespace

ExportInputs load_export_inputs(const ExportInputOptions& o) {
    ExportInputs in;
    in.config_path         = o.config;
    exporting::Manifest& m = in.manifest;
    if (!o.config.empty()) {
        const nlohmann::json j = read_json_file(o.config, "config");
        try {
            if (exporting::is_manifest(j)) {
                m                = j.get<exporting::Manifest>();
                in.from_manifest = true;
                m.validate();
            } else {
                m.config = j.get<engine::SpecConfig>();
                m.config.validate();
            }
        } catch (const std::invalid_argument& e) {
            throw std::runtime_error(o.config + ": " + e.what());
        }
    } else {
        m.config.levels = {drafts::DraftSpec{}};  // the engine's default level: an identity self-draft
    }

    // The target: -m, else the manifest's (as recorded or beside it), else the bundled one.
    std::string target = o.model;
    if (target.empty() && in.from_manifest) target = exporting::resolve_model_path(m, o.config);
    if (target.empty() && !in.from_manifest) target = resource_path(kBundledTargetModel).string();
    if (target.empty() && o.need_target)
        throw std::runtime_error(o.config + ": the manifest's target " + m.model.path +
                                 " does not exist (nor beside the manifest); give it with -m");
    in.target_path = target;
    if (!target.empty() && (o.need_target || !in.from_manifest)) {
        const model::Model model = model::Model::load(target, {}, {}, model::WeightMemory::mapped);
        if (in.from_manifest && !o.model.empty() && !m.model.sha256.empty()) {
            const std::string warning = exporting::check_model_hash(m, target);
            if (!warning.empty()) std::cerr << "warning: " << warning << "\n";
        }
        // A config, or a manifest given another target, records the file it now names; a manifest's own target
        // keeps its identity and is hashed only when it records no digest yet.
        if (!in.from_manifest || !o.model.empty())
            m.model = exporting::identify_model(model, target, o.hash);
        else if (o.hash && m.model.sha256.empty())
            m.model.sha256 = exporting::identify_model(model, target, true).sha256;
        try {
            m.config.validate(model.hparams().n_layer);
        } catch (const std::invalid_argument& e) {
            throw std::runtime_error(o.config + ": " + e.what());
        }
    }
    if (!in.from_manifest && m.name.empty())
        m.name = o.config.empty() ? "default" : std::filesystem::path(o.config).stem().string();
    if (!o.name.empty()) m.name = o.name;
    if (!o.run_report.empty()) {
        in.run_report = read_json_file(o.run_report, "run report");
        try {
            m.figures.measured = exporting::measured_from_run_report(in.run_report);
        } catch (const std::invalid_argument& e) {
            throw std::runtime_error(o.run_report + ": " + e.what() + " (expected `speculum-cli run --report` output)");
        }
        m.figures.predicted = exporting::predict_from_measured(*m.figures.measured, m.config);
    }
    if (!o.hardware.empty()) m.hardware = find_hardware(o.hardware);
    if (!in.from_manifest || !o.run_report.empty() || !o.hardware.empty() || !o.name.empty()) {
        m.generator  = exporting::generator_string();
        m.created_at = exporting::utc_now_iso8601();
    }
    return in;
}

}  // namespace speculum::cli
