// Internal to the kernels: shared helpers of the reference and fast GEMV files (not a public API).
#pragma once

#include "kernels/ggml_types.h"

#include <cstdint>

namespace speculum::kernels::detail {

constexpr int64_t kRefChunk = 256;  // elements dequantized at a time by the reference (multiple of all blocks)

// Throws std::invalid_argument naming `who` when t is unsupported or cols is not a multiple of its block size.
void check_type_and_cols(const char* who, GgmlType t, int64_t cols);

// y[0..n) = elements [e0, e0 + n) of one row of type t (e0, n multiples of the block size).
void dequantize_span_ref(float* y, GgmlType t, const void* row, int64_t e0, int64_t n);

// AVX2 + FMA + F16C paths (gemv_avx2.cpp); callers check cpu_features() first.
// Returns false when the type has no AVX2 path (the caller then uses the reference).
bool gemm_avx2(float* y, int64_t ldy, GgmlType t, const void* w, const float* x, int64_t n, int64_t cols,
               int64_t r0, int64_t r1);
bool dequantize_row_avx2(float* y, GgmlType t, const void* x, int64_t n);

}  // namespace speculum::kernels::detail
