// Times the shipped int8 kernels on one Q8_0 matrix in its file layout (gemm_q8act) against the same matrix repacked
// to the in-memory Q8_0_X8 layout (gemm_q8act_x8), single thread, alternating calls, the matrix in huge pages and
// called in row chunks as core's parallel_for hands them out. docs/performance-notebook.md ("Session 5", "Session 6")
// cites it.
//   g++ -O3 -DNDEBUG -std=c++20 -I. kernels/*.cpp tools/perf/q8_repack_probe.cpp -o /tmp/q8_repack_probe -lopenblas
//   /tmp/q8_repack_probe [ROWS=24576] [RUNS=15] [COLS=2048]      (COLS a multiple of 256)
// Prints the fastest call of each kernel for n = 1, 4 and 8 vectors, and exits non-zero unless both kernels agree
// with gemm_q8act_ref within 1e-4 of the largest |output|.
#include "kernels/gemv.h"

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

namespace {

template <class F>
double time_ms(F&& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

uint8_t* huge_alloc(size_t bytes) {
    const size_t alloc = (bytes + (2u << 20) - 1) & ~size_t((2u << 20) - 1);
    auto* p            = static_cast<uint8_t*>(std::aligned_alloc(2u << 20, alloc));
    if (p) madvise(p, alloc, MADV_HUGEPAGE);
    return p;
}

}  // namespace

int main(int argc, char** argv) {
    const int64_t rows = argc > 1 ? std::atoll(argv[1]) : 24576;
    const int runs     = argc > 2 ? std::atoi(argv[2]) : 15;
    const int64_t cols = argc > 3 ? std::atoll(argv[3]) : 2048;
    if (rows < 1 || runs < 1 || cols < 256 || cols % 256 != 0) {
        std::fprintf(stderr, "usage: q8_repack_probe [ROWS >= 1] [RUNS >= 1] [COLS: a multiple of 256]\n");
        return 2;
    }
    const size_t bytes = static_cast<size_t>(rows) * ggml_row_size(GgmlType::Q8_0, cols);
    uint8_t *raw = huge_alloc(bytes), *packed = huge_alloc(bytes);
    if (!raw || !packed) return 1;
    std::mt19937 rng(1);
    for (size_t i = 0; i < bytes; ++i) raw[i] = static_cast<uint8_t>(rng());
    for (int64_t b = 0; b < rows * cols / 32; ++b) {  // f16 scales near 2^-7
        const uint16_t h = static_cast<uint16_t>(0x2000 + (rng() & 0xff));
        std::memcpy(raw + b * 34, &h, 2);
    }
    repack_q8_0_x8(packed, raw, rows, cols);
    std::vector<float> x(8 * cols);
    std::normal_distribution<float> nd;
    for (float& v : x) v = nd(rng);
    std::vector<uint8_t> xa(q8act_bytes(8, cols)), xb(q8act_x8_bytes(8, cols));
    quantize_q8act(xa.data(), x.data(), 8, cols);
    quantize_q8act_x8(xb.data(), x.data(), 8, cols);
    std::vector<float> y(8 * rows), yr(8 * rows);
    const int64_t row_bytes = static_cast<int64_t>(ggml_row_size(GgmlType::Q8_0, cols));
    // core's matmul grain (64 KiB of weights), in whole 8-row tiles as core hands rows to the int8 kernels
    const int64_t chunk = std::max<int64_t>(8, (64 << 10) / row_bytes / 8 * 8);

    std::printf(
        "Q8_0 matrix %lld x %lld (%.1f MB), huge pages, 1 thread, rows in chunks of %lld, %d alternating "
        "runs\n",
        static_cast<long long>(rows), static_cast<long long>(cols), bytes / 1e6, static_cast<long long>(chunk), runs);
    const int ns[3] = {1, 4, 8};
    std::vector<double> ts[2][3];
    for (int run = 0; run < runs; ++run)
        for (int k = 0; k < 3; ++k) {
            ts[0][k].push_back(time_ms([&] {
                for (int64_t r0 = 0; r0 < rows; r0 += chunk)
                    gemm_q8act(y.data(), rows, GgmlType::Q8_0, raw, xa.data(), ns[k], cols, r0,
                               std::min(rows, r0 + chunk));
            }));
            ts[1][k].push_back(time_ms([&] {
                for (int64_t r0 = 0; r0 < rows; r0 += chunk)
                    gemm_q8act_x8(y.data(), rows, packed, xb.data(), ns[k], cols, r0, std::min(rows, r0 + chunk));
            }));
        }
    const char* names[2] = {"q8_0 (gemm_q8act)", "q8_0_x8 (gemm_q8act_x8)"};
    for (int s = 0; s < 2; ++s) {
        for (auto& t : ts[s]) std::sort(t.begin(), t.end());
        std::printf("%-24s", names[s]);
        for (int k = 0; k < 3; ++k) std::printf("  n=%d %.3f ms", ns[k], ts[s][k][0]);
        std::printf("\n");
    }
    gemm_q8act_ref(yr.data(), rows, GgmlType::Q8_0, raw, xa.data(), 8, cols, 0, rows);
    // Differences are f32 summation order only (tests/kernels bound them per dot); here, relative to the largest
    // |output| so that outputs that nearly cancel do not dominate.
    double worst = 0.0, scale = 0.0;
    for (float v : yr) scale = std::max(scale, static_cast<double>(std::fabs(v)));
    for (int kernel = 0; kernel < 2; ++kernel) {
        if (kernel == 0)
            gemm_q8act(y.data(), rows, GgmlType::Q8_0, raw, xa.data(), 8, cols, 0, rows);
        else
            gemm_q8act_x8(y.data(), rows, packed, xb.data(), 8, cols, 0, rows);
        for (int64_t i = 0; i < 8 * rows; ++i) worst = std::max(worst, std::fabs(y[i] - yr[i]) / scale);
    }
    std::printf("both kernels vs gemm_q8act_ref (n = 8): max difference %.2g of the largest |output|\n", worst);
    std::free(raw), std::free(packed);
    return worst < 1e-4 ? 0 : 1;
}
