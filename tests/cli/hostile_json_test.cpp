// Issue #27, item 1, through the real binary: deeply nested JSON in a sweep spec, a run config and a predict input,
// and a sweep axis path of 30,000 segments, each crashed speculum-cli (SIGSEGV); now each is a clear error, exit 1.
#include "support/run_process.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>

#include <fstream>

using namespace speculum;

namespace {

std::string nested(size_t depth) {
    return std::string(depth, '[') + std::string(depth, ']');
}

std::string write(const std::string& name, const std::string& text) {
    const std::string path = (test::tmp_dir() / name).string();
    std::ofstream(path) << text;
    return path;
}

}  // namespace

TEST(HostileJson, DeepNestingIsAnErrorNotACrash) {
    const std::string spec =
        write("deep_spec.json", R"({"name": "x", "evaluator": "predict", "base": {"alpha": 0.8, "x": )" +
                                    nested(30000) + "}, \"axes\": []}");
    auto r = test::run_cli({"sweep", spec, "--db", (test::tmp_dir() / "deep_spec.sqlite").string()});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("JSON nested deeper than"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("deep_spec.json"), std::string::npos) << "the file is named: " << r.err;

    const std::string cfg =
        write("deep_cfg.json", R"({"levels": [{"kind": "self"}], "tree": {"kind": )" + nested(100000) + "}}");
    r = test::run_cli({"run", "--config", cfg});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("JSON nested deeper than"), std::string::npos) << r.err;

    r = test::run_cli({"predict", write("deep_predict.json", R"({"alpha": )" + nested(50000) + "}")});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("JSON nested deeper than"), std::string::npos) << r.err;
}

TEST(HostileJson, AHugeAxisPathIsRefused) {
    std::string path;
    for (int i = 0; i < 30000; ++i) path += "/a";
    const std::string spec = write("long_path_spec.json", R"({"name": "x", "evaluator": "predict", "base": {},
        "axes": [{"path": ")" + path + R"(", "values": [1]}]})");
    auto r = test::run_cli({"sweep", spec, "--db", (test::tmp_dir() / "long_path.sqlite").string()});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("axes[0].path"), std::string::npos) << r.err;
}
