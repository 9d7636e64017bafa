// The app's tune: the controller runs sweep::run_tune on the open model and dataset (the bundled target with its
// drafts) on a job, streams each measurement into the Tune panel's view, ends with a confirmed winner that "apply"
// loads into the editor, and a second run resumes from the store; without a model or prompts it says what to open.
// The panel draws a running and a finished search.
#include "ui/ui_fixtures.h"

#include "core/resources.h"
#include "core/store/result_store.h"
#include "ui/panels/tune_panel.h"

using namespace speculum;

namespace {

std::string bundled_target() {
    std::error_code ec;
    auto res = resources_dir();
    return res && std::filesystem::exists(*res / kBundledTargetModel, ec) ? (*res / kBundledTargetModel).string() : "";
}

}  // namespace

TEST(AppTune, RunsOnTheOpenModelStreamsAppliesAndResumes) {
    const std::string target = bundled_target();
    auto ds                  = datasets_dir();
    if (target.empty() || !ds) GTEST_SKIP() << "bundled model or datasets not found";
    const auto dir = test::tmp_dir() / "app_tune";
    std::filesystem::remove_all(dir);
    ui::AppController c;
    c.set_sweep_dir(dir.string());
    const ui::ActionRunTune tune{3.0, false, 2};  // a short search; the confirmation runs after it
    EXPECT_TRUE(c.handle(tune));
    ASSERT_FALSE(c.snapshot().messages.empty());
    EXPECT_NE(c.snapshot().messages.back().text.find("open one first"), std::string::npos);

    // Written another way than the bundled list has it (as `--model resources/models/...` would be).
    c.open_model(
        (std::filesystem::path(target).parent_path() / "." / std::filesystem::path(target).filename()).string());
    ASSERT_TRUE(test::poll_until(
        c, [&] { return c.model() && !c.busy(); }, std::chrono::seconds(60)));
    EXPECT_TRUE(c.handle(tune));
    EXPECT_NE(c.snapshot().messages.back().text.find("open a dataset"), std::string::npos);
    c.open_dataset((*ds / "prose_continuation.jsonl").string());
    ASSERT_TRUE(test::poll_until(c, [&] { return c.snapshot().dataset.has_value() && !c.busy(); }));

    size_t streamed = 0;  // views seen while running
    EXPECT_TRUE(c.handle(tune));
    ASSERT_TRUE(c.snapshot().tune && c.snapshot().tune->running);
    ASSERT_TRUE(test::poll_until(
        c,
        [&] {
            if (c.snapshot().tune && c.snapshot().tune->running && !c.snapshot().tune->candidates.empty()) ++streamed;
            return c.snapshot().tune && !c.snapshot().tune->running;
        },
        std::chrono::seconds(300)));
    const ui::TuneView& done = *c.snapshot().tune;
    ASSERT_TRUE(done.result.has_value()) << done.error;
    EXPECT_GT(streamed, 0u) << "measurements streamed while it ran";
    ASSERT_TRUE(done.result->winner.has_value());
    EXPECT_TRUE(done.result->confirmed.has_value());
    EXPECT_GT(done.result->measured, 1u);
    bool bundled_draft = false;  // the bundled target brings its drafts, however its path was written
    for (const sweep::TuneFamily& f : done.result->families)
        bundled_draft |= f.name == "draft model speculum-draft-f16";
    EXPECT_TRUE(bundled_draft);
    EXPECT_EQ(done.result->cached, 0u) << "a fresh store";
    EXPECT_NE(c.snapshot().messages.back().text.find("Tune done"), std::string::npos);
    EXPECT_GT(store::ResultStore::open(done.store_path, store::ResultStore::Mode::read_only)->count(), 1u);

    // Apply the winner: the editor takes its drafter and draft length.
    const sweep::TuneCandidate& best = done.result->candidates.front();
    ASSERT_TRUE(best.measured_speedup.has_value());
    c.handle(ui::ActionLoadResultConfig{best.config, best.label});
    EXPECT_EQ(c.snapshot().config.spec.gamma[0], best.config["gamma"][0].get<int>());
    EXPECT_EQ(c.snapshot().config.draft().kind, best.config["levels"][0].get<drafts::DraftSpec>().kind)
        << best.label << " " << c.snapshot().messages.back().text;

    // Again: what was measured comes from the store.
    ASSERT_TRUE(test::poll_until(
        c, [&] { return !c.busy(); }, std::chrono::seconds(60)));
    EXPECT_TRUE(c.handle(tune));
    ASSERT_TRUE(test::poll_until(
        c, [&] { return c.snapshot().tune && !c.snapshot().tune->running; }, std::chrono::seconds(300)));
    ASSERT_TRUE(c.snapshot().tune->result.has_value());
    EXPECT_GT(c.snapshot().tune->result->cached, 0u);
}

TEST(AppTune, PanelDrawsARunningAndAFinishedSearch) {
    test::HeadlessImGui im;
    ui::TunePanel panel;
    panel.visible = true;
    ui::UiActions actions;
    ui::UiSnapshot snap;
    EXPECT_NE(test::draw_once(im, panel.title, [&] { panel.draw(snap, actions); }), nullptr) << "empty state";
    auto view     = std::make_shared<ui::TuneView>();
    view->running = true, view->phase = "probe";
    sweep::TuneCandidate a;
    a.label = "draft model small, gamma 4", a.measured_speedup = 1.9, a.draft_bytes = 2.6e6, a.prompts = 2;
    a.state = "measured", a.config = {{"gamma", {4}}};
    sweep::TuneCandidate b = a;
    b.label = "suffix decoding, gamma 4", b.measured_speedup = 1.3, b.draft_bytes = 0, b.on_front = true;
    sweep::TuneCandidate p = a;
    p.label = "self: MXFP4 weights, gamma 6", p.measured_speedup.reset(), p.modeled_speedup = 0.7;
    p.state          = "pruned: modeled 0.70x < 0.85 x the best measured 1.90x";
    view->candidates = {a, b, p};
    snap.tune        = view;
    EXPECT_NE(test::draw_once(im, panel.title, [&] { panel.draw(snap, actions); }), nullptr);
    auto finished     = std::make_shared<ui::TuneView>(*view);
    finished->running = false;
    sweep::TuneResult r;
    r.candidates = view->candidates;
    r.winner     = engine::SpecConfig{};
    session::RepeatSummary rs;
    rs.speedup        = {1.9, 1.8, 2.0, 8, 0.95};
    r.confirmed       = rs;
    r.waterfall.steps = {{"acceptance alone", 4.0, 0, false, "4 tokens a pass"}, {"draft cost", 3.0, -1, false, "x"}};
    r.waterfall.oracle_width = 5, r.waterfall.oracle_speedup = 3.4;
    finished->result = r;
    snap.tune        = finished;
    EXPECT_NE(test::draw_once(im, panel.title, [&] { panel.draw(snap, actions); }), nullptr);
    EXPECT_TRUE(actions.queue.empty()) << "drawing alone sends nothing";
}
