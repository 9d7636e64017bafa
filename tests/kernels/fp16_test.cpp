// Exact edge cases of the scalar f16/bf16 <-> f32 conversions (kernels/fp16.h), plus an exhaustive f16 round
// trip and a comparison against the F16C hardware conversion when the CPU has it.
#include "kernels/fp16.h"

#include "kernels/cpu_info.h"

#include <gtest/gtest.h>

#include <immintrin.h>
#include <cmath>
#include <limits>
#include <random>

using namespace speculum::kernels;

namespace {

float bits(uint32_t u) {
    return f32_from_bits(u);
}

__attribute__((target("f16c"))) uint16_t hw_f32_to_f16(float f) {
    return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}

}  // namespace

TEST(Fp16, DecodeEdgeCases) {
    EXPECT_EQ(f32_to_bits(f16_to_f32(0x0000)), 0x00000000u);
    EXPECT_EQ(f32_to_bits(f16_to_f32(0x8000)), 0x80000000u);  // -0 keeps its sign
    EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));     // smallest subnormal
    EXPECT_EQ(f16_to_f32(0x83ff), -1023.0f * std::ldexp(1.0f, -24));
    EXPECT_EQ(f16_to_f32(0x0400), std::ldexp(1.0f, -14));  // smallest normal
    EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
    EXPECT_EQ(f16_to_f32(0x7bff), 65504.0f);
    EXPECT_EQ(f16_to_f32(0x7c00), std::numeric_limits<float>::infinity());
    EXPECT_EQ(f16_to_f32(0xfc00), -std::numeric_limits<float>::infinity());
    EXPECT_TRUE(std::isnan(f16_to_f32(0x7e00)));
    EXPECT_TRUE(std::isnan(f16_to_f32(0x7c01)));  // signalling NaN stays NaN
}

TEST(Fp16, EncodeEdgeCasesAndTies) {
    EXPECT_EQ(f32_to_f16(0.0f), 0x0000);
    EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
    EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
    EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
    EXPECT_EQ(f32_to_f16(65519.99f), 0x7bff);  // just below the midpoint to 65536
    EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);   // tie with an odd mantissa rounds up, to inf
    EXPECT_EQ(f32_to_f16(1e10f), 0x7c00);
    EXPECT_EQ(f32_to_f16(-std::numeric_limits<float>::infinity()), 0xfc00);
    EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);
    EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);  // tie 0 / 1 subnormal step -> even 0
    EXPECT_EQ(f32_to_f16(std::ldexp(3.0f, -25)), 0x0002);  // tie 1 / 2 -> even 2
    EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25) * 1.0001f), 0x0001);
    EXPECT_EQ(f32_to_f16(-std::ldexp(1.0f, -26)), 0x8000);        // underflow keeps the sign
    EXPECT_EQ(f32_to_f16(std::ldexp(1023.5f, -24)), 0x0400);      // rounds up from subnormal to smallest normal
    EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie 1.0 / next -> even
    EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(3.0f, -11)), 0x3c02);  // tie odd / even -> even (up)
    EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3c01);
    const uint16_t qnan = f32_to_f16(std::numeric_limits<float>::quiet_NaN());
    EXPECT_EQ(qnan & 0x7c00, 0x7c00);
    EXPECT_NE(qnan & 0x03ff, 0);
    EXPECT_EQ(f32_to_f16(bits(0x7f800001u)) & 0x7fff, 0x7e00);  // signalling NaN -> quiet NaN, not inf
}

TEST(Fp16, ExhaustiveRoundTrip) {
    for (uint32_t h = 0; h < 0x10000; ++h) {
        const float f = f16_to_f32(static_cast<uint16_t>(h));
        if (std::isnan(f)) {
            EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(f)))) << h;
        } else {
            ASSERT_EQ(f32_to_f16(f), h) << std::hex << h;
        }
    }
}

TEST(Fp16, MatchesF16cHardwareOnRandomBits) {
    if (!cpu_features().f16c) GTEST_SKIP() << "no F16C";
    std::mt19937 rng(1234);
    // Bias exponents toward the f16 range so subnormal/normal/overflow boundaries are all exercised.
    std::uniform_int_distribution<uint32_t> exp_dist(100, 145), mant(0, 0x7fffff), sign(0, 1);
    for (int i = 0; i < 200000; ++i) {
        const uint32_t u = (sign(rng) << 31) | (exp_dist(rng) << 23) | mant(rng);
        ASSERT_EQ(f32_to_f16(bits(u)), hw_f32_to_f16(bits(u))) << std::hex << u;
    }
}

TEST(Bf16, EdgeCasesAndTies) {
    EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
    EXPECT_EQ(f32_to_bf16(-0.0f), 0x8000);
    EXPECT_EQ(f32_to_bf16(bits(0x3f808000u)), 0x3f80);  // tie, even below -> down
    EXPECT_EQ(f32_to_bf16(bits(0x3f818000u)), 0x3f82);  // tie, odd below -> up
    EXPECT_EQ(f32_to_bf16(bits(0x3f808001u)), 0x3f81);  // above the tie -> up
    EXPECT_EQ(f32_to_bf16(bits(0x3f807fffu)), 0x3f80);
    EXPECT_EQ(f32_to_bf16(bits(0x00000001u)), 0x0000);  // tiny subnormal rounds to +0
    EXPECT_EQ(f32_to_bf16(bits(0x00018000u)), 0x0002);  // subnormal tie, odd -> up (not flushed)
    EXPECT_EQ(f32_to_bf16(bits(0x7f7fffffu)), 0x7f80);  // FLT_MAX rounds to inf
    EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::infinity()), 0x7f80);
    EXPECT_EQ(f32_to_bf16(-std::numeric_limits<float>::infinity()), 0xff80);
    EXPECT_EQ(f32_to_bf16(bits(0x7f800001u)), 0x7fc0);  // signalling NaN with low payload -> quiet NaN
    EXPECT_EQ(f32_to_bf16(bits(0xffffffffu)), 0xffff);  // NaN stays NaN (no carry into the sign)
    EXPECT_EQ(f32_to_bits(bf16_to_f32(0xc0a0)), 0xc0a00000u);
    for (uint32_t h = 0; h < 0x10000; ++h) {
        const float f = bf16_to_f32(static_cast<uint16_t>(h));
        if (std::isnan(f))
            EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(f))));
        else
            ASSERT_EQ(f32_to_bf16(f), h);
    }
}
