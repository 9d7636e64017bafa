// AppController: config edits update the modeled view in the same call; models load off the UI thread with
// errors as messages; measured re-runs are debounced and a newer one supersedes the stale one; a draft head's cost is
// modeled from its file; the Export panel's hashing and saving run on jobs.
#include "core/store/result_store.h"
#include "ui/model/engine_measurer.h"
#include "ui/ui_fixtures.h"

#include "core/drafts/draft_bits.h"
#include "core/drafts/eagle3.h"
#include "core/export/sha256.h"

#include <atomic>
#include <fstream>
#include <sstream>

using namespace speculum;
using namespace std::chrono_literals;

TEST(AppController, ConfigEditUpdatesModeledImmediately) {
    ui::AppController c;
    double before      = c.snapshot().modeled.output.ewif;
    uint64_t rev       = c.revision();
    ui::AppConfig cfg  = c.snapshot().config;
    cfg.level1().alpha = 0.95;
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

// A file that fails to load costs nothing but the message: the working model, its summary and its results stay.
TEST(AppController, ABadFileKeepsTheWorkingModelAndItsResults) {
    ui::AppController c;
    c.set_measurer([](const ui::AppController::MeasureRequest&, const CancelToken&, const ProgressFn&,
                      const std::function<void(const ui::MeasuredView&)>&) {
        ui::MeasuredView v;
        v.n_generated = 5;
        return v;
    });
    c.open_model(test::synthetic_gguf());
    ASSERT_TRUE(test::poll_until(c, [&] { return c.model() != nullptr; }));
    c.handle(ui::ActionRunMeasured{});
    ASSERT_TRUE(test::poll_until(c, [&] { return c.snapshot().measured.has_value() && !c.busy(); }));
    const model::Model* working = c.model();
    const std::string name      = c.snapshot().model->name;

    auto bad = test::tmp_dir() / "ui_keeps_model_bad.gguf";
    std::ofstream(bad) << "this is not a GGUF file";
    c.open_model(bad.string());
    ASSERT_TRUE(test::poll_until(c, [&] { return !c.busy(); }));
    EXPECT_EQ(c.model(), working);
    ASSERT_TRUE(c.snapshot().model.has_value());
    EXPECT_EQ(c.snapshot().model->name, name);
    EXPECT_EQ(c.snapshot().model_state, ui::ModelState::loaded);
    EXPECT_TRUE(c.snapshot().measured.has_value()) << "its results stay too";
    bool said = false;
    for (const auto& m : c.snapshot().messages)
        said |= m.level == ui::MessageLevel::error && m.text.find("ui_keeps_model_bad.gguf") != std::string::npos &&
                m.text.find("stays open") != std::string::npos;
    EXPECT_TRUE(said) << "the error names the file and says the working model stays";
}

TEST(AppController, LoadsModelAndDataset) {
    auto ds = test::tmp_dir() / "ui_prompts.jsonl";
    std::ofstream(ds) << R"({"id":"a","task":"code","prompt":"def f():","max_new_tokens":8})"
                         "\n"
                      << R"({"id":"b","task":"qa","prompt":"Q: why?","max_new_tokens":8})"
                         "\n"
                      << "not json\n";
    ui::AppController c;
    c.open_model(test::synthetic_gguf());
    c.open_dataset(ds.string());
    ASSERT_TRUE(test::poll_until(
        c, [&] { return c.snapshot().model_state == ui::ModelState::loaded && c.snapshot().dataset; }));
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
    c.set_measurer([&](const ui::AppController::MeasureRequest& req, const CancelToken& cancel, const ProgressFn&,
                       const std::function<void(const ui::MeasuredView&)>& partial) {
        int n = ++started;
        ui::MeasuredView v;
        v.n_generated = req.config.gamma();  // marks which config produced it
        partial(v);
        // The first run waits to be superseded; later ones finish at once.
        while (n == 1) {
            if (cancel.cancelled()) {
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
    cfg.spec.gamma[0] = 3;
    c.set_config(cfg);
    now += ui::AppController::kDebounce / 2;
    c.poll();
    EXPECT_EQ(started, 0) << "still inside the quiet time";
    now += ui::AppController::kDebounce;
    c.poll();
    ASSERT_TRUE(test::poll_until(c, [&] { return started == 1; }));
    ASSERT_TRUE(test::poll_until(c, [&] { return c.snapshot().measured.has_value(); }))
        << "the partial view streams in";
    EXPECT_FALSE(c.snapshot().measured->complete);
    EXPECT_EQ(c.snapshot().measured_config->gamma(), 3);

    cfg.spec.gamma[0] = 5;
    c.set_config(cfg);
    EXPECT_EQ(c.snapshot().config.gamma(), 5) << "the edit applies at once; the stale run keeps going until superseded";
    now += ui::AppController::kDebounce * 2;
    ASSERT_TRUE(test::poll_until(c, [&] { return c.snapshot().measured && c.snapshot().measured->complete; }));
    ASSERT_TRUE(test::poll_until(c, [&] { return cancelled == 1; })) << "the stale run was cancelled";
    EXPECT_EQ(started, 2);
    EXPECT_EQ(c.snapshot().measured->n_generated, 5) << "only the latest config's result is shown";
    EXPECT_EQ(c.snapshot().measured_config->gamma(), 5);
    EXPECT_EQ(c.snapshot().measured_runs, 1) << "the superseded run never completed";
    EXPECT_EQ(c.snapshot().modeled.alpha_source, "assumed") << "no positions measured by the fake";
    ASSERT_TRUE(test::poll_until(c, [&] { return !c.busy(); }));
    for (const auto& m : c.snapshot().messages) EXPECT_EQ(m.text.find("cancelled"), std::string::npos) << m.text;
}

TEST(AppController, UserCancelIsReportedAndFailureIsAMessage) {
    ui::AppController c;
    std::atomic<bool> fail{false};
    c.set_measurer([&](const ui::AppController::MeasureRequest&, const CancelToken& cancel, const ProgressFn& progress,
                       const std::function<void(const ui::MeasuredView&)>&) -> ui::MeasuredView {
        if (fail) throw std::invalid_argument("spec.p_min: must be in [0, 1), got 1");
        for (int i = 0;; ++i) {
            cancel.throw_if_cancelled();
            progress(0.5, "step " + std::to_string(i));
            std::this_thread::sleep_for(1ms);
        }
    });
    c.open_model(test::synthetic_gguf());
    ASSERT_TRUE(test::poll_until(c, [&] { return c.model() != nullptr; }));
    c.handle(ui::ActionRunMeasured{});
    ASSERT_TRUE(test::poll_until(c, [&] { return !c.snapshot().jobs.empty() && c.snapshot().jobs[0].progress == 0.5; }))
        << "progress reaches the snapshot (status bar)";
    EXPECT_NE(c.snapshot().jobs[0].what.find("step"), std::string::npos);
    c.handle(ui::ActionCancelJob{c.snapshot().jobs[0].id});
    EXPECT_TRUE(c.snapshot().jobs.empty()) << "a cancelled job leaves the status bar at once";
    ASSERT_TRUE(test::poll_until(c, [&] { return !c.busy(); }));
    EXPECT_EQ(c.snapshot().messages.back().text,
              "Measuring " + ui::describe_draft(c.snapshot().config.draft()) + ": cancelled");
    EXPECT_FALSE(c.snapshot().measured.has_value());

    fail = true;
    c.handle(ui::ActionRunMeasured{});
    ASSERT_TRUE(test::poll_until(c, [&] { return !c.busy(); }));
    EXPECT_EQ(c.snapshot().messages.back().level, ui::MessageLevel::error);
    EXPECT_NE(c.snapshot().messages.back().text.find("failed: spec.p_min"), std::string::npos);
}

TEST(AppController, OpeningAnotherModelDropsTheRunningMeasurement) {
    ui::AppController c;
    std::atomic<int> runs{0};
    c.set_measurer([&](const ui::AppController::MeasureRequest&, const CancelToken& cancel, const ProgressFn&,
                       const std::function<void(const ui::MeasuredView&)>& partial) -> ui::MeasuredView {
        ui::MeasuredView v;
        v.n_generated = 7;
        if (++runs > 1) return v;
        partial(v);  // must not reach the snapshot of the next model
        while (!cancel.cancelled()) std::this_thread::sleep_for(1ms);
        throw Cancelled();
    });
    c.open_model(test::synthetic_gguf());
    ASSERT_TRUE(test::poll_until(c, [&] { return c.model() != nullptr; }));
    c.handle(ui::ActionRunMeasured{});
    ASSERT_TRUE(test::poll_until(c, [&] { return runs == 1; }));
    std::this_thread::sleep_for(20ms);  // the partial is in the mailbox now
    c.open_model(test::synthetic_gguf());
    ASSERT_TRUE(test::poll_until(c, [&] { return c.model() != nullptr && c.snapshot().jobs.empty(); }));
    EXPECT_FALSE(c.snapshot().measured.has_value()) << "a run on the previous model was dropped";
    for (const auto& m : c.snapshot().messages) EXPECT_EQ(m.text.find("cancelled"), std::string::npos) << m.text;
}

// Pruning and truncation axes run a measured sweep on the job system: core/sweep's EngineEvaluator on the open model,
// one engine run with its baseline per cell, rows streamed into the snapshot and stored; without a model, or on a
// draft that cannot be pruned, the sweep is refused with a message. A cancelled sweep run again resumes: the cells
// it measured come from the store, not from new runs.
TEST(AppController, MeasuredSweepOverPruningAndTruncationIsStoredAndResumes) {
    const auto dir = test::tmp_dir() / "measured_sweeps";
    std::filesystem::remove_all(dir);
    // An injected clock a second further on each reading: the sweep's time left comes from it, not from the machine.
    auto ticks = std::make_shared<std::atomic<int64_t>>(0);
    ui::AppController c([ticks] { return ui::AppController::Clock::time_point(std::chrono::seconds(++*ticks)); });
    c.set_sweep_dir(dir.string());
    c.set_measurer(ui::measure_with_engine);
    const ui::ActionRunSweep sweep{"prune", "trunc", false};
    EXPECT_TRUE(c.handle(sweep));
    ASSERT_FALSE(c.snapshot().messages.empty());
    EXPECT_NE(c.snapshot().messages.back().text.find("open a model first"), std::string::npos);

    c.open_model(test::synthetic_gguf());
    ASSERT_TRUE(test::poll_until(c, [&] { return c.model() != nullptr && !c.busy(); }));
    EXPECT_TRUE(c.handle(sweep));  // the default draft is a separate model, which cannot be pruned
    EXPECT_NE(c.snapshot().messages.back().text.find("cannot run on this configuration"), std::string::npos)
        << c.snapshot().messages.back().text;
    EXPECT_FALSE(c.busy());
    ui::AppConfig self = c.snapshot().config;
    self.draft()       = drafts::DraftSpec{};
    c.handle(ui::ActionSetConfig{self});
    ASSERT_TRUE(test::poll_until(c, [&] { return !c.busy(); }));  // the re-measure the edit started
    auto sweep_job = [&] {
        for (const auto& j : c.snapshot().jobs)
            if (j.name.rfind("Sweeping", 0) == 0) return j.id;
        return uint64_t(0);
    };
    auto rows = [&] { return c.snapshot().store ? c.snapshot().store->rows.size() : size_t(0); };
    EXPECT_TRUE(c.handle(sweep));
    ASSERT_NE(sweep_job(), 0u);
    EXPECT_NE(c.snapshot().messages.back().text.find("Measuring 80 cells, each repeated to an interval"),
              std::string::npos)
        << "the sweep's cost is said before it starts: " << c.snapshot().messages.back().text;
    bool time_left = false;  // the job's progress says how long the rest takes
    ASSERT_TRUE(test::poll_until(
        c,
        [&] {
            for (const auto& j : c.snapshot().jobs) time_left |= j.what.rfind("about ", 0) == 0;
            return rows() >= 3 || sweep_job() == 0;
        },
        std::chrono::seconds(120)));
    ASSERT_GE(rows(), 3u) << c.snapshot().status_line;
    EXPECT_TRUE(time_left);
    for (const auto& r : c.snapshot().store->rows)
        EXPECT_TRUE(r.speedup_interval.has_value()) << "each cell is repeated to an interval, as a run is";
    c.handle(ui::ActionCancelJob{sweep_job()});
    ASSERT_TRUE(test::poll_until(c, [&] { return sweep_job() == 0; }));
    const std::string file     = c.snapshot().store->path;
    const ui::StoreView& first = *c.snapshot().store;
    EXPECT_EQ(first.n_measured, first.rows.size()) << "measured cells";
    for (const auto& r : first.rows) EXPECT_GT(r.metrics.at("speedup"), 0) << r.config.dump();
    std::map<std::string, double> wall;  // each stored cell's evaluation time: a re-evaluated cell gets a new one
    auto stored = [&] {
        std::map<std::string, double> m;
        auto st = store::ResultStore::open(file, store::ResultStore::Mode::read_only);
        for (const auto& r : st->query()) m[r.key.config_hash] = r.wall_s;
        return m;
    };
    wall = stored();
    ASSERT_GE(wall.size(), 3u);
    ASSERT_LT(wall.size(), 80u);

    EXPECT_TRUE(c.handle(sweep));
    ASSERT_TRUE(test::poll_until(
        c, [&] { return rows() > wall.size(); }, std::chrono::seconds(120)));
    c.handle(ui::ActionCancelJob{sweep_job()});
    ASSERT_TRUE(test::poll_until(c, [&] { return sweep_job() == 0; }));
    EXPECT_EQ(c.snapshot().store->path, file) << "the same sweep, the same store";
    const auto after = stored();
    EXPECT_GT(after.size(), wall.size());
    for (const auto& [key, seconds] : wall)
        EXPECT_EQ(after.at(key), seconds) << "cell " << key << " was measured again";
}

// A draft head's cost is modeled from its file once a worker has read it (issue #28): its bytes per pass over the
// target's. Level 1's c follows it from the kind's assumed cost, and from an earlier head's, but not from the
// user's own; a file that is not a head is an error shown beside the assumption, which stays.
TEST(AppController, ADraftHeadsCostIsModeledFromItsFile) {
    ui::AppController c;
    c.open_model(test::synthetic_gguf());
    ASSERT_TRUE(test::poll_until(c, [&] { return c.model() != nullptr && !c.busy(); }));
    const model::Model& target = *c.model();
    auto head                  = [&](uint64_t seed, int32_t n_ff) {
        const auto p = test::tmp_dir() / ("ui_head_" + std::to_string(seed) + ".gguf");
        drafts::Eagle3Synthetic s;
        s.seed = seed, s.n_ff = n_ff;
        const std::vector<uint8_t> bytes = drafts::eagle3_synthetic_gguf(target, s);
        std::ofstream(p, std::ios::binary)
            .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
        return p.string();
    };
    auto modeled_c = [&](const drafts::DraftSpec& d) {
        const drafts::DraftBits b = drafts::draft_bits(d, target);
        return double(b.weight_bytes_per_forward) / double(b.verify_weight_bytes_per_forward);
    };
    ui::AppConfig cfg      = c.snapshot().config;
    cfg.draft()            = {};
    cfg.draft().kind       = drafts::DraftKind::eagle3;
    cfg.draft().model_path = head(1, 64);
    cfg.level1().c         = ui::default_assumption(drafts::DraftKind::eagle3).c;
    c.handle(ui::ActionSetConfig{cfg});
    ASSERT_TRUE(test::poll_until(c, [&] { return c.snapshot().head_cost.has_value() && !c.busy(); }));
    const double c1 = modeled_c(cfg.draft());
    ASSERT_TRUE(c.snapshot().head_cost->error.empty()) << c.snapshot().head_cost->error;
    EXPECT_DOUBLE_EQ(c.snapshot().head_cost->c, c1);
    EXPECT_NE(c1, ui::default_assumption(drafts::DraftKind::eagle3).c);
    EXPECT_DOUBLE_EQ(c.snapshot().config.level1().c, c1) << "the assumption follows the file";
    EXPECT_EQ(c.snapshot().modeled.c_source, "modeled from the head's file");

    // Another head: c follows it from the first head's figure.
    cfg                    = c.snapshot().config;
    cfg.draft().model_path = head(2, 256);
    c.handle(ui::ActionSetConfig{cfg});
    ASSERT_TRUE(
        test::poll_until(c, [&] { return c.snapshot().head_cost && c.snapshot().head_cost->c != c1 && !c.busy(); }));
    const double c2 = modeled_c(cfg.draft());
    EXPECT_GT(c2, c1) << "a wider FFN reads more bytes";
    EXPECT_DOUBLE_EQ(c.snapshot().config.level1().c, c2);

    // The user's own c stays when the head changes again.
    cfg                    = c.snapshot().config;
    cfg.level1().c         = 0.3;
    cfg.draft().model_path = head(1, 64);
    c.handle(ui::ActionSetConfig{cfg});
    ASSERT_TRUE(
        test::poll_until(c, [&] { return c.snapshot().head_cost && c.snapshot().head_cost->c == c1 && !c.busy(); }));
    EXPECT_DOUBLE_EQ(c.snapshot().config.level1().c, 0.3);
    EXPECT_EQ(c.snapshot().modeled.c_source, "assumed");

    // Not a head: the error is shown, c stays.
    cfg.draft().model_path = test::synthetic_gguf();
    c.handle(ui::ActionSetConfig{cfg});
    ASSERT_TRUE(test::poll_until(
        c, [&] { return c.snapshot().head_cost && !c.snapshot().head_cost->error.empty() && !c.busy(); }));
    EXPECT_NE(c.snapshot().head_cost->error.find("eagle3"), std::string::npos) << c.snapshot().head_cost->error;
    EXPECT_DOUBLE_EQ(c.snapshot().config.level1().c, 0.3);
    // A drafter that is not a head has no head cost.
    cfg.draft() = {};
    c.handle(ui::ActionSetConfig{cfg});
    EXPECT_FALSE(c.snapshot().head_cost.has_value());
}

// The Model panel's random mixtures of experts (issue #49): each preset builds, opens with the bundled tokenizer, and
// feeds the modeled panels its experts; an unknown architecture is a message, and the open model stays.
TEST(AppController, OpensARandomMixtureOfExperts) {
    for (const char* arch : {"qwen3moe", "gpt-oss"}) {
        SCOPED_TRACE(arch);
        ui::AppController c;
        EXPECT_TRUE(c.handle(ui::ActionOpenSyntheticModel{arch}));
        ASSERT_TRUE(test::poll_until(c, [&] { return c.snapshot().model_state == ui::ModelState::loaded; }));
        const ui::ModelSummary& m = *c.snapshot().model;
        ASSERT_TRUE(m.hparams);
        EXPECT_EQ(m.hparams->arch, arch);
        EXPECT_TRUE(m.hparams->moe());
        EXPECT_EQ(m.name.rfind("synthetic ", 0), 0u) << "the panel labels random weights by this name";
        EXPECT_EQ(m.hparams->n_vocab, 2048) << "the bundled tokenizer's vocabulary";
        EXPECT_EQ(c.snapshot().modeled.target_spec.n_expert, m.hparams->n_expert) << "the modeled panels see experts";
        c.open_synthetic_model("llama4");
        EXPECT_EQ(c.snapshot().model->hparams->arch, arch) << "an unknown preset keeps the model";
    }
}

// The Export panel's work runs here, on jobs (issue #53): the target's digest once per file, and documents written
// off the GUI thread, with the outcome in the snapshot and the status bar.
TEST(AppController, HashesTheModelAndSavesExportsOnJobs) {
    ui::AppController c;
    const std::string path = test::synthetic_gguf();
    ASSERT_TRUE(c.handle(ui::ActionHashModel{path}));
    ASSERT_TRUE(test::poll_until(c, [&] { return !c.snapshot().model_digest.sha256.empty() && !c.busy(); }));
    EXPECT_EQ(c.snapshot().model_digest.path, path);
    EXPECT_EQ(c.snapshot().model_digest.sha256, exporting::sha256_file(path));
    ASSERT_TRUE(c.handle(ui::ActionHashModel{path}));
    EXPECT_FALSE(c.busy()) << "a file already hashed is not hashed again";

    ASSERT_TRUE(c.handle(ui::ActionHashModel{(test::tmp_dir() / "no_such_model.gguf").string()}));
    ASSERT_TRUE(test::poll_until(c, [&] { return !c.busy(); }));
    EXPECT_FALSE(c.snapshot().model_digest.error.empty()) << "a file that cannot be read is an error, not a digest";

    const auto out = test::tmp_dir() / "controller_export.sh";
    ASSERT_TRUE(c.handle(ui::ActionSaveExport{out.string(), "vllm serve x\n", {}}));
    ASSERT_TRUE(test::poll_until(c, [&] { return !c.snapshot().export_status.empty() && !c.busy(); }));
    EXPECT_EQ(c.snapshot().export_status, "saved to " + out.string());
    std::stringstream saved;
    saved << std::ifstream(out).rdbuf();
    EXPECT_EQ(saved.str(), "vllm serve x\n");

    ASSERT_TRUE(c.handle(ui::ActionSaveExport{(test::tmp_dir() / "no_such_dir" / "x.sh").string(), "x", {}}));
    ASSERT_TRUE(test::poll_until(c, [&] { return c.snapshot().export_status.rfind("not saved: ", 0) == 0; }));
    EXPECT_EQ(c.snapshot().messages.back().level, ui::MessageLevel::error);
}

// Auto-measure off (a big model): edits change the modeled panels only; Run now still measures; turning it back on
// measures the current settings. The estimate of a run's time comes from the last run's measured speeds.
TEST(AppController, AutoMeasureOffMeasuresOnlyOnRunNowAndARunsTimeIsEstimated) {
    auto now = ui::AppController::Clock::now();
    ui::AppController c([&] { return now; });
    std::atomic<int> started{0};
    c.set_measurer([&](const ui::AppController::MeasureRequest&, const CancelToken&, const ProgressFn&,
                       const std::function<void(const ui::MeasuredView&)>&) {
        ++started;
        ui::MeasuredView v;
        v.n_generated = 5;
        return v;
    });
    ui::AppConfig cfg      = c.snapshot().config;
    cfg.prefs.auto_measure = false;
    c.set_config(cfg);
    c.open_model(test::synthetic_gguf());
    ASSERT_TRUE(test::poll_until(c, [&] { return c.model() != nullptr; }));
    EXPECT_FALSE(c.rerun_pending()) << "auto-measure off: opening a model does not measure";
    cfg               = c.snapshot().config;
    cfg.spec.gamma[0] = 3;
    c.set_config(cfg);
    EXPECT_FALSE(c.rerun_pending());
    EXPECT_NE(c.snapshot().status_line.find("Run now"), std::string::npos);
    c.handle(ui::ActionRunMeasured{});
    ASSERT_TRUE(test::poll_until(c, [&] { return c.snapshot().measured.has_value(); }));
    EXPECT_EQ(started, 1);
    cfg                    = c.snapshot().config;
    cfg.prefs.auto_measure = true;
    c.set_config(cfg);
    EXPECT_TRUE(c.rerun_pending()) << "turned on: the current settings are measured";
    EXPECT_EQ(nlohmann::json(cfg).get<ui::AppConfig>(), cfg) << "the switch is kept in the settings";

    engine::SpecConfig spec = ui::default_spec();
    spec.max_prompts = 2, spec.max_new_tokens = 50, spec.baseline = true;
    spec.repeats.min = 1, spec.repeats.max = 10, spec.repeats.max_time_s = 0;
    EXPECT_FALSE(ui::estimate_run(spec, 20, 0).has_value()) << "no measured speed: no estimate";
    // One pass: 100 tokens at 20 tokens/s speculative (5 s) + 100 at 10 tokens/s plain (10 s).
    auto e = ui::estimate_run(spec, 20, 10);
    ASSERT_TRUE(e.has_value());
    EXPECT_DOUBLE_EQ(e->seconds_min, 15);
    EXPECT_DOUBLE_EQ(e->seconds_max, 150);
    spec.repeats.max_time_s = 40;  // no pass starts after 40 s: at most 3
    e                       = ui::estimate_run(spec, 20, 10);
    EXPECT_EQ(e->passes_max, 3);
    EXPECT_EQ(ui::describe_estimate(*e, spec),
              "a run of these settings: about 15 s to 45 s (1 to 3 passes of 2 prompts x 50 tokens, at the last run's "
              "10.0 tokens/s plain; prefill not counted)");
}
