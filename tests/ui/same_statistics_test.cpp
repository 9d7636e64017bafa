// The three front ends run a configuration the same way (core/session): the app's measurer, an engine sweep's
// evaluator and `speculum-cli run` give identical statistics for the same config and prompts. Greedy decoding is
// deterministic, so every count must match exactly; only wall times may differ.
#include "ui/ui_fixtures.h"

#include "core/resources.h"
#include "core/session/run_report.h"
#include "core/sweep/engine_evaluator.h"
#include "support/fresh_path.h"
#include "support/run_process.h"
#include "ui/model/engine_measurer.h"

#include <fstream>

using namespace speculum;

namespace {

// What a greedy run counts, per run and per level; timings and rates are left out.
nlohmann::json counts(const nlohmann::json& stats) {
    nlohmann::json c;
    for (const char* k : {"n_prompt", "n_generated", "n_steps", "n_drafted", "n_accepted", "pos_reached",
                          "pos_accepted", "accepted_len_hist", "verify_width_passes", "rank_offered", "rank_accepted",
                          "lossless_checked", "lossless_mismatch"})
        c[k] = stats.at(k);
    for (const nlohmann::json& l : stats.at("levels")) {
        nlohmann::json one;
        for (const char* k :
             {"level", "n_calls", "n_forward", "bytes_weights", "bytes_kv", "flops", "n_reviewed", "n_review_accepted"})
            one[k] = l.at(k);
        c["levels"].push_back(one);
    }
    return c;
}

}  // namespace

TEST(SameStatistics, CliAppAndSweepAgreeOnEveryCount) {
    std::error_code ec;
    const auto res = resources_dir();
    const auto ds  = datasets_dir();
    if (!res || !ds || !std::filesystem::exists(*res / kBundledTargetModel, ec) ||
        !std::filesystem::exists(*res / kBundledDraftModel, ec))
        GTEST_SKIP() << "bundled models or datasets not found";
    const std::string target  = (*res / kBundledTargetModel).string();
    const std::string dataset = (*ds / "code_completion.jsonl").string();

    // The app's default configuration (the bundled draft model), greedy, two prompts of the dataset.
    ui::AppConfig app;
    app.spec.gamma[0]             = 4;
    app.spec.sampling.temperature = 0.0f;
    app.spec.max_new_tokens       = 16;
    app.spec.max_prompts          = 2;
    const engine::SpecConfig cfg  = ui::spec_config_from_app(app, {dataset, "", {}});
    const nlohmann::json cfg_json = cfg;

    ui::AppController::MeasureRequest req;
    req.config                    = app;
    req.model                     = std::make_shared<const model::Model>(model::Model::load(target));
    req.dataset_path              = dataset;
    req.model_path                = target;
    const ui::MeasuredView view   = ui::measure_with_engine(req, {}, {}, {});
    const nlohmann::json from_app = view.stats;

    sweep::EngineEvaluator evaluator(target);
    const nlohmann::json from_sweep = evaluator.evaluate(cfg_json, {}).stats;

    const auto cfg_file    = test::fresh_tmp_path("same_statistics_config.json");
    const auto report_file = test::fresh_tmp_path("same_statistics_report.json");
    std::ofstream(cfg_file) << cfg_json.dump(2);
    const auto r =
        test::run_cli({"run", "--config", cfg_file.string(), "-m", target, "--report", report_file.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::ifstream in(report_file);
    const nlohmann::json cli_report = nlohmann::json::parse(in);
    const nlohmann::json from_cli   = cli_report.at("total");

    ASSERT_EQ(from_app.at("n_generated"), 32) << "two prompts of 16 tokens";
    ASSERT_GT(from_app.at("n_accepted").get<int64_t>(), 0) << "the draft was accepted: the comparison means something";
    EXPECT_EQ(counts(from_app), counts(from_cli)) << "the app and speculum-cli run";
    EXPECT_EQ(counts(from_app), counts(from_sweep)) << "the app and an engine sweep";
    EXPECT_EQ(view.lossless_mismatches, 0);

    // One run report (core/session/run_report.h): the app writes the keys the CLI writes, with the same counts, and
    // the reader calibration uses takes both.
    ASSERT_TRUE(view.report);
    const nlohmann::json& app_report = *view.report;
    std::vector<std::string> app_keys, cli_keys;
    for (const auto& [k, v] : app_report.items()) app_keys.push_back(k);
    for (const auto& [k, v] : cli_report.items()) cli_keys.push_back(k);
    EXPECT_EQ(app_keys, cli_keys);
    EXPECT_EQ(app_report.at("target"), target);
    EXPECT_EQ(counts(app_report.at("total")), counts(from_cli));
    ASSERT_EQ(app_report.at("runs").size(), 2u);
    EXPECT_EQ(app_report.at("runs")[1].at("tokens"), cli_report.at("runs")[1].at("tokens"));
    EXPECT_NO_THROW((void)session::measured_run_from_report(app_report, "app"));
    EXPECT_NO_THROW((void)session::measured_run_from_report(cli_report, "cli"));
}
