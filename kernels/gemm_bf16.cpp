// BF16 x BF16 GEMM (see gemm_bf16.h): scalar reference and the AVX-512 BF16 tile kernel.
// GCC 12's <immintrin.h> reductions trip -Wuninitialized (GCC bug 105593, fixed in GCC 13); the pragmas must precede
// the header.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "kernels/gemm_bf16.h"

#include "kernels/cpu_info.h"
#include "kernels/fp16.h"
#include "kernels/gemv.h"

#include <immintrin.h>

namespace speculum::kernels {

bool gemm_bf16act_available() {
    return cpu_features().avx512bf16 && kernel_isa() >= KernelIsa::avx512;
}

void round_bf16act(uint16_t* xb, const float* x, int64_t n, int64_t cols) {
    for (int64_t i = 0; i < n * cols; ++i) xb[i] = f32_to_bf16(x[i]);
}

void gemm_bf16act_ref(float* y, int64_t ldy, const void* w, const uint16_t* xb, int64_t n, int64_t cols, int64_t r0,
                      int64_t r1) {
    const auto* wb = static_cast<const uint16_t*>(w);
    for (int64_t r = r0; r < r1; ++r)
        for (int64_t i = 0; i < n; ++i) {
            float s = 0.0f;
            for (int64_t k = 0; k < cols; ++k) s += bf16_to_f32(wb[r * cols + k]) * bf16_to_f32(xb[i * cols + k]);
            y[i * ldy + r] = s;
        }
}

namespace {

#define SPECULUM_AVX512BF16 __attribute__((target("avx512f,avx512bw,avx512bf16")))

// Software prefetch into L2, this many rows ahead at the same column, while a tile streams its rows (as the f32
// kernels do, kernels/gemv_avx512.cpp): decode and short verification passes are DRAM streams, and one core needs
// several streams running ahead to approach its bandwidth.
constexpr int64_t kPrefetchRows = 8;

// R rows x T tokens of Y: R * T accumulators of 16 lanes, each lane summing pairs of products; 32 elements of k per
// step (one cache line of each row), the last step masked. PF: prefetch the rows kPrefetchRows ahead (the first
// token group of a row tile does; later groups find the rows in cache). Every (row, token) sum is the same
// sequence of operations whatever R, T and PF are, so a token's results do not depend on the batch it is in.
template <int R, int T, bool PF>
SPECULUM_AVX512BF16 void tile(float* y, int64_t ldy, const uint16_t* w, const uint16_t* xb, int64_t cols, int64_t r,
                              int64_t i) {
    __m512 acc[R][T];
#pragma GCC unroll 8
    for (int a = 0; a < R; ++a)
#pragma GCC unroll 6
        for (int t = 0; t < T; ++t) acc[a][t] = _mm512_setzero_ps();
    for (int64_t k = 0; k < cols; k += 32) {
        const int64_t left = cols - k;
        const __mmask32 m  = left >= 32 ? ~__mmask32(0) : (__mmask32(1) << left) - 1;
        if (PF) {
#pragma GCC unroll 8
            for (int a = 0; a < R; ++a)
                _mm_prefetch(reinterpret_cast<const char*>(w + (r + a + kPrefetchRows) * cols + k), _MM_HINT_T1);
        }
        __m512bh wv[R];
#pragma GCC unroll 8
        for (int a = 0; a < R; ++a) wv[a] = (__m512bh)_mm512_maskz_loadu_epi16(m, w + (r + a) * cols + k);
#pragma GCC unroll 6
        for (int t = 0; t < T; ++t) {
            const __m512bh xv = (__m512bh)_mm512_maskz_loadu_epi16(m, xb + (i + t) * cols + k);
#pragma GCC unroll 8
            for (int a = 0; a < R; ++a) acc[a][t] = _mm512_dpbf16_ps(acc[a][t], wv[a], xv);
        }
    }
#pragma GCC unroll 8
    for (int a = 0; a < R; ++a)
#pragma GCC unroll 6
        for (int t = 0; t < T; ++t) y[(i + t) * ldy + r + a] = _mm512_reduce_add_ps(acc[a][t]);
}

// Rows [r, r + R) against all n tokens: in one group when n <= 6 and R <= 4 (4 x 6 accumulators, 4 weights and one
// activation fit the 32 registers), else in groups of up to 4 (T = the group's size). A verification pass of 5 or 6
// tokens then reads each row tile once: split 4 + 1 or 4 + 2, the second group re-read the tile from L1 and reduced
// its accumulators again, which made 5 tokens cost half as much again as 4 (docs/performance-notebook.md, "Session
// 25").
template <int R, int T>
SPECULUM_AVX512BF16 void group(float* y, int64_t ldy, const uint16_t* w, const uint16_t* xb, int64_t cols, int64_t r,
                               int64_t i) {
    if (i == 0)
        tile<R, T, true>(y, ldy, w, xb, cols, r, i);
    else
        tile<R, T, false>(y, ldy, w, xb, cols, r, i);
}

template <int R>
SPECULUM_AVX512BF16 void row_block(float* y, int64_t ldy, const uint16_t* w, const uint16_t* xb, int64_t n,
                                   int64_t cols, int64_t r) {
    if constexpr (R <= 4) {
        if (n == 5) return group<R, 5>(y, ldy, w, xb, cols, r, 0);
        if (n == 6) return group<R, 6>(y, ldy, w, xb, cols, r, 0);
    }
    for (int64_t i = 0; i < n; i += 4) {
        const int64_t g = n - i < 4 ? n - i : 4;
        if (g == 4) group<R, 4>(y, ldy, w, xb, cols, r, i);
        if (g == 3) group<R, 3>(y, ldy, w, xb, cols, r, i);
        if (g == 2) group<R, 2>(y, ldy, w, xb, cols, r, i);
        if (g == 1) group<R, 1>(y, ldy, w, xb, cols, r, i);
    }
}

}  // namespace

void gemm_bf16act(float* y, int64_t ldy, const void* w, const uint16_t* xb, int64_t n, int64_t cols, int64_t r0,
                  int64_t r1) {
    if (!gemm_bf16act_available()) {
        gemm_bf16act_ref(y, ldy, w, xb, n, cols, r0, r1);
        return;
    }
    // Rows per tile: 8 for one or two tokens (decode: memory-bound, more concurrent streams), 4 otherwise (R * T
    // accumulators + R weights + 1 activation within the 32 registers for T <= 6; the shape prompts were tuned with).
    const auto* wb = static_cast<const uint16_t*>(w);
    int64_t r      = r0;
    if (n <= 2)
        for (; r + 8 <= r1; r += 8) row_block<8>(y, ldy, wb, xb, n, cols, r);
    for (; r + 4 <= r1; r += 4) row_block<4>(y, ldy, wb, xb, n, cols, r);
    for (; r < r1; ++r) row_block<1>(y, ldy, wb, xb, n, cols, r);
}

}  // namespace speculum::kernels
