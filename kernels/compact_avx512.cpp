// AVX-512 VBMI2 kernels of the compact draft formats (compact.h, layout rules in compact_detail.h). vpexpandb scatters
// a group's stored bytes to the positions its presence mask names; vpunpck{l,h}bw pair the low and high bytes into
// 16-bit values, and for BF16 a shift or a mask widens them to f32, so a
// 64-element group becomes four f32 vectors in the activations' natural order (the encoder stored the elements in that
// unpack order). The fused GEMM multiplies them straight away (no scratch, weights read once for up to 8 vectors),
// a tile's rows together: each step reads the rows' headers, then their bodies, in stream order (compact.h). Loads
// may read past a body into the rest of the stream or its kCompactPad tail; the expands and masks drop those bytes. The
// decoder equals compact_decode_rows_ref bit for bit; the GEMM differs from compact_gemm_ref only in f32 summation
// order. Every function has the target attribute, in an anonymous namespace.
#include "kernels/vnni_common.h"  // first: its pragmas precede <immintrin.h>; gemv_detail.h, vnni::hsum

#include "kernels/compact_detail.h"
#include "kernels/quant_blocks.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#define SPECULUM_VBMI2     \
    __attribute__((target( \
        "avx512f,avx512bw,avx512vl,avx512dq,avx512vbmi2,avx512vbmi,gfni,avx512vnni,avx2,bmi,bmi2,popcnt,fma,f16c")))
#define SPECULUM_VBMI2_INLINE                                                                                        \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vbmi2,avx512vbmi,gfni,avx512vnni,avx2,bmi,bmi2," \
                          "popcnt,fma,f16c"),                                                                        \
                   always_inline)) inline

#define SPECULUM_VBMI2_BF16                                                                                          \
    __attribute__((                                                                                                  \
        target("avx512f,avx512bw,avx512vl,avx512dq,avx512vbmi2,avx512vbmi,gfni,avx512vnni,avx512bf16,avx2,bmi,bmi2," \
               "popcnt,fma,f16c")))

namespace speculum::kernels::detail {

namespace {

SPECULUM_VBMI2_INLINE uint64_t low_bits(int64_t k) {
    return k >= 64 ? ~0ull : _bzhi_u64(~0ull, static_cast<unsigned>(k));
}

// Bytes of a group body with k stored elements whose low bytes keep W bits (compact_body_bytes).
template <int W>
SPECULUM_VBMI2_INLINE uint64_t body16(int64_t k) {
    constexpr bool kByte = W == 8, kNibble = W >= 4 && W < 8;
    constexpr int kPlanes = kByte ? 0 : W % 4;
    return static_cast<uint64_t>(k + (kByte ? k : kNibble ? (k + 1) >> 1 : 0) + kPlanes * ((k + 7) >> 3));
}

// A 64-byte (32-byte) load kept in a register: GCC otherwise folds a load that feeds only vpexpandb into the
// instruction's memory operand, and vpexpandb from memory is microcoded on Zen (measured on Zen 5: the t = 0 sparse
// kernel ran at 5 GB/s instead of 25).
SPECULUM_VBMI2_INLINE __m512i load_reg(const uint8_t* p) {
    __m512i v = _mm512_loadu_si512(p);
    asm("" : "+v"(v));
    return v;
}
SPECULUM_VBMI2_INLINE __m256i load_reg256(const uint8_t* p) {
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    asm("" : "+v"(v));
    return v;
}

SPECULUM_VBMI2_INLINE uint64_t load_u64(const uint8_t* p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
}

// One step of a tile of Rt 16-bit rows at p (the rows' masks when sparse, then their bodies): the masks, stored
// counts and bodies of rows [a, a + R); returns the next step. fm: the mask of a group that keeps all its elements
// (all 64, or those of the short last group), which every group of a row that is not sparse has.
template <int W, bool Sparse, int R>
SPECULUM_VBMI2_INLINE const uint8_t* step16(const uint8_t* p, int Rt, int a, uint64_t fm, uint64_t (&mask)[R],
                                            int64_t (&k)[R], const uint8_t* (&body)[R]) {
    // Passes of 8 rows take whole tiles (for_tile_passes): saying so lets the compiler drop the walks over other rows
    // (without it GCC's code for the n = 1 BF16-activation tile spilled more and ran ~6 % slower, Session 24).
    if constexpr (R == kCompactTileRows) Rt = R, a = 0;
    if constexpr (!Sparse) {
        const int64_t kk = _mm_popcnt_u64(fm);
        const uint64_t b = body16<W>(kk);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) mask[r] = fm, k[r] = kk, body[r] = p + static_cast<uint64_t>(a + r) * b;
        return p + static_cast<uint64_t>(Rt) * b;
    } else {
        const uint8_t* q = p + 8 * Rt;
        for (int j = 0; j < a; ++j) q += body16<W>(_mm_popcnt_u64(load_u64(p + 8 * j)));
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            mask[r] = load_u64(p + 8 * (a + r));
            k[r]    = _mm_popcnt_u64(mask[r]);
            body[r] = q;
            q += body16<W>(k[r]);
        }
        for (int j = a + R; j < Rt; ++j) q += body16<W>(_mm_popcnt_u64(load_u64(p + 8 * j)));
        return q;
    }
}

// The rows of one step, in order: row(r) gives row r's mask, stored count and body. A whole tile (R =
// kCompactTileRows) reads each row's header as it comes to it, the bodies' offset running on from the last row's, so
// only that offset stays live; with step16's eight masks, counts and offsets live at once, GCC spilled the code of the
// formats with bit planes (sparse t 2 ran 60 % slower than t 4 in cache, Session 28). Passes of fewer rows take
// step16's arrays.
template <int W, bool Sparse, int R>
struct Step16 {
    static constexpr bool kWalk = R == kCompactTileRows && Sparse && W != 8 && W % 4 != 0;  // bit planes
    const uint8_t* p;  // the step's headers (kWalk)
    const uint8_t* q;  // the next body (kWalk), or the next step
    uint64_t mask[kWalk ? 1 : R];
    int64_t k[kWalk ? 1 : R];
    const uint8_t* body[kWalk ? 1 : R];

    SPECULUM_VBMI2_INLINE Step16(const uint8_t* at, int Rt, int a, uint64_t full) : p(at), q(nullptr) {
        if constexpr (kWalk)
            q = at + 8 * R;
        else
            q = step16<W, Sparse, R>(at, Rt, a, full, mask, k, body);
    }
    SPECULUM_VBMI2_INLINE void row(int r, uint64_t& m, int64_t& kk, const uint8_t*& b) {
        if constexpr (kWalk) {
            m  = load_u64(p + 8 * r);
            kk = _mm_popcnt_u64(m);
            b  = q;
            q += body16<W>(kk);
        } else {
            m = mask[r], kk = k[r], b = body[r];
        }
    }
    // The next step (after every row() of a whole tile).
    SPECULUM_VBMI2_INLINE const uint8_t* end() const { return q; }
};

// Offset tables for passes of fewer rows than a whole tile (batched Q8_0 passes): each pass would otherwise walk the
// tile's headers again, each step's address waiting on the last step's sizes (passes of n = 3..8 vectors ran 2-4x
// slower than with every row in its own stream). kTableWords per step: the offsets of the 8 rows' bodies from the
// step's start, then the step's size. Tiles of more than kTableSteps steps walk.
constexpr int kTableWords     = kCompactTileRows + 1;
constexpr int64_t kTableSteps = 512;

// Bit planes to bytes: planes j < P of a group at p (pb bytes each, LSB-first: bit e of a plane is element e) as
// bytes whose bit (top - j) is element e's bit of plane j. vgf2p8affineqb transposes each qword's 8 x 8 bits: the
// permute puts plane j's byte q at byte 7 - (top - j) of qword q (the matrix row of output bit top - j), and the
// operand's byte e holds 1 << (e % 8), which picks column e % 8. No mask moves from scalar registers (two
// kmovq per group made the plane formats the slowest compact drafts). Bytes past the group's k elements are garbage;
// the caller's expand drops them.
template <int P, int kTop>
SPECULUM_VBMI2_INLINE __m512i plane_bytes(const uint8_t* p, int64_t pb) {
    struct Tables {
        alignas(64) uint8_t idx[64], bit[64];
        uint64_t keep;
    };
    static constexpr Tables t = [] {
        Tables x{};
        x.keep = 0;
        for (int e = 0; e < 64; ++e) x.bit[e] = static_cast<uint8_t>(1u << (e % 8));
        for (int q = 0; q < 8; ++q)
            for (int j = 0; j < P; ++j) {
                const int b = 8 * q + 7 - kTop + j;
                x.idx[b]    = static_cast<uint8_t>(8 * j + q);
                x.keep |= 1ull << b;
            }
        return x;
    }();
    __m128i lo2 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));  // may read past the planes: dropped
    if constexpr (P >= 2) lo2 = _mm_unpacklo_epi64(lo2, _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + pb)));
    __m512i src = _mm512_castsi128_si512(lo2);
    if constexpr (P >= 3)
        src = _mm512_inserti32x4(src, _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 2 * pb)), 1);
    const __m512i m = _mm512_maskz_permutexvar_epi8(t.keep, _mm512_load_si512(t.idx), src);
    return _mm512_gf2p8affine_epi64_epi8(_mm512_load_si512(t.bit), m, 0);
}

// Nibble field to bytes: byte c of the result holds stored element c's nibble (byte c / 2 of p, low nibble first)
// in bits kAt + 3..kAt, and in its other four bits the neighbouring nibble (the caller masks them off). vpmovzxdq
// gives qword q the nibbles 8q..8q+7 (bits 4m..4m+3); vpmultishiftqb takes byte b of each qword from bit 4b - kAt
// on, rotating within the qword (for b = 0, kAt = 4: bits 60..63, zero, then nibble 0). Reads 32 bytes at p; bytes
// past the k stored elements are garbage, which the caller's expand drops.
template <int kAt>
SPECULUM_VBMI2_INLINE __m512i nibble_bytes(const uint8_t* p) {
    constexpr uint64_t kIdx = kAt == 4 ? 0x1814100C0804003Cull : 0x1C1814100C080400ull;
    static_assert(kAt == 0 || kAt == 4);
    const __m512i v = _mm512_cvtepu32_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_multishift_epi64_epi8(_mm512_set1_epi64(static_cast<long long>(kIdx)), v);
}

// One group's body at p with presence mask `mask` (k of its bits set): the stored values as 16-bit words in two
// registers (word 8 l + i of A: position 16 l + i; of B: position 16 l + 8 + i; i < 8).
// W: bits of each stored element's low byte (8 - trunc_bits): a byte, or a nibble (W >= 4) and W % 4 bit planes.
// Rest: also merge the target's rest of this group (CompactRest: the m absent elements whole, at `rest`, then the
// 8 - W low bits of the stored ones as a nibble and planes), so that A and B hold the target's words (rm: the absent
// positions).
template <int W, bool Sparse, bool Rest = false>
SPECULUM_VBMI2_INLINE void group_words(__m512i& A, __m512i& B, const uint8_t* p, uint64_t mask, int64_t k,
                                       const uint8_t* rest = nullptr, uint64_t rm = 0, int64_t m = 0) {
    constexpr bool kByte = W == 8, kNibble = W >= 4 && W < 8;
    constexpr int kPlanes = kByte ? 0 : W % 4, kTopBit = kNibble ? 3 : 7;
    // Plain loads: the expand below takes only the first k bytes (the rest lie in the stream or its kCompactPad
    // tail), and a full group (k = 64) has no tail. Masked loads made the sparse Q8_0 kernel twice as slow on Zen 4.
    const __m512i hi = load_reg(p);
    p += k;
    __m512i lo;
    if constexpr (kByte) {
        lo = load_reg(p);
    } else {
        lo = _mm512_setzero_si512();
        if constexpr (kNibble) {
            lo = _mm512_and_si512(nibble_bytes<4>(p), _mm512_set1_epi8(static_cast<char>(0xF0)));
            p += (k + 1) >> 1;
        }
        if constexpr (kPlanes > 0) {
            const int64_t pb = (k + 7) >> 3;
            lo               = _mm512_or_si512(lo, plane_bytes<kPlanes, kTopBit>(p, pb));
            p += kPlanes * pb;
        }
    }
    if constexpr (Rest) {  // the truncated bits of the stored elements: a nibble (T >= 4), then planes
        constexpr int T = 8 - W, kRestPlanes = T >= 4 ? T - 4 : T;
        const uint8_t* lb = rest + 2 * m;
        if constexpr (T >= 4) {  // the nibble as bits 3..0: (lo | n) where lo's are 0
            lo = _mm512_ternarylogic_epi32(lo, nibble_bytes<0>(lb), _mm512_set1_epi8(0x0F), 0xF8);
            lb += (k + 1) >> 1;
        }
        if constexpr (kRestPlanes > 0) lo = _mm512_or_si512(lo, plane_bytes<kRestPlanes, T - 1>(lb, (k + 7) >> 3));
    }
    __m512i he = hi, le = lo;
    if (Sparse || mask != ~0ull) {
        he = _mm512_maskz_expand_epi8(mask, hi);
        le = _mm512_maskz_expand_epi8(mask, lo);
    }
    if constexpr (Rest) {
        if (rm) {  // the absent elements, whole: high bytes, then low bytes
            he = _mm512_mask_expand_epi8(he, rm, load_reg(rest));
            le = _mm512_mask_expand_epi8(le, rm, load_reg(rest + m));
        }
    }
    // Words (le | he << 8) of positions 16 l + i (A) and 16 l + 8 + i (B), i < 8, in 128-bit lane l.
    A = _mm512_unpacklo_epi8(le, he);
    B = _mm512_unpackhi_epi8(le, he);
}

// Software prefetch of tile t's stream. A pass of fewer rows than the tile (batched passes) walks it once per pass,
// each step's address waiting on the last step's headers; the hardware prefetchers do not run ahead of a region
// read several times over, so without this the first pass chased cache misses from step to step (passes of n = 3..8
// vectors were 2-4x slower than with rows in separate streams).
SPECULUM_VBMI2_INLINE void prefetch_tile(const CompactMatrix& w, int64_t t) {
    if (t >= w.tiles()) return;
    const uint8_t* end = w.tile(t + 1);
    for (const uint8_t* p = reinterpret_cast<const uint8_t*>(reinterpret_cast<uintptr_t>(w.tile(t)) & ~uintptr_t(63));
         p < end; p += 64)
        _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0);
}

// Calls fn(R tag, tile pointer, Rt, a, first row) for the rows [r0, r1): a whole tile in passes of R rows (each pass
// walks the tile's steps and skips the other rows' bodies, which the first pass brought into cache), the rows of a
// partial tile one at a time.
template <int R, class Fn>
SPECULUM_VBMI2_INLINE void for_tile_passes(const CompactMatrix& w, int64_t r0, int64_t r1, Fn&& fn) {
    for (int64_t t = r0 / kCompactTileRows; t * kCompactTileRows < r1; ++t) {
        const int64_t base = t * kCompactTileRows;
        const int Rt       = w.tile_rows(t);
        const int a = static_cast<int>(std::max(r0, base) - base), b = static_cast<int>(std::min(r1, base + Rt) - base);
        if (a == 0 && b == kCompactTileRows) {
            if constexpr (R < kCompactTileRows) {  // several passes: fetch the next tile while they run
                if (t * kCompactTileRows == r0) prefetch_tile(w, t);
                prefetch_tile(w, t + 1);
            }
            for (int s = 0; s < kCompactTileRows; s += R)
                fn(std::integral_constant<int, R>{}, w.tile(t), Rt, s, base + s);
        } else
            for (int j = a; j < b; ++j) fn(std::integral_constant<int, 1>{}, w.tile(t), Rt, j, base + j);
    }
}

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

// fn(std::integral_constant<int, V>{}, i) for blocks [i, i + V) of n vectors, V <= 3 (8 rows x 3 vectors of
// accumulators fit the 32 registers): 3, 3, ..., then 2 + 2 when 4 are left, 2 or 1.
template <class Fn>
void for_vector_blocks(int64_t n, Fn&& fn) {
    int64_t i = 0;
    for (; n - i >= 3 && n - i != 4; i += 3) fn(std::integral_constant<int, 3>{}, i);
    for (; n - i >= 2; i += 2) fn(std::integral_constant<int, 2>{}, i);
    if (i < n) fn(std::integral_constant<int, 1>{}, i);
}

// ---- fused GEMM: R rows x NV vectors (NV <= 3), all columns ----
// Rows [a, a + R) of the tile of Rt rows at p; y rows from `row0`.
template <int W, bool Sparse, bool F16, int R, int NV>
SPECULUM_VBMI2 void tile16(float* y, int64_t ldy, const uint8_t* p, int Rt, int a, int64_t row0, const float* x,
                           int64_t cols) {
    __m512 acc[R][NV];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_ps();
    const int64_t full = cols / kCompactGroup16;
    for (int64_t g = 0; g < full; ++g) {
        const float* xg = x + g * kCompactGroup16;
        Step16<W, Sparse, R> st(p, Rt, a, ~0ull);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            uint64_t mask;
            int64_t k;
            const uint8_t* body;
            st.row(r, mask, k, body);
            __m512i A, B;
            group_words<W, Sparse>(A, B, body, mask, k);
            __m512 wv[4];
            widen<F16>(wv, A, B);
#pragma GCC unroll 8
            for (int v = 0; v < NV; ++v)
#pragma GCC unroll 4
                for (int q = 0; q < 4; ++q)
                    acc[r][v] = _mm512_fmadd_ps(wv[q], _mm512_loadu_ps(xg + v * cols + 16 * q), acc[r][v]);
        }
        p = st.end();
    }
    const int64_t rest = cols - full * kCompactGroup16;
    if (rest > 0) {  // the short last group: absent positions decode to 0, activations past cols are not read
        const float* xg = x + full * kCompactGroup16;
        Step16<W, Sparse, R> st(p, Rt, a, full_mask(F16 ? GgmlType::F16 : GgmlType::BF16, rest));
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            uint64_t mask;
            int64_t k;
            const uint8_t* body;
            st.row(r, mask, k, body);
            __m512i A, B;
            group_words<W, Sparse>(A, B, body, mask, k);
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
        for (int v = 0; v < NV; ++v) y[v * ldy + row0 + r] = _mm512_reduce_add_ps(acc[r][v]);
}

// Rows [r0, r1) against n vectors. A whole tile takes one pass of its 8 rows per block of up to 3 vectors
// (for_vector_blocks), the blocks one after the other while the tile is in L1; each pass decodes the rows again, but
// walks the steps in order. Passes of fewer rows over more vectors, with a table of the tile's offsets, cost 15-45 %
// more for n = 3..8 (docs/performance-notebook.md, Session 24). A partial tile takes its rows one at a time. Each (row,
// vector) sum runs the same operations in the same order however the vectors are blocked.
template <int W, bool Sparse, bool F16>
SPECULUM_VBMI2 void gemm16(float* y, int64_t ldy, const CompactMatrix& w, const float* x, int64_t n, int64_t r0,
                           int64_t r1) {
    const int64_t cols = w.cols();
    for_tile_passes<kCompactTileRows>(w, r0, r1, [&](auto rr, const uint8_t* p, int Rt, int a, int64_t row0) {
        for_vector_blocks(n, [&](auto nv, int64_t i) {
            tile16<W, Sparse, F16, decltype(rr)::value, decltype(nv)::value>(y + i * ldy, ldy, p, Rt, a, row0,
                                                                             x + i * cols, cols);
        });
    });
}

template <bool Sparse, bool F16>
void gemm16_w(float* y, int64_t ldy, const CompactMatrix& w, const float* x, int64_t n, int64_t r0, int64_t r1) {
    with_count<8>(low_width(w.format()),
                  [&](auto wd) { gemm16<decltype(wd)::value, Sparse, F16>(y, ldy, w, x, n, r0, r1); });
}

// ---- fused GEMM with BF16 activations: R rows x NV vectors (NV <= 8) ----
// The decoded words A and B hold each lane's element pair (j, 16 + j) and (32 + j, 48 + j) of a group, and the
// packed activations (compact_pack_bf16act) hold the same pairs, so one vdpbf16ps per register multiplies a group's
// 32 elements of a row by a vector: two per group, where the f32 kernel widens four registers and does four FMAs.
template <int W, bool Sparse, int R, int NV>
SPECULUM_VBMI2_BF16 void tile_bf16act(float* y, int64_t ldy, const uint8_t* p, int Rt, int a, int64_t row0,
                                      const uint16_t* xp, int64_t cols, int64_t words) {
    __m512 acc[R][NV];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_ps();
    const int64_t full = cols / kCompactGroup16;
    // The short last group, if any, runs as one more group: absent positions decode to 0 and its padding is 0.
    const int64_t rest = cols - full * kCompactGroup16, groups = full + (rest > 0 ? 1 : 0);
    const uint64_t last = rest > 0 ? full_mask(GgmlType::BF16, rest) : ~0ull;
    for (int64_t g = 0; g < groups; ++g) {
        const uint16_t* xg = xp + g * kCompactGroup16;
        Step16<W, Sparse, R> st(p, Rt, a, g < full ? ~0ull : last);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            uint64_t mask;
            int64_t k;
            const uint8_t* body;
            st.row(r, mask, k, body);
            __m512i A, B;
            group_words<W, Sparse>(A, B, body, mask, k);
#pragma GCC unroll 8
            for (int v = 0; v < NV; ++v) {
                const __m512i xa = _mm512_loadu_si512(xg + v * words);
                const __m512i xb = _mm512_loadu_si512(xg + v * words + 32);
                acc[r][v]        = _mm512_dpbf16_ps(acc[r][v], (__m512bh)A, (__m512bh)xa);
                acc[r][v]        = _mm512_dpbf16_ps(acc[r][v], (__m512bh)B, (__m512bh)xb);
            }
        }
        p = st.end();
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) y[v * ldy + row0 + r] = _mm512_reduce_add_ps(acc[r][v]);
}

// Rows [r0, r1) against n vectors, blocked as gemm16 blocks them.
template <int W, bool Sparse>
SPECULUM_VBMI2_BF16 void gemm_bf16act_w(float* y, int64_t ldy, const CompactMatrix& w, const uint16_t* xp, int64_t n,
                                        int64_t r0, int64_t r1) {
    const int64_t cols = w.cols(), words = compact_bf16act_words(cols);
    for_tile_passes<kCompactTileRows>(w, r0, r1, [&](auto rr, const uint8_t* p, int Rt, int a, int64_t row0) {
        for_vector_blocks(n, [&](auto nv, int64_t i) {
            tile_bf16act<W, Sparse, decltype(rr)::value, decltype(nv)::value>(y + i * ldy, ldy, p, Rt, a, row0,
                                                                              xp + i * words, cols, words);
        });
    });
}

template <bool Sparse>
void gemm_bf16act_sparse(float* y, int64_t ldy, const CompactMatrix& w, const uint16_t* xp, int64_t n, int64_t r0,
                         int64_t r1) {
    with_count<8>(low_width(w.format()),
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
    for (int p = 0; p < 64; ++p) {  // position p = 16 l + 8 h + i is word 8 l + i of A (h = 0) or of B (h = 1)
        const int e            = perm[size_t(p)];
        wi.idx[e / 32][e % 32] = static_cast<uint16_t>(32 * ((p / 8) % 2) + 8 * (p / 16) + p % 8);
    }
    return wi;
}

// A group's words A / B stored as its n (<= 64) elements in natural order at o.
SPECULUM_VBMI2_INLINE void store_words(uint8_t* o, __m512i A, __m512i B, __m512i i0, __m512i i1, int64_t n) {
    const __m512i lo = _mm512_permutex2var_epi16(A, i0, B), hi = _mm512_permutex2var_epi16(A, i1, B);
    if (n == 64) {
        _mm512_storeu_si512(o, lo);
        _mm512_storeu_si512(o + 64, hi);
    } else {
        const __mmask32 m0 = n >= 32 ? ~0u : static_cast<__mmask32>(low_bits(n));
        const __mmask32 m1 = n <= 32 ? 0u : static_cast<__mmask32>(low_bits(n - 32));
        _mm512_mask_storeu_epi16(o, m0, lo);
        _mm512_mask_storeu_epi16(o + 64, m1, hi);
    }
}

// Rows [a, a + R) of the tile of Rt rows at p into out (R dense rows of 2 * cols bytes).
template <int W, bool Sparse, int R>
SPECULUM_VBMI2 void decode_tile16(uint8_t* out, const uint8_t* p, int Rt, int a, int64_t cols, GgmlType dense,
                                  const WordIndex& wi) {
    const __m512i i0      = _mm512_load_si512(wi.idx[0]);
    const __m512i i1      = _mm512_load_si512(wi.idx[1]);
    const uint64_t tail_m = full_mask(dense, cols % kCompactGroup16);
    for (int64_t g0 = 0; g0 < cols; g0 += kCompactGroup16) {
        const int64_t n = cols - g0 < kCompactGroup16 ? cols - g0 : kCompactGroup16;
        Step16<W, Sparse, R> st(p, Rt, a, n == 64 ? ~0ull : tail_m);
        for (int r = 0; r < R; ++r) {
            uint64_t mask;
            int64_t k;
            const uint8_t* body;
            st.row(r, mask, k, body);
            __m512i A, B;
            group_words<W, Sparse>(A, B, body, mask, k);
            store_words(out + static_cast<uint64_t>(r) * 2 * static_cast<uint64_t>(cols) + 2 * g0, A, B, i0, i1, n);
        }
        p = st.end();
    }
}

// Whole 8-row tiles [t0, t1) of a BF16 target kept as draft w + rest into out (dense rows), both streams walked in
// step: each group's rest sizes follow from the draft's masks.
template <int W, bool Sparse>
SPECULUM_VBMI2 void rest_tiles16(uint8_t* out, const CompactMatrix& w, const CompactRest& rest, int64_t t0, int64_t t1,
                                 const WordIndex& wi) {
    constexpr int R = kCompactTileRows, T = 8 - W, kPlanes = T >= 4 ? T - 4 : T;  // the rest's low-bit fields
    const __m512i i0      = _mm512_load_si512(wi.idx[0]);
    const __m512i i1      = _mm512_load_si512(wi.idx[1]);
    const int64_t cols    = w.cols();
    const uint64_t tail_m = full_mask(GgmlType::BF16, cols % kCompactGroup16);
    for (int64_t t = t0; t < t1; ++t, out += static_cast<uint64_t>(R) * 2 * static_cast<uint64_t>(cols)) {
        const uint8_t* p = w.tile(t);
        const uint8_t* q = rest.tile(t);
        for (int64_t g0 = 0; g0 < cols; g0 += kCompactGroup16) {
            const int64_t n   = cols - g0 < kCompactGroup16 ? cols - g0 : kCompactGroup16;
            const uint64_t fm = n == 64 ? ~0ull : tail_m;
            Step16<W, Sparse, R> st(p, R, 0, fm);
            for (int r = 0; r < R; ++r) {
                uint64_t mask;
                int64_t k;
                const uint8_t* body;
                st.row(r, mask, k, body);
                const int64_t m    = n - k;
                const uint8_t* own = q;
                q += static_cast<uint64_t>(2 * m + (T >= 4 ? (k + 1) >> 1 : 0) + kPlanes * ((k + 7) >> 3));
                __m512i A, B;
                group_words<W, Sparse, true>(A, B, body, mask, k, own, fm & ~mask, m);
                store_words(out + static_cast<uint64_t>(r) * 2 * static_cast<uint64_t>(cols) + 2 * g0, A, B, i0, i1, n);
            }
            p = st.end();
        }
    }
}

template <int W, bool Sparse>
SPECULUM_VBMI2 void rows16(uint8_t* out, const CompactMatrix& w, int64_t r0, int64_t r1) {
    static const WordIndex bf16 = word_index(GgmlType::BF16), f16 = word_index(GgmlType::F16);
    const GgmlType dense = w.format().dense;
    const WordIndex& wi  = dense == GgmlType::F16 ? f16 : bf16;
    for_tile_passes<kCompactTileRows>(w, r0, r1, [&](auto rr, const uint8_t* p, int Rt, int a, int64_t row0) {
        decode_tile16<W, Sparse, decltype(rr)::value>(out + static_cast<uint64_t>(row0 - r0) * w.dense_row_bytes(), p,
                                                      Rt, a, w.cols(), dense, wi);
    });
}

// One Q8_0 group (four blocks), header at h and quants at q: wk[k] = register k of the int8 kernel's layout as
// unsigned bytes (q + 128; absent elements are q = 0), dw = the four scales, each in two lanes.
SPECULUM_VBMI2_INLINE void group_q8(const uint8_t* h, const uint8_t* q, __m256i wk[4], __m256& dw) {
    dw = _mm256_permutevar8x32_ps(
        _mm256_castps128_ps256(_mm_cvtph_ps(_mm_cvtsi64_si128(static_cast<long long>(load_u64(h))))),
        _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3));
    uint32_t mask[4];
    std::memcpy(mask, h + 8, 16);
    const __m256i bias = _mm256_set1_epi8(static_cast<char>(0x80));
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
        // A plain load: vpexpandb takes only the first c bytes (the rest lie in the stream or its kCompactPad tail).
        // A masked load here made the kernel twice as slow on Zen 4.
        const __m256i v = load_reg256(q);
        wk[k]           = _mm256_xor_si256(_mm256_maskz_expand_epi8(mask[k], v), bias);
        q += _mm_popcnt_u32(mask[k]);
    }
}

// One step of a tile of Rt Q8_0 rows at p (their 24-byte headers, then their quants): the headers and bodies of rows
// [a, a + R); returns the next step.
constexpr int kQ8Header = 4 * (2 + 4);
SPECULUM_VBMI2_INLINE int64_t q8_stored(const uint8_t* h) {  // quants of the group whose header is at h
    return _mm_popcnt_u64(load_u64(h + 8)) + _mm_popcnt_u64(load_u64(h + 16));
}
SPECULUM_VBMI2 void tile_table_q8(const uint8_t* p, int64_t steps, uint32_t* tab) {
    for (int64_t g = 0; g < steps; ++g, tab += kTableWords) {
        uint32_t off = kQ8Header * kCompactTileRows;
        for (int j = 0; j < kCompactTileRows; ++j) {
            tab[j] = off;
            off += static_cast<uint32_t>(q8_stored(p + kQ8Header * j));
        }
        tab[kCompactTileRows] = off;
        p += off;
    }
}
template <int R>
SPECULUM_VBMI2_INLINE const uint8_t* step_q8(const uint8_t* p, int Rt, int a, const uint8_t* (&hdr)[R],
                                             const uint8_t* (&body)[R], const uint32_t* tab) {
    if (tab) {  // offsets from the tile's table (tile_table_q8)
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) hdr[r] = p + kQ8Header * (a + r), body[r] = p + tab[a + r];
        return p + tab[kCompactTileRows];
    }
    const uint8_t* q = p + kQ8Header * Rt;
    for (int j = 0; j < a; ++j) q += q8_stored(p + kQ8Header * j);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
        hdr[r]  = p + kQ8Header * (a + r);
        body[r] = q;
        q += q8_stored(hdr[r]);
    }
    for (int j = a + R; j < Rt; ++j) q += q8_stored(p + kQ8Header * j);
    return q;
}

template <int R>
SPECULUM_VBMI2 void decode_tile_q8(uint8_t* out, const uint8_t* p, int Rt, int a, int64_t blocks) {
    const uint8_t* hdr[R];
    const uint8_t* body[R];
    const uint64_t row_bytes = static_cast<uint64_t>(blocks) * sizeof(BlockQ8_0);
    for (int64_t b0 = 0; b0 < blocks; b0 += kCompactQ8Blocks) {
        p = step_q8<R>(p, Rt, a, hdr, body, nullptr);
        for (int r = 0; r < R; ++r) {
            __m256i wk[4];
            __m256 dw;
            group_q8(hdr[r], body[r], wk, dw);
            alignas(32) uint8_t regs[4][32];
            for (int k = 0; k < 4; ++k)
                _mm256_store_si256(reinterpret_cast<__m256i*>(regs[k]),
                                   _mm256_xor_si256(wk[k], _mm256_set1_epi8(static_cast<char>(0x80))));
            uint8_t* o = out + static_cast<uint64_t>(r) * row_bytes + static_cast<uint64_t>(b0) * sizeof(BlockQ8_0);
            for (int64_t j = 0; j < kCompactQ8Blocks && b0 + j < blocks; ++j, o += sizeof(BlockQ8_0)) {
                std::memcpy(o, hdr[r] + 2 * j, 2);
                for (int k = 0; k < 4; ++k) std::memcpy(o + 2 + 8 * k, &regs[k][8 * j], 8);
            }
        }
    }
}

SPECULUM_VBMI2 void rows_q8(uint8_t* out, const CompactMatrix& w, int64_t r0, int64_t r1) {
    for_tile_passes<kCompactTileRows>(w, r0, r1, [&](auto rr, const uint8_t* p, int Rt, int a, int64_t row0) {
        decode_tile_q8<decltype(rr)::value>(out + static_cast<uint64_t>(row0 - r0) * w.dense_row_bytes(), p, Rt, a,
                                            w.cols() / kQK8_0);
    });
}

// Fused Q8_0 x int8 GEMM, rows [a, a + R) of the tile of Rt rows at p x NV vectors: the dense int8 kernel's
// arithmetic (gemv_q8act_avx512.cpp) on registers decoded from the compact groups, so each block dot is the same
// exact int32 and the sums match.
template <int R, int NV>
SPECULUM_VBMI2 void tile_q8(float* y, int64_t ldy, const uint8_t* p, int Rt, int a, int64_t row0,
                            const Q8ActGroup* const* xv, int64_t groups, const uint32_t* tab) {
    __m256 acc[R][NV];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_setzero_ps();
    const uint8_t* hdr[R];
    const uint8_t* body[R];
    for (int64_t g = 0; g < groups; ++g) {
        p = step_q8<R>(p, Rt, a, hdr, body, tab);
        if (tab) tab += kTableWords;
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            __m256i wk[4];
            __m256 dw;
            group_q8(hdr[r], body[r], wk, dw);
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
        for (int v = 0; v < NV; ++v) y[v * ldy + row0 + r] = vnni::hsum(acc[r][v]);  // the dense kernel's sum
}

// Rows [r0, r1) x NV vectors, in passes of R rows over each tile.
template <int R, int NV>
SPECULUM_VBMI2 void rows_q8act_nv(float* y, int64_t ldy, const CompactMatrix& w, const Q8ActGroup* const* xv,
                                  int64_t groups, int64_t r0, int64_t r1) {
    alignas(64) uint32_t tab[R < kCompactTileRows ? kTableSteps * kTableWords : 1];
    for_tile_passes<R>(w, r0, r1, [&](auto rr, const uint8_t* p, int Rt, int a, int64_t row0) {
        constexpr int RR  = decltype(rr)::value;
        const bool tabled = RR > 1 && RR < kCompactTileRows && groups <= kTableSteps;
        if (tabled && a == 0) tile_table_q8(p, groups, tab);  // the first pass over this tile
        tile_q8<RR, NV>(y, ldy, p, Rt, a, row0, xv, groups, tabled ? tab : nullptr);
    });
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

void compact_rest_decode_tiles_avx512(uint8_t* out, const CompactMatrix& w, const CompactRest& rest, int64_t t0,
                                      int64_t t1) {
    static const WordIndex bf16 = word_index(GgmlType::BF16);
    const WordIndex* wi         = &bf16;
    with_count<8>(low_width(w.format()), [&](auto lw) {
        if (w.format().sparse)
            rest_tiles16<decltype(lw)::value, true>(out, w, rest, t0, t1, *wi);
        else
            rest_tiles16<decltype(lw)::value, false>(out, w, rest, t0, t1, *wi);
    });
}

void compact_gemm_q8act_avx512(float* y, int64_t ldy, const CompactMatrix& w, const void* xq, int64_t n, int64_t r0,
                               int64_t r1) {
    const int64_t cols = w.cols(), groups = (cols / kQK8_0 + kCompactQ8Blocks - 1) / kCompactQ8Blocks;
    for (int64_t i = 0; i < n; i += 4) {  // the activations' groups match the weights' (four blocks each)
        const int64_t nv = n - i < 4 ? n - i : 4;
        const Q8ActGroup* xv[4];
        for (int64_t k = 0; k < nv; ++k) xv[k] = q8act_vec(xq, i + k, cols);
        float* yi = y + i * ldy;
        // Rows per pass: eight for one or two vectors, four for more (the accumulators must fit the registers).
        switch (nv) {
            case 1:
                rows_q8act_nv<8, 1>(yi, ldy, w, xv, groups, r0, r1);
                break;
            case 2:
                rows_q8act_nv<8, 2>(yi, ldy, w, xv, groups, r0, r1);
                break;
            case 3:
                rows_q8act_nv<4, 3>(yi, ldy, w, xv, groups, r0, r1);
                break;
            default:
                rows_q8act_nv<4, 4>(yi, ldy, w, xv, groups, r0, r1);
                break;
        }
    }
}

void compact_gemm_bf16act_avx512(float* y, int64_t ldy, const CompactMatrix& w, const uint16_t* xp, int64_t n,
                                 int64_t r0, int64_t r1) {
    if (w.format().sparse)
        gemm_bf16act_sparse<true>(y, ldy, w, xp, n, r0, r1);
    else
        gemm_bf16act_sparse<false>(y, ldy, w, xp, n, r0, r1);
}

namespace {
// f32 bits -> BF16 bits in the low 16 bits of each lane, as f32_to_bf16.
SPECULUM_VBMI2_INLINE __m512i round_bf16_lanes(__m512i u) {
    const __mmask16 nan =
        _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
    const __m512i hi   = _mm512_srli_epi32(u, 16);
    const __m512i bias = _mm512_add_epi32(_mm512_set1_epi32(0x7fff), _mm512_and_si512(hi, _mm512_set1_epi32(1)));
    return _mm512_mask_or_epi32(_mm512_srli_epi32(_mm512_add_epi32(u, bias), 16), nan, hi, _mm512_set1_epi32(0x40));
}
}  // namespace

// compact_pack_bf16act_ref's words for whole 64-element groups: each half of a group is one 32-bit word per pair
// (x[j] in the low half, x[16 + j] in the high half), rounded as f32_to_bf16 rounds (nearest even, NaN kept quiet),
// with integer operations so denormals round as the scalar code rounds them (vcvtne2ps2bf16 would flush them).
SPECULUM_VBMI2 void compact_pack_bf16act_avx512(uint16_t* xp, const float* x, int64_t groups) {
    for (int64_t h = 0; h < 2 * groups; ++h) {  // halves of 32 elements
        const __m512i lo = round_bf16_lanes(_mm512_loadu_si512(x + 32 * h));
        const __m512i hi = round_bf16_lanes(_mm512_loadu_si512(x + 32 * h + 16));
        _mm512_storeu_si512(xp + 32 * h, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
    }
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
