// `speculum-cli ngram-cache` against the real binary: caches created from two suites merge and report together
// (the multi-file forms its help documents), and unreadable inputs name the file (issue #51, items 1 and 9).
#include "support/fresh_path.h"
#include "support/run_process.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

using speculum::test::run_cli;

namespace {

std::string suite(const char* name) {
    return (speculum::test::source_dir() / "datasets" / name).string();
}

}  // namespace

TEST(CliNgramCache, MergeAndInfoTakeSeveralCaches) {
    const std::string a  = speculum::test::fresh_tmp_path("ngc_a.lcs").string();
    const std::string b  = speculum::test::fresh_tmp_path("ngc_b.lcs").string();
    const std::string ab = speculum::test::fresh_tmp_path("ngc_ab.lcs").string();
    ASSERT_EQ(run_cli({"ngram-cache", "create", "-d", suite("prose_continuation.jsonl"), "-o", a}).exit_code, 0);
    ASSERT_EQ(run_cli({"ngram-cache", "create", "-d", suite("code_completion.jsonl"), "-o", b}).exit_code, 0);
    const auto merged = run_cli({"ngram-cache", "merge", a, b, "-o", ab});
    ASSERT_EQ(merged.exit_code, 0) << merged.err;
    EXPECT_GT(std::filesystem::file_size(ab), std::filesystem::file_size(a));
    EXPECT_GT(std::filesystem::file_size(ab), std::filesystem::file_size(b));
    const auto info = run_cli({"ngram-cache", "info", a, b, ab});
    ASSERT_EQ(info.exit_code, 0) << info.err;
    for (const std::string& f : {a, b, ab}) EXPECT_NE(info.out.find(f + ":"), std::string::npos) << info.out;
}

TEST(CliNgramCache, UnreadableFilesAreNamed) {
    if (!std::filesystem::exists("/proc/self/mem")) GTEST_SKIP() << "no /proc";
    const auto info = run_cli({"ngram-cache", "info", "/proc/self/mem"});
    EXPECT_EQ(info.exit_code, 1);
    EXPECT_NE(info.err.find("/proc/self/mem"), std::string::npos) << info.err;
    EXPECT_EQ(info.err.find("18446744073709551"), std::string::npos) << "a size of -1 read as unsigned: " << info.err;
    const std::string out = speculum::test::fresh_tmp_path("ngc_mem.lcs").string();
    const auto create     = run_cli({"ngram-cache", "create", "-f", "/proc/self/mem", "-o", out});
    EXPECT_EQ(create.exit_code, 1);
    EXPECT_NE(create.err.find("/proc/self/mem"), std::string::npos) << create.err;
    EXPECT_FALSE(std::filesystem::exists(out)) << "nothing written";
}

// Every command's product is what it prints: a write error on standard output fails the command (item 8).
TEST(CliStdout, WriteErrorsOnStandardOutputFail) {
    if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
    const std::string a = speculum::test::fresh_tmp_path("ngc_full.lcs").string();
    ASSERT_EQ(run_cli({"ngram-cache", "create", "-d", suite("prose_continuation.jsonl"), "-o", a}).exit_code, 0);
    for (const std::vector<std::string>& cmd : {std::vector<std::string>{"ngram-cache", "info", a},
                                                {"export", "--format", "vllm"},
                                                {"--version"},
                                                {"predict", "--help"}}) {
        std::vector<std::string> argv = {"/bin/sh", "-c", "exec \"$0\" \"$@\" > /dev/full",
                                         speculum::test::cli_path().string()};
        argv.insert(argv.end(), cmd.begin(), cmd.end());
        const auto r = speculum::test::run_process(argv);
        EXPECT_EQ(r.exit_code, 1) << cmd[0] << " " << (cmd.size() > 1 ? cmd[1] : "") << ": " << r.err;
        EXPECT_NE(r.err.find("standard output"), std::string::npos) << r.err;
    }
}
