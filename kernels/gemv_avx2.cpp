// AVX2 + FMA + F16C GEMV/GEMM/dequantize. Activations stay f32; weights are decoded to exactly the reference's
// values (gemv_avx2_decoders.h), so only the f32 summation order differs from the reference. gemv decodes into
// registers; gemm (n >= 2) decodes each weight once per call into an L1 slab shared by all n vectors.
// Every function carries the target attribute and lives in an anonymous namespace (no AVX2 code leaks via COMDAT).
#include "kernels/gemv_detail.h"

#include "kernels/gemv_avx2_decoders.h"

#include <immintrin.h>

namespace speculum::kernels::detail {

namespace {

SPECULUM_AVX2_INLINE float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s        = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s        = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// ---- one weight row against one vector (gemv) ----
// Four accumulators so the FMA latency (4 cycles) does not limit throughput. For types with one scale per
// 32-block (Q8_0, Q4_0, MXFP4) the scale is applied once per block to the block's partial sum instead of to
// every weight: fewer multiplies on the FP ports, which bound this loop.
template <class Dec>
SPECULUM_AVX2 float row_dot(const uint8_t* row, const float* x, int64_t cols) {
    __m256 acc[4]         = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    const int64_t nchunks = cols / kChunk;
    typename Dec::State st;
    for (int64_t c = 0; c < nchunks; ++c) {
        __m256 w[4];
        const float* xc = x + c * kChunk;
        if constexpr (Dec::kBlockScale) {
            const float d = Dec::decode_unscaled(row, c, w);
            __m256 s0     = _mm256_mul_ps(w[0], _mm256_loadu_ps(xc));
            __m256 s1     = _mm256_mul_ps(w[1], _mm256_loadu_ps(xc + 8));
            s0            = _mm256_fmadd_ps(w[2], _mm256_loadu_ps(xc + 16), s0);
            s1            = _mm256_fmadd_ps(w[3], _mm256_loadu_ps(xc + 24), s1);
            acc[c & 3]    = _mm256_fmadd_ps(_mm256_add_ps(s0, s1), _mm256_set1_ps(d), acc[c & 3]);
        } else {
            if (c % Dec::kChunksPerBlock == 0) Dec::prepare(row, c, st);
            Dec::decode(row, c, st, w);
#pragma GCC unroll 4
            for (int k = 0; k < 4; ++k) acc[k] = _mm256_fmadd_ps(w[k], _mm256_loadu_ps(xc + 8 * k), acc[k]);
        }
    }
    float sum = hsum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
    if constexpr (Dec::kPlain) {
        for (int64_t j = nchunks * kChunk; j < cols; ++j) sum += Dec::element(row, j) * x[j];
    }
    return sum;
}

// ---- one weight row against a few vectors (2 <= n <= 4) ----
// Each chunk is decoded into registers once and FMA'd into every vector: no scratch round trip.
template <class Dec, int NV>
SPECULUM_AVX2 void row_dot_few(float* y, int64_t ldy, const uint8_t* row, const float* x, int64_t cols) {
    __m256 acc[NV][2];
    for (int v = 0; v < NV; ++v) acc[v][0] = acc[v][1] = _mm256_setzero_ps();
    const int64_t nchunks = cols / kChunk;
    typename Dec::State st;
    for (int64_t c = 0; c < nchunks; ++c) {
        __m256 w[4];
        if (c % Dec::kChunksPerBlock == 0) Dec::prepare(row, c, st);
        Dec::decode(row, c, st, w);
        const float* xc = x + c * kChunk;
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) {
#pragma GCC unroll 4
            for (int k = 0; k < 4; ++k)
                acc[v][k & 1] = _mm256_fmadd_ps(w[k], _mm256_loadu_ps(xc + v * cols + 8 * k), acc[v][k & 1]);
        }
    }
    for (int v = 0; v < NV; ++v) {
        float sum = hsum(_mm256_add_ps(acc[v][0], acc[v][1]));
        if constexpr (Dec::kPlain) {
            for (int64_t j = nchunks * kChunk; j < cols; ++j) sum += Dec::element(row, j) * x[v * cols + j];
        }
        y[v * ldy] = sum;
    }
}

// ---- several rows against several vectors (n >= 2) ----
// A tile of R rows is decoded one column slab at a time into an L1-resident f32 scratch, once for all n vectors;
// the R x NV register tile then reuses every weight load NV times and every activation load R times. Partial
// sums of each slab are added into y, so y is written (first slab) then accumulated.
constexpr int64_t kSlab = 512;  // columns per slab: R * kSlab * 4 bytes of scratch, x slab n * kSlab * 4 bytes
static_assert(kSlab % 256 == 0, "slabs must start on K-quant super-block boundaries");
constexpr int kTileRows   = 4;
constexpr int64_t kFewMax = 4;  // n up to this uses row_dot_few
constexpr int kTileVecs   = 2;  // 4 x 2 accumulators + 4 weights + 1 activation = 13 of 16 ymm registers

template <class Dec, int R>
SPECULUM_AVX2 void decode_slab(float (*wbuf)[kSlab], const uint8_t* const* rows, int64_t c0, int64_t len) {
    const int64_t full = len / kChunk;
    for (int r = 0; r < R; ++r) {
        typename Dec::State st;
        for (int64_t c = 0; c < full; ++c) {
            __m256 w[4];
            const int64_t cc = c0 / kChunk + c;  // slabs start on block boundaries (kSlab % 256 == 0)
            if (cc % Dec::kChunksPerBlock == 0) Dec::prepare(rows[r], cc, st);
            Dec::decode(rows[r], cc, st, w);
            for (int k = 0; k < 4; ++k) _mm256_storeu_ps(&wbuf[r][c * kChunk + 8 * k], w[k]);
        }
        if constexpr (Dec::kPlain) {
            for (int64_t j = full * kChunk; j < len; ++j) wbuf[r][j] = Dec::element(rows[r], c0 + j);
        }
    }
}

template <int R, int NV>
SPECULUM_AVX2 void tile_dot(float* y, int64_t ldy, bool first, const float (*wbuf)[kSlab], const float* x, int64_t cols,
                            int64_t len) {
    __m256 acc[R][NV];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
        for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_setzero_ps();
    const int64_t len8 = len / 8 * 8;
    for (int64_t j = 0; j < len8; j += 8) {
        __m256 w[R];
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
            w[r] = _mm256_loadu_ps(&wbuf[r][j]);
            // Keep the weights in registers: otherwise GCC folds the load into every FMA and loads each
            // weight NV times, which makes the loop load-port bound instead of FMA bound.
            __asm__("" : "+x"(w[r]));
        }
#pragma GCC unroll 2
        for (int v = 0; v < NV; ++v) {
            const __m256 xv = _mm256_loadu_ps(x + v * cols + j);
#pragma GCC unroll 4
            for (int r = 0; r < R; ++r) acc[r][v] = _mm256_fmadd_ps(w[r], xv, acc[r][v]);
        }
    }
    for (int r = 0; r < R; ++r) {
        for (int v = 0; v < NV; ++v) {
            float sum = hsum(acc[r][v]);
            for (int64_t j = len8; j < len; ++j) sum += wbuf[r][j] * x[v * cols + j];
            float& out = y[v * ldy + r];
            out        = first ? sum : out + sum;
        }
    }
}

template <class Dec, int R>
SPECULUM_AVX2 void rows_tiled(float* y, int64_t ldy, const uint8_t* const* rows, const float* x, int64_t n,
                              int64_t cols) {
    alignas(32) float wbuf[R][kSlab];
    for (int64_t c0 = 0; c0 < cols; c0 += kSlab) {
        const int64_t len = cols - c0 < kSlab ? cols - c0 : kSlab;
        decode_slab<Dec, R>(wbuf, rows, c0, len);
        int64_t i = 0;
        for (; i + kTileVecs <= n; i += kTileVecs)
            tile_dot<R, kTileVecs>(y + i * ldy, ldy, c0 == 0, wbuf, x + i * cols + c0, cols, len);
        for (; i < n; ++i) tile_dot<R, 1>(y + i * ldy, ldy, c0 == 0, wbuf, x + i * cols + c0, cols, len);
    }
}

template <class Dec>
SPECULUM_AVX2 void gemm_typed(float* y, int64_t ldy, const uint8_t* w, uint64_t row_bytes, const float* x, int64_t n,
                              int64_t cols, int64_t r0, int64_t r1) {
    if (n == 1) {
        // Single vector: decode straight into registers, four accumulators per row (no scratch round trip).
        for (int64_t r = r0; r < r1; ++r) y[r] = row_dot<Dec>(w + static_cast<uint64_t>(r) * row_bytes, x, cols);
        return;
    }
    if (n <= kFewMax) {
        for (int64_t r = r0; r < r1; ++r) {
            const uint8_t* row = w + static_cast<uint64_t>(r) * row_bytes;
            switch (n) {
                case 2:
                    row_dot_few<Dec, 2>(y + r, ldy, row, x, cols);
                    break;
                case 3:
                    row_dot_few<Dec, 3>(y + r, ldy, row, x, cols);
                    break;
                default:
                    row_dot_few<Dec, 4>(y + r, ldy, row, x, cols);
                    break;
            }
        }
        return;
    }
    // Row tiles outer, slabs and vector pairs inner: each weight byte comes from memory once and is decoded once.
    for (int64_t r = r0; r < r1; r += kTileRows) {
        const int rn = r1 - r < kTileRows ? static_cast<int>(r1 - r) : kTileRows;
        const uint8_t* rows[kTileRows];
        for (int k = 0; k < rn; ++k) rows[k] = w + static_cast<uint64_t>(r + k) * row_bytes;
        switch (rn) {
            case 1:
                rows_tiled<Dec, 1>(y + r, ldy, rows, x, n, cols);
                break;
            case 2:
                rows_tiled<Dec, 2>(y + r, ldy, rows, x, n, cols);
                break;
            case 3:
                rows_tiled<Dec, 3>(y + r, ldy, rows, x, n, cols);
                break;
            default:
                rows_tiled<Dec, 4>(y + r, ldy, rows, x, n, cols);
                break;
        }
    }
}

template <class Dec>
SPECULUM_AVX2 void dequantize_typed(float* y, const uint8_t* x, int64_t n) {
    const int64_t nchunks = n / kChunk;
    typename Dec::State st;
    for (int64_t c = 0; c < nchunks; ++c) {
        __m256 w[4];
        if (c % Dec::kChunksPerBlock == 0) Dec::prepare(x, c, st);
        Dec::decode(x, c, st, w);
        for (int k = 0; k < 4; ++k) _mm256_storeu_ps(y + c * kChunk + 8 * k, w[k]);
    }
    if constexpr (Dec::kPlain) {
        for (int64_t j = nchunks * kChunk; j < n; ++j) y[j] = Dec::element(x, j);
    }
}

}  // namespace

bool gemm_avx2(float* y, int64_t ldy, GgmlType t, const void* w, const float* x, int64_t n, int64_t cols, int64_t r0,
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
        case GgmlType::Q4_0:
            gemm_typed<DecQ4_0>(y, ldy, wb, bytes, x, n, cols, r0, r1);
            return true;
        case GgmlType::Q4_1:
            gemm_typed<DecQ4_1>(y, ldy, wb, bytes, x, n, cols, r0, r1);
            return true;
        case GgmlType::Q5_0:
            gemm_typed<DecQ5_0>(y, ldy, wb, bytes, x, n, cols, r0, r1);
            return true;
        case GgmlType::Q5_1:
            gemm_typed<DecQ5_1>(y, ldy, wb, bytes, x, n, cols, r0, r1);
            return true;
        case GgmlType::IQ4_NL:
            gemm_typed<DecIq4Nl>(y, ldy, wb, bytes, x, n, cols, r0, r1);
            return true;
        case GgmlType::MXFP4:
            gemm_typed<DecMxfp4>(y, ldy, wb, bytes, x, n, cols, r0, r1);
            return true;
        case GgmlType::Q4_K:
            gemm_typed<DecQ4_K>(y, ldy, wb, bytes, x, n, cols, r0, r1);
            return true;
        case GgmlType::Q5_K:
            gemm_typed<DecQ5_K>(y, ldy, wb, bytes, x, n, cols, r0, r1);
            return true;
        case GgmlType::Q3_K:
            gemm_typed<DecQ3_K>(y, ldy, wb, bytes, x, n, cols, r0, r1);
            return true;
        case GgmlType::Q2_K:
            gemm_typed<DecQ2_K>(y, ldy, wb, bytes, x, n, cols, r0, r1);
            return true;
        case GgmlType::IQ4_XS:
            gemm_typed<DecIq4Xs>(y, ldy, wb, bytes, x, n, cols, r0, r1);
            return true;
        case GgmlType::Q6_K:
            gemm_typed<DecQ6_K>(y, ldy, wb, bytes, x, n, cols, r0, r1);
            return true;
        default:
            return false;
    }
}

namespace {

// y[0..32) = the 32 int8 values in q, in order, times d.
SPECULUM_AVX2_INLINE void store_q8_block(float* y, __m256i q, float d) {
    const __m256 vd  = _mm256_set1_ps(d);
    const __m128i lo = _mm256_castsi256_si128(q), hi = _mm256_extracti128_si256(q, 1);
    const __m128i q8[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
    for (int k = 0; k < 4; ++k)
        _mm256_storeu_ps(y + 8 * k, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8[k])), vd));
}

// Q8_0_X8 (BlockQ8_0x8): the 8 runs of 32 bytes hold 4 quants of each block per 32-bit lane, so an 8 x 8 transpose
// of 32-bit lanes gives each block's 32 quants in order. Exact: (q - 128) converted to f32, times the f32 scale.
SPECULUM_AVX2 void dequantize_q8_0_x8(float* y, const uint8_t* x, int64_t n) {
    const auto* blocks = reinterpret_cast<const BlockQ8_0x8*>(x);
    const __m256i bias = _mm256_set1_epi8(static_cast<char>(0x80));
    for (int64_t s = 0; s < n / kQK8_0x8; ++s, y += kQK8_0x8) {
        float d[8];
        _mm256_storeu_ps(d, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blocks[s].d))));
        __m256i r[8], t[8], u[8];
        for (int c = 0; c < 8; ++c)
            r[c] = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blocks[s].qs + 32 * c)), bias);
        for (int c = 0; c < 8; c += 2) {
            t[c]     = _mm256_unpacklo_epi32(r[c], r[c + 1]);
            t[c + 1] = _mm256_unpackhi_epi32(r[c], r[c + 1]);
        }
        for (int c = 0; c < 8; c += 4) {
            u[c]     = _mm256_unpacklo_epi64(t[c], t[c + 2]);
            u[c + 1] = _mm256_unpackhi_epi64(t[c], t[c + 2]);
            u[c + 2] = _mm256_unpacklo_epi64(t[c + 1], t[c + 3]);
            u[c + 3] = _mm256_unpackhi_epi64(t[c + 1], t[c + 3]);
        }
        for (int j = 0; j < 4; ++j) {  // blocks j and j + 4: lanes 0..3 from runs 0..3, lanes 4..7 from runs 4..7
            store_q8_block(y + 32 * j, _mm256_permute2x128_si256(u[j], u[4 + j], 0x20), d[j]);
            store_q8_block(y + 32 * (j + 4), _mm256_permute2x128_si256(u[j], u[4 + j], 0x31), d[j + 4]);
        }
    }
}

}  // namespace

bool dequantize_row_avx2(float* y, GgmlType t, const void* x, int64_t n) {
    const auto* xb = static_cast<const uint8_t*>(x);
    switch (t) {
        case GgmlType::F32:
            dequantize_typed<DecF32>(y, xb, n);
            return true;
        case GgmlType::F16:
            dequantize_typed<DecF16>(y, xb, n);
            return true;
        case GgmlType::BF16:
            dequantize_typed<DecBF16>(y, xb, n);
            return true;
        case GgmlType::Q8_0:
            dequantize_typed<DecQ8_0>(y, xb, n);
            return true;
        case GgmlType::Q4_0:
            dequantize_typed<DecQ4_0>(y, xb, n);
            return true;
        case GgmlType::Q4_1:
            dequantize_typed<DecQ4_1>(y, xb, n);
            return true;
        case GgmlType::Q5_0:
            dequantize_typed<DecQ5_0>(y, xb, n);
            return true;
        case GgmlType::Q5_1:
            dequantize_typed<DecQ5_1>(y, xb, n);
            return true;
        case GgmlType::IQ4_NL:
            dequantize_typed<DecIq4Nl>(y, xb, n);
            return true;
        case GgmlType::MXFP4:
            dequantize_typed<DecMxfp4>(y, xb, n);
            return true;
        case GgmlType::Q4_K:
            dequantize_typed<DecQ4_K>(y, xb, n);
            return true;
        case GgmlType::Q5_K:
            dequantize_typed<DecQ5_K>(y, xb, n);
            return true;
        case GgmlType::Q3_K:
            dequantize_typed<DecQ3_K>(y, xb, n);
            return true;
        case GgmlType::Q2_K:
            dequantize_typed<DecQ2_K>(y, xb, n);
            return true;
        case GgmlType::IQ4_XS:
            dequantize_typed<DecIq4Xs>(y, xb, n);
            return true;
        case GgmlType::Q6_K:
            dequantize_typed<DecQ6_K>(y, xb, n);
            return true;
        case GgmlType::Q8_0_X8:
            dequantize_q8_0_x8(y, xb, n);
            return true;
        default:
            return false;
    }
}

}  // namespace speculum::kernels::detail
