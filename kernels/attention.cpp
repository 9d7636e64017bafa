// Decode and verification attention (see attention.h): the scalar reference and the AVX-512 kernel.
// GCC 12's <immintrin.h> reductions trip -Wuninitialized (GCC bug 105593, fixed in GCC 13); the pragmas must precede
// the header.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "kernels/attention.h"

#include "kernels/gemv.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace speculum::kernels {

bool attend_fast_available(int32_t hd) {
    return kernel_isa() >= KernelIsa::avx512 && hd > 0 && hd % 16 == 0;
}

void attend_ref(float* out, const float* q, const float* k, const float* v, int64_t ld, const int64_t* kv_off,
                const int32_t* slots, int32_t m, int32_t nh, int32_t hd, float scale, float cap, const float* sinks) {
    for (int32_t b = 0; b < nh; ++b) {
        const float* qb = q + static_cast<int64_t>(b) * hd;
        float* ob       = out + static_cast<int64_t>(b) * hd;
        std::fill(ob, ob + hd, 0.0f);
        if (m <= 0) continue;
        float max_s = -std::numeric_limits<float>::infinity(), sum = 0.0f;
        for (int32_t t = 0; t < m; ++t) {
            const float* kb = k + slots[t] * ld + kv_off[b];
            const float* vb = v + slots[t] * ld + kv_off[b];
            float dot       = 0.0f;
            for (int32_t d = 0; d < hd; ++d) dot += qb[d] * kb[d];
            float sc = dot * scale;
            if (cap > 0.0f) sc = cap * std::tanh(sc / cap);
            if (sc > max_s) {
                const float r = std::exp(max_s - sc);  // 0 on the first slot
                for (int32_t d = 0; d < hd; ++d) ob[d] *= r;
                sum *= r;
                max_s = sc;
            }
            const float p = std::exp(sc - max_s);
            for (int32_t d = 0; d < hd; ++d) ob[d] += p * vb[d];
            sum += p;
        }
        const float inv = 1.0f / (sum + (sinks ? std::exp(sinks[b] - max_s) : 0.0f));
        for (int32_t d = 0; d < hd; ++d) ob[d] *= inv;
    }
}

namespace {

#define SPECULUM_AVX512_ATTN __attribute__((target("avx512f,avx512dq,fma")))

// exp(x) on 16 lanes: x = k ln2 + r with |r| <= ln2 / 2, exp(r) by its degree-6 Taylor polynomial (truncation
// error under 1.3e-7 relative), times 2^k by vscalefps. exp(0) is exactly 1; x <= -104 (and -inf) gives 0.
SPECULUM_AVX512_ATTN __m512 exp16(__m512 x) {
    x              = _mm512_max_ps(x, _mm512_set1_ps(-104.0f));
    x              = _mm512_min_ps(x, _mm512_set1_ps(88.7f));
    const __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r       = _mm512_fnmadd_ps(k, _mm512_set1_ps(0.693359375f), x);  // ln2 in two parts: exact k * hi
    r              = _mm512_fnmadd_ps(k, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p       = _mm512_set1_ps(1.0f / 720.0f);
    p              = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
    p              = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
    p              = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
    p              = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p              = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p              = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, k);
}

// Slots in chunks of kAttendChunk: the scores of a chunk for every head (one pass over its K rows), each head's
// running maximum and sum moved once per chunk (one rescale of what it has accumulated, not one per slot that raises
// the maximum), the chunk's weights by one vector exp per 16 slots, then each head's output accumulated in registers
// over the chunk's V rows (one pass per head; heads that share a KV head find its rows in L1).
constexpr int32_t kAttendChunk = 64;
// K and V rows are fetched this many slots ahead: a slot's row of a layer is n_embd_kv floats (4 KiB for 8 KV heads
// of 128), one page per slot, and the hardware prefetchers stop at page boundaries.
constexpr int32_t kAttendPrefetchSlots = 4;

template <int U>
SPECULUM_AVX512_ATTN inline void accumulate_values(float* ob, const float* v, int64_t ld, int64_t off,
                                                   const int32_t* slots, const float* p, int32_t c) {
    __m512 acc[U];
#pragma GCC unroll 16
    for (int u = 0; u < U; ++u) acc[u] = _mm512_loadu_ps(ob + 16 * u);
    for (int32_t t = 0; t < c; ++t) {
        const float* vb = v + slots[t] * ld + off;
        if (t + kAttendPrefetchSlots < c) {
            const char* pv = reinterpret_cast<const char*>(v + slots[t + kAttendPrefetchSlots] * ld + off);
#pragma GCC unroll 16
            for (int u = 0; u < U; ++u) _mm_prefetch(pv + 64 * u, _MM_HINT_T0);
        }
        const __m512 pb = _mm512_set1_ps(p[t]);
#pragma GCC unroll 16
        for (int u = 0; u < U; ++u) acc[u] = _mm512_fmadd_ps(pb, _mm512_loadu_ps(vb + 16 * u), acc[u]);
    }
#pragma GCC unroll 16
    for (int u = 0; u < U; ++u) _mm512_storeu_ps(ob + 16 * u, acc[u]);
}

SPECULUM_AVX512_ATTN void attend_avx512(float* out, const float* q, const float* k, const float* v, int64_t ld,
                                        const int64_t* kv_off, const int32_t* slots, int32_t m, int32_t nh, int32_t hd,
                                        float scale, float cap, const float* sinks) {
    const int32_t units = hd / 16;
    std::memset(out, 0, sizeof(float) * static_cast<size_t>(nh) * static_cast<size_t>(hd));
    if (m <= 0) return;
    alignas(64) float s[kAttendMaxHeads][kAttendChunk];  // a chunk's scores, then its weights, per head
    alignas(64) float mx[16], sm[16], cm[16], rr[16];
    for (int32_t b = 0; b < 16; ++b) mx[b] = -std::numeric_limits<float>::infinity(), sm[b] = 0.0f;
    const __mmask16 lanes = static_cast<__mmask16>(nh >= 16 ? 0xFFFFu : (1u << nh) - 1u);
    for (int32_t t0 = 0; t0 < m; t0 += kAttendChunk) {
        const int32_t c    = std::min(kAttendChunk, m - t0);
        const int64_t span = kv_off[nh - 1] + hd - kv_off[0];  // the block's K (and V) floats in a slot's row
        for (int32_t t = 0; t < c; ++t) {
            const float* kr = k + slots[t0 + t] * ld;
            if (t0 + t + kAttendPrefetchSlots < m) {
                const char* pk =
                    reinterpret_cast<const char*>(k + slots[t0 + t + kAttendPrefetchSlots] * ld + kv_off[0]);
                for (int64_t o = 0; o < span * 4; o += 64) _mm_prefetch(pk + o, _MM_HINT_T0);
            }
            for (int32_t b = 0; b < nh; ++b) {
                const float* qb = q + static_cast<int64_t>(b) * hd;
                const float* kb = kr + kv_off[b];
                __m512 a        = _mm512_mul_ps(_mm512_loadu_ps(qb), _mm512_loadu_ps(kb));
                for (int32_t u = 1; u < units; ++u)
                    a = _mm512_fmadd_ps(_mm512_loadu_ps(qb + 16 * u), _mm512_loadu_ps(kb + 16 * u), a);
                s[b][t] = _mm512_reduce_add_ps(a) * scale;
            }
        }
        const __mmask16 tail = static_cast<__mmask16>(c % 16 == 0 ? 0xFFFFu : (1u << (c % 16)) - 1u);
        for (int32_t b = 0; b < nh; ++b) {
            if (cap > 0.0f)
                for (int32_t t = 0; t < c; ++t) s[b][t] = cap * std::tanh(s[b][t] / cap);
            __m512 vm = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
            for (int32_t t = 0; t < c; t += 16)
                vm = _mm512_mask_max_ps(vm, t + 16 <= c ? __mmask16(0xFFFF) : tail, vm, _mm512_load_ps(&s[b][t]));
            cm[b] = _mm512_reduce_max_ps(vm);
        }
        const __m512 vmax = _mm512_maskz_load_ps(lanes, mx);
        const __m512 nmax = _mm512_max_ps(vmax, _mm512_maskz_load_ps(lanes, cm));
        _mm512_store_ps(rr, exp16(_mm512_sub_ps(vmax, nmax)));
        _mm512_store_ps(mx, nmax);
        for (int32_t b = 0; b < nh; ++b) {
            const __m512 nb = _mm512_set1_ps(mx[b]);
            __m512 sum      = _mm512_setzero_ps();
            for (int32_t t = 0; t < c; t += 16) {
                const __mmask16 mk = t + 16 <= c ? __mmask16(0xFFFF) : tail;
                const __m512 p     = _mm512_maskz_mov_ps(mk, exp16(_mm512_sub_ps(_mm512_load_ps(&s[b][t]), nb)));
                _mm512_store_ps(&s[b][t], p);
                sum = _mm512_add_ps(sum, p);
            }
            sm[b]     = sm[b] * rr[b] + _mm512_reduce_add_ps(sum);
            float* ob = out + static_cast<int64_t>(b) * hd;
            if (rr[b] != 1.0f) {
                const __m512 rb = _mm512_set1_ps(rr[b]);
                for (int32_t u = 0; u < units; ++u)
                    _mm512_storeu_ps(ob + 16 * u, _mm512_mul_ps(_mm512_loadu_ps(ob + 16 * u), rb));
            }
            switch (units) {
                case 4:
                    accumulate_values<4>(ob, v, ld, kv_off[b], slots + t0, s[b], c);
                    break;
                case 8:
                    accumulate_values<8>(ob, v, ld, kv_off[b], slots + t0, s[b], c);
                    break;
                case 16:
                    accumulate_values<16>(ob, v, ld, kv_off[b], slots + t0, s[b], c);
                    break;
                default:
                    for (int32_t t = 0; t < c; ++t) {
                        const float* vb = v + slots[t0 + t] * ld + kv_off[b];
                        const __m512 pb = _mm512_set1_ps(s[b][t]);
                        for (int32_t u = 0; u < units; ++u)
                            _mm512_storeu_ps(ob + 16 * u, _mm512_fmadd_ps(pb, _mm512_loadu_ps(vb + 16 * u),
                                                                          _mm512_loadu_ps(ob + 16 * u)));
                    }
            }
        }
    }
    for (int32_t b = 0; b < nh; ++b) {
        float* ob        = out + static_cast<int64_t>(b) * hd;
        const __m512 inv = _mm512_set1_ps(1.0f / (sm[b] + (sinks ? std::exp(sinks[b] - mx[b]) : 0.0f)));
        for (int32_t u = 0; u < units; ++u)
            _mm512_storeu_ps(ob + 16 * u, _mm512_mul_ps(_mm512_loadu_ps(ob + 16 * u), inv));
    }
}

}  // namespace

void attend(float* out, const float* q, const float* k, const float* v, int64_t ld, const int64_t* kv_off,
            const int32_t* slots, int32_t m, int32_t nh, int32_t hd, float scale, float cap, const float* sinks) {
    if (nh >= 1 && nh <= kAttendMaxHeads && attend_fast_available(hd))
        attend_avx512(out, q, k, v, ld, kv_off, slots, m, nh, hd, scale, cap, sinks);
    else
        attend_ref(out, q, k, v, ld, kv_off, slots, m, nh, hd, scale, cap, sinks);
}

}  // namespace speculum::kernels
