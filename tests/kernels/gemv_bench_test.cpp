// Throughput figures of the fast GEMV/GEMM per weight type (4096 x 4096, single thread). Each timed call uses
// the next of several copies of the matrix (>= 96 MB in all) so the weights come from DRAM, not the 32 MB L3.
// DISABLED_ by default: not a pass/fail test. Run with
//   build/tests/speculum_kernels_tests --gtest_also_run_disabled_tests --gtest_filter='*GemvBench*'
#include "kernels/gemv.h"

#include "kernels/cpu_info.h"
#include "kernels/quantize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <thread>
#include <cstdio>
#include <random>
#include <vector>

using namespace speculum::kernels;

namespace {

// CPU time of this thread (not wall time): the build machines are shared, and time spent descheduled is not
// the kernel's. Memory-bandwidth contention from other processes still shows up.
double thread_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

template <class Fn>
double best_seconds(int reps, Fn&& fn) {
    double best = 1e30;
    for (int i = 0; i < reps; ++i) {
        const double t0 = thread_seconds();
        fn();
        best = std::min(best, thread_seconds() - t0);
    }
    return best;
}

// Wall time of fn(r0, r1) run on two threads, each over half of the rows (the decode setting on 2 cores).
// Each repetition takes the next matrix copy from next_mat().
template <class Next, class Fn>
double best_wall_two_threads(int reps, int64_t rows, Next&& next_mat, Fn&& fn) {
    double best = 1e30;
    for (int i = 0; i < reps; ++i) {
        const uint8_t* w = next_mat();
        const auto t0    = std::chrono::steady_clock::now();
        std::thread other([&] { fn(w, rows / 2, rows); });
        fn(w, 0, rows / 2);
        other.join();
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
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
    std::printf("cpu: %s; times are best-of thread CPU time\n", cpu_features_string().c_str());
    std::printf("%-6s %7s %8s %7s %11s %12s %9s | %12s %8s %11s\n", "type", "MB", "gemv ms", "GB/s",
                "gemm8/gemv", "gemm64/gemv", "ref GB/s", "2thr gemv ms", "2thr GB/s", "gemm8/gemv");
    for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0,
                       GgmlType::MXFP4, GgmlType::Q4_K, GgmlType::Q6_K}) {
        if (!kernels_support(t)) continue;
        const uint64_t rb = ggml_row_size(t, cols);
        std::vector<uint8_t> w(rows * rb);
        const int copies = static_cast<int>(std::max<uint64_t>(2, 96'000'000 / w.size() + 1));
        std::vector<std::vector<uint8_t>> mats;
        for (int64_t r = 0; r < rows; ++r) {
            for (auto& v : row) v = dist(rng);
            // K-quants have no quantizer here: any byte pattern is a valid block, so fill randomly
            if (t == GgmlType::Q4_K || t == GgmlType::Q6_K) {
                for (uint64_t b = 0; b < rb; ++b) w[r * rb + b] = static_cast<uint8_t>(rng() & 0x3b);
            } else {
                quantize_row_ref(w.data() + r * rb, t, row.data(), cols);
            }
        }
        for (int c = 0; c < copies; ++c) mats.push_back(w);
        int next         = 0;
        auto mat         = [&] { return mats[next++ % copies].data(); };
        const double gb  = static_cast<double>(w.size()) / 1e9;
        const double t1  = best_seconds(2 * copies, [&] { gemv(y.data(), t, mat(), x.data(), cols, 0, rows); });
        const double t8  = best_seconds(copies, [&] { gemm(y.data(), rows, t, mat(), x.data(), 8, cols, 0, rows); });
        const double t64 = best_seconds(2, [&] { gemm(y.data(), rows, t, mat(), x.data(), 64, cols, 0, rows); });
        const double tr  = best_seconds(1, [&] { gemv_ref(y.data(), t, mat(), x.data(), cols, 0, rows); });
        const double w1 = best_wall_two_threads(2 * copies, rows, mat, [&](const uint8_t* m, int64_t a, int64_t b) {
            gemv(y.data(), t, m, x.data(), cols, a, b);
        });
        const double w8 = best_wall_two_threads(copies, rows, mat, [&](const uint8_t* m, int64_t a, int64_t b) {
            gemm(y.data(), rows, t, m, x.data(), 8, cols, a, b);
        });
        std::printf("%-6s %7.1f %8.3f %7.2f %11.2f %12.2f %9.2f | %12.3f %8.2f %11.2f\n", ggml_type_traits(t)->name,
                    gb * 1e3, t1 * 1e3, gb / t1, t8 / t1, t64 / t1, gb / tr, w1 * 1e3, gb / w1, w8 / w1);
    }
}
