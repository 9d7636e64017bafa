// The mixture-of-experts term of the roofline (issue #49): a pass of n tokens reads the union of the experts they
// route to. Closed form against a simulation, bytes against the dense model, validation, and the term against what
// real passes of a synthetic qwen3moe model read.
#include "core/analytic/checks.h"
#include "core/analytic/cost.h"
#include "core/hw/profile.h"
#include "core/model/forward.h"
#include "core/model/sampler.h"
#include "core/model/synthetic.h"
#include "model_fixtures.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

using namespace speculum;
using namespace speculum::analytic;

TEST(AnalyticMoe, DistinctExpertsClosedFormAgainstSimulation) {
    EXPECT_DOUBLE_EQ(expected_distinct_experts(128, 8, 1), 8.0);
    EXPECT_DOUBLE_EQ(expected_distinct_experts(128, 8, 0), 0.0);
    EXPECT_NEAR(expected_distinct_experts(128, 8, 1000), 128.0, 1e-9);
    EXPECT_DOUBLE_EQ(expected_distinct_experts(8, 8, 3), 8.0) << "every expert used by every token";
    // Uniform routing simulated: k tokens each draw 8 distinct of 128.
    model::Rng rng(7);
    for (const int k : {2, 4, 8, 16}) {
        double sum     = 0;
        const int runs = 4000;
        std::vector<int> all(128);
        for (int r = 0; r < runs; ++r) {
            std::set<int> seen;
            for (int t = 0; t < k; ++t) {
                std::iota(all.begin(), all.end(), 0);
                for (int j = 0; j < 8; ++j) {  // partial Fisher-Yates
                    const int pick = j + int(rng.next_u64() % uint64_t(128 - j));
                    std::swap(all[size_t(j)], all[size_t(pick)]);
                    seen.insert(all[size_t(j)]);
                }
            }
            sum += double(seen.size());
        }
        EXPECT_NEAR(sum / runs, expected_distinct_experts(128, 8, k), 0.02 * expected_distinct_experts(128, 8, k))
            << "k = " << k;
    }
    // From a usage histogram: uniform usage gives the closed form; skewed usage fewer distinct experts.
    const std::vector<double> uniform(16, 4.0 / 16);
    EXPECT_NEAR(expected_distinct_experts(uniform, 5), expected_distinct_experts(16, 4, 5), 1e-12);
    std::vector<double> skew(16, 0.1);
    skew[0] = skew[1] = 0.9, skew[2] = 0.8;  // sums to 2.6 + 13 * 0.1 = 3.9
    EXPECT_LT(expected_distinct_experts(skew, 5), expected_distinct_experts(16, 4, 5));
    EXPECT_THROW(expected_distinct_experts(std::vector<double>{1.5}, 2), InvalidInput);
}

// A MoE target's verification gets dearer with k than a dense target of the same active size.
TEST(AnalyticMoe, VerificationBytesGrowWithTheUnionOfExperts) {
    ModelSpec dense;
    dense.params_b = 3.3, dense.weight_bits = 8.5, dense.n_layers = 48, dense.d_model = 2048, dense.kv_dim = 512;
    ModelSpec moe       = dense;  // Qwen3-30B-A3B-like: 3.3 B read per token, 29 B of experts, 8 of 128
    moe.expert_params_b = 29.0;
    moe.n_expert        = 128;
    moe.n_expert_used   = 8;
    EXPECT_NO_THROW(validate(moe, "target"));
    EXPECT_DOUBLE_EQ(weight_bytes(moe, 1), weight_bytes(moe));
    EXPECT_DOUBLE_EQ(weight_bytes(dense, 16), weight_bytes(dense));
    const double r8 = weight_bytes(moe, 8) / weight_bytes(moe, 1);
    // dense part 3.3 - 29 * 8/128 = 1.49 B; experts 29/128 B each, 8 of them at k = 1, 128 (1 - (15/16)^8) at 8
    const double expect = (1.4875 + 29.0 / 128 * expected_distinct_experts(128, 8, 8)) / 3.3;
    EXPECT_NEAR(r8, expect, 1e-9);
    EXPECT_GT(r8, 3.5);
    hw::HardwareProfile hw;
    hw.mem_bw_gbps = 50, hw.fp16_tflops = 1, hw.int8_tops = 2;
    EXPECT_GT(forward_cost(hw, moe, 8, 512).t_memory / forward_cost(hw, moe, 1, 512).t_memory,
              forward_cost(hw, dense, 8, 512).t_memory / forward_cost(hw, dense, 1, 512).t_memory + 2.5);
    ModelSpec bad     = moe;
    bad.n_expert_used = 200;
    EXPECT_THROW(validate(bad, "target"), InvalidInput);
    bad                 = moe;
    bad.expert_params_b = 100;  // 8 of 128 experts of 100 B = 6.25 B > the 3.3 B a token reads
    EXPECT_THROW(validate(bad, "target"), InvalidInput);
}

// The term against what passes of a synthetic qwen3moe model read. Tokens of one pass share a context and route
// alike, so independent draws from the usage histogram overestimate the union (on random weights by far); the
// sharing rho fitted on passes of 2 and 4 tokens predicts passes of 8 and 16 within 10 %.
TEST(AnalyticMoe, TermMatchesWhatPassesRead) {
    model::SyntheticSpec s = test::spec_arch("qwen3moe", kernels::GgmlType::F32);
    s.n_expert = 32, s.n_expert_used = 4, s.n_ff_exp = 16, s.n_layer = 2, s.n_vocab = 256, s.n_ctx = 256;
    const model::Model m     = model::make_synthetic_model(s);
    const model::Hparams& hp = m.hparams();
    model::Rng rng(3);
    std::vector<double> count(size_t(hp.n_expert), 0.0);
    double slots = 0;
    std::vector<std::pair<int, double>> seen;  // {k, mean distinct experts per layer}
    for (const int k : {2, 4, 8, 16}) {
        double distinct = 0;
        const int reps  = 24;
        for (int rep = 0; rep < reps; ++rep) {
            model::InferenceContext ctx(m, {.n_ctx = 64, .n_batch = 16});
            std::vector<int32_t> tok(static_cast<size_t>(k)), pos(static_cast<size_t>(k));
            for (int i = 0; i < k; ++i) tok[size_t(i)] = int32_t(rng.next_u64() % 256), pos[size_t(i)] = i;
            ctx.forward_batch(tok, pos);
            distinct += double(ctx.last_cost().experts_read) / hp.n_layer;
            for (int32_t il = 0; il < hp.n_layer; ++il)
                for (int32_t id : ctx.last_experts(il)) count[size_t(id)] += 1, slots += 1;
        }
        seen.push_back({k, distinct / reps});
    }
    std::vector<double> usage(count.size());
    for (size_t e = 0; e < usage.size(); ++e) usage[e] = count[e] / slots * hp.n_expert_used;
    const double rho = fit_expert_sharing(usage, {seen[0], seen[1]});
    EXPECT_GT(rho, 0.0);
    EXPECT_LE(rho, 1.0);
    for (size_t i = 2; i < seen.size(); ++i)
        EXPECT_NEAR(expected_distinct_experts(usage, seen[i].first, rho), seen[i].second, 0.10 * seen[i].second)
            << "k = " << seen[i].first << ", rho " << rho;
    EXPECT_DOUBLE_EQ(fit_expert_sharing(usage, {}), 1.0);
    EXPECT_NEAR(expected_distinct_experts(usage, 5, 1.0), expected_distinct_experts(usage, 5), 1e-12);
    EXPECT_NEAR(expected_distinct_experts(usage, 5, 0.0), expected_distinct_experts(usage, 1), 1e-12);
}
