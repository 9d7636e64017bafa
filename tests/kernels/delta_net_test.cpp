// The Gated DeltaNet kernels (kernels/delta_net.h): the vectorized delta rule against its scalar reference over head
// sizes that are and are not multiples of the 8-lane sums, the rule itself on a hand-computed case, the causal
// convolution with SiLU, and the L2 normalization's floor.
#include "kernels/delta_net.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

using namespace speculum::kernels;

namespace {

// The fast rule sums each dot product in eight lanes, the reference in order in double; states and values of order 1.
constexpr double kDeltaRuleTol = 1e-5;

double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
    double d = 0;
    for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(double(a[i]) - double(b[i])));
    return d;
}

}  // namespace

TEST(DeltaNet, FastRuleEqualsReference) {
    std::mt19937 rng(3);
    std::normal_distribution<float> nd;
    for (const int32_t S : {1, 7, 16, 33, 128}) {
        const size_t n = static_cast<size_t>(S);
        std::vector<float> M(n * n), q(n), k(n), v(n);
        for (float& x : M) x = nd(rng);
        for (auto* vec : {&q, &k, &v})
            for (float& x : *vec) x = nd(rng);
        l2_normalize(q.data(), S, 1e-6f), l2_normalize(k.data(), S, 1e-6f);
        std::vector<float> M2 = M, o1(n), o2(n);
        delta_net_head_ref(S, M.data(), q.data(), k.data(), v.data(), -0.3f, 0.7f, o1.data());
        delta_net_head(S, M2.data(), q.data(), k.data(), v.data(), -0.3f, 0.7f, o2.data());
        EXPECT_LT(max_diff(M, M2), kDeltaRuleTol) << S;
        EXPECT_LT(max_diff(o1, o2), kDeltaRuleTol) << S;
    }
}

TEST(DeltaNet, TheRuleByHand) {
    // S = 1: M <- e^g M; d = beta (v - M k); M += d k; o = M q / sqrt(1).
    float M = 2.0f, q = 1.0f, k = 1.0f, v = 1.0f, o = 0.0f;
    delta_net_head_ref(1, &M, &q, &k, &v, std::log(0.5f), 0.5f, &o);
    EXPECT_NEAR(M, 1.0f, 1e-6);  // 2 * 0.5 = 1; d = 0.5 (1 - 1) = 0
    EXPECT_NEAR(o, 1.0f, 1e-6);
    M = 0.0f, v = 3.0f;  // an empty state moves by beta toward v: d = 0.5 * 3
    delta_net_head(1, &M, &q, &k, &v, 0.0f, 0.5f, &o);
    EXPECT_NEAR(M, 1.5f, 1e-6);
    EXPECT_NEAR(o, 1.5f, 1e-6);
}

TEST(DeltaNet, ConvolutionTakesTheWindowOldestFirstThenSiLU) {
    // Two channels, three taps: out[c] = silu(w0 x0 + w1 x1 + w2 x)
    const float w[6]  = {1, 2, 3, 0.5f, 0, -1};
    const float x0[2] = {1, 2}, x1[2] = {0, 4}, x[2] = {1, 1};
    const float* win[2] = {x0, x1};
    float out[2];
    causal_conv_silu(2, 3, w, win, x, out);
    auto silu = [](float z) { return z / (1.0f + std::exp(-z)); };
    EXPECT_FLOAT_EQ(out[0], silu(1 * 1 + 2 * 0 + 3 * 1));
    EXPECT_FLOAT_EQ(out[1], silu(0.5f * 2 + 0 * 4 - 1 * 1));
}

TEST(DeltaNet, L2NormalizeHasAFloor) {
    float v[2] = {3, 4};
    l2_normalize(v, 2, 1e-6f);
    EXPECT_FLOAT_EQ(v[0], 0.6f);
    EXPECT_FLOAT_EQ(v[1], 0.8f);
    float z[2] = {1e-9f, 0};  // below the floor: divided by eps, not by its tiny norm
    l2_normalize(z, 2, 1e-6f);
    EXPECT_NEAR(z[0], 1e-3f, 1e-9);
    EXPECT_FLOAT_EQ(dot_f32(v, v, 2), 1.0f);
}
