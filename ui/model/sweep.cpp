// Modeled and measured sweeps over two axes and the Pareto front of their cells.
#include "ui/model/sweep.h"

#include "core/analytic/pareto.h"

#include "ui/model/modeled.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>

namespace speculum::ui {

const char* sweep_axis_name(SweepAxis a) {
    switch (a) {
        case SweepAxis::gamma:
            return "gamma (draft tokens)";
        case SweepAxis::alpha:
            return "assumed alpha";
        case SweepAxis::cost_ratio:
            return "cost ratio c";
        case SweepAxis::tree_budget:
            return "tree node budget";
        case SweepAxis::prune_ratio:
            return "pruning ratio";
        case SweepAxis::weight_trunc_bits:
            return "weight truncation bits";
    }
    return "?";
}

const char* sweep_metric_name(SweepMetric m) {
    switch (m) {
        case SweepMetric::speedup:
            return "predicted speedup";
        case SweepMetric::ewif:
            return "EWIF";
        case SweepMetric::expected_tokens:
            return "tokens per target pass";
        case SweepMetric::tree_speedup:
            return "tree speedup";
        case SweepMetric::cost_ratio:
            return "cost ratio c";
    }
    return "?";
}

bool sweep_axis_needs_measurement(SweepAxis a) {
    return a == SweepAxis::prune_ratio || a == SweepAxis::weight_trunc_bits;
}

std::vector<double> sweep_axis_values(SweepAxis a) {
    std::vector<double> v;
    switch (a) {
        case SweepAxis::gamma:
            for (int k = 1; k <= 12; ++k) v.push_back(k);
            break;
        case SweepAxis::alpha:
            for (int i = 10; i <= 19; ++i) v.push_back(i * 0.05);
            break;
        case SweepAxis::cost_ratio:
            for (int i = 0; i <= 10; ++i) v.push_back(i * 0.03);
            break;
        case SweepAxis::tree_budget:
            for (int n : {2, 4, 8, 12, 16, 24, 32, 48, 64}) v.push_back(n);
            break;
        case SweepAxis::prune_ratio:
            for (int i = 0; i <= 9; ++i) v.push_back(i * 0.1);
            break;
        case SweepAxis::weight_trunc_bits:
            for (int t = 0; t <= 7; ++t) v.push_back(t);
            break;
    }
    return v;
}

const char* sweep_axis_pointer(SweepAxis a) {
    switch (a) {
        case SweepAxis::gamma:
            return "/gamma/0";
        case SweepAxis::prune_ratio:
            return "/levels/0/prune/ratio";
        case SweepAxis::weight_trunc_bits:
            return "/levels/0/weight_trunc_bits";
        case SweepAxis::alpha:
        case SweepAxis::cost_ratio:
        case SweepAxis::tree_budget:
            return nullptr;
    }
    return nullptr;
}

AppConfig apply_axis(AppConfig cfg, SweepAxis a, double value) {
    switch (a) {
        case SweepAxis::gamma:
            if (!cfg.spec.gamma.empty()) cfg.spec.gamma[0] = int(std::lround(value));
            break;
        case SweepAxis::alpha:
            cfg.level1().alpha = value;
            break;
        case SweepAxis::cost_ratio:
            cfg.level1().c = value;
            break;
        case SweepAxis::tree_budget:
            cfg.spec.tree.node_budget = int(std::lround(value)) - 1;  // the axis counts the root
            if (tree_mode(cfg) != TreeMode::optimal_measured) set_tree_mode(cfg, TreeMode::budget);
            break;
        case SweepAxis::prune_ratio:
            cfg.draft().prune.ratio = float(value);
            break;
        case SweepAxis::weight_trunc_bits:
            cfg.draft().weight_trunc_bits = int(std::lround(value));
            break;
    }
    return cfg;
}

SweepView run_modeled_sweep(const AppConfig& base, const ModelSummary* model, SweepAxis x, SweepAxis y,
                            SweepMetric metric, const CancelToken& cancel, const ProgressFn& progress,
                            const std::function<void(const SweepView&)>& row_done, const MeasuredView* measured) {
    for (SweepAxis a : {x, y})
        if (sweep_axis_needs_measurement(a))
            throw std::invalid_argument(std::string("a modeled sweep cannot vary ") + sweep_axis_name(a) +
                                        ": its effect on acceptance must be measured");
    SweepView s;
    s.x = x, s.y = y, s.metric = metric, s.base = base;
    s.xs = sweep_axis_values(x), s.ys = sweep_axis_values(y);
    // The measured figures the panels use, without those an axis sets (compute_modeled takes α from the stats'
    // positions and c from level 1's cost ratio).
    std::optional<MeasuredView> figures;
    if (measured) {
        figures = *measured;
        if (x == SweepAxis::alpha || y == SweepAxis::alpha) figures->stats.pos_reached.clear();
        if ((x == SweepAxis::cost_ratio || y == SweepAxis::cost_ratio) && figures->stats.levels.size() > 1)
            figures->stats.levels[1].cost_ratio = 0;
        figures->tokens.clear(), figures->prompts.clear();  // not needed per cell
    }
    const MeasuredView* use = figures ? &*figures : nullptr;
    {
        const ModeledView probe = compute_modeled(base, model, nullptr, use);
        s.alpha_source = probe.alpha_source, s.c_source = probe.c_source;
    }
    s.values.assign(s.xs.size() * s.ys.size(), std::numeric_limits<double>::quiet_NaN());
    s.work.assign(s.values.size(), 0.0);
    for (size_t iy = 0; iy < s.ys.size(); ++iy) {
        for (size_t ix = 0; ix < s.xs.size(); ++ix) {
            cancel.throw_if_cancelled();
            AppConfig cfg = apply_axis(apply_axis(base, x, s.xs[ix]), y, s.ys[iy]);
            ModeledView v = compute_modeled(cfg, model, nullptr, use);
            double value  = std::numeric_limits<double>::quiet_NaN();
            if (v.error.empty()) {
                switch (metric) {
                    case SweepMetric::speedup:
                        value = v.output.kmatrix ? v.output.kmatrix->ewif : v.output.ewif;
                        break;
                    case SweepMetric::ewif:
                        value = v.output.ewif;
                        break;
                    case SweepMetric::expected_tokens:
                        value = v.output.expected_tokens;
                        break;
                    case SweepMetric::tree_speedup:
                        value = v.tree_speedup;
                        break;
                    case SweepMetric::cost_ratio:
                        value = v.input.c;
                        break;  // an input of the model
                }
            }
            const double c                  = v.error.empty() ? v.input.c : cfg.level1().c;
            s.values[iy * s.xs.size() + ix] = value;
            s.work[iy * s.xs.size() + ix]   = cfg.gamma() * c;
        }
        s.rows_done = int(iy + 1);
        report(progress, double(iy + 1) / double(s.ys.size()), "row " + std::to_string(iy + 1));
        if (row_done) row_done(s);
    }
    return s;
}

SweepView run_measured_sweep(const AppConfig& base, SweepAxis x, SweepAxis y, SweepMetric metric,
                             const MeasureFn& measure, const CancelToken& cancel, const ProgressFn& progress,
                             const std::function<void(const SweepView&)>& row_done) {
    SweepView s;
    s.x = x, s.y = y, s.metric = metric, s.base = base, s.source = "measured";
    s.xs = sweep_axis_values(x), s.ys = sweep_axis_values(y);
    s.values.assign(s.xs.size() * s.ys.size(), std::numeric_limits<double>::quiet_NaN());
    s.work.assign(s.values.size(), 0.0);
    const size_t cells = s.values.size();
    for (size_t iy = 0; iy < s.ys.size(); ++iy) {
        for (size_t ix = 0; ix < s.xs.size(); ++ix) {
            cancel.throw_if_cancelled();
            const size_t i      = iy * s.xs.size() + ix;
            const AppConfig cfg = apply_axis(apply_axis(base, x, s.xs[ix]), y, s.ys[iy]);
            report(progress, double(i) / double(cells),
                   "cell " + std::to_string(i + 1) + "/" + std::to_string(cells) + ": " + sweep_axis_name(x) + " " +
                       std::to_string(s.xs[ix]).substr(0, 4) + ", " + sweep_axis_name(y) + " " +
                       std::to_string(s.ys[iy]).substr(0, 4));
            if (!cfg.problems().empty()) continue;
            MeasuredView v;
            try {
                v = measure(cfg, cancel);
            } catch (const Cancelled&) {
                throw;
            } catch (const std::exception&) {
                continue;  // this configuration cannot run (e.g. too little context): the cell stays empty
            }
            switch (metric) {
                case SweepMetric::speedup:
                    s.values[i] = v.speedup() > 0 ? v.speedup() : s.values[i];
                    break;
                case SweepMetric::expected_tokens:
                    s.values[i] = v.stats.mean_accepted_length();
                    break;
                case SweepMetric::cost_ratio:
                    s.values[i] = v.stats.draft_cost_ratio() > 0 ? v.stats.draft_cost_ratio() : s.values[i];
                    break;
                case SweepMetric::ewif:
                case SweepMetric::tree_speedup:
                    break;  // analytic quantities: not measured
            }
            s.work[i] = double(cfg.gamma()) * v.stats.draft_cost_ratio();
        }
        s.rows_done = int(iy + 1);
        if (row_done) row_done(s);
    }
    report(progress, 1.0, "sweep done");
    return s;
}

std::vector<size_t> pareto_front(const SweepView& s) {
    return analytic::pareto_front(s.work, s.values, analytic::Goal::minimize, analytic::Goal::maximize);
}

}  // namespace speculum::ui
