// int8_peak_burst: 12 independent vpdpbusd chains (more than the latency times the ports), checksummed into a
// volatile so the compiler keeps them.
#include "kernels/peak.h"

#include "kernels/gemv.h"
#include "kernels/vnni_common.h"

namespace speculum::kernels {

namespace {

volatile int32_t g_sink;

SPECULUM_VNNI int64_t burst_avx512(int64_t rounds) {
    constexpr int kChains = 12;
    __m512i acc[kChains];
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_epi32(i);
    const __m512i a = _mm512_set1_epi8(1), b = _mm512_set1_epi8(3);
    for (int64_t r = 0; r < rounds; ++r) {
#pragma GCC unroll 12
        for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], a, b);
        __asm__ volatile("" : "+v"(acc[0]), "+v"(acc[6]));  // keep the loop: the chains stay live
    }
    __m512i s = acc[0];
    for (int i = 1; i < kChains; ++i) s = _mm512_add_epi32(s, acc[i]);
    // The checksum wraps, as the chains do: summed as unsigned (the intrinsic's reduction adds signed ints, which
    // UBSan rightly calls an overflow after many rounds).
    alignas(64) uint32_t lanes[16];
    _mm512_store_si512(lanes, s);
    uint32_t sum = 0;
    for (const uint32_t x : lanes) sum += x;
    g_sink = int32_t(sum);
    return rounds * kChains * 64;
}

}  // namespace

int64_t int8_peak_burst(int64_t rounds) {
    if (rounds <= 0 || kernel_isa() < KernelIsa::avx512) return 0;
    return burst_avx512(rounds);
}

}  // namespace speculum::kernels
