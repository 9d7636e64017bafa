// `speculum-cli calibrate --report` on real reports: `speculum-cli run --report` on the bundled target with the
// bundled draft (a chain and a Model → Max-Gram cascade), then the fit, its table and JSON; foreign, malformed and
// unsupported reports are clear errors naming the file.
#include "support/run_process.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

using speculum::test::run_cli;

namespace {

std::string tmp(const std::string& name) {
    return (speculum::test::tmp_dir() / name).string();
}

std::string draft_model() {
    return std::string(SPECULUM_SOURCE_DIR) + "/resources/models/speculum-draft-f16.gguf";
}

// Runs the bundled target with this config body and returns the report's path.
std::string report(const std::string& name, const std::string& levels_and_gamma,
                   const std::vector<std::string>& extra = {}) {
    const std::string cfg = tmp("calib_" + name + ".json"), out = tmp("calib_" + name + "_report.json");
    std::ofstream(cfg) << "{" << levels_and_gamma << R"(, "max_new_tokens": 20})";
    std::vector<std::string> args{"run",      "--config", cfg,  "--prompt", "And God said, Let there be light",
                                  "--report", out,        "-t", "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = run_cli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
    return out;
}

// ctest runs every TEST in its own process, possibly in parallel: each test writes its own reports.
std::string chain_report(const std::string& test) {
    return report(test + "_chain",
                  R"("levels": [{"kind": "model", "model_path": ")" + draft_model() + R"("}], "gamma": [3])");
}

std::string cascade_report(const std::string& test) {
    return report(test + "_cascade", R"("levels": [{"kind": "model", "model_path": ")" + draft_model() +
                                         R"("}, {"kind": "maxgram"}], "gamma": [5, 2])");
}

}  // namespace

TEST(CliCalibrateReport, TableShowsMeasuredAgainstModeled) {
    const std::string chain = chain_report("table"), cascade = cascade_report("table");
    auto r = run_cli({"calibrate", "--report", chain, "--report", cascade});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const char* s : {"fitted from the measured runs", "verification pass v(w)", "speedup measured",
                          "predicted (modeled)", "residual", "fitted alpha", "mean |residual|", "level max-gram"})
        EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
    EXPECT_NE(r.out.find(chain + ":"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(cascade + ":"), std::string::npos) << r.out;
}

TEST(CliCalibrateReport, JsonAndOutFile) {
    const std::string out = tmp("calib_fit.json");
    auto r = run_cli({"calibrate", "-r", chain_report("json"), "-r", cascade_report("json"), "--json", "--out", out});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    std::ifstream in(out);
    EXPECT_EQ(nlohmann::json::parse(in), j);
    ASSERT_EQ(j["runs"].size(), 2u);
    EXPECT_NE(j["label"].get<std::string>().find("modeled"), std::string::npos);
    const auto& cascade = j["runs"][1];
    ASSERT_EQ(cascade["levels"].size(), 3u);
    EXPECT_TRUE(cascade["levels"][1]["alpha"].is_number());  // the intermediate reviewer's fitted acceptance
    EXPECT_TRUE(cascade["levels"][2]["alpha"].is_null());    // Max-Gram is a leaf
    EXPECT_GT(cascade["speedup_predicted"].get<double>(), 0.0);
    EXPECT_GT(cascade["speedup_measured"].get<double>(), 0.0);
    // The draft model drafts in one report and reviews in the other: one c per role, each from its own report.
    int roles = 0;
    for (const auto& l : j["levels"])
        if (l["per_call"] == false) {
            EXPECT_EQ(l["runs"], 1) << l.dump();
            ++roles;
        }
    EXPECT_EQ(roles, 2) << j["levels"].dump();
}

TEST(CliCalibrateReport, BadReportsAreClearErrors) {
    struct Case {
        std::string file, text, expect;
    };
    const std::string chain = chain_report("bad");
    nlohmann::json edited;
    {
        std::ifstream in(chain);
        edited = nlohmann::json::parse(in);
        edited["total"]["levels"][1].erase("n_forward");
    }
    const std::vector<Case> cases{
        {tmp("calib_bad_json.json"), "{ not json", "not valid JSON"},
        {tmp("calib_foreign.json"), R"({"label": "modeled", "ewif": 2.1})", "not a `speculum-cli run --report` file"},
        {tmp("calib_edited.json"), edited.dump(), "total.levels[1].n_forward: missing"},
    };
    for (const Case& c : cases) {
        std::ofstream(c.file) << c.text;
        auto r = run_cli({"calibrate", "--report", c.file});
        EXPECT_EQ(r.exit_code, 1) << c.file << "\n" << r.err;
        EXPECT_NE(r.err.find(c.expect), std::string::npos) << r.err;
        EXPECT_NE(r.err.find(c.file), std::string::npos) << r.err;  // names the file
    }
    auto r = run_cli({"calibrate", "--report", "/nonexistent/report.json"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("cannot open"), std::string::npos) << r.err;
    // A run without its baseline has no speedup to calibrate against.
    const std::string no_base = report("nobase", R"("levels": [{"kind": "maxgram"}], "gamma": [3])", {"--no-baseline"});
    r                         = run_cli({"calibrate", "--report", no_base});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("--no-baseline"), std::string::npos) << r.err;
    // Usage errors: hardware options with --report, --json without it.
    EXPECT_EQ(run_cli({"calibrate", "--report", chain, "--quick"}).exit_code, 2);
    EXPECT_EQ(run_cli({"calibrate", "--json"}).exit_code, 2);
    auto h = run_cli({"calibrate", "--help"});
    EXPECT_EQ(h.exit_code, 0);
    EXPECT_NE(h.out.find("--report"), std::string::npos);
}
