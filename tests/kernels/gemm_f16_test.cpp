// The F16 x f32 prompt GEMM (kernels/gemm_f16.h): the AVX-512 kernel against its scalar reference on ragged shapes
// (row tails of 1-3 rows, token groups of 6 and every remainder, token blocks, column blocks, a masked last step),
// and the reference against the generic F16 reference of gemv.h.
#include "kernels/gemm_f16.h"
#include "kernels/fp16.h"
#include "kernels/gemv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

using namespace speculum::kernels;

namespace {

// Relative to the largest |y| of a case: the kernel sums in 16 lanes and in column blocks instead of in k order.
constexpr double kF16GemmRelTol = 1e-5;

struct Case {
    int64_t rows, cols, n;
};

}  // namespace

TEST(GemmF16, FastMatchesReference) {
    if (!gemm_f16_available()) GTEST_SKIP() << "no AVX-512 on this CPU";
    std::mt19937 rng(17);
    std::normal_distribution<float> g(0.0f, 1.0f);
    // cols: one masked step (33), one block (1024), two and three blocks with a masked end (1100, 2100);
    // n: one token, a group and a remainder (7), a block of 60 plus 4 (64), three blocks plus 10 (190).
    for (const Case c : {Case{9, 33, 7}, Case{16, 1024, 64}, Case{7, 1100, 1}, Case{13, 2100, 13}, Case{4, 160, 190},
                         Case{23, 96, 5}, Case{6, 48, 2}}) {
        SCOPED_TRACE(testing::Message() << c.rows << "x" << c.cols << " n " << c.n);
        std::vector<uint16_t> w(static_cast<size_t>(c.rows * c.cols));
        std::vector<float> x(static_cast<size_t>(c.n * c.cols));
        for (auto& v : w) v = f32_to_f16(g(rng));
        for (auto& v : x) v = g(rng);
        std::vector<float> ref(static_cast<size_t>(c.n * c.rows), -1.0f), fast(ref.size(), -2.0f);
        gemm_f16_ref(ref.data(), c.rows, w.data(), x.data(), c.n, c.cols, 0, c.rows);
        // Two row ranges, as parallel tasks would split them (the first ends off a multiple of 4).
        gemm_f16(fast.data(), c.rows, w.data(), x.data(), c.n, c.cols, 0, c.rows / 2);
        gemm_f16(fast.data(), c.rows, w.data(), x.data(), c.n, c.cols, c.rows / 2, c.rows);
        double scale = 0;
        for (float v : ref) scale = std::max(scale, double(std::abs(v)));
        for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(fast[i], ref[i], kF16GemmRelTol * scale) << i;
    }
}

TEST(GemmF16, ReferenceIsTheGenericF16Product) {
    std::mt19937 rng(18);
    std::normal_distribution<float> g(0.0f, 1.0f);
    const int64_t rows = 5, cols = 70, n = 3;
    std::vector<uint16_t> w(rows * cols);
    std::vector<float> x(n * cols), y(n * rows), generic(n * rows);
    for (auto& v : w) v = f32_to_f16(g(rng));
    for (auto& v : x) v = g(rng);
    gemm_f16_ref(y.data(), rows, w.data(), x.data(), n, cols, 0, rows);
    gemm_ref(generic.data(), rows, GgmlType::F16, w.data(), x.data(), n, cols, 0, rows);
    double scale = 0;
    for (float v : generic) scale = std::max(scale, double(std::abs(v)));
    for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], generic[i], kF16GemmRelTol * scale) << i;
}

// A row's result must not depend on how rows are split into tasks or tokens into batches (a compact draft's task
// decodes its rows and multiplies them from row 0 of its buffer; its results must equal its dense copy's): each row
// alone (the one-row tile) and each token alone give bit for bit what the whole product gives.
TEST(GemmF16, EachRowAndTokenGetTheSameBitsInAnySplit) {
    if (!gemm_f16_available()) GTEST_SKIP() << "no AVX-512 on this CPU";
    std::mt19937 rng(19);
    std::normal_distribution<float> g(0.0f, 1.0f);
    const int64_t rows = 13, cols = 1100, n = 13;
    std::vector<uint16_t> w(rows * cols);
    std::vector<float> x(n * cols);
    for (auto& v : w) v = f32_to_f16(g(rng));
    for (auto& v : x) v = g(rng);
    std::vector<float> whole(n * rows), by_row(n * rows), by_token(n * rows);
    gemm_f16(whole.data(), rows, w.data(), x.data(), n, cols, 0, rows);
    for (int64_t r = 0; r < rows; ++r) gemm_f16(by_row.data(), rows, w.data(), x.data(), n, cols, r, r + 1);
    for (int64_t i = 0; i < n; ++i) gemm_f16(&by_token[i * rows], rows, w.data(), &x[i * cols], 1, cols, 0, rows);
    for (size_t i = 0; i < whole.size(); ++i) {
        ASSERT_EQ(by_row[i], whole[i]) << i;
        ASSERT_EQ(by_token[i], whole[i]) << i;
    }
}
