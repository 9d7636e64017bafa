// The k-matrix (vertical + horizontal) cascade: its special cases (Thm. 4.5, Cor. 4.2, the vertical cascade with
// one SD step), the Monte Carlo simulation of both modes within statistical tolerance, and invalid inputs.
#include "core/analytic/checks.h"
#include "core/analytic/csdrafting.h"
#include "core/analytic/kmatrix.h"
#include "core/analytic/montecarlo.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace speculum::analytic;

namespace {
constexpr int64_t kRounds = 100000;
constexpr double kSigmas  = 4.0;  // a correct closed form fails this about once in 16,000 runs per check
#define EXPECT_WITHIN_SE(stats, value)                                    \
    EXPECT_NEAR((stats).mean, (value), kSigmas*(stats).std_error + 1e-12) \
        << "MC " << (stats).mean << " ± " << (stats).std_error << " vs closed form " << (value)

// The paper's 3-model FLAN-T5 ladder (BASE, SMALL, Max-Gram) with its MMLU k-matrix [[5,14,10],[0,1,10],[0,0,10]]
// in the code's increments, model-size costs (220/11300, 60/11300) and plausible (assumed) acceptance rates.
KMatrixCascade paper_ladder(KMatrixMode mode) {
    KMatrixCascade m;
    m.k     = {{0, 5, 14, 10}, {0, 0, 1, 10}, {0, 0, 0, 10}, {0, 0, 0, 0}};
    m.alpha = {{0, 0.75, 0.65, 0.3}, {0, 0, 0.7, 0.4}, {0, 0, 0, 0.35}, {0, 0, 0, 0}};
    m.c     = {220.0 / 11300, 60.0 / 11300, 0.0};
    m.block = {1, 1, 10};
    m.mode  = mode;
    return m;
}
}  // namespace

TEST(KMatrix, LeavesOnlyIsTheHorizontalCascade) {
    // Row 0 only: positions come straight from leaf models (one pass per token), which is Thm. 4.5 exactly.
    KMatrixCascade m;
    m.k        = {{0, 5, 3}, {0, 0, 0}, {0, 0, 0}};
    m.alpha    = {{0, 0.73, 0.65}, {0, 0, 0}, {0, 0, 0}};
    m.c        = {0.0220, 0.0069};
    m.block    = {1, 1};
    auto r     = kmatrix_cascade(m);
    double thm = horizontal_cascade(std::vector<HorizontalSegment>{{0.73, 0.0220, 5}, {0.65, 0.0069, 3}});
    EXPECT_NEAR(r.ewif, thm, 1e-12);
    EXPECT_NEAR(r.ewif, 3.0269, 5e-5);  // CS Drafting Table 1, CNNDM BASE(5)+SMALL(3): 3.03
    EXPECT_NEAR(r.work[1].units, 5, 1e-12);
    EXPECT_NEAR(r.work[2].units, 3, 1e-12);
    // One leaf is Cor. 4.2.
    m.k[0] = {0, 8, 0};
    EXPECT_NEAR(kmatrix_cascade(m).ewif, ewif_sd(0.73, 0.0220, 8), 1e-12);
    // The threshold mode with block-1 leaves drafts exactly the thresholds as well.
    m.k[0] = {0, 5, 3};
    m.mode = KMatrixMode::threshold;
    EXPECT_NEAR(kmatrix_cascade(m).ewif, thm, 1e-12);
}

TEST(KMatrix, ThresholdOneIsOneVerticalStep) {
    // Target threshold 1 over level 1 = exactly one SD step of level 1 over a 10-token Max-Gram block, which is
    // the vertical cascade with n = 1 (Thm. 4.3's process).
    KMatrixCascade m;
    m.k     = {{0, 1, 0}, {0, 0, 10}, {0, 0, 0}};
    m.alpha = {{0, 0.8, 0}, {0, 0, 0.5}, {0, 0, 0}};
    m.c     = {0.05, 0.0};
    m.block = {1, 10};
    m.mode  = KMatrixMode::threshold;
    auto r  = kmatrix_cascade(m);
    auto v  = vertical_cascade({{{0.8}, 0.05, 1}, max_gram_level(0.5)});
    EXPECT_NEAR(r.expected_tokens, v.expected_tokens, 1e-12);
    EXPECT_NEAR(r.cost, v.cost, 1e-12);
    EXPECT_NEAR(r.expected_tokens, ewif_vertical_two_level(0.8, 0.5, 10, 1, 0.05, 0) * v.cost, 1e-12);
    ASSERT_EQ(r.draft_length_distribution.size(), v.draft_length_distribution.size());
    for (size_t l = 0; l < r.draft_length_distribution.size(); ++l)
        EXPECT_NEAR(r.draft_length_distribution[l], v.draft_length_distribution[l], 1e-12) << l;
}

TEST(KMatrix, TruncateDraftsExactlyAndCountsSteps) {
    // A vertical engine cascade: the target asks level 1 for 6 tokens; level 1 runs SD steps over 3-token Max-Gram
    // drafts, each cut to what is still needed. With α = 1 every step yields its whole draft + 1:
    // 6 tokens = steps of 3+1 then 1+1 → 2 steps, 2 Max-Gram calls (3 and 1 tokens).
    KMatrixCascade m;
    m.k     = {{0, 6, 0}, {0, 0, 3}, {0, 0, 0}};
    m.alpha = {{0, 0.6, 0}, {0, 0, 1.0}, {0, 0, 0}};
    m.c     = {0.1, 0.0};
    m.block = {1, 0};
    auto r  = kmatrix_cascade(m);
    EXPECT_NEAR(r.work[1].units, 2, 1e-12);
    EXPECT_NEAR(r.work[1].calls, 1, 1e-12);
    EXPECT_NEAR(r.work[2].calls, 2, 1e-12);
    EXPECT_NEAR(r.work[1].reviewed, 4, 1e-12);
    EXPECT_NEAR(r.expected_tokens, expected_tokens_chain(expand_positions({0.6}, 6, "a")), 1e-12);
    EXPECT_NEAR(r.cost, 1.2, 1e-12);
    // α = 0 at level 1: every step yields one token, so 6 steps, the last with an empty draft (5 drafts).
    m.alpha[1][2] = 0.0;
    r             = kmatrix_cascade(m);
    EXPECT_NEAR(r.work[1].units, 6, 1e-12);
    EXPECT_NEAR(r.work[2].calls, 5, 1e-12);
    EXPECT_NEAR(r.work[1].accepted, 0, 1e-12);
}

TEST(KMatrix, GenerationModelsTheTail) {
    // A chain with k = 4 over 9 tokens at α = 1: steps of 5, then 4 tokens (draft cut to 3): 2 steps, 7 drafted.
    KMatrixCascade m;
    m.k     = {{0, 4}, {0, 0}};
    m.alpha = {{0, 1.0}, {0, 0}};
    m.c     = {0.1};
    m.block = {1};
    auto g  = kmatrix_generation(m, 9);
    EXPECT_NEAR(g.work[0].units, 2, 1e-12);
    EXPECT_NEAR(g.work[0].reviewed, 7, 1e-12);
    EXPECT_NEAR(g.work[1].units, 7, 1e-12);
    EXPECT_NEAR(g.cost, 2 + 0.7, 1e-12);
    // Long generations approach N / E[tokens per step] steps.
    m.alpha[0][1] = 0.7;
    auto one      = kmatrix_cascade(m);
    auto long_run = kmatrix_generation(m, 4000);
    EXPECT_NEAR(long_run.work[0].units / (4000 / one.expected_tokens), 1.0, 2e-3);
    EXPECT_THROW(kmatrix_generation(m, 0), InvalidInput);
}

TEST(KMatrix, ClosedFormsMatchMonteCarlo) {
    for (auto mode : {KMatrixMode::truncate, KMatrixMode::threshold}) {
        auto m  = paper_ladder(mode);
        auto r  = kmatrix_cascade(m);
        auto mc = mc_kmatrix_cascade(m, kRounds, mode == KMatrixMode::truncate ? 11 : 12);
        EXPECT_WITHIN_SE(mc.tokens, r.expected_tokens);
        EXPECT_WITHIN_SE(mc.cost, r.cost);
    }
    // Per-position target acceptance (truncate) and a deeper horizontal row at an intermediate level.
    KMatrixCascade m;
    m.k            = {{0, 3, 2, 0}, {0, 0, 2, 2}, {0, 0, 0, 4}, {0, 0, 0, 0}};
    m.alpha        = {{0, 0.8, 0.5, 0}, {0, 0, 0.6, 0.4}, {0, 0, 0, 0.3}, {0, 0, 0, 0}};
    m.c            = {0.2, 0.05, 0.01};
    m.block        = {1, 1, 0};
    m.target_alpha = {0.95, 0.8, 0.7, 0.5, 0.3};
    auto r         = kmatrix_cascade(m);
    auto mc        = mc_kmatrix_cascade(m, kRounds, 13);
    EXPECT_WITHIN_SE(mc.tokens, r.expected_tokens);
    EXPECT_WITHIN_SE(mc.cost, r.cost);
    EXPECT_NEAR(r.expected_tokens, expected_tokens_chain(m.target_alpha), 1e-12);
    m.target_alpha.clear();
    m.mode  = KMatrixMode::threshold;
    m.block = {1, 1, 3};
    r       = kmatrix_cascade(m);
    mc      = mc_kmatrix_cascade(m, kRounds, 14);
    EXPECT_WITHIN_SE(mc.tokens, r.expected_tokens);
    EXPECT_WITHIN_SE(mc.cost, r.cost);
    // The simulator tells the modes apart: overshooting thresholds give longer drafts than truncation.
    auto t = kmatrix_cascade(paper_ladder(KMatrixMode::truncate));
    auto h = mc_kmatrix_cascade(paper_ladder(KMatrixMode::threshold), kRounds, 15);
    EXPECT_GT(h.tokens.mean - t.expected_tokens, 5 * h.tokens.std_error);
}

TEST(KMatrix, PaperLadderBeatsItsParts) {
    // Modeled: under the assumed α the 3-model cascade beats BASE-only SD at its best k, as Table 2 reports.
    auto full = kmatrix_cascade(paper_ladder(KMatrixMode::threshold));
    double sd = ewif_sd(0.75, 220.0 / 11300, best_k_sd({0.75}, 220.0 / 11300, 30));
    EXPECT_GT(full.ewif, sd);
    double total = 0;
    for (double p : full.draft_length_distribution) total += p;
    EXPECT_NEAR(total, 1.0, 1e-9);
}

TEST(KMatrix, InvalidInputsNameTheField) {
    auto m            = paper_ladder(KMatrixMode::truncate);
    auto ok           = m;
    auto expect_error = [](const KMatrixCascade& bad, const std::string& field) {
        try {
            kmatrix_cascade(bad);
            ADD_FAILURE() << "accepted; expected an error naming " << field;
        } catch (const InvalidInput& e) {
            EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
        }
    };
    m.k[1][0] = 2;
    expect_error(m, "kmatrix.k[1][0]");
    m             = ok;
    m.alpha[0][1] = 1.5;
    expect_error(m, "kmatrix.alpha[0][1]");
    m      = ok;
    m.c[2] = -1;
    expect_error(m, "kmatrix.levels[2].c");
    m      = ok;
    m.k[0] = {0, 0, 0, 0};
    expect_error(m, "kmatrix.k[0]");
    m = ok;
    m.k.pop_back();
    expect_error(m, "kmatrix.alpha");
    m          = ok;
    m.mode     = KMatrixMode::threshold;
    m.block[2] = 0;  // a threshold-mode leaf that adds nothing would loop forever
    expect_error(m, "kmatrix.levels[2].block");
    m              = ok;
    m.target_alpha = {0.5, -0.1};
    expect_error(m, "kmatrix.target_alpha[1]");
    m       = ok;
    m.mode  = KMatrixMode::threshold;
    m.k[1]  = {0, 0, 600, 0};  // level 1 drafts over 600 tokens per review: past the modeled 512
    m.block = {1, 1, 10};
    expect_error(m, "512");
    m         = ok;
    m.k[0][1] = 2000;
    expect_error(m, "kmatrix.k[0][1]");
}

// A vertical chain as the engine runs it: each level drafts `steps` for the one above; a Max-Gram leaf costs nothing.
TEST(KMatrix, VerticalChainAsTheEngineRunsIt) {
    const KMatrixCascade km = vertical_chain_kmatrix({{0.7, 0.1, 4, false}, {0.5, 0.3, 8, true}});
    EXPECT_EQ(km.mode, KMatrixMode::truncate);
    EXPECT_EQ(km.k, (std::vector<std::vector<int>>{{0, 4, 0}, {0, 0, 8}, {0, 0, 0}}));
    EXPECT_DOUBLE_EQ(km.alpha[0][1], 0.7);
    EXPECT_DOUBLE_EQ(km.alpha[1][2], 0.5);
    EXPECT_EQ(km.c, (std::vector<double>{0.1, 0.0}));
    EXPECT_EQ(km.block, (std::vector<int>{1, 0}));
    EXPECT_NO_THROW(validate(km));
    // One level is plain chain speculative decoding: E[tokens per target pass] = (1 − α^(γ+1)) / (1 − α).
    const KMatrixResult r = kmatrix_cascade(vertical_chain_kmatrix({{0.6, 0.1, 3, false}}));
    EXPECT_NEAR(r.expected_tokens, (1 - std::pow(0.6, 4)) / (1 - 0.6), 1e-12);
}
