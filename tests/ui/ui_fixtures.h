// Shared fixtures for the panel tests: snapshots built the way the controller builds them, a measured run with
// known counts, a synthetic GGUF on disk, and helpers to draw one panel per headless frame.
#pragma once

#include "ui/headless.h"

#include "core/model/synthetic.h"
#include "support/test_paths.h"
#include "ui/model/app_controller.h"
#include "ui/model/modeled.h"
#include "ui/model/snapshot.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

namespace speculum::test {

inline ui::UiSnapshot modeled_snapshot(const ui::AppConfig& cfg) {
    ui::UiSnapshot s;
    s.config          = cfg;
    s.config_problems = cfg.problems();
    s.modeled         = ui::compute_modeled(cfg, nullptr, nullptr, nullptr);
    s.measured_note   = "No measured run yet.";
    return s;
}

// (A named default: GCC 12 warns falsely about a `{}` temporary AppConfig's strings.)
inline ui::UiSnapshot modeled_snapshot() {
    const ui::AppConfig defaults;
    return modeled_snapshot(defaults);
}

// 4 positions reached 100/80/60/40 times, accepted 80/60/40/20; 100 steps.
inline ui::MeasuredView sample_measured() {
    ui::MeasuredView m;
    m.stats.pos_reached           = {100, 80, 60, 40};
    m.stats.pos_accepted          = {80, 60, 40, 20};
    m.stats.accepted_len_hist     = {20, 20, 20, 20, 20};
    m.stats.n_generated           = 300;
    m.stats.n_steps               = 100;
    m.stats.tokens_per_s          = 120;
    m.stats.baseline_tokens_per_s = 50;
    m.stats.speedup               = 2.4;
    m.n_generated                 = 300;
    m.n_steps                     = 100;
    m.complete                    = true;
    for (int i = 0; i < 30; ++i)
        m.tokens.push_back({"tok" + std::to_string(i) + " ", i % 3 == 2 ? 0 : 1,
                            i % 3 == 2 ? ui::TokenOrigin::corrected : ui::TokenOrigin::accepted, i / 3});
    return m;
}

// A measured run whose level-1 draft has cost ratio c (fake measurers).
inline ui::MeasuredView measured_with_cost(double c, double speedup) {
    ui::MeasuredView v;
    v.stats.levels.resize(2);
    v.stats.levels[1].level      = 1;
    v.stats.levels[1].cost_ratio = c;
    v.stats.speedup              = speedup;
    return v;
}

// A tiny random-weight llama GGUF (written once per test binary run).
inline std::string synthetic_gguf() {
    std::filesystem::path p = tmp_dir() / "ui_tiny.gguf";
    if (!std::filesystem::exists(p)) model::write_synthetic_gguf(model::SyntheticSpec{}, p.string());
    return p.string();
}

// Polls the controller (as the GUI does each frame) until `done` or the timeout; returns done().
template <class Pred>
bool poll_until(ui::AppController& c, Pred done, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
        c.poll();
        if (done()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    c.poll();
    return done();
}

// Draws `draw()` for one frame and returns the window `title` (nullptr when it was not drawn).
template <class DrawFn>
ImGuiWindow* draw_once(HeadlessImGui& im, const char* title, DrawFn draw) {
    im.begin_frame();
    draw();
    im.end_frame();
    return ImGui::FindWindowByName(title);
}

}  // namespace speculum::test
