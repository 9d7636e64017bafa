// Times the batched matrix kernels a verification pass runs, one thread, for n = 1..8 activation vectors: the BF16
// kernel (gemm_bf16act) and the int8-activation kernel (gemm_q8act) of a few weight types, on 1024 columns of
// 256 rows (about 0.1-0.5 MiB, cache-resident: the compute) and of 65536 rows (read from DRAM). Microseconds per call,
// the median of 5 timed batches. Random weights; only the timing matters. docs/performance-notebook.md ("Session 25")
// cites it; build it against the kernels library of the commit you want to time:
//   cmake --build build --target speculum_kernels && g++ -O2 -DNDEBUG -std=c++20 -I. \
//       tools/perf/batch_kernel_bench.cpp build/kernels/libspeculum_kernels.a -lopenblas -o /tmp/batch_kernel_bench
//   /tmp/batch_kernel_bench
#include "kernels/fp16.h"
#include "kernels/gemm_bf16.h"
#include "kernels/gemv.h"
#include "kernels/quant_blocks.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

using namespace speculum::kernels;

namespace {
template <class Fn>
double median_us(int reps, Fn&& fn) {
    fn();  // warm
    std::vector<double> t;
    for (int b = 0; b < 5; ++b) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int r = 0; r < reps; ++r) fn();
        t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / reps);
    }
    std::nth_element(t.begin(), t.begin() + 2, t.end());
    return t[2];
}
}  // namespace

int main() {
    const int64_t cols = 1024;
    const int ns[]     = {1, 2, 3, 4, 5, 6, 8};
    std::mt19937 rng(1);
    std::vector<float> x(8 * cols);
    for (auto& v : x) v = float(rng() % 1000) / 1000.0f - 0.5f;
    std::printf("%-6s %6s", "type", "rows");
    for (int n : ns) std::printf("  %8s", ("n=" + std::to_string(n)).c_str());
    std::printf("   (us per call, 1 thread, %lld columns)\n", (long long)cols);
    if (gemm_bf16act_available()) {
        std::vector<uint16_t> xb(8 * cols);
        round_bf16act(xb.data(), x.data(), 8, cols);
        for (int64_t rows : {256, 65536}) {
            std::vector<uint16_t> w(size_t(rows * cols));
            for (auto& v : w) v = f32_to_bf16(float(rng() % 1000) / 1000.0f - 0.5f);
            std::vector<float> y(size_t(8 * rows));
            std::printf("%-6s %6lld", "bf16", (long long)rows);
            for (int n : ns)
                std::printf("  %8.1f", median_us(rows == 256 ? 2000 : 10, [&] {
                                gemm_bf16act(y.data(), rows, w.data(), xb.data(), n, cols, 0, rows);
                            }));
            std::printf("\n");
        }
    }
    std::vector<uint8_t> xq(size_t(q8act_bytes(8, cols)));
    quantize_q8act(xq.data(), x.data(), 8, cols);
    for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_K, GgmlType::Q2_K, GgmlType::Q6_K}) {
        for (int64_t rows : {256, 65536}) {
            const uint64_t rb = ggml_row_size(t, uint64_t(cols));
            std::vector<uint8_t> w(size_t(rb * uint64_t(rows)));
            for (auto& b : w) b = uint8_t(rng() & 0x3f);  // small bytes: finite f16 scales
            std::vector<float> y(size_t(8 * rows));
            std::printf("%-6s %6lld", ggml_type_traits(t)->name, (long long)rows);
            for (int n : ns)
                std::printf("  %8.1f", median_us(rows == 256 ? 2000 : 10, [&] {
                                gemm_q8act(y.data(), rows, t, w.data(), xq.data(), n, cols, 0, rows);
                            }));
            std::printf("\n");
        }
    }
    return 0;
}
