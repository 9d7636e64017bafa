// speculum-cli predict and calibrate: JSON in (file or stdin), JSON out, bundled profiles, --bench, --help
// documents every field, and bad input gives a clear message with exit 1 (bad usage exit 2).
#include "support/run_process.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

using speculum::test::run_cli;

TEST(CliPredict, StdinToJson) {
    auto r = run_cli({"predict", "-"}, R"({"alpha": 0.65, "k": 9, "c": 0.0069})");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_NEAR(j["ewif"].get<double>(), 2.6539, 1e-4);  // CS Drafting Table 1, CNNDM SMALL
    EXPECT_EQ(j["best_k"], 9);
    EXPECT_NE(j["label"].get<std::string>().find("modeled"), std::string::npos);
}

TEST(CliPredict, FileWithProfileAndBench) {
    auto file = speculum::test::tmp_dir() / "predict_in.json";
    std::ofstream(file) << R"({"alpha": [0.9, 0.7], "k": 2, "tree": {"p": [0.6, 0.2]}, "cats": {}})";
    auto r = run_cli({"predict", file.string(), "--profile", "rtx4090", "--bench", "200", "--compact"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_TRUE(j.contains("hardware"));
    EXPECT_GT(j["bench"]["mean_us_per_call"].get<double>(), 0.0);
    EXPECT_EQ(j["bench"]["calls"], 200);
    EXPECT_GT(j["bpt"]["cats"]["bpt_gb"].get<double>(), 0.0);
}

TEST(CliPredict, ListProfilesAndHelp) {
    auto r = run_cli({"predict", "--list-profiles"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const char* id :
         {"rtx4090", "jetson_agx_orin", "jetson_xavier_nx", "a100", "h100", "apple_m3_max", "intel_core_ultra9_285k"})
        EXPECT_NE(r.out.find(id), std::string::npos) << id;
    auto h = run_cli({"predict", "--help"});
    ASSERT_EQ(h.exit_code, 0);
    for (const char* field : {"alpha",      "k_max",       "cascade",       "max_gram",
                              "horizontal", "parents",     "budget",        "max_depth",
                              "mlspecqd",   "l_sv",        "mean_accepted", "kv_p",
                              "exp_bits",   "map_bits",    "root_counted",  "memory_budget_gb",
                              "params_b",   "weight_bits", "kv_dim",        "compute",
                              "kmatrix",    "threshold",   "truncate",      "target_alpha"})
        EXPECT_NE(h.out.find(field), std::string::npos) << field;
}

TEST(CliPredict, KMatrixCascade) {
    // CS Drafting's 3-model ladder (BASE, SMALL, Max-Gram; MMLU k-matrix) in the code's threshold semantics.
    const char* in =
        R"({"kmatrix": {"mode": "threshold", "k": [[0, 5, 14, 10], [0, 0, 1, 10], [0, 0, 0, 10], [0, 0, 0, 0]],
        "alpha": [[0, 0.75, 0.65, 0.3], [0, 0, 0.7, 0.4], [0, 0, 0, 0.35], [0, 0, 0, 0]],
        "levels": [{"c": 0.0195}, {"c": 0.0053}, {"max_gram": true}]}})";
    auto r = run_cli({"predict", "-"}, in);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto k = nlohmann::json::parse(r.out)["kmatrix"];
    EXPECT_GT(k["ewif"].get<double>(), 1.0);
    EXPECT_NEAR(k["ewif"].get<double>(), k["expected_tokens"].get<double>() / k["cost"].get<double>(), 1e-12);
    ASSERT_EQ(k["levels"].size(), 4u);
    EXPECT_EQ(k["levels"][0]["units"], 1.0);
    r = run_cli({"predict", "-"}, R"({"kmatrix": {"k": [[0, 2], [1, 0]], "alpha": [[0, 0.5], [0, 0]],
        "levels": [{}]}})");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("kmatrix.k[1][0]"), std::string::npos) << r.err;
    r = run_cli({"predict", "-"}, R"({"kmatrix": {"k": [[0, 2], [0, 0]], "alpha": [[0, 0.5], [0, 0]],
        "levels": [{"cost": 1}]}})");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("kmatrix.levels[0].cost"), std::string::npos) << r.err;
}

TEST(CliPredict, BadInputIsAClearError) {
    auto r = run_cli({"predict", "-"}, "{ not json");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("not valid JSON"), std::string::npos) << r.err;
    r = run_cli({"predict", "-"}, R"({"alpha": 1.5})");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("alpha"), std::string::npos) << r.err;
    r = run_cli({"predict", "-"}, R"({"tree": {"parents": []}})");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("tree.parents"), std::string::npos) << r.err;
    r = run_cli({"predict", "/nonexistent/in.json"});
    EXPECT_EQ(r.exit_code, 1);
    r = run_cli({"predict", "-", "--profile", "toaster"}, "{}");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("available"), std::string::npos) << r.err;
    r = run_cli({"predict", "--bench", "zero"}, "{}");
    EXPECT_EQ(r.exit_code, 2);
    r = run_cli({"predict", "--frobnicate"});
    EXPECT_EQ(r.exit_code, 2);
}

TEST(CliCalibrate, QuickWritesAValidProfile) {
    auto file = speculum::test::tmp_dir() / "this_machine.json";
    auto r    = run_cli({"calibrate", "--quick", "--threads", "2", "--out", file.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_GT(j["memory_bandwidth_gbps"].get<double>(), 0);
    EXPECT_TRUE(j["measured"].get<bool>());
    // The written profile feeds predict as an inline profile.
    std::ifstream in(file);
    auto prof            = nlohmann::json::parse(in);
    nlohmann::json input = {{"hardware", {{"profile", prof}}}};
    auto p               = run_cli({"predict", "-"}, input.dump());
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_GT(nlohmann::json::parse(p.out)["hardware"]["t_autoregressive_s"].get<double>(), 0);
}

// The MoE term in predict (issue #49): the same active size verifies 7 tokens much dearer as a mixture of experts
// (it reads the union of their experts), so docs/examples/predict_moe.json's chain pays on the dense target and not
// on Qwen3-30B-A3B's shape; a bad expert field is an error naming it.
TEST(CliPredict, MixtureOfExpertsVerificationCostsMore) {
    const auto example = speculum::test::source_dir() / "docs/examples/predict_moe.json";
    auto r             = run_cli({"predict", example.string(), "--compact"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto moe = nlohmann::json::parse(r.out)["hardware"];
    std::ifstream in(example);
    nlohmann::json dense_in = nlohmann::json::parse(in);
    for (const char* k : {"expert_params_b", "n_expert", "n_expert_used"}) dense_in["hardware"]["target"].erase(k);
    r = run_cli({"predict", "-", "--compact"}, dense_in.dump());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto dense = nlohmann::json::parse(r.out)["hardware"];
    EXPECT_DOUBLE_EQ(moe["t_autoregressive_s"].get<double>(), dense["t_autoregressive_s"].get<double>())
        << "one token reads the same active bytes";
    EXPECT_GT(moe["t_verify_s"].get<double>(), 3.0 * dense["t_verify_s"].get<double>());
    EXPECT_LT(moe["speedup"].get<double>(), 1.0);
    EXPECT_GT(dense["speedup"].get<double>(), 1.0);
    nlohmann::json bad                         = nlohmann::json::parse(std::ifstream(example));
    bad["hardware"]["target"]["n_expert_used"] = 200;
    r                                          = run_cli({"predict", "-"}, bad.dump());
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("n_expert_used"), std::string::npos) << r.err;
}
