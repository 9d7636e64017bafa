// Reference quantizers: ggml's Q8_0/Q4_0/Q4_1/Q5_0/Q5_1 reference quantizers and the MXFP4 direct cast of ML-SpecQD.
#include "kernels/quantize.h"

#include "kernels/fp16.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

namespace speculum::kernels {

void quantize_row_q8_0_ref(BlockQ8_0* y, const float* x, int64_t n) {
    const int64_t nb = n / kQK8_0;
    for (int64_t i = 0; i < nb; ++i) {
        const float* xb = x + i * kQK8_0;
        float amax      = 0.0f;
        for (int j = 0; j < kQK8_0; ++j) amax = std::max(amax, std::fabs(xb[j]));
        const float d  = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d         = f32_to_f16(d);
        for (int j = 0; j < kQK8_0; ++j) y[i].qs[j] = static_cast<int8_t>(std::roundf(xb[j] * id));
    }
}

namespace {
// The signed value of largest magnitude among xb[0..n) (the first one wins on equal magnitudes): ggml's `max` of the
// Q4_0 / Q5_0 quantizers, which maps it onto the grid's most negative level.
float signed_absmax(const float* xb, int n) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; ++j)
        if (amax < std::fabs(xb[j])) amax = std::fabs(xb[j]), max = xb[j];
    return max;
}
}  // namespace

void quantize_row_q4_0_ref(BlockQ4_0* y, const float* x, int64_t n) {
    const int64_t nb = n / kQK4_0;
    for (int64_t i = 0; i < nb; ++i) {
        const float* xb = x + i * kQK4_0;
        const float d   = signed_absmax(xb, kQK4_0) / -8.0f;
        const float id  = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d          = f32_to_f16(d);
        for (int j = 0; j < kQK4_0 / 2; ++j) {
            // x * id lies in [-8, 8], so + 8.5 is in [0.5, 16.5]: truncation then min(15) as ggml does
            const int q0 = std::min(15, static_cast<int>(static_cast<int8_t>(xb[j] * id + 8.5f)));
            const int q1 = std::min(15, static_cast<int>(static_cast<int8_t>(xb[j + kQK4_0 / 2] * id + 8.5f)));
            y[i].qs[j]   = static_cast<uint8_t>(q0 | (q1 << 4));
        }
    }
}

void quantize_row_q4_1_ref(BlockQ4_1* y, const float* x, int64_t n) {
    for (int64_t i = 0; i < n / kQK4_0; ++i) {
        const float* xb     = x + i * kQK4_0;
        const auto [lo, hi] = std::minmax_element(xb, xb + kQK4_0);
        const float d       = (*hi - *lo) / 15.0f;
        const float id      = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d              = f32_to_f16(d);
        y[i].m              = f32_to_f16(*lo);
        for (int j = 0; j < kQK4_0 / 2; ++j) {
            const int q0 = std::min(15, static_cast<int>(static_cast<int8_t>((xb[j] - *lo) * id + 0.5f)));
            const int q1 = std::min(15, static_cast<int>(static_cast<int8_t>((xb[j + kQK4_0 / 2] - *lo) * id + 0.5f)));
            y[i].qs[j]   = static_cast<uint8_t>(q0 | (q1 << 4));
        }
    }
}

namespace {
// Stores 5-bit quants q[32] in a block's nibbles and fifth bits.
void store_q5(uint8_t qs[16], uint8_t qh[4], const int q[32]) {
    uint32_t h = 0;
    for (int j = 0; j < 16; ++j) {
        qs[j] = static_cast<uint8_t>((q[j] & 0x0f) | ((q[j + 16] & 0x0f) << 4));
        h |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
        h |= static_cast<uint32_t>((q[j + 16] >> 4) & 1) << (j + 16);
    }
    std::memcpy(qh, &h, 4);
}
}  // namespace

void quantize_row_q5_0_ref(BlockQ5_0* y, const float* x, int64_t n) {
    for (int64_t i = 0; i < n / kQK4_0; ++i) {
        const float* xb = x + i * kQK4_0;
        const float d   = signed_absmax(xb, kQK4_0) / -16.0f;
        const float id  = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d          = f32_to_f16(d);
        int q[32];
        for (int j = 0; j < kQK4_0; ++j) q[j] = std::min(31, static_cast<int>(static_cast<int8_t>(xb[j] * id + 16.5f)));
        store_q5(y[i].qs, y[i].qh, q);
    }
}

void quantize_row_q5_1_ref(BlockQ5_1* y, const float* x, int64_t n) {
    for (int64_t i = 0; i < n / kQK4_0; ++i) {
        const float* xb     = x + i * kQK4_0;
        const auto [lo, hi] = std::minmax_element(xb, xb + kQK4_0);
        const float d       = (*hi - *lo) / 31.0f;
        const float id      = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d              = f32_to_f16(d);
        y[i].m              = f32_to_f16(*lo);
        int q[32];
        for (int j = 0; j < kQK4_0; ++j) q[j] = std::min(31, static_cast<int>((xb[j] - *lo) * id + 0.5f));
        store_q5(y[i].qs, y[i].qh, q);
    }
}

void quantize_row_iq4_nl_ref(BlockIq4Nl* y, const float* x, int64_t n) {
    for (int64_t i = 0; i < n / kQK4_0; ++i) {
        const float* xb = x + i * kQK4_0;
        const float d   = signed_absmax(xb, kQK4_0) / -127.0f;  // the largest magnitude lands on the level -127
        const float id  = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d          = f32_to_f16(d);
        auto code       = [&](float v) {
            int best = 0;
            for (int c = 1; c < 16; ++c)
                if (std::fabs(v - kIq4nlValues[c]) < std::fabs(v - kIq4nlValues[best])) best = c;
            return best;
        };
        for (int j = 0; j < kQK4_0 / 2; ++j)
            y[i].qs[j] = static_cast<uint8_t>(code(xb[j] * id) | (code(xb[j + kQK4_0 / 2] * id) << 4));
    }
}

uint8_t e2m1_encode(float scaled, Fp4Rounding rounding) {
    // Magnitudes of codes 0..7; codes are monotonic and their parity is the E2M1 mantissa bit.
    static constexpr float kGrid[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    if (std::isnan(scaled)) return 0;
    const float a      = std::fabs(scaled);
    const uint8_t sign = std::signbit(scaled) ? 8 : 0;
    uint8_t code       = 7;  // a >= 6 (and inf) clamps to the max normal
    for (uint8_t c = 0; c < 7; ++c) {
        if (a >= kGrid[c + 1]) continue;
        const float mid = 0.5f * (kGrid[c] + kGrid[c + 1]);  // exact: grid values are small dyadic numbers
        if (a < mid)
            code = c;
        else if (a > mid)
            code = static_cast<uint8_t>(c + 1);
        else if (rounding == Fp4Rounding::ties_away)
            code = static_cast<uint8_t>(c + 1);
        else if (rounding == Fp4Rounding::ggml)
            code = c;  // first of two equal errors in ggml's search
        else
            code = (c & 1) ? static_cast<uint8_t>(c + 1) : c;
        break;
    }
    return code == 0 ? 0 : static_cast<uint8_t>(code | sign);
}

void quantize_row_mxfp4_ref(BlockMxfp4* y, const float* x, int64_t n, Fp4Rounding rounding) {
    const int64_t nb = n / kQKMxfp4;
    for (int64_t i = 0; i < nb; ++i) {
        const float* xb = x + i * kQKMxfp4;
        float amax      = 0.0f;
        for (int j = 0; j < kQKMxfp4; ++j) {
            const float a = std::fabs(xb[j]);
            if (a > amax) amax = a;  // NaN never compares greater: ignored
        }
        int e = 0;
        if (amax > 0.0f) {
            // ilogb is floor(log2) exactly; log2f can round up just below a power of two (kept for ggml mode)
            int lg = std::isinf(amax) ? 127 : std::ilogb(amax);
            if (rounding == Fp4Rounding::ggml && !std::isinf(amax)) lg = static_cast<int>(std::floor(std::log2(amax)));
            e = std::clamp(lg - 2 + 127, 0, 254);
        }
        y[i].e = static_cast<uint8_t>(e);
        for (int j = 0; j < kQKMxfp4 / 2; ++j) {
            // v / 2^(e-127): a power-of-two scale, exact barring f32 underflow
            const uint8_t c0 = e2m1_encode(std::ldexp(xb[j], 127 - e), rounding);
            const uint8_t c1 = e2m1_encode(std::ldexp(xb[j + kQKMxfp4 / 2], 127 - e), rounding);
            y[i].qs[j]       = static_cast<uint8_t>(c0 | (c1 << 4));
        }
    }
}

void quantize_row_ref(void* y, GgmlType t, const float* x, int64_t n) {
    const GgmlTypeTraits* tr = ggml_type_traits(t);
    if (!tr || n < 0 || n % tr->block_size != 0)
        throw std::invalid_argument(std::string("quantize_row_ref: bad type or row length ") + std::to_string(n));
    switch (t) {
        case GgmlType::F32:
            std::copy(x, x + n, static_cast<float*>(y));
            return;
        case GgmlType::F16: {
            auto* out = static_cast<uint16_t*>(y);
            for (int64_t i = 0; i < n; ++i) out[i] = f32_to_f16(x[i]);
            return;
        }
        case GgmlType::BF16: {
            auto* out = static_cast<uint16_t*>(y);
            for (int64_t i = 0; i < n; ++i) out[i] = f32_to_bf16(x[i]);
            return;
        }
        case GgmlType::Q8_0:
            quantize_row_q8_0_ref(static_cast<BlockQ8_0*>(y), x, n);
            return;
        case GgmlType::Q4_0:
            quantize_row_q4_0_ref(static_cast<BlockQ4_0*>(y), x, n);
            return;
        case GgmlType::Q4_1:
            quantize_row_q4_1_ref(static_cast<BlockQ4_1*>(y), x, n);
            return;
        case GgmlType::Q5_0:
            quantize_row_q5_0_ref(static_cast<BlockQ5_0*>(y), x, n);
            return;
        case GgmlType::Q5_1:
            quantize_row_q5_1_ref(static_cast<BlockQ5_1*>(y), x, n);
            return;
        case GgmlType::IQ4_NL:
            quantize_row_iq4_nl_ref(static_cast<BlockIq4Nl*>(y), x, n);
            return;
        case GgmlType::MXFP4:
            quantize_row_mxfp4_ref(static_cast<BlockMxfp4*>(y), x, n);
            return;
        default:
            break;
    }
    throw std::invalid_argument(std::string("quantize_row_ref: no quantizer for type ") + tr->name);
}

}  // namespace speculum::kernels
