// Bundled defaults: `models` lists the bundled target and draft; generate/tokenize work without -m.
#include "support/run_process.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using speculum::test::run_cli;

TEST(CliModels, ListsBundledModelsAndDatasets) {
    auto r = run_cli({"models", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    ASSERT_TRUE(j.contains("models"));
    bool target = false, draft = false, head = false, mtp = false;
    for (const auto& m : j["models"]) {
        EXPECT_FALSE(m.contains("error")) << m.dump();
        if (m["role"] == "the default target's EAGLE-3 head") {
            head = true;
            EXPECT_EQ(m["arch"], "eagle3");
            EXPECT_EQ(m["extract_layers"].size(), 3u);
        }
        if (m["role"] == "the default target's MTP module") {
            mtp = true;
            EXPECT_EQ(m["type"], "mtp_module");
            EXPECT_EQ(m["layers"], 1);
        }
        if (m["role"] == "default target") {
            target = true;
            EXPECT_GE(m["layers"].get<int>(), 8);
        }
        if (m["role"] == "default draft") draft = true;
    }
    EXPECT_TRUE(target);
    EXPECT_TRUE(draft);
    EXPECT_TRUE(head);
    EXPECT_TRUE(mtp);
    ASSERT_GE(j["datasets"].size(), 5u);
    for (const auto& d : j["datasets"]) {
        EXPECT_GE(d["prompts"].get<int>(), 40) << d.dump();
        EXPECT_EQ(d["malformed"].get<int>(), 0) << d.dump();
    }
}

TEST(CliModels, GenerateUsesBundledTargetByDefault) {
    auto r = run_cli({"generate", "-p", "And God said", "-n", "8"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("And God said"), std::string::npos);
    EXPECT_GT(r.out.size(), std::string("And God said").size());
}

TEST(CliModels, TokenizeUsesBundledTargetByDefault) {
    auto r = run_cli({"tokenize", "-p", "def main():"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_FALSE(r.out.empty());
}
