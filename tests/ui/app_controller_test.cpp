// AppController: config edits update the modeled view in the same call; models load off the UI thread with
// errors as messages; measured re-runs are debounced and a newer one supersedes the stale one.
#include "ui/ui_fixtures.h"

#include <atomic>
#include <fstream>

using namespace speculum;
using namespace std::chrono_literals;

TEST(AppController, ConfigEditUpdatesModeledImmediately) {
    ui::AppController c;
    double before = c.snapshot().modeled.output.ewif;
    uint64_t rev  = c.revision();
    ui::AppConfig cfg = c.snapshot().config;
    cfg.alpha         = 0.95;
    EXPECT_TRUE(c.handle(ui::ActionSetConfig{cfg}));
    EXPECT_GT(c.snapshot().modeled.output.ewif, before) << "no poll, no frame: the same call";
    EXPECT_GT(c.revision(), rev);
    EXPECT_FALSE(c.rerun_pending()) << "no measurer and no model: nothing to re-run";
    EXPECT_FALSE(c.snapshot().measured_note.empty());
    EXPECT_FALSE(c.handle(ui::ActionOpenModelDialog{})) << "dialogs belong to the shell";
}

TEST(AppController, BadModelBecomesMessageNotCrash) {
    auto bad = test::tmp_dir() / "ui_not_a_model.gguf";
    std::ofstream(bad) << "this is not a GGUF file";
    ui::AppController c;
    c.open_model(bad.string());
    ASSERT_TRUE(test::poll_until(c, [&] { return c.snapshot().model_state == ui::ModelState::failed; }));
    ASSERT_FALSE(c.snapshot().messages.empty());
    EXPECT_EQ(c.snapshot().messages.back().level, ui::MessageLevel::error);
    EXPECT_NE(c.snapshot().messages.back().text.find("ui_not_a_model.gguf"), std::string::npos);
    c.open_model((test::tmp_dir() / "does_not_exist.gguf").string());
    ASSERT_TRUE(test::poll_until(c, [&] { return c.snapshot().model_state == ui::ModelState::failed; }));
    c.open_dataset((test::tmp_dir() / "does_not_exist.jsonl").string());
    ASSERT_TRUE(test::poll_until(c, [&] { return !c.busy(); }));
    EXPECT_EQ(c.snapshot().messages.back().level, ui::MessageLevel::error);
}

TEST(AppController, LoadsModelAndDataset) {
    auto ds = test::tmp_dir() / "ui_prompts.jsonl";
    std::ofstream(ds) << R"({"id":"a","task":"code","prompt":"def f():","max_new_tokens":8})" "\n"
                      << R"({"id":"b","task":"qa","prompt":"Q: why?","max_new_tokens":8})" "\n"
                      << "not json\n";
    ui::AppController c;
    c.open_model(test::synthetic_gguf());
    c.open_dataset(ds.string());
    ASSERT_TRUE(test::poll_until(c, [&] { return c.snapshot().model_state == ui::ModelState::loaded && c.snapshot().dataset; }));
    EXPECT_NE(c.model(), nullptr);
    EXPECT_EQ(c.snapshot().model->hparams->n_layer, 2);
    EXPECT_TRUE(c.snapshot().modeled.target_from_model);
    EXPECT_EQ(c.snapshot().dataset->n_prompts, 2);
    EXPECT_EQ(c.snapshot().dataset->tasks, (std::vector<std::string>{"code", "qa"}));
    EXPECT_FALSE(c.snapshot().dataset->issues.empty()) << "the malformed line is reported";
}

TEST(AppController, DebouncedMeasuredRunSupersedesStaleOne) {
    auto now = ui::AppController::Clock::now();
    ui::AppController c([&] { return now; });
    std::atomic<int> started{0}, cancelled{0};
    c.set_measurer([&](const ui::AppController::MeasureRequest& req, ui::JobContext& ctx,
                       const std::function<void(const ui::MeasuredView&)>& partial) {
        int n = ++started;
        ui::MeasuredView v;
        v.n_generated = req.config.gamma;  // marks which config produced it
        partial(v);
        // The first run waits to be superseded; later ones finish at once.
        while (n == 1) {
            if (ctx.cancel.cancelled()) {
                ++cancelled;
                throw Cancelled();
            }
            std::this_thread::sleep_for(1ms);
        }
        v.n_steps = 1;
        return v;
    });
    c.open_model(test::synthetic_gguf());
    ASSERT_TRUE(test::poll_until(c, [&] { return c.model() != nullptr; }));
    EXPECT_TRUE(c.rerun_pending()) << "a freshly loaded model is measured after the quiet time";

    ui::AppConfig cfg = c.snapshot().config;
    cfg.gamma         = 3;
    c.set_config(cfg);
    now += ui::AppController::kDebounce / 2;
    c.poll();
    EXPECT_EQ(started, 0) << "still inside the quiet time";
    now += ui::AppController::kDebounce;
    c.poll();
    ASSERT_TRUE(test::poll_until(c, [&] { return started == 1; }));

    cfg.gamma = 5;
    c.set_config(cfg);
    now += ui::AppController::kDebounce * 2;
    ASSERT_TRUE(test::poll_until(c, [&] { return c.snapshot().measured && c.snapshot().measured->complete; }));
    EXPECT_EQ(cancelled, 1) << "the stale run was cancelled";
    EXPECT_EQ(started, 2);
    EXPECT_EQ(c.snapshot().measured->n_generated, 5) << "only the latest config's result is shown";
    EXPECT_EQ(c.snapshot().modeled.alpha_source, "assumed") << "no positions measured by the fake";
}
