// Max-Gram: longest-suffix copy agrees with the brute-force reference; bigram fill; validation and JSON.
#include "core/drafts/maxgram.h"

#include <gtest/gtest.h>

#include <random>

using namespace speculum::drafts;

TEST(MaxGram, CopiesContinuationOfLongestSuffixMatch) {
    // "a b c d ... a b" -> the suffix "a b" occurred at the start, followed by "c d".
    std::vector<int32_t> ctx = {1, 2, 3, 4, 9, 9, 2, 1, 2};
    auto p = maxgram_propose(ctx, 3, nullptr);
    EXPECT_EQ(p.match_length, 2);
    EXPECT_EQ(p.match_end, 2);
    EXPECT_EQ(p.tokens, (std::vector<int32_t>{3, 4, 9}));
    for (auto s : p.sources) EXPECT_EQ(s, MaxGramSource::copy);
}

TEST(MaxGram, LeftmostByDefaultMostRecentOnRequest) {
    std::vector<int32_t> ctx = {5, 6, 9, 5, 7, 0, 5};  // "5" occurs twice, each a match of length 1
    auto left = maxgram_propose(ctx, 1, nullptr);
    EXPECT_EQ(left.tokens, (std::vector<int32_t>{6}));
    MaxGramParams recent;
    recent.prefer_recent = true;
    auto right = maxgram_propose(ctx, 1, nullptr, recent);
    EXPECT_EQ(right.tokens, (std::vector<int32_t>{7}));
}

TEST(MaxGram, RepeatingPatternExtendsPeriodically) {
    std::vector<int32_t> ctx = {1, 2, 1, 2, 1};
    auto p = maxgram_propose(ctx, 5, nullptr);
    EXPECT_EQ(p.tokens, (std::vector<int32_t>{2, 1, 2, 1, 2}));
}

TEST(MaxGram, FallsBackToBigramChain) {
    BigramTable t = BigramTable::build({{1, 2, 3, 1, 2, 4, 1, 2, 3}}, 8);
    EXPECT_EQ(t.successor(1), 2);
    EXPECT_EQ(t.successor(2), 3);  // 2->3 twice, 2->4 once
    EXPECT_EQ(t.successor(7), -1);
    std::vector<int32_t> ctx = {6, 1};  // 1 never occurred earlier: no copy
    auto p = maxgram_propose(ctx, 4, &t);
    EXPECT_EQ(p.match_length, 0);
    EXPECT_EQ(p.tokens, (std::vector<int32_t>{2, 3, 1, 2}));
    for (auto s : p.sources) EXPECT_EQ(s, MaxGramSource::bigram);
    MaxGramParams no_fill;
    no_fill.bigram_fill = false;
    EXPECT_TRUE(maxgram_propose(ctx, 4, &t, no_fill).tokens.empty());
}

TEST(MaxGram, StopsWhenNothingIsKnown) {
    BigramTable t = BigramTable::build({{1, 2}}, 4);
    auto p = maxgram_propose(std::vector<int32_t>{3}, 4, &t);
    EXPECT_TRUE(p.tokens.empty());
    EXPECT_TRUE(maxgram_propose(std::vector<int32_t>{}, 4, &t).tokens.empty());
    EXPECT_TRUE(maxgram_propose(std::vector<int32_t>{1, 2, 1}, 0, &t).tokens.empty());
}

TEST(MaxGram, AgreesWithBruteForceReference) {
    std::mt19937 rng(1234);
    for (int trial = 0; trial < 400; ++trial) {
        std::uniform_int_distribution<int> vocab(0, 1 + trial % 6);
        std::vector<int32_t> ctx(size_t(1 + rng() % 60));
        for (auto& t : ctx) t = vocab(rng);
        MaxGramParams params;
        params.min_match     = 1 + int32_t(rng() % 3);
        params.max_match     = params.min_match + int32_t(rng() % 8);
        params.prefer_recent = rng() % 2;
        auto [len, end] = maxgram_longest_match_ref(ctx, params);
        auto p          = maxgram_propose(ctx, 4, nullptr, params);
        ASSERT_EQ(p.match_length, len) << "trial " << trial;
        ASSERT_EQ(p.match_end, end) << "trial " << trial;
        if (end >= 0) {
            ASSERT_EQ(p.tokens.size(), 4u);
            ASSERT_EQ(p.tokens[0], ctx[size_t(end)]);
        }
    }
}

TEST(MaxGram, ValidationNamesTheField) {
    MaxGramParams p;
    p.min_match = 0;
    EXPECT_THROW(p.validate(), std::invalid_argument);
    p.min_match = 3;
    p.max_match = 2;
    try {
        p.validate();
        FAIL();
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("maxgram.max_match"), std::string::npos);
    }
    EXPECT_THROW(BigramTable::build({{1, 99}}, 8), std::invalid_argument);
    EXPECT_THROW(BigramTable::build({{1}}, 0), std::invalid_argument);
}

TEST(MaxGram, JsonRoundTrip) {
    MaxGramParams p;
    p.min_match     = 2;
    p.max_match     = 9;
    p.prefer_recent = true;
    p.bigram_fill   = false;
    nlohmann::json j = p;
    EXPECT_EQ(j.get<MaxGramParams>(), p);
    EXPECT_EQ(nlohmann::json::object().get<MaxGramParams>(), MaxGramParams{});
}
