// Reference quantizers: hand-worked blocks with exact expected bytes (ggml layouts), and the
// dequantize(quantize(x)) error bounds for Q8_0, Q4_0 and MXFP4.
#include "kernels/quantize.h"

#include "kernels/fp16.h"
#include "kernels/gemv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

using namespace speculum::kernels;

namespace {

// |x - dq(q(x))| <= kFactor * (block scale) per element, plus the f16 rounding of the scale itself.
// The f16 scale is off by up to 2^-11 relative, times |q| <= 127 (Q8_0) or 8 (Q4_0) steps.
constexpr float kQ8RoundTripScaleFrac = 0.5f + 127.0f / 2048.0f;  // half a step + scale rounding
constexpr float kQ4RoundTripScaleFrac = 1.0f + 8.0f / 2048.0f;    // the clamp 16 -> 15 loses one full step
// Scaled block max is in [4, 8): below 6 the grid step is <= 2 (error <= 1 * X <= max/4); clamping [6, 8) to 6
// loses < 2 * X with X <= max/6, i.e. < max/3.
constexpr float kMxfp4MaxRelToBlockMax = 1.0f / 3.0f;

std::vector<float> random_row(int64_t n, uint32_t seed, float scale = 1.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, scale);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
}

}  // namespace

TEST(QuantizeQ8_0, HandWorkedBlock) {
    float x[32] = {};
    x[0] = 127.0f, x[1] = -127.0f, x[2] = 63.5f, x[3] = -0.5f, x[4] = 0.49f, x[5] = -63.5f;
    BlockQ8_0 b;
    quantize_row_q8_0_ref(&b, x, 32);
    EXPECT_EQ(b.d, 0x3c00);                                  // amax / 127 = 1.0
    const int8_t expected[6] = {127, -127, 64, -1, 0, -64};  // roundf: ties away from zero
    for (int j = 0; j < 6; ++j) EXPECT_EQ(b.qs[j], expected[j]) << j;
    for (int j = 6; j < 32; ++j) EXPECT_EQ(b.qs[j], 0);
}

TEST(QuantizeQ4_0, HandWorkedBlocks) {
    float x[64] = {};
    // block 0: the signed max is -8 -> d = 1; element 16 (= +8) clamps to 15
    x[0] = -8.0f, x[1] = 4.0f, x[2] = 1.0f, x[16] = 8.0f, x[17] = -3.5f, x[18] = 0.5f;
    // block 1: the signed max is +16 -> d = -2
    x[32] = 16.0f, x[33] = -16.0f, x[34] = 3.0f;
    BlockQ4_0 b[2];
    quantize_row_q4_0_ref(b, x, 64);
    EXPECT_EQ(b[0].d, 0x3c00);
    EXPECT_EQ(b[0].qs[0], 0xf0);  // low nibble elem 0 = 0, high nibble elem 16 = 15
    EXPECT_EQ(b[0].qs[1], 0x5c);  // 4 -> 12, -3.5 -> trunc(5.0) = 5
    EXPECT_EQ(b[0].qs[2], 0x99);  // 1 -> 9, 0.5 -> trunc(9.0) = 9
    for (int j = 3; j < 16; ++j) EXPECT_EQ(b[0].qs[j], 0x88) << j;
    EXPECT_EQ(b[1].d, 0xc000);    // -2.0
    EXPECT_EQ(b[1].qs[0], 0x80);  // 16 * -0.5 + 8.5 = 0.5 -> 0
    EXPECT_EQ(b[1].qs[1], 0x8f);  // -16 -> 16.5 -> min 15
    EXPECT_EQ(b[1].qs[2], 0x87);  // 3 * -0.5 + 8.5 = 7.0 -> 7
    float y[64];
    dequantize_row_ref(y, GgmlType::Q4_0, b, 64);
    EXPECT_EQ(y[0], -8.0f);
    EXPECT_EQ(y[16], 7.0f);
    EXPECT_EQ(y[32], 16.0f);
    EXPECT_EQ(y[33], -14.0f);
    EXPECT_EQ(y[34], 2.0f);
}

TEST(QuantizeMxfp4, WorkedVectorFromDesignNote) {
    float x[32] = {0.013f, -0.27f, 0.9f, -1.3f, 0.05f, 0.75f, -0.0f, 2.2f};
    BlockMxfp4 b;
    quantize_row_mxfp4_ref(&b, x, 32);
    EXPECT_EQ(b.e, 126);  // floor(log2 2.2) - 2 + 127
    const uint8_t expected[8] = {0x00, 0x09, 0x04, 0x0d, 0x00, 0x03, 0x00, 0x06};
    for (int j = 0; j < 8; ++j) EXPECT_EQ(b.qs[j], expected[j]) << j;
    for (int j = 8; j < 16; ++j) EXPECT_EQ(b.qs[j], 0);
    float y[32];
    dequantize_row_ref(y, GgmlType::MXFP4, &b, 32);
    const float dq[8] = {0.0f, -0.25f, 1.0f, -1.5f, 0.0f, 0.75f, 0.0f, 2.0f};
    for (int j = 0; j < 8; ++j) EXPECT_EQ(y[j], dq[j]) << j;
}

TEST(QuantizeMxfp4, TiesClampAndRoundingModes) {
    float x[32] = {0.75f, 1.75f, 3.5f, 5.0f, 0.25f, -2.5f, -7.9f};
    x[31]       = 4.0f;  // max |v| = 7.9 -> exponent 2 - 2 = 0 -> e = 127, scale 1
    BlockMxfp4 rne, away;
    quantize_row_mxfp4_ref(&rne, x, 32, Fp4Rounding::nearest_even);
    quantize_row_mxfp4_ref(&away, x, 32, Fp4Rounding::ties_away);
    EXPECT_EQ(rne.e, 127);
    const uint8_t exp_rne[7]  = {2, 4, 6, 6, 0, 12, 15};  // 1.0, 2.0, 4.0, 4.0, 0, -2.0, -6 (clamped)
    const uint8_t exp_away[7] = {2, 4, 6, 7, 1, 13, 15};  // 1.0, 2.0, 4.0, 6.0, 0.5, -3.0, -6
    for (int j = 0; j < 7; ++j) {
        EXPECT_EQ(rne.qs[j], exp_rne[j]) << j;
        EXPECT_EQ(away.qs[j], exp_away[j]) << j;
    }
    EXPECT_EQ(rne.qs[15], 0x60);  // element 31 (4.0 -> code 6) in the high nibble of qs[15]
}

TEST(QuantizeMxfp4, ZeroBlockAndExtremes) {
    float zeros[32] = {};
    BlockMxfp4 b;
    quantize_row_mxfp4_ref(&b, zeros, 32);
    EXPECT_EQ(b.e, 0);
    for (uint8_t q : b.qs) EXPECT_EQ(q, 0);
    float y[32];
    dequantize_row_ref(y, GgmlType::MXFP4, &b, 32);
    for (float v : y) EXPECT_EQ(v, 0.0f);
    // just below a power of two: floor(log2) must be -1, not 0 (log2f would round up here)
    float nearly_one[32] = {0.99999994f};
    quantize_row_mxfp4_ref(&b, nearly_one, 32);
    EXPECT_EQ(b.e, 124);
    EXPECT_EQ(b.qs[0], 7);  // 0.99999994 * 8 = 7.9999995 -> clamp to 6
    // tiny values: exponent clamps at 0 instead of wrapping
    float tiny[32] = {1e-40f};
    quantize_row_mxfp4_ref(&b, tiny, 32);
    EXPECT_EQ(b.e, 0);
    EXPECT_EQ(e8m0_to_f32_half(0), std::ldexp(1.0f, -128));
    EXPECT_EQ(e8m0_to_f32_half(1), std::ldexp(1.0f, -127));
    EXPECT_EQ(e8m0_to_f32_half(127), 0.5f);
    EXPECT_EQ(e8m0_to_f32_half(254), std::ldexp(1.0f, 126));
}

TEST(QuantizeMxfp4, E2m1EncodeSignsAndNaN) {
    EXPECT_EQ(e2m1_encode(-0.1f, Fp4Rounding::nearest_even), 0);  // rounds to zero: +0 code, as ggml
    EXPECT_EQ(e2m1_encode(-0.3f, Fp4Rounding::nearest_even), 9);
    EXPECT_EQ(e2m1_encode(-1e30f, Fp4Rounding::nearest_even), 15);
    EXPECT_EQ(e2m1_encode(std::nanf(""), Fp4Rounding::nearest_even), 0);
}

TEST(QuantizeRoundTrip, ErrorBounds) {
    const int64_t n            = 32 * 64;
    const std::vector<float> x = random_row(n, 7, 0.05f);
    std::vector<float> y(n);
    {
        std::vector<BlockQ8_0> q(n / 32);
        quantize_row_q8_0_ref(q.data(), x.data(), n);
        dequantize_row_ref(y.data(), GgmlType::Q8_0, q.data(), n);
        for (int64_t i = 0; i < n; ++i)
            ASSERT_LE(std::fabs(x[i] - y[i]), kQ8RoundTripScaleFrac * f16_to_f32(q[i / 32].d) + 1e-9f) << i;
    }
    {
        std::vector<BlockQ4_0> q(n / 32);
        quantize_row_q4_0_ref(q.data(), x.data(), n);
        dequantize_row_ref(y.data(), GgmlType::Q4_0, q.data(), n);
        for (int64_t i = 0; i < n; ++i)
            ASSERT_LE(std::fabs(x[i] - y[i]), kQ4RoundTripScaleFrac * std::fabs(f16_to_f32(q[i / 32].d))) << i;
    }
    {
        std::vector<BlockMxfp4> q(n / 32);
        quantize_row_mxfp4_ref(q.data(), x.data(), n);
        dequantize_row_ref(y.data(), GgmlType::MXFP4, q.data(), n);
        for (int64_t b = 0; b < n / 32; ++b) {
            float amax = 0.0f;
            for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b * 32 + j]));
            for (int j = 0; j < 32; ++j) {
                const int64_t i = b * 32 + j;
                ASSERT_LE(std::fabs(x[i] - y[i]), kMxfp4MaxRelToBlockMax * amax) << i;
            }
        }
    }
}

TEST(QuantizeRowRef, GenericEntryAndErrors) {
    const std::vector<float> x = random_row(64, 3);
    std::vector<uint8_t> buf(ggml_row_size(GgmlType::BF16, 64));
    quantize_row_ref(buf.data(), GgmlType::BF16, x.data(), 64);
    std::vector<float> y(64);
    dequantize_row_ref(y.data(), GgmlType::BF16, buf.data(), 64);
    for (int i = 0; i < 64; ++i) EXPECT_NEAR(y[i], x[i], std::fabs(x[i]) * (1.0f / 256.0f));
    EXPECT_THROW(quantize_row_ref(buf.data(), GgmlType::Q8_0, x.data(), 33), std::invalid_argument);
    EXPECT_THROW(quantize_row_ref(buf.data(), GgmlType::Q4_K, x.data(), 256), std::invalid_argument);
}

// Q4_1, Q5_0 and Q5_1 round trips: every element within half a step of the block's grid, plus what storing the
// scale and the minimum in f16 moves it (q * |d - f16(d)| <= 31 * 2^-11 d, and 2^-11 |m|).
TEST(QuantizeRowRef, LegacyFourAndFiveBitRoundTrips) {
    const std::vector<float> x = random_row(1024, 17);
    for (GgmlType t : {GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1}) {
        std::vector<uint8_t> buf(ggml_row_size(t, 1024));
        quantize_row_ref(buf.data(), t, x.data(), 1024);
        std::vector<float> y(1024);
        dequantize_row_ref(y.data(), t, buf.data(), 1024);
        const float levels = t == GgmlType::Q4_1 ? 15.0f : 31.0f;
        for (int b = 0; b < 32; ++b) {
            float lo = x[size_t(32 * b)], hi = lo, amax = 0;
            for (int j = 0; j < 32; ++j) {
                const float v = x[size_t(32 * b + j)];
                lo = std::min(lo, v), hi = std::max(hi, v), amax = std::max(amax, std::fabs(v));
            }
            const float d   = t == GgmlType::Q5_0 ? amax / 16.0f : (hi - lo) / levels;
            const float tol = 0.5f * d + 32 * d / 2048 + std::fabs(lo) / 2048 + 1e-7f;
            for (int j = 0; j < 32; ++j)
                ASSERT_LE(std::fabs(y[size_t(32 * b + j)] - x[size_t(32 * b + j)]), tol)
                    << ggml_type_traits(t)->name << " block " << b << " element " << j;
        }
    }
}

TEST(QuantizeMxfp4, GgmlModeMatchesGgmlTiesAndExponent) {
    float x[32] = {0.75f, 1.75f, 3.5f, 5.0f, 0.25f, -2.5f, -7.9f};
    BlockMxfp4 b;
    quantize_row_mxfp4_ref(&b, x, 32, Fp4Rounding::ggml);
    EXPECT_EQ(b.e, 127);
    const uint8_t expected[7] = {1, 3, 5, 6, 0, 12, 15};  // ties to the smaller magnitude: 0.5, 1.5, 3, 4, 0, -2
    for (int j = 0; j < 7; ++j) EXPECT_EQ(b.qs[j], expected[j]) << j;
    // max just below 16: floor(log2) is 3, but floorf(log2f()) as ggml computes it gives 4 (glibc log2f rounds
    // log2(16 - 2^-20) = 4 - 9e-8 to 4.0f; a libm that did not would make ggml itself pick e = 128)
    float y[32] = {f32_from_bits(0x417fffffu)};
    quantize_row_mxfp4_ref(&b, y, 32, Fp4Rounding::nearest_even);
    EXPECT_EQ(b.e, 128);
    EXPECT_EQ(b.qs[0], 7);  // 7.9999995 clamps to 6
    quantize_row_mxfp4_ref(&b, y, 32, Fp4Rounding::ggml);
    EXPECT_EQ(b.e, 129);
    EXPECT_EQ(b.qs[0], 6);  // 3.99999976 -> 4
}
