// AVX-512 VNNI kernels for K-quant weights (Q4_K, Q5_K, Q6_K) in 512-bit registers: activation quantization into the
// K layout (bit-identical to quantize_q8act_k_ref) and the int8 GEMM. A row's super-block is decoded once into four
// registers that hold 8 bytes of each of its eight 32-element blocks side by side (the activations' layout), and
// every vector of the pass is dotted with it there: four vpdpbusd leave block j's exact int32 dot in lanes 2j and
// 2j + 1, and one conversion and one FMA scale all eight blocks (gemm_q8act's 256-bit kernel needs two of each, and
// decodes the row again for every group of four vectors). Only the f32 summation order differs from the reference.
// Every batch size runs the same operations on a row's accumulator, so a batched pass equals one vector at a time
// bit for bit. Every function carries the target attribute and lives in an anonymous namespace.
#include "kernels/vnni_common.h"

#include "kernels/quant_blocks.h"

#include <cstring>

namespace speculum::kernels::detail {

namespace {

constexpr int64_t kPrefetchRows = 8;  // L2 prefetch this many rows ahead (as gemv_q8act_avx512.cpp)

// The 64-bit lanes of four registers s[j] = [block j | block 4 + j] (32 bytes each: elements 0..7, 8..15, 16..23,
// 24..31) into the activation layout: wk[k] = elements 8k .. 8k + 7 of blocks 0..7 in order.
SPECULUM_VNNI inline __attribute__((always_inline)) void transpose8(const __m512i s[4], __m512i wk[4]) {
    const __m512i t0 = _mm512_unpacklo_epi64(s[0], s[1]), t1 = _mm512_unpackhi_epi64(s[0], s[1]);
    const __m512i t2 = _mm512_unpacklo_epi64(s[2], s[3]), t3 = _mm512_unpackhi_epi64(s[2], s[3]);
    // t0's 128-bit lanes: [b0.q0 b1.q0] [b0.q2 b1.q2] [b4.q0 b5.q0] [b4.q2 b5.q2]; t2 the same for blocks 2, 3, 6, 7
    const __m512i even = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13),
                  odd  = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
    wk[0]              = _mm512_permutex2var_epi64(t0, even, t2);
    wk[1]              = _mm512_permutex2var_epi64(t1, even, t3);
    wk[2]              = _mm512_permutex2var_epi64(t0, odd, t2);
    wk[3]              = _mm512_permutex2var_epi64(t1, odd, t3);
}

// Eight bytes as sixteen f32 lanes, each byte in lanes 2j and 2j + 1.
SPECULUM_VNNI inline __attribute__((always_inline)) __m512 bytes_pairs(uint64_t v) {
    const __m128i b = _mm_cvtsi64_si128(static_cast<long long>(v));
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_unpacklo_epi8(b, b)));
}

// Q4_K and Q5_K: weight d * sc * q - dmin * m per 32-element block, q unsigned; dw = d * sc, mw = -dmin * m.
template <bool Five>
struct KQ45 {
    using Block                          = std::conditional_t<Five, BlockQ5_K, BlockQ4_K>;
    static constexpr int64_t kSuperBytes = sizeof(Block);
    static constexpr bool kSixteen       = false;
    SPECULUM_VNNI static inline __attribute__((always_inline)) void load(const uint8_t* sb, __m512i wk[4], __m512& dw,
                                                                         __m512& mw, __m512&) {
        const auto* b   = reinterpret_cast<const Block*>(sb);
        const __m512i a = _mm512_loadu_si512(b->qs), c = _mm512_loadu_si512(b->qs + 64);
        const __m512i p0 = _mm512_shuffle_i64x2(a, c, 0x44), p1 = _mm512_shuffle_i64x2(a, c, 0xee);  // [h0 | h1]
        const __m512i m4 = _mm512_set1_epi8(0x0f);
        __m512i s[4]     = {_mm512_and_si512(p0, m4), _mm512_and_si512(_mm512_srli_epi16(p0, 4), m4),
                            _mm512_and_si512(p1, m4), _mm512_and_si512(_mm512_srli_epi16(p1, 4), m4)};
        if constexpr (Five) {  // bit j of qh[l] is bit 4 of block j's element l: [qh | qh >> 4] serves both halves
            const __m256i qh  = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qh));
            const __m512i h   = _mm512_inserti64x4(_mm512_castsi256_si512(qh), _mm256_srli_epi16(qh, 4), 1);
            const __m512i one = _mm512_set1_epi8(1);
#pragma GCC unroll 4
            for (int j = 0; j < 4; ++j) {
                const __m512i bit = _mm512_and_si512(_mm512_srli_epi16(h, static_cast<unsigned>(j)), one);
                s[j]              = _mm512_or_si512(s[j], _mm512_slli_epi16(bit, 4));
            }
        }
        transpose8(s, wk);
        // the eight 6-bit scales and mins as bytes (q4_k_scale_min, branch-free on the three words of `scales`)
        uint32_t w3[3];
        std::memcpy(w3, b->scales, 12);
        const uint64_t sc = (w3[0] & 0x3f3f3f3fu) | uint64_t((w3[2] & 0x0f0f0f0fu) | ((w3[0] >> 2) & 0x30303030u))
                                                        << 32;
        const uint64_t mn =
            (w3[1] & 0x3f3f3f3fu) | uint64_t(((w3[2] >> 4) & 0x0f0f0f0fu) | ((w3[1] >> 2) & 0x30303030u)) << 32;
        dw = _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(b->d)), bytes_pairs(sc));
        mw = _mm512_mul_ps(_mm512_set1_ps(-_cvtsh_ss(b->dmin)), bytes_pairs(mn));
    }
};

// Q6_K: weight d * sc * (q - 32) per 16-element sub-block, q unsigned 0..63. dw = the scales of each block's first
// sub-block, mw of its second; ma = -32 * d * sc per sub-block, for the offset times the sub-block's activation sum.
struct KQ6 {
    static constexpr int64_t kSuperBytes = sizeof(BlockQ6_K);
    static constexpr bool kSixteen       = true;
    SPECULUM_VNNI static inline __attribute__((always_inline)) void load(const uint8_t* sb, __m512i wk[4], __m512& dw,
                                                                         __m512& mw, __m512& ma) {
        const auto* b   = reinterpret_cast<const BlockQ6_K*>(sb);
        const __m512i a = _mm512_loadu_si512(b->ql), c = _mm512_loadu_si512(b->ql + 64);
        const __m512i l0 = _mm512_shuffle_i64x2(a, c, 0x44), l1 = _mm512_shuffle_i64x2(a, c, 0xee);
        const __m512i h  = _mm512_loadu_si512(b->qh);  // [qh of half 0 | of half 1]
        const __m512i m4 = _mm512_set1_epi8(0x0f), m2 = _mm512_set1_epi8(0x30);
        // quadrant qd of each half: low nibbles of l0 / l1 (qd 0, 1) or high (2, 3), bits 2 qd of h as bits 4-5
        const __m512i s[4] = {_mm512_or_si512(_mm512_and_si512(l0, m4), _mm512_and_si512(_mm512_slli_epi16(h, 4), m2)),
                              _mm512_or_si512(_mm512_and_si512(l1, m4), _mm512_and_si512(_mm512_slli_epi16(h, 2), m2)),
                              _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l0, 4), m4), _mm512_and_si512(h, m2)),
                              _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l1, 4), m4),
                                              _mm512_and_si512(_mm512_srli_epi16(h, 2), m2))};
        transpose8(s, wk);
        const __m512 all = _mm512_mul_ps(
            _mm512_set1_ps(_cvtsh_ss(b->d)),
            _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b->scales)))));
        dw = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 2, 2, 4, 4, 6, 6, 8, 8, 10, 10, 12, 12, 14, 14), all);
        mw = _mm512_permutexvar_ps(_mm512_setr_epi32(1, 1, 3, 3, 5, 5, 7, 7, 9, 9, 11, 11, 13, 13, 15, 15), all);
        ma = _mm512_mul_ps(all, _mm512_set1_ps(-32.0f));  // exact: a power of two
    }
};

// One activation group in registers: the four quant registers, the scales and the format's term (s or s16).
struct ActRegs {
    __m512i q[4];
    __m512 d, t;
};
template <class W>
SPECULUM_VNNI inline __attribute__((always_inline)) ActRegs act_regs(const Q8ActKGroup& x) {
    ActRegs a;
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) a.q[k] = _mm512_loadu_si512(x.q + 64 * k);
    a.d = _mm512_loadu_ps(x.d);
    a.t = _mm512_loadu_ps(W::kSixteen ? x.s16 : x.s);
    return a;
}

// acc += one super-block of one row (wk, dw, mw, ma) against an activation group.
template <class W>
SPECULUM_VNNI inline __attribute__((always_inline)) __m512 dot_group(__m512 acc, const __m512i wk[4], __m512 dw,
                                                                     __m512 mw, __m512 ma, const ActRegs& x) {
    const __m512i zero = _mm512_setzero_si512();
    if constexpr (W::kSixteen) {
        const __m512i da = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(zero, wk[0], x.q[0]), wk[1], x.q[1]);
        const __m512i db = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(zero, wk[2], x.q[2]), wk[3], x.q[3]);
        const __m512 t   = _mm512_fmadd_ps(_mm512_cvtepi32_ps(da), dw, _mm512_mul_ps(_mm512_cvtepi32_ps(db), mw));
        acc              = _mm512_fmadd_ps(t, x.d, acc);
        return _mm512_fmadd_ps(ma, x.t, acc);
    } else {
        __m512i dot = zero;
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) dot = _mm512_dpbusd_epi32(dot, wk[k], x.q[k]);
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw, x.d), acc);
        return _mm512_fmadd_ps(mw, x.t, acc);
    }
}

// R weight rows x NV activation vectors over whole rows (nsb super-blocks): each row's super-block is decoded once
// and dotted with every vector, and the rows kPrefetchRows ahead are prefetched to L2.
template <class W, int R, int NV>
SPECULUM_VNNI void tile(float* y, int64_t ldy, const uint8_t* row0, uint64_t row_bytes, const Q8ActKGroup* const* xv,
                        int64_t nsb) {
    __m512 acc[R][NV];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_ps();
    for (int64_t g = 0; g < nsb; ++g) {
        // R rows' super-blocks decoded into registers, then each vector's activations loaded once for all R rows
        // (one vector: row by row, each dotted as soon as it is decoded)
        constexpr int RD = NV == 1 ? 1 : R;
        __m512i wk[RD][4];
        __m512 dw[RD], mw[RD], ma[RD];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const int d       = NV == 1 ? 0 : r;
            const uint8_t* sb = row0 + r * row_bytes + g * W::kSuperBytes;
            const char* ahead = reinterpret_cast<const char*>(sb + kPrefetchRows * row_bytes);
#pragma GCC unroll 4
            for (int64_t off = 0; off < W::kSuperBytes; off += 64) _mm_prefetch(ahead + off, _MM_HINT_T1);
            ma[d] = _mm512_setzero_ps();
            W::load(sb, wk[d], dw[d], mw[d], ma[d]);
            if constexpr (NV == 1)
                acc[r][0] = dot_group<W>(acc[r][0], wk[0], dw[0], mw[0], ma[0], act_regs<W>(xv[0][g]));
        }
        if constexpr (NV > 1) {
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) {
                const ActRegs x = act_regs<W>(xv[v][g]);
#pragma GCC unroll 8
                for (int r = 0; r < R; ++r) acc[r][v] = dot_group<W>(acc[r][v], wk[r], dw[r], mw[r], ma[r], x);
            }
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) y[v * ldy + r] = _mm512_reduce_add_ps(acc[r][v]);
}

// tile<W, R, nv> for a run-time nv <= 4.
template <class W, int R, int NV = 1>
SPECULUM_VNNI inline __attribute__((always_inline)) void tile_n(int64_t nv, float* y, int64_t ldy, const uint8_t* rows,
                                                                uint64_t row_bytes, const Q8ActKGroup* const* xv,
                                                                int64_t nsb) {
    if constexpr (NV < 4)
        if (nv > NV) return tile_n<W, R, NV + 1>(nv, y, ldy, rows, row_bytes, xv, nsb);
    tile<W, R, NV>(y, ldy, rows, row_bytes, xv, nsb);
}

// Rows [r, r + R) against all n vectors in groups of at most G (the later groups find the rows in L1). Tried: keeping
// the decoded rows for the later groups in an L1 scratch (slower than decoding again), and one row against 8 vectors
// (1.4-2x slower: each vector's activations are then loaded for every row, and the loads bound it).
template <class W, int R, int G>
SPECULUM_VNNI void row_tile(float* y, int64_t ldy, const uint8_t* rows, uint64_t row_bytes, const void* xq, int64_t n,
                            int64_t cols) {
    const int64_t nsb = cols / 256;
    for (int64_t i = 0; i < n; i += G) {
        const int64_t nv = n - i < G ? n - i : G;
        const Q8ActKGroup* xv[G];
        for (int64_t k = 0; k < nv; ++k) xv[k] = q8act_k_vec(xq, i + k, cols);
        tile_n<W, R>(nv, y + i * ldy, ldy, rows, row_bytes, xv, nsb);
    }
}

// Tiles of 8 rows for one vector (memory-bound: the most concurrent row streams), else of 2 rows against groups of
// at most 4 vectors (2 decoded super-blocks, a group's activations and 8 accumulators fit the 32 registers); then
// single rows. More than 8 vectors go over the rows 8 at a time: the activations of 8 vectors of 2048 columns fill
// L1, and 16 at once ran slower than two passes over the rows.
template <class W>
SPECULUM_VNNI void gemm_rows(float* y, int64_t ldy, const uint8_t* wb, uint64_t row_bytes, const void* xq, int64_t n,
                             int64_t cols, int64_t r0, int64_t r1) {
    const uint64_t vec = q8act_k_vec_bytes(cols);
    for (int64_t i = 0; i < n; i += 8) {
        const int64_t m = n - i < 8 ? n - i : 8;
        const void* xi  = static_cast<const uint8_t*>(xq) + i * vec;
        float* yi       = y + i * ldy;
        int64_t r       = r0;
        if (m == 1)
            for (; r + 8 <= r1; r += 8) row_tile<W, 8, 1>(yi + r, ldy, wb + r * row_bytes, row_bytes, xi, m, cols);
        for (; r + 2 <= r1; r += 2) row_tile<W, 2, 4>(yi + r, ldy, wb + r * row_bytes, row_bytes, xi, m, cols);
        for (; r < r1; ++r) row_tile<W, 1, 4>(yi + r, ldy, wb + r * row_bytes, row_bytes, xi, m, cols);
    }
}

SPECULUM_VNNI void quantize_impl(void* xq, const float* x, int64_t n, int64_t cols) {
    for (int64_t i = 0; i < n; ++i) {
        auto* groups    = const_cast<Q8ActKGroup*>(q8act_k_vec(xq, i, cols));
        const float* xi = x + i * cols;
        for (int64_t g = 0; g < cols / 256; ++g) {
            Q8ActKGroup& grp = groups[g];
            for (int j = 0; j < 8; ++j) {
                __m128i q0, q1;
                int32_t sum    = 0;
                const float db = vnni::quantize_block(xi + 256 * g + 32 * j, &q0, &q1, &sum);
                // qword k of the block (elements 8k .. 8k + 7) goes to register k, slot j
                _mm_storel_epi64(reinterpret_cast<__m128i*>(grp.q + 8 * j), q0);
                _mm_storel_epi64(reinterpret_cast<__m128i*>(grp.q + 64 + 8 * j), _mm_unpackhi_epi64(q0, q0));
                _mm_storel_epi64(reinterpret_cast<__m128i*>(grp.q + 128 + 8 * j), q1);
                _mm_storel_epi64(reinterpret_cast<__m128i*>(grp.q + 192 + 8 * j), _mm_unpackhi_epi64(q1, q1));
                const int32_t lo = _mm512_reduce_add_epi32(_mm512_cvtepi8_epi32(q0));
                grp.d[2 * j] = grp.d[2 * j + 1] = db;
                grp.s[2 * j]                    = db * static_cast<float>(sum);
                grp.s[2 * j + 1]                = 0.0f;
                grp.s16[2 * j]                  = db * static_cast<float>(lo);
                grp.s16[2 * j + 1]              = db * static_cast<float>(sum - lo);
            }
        }
    }
}

}  // namespace

void quantize_q8act_k_avx512(void* xq, const float* x, int64_t n, int64_t cols) {
    quantize_impl(xq, x, n, cols);
}

void gemm_q8act_k_avx512(float* y, int64_t ldy, GgmlType t, const void* w, const void* xq, int64_t n, int64_t cols,
                         int64_t r0, int64_t r1) {
    const auto* wb           = static_cast<const uint8_t*>(w);
    const uint64_t row_bytes = ggml_row_size(t, static_cast<uint64_t>(cols));
    switch (t) {
        case GgmlType::Q4_K:
            gemm_rows<KQ45<false>>(y, ldy, wb, row_bytes, xq, n, cols, r0, r1);
            return;
        case GgmlType::Q5_K:
            gemm_rows<KQ45<true>>(y, ldy, wb, row_bytes, xq, n, cols, r0, r1);
            return;
        case GgmlType::Q6_K:
            gemm_rows<KQ6>(y, ldy, wb, row_bytes, xq, n, cols, r0, r1);
            return;
        default:
            return;  // check_q8act_k_type admits only the types above
    }
}

}  // namespace speculum::kernels::detail
