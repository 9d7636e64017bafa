// Cancellation and progress for every long operation in core (model loading, draft building, decoding,
// sweeps). A CancelToken is cheap to copy and shared by the requester and the worker; workers check it at
// defined points and throw Cancelled, which callers treat as an outcome, not an error.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

namespace speculum {

struct Cancelled : std::runtime_error {
    Cancelled() : std::runtime_error("cancelled") {}
};

class CancelToken {
public:
    CancelToken() : m_flag(std::make_shared<std::atomic<bool>>(false)) {}
    void cancel() const { m_flag->store(true, std::memory_order_relaxed); }
    bool cancelled() const { return m_flag->load(std::memory_order_relaxed); }
    void throw_if_cancelled() const {
        if (cancelled()) throw Cancelled();
    }

private:
    std::shared_ptr<std::atomic<bool>> m_flag;
};

// Progress callback: fraction in [0, 1] and a short description of the current item ("layer 3/8").
// May be called from worker threads; must be cheap and must not block.
using ProgressFn = std::function<void(double fraction, const std::string& what)>;

inline void report(const ProgressFn& fn, double fraction, const std::string& what) {
    if (fn) fn(fraction, what);
}

}  // namespace speculum
