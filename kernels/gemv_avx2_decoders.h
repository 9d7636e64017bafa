// Internal to gemv_avx2.cpp (include it nowhere else): AVX2 decoders turning 32-element chunks of each weight
// type into 4 x 8 f32 registers holding exactly the reference's dequantized values. Everything is in an anonymous
// namespace and carries the AVX2 target attribute, so no AVX2 code can leak into other translation units.
#pragma once

#include "kernels/fp16.h"
#include "kernels/quant_blocks.h"

#include <immintrin.h>

#include <cstdint>
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
    static constexpr int64_t kBytes   = kChunk * 4;
    static constexpr bool kPlain      = true;   // element-addressable: rows may end with a partial chunk
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
    static constexpr int64_t kBytes   = kChunk * 2;
    static constexpr bool kPlain      = true;
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
    static constexpr int64_t kBytes   = kChunk * 2;
    static constexpr bool kPlain      = true;
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

// 16 u8 values (elements 0..15 in lo, 16..31 in hi) -> 4 x 8 f32.
SPECULUM_AVX2_INLINE void uint8_to_f32(__m128i lo, __m128i hi, __m256 w[4]) {
    w[0] = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(lo));
    w[1] = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(lo, 8)));
    w[2] = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(hi));
    w[3] = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(hi, 8)));
}

// Bits 0..15 of `bits` -> 16 bytes, 0x10 where the bit is set (the fifth bit of Q5_0/Q5_1 quants).
SPECULUM_AVX2_INLINE __m128i q5_fifth_bits(uint32_t bits) {
    const __m128i spread = _mm_shuffle_epi8(_mm_cvtsi32_si128(static_cast<int>(bits)),
                                            _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1));
    const __m128i bit    = _mm_setr_epi8(1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128);
    return _mm_and_si128(_mm_cmpeq_epi8(_mm_and_si128(spread, bit), bit), _mm_set1_epi8(0x10));
}

// The 32 5-bit quants (0..31) of a Q5 block: elements 0..15 in lo, 16..31 in hi.
SPECULUM_AVX2_INLINE void q5_quants(const uint8_t* qh, const uint8_t* qs, __m128i& lo, __m128i& hi) {
    const uint32_t h   = q5_high_bits(qh);
    const __m128i v    = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m128i mask = _mm_set1_epi8(0x0f);
    lo                 = _mm_or_si128(_mm_and_si128(v, mask), q5_fifth_bits(h & 0xFFFFu));
    hi                 = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(v, 4), mask), q5_fifth_bits(h >> 16));
}

// value = q * d + m: the exact product, then one rounding in the add, as the reference.
SPECULUM_AVX2_INLINE void scale_and_shift(__m256 w[4], float d, float m) {
    const __m256 vd = _mm256_set1_ps(d), vm = _mm256_set1_ps(m);
    for (int k = 0; k < 4; ++k) w[k] = _mm256_add_ps(_mm256_mul_ps(w[k], vd), vm);
}

struct DecQ4_1 : ChunkBlocks {
    static constexpr int64_t kBytes   = sizeof(BlockQ4_1);
    static constexpr bool kPlain      = false;
    static constexpr bool kBlockScale = false;
    static SPECULUM_AVX2_INLINE void decode(const uint8_t* row, int64_t c, const State&, __m256 w[4]) {
        const auto* b      = reinterpret_cast<const BlockQ4_1*>(row) + c;
        const __m128i v    = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b->qs));
        const __m128i mask = _mm_set1_epi8(0x0f);
        uint8_to_f32(_mm_and_si128(v, mask), _mm_and_si128(_mm_srli_epi16(v, 4), mask), w);
        scale_and_shift(w, _cvtsh_ss(b->d), _cvtsh_ss(b->m));
    }
    static float element(const uint8_t*, int64_t) { return 0.0f; }
};

struct DecQ5_0 : BlockScaled<DecQ5_0> {
    static constexpr int64_t kBytes = sizeof(BlockQ5_0);
    static SPECULUM_AVX2_INLINE float decode_unscaled(const uint8_t* row, int64_t c, __m256 w[4]) {
        const auto* b = reinterpret_cast<const BlockQ5_0*>(row) + c;
        __m128i lo, hi;
        q5_quants(b->qh, b->qs, lo, hi);
        const __m128i sixteen = _mm_set1_epi8(16);
        int8_to_f32(_mm_sub_epi8(lo, sixteen), _mm_sub_epi8(hi, sixteen), w);
        return _cvtsh_ss(b->d);
    }
};

struct DecQ5_1 : ChunkBlocks {
    static constexpr int64_t kBytes   = sizeof(BlockQ5_1);
    static constexpr bool kPlain      = false;
    static constexpr bool kBlockScale = false;
    static SPECULUM_AVX2_INLINE void decode(const uint8_t* row, int64_t c, const State&, __m256 w[4]) {
        const auto* b = reinterpret_cast<const BlockQ5_1*>(row) + c;
        __m128i lo, hi;
        q5_quants(b->qh, b->qs, lo, hi);
        uint8_to_f32(lo, hi, w);
        scale_and_shift(w, _cvtsh_ss(b->d), _cvtsh_ss(b->m));
    }
    static float element(const uint8_t*, int64_t) { return 0.0f; }
};

struct DecIq4Nl : BlockScaled<DecIq4Nl> {
    static constexpr int64_t kBytes = sizeof(BlockIq4Nl);
    static SPECULUM_AVX2_INLINE float decode_unscaled(const uint8_t* row, int64_t c, __m256 w[4]) {
        const auto* b       = reinterpret_cast<const BlockIq4Nl*>(row) + c;
        const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4nlValues));
        const __m128i v     = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b->qs));
        const __m128i mask  = _mm_set1_epi8(0x0f);
        int8_to_f32(_mm_shuffle_epi8(table, _mm_and_si128(v, mask)),
                    _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(v, 4), mask)), w);
        return _cvtsh_ss(b->d);
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
    static SPECULUM_AVX2_INLINE void unpack_scales(uint16_t dh, uint16_t dminh, const uint8_t* scales, State& st) {
        const float d = _cvtsh_ss(dh), dmin = _cvtsh_ss(dminh);
        for (int s = 0; s < 8; ++s) {
            uint8_t sc, m;
            q4_k_scale_min(s, scales, &sc, &m);
            st.d1[s] = d * sc;
            st.m1[s] = dmin * m;
        }
    }
    static SPECULUM_AVX2_INLINE void prepare(const uint8_t* row, int64_t c, State& st) {
        const auto* b = reinterpret_cast<const BlockQ4_K*>(row) + c / 8;
        unpack_scales(b->d, b->dmin, b->scales, st);
    }
    static SPECULUM_AVX2_INLINE void decode(const uint8_t* row, int64_t c, const State& st, __m256 w[4]) {
        const auto* b      = reinterpret_cast<const BlockQ4_K*>(row) + c / 8;
        const int s        = static_cast<int>(c % 8);
        const __m256 d1    = _mm256_set1_ps(st.d1[s]);
        const __m256 m1    = _mm256_set1_ps(st.m1[s]);
        const __m128i* q   = reinterpret_cast<const __m128i*>(b->qs + 32 * (s / 2));
        const __m128i mask = _mm_set1_epi8(0x0f);
        for (int h = 0; h < 2; ++h) {
            __m128i v       = _mm_loadu_si128(q + h);  // elements 16h .. 16h+15 of the sub-block
            v               = (s & 1) ? _mm_and_si128(_mm_srli_epi16(v, 4), mask) : _mm_and_si128(v, mask);
            const __m256 lo = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v));
            const __m256 hi = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(v, 8)));
            w[2 * h]        = _mm256_sub_ps(_mm256_mul_ps(d1, lo), m1);  // d1 * q - m1, as the reference
            w[2 * h + 1]    = _mm256_sub_ps(_mm256_mul_ps(d1, hi), m1);
        }
    }
    static float element(const uint8_t*, int64_t) { return 0.0f; }
};

struct DecQ5_K {
    static constexpr int64_t kBytes      = sizeof(BlockQ5_K);
    static constexpr int kChunksPerBlock = 8;
    static constexpr bool kPlain         = false;
    static constexpr bool kBlockScale    = false;
    using State                          = DecQ4_K::State;
    static SPECULUM_AVX2_INLINE void prepare(const uint8_t* row, int64_t c, State& st) {
        const auto* b = reinterpret_cast<const BlockQ5_K*>(row) + c / 8;
        DecQ4_K::unpack_scales(b->d, b->dmin, b->scales, st);  // Q5_K packs them as Q4_K
    }
    static SPECULUM_AVX2_INLINE void decode(const uint8_t* row, int64_t c, const State& st, __m256 w[4]) {
        const auto* b       = reinterpret_cast<const BlockQ5_K*>(row) + c / 8;
        const int s         = static_cast<int>(c % 8);
        const __m256 d1     = _mm256_set1_ps(st.d1[s]);
        const __m256 m1     = _mm256_set1_ps(st.m1[s]);
        const __m128i mask  = _mm_set1_epi8(0x0f);
        const __m128i shift = _mm_cvtsi32_si128(s);
        for (int h = 0; h < 2; ++h) {
            __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b->qs + 32 * (s / 2) + 16 * h));
            v         = (s & 1) ? _mm_and_si128(_mm_srli_epi16(v, 4), mask) : _mm_and_si128(v, mask);
            // bit s of each qh byte, to bit 4 (within 16-bit lanes: a byte's bit s lands in its own bit 0)
            const __m128i hb =
                _mm_and_si128(_mm_srl_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b->qh + 16 * h)), shift),
                              _mm_set1_epi8(1));
            v               = _mm_or_si128(v, _mm_slli_epi16(hb, 4));
            const __m256 lo = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v));
            const __m256 hi = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(v, 8)));
            w[2 * h]        = _mm256_sub_ps(_mm256_mul_ps(d1, lo), m1);  // d1 * q - m1, as the reference
            w[2 * h + 1]    = _mm256_sub_ps(_mm256_mul_ps(d1, hi), m1);
        }
    }
    static float element(const uint8_t*, int64_t) { return 0.0f; }
};

// Q2_K and Q3_K: chunk c is elements 32 c' .. of half nh = c' / 4, shift 2 j (j = c' % 4), c' = c % 8; its two
// 16-element sub-blocks have their own scales (and Q2_K mins).
struct DecQ3_K {
    static constexpr int64_t kBytes      = sizeof(BlockQ3_K);
    static constexpr int kChunksPerBlock = 8;
    static constexpr bool kPlain         = false;
    static constexpr bool kBlockScale    = false;
    struct State {
        float dl[16];  // d * (scale - 32) of each 16-element sub-block, as the reference rounds it
    };
    static SPECULUM_AVX2_INLINE void prepare(const uint8_t* row, int64_t c, State& st) {
        const auto* b = reinterpret_cast<const BlockQ3_K*>(row) + c / 8;
        int8_t sc[16];
        q3_k_scales(b->scales, sc);
        const float d = _cvtsh_ss(b->d);
        for (int i = 0; i < 16; ++i) st.dl[i] = d * static_cast<float>(sc[i]);
    }
    static SPECULUM_AVX2_INLINE void decode(const uint8_t* row, int64_t c, const State& st, __m256 w[4]) {
        const auto* b = reinterpret_cast<const BlockQ3_K*>(row) + c / 8;
        const int s = static_cast<int>(c % 8), nh = s / 4, j = s % 4;
        const __m128i shift = _mm_cvtsi32_si128(2 * j), hshift = _mm_cvtsi32_si128(4 * nh + j);
        for (int h = 0; h < 2; ++h) {  // elements 16 h .. 16 h + 15 of the chunk: sub-block 8 nh + 2 j + h
            const __m128i q = _mm_and_si128(
                _mm_srl_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b->qs + 32 * nh + 16 * h)), shift),
                _mm_set1_epi8(3));
            const __m128i hb = _mm_and_si128(
                _mm_srl_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b->hmask + 16 * h)), hshift),
                _mm_set1_epi8(1));
            // q - 4 where the high bit is absent: q - 4 + 4 * hb
            const __m128i v = _mm_add_epi8(_mm_sub_epi8(q, _mm_set1_epi8(4)), _mm_slli_epi16(hb, 2));
            const __m256 dl = _mm256_set1_ps(st.dl[8 * nh + 2 * j + h]);
            w[2 * h]        = _mm256_mul_ps(dl, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v)));
            w[2 * h + 1]    = _mm256_mul_ps(dl, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(v, 8))));
        }
    }
    static float element(const uint8_t*, int64_t) { return 0.0f; }
};

struct DecQ2_K {
    static constexpr int64_t kBytes      = sizeof(BlockQ2_K);
    static constexpr int kChunksPerBlock = 8;
    static constexpr bool kPlain         = false;
    static constexpr bool kBlockScale    = false;
    struct State {
        float dl[16], ml[16];  // d * scale and dmin * min of each 16-element sub-block (exact)
    };
    static SPECULUM_AVX2_INLINE void prepare(const uint8_t* row, int64_t c, State& st) {
        const auto* b    = reinterpret_cast<const BlockQ2_K*>(row) + c / 8;
        const float d    = _cvtsh_ss(b->d);
        const float dmin = _cvtsh_ss(b->dmin);
        for (int i = 0; i < 16; ++i) {
            st.dl[i] = d * static_cast<float>(b->scales[i] & 0x0f);
            st.ml[i] = dmin * static_cast<float>(b->scales[i] >> 4);
        }
    }
    static SPECULUM_AVX2_INLINE void decode(const uint8_t* row, int64_t c, const State& st, __m256 w[4]) {
        const auto* b = reinterpret_cast<const BlockQ2_K*>(row) + c / 8;
        const int s = static_cast<int>(c % 8), nh = s / 4, j = s % 4;
        const __m128i shift = _mm_cvtsi32_si128(2 * j);
        for (int h = 0; h < 2; ++h) {
            const __m128i q = _mm_and_si128(
                _mm_srl_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b->qs + 32 * nh + 16 * h)), shift),
                _mm_set1_epi8(3));
            const int sub   = 8 * nh + 2 * j + h;
            const __m256 dl = _mm256_set1_ps(st.dl[sub]), ml = _mm256_set1_ps(st.ml[sub]);
            w[2 * h] = _mm256_sub_ps(_mm256_mul_ps(dl, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(q))), ml);
            w[2 * h + 1] =
                _mm256_sub_ps(_mm256_mul_ps(dl, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(q, 8)))), ml);
        }
    }
    static float element(const uint8_t*, int64_t) { return 0.0f; }
};

struct DecIq4Xs {
    static constexpr int64_t kBytes      = sizeof(BlockIq4Xs);
    static constexpr int kChunksPerBlock = 8;
    static constexpr bool kPlain         = false;
    static constexpr bool kBlockScale    = false;
    struct State {
        float dl[8];  // d * (ls - 32) of each 32-element sub-block
    };
    static SPECULUM_AVX2_INLINE void prepare(const uint8_t* row, int64_t c, State& st) {
        const auto* b = reinterpret_cast<const BlockIq4Xs*>(row) + c / 8;
        const float d = _cvtsh_ss(b->d);
        for (int ib = 0; ib < 8; ++ib) st.dl[ib] = d * static_cast<float>(iq4_xs_scale(*b, ib));
    }
    static SPECULUM_AVX2_INLINE void decode(const uint8_t* row, int64_t c, const State& st, __m256 w[4]) {
        const auto* b       = reinterpret_cast<const BlockIq4Xs*>(row) + c / 8;
        const int s         = static_cast<int>(c % 8);
        const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4nlValues));
        const __m128i v     = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b->qs + 16 * s));
        const __m128i mask  = _mm_set1_epi8(0x0f);
        int8_to_f32(_mm_shuffle_epi8(table, _mm_and_si128(v, mask)),
                    _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(v, 4), mask)), w);
        const __m256 dl = _mm256_set1_ps(st.dl[s]);  // dl * value, one rounding, as the reference
        for (int k = 0; k < 4; ++k) w[k] = _mm256_mul_ps(dl, w[k]);
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
        const auto* b    = reinterpret_cast<const BlockQ6_K*>(row) + c / 8;
        const __m256 d   = _mm256_set1_ps(_cvtsh_ss(b->d));
        const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b->scales));
        _mm256_storeu_ps(st.ds, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc))));
        _mm256_storeu_ps(st.ds + 8, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(sc, 8)))));
    }
    static SPECULUM_AVX2_INLINE void decode(const uint8_t* row, int64_t c, const State& st, __m256 w[4]) {
        const auto* b  = reinterpret_cast<const BlockQ6_K*>(row) + c / 8;
        const int s    = static_cast<int>(c % 8);
        const int half = s / 4, quarter = s % 4;  // 128-element half, 32-element quarter within it
        const float* ds     = st.ds + 8 * half + 2 * quarter;
        const __m128i mask  = _mm_set1_epi8(0x0f);
        const __m128i* ql   = reinterpret_cast<const __m128i*>(b->ql + 64 * half + 32 * (quarter & 1));
        const __m128i* qh   = reinterpret_cast<const __m128i*>(b->qh + 32 * half);
        const __m128i shift = _mm_cvtsi32_si128(2 * quarter);
        for (int h = 0; h < 2; ++h) {
            __m128i lo       = _mm_loadu_si128(ql + h);
            lo               = quarter < 2 ? _mm_and_si128(lo, mask) : _mm_and_si128(_mm_srli_epi16(lo, 4), mask);
            __m128i hi       = _mm_and_si128(_mm_srl_epi16(_mm_loadu_si128(qh + h), shift), _mm_set1_epi8(3));
            const __m128i q  = _mm_sub_epi8(_mm_or_si128(lo, _mm_slli_epi16(hi, 4)), _mm_set1_epi8(32));
            const __m256 vds = _mm256_set1_ps(ds[h]);  // (d * sc) * q, the reference's order
            w[2 * h]         = _mm256_mul_ps(vds, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)));
            w[2 * h + 1]     = _mm256_mul_ps(vds, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(q, 8))));
        }
    }
    static float element(const uint8_t*, int64_t) { return 0.0f; }
};

}  // namespace

}  // namespace speculum::kernels::detail
