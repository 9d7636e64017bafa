// Design space: the modeled sweep fills every cell, is cancellable, refuses axes that need measurement; the panel
// draws the empty state and the heatmap, and a click on a cell loads that cell's configuration.
#include "ui/ui_fixtures.h"

#include "ui/panels/design_space_panel.h"

#include <cmath>

using namespace speculum;

static const ui::AppConfig kBase;

TEST(Sweep, ModeledGridAndPareto) {
    CancelToken cancel;
    int rows = 0;
    auto s   = ui::run_modeled_sweep(kBase, nullptr, ui::SweepAxis::gamma, ui::SweepAxis::alpha, ui::SweepMetric::ewif,
                                     cancel, {}, [&](const ui::SweepView&) { ++rows; });
    EXPECT_EQ(rows, int(s.ys.size()));
    ASSERT_EQ(s.values.size(), s.xs.size() * s.ys.size());
    for (double v : s.values) EXPECT_TRUE(std::isfinite(v));
    // At fixed γ, a higher assumed α gives a higher EWIF.
    EXPECT_GT(s.at(3, s.ys.size() - 1), s.at(3, 0));
    auto front = ui::pareto_front(s);
    EXPECT_FALSE(front.empty());
    EXPECT_LT(front.size(), s.values.size());
}

TEST(Sweep, CancelAndMeasuredAxes) {
    CancelToken cancel;
    cancel.cancel();
    EXPECT_THROW(ui::run_modeled_sweep(kBase, nullptr, ui::SweepAxis::gamma, ui::SweepAxis::alpha,
                                       ui::SweepMetric::speedup, cancel, {}),
                 Cancelled);
    EXPECT_THROW(ui::run_modeled_sweep(kBase, nullptr, ui::SweepAxis::prune_ratio, ui::SweepAxis::alpha,
                                       ui::SweepMetric::speedup, CancelToken{}, {}),
                 std::invalid_argument);
}

// Issue #26: a clicked cell's figure is the figure the panels then show. With a measured run the panels model with
// its α per position and c (compute_modeled), so the sweep's cells do too, and say so; an axis that sets α or c
// takes that figure from the axis instead.
TEST(Sweep, CellsUseTheMeasuredFiguresThePanelsUse) {
    ui::MeasuredView m = test::sample_measured();  // α 0.8 0.75 0.67 0.5
    m.stats.levels     = test::measured_with_cost(0.2, 1.0).stats.levels;
    const auto s       = ui::run_modeled_sweep(kBase, nullptr, ui::SweepAxis::gamma, ui::SweepAxis::tree_budget,
                                               ui::SweepMetric::ewif, CancelToken{}, {}, {}, &m);
    EXPECT_EQ(s.alpha_source, "measured");
    EXPECT_EQ(s.c_source, "measured");
    bool compared = false;
    for (size_t iy = 0; iy < s.ys.size(); ++iy)
        for (size_t ix = 0; ix < s.xs.size(); ++ix) {
            const ui::AppConfig cell =
                ui::apply_axis(ui::apply_axis(kBase, s.x, s.xs[ix]), s.y, s.ys[iy]);  // what a click loads
            const ui::ModeledView panels = ui::compute_modeled(cell, nullptr, nullptr, &m);
            if (!panels.error.empty()) continue;
            EXPECT_DOUBLE_EQ(s.at(ix, iy), panels.output.ewif) << "cell " << ix << "," << iy;
            compared = true;
        }
    EXPECT_TRUE(compared);
    // Without the run the same cells use the assumptions and differ.
    const auto assumed = ui::run_modeled_sweep(kBase, nullptr, ui::SweepAxis::gamma, ui::SweepAxis::tree_budget,
                                               ui::SweepMetric::ewif, CancelToken{}, {});
    EXPECT_EQ(assumed.alpha_source, "assumed");
    EXPECT_NE(assumed.at(3, 0), s.at(3, 0));
    // An α axis sets α; c still comes from the run.
    const auto by_alpha = ui::run_modeled_sweep(kBase, nullptr, ui::SweepAxis::gamma, ui::SweepAxis::alpha,
                                                ui::SweepMetric::ewif, CancelToken{}, {}, {}, &m);
    EXPECT_EQ(by_alpha.alpha_source, "assumed");
    EXPECT_EQ(by_alpha.c_source, "measured");
    EXPECT_GT(by_alpha.at(3, by_alpha.ys.size() - 1), by_alpha.at(3, 0));
}

TEST(DesignSpacePanel, EmptyStateRunButtonAndCellClick) {
    test::HeadlessImGui im;
    ui::DesignSpacePanel panel;
    ui::UiActions actions;
    ui::UiSnapshot snap = test::modeled_snapshot();
    auto frame          = [&] { panel.draw(snap, actions); };
    ImGuiWindow* w      = test::draw_once(im, panel.title, frame);
    ASSERT_NE(w, nullptr);
    ImVec2 at;
    ASSERT_TRUE(im.find_item(w->GetID("Run modeled sweep"), w->Rect(), frame, &at));
    im.click(at, frame);
    ASSERT_EQ(actions.queue.size(), 1u);
    auto* run = std::get_if<ui::ActionRunSweep>(&actions.queue[0]);
    ASSERT_NE(run, nullptr);
    EXPECT_NE(run->x, run->y);
    actions.queue.clear();

    snap.sweep = ui::run_modeled_sweep(snap.config, nullptr, ui::SweepAxis::gamma, ui::SweepAxis::alpha,
                                       ui::SweepMetric::speedup, CancelToken{}, {});
    w          = test::draw_once(im, panel.title, frame);
    ASSERT_TRUE(im.find_item(w->GetID("heatmap"), w->Rect(), frame, &at, 8.0f));
    at.x += 52, at.y += 10;  // past the y-axis labels, into the cells
    im.click(at, frame);
    ASSERT_EQ(actions.queue.size(), 1u);
    auto* set = std::get_if<ui::ActionSetConfig>(&actions.queue[0]);
    ASSERT_NE(set, nullptr) << "clicking a heatmap cell loads its configuration";
    bool gamma_on_axis = false, alpha_on_axis = false;
    for (double g : snap.sweep->xs) gamma_on_axis |= int(g) == set->config.gamma();
    for (double a : snap.sweep->ys) alpha_on_axis |= std::abs(a - set->config.level1().alpha) < 1e-12;
    EXPECT_TRUE(gamma_on_axis && alpha_on_axis);
}

// A measured sweep runs one measurement per cell (here a fake whose c falls with pruning and truncation), streams
// rows, records the measured metric and the work γ·c, leaves failing cells empty and stops on cancel.
TEST(Sweep, MeasuredGridFromRuns) {
    ui::AppConfig self;  // pruning and truncation derive the draft from the target
    self.draft() = drafts::DraftSpec{};
    int runs = 0, rows = 0;
    auto measure = [&](const ui::AppConfig& cfg, const CancelToken&) {
        ++runs;
        if (cfg.draft().weight_trunc_bits == 7 && cfg.draft().prune.ratio > 0.85f) throw std::runtime_error("no room");
        const double c = 1.0 - 0.5 * cfg.draft().prune.ratio - 0.02 * cfg.draft().weight_trunc_bits;
        return test::measured_with_cost(c, 1.0 / (0.5 + c));
    };
    const ui::SweepView s = ui::run_measured_sweep(self, ui::SweepAxis::prune_ratio, ui::SweepAxis::weight_trunc_bits,
                                                   ui::SweepMetric::cost_ratio, measure, CancelToken{}, {},
                                                   [&](const ui::SweepView&) { ++rows; });
    EXPECT_EQ(s.source, "measured");
    EXPECT_EQ(runs, int(s.values.size()));
    EXPECT_EQ(rows, int(s.ys.size()));
    EXPECT_NEAR(s.at(0, 0), 1.0, 1e-9);
    EXPECT_NEAR(s.at(5, 4), 1.0 - 0.25 - 0.08, 1e-6);
    EXPECT_LT(s.at(9, 0), s.at(1, 0)) << "c falls as the pruning ratio rises";
    EXPECT_TRUE(std::isnan(s.at(9, 7))) << "a cell whose run failed stays empty";
    EXPECT_NEAR(s.work[1], self.gamma() * s.at(1, 0), 1e-9);
    CancelToken cancel;
    cancel.cancel();
    EXPECT_THROW(ui::run_measured_sweep(self, ui::SweepAxis::prune_ratio, ui::SweepAxis::gamma,
                                        ui::SweepMetric::speedup, measure, cancel, {}),
                 Cancelled);
}
