// `speculum-cli run` against the real binary: a self-draft chain, a cascade and a tree on a synthetic GGUF with a
// summary and a JSON report (lossless on the reference path), and clear errors for bad configs.
#include "core/model/synthetic.h"
#include "kernels/gemv.h"
#include "support/run_process.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

using speculum::test::run_cli;

namespace {

std::string tiny_target() {
    static const std::string path = [] {
        speculum::model::SyntheticSpec s;
        s.n_vocab = 128, s.n_embd = 64, s.n_layer = 3, s.n_head = 4, s.n_head_kv = 2, s.n_ff = 128, s.n_ctx = 256;
        s.type = speculum::kernels::GgmlType::F16, s.seed = 31;
        const std::string p = (speculum::test::tmp_dir() / "cli_run_target.gguf").string();
        speculum::model::write_synthetic_gguf(s, p);
        return p;
    }();
    return path;
}

std::string write_config(const std::string& name, const std::string& text) {
    const std::string p = (speculum::test::tmp_dir() / name).string();
    std::ofstream(p) << text;
    return p;
}

// A Q8_0 target whose matrices are whole q8_0_x8 blocks (repackable), written to tmp_dir()/NAME.
std::string q8_target(const std::string& name, uint64_t seed) {
    speculum::model::SyntheticSpec s;
    s.n_vocab = 300, s.n_embd = 256, s.n_layer = 2, s.n_head = 4, s.n_head_kv = 2, s.n_ff = 512, s.n_ctx = 256;
    s.type = speculum::kernels::GgmlType::Q8_0, s.seed = seed;
    const std::string path = (speculum::test::tmp_dir() / name).string();
    speculum::model::write_synthetic_gguf(s, path);
    return path;
}

nlohmann::json read_json(const std::string& path) {
    std::ifstream in(path);
    return nlohmann::json::parse(in);
}

}  // namespace

TEST(CliRun, ChainSummaryAndReport) {
    const std::string cfg    = write_config("run_chain.json", R"({"levels": [{"kind": "self", "exit_layer": 1}],
        "gamma": [4], "max_new_tokens": 24, "prompt_ids": [5, 17, 3, 42, 17, 3, 42, 8]})");
    const std::string report = (speculum::test::tmp_dir() / "run_chain_report.json").string();
    auto r = run_cli({"run", "--config", cfg, "-m", tiny_target(), "--reference", "--report", report});
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    EXPECT_NE(r.out.find("mean accepted length"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("alpha per position"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("speedup"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("identical to the target's own greedy output"), std::string::npos) << r.out;
    const nlohmann::json j = read_json(report);
    EXPECT_EQ(j.at("total").at("n_generated"), 24);
    EXPECT_EQ(j.at("total").at("lossless_mismatch"), -1);
    EXPECT_EQ(j.at("runs").at(0).at("tokens"), j.at("runs").at(0).at("baseline_tokens"));
    EXPECT_EQ(j.at("config").at("gamma"), nlohmann::json::array({4}));
    // Where the speedup went: printed, and in the report ending at the measured speedup.
    EXPECT_NE(r.out.find("where the speedup went"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("- verification cost"), std::string::npos) << r.out;
    const nlohmann::json& w = j.at("waterfall");
    ASSERT_EQ(w.at("steps").size(), 4u) << w.dump();
    EXPECT_NEAR(w.at("measured").get<double>(), j.at("total").at("speedup").get<double>(), 1e-9);
}

// --profile-out writes the run's acceptance as speculation_profile.json, with the synthetic-replay flags; predict
// --acceptance reads it as alpha per position.
TEST(CliRun, AcceptanceProfileOutAndPredictReadsIt) {
    const std::string cfg     = write_config("run_profile.json", R"({"levels": [{"kind": "self", "exit_layer": 1}],
        "gamma": [3], "max_new_tokens": 16, "prompt_ids": [5, 17, 3, 42, 17, 3, 42, 8]})");
    const std::string profile = (speculum::test::tmp_dir() / "speculation_profile.json").string();
    auto r                    = run_cli({"run", "--config", cfg, "-m", tiny_target(), "--profile-out", profile});
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    EXPECT_NE(r.out.find("--spec-synth-rates "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\"rejection_sample_method\":\"synthetic\""), std::string::npos) << r.out;
    const nlohmann::json p = read_json(profile);
    ASSERT_EQ(p.at("conditional_accept_rates").size(), 3u) << p.dump();
    EXPECT_EQ(p.at("measurement_conditions").at("num_speculative_tokens"), 3);
    EXPECT_EQ(p.at("measurement_conditions").at("osl"), 16);

    const std::string in = write_config("predict_empty.json", "{}");
    r                    = run_cli({"predict", in, "--acceptance", profile, "--compact"});
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    const nlohmann::json out = nlohmann::json::parse(r.out);
    ASSERT_EQ(out.at("position_acceptance").size(), 3u) << r.out;
    EXPECT_NEAR(out.at("position_acceptance").at(2).get<double>(), p.at("marginal_accept_rates").at(2).get<double>(),
                1e-9);
    const std::string broken = write_config("broken_profile.json", R"({"marginal_accept_rates": [0.5, 0.9]})");
    r                        = run_cli({"predict", in, "--acceptance", broken});
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_NE(r.err.find("profile.conditional_accept_rates[1]: must be in [0, 1]"), std::string::npos) << r.err;
}

// --repack: verification on a repacked copy of a Q8_0 target (fast path), drafts and baseline on the file layout;
// where nothing can be repacked (no AVX-512 VNNI, or no Q8_0 matrix) a warning and a plain run.
TEST(CliRun, RepackVerifiesOnARepackedCopy) {
    const std::string target = q8_target("cli_run_q8_target.gguf", 8);
    const std::string cfg    = write_config("run_repack.json", R"({"levels": [{"kind": "maxgram"}], "gamma": [4],
        "max_new_tokens": 24, "prompt_ids": [5, 17, 3, 42, 17, 3, 42, 8]})");
    const std::string report = (speculum::test::tmp_dir() / "run_repack_report.json").string();
    auto r                   = run_cli({"run", "--config", cfg, "-m", target, "--repack", "--report", report});
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    const nlohmann::json j = read_json(report);
    EXPECT_EQ(j.at("total").at("lossless_mismatch"), -1);
    if (speculum::kernels::q8_0_x8_preferred()) {
        // 7 matrices in each of 2 layers and the untied output; token_embd stays Q8_0.
        EXPECT_NE(r.out.find("verifier: a copy of the target in large pages, 15 Q8_0 matrices repacked to q8_0_x8"),
                  std::string::npos)
            << r.out;
        EXPECT_NE(r.out.find("identical to the repacked verifier's own greedy output"), std::string::npos) << r.out;
        EXPECT_NE(r.out.find("repacked verifier vs file layout: "), std::string::npos) << r.out;
        EXPECT_EQ(j.at("verifier_memory"), "large-pages-repacked");
    } else {
        EXPECT_NE(r.err.find("warning: --repack: this CPU has no AVX-512 VNNI kernel"), std::string::npos) << r.err;
        EXPECT_EQ(j.at("verifier_memory"), "mapped");
    }
    auto f16 = run_cli({"run", "--config", cfg, "-m", tiny_target(), "--repack"});
    ASSERT_EQ(f16.exit_code, 0) << f16.err << f16.out;
    EXPECT_NE(f16.err.find("verifying on the target itself"), std::string::npos) << f16.err;
    EXPECT_NE(f16.out.find("identical to the target's own greedy output"), std::string::npos) << f16.out;
}

TEST(CliRun, RepacksTheTargetByDefaultAndNoRepackKeepsTheFileLayout) {
    const std::string target = q8_target("cli_run_q8_default.gguf", 9);
    const std::string cfg    = write_config("run_default_layout.json", R"({"levels": [{"kind": "self",
        "exit_layer": 0}], "gamma": [4], "max_new_tokens": 24, "prompt_ids": [5, 17, 3, 42, 17, 3, 42, 8]})");
    const std::string report = (speculum::test::tmp_dir() / "run_default_layout_report.json").string();
    const bool repacks       = speculum::kernels::q8_0_x8_preferred();
    auto r                   = run_cli({"run", "--config", cfg, "-m", target, "--report", report});
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    nlohmann::json j = read_json(report);
    EXPECT_EQ(j.at("target_memory"), repacks ? "large-pages-repacked" : "mapped");
    EXPECT_EQ(j.at("verifier_memory"), j.at("target_memory"));  // no separate verifier
    EXPECT_NE(r.out.find(repacks ? "weights large-pages-repacked)" : "weights mapped)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("identical to the target's own greedy output"), std::string::npos) << r.out;
    EXPECT_EQ(j.at("total").at("lossless_mismatch"), -1);

    r = run_cli({"run", "--config", cfg, "-m", target, "--no-repack", "--report", report});
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    j = read_json(report);
    EXPECT_EQ(j.at("target_memory"), "mapped");
    EXPECT_EQ(j.at("total").at("lossless_mismatch"), -1);
    EXPECT_EQ(run_cli({"run", "--config", cfg, "-m", target, "--no-repack", "--repack"}).exit_code, 2);
}

TEST(CliRun, CascadeAndTreeAreLossless) {
    const std::string cascade = write_config("run_cascade.json", R"({"levels": [{"kind": "self", "exit_layer": 1},
        {"kind": "maxgram"}], "gamma": [5, 3], "lenience": [1, 2, 1], "max_new_tokens": 24,
        "prompt_ids": [5, 17, 3, 42, 17, 3, 42, 8]})");
    auto r                    = run_cli({"run", "--config", cascade, "-m", tiny_target(), "--reference"});
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    EXPECT_NE(r.out.find("identical to the target's own greedy output"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("  2 draft"), std::string::npos) << r.out;  // the Max-Gram level has its own line

    const std::string tree = write_config("run_tree.json", R"({"levels": [{"kind": "self", "exit_layer": 0}],
        "gamma": [3], "verification": "tree", "tree": {"kind": "sequoia", "node_budget": 8, "max_depth": 4},
        "max_new_tokens": 24, "prompt_ids": [1, 2, 3]})");
    r                      = run_cli({"run", "--config", tree, "-m", tiny_target(), "--reference"});
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    EXPECT_NE(r.out.find("identical to the target's own greedy output"), std::string::npos) << r.out;
}

TEST(CliRun, BadConfigsGetClearErrors) {
    struct Case {
        const char* json;
        const char* expect;
    };
    const Case cases[] = {
        {R"({"levels": [{"kind": "maxgram"}], "gamma": [4], "lenience": [2, 1], "prompt_ids": [1]})", "lenience[0]"},
        {R"({"levels": [{"kind": "maxgram"}], "gamma": [4], "gama": 3})", "spec.gama: is not a known key"},
        {R"({"levels": [{"kind": "self", "exit_layer": 9}], "gamma": [4], "prompt_ids": [1]})", "exit_layer"},
        {R"({"levels": [], "prompt_ids": [1]})", "spec.levels"},
        {R"({"levels": [{"kind": "maxgram"}], "gamma": [0], "prompt_ids": [1]})", "spec.gamma[0]"},
        {R"({"levels": [{"kind": "maxgram"}], "gamma": [4]})", "spec.prompt"},
        {R"({"levels": [{"kind": "maxgram"}], "gamma": "four"})", "spec.gamma"},
        {R"({"levels": [{"kind": "maxgram"}], "gamma": [4], )", "not valid JSON"},
    };
    int i = 0;
    for (const Case& c : cases) {
        const std::string cfg = write_config("run_bad_" + std::to_string(i++) + ".json", c.json);
        auto r                = run_cli({"run", "--config", cfg, "-m", tiny_target()});
        EXPECT_EQ(r.exit_code, 1) << c.json << "\n" << r.err;
        EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.json << "\n" << r.err;
        EXPECT_NE(r.err.find(cfg), std::string::npos) << r.err;  // names the file
    }
    auto r = run_cli({"run", "-m", tiny_target()});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("--config"), std::string::npos) << r.err;
    r = run_cli({"run", "--config", write_config("run_ok.json", R"({"levels": [{"kind": "maxgram"}]})"), "-m",
                 tiny_target(), "--prompt-ids", "1,x"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    r = run_cli({"run", "--help"});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_NE(r.out.find("--report"), std::string::npos);
}

// A mixture-of-experts target from --synthetic: the run prints the experts its verification passes read beside the
// uniform model, says random acceptance means nothing, and stays lossless with an expert-pruned self-draft.
TEST(CliRun, SyntheticMoeReportsItsExperts) {
    const std::string spec = write_config(
        "run_moe_spec.json", R"({"arch":"qwen3moe","n_vocab":128,"n_embd":64,"n_layer":2,"n_head":4,"n_head_kv":2,
        "n_embd_head":16,"n_ff":128,"n_ctx":256,"n_expert":16,"n_expert_used":4,"n_ff_exp":32,"type":"f32"})");
    const std::string cfg = write_config(
        "run_moe.json", R"({"levels":[{"kind":"self","experts_used":2}],"gamma":[3],"prompt_ids":[1,2,3,4,5],
        "max_new_tokens":16})");
    const std::string report = (speculum::test::tmp_dir() / "run_moe_report.json").string();
    auto r = run_cli({"run", "--config", cfg, "--synthetic", spec, "--reference", "--report", report});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const char* s : {"drafter: 2 experts/token", "note: random weights", "experts (4 of 16 per token)",
                          "(modeled uniform)", "lossless check: identical"})
        EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
    std::ifstream in(report);
    const nlohmann::json j = nlohmann::json::parse(in);
    EXPECT_TRUE(j["random_weights"].get<bool>());
    EXPECT_EQ(j["total"]["experts"]["n_expert"], 16) << j["total"].dump().substr(0, 400);
    // Expert-level pruning of a dense target is a clear error.
    const std::string dense = write_config("run_moe_dense.json", R"({"levels":[{"kind":"self","experts_used":2}],
        "gamma":[3],"prompt_ids":[1,2,3],"max_new_tokens":4})");
    r                       = run_cli({"run", "--config", dense, "-m", tiny_target(), "--reference"});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("experts_used"), std::string::npos) << r.err;
}

// A draft whose KV is compressed in the f32 cache reads modeled KV bytes: its level and the BPT line say "modeled"
// (issue #52).
TEST(CliRun, ModeledDraftKvBytesAreLabelled) {
    const std::string cfg = write_config(
        "kv_modeled.json",
        R"({"levels": [{"kind": "self", "exit_layer": 1, "kv_trunc_bits": 4, "kv_from_target": false}], "gamma": [3],
            "max_new_tokens": 8, "prompt_ids": [5, 17, 3, 42]})");
    const auto r = run_cli({"run", "--config", cfg, "-m", tiny_target(), "--reference", "--no-baseline"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("bytes read per generated token (BPT): "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("(modeled: a draft's compressed weights or KV are counted as modeled)"), std::string::npos)
        << r.out;
}
