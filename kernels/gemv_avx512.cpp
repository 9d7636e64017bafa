// AVX-512 GEMV/GEMM with f32 activations for F32, F16, BF16 and Q8_0 weights. Weights are decoded in registers to
// exactly the reference's values (so only the f32 summation order differs from gemm_ref) and applied to up to 8
// activation vectors at once: an R x NV register tile reads each weight from memory once per call for any n, so a
// batch costs one pass over the weights plus its FMAs. Other types return false (the AVX2 path takes them).
// Every function carries the target attribute and lives in an anonymous namespace (no AVX-512 code leaks via COMDAT).
#include "kernels/gemv_detail.h"

#include "kernels/fp16.h"
#include "kernels/quant_blocks.h"

// GCC 12 warns about the deliberately undefined registers inside the AVX-512 intrinsics (_mm512_undefined_*: GCC
// bug 105593, fixed in GCC 13); the pragmas must precede the header.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

#define SPECULUM_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))
#define SPECULUM_AVX512_INLINE \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c"), always_inline)) inline

namespace speculum::kernels::detail {

namespace {

constexpr int kUnit = 16;  // elements per zmm: the loop step; Q8_0 blocks (32) are two units
// Software prefetch into L2, kPrefetchRows rows ahead at the same column: while a tile streams its R rows, the rows
// one or two tiles further are fetched, so every row stream is already in L2 when its tile starts. Many concurrent
// streams, each running ahead, read faster from DRAM on one core than the hardware prefetcher alone (measured on
// Zen 4: an 8-row tile with this prefetch streams F16 at ~22 GB/s where a single row stream gets ~19).
constexpr int64_t kPrefetchRows = 8;

// ---- decoders: unit u (elements 16u .. 16u+15) of a row -> one zmm of the reference's f32 values ----
// `tail(row, u, k)`: the first k < 16 elements of unit u, the rest zero (plain types only: rows of any length).

struct DecF32 {
    static constexpr int64_t kBytesPer32 = 128;  // bytes per 32 elements (prefetch stepping)
    static constexpr int kPrefetchEvery  = 1;    // units per 64-byte line (prefetch one line per this many units)
    static constexpr bool kPlain         = true;
    static SPECULUM_AVX512_INLINE __m512 unit(const uint8_t* row, int64_t u) {
        return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + kUnit * u);
    }
    static SPECULUM_AVX512_INLINE __m512 tail(const uint8_t* row, int64_t u, __mmask16 m) {
        return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(row) + kUnit * u);
    }
};

struct DecF16 {
    static constexpr int64_t kBytesPer32 = 64;
    static constexpr int kPrefetchEvery  = 2;
    static constexpr bool kPlain         = true;
    static SPECULUM_AVX512_INLINE __m512 unit(const uint8_t* row, int64_t u) {
        return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * kUnit * u)));
    }
    static SPECULUM_AVX512_INLINE __m512 tail(const uint8_t* row, int64_t u, __mmask16 m) {
        return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, row + 2 * kUnit * u));
    }
};

struct DecBF16 {
    static constexpr int64_t kBytesPer32 = 64;
    static constexpr int kPrefetchEvery  = 2;
    static constexpr bool kPlain         = true;
    static SPECULUM_AVX512_INLINE __m512 widen(__m256i h) {
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
    static SPECULUM_AVX512_INLINE __m512 unit(const uint8_t* row, int64_t u) {
        return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * kUnit * u)));
    }
    static SPECULUM_AVX512_INLINE __m512 tail(const uint8_t* row, int64_t u, __mmask16 m) {
        return widen(_mm256_maskz_loadu_epi16(m, row + 2 * kUnit * u));
    }
};

// q * d with d the block's f16 scale: both factors exact in f32, one rounding, as the reference's dequantization.
struct DecQ8_0 {
    static constexpr int64_t kBytesPer32 = sizeof(BlockQ8_0);
    static constexpr int kPrefetchEvery  = 2;  // 34 bytes per 2 units: some lines are prefetched twice
    static constexpr bool kPlain         = false;
    static SPECULUM_AVX512_INLINE __m512 unit(const uint8_t* row, int64_t u) {
        const uint8_t* b = row + (u >> 1) * kBytesPer32;
        uint16_t dh;
        std::memcpy(&dh, b, 2);
        const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2 + kUnit * (u & 1)));
        return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), _mm512_set1_ps(_cvtsh_ss(dh)));
    }
    static SPECULUM_AVX512_INLINE __m512 tail(const uint8_t*, int64_t, __mmask16) { return _mm512_setzero_ps(); }
};

// ---- R rows x NV vectors over all columns ----
// acc[r][v] collects 16 lanes of row r . vector v; each weight unit is decoded once and used NV times, each
// activation unit loaded once and used R times. y[v * ldy + r] = the row sums. PF: issue the L2 prefetches (only
// the first vector group of a row tile does; later groups find the rows in cache).
template <class Dec, int R, int NV, bool PF>
SPECULUM_AVX512 void tile(float* y, int64_t ldy, const uint8_t* row0, uint64_t row_bytes, const float* x,
                          int64_t cols) {
    __m512 acc[R][NV];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_ps();
    const int64_t units  = cols / kUnit;
    const uint8_t* ahead = row0 + kPrefetchRows * row_bytes;
    for (int64_t u = 0; u < units; ++u) {
        if (PF && u % Dec::kPrefetchEvery == 0) {
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r)
                _mm_prefetch(reinterpret_cast<const char*>(ahead + r * row_bytes + u * Dec::kBytesPer32 / 2),
                             _MM_HINT_T1);
        }
        __m512 w[R];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) w[r] = Dec::unit(row0 + r * row_bytes, u);
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) {
            const __m512 xv = _mm512_loadu_ps(x + v * cols + kUnit * u);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) acc[r][v] = _mm512_fmadd_ps(w[r], xv, acc[r][v]);
        }
    }
    if constexpr (Dec::kPlain) {
        const int64_t rest = cols - units * kUnit;
        if (rest > 0) {
            const __mmask16 m = static_cast<__mmask16>((1u << rest) - 1u);
            __m512 w[R];
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) w[r] = Dec::tail(row0 + r * row_bytes, units, m);
#pragma GCC unroll 8
            for (int v = 0; v < NV; ++v) {
                const __m512 xv = _mm512_maskz_loadu_ps(m, x + v * cols + kUnit * units);
#pragma GCC unroll 8
                for (int r = 0; r < R; ++r) acc[r][v] = _mm512_fmadd_ps(w[r], xv, acc[r][v]);
            }
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) y[v * ldy + r] = _mm512_reduce_add_ps(acc[r][v]);
}

// Rows [r, r + R) against all n vectors, in groups of at most 4: the group loop is inside the row tile, so groups
// after the first read the tile's rows from L1/L2, and every weight comes from memory once per call.
template <class Dec, int R>
SPECULUM_AVX512 void row_tile(float* y, int64_t ldy, const uint8_t* rows, uint64_t row_bytes, const float* x, int64_t n,
                              int64_t cols) {
    for (int64_t i = 0; i < n; i += 4) {
        float* yi        = y + i * ldy;
        const float* xi  = x + i * cols;
        const int64_t nv = n - i < 4 ? n - i : 4;
        if (i == 0) {
            switch (nv) {
                case 1:
                    tile<Dec, R, 1, true>(yi, ldy, rows, row_bytes, xi, cols);
                    break;
                case 2:
                    tile<Dec, R, 2, true>(yi, ldy, rows, row_bytes, xi, cols);
                    break;
                case 3:
                    tile<Dec, R, 3, true>(yi, ldy, rows, row_bytes, xi, cols);
                    break;
                default:
                    tile<Dec, R, 4, true>(yi, ldy, rows, row_bytes, xi, cols);
                    break;
            }
        } else {
            switch (nv) {
                case 1:
                    tile<Dec, R, 1, false>(yi, ldy, rows, row_bytes, xi, cols);
                    break;
                case 2:
                    tile<Dec, R, 2, false>(yi, ldy, rows, row_bytes, xi, cols);
                    break;
                case 3:
                    tile<Dec, R, 3, false>(yi, ldy, rows, row_bytes, xi, cols);
                    break;
                default:
                    tile<Dec, R, 4, false>(yi, ldy, rows, row_bytes, xi, cols);
                    break;
            }
        }
    }
}

// Rows per tile: R weight registers + R * min(n, 4) accumulators + 1 activation fit the 32 zmm registers; more
// rows mean more concurrent DRAM streams, which one core needs to approach its bandwidth. 8 rows for n <= 2
// (memory-bound), 6 for more vectors (6 x 4 accumulators; on Zen 4 about 10 % faster at n = 4..8 than 4 x 4, while
// 3 x 8 and 2 x 8 tiles spill).
template <class Dec>
SPECULUM_AVX512 void gemm_typed(float* y, int64_t ldy, const uint8_t* w, uint64_t row_bytes, const float* x, int64_t n,
                                int64_t cols, int64_t r0, int64_t r1) {
    const int big = n <= 2 ? 8 : 6;
    int64_t r     = r0;
    for (; r + big <= r1; r += big) {
        const uint8_t* rows = w + r * row_bytes;
        if (big == 8)
            row_tile<Dec, 8>(y + r, ldy, rows, row_bytes, x, n, cols);
        else
            row_tile<Dec, 6>(y + r, ldy, rows, row_bytes, x, n, cols);
    }
    // The rest of the range: tiles of 4, 2, 1 rows.
    for (; r + 4 <= r1; r += 4) row_tile<Dec, 4>(y + r, ldy, w + r * row_bytes, row_bytes, x, n, cols);
    for (; r + 2 <= r1; r += 2) row_tile<Dec, 2>(y + r, ldy, w + r * row_bytes, row_bytes, x, n, cols);
    for (; r < r1; ++r) row_tile<Dec, 1>(y + r, ldy, w + r * row_bytes, row_bytes, x, n, cols);
}

}  // namespace

bool gemm_avx512(float* y, int64_t ldy, GgmlType t, const void* w, const float* x, int64_t n, int64_t cols, int64_t r0,
                 int64_t r1) {
    const auto* wb       = static_cast<const uint8_t*>(w);
    const uint64_t bytes = ggml_row_size(t, static_cast<uint64_t>(cols));
    switch (t) {
        case GgmlType::F32:
            gemm_typed<DecF32>(y, ldy, wb, bytes, x, n, cols, r0, r1);
            return true;
        case GgmlType::F16:
            gemm_typed<DecF16>(y, ldy, wb, bytes, x, n, cols, r0, r1);
            return true;
        case GgmlType::BF16:
            gemm_typed<DecBF16>(y, ldy, wb, bytes, x, n, cols, r0, r1);
            return true;
        case GgmlType::Q8_0:
            gemm_typed<DecQ8_0>(y, ldy, wb, bytes, x, n, cols, r0, r1);
            return true;
        default:
            return false;
    }
}

}  // namespace speculum::kernels::detail
