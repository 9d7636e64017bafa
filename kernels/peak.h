// The int8 multiply-accumulate peak of the fast kernels' instruction set, for the compute floor that benchmarks set
// beside a measured pass (speculum-cli bench). Single-threaded; callers time it and run it on every thread.
#pragma once

#include <cstdint>

namespace speculum::kernels {

// Runs `rounds` rounds of independent int8 dot products in the instruction set the int8 kernels use
// (KernelIsa::avx512: 512-bit vpdpbusd, 64 multiply-accumulates each) and returns how many multiply-accumulates it
// did; 0 where this CPU has no such kernel (no peak to compare with). No memory traffic: the dependency chains are
// many enough to keep every port busy, so time / result is the instruction set's peak on this core.
int64_t int8_peak_burst(int64_t rounds);

}  // namespace speculum::kernels
