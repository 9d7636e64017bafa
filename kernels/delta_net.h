// The Gated DeltaNet recurrence (Qwen 3.5's linear attention; llama.cpp's gated_delta_net op), one token of one
// value head at a time. The head's state is an (S x S) matrix M stored by value rows: M[j * S + i] = S[i][j] for key
// index i and value index j. One token with query q and key k (both L2-normalized, S each), value v (S), log-decay g
// and update strength beta does
//
//     M <- exp(g) M;   d_j = beta (v_j - <M_j, k>);   M_j <- M_j + d_j k;   o_j = <M_j, q> / sqrt(S)
//
// where M_j is row j (the new value a key retrieves is pulled toward v by beta). `_ref` is the plain loop;
// delta_net_head is the same arithmetic with independent partial sums the compiler vectorizes (results within
// float rounding: tests/kernels/delta_net_test.cpp names the tolerance).
#pragma once

#include <cstdint>

namespace speculum::kernels {

// One token of one head: M (S * S) updated in place; o (S) written unless null.
void delta_net_head_ref(int32_t S, float* M, const float* q, const float* k, const float* v, float g, float beta,
                        float* o);
void delta_net_head(int32_t S, float* M, const float* q, const float* k, const float* v, float g, float beta, float* o);

// The short causal convolution in front of it, for one token: out[c] = sum_j w[c * K + j] x_j[c], the K inputs
// x_0 .. x_{K-1} oldest first (window[0 .. K-2], then x), then SiLU. w is (channels, K).
void causal_conv_silu(int64_t channels, int32_t K, const float* w, const float* const* window, const float* x,
                      float* out);

// <a, b> over n floats with eight partial sums in a fixed order (vectorizes without -ffast-math; the attention's
// reference dot product uses it too).
inline float dot_f32(const float* a, const float* b, int32_t n) {
    float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int32_t i  = 0;
    for (; i + 8 <= n; i += 8)
        for (int32_t l = 0; l < 8; ++l) s[l] += a[i + l] * b[i + l];
    float t = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
    for (; i < n; ++i) t += a[i] * b[i];
    return t;
}

// x (n) scaled to unit L2 norm: x / max(|x|, eps) (ggml's l2_norm).
void l2_normalize(float* x, int32_t n, float eps);

}  // namespace speculum::kernels
