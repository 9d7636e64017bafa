// Mantissa truncation to 7 - t BF16 mantissa bits: scalar reference and AVX2 rows (8 values per step).
#include "kernels/mantissa.h"

#include "kernels/cpu_info.h"
#include "kernels/fp16.h"

#include <immintrin.h>

#include <stdexcept>
#include <string>

namespace speculum::kernels {

namespace {

void check_t(int t) {
    if (t < 0 || t > kBf16MantissaBits)
        throw std::invalid_argument("mantissa truncation: t = " + std::to_string(t) + " is outside 0..7");
}

uint16_t truncate_bits_unchecked(uint32_t u, int t, MantissaRounding mode) {
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>(((u >> 16) & 0x8000u) | 0x7fc0u);
    const int shift = 16 + t;  // f32 bits below the kept ones
    if (mode == MantissaRounding::nearest_even) {
        const uint32_t bias = ((u >> shift) & 1u) + (1u << (shift - 1)) - 1u;
        u += bias;  // cannot overflow 32 bits: |u| <= 0x7f800000 and bias < 2^23
    }
    return static_cast<uint16_t>((u >> shift) << t);
}

bool use_avx2() {
    static const bool ok = cpu_features().avx2;
    return ok;
}

// 8 f32 bit patterns -> 8 truncated bf16 in the low 16 bits of each lane.
__attribute__((target("avx2"), always_inline)) inline __m256i truncate8(__m256i u, int t, bool nearest) {
    const __m128i sh = _mm_cvtsi32_si128(16 + t);
    __m256i r        = u;
    if (nearest) {
        const __m256i lsb  = _mm256_and_si256(_mm256_srl_epi32(u, sh), _mm256_set1_epi32(1));
        const __m256i half = _mm256_set1_epi32(static_cast<int>((1u << (15 + t)) - 1u));
        r                  = _mm256_add_epi32(u, _mm256_add_epi32(lsb, half));
    }
    r = _mm256_sll_epi32(_mm256_srl_epi32(r, sh), _mm_cvtsi32_si128(t));
    // NaN lanes -> sign | 0x7fc0
    const __m256i mag    = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
    const __m256i is_nan = _mm256_cmpgt_epi32(mag, _mm256_set1_epi32(0x7f800000));
    const __m256i qnan   = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x8000)),
                                           _mm256_set1_epi32(0x7fc0));
    return _mm256_blendv_epi8(r, qnan, is_nan);
}

// Lanes hold values < 2^16: pack to 8 uint16 in order.
__attribute__((target("avx2"), always_inline)) inline __m128i pack8(__m256i r) {
    const __m256i p = _mm256_packus_epi32(r, r);  // per 128-bit lane: [a0..a3 a0..a3 | b0..b3 b0..b3]
    return _mm256_castsi256_si128(_mm256_permute4x64_epi64(p, 0x08));  // qwords 0 and 2
}

__attribute__((target("avx2"))) void row_f32_avx2(uint16_t* out, const float* in, int64_t n, int t, bool nearest) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i u = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), pack8(truncate8(u, t, nearest)));
    }
    const MantissaRounding mode = nearest ? MantissaRounding::nearest_even : MantissaRounding::toward_zero;
    for (; i < n; ++i) out[i] = truncate_bits_unchecked(f32_to_bits(in[i]), t, mode);
}

__attribute__((target("avx2"))) void row_bf16_avx2(uint16_t* out, const uint16_t* in, int64_t n, int t, bool nearest) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i)));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), pack8(truncate8(_mm256_slli_epi32(h, 16), t, nearest)));
    }
    const MantissaRounding mode = nearest ? MantissaRounding::nearest_even : MantissaRounding::toward_zero;
    for (; i < n; ++i) out[i] = truncate_bits_unchecked(static_cast<uint32_t>(in[i]) << 16, t, mode);
}

}  // namespace

uint16_t truncate_mantissa_bf16(float v, int t, MantissaRounding mode) {
    check_t(t);
    return truncate_bits_unchecked(f32_to_bits(v), t, mode);
}

uint16_t truncate_mantissa_bf16_bits(uint16_t h, int t, MantissaRounding mode) {
    check_t(t);
    return truncate_bits_unchecked(static_cast<uint32_t>(h) << 16, t, mode);
}

void truncate_mantissa_row_bf16_ref(uint16_t* out, const float* in, int64_t n, int t, MantissaRounding mode) {
    check_t(t);
    for (int64_t i = 0; i < n; ++i) out[i] = truncate_bits_unchecked(f32_to_bits(in[i]), t, mode);
}

void truncate_mantissa_row_bf16(uint16_t* out, const float* in, int64_t n, int t, MantissaRounding mode) {
    check_t(t);
    if (!use_avx2()) return truncate_mantissa_row_bf16_ref(out, in, n, t, mode);
    row_f32_avx2(out, in, n, t, mode == MantissaRounding::nearest_even);
}

void truncate_mantissa_row_bf16_bits_ref(uint16_t* out, const uint16_t* in, int64_t n, int t, MantissaRounding mode) {
    check_t(t);
    for (int64_t i = 0; i < n; ++i) out[i] = truncate_bits_unchecked(static_cast<uint32_t>(in[i]) << 16, t, mode);
}

void truncate_mantissa_row_bf16_bits(uint16_t* out, const uint16_t* in, int64_t n, int t, MantissaRounding mode) {
    check_t(t);
    if (!use_avx2()) return truncate_mantissa_row_bf16_bits_ref(out, in, n, t, mode);
    row_bf16_avx2(out, in, n, t, mode == MantissaRounding::nearest_even);
}

}  // namespace speculum::kernels
