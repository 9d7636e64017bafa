// EngineEvaluator: a sweep over real speculative runs on a tiny synthetic target — measured metrics are stored,
// greedy runs agree with the target (quality 1), the prompt count is part of the key, re-runs are cache hits.
#include "core/store/result_store.h"
#include "core/sweep/engine_evaluator.h"
#include "core/sweep/sweep_runner.h"

#include "support/test_paths.h"

#include <gtest/gtest.h>

using namespace speculum;
using namespace speculum::sweep;
using nlohmann::json;

namespace {
json engine_spec() {
    return json::parse(R"({
      "name": "engine-tiny", "evaluator": "engine",
      "target": {"synthetic": {"n_vocab": 96, "n_embd": 64, "n_layer": 4, "n_head": 4, "n_head_kv": 2,
                               "n_ff": 128, "n_ctx": 256, "type": "f32", "seed": 21}},
      "base": {"levels": [{"kind": "self", "exit_layer": 1}], "gamma": [2], "sampling": {"temperature": 0.0},
               "max_new_tokens": 12, "prompt_ids": [1, 2, 3, 4], "baseline": true},
      "axes": [{"name": "gamma", "path": "/gamma/0", "values": [1, 3]},
               {"name": "exit", "path": "/levels/0/exit_layer", "values": [0, 2]}],
      "objective": {"metric": "speedup"}
    })");
}
}  // namespace

TEST(SweepEngine, MeasuredRowsAreStoredAndCached) {
    SweepSpec spec = sweep_spec_from_json(engine_spec());
    auto path      = test::tmp_dir() / "sweep_engine.sqlite";
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path.string() + suffix);
    auto store = store::ResultStore::open(path, store::ResultStore::Mode::read_write);
    EngineEvaluator ev(spec.target);
    SweepSummary s = run_sweep(spec, ev, *store, CancelToken());
    EXPECT_EQ(s.evaluated, 4u);
    EXPECT_EQ(s.failed, 0u);
    for (const auto& row : store->query()) {
        EXPECT_EQ(row.status, "done") << row.message;
        EXPECT_GT(row.metrics.at("speedup"), 0.0);
        EXPECT_GE(row.metrics.at("accepted_length"), 1.0);
        EXPECT_LE(row.metrics.at("accepted_length"), 1.0 + row.config["gamma"][0].get<double>());
        EXPECT_DOUBLE_EQ(row.metrics.at("quality"), 1.0);  // greedy speculative decoding is lossless
        EXPECT_GT(row.metrics.at("draft_bytes"), 0.0);
        EXPECT_EQ(row.stats["n_generated"], 12);
        // Cassandra's J from the measured acceptance: accepted / drafted over the f32 target's bits (B = 32).
        const double drafted = row.stats["n_drafted"].get<double>(), accepted = row.stats["n_accepted"].get<double>();
        ASSERT_TRUE(row.metrics.count("j")) << "a self-draft run must report J";
        EXPECT_EQ(row.metrics.at("j") > 0.0, accepted > 0);
        EXPECT_LE(row.metrics.at("j"), (accepted / drafted) / (64.0 * 64 * 32));  // below α / (one matrix's bits)
    }
    SweepSummary again = run_sweep(spec, ev, *store, CancelToken());
    EXPECT_EQ(again.cached, 4u);
    EXPECT_EQ(again.evaluated, 0u);
    // A different target is a different key: nothing is reused.
    json other                           = engine_spec();
    other["target"]["synthetic"]["seed"] = 22;
    SweepSpec spec2                      = sweep_spec_from_json(other);
    EngineEvaluator ev2(spec2.target);
    EXPECT_NE(ev2.model_hash(), ev.model_hash());
    EXPECT_NE(ev.dataset_hash(spec.base, 1), ev.dataset_hash(spec.base, 2));
}

TEST(SweepEngine, InvalidConfigurationNamesTheField) {
    json j                 = engine_spec();
    j["axes"][1]["values"] = json::array({0, 9});  // the target has 4 layers
    SweepSpec spec         = sweep_spec_from_json(j);
    EngineEvaluator ev(spec.target);
    auto path = test::tmp_dir() / "sweep_engine_bad.sqlite";
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path.string() + suffix);
    auto store = store::ResultStore::open(path, store::ResultStore::Mode::read_write);
    try {
        run_sweep(spec, ev, *store, CancelToken());
        ADD_FAILURE() << "accepted exit_layer 9";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("exit"), std::string::npos) << e.what();
    }
    EXPECT_EQ(store->count(), 0u);
}
