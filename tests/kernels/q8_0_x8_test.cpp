// Q8_0_X8, the in-memory repacked Q8_0 layout: repack/unpack round trip, its dequantization, the activation
// quantization (fast bit-identical to reference), the reference GEMM against gemm_q8act_ref on the unpacked rows
// (bit for bit: same sums, same order), the fast GEMM against its reference for n = 1..16 and odd row ranges, and a
// batched GEMM against single-vector ones (bit for bit).
#include "kernels/gemv.h"

#include "kernels/quant_blocks.h"
#include "kernels/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

using namespace speculum::kernels;

namespace {

// |fast - ref| <= tol * sum over blocks |block dot scaled|: the block dots are exact int32 in both, only the f32
// summation order of the scaled block sums differs.
constexpr double kX8SumOrderRelTol = 4e-6;  // 24 to 72 block sums here: a few f32 epsilons of the sum of |terms|

struct IsaCapGuard {
    ~IsaCapGuard() { set_kernel_isa_cap(KernelIsa::avx512); }
};

std::vector<uint8_t> random_q8_0(int64_t rows, int64_t cols, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, 0.02f);
    const uint64_t rb = ggml_row_size(GgmlType::Q8_0, cols);
    std::vector<uint8_t> q(rows * rb);
    std::vector<float> row(cols);
    for (int64_t r = 0; r < rows; ++r) {
        for (auto& v : row) v = dist(rng);
        if (r % 3 == 1) row[(7 * r) % cols] = -0.5f;  // outliers, as real weights have
        quantize_row_ref(q.data() + r * rb, GgmlType::Q8_0, row.data(), cols);
    }
    return q;
}

std::vector<float> random_x(int64_t n, int64_t cols, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> x(n * cols);
    for (auto& v : x) v = dist(rng);
    if (cols >= 64) x[40] = 9.0f, x[cols - 1] = 0.0f;
    return x;
}

// sum over elements |w x| with dequantized weights: the scale of the dot for the summation-order tolerance.
double abs_dot(const std::vector<float>& wdeq, int64_t r, const float* x, int64_t cols) {
    double s = 0;
    for (int64_t c = 0; c < cols; ++c) s += std::fabs(wdeq[r * cols + c] * x[c]);
    return s;
}

}  // namespace

TEST(Q8_0X8, RepackUnpackRoundTripsAndDequantizesAsQ8_0) {
    for (int64_t cols : {256, 512, 2304}) {
        const int64_t rows = 5;
        const auto q8      = random_q8_0(rows, cols, 11);
        std::vector<uint8_t> x8(q8.size()), back(q8.size());
        EXPECT_EQ(ggml_row_size(GgmlType::Q8_0_X8, cols), ggml_row_size(GgmlType::Q8_0, cols));
        repack_q8_0_x8(x8.data(), q8.data(), rows, cols);
        EXPECT_NE(x8, q8);
        unpack_q8_0_x8(back.data(), x8.data(), rows, cols);
        EXPECT_EQ(back, q8) << cols;
        const uint64_t rb = ggml_row_size(GgmlType::Q8_0, cols);
        std::vector<float> a(cols), b(cols);
        for (int64_t r = 0; r < rows; ++r) {
            dequantize_row_ref(a.data(), GgmlType::Q8_0, q8.data() + r * rb, cols);
            dequantize_row(b.data(), GgmlType::Q8_0_X8, x8.data() + r * rb, cols);
            ASSERT_EQ(0, std::memcmp(a.data(), b.data(), cols * sizeof(float))) << "row " << r;
        }
    }
}

TEST(Q8_0X8, IsAnInMemoryTypeOnly) {
    const GgmlTypeTraits* tr = ggml_type_traits(GgmlType::Q8_0_X8);
    ASSERT_NE(tr, nullptr);
    EXPECT_FALSE(tr->in_files);
    EXPECT_TRUE(ggml_type_traits(GgmlType::Q8_0)->in_files);
    EXPECT_TRUE(kernels_support(GgmlType::Q8_0_X8));
    EXPECT_FALSE(gemm_prefers_q8act(GgmlType::Q8_0_X8));  // it has its own entry points
}

TEST(Q8_0X8, FastQuantizationIsBitIdenticalToReference) {
    IsaCapGuard guard;
    for (int64_t cols : {256, 768}) {
        auto x = random_x(3, cols, 5);
        x[3]   = NAN;                                            // NaN quantizes to -128 in both
        for (int c = 0; c < 32; ++c) x[cols + 64 + c] = 1e-40f;  // a block below the smallest scale: all zero
        std::vector<uint8_t> a(q8act_x8_bytes(3, cols), 1), b(q8act_x8_bytes(3, cols), 2);
        quantize_q8act_x8(a.data(), x.data(), 3, cols);
        quantize_q8act_x8_ref(b.data(), x.data(), 3, cols);
        EXPECT_EQ(a, b) << cols;
    }
}

TEST(Q8_0X8, ReferenceEqualsTheQ8ActReferenceOnTheUnpackedRows) {
    const int64_t rows = 7, cols = 512, n = 3;
    const auto q8 = random_q8_0(rows, cols, 3);
    std::vector<uint8_t> x8(q8.size());
    repack_q8_0_x8(x8.data(), q8.data(), rows, cols);
    const auto x = random_x(n, cols, 4);
    std::vector<uint8_t> xa(q8act_bytes(n, cols)), xb(q8act_x8_bytes(n, cols));
    quantize_q8act_ref(xa.data(), x.data(), n, cols);
    quantize_q8act_x8_ref(xb.data(), x.data(), n, cols);
    std::vector<float> ya(n * rows), yb(n * rows);
    gemm_q8act_ref(ya.data(), rows, GgmlType::Q8_0, q8.data(), xa.data(), n, cols, 0, rows);
    gemm_q8act_x8_ref(yb.data(), rows, x8.data(), xb.data(), n, cols, 0, rows);
    EXPECT_EQ(0, std::memcmp(ya.data(), yb.data(), ya.size() * sizeof(float)));
}

TEST(Q8_0X8, FastGemmMatchesReferenceForOneToSixteenVectorsAndOddRowRanges) {
    IsaCapGuard guard;
    const int64_t rows = 29, cols = 768;
    const auto q8 = random_q8_0(rows, cols, 21);
    std::vector<uint8_t> w(q8.size());
    repack_q8_0_x8(w.data(), q8.data(), rows, cols);
    std::vector<float> wdeq(rows * cols);
    for (int64_t r = 0; r < rows; ++r)
        dequantize_row_ref(wdeq.data() + r * cols, GgmlType::Q8_0_X8,
                           w.data() + r * ggml_row_size(GgmlType::Q8_0_X8, cols), cols);
    for (KernelIsa isa : {KernelIsa::scalar, KernelIsa::avx512}) {
        if (isa > best_kernel_isa()) continue;
        set_kernel_isa_cap(isa);
        for (int64_t n = 1; n <= 16; ++n) {
            const auto x = random_x(n, cols, static_cast<uint32_t>(100 + n));
            std::vector<uint8_t> xq(q8act_x8_bytes(n, cols));
            quantize_q8act_x8(xq.data(), x.data(), n, cols);
            for (auto [r0, r1] : {std::pair<int64_t, int64_t>{0, rows}, {3, 20}, {5, 6}}) {
                const int64_t ldy = rows + 3;
                std::vector<float> y(n * ldy, -7.0f), yr(n * ldy, -7.0f);
                gemm_q8act_x8(y.data(), ldy, w.data(), xq.data(), n, cols, r0, r1);
                gemm_q8act_x8_ref(yr.data(), ldy, w.data(), xq.data(), n, cols, r0, r1);
                for (int64_t i = 0; i < n; ++i)
                    for (int64_t r = 0; r < ldy; ++r) {
                        const float got = y[i * ldy + r], want = yr[i * ldy + r];
                        if (r < r0 || r >= r1) {
                            ASSERT_EQ(got, -7.0f) << "wrote outside [r0, r1): n " << n << " row " << r;
                            continue;
                        }
                        ASSERT_NEAR(got, want, kX8SumOrderRelTol * abs_dot(wdeq, r, x.data() + i * cols, cols))
                            << kernel_isa_name(isa) << " n " << n << " row " << r;
                    }
            }
        }
    }
}

// Greedy speculative decoding on a repacked target is lossless only if a batched pass computes what single-token
// decoding computes: every vector of an n-vector GEMM must equal its own n = 1 GEMM bit for bit, whatever the row
// range a task gets (rows of 9 and 22 groups: chunk remainders of 1 and 6 groups).
TEST(Q8_0X8, BatchedGemmEqualsSingleVectorGemmBitForBit) {
    IsaCapGuard guard;
    const int64_t rows = 21, n = 7;
    for (int64_t cols : {2304, 5632}) {
        const auto q8 = random_q8_0(rows, cols, 5);
        std::vector<uint8_t> w(q8.size());
        repack_q8_0_x8(w.data(), q8.data(), rows, cols);
        const auto x = random_x(n, cols, 77);
        std::vector<uint8_t> xq(q8act_x8_bytes(n, cols)), x1(q8act_x8_bytes(1, cols));
        quantize_q8act_x8(xq.data(), x.data(), n, cols);
        for (KernelIsa isa : {KernelIsa::scalar, KernelIsa::avx512}) {
            if (isa > best_kernel_isa()) continue;
            set_kernel_isa_cap(isa);
            std::vector<float> yb(n * rows);
            gemm_q8act_x8(yb.data(), rows, w.data(), xq.data(), n, cols, 0, rows);
            for (int64_t i = 0; i < n; ++i) {
                quantize_q8act_x8(x1.data(), x.data() + i * cols, 1, cols);
                for (auto [r0, r1] : {std::pair<int64_t, int64_t>{0, rows}, {3, 20}, {5, 6}}) {
                    std::vector<float> y1(rows, -7.0f);
                    gemm_q8act_x8(y1.data(), rows, w.data(), x1.data(), 1, cols, r0, r1);
                    for (int64_t r = r0; r < r1; ++r)
                        ASSERT_EQ(y1[r], yb[i * rows + r]) << kernel_isa_name(isa) << " cols " << cols << " vector "
                                                           << i << " row " << r << " of [" << r0 << ", " << r1 << ")";
                }
            }
        }
    }
}

TEST(Q8_0X8, RejectsColumnsThatAreNotWholeBlocks) {
    std::vector<uint8_t> a(34 * 8), b(34 * 8);
    std::vector<float> x(288), y(4);
    EXPECT_THROW(repack_q8_0_x8(a.data(), b.data(), 1, 128), std::invalid_argument);
    EXPECT_THROW(unpack_q8_0_x8(a.data(), b.data(), 1, 288), std::invalid_argument);
    EXPECT_THROW(quantize_q8act_x8(a.data(), x.data(), 1, 32), std::invalid_argument);
    EXPECT_THROW(gemm_q8act_x8(y.data(), 1, a.data(), b.data(), 1, 0, 0, 1), std::invalid_argument);
    EXPECT_THROW(gemm_q8act_x8_ref(y.data(), 1, a.data(), b.data(), 1, 100, 0, 1), std::invalid_argument);
}
