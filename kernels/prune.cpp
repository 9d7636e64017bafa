// Prune selection and in-layout zeroing (see prune.h).
#include "kernels/prune.h"

#include "kernels/quant_blocks.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <vector>

namespace speculum::kernels {

namespace {

// Selection order: smaller score first, then smaller index; NaN sorts as +inf.
inline float key(float s) {
    return std::isnan(s) ? std::numeric_limits<float>::infinity() : s;
}

}  // namespace

void prune_select_ref(uint8_t* pruned, const float* score, int64_t n, int64_t n_prune) {
    std::vector<int64_t> idx(static_cast<size_t>(n));
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return key(score[a]) < key(score[b]); });
    std::fill(pruned, pruned + n, uint8_t{0});
    for (int64_t i = 0; i < n_prune && i < n; ++i) pruned[idx[size_t(i)]] = 1;
}

void prune_select(uint8_t* pruned, const float* score, int64_t n, int64_t n_prune) {
    std::fill(pruned, pruned + n, uint8_t{0});
    if (n_prune <= 0) return;
    if (n_prune >= n) {
        std::fill(pruned, pruned + n, uint8_t{1});
        return;
    }
    // (score, index) is a strict total order, so the n_prune smallest are exactly the reference's set.
    std::vector<int64_t> idx(static_cast<size_t>(n));
    std::iota(idx.begin(), idx.end(), 0);
    auto less = [&](int64_t a, int64_t b) {
        const float ka = key(score[a]), kb = key(score[b]);
        return ka < kb || (ka == kb && a < b);
    };
    std::nth_element(idx.begin(), idx.begin() + (n_prune - 1), idx.end(), less);
    for (int64_t i = 0; i < n_prune; ++i) pruned[idx[size_t(i)]] = 1;
}

bool can_zero_in_place(GgmlType t) {
    return t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::BF16 || t == GgmlType::Q8_0 ||
           t == GgmlType::Q4_0 || t == GgmlType::Q5_0 || t == GgmlType::MXFP4 || t == GgmlType::Q8_0_X8;
}

void zero_element(GgmlType t, void* row, int64_t j) {
    switch (t) {
        case GgmlType::F32:
            static_cast<float*>(row)[j] = 0.0f;
            return;
        case GgmlType::F16:
        case GgmlType::BF16:
            static_cast<uint16_t*>(row)[j] = 0;
            return;
        case GgmlType::Q8_0:
            static_cast<BlockQ8_0*>(row)[j / kQK8_0].qs[j % kQK8_0] = 0;
            return;
        case GgmlType::Q8_0_X8: {  // quants are stored + 128
            auto& b = static_cast<BlockQ8_0x8*>(row)[j / kQK8_0x8];
            b.qs[q8_0_x8_index(static_cast<int>(j % kQK8_0x8 / 32), static_cast<int>(j % 32))] = 128;
            return;
        }
        case GgmlType::Q4_0:
        case GgmlType::MXFP4: {
            // Both keep element i (i < 16) in the low nibble of qs[i] and element i + 16 in its high nibble.
            const uint8_t zero = t == GgmlType::Q4_0 ? 8 : 0;
            uint8_t* qs        = t == GgmlType::Q4_0 ? static_cast<BlockQ4_0*>(row)[j / 32].qs
                                                     : static_cast<BlockMxfp4*>(row)[j / 32].qs;
            const int64_t i    = j % 32;
            uint8_t& b         = qs[i % 16];
            b = i < 16 ? static_cast<uint8_t>((b & 0xF0) | zero) : static_cast<uint8_t>((b & 0x0F) | (zero << 4));
            return;
        }
        case GgmlType::Q5_0: {  // q = 16 (low nibble 0, fifth bit set) is (16 - 16) * d = 0
            auto& b         = static_cast<BlockQ5_0*>(row)[j / 32];
            const int64_t i = j % 32;
            uint8_t& q      = b.qs[i % 16];
            q               = i < 16 ? static_cast<uint8_t>(q & 0xF0) : static_cast<uint8_t>(q & 0x0F);
            b.qh[i / 8] |= static_cast<uint8_t>(1u << (i % 8));
            return;
        }
        default:
            throw std::invalid_argument("zero_element: unsupported type");
    }
}

}  // namespace speculum::kernels
