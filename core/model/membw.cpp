// Memory bandwidth probe: a parallel read (integer sum, vectorizable) and a parallel memcpy, best of N passes.
#include "core/model/membw.h"

#include "core/parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace speculum::model {

MemBandwidth measure_memory_bandwidth(uint64_t bytes, int repeats) {
    if (bytes < (1u << 20) || repeats < 1) throw std::invalid_argument("measure_memory_bandwidth: need >= 1 MiB, >= 1 repeat");
    const int64_t n     = static_cast<int64_t>(bytes / sizeof(uint64_t));
    const int64_t chunk = (1 << 20) / sizeof(uint64_t);  // 1 MiB per task
    std::unique_ptr<uint64_t[]> a(new uint64_t[static_cast<size_t>(n)]);
    std::unique_ptr<uint64_t[]> b(new uint64_t[static_cast<size_t>(n)]);
    // Touch both buffers in parallel so pages are mapped (and placed) before timing.
    parallel_for(0, n, chunk, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) a[i] = static_cast<uint64_t>(i), b[i] = 0;
    });
    using clock = std::chrono::steady_clock;
    MemBandwidth r;
    r.bytes   = static_cast<uint64_t>(n) * sizeof(uint64_t);
    r.repeats = repeats;
    std::atomic<uint64_t> sink{0};
    for (int rep = 0; rep < repeats; ++rep) {
        const auto t0 = clock::now();
        parallel_for(0, n, chunk, [&](int64_t lo, int64_t hi) {
            uint64_t s = 0;
            for (int64_t i = lo; i < hi; ++i) s += a[i];
            sink.fetch_add(s, std::memory_order_relaxed);
        });
        const double t_read = std::chrono::duration<double>(clock::now() - t0).count();
        const auto t1       = clock::now();
        parallel_for(0, n, chunk, [&](int64_t lo, int64_t hi) {
            std::memcpy(&b[lo], &a[lo], static_cast<size_t>(hi - lo) * sizeof(uint64_t));
        });
        const double t_copy = std::chrono::duration<double>(clock::now() - t1).count();
        r.read_gbs = std::max(r.read_gbs, static_cast<double>(r.bytes) / t_read / 1e9);
        r.copy_gbs = std::max(r.copy_gbs, 2.0 * static_cast<double>(r.bytes) / t_copy / 1e9);
    }
    if (sink.load() == 42) r.read_gbs += 0.0;  // keeps the read loop from being optimised away
    return r;
}

}  // namespace speculum::model
