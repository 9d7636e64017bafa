// BF16 weights times BF16-rounded activations, for prompt batches (issue #23): `vdpbf16ps` does two products per f32
// lane, twice the multiply rate of f32 FMA, which is how llama.cpp's tinyBLAS multiplies BF16 on such CPUs. The
// activations are rounded to BF16 first (as llama.cpp does), so results differ from the f32-activation gemm by that
// rounding: the forward pass uses it only for batches of kernels' callers' choosing (ContextConfig.int8_activations:
// reduced-precision activations), never for decode or verification.
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
