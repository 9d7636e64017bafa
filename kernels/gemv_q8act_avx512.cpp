// AVX-512 VNNI kernels of the quantized-activation path: activation quantization (bit-identical to
// quantize_q8act_ref) and the Q8_0 / Q4_0 / Q4_1 / Q5_0 / Q5_1 / IQ4_NL / MXFP4 / K-quant / IQ4_XS x int8 GEMM. Four
// weight blocks of a row are loaded once, rearranged into the activation groups' layout as unsigned bytes (q8_0: q +
// 128; q4_0: the nibble; mxfp4: the doubled E2M1 value + 16) and dotted with up to 4 activation vectors by vpdpbusd;
// the -128 * sum(x) offset stored with each activation block (scaled to the format's offset) cancels the encoding
// exactly, so every block dot is the exact int32 sum of the reference, and only the f32 summation order differs from
// gemm_q8act_ref. Every function carries the target attribute and lives in an anonymous namespace (no AVX-512 code
// leaks via COMDAT).
#include "kernels/vnni_common.h"

#include "kernels/quant_blocks.h"

#include <cstring>
#include <type_traits>

namespace speculum::kernels::detail {

// ---- byte and scale loads ----

namespace {

constexpr int64_t kPrefetchRows              = 8;   // L2 prefetch this many rows ahead (see gemv_avx512.cpp)
alignas(64) constexpr uint8_t kZeroBlock[64] = {};  // stands in for blocks past the end of a row (any block type)

SPECULUM_VNNI inline __attribute__((always_inline)) __m128i load16(const uint8_t* p) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}
SPECULUM_VNNI inline __attribute__((always_inline)) __m256i pair(const uint8_t* lo, const uint8_t* hi) {
    return _mm256_inserti128_si256(_mm256_castsi128_si256(load16(lo)), load16(hi), 1);
}
// Four per-block scales -> lanes 2j and 2j + 1 hold block j's.
SPECULUM_VNNI inline __attribute__((always_inline)) __m256 spread_scales(__m128 d4) {
    return _mm256_permutevar8x32_ps(_mm256_castps128_ps256(d4), _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3));
}
// The f16 scales at the start of blocks a, b, c, d.
SPECULUM_VNNI inline __attribute__((always_inline)) __m256 f16_scales(const uint8_t* a, const uint8_t* b,
                                                                      const uint8_t* c, const uint8_t* d) {
    uint16_t h[4];
    std::memcpy(&h[0], a, 2), std::memcpy(&h[1], b, 2), std::memcpy(&h[2], c, 2), std::memcpy(&h[3], d, 2);
    uint64_t hh;
    std::memcpy(&hh, h, 8);
    return spread_scales(_mm_cvtph_ps(_mm_cvtsi64_si128(static_cast<long long>(hh))));
}

// The 16-byte nibble payloads of four 32-element blocks as the activation group's layout: q[k] = the nibbles of
// elements 8k..8k+7 of each block (element e < 16 is the low nibble of byte e, element e + 16 its high nibble).
SPECULUM_VNNI inline __attribute__((always_inline)) void nibbles(const uint8_t* a, const uint8_t* b, const uint8_t* c,
                                                                 const uint8_t* d, __m256i q[4]) {
    const __m256i ac = pair(a, c), bd = pair(b, d);
    const __m256i lo = _mm256_unpacklo_epi64(ac, bd), hi = _mm256_unpackhi_epi64(ac, bd);
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    q[0]             = _mm256_and_si256(lo, m4);
    q[1]             = _mm256_and_si256(hi, m4);
    q[2]             = _mm256_and_si256(_mm256_srli_epi16(lo, 4), m4);
    q[3]             = _mm256_and_si256(_mm256_srli_epi16(hi, 4), m4);
}

// Four blocks' 4-bit codes (16-byte payloads at a, b, c, d, Q4_0's nibble order) through a 16-entry int8 table, in
// the group layout and unsigned: table + bias (MXFP4: + 16, IQ4_NL / IQ4_XS: + 128).
SPECULUM_VNNI inline __attribute__((always_inline)) void table_codes(const int8_t table[16], int bias, const uint8_t* a,
                                                                     const uint8_t* b, const uint8_t* c,
                                                                     const uint8_t* d, __m256i wk[4]) {
    __m128i t;
    std::memcpy(&t, table, 16);
    const __m256i tb = _mm256_add_epi8(_mm256_broadcastsi128_si256(t), _mm256_set1_epi8(static_cast<char>(bias)));
    nibbles(a, b, c, d, wk);
    for (int k = 0; k < 4; ++k) wk[k] = _mm256_shuffle_epi8(tb, wk[k]);
}

// ---- 32-element block formats ----

// Defaults of the format traits below: kMin (a per-block minimum, applied with the activation sums), kSuper
// (256-element super-blocks, loaded half at a time), kSixteen (16-element sub-blocks with their own scales).
struct BlockFormat {
    static constexpr bool kMin      = false;
    static constexpr bool kSuper    = false;
    static constexpr bool kSixteen  = false;
    static constexpr float kSubTerm = 1.0f;  // sixteen-element formats: act_terms' factor (ma = -dmin * m for Q2_K)
};

// Weight formats. Each load() turns the four blocks a, b, c, d of one row into the activation group's layout:
// wk[k] = the integer weights of elements 8k..8k+7 of each block side by side, as unsigned bytes, and dw = the
// blocks' scales, each in two lanes. init() turns the activation group's offset lanes (-128 * sum of block j's
// quants) into the int32 start value that cancels the unsigned encoding exactly.
struct WQ8_0 : BlockFormat {  // int8 weights, stored + 128
    static constexpr int64_t kBlockBytes = sizeof(BlockQ8_0);
    SPECULUM_VNNI static inline __attribute__((always_inline)) void load(const uint8_t* a, const uint8_t* b,
                                                                         const uint8_t* c, const uint8_t* d,
                                                                         __m256i wk[4], __m256& dw, __m256&) {
        const __m256i ac0 = pair(a + 2, c + 2), bd0 = pair(b + 2, d + 2);
        const __m256i ac1 = pair(a + 18, c + 18), bd1 = pair(b + 18, d + 18);
        const __m256i bias = _mm256_set1_epi8(static_cast<char>(0x80));
        wk[0]              = _mm256_xor_si256(_mm256_unpacklo_epi64(ac0, bd0), bias);
        wk[1]              = _mm256_xor_si256(_mm256_unpackhi_epi64(ac0, bd0), bias);
        wk[2]              = _mm256_xor_si256(_mm256_unpacklo_epi64(ac1, bd1), bias);
        wk[3]              = _mm256_xor_si256(_mm256_unpackhi_epi64(ac1, bd1), bias);
        dw                 = f16_scales(a, b, c, d);
    }
    SPECULUM_VNNI static inline __attribute__((always_inline)) __m256i init(__m256i off) { return off; }
};

struct WQ4_0
    : BlockFormat {  // nibbles q in 0..15 used as they are (weight q - 8): the start value is -8 * sum = off / 16
    static constexpr int64_t kBlockBytes = sizeof(BlockQ4_0);
    SPECULUM_VNNI static inline __attribute__((always_inline)) void load(const uint8_t* a, const uint8_t* b,
                                                                         const uint8_t* c, const uint8_t* d,
                                                                         __m256i wk[4], __m256& dw, __m256&) {
        nibbles(a + 2, b + 2, c + 2, d + 2, wk);
        dw = f16_scales(a, b, c, d);
    }
    SPECULUM_VNNI static inline __attribute__((always_inline)) __m256i init(__m256i off) {
        return _mm256_srai_epi32(off, 4);  // exact: off is a multiple of 128
    }
};

// E2M1 codes -> doubled values (kMxfp4Values, -12..12) by a byte shuffle, stored + 16: a small offset keeps the two
// int32 lanes of a block near the size of its dot (an offset of 128 would leave 128 * sum|x| in them, and their
// separate f32 rounding would then cost accuracy the exact dot does not have).
struct WMxfp4 : BlockFormat {
    static constexpr int64_t kBlockBytes = sizeof(BlockMxfp4);
    SPECULUM_VNNI static inline __attribute__((always_inline)) void load(const uint8_t* a, const uint8_t* b,
                                                                         const uint8_t* c, const uint8_t* d,
                                                                         __m256i wk[4], __m256& dw, __m256&) {
        table_codes(kMxfp4Values, 16, a + 1, b + 1, c + 1, d + 1, wk);  // the shuffle yields the unsigned encoding
        dw = spread_scales(_mm_setr_ps(e8m0_to_f32_half(a[0]), e8m0_to_f32_half(b[0]), e8m0_to_f32_half(c[0]),
                                       e8m0_to_f32_half(d[0])));
    }
    SPECULUM_VNNI static inline __attribute__((always_inline)) __m256i init(__m256i off) {
        return _mm256_srai_epi32(off, 3);  // -16 * sum, exact: off is a multiple of 128
    }
};

// The fifth bits of four Q5 blocks (qh at a, b, c, d) added into the nibbles' group layout: register k, slot j gets
// bits 8k..8k+7 of block j's qh (byte k) as + 16 on its bytes.
SPECULUM_VNNI inline __attribute__((always_inline)) void fifth_bits(const uint8_t* a, const uint8_t* b,
                                                                    const uint8_t* c, const uint8_t* d, __m256i q[4]) {
    uint32_t h[4];
    std::memcpy(&h[0], a, 4), std::memcpy(&h[1], b, 4), std::memcpy(&h[2], c, 4), std::memcpy(&h[3], d, 4);
    // dword k of t = byte k of each block's qh: a 4 x 4 byte transpose
    const __m128i t       = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h)),
                                             _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15));
    const __m256i sixteen = _mm256_set1_epi8(16);
    q[0]                  = _mm256_mask_add_epi8(q[0], static_cast<__mmask32>(_mm_cvtsi128_si32(t)), q[0], sixteen);
    q[1]                  = _mm256_mask_add_epi8(q[1], static_cast<__mmask32>(_mm_extract_epi32(t, 1)), q[1], sixteen);
    q[2]                  = _mm256_mask_add_epi8(q[2], static_cast<__mmask32>(_mm_extract_epi32(t, 2)), q[2], sixteen);
    q[3]                  = _mm256_mask_add_epi8(q[3], static_cast<__mmask32>(_mm_extract_epi32(t, 3)), q[3], sixteen);
}

// Q4_1 (d, m, nibbles) and Q5_1 (d, m, qh, nibbles): unsigned q as they are (no offset to cancel: init 0), and the
// minimum's term m * sum(x) from the activation group's offset lanes (-128 * sum of the quants): see dot_group.
template <bool Five>
struct WQx_1 : BlockFormat {
    static constexpr int64_t kBlockBytes = Five ? sizeof(BlockQ5_1) : sizeof(BlockQ4_1);
    static constexpr bool kMin           = true;
    SPECULUM_VNNI static inline __attribute__((always_inline)) void load(const uint8_t* a, const uint8_t* b,
                                                                         const uint8_t* c, const uint8_t* d,
                                                                         __m256i wk[4], __m256& dw, __m256& mw) {
        constexpr int kQs = Five ? 8 : 4;  // after d, m (and qh)
        nibbles(a + kQs, b + kQs, c + kQs, d + kQs, wk);
        if constexpr (Five) fifth_bits(a + 4, b + 4, c + 4, d + 4, wk);
        dw = f16_scales(a, b, c, d);
        mw = f16_scales(a + 2, b + 2, c + 2, d + 2);
    }
    SPECULUM_VNNI static inline __attribute__((always_inline)) __m256i init(__m256i) { return _mm256_setzero_si256(); }
};
using WQ4_1 = WQx_1<false>;
using WQ5_1 = WQx_1<true>;

// Q5_0 (d, qh, nibbles): q in 0..31 used as they are (weight q - 16): the start value is -16 * sum = off / 8.
struct WQ5_0 : BlockFormat {
    static constexpr int64_t kBlockBytes = sizeof(BlockQ5_0);
    SPECULUM_VNNI static inline __attribute__((always_inline)) void load(const uint8_t* a, const uint8_t* b,
                                                                         const uint8_t* c, const uint8_t* d,
                                                                         __m256i wk[4], __m256& dw, __m256&) {
        nibbles(a + 6, b + 6, c + 6, d + 6, wk);
        fifth_bits(a + 2, b + 2, c + 2, d + 2, wk);
        dw = f16_scales(a, b, c, d);
    }
    SPECULUM_VNNI static inline __attribute__((always_inline)) __m256i init(__m256i off) {
        return _mm256_srai_epi32(off, 3);  // exact: off is a multiple of 128
    }
};

// IQ4_NL: codes -> kIq4nlValues (-127..113) by a byte shuffle of the table + 128, so the shuffle yields the unsigned
// encoding directly, cancelled by the offset as for Q8_0.
struct WIq4Nl : BlockFormat {
    static constexpr int64_t kBlockBytes = sizeof(BlockIq4Nl);
    SPECULUM_VNNI static inline __attribute__((always_inline)) void load(const uint8_t* a, const uint8_t* b,
                                                                         const uint8_t* c, const uint8_t* d,
                                                                         __m256i wk[4], __m256& dw, __m256&) {
        table_codes(kIq4nlValues, 128, a + 2, b + 2, c + 2, d + 2, wk);
        dw = f16_scales(a, b, c, d);
    }
    SPECULUM_VNNI static inline __attribute__((always_inline)) __m256i init(__m256i off) { return off; }
};

// ---- super-block formats ----

// Super-block formats (256 elements: Q4_K, Q5_K, IQ4_XS): an activation group is half a super-block, sub-blocks
// 4h .. 4h + 3: load_half() gets super-block g / 2 and h = g % 2. Their blocks' nibbles (Q4_K/Q5_K: sub-blocks 2p and
// 2p + 1 in the low and high nibbles of the same 32 bytes) go to the group layout by a 4 x 4 transpose of 64-bit lanes.
SPECULUM_VNNI inline __attribute__((always_inline)) void transpose_q64(__m256i b0, __m256i b1, __m256i b2, __m256i b3,
                                                                       __m256i q[4]) {
    const __m256i t0 = _mm256_unpacklo_epi64(b0, b1), t1 = _mm256_unpackhi_epi64(b0, b1);
    const __m256i t2 = _mm256_unpacklo_epi64(b2, b3), t3 = _mm256_unpackhi_epi64(b2, b3);
    q[0] = _mm256_permute2x128_si256(t0, t2, 0x20);
    q[1] = _mm256_permute2x128_si256(t1, t3, 0x20);
    q[2] = _mm256_permute2x128_si256(t0, t2, 0x31);
    q[3] = _mm256_permute2x128_si256(t1, t3, 0x31);
}

// Four bytes of v as four f32.
SPECULUM_VNNI inline __attribute__((always_inline)) __m128 bytes_f32(uint32_t v) {
    return _mm_cvtepi32_ps(_mm_cvtepu8_epi32(_mm_cvtsi32_si128(static_cast<int>(v))));
}

// Q4_K and Q5_K: q unsigned (0..15, 0..31), weight d * sc * q - dmin * m per sub-block: dw = d * sc, mw = -dmin * m.
template <bool Five>
struct WQK : BlockFormat {
    using Block                          = std::conditional_t<Five, BlockQ5_K, BlockQ4_K>;
    static constexpr int64_t kSuperBytes = sizeof(Block);
    static constexpr int64_t kBlockBytes = kSuperBytes / 8;  // for the prefetch stride only
    static constexpr bool kMin           = true;
    static constexpr bool kSuper         = true;
    SPECULUM_VNNI static inline __attribute__((always_inline)) void load_half(const uint8_t* sb, int h, __m256i wk[4],
                                                                              __m256& dw, __m256& mw) {
        const auto* b    = reinterpret_cast<const Block*>(sb);
        const __m256i m4 = _mm256_set1_epi8(0x0f);
        const __m256i p0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qs + 64 * h));
        const __m256i p1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qs + 64 * h + 32));
        __m256i s[4]     = {_mm256_and_si256(p0, m4), _mm256_and_si256(_mm256_srli_epi16(p0, 4), m4),
                            _mm256_and_si256(p1, m4), _mm256_and_si256(_mm256_srli_epi16(p1, 4), m4)};
        if constexpr (Five) {  // bit 4h + j of qh[l] is bit 4 of sub-block 4h + j's element l
            const __m256i qh  = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qh));
            const __m256i one = _mm256_set1_epi8(1);
#pragma GCC unroll 4
            for (int j = 0; j < 4; ++j) {
                const __m256i bit = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(4 * h + j)), one);
                s[j]              = _mm256_or_si256(s[j], _mm256_slli_epi16(bit, 4));
            }
        }
        transpose_q64(s[0], s[1], s[2], s[3], wk);
        // The four 6-bit scales and mins of sub-blocks 4h .. 4h + 3 as bytes (q4_k_scale_min, branch-free on the
        // three 32-bit words of `scales`), then d * sc and -dmin * m in f32 (exact: 11-bit x 6-bit).
        uint32_t w3[3];
        std::memcpy(w3, b->scales, 12);
        const uint32_t sc = h == 0 ? w3[0] & 0x3f3f3f3fu : (w3[2] & 0x0f0f0f0fu) | ((w3[0] >> 2) & 0x30303030u);
        const uint32_t mn = h == 0 ? w3[1] & 0x3f3f3f3fu : ((w3[2] >> 4) & 0x0f0f0f0fu) | ((w3[1] >> 2) & 0x30303030u);
        dw                = spread_scales(_mm_mul_ps(_mm_set1_ps(_cvtsh_ss(b->d)), bytes_f32(sc)));
        mw                = spread_scales(_mm_mul_ps(_mm_set1_ps(-_cvtsh_ss(b->dmin)), bytes_f32(mn)));
    }
    SPECULUM_VNNI static inline __attribute__((always_inline)) __m256i init(__m256i) {
        return _mm256_setzero_si256();
    }
};

// IQ4_XS: IQ4_NL's codes and table, one scale d * (ls - 32) per 32-element sub-block.
struct WIq4Xs : BlockFormat {
    static constexpr int64_t kSuperBytes = sizeof(BlockIq4Xs);
    static constexpr int64_t kBlockBytes = kSuperBytes / 8;  // for the prefetch stride only
    static constexpr bool kSuper         = true;
    SPECULUM_VNNI static inline __attribute__((always_inline)) void load_half(const uint8_t* sb, int h, __m256i wk[4],
                                                                              __m256& dw, __m256&) {
        const auto* b    = reinterpret_cast<const BlockIq4Xs*>(sb);
        const uint8_t* q = b->qs + 64 * h;
        table_codes(kIq4nlValues, 128, q, q + 16, q + 32, q + 48, wk);
        const float d = _cvtsh_ss(b->d);
        dw            = spread_scales(_mm_setr_ps(
                       d * static_cast<float>(iq4_xs_scale(*b, 4 * h)), d * static_cast<float>(iq4_xs_scale(*b, 4 * h + 1)),
                       d * static_cast<float>(iq4_xs_scale(*b, 4 * h + 2)), d * static_cast<float>(iq4_xs_scale(*b, 4 * h + 3))));
    }
    SPECULUM_VNNI static inline __attribute__((always_inline)) __m256i init(__m256i off) { return off; }
};

// Q6_K and Q3_K: 16-element sub-blocks, each with its own scale. An activation group is half a super-block (its four
// 32-element blocks j = quadrants 0..3), and a block's two sub-blocks are its registers k = 0, 1 and k = 2, 3, so
// they are dotted into separate int32 accumulators (kSixteen: dw = the scales of the first sub-blocks, mw of the
// second). The weights are stored unsigned (q, and q + 4 h for Q3_K); their offset (32, 4) is a term per sub-block,
// ma = d * scale, which dot_group multiplies by the sub-block's activation sum times -offset (act_terms).
struct WQ6K : BlockFormat {
    static constexpr int64_t kSuperBytes = sizeof(BlockQ6_K);
    static constexpr int64_t kBlockBytes = kSuperBytes / 8;  // for the prefetch stride only (210 / 8 is not whole)
    static constexpr bool kSuper         = true;
    static constexpr bool kSixteen       = true;
    static constexpr float kSubTerm      = -32.0f;  // weight = q - 32: the offset's term is -32 * d * sc * sum
    SPECULUM_VNNI static inline __attribute__((always_inline)) void load_half(const uint8_t* sb, int n, __m256i wk[4],
                                                                              __m256& dw, __m256& mw, __m256& ma) {
        const auto* b    = reinterpret_cast<const BlockQ6_K*>(sb);
        const __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(0x30);
        const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->ql + 64 * n));
        const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->ql + 64 * n + 32));
        const __m256i h  = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qh + 32 * n));
        // quadrant qd: low nibbles of l0 / l1 (qd 0, 1) or high (qd 2, 3), bits 2 qd of h as bits 4-5
        const __m256i q0 = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_and_si256(_mm256_slli_epi16(h, 4), m2));
        const __m256i q1 = _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_and_si256(_mm256_slli_epi16(h, 2), m2));
        const __m256i q2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(h, m2));
        const __m256i q3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                           _mm256_and_si256(_mm256_srli_epi16(h, 2), m2));
        transpose_q64(q0, q1, q2, q3, wk);
        // scales 8n + 2qd (first sub-block) and 8n + 2qd + 1: even and odd int8s of 8 bytes
        int64_t sc8;
        std::memcpy(&sc8, b->scales + 8 * n, 8);
        const __m256 all = _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(b->d)),
                                         _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_cvtsi64_si128(sc8))));
        // lanes (2j, 2j + 1) of dw = scale 2j, of mw = scale 2j + 1; ma = the offset's term per sub-block
        dw = _mm256_permutevar8x32_ps(all, _mm256_setr_epi32(0, 0, 2, 2, 4, 4, 6, 6));
        mw = _mm256_permutevar8x32_ps(all, _mm256_setr_epi32(1, 1, 3, 3, 5, 5, 7, 7));
        ma = all;  // the offset's term per sub-block: act_terms scales by -32
    }
};

struct WQ3K : BlockFormat {
    static constexpr int64_t kSuperBytes = sizeof(BlockQ3_K);
    static constexpr int64_t kBlockBytes = kSuperBytes / 8;  // for the prefetch stride only (110 / 8 is not whole)
    static constexpr bool kSuper         = true;
    static constexpr bool kSixteen       = true;
    static constexpr float kSubTerm      = -4.0f;  // weight = (q + 4 h) - 4
    SPECULUM_VNNI static inline __attribute__((always_inline)) void load_half(const uint8_t* sb, int n, __m256i wk[4],
                                                                              __m256& dw, __m256& mw, __m256& ma) {
        const auto* b    = reinterpret_cast<const BlockQ3_K*>(sb);
        const __m256i q  = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qs + 32 * n));
        const __m256i hm = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->hmask));
        const __m256i m3 = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
        __m256i s[4];
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {  // block j: bits 2j of qs, bit 4n + j of hmask (as + 4)
            const __m256i lo = _mm256_and_si256(_mm256_srl_epi16(q, _mm_cvtsi32_si128(2 * j)), m3);
            const __m256i hb = _mm256_and_si256(_mm256_srl_epi16(hm, _mm_cvtsi32_si128(4 * n + j)), one);
            s[j]             = _mm256_or_si256(lo, _mm256_slli_epi16(hb, 2));
        }
        transpose_q64(s[0], s[1], s[2], s[3], wk);
        // scales 8n .. 8n + 7 (+ 32) as q3_k_scales unpacks them, branch-free from the three 32-bit words
        uint32_t w3[3];
        std::memcpy(w3, b->scales, 12);
        const int sh     = 4 * n;
        const uint32_t x = ((w3[0] >> sh) & 0x0f0f0f0fu) | (((w3[2] >> (sh + 0)) & 0x03030303u) << 4);
        const uint32_t y = ((w3[1] >> sh) & 0x0f0f0f0fu) | (((w3[2] >> (sh + 2)) & 0x03030303u) << 4);
        const __m256i sc = _mm256_sub_epi32(
            _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(x | static_cast<uint64_t>(y) << 32))),
            _mm256_set1_epi32(32));
        const __m256 all = _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(b->d)), _mm256_cvtepi32_ps(sc));
        dw               = _mm256_permutevar8x32_ps(all, _mm256_setr_epi32(0, 0, 2, 2, 4, 4, 6, 6));
        mw               = _mm256_permutevar8x32_ps(all, _mm256_setr_epi32(1, 1, 3, 3, 5, 5, 7, 7));
        ma               = all;  // the offset's term per sub-block: act_terms scales by -4
    }
};

// Q2_K: q in 0..3 unsigned (no offset), weight d * sc * q - dmin * m per 16-element sub-block.
struct WQ2K : BlockFormat {
    static constexpr int64_t kSuperBytes = sizeof(BlockQ2_K);
    static constexpr int64_t kBlockBytes = kSuperBytes / 8;  // for the prefetch stride only
    static constexpr bool kMin           = true;
    static constexpr bool kSuper         = true;
    static constexpr bool kSixteen       = true;
    SPECULUM_VNNI static inline __attribute__((always_inline)) void load_half(const uint8_t* sb, int n, __m256i wk[4],
                                                                              __m256& dw, __m256& mw, __m256& ma) {
        const auto* b    = reinterpret_cast<const BlockQ2_K*>(sb);
        const __m256i q  = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qs + 32 * n));
        const __m256i m3 = _mm256_set1_epi8(3);
        transpose_q64(_mm256_and_si256(q, m3), _mm256_and_si256(_mm256_srli_epi16(q, 2), m3),
                      _mm256_and_si256(_mm256_srli_epi16(q, 4), m3), _mm256_and_si256(_mm256_srli_epi16(q, 6), m3), wk);
        int64_t sc8;
        std::memcpy(&sc8, b->scales + 8 * n, 8);
        const __m256i sc = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(sc8));
        const __m256 dsc = _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(b->d)),
                                         _mm256_cvtepi32_ps(_mm256_and_si256(sc, _mm256_set1_epi32(15))));
        const __m256 mins =
            _mm256_mul_ps(_mm256_set1_ps(-_cvtsh_ss(b->dmin)), _mm256_cvtepi32_ps(_mm256_srli_epi32(sc, 4)));
        dw = _mm256_permutevar8x32_ps(dsc, _mm256_setr_epi32(0, 0, 2, 2, 4, 4, 6, 6));
        mw = _mm256_permutevar8x32_ps(dsc, _mm256_setr_epi32(1, 1, 3, 3, 5, 5, 7, 7));
        ma = mins;  // sub-block order, as act_terms lays out the sub-blocks' activation sums
    }
};

// ---- group dots and row tiles ----

// Register k of an activation group: elements 8k .. 8k + 7 of its four blocks.
SPECULUM_VNNI inline __attribute__((always_inline)) __m256i act_q(const Q8ActGroup& x, int k) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.q + 32 * k));
}

// The activation group's terms that do not depend on the weight row, computed once per group for all rows of a tile.
// Sixteen-element formats: the activation sums of the group's eight sub-blocks in order (lane 2j: elements 0..15 of
// block j, lane 2j + 1: elements 16..31) times the block's scale. Formats with a minimum: lane 2j = the sum of block
// j's quants times its scale (from the offset lanes: -128 * sum, times -1/128, exact), lane 2j + 1 = 0.
template <class W>
SPECULUM_VNNI inline __attribute__((always_inline)) __m256 act_terms(const Q8ActGroup& x) {
    const __m256 dx = _mm256_loadu_ps(x.d);
    if constexpr (W::kSixteen) {
        const __m256i ones = _mm256_set1_epi8(1), zero = _mm256_setzero_si256();
        // lane 2j, 2j + 1: elements 0..3 + 8..11 and 4..7 + 12..15 of block j (registers 0, 1); of 16..31 (2, 3)
        __m256i sa = _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(zero, ones, act_q(x, 0)), ones, act_q(x, 1));
        __m256i sb = _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(zero, ones, act_q(x, 2)), ones, act_q(x, 3));
        sa         = _mm256_add_epi32(sa, _mm256_shuffle_epi32(sa, 0xb1));  // both lanes of a pair: their sum
        sb         = _mm256_add_epi32(sb, _mm256_shuffle_epi32(sb, 0xb1));
        return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_blend_epi32(sa, sb, 0xaa)),
                             W::kSubTerm == 1.0f ? dx : _mm256_mul_ps(dx, _mm256_set1_ps(W::kSubTerm)));
    } else {
        const __m256i off = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.off));
        return _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(off), dx), _mm256_set1_ps(-1.0f / 128));
    }
}

// acc += this group's contribution of one row (wk, dw, mw, ma) against activation group x, whose row-independent
// terms are xt (act_terms). Four vpdpbusd leave block j's exact int32 dot (offset cancelled) in lanes 2j, 2j + 1;
// one conversion and one FMA scale all four blocks. Formats with a minimum add m * dx * sum(quants) = mw * xt;
// sixteen-element formats dot each block's two sub-blocks apart (dw, mw: their scales) and add their minimum or
// offset, ma per sub-block, times xt.
template <class W>
SPECULUM_VNNI inline __attribute__((always_inline)) __m256 dot_group(__m256 acc, const __m256i wk[4], __m256 dw,
                                                                     __m256 mw, __m256 ma, __m256 xt,
                                                                     const Q8ActGroup& x) {
    if constexpr (W::kSixteen) {
        const __m256i zero = _mm256_setzero_si256();
        const __m256i da   = _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(zero, wk[0], act_q(x, 0)), wk[1], act_q(x, 1));
        const __m256i db   = _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(zero, wk[2], act_q(x, 2)), wk[3], act_q(x, 3));
        const __m256 t     = _mm256_fmadd_ps(_mm256_cvtepi32_ps(da), dw, _mm256_mul_ps(_mm256_cvtepi32_ps(db), mw));
        acc                = _mm256_fmadd_ps(t, _mm256_loadu_ps(x.d), acc);
        return _mm256_fmadd_ps(ma, xt, acc);
    } else {
        __m256i dot;
        if constexpr (W::kMin)
            dot = _mm256_setzero_si256();  // init() is 0 for these formats: no offset load
        else
            dot = W::init(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.off)));
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) dot = _mm256_dpbusd_epi32(dot, wk[k], act_q(x, k));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(dw, _mm256_loadu_ps(x.d)), acc);
        if constexpr (W::kMin) acc = _mm256_fmadd_ps(mw, xt, acc);
        return acc;
    }
}

// R weight rows x NV activation vectors over a whole row. PF: issue the L2 prefetches kPrefetchRows ahead.
// Decoded super-block rows kept for the next groups of vectors (Cache): per row and activation group, the four
// weight registers and the three scale vectors.
struct DecodedGroup {
    __m256i wk[4];
    __m256 dw, mw, ma;
};
enum class Decoded { none, store, load };  // decode only; decode and keep in `cache`; read from `cache`

template <class W, int R, int NV, bool PF, Decoded Cache = Decoded::none>
SPECULUM_VNNI void tile(float* y, int64_t ldy, const uint8_t* row0, uint64_t row_bytes, const Q8ActGroup* const* xv,
                        int64_t nb, DecodedGroup* cache = nullptr) {
    __m256 acc[R][NV];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_setzero_ps();
    constexpr int64_t kBlockBytes = W::kBlockBytes, kGroupBytes = kQ8ActGroup * W::kBlockBytes;
    const int64_t full    = nb / kQ8ActGroup;
    const uint8_t* ahead  = row0 + kPrefetchRows * row_bytes;
    constexpr bool kTerms = W::kSixteen || W::kMin;
    for (int64_t g = 0; g < full; ++g) {
        __m256 xt[NV];
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) xt[v] = kTerms ? act_terms<W>(xv[v][g]) : _mm256_setzero_ps();
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const uint8_t* a = row0 + r * row_bytes + g * kGroupBytes;
            if constexpr (PF) {
                const char* p = reinterpret_cast<const char*>(ahead + r * row_bytes + g * kGroupBytes);
#pragma GCC unroll 4
                for (int64_t off = 0; off < kGroupBytes; off += 64) _mm_prefetch(p + off, _MM_HINT_T1);
            }
            __m256i wk[4];
            __m256 dw, mw = _mm256_setzero_ps(), ma = mw;
            [[maybe_unused]] DecodedGroup* c = cache + g * R + r;
            if constexpr (Cache == Decoded::load) {
#pragma GCC unroll 4
                for (int k = 0; k < 4; ++k) wk[k] = _mm256_load_si256(&c->wk[k]);
                dw = _mm256_load_ps(reinterpret_cast<const float*>(&c->dw));
                mw = _mm256_load_ps(reinterpret_cast<const float*>(&c->mw));
                ma = _mm256_load_ps(reinterpret_cast<const float*>(&c->ma));
            } else if constexpr (W::kSixteen)
                W::load_half(row0 + r * row_bytes + (g >> 1) * W::kSuperBytes, static_cast<int>(g & 1), wk, dw, mw, ma);
            else if constexpr (W::kSuper)  // super-blocks need not split into 8 equal 32-element parts (Q3_K, Q6_K)
                W::load_half(row0 + r * row_bytes + (g >> 1) * W::kSuperBytes, static_cast<int>(g & 1), wk, dw, mw);
            else
                W::load(a, a + kBlockBytes, a + 2 * kBlockBytes, a + 3 * kBlockBytes, wk, dw, mw);
            if constexpr (Cache == Decoded::store) {
#pragma GCC unroll 4
                for (int k = 0; k < 4; ++k) _mm256_store_si256(&c->wk[k], wk[k]);
                _mm256_store_ps(reinterpret_cast<float*>(&c->dw), dw);
                _mm256_store_ps(reinterpret_cast<float*>(&c->mw), mw);
                _mm256_store_ps(reinterpret_cast<float*>(&c->ma), ma);
            }
#pragma GCC unroll 8
            for (int v = 0; v < NV; ++v) acc[r][v] = dot_group<W>(acc[r][v], wk, dw, mw, ma, xt[v], xv[v][g]);
        }
    }
    if constexpr (W::kSuper) {
        // whole super-blocks: no short last group
    } else if (const int64_t rest = nb - full * kQ8ActGroup; rest > 0) {
        __m256 xt[NV];
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) xt[v] = kTerms ? act_terms<W>(xv[v][full]) : _mm256_setzero_ps();
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const uint8_t* a = row0 + r * row_bytes + full * kGroupBytes;
            const uint8_t* p[4];
            for (int j = 0; j < 4; ++j) p[j] = j < rest ? a + j * kBlockBytes : kZeroBlock;
            __m256i wk[4];
            __m256 dw, mw = _mm256_setzero_ps();
            W::load(p[0], p[1], p[2], p[3], wk, dw, mw);
#pragma GCC unroll 8
            for (int v = 0; v < NV; ++v) acc[r][v] = dot_group<W>(acc[r][v], wk, dw, mw, mw, xt[v], xv[v][full]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) y[v * ldy + r] = vnni::hsum(acc[r][v]);
}

// Super-block formats against more than one group of vectors: the first group of 4 keeps the decoded rows in a
// scratch of 32 KiB (L1/L2) and the other groups read them, since the decode is most of a K-quant tile's work
// (n = 8: 4-12 % less, docs/performance-notebook.md "Session 26"). Not inlined: its frame would otherwise make every
// row_tile call probe the stack.
template <int R>
constexpr int64_t kCachedGroups = 32768 / (R * int64_t(sizeof(DecodedGroup)));
template <class W, int R>
SPECULUM_VNNI __attribute__((noinline)) void row_tile_cached(float* y, int64_t ldy, const uint8_t* rows,
                                                             uint64_t row_bytes, const void* xq, int64_t n,
                                                             int64_t cols) {
    const int64_t nb = cols / kQ8ActBlock;
    alignas(64) DecodedGroup cache[kCachedGroups<R> * R];
    for (int64_t i = 0; i < n; i += 4) {
        const int64_t nv = n - i < 4 ? n - i : 4;
        const Q8ActGroup* xv[4];
        for (int64_t k = 0; k < nv; ++k) xv[k] = q8act_vec(xq, i + k, cols);
        float* yi = y + i * ldy;
        if (i == 0)  // n > 4: a whole group of 4 first
            tile<W, R, 4, true, Decoded::store>(yi, ldy, rows, row_bytes, xv, nb, cache);
        else
            with_count<4>(nv, [&](auto c) {
                tile<W, R, decltype(c)::value, false, Decoded::load>(yi, ldy, rows, row_bytes, xv, nb, cache);
            });
    }
}

// Rows [r, r + R) against all n vectors in groups of at most 4 (later groups find the rows in cache).
template <class W, int R>
SPECULUM_VNNI void row_tile(float* y, int64_t ldy, const uint8_t* rows, uint64_t row_bytes, const void* xq, int64_t n,
                            int64_t cols) {
    const int64_t nb = cols / kQ8ActBlock;
    if constexpr (W::kSuper)
        if (n > 4 && nb / kQ8ActGroup <= kCachedGroups<R>)
            return row_tile_cached<W, R>(y, ldy, rows, row_bytes, xq, n, cols);
    for (int64_t i = 0; i < n; i += 4) {
        const int64_t nv = n - i < 4 ? n - i : 4;
        const Q8ActGroup* xv[4];
        for (int64_t k = 0; k < nv; ++k) xv[k] = q8act_vec(xq, i + k, cols);
        float* yi = y + i * ldy;
        if (i == 0) {
            switch (nv) {
                case 1:
                    tile<W, R, 1, true>(yi, ldy, rows, row_bytes, xv, nb);
                    break;
                case 2:
                    tile<W, R, 2, true>(yi, ldy, rows, row_bytes, xv, nb);
                    break;
                case 3:
                    tile<W, R, 3, true>(yi, ldy, rows, row_bytes, xv, nb);
                    break;
                default:
                    tile<W, R, 4, true>(yi, ldy, rows, row_bytes, xv, nb);
                    break;
            }
        } else {
            switch (nv) {
                case 1:
                    tile<W, R, 1, false>(yi, ldy, rows, row_bytes, xv, nb);
                    break;
                case 2:
                    tile<W, R, 2, false>(yi, ldy, rows, row_bytes, xv, nb);
                    break;
                case 3:
                    tile<W, R, 3, false>(yi, ldy, rows, row_bytes, xv, nb);
                    break;
                default:
                    tile<W, R, 4, false>(yi, ldy, rows, row_bytes, xv, nb);
                    break;
            }
        }
    }
}

// Rows [r, r + R) against all NV vectors in one group: the rows are decoded once for all of them. For verification
// passes of 5 and 6 tokens, which groups of at most 4 split 4 + 1 and 4 + 2, decoding every row tile twice.
template <class W, int R, int NV>
SPECULUM_VNNI void row_tile_one_group(float* y, int64_t ldy, const uint8_t* rows, uint64_t row_bytes, const void* xq,
                                      int64_t cols) {
    const Q8ActGroup* xv[NV];
    for (int k = 0; k < NV; ++k) xv[k] = q8act_vec(xq, k, cols);
    tile<W, R, NV, true>(y, ldy, rows, row_bytes, xv, cols / kQ8ActBlock);
}

// ---- activation quantization ----

SPECULUM_VNNI void quantize_impl(void* xq, const float* x, int64_t n, int64_t cols) {
    const int64_t nb = cols / kQ8ActBlock;
    for (int64_t i = 0; i < n; ++i) {
        auto* groups    = const_cast<Q8ActGroup*>(q8act_vec(xq, i, cols));
        const float* xi = x + i * cols;
        for (int64_t b = 0; b < q8act_groups(cols) * kQ8ActGroup; ++b) {
            Q8ActGroup& grp = groups[b / kQ8ActGroup];
            const int j     = static_cast<int>(b % kQ8ActGroup);
            float db        = 0.0f;
            int32_t sum     = 0;
            __m128i q0 = _mm_setzero_si128(), q1 = _mm_setzero_si128();
            if (b < nb) db = vnni::quantize_block(xi + 32 * b, &q0, &q1, &sum);
            // Qword k of the block (elements 8k .. 8k+7) goes to register k of the group, slot j.
            _mm_storel_epi64(reinterpret_cast<__m128i*>(grp.q + 8 * j), q0);
            _mm_storel_epi64(reinterpret_cast<__m128i*>(grp.q + 32 + 8 * j), _mm_unpackhi_epi64(q0, q0));
            _mm_storel_epi64(reinterpret_cast<__m128i*>(grp.q + 64 + 8 * j), q1);
            _mm_storel_epi64(reinterpret_cast<__m128i*>(grp.q + 96 + 8 * j), _mm_unpackhi_epi64(q1, q1));
            grp.off[2 * j]     = -128 * sum;
            grp.off[2 * j + 1] = 0;
            grp.d[2 * j] = grp.d[2 * j + 1] = db;
        }
    }
}

// ---- GEMM dispatch ----

// Row tiles of 8 rows for n <= 2 (memory-bound: the most concurrent DRAM streams that fit the registers), 4 rows
// against all 5 vectors at once (6 for super-block formats; verification passes: each tile decoded once, 5-22 %
// faster, docs/performance-notebook.md "Session 25"), else 6 rows against groups of 4
// vectors (compute-bound; on Zen 4 a few % faster than 4 x 4, and 2 x 8 or 3 x 8 tiles were slower), then tiles of
// 4, 2 and 1 row for the rest of the range.
template <class W>
SPECULUM_VNNI void gemm_rows(float* y, int64_t ldy, const uint8_t* wb, uint64_t row_bytes, const void* xq, int64_t n,
                             int64_t cols, int64_t r0, int64_t r1) {
    int64_t r = r0;
    if (n == 5)
        for (; r + 4 <= r1; r += 4) row_tile_one_group<W, 4, 5>(y + r, ldy, wb + r * row_bytes, row_bytes, xq, cols);
    if (n == 6 && W::kSuper)  // super-block formats, whose decode costs the most (4 + 2 stays faster for the others)
        for (; r + 4 <= r1; r += 4) row_tile_one_group<W, 4, 6>(y + r, ldy, wb + r * row_bytes, row_bytes, xq, cols);
    if (n <= 2)
        for (; r + 8 <= r1; r += 8) row_tile<W, 8>(y + r, ldy, wb + r * row_bytes, row_bytes, xq, n, cols);
    for (; r + 6 <= r1; r += 6) row_tile<W, 6>(y + r, ldy, wb + r * row_bytes, row_bytes, xq, n, cols);
    for (; r + 4 <= r1; r += 4) row_tile<W, 4>(y + r, ldy, wb + r * row_bytes, row_bytes, xq, n, cols);
    for (; r + 2 <= r1; r += 2) row_tile<W, 2>(y + r, ldy, wb + r * row_bytes, row_bytes, xq, n, cols);
    for (; r < r1; ++r) row_tile<W, 1>(y + r, ldy, wb + r * row_bytes, row_bytes, xq, n, cols);
}

}  // namespace

void quantize_q8act_avx512(void* xq, const float* x, int64_t n, int64_t cols) {
    quantize_impl(xq, x, n, cols);
}

void gemm_q8act_avx512(float* y, int64_t ldy, GgmlType t, const void* w, const void* xq, int64_t n, int64_t cols,
                       int64_t r0, int64_t r1) {
    const auto* wb           = static_cast<const uint8_t*>(w);
    const uint64_t row_bytes = ggml_row_size(t, static_cast<uint64_t>(cols));
    switch (t) {
        case GgmlType::Q8_0:
            gemm_rows<WQ8_0>(y, ldy, wb, row_bytes, xq, n, cols, r0, r1);
            return;
        case GgmlType::Q4_0:
            gemm_rows<WQ4_0>(y, ldy, wb, row_bytes, xq, n, cols, r0, r1);
            return;
        case GgmlType::MXFP4:
            gemm_rows<WMxfp4>(y, ldy, wb, row_bytes, xq, n, cols, r0, r1);
            return;
        case GgmlType::Q4_1:
            gemm_rows<WQ4_1>(y, ldy, wb, row_bytes, xq, n, cols, r0, r1);
            return;
        case GgmlType::Q5_0:
            gemm_rows<WQ5_0>(y, ldy, wb, row_bytes, xq, n, cols, r0, r1);
            return;
        case GgmlType::Q5_1:
            gemm_rows<WQ5_1>(y, ldy, wb, row_bytes, xq, n, cols, r0, r1);
            return;
        case GgmlType::IQ4_NL:
            gemm_rows<WIq4Nl>(y, ldy, wb, row_bytes, xq, n, cols, r0, r1);
            return;
        case GgmlType::Q4_K:
            gemm_rows<WQK<false>>(y, ldy, wb, row_bytes, xq, n, cols, r0, r1);
            return;
        case GgmlType::Q5_K:
            gemm_rows<WQK<true>>(y, ldy, wb, row_bytes, xq, n, cols, r0, r1);
            return;
        case GgmlType::IQ4_XS:
            gemm_rows<WIq4Xs>(y, ldy, wb, row_bytes, xq, n, cols, r0, r1);
            return;
        case GgmlType::Q6_K:
            gemm_rows<WQ6K>(y, ldy, wb, row_bytes, xq, n, cols, r0, r1);
            return;
        case GgmlType::Q3_K:
            gemm_rows<WQ3K>(y, ldy, wb, row_bytes, xq, n, cols, r0, r1);
            return;
        case GgmlType::Q2_K:
            gemm_rows<WQ2K>(y, ldy, wb, row_bytes, xq, n, cols, r0, r1);
            return;
        default:
            return;  // check_q8act_type admits only the types above
    }
}

}  // namespace speculum::kernels::detail
