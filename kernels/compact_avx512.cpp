// AVX-512 VBMI2 decoder of the compact draft formats (compact.h): vpexpandb scatters a group's stored bytes to the
// positions its presence mask names, so a 64-element 16-bit group or a 32-element Q8_0 block decodes with a few
// masked loads and expands, reading only the stream's bytes (masked loads never touch bytes past the group; the
// 8-byte plane loads may read up to 7 bytes into the next group or the kCompactPad tail and mask them off).
// Bit-identical to compact_decode_rows_ref. Every function carries the target attribute in an anonymous namespace.
#include "kernels/compact.h"

#include "kernels/quant_blocks.h"

#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

#define SPECULUM_VBMI2 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi2,bmi,bmi2,popcnt")))

namespace speculum::kernels::detail {

namespace {

SPECULUM_VBMI2 inline uint64_t low_bits(int64_t k) { return k >= 64 ? ~0ull : _bzhi_u64(~0ull, static_cast<unsigned>(k)); }

// One 16-bit group of n <= 64 elements to out (n values); returns the bytes read.
template <bool Sparse>
SPECULUM_VBMI2 inline uint64_t group16(uint8_t* out, const uint8_t* p, int64_t n, int planes) {
    const uint8_t* start = p;
    uint64_t mask        = low_bits(n);
    if constexpr (Sparse) {
        std::memcpy(&mask, p, 8);
        p += 8;
    }
    const int64_t k  = _mm_popcnt_u64(mask);
    const int64_t pb = (k + 7) >> 3;
    const __m512i hi = _mm512_maskz_loadu_epi8(low_bits(k), p);
    p += k;
    __m512i lo = _mm512_setzero_si512();
    for (int j = 0; j < planes; ++j, p += pb) {
        uint64_t bits;
        std::memcpy(&bits, p, 8);  // may read into the next group / the padding: masked off below
        lo = _mm512_mask_add_epi8(lo, bits & low_bits(k), lo, _mm512_set1_epi8(static_cast<char>(1 << (7 - j))));
    }
    const __m512i he = _mm512_maskz_expand_epi8(mask, hi);
    const __m512i le = _mm512_maskz_expand_epi8(mask, lo);
    // Bytes e of he / le -> 16-bit element e = he << 8 | le, 32 elements per store.
    const __m512i a = _mm512_or_si512(_mm512_slli_epi16(_mm512_cvtepu8_epi16(_mm512_castsi512_si256(he)), 8),
                                      _mm512_cvtepu8_epi16(_mm512_castsi512_si256(le)));
    const __m512i b = _mm512_or_si512(_mm512_slli_epi16(_mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(he, 1)), 8),
                                      _mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(le, 1)));
    if (n == 64) {
        _mm512_storeu_si512(out, a);
        _mm512_storeu_si512(out + 64, b);
    } else {
        const __mmask32 m0 = n >= 32 ? ~0u : static_cast<__mmask32>(low_bits(n));
        const __mmask32 m1 = n <= 32 ? 0u : static_cast<__mmask32>(low_bits(n - 32));
        _mm512_mask_storeu_epi16(out, m0, a);
        _mm512_mask_storeu_epi16(out + 64, m1, b);
    }
    return static_cast<uint64_t>(p - start);
}

template <bool Sparse>
SPECULUM_VBMI2 void rows16(uint8_t* out, const CompactMatrix& w, int64_t r0, int64_t r1) {
    const int planes = 8 - w.format().trunc_bits;
    const int64_t cols = w.cols();
    for (int64_t r = r0; r < r1; ++r, out += 2 * cols) {
        const uint8_t* p = w.row(r);
        if (r + 8 < w.rows()) _mm_prefetch(reinterpret_cast<const char*>(w.row(r + 8)), _MM_HINT_T0);
        for (int64_t g0 = 0; g0 < cols; g0 += kCompactGroup16)
            p += group16<Sparse>(out + 2 * g0, p, cols - g0 < kCompactGroup16 ? cols - g0 : kCompactGroup16, planes);
    }
}

SPECULUM_VBMI2 void rows_q8(uint8_t* out, const CompactMatrix& w, int64_t r0, int64_t r1) {
    const int64_t blocks = w.cols() / kQK8_0;
    for (int64_t r = r0; r < r1; ++r) {
        const uint8_t* p = w.row(r);
        for (int64_t b = 0; b < blocks; ++b, out += sizeof(BlockQ8_0)) {
            uint32_t mask;
            std::memcpy(out, p, 2);
            std::memcpy(&mask, p + 2, 4);
            const int k     = _mm_popcnt_u32(mask);
            const __m256i q = _mm256_maskz_loadu_epi8(static_cast<__mmask32>(low_bits(k)), p + 6);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 2), _mm256_maskz_expand_epi8(mask, q));
            p += 6 + k;
        }
    }
}

}  // namespace

bool compact_decode_rows_avx512(void* dst, const CompactMatrix& w, int64_t r0, int64_t r1) {
    auto* out = static_cast<uint8_t*>(dst);
    if (w.format().dense == GgmlType::Q8_0) rows_q8(out, w, r0, r1);
    else if (w.format().sparse) rows16<true>(out, w, r0, r1);
    else rows16<false>(out, w, r0, r1);
    return true;
}

}  // namespace speculum::kernels::detail
