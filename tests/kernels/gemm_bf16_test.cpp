// The BF16 x BF16 prompt GEMM (kernels/gemm_bf16.h): the AVX-512 BF16 kernel against its scalar reference on ragged
// shapes (row and token tails, a masked last k step), and the reference against f32 activations within BF16 rounding.
#include "kernels/gemm_bf16.h"
#include "kernels/fp16.h"
#include "kernels/gemv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

using namespace speculum::kernels;

namespace {

// Relative to the largest |y| of a case: the kernel sums pairs in 16 lanes instead of in k order.
constexpr double kBf16GemmRelTol = 1e-5;
// Rounding activations to BF16 (8 significant bits) moves each product by at most 2^-8 relative; over random signs
// the sum moves far less. Relative to the largest |y| of a case.
constexpr double kBf16ActivationRelTol = 2e-2;

struct Case {
    int64_t rows, cols, n;
};

}  // namespace

TEST(GemmBf16, FastMatchesReference) {
    if (!gemm_bf16act_available()) GTEST_SKIP() << "no AVX-512 BF16 on this CPU";
    std::mt19937 rng(7);
    std::normal_distribution<float> g(0.0f, 1.0f);
    for (const Case c : {Case{9, 96, 7}, Case{16, 1024, 64}, Case{5, 33, 3}, Case{12, 250, 9}, Case{19, 200, 1},
                         Case{27, 64, 2}, Case{8, 512, 4}, Case{13, 160, 5}, Case{21, 100, 6}}) {
        // 1-2 tokens: 8-row tiles; the rest: 4 and 1; 5 and 6 tokens in one group, more in groups of up to 4
        SCOPED_TRACE(testing::Message() << c.rows << "x" << c.cols << " n " << c.n);
        std::vector<uint16_t> w(static_cast<size_t>(c.rows * c.cols)), xb(static_cast<size_t>(c.n * c.cols));
        for (auto& v : w) v = f32_to_bf16(g(rng));
        for (auto& v : xb) v = f32_to_bf16(g(rng));
        std::vector<float> ref(static_cast<size_t>(c.n * c.rows), -1.0f), fast(ref.size(), -2.0f);
        gemm_bf16act_ref(ref.data(), c.rows, w.data(), xb.data(), c.n, c.cols, 0, c.rows);
        // Two row ranges, as parallel tasks would split them.
        gemm_bf16act(fast.data(), c.rows, w.data(), xb.data(), c.n, c.cols, 0, c.rows / 2);
        gemm_bf16act(fast.data(), c.rows, w.data(), xb.data(), c.n, c.cols, c.rows / 2, c.rows);
        double scale = 0;
        for (float v : ref) scale = std::max(scale, double(std::abs(v)));
        for (size_t i = 0; i < ref.size(); ++i) EXPECT_NEAR(fast[i], ref[i], kBf16GemmRelTol * scale) << i;
    }
}

TEST(GemmBf16, RoundedActivationsStayNearF32) {
    std::mt19937 rng(8);
    std::normal_distribution<float> g(0.0f, 1.0f);
    const int64_t rows = 8, cols = 512, n = 4;
    std::vector<uint16_t> w(rows * cols), xb(n * cols);
    std::vector<float> x(n * cols);
    for (auto& v : w) v = f32_to_bf16(g(rng));
    for (auto& v : x) v = g(rng);
    round_bf16act(xb.data(), x.data(), n, cols);
    for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(xb[i], f32_to_bf16(x[i]));
    std::vector<float> y(n * rows), exact(n * rows);
    gemm_bf16act_ref(y.data(), rows, w.data(), xb.data(), n, cols, 0, rows);
    gemm_ref(exact.data(), rows, GgmlType::BF16, w.data(), x.data(), n, cols, 0, rows);
    double scale = 0, worst = 0;
    for (size_t i = 0; i < y.size(); ++i) scale = std::max(scale, double(std::abs(exact[i])));
    for (size_t i = 0; i < y.size(); ++i) worst = std::max(worst, double(std::abs(y[i] - exact[i])));
    EXPECT_LT(worst, kBf16ActivationRelTol * scale);
    EXPECT_GT(worst, 0.0) << "activations were not rounded";
}

// Decode, verification and prompts share this kernel for BF16 weights, so a token's result must not depend on the
// batch it is in: each token alone gives bit for bit what it gets in batches of 2..9 (tiles of 8 and 4 rows, token
// groups of 1-6, prefetching and not) and in two row ranges.
TEST(GemmBf16, EachTokenGetsTheSameResultInEveryBatch) {
    if (!gemm_bf16act_available()) GTEST_SKIP() << "no AVX-512 BF16 on this CPU";
    std::mt19937 rng(9);
    std::normal_distribution<float> g(0.0f, 1.0f);
    const int64_t rows = 29, cols = 300, nmax = 9;
    std::vector<uint16_t> w(rows * cols), xb(nmax * cols);
    for (auto& v : w) v = f32_to_bf16(g(rng));
    for (auto& v : xb) v = f32_to_bf16(g(rng));
    std::vector<float> alone(nmax * rows);
    for (int64_t i = 0; i < nmax; ++i) gemm_bf16act(&alone[i * rows], rows, w.data(), &xb[i * cols], 1, cols, 0, rows);
    for (int64_t n = 2; n <= nmax; ++n) {
        std::vector<float> y(n * rows, -1.0f);
        gemm_bf16act(y.data(), rows, w.data(), xb.data(), n, cols, 0, 11);
        gemm_bf16act(y.data(), rows, w.data(), xb.data(), n, cols, 11, rows);
        for (int64_t i = 0; i < n; ++i)
            for (int64_t r = 0; r < rows; ++r)
                ASSERT_EQ(y[i * rows + r], alone[i * rows + r]) << n << " " << i << " " << r;
    }
}
