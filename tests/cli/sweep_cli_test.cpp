// `speculum-cli sweep` as a real child process: killed with SIGKILL mid-sweep and resumed, the final result set
// equals an uninterrupted run; re-runs are cache hits; Ctrl-C cancels cleanly; malformed specs and databases get
// clear errors and the database file is left untouched.
#include "core/store/result_store.h"

#include "support/fresh_path.h"
#include "support/run_process.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

using speculum::store::ResultStore;
using speculum::test::run_cli;
namespace fs = std::filesystem;

extern char** environ;

namespace {

constexpr int kGridSize = 40;

fs::path tmp(const std::string& name) {
    return speculum::test::fresh_tmp_path("sweepcli_" + name);
}

fs::path write_spec(const std::string& name, const std::string& text) {
    fs::path p = tmp(name);
    std::ofstream(p) << text;
    return p;
}

// 5 k values x 4 alphas x 2 tasks = 40 configurations.
const char* kSpec = R"({
  "name": "cli-grid",
  "base": {"alpha": 0.8, "k": 4, "c": 0.05, "hardware": {"profile": "rtx4090"}},
  "axes": [{"name": "k", "path": "/k", "range": {"from": 1, "to": 5, "step": 1}},
           {"name": "alpha", "path": "/alpha", "values": [0.6, 0.7, 0.8, 0.9]},
           {"name": "task", "path": "/task", "values": ["chat", "code"]}],
  "objective": {"metric": "predicted_speedup"}
})";

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// Starts speculum-cli with output discarded; returns the pid.
pid_t spawn_cli(const std::vector<std::string>& args) {
    std::vector<std::string> argv_s = {speculum::test::cli_path().string()};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& s : argv_s) argv.push_back(s.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid = -1;
    int rc    = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    return rc == 0 ? pid : -1;
}

// Rows in the store, read by a second connection while the child writes (0 until the schema exists).
size_t stored_rows(const fs::path& db) {
    try {
        return ResultStore::open(db, ResultStore::Mode::read_only)->count();
    } catch (const speculum::store::StoreError&) {
        return 0;
    }
}

bool wait_for_rows(const fs::path& db, size_t n, pid_t pid) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
        if (stored_rows(db) >= n) return true;
        int status = 0;
        if (waitpid(pid, &status, WNOHANG) == pid) return false;  // exited early
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
}

// Compares what matters: same keys, configurations, metrics, predictions and objective.
void expect_same_results(const fs::path& a, const fs::path& b) {
    auto ra = ResultStore::open(a, ResultStore::Mode::read_only)->query();
    auto rb = ResultStore::open(b, ResultStore::Mode::read_only)->query();
    ASSERT_EQ(ra.size(), rb.size());
    auto by_key = [](auto& v) {
        std::sort(v.begin(), v.end(),
                  [](const auto& x, const auto& y) { return x.key.config_hash < y.key.config_hash; });
    };
    by_key(ra);
    by_key(rb);
    for (size_t i = 0; i < ra.size(); ++i) {
        EXPECT_EQ(ra[i].key, rb[i].key);
        EXPECT_EQ(ra[i].config, rb[i].config);
        EXPECT_EQ(ra[i].metrics, rb[i].metrics);
        EXPECT_EQ(ra[i].predictions, rb[i].predictions);
        EXPECT_EQ(ra[i].objective, rb[i].objective);
        EXPECT_EQ(ra[i].task, rb[i].task);
        EXPECT_EQ(ra[i].status, "done");
    }
}

}  // namespace

TEST(SweepCli, KilledMidSweepResumesToTheSameResultSet) {
    fs::path spec   = write_spec("kill.json", kSpec);
    fs::path killed = tmp("killed.sqlite");
    fs::path clean  = tmp("clean.sqlite");
    // ~25 ms per configuration on one job: about 1 s in all, so the kill lands mid-sweep.
    pid_t pid = spawn_cli({"sweep", spec.string(), "--db", killed.string(), "--jobs", "1", "--slow-ms", "25"});
    ASSERT_GT(pid, 0);
    bool progressed = wait_for_rows(killed, 8, pid);
    kill(pid, SIGKILL);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(progressed) << "the child did not store 8 rows";
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the child finished before the kill";
    size_t after_kill = stored_rows(killed);
    std::printf("rows stored when killed: %zu of %d\n", after_kill, kGridSize);
    EXPECT_GE(after_kill, 8u);
    EXPECT_LT(after_kill, static_cast<size_t>(kGridSize));

    auto resumed = run_cli({"sweep", spec.string(), "--db", killed.string()});
    ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
    EXPECT_NE(resumed.out.find(std::to_string(kGridSize - after_kill) + " evaluated, " + std::to_string(after_kill) +
                               " cached"),
              std::string::npos)
        << resumed.out;

    auto uninterrupted = run_cli({"sweep", spec.string(), "--db", clean.string()});
    ASSERT_EQ(uninterrupted.exit_code, 0) << uninterrupted.err;
    expect_same_results(killed, clean);

    auto again = run_cli({"sweep", spec.string(), "--db", clean.string()});  // everything is a cache hit
    ASSERT_EQ(again.exit_code, 0) << again.err;
    EXPECT_NE(again.out.find("0 evaluated, 40 cached"), std::string::npos) << again.out;
    EXPECT_NE(again.out.find("(cached)"), std::string::npos);  // plain lines when stdout is not a terminal
    EXPECT_EQ(again.out.find('\r'), std::string::npos);        // no progress bar in a pipe
}

// Issue #27, item 8: SIGKILL at random moments, from the first milliseconds (the store and its schema being made)
// to the middle of writing rows, several times over one store; each resume goes on from what is stored, and the
// end result equals an uninterrupted run: nothing lost, nothing twice, every row whole.
TEST(SweepCli, KilledAtRandomMomentsResumesToTheSameResultSet) {
    fs::path spec   = write_spec("randkill.json", kSpec);
    fs::path killed = tmp("randkill.sqlite"), clean = tmp("randkill_clean.sqlite");
    std::mt19937 rng(27);
    size_t last = 0;
    int kills   = 0;
    for (int round = 0; round < 6; ++round) {
        pid_t pid = spawn_cli({"sweep", spec.string(), "--db", killed.string(), "--jobs", "1", "--slow-ms", "30"});
        ASSERT_GT(pid, 0);
        std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 100)(rng)));
        kill(pid, SIGKILL);
        int status = 0;
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        kills += WIFSIGNALED(status);
        const size_t now = stored_rows(killed);
        EXPECT_GE(now, last) << "round " << round << ": stored rows never disappear";
        last = now;
    }
    std::printf("%d kills; rows stored before the final resume: %zu of %d\n", kills, last, kGridSize);
    EXPECT_GE(kills, 3) << "most runs must have been killed, not finished";
    auto resumed = run_cli({"sweep", spec.string(), "--db", killed.string()});
    ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
    EXPECT_NE(resumed.out.find(std::to_string(kGridSize - last) + " evaluated, " + std::to_string(last) + " cached"),
              std::string::npos)
        << resumed.out;
    ASSERT_EQ(run_cli({"sweep", spec.string(), "--db", clean.string()}).exit_code, 0);
    EXPECT_EQ(stored_rows(killed), size_t(kGridSize));
    expect_same_results(killed, clean);
}

TEST(SweepCli, InterruptCancelsAndKeepsFinishedRows) {
    fs::path spec = write_spec("int.json", kSpec);
    fs::path db   = tmp("int.sqlite");
    pid_t pid     = spawn_cli({"sweep", spec.string(), "--db", db.string(), "--jobs", "1", "--slow-ms", "25"});
    ASSERT_GT(pid, 0);
    ASSERT_TRUE(wait_for_rows(db, 3, pid));
    auto t0 = std::chrono::steady_clock::now();
    kill(pid, SIGINT);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("SIGINT to exit: %.1f ms\n", ms);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 130);
    size_t rows = stored_rows(db);
    EXPECT_GE(rows, 3u);
    EXPECT_LT(rows, static_cast<size_t>(kGridSize));
}

TEST(SweepCli, MalformedSpecsGetClearErrors) {
    fs::path db   = tmp("bad_spec.sqlite");
    auto bad_json = run_cli({"sweep", write_spec("bad1.json", "{\"axes\": [").string(), "--db", db.string()});
    EXPECT_EQ(bad_json.exit_code, 1);
    EXPECT_NE(bad_json.err.find("bad1.json: not valid JSON"), std::string::npos) << bad_json.err;
    auto bad_field = run_cli({"sweep", write_spec("bad2.json", R"({"axes": [{"path": "k", "values": [1]}]})").string(),
                              "--db", db.string()});
    EXPECT_EQ(bad_field.exit_code, 1);
    EXPECT_NE(bad_field.err.find("axes[0].path"), std::string::npos) << bad_field.err;
    auto bad_value =
        run_cli({"sweep", write_spec("bad3.json", R"({"axes": [{"path": "/alpha", "values": [0.5, 7]}]})").string(),
                 "--db", db.string()});
    EXPECT_EQ(bad_value.exit_code, 1);
    EXPECT_NE(bad_value.err.find("alpha=7"), std::string::npos) << bad_value.err;
    EXPECT_EQ(stored_rows(db), 0u);  // nothing ran
    auto missing = run_cli({"sweep", write_spec("ok.json", kSpec).string()});
    EXPECT_EQ(missing.exit_code, 2);
    EXPECT_NE(missing.err.find("--db"), std::string::npos);
    auto absent = run_cli({"sweep", tmp("nope.json").string(), "--db", db.string()});
    EXPECT_EQ(absent.exit_code, 1);
    EXPECT_NE(absent.err.find("cannot open"), std::string::npos);
}

TEST(SweepCli, ForeignOrCorruptDatabaseIsRefusedAndUntouched) {
    fs::path spec = write_spec("db.json", kSpec);
    fs::path db   = tmp("notes.sqlite");
    std::ofstream(db, std::ios::binary) << "my notes, not a database";
    std::string before = slurp(db);
    for (const char* cmd : {"sweep", "results"}) {
        std::vector<std::string> args = {cmd, "--db", db.string()};
        if (std::string(cmd) == "sweep") args.insert(args.begin() + 1, spec.string());
        auto r = run_cli(args);
        EXPECT_EQ(r.exit_code, 1) << cmd;
        EXPECT_NE(r.err.find("not a SQLite database"), std::string::npos) << r.err;
    }
    EXPECT_EQ(slurp(db), before);
}

TEST(SweepCli, BayesianExampleRunsItsBudgetAndResumesFromTheStore) {
    fs::path spec         = speculum::test::source_dir() / "docs" / "examples" / "sweep_bayesian.json";
    fs::path db           = tmp("bayes.sqlite");
    std::string resources = (speculum::test::source_dir() / "resources").string();
    auto first            = run_cli({"sweep", spec.string(), "--db", db.string(), "--quiet", "--resources", resources});
    ASSERT_EQ(first.exit_code, 0) << first.err;
    EXPECT_NE(first.out.find("40 planned, 40 evaluated, 0 cached"), std::string::npos) << first.out;
    EXPECT_NE(first.out.find("best predicted_speedup"), std::string::npos) << first.out;
    EXPECT_EQ(stored_rows(db), 40u);
    auto again = run_cli({"sweep", spec.string(), "--db", db.string(), "--quiet", "--resources", resources});
    ASSERT_EQ(again.exit_code, 0) << again.err;
    EXPECT_NE(again.out.find("40 planned, 0 evaluated, 40 cached"), std::string::npos) << again.out;
    auto bad = run_cli({"sweep",
                        write_spec("bad_bayes.json", R"({"axes": [{"path": "/k", "values": [1, 2]}],
                            "sampling": {"mode": "bayesian", "kernel": "cubic"}})")
                            .string(),
                        "--db", tmp("bad_bayes.sqlite").string()});
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_NE(bad.err.find("spec.sampling.kernel: must be matern52 or rbf"), std::string::npos) << bad.err;
}
