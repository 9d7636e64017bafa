// Design-space sweeps: a grid over two configuration axes, one metric per cell. The modeled sweep evaluates
// predict() per cell (cancellable, streams rows); the measured sweep fills the same grid from engine runs (the
// only kind that can vary the pruning ratio or the truncation bits).
#pragma once

#include "core/cancel.h"
#include "ui/model/app_config.h"
#include "ui/model/measured.h"
#include "ui/model/model_summary.h"

#include <functional>
#include <string>
#include <vector>

namespace speculum::ui {

enum class SweepAxis { gamma, alpha, cost_ratio, tree_budget, prune_ratio, weight_trunc_bits };
enum class SweepMetric { speedup, ewif, expected_tokens, tree_speedup, cost_ratio };

inline constexpr SweepAxis kSweepAxes[]      = {SweepAxis::gamma,       SweepAxis::alpha,
                                                SweepAxis::cost_ratio,  SweepAxis::tree_budget,
                                                SweepAxis::prune_ratio, SweepAxis::weight_trunc_bits};
inline constexpr SweepMetric kSweepMetrics[] = {SweepMetric::speedup, SweepMetric::ewif, SweepMetric::expected_tokens,
                                                SweepMetric::tree_speedup, SweepMetric::cost_ratio};

const char* sweep_axis_name(SweepAxis a);
const char* sweep_metric_name(SweepMetric m);
// Axes whose effect only a measured run shows (a pruning ratio changes acceptance, which no formula predicts).
bool sweep_axis_needs_measurement(SweepAxis a);
std::vector<double> sweep_axis_values(SweepAxis a);
// The SpecConfig JSON pointer an axis varies, as in a sweep spec's axis `path` and `speculum --set`
// ("/levels/0/prune/ratio"); nullptr for the modeled assumptions (alpha, c) and the editor's tree budget (which
// counts the root, unlike /tree/node_budget).
const char* sweep_axis_pointer(SweepAxis a);
// `cfg` with the axis set to `value` (for an axis with a pointer, what set_config_pointer sets).
AppConfig apply_axis(AppConfig cfg, SweepAxis a, double value);

struct SweepView {
    SweepAxis x = SweepAxis::gamma, y = SweepAxis::alpha;
    SweepMetric metric = SweepMetric::speedup;
    std::string source = "modeled";  // "modeled" or "measured"
    AppConfig base;                  // the configuration the axes were applied to
    std::vector<double> xs, ys;
    std::vector<double> values;  // ys.size() × xs.size(), row-major by y; NaN = not computed (yet)
    std::vector<double> work;    // parallel to values: modeled draft work per target pass, γ·c (Pareto x)
    // Where the modeled cells took level 1's α and c: "measured" (the last run's, as the panels use them, so a
    // clicked cell's figure is the one the panels then show) or "assumed" (no run, or an axis sets it).
    std::string alpha_source = "assumed", c_source = "assumed";
    int rows_done = 0;
    double at(size_t ix, size_t iy) const { return values[iy * xs.size() + ix]; }
};

// Evaluates every cell with predict() as the panels do (compute_modeled): with `measured`, level 1's measured α per
// position and c, except where an axis sets α or c. Calls `row_done` after each row (streaming). Throws Cancelled.
SweepView run_modeled_sweep(const AppConfig& base, const ModelSummary* model, SweepAxis x, SweepAxis y,
                            SweepMetric metric, const CancelToken& cancel, const ProgressFn& progress,
                            const std::function<void(const SweepView&)>& row_done = {},
                            const MeasuredView* measured                          = nullptr);

// One measured run of a configuration (the engine with its baseline, as the Speedup panel's measurement).
using MeasureFn = std::function<MeasuredView(const AppConfig& cfg, const CancelToken& cancel)>;

// Fills the grid from measured runs, one per cell, row by row (`row_done` after each). Metrics: speedup = the
// measured speedup; expected_tokens = measured tokens per target pass; cost_ratio = level 1's measured c;
// ewif and tree_speedup are not measured (NaN). Work = gamma x measured c. A cell whose run fails stays NaN.
// source = "measured". Throws Cancelled.
SweepView run_measured_sweep(const AppConfig& base, SweepAxis x, SweepAxis y, SweepMetric metric,
                             const MeasureFn& measure, const CancelToken& cancel, const ProgressFn& progress,
                             const std::function<void(const SweepView&)>& row_done = {});

// Indices of the Pareto-optimal cells: no other cell has less work and a higher-or-equal metric.
std::vector<size_t> pareto_front(const SweepView& s);

}  // namespace speculum::ui
