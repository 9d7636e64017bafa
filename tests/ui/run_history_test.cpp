// Run history: every finished measured run is recorded (without its token stream), pinned runs are kept and
// compared by what their configurations differ in, the unpinned are trimmed; a finished run replaces an old error
// in the status line; a cancelled run's partial figures are marked as such.
#include "ui/model/export_content.h"
#include "ui/ui_fixtures.h"

#include "ui/panels/run_history_panel.h"

#include "core/hw/profile.h"
#include "core/model/model.h"

#include <atomic>
#include <filesystem>
#include <thread>

using namespace speculum;
using namespace std::chrono_literals;

namespace {

ui::MeasuredView fake_view(int n) {
    ui::MeasuredView v;
    v.n_generated   = n;
    v.stats.speedup = 1.0 + 0.1 * n;
    v.tokens.push_back({"tok", 0, ui::TokenOrigin::accepted, 0, 0});
    return v;
}

}  // namespace

TEST(RunHistory, RecordsPinsComparesAndTrims) {
    ui::AppController c;
    c.set_measurer([](const ui::AppController::MeasureRequest& req, const CancelToken&, const ProgressFn&,
                      const std::function<void(const ui::MeasuredView&)>&) { return fake_view(req.config.gamma()); });
    c.message(ui::MessageLevel::error, "an old error");
    c.open_model(test::synthetic_gguf());
    ASSERT_TRUE(test::poll_until(c, [&] { return c.model() != nullptr; }));
    for (int gamma : {3, 5}) {
        ui::AppConfig cfg = c.snapshot().config;
        cfg.spec.gamma[0] = gamma;
        c.handle(ui::ActionSetConfig{cfg});
        c.handle(ui::ActionRunMeasured{});
        ASSERT_TRUE(test::poll_until(
            c, [&] { return !c.busy() && c.snapshot().measured && c.snapshot().measured_config->gamma() == gamma; }));
    }
    const std::vector<ui::RunRecord>& h = c.snapshot().history;
    ASSERT_GE(h.size(), 2u);
    const ui::RunRecord& last = h.back();
    EXPECT_EQ(last.config.gamma(), 5);
    EXPECT_TRUE(last.view.tokens.empty()) << "the history keeps figures, not the token stream";
    EXPECT_EQ(c.snapshot().status_line.find("an old error"), std::string::npos) << "a finished run replaces it";
    EXPECT_NE(c.snapshot().status_line.find("speedup"), std::string::npos);

    // Pin the two; what they differ in is γ.
    const int a = h[h.size() - 2].id, b = last.id;
    c.handle(ui::ActionPinRun{a, true});
    c.handle(ui::ActionPinRun{b, true});
    const std::vector<std::string> diff = ui::pinned_differences(c.snapshot().history);
    ASSERT_EQ(diff.size(), 1u) << (diff.empty() ? "" : diff[0]);
    EXPECT_EQ(diff[0], "/spec/gamma: [3] | [5]");

    // The panel draws the table without emitting anything; its pin box emits ActionPinRun.
    test::HeadlessImGui im;
    ui::RunHistoryPanel panel;
    panel.visible = true;
    ui::UiActions actions;
    ui::UiSnapshot snap = c.snapshot();
    for (int i = 0; i < 2; ++i)
        ASSERT_NE(test::draw_once(im, panel.title, [&] { panel.draw(snap, actions); }), nullptr);
    EXPECT_TRUE(actions.queue.empty());

    // Clearing keeps the pinned; 40 more runs keep only the latest kHistoryKept unpinned ones besides them.
    c.handle(ui::ActionClearHistory{});
    EXPECT_EQ(c.snapshot().history.size(), 2u);
    for (int i = 0; i < 40; ++i) {
        c.handle(ui::ActionRunMeasured{});
        ASSERT_TRUE(test::poll_until(c, [&] { return !c.busy(); }));
    }
    EXPECT_EQ(c.snapshot().history.size(), 2 + ui::kHistoryKept);
    EXPECT_TRUE(c.snapshot().history[0].pinned);
    c.handle(ui::ActionPinRun{a, false});
    EXPECT_EQ(c.snapshot().history.size(), 1 + ui::kHistoryKept) << "released: trimmed with the rest";
}

TEST(RunHistory, ACancelledRunsPartialFiguresAreMarked) {
    ui::AppController c;
    c.set_measurer([](const ui::AppController::MeasureRequest&, const CancelToken& cancel, const ProgressFn&,
                      const std::function<void(const ui::MeasuredView&)>& partial) -> ui::MeasuredView {
        partial(fake_view(1));
        while (!cancel.cancelled()) std::this_thread::sleep_for(1ms);
        throw Cancelled();
    });
    c.open_model(test::synthetic_gguf());
    ASSERT_TRUE(test::poll_until(c, [&] { return c.model() != nullptr; }));
    c.handle(ui::ActionRunMeasured{});
    ASSERT_TRUE(test::poll_until(c, [&] { return c.snapshot().measured.has_value() && !c.snapshot().jobs.empty(); }));
    c.handle(ui::ActionCancelJob{c.snapshot().jobs[0].id});
    ASSERT_TRUE(test::poll_until(c, [&] { return !c.busy(); }));
    ASSERT_TRUE(c.snapshot().measured.has_value());
    EXPECT_TRUE(c.snapshot().measured->cancelled);
    EXPECT_TRUE(c.snapshot().history.empty()) << "a cancelled run is not a finished one";
}

// "This machine": measured by the microbenchmarks on the job system, cached (XDG_CACHE_HOME, a private folder in the
// tests), offered first and chosen; a new controller finds it in the cache and starts with it. Changing only a
// modeled assumption (the profile) does not measure again.
TEST(MachineProfile, MeasuredCachedAndTheDefault) {
    const std::filesystem::path cache = hw::machine_profile_cache();
    ASSERT_FALSE(cache.empty());
    std::error_code ec;
    std::filesystem::remove(cache, ec);
    std::atomic<int> runs{0};
    {
        ui::AppController c;
        c.set_measurer([&](const ui::AppController::MeasureRequest&, const CancelToken&, const ProgressFn&,
                           const std::function<void(const ui::MeasuredView&)>&) {
            ++runs;
            return fake_view(1);
        });
        EXPECT_EQ(c.snapshot().config.modeled.hardware_profile, "") << "nothing cached yet";
        c.handle(ui::ActionMeasureMachine{});
        ASSERT_TRUE(test::poll_until(
            c, [&] { return !c.busy(); }, 120s));
        ASSERT_FALSE(c.snapshot().profiles.empty());
        EXPECT_EQ(c.snapshot().profiles[0].id, hw::kMachineProfileId);
        EXPECT_TRUE(c.snapshot().profiles[0].measured);
        EXPECT_GT(c.snapshot().profiles[0].mem_bw_gbps, 0.0);
        EXPECT_EQ(c.snapshot().config.modeled.hardware_profile, hw::kMachineProfileId);
        EXPECT_GE(c.snapshot().profile_index, 0);
        EXPECT_TRUE(std::filesystem::is_regular_file(cache)) << cache;

        c.open_model(test::synthetic_gguf());
        ASSERT_TRUE(test::poll_until(c, [&] { return c.model() != nullptr && !c.busy(); }));
        const int before  = runs;
        ui::AppConfig cfg = c.snapshot().config;
        cfg.modeled.hardware_profile.clear();
        cfg.level1().alpha = 0.6;
        c.handle(ui::ActionSetConfig{cfg});
        EXPECT_FALSE(c.rerun_pending()) << "a modeled assumption alone is not measured again";
        ASSERT_TRUE(test::poll_until(c, [&] { return !c.busy(); }));
        EXPECT_EQ(runs, before);
    }
    ui::AppController again;
    EXPECT_EQ(again.snapshot().config.modeled.hardware_profile, hw::kMachineProfileId) << "found in the cache";
    std::filesystem::remove(cache, ec);
}

// The Export panel's "Build draft GGUF...": level 1 written from the open model on the job system.
TEST(ExportDraft, WritesLevelOneFromTheOpenModel) {
    ui::AppController c;
    c.export_draft((test::tmp_dir() / "no_model_draft.gguf").string());
    EXPECT_NE(c.snapshot().messages.back().text.find("open a model first"), std::string::npos);
    c.open_model(test::synthetic_gguf());
    ASSERT_TRUE(test::poll_until(c, [&] { return c.model() != nullptr && !c.busy(); }));
    ui::AppConfig cfg      = c.snapshot().config;
    cfg.draft()            = drafts::DraftSpec{};
    cfg.draft().exit_layer = 0;  // the target's first layer
    c.handle(ui::ActionSetConfig{cfg});
    const std::filesystem::path out = test::tmp_dir() / "ui_exported_draft.gguf";
    std::error_code ec;
    std::filesystem::remove(out, ec);
    c.export_draft(out.string());
    ASSERT_TRUE(test::poll_until(
        c, [&] { return !c.busy(); }, 60s));
    ASSERT_TRUE(std::filesystem::is_regular_file(out)) << c.snapshot().messages.back().text;
    EXPECT_NO_THROW((void)model::Model::load(out.string())) << "the file is a model Speculum loads";
    bool said = false;
    for (const auto& m : c.snapshot().messages) said |= m.text.find("Wrote the draft") != std::string::npos;
    EXPECT_TRUE(said);
}

// After Build draft GGUF, the engine snippets load that very file (no "write it first" hint) while level 1 is still
// the draft it was built from; a pruned draft written dense says what an engine reading it will see.
TEST(ExportDraft, TheSnippetsPointAtTheBuiltDraftAndWarnWhenItIsDense) {
    ui::AppController c;
    c.open_model(test::synthetic_gguf());
    ASSERT_TRUE(test::poll_until(c, [&] { return c.model() != nullptr && !c.busy(); }));
    ui::AppConfig cfg       = c.snapshot().config;
    cfg.draft()             = drafts::DraftSpec{};
    cfg.draft().prune.ratio = 0.5f;
    c.handle(ui::ActionSetConfig{cfg});
    auto snippet = [&] { return ui::make_export(ui::ExportFormat::llama_cpp, c.snapshot(), ""); };
    EXPECT_NE(snippet().text.find("write it first"), std::string::npos) << "not built yet";
    const std::filesystem::path out = test::tmp_dir() / "ui_pruned_draft.gguf";
    std::error_code ec;
    std::filesystem::remove(out, ec);
    c.export_draft(out.string());
    ASSERT_TRUE(test::poll_until(
        c, [&] { return !c.busy(); }, 60s));
    ASSERT_TRUE(c.snapshot().built_draft.has_value()) << c.snapshot().messages.back().text;
    EXPECT_TRUE(c.snapshot().built_draft->dense);
    const ui::ExportDocument doc = snippet();
    EXPECT_EQ(doc.text.find("write it first"), std::string::npos) << doc.text;
    EXPECT_NE(doc.text.find(out.string()), std::string::npos) << "the snippet loads the built file";
    bool warned = false;
    for (const std::string& n : doc.notes) warned |= n.find("at full size") != std::string::npos;
    EXPECT_TRUE(warned);
    EXPECT_NE(doc.text.find("\n# The draft GGUF stores its pruned"), std::string::npos) << "the saved file says it";
    EXPECT_NE(c.snapshot().messages.back().text.find("read every byte"), std::string::npos) << "the build says it too";
    // Another level 1: the built file is not its draft any more.
    cfg                     = c.snapshot().config;
    cfg.draft().prune.ratio = 0.3f;
    c.handle(ui::ActionSetConfig{cfg});
    EXPECT_EQ(snippet().text.find(out.string()), std::string::npos);
}
