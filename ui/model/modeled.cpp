// AppConfig -> PredictInput (core/engine's predict_input_of, with the hardware and the horizontal split added)
// -> predict(), plus the tree and roofline figures the panels draw (core/analytic's tree_figures, chain_roofline).
#include "ui/model/modeled.h"

#include "core/analytic/cost.h"
#include "core/engine/predict_mapping.h"
#include "core/model/recurrent_state.h"

#include <algorithm>
#include <filesystem>

namespace speculum::ui {

analytic::ModelSpec model_spec_from_summary(const ModelSummary& m) {
    analytic::ModelSpec s;
    s.params_b    = double(m.n_params) / 1e9;
    s.weight_bits = m.weight_bits;
    if (m.hparams) {
        s.n_layers = m.hparams->n_layer;
        s.d_model  = m.hparams->n_embd;
        s.kv_dim   = m.hparams->n_embd_kv();
        if (const model::Hparams& hp = *m.hparams; hp.moe()) {
            // A mixture of experts: one token reads the dense part and its experts; a pass of n tokens the union.
            const double experts = 3.0 * hp.n_layer * double(hp.n_expert) * hp.n_ff_exp * hp.n_embd;
            s.expert_params_b    = experts / 1e9;
            s.params_b           = (double(m.n_params) - experts + experts * hp.n_expert_used / hp.n_expert) / 1e9;
            s.n_expert           = hp.n_expert;
            s.n_expert_used      = hp.n_expert_used;
        }
        if (const model::Hparams& hp = *m.hparams; hp.hybrid()) {  // the recurrent state and its rollback inputs
            const model::DeltaNetShape d = model::DeltaNetShape::of(hp);
            s.state_mb                   = double(hp.n_recurrent()) * double(d.state_floats()) * 4 / 1e6;
            s.state_input_kb             = double(hp.n_recurrent()) * double(d.input_floats()) * 4 / 1e3;
        }
    }
    return s;
}

engine::ModelFigures modeled_figures(const AppConfig& cfg, const MeasuredView* measured, std::string* alpha_source,
                                     std::string* c_source) {
    engine::ModelFigures figures;
    for (const LevelAssumption& l : cfg.modeled.levels) figures.levels.push_back({{l.alpha}, l.c});
    if (figures.levels.empty()) figures.levels.push_back({});
    if (alpha_source) *alpha_source = "assumed";
    if (c_source) *c_source = "assumed";
    if (cfg.modeled.acceptance_profile && !cfg.modeled.acceptance_profile->profile.conditional.empty()) {
        // The analytic models take α in (0, 1): a position every draft passed (1) or none did (0) is kept just inside.
        std::vector<double> alpha;
        for (double a : cfg.modeled.acceptance_profile->profile.conditional)
            alpha.push_back(std::clamp(a, 1e-3, 0.999));
        figures.levels[0].alpha = alpha;
        if (alpha_source)
            *alpha_source = "from " + std::filesystem::path(cfg.modeled.acceptance_profile->path).filename().string();
    } else if (measured && !measured->stats.pos_reached.empty() && measured->stats.pos_reached[0] > 0) {
        std::vector<double> alpha = measured->stats.alpha();
        while (!alpha.empty() && (alpha.back() <= 0 || alpha.back() >= 1)) alpha.pop_back();
        if (!alpha.empty()) {
            figures.levels[0].alpha = alpha;
            if (alpha_source) *alpha_source = "measured";
        }
    }
    if (measured && measured->stats.draft_cost_ratio() > 0) {  // level 1's measured draft pass / target step
        figures.levels[0].c = measured->stats.draft_cost_ratio();
        if (c_source) *c_source = "measured";
    }
    figures.rank_acceptance = cfg.spec.tree.prior;
    if (cfg.prefs.tree_prior_measured && measured && !measured->stats.rank_counts.offered.empty())
        figures.rank_acceptance = measured->stats.rank_alpha();
    return figures;
}

ModeledView compute_modeled(const AppConfig& cfg, const ModelSummary* model, const hw::HardwareProfile* hw,
                            const MeasuredView* measured) {
    ModeledView v;
    const engine::ModelFigures figures = modeled_figures(cfg, measured, &v.alpha_source, &v.c_source);

    v.target_spec             = model ? model_spec_from_summary(*model) : analytic::ModelSpec{};
    v.target_from_model       = model != nullptr;
    analytic::ModelSpec draft = v.target_spec;
    draft.params_b = std::max(1e-6, v.target_spec.params_b * cfg.level1().c);  // modeled: c × the target's weights

    std::vector<std::string> problems = cfg.problems();
    if (!problems.empty()) {
        v.error = problems.front();
        return v;
    }
    try {
        engine::ModeledConfig m    = engine::predict_input_of(cfg.spec, figures);
        v.not_modeled              = std::move(m.not_modeled);
        v.input                    = std::move(m.input);
        analytic::PredictInput& in = v.input;
        in.horizontal              = cfg.modeled.horizontal;
        if (hw) in.hardware = analytic::HardwareInput{hw->id, *hw, v.target_spec, draft, cfg.modeled.context, 0};
        analytic::validate(in);
        v.output = analytic::predict(in);
        v.tree   = m.tree;
        if (v.tree.parent.size() <= 1 && v.output.sequoia) v.tree = v.output.sequoia->tree;
        analytic::TreeFigures tf = analytic::tree_figures(v.tree, m.rank_table, in.c);
        v.node_acceptance        = std::move(tf.node_acceptance);
        v.tree_expected_length   = tf.expected_length;
        v.tree_depth             = tf.depth;
        v.tree_speedup           = tf.speedup;
        std::vector<double> positions(size_t(in.k), in.alpha.back());
        for (size_t i = 0; i < positions.size() && i < in.alpha.size(); ++i) positions[i] = in.alpha[i];
        v.length_distribution = analytic::chain_length_distribution(positions);
        if (hw) v.roofline = analytic::chain_roofline(*hw, v.target_spec, draft, in.k, cfg.modeled.context);
    } catch (const std::exception& e) {
        v.error = e.what();
    }
    return v;
}

}  // namespace speculum::ui
