// Max-Gram: longest-suffix copy agrees with the brute-force reference; bigram fill; validation and JSON.
#include "core/drafts/maxgram.h"

#include <gtest/gtest.h>

#include <random>

using namespace speculum::drafts;

TEST(MaxGram, CopiesContinuationOfLongestSuffixMatch) {
    // "a b c d ... a b" -> the suffix "a b" occurred at the start, followed by "c d".
    std::vector<int32_t> ctx = {1, 2, 3, 4, 9, 9, 2, 1, 2};
    auto p                   = maxgram_propose(ctx, 3, nullptr);
    EXPECT_EQ(p.match_length, 2);
    EXPECT_EQ(p.match_end, 2);
    EXPECT_EQ(p.tokens, (std::vector<int32_t>{3, 4, 9}));
    for (auto s : p.sources) EXPECT_EQ(s, MaxGramSource::copy);
}

TEST(MaxGram, LeftmostByDefaultMostRecentOnRequest) {
    std::vector<int32_t> ctx = {5, 6, 9, 5, 7, 0, 5};  // "5" occurs twice, each a match of length 1
    auto left                = maxgram_propose(ctx, 1, nullptr);
    EXPECT_EQ(left.tokens, (std::vector<int32_t>{6}));
    MaxGramParams recent;
    recent.prefer_recent = true;
    auto right           = maxgram_propose(ctx, 1, nullptr, recent);
    EXPECT_EQ(right.tokens, (std::vector<int32_t>{7}));
}

TEST(MaxGram, PeriodicModeExtendsARepeatingPatternIntoItsOwnProposal) {
    std::vector<int32_t> ctx = {1, 2, 1, 2, 1};
    MaxGramParams periodic;
    periodic.mode = MaxGramMode::periodic;
    auto p        = maxgram_propose(ctx, 5, nullptr, periodic);
    EXPECT_EQ(p.tokens, (std::vector<int32_t>{2, 1, 2, 1, 2}));
}

TEST(MaxGram, CsDraftingCopiesOnlyFromTheContextInTwoStagesThenTheBigram) {
    // Stage 1 finds "1 2 1" ending at 3 in the source {1 2 1 2} and copies to that source's end: {2}. Stage 2
    // searches {1 2 1 2 1 2} less its last token with the new suffix and copies {1}. Nothing runs into the proposal.
    std::vector<int32_t> ctx = {1, 2, 1, 2, 1};
    auto p                   = maxgram_propose(ctx, 5, nullptr);
    EXPECT_EQ(p.tokens, (std::vector<int32_t>{2, 1}));
    EXPECT_EQ(p.match_length, 3);
    EXPECT_EQ(p.match_end, 3);
    EXPECT_EQ(p.n_stage1, 1);
    EXPECT_EQ(p.n_stage2, 1);
    // The bigram table fills the rest after both copies.
    BigramTable t = BigramTable::build({{1, 2, 1, 2}}, 4);
    auto f        = maxgram_propose(ctx, 5, &t);
    EXPECT_EQ(f.tokens, (std::vector<int32_t>{2, 1, 2, 1, 2}));
    EXPECT_EQ(f.sources, (std::vector<MaxGramSource>{MaxGramSource::copy, MaxGramSource::copy, MaxGramSource::bigram,
                                                     MaxGramSource::bigram, MaxGramSource::bigram}));
}

TEST(MaxGram, CsDraftingSecondStageCopiesSeveralTokens) {
    // Stage 1: "7 8 9 5 7" at [0, 5) -> copies 8 9 5 (up to the source's end, the committed tokens less the last).
    // Stage 2: the extended sequence ends "... 7 8 9 5"; its longest earlier match ends at 8 -> copies 7 8 9.
    std::vector<int32_t> ctx = {7, 8, 9, 5, 7, 8, 9, 5, 7};
    auto p                   = maxgram_propose(ctx, 6, nullptr);
    EXPECT_EQ(p.tokens, (std::vector<int32_t>{8, 9, 5, 7, 8, 9}));
    EXPECT_EQ(p.n_stage1, 3);
    EXPECT_EQ(p.n_stage2, 3);
    // A short request stops in stage 1.
    auto q = maxgram_propose(ctx, 2, nullptr);
    EXPECT_EQ(q.tokens, (std::vector<int32_t>{8, 9}));
    EXPECT_EQ(q.n_stage2, 0);
}

TEST(MaxGram, CsDraftingMatchEndingAtTheLastSourceTokenCopiesNothing) {
    // {3 3}: the suffix "3" occurs only at [0, 1), whose continuation is the context's last token, outside the
    // source. The paper's code copies nothing there (its concatenated source aside); so do we.
    auto p = maxgram_propose(std::vector<int32_t>{3, 3}, 4, nullptr);
    EXPECT_EQ(p.match_end, 1);
    EXPECT_TRUE(p.tokens.empty());
}

TEST(MaxGram, FallsBackToBigramChain) {
    BigramTable t = BigramTable::build({{1, 2, 3, 1, 2, 4, 1, 2, 3}}, 8);
    EXPECT_EQ(t.successor(1), 2);
    EXPECT_EQ(t.successor(2), 3);  // 2->3 twice, 2->4 once
    EXPECT_EQ(t.successor(7), -1);
    std::vector<int32_t> ctx = {6, 1};  // 1 never occurred earlier: no copy
    auto p                   = maxgram_propose(ctx, 4, &t);
    EXPECT_EQ(p.match_length, 0);
    EXPECT_EQ(p.tokens, (std::vector<int32_t>{2, 3, 1, 2}));
    for (auto s : p.sources) EXPECT_EQ(s, MaxGramSource::bigram);
    MaxGramParams no_fill;
    no_fill.bigram_fill = false;
    EXPECT_TRUE(maxgram_propose(ctx, 4, &t, no_fill).tokens.empty());
}

TEST(MaxGram, StopsWhenNothingIsKnown) {
    BigramTable t = BigramTable::build({{1, 2}}, 4);
    auto p        = maxgram_propose(std::vector<int32_t>{3}, 4, &t);
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
        auto [len, end]      = maxgram_longest_match_ref(ctx, params);
        auto p               = maxgram_propose(ctx, 4, nullptr, params);
        ASSERT_EQ(p.match_length, len) << "trial " << trial;
        ASSERT_EQ(p.match_end, end) << "trial " << trial;

        // csdrafting, by brute force: copy after the first match up to the source's end (the context less its
        // last token), then search the extended sequence again and copy up to its source's end.
        std::vector<int32_t> want;
        const int64_t n = int64_t(ctx.size());
        for (int64_t i = end; end >= 0 && i < n - 1 && want.size() < 4; ++i) want.push_back(ctx[size_t(i)]);
        if (end >= 0 && want.size() < 4) {
            std::vector<int32_t> seq = ctx;
            seq.insert(seq.end(), want.begin(), want.end());
            auto [len2, end2] = maxgram_longest_match_ref(seq, params);
            for (int64_t i = end2; end2 >= 0 && i < int64_t(seq.size()) - 1 && want.size() < 4; ++i)
                want.push_back(seq[size_t(i)]);
        }
        ASSERT_EQ(p.tokens, want) << "trial " << trial;

        MaxGramParams periodic = params;
        periodic.mode          = MaxGramMode::periodic;
        auto q                 = maxgram_propose(ctx, 4, nullptr, periodic);
        if (end >= 0) {
            ASSERT_EQ(q.tokens.size(), 4u);
            ASSERT_EQ(q.tokens[0], ctx[size_t(end)]);
        } else {
            ASSERT_TRUE(q.tokens.empty());
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
    p.min_match      = 2;
    p.max_match      = 9;
    p.prefer_recent  = true;
    p.bigram_fill    = false;
    p.mode           = MaxGramMode::periodic;
    nlohmann::json j = p;
    EXPECT_EQ(j["mode"], "periodic");
    EXPECT_EQ(j.get<MaxGramParams>(), p);
    EXPECT_THROW((nlohmann::json{{"mode", "wraparound"}}.get<MaxGramParams>()), std::invalid_argument);
    EXPECT_EQ(nlohmann::json::object().get<MaxGramParams>(), MaxGramParams{});
}
