// F16 x f32 prompt GEMM (see gemm_f16.h): scalar reference and the AVX-512 tile kernel.
// GCC 12's <immintrin.h> reductions trip -Wuninitialized (GCC bug 105593, fixed in GCC 13); the pragmas must precede
// the header.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "kernels/gemm_f16.h"

#include "kernels/cpu_info.h"
#include "kernels/fp16.h"
#include "kernels/gemv.h"

#include <algorithm>

#include <immintrin.h>

namespace speculum::kernels {

bool gemm_f16_available() {
    const CpuFeatures& f = cpu_features();
    return f.avx512f && f.avx512bw && f.avx512vl && f.f16c && kernel_isa() >= KernelIsa::avx512;
}

void gemm_f16_ref(float* y, int64_t ldy, const void* w, const float* x, int64_t n, int64_t cols, int64_t r0,
                  int64_t r1) {
    const auto* wh = static_cast<const uint16_t*>(w);
    for (int64_t r = r0; r < r1; ++r)
        for (int64_t i = 0; i < n; ++i) {
            float s = 0.0f;
            for (int64_t k = 0; k < cols; ++k) s += f16_to_f32(wh[r * cols + k]) * x[i * cols + k];
            y[i * ldy + r] = s;
        }
}

namespace {

#define SPECULUM_AVX512F16 __attribute__((target("avx512f,avx512bw,avx512vl,f16c")))

// Blocking: a task's tokens in blocks of kTokenBlock (their activations stay in L2 while the block's row tiles pass
// over them), and the columns in near-equal blocks of at most kMaxK (a tile's 4 weight rows and 6 activation rows
// of one block, 40 KiB at most, stay in L1 across the token groups). Tuned on Zen 5 with 256 x 1024 x {1024, 2816}
// products: 135 and 116 GMAC/s with two threads, against OpenBLAS's 88 and 91.
constexpr int64_t kRows       = 4;
constexpr int64_t kTokens     = 6;
constexpr int64_t kTokenBlock = 10 * kTokens;
constexpr int64_t kMaxK       = 1024;

// The four sums of a, b, c, d in lanes 0..3.
SPECULUM_AVX512F16 inline __m128 sum4(__m512 a, __m512 b, __m512 c, __m512 d) {
    const __m512 ab = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));  // per 128 bits: a b a b
    const __m512 cd = _mm512_add_ps(_mm512_unpacklo_ps(c, d), _mm512_unpackhi_ps(c, d));
    const __m512 s  = _mm512_add_ps(_mm512_shuffle_ps(ab, cd, 0x44), _mm512_shuffle_ps(ab, cd, 0xee));  // a b c d
    const __m256 h =
        _mm256_add_ps(_mm512_castps512_ps256(s), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s), 1)));
    return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

// Rows [r, r + R) x tokens [i, i + T) over columns [k0, k1): Y = the sums (First) or Y += them. R is 4 (one 4-lane
// store per token) or 1 (the rows left over). Every (row, token) result is the same sequence of operations whatever
// R, T, the token's group and the row range are, so a row gives the same bits in any task split (a compact draft's
// decoded rows give its dense copy's results, tests/core/draft_self_test.cpp).
template <int R, int T, bool First>
SPECULUM_AVX512F16 inline __attribute__((always_inline)) void tile(float* y, int64_t ldy, const uint16_t* w,
                                                                   const float* x, int64_t cols, int64_t k0,
                                                                   int64_t k1) {
    __m512 acc[R][T];
#pragma GCC unroll 4
    for (int a = 0; a < R; ++a)
#pragma GCC unroll 6
        for (int t = 0; t < T; ++t) acc[a][t] = _mm512_setzero_ps();
    for (int64_t k = k0; k < k1; k += 16) {
        const int64_t left = k1 - k;
        const __mmask16 m  = left >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << left) - 1);
        __m512 wv[R];
#pragma GCC unroll 4
        for (int a = 0; a < R; ++a) wv[a] = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, w + a * cols + k));
#pragma GCC unroll 6
        for (int t = 0; t < T; ++t) {
            const __m512 xv = _mm512_maskz_loadu_ps(m, x + t * cols + k);
#pragma GCC unroll 4
            for (int a = 0; a < R; ++a) acc[a][t] = _mm512_fmadd_ps(wv[a], xv, acc[a][t]);
        }
    }
#pragma GCC unroll 6
    for (int t = 0; t < T; ++t) {
        if constexpr (R == 4) {
            __m128 s = sum4(acc[0][t], acc[1][t], acc[2][t], acc[3][t]);
            if (!First) s = _mm_add_ps(s, _mm_loadu_ps(y + t * ldy));
            _mm_storeu_ps(y + t * ldy, s);
        } else {  // lane 0 of sum4: the same order of additions as a row of a 4-row tile
            const float s = _mm_cvtss_f32(sum4(acc[0][t], acc[0][t], acc[0][t], acc[0][t]));
            y[t * ldy]    = First ? s : y[t * ldy] + s;
        }
    }
}

template <int R, int T>
SPECULUM_AVX512F16 void tile_at(bool first, float* y, int64_t ldy, const uint16_t* w, const float* x, int64_t cols,
                                int64_t k0, int64_t k1) {
    if (first)
        tile<R, T, true>(y, ldy, w, x, cols, k0, k1);
    else
        tile<R, T, false>(y, ldy, w, x, cols, k0, k1);
}

// Rows [r, r + R) against tokens [i0, i1) over columns [k0, k1): groups of kTokens, then one group of the rest.
template <int R>
SPECULUM_AVX512F16 void row_block(float* y, int64_t ldy, const uint16_t* w, const float* x, int64_t cols, int64_t r,
                                  int64_t i0, int64_t i1, int64_t k0, int64_t k1) {
    const bool first   = k0 == 0;
    const uint16_t* wr = w + r * cols;
    int64_t i          = i0;
    for (; i + kTokens <= i1; i += kTokens)
        tile_at<R, kTokens>(first, y + i * ldy + r, ldy, wr, x + i * cols, cols, k0, k1);
    float* yi       = y + i * ldy + r;
    const float* xi = x + i * cols;
    switch (i1 - i) {
        case 5:
            return tile_at<R, 5>(first, yi, ldy, wr, xi, cols, k0, k1);
        case 4:
            return tile_at<R, 4>(first, yi, ldy, wr, xi, cols, k0, k1);
        case 3:
            return tile_at<R, 3>(first, yi, ldy, wr, xi, cols, k0, k1);
        case 2:
            return tile_at<R, 2>(first, yi, ldy, wr, xi, cols, k0, k1);
        case 1:
            return tile_at<R, 1>(first, yi, ldy, wr, xi, cols, k0, k1);
        default:
            return;
    }
}

SPECULUM_AVX512F16 void gemm_fast(float* y, int64_t ldy, const uint16_t* w, const float* x, int64_t n, int64_t cols,
                                  int64_t r0, int64_t r1) {
    const int64_t nk = (cols + kMaxK - 1) / kMaxK;
    const int64_t kb = ((cols + nk - 1) / nk + 15) / 16 * 16;  // near-equal column blocks, whole steps of 16
    for (int64_t i0 = 0; i0 < n; i0 += kTokenBlock) {
        const int64_t i1 = std::min(n, i0 + kTokenBlock);
        int64_t r        = r0;
        for (; r + kRows <= r1; r += kRows)
            for (int64_t k0 = 0; k0 < cols; k0 += kb)
                row_block<kRows>(y, ldy, w, x, cols, r, i0, i1, k0, std::min(cols, k0 + kb));
        for (; r < r1; ++r)
            for (int64_t k0 = 0; k0 < cols; k0 += kb)
                row_block<1>(y, ldy, w, x, cols, r, i0, i1, k0, std::min(cols, k0 + kb));
    }
}

}  // namespace

void gemm_f16(float* y, int64_t ldy, const void* w, const float* x, int64_t n, int64_t cols, int64_t r0, int64_t r1) {
    if (!gemm_f16_available()) {
        gemm_f16_ref(y, ldy, w, x, n, cols, r0, r1);
        return;
    }
    gemm_fast(y, ldy, static_cast<const uint16_t*>(w), x, n, cols, r0, r1);
}

}  // namespace speculum::kernels
