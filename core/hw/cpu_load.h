// Facts about this machine for judging a measurement. How busy the machine was with other processes while something was
// measured: the CPU time every process used
// (/proc/stat) minus this process's own (getrusage), over the wall time and the cores. A measurement taken while
// other processes used a noticeable share of the CPU is flagged rather than trusted (docs/performance.md).
#pragma once

#include <cstdint>
#include <optional>

namespace speculum::hw {

struct CpuSample {
    double machine_busy_s = 0;  // CPU seconds all processes spent busy since boot (every core)
    double own_cpu_s      = 0;  // CPU seconds this process used (user + system)
    double wall_s         = 0;  // a monotonic clock
    int cores             = 0;
    bool valid            = false;  // false where /proc/stat cannot be read
};

CpuSample cpu_sample();

// The share of the machine's CPU capacity (0..1) other processes used between two samples; nullopt when a
// sample is invalid or no time passed.
std::optional<double> other_load(const CpuSample& before, const CpuSample& after);

// The size of this CPU's last-level cache in bytes (Linux sysfs, the highest cache level of cpu0); nullopt where it
// cannot be read. A target whose weights fit in it is not memory-bound: a verification pass of γ + 1 tokens then
// costs nearly γ + 1 single-token steps, and speculation can hardly pay off.
std::optional<uint64_t> last_level_cache_bytes();

}  // namespace speculum::hw
