// Opening a sweep result store in the app: the controller loads it read-only off the GUI thread into a snapshot;
// the varying configuration fields become axes; cells hold the best/mean metric of their rows; a click on a cell
// emits the row's configuration and the controller maps it onto the editor; a bad file is a message, not a crash.
#include "ui/ui_fixtures.h"

#include "core/store/hash.h"
#include "core/store/result_store.h"
#include "core/sweep/predict_evaluator.h"
#include "core/sweep/sweep_runner.h"
#include "support/fresh_path.h"
#include "ui/model/result_config.h"
#include "ui/model/store_view.h"
#include "ui/panels/design_space_panel.h"

#include <cmath>
#include <fstream>
#include <sstream>

using namespace speculum;
using nlohmann::json;

namespace {

constexpr double kTol = 1e-12;

// The speedup written for an engine row: known per field so each cell's best and mean are known.
double row_speedup(int gamma, int exit_layer, const std::string& dataset) {
    return 1.0 + 0.1 * gamma + 0.2 * exit_layer + (dataset == "b.jsonl" ? 0.5 : 0.0);
}

// 12 engine rows (gamma 2/4/6 x exit layer 1/3 x dataset a/b) and one failed row (gamma 8, exit 1, dataset a).
std::filesystem::path make_engine_store(const std::string& name) {
    auto path  = test::fresh_tmp_path(name);
    auto store = store::ResultStore::open(path, store::ResultStore::Mode::read_write);
    std::vector<store::ResultRow> rows;
    for (int gamma : {2, 4, 6, 8})
        for (int exit_layer : {1, 3})
            for (std::string dataset : {"a.jsonl", "b.jsonl"}) {
                bool failed = gamma == 8;
                if (failed && (exit_layer != 1 || dataset != "a.jsonl")) continue;
                store::ResultRow r;
                r.config = {{"levels", json::array({{{"kind", "self"}, {"exit_layer", exit_layer}}})},
                            {"gamma", json::array({gamma})},
                            {"max_new_tokens", 48},
                            {"dataset", dataset}};
                r.key    = {store::json_hash(r.config), "model", "data-" + dataset};
                r.task   = "prose";
                if (failed) {
                    r.status  = "failed";
                    r.message = "out of memory";
                } else {
                    r.stats                  = {{"n_steps", 10}};
                    r.metrics["speedup"]     = row_speedup(gamma, exit_layer, dataset);
                    r.metrics["draft_bytes"] = 1000.0 * (exit_layer + 1);
                }
                rows.push_back(r);
            }
    store->put_many(rows);
    return path;
}

std::string file_bytes(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

int axis_index(const ui::StoreView& v, const std::string& pointer) {
    for (size_t i = 0; i < v.axes.size(); ++i)
        if (v.axes[i].pointer == pointer) return int(i);
    return -1;
}

jobs::JobSystemOptions serial_jobs() {
    jobs::JobSystemOptions o;
    o.serial = true;
    return o;
}

}  // namespace

TEST(StoreView, ControllerLoadsStoreReadOnlyWithAxesAndMetrics) {
    auto path                = make_engine_store("ui_store_engine.sqlite");
    const std::string before = file_bytes(path);
    ui::AppController c({}, serial_jobs());
    EXPECT_TRUE(c.handle(ui::ActionOpenResults{path.string()}));
    ASSERT_TRUE(test::poll_until(c, [&] { return c.snapshot().store != nullptr; }));
    const ui::StoreView& v = *c.snapshot().store;
    ASSERT_TRUE(v.error.empty()) << v.error;
    EXPECT_EQ(v.rows.size(), 13u);
    EXPECT_EQ(v.n_failed, 1u);
    EXPECT_EQ(v.n_measured, 12u);
    std::vector<std::string> pointers;
    for (const auto& a : v.axes) pointers.push_back(a.pointer);
    // Constant fields (/levels/0/kind, /max_new_tokens) are not axes.
    EXPECT_EQ(pointers, (std::vector<std::string>{"/dataset", "/gamma/0", "/levels/0/exit_layer"}));
    EXPECT_EQ(v.axes[1].values, (std::vector<json>{2, 4, 6, 8}));
    EXPECT_EQ(v.metrics, (std::vector<std::string>{"speedup", "draft_bytes"}));
    EXPECT_EQ(c.snapshot().messages.back().level, ui::MessageLevel::info);
    EXPECT_EQ(file_bytes(path), before) << "the store is opened read-only and never modified";
}

TEST(StoreView, CellsHoldBestOrMeanOfTheirRows) {
    ui::StoreView v = ui::load_store_view(make_engine_store("ui_store_cells.sqlite").string());
    ASSERT_TRUE(v.error.empty()) << v.error;
    int gx = axis_index(v, "/gamma/0"), ey = axis_index(v, "/levels/0/exit_layer");
    ASSERT_GE(gx, 0);
    ASSERT_GE(ey, 0);
    ui::StoreGrid best = ui::store_grid(v, gx, ey, "speedup", ui::CellAggregate::best);
    ui::StoreGrid mean = ui::store_grid(v, gx, ey, "speedup", ui::CellAggregate::mean);
    ASSERT_EQ(best.xs.size(), 4u);
    ASSERT_EQ(best.ys.size(), 2u);
    for (size_t ix = 0; ix < 3; ++ix)
        for (size_t iy = 0; iy < 2; ++iy) {
            int g = best.xs[ix].get<int>(), e = best.ys[iy].get<int>();
            const ui::StoreCell& b = best.at(ix, iy);
            EXPECT_EQ(b.count, 2);
            EXPECT_EQ(b.n_measured, 2);
            EXPECT_NEAR(b.value, row_speedup(g, e, "b.jsonl"), kTol);
            EXPECT_NEAR(mean.at(ix, iy).value, (row_speedup(g, e, "a.jsonl") + row_speedup(g, e, "b.jsonl")) / 2, kTol);
            EXPECT_EQ(v.rows[size_t(b.best_row)].config["dataset"], "b.jsonl");
        }
    const ui::StoreCell& failed = best.at(3, 0);  // gamma 8, exit 1: only the failed row
    EXPECT_EQ(failed.count, 0);
    EXPECT_EQ(failed.n_failed, 1);
    EXPECT_TRUE(std::isnan(failed.value));
    // draft_bytes: smaller is better, so the best of a cell is its minimum.
    ui::StoreGrid bytes = ui::store_grid(v, ey, -1, "draft_bytes", ui::CellAggregate::best);
    ASSERT_EQ(bytes.ys.size(), 1u);
    EXPECT_NEAR(bytes.at(0, 0).value, 2000.0, kTol);
    EXPECT_EQ(bytes.at(0, 0).count, 7 - 1);  // exit 1: 6 done rows (the failed one has no value)
    // Pareto over speedup vs draft_bytes: the best row at each memory size that beats every smaller one.
    std::vector<size_t> front = ui::store_pareto(v, "draft_bytes", "speedup");
    ASSERT_EQ(front.size(), 2u);
    EXPECT_NEAR(v.rows[front[0]].metrics.at("speedup"), row_speedup(6, 1, "b.jsonl"), kTol);
    EXPECT_NEAR(v.rows[front[1]].metrics.at("speedup"), row_speedup(6, 3, "b.jsonl"), kTol);
}

TEST(StoreView, PanelClickEmitsRowConfigAndControllerLoadsIt) {
    auto path = make_engine_store("ui_store_click.sqlite");
    ui::AppController c({}, serial_jobs());
    c.open_results(path.string());
    ASSERT_TRUE(test::poll_until(c, [&] { return c.snapshot().store != nullptr; }));
    ui::UiSnapshot snap = c.snapshot();

    test::HeadlessImGui im;
    ui::DesignSpacePanel panel;
    ui::UiActions actions;
    auto frame     = [&] { panel.draw(snap, actions); };
    ImGuiWindow* w = test::draw_once(im, panel.title, frame);
    ASSERT_NE(w, nullptr);
    EXPECT_FALSE(panel.store_view().selection().x.empty()) << "a newly opened store is shown";
    ASSERT_TRUE(panel.store_view().set_axes(snap.store, "/gamma/0", "/levels/0/exit_layer"));
    w                      = test::draw_once(im, panel.title, frame);
    const ui::StoreGrid& g = panel.store_view().grid();
    ASSERT_EQ(g.xs.size(), 4u);
    ASSERT_EQ(g.ys.size(), 2u);
    EXPECT_EQ(g.metric, "speedup");

    ImVec2 at;
    ASSERT_TRUE(im.find_item(w->GetID("store heatmap"), w->Rect(), frame, &at, 4.0f));
    at.x += 72, at.y += 8;  // past the y-axis labels into the top-left cell: gamma 2, exit layer 3
    actions.queue.clear();
    im.click(at, frame);
    ASSERT_EQ(actions.queue.size(), 1u);
    auto* load = std::get_if<ui::ActionLoadResultConfig>(&actions.queue[0]);
    ASSERT_NE(load, nullptr) << "clicking a cell loads its best row's configuration";
    const ui::StoreCell& cell = g.at(0, 1);
    EXPECT_EQ(load->config, snap.store->rows[size_t(cell.best_row)].config);
    EXPECT_EQ(load->config["gamma"][0], 2);
    EXPECT_EQ(load->config["levels"][0]["exit_layer"], 3);
    EXPECT_EQ(load->config["dataset"], "b.jsonl");

    EXPECT_TRUE(c.handle(actions.queue[0]));
    EXPECT_EQ(c.snapshot().config.gamma(), 2);
    EXPECT_EQ(c.snapshot().config.draft().kind, drafts::DraftKind::self);
    EXPECT_EQ(c.snapshot().config.draft().exit_layer, 3);
    EXPECT_EQ(c.snapshot().config.spec.max_new_tokens, 48);
    EXPECT_NE(c.snapshot().messages.back().text.find("dataset b.jsonl"), std::string::npos)
        << "what could not be loaded is said: " << c.snapshot().messages.back().text;
}

TEST(StoreView, BadFilesGiveAnErrorInTheSnapshot) {
    auto bad = test::fresh_tmp_path("ui_not_a_store.sqlite");
    std::ofstream(bad) << "this is not a SQLite database, just text";
    const std::string before = file_bytes(bad);
    ui::AppController c({}, serial_jobs());
    c.open_results(bad.string());
    ASSERT_TRUE(test::poll_until(c, [&] { return c.snapshot().store != nullptr; }));
    EXPECT_NE(c.snapshot().store->error.find("ui_not_a_store.sqlite"), std::string::npos) << c.snapshot().store->error;
    EXPECT_TRUE(c.snapshot().store->rows.empty());
    EXPECT_EQ(c.snapshot().messages.back().level, ui::MessageLevel::error);
    EXPECT_EQ(file_bytes(bad), before);

    c.open_results((test::tmp_dir() / "no_such_store.sqlite").string());
    ASSERT_TRUE(test::poll_until(c, [&] { return c.snapshot().store->path.find("no_such") != std::string::npos; }));
    EXPECT_FALSE(c.snapshot().store->error.empty());
    EXPECT_FALSE(std::filesystem::exists(test::tmp_dir() / "no_such_store.sqlite")) << "read-only: nothing created";

    // The panel shows the error instead of a heatmap.
    test::HeadlessImGui im;
    ui::DesignSpacePanel panel;
    ui::UiActions actions;
    ui::UiSnapshot snap = c.snapshot();
    ASSERT_NE(test::draw_once(im, panel.title, [&] { panel.draw(snap, actions); }), nullptr);
    EXPECT_TRUE(actions.queue.empty());
}

// A measured row repeated to an interval carries it (the heatmap's cell and tooltip show it); one pass, or a
// malformed entry from a file, carries none.
TEST(StoreView, ARepeatedRowCarriesItsInterval) {
    store::ResultRow r;
    r.stats                  = {{"n_steps", 10},
                                {"repeated", {{"speedup", {{"median", 2.3}, {"lo", 2.1}, {"hi", 2.5}, {"n", 6}, {"coverage", 0.969}}}}}};
    const ui::StoreRowView v = ui::store_row_view(store::ResultRow(r));
    ASSERT_TRUE(v.speedup_interval.has_value());
    EXPECT_DOUBLE_EQ(v.speedup_interval->lo, 2.1);
    EXPECT_EQ(v.speedup_interval->n, 6);
    for (const json& bad : {json{{"median", 2.3}, {"lo", 2.6}, {"hi", 2.5}, {"n", 6}, {"coverage", 0.9}},
                            json{{"median", "2.3"}, {"lo", 2.1}, {"hi", 2.5}, {"n", 6}, {"coverage", 0.9}},
                            json{{"median", 2.3}, {"lo", 2.1}, {"hi", 2.5}, {"n", 1}, {"coverage", 0.5}}, json(3)}) {
        r.stats["repeated"]["speedup"] = bad;
        EXPECT_FALSE(ui::store_row_view(store::ResultRow(r)).speedup_interval.has_value()) << bad.dump();
    }
    r.stats.erase("repeated");
    EXPECT_FALSE(ui::store_row_view(store::ResultRow(r)).speedup_interval.has_value());
}

TEST(StoreView, PredictSweepRowsAreModeled) {
    auto path = test::fresh_tmp_path("ui_store_predict.sqlite");
    {
        sweep::SweepSpec spec = sweep::sweep_spec_from_json(json::parse(R"({
            "name": "ui-tiny", "evaluator": "predict", "base": {"alpha": 0.8, "k": 4, "c": 0.05},
            "axes": [{"path": "/k", "values": [2, 4, 6]}, {"path": "/alpha", "values": [0.6, 0.9]}]})"));
        sweep::PredictEvaluator ev;
        auto store = store::ResultStore::open(path, store::ResultStore::Mode::read_write);
        sweep::run_sweep(spec, ev, *store, CancelToken());
    }
    ui::StoreView v = ui::load_store_view(path.string());
    ASSERT_TRUE(v.error.empty()) << v.error;
    EXPECT_EQ(v.rows.size(), 6u);
    EXPECT_EQ(v.n_measured, 0u) << "predict rows are modeled";
    ASSERT_EQ(v.axes.size(), 2u);
    EXPECT_EQ(v.axes[0].pointer, "/alpha");
    EXPECT_EQ(v.axes[1].pointer, "/k");
    ui::StoreGrid g = ui::store_grid(v, 1, 0, "predicted_speedup", ui::CellAggregate::best);
    for (size_t ix = 0; ix < g.xs.size(); ++ix) {
        EXPECT_EQ(g.at(ix, 1).count, 1);
        EXPECT_EQ(g.at(ix, 1).n_measured, 0);
        EXPECT_GT(g.at(ix, 1).value, g.at(ix, 0).value) << "higher alpha, higher predicted speedup";
    }
    ui::AppConfig base;
    ui::ResultConfigLoad r = ui::app_config_from_result(v.rows[size_t(g.at(2, 1).best_row)].config, base);
    EXPECT_EQ(r.kind, "predict");
    EXPECT_EQ(r.config.gamma(), 6);
    EXPECT_NEAR(r.config.level1().alpha, 0.9, kTol);
    EXPECT_NEAR(r.config.level1().c, 0.05, kTol);
    EXPECT_TRUE(r.not_loaded.empty());
}

TEST(ResultConfig, MapsWhatTheEditorCanExpressAndListsTheRest) {
    ui::AppConfig base;
    auto p = ui::app_config_from_result(json::parse(R"({"alpha": [0.9, 0.7], "k": 5, "c": 0.03,
        "hardware": {"profile": "rtx4090", "context": 1024}, "kmatrix": {"k": [[0, 2]]}})"),
                                        base);
    EXPECT_EQ(p.config.gamma(), 5);
    EXPECT_NEAR(p.config.level1().alpha, 0.9, kTol);
    EXPECT_EQ(p.config.modeled.hardware_profile, "rtx4090");
    EXPECT_EQ(p.config.modeled.context, 1024);
    ASSERT_EQ(p.not_loaded.size(), 2u);  // per-position alpha, kmatrix

    auto e = ui::app_config_from_result(json::parse(R"({"levels": [{"kind": "self", "exit_layer": 2,
        "prune": {"ratio": 0.3}}], "gamma": [5], "verification": "tree",
        "tree": {"kind": "sequoia", "node_budget": 15, "max_depth": 5}, "adaptive_gamma": {"enabled": true}})"),
                                        base);
    EXPECT_EQ(e.kind, "engine");
    EXPECT_EQ(e.config.gamma(), 5);
    EXPECT_FLOAT_EQ(e.config.draft().prune.ratio, 0.3f);
    EXPECT_EQ(ui::tree_mode(e.config), ui::TreeMode::budget);
    EXPECT_EQ(e.config.spec.tree.node_budget, 15);
    EXPECT_TRUE(e.config.spec.adaptive_gamma.enabled) << "the app holds every SpecConfig field";
    EXPECT_TRUE(e.not_loaded.empty()) << e.not_loaded.front();

    auto bad = ui::app_config_from_result(json::parse(R"({"levels": [{"kind": "nonsense"}]})"), base);
    EXPECT_EQ(bad.config, base) << "a mistyped configuration loads nothing";
    ASSERT_EQ(bad.not_loaded.size(), 1u);
}
