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
#include <cstdio>
#include <ctime>
#include <random>
#include <thread>
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
    std::vector<uint8_t> xq(q8act_bytes(64, cols));
    std::printf("cpu: %s; times are best-of thread CPU time; gemmN = time of one N-vector call / one gemv\n",
                cpu_features_string().c_str());
    std::printf("%-12s %7s %8s %7s %7s %7s %7s %7s %7s | %12s %8s %11s\n", "type@isa", "MB", "gemv ms", "GB/s", "gemm2",
                "gemm4", "gemm8", "gemm16", "gemm64", "2thr gemv ms", "2thr GB/s", "gemm8/gemv");
    for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::MXFP4,
                       GgmlType::Q4_K, GgmlType::Q6_K}) {
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
        int next        = 0;
        auto mat        = [&] { return mats[next++ % copies].data(); };
        const double gb = static_cast<double>(w.size()) / 1e9;
        // Each level this CPU has, then (Q8_0 on AVX-512) the quantized-activation path, labelled "q8act".
        std::vector<std::pair<KernelIsa, bool>> variants;
        for (KernelIsa isa : {KernelIsa::avx2, KernelIsa::avx512})
            if (best_kernel_isa() >= isa) variants.push_back({isa, false});
        if (t == GgmlType::Q8_0 && best_kernel_isa() >= KernelIsa::avx512)
            variants.push_back({KernelIsa::avx512, true});
        for (auto [isa, q8] : variants) {
            set_kernel_isa_cap(isa);
            auto run = [&](const uint8_t* m, int64_t n, int64_t a, int64_t b) {
                if (q8) {
                    quantize_q8act(xq.data(), x.data(), n, cols);  // per call, as core does once per matmul
                    gemm_q8act(y.data(), rows, t, m, xq.data(), n, cols, a, b);
                } else {
                    gemm(y.data(), rows, t, m, x.data(), n, cols, a, b);
                }
            };
            const double t1 = best_seconds(2 * copies, [&] { run(mat(), 1, 0, rows); });
            double tn[5];
            const int64_t ns[5] = {2, 4, 8, 16, 64};
            for (int k = 0; k < 5; ++k)
                tn[k] = best_seconds(ns[k] > 16 ? 2 : copies, [&] { run(mat(), ns[k], 0, rows); });
            const double w1 = best_wall_two_threads(2 * copies, rows, mat,
                                                    [&](const uint8_t* m, int64_t a, int64_t b) { run(m, 1, a, b); });
            const double w8 = best_wall_two_threads(copies, rows, mat,
                                                    [&](const uint8_t* m, int64_t a, int64_t b) { run(m, 8, a, b); });
            const std::string label =
                std::string(ggml_type_traits(t)->name) + "@" + (q8 ? "q8act" : kernel_isa_name(isa));
            std::printf("%-12s %7.1f %8.3f %7.2f %7.2f %7.2f %7.2f %7.2f %7.2f | %12.3f %8.2f %11.2f\n", label.c_str(),
                        gb * 1e3, t1 * 1e3, gb / t1, tn[0] / t1, tn[1] / t1, tn[2] / t1, tn[3] / t1, tn[4] / t1,
                        w1 * 1e3, gb / w1, w8 / w1);
        }
        set_kernel_isa_cap(KernelIsa::avx512);
    }
}
