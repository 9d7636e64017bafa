// Microbenchmarks for the "this machine" hardware profile (see microbench.h). OpenBLAS thread counts are set
// explicitly around each BLAS measurement and restored afterwards.
#include "core/hw/microbench.h"

#include "core/hw/large_pages.h"
#include "core/parallel.h"
#include "kernels/peak.h"

#include <cblas.h>
#include <oneapi/tbb/task_arena.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <numeric>
#include <vector>

namespace speculum::hw {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Restores OpenBLAS's thread count on scope exit.
struct BlasThreads {
    int saved;
    explicit BlasThreads(int n) : saved(openblas_get_num_threads()) { openblas_set_num_threads(n); }
    ~BlasThreads() { openblas_set_num_threads(saved); }
};

int all_threads(int requested) {
    return requested > 0 ? requested : std::max(1, tbb::this_task_arena::max_concurrency());
}

// Sum of a float range with 8 independent accumulators (keeps the loads, not the adds, the bottleneck).
float sum_range(const float* x, int64_t n) {
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i    = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; ++l) acc[l] += x[i + l];
    for (; i < n; ++i) acc[0] += x[i];
    return std::accumulate(acc, acc + 8, 0.0f);
}

volatile float g_sink = 0;  // defeats dead-code elimination of benchmark results

}  // namespace

double bench_read_bandwidth(size_t bytes, int threads, int reps, const CancelToken& cancel, const ProgressFn& progress,
                            bool large_pages) {
    int64_t n = int64_t(bytes / sizeof(float));
    LargePageBuffer mem(uint64_t(n) * sizeof(float), large_pages);
    auto* buf = reinterpret_cast<float*>(mem.data());
    threads   = std::max(1, threads);
    tbb::task_arena arena(threads);
    // First touch in parallel so pages are spread like the reads.
    arena.execute(
        [&] { parallel_for(0, n, 1 << 16, [&](int64_t lo, int64_t hi) { std::fill(buf + lo, buf + hi, 1.0f); }); });
    double best = 0;
    for (int r = 0; r < reps; ++r) {
        cancel.throw_if_cancelled();
        auto t0 = Clock::now();
        if (threads == 1) {
            g_sink = g_sink + sum_range(buf, n);
        } else {
            std::vector<float> partial(size_t(threads) * 16, 0.0f);
            int64_t chunk = (n + threads - 1) / threads;
            arena.execute([&] {
                parallel_for(0, threads, 1, [&](int64_t lo, int64_t hi) {
                    for (int64_t t = lo; t < hi; ++t) {
                        int64_t b = t * chunk, e = std::min(n, b + chunk);
                        if (b < e) partial[size_t(t) * 16] = sum_range(buf + b, e - b);
                    }
                });
            });
            g_sink = g_sink + std::accumulate(partial.begin(), partial.end(), 0.0f);
        }
        best = std::max(best, double(n) * sizeof(float) / seconds_since(t0) / 1e9);
        report(progress, double(r + 1) / reps, "read bandwidth, " + std::to_string(threads) + " thread(s)");
    }
    return best;
}

double bench_int8_peak(int threads, int reps, const CancelToken& cancel, const ProgressFn& progress) {
    constexpr int64_t kRounds = 2'000'000;  // 1.5 G multiply-accumulates per thread: a few ms at tens of GMAC/s
    if (kernels::int8_peak_burst(1) == 0) return 0.0;
    threads = std::max(1, threads);
    tbb::task_arena arena(threads);
    double best = 0;
    for (int r = 0; r < reps; ++r) {
        cancel.throw_if_cancelled();
        std::atomic<int64_t> macs{0};
        auto t0 = Clock::now();
        arena.execute([&] {
            parallel_for(0, threads, 1, [&](int64_t lo, int64_t hi) {
                for (int64_t t = lo; t < hi; ++t) macs += kernels::int8_peak_burst(kRounds);
            });
        });
        best = std::max(best, double(macs.load()) / seconds_since(t0) / 1e9);
        report(progress, double(r + 1) / reps, "int8 peak, " + std::to_string(threads) + " thread(s)");
    }
    return best;
}

double bench_sgemv(int n, int threads, int reps, const CancelToken& cancel, const ProgressFn& progress) {
    std::vector<float> a(size_t(n) * n, 0.5f), x(size_t(n), 1.0f), y(size_t(n), 0.0f);
    BlasThreads bt(std::max(1, threads));
    cblas_sgemv(CblasRowMajor, CblasNoTrans, n, n, 1.0f, a.data(), n, x.data(), 1, 0.0f, y.data(), 1);  // warm-up
    double best = 0;
    for (int r = 0; r < reps; ++r) {
        cancel.throw_if_cancelled();
        auto t0 = Clock::now();
        cblas_sgemv(CblasRowMajor, CblasNoTrans, n, n, 1.0f, a.data(), n, x.data(), 1, 0.0f, y.data(), 1);
        best = std::max(best, 2.0 * n * n / seconds_since(t0) / 1e9);
        report(progress, double(r + 1) / reps, "sgemv, " + std::to_string(threads) + " thread(s)");
    }
    g_sink = g_sink + y[0];
    return best;
}

double bench_sgemm(int n, int threads, int reps, const CancelToken& cancel, const ProgressFn& progress) {
    std::vector<float> a(size_t(n) * n, 0.5f), b(size_t(n) * n, 0.25f), c(size_t(n) * n, 0.0f);
    BlasThreads bt(std::max(1, threads));
    auto gemm = [&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(),
                    n);
    };
    gemm();  // warm-up
    double best = 0;
    for (int r = 0; r < reps; ++r) {
        cancel.throw_if_cancelled();
        auto t0 = Clock::now();
        gemm();
        best = std::max(best, 2.0 * double(n) * n * n / seconds_since(t0) / 1e9);
        report(progress, double(r + 1) / reps, "sgemm, " + std::to_string(threads) + " thread(s)");
    }
    g_sink = g_sink + c[0];
    return best;
}

double bench_call_overhead_us(int threads, int reps, const CancelToken& cancel, const ProgressFn& progress) {
    constexpr int kTiny = 16;
    std::vector<float> a(kTiny * kTiny, 1.0f), x(kTiny, 1.0f), y(kTiny, 0.0f);
    BlasThreads bt(std::max(1, threads));
    tbb::task_arena arena(std::max(1, threads));
    std::vector<double> samples;
    for (int r = 0; r < reps; ++r) {
        if (r % 64 == 0) cancel.throw_if_cancelled();
        auto t0 = Clock::now();
        cblas_sgemv(CblasRowMajor, CblasNoTrans, kTiny, kTiny, 1.0f, a.data(), kTiny, x.data(), 1, 0.0f, y.data(), 1);
        arena.execute(
            [&] { parallel_for(0, std::max(1, threads), 1, [&](int64_t, int64_t) { g_sink = g_sink + 1; }); });
        samples.push_back(seconds_since(t0) * 1e6);
    }
    report(progress, 1.0, "call overhead");
    std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
    return samples[samples.size() / 2];
}

MicrobenchResult run_microbenchmarks(const MicrobenchOptions& opt, const CancelToken& cancel,
                                     const ProgressFn& progress) {
    auto t0 = Clock::now();
    MicrobenchResult r;
    r.threads = all_threads(opt.threads);
    // Buffers: 256 MiB (quick: 64 MiB) for bandwidth, a 4096² (quick: 2048²) SGEMV matrix = 64 MiB (16 MiB),
    // both well above a desktop LLC; SGEMM 1024³ (quick: 384³).
    const size_t bw_bytes = opt.quick ? (64u << 20) : (256u << 20);
    const int gemv_n = opt.quick ? 2048 : 4096, gemm_n = opt.quick ? 384 : 1024;
    const int reps = opt.quick ? 2 : 5;
    double done    = 0;
    auto sub       = [&](double weight) {
        double base = done;
        done += weight;
        return ProgressFn([&progress, base, weight](double f, const std::string& what) {
            report(progress, base + weight * f, what);
        });
    };
    r.read_bw_1t_gbps  = bench_read_bandwidth(bw_bytes, 1, reps, cancel, sub(0.2));
    r.read_bw_all_gbps = bench_read_bandwidth(bw_bytes, r.threads, reps, cancel, sub(0.2));
    r.sgemv_1t_gflops  = bench_sgemv(gemv_n, 1, reps, cancel, sub(0.1));
    r.sgemv_all_gflops = bench_sgemv(gemv_n, r.threads, reps, cancel, sub(0.1));
    r.sgemm_1t_gflops  = bench_sgemm(gemm_n, 1, reps, cancel, sub(0.15));
    r.sgemm_all_gflops = bench_sgemm(gemm_n, r.threads, reps, cancel, sub(0.15));
    r.call_overhead_us = bench_call_overhead_us(r.threads, opt.quick ? 200 : 2000, cancel, sub(0.1));
    r.seconds          = seconds_since(t0);
    return r;
}

HardwareProfile profile_from_microbench(const MicrobenchResult& r, const std::string& id) {
    HardwareProfile p;
    p.id               = id;
    p.name             = "this machine (" + std::to_string(r.threads) + " threads, measured)";
    p.kind             = "cpu";
    p.measured         = true;
    p.mem_bw_gbps      = r.read_bw_all_gbps;
    p.fp32_tflops      = r.sgemm_all_gflops / 1000.0;
    p.call_overhead_us = r.call_overhead_us;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    p.mem_gb = pages > 0 && page > 0 ? double(pages) * double(page) / 1e9 : 1.0;
    p.sources["memory_bandwidth_gbps"] =
        "measured: best-of-N sum over a buffer larger than the LLC with " + std::to_string(r.threads) +
        " threads (1 thread: " + std::to_string(r.read_bw_1t_gbps) + " GB/s); SGEMV reached " +
        std::to_string(r.sgemv_all_gflops) + " GFLOP/s (1 thread " + std::to_string(r.sgemv_1t_gflops) + ")";
    p.sources["fp32_tflops"] = "measured: OpenBLAS SGEMM with " + std::to_string(r.threads) +
                               " threads (1 thread: " + std::to_string(r.sgemm_1t_gflops) + " GFLOP/s)";
    p.sources["call_overhead_us"] = "measured: median of a 16x16 SGEMV plus an empty parallel_for round trip";
    p.sources["memory_gb"]        = "sysconf(_SC_PHYS_PAGES) x page size";
    return p;
}

}  // namespace speculum::hw
