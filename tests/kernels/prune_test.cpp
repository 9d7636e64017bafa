// Prune selection against its stable-sort reference (ties, NaN, exact counts), and zeroing one element inside each
// block layout without changing any other element.
#include "kernels/prune.h"
#include "kernels/gemv.h"
#include "kernels/ggml_types.h"
#include "kernels/quantize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

using namespace speculum::kernels;

TEST(PruneSelect, MatchesReferenceWithTiesNanAndExactCount) {
    std::mt19937 rng(3);
    for (int trial = 0; trial < 200; ++trial) {
        const int64_t n = 1 + rng() % 300;
        std::vector<float> s(static_cast<size_t>(n));
        for (float& v : s) v = float(rng() % 7);  // many ties
        if (trial % 10 == 0) s[0] = NAN;
        const int64_t k = static_cast<int64_t>(rng() % static_cast<uint32_t>(n + 1));
        std::vector<uint8_t> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
        prune_select_ref(a.data(), s.data(), n, k);
        prune_select(b.data(), s.data(), n, k);
        ASSERT_EQ(a, b) << "trial " << trial;
        EXPECT_EQ(std::count(a.begin(), a.end(), 1), k);
        if (trial % 10 == 0 && k < n) {
            EXPECT_EQ(a[0], 0) << "NaN scores are pruned last";
        }
    }
    // Ties go to the lower index first.
    const float s[5] = {1, 0, 1, 0, 1};
    uint8_t p[5];
    prune_select(p, s, 5, 3);
    EXPECT_EQ(std::vector<uint8_t>(p, p + 5), (std::vector<uint8_t>{1, 1, 0, 1, 0}));
}

TEST(ZeroElement, IsExactInEveryFormatAndTouchesNothingElse) {
    std::mt19937_64 rng(9);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q5_0,
                       GgmlType::MXFP4}) {
        ASSERT_TRUE(can_zero_in_place(t));
        std::vector<float> x(64);
        for (float& v : x) v = nd(rng);
        std::vector<uint8_t> row(ggml_row_size(t, 64));
        quantize_row_ref(row.data(), t, x.data(), 64);
        std::vector<float> before(64), after(64);
        dequantize_row_ref(before.data(), t, row.data(), 64);
        for (int64_t j : {0, 5, 16, 31, 33, 63}) zero_element(t, row.data(), j);
        dequantize_row_ref(after.data(), t, row.data(), 64);
        for (int64_t j = 0; j < 64; ++j) {
            const bool z = j == 0 || j == 5 || j == 16 || j == 31 || j == 33 || j == 63;
            EXPECT_EQ(after[size_t(j)], z ? 0.0f : before[size_t(j)]) << ggml_type_traits(t)->name << " " << j;
        }
    }
    EXPECT_FALSE(can_zero_in_place(GgmlType::Q4_K));
    std::vector<uint8_t> row(ggml_row_size(GgmlType::Q4_K, 256));
    EXPECT_THROW(zero_element(GgmlType::Q4_K, row.data(), 0), std::invalid_argument);
}
