// The modeled evaluator over SpecConfig fields: figures from the "modeled" block or the draft kind's assumption,
// strict errors naming the path, the formula it evaluates, and a grid sweep over SpecConfig pointers into a store
// that a cancelled run resumes.
#include "core/store/result_store.h"
#include "core/sweep/spec_predict_evaluator.h"
#include "core/sweep/sweep_runner.h"

#include "support/fresh_path.h"
#include "support/test_paths.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

using namespace speculum;
using namespace speculum::sweep;
using nlohmann::json;
using ::testing::HasSubstr;

namespace {

json chain(int gamma, double alpha, double c) {
    engine::SpecConfig s;
    s.levels = {drafts::DraftSpec{}};
    s.gamma  = {gamma};
    SpecModeled m;
    m.figures.levels = {{{alpha}, c}};
    return spec_predict_config(s, m);
}

std::string error_of(const json& config) {
    try {
        SpecPredictEvaluator().validate(config);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(SpecPredictEvaluator, EvaluatesTheChainFormulaOnTheSpecsGamma) {
    SpecPredictEvaluator ev;
    for (int k : {1, 4, 8})
        for (double a : {0.5, 0.8}) {
            const EvalResult r = ev.evaluate(chain(k, a, 0.05), {});
            // Cor. 4.2: E[tokens] = (1 - a^(k+1)) / (1 - a), EWIF = E / (1 + k c), modeled without hardware.
            const double expected = (1 - std::pow(a, k + 1)) / (1 - a);
            EXPECT_NEAR(r.metrics.at("accepted_length"), expected, 1e-9) << k << " " << a;
            EXPECT_NEAR(r.metrics.at("predicted_speedup"), expected / (1 + k * 0.05), 1e-9) << k << " " << a;
            EXPECT_NEAR(r.predictions.at("draft_work").get<double>(), k * 0.05, 1e-12);
            EXPECT_TRUE(r.stats.empty()) << "modeled rows carry no measured statistics";
        }
}

TEST(SpecPredictEvaluator, ALevelWithoutFiguresTakesItsKindsAssumption) {
    engine::SpecConfig s;
    s.levels                           = {drafts::DraftSpec{}};
    s.gamma                            = {4};
    s.levels[0].kind                   = drafts::DraftKind::eagle3;
    const SpecPredictConfig c          = parse_spec_predict_config(json(s));
    const drafts::DraftKindInfo& eagle = drafts::draft_kind_info(drafts::DraftKind::eagle3);
    ASSERT_EQ(c.modeled.figures.levels.size(), 1u);
    EXPECT_EQ(c.modeled.figures.levels[0].alpha, std::vector<double>{eagle.assumed_alpha});
    EXPECT_EQ(c.modeled.figures.levels[0].c, eagle.assumed_c);
    // Per-position figures round-trip through the block.
    SpecModeled m;
    m.figures.levels = {{{0.9, 0.8, 0.7}, 0.1}};
    m.horizontal     = {{0.7, 0.02, 3}};
    EXPECT_EQ(parse_spec_predict_config(spec_predict_config(s, m)).modeled, m);
}

TEST(SpecPredictEvaluator, BadFiguresNameTheirPath) {
    json j                             = chain(4, 0.8, 0.05);
    j["modeled"]["levels"][0]["alpah"] = 0.7;
    EXPECT_THAT(error_of(j), HasSubstr("modeled.levels[0].alpah: is not a known key"));
    j                                  = chain(4, 0.8, 0.05);
    j["modeled"]["levels"][0]["alpha"] = 1.0;
    EXPECT_THAT(error_of(j), HasSubstr("modeled.levels[0].alpha: must be in (0, 1)"));
    j                              = chain(4, 0.8, 0.05);
    j["modeled"]["levels"][0]["c"] = -1;
    EXPECT_THAT(error_of(j), HasSubstr("modeled.levels[0].c: is out of range"));
    j = chain(4, 0.8, 0.05);
    j["modeled"]["levels"].push_back(j["modeled"]["levels"][0]);
    EXPECT_THAT(error_of(j), HasSubstr("modeled.levels: has 2 entries for 1 draft levels"));
    j          = chain(4, 0.8, 0.05);
    j["gamma"] = json::array({0});
    EXPECT_THAT(error_of(j), HasSubstr("gamma"));
    EXPECT_THAT(error_of(json::array()), HasSubstr("must be a JSON object"));
}

TEST(SpecPredictEvaluator, GridSweepOverSpecPointersIsStoredAndResumes) {
    SweepSpec spec;
    spec.name      = "gamma x alpha";
    spec.evaluator = "spec-predict";
    spec.base      = chain(4, 0.8, 0.05);
    spec.axes = {{"", "/gamma/0", {1, 2, 4, 8}, "auto"}, {"", "/modeled/levels/0/alpha", {0.6, 0.7, 0.8, 0.9}, "auto"}};
    spec.objective.metric = "predicted_speedup";
    spec.validate();
    const auto file = test::fresh_tmp_path("spec_predict_sweep.sqlite");
    SpecPredictEvaluator ev;
    {
        auto store = store::ResultStore::open(file, store::ResultStore::Mode::read_write);
        CancelToken token;
        size_t seen = 0;
        EXPECT_THROW(run_sweep(spec, ev, *store, token, {},
                               [&](const SweepEvent&) {
                                   if (++seen == 5) token.cancel();
                               }),
                     Cancelled);
        EXPECT_GE(store->count(), 5u);
        EXPECT_LT(store->count(), 16u);
    }
    auto store                 = store::ResultStore::open(file, store::ResultStore::Mode::read_write);
    const SweepSummary summary = run_sweep(spec, ev, *store, CancelToken{});
    EXPECT_GE(summary.cached, 5u) << "the cancelled run's rows are cache hits";
    EXPECT_EQ(summary.cached + summary.evaluated, 16u);
    EXPECT_EQ(store->count(), 16u);
    ASSERT_TRUE(summary.best);
    // The best cell: alpha 0.9 and, at c 0.05, gamma 8 ((1 - 0.9^9) / 0.1 / 1.4 = 4.38 against 3.41 at gamma 4).
    EXPECT_EQ(summary.best->config["gamma"][0], 8);
    EXPECT_EQ(summary.best->config["modeled"]["levels"][0]["alpha"], 0.9);
}

// docs/sweeps.md's example runs as the page says.
TEST(SpecPredictEvaluator, TheDocumentedExampleRuns) {
    std::ifstream in(test::source_dir() / "docs/examples/sweep_spec_predict.json");
    const SweepSpec spec = sweep_spec_from_json(json::parse(in));
    auto store           = store::ResultStore::open(test::fresh_tmp_path("spec_predict_example.sqlite"),
                                                    store::ResultStore::Mode::read_write);
    SpecPredictEvaluator ev;
    const SweepSummary s = run_sweep(spec, ev, *store, CancelToken{});
    EXPECT_EQ(s.evaluated, 32u);
    ASSERT_TRUE(s.best);
    EXPECT_EQ(s.best->config["gamma"][0], 6);
    EXPECT_NEAR(*s.best->metric("predicted_speedup"), 2.0868, 1e-4);
}
