// Run reports → calibration on real runs: the engine runs the bundled target with the bundled draft (a chain at
// two draft lengths and a vertical Model → Max-Gram cascade), the report is read back through run_report.h and
// the fitted model must reproduce what was counted; foreign and malformed reports get errors naming the field.
#include "core/analytic/run_calibration.h"
#include "core/engine/engine.h"
#include "core/model/model.h"
#include "core/resources.h"
#include "core/session/run.h"
#include "core/session/run_report.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>

namespace speculum::test {
namespace {

using nlohmann::json;

// Two short prose prompts (token ids of the bundled tokenizer are not needed: the models take any id < 2048).
const std::vector<std::vector<int32_t>> kPrompts{{2046, 49, 278, 1094, 289, 1039, 17, 278, 1281, 257, 266, 1186},
                                                 {2046, 82, 451, 318, 1352, 289, 461, 11, 620, 278, 1045, 266}};
constexpr int32_t kNew = 24;

const model::Model& target() {
    static model::Model m = model::Model::load(resource_path(kBundledTargetModel).string());
    return m;
}

engine::SpecConfig config(std::vector<int32_t> gamma, bool cascade) {
    engine::SpecConfig c;
    drafts::DraftSpec draft;
    draft.kind       = drafts::DraftKind::model;
    draft.model_path = resource_path(kBundledDraftModel).string();
    c.levels         = {draft};
    if (cascade) {
        drafts::DraftSpec mag;
        mag.kind = drafts::DraftKind::maxgram;
        c.levels.push_back(mag);
    }
    c.gamma          = std::move(gamma);
    c.max_new_tokens = kNew;
    return c;
}

// The report `speculum-cli run --report` writes: {config, target, drafter, runs[], total}.
json run_report(const engine::SpecConfig& cfg) {
    auto stack = session::make_draft_stack(cfg, target());
    json runs  = json::array();
    engine::RunStats total;
    for (size_t p = 0; p < kPrompts.size(); ++p) {
        engine::SpecEngine eng(target(), cfg, stack);
        engine::RunResult r = eng.run(kPrompts[p]);
        json one            = r;
        one["id"]           = std::string("p").append(std::to_string(p));
        runs.push_back(one);
        engine::accumulate(total, r.stats);
    }
    return {
        {"config", cfg}, {"target", "bundled-target"}, {"drafter", stack->name()}, {"runs", runs}, {"total", total}};
}

const json& chain_report(int32_t gamma) {
    static std::map<int32_t, json> cache;
    if (!cache.count(gamma)) cache[gamma] = run_report(config({gamma}, false));
    return cache[gamma];
}

const json& cascade_report() {
    static json r = run_report(config({5, 2}, true));
    return r;
}

std::string error_of(const json& report) {
    try {
        session::measured_run_from_report(report, "r.json");
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "accepted";
}

}  // namespace

TEST(RunReport, ChainReportBecomesAMeasuredRun) {
    const json& rep = chain_report(3);
    auto r          = session::measured_run_from_report(rep, "chain.json");
    EXPECT_EQ(r.source, "chain.json");
    EXPECT_EQ(r.target, "bundled-target");
    EXPECT_EQ(r.k_matrix, (std::vector<std::vector<int>>{{0, 3}, {0, 0}}));
    EXPECT_EQ(r.generated, (std::vector<int>{kNew, kNew}));
    EXPECT_EQ(r.n_steps, rep["total"]["n_steps"].get<int64_t>());
    ASSERT_EQ(r.levels.size(), 2u);
    EXPECT_FALSE(r.levels[1].per_call);
    EXPECT_EQ(r.levels[1].n_forward, rep["total"]["levels"][1]["n_forward"].get<int64_t>());
    EXPECT_GT(r.speedup, 0.0);
    auto c = session::measured_run_from_report(cascade_report(), "cascade.json");
    EXPECT_EQ(c.k_matrix, (std::vector<std::vector<int>>{{0, 5, 0}, {0, 0, 2}, {0, 0, 0}}));
    EXPECT_TRUE(c.levels[2].per_call);  // Max-Gram is timed per call
}

TEST(RunReport, OneReportIsReproducedUpToTheAcceptanceModel) {
    // With one report the timing fit reproduces its times, so the residual is the acceptance model's: modeled
    // target steps against the counted ones.
    for (const json* rep : {&chain_report(3), &cascade_report()}) {
        auto cal = analytic::calibrate_engine_runs({session::measured_run_from_report(*rep, "r.json")});
        ASSERT_EQ(cal.runs.size(), 1u);
        const auto& p = cal.runs[0];
        EXPECT_NEAR(p.levels[0].units_modeled / p.levels[0].units_measured, 1.0, 0.1) << rep->at("drafter");
        EXPECT_LT(std::abs(p.residual), 0.1) << rep->at("drafter");
        EXPECT_GT(p.speedup_predicted, 0.0);
        // Accepted draft tokens are what the acceptance fit matches: the target's through its per-position α,
        // the intermediate reviewer's exactly (bisection). Counts are exact for greedy runs, times are not.
        EXPECT_NEAR(p.levels[0].accepted_modeled / p.levels[0].accepted_measured, 1.0, 0.1);
        if (p.levels.size() == 3) {
            EXPECT_GE(p.levels[1].alpha, 0.0);
            EXPECT_NEAR(p.levels[1].accepted_modeled, p.levels[1].accepted_measured, 1e-6);
            // Not fitted: how often the intermediate reviewer calls Max-Gram follows from the modeled process. Its
            // passes also count catch-up syncs (the prompt, re-syncs), so the modeled steps stay below them.
            EXPECT_NEAR(p.levels[2].units_modeled / p.levels[2].units_measured, 1.0, 0.15)
                << p.levels[2].units_modeled << " vs " << p.levels[2].units_measured;
            // The reviewer's own calls are not fitted either: its modeled steps follow from the fitted α's and
            // stay near the counted passes (which also hold the catch-up syncs).
            EXPECT_NEAR(p.levels[1].units_modeled / p.levels[1].units_measured, 1.0, 0.15)
                << p.levels[1].units_modeled << " vs " << p.levels[1].units_measured;
        }
    }
}

TEST(RunReport, SeveralReportsShareTheTimingFit) {
    std::vector<analytic::MeasuredEngineRun> runs{session::measured_run_from_report(chain_report(2), "k2.json"),
                                                  session::measured_run_from_report(chain_report(6), "k6.json"),
                                                  session::measured_run_from_report(cascade_report(), "cascade.json")};
    auto cal = analytic::calibrate_engine_runs(runs);
    ASSERT_EQ(cal.targets.size(), 1u);
    EXPECT_EQ(cal.targets[0].runs, 3);
    // The draft model as a leaf (pooled over the two chains), the same model reviewing in the cascade (its own
    // cost: passes over several tokens), and Max-Gram.
    ASSERT_EQ(cal.levels.size(), 3u);
    EXPECT_EQ(cal.levels[0].runs, 2);
    EXPECT_EQ(cal.levels[0].role, "drafter");
    EXPECT_GT(cal.levels[0].c, 0.0);
    EXPECT_EQ(cal.levels[1].runs, 1);
    EXPECT_NE(cal.levels[1].role.find("reviewer"), std::string::npos);
    EXPECT_TRUE(cal.levels[2].per_call);
    EXPECT_EQ(cal.runs.size(), 3u);
    for (const auto& p : cal.runs) {
        EXPECT_TRUE(std::isfinite(p.residual)) << p.source;
        EXPECT_GT(p.speedup_predicted, 0.0) << p.source;
    }
    json j;
    analytic::to_json(j, cal);
    EXPECT_NE(j["label"].get<std::string>().find("modeled"), std::string::npos);
    EXPECT_EQ(j["runs"][2]["source"], "cascade.json");
}

TEST(RunReport, TreeRunsAreModeledByTheirRankAcceptance) {
    // A static tree (2 x 2 x 1) and a Sequoia tree from the same draft: read back with their shapes and counts by
    // depth and rank, modeled through the tree's expected length, with the verification passes by width.
    engine::SpecConfig st = config({3}, false);
    st.verification       = engine::Verification::tree;
    st.tree.branching     = {2, 2, 1};
    engine::SpecConfig sq = st;
    sq.tree.kind          = engine::TreeKind::sequoia;
    sq.tree.node_budget = 6, sq.tree.max_depth = 4;
    const auto a = session::measured_run_from_report(run_report(st), "static.json");
    const auto b = session::measured_run_from_report(run_report(sq), "sequoia.json");
    EXPECT_EQ(a.tree_parent.size(), 1u + 2 + 4 + 4);  // root, 2, 2 x 2, then one child each
    EXPECT_EQ(b.sequoia_budget, 7);
    EXPECT_FALSE(a.rank_offered.empty());
    EXPECT_FALSE(a.verify_width_passes.empty());
    const auto cal = analytic::calibrate_engine_runs({a, b});
    for (const auto& p : cal.runs) {
        EXPECT_TRUE(std::isfinite(p.residual)) << p.source;
        // The i.i.d. rank model against what was counted (few steps: a loose bound).
        EXPECT_NEAR(p.tokens_per_step_modeled / p.tokens_per_step_measured, 1.0, 0.25) << p.source;
    }
    ASSERT_EQ(cal.levels.size(), 1u);  // the draft model as a tree drafter, pooled over both runs
    EXPECT_EQ(cal.levels[0].role, "tree drafter");
    EXPECT_EQ(cal.levels[0].runs, 2);
}

TEST(RunReport, ForeignAndMalformedReportsNameTheProblem) {
    EXPECT_NE(error_of(json{{"label", "modeled"}, {"ewif", 2.0}}).find("not a `speculum-cli run --report` file"),
              std::string::npos);
    EXPECT_NE(error_of(json::array()).find("a JSON array"), std::string::npos);
    json bad = chain_report(3);
    bad["total"]["levels"][1].erase("t_s");
    EXPECT_NE(error_of(bad).find("r.json: total.levels[1].t_s: missing"), std::string::npos) << error_of(bad);
    bad                            = chain_report(3);
    bad["total"]["pos_reached"][0] = "many";
    EXPECT_NE(error_of(bad).find("total.pos_reached[0]"), std::string::npos) << error_of(bad);
    bad                                   = chain_report(3);
    bad["total"]["baseline_tokens_per_s"] = 0.0;
    EXPECT_NE(error_of(bad).find("--no-baseline"), std::string::npos) << error_of(bad);
    bad                           = chain_report(3);
    bad["config"]["verification"] = "tree";  // a tree config without the counts by rank
    EXPECT_NE(error_of(bad).find("rank_offered"), std::string::npos) << error_of(bad);
    bad                          = chain_report(3);
    bad["config"]["length_mode"] = "threshold";  // modeled per target run by predict, not by the calibration
    EXPECT_NE(error_of(bad).find("config.length_mode"), std::string::npos) << error_of(bad);
    bad                    = chain_report(3);
    bad["config"]["gamma"] = json::array({3, 3});
    EXPECT_NE(error_of(bad).find("config: spec.gamma"), std::string::npos) << error_of(bad);
    bad                         = chain_report(3);
    bad["runs"][0]["cancelled"] = true;
    EXPECT_NE(error_of(bad).find("runs[0]: was cancelled"), std::string::npos) << error_of(bad);
    bad                             = chain_report(3);
    bad["total"]["pos_accepted"][0] = bad["total"]["pos_reached"][0].get<int64_t>() + 1;
    EXPECT_NE(error_of(bad).find("pos_accepted[0] exceeds"), std::string::npos) << error_of(bad);
    bad = chain_report(3);
    bad["runs"].erase(1);  // the total no longer adds up
    EXPECT_NE(error_of(bad).find("total.n_generated"), std::string::npos) << error_of(bad);
    EXPECT_THROW(session::load_run_report("/nonexistent/report.json"), std::invalid_argument);
    bad                     = chain_report(3);
    bad["total"]["experts"] = {{"n_expert", 4},
                               {"n_expert_used", 2},
                               {"n_layer", 2},
                               {"hist", {1, 2, 3}},
                               {"mean_distinct_per_layer", json::array()}};
    EXPECT_NE(error_of(bad).find("total.experts"), std::string::npos) << error_of(bad);
}

// A mixture-of-experts run's recorded routing (RunStats::experts, as the report writes it) becomes the usage
// shares (pooled over layers, summing to the experts per token) and the distinct experts by pass width.
TEST(RunReport, MoeRoutingBecomesUsageAndDistinctExpertsByWidth) {
    json rep                = chain_report(3);
    rep["total"]["experts"] = {{"n_expert", 4},
                               {"n_expert_used", 2},
                               {"n_layer", 2},
                               {"hist", {6, 2, 0, 4, 2, 2, 0, 4}},
                               {"width_passes", {0, 3}},
                               {"width_distinct", {0, 10}},
                               {"mean_distinct_per_layer", {0.0, 1.5, 2.5}}};
    const auto r            = session::measured_run_from_report(rep, "moe.json");
    ASSERT_EQ(r.expert_usage.size(), 4u);
    EXPECT_DOUBLE_EQ(r.expert_usage[0], 2.0 * 8 / 20);
    EXPECT_DOUBLE_EQ(r.expert_usage[2], 0.0);
    EXPECT_DOUBLE_EQ(r.expert_usage[0] + r.expert_usage[1] + r.expert_usage[2] + r.expert_usage[3], 2.0);
    EXPECT_EQ(r.distinct_by_width, (std::vector<double>{0.0, 1.5, 2.5}));
    rep["total"]["experts"]["mean_distinct_per_layer"][1] = 9.0;  // more than the experts there are
    EXPECT_NE(error_of(rep).find("mean_distinct_per_layer[1]"), std::string::npos) << error_of(rep);
    const auto dense = session::measured_run_from_report(chain_report(3), "dense.json");
    EXPECT_TRUE(dense.expert_usage.empty());
}

// RepeatSummary has one JSON shape, the run report's, which sweeps also keep in a measured row's statistics.
TEST(RunReport, RepeatSummaryRoundTripsStrictly) {
    session::RepeatSummary rs;
    rs.passes = 3, rs.wall_s = 1.5, rs.stop = "interval within 5 %";
    rs.speedup_pairs       = {1.1, 1.2, 1.15};
    rs.speedup             = {1.15, 1.1, 1.2, 3, 0.75};
    rs.cost_ratio          = {0.2, 0.19, 0.21, 3, 0.75};
    rs.other_load          = 0.02;
    const nlohmann::json j = rs;
    EXPECT_EQ(j.get<session::RepeatSummary>().speedup, rs.speedup);
    EXPECT_EQ(j.get<session::RepeatSummary>().other_load, rs.other_load);
    EXPECT_EQ(nlohmann::json(j.get<session::RepeatSummary>()), j);
    nlohmann::json bad       = j;
    bad["speedup"]["median"] = "fast";
    const auto error         = [](const nlohmann::json& x) {
        try {
            (void)x.get<session::RepeatSummary>();
        } catch (const std::invalid_argument& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_EQ(error(bad), "repeated.speedup.median: expected a number, got string");
    // The report reader checks it too, naming the file.
    nlohmann::json report = chain_report(3);
    report["repeated"]    = bad;
    EXPECT_NE(error_of(report).find("r.json: repeated.speedup.median"), std::string::npos) << error_of(report);
}

}  // namespace speculum::test
