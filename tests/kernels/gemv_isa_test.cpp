// Every instruction-set level of the fast GEMV/GEMM (scalar, AVX2, AVX-512 as far as this CPU goes) against the
// scalar reference for n = 1..16 vectors, odd row ranges and odd column counts; and the quantized-activation
// path (quantize_q8act, gemm_q8act) against its reference and against the f32-activation reference.
#include "kernels/gemv.h"

#include "kernels/fp16.h"
#include "kernels/quant_blocks.h"
#include "kernels/quantize.h"
#include "support/random_blocks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using namespace speculum::kernels;

namespace {

// |fast - ref| <= tol * sum_j |w_j x_j|: both accumulate in f32, only the summation order differs.
constexpr double kGemvRelTol = 2e-6;
// Activation quantization: round to nearest on a grid of step d_b = max|x in block b| / 127 moves each element by
// at most d_b / 2, so a dot moves by at most sum_b d_b / 2 * sum_{j in b} |w_j|. The fraction below is that 1/2;
// f32 rounding of the scale and the sums is covered by kGemvRelTol on top.
constexpr double kActQuantStepFraction = 0.5;

// Restores the ISA cap when a test ends, whatever it set.
struct IsaCapGuard {
    ~IsaCapGuard() { set_kernel_isa_cap(KernelIsa::avx512); }
};

std::vector<KernelIsa> isas_here() {
    std::vector<KernelIsa> v = {KernelIsa::scalar};
    if (best_kernel_isa() >= KernelIsa::avx2) v.push_back(KernelIsa::avx2);
    if (best_kernel_isa() >= KernelIsa::avx512) v.push_back(KernelIsa::avx512);
    return v;
}

struct Matrix {
    GgmlType type;
    int64_t rows, cols;
    std::vector<uint8_t> data;  // rows * row_size bytes
    std::vector<float> deq;     // (rows, cols) dequantized with the reference
};

Matrix make_matrix(GgmlType t, int64_t rows, int64_t cols, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, 0.02f);
    const uint64_t rb = ggml_row_size(t, cols);
    Matrix m{t, rows, cols, std::vector<uint8_t>(rows * rb), std::vector<float>(rows * cols)};
    std::vector<float> row(cols);
    for (int64_t r = 0; r < rows; ++r) {
        for (auto& v : row) v = dist(rng);
        if (r % 5 == 2) row[r % cols] = -0.4f;  // outliers, as real weights have
        if (ggml_type_traits(t)->block_size == 256)
            speculum::test::random_block_row(m.data.data() + r * rb, t, cols, rng);
        else
            quantize_row_ref(m.data.data() + r * rb, t, row.data(), cols);
        dequantize_row_ref(m.deq.data() + r * cols, t, m.data.data() + r * rb, cols);
    }
    return m;
}

std::vector<float> random_vectors(int64_t n, int64_t cols, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> x(n * cols);
    for (auto& v : x) v = dist(rng);
    for (int64_t i = 0; i < n * cols; i += 37) x[i] *= 8.0f;  // a few large activations per block
    return x;
}

double abs_dot(const Matrix& m, int64_t r, const float* x) {
    double s = 0.0;
    for (int64_t j = 0; j < m.cols; ++j) s += std::fabs(static_cast<double>(m.deq[r * m.cols + j]) * x[j]);
    return s;
}

// The activation-quantization bound above for row r and vector x.
double act_quant_bound(const Matrix& m, int64_t r, const float* x) {
    double s = 0.0;
    for (int64_t b = 0; b < m.cols / 32; ++b) {
        double amax = 0.0, wsum = 0.0;
        for (int j = 0; j < 32; ++j) {
            amax = std::max(amax, std::fabs(static_cast<double>(x[32 * b + j])));
            wsum += std::fabs(static_cast<double>(m.deq[r * m.cols + 32 * b + j]));
        }
        s += kActQuantStepFraction * amax / 127.0 * wsum;
    }
    return s;
}

std::string name(GgmlType t, KernelIsa isa) {
    return std::string(ggml_type_traits(t)->name) + "@" + kernel_isa_name(isa);
}

}  // namespace

TEST(GemvIsa, CapLowersTheLevelAndRestores) {
    IsaCapGuard guard;
    set_kernel_isa_cap(KernelIsa::scalar);
    EXPECT_EQ(kernel_isa(), KernelIsa::scalar);
    EXPECT_FALSE(gemm_prefers_q8act(GgmlType::Q8_0));
    set_kernel_isa_cap(KernelIsa::avx512);
    EXPECT_EQ(kernel_isa(), best_kernel_isa());
    EXPECT_EQ(gemm_prefers_q8act(GgmlType::Q8_0), best_kernel_isa() >= KernelIsa::avx512);
    EXPECT_FALSE(gemm_prefers_q8act(GgmlType::F16));
}

TEST(GemvIsa, EveryLevelMatchesReferenceForOneToSixteenVectors) {
    IsaCapGuard guard;
    const int64_t rows = 29, r0 = 2, r1 = 27, ldy = rows + 3;
    for (KernelIsa isa : isas_here()) {
        set_kernel_isa_cap(isa);
        for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0}) {
            for (int64_t cols : {32, 96, 608}) {
                const Matrix m = make_matrix(t, rows, cols, 300 + static_cast<uint32_t>(cols));
                for (int64_t n = 1; n <= 16; ++n) {
                    const std::vector<float> x = random_vectors(n, cols, 7 + static_cast<uint32_t>(n));
                    std::vector<float> y(n * ldy, -7.0f), y_ref(n * ldy, -7.0f);
                    gemm(y.data(), ldy, t, m.data.data(), x.data(), n, cols, r0, r1);
                    gemm_ref(y_ref.data(), ldy, t, m.data.data(), x.data(), n, cols, r0, r1);
                    for (int64_t i = 0; i < n; ++i)
                        for (int64_t r = 0; r < ldy; ++r) {
                            if (r < r0 || r >= r1) {
                                ASSERT_EQ(y[i * ldy + r], -7.0f) << "wrote outside [r0, r1): " << name(t, isa);
                                continue;
                            }
                            ASSERT_NEAR(y[i * ldy + r], y_ref[i * ldy + r],
                                        kGemvRelTol * abs_dot(m, r, x.data() + i * cols))
                                << name(t, isa) << " cols " << cols << " n " << n << " i " << i << " r " << r;
                        }
                }
            }
        }
    }
}

TEST(GemvIsa, EveryLevelHandlesOddColumnCountsOfPlainTypes) {
    IsaCapGuard guard;
    for (KernelIsa isa : isas_here()) {
        set_kernel_isa_cap(isa);
        for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16}) {
            for (int64_t cols : {1, 15, 17, 47, 250}) {
                const Matrix m = make_matrix(t, 11, cols, 50 + static_cast<uint32_t>(cols));
                for (int64_t n : {1, 3, 8, 11}) {
                    const std::vector<float> x = random_vectors(n, cols, 9);
                    std::vector<float> y(n * m.rows), y_ref(n * m.rows);
                    gemm(y.data(), m.rows, t, m.data.data(), x.data(), n, cols, 0, m.rows);
                    gemm_ref(y_ref.data(), m.rows, t, m.data.data(), x.data(), n, cols, 0, m.rows);
                    for (int64_t i = 0; i < n; ++i)
                        for (int64_t r = 0; r < m.rows; ++r)
                            ASSERT_NEAR(y[i * m.rows + r], y_ref[i * m.rows + r],
                                        kGemvRelTol * abs_dot(m, r, x.data() + i * cols))
                                << name(t, isa) << " cols " << cols << " n " << n;
                }
            }
        }
    }
}

TEST(Q8Act, FastQuantizationIsBitIdenticalToReference) {
    IsaCapGuard guard;
    for (KernelIsa isa : isas_here()) {
        set_kernel_isa_cap(isa);
        for (int64_t cols : {32, 160, 2048}) {
            std::vector<float> x = random_vectors(3, cols, 4);
            std::fill(x.begin() + 32, x.begin() + 64, 0.0f);  // an all-zero block of vector 0 (cols > 32)
            if (cols > 64) x[70] = 1e-39f, x[71] = -3e-39f;   // subnormals inside a normal block
            const uint64_t bytes = q8act_bytes(3, cols);
            std::vector<uint8_t> a(bytes, 0xAB), b(bytes, 0xAB);
            quantize_q8act(a.data(), x.data(), 3, cols);
            quantize_q8act_ref(b.data(), x.data(), 3, cols);
            ASSERT_EQ(std::memcmp(a.data(), b.data(), bytes), 0) << kernel_isa_name(isa) << " cols " << cols;
        }
    }
}

TEST(Q8Act, ReferenceDequantizesWithinHalfAStep) {
    const int64_t cols         = 256;
    const std::vector<float> x = random_vectors(2, cols, 12);
    std::vector<uint8_t> xq(q8act_bytes(2, cols));
    quantize_q8act_ref(xq.data(), x.data(), 2, cols);
    // Read back through gemm_q8act_ref with unit-vector weight rows: row j of an identity-like Q8_0 matrix picks
    // element j, scaled by the f16 scale 1.0.
    const uint64_t rb = ggml_row_size(GgmlType::Q8_0, cols);
    std::vector<uint8_t> eye(cols * rb, 0);
    for (int64_t j = 0; j < cols; ++j) {
        auto* blocks = reinterpret_cast<BlockQ8_0*>(eye.data() + j * rb);
        for (int64_t b = 0; b < cols / 32; ++b) blocks[b].d = f32_to_f16(1.0f);
        blocks[j / 32].qs[j % 32] = 1;
    }
    std::vector<float> back(2 * cols);
    gemm_q8act_ref(back.data(), cols, GgmlType::Q8_0, eye.data(), xq.data(), 2, cols, 0, cols);
    for (int64_t i = 0; i < 2; ++i)
        for (int64_t j = 0; j < cols; ++j) {
            float amax = 0.0f;
            for (int64_t k = j / 32 * 32; k < j / 32 * 32 + 32; ++k) amax = std::max(amax, std::fabs(x[i * cols + k]));
            EXPECT_LE(std::fabs(back[i * cols + j] - x[i * cols + j]), kActQuantStepFraction * amax / 127.0f * 1.0001f)
                << i << " " << j;
        }
}

TEST(Q8Act, GemmMatchesItsReferenceAndTheExactActivationReference) {
    IsaCapGuard guard;
    const int64_t rows = 23, r0 = 1, r1 = 22, ldy = rows + 2;
    for (KernelIsa isa : isas_here()) {
        set_kernel_isa_cap(isa);
        for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
                           GgmlType::IQ4_NL, GgmlType::MXFP4, GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K,
                           GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ4_XS})
            for (int64_t cols : {32, 96, 160, 256, 1024}) {  // groups of 4 blocks: tail only, tail only, 1 + tail, full
                if (cols % ggml_type_traits(t)->block_size != 0) continue;
                const Matrix m = make_matrix(t, rows, cols, 900 + static_cast<uint32_t>(cols));
                for (int64_t n = 1; n <= 16; ++n) {
                    const std::vector<float> x = random_vectors(n, cols, 40 + static_cast<uint32_t>(n));
                    std::vector<uint8_t> xq(q8act_bytes(n, cols));
                    quantize_q8act(xq.data(), x.data(), n, cols);
                    std::vector<float> y(n * ldy, -7.0f), y_q8ref(n * ldy, -7.0f), y_exact(n * ldy, -7.0f);
                    gemm_q8act(y.data(), ldy, t, m.data.data(), xq.data(), n, cols, r0, r1);
                    gemm_q8act_ref(y_q8ref.data(), ldy, t, m.data.data(), xq.data(), n, cols, r0, r1);
                    gemm_ref(y_exact.data(), ldy, t, m.data.data(), x.data(), n, cols, r0, r1);
                    for (int64_t i = 0; i < n; ++i)
                        for (int64_t r = 0; r < ldy; ++r) {
                            if (r < r0 || r >= r1) {
                                ASSERT_EQ(y[i * ldy + r], -7.0f) << "wrote outside [r0, r1)";
                                continue;
                            }
                            const float* xi  = x.data() + i * cols;
                            const double f32 = kGemvRelTol * abs_dot(m, r, xi);
                            // Same quantized inputs: exact int32 block dots, only the f32 summation order differs.
                            ASSERT_NEAR(y[i * ldy + r], y_q8ref[i * ldy + r], f32)
                                << name(t, isa) << " cols " << cols << " n " << n << " i " << i << " r " << r;
                            ASSERT_NEAR(y[i * ldy + r], y_exact[i * ldy + r], f32 + act_quant_bound(m, r, xi))
                                << name(t, isa) << " cols " << cols << " n " << n << " i " << i << " r " << r;
                        }
                }
            }
    }
}

// Decode (one vector) and verification (5-8) share these kernels, and greedy speculative decoding stays lossless only
// if a token's logits do not depend on the batch it is in: each vector alone gives bit for bit what it gets in
// batches of 2..9 (8-, 6- and 4-row tiles, groups of 1-4 vectors and one group of 5 or 6) over two row ranges.
TEST(Q8Act, EachVectorGetsTheSameResultInEveryBatch) {
    IsaCapGuard guard;
    const int64_t rows = 31, cols = 512, nmax = 9;
    for (KernelIsa isa : isas_here()) {
        set_kernel_isa_cap(isa);
        for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
                           GgmlType::IQ4_NL, GgmlType::MXFP4, GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K,
                           GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ4_XS}) {
            const Matrix m             = make_matrix(t, rows, cols, 77);
            const std::vector<float> x = random_vectors(nmax, cols, 78);
            std::vector<uint8_t> xq(q8act_bytes(nmax, cols));
            quantize_q8act(xq.data(), x.data(), nmax, cols);
            const uint64_t vec = q8act_bytes(1, cols);
            std::vector<float> alone(nmax * rows);
            for (int64_t i = 0; i < nmax; ++i)
                gemm_q8act(&alone[i * rows], rows, t, m.data.data(), xq.data() + i * vec, 1, cols, 0, rows);
            for (int64_t n = 2; n <= nmax; ++n) {
                std::vector<float> y(n * rows, -1.0f);
                gemm_q8act(y.data(), rows, t, m.data.data(), xq.data(), n, cols, 0, 13);
                gemm_q8act(y.data(), rows, t, m.data.data(), xq.data(), n, cols, 13, rows);
                for (int64_t i = 0; i < n; ++i)
                    for (int64_t r = 0; r < rows; ++r)
                        ASSERT_EQ(y[i * rows + r], alone[i * rows + r])
                            << name(t, isa) << " n " << n << " i " << i << " r " << r;
            }
        }
    }
}

TEST(Q8Act, RejectsOtherTypesAndBadColumns) {
    float y[1];
    std::vector<uint8_t> xq(q8act_bytes(1, 64));
    const float x[64] = {};
    uint8_t w[128]    = {};
    EXPECT_THROW(gemm_q8act(y, 1, GgmlType::F16, w, xq.data(), 1, 64, 0, 1), std::invalid_argument);
    EXPECT_THROW(gemm_q8act_ref(y, 1, GgmlType::IQ2_XXS, w, xq.data(), 1, 256, 0, 1), std::invalid_argument);
    EXPECT_THROW(quantize_q8act(xq.data(), x, 1, 33), std::invalid_argument);
    EXPECT_THROW(quantize_q8act_ref(xq.data(), x, 1, 48), std::invalid_argument);
}
