// AppConfig -> PredictInput -> predict(), plus the tree, cascade and roofline figures the panels draw (their
// formulas are core/analytic's: tree_figures, vertical_chain_kmatrix, chain_roofline).
#include "ui/model/modeled.h"

#include "core/analytic/cost.h"
#include "core/analytic/kmatrix.h"

#include <algorithm>

namespace speculum::ui {

analytic::ModelSpec model_spec_from_summary(const ModelSummary& m) {
    analytic::ModelSpec s;
    s.params_b    = double(m.n_params) / 1e9;
    s.weight_bits = m.weight_bits;
    if (m.hparams) {
        s.n_layers = m.hparams->n_layer;
        s.d_model  = m.hparams->n_embd;
        s.kv_dim   = m.hparams->n_embd_kv();
    }
    return s;
}

namespace {

analytic::AcceptanceTable rank_table(const AppConfig& cfg, const MeasuredView* measured) {
    if (cfg.tree.mode == TreeMode::optimal_measured && measured && !measured->stats.rank_counts.offered.empty())
        return {measured->stats.rank_alpha()};
    return {cfg.tree.rank_acceptance};
}

}  // namespace

ModeledView compute_modeled(const AppConfig& cfg, const ModelSummary* model, const hw::HardwareProfile* hw,
                            const MeasuredView* measured) {
    ModeledView v;
    auto& in = v.input;
    if (measured && !measured->stats.pos_reached.empty() && measured->stats.pos_reached[0] > 0) {
        in.alpha = measured->stats.alpha();
        while (!in.alpha.empty() && (in.alpha.back() <= 0 || in.alpha.back() >= 1)) in.alpha.pop_back();
        v.alpha_source = "measured";
    }
    if (in.alpha.empty() || v.alpha_source == "assumed") {
        in.alpha       = {cfg.alpha};
        v.alpha_source = "assumed";
    }
    in.k = cfg.gamma;
    in.c = cfg.cost_ratio;
    if (measured && measured->stats.draft_cost_ratio() > 0) {  // level 1's measured draft pass / target step
        in.c       = measured->stats.draft_cost_ratio();
        v.c_source = "measured";
    }
    if (!cfg.cascade.empty()) {
        // Thm. 4.3's process (each level runs `steps` SD steps per call) for the paper's figure, and the engine's own
        // process (level j drafts `steps` tokens per step for level j - 1, truncate lengths) for the comparison with
        // what the engine measures: like with like.
        in.cascade.push_back({{cfg.alpha}, in.c, cfg.gamma});
        for (const auto& l : cfg.cascade) in.cascade.push_back({{l.alpha}, l.c, l.steps});
        std::vector<analytic::ChainLevel> chain{{in.alpha.front(), in.c, cfg.gamma, false}};
        for (const CascadeLevelConfig& l : cfg.cascade)
            chain.push_back({l.alpha, l.c, l.steps, l.drafter == drafts::DraftKind::maxgram});
        in.kmatrix = analytic::vertical_chain_kmatrix(chain);
    }
    in.horizontal = cfg.horizontal;

    analytic::AcceptanceTable p = rank_table(cfg, measured);
    switch (cfg.tree.mode) {
        case TreeMode::chain:
            break;
        case TreeMode::branching:
            in.tree = analytic::TreeInput{p, tree_from_branching(cfg.tree.branching).parent, 0, cfg.tree.max_depth};
            break;
        case TreeMode::budget:
        case TreeMode::optimal_measured:
            in.tree = analytic::TreeInput{p, {}, cfg.tree.budget, cfg.tree.max_depth};
            break;
    }

    v.target_spec             = model ? model_spec_from_summary(*model) : analytic::ModelSpec{};
    v.target_from_model       = model != nullptr;
    analytic::ModelSpec draft = v.target_spec;
    draft.params_b            = std::max(1e-6, v.target_spec.params_b * cfg.cost_ratio);  // modeled: c × weights
    if (hw) in.hardware = analytic::HardwareInput{hw->id, *hw, v.target_spec, draft, cfg.context, 0};

    std::vector<std::string> problems = cfg.problems();
    if (!problems.empty()) {
        v.error = problems.front();
        return v;
    }
    try {
        analytic::validate(in);
        v.output = analytic::predict(in);
        if (cfg.tree.mode == TreeMode::chain) {
            v.tree = analytic::chain_tree(cfg.gamma);
            p.clear();  // a chain: the rank-0 child at depth d is accepted with α_{d+1}
            for (double a : in.alpha) p.push_back({a});
        } else if (cfg.tree.mode == TreeMode::branching) {
            v.tree.parent = in.tree->parents;
        } else if (v.output.sequoia) {
            v.tree = v.output.sequoia->tree;
        }
        analytic::TreeFigures tf = analytic::tree_figures(v.tree, p, in.c);
        v.node_acceptance        = std::move(tf.node_acceptance);
        v.tree_expected_length   = tf.expected_length;
        v.tree_depth             = tf.depth;
        v.tree_speedup           = tf.speedup;
        std::vector<double> positions(size_t(cfg.gamma), in.alpha.back());
        for (size_t i = 0; i < positions.size() && i < in.alpha.size(); ++i) positions[i] = in.alpha[i];
        v.length_distribution = analytic::chain_length_distribution(positions);
        if (hw) v.roofline = analytic::chain_roofline(*hw, v.target_spec, draft, cfg.gamma, cfg.context);
    } catch (const std::exception& e) {
        v.error = e.what();
    }
    return v;
}

}  // namespace speculum::ui
