// `speculum-cli sweep --mpi` without mpirun: option errors, the clear refusal of a build without MPI (or, with
// MPI, a one-rank run and the refusal of a launcher the MPI cannot reach), and the in-flight list an MPI run
// leaves next to the store, reported and cleared by the next (single-process) run. mpirun jobs: tests/mpi/.
#include "core/store/result_store.h"

#include "support/fresh_path.h"
#include "support/run_process.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>

using nlohmann::json;
using speculum::store::ResultStore;
using speculum::test::run_cli;
namespace fs = std::filesystem;

namespace {

const char* kSpec = R"({
  "name": "mpi-cli",
  "base": {"alpha": 0.8, "k": 4, "c": 0.05},
  "axes": [{"name": "k", "path": "/k", "values": [1, 2, 3]},
           {"name": "alpha", "path": "/alpha", "values": [0.6, 0.7, 0.8]}],
  "objective": {"metric": "predicted_speedup"}
})";

fs::path tmp(const std::string& name) {
    return speculum::test::fresh_tmp_path("mpicli_" + name);
}

// OpenMPI keeps process-lifetime allocations in its dlopen'ed components, which LeakSanitizer reports when a
// sanitizer build's speculum-cli initialises MPI. The children of these tests run without leak checking (as the
// GUI tests do for Mesa and Qt, and mpi.sweep for its ranks); every other test keeps it. A no-op otherwise.
const bool kNoLeakCheckForMpiChildren = [] {
    setenv("ASAN_OPTIONS", "detect_leaks=0", 0);  // only when unset: a developer's own options win
    return true;
}();

fs::path spec_file() {
    fs::path p = tmp("spec.json");
    std::ofstream(p) << kSpec;
    return p;
}

// The MPI library speculum-cli was built with, or "" without MPI.
std::string cli_mpi() {
    auto r = run_cli({"version", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    json j = json::parse(r.out);
    return j.at("mpi").is_null() ? "" : j.at("mpi").get<std::string>();
}

}  // namespace

TEST(SweepMpiCli, OptionErrors) {
    fs::path spec = spec_file(), db = tmp("opts.sqlite");
    auto r = run_cli({"sweep", spec.string(), "--db", db.string(), "--mpi-timeout", "5"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--mpi-timeout needs --mpi"), std::string::npos) << r.err;
    r = run_cli({"sweep", spec.string(), "--mpi", "--bench"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--bench and --mpi do not go together"), std::string::npos) << r.err;
    r = run_cli({"sweep", spec.string(), "--mpi"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--db FILE is required"), std::string::npos) << r.err;
    r = run_cli({"sweep", spec.string(), "--db", db.string(), "--mpi", "--mpi-timeout", "-1"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_FALSE(fs::exists(db));
}

TEST(SweepMpiCli, WithoutMpiTheBuildSaysSoAndWithMpiOneRankRunsTheSweep) {
    fs::path spec = spec_file(), db = tmp("one.sqlite");
    std::string mpi = cli_mpi();
    auto r          = run_cli({"sweep", spec.string(), "--db", db.string(), "--mpi", "--quiet"});
    if (mpi.empty()) {
        EXPECT_EQ(r.exit_code, 1);
        EXPECT_NE(r.err.find("built without MPI (SPECULUM_WITH_MPI=OFF)"), std::string::npos) << r.err;
        EXPECT_FALSE(fs::exists(db));
        return;
    }
    // Started without a launcher: MPI makes it a one-rank job ("singleton"); rank 0 evaluates everything.
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("9 planned, 9 evaluated"), std::string::npos) << r.out;
    EXPECT_EQ(ResultStore::open(db, ResultStore::Mode::read_only)->count(), 9u);
    r = run_cli({"sweep", spec.string(), "--db", db.string(), "--mpi", "--mpi-coordinator-only"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("needs at least 2 ranks"), std::string::npos) << r.err;

    // A launcher that started 4 tasks the MPI cannot see (srun without the right --mpi): refused, not run 4 times.
    fs::path db2 = tmp("lone.sqlite");
    setenv("SLURM_STEP_NUM_TASKS", "4", 1);
    r = run_cli({"sweep", spec.string(), "--db", db2.string(), "--mpi"});
    unsetenv("SLURM_STEP_NUM_TASKS");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("the launcher started 4 tasks (SLURM_STEP_NUM_TASKS) but MPI sees only this one"),
              std::string::npos)
        << r.err;
    EXPECT_FALSE(fs::exists(db2));
}

TEST(SweepMpiCli, TheNextRunReportsWhatAnMpiRunLeftInFlightAndClearsTheList) {
    fs::path spec = spec_file(), db = tmp("left.sqlite");
    // Half the sweep stored, as a killed MPI job would leave it (stored rows are cache hits either way).
    auto first = run_cli({"sweep", spec.string(), "--db", db.string(), "--quiet"});
    ASSERT_EQ(first.exit_code, 0) << first.err;
    auto store = ResultStore::open(db, ResultStore::Mode::read_write);
    auto rows  = store->query();
    ASSERT_EQ(rows.size(), 9u);
    std::string stored_hash = rows[0].key.config_hash, lost_hash = rows[1].key.config_hash;
    // Remove one row: "in flight when the job died".
    {
        auto keep = rows;
        store.reset();
        for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(db.string() + suffix);
        auto fresh = ResultStore::open(db, ResultStore::Mode::read_write);
        for (const auto& row : keep)
            if (row.key.config_hash != lost_hash) fresh->put(row);
    }
    json entry                  = {{"rank", 2},
                                   {"host", "node17"},
                                   {"pid", 4242},
                                   {"grid_index", 1},
                                   {"config_hash", lost_hash},
                                   {"label", "k=?"},
                                   {"prompts", 0},
                                   {"since", "2026-01-01T00:00:00Z"}};
    json stored_entry           = entry;
    stored_entry["rank"]        = 1;
    stored_entry["config_hash"] = stored_hash;
    std::ofstream(db.string() + ".inflight.json") << json{
        {"sweep", "mpi-cli"},
        {"updated_at", "2026-01-01T00:00:01Z"},
        {"in_flight", {entry, stored_entry}},
        {"unfinished", json::array()}}.dump();

    auto r = run_cli({"sweep", spec.string(), "--db", db.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("the previous run of sweep mpi-cli on this store stopped (last update "
                         "2026-01-01T00:00:01Z) with 2 configuration(s) in flight"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("in flight on rank 2 (pid 4242 on node17) since 2026-01-01T00:00:00Z: k=? [" + lost_hash +
                         "] - not stored: evaluated by this run"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("[" + stored_hash + "] - in the store now"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("9 planned, 1 evaluated, 8 cached"), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(db.string() + ".inflight.json")) << "a complete run clears the list";

    // A garbled list is reported and ignored, never fatal.
    std::ofstream(db.string() + ".inflight.json") << "{not json";
    r = run_cli({"sweep", spec.string(), "--db", db.string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("note: ignoring"), std::string::npos) << r.out;
    // So is one whose entry has a field of the wrong type; the note names it.
    entry["pid"] = "4242";
    std::ofstream(db.string() + ".inflight.json") << json{
        {"sweep", "mpi-cli"},
        {"updated_at", "2026-01-01T00:00:01Z"},
        {"in_flight", {entry}},
        {"unfinished", json::array()}}.dump();
    r = run_cli({"sweep", spec.string(), "--db", db.string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("in-flight list.in_flight[0].pid: expected an integer, got string"), std::string::npos)
        << r.out;
}
