// Scalar reference of the quantized-activation path: activation quantization (ggml's q8_0 scheme with an f32
// scale and round-to-nearest-even) and the integer-dot GEMM over Q8_0 weights that defines its numerics.
#include "kernels/gemv.h"

#include "kernels/fp16.h"
#include "kernels/gemv_detail.h"
#include "kernels/quant_blocks.h"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

namespace speculum::kernels {

namespace detail {

void check_q8act_type(const char* who, GgmlType t, int64_t cols) {
    if (t != GgmlType::Q8_0 && t != GgmlType::Q4_0 && t != GgmlType::Q4_1 && t != GgmlType::Q5_0 &&
        t != GgmlType::Q5_1 && t != GgmlType::IQ4_NL && t != GgmlType::MXFP4 && t != GgmlType::Q4_K &&
        t != GgmlType::Q5_K && t != GgmlType::IQ4_XS && t != GgmlType::Q6_K && t != GgmlType::Q3_K &&
        t != GgmlType::Q2_K) {
        const GgmlTypeTraits* tr = ggml_type_traits(t);
        throw std::invalid_argument(
            std::string(who) + ": weight type " + (tr ? tr->name : std::to_string(static_cast<uint32_t>(t))) +
            " has no quantized-activation kernel (q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, mxfp4, q2_K .. q6_K, iq4_xs)");
    }
    check_type_and_cols(who, t, cols);
}

void check_q8act_k_type(const char* who, GgmlType t, int64_t cols) {
    if (t != GgmlType::Q4_K && t != GgmlType::Q5_K && t != GgmlType::Q6_K) {
        const GgmlTypeTraits* tr = ggml_type_traits(t);
        throw std::invalid_argument(std::string(who) + ": weight type " +
                                    (tr ? tr->name : std::to_string(static_cast<uint32_t>(t))) +
                                    " has no K-quant activation kernel (q4_K, q5_K, q6_K)");
    }
    check_type_and_cols(who, t, cols);
}

float quantize_block_q8act_ref(const float* xb, int8_t q[kQ8ActBlock], int32_t* sum) {
    float amax = 0.0f;
    for (int e = 0; e < kQ8ActBlock; ++e) amax = std::fmax(amax, std::fabs(xb[e]));
    // A block below 127 * FLT_MIN (all but zero) becomes all-zero with d = 0: 1 / d stays finite.
    const float d  = amax >= kQ8ActMinAmax ? amax / 127.0f : 0.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    *sum           = 0;
    for (int e = 0; e < kQ8ActBlock; ++e) {
        // |xb[e] * id| <= 127 up to one rounding, which cannot reach 127.5. NaN (no meaningful result) gives -128,
        // as the vector path's saturating conversion does.
        const float r = std::nearbyint(xb[e] * id);
        q[e]          = std::isnan(r) ? int8_t{-128} : static_cast<int8_t>(r);
        *sum += q[e];
    }
    return d;
}

}  // namespace detail

void quantize_q8act_ref(void* xq, const float* x, int64_t n, int64_t cols) {
    detail::check_type_and_cols("quantize_q8act", GgmlType::Q8_0, cols);
    const int64_t nb = cols / detail::kQ8ActBlock;
    for (int64_t i = 0; i < n; ++i) {
        auto* groups    = const_cast<detail::Q8ActGroup*>(detail::q8act_vec(xq, i, cols));
        const float* xi = x + i * cols;
        for (int64_t g = 0; g < detail::q8act_groups(cols); ++g) {
            detail::Q8ActGroup& grp = groups[g];
            for (int j = 0; j < detail::kQ8ActGroup; ++j) {
                const int64_t b = g * detail::kQ8ActGroup + j;
                float db        = 0.0f;
                int32_t sum     = 0;
                if (b < nb) {
                    int8_t q[detail::kQ8ActBlock];
                    db = detail::quantize_block_q8act_ref(xi + b * detail::kQ8ActBlock, q, &sum);
                    for (int e = 0; e < detail::kQ8ActBlock; ++e) grp.q[detail::q8act_index(e) + 8 * j] = q[e];
                } else {
                    for (int e = 0; e < detail::kQ8ActBlock; ++e) grp.q[detail::q8act_index(e) + 8 * j] = 0;
                }
                grp.off[2 * j]     = -128 * sum;
                grp.off[2 * j + 1] = 0;
                grp.d[2 * j] = grp.d[2 * j + 1] = db;
            }
        }
    }
}

namespace {

// The integer weights of block b of a row (int8: q8_0 as stored, q4_0 as nibble - 8, q5_0 as q - 16, q4_1 and q5_1
// as q, iq4_nl as its level, mxfp4 as doubled E2M1 values), the block's scale and its minimum (q4_1, q5_1; else 0),
// so that element e = w[e] * scale + min.
float block_ints(GgmlType t, const uint8_t* row, int64_t b, int8_t w[32], float* min) {
    *min = 0.0f;
    switch (t) {
        case GgmlType::Q4_1: {
            const auto& blk = reinterpret_cast<const BlockQ4_1*>(row)[b];
            for (int e = 0; e < 16; ++e) {
                w[e]      = static_cast<int8_t>(blk.qs[e] & 0x0f);
                w[e + 16] = static_cast<int8_t>(blk.qs[e] >> 4);
            }
            *min = f16_to_f32(blk.m);
            return f16_to_f32(blk.d);
        }
        case GgmlType::Q5_0:
        case GgmlType::Q5_1: {
            const bool one     = t == GgmlType::Q5_1;
            const uint8_t* blk = row + b * (one ? sizeof(BlockQ5_1) : sizeof(BlockQ5_0));
            const uint8_t* qh  = blk + (one ? 4 : 2);
            const uint8_t* qs  = qh + 4;
            const uint32_t h   = q5_high_bits(qh);
            for (int e = 0; e < 16; ++e) {
                const int q0 = (qs[e] & 0x0f) | static_cast<int>(((h >> e) & 1u) << 4);
                const int q1 = (qs[e] >> 4) | static_cast<int>(((h >> (e + 16)) & 1u) << 4);
                w[e]         = static_cast<int8_t>(one ? q0 : q0 - 16);
                w[e + 16]    = static_cast<int8_t>(one ? q1 : q1 - 16);
            }
            uint16_t dh, mh = 0;
            std::memcpy(&dh, blk, 2);
            if (one) std::memcpy(&mh, blk + 2, 2), *min = f16_to_f32(mh);
            return f16_to_f32(dh);
        }
        case GgmlType::Q4_K:
        case GgmlType::Q5_K: {  // 32-element block b = sub-block b % 8 of super-block b / 8
            const bool five   = t == GgmlType::Q5_K;
            const int s       = static_cast<int>(b % 8);
            const uint8_t* p  = row + (b / 8) * (five ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K));
            const auto& b4    = *reinterpret_cast<const BlockQ4_K*>(p);
            const auto& b5    = *reinterpret_cast<const BlockQ5_K*>(p);
            const uint8_t* qs = five ? b5.qs : b4.qs;
            for (int l = 0; l < 32; ++l) {
                int q = (qs[32 * (s / 2) + l] >> (4 * (s % 2))) & 0x0f;
                if (five) q |= ((b5.qh[l] >> s) & 1) << 4;
                w[l] = static_cast<int8_t>(q);
            }
            uint8_t sc, m;
            q4_k_scale_min(s, five ? b5.scales : b4.scales, &sc, &m);
            *min = -(f16_to_f32(five ? b5.dmin : b4.dmin) * m);
            return f16_to_f32(five ? b5.d : b4.d) * sc;
        }
        case GgmlType::IQ4_XS: {
            const auto& blk   = reinterpret_cast<const BlockIq4Xs*>(row)[b / 8];
            const int ib      = static_cast<int>(b % 8);
            const uint8_t* qs = blk.qs + 16 * ib;
            for (int e = 0; e < 16; ++e) {
                w[e]      = kIq4nlValues[qs[e] & 0x0f];
                w[e + 16] = kIq4nlValues[qs[e] >> 4];
            }
            return f16_to_f32(blk.d) * static_cast<float>(iq4_xs_scale(blk, ib));
        }
        case GgmlType::IQ4_NL: {
            const auto& blk = reinterpret_cast<const BlockIq4Nl*>(row)[b];
            for (int e = 0; e < 16; ++e) {
                w[e]      = kIq4nlValues[blk.qs[e] & 0x0f];
                w[e + 16] = kIq4nlValues[blk.qs[e] >> 4];
            }
            return f16_to_f32(blk.d);
        }
        case GgmlType::Q8_0: {
            const auto& blk = reinterpret_cast<const BlockQ8_0*>(row)[b];
            for (int e = 0; e < 32; ++e) w[e] = blk.qs[e];
            return f16_to_f32(blk.d);
        }
        case GgmlType::Q4_0: {
            const auto& blk = reinterpret_cast<const BlockQ4_0*>(row)[b];
            for (int e = 0; e < 16; ++e) {
                w[e]      = static_cast<int8_t>((blk.qs[e] & 0x0f) - 8);
                w[e + 16] = static_cast<int8_t>((blk.qs[e] >> 4) - 8);
            }
            return f16_to_f32(blk.d);
        }
        default: {  // MXFP4
            const auto& blk = reinterpret_cast<const BlockMxfp4*>(row)[b];
            for (int e = 0; e < 16; ++e) {
                w[e]      = kMxfp4Values[blk.qs[e] & 0x0f];
                w[e + 16] = kMxfp4Values[blk.qs[e] >> 4];
            }
            return e8m0_to_f32_half(blk.e);
        }
    }
}

// Q6_K, Q3_K and Q2_K: the integer weights of 32-element block b (q - 32; q - (h ? 0 : 4); q) and the scales of its
// two 16-element sub-blocks (d * sc, as the reference dequantizer rounds them), and for Q2_K their minima (-dmin * m).
void block_ints16(GgmlType t, const uint8_t* row, int64_t b, int8_t w[32], float d[2], float m[2]) {
    const int n = static_cast<int>(b % 8) / 4, qd = static_cast<int>(b % 4);  // half, quadrant
    m[0] = m[1] = 0.0f;
    if (t == GgmlType::Q2_K) {
        const auto& blk = reinterpret_cast<const BlockQ2_K*>(row)[b / 8];
        for (int l = 0; l < 32; ++l) w[l] = static_cast<int8_t>((blk.qs[32 * n + l] >> (2 * qd)) & 3);
        const float dd = f16_to_f32(blk.d), dm = f16_to_f32(blk.dmin);
        for (int h = 0; h < 2; ++h) {
            const uint8_t sc = blk.scales[8 * n + 2 * qd + h];
            d[h] = dd * static_cast<float>(sc & 0x0f), m[h] = -(dm * static_cast<float>(sc >> 4));
        }
        return;
    }
    if (t == GgmlType::Q6_K) {
        const auto& blk = reinterpret_cast<const BlockQ6_K*>(row)[b / 8];
        for (int l = 0; l < 32; ++l) {
            const int lo = (blk.ql[64 * n + 32 * (qd % 2) + l] >> (4 * (qd / 2))) & 0x0f;
            const int hi = (blk.qh[32 * n + l] >> (2 * qd)) & 3;
            w[l]         = static_cast<int8_t>((lo | (hi << 4)) - 32);
        }
        const float dd = f16_to_f32(blk.d);
        d[0] = dd * blk.scales[8 * n + 2 * qd], d[1] = dd * blk.scales[8 * n + 2 * qd + 1];
        return;
    }
    const auto& blk = reinterpret_cast<const BlockQ3_K*>(row)[b / 8];
    for (int l = 0; l < 32; ++l) {
        const int q = (blk.qs[32 * n + l] >> (2 * qd)) & 3;
        w[l]        = static_cast<int8_t>(q - (((blk.hmask[l] >> (4 * n + qd)) & 1) ? 0 : 4));
    }
    int8_t sc[16];
    q3_k_scales(blk.scales, sc);
    const float dd = f16_to_f32(blk.d);
    d[0] = dd * sc[8 * n + 2 * qd], d[1] = dd * sc[8 * n + 2 * qd + 1];
}

}  // namespace

void gemm_q8act_ref(float* y, int64_t ldy, GgmlType t, const void* w, const void* xq, int64_t n, int64_t cols,
                    int64_t r0, int64_t r1) {
    detail::check_q8act_type("gemm_q8act", t, cols);
    const uint64_t row_bytes = ggml_row_size(t, static_cast<uint64_t>(cols));
    const int64_t nb         = cols / detail::kQ8ActBlock;
    for (int64_t r = r0; r < r1; ++r) {
        const uint8_t* row = static_cast<const uint8_t*>(w) + r * row_bytes;
        for (int64_t i = 0; i < n; ++i) {
            const detail::Q8ActGroup* groups = detail::q8act_vec(xq, i, cols);
            float sum                        = 0.0f;
            for (int64_t b = 0; b < nb; ++b) {
                const detail::Q8ActGroup& grp = groups[b / detail::kQ8ActGroup];
                const int j                   = static_cast<int>(b % detail::kQ8ActGroup);
                int8_t wq[32];
                if (t == GgmlType::Q6_K || t == GgmlType::Q3_K || t == GgmlType::Q2_K) {  // two 16-element sub-blocks
                    float d2[2], m2[2];
                    block_ints16(t, row, b, wq, d2, m2);
                    for (int h = 0; h < 2; ++h) {
                        int32_t isum = 0, xsum = 0;
                        for (int e = 16 * h; e < 16 * h + 16; ++e) {
                            const int8_t xe = grp.q[detail::q8act_index(e) + 8 * j];
                            isum += wq[e] * xe, xsum += xe;
                        }
                        sum += d2[h] * grp.d[2 * j] * static_cast<float>(isum);
                        if (m2[h] != 0.0f) sum += m2[h] * grp.d[2 * j] * static_cast<float>(xsum);
                    }
                    continue;
                }
                float mw       = 0.0f;
                const float dw = block_ints(t, row, b, wq, &mw);
                int32_t isum   = 0;  // exact: |isum| <= 32 * 128 * 127
                for (int e = 0; e < detail::kQ8ActBlock; ++e) isum += wq[e] * grp.q[detail::q8act_index(e) + 8 * j];
                sum += dw * grp.d[2 * j] * static_cast<float>(isum);
                // the minimum times the block's activations: m * dx * sum(quants), the sum from the offset lane
                if (mw != 0.0f) sum += mw * grp.d[2 * j] * static_cast<float>(grp.off[2 * j] / -128);
            }
            y[i * ldy + r] = sum;
        }
    }
}

void quantize_q8act_k_ref(void* xq, const float* x, int64_t n, int64_t cols) {
    detail::check_type_and_cols("quantize_q8act_k", GgmlType::Q4_K, cols);
    for (int64_t i = 0; i < n; ++i) {
        auto* groups    = const_cast<detail::Q8ActKGroup*>(detail::q8act_k_vec(xq, i, cols));
        const float* xi = x + i * cols;
        for (int64_t g = 0; g < cols / 256; ++g) {
            detail::Q8ActKGroup& grp = groups[g];
            for (int j = 0; j < 8; ++j) {
                int8_t q[detail::kQ8ActBlock];
                int32_t sum    = 0;
                const float db = detail::quantize_block_q8act_ref(xi + 256 * g + 32 * j, q, &sum);
                int32_t lo     = 0;
                for (int e = 0; e < detail::kQ8ActBlock; ++e) {
                    grp.q[detail::q8act_k_index(j, e)] = q[e];
                    if (e < 16) lo += q[e];
                }
                grp.d[2 * j] = grp.d[2 * j + 1] = db;
                grp.s[2 * j]                    = db * static_cast<float>(sum);
                grp.s[2 * j + 1]                = 0.0f;
                grp.s16[2 * j]                  = db * static_cast<float>(lo);
                grp.s16[2 * j + 1]              = db * static_cast<float>(sum - lo);
            }
        }
    }
}

// As gemm_q8act_ref, block by block, on the K layout; the activation sums are counted from the quants.
void gemm_q8act_k_ref(float* y, int64_t ldy, GgmlType t, const void* w, const void* xq, int64_t n, int64_t cols,
                      int64_t r0, int64_t r1) {
    detail::check_q8act_k_type("gemm_q8act_k", t, cols);
    const uint64_t row_bytes = ggml_row_size(t, static_cast<uint64_t>(cols));
    const int64_t nb         = cols / detail::kQ8ActBlock;
    for (int64_t r = r0; r < r1; ++r) {
        const uint8_t* row = static_cast<const uint8_t*>(w) + r * row_bytes;
        for (int64_t i = 0; i < n; ++i) {
            const detail::Q8ActKGroup* groups = detail::q8act_k_vec(xq, i, cols);
            float sum                         = 0.0f;
            for (int64_t b = 0; b < nb; ++b) {
                const detail::Q8ActKGroup& grp = groups[b / 8];
                const int j                    = static_cast<int>(b % 8);
                const float dx                 = grp.d[2 * j];
                int8_t wq[32];
                if (t == GgmlType::Q6_K) {  // two 16-element sub-blocks
                    float d2[2], m2[2];
                    block_ints16(t, row, b, wq, d2, m2);
                    for (int h = 0; h < 2; ++h) {
                        int32_t isum = 0;
                        for (int e = 16 * h; e < 16 * h + 16; ++e) isum += wq[e] * grp.q[detail::q8act_k_index(j, e)];
                        sum += d2[h] * dx * static_cast<float>(isum);
                    }
                    continue;
                }
                float mw       = 0.0f;
                const float dw = block_ints(t, row, b, wq, &mw);
                int32_t isum = 0, xsum = 0;
                for (int e = 0; e < detail::kQ8ActBlock; ++e) {
                    const int8_t xe = grp.q[detail::q8act_k_index(j, e)];
                    isum += wq[e] * xe, xsum += xe;
                }
                sum += dw * dx * static_cast<float>(isum);
                if (mw != 0.0f) sum += mw * dx * static_cast<float>(xsum);
            }
            y[i * ldy + r] = sum;
        }
    }
}

}  // namespace speculum::kernels
