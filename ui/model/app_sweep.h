// The app's design-space sweeps as core/sweep specs: the axes the Design space panel offers (SpecConfig JSON
// pointers, or the modeled assumptions under /modeled), and the SweepSpec a sweep over two of them runs. The
// controller runs it with core/sweep's run_sweep into a result store (resumable, readable by speculum-cli results);
// modeled cells use SpecPredictEvaluator, measured cells an EngineEvaluator on the open model. No sweep loop here.
#pragma once

#include "core/sweep/sweep_spec.h"
#include "ui/model/app_config.h"
#include "ui/model/measured.h"
#include "ui/model/spec_mapping.h"

#include <filesystem>
#include <string>
#include <vector>

namespace speculum::ui {

struct AppSweepAxis {
    enum class Needs { nothing, measurement, model };
    const char* key;      // short name (speculum --sweep gamma,alpha)
    const char* label;    // what the panel shows
    const char* pointer;  // the configuration field it varies, as a sweep spec's axis path
    std::vector<double> values;
    bool integer = false;  // values written as JSON integers (SpecConfig's integer fields)
    // measurement: only a measured run shows its effect (pruning and truncation change acceptance, which no formula
    // predicts); model: a modeled assumption (alpha, c), which a measured sweep measures instead.
    Needs needs = Needs::nothing;
};

// gamma, alpha, c, tree budget, pruning ratio, truncation bits.
const std::vector<AppSweepAxis>& app_sweep_axes();
// By key or pointer; nullptr when there is none.
const AppSweepAxis* find_app_sweep_axis(const std::string& key_or_pointer);

struct AppSweepRequest {
    AppConfig config;              // the editor's configuration: the base every cell edits
    const MeasuredView* measured;  // the last complete run (modeled cells take its alpha and c), or nullptr
    MeasureSource source;          // measured sweeps: the prompts
    std::string model_path;        // measured sweeps: the open target (the spec's "target")
    const AppSweepAxis* x = nullptr;
    const AppSweepAxis* y = nullptr;
    bool measure          = false;  // measured cells (forced by an axis that needs measurement)
};

// Whether the request's cells are measured.
bool app_sweep_measured(const AppSweepRequest& r);

// The spec of the sweep: evaluator spec-predict (modeled, objective predicted_speedup) or engine (measured,
// objective speedup), the base, the two axes on a grid. A tree-budget axis puts the base in budget tree mode.
// Throws std::invalid_argument with a sentence for the user: the same axis twice, an assumption axis in a measured
// sweep, a measurement axis without measuring, or a configuration that cannot run (the reason).
sweep::SweepSpec app_sweep_spec(const AppSweepRequest& r);

// The editor's configuration as a sweep row's configuration: the SpecConfig with its modeled assumptions as the
// "modeled" block, so a row's axis values can be found in it (the heatmap outlines the editor's cell).
nlohmann::json editor_config_json(const AppConfig& cfg);

// Where the app keeps a sweep's store: one file per spec and model, so running the same sweep again resumes it.
std::filesystem::path app_sweep_file(const std::filesystem::path& dir, const sweep::SweepSpec& spec,
                                     const std::string& model_identity);

}  // namespace speculum::ui
