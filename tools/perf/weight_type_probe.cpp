// Single-thread GEMV time per weight of each weight type on one 4096 x 4096 matrix stream (> 256 MiB in all), with
// f32 activations (gemv) and, where the type has one, the int8-activation kernel (gemm_q8act). Random bytes: the
// timing does not depend on the values. A development probe, not built by CMake (docs/performance.md cites it):
//   g++ -O2 -DNDEBUG -std=c++20 -I. tools/perf/weight_type_probe.cpp build/kernels/libspeculum_kernels.a \
//       -lopenblas -pthread -o /tmp/weight_type_probe && /tmp/weight_type_probe
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>
#include "kernels/fp16.h"
#include "kernels/gemv.h"
#include "kernels/quant_blocks.h"
using namespace speculum::kernels;
static double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
int main() {
    const int64_t rows = 4096, cols = 4096;
    std::mt19937 rng(1);
    std::vector<float> x(cols), y(rows);
    for (auto& v : x) v = float(rng() % 1000) / 1000.0f - 0.5f;
    for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::IQ4_NL, GgmlType::Q2_K,
                       GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ4_XS}) {
        const uint64_t rb = ggml_row_size(t, cols);
        const int nmat    = int((256ull << 20) / (rb * rows)) + 1;
        std::vector<std::vector<uint8_t>> m(nmat, std::vector<uint8_t>(rb * rows));
        for (auto& mm : m)
            for (auto& b : mm) b = uint8_t(rng());
        for (int rep = 0; rep < 2; ++rep) {
            double t0 = now();
            for (int k = 0; k < 3; ++k)
                for (auto& mm : m) gemv(y.data(), t, mm.data(), x.data(), cols, 0, rows);
            double tf = (now() - t0) / (3.0 * nmat * rows * cols);
            double tq = 0;
            if (gemm_prefers_q8act(t)) {
                std::vector<uint8_t> xq(q8act_bytes(1, cols));
                quantize_q8act(xq.data(), x.data(), 1, cols);
                t0 = now();
                for (int k = 0; k < 3; ++k)
                    for (auto& mm : m) gemm_q8act(y.data(), rows, t, mm.data(), xq.data(), 1, cols, 0, rows);
                tq = (now() - t0) / (3.0 * nmat * rows * cols);
            }
            if (rep)
                printf("%-7s f32 activations %.3f ns/weight (%.1f GB/s)   int8 activations %s\n",
                       ggml_type_traits(t)->name, tf * 1e9, double(rb) / cols / tf / 1e9,
                       tq > 0 ? (std::to_string(tq * 1e9).substr(0, 5) + " ns/weight").c_str() : "-");
        }
    }
}
