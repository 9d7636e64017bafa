// Small per-vector operations of the forward pass: RMSNorm, rotary position embedding (llama.cpp's "normal" and
// "neox" modes, linear frequency scaling) and the SwiGLU / GeGLU gates. Shared by the reference and the fast path.
#pragma once

#include "core/model/hparams.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace speculum::model {

// y = x / sqrt(mean(x^2) + eps) * w;  y, x, w: (n). y may alias x.
inline void rms_norm(float* y, const float* x, const float* w, int64_t n, float eps) {
    double ss = 0.0;
    for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
    const float scale = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale * w[i];
}

// Rotates the first n_rot dims of each of n_heads heads of x ((n_heads, head_dim) row-major) by position pos.
// Pair i (i < n_rot/2) turns by angle pos * freq_scale * inv_freq[i]; `normal` pairs dims (2i, 2i+1) (GGUF llama
// weights are permuted for this), `neox` pairs (i, i + n_rot/2). The rotated values are scaled by mscale (YaRN's
// magnitude correction; 1 otherwise), as ggml scales its cos and sin.
inline void rope(float* x, int32_t n_heads, int32_t head_dim, int32_t n_rot, const float* inv_freq, int32_t pos,
                 float freq_scale, RopeStyle style, float mscale = 1.0f) {
    const int32_t half = n_rot / 2;
    for (int32_t i = 0; i < half; ++i) {
        const float theta = static_cast<float>(pos) * freq_scale * inv_freq[i];
        const float c = std::cos(theta) * mscale, s = std::sin(theta) * mscale;
        const int32_t a = style == RopeStyle::normal ? 2 * i : i;
        const int32_t b = style == RopeStyle::normal ? 2 * i + 1 : i + half;
        for (int32_t h = 0; h < n_heads; ++h) {
            float* v       = x + static_cast<int64_t>(h) * head_dim;
            const float x0 = v[a], x1 = v[b];
            v[a] = x0 * c - x1 * s;
            v[b] = x0 * s + x1 * c;
        }
    }
}

// gate[i] = silu(gate[i]) * up[i];  gate, up: (n)
inline void swiglu(float* gate, const float* up, int64_t n) {
    for (int64_t i = 0; i < n; ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

// gpt-oss's expert activation (ggml's swiglu_oai, alpha 1.702, limit 7): x = min(gate, 7), y = clamp(up, -7, 7),
// gate[i] = x sigmoid(1.702 x) (y + 1).
inline void swiglu_oai(float* gate, const float* up, int64_t n) {
    constexpr float kAlpha = 1.702f, kLimit = 7.0f;
    for (int64_t i = 0; i < n; ++i) {
        const float x = std::min(gate[i], kLimit);
        const float y = std::clamp(up[i], -kLimit, kLimit);
        gate[i]       = x / (1.0f + std::exp(kAlpha * (-x))) * (y + 1.0f);
    }
}

// gate[i] = gelu(gate[i]) * up[i] with the tanh approximation of GELU (Gemma's GeGLU), in f32. ggml looks the GELU up
// in an f16 table instead, which rounds its input and output to f16 (docs/models.md: parity tolerances).
inline void geglu(float* gate, const float* up, int64_t n) {
    constexpr float kSqrt2OverPi = 0.7978845608028654f, kCubic = 0.044715f;
    for (int64_t i = 0; i < n; ++i) {
        const float x = gate[i];
        gate[i]       = 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kCubic * x * x))) * up[i];
    }
}

}  // namespace speculum::model
