// Internal to the AVX-512 VNNI kernel files (gemv_q8act_avx512.cpp, gemv_q8x8_avx512.cpp): the target attribute, a
// horizontal sum and the int8 quantization of one block of 32 activations (bit-identical to
// quantize_block_q8act_ref). Include it first: its pragmas must precede <immintrin.h>. Every function is static and
// always inlined, so no AVX-512 code can leak into other files through a shared (COMDAT) copy.
#pragma once

// GCC 12 warns about the deliberately undefined registers inside the AVX-512 intrinsics (_mm512_undefined_*: GCC
// bug 105593, fixed in GCC 13); the pragmas must precede the header.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/gemv_detail.h"

#include <cstdint>

#define SPECULUM_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))
#define SPECULUM_VNNI_INLINE SPECULUM_VNNI static inline __attribute__((always_inline))

namespace speculum::kernels::detail::vnni {

SPECULUM_VNNI_INLINE float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s        = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s        = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// The 32 activations at xb as int8: q0 = elements 0..15, q1 = 16..31; returns the block's scale d, *sum = the sum of
// the quants. Same numerics as quantize_block_q8act_ref.
SPECULUM_VNNI_INLINE float quantize_block(const float* xb, __m128i* q0, __m128i* q1, int32_t* sum) {
    const __m512 sign = _mm512_set1_ps(-0.0f);
    const __m512 x0   = _mm512_loadu_ps(xb);
    const __m512 x1   = _mm512_loadu_ps(xb + 16);
    const float amax  = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_andnot_ps(sign, x0), _mm512_andnot_ps(sign, x1)));
    const float d     = amax >= kQ8ActMinAmax ? amax / 127.0f : 0.0f;
    const __m512 id   = _mm512_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
    // Round to nearest even (MXCSR default), then saturate to int8 (only NaN saturates: -128).
    *q0  = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(x0, id)));
    *q1  = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(x1, id)));
    *sum = _mm512_reduce_add_epi32(_mm512_add_epi32(_mm512_cvtepi8_epi32(*q0), _mm512_cvtepi8_epi32(*q1)));
    return d;
}

}  // namespace speculum::kernels::detail::vnni
