// A STREAM-like measurement of this machine's memory bandwidth (read and copy over buffers much larger than the
// last-level cache, all threads), the ceiling that memory-bound decode is compared against in `bench`.
#pragma once

#include <cstdint>

namespace speculum::model {

struct MemBandwidth {
    double read_gbs  = 0.0;  // best of the repeats: bytes read / s, 1e9 bytes per GB
    double copy_gbs  = 0.0;  // best of the repeats: (bytes read + bytes written) / s
    uint64_t bytes   = 0;    // buffer size used
    int repeats      = 0;
};

// Allocates and touches a `bytes` buffer (plus the same again for the copy target), then times `repeats` passes
// of each kernel with speculum::parallel_for over 1 MiB chunks. Takes about (2 + 3 * repeats) * bytes / bandwidth.
MemBandwidth measure_memory_bandwidth(uint64_t bytes = 512ull << 20, int repeats = 5);

}  // namespace speculum::model
