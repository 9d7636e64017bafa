// What the Export panel exports, built from the UiSnapshot alone: the manifest of the configuration being edited
// (AppConfig turned into a SpecConfig), engine snippets, the JSON report, the sweep as CSV, and the acceptance,
// speedup and heatmap plots as SVG or PNG. Plain functions, so they are tested without drawing anything.
#pragma once

#include "core/export/manifest.h"
#include "core/export/plot.h"
#include "core/export/plot_raster.h"
#include "ui/model/snapshot.h"

#include <cstdint>
#include <string>
#include <vector>

namespace speculum::ui {

enum class ExportFormat {
    manifest,
    llama_cpp,
    vllm,
    sglang,
    report,
    run_report,
    acceptance_profile,
    csv,
    history_csv,
    prompts_csv,
    svg_acceptance,
    svg_speedup,
    svg_heatmap,
    png_acceptance,
    png_speedup,
    png_heatmap,
};
inline constexpr ExportFormat kExportFormats[] = {ExportFormat::manifest,
                                                  ExportFormat::llama_cpp,
                                                  ExportFormat::vllm,
                                                  ExportFormat::sglang,
                                                  ExportFormat::report,
                                                  ExportFormat::run_report,
                                                  ExportFormat::acceptance_profile,
                                                  ExportFormat::csv,
                                                  ExportFormat::history_csv,
                                                  ExportFormat::prompts_csv,
                                                  ExportFormat::svg_acceptance,
                                                  ExportFormat::svg_speedup,
                                                  ExportFormat::svg_heatmap,
                                                  ExportFormat::png_acceptance,
                                                  ExportFormat::png_speedup,
                                                  ExportFormat::png_heatmap};

const char* export_format_name(ExportFormat f);   // shown in the picker, e.g. "vLLM speculative_config"
const char* export_default_file(ExportFormat f);  // e.g. "speculum-manifest.json"
bool export_format_binary(ExportFormat f);        // PNG: bytes, no text preview, no clipboard

struct ExportDocument {
    std::string text;                // text formats: the document; PNG: a description of the image
    std::vector<uint8_t> bytes;      // PNG only
    std::vector<std::string> notes;  // what could not be exported as asked (engine limits, editor-only settings)
    std::string error;               // non-empty: nothing to export, and why
};

// The SpecConfig a manifest exports: exactly what a measured run of the snapshot's configuration uses
// (ui/model/spec_mapping's spec_config_from_app, with the open dataset and task), so `speculum-cli run --config
// manifest.json` reproduces the app's measured run. `notes` collects what it cannot carry (the horizontal split,
// which the editor models only). Throws std::invalid_argument, as measuring would, for what cannot run.
engine::SpecConfig export_spec_config(const UiSnapshot& snap, std::vector<std::string>& notes);

// The manifest of the snapshot: the opened model (SHA-256 as given: the panel hashes off the GUI thread), the
// configuration, the measured run and the modeled figures, and the chosen hardware profile.
exporting::Manifest manifest_from_snapshot(const UiSnapshot& snap, const std::string& model_sha256,
                                           std::vector<std::string>& notes);

// Never throws: problems land in ExportDocument::error. PNG rendering happens here (a few milliseconds), with the
// plot text drawn from `glyphs` (the panels pass ImGui's font, ui/plot_font.h; null draws no text).
ExportDocument make_export(ExportFormat f, const UiSnapshot& snap, const std::string& model_sha256,
                           const exporting::GlyphSource* glyphs = nullptr);

}  // namespace speculum::ui
