// speculum-cli front door: help, version, unknown commands and options get clear messages and exit codes.
#include "support/run_process.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using speculum::test::run_cli;

TEST(CliBasic, HelpListsCommandsAndExitsZero) {
    auto r = run_cli({"--help"});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_NE(r.out.find("usage: speculum-cli COMMAND"), std::string::npos);
    EXPECT_NE(r.out.find("version"), std::string::npos);
}

TEST(CliBasic, NoArgumentsPrintsHelpAndExitsTwo) {
    auto r = run_cli({});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.out.find("commands:"), std::string::npos);
}

TEST(CliBasic, VersionNamesLibraries) {
    auto r = run_cli({"version"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("speculum " SPECULUM_VERSION), std::string::npos);
    for (const char* lib : {"oneTBB", "OpenBLAS", "SQLite", "nlohmann-json", "build type"})
        EXPECT_NE(r.out.find(lib), std::string::npos) << lib;
}

TEST(CliBasic, VersionJsonParses) {
    auto r = run_cli({"version", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["version"], SPECULUM_VERSION);
    EXPECT_TRUE(j["libraries"].contains("oneTBB"));
}

TEST(CliBasic, UnknownCommandIsUsageError) {
    auto r = run_cli({"frobnicate"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("unknown command 'frobnicate'"), std::string::npos);
}

TEST(CliBasic, UnknownOptionIsUsageError) {
    auto r = run_cli({"version", "--frobnicate"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("unknown option '--frobnicate'"), std::string::npos);
    EXPECT_NE(r.err.find("speculum-cli version --help"), std::string::npos);
}

TEST(CliBasic, CommandHelpShowsOptions) {
    auto r = run_cli({"version", "--help"});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_NE(r.out.find("--json"), std::string::npos);
}
