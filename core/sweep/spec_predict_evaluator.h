// Modeled evaluator over engine configurations: a configuration is a SpecConfig (docs/engine.md) plus a "modeled"
// block with the acceptance and cost the analytic model assumes per draft level; predict_input_of maps it onto
// predict(). So a modeled sweep varies the same JSON pointers a measured one does ("/gamma/0", "/tree/node_budget")
// next to the assumptions ("/modeled/levels/0/alpha"). Every metric it reports is MODELED. The app's modeled sweeps
// and `speculum-cli sweep` with "evaluator": "spec-predict" run it.
#pragma once

#include "core/analytic/csdrafting.h"
#include "core/engine/predict_mapping.h"
#include "core/engine/spec_config.h"
#include "core/sweep/evaluator.h"

namespace speculum::sweep {

// The "modeled" block of a configuration:
//   {"levels": [{"alpha": 0.8 | [0.9, 0.8, ...], "c": 0.05}, ...],  // per draft level, [0] = level 1
//    "rank_acceptance": [0.7, 0.2, ...],                            // trees: P(accept) by sibling rank
//    "horizontal": [{"alpha": 0.8, "c": 0.05, "count": 4}, ...]}    // CS Drafting's horizontal split
// A level without figures takes its draft kind's assumption (drafts::kDraftKinds).
struct SpecModeled {
    engine::ModelFigures figures;
    std::vector<analytic::HorizontalSegment> horizontal;
    bool operator==(const SpecModeled&) const = default;
};

void to_json(nlohmann::json& j, const SpecModeled& m);
// Strict (JsonReader): unknown keys, alpha outside (0, 1), negative c name the path under `where`. Levels the block
// does not give are filled from `spec`'s draft kinds.
SpecModeled spec_modeled_from_json(const nlohmann::json& j, const engine::SpecConfig& spec,
                                   const std::string& where = "modeled");

// A configuration split into its SpecConfig and its modeled block (validated; errors name the field).
struct SpecPredictConfig {
    engine::SpecConfig spec;
    SpecModeled modeled;
};
SpecPredictConfig parse_spec_predict_config(const nlohmann::json& config);
// The configuration a SpecConfig and its figures make (what the app's modeled sweep puts in its base).
nlohmann::json spec_predict_config(const engine::SpecConfig& spec, const SpecModeled& modeled);

class SpecPredictEvaluator : public Evaluator {
public:
    std::string kind() const override { return "spec-predict"; }
    std::string model_hash() const override;  // the analytic model's version (results of another build recompute)
    std::string dataset_hash(const nlohmann::json& config, int prompts) const override;  // constant: no prompts
    void validate(const nlohmann::json& config) const override;
    // Metrics: predicted_speedup (the K-matrix cascade's EWIF where there is one, else EWIF), accepted_length. The
    // predictions hold predict()'s output plus "draft_work" (gamma x c of level 1: the Pareto's cost axis),
    // "tree_speedup" and "not_modeled" (what the analytic model leaves out of this configuration).
    EvalResult evaluate(const nlohmann::json& config, const EvalContext& ctx) override;
};

}  // namespace speculum::sweep
