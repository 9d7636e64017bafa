// predict(): one call evaluates every model consistently with the individual functions; the input JSON
// round-trips; invalid input names the field.
#include "core/analytic/checks.h"
#include "core/analytic/predict.h"

#include "support/test_paths.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace speculum::analytic;
using nlohmann::json;

namespace {
auto resolver() {
    return [](const std::string& id) {
        return speculum::hw::find_profile(speculum::hw::hardware_dir(speculum::test::source_dir() / "resources"), id);
    };
}
json full_input() {
    return json::parse(R"({
        "alpha": [0.9, 0.8, 0.6], "k": 3, "c": 0.02,
        "cascade": [{"alpha": 0.8, "c": 0.05, "steps": 2}, {"alpha": 0.5, "max_gram": true}],
        "horizontal": [{"alpha": 0.73, "c": 0.022, "count": 5}, {"alpha": 0.65, "c": 0.0069, "count": 3}],
        "kmatrix": {"mode": "threshold", "k": [[0, 1, 0], [0, 0, 10], [0, 0, 0]], "alpha": [[0, 0.8, 0], [0, 0, 0.5],
                    [0, 0, 0]], "levels": [{"c": 0.05}, {"max_gram": true}]},
        "tree": {"p": [0.6, 0.2, 0.1], "budget": 16, "parents": [-1, 0, 0, 1]},
        "mlspecqd": [{"alpha": 0.8, "n": 4, "s": 4}, {"alpha": 0.4, "n": 4, "s": 100}],
        "cats": {"gamma": 5, "mean_accepted": 3.052}, "cassandra": {"alpha": 0.78},
        "ghidorah": {"dataset": "MBPP"},
        "hardware": {"profile": "jetson_agx_orin", "context": 256}
    })");
}
}  // namespace

TEST(Predict, GhidorahOnTheHeteroCoreModel) {
    // The paper's device under assumption (a) of Ghidorah.HeteroModelOnThePapersDevice, given as JSON.
    const json j          = json::parse(R"({"ghidorah": {"dataset": "MBPP", "soc": {
        "gpu": {"tflops": 0.6267, "bw_gbps": 59.7}, "cpu": {"tflops": 0.1824, "bw_gbps": 59.7},
        "dram_bw_gbps": 59.7, "sync_ms": 0.1, "syncs_per_pass": 224}}})");
    const PredictInput in = predict_input_from_json(j, resolver());
    const PredictOutput o = predict(in);
    EXPECT_EQ(o.ghidorah->best_width, 8);
    EXPECT_NEAR(o.ghidorah->best_speedup, 2.89, 0.01);
    const json out = o;
    EXPECT_NE(out["ghidorah"]["step_model"].get<std::string>().find("hetero-core"), std::string::npos);
    EXPECT_EQ(predict_input_from_json(json(in), resolver()), in);  // round trip
    json bad                                 = j;
    bad["ghidorah"]["soc"]["gpu"]["bw_gbps"] = 0;
    EXPECT_THROW(predict(predict_input_from_json(bad, resolver())), InvalidInput);
    bad = j;
    bad["ghidorah"]["soc"].erase("cpu");
    EXPECT_THROW(predict_input_from_json(bad, resolver()), InvalidInput);
}

TEST(Predict, DefaultsEvaluate) {
    auto out = predict(PredictInput{});
    EXPECT_NEAR(out.ewif, ewif_sd(0.8, 0.05, 4), 1e-12);
    EXPECT_NEAR(out.predicted_speedup, out.ewif, 1e-12);
    EXPECT_FALSE(out.timing.has_value());
    ASSERT_TRUE(out.mlspecqd.has_value());  // one level derived from the chain
}

TEST(Predict, AgreesWithIndividualModels) {
    auto in  = predict_input_from_json(full_input(), resolver());
    auto out = predict(in);
    EXPECT_NEAR(out.expected_tokens, expected_tokens_chain({0.9, 0.8, 0.6}), 1e-12);
    EXPECT_NEAR(out.cascade->ewif, vertical_cascade({{{0.8}, 0.05, 2}, max_gram_level(0.5)}).ewif, 1e-12);
    EXPECT_NEAR(*out.horizontal_ewif, 3.0269, 1e-4);  // Table 1 CNNDM BASE(5)+SMALL(3)
    // Threshold 1 over a 10-token Max-Gram block: one SD step of level 1, the vertical cascade with n = 1.
    EXPECT_NEAR(out.kmatrix->ewif, vertical_cascade({{{0.8}, 0.05, 1}, max_gram_level(0.5)}).ewif, 1e-12);
    EXPECT_NEAR(*out.tree_expected_length, 1 + 0.6 + 0.2 + 0.36, 1e-12);
    EXPECT_NEAR(out.mlspecqd->speedup, 2.90, 5e-3);
    EXPECT_NEAR(out.cats_bpt->bpt, 5.8354, 1e-4);
    EXPECT_NEAR(*out.cassandra_j, 0.78 / (8.03e9 * 7.2), 1e-25);
    EXPECT_EQ(out.ghidorah->widths.size(), 7u);
    // Without an explicit B, J uses the hardware target's stored bits: a Q8_0 target (8.5 bits), pruning only.
    json q8                                 = full_input();
    q8["hardware"]["target"]["weight_bits"] = 8.5;
    q8["cassandra"]["w_t"]                  = 0;
    q8["cassandra"]["kv_t"]                 = 0;
    EXPECT_NEAR(*predict(predict_input_from_json(q8, resolver())).cassandra_j, 0.78 / (8.03e9 * 0.6 * 8.5), 1e-25);
    q8["cassandra"]["bits"] = 16;  // given explicitly, it wins
    EXPECT_NEAR(*predict(predict_input_from_json(q8, resolver())).cassandra_j, 0.78 / (8.03e9 * 0.6 * 16), 1e-25);
    ASSERT_TRUE(out.timing.has_value());
    EXPECT_GT(out.timing->speedup, 1.0);
    EXPECT_EQ(out.predicted_speedup, out.timing->speedup);
    EXPECT_TRUE(out.memory->fits);
    json o;
    to_json(o, out);
    for (const char* key : {"ewif", "expected_tokens", "bpt", "cassandra", "tree", "hardware", "memory", "label"})
        EXPECT_TRUE(o.contains(key)) << key;
    // Every cascade model says which draft-length process it assumes, so a comparison pairs like with like.
    EXPECT_NE(o["cascade"]["length_semantics"].get<std::string>().find("fixed steps"), std::string::npos);
    EXPECT_NE(o["horizontal"]["length_semantics"].get<std::string>().find("truncate"), std::string::npos);
    EXPECT_EQ(o["kmatrix"]["length_semantics"], "threshold");  // full_input's k-matrix runs in threshold mode
    EXPECT_NE(o["mlspecqd"]["length_semantics"].get<std::string>().find("fixed per level"), std::string::npos);
}

TEST(Predict, JsonRoundTrip) {
    auto in = predict_input_from_json(full_input(), resolver());
    json j;
    to_json(j, in);
    EXPECT_EQ(predict_input_from_json(j, nullptr), in);  // inline profile needs no resolver
    PredictInput d;
    to_json(j, d);
    EXPECT_EQ(predict_input_from_json(j, nullptr), d);
}

TEST(Predict, GhidorahFromTreeAndStreaming) {
    auto j   = json::parse(R"({"tree": {"p": [0.5, 0.2, 0.1]}, "ghidorah": {"dataset": "tree"}})");
    auto out = predict(predict_input_from_json(j, nullptr));
    EXPECT_EQ(out.ghidorah->best_width, 64);  // flat step time without hardware
    EXPECT_NEAR(out.ghidorah->tau[0], 1.0, 1e-12);
    // A budget below the model streams weights from flash (CATS-style) and slows every target forward.
    auto s  = json::parse(R"({"hardware": {"profile": "jetson_agx_orin", "memory_budget_gb": 8}})");
    auto f  = json::parse(R"({"hardware": {"profile": "jetson_agx_orin"}})");
    auto os = predict(predict_input_from_json(s, resolver()));
    auto of = predict(predict_input_from_json(f, resolver()));
    EXPECT_FALSE(os.memory->fits);
    EXPECT_GT(os.timing->t_autoregressive, 10 * of.timing->t_autoregressive);
    EXPECT_GT(os.timing->speedup, of.timing->speedup);  // streaming makes drafting relatively cheaper
}

TEST(Predict, InvalidInputNamesTheField) {
    auto expect_error = [](const std::string& text, const std::string& field) {
        try {
            predict(predict_input_from_json(json::parse(text), resolver()));
            ADD_FAILURE() << "accepted " << text;
        } catch (const std::exception& e) {
            EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
        }
    };
    expect_error(R"({"alpha": 1.5})", "alpha");
    expect_error(R"({"alpha": [0.5, -0.1]})", "alpha[1]");
    expect_error(R"({"c": -1})", "c must be");
    expect_error(R"({"k": "four"})", "k: must be an integer");
    expect_error(R"({"colour": 1})", "colour: is not a known key");
    expect_error(R"({"cascade": [{"alpha": 0.5}, {"alpha": 2}]})", "cascade.levels[1].alpha[0]");
    expect_error(R"({"cascade": [{"alphas": 0.5}]})", "cascade[0].alphas");
    expect_error(R"({"tree": {"parents": []}})", "tree.parents");
    expect_error(R"({"tree": {"p": [0.7, 0.6]}})", "tree.p[0]");
    expect_error(R"({"tree": {"p": []}})", "tree.p");
    expect_error(R"({"hardware": {"profile": "toaster"}})", "toaster");
    expect_error(R"({"hardware": {"profile": "a100", "target": {"params_b": -7}}})", "hardware.target.params_b");
    expect_error(R"({"ghidorah": {"dataset": "tree"}})", "ghidorah.dataset");
    expect_error(R"([1, 2])", "must be a JSON object");
}
