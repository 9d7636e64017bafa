#include "core/clock.h"

namespace speculum {

namespace {
thread_local const std::function<int64_t()>* t_fake = nullptr;
}

measure_clock::time_point measure_clock::now() {
    if (t_fake) return time_point(duration((*t_fake)()));
    return time_point(std::chrono::duration_cast<duration>(std::chrono::steady_clock::now().time_since_epoch()));
}

ScopedClock::ScopedClock(std::function<int64_t()> now) : m_now(std::move(now)), m_prev(t_fake) {
    t_fake = &m_now;
}

ScopedClock::~ScopedClock() {
    t_fake = m_prev;
}

}  // namespace speculum
