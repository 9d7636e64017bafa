// Hostile and loose command lines, second pass (issue #51), against the real binary: `ngram-cache` caches created
// from two suites merge and report together (the multi-file forms its help documents), unreadable inputs name the
// file, a write error on standard output fails the command, and loose values are refused before any work.
#include "support/fresh_path.h"
#include "support/run_process.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
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

// Late or loose validation (issue #51, item 10): hex numbers, an option nothing uses, an id refused only after the
// measurement. Each is refused at once (exit 2) and names the option.
TEST(CliValidation, LooseValuesAreRefusedBeforeAnyWork) {
    auto r = run_cli({"run", "--min-time", "0x10", "--max-new", "4"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("--min-time"), std::string::npos) << r.err;
    r = run_cli({"run", "--max-time", "inf", "--max-new", "4"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    const std::string spec = speculum::test::fresh_tmp_path("exit_spec.json").string();
    {
        std::FILE* f = std::fopen(spec.c_str(), "w");
        ASSERT_NE(f, nullptr);
        std::fputs("{\"kind\":\"self\",\"exit_layer\":2}", f);
        std::fclose(f);
    }
    r = run_cli({"draft", "--spec", spec, "--calibration-ids", "999999"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("--calibration-ids"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("target:"), std::string::npos) << "refused before loading the target";
    r = run_cli({"calibrate", "--id", ""});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("--id"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("calibrating:"), std::string::npos) << "refused before measuring";
}

// `--repeats N --max-time S` (issue #51, item 6): the budget stops the passes before N (it used to run all N).
TEST(CliValidation, MaxTimeStopsAFixedNumberOfRepeats) {
    const std::string cfg = speculum::test::fresh_tmp_path("max_time_cfg.json").string();
    std::ofstream(cfg) << R"({"levels": [{"kind": "self", "exit_layer": 2}], "gamma": [3]})";
    const auto r =
        run_cli({"run", "--config", cfg, "-p", "The old house", "-n", "8", "--repeats", "1000", "--max-time", "1"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("stopped: time budget (1 s) spent"), std::string::npos) << r.out;
}

namespace {

// A small tmpfs of its own (root only: mount), unmounted on destruction.
struct SmallFs {
    std::filesystem::path dir;
    bool mounted = false;
    explicit SmallFs(const std::string& name, const char* size) {
        dir = speculum::test::tmp_dir() / (name + "_" + std::to_string(::getpid()));
        std::filesystem::create_directories(dir);
        if (::geteuid() != 0) return;
        mounted = speculum::test::run_process(
                      {"/bin/mount", "-t", "tmpfs", "-o", std::string("size=") + size, "tmpfs", dir.string()})
                      .exit_code == 0;
    }
    bool remount_read_only() const {
        return speculum::test::run_process({"/bin/mount", "-o", "remount,ro", dir.string()}).exit_code == 0;
    }
    ~SmallFs() {
        if (mounted) speculum::test::run_process({"/bin/umount", dir.string()});
    }
};

std::string sweep_spec() {
    return (speculum::test::source_dir() / "docs/examples/sweep_predict.json").string();
}

}  // namespace

// Result stores on a full disk and on a read-only file system (issue #51, item 11): a store that cannot be made
// leaves no empty file; on a read-only file system a sweep whose every cell is cached runs on a WAL store and on a
// rollback-journal one alike.
TEST(CliStores, FullAndReadOnlyFileSystems) {
    {
        SmallFs full("store_full", "64k");
        if (!full.mounted) GTEST_SKIP() << "a small tmpfs needs root (mount)";
        {
            std::ofstream filler(full.dir / "filler", std::ios::binary);
            const std::string block(4096, 'x');
            for (int i = 0; i < 100 && filler.write(block.data(), std::streamsize(block.size())); ++i) filler.flush();
        }
        const auto db = full.dir / "results.sqlite";
        const auto r  = run_cli({"sweep", sweep_spec(), "--db", db.string()});
        EXPECT_EQ(r.exit_code, 1) << r.err;
        EXPECT_FALSE(std::filesystem::exists(db)) << "no empty store is left";
    }
    SmallFs ro("store_ro", "8m");
    ASSERT_TRUE(ro.mounted);
    const auto wal = ro.dir / "wal.sqlite", journal = ro.dir / "journal.sqlite";
    for (const auto& db : {wal, journal}) ASSERT_EQ(run_cli({"sweep", sweep_spec(), "--db", db.string()}).exit_code, 0);
    {  // the second store back to a rollback journal, as a store written by another SQLite client may be
        sqlite3* h = nullptr;
        ASSERT_EQ(sqlite3_open(journal.c_str(), &h), SQLITE_OK);
        ASSERT_EQ(sqlite3_exec(h, "PRAGMA journal_mode=DELETE;", nullptr, nullptr, nullptr), SQLITE_OK);
        sqlite3_close(h);
    }
    ASSERT_TRUE(ro.remount_read_only());
    for (const auto& db : {wal, journal}) {
        const auto r = run_cli({"sweep", sweep_spec(), "--db", db.string()});
        EXPECT_EQ(r.exit_code, 0) << db << ": " << r.err;
        EXPECT_NE(r.out.find("288 cached"), std::string::npos) << db << ": " << r.out;
    }
}
