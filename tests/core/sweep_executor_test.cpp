// Sweeps with a BatchExecutor (how sweep --mpi evaluates elsewhere): rows that come back in any order, through
// JSON, give the same store as a local run, in adaptive mode too; cache hits never reach the executor; a point
// the executor never finishes is simply not stored and the next run evaluates it; misuse is caught.
#include "core/store/row_json.h"
#include "core/sweep/predict_evaluator.h"
#include "core/sweep/sweep_runner.h"

#include "support/fresh_path.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>

using namespace speculum;
using namespace speculum::sweep;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

fs::path fresh_db(const std::string& name) {
    return speculum::test::fresh_tmp_path("sweep_exec_" + name + ".sqlite");
}

SweepSpec spec_of(const char* sampling) {
    json j        = json::parse(R"({
        "name": "exec",
        "base": {"alpha": 0.8, "k": 4, "c": 0.05},
        "axes": [{"name": "k", "path": "/k", "values": [1, 2, 4, 8]},
                 {"name": "alpha", "path": "/alpha", "range": {"from": 0.5, "to": 0.9, "step": 0.1}}],
        "objective": {"metric": "predicted_speedup", "goal": "max"}
    })");
    j["sampling"] = json::parse(sampling);
    return sweep_spec_from_json(j);
}

PredictEvaluator evaluator() {
    return PredictEvaluator(test::source_dir() / "resources", 0);
}

// The analytic evaluator keyed by prompt count, like a measured one: each adaptive rung is new work.
class PromptKeyedEvaluator : public PredictEvaluator {
public:
    PromptKeyedEvaluator() : PredictEvaluator(test::source_dir() / "resources", 0) {}
    std::string dataset_hash(const json&, int prompts) const override { return "prompts-" + std::to_string(prompts); }
};

// "Remote" evaluation: its own evaluator instance, the points in reverse order, each row sent as JSON text.
struct ReverseExecutor {
    PromptKeyedEvaluator remote;
    std::vector<size_t> batch_sizes;
    BatchExecutor fn(const SweepSpec& spec) {
        return [this, &spec](const std::vector<SweepPoint>& points, int prompts, const FinishFn& finish) {
            batch_sizes.push_back(points.size());
            for (size_t k = points.size(); k-- > 0;) {
                store::ResultRow row = evaluate_point(spec, remote, points[k], prompts, CancelToken());
                finish(k, store::row_from_json(json::parse(store::row_to_json(row).dump())));
            }
        };
    }
};

void expect_same_store(store::ResultStore& a, store::ResultStore& b) {
    auto ra = a.query(), rb = b.query();
    ASSERT_EQ(ra.size(), rb.size());
    for (size_t i = 0; i < ra.size(); ++i) {
        EXPECT_EQ(ra[i].key, rb[i].key);
        EXPECT_EQ(ra[i].config, rb[i].config);
        EXPECT_EQ(ra[i].metrics, rb[i].metrics);
        EXPECT_EQ(ra[i].predictions, rb[i].predictions);
        EXPECT_EQ(ra[i].objective, rb[i].objective);
        EXPECT_EQ(ra[i].prompts, rb[i].prompts);
    }
}

}  // namespace

TEST(SweepExecutor, RowsFromElsewhereInAnyOrderEqualALocalRun) {
    SweepSpec spec = spec_of(R"({"mode": "grid"})");
    auto local_db  = store::ResultStore::open(fresh_db("local"), store::ResultStore::Mode::read_write);
    auto exec_db   = store::ResultStore::open(fresh_db("remote"), store::ResultStore::Mode::read_write);
    PromptKeyedEvaluator ev;
    SweepSummary local = run_sweep(spec, ev, *local_db, CancelToken());

    ReverseExecutor exec;
    SweepOptions options;
    options.executor = exec.fn(spec);
    std::vector<std::string> events;
    SweepSummary remote = run_sweep(
        spec, ev, *exec_db, CancelToken(), {}, [&](const SweepEvent& e) { events.push_back(e.row.key.config_hash); },
        options);
    EXPECT_EQ(exec.batch_sizes, (std::vector<size_t>{20}));
    EXPECT_EQ(remote.evaluated, 20u);
    EXPECT_EQ(events.size(), 20u);  // one event per row, as it arrived
    ASSERT_TRUE(remote.best && local.best);
    EXPECT_EQ(remote.best->key, local.best->key);
    expect_same_store(*local_db, *exec_db);

    // Stored configurations are cache hits: the executor is not called at all.
    SweepSummary again = run_sweep(spec, ev, *exec_db, CancelToken(), {}, {}, options);
    EXPECT_EQ(again.cached, 20u);
    EXPECT_EQ(exec.batch_sizes.size(), 1u);
}

TEST(SweepExecutor, AdaptiveRungsAreBatches) {
    SweepSpec spec = spec_of(R"({"mode": "adaptive", "n": 9, "seed": 3, "eta": 3, "min_prompts": 1,
                                 "max_prompts": 9})");
    auto local_db  = store::ResultStore::open(fresh_db("ad_local"), store::ResultStore::Mode::read_write);
    auto exec_db   = store::ResultStore::open(fresh_db("ad_remote"), store::ResultStore::Mode::read_write);
    PromptKeyedEvaluator ev;
    SweepSummary local = run_sweep(spec, ev, *local_db, CancelToken());
    ReverseExecutor exec;
    SweepOptions options;
    options.executor    = exec.fn(spec);
    SweepSummary remote = run_sweep(spec, ev, *exec_db, CancelToken(), {}, {}, options);
    EXPECT_EQ(remote.rung_sizes, local.rung_sizes);
    EXPECT_EQ(exec.batch_sizes, (std::vector<size_t>{9, 3, 1}));
    EXPECT_EQ(remote.best->key, local.best->key);
    expect_same_store(*local_db, *exec_db);
}

TEST(SweepExecutor, APointNeverFinishedIsLeftForTheNextRun) {
    SweepSpec spec = spec_of(R"({"mode": "grid"})");
    auto db        = store::ResultStore::open(fresh_db("lost"), store::ResultStore::Mode::read_write);
    auto ev        = evaluator();
    std::string lost_hash;
    SweepOptions options;
    options.executor = [&](const std::vector<SweepPoint>& points, int prompts, const FinishFn& finish) {
        lost_hash = points[7].config_hash;  // "its rank died"
        for (size_t k = 0; k < points.size(); ++k)
            if (k != 7) finish(k, evaluate_point(spec, ev, points[k], prompts, CancelToken()));
    };
    SweepSummary s = run_sweep(spec, ev, *db, CancelToken(), {}, {}, options);
    EXPECT_EQ(s.evaluated, 19u);
    EXPECT_EQ(db->count(), 19u);
    EXPECT_TRUE(db->query({{"config_hash", "=", lost_hash}}).empty());
    SweepSummary again = run_sweep(spec, ev, *db, CancelToken());
    EXPECT_EQ(again.cached, 19u);
    EXPECT_EQ(again.evaluated, 1u);
    EXPECT_EQ(db->count(), 20u);
}

TEST(SweepExecutor, MisuseIsCaught) {
    SweepSpec spec = spec_of(R"({"mode": "grid"})");
    auto ev        = evaluator();
    SweepOptions twice;
    twice.executor = [&](const std::vector<SweepPoint>& points, int prompts, const FinishFn& finish) {
        finish(0, evaluate_point(spec, ev, points[0], prompts, CancelToken()));
        finish(0, evaluate_point(spec, ev, points[0], prompts, CancelToken()));
    };
    auto db = store::ResultStore::open(fresh_db("twice"), store::ResultStore::Mode::read_write);
    EXPECT_THROW(run_sweep(spec, ev, *db, CancelToken(), {}, {}, twice), std::logic_error);
    SweepOptions swapped;
    swapped.executor = [&](const std::vector<SweepPoint>& points, int prompts, const FinishFn& finish) {
        finish(0, evaluate_point(spec, ev, points[1], prompts, CancelToken()));
    };
    auto db2 = store::ResultStore::open(fresh_db("swapped"), store::ResultStore::Mode::read_write);
    EXPECT_THROW(run_sweep(spec, ev, *db2, CancelToken(), {}, {}, swapped), std::logic_error);
    EXPECT_EQ(db2->count(), 0u);
}
