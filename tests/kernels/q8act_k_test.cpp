// The K-quant int8 path (gemm_q8act_k: Q4_K, Q5_K, Q6_K in 512-bit registers): its activation quantization (fast
// bit-identical to reference, the same quants and scales as quantize_q8act), its reference against gemm_q8act_ref on
// the same rows (bit for bit: the same block sums in the same order), the fast GEMM against its reference for
// n = 1..17 and odd row ranges, a batched GEMM against single vectors (bit for bit), and its refusals.
#include "kernels/gemv.h"

#include "kernels/gemv_detail.h"
#include "support/random_blocks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

using namespace speculum::kernels;

namespace {

// |fast - ref| <= tol * sum over elements |w x|: the block dots are exact int32 in both; the fast path sums the
// scaled block dots of each super-block in 16 lanes and folds the minimum's term in per super-block, so only the f32
// summation order (and one rounding of the term) differs.
constexpr double kKSumOrderRelTol = 4e-6;

struct IsaCapGuard {
    ~IsaCapGuard() { set_kernel_isa_cap(KernelIsa::avx512); }
};

constexpr GgmlType kTypes[] = {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};

std::vector<uint8_t> random_k(GgmlType t, int64_t rows, int64_t cols, uint32_t seed) {
    std::mt19937 rng(seed);
    const uint64_t rb = ggml_row_size(t, static_cast<uint64_t>(cols));
    std::vector<uint8_t> w(rows * rb);
    for (int64_t r = 0; r < rows; ++r) speculum::test::random_block_row(w.data() + r * rb, t, cols, rng);
    return w;
}

std::vector<float> random_x(int64_t n, int64_t cols, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> x(n * cols);
    for (auto& v : x) v = dist(rng);
    x[40] = 9.0f, x[cols - 1] = 0.0f;  // an outlier, and a zero
    return x;
}

std::vector<float> dequantized(GgmlType t, const std::vector<uint8_t>& w, int64_t rows, int64_t cols) {
    std::vector<float> out(rows * cols);
    const uint64_t rb = ggml_row_size(t, static_cast<uint64_t>(cols));
    for (int64_t r = 0; r < rows; ++r) dequantize_row_ref(out.data() + r * cols, t, w.data() + r * rb, cols);
    return out;
}

double abs_dot(const std::vector<float>& wdeq, int64_t r, const float* x, int64_t cols) {
    double s = 0;
    for (int64_t c = 0; c < cols; ++c) s += std::fabs(wdeq[r * cols + c] * x[c]);
    return s;
}

}  // namespace

TEST(Q8ActK, FastQuantizationIsBitIdenticalToReference) {
    IsaCapGuard guard;
    for (int64_t cols : {256, 768}) {
        auto x = random_x(3, cols, 5);
        x[3]   = NAN;                                            // NaN quantizes to -128 in both
        for (int c = 0; c < 32; ++c) x[cols + 64 + c] = 1e-40f;  // a block below the smallest scale: all zero
        std::vector<uint8_t> a(q8act_k_bytes(3, cols), 1), b(q8act_k_bytes(3, cols), 2);
        quantize_q8act_k(a.data(), x.data(), 3, cols);
        quantize_q8act_k_ref(b.data(), x.data(), 3, cols);
        EXPECT_EQ(a, b) << cols;
    }
}

TEST(Q8ActK, QuantizesAsQ8Act) {
    const int64_t cols = 512;
    const auto x       = random_x(2, cols, 9);
    std::vector<uint8_t> a(q8act_bytes(2, cols)), k(q8act_k_bytes(2, cols));
    quantize_q8act_ref(a.data(), x.data(), 2, cols);
    quantize_q8act_k_ref(k.data(), x.data(), 2, cols);
    for (int64_t i = 0; i < 2; ++i)
        for (int64_t b = 0; b < cols / 32; ++b) {
            const auto& ga = speculum::kernels::detail::q8act_vec(a.data(), i, cols)[b / 4];
            const auto& gk = speculum::kernels::detail::q8act_k_vec(k.data(), i, cols)[b / 8];
            const int ja = static_cast<int>(b % 4), jk = static_cast<int>(b % 8);
            ASSERT_EQ(ga.d[2 * ja], gk.d[2 * jk]) << b;
            int32_t sum = 0;
            for (int e = 0; e < 32; ++e) {
                const int8_t qa = ga.q[speculum::kernels::detail::q8act_index(e) + 8 * ja];
                ASSERT_EQ(qa, gk.q[speculum::kernels::detail::q8act_k_index(jk, e)]) << b << " " << e;
                sum += qa;
            }
            EXPECT_EQ(gk.s[2 * jk], gk.d[2 * jk] * static_cast<float>(sum));
            EXPECT_EQ(gk.s[2 * jk + 1], 0.0f);
        }
}

TEST(Q8ActK, ReferenceEqualsTheQ8ActReference) {
    const int64_t rows = 5, cols = 512, n = 3;
    const auto x = random_x(n, cols, 4);
    std::vector<uint8_t> xa(q8act_bytes(n, cols)), xk(q8act_k_bytes(n, cols));
    quantize_q8act_ref(xa.data(), x.data(), n, cols);
    quantize_q8act_k_ref(xk.data(), x.data(), n, cols);
    for (GgmlType t : kTypes) {
        const auto w = random_k(t, rows, cols, 3);
        std::vector<float> ya(n * rows), yk(n * rows);
        gemm_q8act_ref(ya.data(), rows, t, w.data(), xa.data(), n, cols, 0, rows);
        gemm_q8act_k_ref(yk.data(), rows, t, w.data(), xk.data(), n, cols, 0, rows);
        EXPECT_EQ(0, std::memcmp(ya.data(), yk.data(), ya.size() * sizeof(float))) << ggml_type_traits(t)->name;
    }
}

TEST(Q8ActK, FastGemmMatchesReferenceForOneToSeventeenVectorsAndOddRowRanges) {
    IsaCapGuard guard;
    const int64_t rows = 29, cols = 768;
    for (GgmlType t : kTypes) {
        const auto w    = random_k(t, rows, cols, 21);
        const auto wdeq = dequantized(t, w, rows, cols);
        for (KernelIsa isa : {KernelIsa::scalar, KernelIsa::avx512}) {
            if (isa > best_kernel_isa()) continue;
            set_kernel_isa_cap(isa);
            for (int64_t n = 1; n <= 17; ++n) {
                const auto x = random_x(n, cols, static_cast<uint32_t>(100 + n));
                std::vector<uint8_t> xq(q8act_k_bytes(n, cols));
                quantize_q8act_k(xq.data(), x.data(), n, cols);
                for (auto [r0, r1] : {std::pair<int64_t, int64_t>{0, rows}, {3, 20}, {5, 6}}) {
                    const int64_t ldy = rows + 3;
                    std::vector<float> y(n * ldy, -7.0f), yr(n * ldy, -7.0f);
                    gemm_q8act_k(y.data(), ldy, t, w.data(), xq.data(), n, cols, r0, r1);
                    gemm_q8act_k_ref(yr.data(), ldy, t, w.data(), xq.data(), n, cols, r0, r1);
                    for (int64_t i = 0; i < n; ++i)
                        for (int64_t r = 0; r < ldy; ++r) {
                            const float got = y[i * ldy + r], want = yr[i * ldy + r];
                            if (r < r0 || r >= r1) {
                                ASSERT_EQ(got, -7.0f) << "wrote outside [r0, r1): n " << n << " row " << r;
                                continue;
                            }
                            ASSERT_NEAR(got, want, kKSumOrderRelTol * abs_dot(wdeq, r, x.data() + i * cols, cols))
                                << ggml_type_traits(t)->name << " " << kernel_isa_name(isa) << " n " << n << " row "
                                << r;
                        }
                }
            }
        }
    }
}

// A token's result must not depend on the batch it is in (a verification pass must equal decoding token by token).
TEST(Q8ActK, BatchedEqualsOneVectorAtATimeBitForBit) {
    const int64_t rows = 37, cols = 1024, n = 13;
    const auto x = random_x(n, cols, 8);
    std::vector<uint8_t> xq(q8act_k_bytes(n, cols));
    quantize_q8act_k(xq.data(), x.data(), n, cols);
    for (GgmlType t : kTypes) {
        const auto w = random_k(t, rows, cols, 6);
        std::vector<float> yb(n * rows), y1(rows);
        gemm_q8act_k(yb.data(), rows, t, w.data(), xq.data(), n, cols, 0, rows);
        for (int64_t i = 0; i < n; ++i) {
            gemm_q8act_k(y1.data(), rows, t, w.data(), xq.data() + i * q8act_k_bytes(1, cols), 1, cols, 0, rows);
            ASSERT_EQ(0, std::memcmp(y1.data(), yb.data() + i * rows, rows * sizeof(float)))
                << ggml_type_traits(t)->name << " vector " << i;
        }
    }
}

TEST(Q8ActK, RefusesOtherTypesAndWidths) {
    std::vector<uint8_t> w(4096), xq(q8act_k_bytes(1, 512));
    std::vector<float> y(4);
    EXPECT_THROW(gemm_q8act_k(y.data(), 1, GgmlType::Q8_0, w.data(), xq.data(), 1, 512, 0, 1), std::invalid_argument);
    EXPECT_THROW(gemm_q8act_k_ref(y.data(), 1, GgmlType::Q4_0, w.data(), xq.data(), 1, 512, 0, 1),
                 std::invalid_argument);
    EXPECT_THROW(gemm_q8act_k(y.data(), 1, GgmlType::Q4_K, w.data(), xq.data(), 1, 96, 0, 1), std::invalid_argument);
    std::vector<float> x(96);
    EXPECT_THROW(quantize_q8act_k(xq.data(), x.data(), 1, 96), std::invalid_argument);
}

TEST(Q8ActK, PreferredOnlyForKQuantsWithTheKernel) {
    IsaCapGuard guard;
    set_kernel_isa_cap(KernelIsa::avx2);
    EXPECT_FALSE(q8act_k_preferred(GgmlType::Q4_K));
    set_kernel_isa_cap(KernelIsa::avx512);
    EXPECT_EQ(q8act_k_preferred(GgmlType::Q4_K), best_kernel_isa() >= KernelIsa::avx512);
    EXPECT_EQ(q8act_k_preferred(GgmlType::Q6_K), best_kernel_isa() >= KernelIsa::avx512);
    EXPECT_FALSE(q8act_k_preferred(GgmlType::Q8_0));
    EXPECT_FALSE(q8act_k_preferred(GgmlType::Q3_K));
}
