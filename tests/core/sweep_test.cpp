// Sweeps: spec parsing with errors naming the field, grid indexing and ranges, random draws, runs into a store
// with cache hits, cancellation keeping finished rows, constraints, failures, successive halving, and a
// parallel run equal to a serial one.
#include "core/jobs/job_system.h"
#include "core/parallel.h"
#include "core/store/filter.h"
#include "core/store/hash.h"
#include "core/sweep/predict_evaluator.h"
#include "core/sweep/sweep_runner.h"

#include "support/fresh_path.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>
#include <thread>

using namespace speculum;
using namespace speculum::sweep;
using nlohmann::json;
namespace fs = std::filesystem;

// ---- fixtures ----

namespace {

fs::path fresh_db(const std::string& name) {
    return speculum::test::fresh_tmp_path("sweep_" + name + ".sqlite");
}

json small_spec() {
    return json::parse(R"({
        "name": "k-alpha",
        "base": {"alpha": 0.8, "k": 4, "c": 0.05},
        "axes": [{"name": "k", "path": "/k", "values": [1, 2, 4, 8]},
                 {"name": "alpha", "path": "/alpha", "range": {"from": 0.5, "to": 0.9, "step": 0.1}}],
        "objective": {"metric": "predicted_speedup", "goal": "max"}
    })");
}

std::string error_of(const json& j) {
    try {
        sweep_spec_from_json(j);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

PredictEvaluator evaluator(int delay_ms = 0) {
    return PredictEvaluator(test::source_dir() / "resources", delay_ms);
}

// A prompt-based evaluator with a known optimum: the true score of x is -(x - 0.62)^2, observed with noise that
// shrinks as 1/sqrt(prompts), like a mean over prompts. Deterministic per (x, prompts).
class NoisyEvaluator : public Evaluator {
public:
    std::string kind() const override { return "noisy"; }
    std::string model_hash() const override { return "noisy-model"; }
    std::string dataset_hash(const json&, int prompts) const override {
        return "noisy-data-" + std::to_string(prompts);
    }
    void validate(const json& config) const override {
        if (!config.contains("x")) throw std::invalid_argument("x is missing");
    }
    EvalResult evaluate(const json& config, const EvalContext& ctx) override {
        ++calls;
        double x = config["x"].get<double>();
        std::mt19937_64 rng(store::fnv1a64(config.dump()) ^ static_cast<uint64_t>(ctx.prompts));
        std::normal_distribution<double> noise(0.0, 0.02 / std::sqrt(static_cast<double>(ctx.prompts)));
        EvalResult r;
        r.metrics["speedup"] = 2.0 - (x - 0.62) * (x - 0.62) + noise(rng);
        r.prompts            = ctx.prompts;
        return r;
    }
    std::atomic<int> calls{0};
};

}  // namespace

// ---- spec parsing and sampling ----

TEST(SweepSpec, ParsesRangesAndIndexesTheGrid) {
    SweepSpec s = sweep_spec_from_json(small_spec());
    ASSERT_EQ(s.axes.size(), 2u);
    EXPECT_EQ(s.axes[1].values, (std::vector<json>{0.5, 0.6, 0.7, 0.8, 0.9}));  // tidy decimals (hashed)
    EXPECT_EQ(s.grid_size(), 20u);
    json c = s.config_at(7);  // k index 1, alpha index 2: the last axis varies fastest
    EXPECT_EQ(c["k"], 2);
    EXPECT_EQ(c["alpha"], 0.7);
    EXPECT_EQ(c["c"], 0.05);
    EXPECT_EQ(s.describe(7), "k=2 alpha=0.7");
    // A drafter axis reads by its labels (every level labelled), else as shortened JSON.
    json drafters     = small_spec();
    drafters["axes"]  = json::parse(R"([{"name": "family", "path": "/levels", "values": [
                          [{"kind": "model", "label": "small draft", "model_path": "d.gguf"}],
                          [{"kind": "self", "label": "exit@3", "exit_layer": 3}, {"kind": "maxgram", "label": "max-gram"}],
                          [{"kind": "self", "exit_layer": 3}]]}])");
    const SweepSpec d = sweep_spec_from_json(drafters);
    EXPECT_EQ(d.describe(0), "family=small draft");
    EXPECT_EQ(d.describe(1), "family=exit@3 + max-gram");
    EXPECT_EQ(d.describe(2), "family=[{\"exit_layer\":3,\"kin...");
    json log_axis = json::parse(R"({"path": "/c", "range": {"from": 0.01, "to": 1, "count": 3, "log": true}})");
    json j        = small_spec();
    j["axes"].push_back(log_axis);
    EXPECT_EQ(sweep_spec_from_json(j).axes[2].values, (std::vector<json>{0.01, 0.1, 1.0}));
    json nested    = small_spec();  // a path into a nested object that does not exist yet is created
    nested["axes"] = json::parse(R"([{"path": "/hardware/context", "values": [128, 4096]}])");
    EXPECT_EQ(sweep_spec_from_json(nested).config_at(1)["hardware"]["context"], 4096);
    json round;
    to_json(round, s);
    EXPECT_EQ(sweep_spec_from_json(round), s);
}

TEST(SweepSpec, ErrorsNameTheField) {
    auto with = [](const char* pointer, json value) {
        json j                         = small_spec();
        j[json::json_pointer(pointer)] = std::move(value);
        return error_of(j);
    };
    EXPECT_NE(with("/colour", "red").find("spec.colour"), std::string::npos);
    EXPECT_NE(with("/axes/0/path", "k").find("axes[0].path"), std::string::npos);
    EXPECT_NE(with("/axes/1/range/step", 0).find("axes[1].range.step"), std::string::npos);
    EXPECT_NE(with("/axes/0/values", json::array()).find("axes[0].values"), std::string::npos);
    EXPECT_NE(with("/axes/1/path", "/k").find("repeats"), std::string::npos);
    EXPECT_NE(with("/sampling", json{{"mode", "exhaustive"}}).find("sampling.mode"), std::string::npos);
    EXPECT_NE(with("/sampling", json{{"mode", "adaptive"}, {"eta", 1}}).find("sampling.eta"), std::string::npos);
    EXPECT_NE(with("/objective/metric", "fun").find("objective.metric"), std::string::npos);
    EXPECT_NE(with("/objective/goal", "up").find("objective.goal"), std::string::npos);
    EXPECT_NE(with("/constraints", json::parse(R"([{"metric": "bpt"}])")).find("constraints[0]"), std::string::npos);
    EXPECT_NE(with("/evaluator", "oracle").find("evaluator"), std::string::npos);
    EXPECT_NE(with("/axes/0/values", 5).find("spec.axes[0].values: must be an array"), std::string::npos);
    json huge    = small_spec();
    huge["axes"] = json::array();
    for (int i = 0; i < 7; ++i)
        huge["axes"].push_back({{"path", "/x" + std::to_string(i)}, {"range", {{"from", 0}, {"to", 9}, {"step", 1}}}});
    EXPECT_NE(error_of(huge).find("grid limit"), std::string::npos);
    huge["sampling"] = {{"mode", "random"}, {"n", 5}};
    EXPECT_EQ(error_of(huge), "");  // sampled: fine
    EXPECT_EQ(plan_points(sweep_spec_from_json(huge)).size(), 5u);
    // A path through a number cannot be set: named when the configuration is built.
    json through               = small_spec();
    through["axes"][0]["path"] = "/k/deeper";
    EXPECT_THROW(sweep_spec_from_json(through).config_at(0), std::invalid_argument);
}

TEST(SweepSpec, RandomDrawsAreDistinctAndReproducible) {
    json j        = small_spec();
    j["sampling"] = {{"mode", "random"}, {"n", 7}, {"seed", 42}};
    auto a        = plan_points(sweep_spec_from_json(j));
    auto b        = plan_points(sweep_spec_from_json(j));
    ASSERT_EQ(a.size(), 7u);
    std::set<uint64_t> seen;
    for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].grid_index, b[i].grid_index);
        seen.insert(a[i].grid_index);
    }
    EXPECT_EQ(seen.size(), 7u);
    j["sampling"]["seed"] = 43;
    auto c                = plan_points(sweep_spec_from_json(j));
    bool differs          = false;
    for (size_t i = 0; i < c.size(); ++i) differs |= c[i].grid_index != a[i].grid_index;
    EXPECT_TRUE(differs);
    j["sampling"]["n"] = 1000;  // more than the grid: the whole grid once
    EXPECT_EQ(plan_points(sweep_spec_from_json(j)).size(), 20u);
}

// ---- grid runs ----

TEST(Sweep, GridRunStoresEveryConfigurationAndRerunIsACacheHit) {
    SweepSpec spec = sweep_spec_from_json(small_spec());
    auto store     = store::ResultStore::open(fresh_db("grid"), store::ResultStore::Mode::read_write);
    auto ev        = evaluator();
    std::vector<double> fractions;
    SweepSummary first =
        run_sweep(spec, ev, *store, CancelToken(), [&](double f, const std::string&) { fractions.push_back(f); });
    EXPECT_EQ(first.planned, 20u);
    EXPECT_EQ(first.evaluated, 20u);
    EXPECT_EQ(first.cached, 0u);
    EXPECT_EQ(store->count(), 20u);
    EXPECT_EQ(fractions.size(), 20u);
    EXPECT_DOUBLE_EQ(fractions.back(), 1.0);
    // The best is the brute-force best of predict() over the grid.
    double best = 0;
    for (uint64_t i = 0; i < spec.grid_size(); ++i)
        best = std::max(best, analytic::predict(ev.parse(spec.config_at(i))).predicted_speedup);
    ASSERT_TRUE(first.best.has_value());
    EXPECT_DOUBLE_EQ(*first.best->objective, best);
    EXPECT_EQ(first.best->sweep, "k-alpha");

    SweepSummary again = run_sweep(spec, ev, *store, CancelToken());
    EXPECT_EQ(again.evaluated, 0u);
    EXPECT_EQ(again.cached, 20u);
    EXPECT_EQ(store->count(), 20u);
    EXPECT_DOUBLE_EQ(*again.best->objective, best);
}

TEST(Sweep, ConstraintsAndMinimisedObjectives) {
    json j           = small_spec();
    j["objective"]   = {{"metric", "accepted_length"}, {"goal", "min"}};
    j["constraints"] = json::parse(R"([{"metric": "accepted_length", "min": 2.0}])");
    SweepSpec spec   = sweep_spec_from_json(j);
    auto store       = store::ResultStore::open(fresh_db("constraints"), store::ResultStore::Mode::read_write);
    auto ev          = evaluator();
    SweepSummary s   = run_sweep(spec, ev, *store, CancelToken());
    ASSERT_TRUE(s.best.has_value());
    EXPECT_GE(s.best->metrics.at("accepted_length"), 2.0);
    EXPECT_DOUBLE_EQ(*s.best->objective, -s.best->metrics.at("accepted_length"));
    for (const auto& row : store->query()) {
        bool feasible = row.metrics.at("accepted_length") >= 2.0;
        EXPECT_EQ(row.objective.has_value(), feasible);
        if (feasible) {
            EXPECT_LE(s.best->metrics.at("accepted_length"), row.metrics.at("accepted_length"));
        }
    }
}

TEST(Sweep, InvalidConfigurationIsRejectedBeforeAnythingRuns) {
    json j                 = small_spec();
    j["axes"][0]["values"] = json::array({2, -3});
    SweepSpec spec         = sweep_spec_from_json(j);
    auto store             = store::ResultStore::open(fresh_db("invalid"), store::ResultStore::Mode::read_write);
    auto ev                = evaluator();
    try {
        run_sweep(spec, ev, *store, CancelToken());
        ADD_FAILURE() << "accepted k = -3";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("k=-3"), std::string::npos) << e.what();
    }
    EXPECT_EQ(store->count(), 0u);
}

TEST(Sweep, CancelKeepsFinishedConfigurationsAndTheRerunCompletesThem) {
    SweepSpec spec = sweep_spec_from_json(small_spec());
    auto db        = fresh_db("cancel");
    auto store     = store::ResultStore::open(db, store::ResultStore::Mode::read_write);
    auto slow      = evaluator(20);
    CancelToken token;
    size_t seen = 0;
    EXPECT_THROW(run_sweep(spec, slow, *store, token, {},
                           [&](const SweepEvent& e) {
                               seen = e.done;
                               if (e.done == 5) token.cancel();
                           }),
                 Cancelled);
    // Configurations already in flight when the token fires may still finish and be stored (the pool runs
    // several at once); none may be lost, and every stored one is a cache hit on the re-run.
    EXPECT_GE(seen, 5u);
    EXPECT_LT(seen, 20u);
    const size_t kept = store->count();
    EXPECT_EQ(kept, seen);
    auto fast      = evaluator();
    SweepSummary s = run_sweep(spec, fast, *store, CancelToken());
    EXPECT_EQ(s.cached, kept);
    EXPECT_EQ(s.evaluated, 20u - kept);
}

TEST(Sweep, FailedConfigurationsAreStoredAndRetried) {
    class Flaky : public NoisyEvaluator {
    public:
        EvalResult evaluate(const json& config, const EvalContext& ctx) override {
            if (fail && config["x"] == 0.5) throw std::runtime_error("out of memory");
            return NoisyEvaluator::evaluate(config, ctx);
        }
        bool fail = true;
    } flaky;
    SweepSpec spec = sweep_spec_from_json(json::parse(R"({"base": {"x": 0}, "prompts": 2, "objective": {"metric":
        "speedup"}, "axes": [{"path": "/x", "values": [0.25, 0.5, 0.75]}]})"));
    auto store     = store::ResultStore::open(fresh_db("failed"), store::ResultStore::Mode::read_write);
    SweepSummary s = run_sweep(spec, flaky, *store, CancelToken());
    EXPECT_EQ(s.failed, 1u);
    EXPECT_EQ(s.evaluated, 2u);
    auto failed = store->query(store::parse_filters("status=failed"));
    ASSERT_EQ(failed.size(), 1u);
    EXPECT_EQ(failed[0].message, "out of memory");
    EXPECT_FALSE(failed[0].objective.has_value());
    flaky.fail = false;
    s          = run_sweep(spec, flaky, *store, CancelToken());
    EXPECT_EQ(s.cached, 2u);
    EXPECT_EQ(s.evaluated, 1u);
    EXPECT_TRUE(store->query(store::parse_filters("status=failed")).empty());
}

// ---- successive halving ----

TEST(Sweep, SuccessiveHalvingFindsTheOptimumWithoutTheFullBudget) {
    json j         = json::parse(R"({"name": "sh", "base": {"x": 0},
        "axes": [{"path": "/x", "range": {"from": 0, "to": 1, "step": 0.01}}],
        "sampling": {"mode": "adaptive", "n": 27, "seed": 7, "eta": 3, "min_prompts": 1, "max_prompts": 27},
        "objective": {"metric": "speedup"}})");
    SweepSpec spec = sweep_spec_from_json(j);
    auto store     = store::ResultStore::open(fresh_db("adaptive"), store::ResultStore::Mode::read_write);
    NoisyEvaluator ev;
    SweepSummary s = run_sweep(spec, ev, *store, CancelToken());
    EXPECT_EQ(s.rung_sizes, (std::vector<size_t>{27, 9, 3, 1}));
    EXPECT_EQ(s.rung_prompts, (std::vector<int>{1, 3, 9, 27}));
    EXPECT_EQ(ev.calls.load(), 40);
    // Prompt budget 27*1 + 9*3 + 3*9 + 1*27 = 108, against 27*27 = 729 for the full sample at full fidelity.
    ASSERT_TRUE(s.best.has_value());
    EXPECT_EQ(s.best->prompts, 27);
    // The winner is the best of the 27 drawn points by the true score (the noise at 27 prompts is tiny).
    double best_true = -1e9, winner_x = s.best->config["x"].get<double>();
    for (const auto& p : plan_points(spec)) {
        double x  = p.config["x"].get<double>();
        best_true = std::max(best_true, -(x - 0.62) * (x - 0.62));
    }
    EXPECT_NEAR(-(winner_x - 0.62) * (winner_x - 0.62), best_true, 5e-3);
    // Re-running finds every rung in the store.
    NoisyEvaluator again;
    SweepSummary s2 = run_sweep(spec, again, *store, CancelToken());
    EXPECT_EQ(again.calls.load(), 0);
    EXPECT_EQ(s2.cached, 40u);
    EXPECT_EQ(s2.best->key, s.best->key);
}

// ---- parallel run ----

TEST(Sweep, ParallelRunInTheJobArenaEqualsTheSerialRun) {
    SweepSpec spec = sweep_spec_from_json(small_spec());
    auto serial_db = store::ResultStore::open(fresh_db("serial"), store::ResultStore::Mode::read_write);
    auto par_db    = store::ResultStore::open(fresh_db("parallel"), store::ResultStore::Mode::read_write);
    auto ev        = evaluator(1);
    set_serial_mode(true);
    run_sweep(spec, ev, *serial_db, CancelToken());
    set_serial_mode(false);
    jobs::JobSystem js({.concurrency = 1});
    jobs::JobId id = js.submit("sweep", [&](jobs::JobContext& ctx) -> std::any {
        return run_sweep(spec, ev, *par_db, ctx.token(), ctx.progress_fn(),
                         [&](const SweepEvent& e) { ctx.post(e.row.key.config_hash); });
    });
    ASSERT_TRUE(js.wait(id, std::chrono::seconds(30)));
    auto msgs = js.drain();
    ASSERT_EQ(msgs.size(), 21u);  // 20 posted rows + the final summary
    EXPECT_EQ(std::any_cast<SweepSummary>(msgs.back().payload).evaluated, 20u);
    auto a = serial_db->query(), b = par_db->query();
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].key, b[i].key);
        EXPECT_EQ(a[i].metrics, b[i].metrics);
        EXPECT_EQ(a[i].predictions, b[i].predictions);
    }
}
