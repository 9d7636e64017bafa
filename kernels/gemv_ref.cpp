// Scalar reference GEMV/GEMM/dequantize for every supported weight type: the numerics the fast paths must match.
// A weight row is dequantized in chunks into a stack buffer and dotted with x in f32, left to right.
#include "kernels/gemv.h"

#include "kernels/fp16.h"
#include "kernels/gemv_detail.h"
#include "kernels/quant_blocks.h"

#include <cstring>
#include <stdexcept>
#include <string>

namespace speculum::kernels {

bool kernels_support(GgmlType t) {
    switch (t) {
        case GgmlType::F32:
        case GgmlType::F16:
        case GgmlType::BF16:
        case GgmlType::Q8_0:
        case GgmlType::Q4_0:
        case GgmlType::Q4_1:
        case GgmlType::Q5_0:
        case GgmlType::Q5_1:
        case GgmlType::IQ4_NL:
        case GgmlType::MXFP4:
        case GgmlType::Q2_K:
        case GgmlType::Q3_K:
        case GgmlType::Q4_K:
        case GgmlType::Q5_K:
        case GgmlType::Q6_K:
        case GgmlType::IQ4_XS:
        case GgmlType::Q8_0_X8:
            return true;
        default:
            return false;
    }
}

namespace detail {

void check_type_and_cols(const char* who, GgmlType t, int64_t cols) {
    if (!kernels_support(t)) {
        const GgmlTypeTraits* tr = ggml_type_traits(t);
        throw std::invalid_argument(std::string(who) + ": unsupported weight type " +
                                    (tr ? tr->name : std::to_string(static_cast<uint32_t>(t))));
    }
    const GgmlTypeTraits* tr = ggml_type_traits(t);
    if (cols < 0 || cols % tr->block_size != 0)
        throw std::invalid_argument(std::string(who) + ": " + std::to_string(cols) +
                                    " columns is not a multiple of the " + tr->name + " block size");
}

// y[0..n) = elements [e0, e0 + n) of a row (e0 and n multiples of the block size).
void dequantize_span_ref(float* y, GgmlType t, const void* row, int64_t e0, int64_t n) {
    const auto* bytes = static_cast<const uint8_t*>(row);
    switch (t) {
        case GgmlType::F32: {
            const auto* w = reinterpret_cast<const float*>(bytes) + e0;
            for (int64_t i = 0; i < n; ++i) y[i] = w[i];
            return;
        }
        case GgmlType::F16: {
            const auto* w = reinterpret_cast<const uint16_t*>(bytes) + e0;
            for (int64_t i = 0; i < n; ++i) y[i] = f16_to_f32(w[i]);
            return;
        }
        case GgmlType::BF16: {
            const auto* w = reinterpret_cast<const uint16_t*>(bytes) + e0;
            for (int64_t i = 0; i < n; ++i) y[i] = bf16_to_f32(w[i]);
            return;
        }
        case GgmlType::Q8_0: {
            const auto* b = reinterpret_cast<const BlockQ8_0*>(bytes) + e0 / kQK8_0;
            for (int64_t i = 0; i < n / kQK8_0; ++i) {
                const float d = f16_to_f32(b[i].d);
                for (int j = 0; j < kQK8_0; ++j) y[i * kQK8_0 + j] = b[i].qs[j] * d;
            }
            return;
        }
        case GgmlType::Q8_0_X8: {
            const auto* b = reinterpret_cast<const BlockQ8_0x8*>(bytes) + e0 / kQK8_0x8;
            for (int64_t i = 0; i < n / kQK8_0x8; ++i)
                for (int j = 0; j < 8; ++j) {
                    const float d = f16_to_f32(b[i].d[j]);
                    for (int m = 0; m < kQK8_0; ++m)
                        y[i * kQK8_0x8 + j * kQK8_0 + m] = (b[i].qs[q8_0_x8_index(j, m)] - 128) * d;
                }
            return;
        }
        case GgmlType::Q4_0: {
            const auto* b = reinterpret_cast<const BlockQ4_0*>(bytes) + e0 / kQK4_0;
            for (int64_t i = 0; i < n / kQK4_0; ++i) {
                const float d = f16_to_f32(b[i].d);
                for (int j = 0; j < kQK4_0 / 2; ++j) {
                    y[i * kQK4_0 + j]              = ((b[i].qs[j] & 0x0f) - 8) * d;
                    y[i * kQK4_0 + j + kQK4_0 / 2] = ((b[i].qs[j] >> 4) - 8) * d;
                }
            }
            return;
        }
        case GgmlType::Q4_1: {
            const auto* b = reinterpret_cast<const BlockQ4_1*>(bytes) + e0 / kQK4_0;
            for (int64_t i = 0; i < n / kQK4_0; ++i) {
                const float d = f16_to_f32(b[i].d), m = f16_to_f32(b[i].m);
                for (int j = 0; j < kQK4_0 / 2; ++j) {
                    y[i * kQK4_0 + j]              = static_cast<float>(b[i].qs[j] & 0x0f) * d + m;
                    y[i * kQK4_0 + j + kQK4_0 / 2] = static_cast<float>(b[i].qs[j] >> 4) * d + m;
                }
            }
            return;
        }
        case GgmlType::Q5_0:
        case GgmlType::Q5_1: {
            const bool one       = t == GgmlType::Q5_1;
            const uint64_t bsize = one ? sizeof(BlockQ5_1) : sizeof(BlockQ5_0);
            for (int64_t i = 0; i < n / kQK4_0; ++i) {
                const uint8_t* blk = bytes + (e0 / kQK4_0 + i) * bsize;
                uint16_t dh, mh = 0;
                std::memcpy(&dh, blk, 2);
                if (one) std::memcpy(&mh, blk + 2, 2);
                const uint8_t* qh = blk + (one ? 4 : 2);
                const uint8_t* qs = qh + 4;
                const uint32_t h  = q5_high_bits(qh);
                const float d = f16_to_f32(dh), m = f16_to_f32(mh);
                for (int j = 0; j < kQK4_0 / 2; ++j) {
                    const int q0      = (qs[j] & 0x0f) | static_cast<int>(((h >> j) & 1u) << 4);
                    const int q1      = (qs[j] >> 4) | static_cast<int>(((h >> (j + 16)) & 1u) << 4);
                    y[i * kQK4_0 + j] = one ? static_cast<float>(q0) * d + m : static_cast<float>(q0 - 16) * d;
                    y[i * kQK4_0 + j + kQK4_0 / 2] =
                        one ? static_cast<float>(q1) * d + m : static_cast<float>(q1 - 16) * d;
                }
            }
            return;
        }
        case GgmlType::IQ4_NL: {
            const auto* b = reinterpret_cast<const BlockIq4Nl*>(bytes) + e0 / kQK4_0;
            for (int64_t i = 0; i < n / kQK4_0; ++i) {
                const float d = f16_to_f32(b[i].d);
                for (int j = 0; j < kQK4_0 / 2; ++j) {
                    y[i * kQK4_0 + j]              = kIq4nlValues[b[i].qs[j] & 0x0f] * d;
                    y[i * kQK4_0 + j + kQK4_0 / 2] = kIq4nlValues[b[i].qs[j] >> 4] * d;
                }
            }
            return;
        }
        case GgmlType::MXFP4: {
            const auto* b = reinterpret_cast<const BlockMxfp4*>(bytes) + e0 / kQKMxfp4;
            for (int64_t i = 0; i < n / kQKMxfp4; ++i) {
                const float d = e8m0_to_f32_half(b[i].e);
                for (int j = 0; j < kQKMxfp4 / 2; ++j) {
                    y[i * kQKMxfp4 + j]                = kMxfp4Values[b[i].qs[j] & 0x0f] * d;
                    y[i * kQKMxfp4 + j + kQKMxfp4 / 2] = kMxfp4Values[b[i].qs[j] >> 4] * d;
                }
            }
            return;
        }
        case GgmlType::Q4_K: {
            const auto* b = reinterpret_cast<const BlockQ4_K*>(bytes) + e0 / kQK_K;
            for (int64_t i = 0; i < n / kQK_K; ++i) {
                const float d    = f16_to_f32(b[i].d);
                const float min  = f16_to_f32(b[i].dmin);
                const uint8_t* q = b[i].qs;
                float* out       = y + i * kQK_K;
                for (int g = 0; g < 4; ++g) {  // 64 elements: low nibbles, then high nibbles of 32 bytes
                    uint8_t sc, m;
                    q4_k_scale_min(2 * g, b[i].scales, &sc, &m);
                    const float d1 = d * sc, m1 = min * m;
                    q4_k_scale_min(2 * g + 1, b[i].scales, &sc, &m);
                    const float d2 = d * sc, m2 = min * m;
                    for (int l = 0; l < 32; ++l) out[64 * g + l] = d1 * (q[32 * g + l] & 0x0f) - m1;
                    for (int l = 0; l < 32; ++l) out[64 * g + 32 + l] = d2 * (q[32 * g + l] >> 4) - m2;
                }
            }
            return;
        }
        case GgmlType::Q5_K: {
            const auto* b = reinterpret_cast<const BlockQ5_K*>(bytes) + e0 / kQK_K;
            for (int64_t i = 0; i < n / kQK_K; ++i) {
                const float d = f16_to_f32(b[i].d), min = f16_to_f32(b[i].dmin);
                for (int s = 0; s < 8; ++s) {  // sub-block s: nibble s % 2 of qs[32 (s / 2) + l], bit s of qh[l]
                    uint8_t sc, m;
                    q4_k_scale_min(s, b[i].scales, &sc, &m);
                    const float d1 = d * sc, m1 = min * m;
                    for (int l = 0; l < 32; ++l) {
                        const int q =
                            ((b[i].qs[32 * (s / 2) + l] >> (4 * (s % 2))) & 0x0f) | (((b[i].qh[l] >> s) & 1) << 4);
                        y[i * kQK_K + 32 * s + l] = d1 * static_cast<float>(q) - m1;
                    }
                }
            }
            return;
        }
        case GgmlType::Q2_K:
        case GgmlType::Q3_K: {
            const bool q3 = t == GgmlType::Q3_K;
            for (int64_t i = 0; i < n / kQK_K; ++i) {
                const uint8_t* blk = bytes + (e0 / kQK_K + i) * (q3 ? sizeof(BlockQ3_K) : sizeof(BlockQ2_K));
                const auto& b3     = *reinterpret_cast<const BlockQ3_K*>(blk);
                const auto& b2     = *reinterpret_cast<const BlockQ2_K*>(blk);
                int8_t sc3[16];
                float d = 0, min = 0;
                if (q3)
                    q3_k_scales(b3.scales, sc3), d = f16_to_f32(b3.d);
                else
                    d = f16_to_f32(b2.d), min = f16_to_f32(b2.dmin);
                const uint8_t* qs = q3 ? b3.qs : b2.qs;
                for (int e = 0; e < kQK_K; ++e) {  // element 128 nh + 32 j + l
                    const int nh = e / 128, j = e % 128 / 32, l = e % 32, sub = 8 * nh + 2 * j + l / 16;
                    const int q = (qs[32 * nh + l] >> (2 * j)) & 3;
                    float v;
                    if (q3) {
                        const float dl = d * static_cast<float>(sc3[sub]);
                        v              = dl * static_cast<float>(q - (((b3.hmask[l] >> (4 * nh + j)) & 1) ? 0 : 4));
                    } else {
                        const float dl = d * static_cast<float>(b2.scales[sub] & 0x0f);
                        const float ml = min * static_cast<float>(b2.scales[sub] >> 4);
                        v              = dl * static_cast<float>(q) - ml;
                    }
                    y[i * kQK_K + e] = v;
                }
            }
            return;
        }
        case GgmlType::IQ4_XS: {
            const auto* b = reinterpret_cast<const BlockIq4Xs*>(bytes) + e0 / kQK_K;
            for (int64_t i = 0; i < n / kQK_K; ++i) {
                const float d = f16_to_f32(b[i].d);
                for (int ib = 0; ib < 8; ++ib) {
                    const float dl    = d * static_cast<float>(iq4_xs_scale(b[i], ib));
                    const uint8_t* qs = b[i].qs + 16 * ib;
                    for (int j = 0; j < 16; ++j) {
                        y[i * kQK_K + 32 * ib + j]      = dl * kIq4nlValues[qs[j] & 0x0f];
                        y[i * kQK_K + 32 * ib + j + 16] = dl * kIq4nlValues[qs[j] >> 4];
                    }
                }
            }
            return;
        }
        case GgmlType::Q6_K: {
            const auto* b = reinterpret_cast<const BlockQ6_K*>(bytes) + e0 / kQK_K;
            for (int64_t i = 0; i < n / kQK_K; ++i) {
                const float d = f16_to_f32(b[i].d);
                for (int half = 0; half < 2; ++half) {  // 128 elements from 64 ql bytes and 32 qh bytes
                    const uint8_t* ql = b[i].ql + 64 * half;
                    const uint8_t* qh = b[i].qh + 32 * half;
                    const int8_t* sc  = b[i].scales + 8 * half;
                    float* out        = y + i * kQK_K + 128 * half;
                    for (int l = 0; l < 32; ++l) {
                        const int is = l / 16;
                        const int q1 = ((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32;
                        const int q2 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
                        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                        out[l]       = d * sc[is + 0] * q1;
                        out[l + 32]  = d * sc[is + 2] * q2;
                        out[l + 64]  = d * sc[is + 4] * q3;
                        out[l + 96]  = d * sc[is + 6] * q4;
                    }
                }
            }
            return;
        }
        default:
            break;
    }
    throw std::invalid_argument("dequantize: unsupported weight type");
}

}  // namespace detail

void dequantize_row_ref(float* y, GgmlType t, const void* x, int64_t n) {
    detail::check_type_and_cols("dequantize_row", t, n);
    detail::dequantize_span_ref(y, t, x, 0, n);
}

void gemv_ref(float* y, GgmlType t, const void* w, const float* x, int64_t cols, int64_t r0, int64_t r1) {
    gemm_ref(y, 0, t, w, x, 1, cols, r0, r1);
}

void gemm_ref(float* y, int64_t ldy, GgmlType t, const void* w, const float* x, int64_t n, int64_t cols, int64_t r0,
              int64_t r1) {
    detail::check_type_and_cols("gemm", t, cols);
    const uint64_t row_bytes = ggml_row_size(t, static_cast<uint64_t>(cols));
    float buf[detail::kRefChunk];  // dequantized weights; a multiple of every block size
    for (int64_t r = r0; r < r1; ++r) {
        const auto* row = static_cast<const uint8_t*>(w) + static_cast<uint64_t>(r) * row_bytes;
        for (int64_t i = 0; i < n; ++i) {
            const float* xi = x + i * cols;
            float sum       = 0.0f;
            for (int64_t c0 = 0; c0 < cols; c0 += detail::kRefChunk) {
                const int64_t len = cols - c0 < detail::kRefChunk ? cols - c0 : detail::kRefChunk;
                detail::dequantize_span_ref(buf, t, row, c0, len);
                for (int64_t j = 0; j < len; ++j) sum += buf[j] * xi[c0 + j];
            }
            y[i * ldy + r] = sum;
        }
    }
}

}  // namespace speculum::kernels
