// Which execution resources the Q8_0 x int8 GEMM's instructions share on this CPU: timed loops of independent
// vpdpbusd, vfmadd231ps, vmulps and vcvtdq2ps (256- and 512-bit) alone and mixed. docs/performance.md cites it.
//   g++ -O2 -mavx512f tools/perf/vnni_ports.cpp -o /tmp/vnni_ports && /tmp/vnni_ports
// A mix that takes as long as the sum of its parts competes for the same pipes; one that takes as long as its
// slowest part runs beside it. Needs AVX-512 VNNI (it faults with SIGILL elsewhere).
#include <chrono>
#include <cstdio>

#define CLOBBERS                                                                                               \
    "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", \
        "xmm13", "xmm14", "xmm15"
#define TIME(name, code)                                                                                           \
    {                                                                                                              \
        const auto t0 = std::chrono::steady_clock::now();                                                          \
        for (long i = 0; i < kIters; ++i) __asm__ volatile(code ::: CLOBBERS, "xmm16", "xmm17", "xmm18", "xmm19"); \
        const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();             \
        std::printf("%-36s %.3f ns/iter\n", name, t / kIters * 1e9);                                               \
    }
// Eight independent accumulators (chains) each, so throughput rather than latency binds.
#define VNNI_Z                                                                                              \
    "vpdpbusd %%zmm30,%%zmm31,%%zmm0\n vpdpbusd %%zmm30,%%zmm31,%%zmm1\n vpdpbusd %%zmm30,%%zmm31,%%zmm2\n" \
    "vpdpbusd %%zmm30,%%zmm31,%%zmm3\n vpdpbusd %%zmm30,%%zmm31,%%zmm4\n vpdpbusd %%zmm30,%%zmm31,%%zmm5\n" \
    "vpdpbusd %%zmm30,%%zmm31,%%zmm6\n vpdpbusd %%zmm30,%%zmm31,%%zmm7\n"
#define VNNI_Y                                                                                              \
    "vpdpbusd %%ymm30,%%ymm31,%%ymm0\n vpdpbusd %%ymm30,%%ymm31,%%ymm1\n vpdpbusd %%ymm30,%%ymm31,%%ymm2\n" \
    "vpdpbusd %%ymm30,%%ymm31,%%ymm3\n vpdpbusd %%ymm30,%%ymm31,%%ymm4\n vpdpbusd %%ymm30,%%ymm31,%%ymm5\n" \
    "vpdpbusd %%ymm30,%%ymm31,%%ymm6\n vpdpbusd %%ymm30,%%ymm31,%%ymm7\n"
#define FMA_Y                                                                   \
    "vfmadd231ps %%ymm30,%%ymm29,%%ymm8\n vfmadd231ps %%ymm30,%%ymm29,%%ymm9\n" \
    "vfmadd231ps %%ymm30,%%ymm29,%%ymm10\n vfmadd231ps %%ymm30,%%ymm29,%%ymm11\n"
#define FMA_Z                                                                   \
    "vfmadd231ps %%zmm30,%%zmm29,%%zmm8\n vfmadd231ps %%zmm30,%%zmm29,%%zmm9\n" \
    "vfmadd231ps %%zmm30,%%zmm29,%%zmm10\n vfmadd231ps %%zmm30,%%zmm29,%%zmm11\n"
#define MUL_Y                                                           \
    "vmulps %%ymm30,%%ymm29,%%ymm12\n vmulps %%ymm30,%%ymm29,%%ymm13\n" \
    "vmulps %%ymm30,%%ymm29,%%ymm14\n vmulps %%ymm30,%%ymm29,%%ymm15\n"
#define CVT_Y \
    "vcvtdq2ps %%ymm28,%%ymm16\n vcvtdq2ps %%ymm28,%%ymm17\n vcvtdq2ps %%ymm28,%%ymm18\n vcvtdq2ps %%ymm28,%%ymm19\n"

int main() {
    constexpr long kIters = 100000000;
    TIME("8 vpdpbusd ymm", VNNI_Y)
    TIME("8 vpdpbusd zmm", VNNI_Z)
    TIME("8 vpdpbusd ymm + 4 fma ymm", VNNI_Y FMA_Y)
    TIME("8 vpdpbusd ymm + 4 mul ymm", VNNI_Y MUL_Y)
    TIME("8 vpdpbusd ymm + 4 cvt ymm", VNNI_Y CVT_Y)
    TIME("8 vpdpbusd ymm + 4 fma, 4 mul, 4 cvt", VNNI_Y FMA_Y MUL_Y CVT_Y)
    TIME("8 vpdpbusd zmm + 4 fma zmm", VNNI_Z FMA_Z)
    return 0;
}
