// glibc malloc settings that make the pool's threads allocate as cheaply as the main thread. Measured
// (docs/performance-notebook.md, "Jobs and sweeps"): with glibc's defaults, small-allocation-heavy work (the analytic
// evaluator makes ~300 allocations per configuration) costs 15-30 % more CPU on any thread but the main one. Each
// thread gets its own arena, and a thread arena consolidates its fastbins and trims/regrows its heap far more often
// than the main arena. Without fastbins (the per-thread tcache still serves small sizes) and with a trim threshold of a
// few MB, a worker runs the same loop at the main thread's speed. SPECULUM_MALLOC_TUNING=0 turns it off.
#pragma once

namespace speculum::jobs {

struct AllocatorTuning {
    bool applied       = false;  // mallopt() accepted the settings (glibc only; false elsewhere)
    bool user_tunables = false;  // GLIBC_TUNABLES sets malloc parameters: left alone, the user's settings win
    bool disabled      = false;  // SPECULUM_MALLOC_TUNING=0 in the environment (to measure without it)
};

// Applies the settings once per process (later calls return the first result): M_MXFAST = 0,
// M_TRIM_THRESHOLD = kTrimThresholdBytes, M_MMAP_THRESHOLD = kMmapThresholdBytes (setting the trim threshold
// turns off glibc's adaptive mmap threshold, so it is pinned at that adaptive scheme's typical value).
AllocatorTuning tune_allocator_for_workers();

constexpr long kTrimThresholdBytes = 8L << 20;  // free heap top kept per arena before it is returned to the OS
constexpr long kMmapThresholdBytes = 4L << 20;  // allocations at least this large are mmap'd individually

}  // namespace speculum::jobs
