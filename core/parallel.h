// The one place core fans work out over threads (oneTBB). A process-wide serial switch makes every
// parallel_for run in order on the calling thread, for deterministic tests and for callers that already
// own the threads of their call path.
#pragma once

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>

#include <atomic>
#include <cstdint>

namespace speculum {

namespace detail {
inline std::atomic<bool>& serial_flag() {
    static std::atomic<bool> flag{false};
    return flag;
}
}  // namespace detail

inline void set_serial_mode(bool serial) {
    detail::serial_flag().store(serial, std::memory_order_relaxed);
}
inline bool serial_mode() {
    return detail::serial_flag().load(std::memory_order_relaxed);
}

// Calls fn(lo, hi) over [begin, end) in chunks of at least `grain` items, in parallel unless serial mode is on.
template <class Fn>
void parallel_for(int64_t begin, int64_t end, int64_t grain, Fn&& fn) {
    if (end <= begin) return;
    if (serial_mode() || end - begin <= grain) {
        fn(begin, end);
        return;
    }
    tbb::parallel_for(tbb::blocked_range<int64_t>(begin, end, grain > 0 ? grain : 1),
                      [&](const tbb::blocked_range<int64_t>& r) { fn(r.begin(), r.end()); });
}

}  // namespace speculum
