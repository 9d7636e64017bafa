// F16 weights times f32 activations for prompt-sized batches, on AVX-512: each step widens 16 weights of 4 rows in
// registers (vcvtph2ps) and multiplies them by 16 activations of 6 tokens, 24 accumulators of 16 lanes. It replaces
// dequantizing tiles to f32 and OpenBLAS SGEMM for F16 prompts: Debian 12's OpenBLAS (0.3.21) does not know Zen 5
// and runs its AVX2 Haswell kernel there, and the tiles' conversion, OpenBLAS's packing and its zeroing of Y cost
// 12 % of an F16 prompt (docs/performance-notebook.md, "Session 27"). llama.cpp multiplies F16 prompts the same way
// (f32 FMA on widened weights).
#pragma once

#include <cstdint>

namespace speculum::kernels {

// True when this CPU has the fast kernel (AVX-512F with F16C) and the kernel cap allows AVX-512.
bool gemm_f16_available();

// Y[i][r] = sum_k W[r][k] * X[i][k] for i < n, r in [r0, r1): W (rows, cols) F16 row-major, X (n, cols) f32 with row
// stride cols, Y row stride ldy. The reference sums in k order in f32; the fast kernel in 16 lanes and in up to
// 1024-column blocks (within kF16GemmRelTol of the reference, tests/kernels/gemm_f16_test.cpp). Any
// cols >= 1; gemm_f16 falls back to the reference where the kernel is not available.
void gemm_f16_ref(float* y, int64_t ldy, const void* w, const float* x, int64_t n, int64_t cols, int64_t r0,
                  int64_t r1);
void gemm_f16(float* y, int64_t ldy, const void* w, const float* x, int64_t n, int64_t cols, int64_t r0, int64_t r1);

}  // namespace speculum::kernels
