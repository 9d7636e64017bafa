// Matrix-vector and small matrix-matrix products with weights in any supported GGUF type and f32 activations.
// Single-threaded over a row range [r0, r1): callers (core) split rows across threads. No allocation.
//   W: (rows, cols) row-major, each row `ggml_row_size(t, cols)` bytes, stored in type t
//   x: (cols) f32;   X: (n, cols) f32 row-major;   y: (rows) f32;   Y: (n, ldy) f32 row-major, writes Y[i][r0..r1)
// `_ref` versions are scalar and define the numerics; the fast versions take AVX2+FMA+F16C paths when
// cpu_features() has them (scalar fallback otherwise).
// Activations stay f32 everywhere (no int8 activation quantization): fast paths decode the exact dequantized
// weights and differ from `_ref` only in f32 summation order; dequantize_row is bit-exact with the reference.
// No BLAS calls and no threads: safe to call concurrently from any number of worker threads.
// Unsupported types, or cols not a multiple of the type's block size, throw std::invalid_argument.
#pragma once

#include "kernels/ggml_types.h"

#include <cstdint>

namespace speculum::kernels {

// True when gemv/gemm/dequantize support weights of type t (F32, F16, BF16, Q8_0, Q4_0, MXFP4, Q4_K, Q6_K).
bool kernels_support(GgmlType t);

// y[r] = dot(W[r, :], x) for r in [r0, r1)
void gemv_ref(float* y, GgmlType t, const void* w, const float* x, int64_t cols, int64_t r0, int64_t r1);
void gemv(float* y, GgmlType t, const void* w, const float* x, int64_t cols, int64_t r0, int64_t r1);

// Y[i][r] = dot(W[r, :], X[i, :]) for i < n, r in [r0, r1). Each weight row is read once for all n vectors,
// so a batched verification of n tokens costs about one pass over the weights.
void gemm_ref(float* y, int64_t ldy, GgmlType t, const void* w, const float* x, int64_t n, int64_t cols,
              int64_t r0, int64_t r1);
void gemm(float* y, int64_t ldy, GgmlType t, const void* w, const float* x, int64_t n, int64_t cols,
          int64_t r0, int64_t r1);

// y[0..n) = the n elements of one row of type t, as f32 (n a multiple of the type's block size).
void dequantize_row_ref(float* y, GgmlType t, const void* x, int64_t n);
void dequantize_row(float* y, GgmlType t, const void* x, int64_t n);

}  // namespace speculum::kernels
