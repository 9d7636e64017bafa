// JSONL prompt suites: well-formed lines load; every malformed line is reported with its number and reason.
#include "core/data/dataset.h"

#include "support/test_paths.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace speculum::data;

TEST(Dataset, ParsesWellFormedLines) {
    Dataset d = parse_dataset(
        "{\"id\":\"a\",\"task\":\"code\",\"prompt\":\"def f(\",\"max_new_tokens\":32}\n"
        "\n"
        "{\"id\":\"b\",\"task\":\"prose\",\"prompt\":\"In the\",\"max_new_tokens\":8,\"source\":\"kjv\"}\r\n",
        "t.jsonl");
    ASSERT_TRUE(d.issues.empty()) << describe_issues(d);
    ASSERT_EQ(d.prompts.size(), 2u);
    EXPECT_EQ(d.prompts[0].prompt, "def f(");
    EXPECT_EQ(d.prompts[0].line, 1);
    EXPECT_EQ(d.prompts[1].line, 3);
    EXPECT_EQ(d.prompts[1].extra["source"], "kjv");
    EXPECT_EQ(d.tasks(), (std::vector<std::string>{"code", "prose"}));
    EXPECT_EQ(d.by_task("prose").size(), 1u);
}

TEST(Dataset, ReportsEveryMalformedLineWithReason) {
    const std::string text =
        "{\"id\":\"a\",\"task\":\"t\",\"prompt\":\"x\",\"max_new_tokens\":4}\n"    // 1 ok
        "{not json}\n"                                                             // 2
        "[1,2]\n"                                                                  // 3
        "{\"task\":\"t\",\"prompt\":\"x\",\"max_new_tokens\":4}\n"                 // 4 missing id
        "{\"id\":5,\"task\":\"t\",\"prompt\":\"x\",\"max_new_tokens\":4}\n"        // 5 id not string
        "{\"id\":\"c\",\"task\":\"t\",\"prompt\":\"x\",\"max_new_tokens\":0}\n"    // 6 out of range
        "{\"id\":\"d\",\"task\":\"t\",\"prompt\":\"x\",\"max_new_tokens\":2.5}\n"  // 7 not integer
        "{\"id\":\"a\",\"task\":\"t\",\"prompt\":\"y\",\"max_new_tokens\":4}\n"    // 8 duplicate
        "{\"id\":\"e\",\"task\":\"t\",\"prompt\":\"\",\"max_new_tokens\":4}\n"     // 9 empty prompt
        "{\"id\":\"f\",\"task\":\"t\",\"prompt\":\"x\"}";                          // 10 missing max_new_tokens
    Dataset d = parse_dataset(text, "bad.jsonl");
    ASSERT_EQ(d.prompts.size(), 1u);
    ASSERT_EQ(d.issues.size(), 9u) << describe_issues(d);
    const std::vector<std::pair<int64_t, std::string>> expected = {
        {2, "not valid JSON"},
        {3, "expected a JSON object"},
        {4, "missing field 'id'"},
        {5, "field 'id' must be a string"},
        {6, "must be in [1, 4096], got 0"},
        {7, "must be an integer"},
        {8, "duplicate id 'a' (first on line 1)"},
        {9, "field 'prompt' is empty"},
        {10, "missing field 'max_new_tokens'"},
    };
    for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_EQ(d.issues[i].line, expected[i].first);
        EXPECT_NE(d.issues[i].reason.find(expected[i].second), std::string::npos)
            << "line " << expected[i].first << ": " << d.issues[i].reason;
    }
    std::string summary = describe_issues(d, 3);
    EXPECT_NE(summary.find("9 malformed lines"), std::string::npos);
    EXPECT_NE(summary.find("bad.jsonl:2:"), std::string::npos);
    EXPECT_NE(summary.find("and 6 more"), std::string::npos);
}

TEST(Dataset, StrictLoadThrowsOnIssuesAndMissingFiles) {
    auto dir = speculum::test::tmp_dir() / "dataset_test";
    std::filesystem::create_directories(dir);
    auto bad = dir / "bad.jsonl";
    std::ofstream(bad) << "{\"id\":\"a\",\"task\":\"t\",\"prompt\":\"x\",\"max_new_tokens\":4}\nnope\n";
    EXPECT_THROW(load_dataset(bad.string()), DatasetError);
    EXPECT_EQ(load_dataset_lenient(bad.string()).issues.size(), 1u);
    auto empty = dir / "empty.jsonl";
    std::ofstream(empty) << "\n\n";
    EXPECT_THROW(load_dataset(empty.string()), DatasetError);
    try {
        load_dataset((dir / "absent.jsonl").string());
        FAIL() << "no error for a missing file";
    } catch (const DatasetError& e) {
        EXPECT_NE(std::string(e.what()).find("absent.jsonl: cannot open"), std::string::npos);
    }
}

// Issue #27: a directory was reported as "9223372036854775807 bytes"; /dev/zero would be read forever.
TEST(Dataset, DirectoriesAndSpecialFilesAreRefusedByName) {
    const std::string dir = speculum::test::tmp_dir().string();
    try {
        (void)load_dataset(dir);
        FAIL() << "a directory loaded";
    } catch (const DatasetError& e) {
        EXPECT_EQ(std::string(e.what()), dir + ": is a directory, not a dataset file");
    }
    if (std::filesystem::exists("/dev/zero")) {
        try {
            (void)load_dataset("/dev/zero");
            FAIL() << "/dev/zero loaded";
        } catch (const DatasetError& e) {
            EXPECT_EQ(std::string(e.what()),
                      "/dev/zero: not a regular file (a dataset file is read from a file; "
                      "devices, FIFOs and sockets are refused)");
        }
    }
}

TEST(Dataset, HostileLinesDoNotCrash) {
    std::string deep(100000, '[');
    Dataset d = parse_dataset(deep + "\n" + std::string(kMaxLineBytes + 10, 'x') + "\n\x01\x02\xff\n", "hostile");
    EXPECT_EQ(d.prompts.size(), 0u);
    EXPECT_EQ(d.issues.size(), 3u);
}

// Every bundled dataset file loads without a single malformed line.
TEST(Dataset, BundledDatasetsLoad) {
    auto dir = speculum::test::source_dir() / "datasets";
    if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << "no datasets/ folder yet";
    int files = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        if (entry.path().extension() != ".jsonl") continue;
        ++files;
        Dataset d = load_dataset(entry.path().string());
        EXPECT_GE(d.prompts.size(), 40u) << entry.path();
    }
    if (files == 0) GTEST_SKIP() << "no bundled datasets yet";
}
