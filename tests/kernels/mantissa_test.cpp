// Mantissa truncation (Cassandra, issue #5): bit-exact edge cases (+-0, subnormals, inf, NaN, ties, t = 0 and
// t = 7) for both rounding modes, and the AVX2 rows against the scalar reference on random bit patterns.
#include "kernels/mantissa.h"

#include "kernels/fp16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

using namespace speculum::kernels;

namespace {

constexpr MantissaRounding kRtz = MantissaRounding::toward_zero;
constexpr MantissaRounding kRne = MantissaRounding::nearest_even;

bool is_bf16_nan(uint16_t h) {
    return (h & 0x7f80) == 0x7f80 && (h & 0x7f) != 0;
}

}  // namespace

TEST(Mantissa, DefaultIsTowardZero) {
    EXPECT_EQ(truncate_mantissa_bf16_bits(0x3fff, 4), truncate_mantissa_bf16_bits(0x3fff, 4, kRtz));
    EXPECT_EQ(truncate_mantissa_bf16_bits(0x3fff, 4), 0x3ff0);
}

TEST(Mantissa, TZeroIsIdentityOnBf16) {
    for (uint32_t h = 0; h < 0x10000; ++h) {
        const auto b = static_cast<uint16_t>(h);
        if (is_bf16_nan(b)) continue;
        ASSERT_EQ(truncate_mantissa_bf16_bits(b, 0, kRtz), b);
        ASSERT_EQ(truncate_mantissa_bf16_bits(b, 0, kRne), b);
        ASSERT_EQ(truncate_mantissa_bf16(bf16_to_f32(b), 0, kRne), b);
    }
    // f32 input with t = 0: toward_zero drops the low 16 bits, nearest_even is f32 -> bf16 rounding
    EXPECT_EQ(truncate_mantissa_bf16(f32_from_bits(0x3f80ffffu), 0, kRtz), 0x3f80);
    EXPECT_EQ(truncate_mantissa_bf16(f32_from_bits(0x3f80ffffu), 0, kRne), f32_to_bf16(f32_from_bits(0x3f80ffffu)));
}

TEST(Mantissa, TSevenKeepsOnlySignAndExponent) {
    EXPECT_EQ(truncate_mantissa_bf16(1.75f, 7, kRtz), 0x3f80);   // 1.0
    EXPECT_EQ(truncate_mantissa_bf16(-1.75f, 7, kRtz), 0xbf80);  // -1.0: toward zero in magnitude
    EXPECT_EQ(truncate_mantissa_bf16(1.75f, 7, kRne), 0x4000);   // 2.0
    EXPECT_EQ(truncate_mantissa_bf16(1.25f, 7, kRne), 0x3f80);
    EXPECT_EQ(truncate_mantissa_bf16(1.5f, 7, kRne), 0x4000);         // tie: exponent 127 is odd -> up to 2.0
    EXPECT_EQ(truncate_mantissa_bf16(3.0f, 7, kRne), 0x4000);         // tie: exponent 128 is even -> down to 2.0
    EXPECT_EQ(truncate_mantissa_bf16_bits(0x7f7f, 7, kRne), 0x7f80);  // max finite rounds up to inf
    EXPECT_EQ(truncate_mantissa_bf16_bits(0x7f7f, 7, kRtz), 0x7f00);
}

TEST(Mantissa, TiesAtTheDefaultT4) {
    EXPECT_EQ(truncate_mantissa_bf16_bits(0x3fff, 4, kRne), 0x4000);  // carry into the exponent
    EXPECT_EQ(truncate_mantissa_bf16_bits(0x3f88, 4, kRne), 0x3f80);  // tie, kept bits even -> down
    EXPECT_EQ(truncate_mantissa_bf16_bits(0x3f98, 4, kRne), 0x3fa0);  // tie, kept bits odd -> up
    EXPECT_EQ(truncate_mantissa_bf16_bits(0xbf98, 4, kRne), 0xbfa0);  // sign does not matter
    EXPECT_EQ(truncate_mantissa_bf16_bits(0x3f98, 4, kRtz), 0x3f90);
    // f32 input is rounded once: just above the tie goes up, and just below a tie stays down even where
    // rounding through bf16 first would have created a tie that breaks upward (double rounding).
    EXPECT_EQ(truncate_mantissa_bf16(f32_from_bits(0x3f880001u), 4, kRne), 0x3f90);
    EXPECT_EQ(truncate_mantissa_bf16(f32_from_bits(0x3f97c000u), 4, kRne), 0x3f90);
    EXPECT_EQ(truncate_mantissa_bf16(f32_from_bits(0x3f97c000u), 4, kRtz), 0x3f90);
}

TEST(Mantissa, ZerosSubnormalsInfinities) {
    for (int t = 0; t <= 7; ++t) {
        for (MantissaRounding m : {kRtz, kRne}) {
            EXPECT_EQ(truncate_mantissa_bf16(0.0f, t, m), 0x0000);
            EXPECT_EQ(truncate_mantissa_bf16(-0.0f, t, m), 0x8000);
            EXPECT_EQ(truncate_mantissa_bf16(INFINITY, t, m), 0x7f80);
            EXPECT_EQ(truncate_mantissa_bf16(-INFINITY, t, m), 0xff80);
        }
    }
    EXPECT_EQ(truncate_mantissa_bf16_bits(0x0001, 1, kRtz), 0x0000);  // smallest subnormal
    EXPECT_EQ(truncate_mantissa_bf16_bits(0x0001, 1, kRne), 0x0000);  // tie, kept even -> 0
    EXPECT_EQ(truncate_mantissa_bf16_bits(0x0003, 1, kRne), 0x0004);  // tie, kept odd -> up
    EXPECT_EQ(truncate_mantissa_bf16_bits(0x8003, 1, kRne), 0x8004);
    EXPECT_EQ(truncate_mantissa_bf16_bits(0x007f, 7, kRne), 0x0080);  // largest subnormal -> smallest normal
    EXPECT_EQ(truncate_mantissa_bf16_bits(0x007f, 7, kRtz), 0x0000);
    EXPECT_EQ(truncate_mantissa_bf16_bits(0x0050, 4, kRtz), 0x0050);  // low bits already zero: unchanged
}

TEST(Mantissa, NanStaysNan) {
    for (int t = 0; t <= 7; ++t) {
        for (MantissaRounding m : {kRtz, kRne}) {
            EXPECT_EQ(truncate_mantissa_bf16_bits(0x7fc1, t, m), 0x7fc0);
            EXPECT_EQ(truncate_mantissa_bf16_bits(0xff81, t, m), 0xffc0);  // low payload only: not inf
            EXPECT_EQ(truncate_mantissa_bf16(f32_from_bits(0x7f800001u), t, m), 0x7fc0);
        }
    }
}

TEST(Mantissa, InvalidTThrows) {
    EXPECT_THROW(truncate_mantissa_bf16(1.0f, 8), std::invalid_argument);
    EXPECT_THROW(truncate_mantissa_bf16_bits(0x3f80, -1), std::invalid_argument);
    uint16_t out[1];
    const float in[1] = {1.0f};
    EXPECT_THROW(truncate_mantissa_row_bf16(out, in, 1, 9), std::invalid_argument);
}

TEST(Mantissa, FastRowsMatchReferenceExactly) {
    std::mt19937 rng(42);
    const int64_t n = 1003;  // not a multiple of 8: exercises the scalar tail
    std::vector<float> in(n);
    std::vector<uint16_t> in_bits(n);
    const uint32_t specials[] = {0x0u,        0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u,
                                 0xffffffffu, 0x00000001u, 0x007fffffu, 0x7f7fffffu, 0x3f880000u, 0x3f980000u};
    for (int64_t i = 0; i < n; ++i) {
        const uint32_t u = i < 12 ? specials[i] : static_cast<uint32_t>(rng());
        in[i]            = f32_from_bits(u);
        in_bits[i]       = static_cast<uint16_t>(rng());
    }
    for (int t = 0; t <= 7; ++t) {
        for (MantissaRounding m : {kRtz, kRne}) {
            std::vector<uint16_t> a(n), b(n);
            truncate_mantissa_row_bf16_ref(a.data(), in.data(), n, t, m);
            truncate_mantissa_row_bf16(b.data(), in.data(), n, t, m);
            ASSERT_EQ(a, b) << "f32 rows, t " << t;
            truncate_mantissa_row_bf16_bits_ref(a.data(), in_bits.data(), n, t, m);
            std::vector<uint16_t> inplace = in_bits;
            truncate_mantissa_row_bf16_bits(inplace.data(), inplace.data(), n, t, m);
            ASSERT_EQ(a, inplace) << "bf16 rows in place, t " << t;
            for (int64_t i = 0; i < n; ++i) {
                if (is_bf16_nan(a[i])) continue;
                ASSERT_EQ(a[i] & ((1u << t) - 1u), 0u) << "low t bits must be zero";
            }
        }
    }
}
