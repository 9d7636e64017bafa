// Random rows of the block types the tests cannot (or do not) quantize to: random bytes with sane f16 scales and
// minima, so every bit pattern of the quants is exercised (the gemv tests and the int8-activation tests share it).
#pragma once

#include "kernels/fp16.h"
#include "kernels/ggml_types.h"
#include "kernels/quant_blocks.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>

namespace speculum::test {

using kernels::GgmlType;

// The types the gemv tests fill with random blocks: those without a quantizer (the K-quants, IQ4_XS), and Q4_1,
// Q5_0, Q5_1, IQ4_NL, whose quantizers would leave some bit patterns unused.
inline bool random_blocks(GgmlType t) {
    return t == GgmlType::Q2_K || t == GgmlType::Q3_K || t == GgmlType::Q4_K || t == GgmlType::Q5_K ||
           t == GgmlType::Q6_K || t == GgmlType::IQ4_XS || t == GgmlType::Q4_1 || t == GgmlType::Q5_0 ||
           t == GgmlType::Q5_1 || t == GgmlType::IQ4_NL;
}

inline void random_block_row(uint8_t* row, GgmlType t, int64_t cols, std::mt19937& rng) {
    const uint64_t bytes = kernels::ggml_row_size(t, cols);
    for (uint64_t b = 0; b < bytes; ++b) row[b] = static_cast<uint8_t>(rng());
    std::uniform_real_distribution<float> scale(1e-4f, 2e-3f);
    const uint64_t bsize = kernels::ggml_type_traits(t)->type_size;
    for (int64_t i = 0; i < cols / static_cast<int64_t>(kernels::ggml_type_traits(t)->block_size); ++i) {
        uint8_t* blk = row + static_cast<uint64_t>(i) * bsize;
        auto put     = [&](size_t off, float v) {
            const uint16_t h = kernels::f32_to_f16(v);
            std::memcpy(blk + off, &h, 2);
        };
        switch (t) {
            case GgmlType::Q4_K:
            case GgmlType::Q5_K:
                put(0, scale(rng)), put(2, scale(rng));
                break;  // d, dmin
            case GgmlType::Q2_K:
                put(offsetof(kernels::BlockQ2_K, d), scale(rng)), put(offsetof(kernels::BlockQ2_K, dmin), scale(rng));
                break;
            case GgmlType::Q3_K:
                put(offsetof(kernels::BlockQ3_K, d), scale(rng) * 0.05f);
                break;
            case GgmlType::IQ4_XS:
                put(0, scale(rng) * 0.01f);
                break;
            case GgmlType::Q6_K:
                put(offsetof(kernels::BlockQ6_K, d), scale(rng) * 0.1f);
                break;
            case GgmlType::Q4_1:
            case GgmlType::Q5_1:
                put(0, scale(rng)), put(2, -16 * scale(rng));
                break;  // d, m
            default:
                put(0, scale(rng));
                break;  // d
        }
    }
}

}  // namespace speculum::test
