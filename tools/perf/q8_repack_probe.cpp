// Would a repacked Q8_0 layout make the batched (verification) pass cheaper? A measured experiment, not shipped code:
// docs/performance.md ("Session 5") cites it. It times the shipped gemm_q8act against a prototype that uses one
// weight block per 32-bit lane, so that 8 vpdpbusd per 8 blocks share one scale multiply and one FMA (2.5 pipe
// cycles per 4 blocks and vector instead of 3), over one Q8_0 matrix in huge pages, single thread, alternating runs.
//   g++ -O3 -std=c++20 -I. kernels/*.cpp tools/perf/q8_repack_probe.cpp -o /tmp/q8_repack_probe -lopenblas
//   /tmp/q8_repack_probe [ROWS=24576] [RUNS=21]
// Prototype layout, per row (same size and pitch as the Q8_0 row): cols bytes of quants, then the f16 scales. In
// group g of 8 blocks, byte 32 k + 4 j + i is element 4 k + i of block j, stored + 128 (vpdpbusd's unsigned side).
// Activations use the matching layout (offset -128 * sum per block cancels the + 128, as in the shipped kernel).
// Needs AVX-512 VNNI; cols must be a multiple of 256. Checks the prototype against gemm_q8act_ref.
#include "kernels/gemv.h"
#include "kernels/quant_blocks.h"

#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

using namespace speculum::kernels;

#define VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))

namespace {

constexpr int64_t kCols = 2048, kGroup = 256, kPrefetchRows = 8;

struct ActGroup {  // 8 activation blocks in the prototype layout
    int8_t q[256];
    int32_t off[8];
    float d[8];
};

int64_t row_pitch(int64_t cols) { return cols / 32 * 34; }

void repack(uint8_t* dst, const uint8_t* src, int64_t rows, int64_t cols) {
    const int64_t pitch = row_pitch(cols);
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t b = 0; b < cols / 32; ++b) {
            const uint8_t* blk = src + r * pitch + b * 34;
            uint8_t* q         = dst + r * pitch + b / 8 * kGroup;
            std::memcpy(dst + r * pitch + cols + 2 * b, blk, 2);
            for (int e = 0; e < 32; ++e)
                q[32 * (e / 4) + 4 * (b % 8) + e % 4] = static_cast<uint8_t>(static_cast<int8_t>(blk[2 + e]) + 128);
        }
}

void quantize(ActGroup* out, const float* x, int64_t n, int64_t cols) {
    for (int64_t v = 0; v < n; ++v)
        for (int64_t b = 0; b < cols / 32; ++b) {
            ActGroup& a     = out[v * (cols / kGroup) + b / 8];
            const float* xb = x + v * cols + b * 32;
            float amax      = 0.0f;
            for (int e = 0; e < 32; ++e) amax = std::max(amax, std::fabs(xb[e]));
            const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
            int32_t sum = 0;
            for (int e = 0; e < 32; ++e) {
                const int q = static_cast<int>(std::nearbyint(xb[e] * id));
                a.q[32 * (e / 4) + 4 * (b % 8) + e % 4] = static_cast<int8_t>(q);
                sum += q;
            }
            a.off[b % 8] = -128 * sum;
            a.d[b % 8]   = d;
        }
}

// R rows x NV vectors; PF: prefetch the rows kPrefetchRows ahead into L2.
template <int R, int NV, bool PF>
VNNI __attribute__((noinline)) void tile(float* y, int64_t ldy, const uint8_t* w, int64_t pitch,
                                         const ActGroup* const* xv, int64_t ng) {
    __m256 acc[R][NV];
    for (int r = 0; r < R; ++r)
        for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_setzero_ps();
    for (int64_t g = 0; g < ng; ++g) {
        if constexpr (PF) {
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
                for (int o = 0; o < kGroup; o += 64)
                    _mm_prefetch(reinterpret_cast<const char*>(w + (kPrefetchRows + r) * pitch + g * kGroup + o),
                                 _MM_HINT_T1);
            if (g == 0)  // the scales at the rows' ends
                for (int r = 0; r < R; ++r)
                    for (int64_t o = 0; o < ng * 16; o += 64)
                        _mm_prefetch(reinterpret_cast<const char*>(w + (kPrefetchRows + r) * pitch + ng * kGroup + o),
                                     _MM_HINT_T1);
        }
        __m256i dot[R][NV];
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) {
            const __m256i off = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xv[v][g].off));
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) dot[r][v] = off;
        }
#pragma GCC unroll 8
        for (int k = 0; k < 8; ++k) {
            __m256i wk[R];
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r)
                wk[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + r * pitch + g * kGroup + 32 * k));
#pragma GCC unroll 8
            for (int v = 0; v < NV; ++v) {
                const __m256i xk = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xv[v][g].q + 32 * k));
#pragma GCC unroll 8
                for (int r = 0; r < R; ++r) dot[r][v] = _mm256_dpbusd_epi32(dot[r][v], wk[r], xk);
            }
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const __m256 dw = _mm256_cvtph_ps(
                _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + r * pitch + ng * kGroup + g * 16)));
#pragma GCC unroll 8
            for (int v = 0; v < NV; ++v)
                acc[r][v] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[r][v]),
                                            _mm256_mul_ps(dw, _mm256_loadu_ps(xv[v][g].d)), acc[r][v]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int v = 0; v < NV; ++v) {
            __m128 s = _mm_add_ps(_mm256_castps256_ps128(acc[r][v]), _mm256_extractf128_ps(acc[r][v], 1));
            s        = _mm_add_ps(s, _mm_movehl_ps(s, s));
            s        = _mm_add_ss(s, _mm_movehdup_ps(s));
            y[v * ldy + r] = _mm_cvtss_f32(s);
        }
}

// n = 1: 8-row tiles; otherwise 3 rows x 4 vectors (n a multiple of 4). rows: a multiple of 24.
VNNI void gemm_repacked(float* y, const uint8_t* w, const ActGroup* xq, int64_t n, int64_t rows, int64_t cols) {
    const int64_t ng = cols / kGroup, pitch = row_pitch(cols);
    if (n == 1) {
        const ActGroup* xv[1] = {xq};
        for (int64_t r = 0; r < rows; r += 8) tile<8, 1, true>(y + r, rows, w + r * pitch, pitch, xv, ng);
        return;
    }
    for (int64_t r = 0; r < rows; r += 3)
        for (int64_t i = 0; i < n; i += 4) {
            const ActGroup* xv[4] = {xq + i * ng, xq + (i + 1) * ng, xq + (i + 2) * ng, xq + (i + 3) * ng};
            if (i == 0)
                tile<3, 4, true>(y + r, rows, w + r * pitch, pitch, xv, ng);
            else
                tile<3, 4, false>(y + r + i * rows, rows, w + r * pitch, pitch, xv, ng);
        }
}

template <class F>
double time_ms(F&& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
    if (!__builtin_cpu_supports("avx512vnni") || !__builtin_cpu_supports("avx512vl")) {
        std::fprintf(stderr, "q8_repack_probe needs AVX-512 VNNI\n");
        return 1;
    }
    const int64_t rows = argc > 1 ? std::atoll(argv[1]) / 24 * 24 : 24576;
    const int runs     = argc > 2 ? std::atoi(argv[2]) : 21;
    if (rows <= 0 || runs <= 0) {
        std::fprintf(stderr, "usage: q8_repack_probe [ROWS >= 24] [RUNS >= 1]\n");
        return 2;
    }
    const size_t bytes = static_cast<size_t>(row_pitch(kCols) * rows);
    const size_t alloc = (bytes + (2u << 20) - 1) & ~size_t((2u << 20) - 1);
    auto* raw          = static_cast<uint8_t*>(std::aligned_alloc(2u << 20, alloc));
    auto* packed       = static_cast<uint8_t*>(std::aligned_alloc(2u << 20, alloc));
    madvise(raw, alloc, MADV_HUGEPAGE), madvise(packed, alloc, MADV_HUGEPAGE);
    std::mt19937 rng(1);
    for (size_t i = 0; i < bytes; ++i) raw[i] = static_cast<uint8_t>(rng());
    for (int64_t b = 0; b < rows * kCols / 32; ++b) {  // f16 scales near 2^-7
        const uint16_t h = static_cast<uint16_t>(0x2000 + (rng() & 0xff));
        std::memcpy(raw + b * 34, &h, 2);
    }
    repack(packed, raw, rows, kCols);
    std::vector<float> x(8 * kCols);
    std::normal_distribution<float> nd;
    for (float& v : x) v = nd(rng);
    std::vector<ActGroup> xa(8 * kCols / kGroup);
    quantize(xa.data(), x.data(), 8, kCols);
    std::vector<uint8_t> xq(q8act_bytes(8, kCols));
    quantize_q8act(xq.data(), x.data(), 8, kCols);
    std::vector<float> y(8 * rows), yr(8 * rows);

    std::printf("Q8_0 matrix %lld x %lld (%.1f MB), huge pages, 1 thread, %d alternating runs (ms)\n",
                static_cast<long long>(rows), static_cast<long long>(kCols), bytes / 1e6, runs);
    const int ns[3] = {1, 4, 8};
    std::vector<double> ts[2][3];
    for (int run = 0; run < runs; ++run)
        for (int k = 0; k < 3; ++k) {
            const int n = ns[k];
            ts[0][k].push_back(time_ms([&] { gemm_q8act(y.data(), rows, GgmlType::Q8_0, raw, xq.data(), n, kCols, 0, rows); }));
            ts[1][k].push_back(time_ms([&] { gemm_repacked(y.data(), packed, xa.data(), n, rows, kCols); }));
        }
    const char* names[2] = {"shipped gemm_q8act", "repacked prototype"};
    for (int s = 0; s < 2; ++s) {
        for (auto& t : ts[s]) std::sort(t.begin(), t.end());
        std::printf("%-20s", names[s]);
        for (int k = 0; k < 3; ++k)
            std::printf("  n=%d min %.3f med %.3f (%.2fx n=1)", ns[k], ts[s][k][0], ts[s][k][runs / 2],
                        ts[s][k][0] / ts[s][0][0]);
        std::printf("\n");
    }
    gemm_repacked(y.data(), packed, xa.data(), 8, rows, kCols);
    gemm_q8act_ref(yr.data(), rows, GgmlType::Q8_0, raw, xq.data(), 8, kCols, 0, rows);
    double worst = 0.0;
    for (int64_t i = 0; i < 8 * rows; ++i) worst = std::max(worst, std::fabs(y[i] - yr[i]) / (1e-2 + std::fabs(yr[i])));
    std::printf("prototype vs gemm_q8act_ref (n = 8): max relative difference %.2g\n", worst);
    std::free(raw), std::free(packed);
    return worst < 1e-3 ? 0 : 1;
}
