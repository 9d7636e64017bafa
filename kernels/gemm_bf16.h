// BF16 weights times BF16-rounded activations: `vdpbf16ps` does two products per f32 lane, twice the multiply rate of
// f32 FMA and no widening of the weights, which is how llama.cpp multiplies BF16 on such CPUs. The activations are
// rounded to BF16 first (as llama.cpp does), so results differ from the f32-activation gemm by that rounding. The
// forward pass uses it for BF16 weights at every batch size (decode, verification, prompts) when the caller asks for
// reduced-precision activations (ContextConfig.int8_activations); each (row, token) result is the same sequence of
// operations whatever the batch, so a token's logits do not depend on the batch it is in.
#pragma once

#include <cstdint>

namespace speculum::kernels {

// True when this CPU has the fast kernel (AVX-512 BF16) and the kernel cap allows AVX-512.
bool gemm_bf16act_available();

// xb[i * cols + k] = x[i * cols + k] rounded to BF16 (nearest even): n vectors of cols.
void round_bf16act(uint16_t* xb, const float* x, int64_t n, int64_t cols);

// Y[i][r] = sum_k W[r][k] * XB[i][k] for i < n, r in [r0, r1): W (rows, cols) BF16 row-major, XB (n, cols) BF16,
// Y row stride ldy. The reference sums in k order in f32; the fast kernel in pairs and 16 lanes (within
// kBf16GemmRelTol of the reference, tests/kernels/gemm_bf16_test.cpp). Any cols >= 1.
void gemm_bf16act_ref(float* y, int64_t ldy, const void* w, const uint16_t* xb, int64_t n, int64_t cols, int64_t r0,
                      int64_t r1);
void gemm_bf16act(float* y, int64_t ldy, const void* w, const uint16_t* xb, int64_t n, int64_t cols, int64_t r0,
                  int64_t r1);

}  // namespace speculum::kernels
