// AVX-512 VNNI kernels for Q8_0_X8 weights (BlockQ8_0x8): activation quantization into the matching layout
// (bit-identical to quantize_q8act_x8_ref) and the int8 GEMM. A 32-byte run of a block already holds 4 quants of
// each of 8 blocks as unsigned bytes, so a weight load feeds vpdpbusd directly, and the 8 block sums of a group share
// one conversion, one scale multiply and one FMA per vector: 8 + 2 pipe slots per 8 blocks, against gemm_q8act's
// 8 + 4 (docs/performance-notebook.md, "Session 4" and "Session 6"). The activation offset (-128 * sum) cancels the +
// 128 exactly, so every block dot is the reference's exact int32 sum. Every function carries the target attribute and
// lives in an anonymous namespace (no AVX-512 code leaks via COMDAT).
#include "kernels/vnni_common.h"

#include "kernels/quant_blocks.h"

#include <algorithm>
#include <cstring>

namespace speculum::kernels::detail {

namespace {

constexpr int64_t kPrefetchRows = 8;  // L2 prefetch this many rows ahead (as gemv_q8act_avx512.cpp)
constexpr int64_t kBlock        = sizeof(BlockQ8_0x8);

// Blocks per chunk, the unit every path sums a row in (gemm_q8act_x8_avx512). When n > 1, also the columns of one
// pass over the rows: 4 vectors' activations of 8 blocks (10 KiB) and the 3 rows of a tile
// stay in L1 while a task's row tiles go by. Whole rows of 5632 columns (28 KiB of activations) made the pass
// L2-bound and slower than gemm_q8act (docs/performance-notebook.md, "Session 6").
constexpr int64_t kChunkBlocks = 8;

// L2 prefetch of the cache line that starts in the kSlice bytes at p, if one does (kSlice < 64: at most one).
// A group is prefetched in 8 slices, one beside each of its 8 loads, so the prefetches of the rows ahead go out at
// the pace of the loads: issued all at a group's start (one per 64 bytes, some lines twice) they made the n = 1
// stream 1.2-1.6x slower than gemm_q8act's; one per line, spread, it streams as fast (docs/performance-notebook.md,
// "Session 8").
constexpr int64_t kSlice = kBlock / 8;
SPECULUM_VNNI inline __attribute__((always_inline)) void prefetch_slice(const uint8_t* p) {
    const auto s    = reinterpret_cast<uintptr_t>(p);
    const auto line = (s + 63) & ~uintptr_t{63};
    if (line < s + kSlice) _mm_prefetch(reinterpret_cast<const char*>(line), _MM_HINT_T1);
}

// R weight rows x NV activation vectors over blocks [g0, g1) of the rows; y = the dots, or y += them when `add`.
// PF: prefetch to L2 the rows kPrefetchRows ahead.
template <int R, int NV, bool PF>
SPECULUM_VNNI void tile(float* y, int64_t ldy, const uint8_t* row0, int64_t row_bytes, const Q8ActX8Group* const* xv,
                        int64_t g0, int64_t g1, bool add) {
    __m256 acc[R][NV];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_setzero_ps();
    for (int64_t g = g0; g < g1; ++g) {
        __m256i dot[R][NV];
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) {
            const __m256i off = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xv[v][g].off));
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) dot[r][v] = off;
        }
#pragma GCC unroll 8
        for (int k = 0; k < 8; ++k) {
            __m256i wk[R];
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                if constexpr (PF) prefetch_slice(row0 + (kPrefetchRows + r) * row_bytes + g * kBlock + k * kSlice);
                wk[r] = _mm256_loadu_si256(
                    reinterpret_cast<const __m256i*>(row0 + r * row_bytes + g * kBlock + 16 + 32 * k));
            }
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) {
                const __m256i xk = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xv[v][g].q + 32 * k));
#pragma GCC unroll 8
                for (int r = 0; r < R; ++r) dot[r][v] = _mm256_dpbusd_epi32(dot[r][v], wk[r], xk);
            }
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const __m256 dw =
                _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row0 + r * row_bytes + g * kBlock)));
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v)
                acc[r][v] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[r][v]),
                                            _mm256_mul_ps(dw, _mm256_loadu_ps(xv[v][g].d)), acc[r][v]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) {
            const float dot = vnni::hsum(acc[r][v]);
            y[v * ldy + r]  = add ? y[v * ldy + r] + dot : dot;
        }
}

// Rows [r, r + R) against all n vectors in groups of at most 4 (later groups find the rows in cache).
template <int R>
SPECULUM_VNNI void row_tile(float* y, int64_t ldy, const uint8_t* rows, int64_t row_bytes, const void* xq, int64_t n,
                            int64_t cols, int64_t g0, int64_t g1) {
    for (int64_t i = 0; i < n; i += 4) {
        const int64_t nv = n - i < 4 ? n - i : 4;
        const Q8ActX8Group* xv[4];
        for (int64_t k = 0; k < nv; ++k) xv[k] = q8act_x8_vec(xq, i + k, cols);
        float* yi = y + i * ldy;
        if (i == 0) {
            switch (nv) {
                case 1:
                    tile<R, 1, true>(yi, ldy, rows, row_bytes, xv, g0, g1, g0 > 0);
                    break;
                case 2:
                    tile<R, 2, true>(yi, ldy, rows, row_bytes, xv, g0, g1, g0 > 0);
                    break;
                case 3:
                    tile<R, 3, true>(yi, ldy, rows, row_bytes, xv, g0, g1, g0 > 0);
                    break;
                default:
                    tile<R, 4, true>(yi, ldy, rows, row_bytes, xv, g0, g1, g0 > 0);
                    break;
            }
        } else {
            switch (nv) {
                case 1:
                    tile<R, 1, false>(yi, ldy, rows, row_bytes, xv, g0, g1, g0 > 0);
                    break;
                case 2:
                    tile<R, 2, false>(yi, ldy, rows, row_bytes, xv, g0, g1, g0 > 0);
                    break;
                case 3:
                    tile<R, 3, false>(yi, ldy, rows, row_bytes, xv, g0, g1, g0 > 0);
                    break;
                default:
                    tile<R, 4, false>(yi, ldy, rows, row_bytes, xv, g0, g1, g0 > 0);
                    break;
            }
        }
    }
}

SPECULUM_VNNI void quantize_impl(void* xq, const float* x, int64_t n, int64_t cols) {
    for (int64_t i = 0; i < n; ++i) {
        auto* groups    = const_cast<Q8ActX8Group*>(q8act_x8_vec(xq, i, cols));
        const float* xi = x + i * cols;
        for (int64_t b = 0; b < cols / kQ8ActBlock; ++b) {
            Q8ActX8Group& grp = groups[b / kQ8ActX8Blocks];
            const int j       = static_cast<int>(b % kQ8ActX8Blocks);
            __m128i q0, q1;
            int32_t sum = 0;
            grp.d[j]    = vnni::quantize_block(xi + 32 * b, &q0, &q1, &sum);
            grp.off[j]  = -128 * sum;
            // 4-byte chunk c of the block (elements 4c .. 4c+3) goes to int32 slot 8c + j of the group.
            int32_t chunk[8];
            _mm_storeu_si128(reinterpret_cast<__m128i*>(chunk), q0);
            _mm_storeu_si128(reinterpret_cast<__m128i*>(chunk + 4), q1);
            for (int c = 0; c < 8; ++c) std::memcpy(grp.q + 32 * c + 4 * j, &chunk[c], 4);
        }
    }
}

}  // namespace

void quantize_q8act_x8_avx512(void* xq, const float* x, int64_t n, int64_t cols) {
    quantize_impl(xq, x, n, cols);
}

// n = 1 (decode): tiles of 8 rows, the most concurrent row streams that fit the registers, each walking its rows
// to the end. Otherwise, per kChunkBlocks blocks of columns, 3 rows against groups of 4 vectors (12 int32 and 12 f32
// accumulators): the compute-bound verification pass. Then 2 and 1 row. Every path sums a row the same way (per
// chunk of kChunkBlocks blocks into a fresh accumulator, then y += the chunk's sum), so a row's dot with a vector is
// bit-identical whatever n and the row range: a batched pass equals sequential decoding, which keeps greedy
// speculative decoding on a repacked target lossless (the int8 activations amplify any rounding difference).
void gemm_q8act_x8_avx512(float* y, int64_t ldy, const void* w, const void* xq, int64_t n, int64_t cols, int64_t r0,
                          int64_t r1) {
    const auto* wb          = static_cast<const uint8_t*>(w);
    const int64_t row_bytes = cols / kQK8_0x8 * kBlock;
    const int64_t ng        = cols / kQK8_0x8;
    int64_t r               = r0;
    if (n == 1) {
        const Q8ActX8Group* xv[1] = {q8act_x8_vec(xq, 0, cols)};
        for (; r + 8 <= r1; r += 8)
            for (int64_t g0 = 0; g0 < ng; g0 += kChunkBlocks)
                tile<8, 1, true>(y + r, ldy, wb + r * row_bytes, row_bytes, xv, g0, std::min(g0 + kChunkBlocks, ng),
                                 g0 > 0);
    }
    const int64_t rs = r;
    for (int64_t g0 = 0; g0 < ng; g0 += kChunkBlocks) {
        const int64_t g1 = std::min(g0 + kChunkBlocks, ng);
        for (r = rs; r + 3 <= r1; r += 3) row_tile<3>(y + r, ldy, wb + r * row_bytes, row_bytes, xq, n, cols, g0, g1);
        for (; r + 2 <= r1; r += 2) row_tile<2>(y + r, ldy, wb + r * row_bytes, row_bytes, xq, n, cols, g0, g1);
        for (; r < r1; ++r) row_tile<1>(y + r, ldy, wb + r * row_bytes, row_bytes, xq, n, cols, g0, g1);
    }
}

}  // namespace speculum::kernels::detail
