// GEMV/GEMM kernels: fast paths against the scalar reference on seeded random data for every supported type,
// gemm against n separate gemv calls, odd row ranges, and the reference against a double-precision dot.
#include "kernels/gemv.h"

#include "kernels/fp16.h"
#include "kernels/quant_blocks.h"
#include "kernels/quantize.h"
#include "support/random_blocks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <random>
#include <vector>

using namespace speculum::kernels;

namespace {

// |fast - ref| <= tol * sum_j |w_j x_j|: both accumulate in f32, only the summation order differs.
constexpr double kGemvRelTol = 2e-6;
// The reference (f32, left to right) against a double-precision dot of the dequantized row.
constexpr double kRefVsDoubleRelTol = 1e-5;

const GgmlType kTypes[] = {GgmlType::F32,    GgmlType::F16,   GgmlType::BF16, GgmlType::Q8_0,
                           GgmlType::Q4_0,   GgmlType::Q4_1,  GgmlType::Q5_0, GgmlType::Q5_1,
                           GgmlType::IQ4_NL, GgmlType::MXFP4, GgmlType::Q2_K, GgmlType::Q3_K,
                           GgmlType::Q4_K,   GgmlType::Q5_K,  GgmlType::Q6_K, GgmlType::IQ4_XS};

struct Matrix {
    GgmlType type;
    int64_t rows, cols;
    std::vector<uint8_t> data;  // rows * row_size bytes
    std::vector<float> deq;     // (rows, cols) dequantized with the reference
};

Matrix make_matrix(GgmlType t, int64_t rows, int64_t cols, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, 0.02f);
    Matrix m{t, rows, cols, std::vector<uint8_t>(rows * ggml_row_size(t, cols)), std::vector<float>(rows * cols)};
    std::vector<float> row(cols);
    for (int64_t r = 0; r < rows; ++r) {
        for (auto& v : row) v = dist(rng);
        if (r % 7 == 3) row[r % cols] = 0.5f;  // a few outliers, as real weights have
        if (speculum::test::random_blocks(t))
            speculum::test::random_block_row(m.data.data() + r * ggml_row_size(t, cols), t, cols, rng);
        else
            quantize_row_ref(m.data.data() + r * ggml_row_size(t, cols), t, row.data(), cols);
        dequantize_row_ref(m.deq.data() + r * cols, t, m.data.data() + r * ggml_row_size(t, cols), cols);
    }
    return m;
}

std::vector<float> random_vectors(int64_t n, int64_t cols, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> x(n * cols);
    for (auto& v : x) v = dist(rng);
    return x;
}

double abs_dot(const Matrix& m, int64_t r, const float* x) {
    double s = 0.0;
    for (int64_t j = 0; j < m.cols; ++j) s += std::fabs(static_cast<double>(m.deq[r * m.cols + j]) * x[j]);
    return s;
}

std::string type_name(GgmlType t) {
    return ggml_type_traits(t)->name;
}

}  // namespace

TEST(Gemv, ReferenceMatchesDoubleDot) {
    for (GgmlType t : kTypes) {
        const Matrix m             = make_matrix(t, 5, 256, 11);
        const std::vector<float> x = random_vectors(1, m.cols, 12);
        std::vector<float> y(m.rows);
        gemv_ref(y.data(), t, m.data.data(), x.data(), m.cols, 0, m.rows);
        for (int64_t r = 0; r < m.rows; ++r) {
            double exact = 0.0;
            for (int64_t j = 0; j < m.cols; ++j) exact += static_cast<double>(m.deq[r * m.cols + j]) * x[j];
            EXPECT_NEAR(y[r], exact, kRefVsDoubleRelTol * abs_dot(m, r, x.data())) << type_name(t) << " row " << r;
        }
    }
}

TEST(Gemv, FastMatchesReference) {
    for (GgmlType t : kTypes) {
        for (int64_t cols : {32, 96, 1024}) {
            if (cols % ggml_type_traits(t)->block_size != 0) continue;
            const Matrix m             = make_matrix(t, 37, cols, 100 + static_cast<uint32_t>(cols));
            const std::vector<float> x = random_vectors(1, cols, 5);
            std::vector<float> y_ref(m.rows, -1.0f), y_fast(m.rows, -1.0f);
            gemv_ref(y_ref.data(), t, m.data.data(), x.data(), cols, 0, m.rows);
            gemv(y_fast.data(), t, m.data.data(), x.data(), cols, 0, m.rows);
            for (int64_t r = 0; r < m.rows; ++r)
                ASSERT_NEAR(y_fast[r], y_ref[r], kGemvRelTol * abs_dot(m, r, x.data()))
                    << type_name(t) << " cols " << cols << " row " << r;
        }
    }
}

TEST(Gemv, OddColumnCountsForPlainTypes) {
    for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16}) {
        for (int64_t cols : {1, 7, 33, 250}) {
            const Matrix m             = make_matrix(t, 9, cols, 40 + static_cast<uint32_t>(cols));
            const std::vector<float> x = random_vectors(3, cols, 6);
            std::vector<float> y_ref(3 * m.rows), y_fast(3 * m.rows);
            gemm_ref(y_ref.data(), m.rows, t, m.data.data(), x.data(), 3, cols, 0, m.rows);
            gemm(y_fast.data(), m.rows, t, m.data.data(), x.data(), 3, cols, 0, m.rows);
            for (int64_t i = 0; i < 3; ++i)
                for (int64_t r = 0; r < m.rows; ++r)
                    ASSERT_NEAR(y_fast[i * m.rows + r], y_ref[i * m.rows + r],
                                kGemvRelTol * abs_dot(m, r, x.data() + i * cols))
                        << type_name(t) << " cols " << cols;
        }
    }
}

TEST(Gemm, MatchesSeparateGemvCallsOnOddRowRanges) {
    const int64_t rows = 41, cols = 768;  // one full 512-column slab and a partial one
    for (GgmlType t : kTypes) {
        const Matrix m = make_matrix(t, rows, cols, 77);
        for (int64_t n : {1, 2, 3, 5, 8, 17}) {  // gemv, register path (<= 4), 4x2 tiles + remainders
            const std::vector<float> x = random_vectors(n, cols, 90 + static_cast<uint32_t>(n));
            const int64_t r0 = 3, r1 = 38, ldy = rows + 5;
            std::vector<float> y(n * ldy, -7.0f), y_ref(n * ldy, -7.0f);
            gemm(y.data(), ldy, t, m.data.data(), x.data(), n, cols, r0, r1);
            gemm_ref(y_ref.data(), ldy, t, m.data.data(), x.data(), n, cols, r0, r1);
            for (int64_t i = 0; i < n; ++i) {
                std::vector<float> yv(rows, -7.0f);
                gemv(yv.data(), t, m.data.data(), x.data() + i * cols, cols, r0, r1);
                for (int64_t r = 0; r < ldy; ++r) {
                    const float got = y[i * ldy + r];
                    if (r < r0 || r >= r1) {
                        ASSERT_EQ(got, -7.0f) << "wrote outside [r0, r1): " << type_name(t);
                        continue;
                    }
                    const double tol = kGemvRelTol * abs_dot(m, r, x.data() + i * cols);
                    ASSERT_NEAR(got, yv[r], tol) << type_name(t) << " n " << n << " i " << i << " r " << r;
                    ASSERT_NEAR(got, y_ref[i * ldy + r], tol) << type_name(t) << " n " << n << " r " << r;
                }
            }
        }
    }
}

TEST(Dequantize, FastMatchesReferenceExactly) {
    for (GgmlType t : kTypes) {
        const Matrix m = make_matrix(t, 1, 512, 21);
        std::vector<float> y(512, -1.0f), y_ref(512, -2.0f);
        dequantize_row(y.data(), t, m.data.data(), 512);
        dequantize_row_ref(y_ref.data(), t, m.data.data(), 512);
        for (int j = 0; j < 512; ++j) ASSERT_EQ(y[j], y_ref[j]) << type_name(t) << " " << j;
    }
}

TEST(Gemv, SupportAndErrors) {
    for (GgmlType t : kTypes) EXPECT_TRUE(kernels_support(t)) << type_name(t);
    EXPECT_FALSE(kernels_support(GgmlType::Q8_1));  // an activation type, never a weight in files
    EXPECT_FALSE(kernels_support(GgmlType::IQ2_XXS));
    float y[1];
    const float x[33] = {};
    uint8_t w[64]     = {};
    EXPECT_THROW(gemv(y, GgmlType::Q8_0, w, x, 33, 0, 1), std::invalid_argument);
    EXPECT_THROW(gemv(y, GgmlType::Q8_1, w, x, 32, 0, 1), std::invalid_argument);
    EXPECT_THROW(dequantize_row(y, GgmlType::IQ2_XXS, w, 256), std::invalid_argument);
}
