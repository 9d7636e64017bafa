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
// Callers run prepare(row, c, state) at every chunk c that starts a block of kChunksPerBlock chunks (K-quants
// unpack their super-block scales there once), then decode(row, c, state, w) for each chunk of the block.

struct NoState {};

// Types whose blocks are at most one chunk long: nothing to prepare.
struct ChunkBlocks {
    using State                          = NoState;
    static constexpr int kChunksPerBlock = 1;
    static SPECULUM_AVX2_INLINE void prepare(const uint8_t*, int64_t, State&) {}
};

struct DecF32 : ChunkBlocks {
    static constexpr int64_t kBytes = kChunk * 4;
    static constexpr bool kPlain    = true;  // element-addressable: rows may end with a partial chunk
    static constexpr bool kBlockScale = false;  // has decode_unscaled(): one scale per 32-element chunk
    static SPECULUM_AVX2_INLINE void decode(const uint8_t* row, int64_t c, const State&, __m256 w[4]) {
        const uint8_t* p = row + c * kBytes;
        for (int k = 0; k < 4; ++k) w[k] = _mm256_loadu_ps(reinterpret_cast<const float*>(p) + 8 * k);
    }
    static float element(const uint8_t* row, int64_t j) {
        float v;
        std::memcpy(&v, row + 4 * j, 4);
        return v;
    }
};

struct DecF16 : ChunkBlocks {
    static constexpr int64_t kBytes = kChunk * 2;
    static constexpr bool kPlain    = true;
    static constexpr bool kBlockScale = false;
    static SPECULUM_AVX2_INLINE void decode(const uint8_t* row, int64_t c, const State&, __m256 w[4]) {
        const uint8_t* p = row + c * kBytes;
        for (int k = 0; k < 4; ++k)
            w[k] = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k)));
    }
    static float element(const uint8_t* row, int64_t j) {
        uint16_t h;
        std::memcpy(&h, row + 2 * j, 2);
        return f16_to_f32(h);
    }
};

struct DecBF16 : ChunkBlocks {
    static constexpr int64_t kBytes = kChunk * 2;
    static constexpr bool kPlain    = true;
    static constexpr bool kBlockScale = false;
    static SPECULUM_AVX2_INLINE void decode(const uint8_t* row, int64_t c, const State&, __m256 w[4]) {
        const uint8_t* p = row + c * kBytes;
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

// Types with one scale per 32-element block: decode_unscaled() gives the integer values (as f32) and returns the
// scale; decode() multiplies them out, giving exactly the reference's q * d (both factors exact, one rounding).
template <class Self>
struct BlockScaled : ChunkBlocks {
    static constexpr bool kPlain      = false;
    static constexpr bool kBlockScale = true;
    static SPECULUM_AVX2_INLINE void decode(const uint8_t* row, int64_t c, const State&, __m256 w[4]) {
        const __m256 d = _mm256_set1_ps(Self::decode_unscaled(row, c, w));
        for (int k = 0; k < 4; ++k) w[k] = _mm256_mul_ps(w[k], d);
    }
    static float element(const uint8_t*, int64_t) { return 0.0f; }
};

// 16 bytes of int8 values (elements 0..15 in lo, 16..31 in hi) -> 4 x 8 f32.
SPECULUM_AVX2_INLINE void int8_to_f32(__m128i lo, __m128i hi, __m256 w[4]) {
    w[0] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo));
    w[1] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8)));
    w[2] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi));
    w[3] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8)));
}

struct DecQ8_0 : BlockScaled<DecQ8_0> {
    static constexpr int64_t kBytes = sizeof(BlockQ8_0);
    static SPECULUM_AVX2_INLINE float decode_unscaled(const uint8_t* row, int64_t c, __m256 w[4]) {
        const uint8_t* p = row + c * kBytes;
        uint16_t dh;
        std::memcpy(&dh, p, 2);
        int8_to_f32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2)),
                    _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 18)), w);
        return _cvtsh_ss(dh);
    }
};

struct DecQ4_0 : BlockScaled<DecQ4_0> {
    static constexpr int64_t kBytes = sizeof(BlockQ4_0);
    static SPECULUM_AVX2_INLINE float decode_unscaled(const uint8_t* row, int64_t c, __m256 w[4]) {
        const uint8_t* p = row + c * kBytes;
        uint16_t dh;
        std::memcpy(&dh, p, 2);
        const __m128i v     = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2));
        const __m128i mask  = _mm_set1_epi8(0x0f);
        const __m128i eight = _mm_set1_epi8(8);
        int8_to_f32(_mm_sub_epi8(_mm_and_si128(v, mask), eight),
                    _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(v, 4), mask), eight), w);
        return _cvtsh_ss(dh);
    }
};

struct DecMxfp4 : BlockScaled<DecMxfp4> {
    static constexpr int64_t kBytes = sizeof(BlockMxfp4);
    static SPECULUM_AVX2_INLINE float decode_unscaled(const uint8_t* row, int64_t c, __m256 w[4]) {
        const uint8_t* p    = row + c * kBytes;
        const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4Values));
        const __m128i v     = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 1));
        const __m128i mask  = _mm_set1_epi8(0x0f);
        int8_to_f32(_mm_shuffle_epi8(table, _mm_and_si128(v, mask)),
                    _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(v, 4), mask)), w);
        return e8m0_to_f32_half(p[0]);
    }
};

// K-quants: a 256-element super-block is 8 chunks of 32; chunk c is sub-block c % 8 of super-block c / 8.
// prepare() turns the super-block's f16 scales and packed sub-block scales into f32 once per 8 chunks.
struct DecQ4_K {
    static constexpr int64_t kBytes      = sizeof(BlockQ4_K);  // per super-block
    static constexpr int kChunksPerBlock = 8;
    static constexpr bool kPlain         = false;
    static constexpr bool kBlockScale    = false;
    struct State {
        float d1[8];  // d * scale of each sub-block (exact: f16 x 6-bit integer)
        float m1[8];  // dmin * min of each sub-block
    };
    static SPECULUM_AVX2_INLINE void prepare(const uint8_t* row, int64_t c, State& st) {
        const auto* b    = reinterpret_cast<const BlockQ4_K*>(row) + c / 8;
        const float d    = _cvtsh_ss(b->d);
        const float dmin = _cvtsh_ss(b->dmin);
        for (int s = 0; s < 8; ++s) {
            uint8_t sc, m;
            q4_k_scale_min(s, b->scales, &sc, &m);
            st.d1[s] = d * sc;
            st.m1[s] = dmin * m;
        }
    }
    static SPECULUM_AVX2_INLINE void decode(const uint8_t* row, int64_t c, const State& st, __m256 w[4]) {
        const auto* b      = reinterpret_cast<const BlockQ4_K*>(row) + c / 8;
        const int s        = static_cast<int>(c % 8);
        const __m256 d1    = _mm256_set1_ps(st.d1[s]);
        const __m256 m1    = _mm256_set1_ps(st.m1[s]);
        const __m128i* q   = reinterpret_cast<const __m128i*>(b->qs + 32 * (s / 2));
        const __m128i mask = _mm_set1_epi8(0x0f);
        for (int h = 0; h < 2; ++h) {
            __m128i v = _mm_loadu_si128(q + h);  // elements 16h .. 16h+15 of the sub-block
            v         = (s & 1) ? _mm_and_si128(_mm_srli_epi16(v, 4), mask) : _mm_and_si128(v, mask);
            const __m256 lo = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v));
            const __m256 hi = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(v, 8)));
            w[2 * h]     = _mm256_sub_ps(_mm256_mul_ps(d1, lo), m1);  // d1 * q - m1, as the reference
            w[2 * h + 1] = _mm256_sub_ps(_mm256_mul_ps(d1, hi), m1);
        }
    }
    static float element(const uint8_t*, int64_t) { return 0.0f; }
};

struct DecQ6_K {
    static constexpr int64_t kBytes      = sizeof(BlockQ6_K);
    static constexpr int kChunksPerBlock = 8;
    static constexpr bool kPlain         = false;
    static constexpr bool kBlockScale    = false;
    struct State {
        float ds[16];  // d * scale of each 16-element sub-block (exact: f16 x int8)
    };
    static SPECULUM_AVX2_INLINE void prepare(const uint8_t* row, int64_t c, State& st) {
        const auto* b = reinterpret_cast<const BlockQ6_K*>(row) + c / 8;
        const __m256 d    = _mm256_set1_ps(_cvtsh_ss(b->d));
        const __m128i sc  = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b->scales));
        _mm256_storeu_ps(st.ds, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc))));
        _mm256_storeu_ps(st.ds + 8, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(sc, 8)))));
    }
    static SPECULUM_AVX2_INLINE void decode(const uint8_t* row, int64_t c, const State& st, __m256 w[4]) {
        const auto* b       = reinterpret_cast<const BlockQ6_K*>(row) + c / 8;
        const int s         = static_cast<int>(c % 8);
        const int half      = s / 4, quarter = s % 4;  // 128-element half, 32-element quarter within it
        const float* ds     = st.ds + 8 * half + 2 * quarter;
        const __m128i mask  = _mm_set1_epi8(0x0f);
        const __m128i* ql   = reinterpret_cast<const __m128i*>(b->ql + 64 * half + 32 * (quarter & 1));
        const __m128i* qh   = reinterpret_cast<const __m128i*>(b->qh + 32 * half);
        const __m128i shift = _mm_cvtsi32_si128(2 * quarter);
        for (int h = 0; h < 2; ++h) {
            __m128i lo = _mm_loadu_si128(ql + h);
            lo         = quarter < 2 ? _mm_and_si128(lo, mask) : _mm_and_si128(_mm_srli_epi16(lo, 4), mask);
            __m128i hi = _mm_and_si128(_mm_srl_epi16(_mm_loadu_si128(qh + h), shift), _mm_set1_epi8(3));
            const __m128i q = _mm_sub_epi8(_mm_or_si128(lo, _mm_slli_epi16(hi, 4)), _mm_set1_epi8(32));
            const __m256 vds = _mm256_set1_ps(ds[h]);  // (d * sc) * q, the reference's order
            w[2 * h]     = _mm256_mul_ps(vds, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)));
            w[2 * h + 1] = _mm256_mul_ps(vds, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(q, 8))));
        }
    }
    static float element(const uint8_t*, int64_t) { return 0.0f; }
};

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
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
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

// ---- several rows against several vectors (n >= 2) ----
// A tile of R rows is decoded one column slab at a time into an L1-resident f32 scratch, once for all n vectors;
// the R x NV register tile then reuses every weight load NV times and every activation load R times. Partial
// sums of each slab are added into y, so y is written (first slab) then accumulated.
constexpr int64_t kSlab = 512;  // columns per slab: R * kSlab * 4 bytes of scratch, x slab n * kSlab * 4 bytes
static_assert(kSlab % 256 == 0, "slabs must start on K-quant super-block boundaries");
constexpr int kTileRows = 4;
constexpr int kTileVecs = 2;    // 4 x 2 accumulators + 4 weights + 1 activation = 13 of 16 ymm registers

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
SPECULUM_AVX2 void gemm_typed(float* y, int64_t ldy, const uint8_t* w, uint64_t row_bytes, const float* x,
                              int64_t n, int64_t cols, int64_t r0, int64_t r1) {
    if (n == 1) {
        // Single vector: decode straight into registers, four accumulators per row (no scratch round trip).
        for (int64_t r = r0; r < r1; ++r) y[r] = row_dot<Dec>(w + static_cast<uint64_t>(r) * row_bytes, x, cols);
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
        case GgmlType::Q4_K: gemm_typed<DecQ4_K>(y, ldy, wb, bytes, x, n, cols, r0, r1); return true;
        case GgmlType::Q6_K: gemm_typed<DecQ6_K>(y, ldy, wb, bytes, x, n, cols, r0, r1); return true;
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
        case GgmlType::Q4_K: dequantize_typed<DecQ4_K>(y, xb, n); return true;
        case GgmlType::Q6_K: dequantize_typed<DecQ6_K>(y, xb, n); return true;
        default: return false;
    }
}

}  // namespace speculum::kernels::detail
