// Frame time while a sweep or a measured engine run runs: the GUI thread only drains the mailbox and draws
// snapshots, so building a frame stays far below the 50 ms budget while background work streams results. Prints
// the figures (noisy on a shared machine; p99 is asserted, not the max).
#include "ui/ui_fixtures.h"

#include "core/resources.h"
#include "ui/dashboard.h"
#include "ui/model/engine_measurer.h"

#include <algorithm>
#include <cstdio>

using namespace speculum;

namespace {

// One GUI frame as the app builds it: drain the mailbox, draw the snapshot, hand the actions back. Milliseconds.
double frame_ms(ui::AppController& c, test::HeadlessImGui& im, ui::Dashboard& dash) {
    const auto t0 = std::chrono::steady_clock::now();
    c.poll();
    im.begin_frame();
    ui::UiActions actions;
    dash.draw(c.snapshot(), actions);
    im.end_frame();
    for (auto& a : actions.queue) c.handle(a);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

struct Percentiles {
    double p50, p99, worst;
};
Percentiles percentiles(std::vector<double> ms) {
    std::sort(ms.begin(), ms.end());
    return {ms[ms.size() / 2], ms[ms.size() * 99 / 100], ms.back()};
}

}  // namespace

TEST(FrameTime, StaysUnder50msWhileSweepRuns) {
    test::HeadlessImGui im;
    ui::AppController c;
    ui::Dashboard dash;
    ui::AppConfig cfg = c.snapshot().config;
    set_tree_mode(cfg, ui::TreeMode::budget);  // the heaviest modeled path (Sequoia per cell)
    cfg.spec.tree.node_budget = 63;
    c.set_config(cfg);
    std::filesystem::remove_all(test::tmp_dir() / "frame_time_sweeps");
    c.set_sweep_dir((test::tmp_dir() / "frame_time_sweeps").string());
    const ui::ActionRunSweep sweep{"budget", "alpha", false};
    std::vector<double> ms;
    int frames_while_running = 0, sweeps = 0;
    // Keep sweeps running back to back for a while (one sweep alone takes only milliseconds).
    auto start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(400)) {
        if (!c.busy()) c.handle(sweep), ++sweeps;
        bool running = c.busy();
        ms.push_back(frame_ms(c, im, dash));
        frames_while_running += running;
    }
    ASSERT_TRUE(test::poll_until(c, [&] { return !c.busy(); }));
    ASSERT_TRUE(c.snapshot().store);
    EXPECT_EQ(c.snapshot().store->rows.size(), 9u * 10u);
    const auto [p50, p99, worst] = percentiles(ms);
    std::printf(
        "frame build while sweeping: %d frames (%d during %d sweeps), median %.2f ms, p99 %.2f ms, max %.2f ms\n",
        int(ms.size()), frames_while_running, sweeps, p50, p99, worst);
    EXPECT_GT(frames_while_running, 10);
    // p99 rather than the max: on a shared 2-core CI machine the scheduler can preempt any single frame.
    EXPECT_LT(p99, 50.0) << "frame time budget";
}

// The same budget while the real engine measures the bundled target: token events stream into the snapshot through
// the mailbox, the GUI thread only copies and draws them.
TEST(FrameTime, StaysUnder50msWhileEngineMeasures) {
    std::error_code ec;
    auto res = resources_dir();
    if (!res || !std::filesystem::exists(*res / kBundledTargetModel, ec)) GTEST_SKIP() << "bundled target not found";
    test::HeadlessImGui im;
    ui::AppController c;
    c.set_measurer(ui::measure_with_engine);
    ui::Dashboard dash;
    ui::AppConfig cfg       = c.snapshot().config;
    cfg.spec.max_new_tokens = 24;
    c.set_config(cfg);
    c.open_model((*res / kBundledTargetModel).string());
    ASSERT_TRUE(test::poll_until(c, [&] { return c.model() != nullptr; }));
    std::vector<double> ms;
    int frames_while_running = 0;
    auto start               = std::chrono::steady_clock::now();
    auto elapsed             = [&] { return std::chrono::steady_clock::now() - start; };
    while (elapsed() < std::chrono::milliseconds(1500) || c.snapshot().measured_runs == 0) {
        if (elapsed() > std::chrono::seconds(60)) break;
        if (!c.busy()) c.handle(ui::ActionRunMeasured{});
        bool running = c.busy();
        ms.push_back(frame_ms(c, im, dash));
        frames_while_running += running;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));  // a GUI waits for the next event here
    }
    ASSERT_GE(c.snapshot().measured_runs, 1);
    ASSERT_TRUE(c.snapshot().measured->tokens.size() > 0);
    const auto [p50, p99, worst] = percentiles(ms);
    std::printf(
        "frame build while measuring: %d frames (%d during %d measured runs), median %.2f ms, p99 %.2f ms, "
        "max %.2f ms\n",
        int(ms.size()), frames_while_running, c.snapshot().measured_runs, p50, p99, worst);
    EXPECT_GT(frames_while_running, 10);
    EXPECT_LT(p99, 50.0) << "frame time budget";
}
