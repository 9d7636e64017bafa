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
    b.d    = 0x3c00;  // 1.0
    b.dmin = 0x3800;  // 0.5
    b.scales[0] = 0x41;  // sc0 = 1; top bits 01 -> high bits of sc4
    b.scales[4] = 0x82;  // m0 = 2;  top bits 10 -> high bits of m4
    b.scales[8] = 0x53;  // sc4 low = 3, m4 low = 5  -> sc4 = 3 | 16 = 19, m4 = 5 | 32 = 37
    b.qs[0]  = 0x7a;     // element 0: low nibble 10 (sub-block 0); element 32: high nibble 7 (sub-block 1, sc=m=0)
    b.qs[64] = 0x0c;     // element 128: low nibble 12 (sub-block 4)
    std::vector<float> y(256), yf(256);
    dequantize_row_ref(y.data(), GgmlType::Q4_K, &b, 256);
    dequantize_row(yf.data(), GgmlType::Q4_K, &b, 256);
    EXPECT_EQ(y[0], 1.0f * 10 - 0.5f * 2);
    EXPECT_EQ(y[1], -1.0f);   // q = 0 -> -dmin * m0
    EXPECT_EQ(y[32], 0.0f);
    EXPECT_EQ(y[128], 19.0f * 12 - 0.5f * 37);
    EXPECT_EQ(y[160], 0.0f * 0 - 0.0f);  // sub-block 5 (high nibbles of qs[64..95]): sc5 = m5 = 0
    for (int j = 0; j < 256; ++j) ASSERT_EQ(yf[j], y[j]) << j;
}

TEST(KQuants, Q6_KHandBuiltBlock) {
    BlockQ6_K b;
    std::memset(&b, 0, sizeof b);
    b.d = 0x3800;  // 0.5
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
