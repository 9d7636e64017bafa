// Q4_K and Q6_K dequantization on hand-built super-blocks (ggml bit layout: packed 6-bit scales, split nibbles,
// 2-bit high planes), checked element by element against values worked out by hand.
#include "kernels/gemv.h"

#include "kernels/quant_blocks.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

using namespace speculum::kernels;

TEST(KQuants, Q4_KHandBuiltBlock) {
    BlockQ4_K b;
    std::memset(&b, 0, sizeof b);
    b.d         = 0x3c00;  // 1.0
    b.dmin      = 0x3800;  // 0.5
    b.scales[0] = 0x41;    // sc0 = 1; top bits 01 -> high bits of sc4
    b.scales[4] = 0x82;    // m0 = 2;  top bits 10 -> high bits of m4
    b.scales[8] = 0x53;    // sc4 low = 3, m4 low = 5  -> sc4 = 3 | 16 = 19, m4 = 5 | 32 = 37
    b.qs[0]     = 0x7a;    // element 0: low nibble 10 (sub-block 0); element 32: high nibble 7 (sub-block 1, sc=m=0)
    b.qs[64]    = 0x0c;    // element 128: low nibble 12 (sub-block 4)
    std::vector<float> y(256), yf(256);
    dequantize_row_ref(y.data(), GgmlType::Q4_K, &b, 256);
    dequantize_row(yf.data(), GgmlType::Q4_K, &b, 256);
    EXPECT_EQ(y[0], 1.0f * 10 - 0.5f * 2);
    EXPECT_EQ(y[1], -1.0f);  // q = 0 -> -dmin * m0
    EXPECT_EQ(y[32], 0.0f);
    EXPECT_EQ(y[128], 19.0f * 12 - 0.5f * 37);
    EXPECT_EQ(y[160], 0.0f * 0 - 0.0f);  // sub-block 5 (high nibbles of qs[64..95]): sc5 = m5 = 0
    for (int j = 0; j < 256; ++j) ASSERT_EQ(yf[j], y[j]) << j;
}

TEST(KQuants, Q6_KHandBuiltBlock) {
    BlockQ6_K b;
    std::memset(&b, 0, sizeof b);
    b.d         = 0x3800;  // 0.5
    b.scales[0] = 2, b.scales[1] = -3, b.scales[2] = 4, b.scales[4] = 1, b.scales[8] = 10;
    b.ql[0]  = 0x15;  // element 0: low nibble 5; element 64: high nibble 1
    b.qh[0]  = 0x02;  // element 0: high bits 2 -> q = 5 | 32 = 37
    b.ql[32] = 0x0f;  // element 32: low nibble 15, high bits (qh[0] >> 2) & 3 = 0
    b.ql[64] = 0x03;  // element 128 (second half): low nibble 3
    b.qh[32] = 0x03;  //   high bits 3 -> q = 3 | 48 = 51
    std::vector<float> y(256), yf(256);
    dequantize_row_ref(y.data(), GgmlType::Q6_K, &b, 256);
    dequantize_row(yf.data(), GgmlType::Q6_K, &b, 256);
    EXPECT_EQ(y[0], 0.5f * 2 * (37 - 32));
    EXPECT_EQ(y[16], 0.5f * -3 * (0 - 32));  // second 16 of the quarter uses the next scale
    EXPECT_EQ(y[32], 0.5f * 4 * (15 - 32));
    EXPECT_EQ(y[64], 0.5f * 1 * (1 - 32));
    EXPECT_EQ(y[128], 0.5f * 10 * (51 - 32));
    for (int j = 0; j < 256; ++j) ASSERT_EQ(yf[j], y[j]) << j;
}

// The 32-element legacy and non-linear types on hand-built blocks (ggml's layouts: element j in the low nibble of
// qs[j], element j + 16 in its high nibble, the fifth bit of element j in bit j of qh).
TEST(LegacyQuants, HandBuiltBlocks) {
    auto both = [](GgmlType t, const void* b) {
        std::vector<float> y(32), yf(32);
        dequantize_row_ref(y.data(), t, b, 32);
        dequantize_row(yf.data(), t, b, 32);
        for (int j = 0; j < 32; ++j) EXPECT_EQ(yf[j], y[j]) << ggml_type_traits(t)->name << " element " << j;
        return y;
    };
    BlockQ4_1 q41{};
    q41.d = 0x3800, q41.m = 0xbc00;  // 0.5, -1
    q41.qs[0] = 0x3a;                // element 0: 10; element 16: 3
    auto y    = both(GgmlType::Q4_1, &q41);
    EXPECT_EQ(y[0], 10 * 0.5f - 1);
    EXPECT_EQ(y[16], 3 * 0.5f - 1);
    EXPECT_EQ(y[1], -1.0f);

    BlockQ5_0 q50{};
    q50.d     = 0x3c00;                   // 1
    q50.qh[0] = 0x01, q50.qh[2] = 0x01;   // fifth bits of elements 0 and 16
    q50.qh[1] = 0x80;                     // and of element 15
    q50.qs[0] = 0x21, q50.qs[15] = 0x0f;  // element 0: 1, element 16: 2, element 15: 15, element 31: 0
    y = both(GgmlType::Q5_0, &q50);
    EXPECT_EQ(y[0], 17 - 16.0f);
    EXPECT_EQ(y[16], 18 - 16.0f);
    EXPECT_EQ(y[15], 31 - 16.0f);
    EXPECT_EQ(y[31], -16.0f);
    EXPECT_EQ(y[1], -16.0f);

    BlockQ5_1 q51{};
    q51.d = 0x4000, q51.m = 0x3c00;  // 2, 1
    q51.qh[3] = 0x80;                // fifth bit of element 31
    q51.qs[0] = 0x21, q51.qs[15] = 0xf0;
    y = both(GgmlType::Q5_1, &q51);
    EXPECT_EQ(y[0], 1 * 2 + 1.0f);
    EXPECT_EQ(y[16], 2 * 2 + 1.0f);
    EXPECT_EQ(y[31], 31 * 2 + 1.0f);
    EXPECT_EQ(y[15], 1.0f);

    BlockIq4Nl nl{};
    nl.d     = 0x3800;  // 0.5
    nl.qs[0] = 0xf0, nl.qs[3] = 0x78;
    y = both(GgmlType::IQ4_NL, &nl);
    EXPECT_EQ(y[0], -127 * 0.5f);
    EXPECT_EQ(y[16], 113 * 0.5f);
    EXPECT_EQ(y[3], 1 * 0.5f);
    EXPECT_EQ(y[19], -10 * 0.5f);
}

// Q5_K, Q3_K, Q2_K and IQ4_XS on hand-built super-blocks: each element checked against ggml's formula worked out by
// hand for the bits set here, and the fast decoder against the reference on every element.
TEST(KQuants, Q5_KQ3_KQ2_KAndIq4XsHandBuiltBlocks) {
    auto both = [](GgmlType t, const void* b) {
        std::vector<float> y(256), yf(256);
        dequantize_row_ref(y.data(), t, b, 256);
        dequantize_row(yf.data(), t, b, 256);
        for (int j = 0; j < 256; ++j) EXPECT_EQ(yf[j], y[j]) << ggml_type_traits(t)->name << " element " << j;
        return y;
    };
    BlockQ5_K q5{};
    q5.d = 0x3c00, q5.dmin = 0x3800;     // 1, 0.5
    q5.scales[0] = 3, q5.scales[4] = 2;  // sub-block 0: sc 3, m 2
    q5.scales[1] = 5;                    // sub-block 1: sc 5, m 0
    q5.qs[0]     = 0x7a;                 // element 0: 10; element 32 (sub-block 1): 7
    q5.qh[0]     = 0x03;                 // fifth bits of elements 0 (bit 0) and 32 (bit 1)
    auto y       = both(GgmlType::Q5_K, &q5);
    EXPECT_EQ(y[0], 3.0f * 26 - 0.5f * 2);
    EXPECT_EQ(y[32], 5.0f * 23);
    EXPECT_EQ(y[1], -1.0f);

    BlockQ3_K q3{};
    q3.d           = 0x3800;  // 0.5
    q3.scales[0]   = 0x05;    // scale 0: low nibble 5, high bits (byte 8, bits 0-1) 2 -> 37 - 32 = 5
    q3.scales[8]   = 0x02;
    q3.scales[4]   = 0x30;  // scale 12: high nibble of byte 4 = 3, high bits (byte 8, bits 6-7) 0
    q3.qs[0]       = 0x0b;  // element 0: q 3 (bits 0-1); element 32: q 2 (bits 2-3)
    q3.hmask[0]    = 0x01;  // element 0 has its high bit (no - 4); element 32 (bit 1) does not
    q3.qs[32 + 16] = 0xc0;  // element 128 + 96 + 16 = 240: q 3 at shift 6, sub-block 8 + 6 + 1 = 15
    y              = both(GgmlType::Q3_K, &q3);
    EXPECT_EQ(y[0], 0.5f * 5 * 3);
    EXPECT_EQ(y[32], 0.5f * -32 * (2 - 4));  // sub-block 2: scale 0 - 32
    EXPECT_EQ(y[1], 0.5f * 5 * -4);
    int8_t sc[16];
    q3_k_scales(q3.scales, sc);
    EXPECT_EQ(sc[0], 5);
    EXPECT_EQ(sc[12], 3 - 32);
    EXPECT_EQ(sc[15], -32);
    EXPECT_EQ(y[240], 0.5f * -32 * (3 - 4));

    BlockQ2_K q2{};
    q2.d = 0x3c00, q2.dmin = 0x4000;           // 1, 2
    q2.scales[0] = 0x13, q2.scales[3] = 0x20;  // sub-block 0: sc 3, min 1; sub-block 3: sc 0, min 2
    q2.qs[0] = 0x0e;                           // element 0: q 2; element 32: q 3
    y        = both(GgmlType::Q2_K, &q2);
    EXPECT_EQ(y[0], 3.0f * 2 - 2.0f * 1);
    EXPECT_EQ(y[32], 0.0f);   // sub-block 2: sc 0, min 0
    EXPECT_EQ(y[48], -4.0f);  // sub-block 3: 0 * q - 2 * 2

    BlockIq4Xs xs{};
    xs.d           = 0x3800;                      // 0.5
    xs.scales_l[0] = 0x21, xs.scales_h = 0x0002;  // sub-block 0: 1 | 2 << 4 = 33 -> 1; sub-block 1: 2 | 0 -> -30
    xs.qs[0] = 0xf0, xs.qs[16] = 0x08;
    y = both(GgmlType::IQ4_XS, &xs);
    EXPECT_EQ(y[0], 0.5f * 1 * -127);
    EXPECT_EQ(y[16], 0.5f * 1 * 113);
    EXPECT_EQ(y[32], 0.5f * -30 * 1);  // code 8 -> level 1
}
