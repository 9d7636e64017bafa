// `speculum-cli sweep --mpi` under a real mpirun: the result set of a 3-rank sweep on the bundled models equals the
// single-process sweep on every deterministic column; a rank killed mid-configuration is either dropped and its
// configuration re-run (mpirun --enable-recovery) or, when the launcher aborts the job (the default), reported in
// <db>.inflight.json and picked up by the next run. Built and run only when MPI and mpirun were found.
#include "core/store/result_store.h"

#include "support/fresh_path.h"
#include "support/run_process.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

using nlohmann::json;
using speculum::store::ResultRow;
using speculum::store::ResultStore;
namespace fs = std::filesystem;

extern char** environ;

// ---- files and child processes ----

namespace {

constexpr auto kJobTimeout = std::chrono::seconds(60);  // a hung mpirun fails the test instead of hanging it

// Root inside CI containers: mpirun refuses root without these. ctest sets them too (tests/CMakeLists.txt); they
// are repeated here so that running the executable by hand works as well.
void mpi_environment() {
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
    setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 0);
}

fs::path tmp(const std::string& name) {
    return speculum::test::fresh_tmp_path("mpi_" + name);
}

fs::path write_file(const std::string& name, const std::string& text) {
    fs::path p = tmp(name);
    std::ofstream(p) << text;
    return p;
}

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::vector<std::string> mpirun(int ranks, const std::vector<std::string>& extra_mpirun_args,
                                const std::vector<std::string>& cli_args) {
    std::vector<std::string> argv = {SPECULUM_MPIEXEC,     "--oversubscribe", "--bind-to", "none", "-n",
                                     std::to_string(ranks)};
    argv.insert(argv.end(), extra_mpirun_args.begin(), extra_mpirun_args.end());
    argv.push_back(speculum::test::cli_path().string());
    argv.insert(argv.end(), cli_args.begin(), cli_args.end());
    return argv;
}

// A child with stdout+stderr in a file; wait() gives its exit code (128+N for signal N), killing it on timeout.
class Child {
public:
    Child(const std::vector<std::string>& argv, const fs::path& log) : m_log(log) {
        mpi_environment();
        std::vector<char*> args;
        for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
        if (posix_spawn(&m_pid, args[0], &fa, nullptr, args.data(), environ) != 0) m_pid = -1;
        posix_spawn_file_actions_destroy(&fa);
    }
    ~Child() {
        if (m_pid > 0 && !m_done) {
            kill(m_pid, SIGKILL);
            waitpid(m_pid, nullptr, 0);
        }
    }
    bool started() const { return m_pid > 0; }
    bool running() {
        if (m_done) return false;
        int status = 0;
        if (waitpid(m_pid, &status, WNOHANG) != m_pid) return true;
        finish(status);
        return false;
    }
    int wait() {
        auto t0 = std::chrono::steady_clock::now();
        while (running()) {
            if (std::chrono::steady_clock::now() - t0 > kJobTimeout) {
                kill(m_pid, SIGTERM);  // mpirun passes it on to the ranks
                std::this_thread::sleep_for(std::chrono::seconds(2));
                kill(m_pid, SIGKILL);
                int status = 0;
                waitpid(m_pid, &status, 0);
                finish(status);
                ADD_FAILURE() << "timed out; output:\n" << output();
                return -1;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        return m_code;
    }
    std::string output() const { return slurp(m_log); }

private:
    void finish(int status) {
        m_done = true;
        m_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    fs::path m_log;
    pid_t m_pid = -1;
    bool m_done = false;
    int m_code  = -1;
};

struct JobResult {
    int code = -1;
    std::string out;
};

JobResult run_job(const std::vector<std::string>& argv, const std::string& name) {
    Child c(argv, tmp(name + ".log"));
    if (!c.started()) return {};
    int code = c.wait();
    return {code, c.output()};
}

// ---- comparing result stores ----

// Statistics without the wall-clock figures (times, rates, cost ratios measured from times).
// Timings, and what is derived from them (draft_work = gamma x the measured c), differ from run to run.
json deterministic_stats(json stats) {
    for (const char* k :
         {"t_prefill_s", "t_draft_s", "t_verify_s", "t_decode_s", "tokens_per_s", "baseline_tokens_per_s", "speedup",
          "verify_width_seconds", "verify_context_seconds", "draft_work"})
        stats.erase(k);
    if (stats.contains("levels"))
        for (auto& l : stats["levels"]) {
            l.erase("t_s");
            l.erase("t_prefill_s");
            l.erase("cost_ratio");
        }
    return stats;
}

std::map<std::string, ResultRow> rows_by_key(const fs::path& db) {
    auto store = ResultStore::open(db, ResultStore::Mode::read_only);
    std::map<std::string, ResultRow> out;
    for (auto& r : store->query()) out[r.key.config_hash + "/" + r.key.model_hash + "/" + r.key.dataset_hash] = r;
    return out;
}

// Every deterministic column equal: keys, status, configuration, prompts, predictions, the metrics named, the
// statistics without times, and the objective (when it is a deterministic metric).
void expect_same_results(const fs::path& a, const fs::path& b, const std::vector<std::string>& metrics,
                         bool objective_deterministic) {
    auto ra = rows_by_key(a), rb = rows_by_key(b);
    ASSERT_EQ(ra.size(), rb.size());
    for (const auto& [key, x] : ra) {
        ASSERT_TRUE(rb.count(key)) << "missing in " << b << ": " << key;
        const ResultRow& y = rb.at(key);
        EXPECT_EQ(x.status, y.status) << key;
        EXPECT_EQ(x.status, "done") << x.message;
        EXPECT_EQ(x.config, y.config) << key;
        EXPECT_EQ(x.prompts, y.prompts) << key;
        EXPECT_EQ(x.task, y.task) << key;
        EXPECT_EQ(x.predictions, y.predictions) << key;
        EXPECT_FALSE(x.stats.empty() && x.predictions.empty()) << "nothing measured or predicted in " << key;
        EXPECT_EQ(deterministic_stats(x.stats), deterministic_stats(y.stats)) << key;
        for (const auto& m : metrics) {
            ASSERT_TRUE(x.metric(m).has_value()) << m << " missing in " << key;
            EXPECT_EQ(x.metric(m), y.metric(m)) << m << " of " << key;
        }
        if (objective_deterministic) {
            EXPECT_EQ(x.objective, y.objective) << key;
        }
    }
}

// ---- sweep specs ----

// 2 drafts (the bundled draft model, the target's own first two layers) x 3 gammas, one 16-token prompt.
std::string engine_spec() {
    fs::path draft = speculum::test::source_dir() / "resources/models/speculum-draft-f16.gguf";
    json model     = {{"kind", "model"}, {"model_path", draft.string()}};
    json self      = {{"kind", "self"}, {"exit_layer", 1}};
    json spec      = {
             {"name", "mpi-engine"},
             {"evaluator", "engine"},
             {"base",
              {{"levels", json::array({model})},
               {"gamma", {2}},
               {"sampling", {{"temperature", 0.0}}},
               {"max_new_tokens", 16},
               {"prompt", "In the beginning God created"},
               {"baseline", true}}},
             {"axes", json::array({{{"name", "draft"}, {"path", "/levels/0"}, {"values", json::array({model, self})}},
                                   {{"name", "gamma"}, {"path", "/gamma/0"}, {"values", {1, 2, 4}}}})},
             {"objective", {{"metric", "accepted_length"}}}};
    return spec.dump(1);
}

// 9 analytic configurations; --slow-ms makes each take long enough to kill a rank in the middle of one.
const char* kSlowSpec      = R"({
  "name": "mpi-slow",
  "base": {"alpha": 0.8, "k": 4, "c": 0.05},
  "axes": [{"name": "k", "path": "/k", "values": [1, 2, 3]},
           {"name": "alpha", "path": "/alpha", "values": [0.6, 0.7, 0.8]}],
  "objective": {"metric": "predicted_speedup"}
})";
constexpr int kSlowConfigs = 9;

// ---- in-flight polling ----

// Waits until <db>.inflight.json shows `rank` holding a configuration; returns its entry (null on timeout).
json wait_for_inflight(const fs::path& db, int rank, Child& job) {
    fs::path file = db.string() + ".inflight.json";
    auto t0       = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30) && job.running()) {
        try {
            json j = json::parse(slurp(file));
            for (const auto& e : j.at("in_flight"))
                if (e.at("rank") == rank) return e;
        } catch (const std::exception&) {
            // not written yet
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return nullptr;
}

}  // namespace

// ---- equal results ----

TEST(SweepMpi, ThreeRanksEqualOneProcessOnTheBundledModels) {
    fs::path spec = write_file("engine_spec.json", engine_spec());
    fs::path a = tmp("engine_a.sqlite"), b = tmp("engine_b.sqlite");
    JobResult mpi =
        run_job(mpirun(3, {}, {"sweep", spec.string(), "--db", a.string(), "--mpi", "--jobs", "1"}), "engine_a");
    ASSERT_EQ(mpi.code, 0) << mpi.out;
    EXPECT_NE(mpi.out.find("6 planned, 6 evaluated, 0 cached, 0 failed"), std::string::npos) << mpi.out;
    EXPECT_NE(mpi.out.find("rank 1 (pid"), std::string::npos) << mpi.out;
    EXPECT_FALSE(fs::exists(a.string() + ".inflight.json")) << "a complete run leaves no in-flight list";
    auto one = speculum::test::run_cli({"sweep", spec.string(), "--db", b.string(), "--jobs", "1", "--quiet"});
    ASSERT_EQ(one.exit_code, 0) << one.out << one.err;
    expect_same_results(a, b, {"accepted_length", "bpt", "draft_bytes", "quality"}, true);

    // Again under MPI: every configuration is a cache hit, nothing is evaluated.
    JobResult again =
        run_job(mpirun(3, {}, {"sweep", spec.string(), "--db", a.string(), "--mpi", "--jobs", "1"}), "engine_a2");
    ASSERT_EQ(again.code, 0) << again.out;
    EXPECT_NE(again.out.find("6 planned, 0 evaluated, 6 cached"), std::string::npos) << again.out;
}

// ---- killed ranks ----

TEST(SweepMpi, KilledRankIsDroppedAndItsConfigurationRunsElsewhere) {
    fs::path spec = write_file("slow_spec.json", kSlowSpec);
    fs::path db = tmp("recovery.sqlite"), ref = tmp("recovery_ref.sqlite");
    // --enable-recovery: mpirun keeps the job alive when a rank dies; rank 0 notices the silence (heartbeats).
    Child job(mpirun(3, {"--enable-recovery"},
                     {"sweep", spec.string(), "--db", db.string(), "--mpi", "--slow-ms", "1000", "--mpi-timeout", "6"}),
              tmp("recovery.log"));
    ASSERT_TRUE(job.started());
    json victim = wait_for_inflight(db, 2, job);
    ASSERT_FALSE(victim.is_null()) << "rank 2 never held a configuration\n" << job.output();
    ASSERT_EQ(kill(static_cast<pid_t>(victim.at("pid").get<int64_t>()), SIGKILL), 0);
    int code        = job.wait();
    std::string out = job.output();
    EXPECT_EQ(code, 0) << out;
    EXPECT_NE(out.find("rank 2 (pid " + std::to_string(victim.at("pid").get<int64_t>())), std::string::npos) << out;
    EXPECT_NE(out.find("lost: no message for"), std::string::npos) << out;
    EXPECT_NE(out.find(victim.at("label").get<std::string>() + " goes back to the queue"), std::string::npos) << out;
    EXPECT_EQ(ResultStore::open(db, ResultStore::Mode::read_only)->count(), static_cast<size_t>(kSlowConfigs)) << out;
    EXPECT_FALSE(fs::exists(db.string() + ".inflight.json"));

    auto one = speculum::test::run_cli({"sweep", spec.string(), "--db", ref.string(), "--quiet"});
    ASSERT_EQ(one.exit_code, 0) << one.out << one.err;
    expect_same_results(db, ref, {"predicted_speedup", "accepted_length"}, true);
}

TEST(SweepMpi, AbortedJobListsItsInFlightConfigurationsAndResumes) {
    fs::path spec = write_file("abort_spec.json", kSlowSpec);
    fs::path db = tmp("abort.sqlite"), ref = tmp("abort_ref.sqlite");
    // Default launcher behaviour: one rank dies, mpirun ends the whole job.
    Child job(
        mpirun(3, {},
               {"sweep", spec.string(), "--db", db.string(), "--mpi", "--mpi-coordinator-only", "--slow-ms", "1500"}),
        tmp("abort.log"));
    ASSERT_TRUE(job.started());
    json victim = wait_for_inflight(db, 2, job);
    ASSERT_FALSE(victim.is_null()) << "rank 2 never held a configuration\n" << job.output();
    ASSERT_EQ(kill(static_cast<pid_t>(victim.at("pid").get<int64_t>()), SIGKILL), 0);
    int code = job.wait();
    EXPECT_NE(code, 0) << job.output();

    // The list survives the job and names the configuration rank 2 held; it is not in the store.
    json left   = json::parse(slurp(db.string() + ".inflight.json"));
    bool listed = false;
    for (const auto& e : left.at("in_flight")) listed |= e.at("config_hash") == victim.at("config_hash");
    EXPECT_TRUE(listed) << left.dump(1);
    size_t stored = ResultStore::open(db, ResultStore::Mode::read_only)->count();
    EXPECT_LT(stored, static_cast<size_t>(kSlowConfigs));

    // The next run reports what was lost and evaluates exactly what the store lacks.
    JobResult again = run_job(mpirun(2, {}, {"sweep", spec.string(), "--db", db.string(), "--mpi"}), "abort_again");
    ASSERT_EQ(again.code, 0) << again.out;
    EXPECT_NE(again.out.find("the previous run of sweep mpi-slow on this store stopped"), std::string::npos)
        << again.out;
    std::string victim_line = victim.at("config_hash").get<std::string>();
    victim_line.insert(0, 1, '[');
    victim_line += "] - not stored";
    EXPECT_NE(again.out.find(victim_line), std::string::npos) << again.out;
    EXPECT_NE(
        again.out.find(std::to_string(kSlowConfigs - stored) + " evaluated, " + std::to_string(stored) + " cached"),
        std::string::npos)
        << again.out;
    EXPECT_FALSE(fs::exists(db.string() + ".inflight.json"));

    auto one = speculum::test::run_cli({"sweep", spec.string(), "--db", ref.string(), "--quiet"});
    ASSERT_EQ(one.exit_code, 0) << one.out << one.err;
    expect_same_results(db, ref, {"predicted_speedup", "accepted_length"}, true);
}
