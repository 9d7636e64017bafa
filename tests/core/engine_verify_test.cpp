// Verification rules on explicit distributions: greedy and lenient acceptance, and stochastic verification that
// preserves the target distribution (chi-square on an 8-token vocabulary, seeded) for single positions, chains
// and trees — with a negative control showing the same test rejects a wrong rule.
#include "core/engine/verify.h"

#include "chi_square.h"

#include <gtest/gtest.h>

#include <cmath>

namespace speculum::engine {
namespace {

using test::chi_square;
using test::ChiSquare;

constexpr int kTrials = 40000;
// chi-square with 7 degrees of freedom: P(X > 24.32) = 0.001.
constexpr double kChi2Crit7 = 24.32;

const std::vector<float> kP{0.30f, 0.05f, 0.20f, 0.10f, 0.02f, 0.13f, 0.15f, 0.05f};
const std::vector<float> kQ{0.05f, 0.30f, 0.10f, 0.20f, 0.15f, 0.05f, 0.05f, 0.10f};

double chi2(const std::vector<int>& counts, const std::vector<float>& p, int n) {
    double x = 0;
    for (size_t i = 0; i < p.size(); ++i) {
        const double e = p[i] * n;
        x += (counts[i] - e) * (counts[i] - e) / e;
    }
    return x;
}

int32_t draw(const std::vector<float>& w, model::Rng& rng) {
    return sample_unnormalised(w, rng);
}

std::vector<float> log_of(const std::vector<float>& p) {
    std::vector<float> l(p.size());
    for (size_t i = 0; i < p.size(); ++i) l[i] = std::log(p[i]);
    return l;
}

model::LogitsView view(const std::vector<float>& rows, int32_t n_vocab) {
    return {rows.data(), static_cast<int32_t>(rows.size()) / n_vocab, n_vocab};
}

TEST(EngineVerify, GreedyChainAcceptsTheArgmaxPrefix) {
    // Rows: argmax 2, 5, 1, 7.
    std::vector<float> rows(4 * 8, 0.0f);
    rows[0 * 8 + 2] = rows[1 * 8 + 5] = rows[2 * 8 + 1] = rows[3 * 8 + 7] = 5.0f;
    const std::vector<int32_t> draft{2, 5, 3};
    ChainVerdict v = verify_chain_greedy(draft, view(rows, 8));
    EXPECT_EQ(v.n_accepted, 2);
    EXPECT_EQ(v.next_token, 1);
    EXPECT_EQ(v.next_kind, TokenKind::corrected);
    const std::vector<int32_t> all{2, 5, 1};
    v = verify_chain_greedy(all, view(rows, 8));
    EXPECT_EQ(v.n_accepted, 3);
    EXPECT_EQ(v.next_token, 7);
    EXPECT_EQ(v.next_kind, TokenKind::bonus);
    EXPECT_THROW(verify_chain_greedy(std::vector<int32_t>{1, 2, 3, 4}, view(rows, 8)), std::invalid_argument);
}

TEST(EngineVerify, LenienceAcceptsLikelyNonArgmaxTokens) {
    const std::vector<float> p{0.4f, 0.3f, 0.1f, 0.1f, 0.05f, 0.03f, 0.01f, 0.01f};
    std::vector<float> rows = log_of(p);
    rows.insert(rows.end(), rows.begin(), rows.end());
    const std::vector<int32_t> draft{1};
    const std::vector<float> q{1.0f};
    EXPECT_EQ(verify_chain_greedy(draft, view(rows, 8), q, 1.0f).n_accepted, 0);
    EXPECT_EQ(verify_chain_greedy(draft, view(rows, 8), q, 4.0f).n_accepted, 1);  // 0.3 > 1 / 4
    EXPECT_EQ(verify_chain_greedy(draft, view(rows, 8), q, 3.0f).n_accepted, 0);  // 0.3 < 1 / 3
    EXPECT_NEAR(softmax_at(std::span<const float>(rows).first(8), 1), 0.3, 1e-6);
}

TEST(EngineVerify, StochasticPositionPreservesTheTarget) {
    model::Rng rng(123);
    std::vector<float> scratch;
    std::vector<int> counts(8, 0), draft_counts(8, 0), one_hot_counts(8, 0);
    for (int i = 0; i < kTrials; ++i) {
        const int32_t d = draw(kQ, rng);
        ++draft_counts[static_cast<size_t>(d)];
        ++counts[static_cast<size_t>(verify_position_stochastic(kP, kQ, d, rng, scratch).token)];
        // A deterministic drafter always proposing token 1 (q = one-hot): still distributed as p.
        ++one_hot_counts[static_cast<size_t>(verify_position_stochastic(kP, {}, 1, rng, scratch).token)];
    }
    EXPECT_LT(chi2(counts, kP, kTrials), kChi2Crit7);
    EXPECT_LT(chi2(one_hot_counts, kP, kTrials), kChi2Crit7);
    // Negative control: the draft's own distribution fails the same test by a wide margin.
    EXPECT_GT(chi2(draft_counts, kP, kTrials), 100 * kChi2Crit7);
}

TEST(EngineVerify, LenientStochasticIsNotTheTarget) {
    model::Rng rng(7);
    std::vector<float> scratch;
    std::vector<int> counts(8, 0);
    for (int i = 0; i < kTrials; ++i)
        ++counts[static_cast<size_t>(verify_position_stochastic(kP, kQ, draw(kQ, rng), rng, scratch, 3.0f).token)];
    EXPECT_GT(chi2(counts, kP, kTrials), kChi2Crit7);  // lenience trades exactness for acceptance
}

TEST(EngineVerify, StochasticChainFirstTokenIsDistributedAsTarget) {
    // Two positions; the first committed token must follow p0 whatever happens after it.
    const std::vector<float> p1{0.1f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f, 0.2f, 0.2f};
    std::vector<float> rows = log_of(kP);
    for (float x : log_of(p1)) rows.push_back(x);
    for (float x : log_of(kP)) rows.push_back(x);
    model::Sampler sampler({.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .seed = 99});
    model::Rng rng(5);
    std::vector<int> counts(8, 0);
    int accepted_both = 0;
    for (int i = 0; i < kTrials; ++i) {
        const std::vector<int32_t> d{draw(kQ, rng), draw(kQ, rng)};
        const ChainVerdict v = verify_chain_stochastic(d, view(rows, 8), {kQ, kQ}, sampler);
        ++counts[static_cast<size_t>(v.n_accepted > 0 ? d[0] : v.next_token)];
        accepted_both += v.n_accepted == 2;
    }
    EXPECT_LT(chi2(counts, kP, kTrials), kChi2Crit7);
    EXPECT_GT(accepted_both, 0);
}

TEST(EngineVerify, StochasticTreeFirstTokenIsDistributedAsTarget) {
    // Root with three candidate children (tokens 1, 4, 6) and one grandchild under token 1.
    drafts::DraftTree tree;
    tree.tokens = {1, 4, 6, 0};
    tree.parent = {-1, -1, -1, 0};
    tree.depth  = {1, 1, 1, 2};
    tree.rank   = {0, 1, 2, 0};
    std::vector<float> rows;
    for (int r = 0; r < 5; ++r)
        for (float x : log_of(kP)) rows.push_back(x);
    model::Sampler sampler({.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .seed = 3});
    std::vector<int> counts(8, 0);
    int deep = 0;
    for (int i = 0; i < kTrials; ++i) {
        const TreeVerdict v = verify_tree_stochastic(tree, view(rows, 8), sampler);
        ++counts[static_cast<size_t>(v.path.empty() ? v.next_token : tree.tokens[static_cast<size_t>(v.path[0])])];
        deep += v.path.size() == 2;
    }
    EXPECT_LT(chi2(counts, kP, kTrials), kChi2Crit7);
    EXPECT_GT(deep, 0);
}

// Joint tests: the first two committed tokens must follow p(x1) p(x2 | x1) on a target whose second-position
// distribution depends on the first token, through as many verification steps as it takes (a rejection at the first
// position commits one token; the next step drafts again, as the engine does). 64 cells; a rule that gets the
// first token right and the second wrong passes the first-token tests above but not these.
const std::vector<float> kCondA{0.10f, 0.10f, 0.10f, 0.10f, 0.10f, 0.10f, 0.20f, 0.20f};
const std::vector<float> kCondB{0.05f, 0.15f, 0.02f, 0.13f, 0.10f, 0.20f, 0.05f, 0.30f};
const std::vector<float>& cond(int32_t x1) {
    return x1 < 4 ? kCondA : kCondB;
}

std::vector<double> joint_expected() {
    std::vector<double> e(64);
    for (int a = 0; a < 8; ++a)
        for (int b = 0; b < 8; ++b) e[size_t(a * 8 + b)] = double(kP[size_t(a)]) * cond(a)[size_t(b)];
    return e;
}

std::vector<float> rows_of(std::initializer_list<const std::vector<float>*> ps) {
    std::vector<float> rows;
    for (const auto* p : ps)
        for (float x : log_of(*p)) rows.push_back(x);
    return rows;
}

// The second token when the first step committed only x1: a fresh one-token draft from q, verified against
// p(. | x1).
int32_t next_step(int32_t x1, model::Rng& rng, model::Sampler& sampler) {
    const std::vector<int32_t> e{draw(kQ, rng)};
    const ChainVerdict v = verify_chain_stochastic(e, view(rows_of({&cond(x1), &kP}), 8), {kQ}, sampler);
    return v.n_accepted > 0 ? e[0] : v.next_token;
}

// Runs kTrials two-position chains drafted from q, whose second position's q_dist is `claimed_q1` (kQ when honest).
std::pair<std::vector<int>, std::vector<int>> chain_joint_counts(const std::vector<float>& claimed_q1, uint64_t seed) {
    model::Sampler sampler({.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .seed = seed});
    model::Rng rng(seed + 1);
    std::vector<int> joint(64, 0), first(8, 0);
    for (int i = 0; i < kTrials; ++i) {
        const std::vector<int32_t> d{draw(kQ, rng), draw(kQ, rng)};
        const ChainVerdict v =
            verify_chain_stochastic(d, view(rows_of({&kP, &cond(d[0]), &kP}), 8), {kQ, claimed_q1}, sampler);
        const int32_t x1 = v.n_accepted > 0 ? d[0] : v.next_token;
        const int32_t x2 = v.n_accepted > 1 ? d[1] : v.n_accepted == 1 ? v.next_token : next_step(x1, rng, sampler);
        ++joint[size_t(x1 * 8 + x2)];
        ++first[size_t(x1)];
    }
    return {joint, first};
}

TEST(EngineVerify, StochasticChainFirstTwoTokensFollowTheTargetJointly) {
    const auto [joint, first] = chain_joint_counts(kQ, 41);
    const ChiSquare j         = chi_square(joint, joint_expected(), kTrials);
    EXPECT_EQ(j.dof, 63);
    EXPECT_TRUE(j.passes()) << "chi2 " << j.statistic << " >= " << j.critical();

    // Negative control: the second position's q misreported as p's marginal. The first token is still exact (its q
    // is right), so a first-token test passes; the joint test must not.
    const auto [bad_joint, bad_first] = chain_joint_counts(kP, 41);
    EXPECT_LT(chi2(bad_first, kP, kTrials), kChi2Crit7);
    const ChiSquare b = chi_square(bad_joint, joint_expected(), kTrials);
    EXPECT_GT(b.statistic, 3 * b.critical()) << "the control must be detected as biased";
}

TEST(EngineVerify, StochasticTreeFirstTwoTokensFollowTheTargetJointly) {
    // Root children 1, 4, 6; a grandchild 0 under 1. The row after each node is p(. | that node's token).
    drafts::DraftTree tree;
    tree.tokens                   = {1, 4, 6, 0};
    tree.parent                   = {-1, -1, -1, 0};
    tree.depth                    = {1, 1, 1, 2};
    tree.rank                     = {0, 1, 2, 0};
    const std::vector<float> rows = rows_of({&kP, &cond(1), &cond(4), &cond(6), &kP});
    model::Sampler sampler({.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .seed = 17});
    model::Rng rng(18);
    std::vector<int> joint(64, 0);
    int deep = 0;
    for (int i = 0; i < kTrials; ++i) {
        const TreeVerdict v = verify_tree_stochastic(tree, view(rows, 8), sampler);
        int32_t x1 = 0, x2 = 0;
        if (v.path.empty()) {
            x1 = v.next_token;
            x2 = next_step(x1, rng, sampler);
        } else {
            x1 = tree.tokens[size_t(v.path[0])];
            x2 = v.path.size() > 1 ? tree.tokens[size_t(v.path[1])] : v.next_token;
        }
        deep += v.path.size() == 2;
        ++joint[size_t(x1 * 8 + x2)];
    }
    const ChiSquare j = chi_square(joint, joint_expected(), kTrials);
    EXPECT_EQ(j.dof, 63);
    EXPECT_TRUE(j.passes()) << "chi2 " << j.statistic << " >= " << j.critical();
    EXPECT_GT(deep, 0);
}

TEST(EngineVerify, GreedyTreeWalksTheArgmaxPath) {
    drafts::DraftTree tree;
    tree.tokens = {3, 5, 2, 7};
    tree.parent = {-1, -1, 1, 1};
    tree.depth  = {1, 1, 2, 2};
    tree.rank   = {0, 1, 0, 1};
    std::vector<float> rows(5 * 8, 0.0f);
    rows[0 * 8 + 5]     = 1;  // root -> 5 (node 1, rank 1)
    rows[2 * 8 + 7]     = 1;  // after node 1 -> 7 (node 3)
    rows[4 * 8 + 4]     = 1;  // after node 3 -> 4 (bonus: leaf)
    const TreeVerdict v = verify_tree_greedy(tree, view(rows, 8));
    EXPECT_EQ(v.path, (std::vector<int32_t>{1, 3}));
    EXPECT_EQ(v.rank, (std::vector<int32_t>{1, 1}));
    EXPECT_EQ(v.next_token, 4);
    EXPECT_EQ(v.next_kind, TokenKind::bonus);
}

}  // namespace
}  // namespace speculum::engine
