// Self-draft weight and KV transforms against scalar references: exact pruning counts with deterministic ties,
// in-format zeroing, BF16 truncation, MXFP4 and Q8_0 re-encoding (hand-worked MXFP4 block), KV selection and
// truncation where the draft writes its cache.
#include "core/drafts/kv_transforms.h"
#include "core/drafts/weight_transforms.h"
#include "core/model/synthetic.h"
#include "kernels/fp16.h"
#include "kernels/gemv.h"
#include "kernels/prune.h"
#include "kernels/quant_blocks.h"
#include "kernels/quantize.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

namespace speculum::drafts {
namespace {

using kernels::GgmlType;

std::vector<float> dequant(const model::WeightView& v) {
    std::vector<float> out(static_cast<size_t>(v.rows * v.cols));
    for (int64_t r = 0; r < v.rows; ++r)
        kernels::dequantize_row_ref(&out[size_t(r * v.cols)], v.type, v.row(r), v.cols);
    return out;
}

model::WeightView random_matrix(GgmlType t, int64_t rows, int64_t cols, uint64_t seed, bool with_ties = false) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(rows * cols));
    for (float& v : x) v = with_ties ? float(int(nd(rng) * 2.0f)) * 0.25f : nd(rng);
    std::vector<uint8_t> bytes(kernels::ggml_row_size(t, uint64_t(cols)) * uint64_t(rows));
    for (int64_t r = 0; r < rows; ++r)
        kernels::quantize_row_ref(bytes.data() + kernels::ggml_row_size(t, uint64_t(cols)) * uint64_t(r), t,
                                  &x[size_t(r * cols)], cols);
    return model::make_owned_view(t, rows, cols, std::move(bytes));
}

TEST(DraftPrune, PruneCountIsTheFloorOfRatioTimesN) {
    EXPECT_EQ(prune_count(0.5f, 7), 3);
    EXPECT_EQ(prune_count(0.3f, 10), 3);
    EXPECT_EQ(prune_count(0.0f, 10), 0);
}

TEST(DraftPrune, PrunedMatrixKeepsEveryOtherWeightBitExact) {
    for (GgmlType t : {GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0}) {
        for (bool per_row : {true, false}) {
            const model::WeightView w = random_matrix(t, 24, 96, 21, /*with_ties=*/true);
            MatrixTransform tr;
            tr.prune_ratio               = 0.37f;
            tr.per_row                   = per_row;
            const TransformedMatrix fast = transform_matrix(w, tr), ref = transform_matrix_ref(w, tr);
            ASSERT_EQ(fast.view.n_bytes(), ref.view.n_bytes());
            EXPECT_EQ(std::memcmp(fast.view.data, ref.view.data, fast.view.n_bytes()), 0);
            EXPECT_EQ(fast.n_pruned, per_row ? 24 * prune_count(0.37f, 96) : prune_count(0.37f, 24 * 96));
            // Every surviving weight is the target's; every pruned one is 0 and no larger than any survivor of its row.
            const std::vector<float> a = dequant(w), b = dequant(fast.view);
            int64_t zeroed = 0;
            for (size_t i = 0; i < a.size(); ++i) {
                if (b[i] != a[i]) {
                    EXPECT_EQ(b[i], 0.0f);
                    ++zeroed;
                }
            }
            EXPECT_LE(zeroed, fast.n_pruned);  // weights that were already 0 stay 0
            if (per_row)
                for (int64_t r = 0; r < 24; ++r) {
                    float max_pruned = 0, min_kept = INFINITY;
                    for (int64_t c = 0; c < 96; ++c) {
                        const float v = std::abs(a[size_t(r * 96 + c)]);
                        if (b[size_t(r * 96 + c)] == 0.0f && a[size_t(r * 96 + c)] != 0.0f)
                            max_pruned = std::max(max_pruned, v);
                        if (b[size_t(r * 96 + c)] != 0.0f) min_kept = std::min(min_kept, v);
                    }
                    EXPECT_LE(max_pruned, min_kept);
                }
        }
    }
}

TEST(DraftPrune, WandaScoresUseChannelNorms) {
    const model::WeightView w = random_matrix(GgmlType::F32, 4, 32, 5);
    std::vector<float> norm(32, 1.0f);
    MatrixTransform mag;
    mag.prune_ratio       = 0.5f;
    MatrixTransform wanda = mag;
    wanda.channel_norm    = norm;
    // Uniform norms rank exactly like magnitudes.
    EXPECT_EQ(std::memcmp(transform_matrix(w, mag).view.data, transform_matrix(w, wanda).view.data, w.n_bytes()), 0);
    // A huge norm on channel 7 protects it; a zero norm on channel 3 prunes it in every row.
    norm[7]                    = 1e6f;
    norm[3]                    = 0.0f;
    const std::vector<float> a = dequant(w), b = dequant(transform_matrix(w, wanda).view);
    const std::vector<float> c = dequant(transform_matrix_ref(w, wanda).view);
    EXPECT_EQ(b, c);
    for (int64_t r = 0; r < 4; ++r) {
        EXPECT_EQ(b[size_t(r * 32 + 7)], a[size_t(r * 32 + 7)]);
        EXPECT_EQ(b[size_t(r * 32 + 3)], 0.0f);
    }
}

TEST(DraftTruncate, Bf16TruncationMatchesScalarBits) {
    for (GgmlType src : {GgmlType::F32, GgmlType::F16, GgmlType::BF16}) {
        const model::WeightView w = random_matrix(src, 8, 64, 17);
        for (int t = 0; t <= 7; ++t)
            for (MantissaRounding mode : {MantissaRounding::toward_zero, MantissaRounding::nearest_even}) {
                MatrixTransform tr;
                tr.format                 = WeightFormat::bf16;
                tr.trunc_bits             = t;
                tr.rounding               = mode;
                const TransformedMatrix f = transform_matrix(w, tr), r = transform_matrix_ref(w, tr);
                ASSERT_EQ(f.view.type, GgmlType::BF16);
                ASSERT_EQ(std::memcmp(f.view.data, r.view.data, f.view.n_bytes()), 0) << "t=" << t;
                const std::vector<float> x = dequant(w);
                const auto* h              = static_cast<const uint16_t*>(f.view.data);
                for (size_t i = 0; i < x.size(); ++i) {
                    const uint16_t base = kernels::f32_to_bf16(x[i]);
                    EXPECT_EQ(h[i] & ((1u << t) - 1), 0u);
                    if (mode == MantissaRounding::toward_zero) {
                        EXPECT_EQ(h[i], base & ~((1u << t) - 1)) << i;
                    }
                }
            }
    }
}

TEST(DraftTruncate, SpecialValuesMatchScalarBits) {
    // +-0, subnormals, +-inf, NaN and the largest finite floats through every BF16 truncation and the MXFP4 cast.
    std::vector<float> x = {0.0f, -0.0f,      1e-40f,      -1e-40f,         1e-45f, INFINITY, -INFINITY, NAN,
                            -NAN, 3.3895e38f, -3.3895e38f, 1.17549435e-38f, 1.0f,   -1.5f,    0.1f,      65504.0f};
    x.resize(32, 0.25f);
    std::vector<uint8_t> bytes(x.size() * 4);
    std::memcpy(bytes.data(), x.data(), bytes.size());
    const model::WeightView w = model::make_owned_view(GgmlType::F32, 1, 32, bytes);
    for (int t = 0; t <= 7; ++t)
        for (MantissaRounding mode : {MantissaRounding::toward_zero, MantissaRounding::nearest_even}) {
            MatrixTransform tr;
            tr.format                 = WeightFormat::bf16;
            tr.trunc_bits             = t;
            tr.rounding               = mode;
            const TransformedMatrix f = transform_matrix(w, tr), r = transform_matrix_ref(w, tr);
            EXPECT_EQ(std::memcmp(f.view.data, r.view.data, 64), 0) << "t=" << t;
            const auto* h = static_cast<const uint16_t*>(f.view.data);
            EXPECT_EQ(h[0], 0x0000);
            EXPECT_EQ(h[1], 0x8000);
            EXPECT_EQ(h[5], 0x7F80);
            EXPECT_EQ(h[6], 0xFF80);
            EXPECT_TRUE(std::isnan(kernels::bf16_to_f32(h[7])));
        }
    MatrixTransform mx;
    mx.format                 = WeightFormat::mxfp4;
    const TransformedMatrix a = transform_matrix(w, mx), b = transform_matrix_ref(w, mx);
    EXPECT_EQ(std::memcmp(a.view.data, b.view.data, a.view.n_bytes()), 0);
}

TEST(DraftCast, Mxfp4HandWorkedBlockAndQ8) {
    // Block max 2.2: floor(log2 2.2) = 1, scale 2^(1-2) = 0.5, E8M0 byte 126. Elements / 0.5 on the E2M1 grid:
    // 2.2 -> 4.4 -> 4; -0.3 -> -0.6 -> -0.5; 0.375 -> 0.75 (tie) -> 1 (even); 1.75 -> 3.5 (tie) -> 4;
    // 0.125 -> 0.25 (tie) -> 0; 1.3 -> 2.6 -> 3; -9 would be clamped but the max here is 2.2.
    std::vector<float> x(32, 0.0f);
    x[0] = 2.2f, x[1] = -0.3f, x[2] = 0.375f, x[3] = 1.75f, x[4] = 0.125f, x[5] = 1.3f;
    std::vector<uint8_t> bytes(kernels::ggml_row_size(GgmlType::F32, 32));
    std::memcpy(bytes.data(), x.data(), bytes.size());
    const model::WeightView w = model::make_owned_view(GgmlType::F32, 1, 32, bytes);
    MatrixTransform tr;
    tr.format                 = WeightFormat::mxfp4;
    const TransformedMatrix m = transform_matrix(w, tr);
    ASSERT_EQ(m.view.type, GgmlType::MXFP4);
    EXPECT_EQ(static_cast<const kernels::BlockMxfp4*>(m.view.data)->e, 126);
    const std::vector<float> y = dequant(m.view);
    EXPECT_EQ(y[0], 2.0f);
    EXPECT_EQ(y[1], -0.25f);
    EXPECT_EQ(y[2], 0.5f);
    EXPECT_EQ(y[3], 2.0f);
    EXPECT_EQ(y[4], 0.0f);
    EXPECT_EQ(y[5], 1.5f);
    // Clamp: a block of max 7 gets scale 1 (floor(log2 7) = 2); 7 -> 6.
    x.assign(32, 0.0f);
    x[0] = 7.0f, x[1] = -7.0f;
    std::memcpy(bytes.data(), x.data(), bytes.size());
    const std::vector<float> z =
        dequant(transform_matrix(model::make_owned_view(GgmlType::F32, 1, 32, bytes), tr).view);
    EXPECT_EQ(z[0], 6.0f);
    EXPECT_EQ(z[1], -6.0f);
    // Pruned + cast: pruned weights stay exactly zero after the cast; fast = reference.
    const model::WeightView big = random_matrix(GgmlType::BF16, 16, 128, 8);
    for (WeightFormat f : {WeightFormat::mxfp4, WeightFormat::q8_0}) {
        MatrixTransform pc;
        pc.prune_ratio            = 0.5f;
        pc.format                 = f;
        const TransformedMatrix a = transform_matrix(big, pc), b = transform_matrix_ref(big, pc);
        EXPECT_EQ(std::memcmp(a.view.data, b.view.data, a.view.n_bytes()), 0);
        const std::vector<float> v = dequant(a.view);
        EXPECT_GE(std::count(v.begin(), v.end(), 0.0f), 16 * 64);
    }
}

TEST(DraftKv, SelectionAndTruncationMatchReference) {
    std::mt19937 rng(1);
    std::normal_distribution<float> nd;
    for (float p : {0.0f, 0.25f, 0.5f, 0.9f})
        for (int t : {0, 3, 7}) {
            std::vector<float> a(4 * 48);
            for (float& v : a) v = nd(rng);
            a[5] = -0.0f, a[6] = 1e-40f;  // signed zero and a subnormal
            std::vector<float> b = a;
            const KvTransform tr{p, t, MantissaRounding::toward_zero};
            kv_transform_rows_ref(a.data(), 4, 48, tr);
            kv_transform_rows(b.data(), 4, 48, tr);
            ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0);
            for (int r = 0; r < 4; ++r) {
                int zeros = 0;
                for (int c = 0; c < 48; ++c) {
                    const float v = a[size_t(r * 48 + c)];
                    zeros += v == 0.0f;
                    uint32_t bits;
                    std::memcpy(&bits, &v, 4);
                    if (t > 0) {
                        EXPECT_EQ(bits & ((1u << (16 + t)) - 1), 0u);
                    }
                }
                EXPECT_GE(zeros, prune_count(p, 48));
            }
        }
}

}  // namespace
}  // namespace speculum::drafts
