// AVX2 + FMA + F16C GEMV/GEMM/dequantize. Activations stay f32: each 32-element weight chunk is decoded once
// into 4 x 8 f32 registers (exactly the reference's dequantized values) and FMA'd into up to 8 vectors at once.
// Only the f32 summation order differs from the reference. Every function here carries the target attribute;
// everything is in an anonymous namespace so no AVX2 code can leak into other translation units via COMDAT.
#include "kernels/gemv_detail.h"

#include "kernels/fp16.h"
#include "kernels/quant_blocks.h"

#include <immintrin.h>

#include <cstring>

#define SPECULUM_AVX2 __attribute__((target("avx2,fma,f16c")))
#define SPECULUM_AVX2_INLINE __attribute__((target("avx2,fma,f16c"), always_inline)) inline

namespace speculum::kernels::detail {

namespace {

constexpr int kChunk = 32;  // elements decoded at once: one block of Q8_0/Q4_0/MXFP4

// ---- decoders: one 32-element chunk -> w[0..3] (elements 8k..8k+7 in w[k]) ----

struct DecF32 {
    static constexpr int64_t kBytes = kChunk * 4;
    static constexpr bool kPlain    = true;  // element-addressable: rows may end with a partial chunk
    static SPECULUM_AVX2_INLINE void decode(const uint8_t* p, __m256 w[4]) {
        for (int k = 0; k < 4; ++k) w[k] = _mm256_loadu_ps(reinterpret_cast<const float*>(p) + 8 * k);
    }
    static float element(const uint8_t* row, int64_t j) {
        float v;
        std::memcpy(&v, row + 4 * j, 4);
        return v;
    }
};

struct DecF16 {
    static constexpr int64_t kBytes = kChunk * 2;
    static constexpr bool kPlain    = true;
    static SPECULUM_AVX2_INLINE void decode(const uint8_t* p, __m256 w[4]) {
        for (int k = 0; k < 4; ++k)
            w[k] = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k)));
    }
    static float element(const uint8_t* row, int64_t j) {
        uint16_t h;
        std::memcpy(&h, row + 2 * j, 2);
        return f16_to_f32(h);
    }
};

struct DecBF16 {
    static constexpr int64_t kBytes = kChunk * 2;
    static constexpr bool kPlain    = true;
    static SPECULUM_AVX2_INLINE void decode(const uint8_t* p, __m256 w[4]) {
        for (int k = 0; k < 4; ++k) {
            const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k)));
            w[k]            = _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
        }
    }
    static float element(const uint8_t* row, int64_t j) {
        uint16_t h;
        std::memcpy(&h, row + 2 * j, 2);
        return bf16_to_f32(h);
    }
};

struct DecQ8_0 {
    static constexpr int64_t kBytes = sizeof(BlockQ8_0);
    static constexpr bool kPlain    = false;
    static SPECULUM_AVX2_INLINE void decode(const uint8_t* p, __m256 w[4]) {
        uint16_t dh;
        std::memcpy(&dh, p, 2);
        const __m256 d = _mm256_set1_ps(_cvtsh_ss(dh));
        for (int k = 0; k < 4; ++k) {
            const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 2 + 8 * k));
            w[k]            = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), d);
        }
    }
    static float element(const uint8_t*, int64_t) { return 0.0f; }
};

// Low nibbles of 16 bytes are elements 0..15, high nibbles 16..31 (shared by Q4_0 and MXFP4).
SPECULUM_AVX2_INLINE void nibbles_to_f32(__m128i lo, __m128i hi, __m256 d, __m256 w[4]) {
    w[0] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo)), d);
    w[1] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8))), d);
    w[2] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi)), d);
    w[3] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8))), d);
}

struct DecQ4_0 {
    static constexpr int64_t kBytes = sizeof(BlockQ4_0);
    static constexpr bool kPlain    = false;
    static SPECULUM_AVX2_INLINE void decode(const uint8_t* p, __m256 w[4]) {
        uint16_t dh;
        std::memcpy(&dh, p, 2);
        const __m128i v    = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2));
        const __m128i mask = _mm_set1_epi8(0x0f);
        const __m128i eight = _mm_set1_epi8(8);
        const __m128i lo   = _mm_sub_epi8(_mm_and_si128(v, mask), eight);
        const __m128i hi   = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(v, 4), mask), eight);
        nibbles_to_f32(lo, hi, _mm256_set1_ps(_cvtsh_ss(dh)), w);
    }
    static float element(const uint8_t*, int64_t) { return 0.0f; }
};

struct DecMxfp4 {
    static constexpr int64_t kBytes = sizeof(BlockMxfp4);
    static constexpr bool kPlain    = false;
    static SPECULUM_AVX2_INLINE void decode(const uint8_t* p, __m256 w[4]) {
        const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4Values));
        const __m128i v     = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 1));
        const __m128i mask  = _mm_set1_epi8(0x0f);
        const __m128i lo    = _mm_shuffle_epi8(table, _mm_and_si128(v, mask));
        const __m128i hi    = _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(v, 4), mask));
        nibbles_to_f32(lo, hi, _mm256_set1_ps(e8m0_to_f32_half(p[0])), w);
    }
    static float element(const uint8_t*, int64_t) { return 0.0f; }
};

SPECULUM_AVX2_INLINE float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s        = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s        = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// ---- one weight row against NV activation vectors ----
// y[v * ldy] = dot(row, x[v * cols ..]) for v < NV. With few vectors each gets several accumulators so
// the FMA latency chain (4 cycles) does not limit throughput.
template <class Dec, int NV>
SPECULUM_AVX2 void row_dot(float* y, int64_t ldy, const uint8_t* row, const float* x, int64_t cols) {
    constexpr int A = NV == 1 ? 4 : (NV == 2 ? 2 : 1);
    __m256 acc[NV][A];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v)
        for (int a = 0; a < A; ++a) acc[v][a] = _mm256_setzero_ps();
    const int64_t nchunks = cols / kChunk;
    for (int64_t c = 0; c < nchunks; ++c) {
        __m256 w[4];
        Dec::decode(row + c * Dec::kBytes, w);
        const float* xc = x + c * kChunk;
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) {
#pragma GCC unroll 4
            for (int k = 0; k < 4; ++k)
                acc[v][k % A] = _mm256_fmadd_ps(w[k], _mm256_loadu_ps(xc + v * cols + 8 * k), acc[v][k % A]);
        }
    }
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
        __m256 s = acc[v][0];
        for (int a = 1; a < A; ++a) s = _mm256_add_ps(s, acc[v][a]);
        float sum = hsum(s);
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
constexpr int kTileRows = 4;
constexpr int kTileVecs = 2;    // 4 x 2 accumulators + 4 weights + 1 activation = 13 of 16 ymm registers

template <class Dec, int R>
SPECULUM_AVX2 void decode_slab(float (*wbuf)[kSlab], const uint8_t* const* rows, int64_t c0, int64_t len) {
    const int64_t full = len / kChunk;
    for (int r = 0; r < R; ++r) {
        for (int64_t c = 0; c < full; ++c) {
            __m256 w[4];
            Dec::decode(rows[r] + (c0 / kChunk + c) * Dec::kBytes, w);
            for (int k = 0; k < 4; ++k) _mm256_storeu_ps(&wbuf[r][c * kChunk + 8 * k], w[k]);
        }
        if constexpr (Dec::kPlain) {
            for (int64_t j = full * kChunk; j < len; ++j) wbuf[r][j] = Dec::element(rows[r], c0 + j);
        }
    }
}

template <int R, int NV>
SPECULUM_AVX2 void tile_dot(float* y, int64_t ldy, bool first, const float (*wbuf)[kSlab], const float* x,
                            int64_t cols, int64_t len) {
    __m256 acc[R][NV];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
        for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_setzero_ps();
    const int64_t len8 = len / 8 * 8;
    for (int64_t j = 0; j < len8; j += 8) {
        __m256 w[R];
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) w[r] = _mm256_loadu_ps(&wbuf[r][j]);
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
SPECULUM_AVX2 void gemm_typed(float* y, int64_t ldy, const uint8_t* w, uint64_t row_bytes, const float* x,
                              int64_t n, int64_t cols, int64_t r0, int64_t r1) {
    if (n == 1) {
        // Single vector: decode straight into registers, four accumulators per row (no scratch round trip).
        for (int64_t r = r0; r < r1; ++r) row_dot<Dec, 1>(y + r, 0, w + static_cast<uint64_t>(r) * row_bytes, x, cols);
        return;
    }
    // Row tiles outer, slabs and vector pairs inner: each weight byte comes from memory once and is decoded once.
    for (int64_t r = r0; r < r1; r += kTileRows) {
        const int rn = r1 - r < kTileRows ? static_cast<int>(r1 - r) : kTileRows;
        const uint8_t* rows[kTileRows];
        for (int k = 0; k < rn; ++k) rows[k] = w + static_cast<uint64_t>(r + k) * row_bytes;
        switch (rn) {
            case 1: rows_tiled<Dec, 1>(y + r, ldy, rows, x, n, cols); break;
            case 2: rows_tiled<Dec, 2>(y + r, ldy, rows, x, n, cols); break;
            case 3: rows_tiled<Dec, 3>(y + r, ldy, rows, x, n, cols); break;
            default: rows_tiled<Dec, 4>(y + r, ldy, rows, x, n, cols); break;
        }
    }
}

template <class Dec>
SPECULUM_AVX2 void dequantize_typed(float* y, const uint8_t* x, int64_t n) {
    const int64_t nchunks = n / kChunk;
    for (int64_t c = 0; c < nchunks; ++c) {
        __m256 w[4];
        Dec::decode(x + c * Dec::kBytes, w);
        for (int k = 0; k < 4; ++k) _mm256_storeu_ps(y + c * kChunk + 8 * k, w[k]);
    }
    if constexpr (Dec::kPlain) {
        for (int64_t j = nchunks * kChunk; j < n; ++j) y[j] = Dec::element(x, j);
    }
}

}  // namespace

bool gemm_avx2(float* y, int64_t ldy, GgmlType t, const void* w, const float* x, int64_t n, int64_t cols,
               int64_t r0, int64_t r1) {
    const auto* wb       = static_cast<const uint8_t*>(w);
    const uint64_t bytes = ggml_row_size(t, static_cast<uint64_t>(cols));
    switch (t) {
        case GgmlType::F32: gemm_typed<DecF32>(y, ldy, wb, bytes, x, n, cols, r0, r1); return true;
        case GgmlType::F16: gemm_typed<DecF16>(y, ldy, wb, bytes, x, n, cols, r0, r1); return true;
        case GgmlType::BF16: gemm_typed<DecBF16>(y, ldy, wb, bytes, x, n, cols, r0, r1); return true;
        case GgmlType::Q8_0: gemm_typed<DecQ8_0>(y, ldy, wb, bytes, x, n, cols, r0, r1); return true;
        case GgmlType::Q4_0: gemm_typed<DecQ4_0>(y, ldy, wb, bytes, x, n, cols, r0, r1); return true;
        case GgmlType::MXFP4: gemm_typed<DecMxfp4>(y, ldy, wb, bytes, x, n, cols, r0, r1); return true;
        default: return false;
    }
}

bool dequantize_row_avx2(float* y, GgmlType t, const void* x, int64_t n) {
    const auto* xb = static_cast<const uint8_t*>(x);
    switch (t) {
        case GgmlType::F32: dequantize_typed<DecF32>(y, xb, n); return true;
        case GgmlType::F16: dequantize_typed<DecF16>(y, xb, n); return true;
        case GgmlType::BF16: dequantize_typed<DecBF16>(y, xb, n); return true;
        case GgmlType::Q8_0: dequantize_typed<DecQ8_0>(y, xb, n); return true;
        case GgmlType::Q4_0: dequantize_typed<DecQ4_0>(y, xb, n); return true;
        case GgmlType::MXFP4: dequantize_typed<DecMxfp4>(y, xb, n); return true;
        default: return false;
    }
}

}  // namespace speculum::kernels::detail
