// `speculum-cli bench` on a tiny synthetic model and on a GGUF file: every figure is printed, JSON parses, and bad
// arguments are usage errors. (Timings here only prove the command runs; figures come from docs/performance.md.)
#include "core/model/synthetic.h"
#include "kernels/gemv.h"
#include "support/run_process.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>

using speculum::test::run_cli;

namespace {
const std::vector<std::string> kTiny = {"--layers",  "2",    "--embd",          "128", "--vocab",   "300",
                                        "--tokens",  "4",    "--prompt-tokens", "4",   "--repeats", "1",
                                        "--batches", "1,2,4"};
}

TEST(CliBench, SyntheticPrintsEveryFigure) {
    std::vector<std::string> a = {"bench", "--synthetic", "q8_0", "--membw-mb", "8"};
    a.insert(a.end(), kTiny.begin(), kTiny.end());
    auto r = run_cli(a);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // By default Q8_0 matrices are repacked where the CPU has the kernel (the n_ff = 512 rows are whole blocks).
    const char* memory = speculum::kernels::q8_0_x8_preferred() ? "weight memory:    large-pages-repacked"
                                                                : "weight memory:    in-memory";
    for (const char* s : {"kernels:", memory, "prompt:", "decode:", "bytes per token:", "effective:",
                          "memory bandwidth:", "ratio:", "n =    4"})
        EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
    a.push_back("--no-repack");
    r = run_cli(a);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("weight memory:    in-memory"), std::string::npos) << r.out;
}

TEST(CliBench, ThreadCpuClockWithOneThread) {
    std::vector<std::string> a = {"bench", "--synthetic", "f16", "--membw-mb", "4", "--threads", "1", "--cpu-time"};
    a.insert(a.end(), kTiny.begin(), kTiny.end());
    auto r = run_cli(a);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("timed on the thread CPU clock"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("1 thread(s)"), std::string::npos) << r.out;
}

TEST(CliBench, IsaCapIsReported) {
    std::vector<std::string> a = {"bench", "--synthetic", "q8_0", "--membw-mb", "0", "--isa", "scalar", "--json"};
    a.insert(a.end(), kTiny.begin(), kTiny.end());
    auto r = run_cli(a);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["kernels"], "scalar");
    EXPECT_EQ(run_cli({"bench", "--synthetic", "f16", "--isa", "sse9"}).exit_code, 2);
}

TEST(CliBench, JsonOnAFile) {
    speculum::model::SyntheticSpec s;
    s.n_vocab = 300, s.n_embd = 64, s.n_layer = 2, s.n_ff = 128, s.type = speculum::kernels::GgmlType::F16;
    const std::string path = (speculum::test::tmp_dir() / "cli_bench_tiny.gguf").string();
    speculum::model::write_synthetic_gguf(s, path);
    std::vector<std::string> a = {"bench", "-m", path, "--membw-mb", "0", "--json"};
    a.insert(a.end(), kTiny.begin() + 6, kTiny.end());
    auto r = run_cli(a);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_GT(j["decode_tokens_per_s"].get<double>(), 0.0);
    EXPECT_GT(j["weight_bytes_per_token"].get<double>(), 0.0);
    ASSERT_EQ(j["batches"].size(), 3u);
    EXPECT_DOUBLE_EQ(j["batches"][0]["vs_single"].get<double>(), 1.0);
    EXPECT_EQ(j["weight_memory"], "mapped");

    a.push_back("--large-pages");
    r = run_cli(a);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["weight_memory"], "large-pages");
}

TEST(CliBench, RepackOnAQ8_0File) {
    speculum::model::SyntheticSpec s;
    s.n_vocab = 300, s.n_embd = 256, s.n_layer = 1, s.n_head = 4, s.n_head_kv = 4, s.n_ff = 512;
    s.type                 = speculum::kernels::GgmlType::Q8_0;
    const std::string path = (speculum::test::tmp_dir() / "cli_bench_repack.gguf").string();
    speculum::model::write_synthetic_gguf(s, path);
    std::vector<std::string> a = {"bench", "-m", path, "--membw-mb", "0", "--json", "--repack"};
    a.insert(a.end(), kTiny.begin() + 6, kTiny.end());
    auto r = run_cli(a);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    // Repacking needs the AVX-512 VNNI kernel; elsewhere --repack is a plain large-page copy.
    EXPECT_EQ(j["weight_memory"], speculum::kernels::q8_0_x8_preferred() ? "large-pages-repacked" : "large-pages");
    EXPECT_GT(j["decode_tokens_per_s"].get<double>(), 0.0);
    EXPECT_EQ(j["batches"].size(), 3u);

    // The default repacks too where it can, and copies nothing where it cannot; --no-repack keeps the mapping.
    a.erase(std::find(a.begin(), a.end(), "--repack"));
    r = run_cli(a);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["weight_memory"],
              speculum::kernels::q8_0_x8_preferred() ? "large-pages-repacked" : "mapped");
    a.push_back("--no-repack");
    r = run_cli(a);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["weight_memory"], "mapped");
}

TEST(CliBench, UsageErrors) {
    EXPECT_EQ(run_cli({"bench", "-m", "x.gguf", "--synthetic", "f16"}).exit_code, 2);  // one source only
    EXPECT_EQ(run_cli({"bench", "--synthetic", "q5_k"}).exit_code, 2);
    EXPECT_EQ(run_cli({"bench", "--synthetic", "f16", "--embd", "96", "--heads", "5"}).exit_code, 2);  // 5 heads in 96
    EXPECT_EQ(run_cli({"bench", "--synthetic", "q8_0", "--embd", "100"}).exit_code, 2);  // not a block multiple
    EXPECT_EQ(run_cli({"bench", "--synthetic", "f16", "--batches", "1,0"}).exit_code, 2);
    EXPECT_EQ(run_cli({"bench", "--bogus"}).exit_code, 2);
    EXPECT_EQ(run_cli({"bench", "--synthetic", "f16", "--cpu-time"}).exit_code, 2);  // needs --threads 1
    EXPECT_EQ(run_cli({"bench", "--synthetic", "f16", "--no-repack", "--repack"}).exit_code, 2);
    EXPECT_EQ(run_cli({"bench", "--synthetic", "f16", "--no-repack", "--large-pages"}).exit_code, 2);
}

// A synthetic mixture of experts: each batched pass says how many experts it read against the uniform model, and the
// expert options need --arch qwen3moe.
TEST(CliBench, SyntheticMoeReportsExpertsPerPass) {
    std::vector<std::string> a = {"bench",  "--synthetic", "q8_0",      "--membw-mb", "0",
                                  "--arch", "qwen3moe",    "--experts", "16",         "--experts-used",
                                  "4",      "--ff-exp",    "64"};
    a.insert(a.end(), kTiny.begin(), kTiny.end());
    auto r = run_cli(a);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const char* s : {"synthetic qwen3moe", "experts/layer   4.0 (uniform model   4.0)", "weights read   1.00x",
                          "resident memory:"})
        EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
    EXPECT_EQ(run_cli({"bench", "--synthetic", "q8_0", "--experts", "8"}).exit_code, 2) << "needs --arch qwen3moe";
}
