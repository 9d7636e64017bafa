// AVX-512 VBMI2 kernels of the compact draft formats (compact.h, layout rules in compact_detail.h). vpexpandb scatters
// a group's stored bytes to the positions its presence mask names; merging pairs the low and high bytes into
// 16-bit values (shifts and a ternary merge, no shuffles), and for BF16 a shift or a mask widens them to f32, so a
// 64-element group becomes four f32 vectors in the activations' natural order (the encoder stored the elements in that
// unpack order). The fused GEMM multiplies them straight away (no scratch, weights read once for up to 8 vectors) and
// interleaves several rows, so one row's chain of group addresses (each needs the previous group's popcount) hides
// behind the others. Masked loads never touch bytes past a group; the 8-byte plane loads may read up to 7 bytes into
// the next group or the kCompactPad tail and mask them off. The decoder equals compact_decode_rows_ref bit for bit; the
// GEMM differs from compact_gemm_ref only in f32 summation order. Every function has the target attribute, in an
// anonymous namespace.
#include "kernels/vnni_common.h"  // first: its pragmas precede <immintrin.h>; gemv_detail.h, vnni::hsum

#include "kernels/compact_detail.h"
#include "kernels/quant_blocks.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#define SPECULUM_VBMI2 \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vbmi2,avx512vnni,avx2,bmi,bmi2,popcnt,fma,f16c")))
#define SPECULUM_VBMI2_INLINE                                                                                         \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vbmi2,avx512vnni,avx2,bmi,bmi2,popcnt,fma,f16c"), \
                   always_inline)) inline

#define SPECULUM_VBMI2_BF16                                                                          \
    __attribute__((                                                                                  \
        target("avx512f,avx512bw,avx512vl,avx512dq,avx512vbmi2,avx512vnni,avx512bf16,avx2,bmi,bmi2," \
               "popcnt,fma,f16c")))

namespace speculum::kernels::detail {

namespace {

SPECULUM_VBMI2_INLINE uint64_t low_bits(int64_t k) {
    return k >= 64 ? ~0ull : _bzhi_u64(~0ull, static_cast<unsigned>(k));
}

// One group at p: the stored values as 16-bit words in two registers (A: word j = position 2j, B: position 2j + 1);
// returns the group's bytes. Sparse: the mask is read from the stream; else `mask` is used.
// W: bits of each stored element's low byte (8 - trunc_bits): a byte, or a nibble (W >= 4) and W % 4 bit planes.
template <int W, bool Sparse>
SPECULUM_VBMI2_INLINE uint64_t group_words(__m512i& A, __m512i& B, const uint8_t* p, uint64_t mask) {
    constexpr bool kByte = W == 8, kNibble = W >= 4 && W < 8;
    constexpr int kPlanes = kByte ? 0 : W % 4, kTopBit = kNibble ? 3 : 7;
    const uint8_t* start = p;
    if constexpr (Sparse) {
        std::memcpy(&mask, p, 8);
        p += 8;
    }
    const int64_t k    = _mm_popcnt_u64(mask);
    const uint64_t kin = low_bits(k);
    // Plain loads: the expand below takes only the first k bytes (the rest lie in the stream or its kCompactPad
    // tail), and a full group (k = 64) has no tail. Masked loads made the sparse Q8_0 kernel twice as slow on Zen 4.
    const __m512i hi = _mm512_loadu_si512(p);
    p += k;
    __m512i lo;
    if constexpr (kByte) {
        lo = _mm512_loadu_si512(p);
        p += k;
    } else {
        lo = _mm512_setzero_si512();
        if constexpr (kNibble) {
            const int64_t nb = (k + 1) >> 1;
            // Word i = nibbles 2i (low) and 2i + 1 (high) of byte i -> bytes (n << 4): ((v << 4) | (v << 8)) & 0xF0F0.
            const __m512i v = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
            lo              = _mm512_ternarylogic_epi32(_mm512_slli_epi16(v, 4), _mm512_slli_epi16(v, 8),
                                                        _mm512_set1_epi16(static_cast<short>(0xF0F0)), 0xA8);
            p += nb;
        }
        const int64_t pb = (k + 7) >> 3;
#pragma GCC unroll 4
        for (int j = 0; j < kPlanes; ++j, p += pb) {
            uint64_t bits;
            std::memcpy(&bits, p, 8);  // may read past the group: masked off
            lo = _mm512_mask_add_epi8(lo, bits & kin, lo, _mm512_set1_epi8(static_cast<char>(1 << (kTopBit - j))));
        }
    }
    __m512i he = hi, le = lo;
    if (Sparse || mask != ~0ull) {
        he = _mm512_maskz_expand_epi8(mask, hi);
        le = _mm512_maskz_expand_epi8(mask, lo);
    }
    // Words of the even positions (le | he << 8) and of the odd ones (le >> 8 | he & 0xFF00): (a & c) | b.
    A = _mm512_ternarylogic_epi32(le, _mm512_slli_epi16(he, 8), _mm512_set1_epi16(0x00FF), 0xEC);
    B = _mm512_ternarylogic_epi32(he, _mm512_srli_epi16(le, 8), _mm512_set1_epi16(static_cast<short>(0xFF00)), 0xEC);
    return static_cast<uint64_t>(p - start);
}

// Software prefetch of the next row tile's streams into L2, paced so that it covers rows r0 + R .. r0 + 2R (contiguous,
// about as long as this tile's) while this tile decodes its R x `steps` groups: each step issues the lines its share
// of those bytes reaches (0, 1 or 2). The hardware prefetchers lose track of eight interleaved short streams: on a
// Xeon (Sapphire Rapids class) prune 0.5 + t 4 fell from 1.0x to 0.55x of the dense BF16 gemv on 1024-column rows
// streamed from memory (prefetching further ahead, or into L1, was slower; docs/performance.md, "Session 10").
struct NextTile {
    const uint8_t* line;    // next line to prefetch
    const uint8_t* cursor;  // how far the pace has reached
    const uint8_t* end;
    uint64_t stride;  // bytes per step
    NextTile(const CompactMatrix& w, int64_t r0, int64_t R, int64_t steps) {
        const uint8_t* start = w.row(std::min(r0 + R, w.rows()));
        end                  = w.row(std::min(r0 + 2 * R, w.rows()));
        line                 = reinterpret_cast<const uint8_t*>(reinterpret_cast<uintptr_t>(start) & ~uintptr_t(63));
        cursor               = line;
        stride = static_cast<uint64_t>(end - start) / static_cast<uint64_t>(std::max<int64_t>(1, R * steps)) + 1;
    }
    SPECULUM_VBMI2_INLINE void step() {
        cursor += stride;
        for (; line < cursor && line < end; line += 64) _mm_prefetch(reinterpret_cast<const char*>(line), _MM_HINT_T1);
    }
};

// The four f32 vectors of a group (elements 0..15, 16..31, 32..47, 48..63), from its words.
template <bool F16>
SPECULUM_VBMI2_INLINE void widen(__m512 w[4], __m512i A, __m512i B) {
    if constexpr (F16) {
        w[0] = _mm512_cvtph_ps(_mm512_castsi512_si256(A));
        w[1] = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(A, 1));
        w[2] = _mm512_cvtph_ps(_mm512_castsi512_si256(B));
        w[3] = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(B, 1));
    } else {
        const __m512i hi16 = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));  // a bf16 word is an f32's top half
        w[0]               = _mm512_castsi512_ps(_mm512_slli_epi32(A, 16));
        w[1]               = _mm512_castsi512_ps(_mm512_and_si512(A, hi16));
        w[2]               = _mm512_castsi512_ps(_mm512_slli_epi32(B, 16));
        w[3]               = _mm512_castsi512_ps(_mm512_and_si512(B, hi16));
    }
}

// Rows per tile for NV vectors: eight for one or two (each row's next group address waits on this group's popcount,
// and eight independent rows hide that chain; 4 rows were 1.3x slower on Zen 4, 16 no faster), four for three or
// four, two for more (the accumulators must fit the 32 registers).
template <int NV>
constexpr int kRowsFor = NV <= 2   ? 8
                         : NV <= 4 ? 4
                                   : 2;

// f(std::integral_constant<int, V>{}) for v in 1..8 (more counts as 8): a vector count, or the low-byte width of a
// BF16 format (low_width: 8 = untruncated).
template <class F>
void with_1_to_8(int64_t v, F&& f) {
    switch (v) {
        case 1:
            return f(std::integral_constant<int, 1>{});
        case 2:
            return f(std::integral_constant<int, 2>{});
        case 3:
            return f(std::integral_constant<int, 3>{});
        case 4:
            return f(std::integral_constant<int, 4>{});
        case 5:
            return f(std::integral_constant<int, 5>{});
        case 6:
            return f(std::integral_constant<int, 6>{});
        case 7:
            return f(std::integral_constant<int, 7>{});
        default:
            return f(std::integral_constant<int, 8>{});
    }
}

// ---- fused GEMM: R rows x NV vectors (NV <= 8), all columns ----
template <int W, bool Sparse, bool F16, int R, int NV>
SPECULUM_VBMI2 void tile16(float* y, int64_t ldy, const CompactMatrix& w, int64_t r0, const float* x, int64_t cols) {
    __m512 acc[R][NV];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_ps();
    const uint8_t* p[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) p[r] = w.row(r0 + r);
    const int64_t full = cols / kCompactGroup16;
    NextTile pf(w, r0, R, full);
    for (int64_t g = 0; g < full; ++g) {
        const float* xg = x + g * kCompactGroup16;
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            __m512i A, B;
            pf.step();
            p[r] += group_words<W, Sparse>(A, B, p[r], ~0ull);
            __m512 wv[4];
            widen<F16>(wv, A, B);
#pragma GCC unroll 8
            for (int v = 0; v < NV; ++v)
#pragma GCC unroll 4
                for (int q = 0; q < 4; ++q)
                    acc[r][v] = _mm512_fmadd_ps(wv[q], _mm512_loadu_ps(xg + v * cols + 16 * q), acc[r][v]);
        }
    }
    const int64_t rest = cols - full * kCompactGroup16;
    if (rest > 0) {  // the short last group: absent positions decode to 0, activations past cols are not read
        const float* xg     = x + full * kCompactGroup16;
        const uint64_t mask = full_mask(F16 ? GgmlType::F16 : GgmlType::BF16, rest);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            __m512i A, B;
            p[r] += group_words<W, Sparse>(A, B, p[r], mask);
            __m512 wv[4];
            widen<F16>(wv, A, B);
            for (int v = 0; v < NV; ++v)
                for (int q = 0; q < 4; ++q) {
                    const int64_t left = rest - 16 * q;
                    if (left <= 0) break;
                    const __mmask16 m = left >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << left) - 1u);
                    acc[r][v] = _mm512_fmadd_ps(wv[q], _mm512_maskz_loadu_ps(m, xg + v * cols + 16 * q), acc[r][v]);
                }
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) y[v * ldy + r0 + r] = _mm512_reduce_add_ps(acc[r][v]);
}

// Rows [r0, r1) against NV vectors: tiles of R rows, then single rows (the callers' tasks are whole 8-row tiles).
template <int W, bool Sparse, bool F16, int R, int NV>
SPECULUM_VBMI2 void rows16_nv(float* y, int64_t ldy, const CompactMatrix& w, const float* x, int64_t r0, int64_t r1) {
    int64_t r = r0;
    for (; r + R <= r1; r += R) tile16<W, Sparse, F16, R, NV>(y, ldy, w, r, x, w.cols());
    for (; r < r1; ++r) tile16<W, Sparse, F16, 1, NV>(y, ldy, w, r, x, w.cols());
}

// Vectors in groups of up to 8, each group against all rows, so every weight is decoded once per group, in tiles of
// kRowsFor<NV> rows. Every count has its own tile: n = 3 decoded the weights twice as 2 + 1 and cost more than n = 4.
template <int W, bool Sparse, bool F16>
SPECULUM_VBMI2 void gemm16(float* y, int64_t ldy, const CompactMatrix& w, const float* x, int64_t n, int64_t r0,
                           int64_t r1) {
    for (int64_t i = 0; i < n; i += 8) {
        float* yi       = y + i * ldy;
        const float* xi = x + i * w.cols();
        with_1_to_8(n - i, [&](auto nv) {
            constexpr int NV = decltype(nv)::value;
            rows16_nv<W, Sparse, F16, kRowsFor<NV>, NV>(yi, ldy, w, xi, r0, r1);
        });
    }
}

template <bool Sparse, bool F16>
void gemm16_w(float* y, int64_t ldy, const CompactMatrix& w, const float* x, int64_t n, int64_t r0, int64_t r1) {
    with_1_to_8(low_width(w.format()),
                [&](auto wd) { gemm16<decltype(wd)::value, Sparse, F16>(y, ldy, w, x, n, r0, r1); });
}

// ---- fused GEMM with BF16 activations: R rows x NV vectors (NV <= 8) ----
// The decoded words A and B hold each lane's element pair (j, 16 + j) and (32 + j, 48 + j) of a group, and the
// packed activations (compact_pack_bf16act) hold the same pairs, so one vdpbf16ps per register multiplies a group's
// 32 elements of a row by a vector: two per group, where the f32 kernel widens four registers and does four FMAs.
template <int W, bool Sparse, int R, int NV>
SPECULUM_VBMI2_BF16 void tile_bf16act(float* y, int64_t ldy, const CompactMatrix& w, int64_t r0, const uint16_t* xp,
                                      int64_t words) {
    __m512 acc[R][NV];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_ps();
    const uint8_t* p[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) p[r] = w.row(r0 + r);
    const int64_t cols = w.cols(), full = cols / kCompactGroup16;
    NextTile pf(w, r0, R, full);
    // The short last group, if any, runs as one more group: absent positions decode to 0 and its padding is 0.
    const int64_t rest = cols - full * kCompactGroup16, groups = full + (rest > 0 ? 1 : 0);
    const uint64_t last = rest > 0 ? full_mask(GgmlType::BF16, rest) : ~0ull;
    for (int64_t g = 0; g < groups; ++g) {
        const uint16_t* xg  = xp + g * kCompactGroup16;
        const uint64_t mask = g < full ? ~0ull : last;
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            __m512i A, B;
            pf.step();
            p[r] += group_words<W, Sparse>(A, B, p[r], mask);
#pragma GCC unroll 8
            for (int v = 0; v < NV; ++v) {
                const __m512i xa = _mm512_loadu_si512(xg + v * words);
                const __m512i xb = _mm512_loadu_si512(xg + v * words + 32);
                acc[r][v]        = _mm512_dpbf16_ps(acc[r][v], (__m512bh)A, (__m512bh)xa);
                acc[r][v]        = _mm512_dpbf16_ps(acc[r][v], (__m512bh)B, (__m512bh)xb);
            }
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) y[v * ldy + r0 + r] = _mm512_reduce_add_ps(acc[r][v]);
}

template <int W, bool Sparse, int R, int NV>
SPECULUM_VBMI2_BF16 void rows_bf16act_nv(float* y, int64_t ldy, const CompactMatrix& w, const uint16_t* xp,
                                         int64_t words, int64_t r0, int64_t r1) {
    int64_t r = r0;
    for (; r + R <= r1; r += R) tile_bf16act<W, Sparse, R, NV>(y, ldy, w, r, xp, words);
    for (; r < r1; ++r) tile_bf16act<W, Sparse, 1, NV>(y, ldy, w, r, xp, words);
}

// Vectors in groups of up to 8, rows per tile as gemm16 chooses them.
template <int W, bool Sparse>
SPECULUM_VBMI2_BF16 void gemm_bf16act_w(float* y, int64_t ldy, const CompactMatrix& w, const uint16_t* xp, int64_t n,
                                        int64_t r0, int64_t r1) {
    const int64_t words = compact_bf16act_words(w.cols());
    for (int64_t i = 0; i < n; i += 8) {
        float* yi          = y + i * ldy;
        const uint16_t* xi = xp + i * words;
        with_1_to_8(n - i, [&](auto nv) {
            constexpr int NV = decltype(nv)::value;
            rows_bf16act_nv<W, Sparse, kRowsFor<NV>, NV>(yi, ldy, w, xi, words, r0, r1);
        });
    }
}

template <bool Sparse>
void gemm_bf16act_sparse(float* y, int64_t ldy, const CompactMatrix& w, const uint16_t* xp, int64_t n, int64_t r0,
                         int64_t r1) {
    with_1_to_8(low_width(w.format()),
                [&](auto wd) { gemm_bf16act_w<decltype(wd)::value, Sparse>(y, ldy, w, xp, n, r0, r1); });
}

// ---- decoder to dense rows ----
// Natural-order words from A / B: out word e (e < 32: idx0, else idx1) = word perm^-1(e) of A (index < 32) or B.
struct WordIndex {
    alignas(64) uint16_t idx[2][32];
};
WordIndex word_index(GgmlType dense) {
    WordIndex wi{};
    const auto& perm = group_perm(dense);
    for (int p = 0; p < 64; ++p) {  // position p is word p / 2 of A (even p) or of B (odd p)
        const int e            = perm[size_t(p)];
        wi.idx[e / 32][e % 32] = static_cast<uint16_t>(32 * (p % 2) + p / 2);
    }
    return wi;
}

template <int W, bool Sparse>
SPECULUM_VBMI2 void rows16(uint8_t* out, const CompactMatrix& w, int64_t r0, int64_t r1) {
    static const WordIndex bf16 = word_index(GgmlType::BF16), f16 = word_index(GgmlType::F16);
    const WordIndex& wi   = w.format().dense == GgmlType::F16 ? f16 : bf16;
    const __m512i i0      = _mm512_load_si512(wi.idx[0]);
    const __m512i i1      = _mm512_load_si512(wi.idx[1]);
    const int64_t cols    = w.cols();
    const uint64_t tail_m = full_mask(w.format().dense, cols % kCompactGroup16);
    for (int64_t r = r0; r < r1; ++r, out += 2 * cols) {
        const uint8_t* p = w.row(r);
        for (int64_t g0 = 0; g0 < cols; g0 += kCompactGroup16) {
            const int64_t n = cols - g0 < kCompactGroup16 ? cols - g0 : kCompactGroup16;
            __m512i A, B;
            p += group_words<W, Sparse>(A, B, p, n == 64 ? ~0ull : tail_m);
            const __m512i a = _mm512_permutex2var_epi16(A, i0, B), b = _mm512_permutex2var_epi16(A, i1, B);
            if (n == 64) {
                _mm512_storeu_si512(out + 2 * g0, a);
                _mm512_storeu_si512(out + 2 * g0 + 64, b);
            } else {
                const __mmask32 m0 = n >= 32 ? ~0u : static_cast<__mmask32>(low_bits(n));
                const __mmask32 m1 = n <= 32 ? 0u : static_cast<__mmask32>(low_bits(n - 32));
                _mm512_mask_storeu_epi16(out + 2 * g0, m0, a);
                _mm512_mask_storeu_epi16(out + 2 * g0 + 64, m1, b);
            }
        }
    }
}

// One Q8_0 group (four blocks) at p: wk[k] = register k of the int8 kernel's layout as unsigned bytes (q + 128;
// absent elements are q = 0), dw = the four scales, each in two lanes. Returns the group's bytes.
SPECULUM_VBMI2_INLINE uint64_t group_q8(const uint8_t* p, __m256i wk[4], __m256& dw) {
    uint64_t h;
    std::memcpy(&h, p, 8);
    dw = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_cvtph_ps(_mm_cvtsi64_si128(static_cast<long long>(h)))),
                                  _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3));
    uint32_t mask[4];
    std::memcpy(mask, p + 8, 16);
    const uint8_t* q   = p + 24;
    const __m256i bias = _mm256_set1_epi8(static_cast<char>(0x80));
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
        const int c = _mm_popcnt_u32(mask[k]);
        // A plain load: vpexpandb takes only the first c bytes (the rest lie in the stream or its kCompactPad tail).
        // A masked load here made the kernel twice as slow on Zen 4.
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
        wk[k]           = _mm256_xor_si256(_mm256_maskz_expand_epi8(mask[k], v), bias);
        q += c;
    }
    return static_cast<uint64_t>(q - p);
}

SPECULUM_VBMI2 void rows_q8(uint8_t* out, const CompactMatrix& w, int64_t r0, int64_t r1) {
    const int64_t blocks = w.cols() / kQK8_0;
    for (int64_t r = r0; r < r1; ++r) {
        const uint8_t* p = w.row(r);
        for (int64_t b0 = 0; b0 < blocks; b0 += kCompactQ8Blocks) {
            __m256i wk[4];
            __m256 dw;
            const uint8_t* g = p;
            p += group_q8(p, wk, dw);
            alignas(32) uint8_t regs[4][32];
            for (int k = 0; k < 4; ++k)
                _mm256_store_si256(reinterpret_cast<__m256i*>(regs[k]),
                                   _mm256_xor_si256(wk[k], _mm256_set1_epi8(static_cast<char>(0x80))));
            for (int64_t j = 0; j < kCompactQ8Blocks && b0 + j < blocks; ++j, out += sizeof(BlockQ8_0)) {
                std::memcpy(out, g + 2 * j, 2);
                for (int k = 0; k < 4; ++k) std::memcpy(out + 2 + 8 * k, &regs[k][8 * j], 8);
            }
        }
    }
}

// Fused Q8_0 x int8 GEMM, R rows x NV vectors: the dense int8 kernel's arithmetic (gemv_q8act_avx512.cpp) on
// registers decoded from the compact groups, so each block dot is the same exact int32 and the sums match.
template <int R, int NV>
SPECULUM_VBMI2 void tile_q8(float* y, int64_t ldy, const CompactMatrix& w, int64_t r0, const Q8ActGroup* const* xv,
                            int64_t groups) {
    __m256 acc[R][NV];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_setzero_ps();
    const uint8_t* p[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) p[r] = w.row(r0 + r);
    NextTile pf(w, r0, R, groups);
    for (int64_t g = 0; g < groups; ++g) {
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            __m256i wk[4];
            __m256 dw;
            pf.step();
            p[r] += group_q8(p[r], wk, dw);
#pragma GCC unroll 8
            for (int v = 0; v < NV; ++v) {
                const Q8ActGroup& x = xv[v][g];
                __m256i dot         = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.off));
#pragma GCC unroll 4
                for (int k = 0; k < 4; ++k)
                    dot = _mm256_dpbusd_epi32(dot, wk[k],
                                              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.q + 32 * k)));
                acc[r][v] =
                    _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(dw, _mm256_loadu_ps(x.d)), acc[r][v]);
            }
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) y[v * ldy + r0 + r] = vnni::hsum(acc[r][v]);  // the dense kernel's sum
}

template <int R>
SPECULUM_VBMI2 void q8_rows_nv(float* y, int64_t ldy, const CompactMatrix& w, int64_t r, const Q8ActGroup* const* xv,
                               int64_t nv, int64_t groups) {
    switch (nv) {
        case 1:
            tile_q8<R, 1>(y, ldy, w, r, xv, groups);
            break;
        case 2:
            tile_q8<R, 2>(y, ldy, w, r, xv, groups);
            break;
        case 3:
            tile_q8<R, 3>(y, ldy, w, r, xv, groups);
            break;
        default:
            tile_q8<R, 4>(y, ldy, w, r, xv, groups);
            break;
    }
}

template <bool Sparse>
void rows16_w(uint8_t* out, const CompactMatrix& w, int64_t r0, int64_t r1) {
    switch (low_width(w.format())) {
        case 1:
            rows16<1, Sparse>(out, w, r0, r1);
            break;
        case 2:
            rows16<2, Sparse>(out, w, r0, r1);
            break;
        case 3:
            rows16<3, Sparse>(out, w, r0, r1);
            break;
        case 4:
            rows16<4, Sparse>(out, w, r0, r1);
            break;
        case 5:
            rows16<5, Sparse>(out, w, r0, r1);
            break;
        case 6:
            rows16<6, Sparse>(out, w, r0, r1);
            break;
        case 7:
            rows16<7, Sparse>(out, w, r0, r1);
            break;
        default:
            rows16<8, Sparse>(out, w, r0, r1);
            break;
    }
}

}  // namespace

bool compact_decode_rows_avx512(void* dst, const CompactMatrix& w, int64_t r0, int64_t r1) {
    auto* out = static_cast<uint8_t*>(dst);
    if (w.format().dense == GgmlType::Q8_0)
        rows_q8(out, w, r0, r1);
    else if (w.format().sparse)
        rows16_w<true>(out, w, r0, r1);
    else
        rows16_w<false>(out, w, r0, r1);
    return true;
}

void compact_gemm_q8act_avx512(float* y, int64_t ldy, const CompactMatrix& w, const void* xq, int64_t n, int64_t r0,
                               int64_t r1) {
    const int64_t cols = w.cols(), groups = (cols / kQK8_0 + kCompactQ8Blocks - 1) / kCompactQ8Blocks;
    for (int64_t i = 0; i < n; i += 4) {  // the activations' groups match the weights' (four blocks each)
        const int64_t nv = n - i < 4 ? n - i : 4;
        const Q8ActGroup* xv[4];
        for (int64_t k = 0; k < nv; ++k) xv[k] = q8act_vec(xq, i + k, cols);
        float* yi = y + i * ldy;
        int64_t r = r0;
        if (nv <= 2)
            for (; r + 8 <= r1; r += 8) q8_rows_nv<8>(yi, ldy, w, r, xv, nv, groups);
        for (; r + 4 <= r1; r += 4) q8_rows_nv<4>(yi, ldy, w, r, xv, nv, groups);
        for (; r < r1; ++r) q8_rows_nv<1>(yi, ldy, w, r, xv, nv, groups);
    }
}

void compact_gemm_bf16act_avx512(float* y, int64_t ldy, const CompactMatrix& w, const uint16_t* xp, int64_t n,
                                 int64_t r0, int64_t r1) {
    if (w.format().sparse)
        gemm_bf16act_sparse<true>(y, ldy, w, xp, n, r0, r1);
    else
        gemm_bf16act_sparse<false>(y, ldy, w, xp, n, r0, r1);
}

void compact_gemm16_avx512(float* y, int64_t ldy, const CompactMatrix& w, const float* x, int64_t n, int64_t r0,
                           int64_t r1) {
    const bool f16 = w.format().dense == GgmlType::F16;  // F16 rows are never truncated: W = 8
    if (w.format().sparse) {
        if (f16)
            gemm16<8, true, true>(y, ldy, w, x, n, r0, r1);
        else
            gemm16_w<true, false>(y, ldy, w, x, n, r0, r1);
    } else {
        if (f16)
            gemm16<8, false, true>(y, ldy, w, x, n, r0, r1);
        else
            gemm16_w<false, false>(y, ldy, w, x, n, r0, r1);
    }
}

}  // namespace speculum::kernels::detail
