// The clock that measurements read: decode, draft and verification times, the baseline, and the wall time of
// repeated runs. It is std::chrono::steady_clock unless a test has set a fake on its thread with ScopedClock, so
// that tests of what is decided from measured times (stop rules, speedups, cost ratios) never depend on the machine.
// Code that times something it reports uses measure_clock, never steady_clock directly.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

namespace speculum {

struct measure_clock {
    using duration                  = std::chrono::nanoseconds;
    using rep                       = duration::rep;
    using period                    = duration::period;
    using time_point                = std::chrono::time_point<measure_clock>;
    static constexpr bool is_steady = true;
    static time_point now();
};

// Seconds from t0 to now on measure_clock.
inline double seconds_since(measure_clock::time_point t0) {
    return std::chrono::duration<double>(measure_clock::now() - t0).count();
}

// While alive, measure_clock::now() on this thread returns `now()` (nanoseconds). Nests; not copyable.
class ScopedClock {
public:
    explicit ScopedClock(std::function<int64_t()> now);
    ~ScopedClock();
    ScopedClock(const ScopedClock&)            = delete;
    ScopedClock& operator=(const ScopedClock&) = delete;

private:
    std::function<int64_t()> m_now;
    const std::function<int64_t()>* m_prev;
};

// A fake for tests: every reading advances the time by `step_ns`, so a duration counts the readings between its
// ends (deterministic for deterministic code).
class SteppingClock {
public:
    explicit SteppingClock(int64_t step_ns) : m_step(step_ns), m_scope([this] { return m_t += m_step; }) {}

private:
    int64_t m_step, m_t = 0;
    ScopedClock m_scope;
};

}  // namespace speculum
