// Gated DeltaNet recurrence kernels (delta_net.h).
#include "kernels/delta_net.h"

#include <cmath>

namespace speculum::kernels {

void delta_net_head_ref(int32_t S, float* M, const float* q, const float* k, const float* v, float g, float beta,
                        float* o) {
    const float decay = std::exp(g), scale = 1.0f / std::sqrt(float(S));
    for (int64_t x = 0; x < int64_t(S) * S; ++x) M[x] *= decay;
    for (int32_t j = 0; j < S; ++j) {
        float* row = M + int64_t(j) * S;
        double mk  = 0;
        for (int32_t i = 0; i < S; ++i) mk += double(row[i]) * k[i];
        const float d = (v[j] - float(mk)) * beta;
        for (int32_t i = 0; i < S; ++i) row[i] += d * k[i];
        if (o) {
            double mq = 0;
            for (int32_t i = 0; i < S; ++i) mq += double(row[i]) * q[i];
            o[j] = float(mq) * scale;
        }
    }
}

void delta_net_head(int32_t S, float* M, const float* q, const float* k, const float* v, float g, float beta,
                    float* o) {
    const float decay = std::exp(g), scale = 1.0f / std::sqrt(float(S));
    // Row by row: decay, retrieve, correct and read out while the row is in L1.
    for (int32_t j = 0; j < S; ++j) {
        float* row = M + int64_t(j) * S;
        for (int32_t i = 0; i < S; ++i) row[i] *= decay;
        const float d = (v[j] - dot_f32(row, k, S)) * beta;
        for (int32_t i = 0; i < S; ++i) row[i] += d * k[i];
        if (o) o[j] = dot_f32(row, q, S) * scale;
    }
}

void causal_conv_silu(int64_t channels, int32_t K, const float* w, const float* const* window, const float* x,
                      float* out) {
    for (int64_t c = 0; c < channels; ++c) {
        const float* wc = w + c * K;
        float s         = 0.0f;
        for (int32_t j = 0; j + 1 < K; ++j) s += window[j][c] * wc[j];
        s += x[c] * wc[K - 1];
        out[c] = s / (1.0f + std::exp(-s));
    }
}

void l2_normalize(float* x, int32_t n, float eps) {
    double ss = 0;
    for (int32_t i = 0; i < n; ++i) ss += double(x[i]) * x[i];
    const float scale = 1.0f / std::fmax(float(std::sqrt(ss)), eps);
    for (int32_t i = 0; i < n; ++i) x[i] *= scale;
}

}  // namespace speculum::kernels
