// The live analytic view of a configuration: builds a PredictInput from the AppConfig (core/engine's
// predict_input_of, plus the loaded model's shape and the chosen hardware profile) and evaluates core/analytic's
// predict() — under a millisecond, so the UI calls it in the same frame a slider moves. Everything here is "modeled",
// never measured.
#pragma once

#include "core/analytic/cost.h"
#include "core/analytic/predict.h"
#include "core/engine/predict_mapping.h"
#include "core/hw/profile.h"
#include "ui/model/app_config.h"
#include "ui/model/measured.h"
#include "ui/model/model_summary.h"

#include <optional>
#include <string>
#include <vector>

namespace speculum::ui {

using analytic::RooflinePoint;

struct ModeledView {
    analytic::PredictInput input;
    analytic::PredictOutput output;
    std::string error;  // non-empty when the configuration cannot be evaluated (the message says which field)
    std::vector<std::string> not_modeled;  // parts of the configuration the analytic models leave out, one per line
    // "assumed" (modeled.levels[0].alpha), "measured" (from the last run) or "from FILE" (a loaded acceptance profile)
    std::string alpha_source = "assumed";
    std::string c_source     = "assumed";  // "assumed" (modeled.levels[0].c) or "measured" (level 1 of the last run)

    analytic::TokenTree tree;             // the verification tree the config describes (a chain for a chain)
    std::vector<double> node_acceptance;  // P(node on the accepted path), parallel to tree.parent
    double tree_expected_length = 1;      // 1 + Σ node acceptance (root excluded)
    int tree_depth              = 0;
    double tree_speedup         = 1;          // E[len] / (1 + depth·c): the draft runs once per tree level
    std::vector<double> length_distribution;  // chain: P(tokens per target pass = t), t = 0..k+1

    std::vector<RooflinePoint> roofline;  // empty without a hardware profile
    analytic::ModelSpec target_spec;      // what the hardware model assumed for the target
    bool target_from_model = false;       // target_spec comes from the loaded GGUF (else LLaMA-7B fp16)
};

// The figures the analytic model takes per draft level: the assumptions (cfg.modeled.levels), with level 1's
// acceptance per position and cost from the last run when there is one; the tree prior by sibling rank (measured
// when the preference asks). `alpha_source`/`c_source` (optional) get "assumed" or "measured".
engine::ModelFigures modeled_figures(const AppConfig& cfg, const MeasuredView* measured,
                                     std::string* alpha_source = nullptr, std::string* c_source = nullptr);

// Never throws: problems land in `error` (and `output` keeps its defaults).
ModeledView compute_modeled(const AppConfig& cfg, const ModelSummary* model, const hw::HardwareProfile* hw,
                            const MeasuredView* measured);

// The target as the hardware model sees it: parameters, mean bits per weight and the shape from the GGUF.
analytic::ModelSpec model_spec_from_summary(const ModelSummary& m);

}  // namespace speculum::ui
