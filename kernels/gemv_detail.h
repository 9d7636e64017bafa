// Internal to the kernels: shared helpers of the reference and fast GEMV files (not a public API).
#pragma once

#include "kernels/ggml_types.h"

#include <cstdint>
#include <type_traits>
#include <utility>

namespace speculum::kernels::detail {

// f(std::integral_constant<int, V>{}) for V = v clamped to [1, Max]: a run-time count (vectors of a batch, the
// low-byte width of a compact format) as the compile-time one a kernel template takes.
template <int Max, int V = 1, class F>
inline void with_count(int64_t v, F&& f) {
    if constexpr (V == Max)
        f(std::integral_constant<int, V>{});
    else if (v <= V)
        f(std::integral_constant<int, V>{});
    else
        with_count<Max, V + 1>(v, std::forward<F>(f));
}

constexpr int64_t kRefChunk = 256;  // elements dequantized at a time by the reference (multiple of all blocks)

// Throws std::invalid_argument naming `who` when t is unsupported or cols is not a multiple of its block size.
void check_type_and_cols(const char* who, GgmlType t, int64_t cols);

// y[0..n) = elements [e0, e0 + n) of one row of type t (e0, n multiples of the block size).
void dequantize_span_ref(float* y, GgmlType t, const void* row, int64_t e0, int64_t n);

// AVX2 + FMA + F16C paths (gemv_avx2.cpp); callers check cpu_features() first.
// Returns false when the type has no AVX2 path (the caller then uses the reference).
bool gemm_avx2(float* y, int64_t ldy, GgmlType t, const void* w, const float* x, int64_t n, int64_t cols, int64_t r0,
               int64_t r1);
bool dequantize_row_avx2(float* y, GgmlType t, const void* x, int64_t n);

// AVX-512 (F, BW, VL, DQ) paths with f32 activations (gemv_avx512.cpp); false when the type has none.
bool gemm_avx512(float* y, int64_t ldy, GgmlType t, const void* w, const float* x, int64_t n, int64_t cols, int64_t r0,
                 int64_t r1);

// ---- quantized activations (gemm_q8act) ----
// One quantized vector of `cols` elements (a multiple of 32; nb = cols / 32 blocks of 32) is ceil(nb / 4) groups of
// 4 blocks. Inside a group the quants are stored as four 32-byte registers, register k holding bytes 8k..8k+7 of
// blocks 0, 1, 2, 3 side by side, so one vpdpbusd over a register reduces each block into its own pair of int32
// lanes (2j, 2j + 1 for block j) and a group's four block sums need a single conversion and scaling. A group
// past the end of the vector (nb not a multiple of 4) has zero quants, scales and offsets.
constexpr int kQ8ActBlock     = 32;
constexpr int kQ8ActGroup     = 4;                         // blocks per group
constexpr float kQ8ActMinAmax = 127.0f * 1.17549435e-38f;  // blocks with a smaller max |x| quantize to zero (d = 0)
struct Q8ActGroup {
    int8_t q[kQ8ActGroup * kQ8ActBlock];  // element e of block j at index 32 * (e / 8) + 8 * j + e % 8
    int32_t off[8];                       // lane 2j: -128 * (sum of block j's quants); lane 2j + 1: 0. The VNNI
                                          // kernel offsets the weights by +128 (unsigned bytes); this cancels it
    float d[8];                           // lanes 2j and 2j + 1: scale of block j (element = quant * d)
};
static_assert(sizeof(Q8ActGroup) == 192, "Q8ActGroup must be 3 cache lines");
inline int64_t q8act_groups(int64_t cols) {
    return (cols / kQ8ActBlock + kQ8ActGroup - 1) / kQ8ActGroup;
}
inline uint64_t q8act_vec_bytes(int64_t cols) {
    return static_cast<uint64_t>(q8act_groups(cols)) * sizeof(Q8ActGroup);
}
inline int q8act_index(int e) {
    return 32 * (e / 8) + e % 8;
}  // + 8 * j for block j of the group
// The groups of quantized vector i.
inline const Q8ActGroup* q8act_vec(const void* xq, int64_t i, int64_t cols) {
    return reinterpret_cast<const Q8ActGroup*>(static_cast<const uint8_t*>(xq) +
                                               static_cast<uint64_t>(i) * q8act_vec_bytes(cols));
}
// Throws std::invalid_argument naming `who` unless t is Q8_0, Q4_0 or MXFP4 and cols a multiple of 32.
void check_q8act_type(const char* who, GgmlType t, int64_t cols);
void quantize_q8act_avx512(void* xq, const float* x, int64_t n, int64_t cols);
void gemm_q8act_avx512(float* y, int64_t ldy, GgmlType t, const void* w, const void* xq, int64_t n, int64_t cols,
                       int64_t r0, int64_t r1);

// Quantizes one block of 32 activations as quantize_q8act_ref does; returns its scale d, sets *sum to the quants' sum.
float quantize_block_q8act_ref(const float* xb, int8_t q[kQ8ActBlock], int32_t* sum);

// ---- Q8_0_X8 activations (gemm_q8act_x8) ----
// One vector of `cols` (a multiple of 256) is cols / 256 groups of 8 blocks, laid out like the weights' BlockQ8_0x8:
// element m of block j at q[q8_0_x8_index(j, m)], so one vpdpbusd over a 32-byte run leaves block j's partial dot in
// int32 lane j.
constexpr int kQ8ActX8Blocks = 8;
struct Q8ActX8Group {
    int8_t q[kQ8ActX8Blocks * kQ8ActBlock];
    int32_t off[kQ8ActX8Blocks];  // -128 * (sum of block j's quants): cancels the weights' + 128
    float d[kQ8ActX8Blocks];      // scale of block j
};
static_assert(sizeof(Q8ActX8Group) == 320, "Q8ActX8Group must be 5 cache lines");
inline const Q8ActX8Group* q8act_x8_vec(const void* xq, int64_t i, int64_t cols) {
    return reinterpret_cast<const Q8ActX8Group*>(static_cast<const uint8_t*>(xq)) + i * (cols / 256);
}
// ---- K-quant activations (gemm_q8act_k) ----
// One vector of `cols` (a multiple of 256) is cols / 256 groups of 8 blocks of 32, one per weight super-block, each
// block quantized as quantize_q8act does. Inside a group the quants are four 64-byte registers, register k holding
// elements 8k .. 8k+7 of blocks 0..7 side by side (element e of block j at 64 * (e / 8) + 8 * j + e % 8), so one
// 512-bit vpdpbusd reduces each block into its own pair of int32 lanes (2j, 2j + 1) and one conversion and FMA scale
// all eight. The row-independent terms are computed once here: d (the block scales), s (the minimum's term) and s16
// (the 16-element sub-blocks' sums, for Q6_K's offset).
struct Q8ActKGroup {
    int8_t q[256];
    float d[16];    // lanes 2j and 2j + 1: scale of block j
    float s[16];    // lane 2j: d_j * (sum of block j's quants); lane 2j + 1: 0
    float s16[16];  // lane 2j: d_j * (sum of quants 0..15 of block j); lane 2j + 1: of quants 16..31
};
static_assert(sizeof(Q8ActKGroup) == 448, "Q8ActKGroup must be 7 cache lines");
inline int q8act_k_index(int j, int e) {
    return 64 * (e / 8) + 8 * j + e % 8;
}
inline uint64_t q8act_k_vec_bytes(int64_t cols) {
    return static_cast<uint64_t>(cols / 256) * sizeof(Q8ActKGroup);
}
inline const Q8ActKGroup* q8act_k_vec(const void* xq, int64_t i, int64_t cols) {
    return reinterpret_cast<const Q8ActKGroup*>(xq) + i * (cols / 256);
}
// Throws std::invalid_argument naming `who` unless t is Q4_K, Q5_K or Q6_K and cols a positive multiple of 256.
void check_q8act_k_type(const char* who, GgmlType t, int64_t cols);
void quantize_q8act_k_avx512(void* xq, const float* x, int64_t n, int64_t cols);
void gemm_q8act_k_avx512(float* y, int64_t ldy, GgmlType t, const void* w, const void* xq, int64_t n, int64_t cols,
                         int64_t r0, int64_t r1);

// Throws std::invalid_argument naming `who` unless cols is a positive multiple of 256 (n >= 0).
void check_q8_0_x8_cols(const char* who, int64_t cols);
void quantize_q8act_x8_avx512(void* xq, const float* x, int64_t n, int64_t cols);
void gemm_q8act_x8_avx512(float* y, int64_t ldy, const void* w, const void* xq, int64_t n, int64_t cols, int64_t r0,
                          int64_t r1);

}  // namespace speculum::kernels::detail
