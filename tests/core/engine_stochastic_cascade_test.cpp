// A stochastic target over a cascade still samples from the target's distribution: the cascade's levels draft
// greedily and the target verifies their tokens as one-hot drafts. Checked end to end through SpecEngine on an
// 8-token synthetic vocabulary (chi-square on the first generated token, and on the first two jointly), with a
// negative control: a drafter that drafts greedily but reports a sampling distribution biases the output, and the
// same test sees it.
#include "chi_square.h"
#include "engine_fixtures.h"

#include <gtest/gtest.h>

namespace speculum::test {
namespace {

using engine::SpecConfig;
using engine::SpecEngine;

constexpr int32_t kVocab     = 8;
constexpr int kRuns          = 3000;
constexpr double kChi2Crit7  = 24.32;  // chi-square, 7 degrees of freedom: P(X > 24.32) = 0.001
constexpr float kTemperature = 0.7f;
const std::vector<int32_t> kPrompt{1, 2, 3, 1, 2, 3, 4, 5, 1, 2};

model::SyntheticSpec tiny_spec(uint64_t seed) {
    model::SyntheticSpec s = engine_target_spec(2, seed);
    s.n_vocab = kVocab, s.n_embd = 32, s.n_ff = 64;
    return s;
}

double chi2(const std::vector<int>& counts, const std::vector<float>& p, int n) {
    double x = 0;
    for (size_t i = 0; i < p.size(); ++i) {
        const double e = p[i] * n;
        x += (counts[i] - e) * (counts[i] - e) / e;
    }
    return x;
}

// The target's distribution of the token after prompt ++ extra, at kTemperature.
std::vector<float> next_token_dist(const model::Model& m, const std::vector<int32_t>& extra = {}) {
    model::InferenceContext ctx(m, exact_ctx());
    std::vector<int32_t> seq = kPrompt;
    seq.insert(seq.end(), extra.begin(), extra.end());
    std::vector<float> last;
    for (size_t i = 0; i < seq.size(); ++i) {
        auto l = ctx.decode(seq[i], static_cast<int32_t>(i));
        last.assign(l.begin(), l.end());
    }
    return softmax(last, kTemperature);
}
std::vector<float> first_token_dist(const model::Model& m) {
    return next_token_dist(m);
}

// p(x1) p(x2 | x1) over the 64 pairs.
std::vector<double> first_two_dist(const model::Model& m) {
    const std::vector<float> p1 = first_token_dist(m);
    std::vector<double> out(size_t(kVocab * kVocab));
    for (int32_t a = 0; a < kVocab; ++a) {
        const std::vector<float> p2 = next_token_dist(m, {a});
        for (int32_t b = 0; b < kVocab; ++b) out[size_t(a * kVocab + b)] = double(p1[size_t(a)]) * p2[size_t(b)];
    }
    return out;
}

struct Counts {
    std::vector<int> first = std::vector<int>(kVocab, 0);
    std::vector<int> pairs = std::vector<int>(size_t(kVocab * kVocab), 0);
    int64_t accepted       = 0;
};

// Counts of the first committed token and of the first two over kRuns seeds; `make` builds the drafter of each run.
template <class MakeDrafter>
Counts committed_counts(const model::Model& target, SpecConfig c, MakeDrafter make) {
    Counts out;
    for (int s = 0; s < kRuns; ++s) {
        c.sampling.seed           = 1000 + static_cast<uint64_t>(s);
        const engine::RunResult r = SpecEngine(target, c, make()).run(kPrompt);
        EXPECT_EQ(r.tokens.size(), size_t(c.max_new_tokens));
        ++out.first[static_cast<size_t>(r.tokens.at(0))];
        ++out.pairs[static_cast<size_t>(r.tokens.at(0) * kVocab + r.tokens.at(1))];
        out.accepted += r.stats.n_accepted;
    }
    return out;
}
template <class MakeDrafter>
std::vector<int> first_token_counts(const model::Model& target, SpecConfig c, MakeDrafter make) {
    return committed_counts(target, c, make).first;
}

// A drafter that picks its tokens greedily but claims they were sampled from its distribution: the target then
// accepts with min(1, p/q) instead of p, which biases the output toward the draft's argmax. The negative control.
// (Hiding a sampled token's q, the opposite mistake, is harmless: a one-hot verification accepts d with p(d)
// whatever chose d, which is why a deterministic cascade under a stochastic target is exact.)
class GreedyClaimingSampler : public ContextDrafter {
public:
    using ContextDrafter::ContextDrafter;
    drafts::DraftChain propose(int32_t k, const drafts::ProposeParams& p, const CancelToken& cancel) override {
        drafts::ProposeParams greedy = p;
        greedy.temperature           = 0.0f;  // argmax tokens; q_dist is still the softmax at temperature 1
        return ContextDrafter::propose(k, greedy, cancel);
    }
};

TEST(EngineStochasticCascade, FirstTokenFollowsTheTarget) {
    const model::Model target        = model::make_synthetic_model(tiny_spec(31));
    const model::Model drafter_model = model::make_synthetic_model(tiny_spec(77));  // a different model
    const std::vector<float> p       = first_token_dist(target);

    SpecConfig c;
    c.levels.resize(2);
    c.gamma                = {3, 2};
    c.max_new_tokens       = 2;  // one drafted token, then the target's correction or bonus
    c.context              = exact_ctx();
    c.baseline             = false;
    c.sampling.temperature = kTemperature;
    ASSERT_NO_THROW(c.validate());
    const auto cascade = [&] {
        std::vector<engine::LevelMaterial> m(2);
        m[0] = {std::make_shared<ContextDrafter>(drafter_model), &drafter_model, {}, "other model", {}};
        m[1] = {std::make_shared<ContextMaxGram>(kVocab), nullptr, {}, "max-gram", {}};
        return std::shared_ptr<drafts::Drafter>(engine::build_draft_stack(c, m));
    };
    const std::vector<int> vertical = first_token_counts(target, c, cascade);
    EXPECT_LT(chi2(vertical, p, kRuns), kChi2Crit7) << "vertical cascade";

    // The first two tokens jointly, with room for two drafted positions in the first step, so that the second token
    // is often an accepted draft (or the correction after one).
    SpecConfig two     = c;
    two.max_new_tokens = 3;
    const Counts joint = committed_counts(target, two, cascade);
    const ChiSquare j  = chi_square(joint.pairs, first_two_dist(target), kRuns);
    EXPECT_GT(j.dof, 8) << "too few cells with an expected count of 5 for the joint test to mean much";
    EXPECT_TRUE(j.passes()) << "vertical cascade, first two tokens: chi2 " << j.statistic << " >= " << j.critical();
    EXPECT_GT(joint.accepted, kRuns / 10) << "the cascade's drafts must be accepted for this to test acceptance";

    // Negative control: one level whose q_dist lies about how its tokens were chosen. Same target, same seeds, same
    // statistic.
    SpecConfig one = c;
    one.levels.resize(1);
    one.gamma = {1};
    const std::vector<int> biased =
        first_token_counts(target, one, [&] { return std::make_shared<GreedyClaimingSampler>(drafter_model); });
    EXPECT_GT(chi2(biased, p, kRuns), 10 * kChi2Crit7) << "the control must be detected as biased";
    // And the honest single-level sampler (q reported) is exact again.
    const std::vector<int> honest =
        first_token_counts(target, one, [&] { return std::make_shared<ContextDrafter>(drafter_model); });
    EXPECT_LT(chi2(honest, p, kRuns), kChi2Crit7) << "single sampled level";
}

}  // namespace
}  // namespace speculum::test
