// Design space: the app's sweeps are core/sweep specs over the editor's pointers (modeled cells equal what the
// panels model), run by the controller into a stored, resumable result store, and drawn from it: the empty state,
// the Run button, one heatmap whose click loads the cell's configuration.
#include "ui/ui_fixtures.h"

#include "core/store/result_store.h"
#include "core/sweep/spec_predict_evaluator.h"
#include "ui/model/app_sweep.h"
#include "ui/model/result_config.h"
#include "ui/panels/design_space_panel.h"

#include <cmath>

using namespace speculum;

namespace {

ui::AppSweepRequest request(const ui::AppConfig& cfg, const char* x, const char* y,
                            const ui::MeasuredView* measured = nullptr) {
    ui::AppSweepRequest r;
    r.config = cfg, r.measured = measured;
    r.x = ui::find_app_sweep_axis(x), r.y = ui::find_app_sweep_axis(y);
    return r;
}

std::string error_of(const ui::AppSweepRequest& r) {
    try {
        (void)ui::app_sweep_spec(r);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

// The figure the panels show for a configuration (the Speedup panel's modeled speedup).
double panels_speedup(const ui::ModeledView& v) {
    return v.output.kmatrix ? v.output.kmatrix->ewif : v.output.ewif;
}

}  // namespace

TEST(AppSweep, IsAGridOverTheEditorsPointersAndRefusesWhatCannotRun) {
    const ui::AppConfig cfg;
    const sweep::SweepSpec s = ui::app_sweep_spec(request(cfg, "gamma", "alpha"));
    EXPECT_EQ(s.evaluator, "spec-predict");
    EXPECT_EQ(s.objective.metric, "predicted_speedup");
    ASSERT_EQ(s.axes.size(), 2u);
    EXPECT_EQ(s.axes[0].path, "/gamma/0");
    EXPECT_EQ(s.axes[1].path, "/modeled/levels/0/alpha");
    EXPECT_EQ(s.grid_size(), 12u * 10u);
    EXPECT_NE(s.name.find("alpha assumed"), std::string::npos) << s.name;

    EXPECT_NE(error_of(request(cfg, "gamma", "gamma")).find("two different axes"), std::string::npos);
    ui::AppSweepRequest measured = request(cfg, "prune", "alpha");
    EXPECT_TRUE(ui::app_sweep_measured(measured)) << "pruning changes acceptance: only a measurement shows it";
    EXPECT_NE(error_of(measured).find("measures alpha and c"), std::string::npos);
    // The default draft is a separate model, which cannot be pruned.
    EXPECT_NE(error_of(request(cfg, "prune", "trunc")).find("cannot run on this configuration"), std::string::npos);
    // A tree-budget axis puts the base in budget tree mode.
    const sweep::SweepSpec b = ui::app_sweep_spec(request(cfg, "gamma", "budget"));
    EXPECT_EQ(b.base["verification"], "tree");
    EXPECT_EQ(b.base["tree"]["kind"], "sequoia");
}

// Issue #26: a clicked cell's figure is the figure the panels then show. With a measured run the panels model with
// its alpha per position and c, so the cells do too and the sweep says so; an axis that sets alpha takes it from
// the axis instead.
TEST(AppSweep, CellsEqualWhatThePanelsModel) {
    ui::MeasuredView m = test::sample_measured();  // alpha 0.8 0.75 0.67 0.5
    m.stats.levels     = test::measured_with_cost(0.2, 1.0).stats.levels;
    m.complete         = true;
    const ui::AppConfig base;
    const sweep::SweepSpec s = ui::app_sweep_spec(request(base, "gamma", "budget", &m));
    EXPECT_NE(s.name.find("alpha measured by the last run, c measured by the last run"), std::string::npos) << s.name;
    sweep::SpecPredictEvaluator ev;
    int compared = 0;
    for (uint64_t i = 0; i < s.grid_size(); ++i) {
        const nlohmann::json cell     = s.config_at(i);
        const ui::ResultConfigLoad ld = ui::app_config_from_result(cell, base);  // what a click loads
        ASSERT_EQ(ld.kind, "modeled") << cell.dump();
        const ui::ModeledView panels = ui::compute_modeled(ld.config, nullptr, nullptr, &m);
        if (!panels.error.empty()) continue;
        EXPECT_DOUBLE_EQ(ev.evaluate(cell, {}).metrics.at("predicted_speedup"), panels_speedup(panels))
            << s.describe(i);
        ++compared;
    }
    EXPECT_GT(compared, 100);
    // An alpha axis sets alpha: higher alpha, higher speedup at the same gamma; c still comes from the run.
    const sweep::SweepSpec a = ui::app_sweep_spec(request(base, "gamma", "alpha", &m));
    EXPECT_NE(a.name.find("c measured by the last run"), std::string::npos) << a.name;
    const auto speedup = [&](uint64_t i) { return ev.evaluate(a.config_at(i), {}).metrics.at("predicted_speedup"); };
    EXPECT_GT(speedup(3 * 10 + 9), speedup(3 * 10 + 0));  // gamma 4: alpha 0.95 against 0.5
}

// The app's sweep lands in a result store under the sweep directory that speculum-cli results reads, streams into
// the snapshot, and the same sweep run again takes every cell from the store.
TEST(AppController, ModeledSweepIsStoredAndRunAgainResumes) {
    const auto dir = test::tmp_dir() / "app_sweeps";
    std::filesystem::remove_all(dir);
    ui::AppController c;
    c.set_sweep_dir(dir.string());
    ASSERT_TRUE(c.handle(ui::ActionRunSweep{"gamma", "alpha", false}));
    ASSERT_TRUE(test::poll_until(c, [&] { return !c.busy(); }));
    ASSERT_TRUE(c.snapshot().store);
    const ui::StoreView& v = *c.snapshot().store;
    EXPECT_EQ(v.error, "");
    EXPECT_EQ(v.rows.size(), 120u);
    EXPECT_EQ(v.n_measured, 0u) << "modeled cells";
    EXPECT_EQ(v.preferred_axes, (std::vector<std::string>{"/gamma/0", "/modeled/levels/0/alpha"}));
    EXPECT_EQ(std::filesystem::path(v.path).parent_path(), dir);
    EXPECT_NE(std::find(v.metrics.begin(), v.metrics.end(), "draft_work"), v.metrics.end()) << "the Pareto's cost";
    auto store = store::ResultStore::open(v.path, store::ResultStore::Mode::read_only);
    EXPECT_EQ(store->count(), 120u);
    store.reset();
    EXPECT_NE(c.snapshot().status_line.find("120 cells evaluated"), std::string::npos) << c.snapshot().status_line;

    ASSERT_TRUE(c.handle(ui::ActionRunSweep{"gamma", "alpha", false}));
    ASSERT_TRUE(test::poll_until(c, [&] { return !c.busy(); }));
    EXPECT_NE(c.snapshot().status_line.find("0 cells evaluated, 120 from the store"), std::string::npos)
        << c.snapshot().status_line;
    EXPECT_EQ(c.snapshot().store->rows.size(), 120u);
}

TEST(DesignSpacePanel, EmptyStateRunButtonAndCellClick) {
    test::HeadlessImGui im;
    ui::DesignSpacePanel panel;
    ui::UiActions actions;
    ui::UiSnapshot snap = test::modeled_snapshot();
    // Over the whole display: in the default quarter of it, how far down the heatmap starts depends on how the
    // lines above wrap (the length of the store's path among them), and its cells can fall below the window.
    auto frame     = [&] { panel.draw(snap, actions, true); };
    ImGuiWindow* w = test::draw_once(im, panel.title, frame);
    ASSERT_NE(w, nullptr);
    ImVec2 at;
    ASSERT_TRUE(im.find_item(w->GetID("Run modeled sweep"), w->Rect(), frame, &at));
    im.click(at, frame);
    ASSERT_EQ(actions.queue.size(), 1u);
    auto* run = std::get_if<ui::ActionRunSweep>(&actions.queue[0]);
    ASSERT_NE(run, nullptr);
    EXPECT_EQ(run->x, "gamma");
    EXPECT_EQ(run->y, "alpha");
    EXPECT_FALSE(run->measure) << "no model open";
    actions.queue.clear();

    // The controller's sweep, drawn from its store.
    const auto dir = test::tmp_dir() / "panel_sweeps";
    std::filesystem::remove_all(dir);
    ui::AppController c;
    c.set_sweep_dir(dir.string());
    c.handle(*run);
    ASSERT_TRUE(test::poll_until(c, [&] { return !c.busy() && c.snapshot().store; }));
    snap.store                    = c.snapshot().store;
    w                             = test::draw_once(im, panel.title, frame);
    const ui::DesignSelection sel = panel.store_view().selection();
    EXPECT_EQ(sel.x, "/gamma/0") << "the sweep's own axes first";
    EXPECT_EQ(sel.y, "/modeled/levels/0/alpha");
    EXPECT_EQ(sel.metric, "predicted_speedup");
    // The editor's configuration (gamma 5, assumed alpha 0.8) is outlined: column gamma 5, row alpha 0.8.
    ASSERT_TRUE(panel.store_view().current_cell());
    EXPECT_EQ(*panel.store_view().current_cell(), std::make_pair(size_t(4), size_t(6)));
    ASSERT_FALSE(actions.queue.empty());
    EXPECT_NE(std::get_if<ui::ActionSelectDesignGrid>(&actions.queue[0]), nullptr) << "the Export panel follows it";
    actions.queue.clear();
    ASSERT_TRUE(im.find_item(w->GetID("store heatmap"), w->Rect(), frame, &at, 8.0f));
    at.x += 80, at.y += 10;  // past the y-axis labels, into the cells
    im.click(at, frame);
    const ui::ActionLoadResultConfig* load = nullptr;
    for (const auto& a : actions.queue)
        if (auto* l = std::get_if<ui::ActionLoadResultConfig>(&a)) load = l;
    ASSERT_NE(load, nullptr) << "clicking a heatmap cell loads its configuration";
    const ui::ResultConfigLoad ld = ui::app_config_from_result(load->config, snap.config);
    EXPECT_GE(ld.config.gamma(), 1);
    EXPECT_LE(ld.config.gamma(), 12);
    EXPECT_GE(ld.config.level1().alpha, 0.5);
}
