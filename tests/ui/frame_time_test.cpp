// Frame time while a sweep runs: the GUI thread only drains the mailbox and draws snapshots, so building a frame
// stays far below the 50 ms budget even while a background sweep streams rows. Prints the figures.
#include "ui/ui_fixtures.h"

#include "ui/dashboard.h"

#include <algorithm>
#include <cstdio>

using namespace speculum;

TEST(FrameTime, StaysUnder50msWhileSweepRuns) {
    test::HeadlessImGui im;
    ui::AppController c;
    ui::Dashboard dash;
    ui::AppConfig cfg = c.snapshot().config;
    cfg.tree.mode     = ui::TreeMode::budget;  // the heaviest modeled path (Sequoia per cell)
    cfg.tree.budget   = 64;
    c.set_config(cfg);
    const ui::ActionRunSweep sweep{ui::SweepAxis::tree_budget, ui::SweepAxis::alpha, ui::SweepMetric::tree_speedup};
    std::vector<double> ms;
    int frames_while_running = 0, sweeps = 0;
    // Keep sweeps running back to back for a while (one sweep alone takes only milliseconds).
    auto start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(400)) {
        if (!c.busy()) c.handle(sweep), ++sweeps;
        bool running = c.busy();
        auto t0      = std::chrono::steady_clock::now();
        c.poll();
        im.begin_frame();
        ui::UiActions actions;
        dash.draw(c.snapshot(), actions);
        im.end_frame();
        for (auto& a : actions.queue) c.handle(a);
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        frames_while_running += running;
    }
    ASSERT_TRUE(test::poll_until(c, [&] { return !c.busy(); }));
    ASSERT_TRUE(c.snapshot().sweep.has_value());
    EXPECT_EQ(c.snapshot().sweep->rows_done, int(c.snapshot().sweep->ys.size()));
    std::sort(ms.begin(), ms.end());
    double p50 = ms[ms.size() / 2], p99 = ms[ms.size() * 99 / 100], worst = ms.back();
    std::printf("frame build while sweeping: %d frames (%d during %d sweeps), median %.2f ms, p99 %.2f ms, max %.2f ms\n",
                int(ms.size()), frames_while_running, sweeps, p50, p99, worst);
    EXPECT_GT(frames_while_running, 10);
    // p99 rather than the max: on a shared 2-core CI machine the scheduler can preempt any single frame.
    EXPECT_LT(p99, 50.0) << "frame time budget";
}
