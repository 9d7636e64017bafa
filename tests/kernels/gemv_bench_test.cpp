// Throughput figures of the fast GEMV/GEMM per weight type (4096 x 4096, single thread). DISABLED_ by default:
// not a pass/fail test. Run with
//   build/tests/speculum_kernels_tests --gtest_also_run_disabled_tests --gtest_filter='*GemvBench*'
#include "kernels/gemv.h"

#include "kernels/cpu_info.h"
#include "kernels/quantize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

using namespace speculum::kernels;

namespace {

template <class Fn>
double best_seconds(int reps, Fn&& fn) {
    double best = 1e30;
    for (int i = 0; i < reps; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        fn();
        const auto t1 = std::chrono::steady_clock::now();
        best = std::min(best, std::chrono::duration<double>(t1 - t0).count());
    }
    return best;
}

}  // namespace

TEST(GemvBench, DISABLED_Throughput4096) {
    const int64_t rows = 4096, cols = 4096;
    std::mt19937 rng(1);
    std::normal_distribution<float> dist(0.0f, 0.02f);
    std::vector<float> row(cols), x(64 * cols), y(64 * rows);
    for (auto& v : x) v = dist(rng);
    std::printf("cpu: %s\n", cpu_features_string().c_str());
    std::printf("%-6s %10s %10s %10s %12s %12s %12s\n", "type", "MB", "gemv ms", "GB/s", "gemm8/gemv",
                "gemm64/gemv", "ref GB/s");
    for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0,
                       GgmlType::MXFP4, GgmlType::Q4_K, GgmlType::Q6_K}) {
        if (!kernels_support(t)) continue;
        const uint64_t rb = ggml_row_size(t, cols);
        std::vector<uint8_t> w(rows * rb);
        for (int64_t r = 0; r < rows; ++r) {
            for (auto& v : row) v = dist(rng);
            // K-quants have no quantizer here: any byte pattern is a valid block, so fill randomly
            if (t == GgmlType::Q4_K || t == GgmlType::Q6_K) {
                for (uint64_t b = 0; b < rb; ++b) w[r * rb + b] = static_cast<uint8_t>(rng() & 0x3b);
            } else {
                quantize_row_ref(w.data() + r * rb, t, row.data(), cols);
            }
        }
        const double gb  = static_cast<double>(w.size()) / 1e9;
        const double t1  = best_seconds(5, [&] { gemv(y.data(), t, w.data(), x.data(), cols, 0, rows); });
        const double t8  = best_seconds(3, [&] { gemm(y.data(), rows, t, w.data(), x.data(), 8, cols, 0, rows); });
        const double t64 = best_seconds(2, [&] { gemm(y.data(), rows, t, w.data(), x.data(), 64, cols, 0, rows); });
        const double tr  = best_seconds(1, [&] { gemv_ref(y.data(), t, w.data(), x.data(), cols, 0, rows); });
        std::printf("%-6s %10.1f %10.3f %10.2f %12.2f %12.2f %12.2f\n", ggml_type_traits(t)->name, gb * 1e3,
                    t1 * 1e3, gb / t1, t8 / t1, t64 / t1, gb / tr);
    }
}
