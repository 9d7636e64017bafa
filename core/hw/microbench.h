// Microbenchmarks that calibrate "this machine" as a hardware profile: memory read bandwidth (STREAM-like sum
// over a buffer much larger than the LLC), single- and all-thread SGEMV and SGEMM throughput via OpenBLAS, and
// the per-call overhead of a tiny dispatched call. Figures are measured, best of a few repetitions; the whole
// run takes a few seconds (quick mode well under one).
#pragma once

#include "core/cancel.h"
#include "core/hw/profile.h"

#include <string>

namespace speculum::hw {

struct MicrobenchOptions {
    bool quick  = false;  // smaller buffers and fewer repetitions (for tests and previews)
    int threads = 0;      // threads for the "all" figures; 0 = every hardware thread
    bool operator==(const MicrobenchOptions&) const = default;
};

struct MicrobenchResult {
    int threads             = 1;  // threads used for the "all" figures
    double read_bw_1t_gbps  = 0;  // GB/s (1e9 B/s), one thread
    double read_bw_all_gbps = 0;  // GB/s, all threads (speculum::parallel_for)
    double sgemv_1t_gflops  = 0;  // GFLOP/s, cblas_sgemv, matrix larger than the LLC
    double sgemv_all_gflops = 0;
    double sgemm_1t_gflops  = 0;  // GFLOP/s, cblas_sgemm, square
    double sgemm_all_gflops = 0;
    double call_overhead_us = 0;  // median of a tiny SGEMV plus an empty parallel_for round trip
    double seconds          = 0;  // wall time of the whole run
};

// Each returns GB/s or GFLOP/s (best of `reps`); throws Cancelled when the token is cancelled.
// bench_read_bandwidth reads a buffer of plain anonymous memory, or with `large_pages` a huge-page-advised one
// (hw::LargePageBuffer), so that it can match where model weights live.
double bench_read_bandwidth(size_t bytes, int threads, int reps, const CancelToken& cancel, const ProgressFn& progress,
                            bool large_pages = false);
double bench_sgemv(int n, int threads, int reps, const CancelToken& cancel, const ProgressFn& progress);
double bench_sgemm(int n, int threads, int reps, const CancelToken& cancel, const ProgressFn& progress);
// Int8 multiply-accumulates per second (GMAC/s, 1e9) of all `threads` running the int8 kernels' instruction set
// flat out (kernels::int8_peak_burst), best of `reps`; 0 where the CPU has no int8 kernel. The compute floor of a
// verification pass is its multiply-accumulates over this.
double bench_int8_peak(int threads, int reps, const CancelToken& cancel, const ProgressFn& progress);
double bench_call_overhead_us(int threads, int reps, const CancelToken& cancel, const ProgressFn& progress);

MicrobenchResult run_microbenchmarks(const MicrobenchOptions& opt, const CancelToken& cancel,
                                     const ProgressFn& progress);

// "This machine" as a profile (kind cpu, measured = true): bandwidth = all-thread read, fp32 peak = all-thread
// SGEMM, capacity = physical memory; sources say how each figure was measured.
HardwareProfile profile_from_microbench(const MicrobenchResult& r, const std::string& id = "this_machine");

}  // namespace speculum::hw
