// `speculum-cli results`: table, filters, CSV, Pareto frontier and best-per-task on a store written by a sweep.
#include "support/run_process.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>

using speculum::test::run_cli;
namespace fs = std::filesystem;

namespace {

// Each test gets its own files: ctest runs tests of this executable in parallel processes.
fs::path make_store(const std::string& name) {
    fs::path dir  = speculum::test::tmp_dir();
    fs::path spec = dir / ("results_spec_" + name + ".json");
    fs::path db   = dir / ("results_cli_" + name + ".sqlite");
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(db.string() + suffix);
    std::ofstream(spec) << R"({
      "name": "results-cli",
      "base": {"alpha": 0.8, "k": 4, "c": 0.05, "hardware": {"profile": "rtx4090"}},
      "axes": [{"name": "k", "path": "/k", "values": [2, 4, 8]},
               {"name": "draft", "path": "/hardware/draft/params_b", "values": [0.068, 0.5, 1.1]},
               {"name": "task", "path": "/task", "values": ["chat", "code"]},
               {"name": "alpha", "path": "/alpha", "values": [0.6, 0.9]}]
    })";
    auto r = run_cli({"sweep", spec.string(), "--db", db.string(), "--quiet"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return db;
}

size_t count_lines(const std::string& s) {
    return static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
}

}  // namespace

TEST(ResultsCli, TableFiltersCsvParetoBestPerTask) {
    fs::path db = make_store("table");
    auto all    = run_cli({"results", "--db", db.string(), "--limit", "100"});
    ASSERT_EQ(all.exit_code, 0) << all.err;
    EXPECT_NE(all.out.find("36 row(s)"), std::string::npos) << all.out;

    auto filtered = run_cli({"results", "--db", db.string(), "--filter", "task=code,/k>=4", "--json"});
    ASSERT_EQ(filtered.exit_code, 0) << filtered.err;
    auto rows = nlohmann::json::parse(filtered.out);
    ASSERT_EQ(rows.size(), 12u);
    for (const auto& r : rows) {
        EXPECT_EQ(r["task"], "code");
        EXPECT_GE(r["config"]["k"].get<int>(), 4);
    }

    fs::path csv  = speculum::test::tmp_dir() / "results_cli.csv";
    auto exported = run_cli({"results", "--db", db.string(), "--csv", csv.string()});
    ASSERT_EQ(exported.exit_code, 0) << exported.err;
    std::ifstream in(csv);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(count_lines(text.str()), 37u);  // header + 36 rows
    EXPECT_EQ(text.str().rfind("config_hash,model_hash,dataset_hash,", 0), 0u);

    // Bigger drafts only cost memory in this modeled setup at equal alpha, so the frontier is short; each row
    // on it must not be dominated by any other row.
    auto pareto = run_cli({"results", "--db", db.string(), "--pareto", "--json"});
    ASSERT_EQ(pareto.exit_code, 0) << pareto.err;
    auto front                   = nlohmann::json::parse(pareto.out);
    const std::string every_text = run_cli({"results", "--db", db.string(), "--json"}).out;
    auto every                   = nlohmann::json::parse(every_text);
    // Streamed row by row, the text is still the array dumped with indent 2; no match prints [].
    EXPECT_EQ(every_text, every.dump(2) + "\n");
    EXPECT_EQ(run_cli({"results", "--db", db.string(), "--filter", "task=none", "--json"}).out, "[]\n");
    ASSERT_FALSE(front.empty());
    for (const auto& f : front) {
        double fb  = f["metrics"]["draft_bytes"].get<double>();
        double fs_ = f["metrics"]["predicted_speedup"].get<double>();
        for (const auto& r : every) {
            double rb = r["metrics"]["draft_bytes"].get<double>();
            double rs = r["metrics"]["predicted_speedup"].get<double>();
            EXPECT_FALSE(rb <= fb && rs >= fs_ && (rb < fb || rs > fs_)) << "dominated: " << f.dump();
        }
    }

    auto best = run_cli({"results", "--db", db.string(), "--best-per-task", "--json"});
    ASSERT_EQ(best.exit_code, 0) << best.err;
    auto per_task = nlohmann::json::parse(best.out);
    ASSERT_EQ(per_task.size(), 2u);
    EXPECT_EQ(per_task[0]["task"], "chat");
    EXPECT_EQ(per_task[1]["task"], "code");
}

TEST(ResultsCli, UsageErrors) {
    fs::path db = make_store("usage");
    auto bad    = run_cli({"results", "--db", db.string(), "--filter", "speedup~3"});
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_NE(bad.err.find("speedup~3"), std::string::npos) << bad.err;
    auto unknown = run_cli({"results", "--db", db.string(), "--filter", "colour=red"});
    EXPECT_EQ(unknown.exit_code, 2);
    EXPECT_NE(unknown.err.find("unknown field 'colour'"), std::string::npos) << unknown.err;
    EXPECT_EQ(run_cli({"results"}).exit_code, 2);
    EXPECT_EQ(run_cli({"results", "--db", db.string(), "--pareto", "--best-per-task"}).exit_code, 2);
    auto absent = run_cli({"results", "--db", (speculum::test::tmp_dir() / "absent.sqlite").string()});
    EXPECT_EQ(absent.exit_code, 1);
    EXPECT_FALSE(fs::exists(speculum::test::tmp_dir() / "absent.sqlite"));
}
