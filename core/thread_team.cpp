// ThreadTeam: workers that spin on a slot of their own between regions, then sleep on it (thread_team.h).
#include "core/thread_team.h"

#include <chrono>
#include <climits>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#if defined(__linux__)
#include <pthread.h>
#endif

namespace speculum {

namespace {
// A worker's slot: idle, posted a region (the caller may still take it back), running the region's tasks, or told to
// exit. Only the caller moves idle -> posted and posted -> idle; only the worker moves posted -> running -> idle.
enum Slot : uint32_t { kIdle = 0, kPosted = 1, kRunning = 2, kStop = 3 };

// Spinning after a region costs one core while the caller runs the serial parts of a pass (norms, RoPE, sampling),
// which take microseconds. A worker idle for kPureSpin spins on, but yields the core between checks (another
// process's threads, say a second program or test on the same cores, run instead of the spin); idle for kIdleSpin,
// it sleeps until the next region wakes it.
constexpr auto kPureSpin = std::chrono::microseconds(30);
constexpr auto kIdleSpin = std::chrono::microseconds(300);

thread_local bool t_in_task = false;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
}
}  // namespace

struct ThreadTeam::Worker {
    alignas(64) std::atomic<uint32_t> slot{kIdle};
    std::atomic<bool> asleep{false};  // set before the worker waits on slot, so the caller knows to wake it
    int part = 0;                     // its part of a region's tasks (the caller's is 0)
    std::thread thread;
};

ThreadTeam& ThreadTeam::shared() {
    static ThreadTeam team;
    return team;
}

bool ThreadTeam::disabled_by_environment() {
    const char* v = std::getenv("SPECULUM_THREAD_TEAM");
    return v && std::string_view(v) == "0";
}

bool ThreadTeam::in_task() {
    return t_in_task;
}

ThreadTeam::ThreadTeam() = default;

ThreadTeam::~ThreadTeam() {
    std::lock_guard<std::mutex> lock(m_busy);
    for (auto& w : m_w) {
        w->slot.store(kStop, std::memory_order_seq_cst);
        w->slot.notify_one();
    }
    for (auto& w : m_w) w->thread.join();
}

void ThreadTeam::run_tasks(int part) {
    // Take one task from the front of a part (its owner) or from its back (the others).
    const auto take = [](Part& p, bool front, int64_t& task) {
        uint64_t r = p.range.load(std::memory_order_relaxed);
        for (;;) {
            const uint64_t f = r >> 32, b = r & 0xffffffffu;
            if (f >= b) return false;
            const uint64_t next = front ? ((f + 1) << 32 | b) : (f << 32 | (b - 1));
            if (p.range.compare_exchange_weak(r, next, std::memory_order_relaxed)) {
                task = static_cast<int64_t>(front ? f : b - 1);
                return true;
            }
        }
    };
    const auto run_one = [&](int64_t task) {
        if (m_failed.load(std::memory_order_relaxed)) return;  // skip what is left after a failure
        try {
            m_fn(m_ctx, task);
        } catch (...) {
            bool expected = false;
            if (m_failed.compare_exchange_strong(expected, true)) m_error = std::current_exception();
        }
    };
    int64_t task = 0;
    while (take(m_parts[static_cast<size_t>(part)], true, task)) run_one(task);
    for (int k = 1; k < m_n_parts; ++k)
        while (take(m_parts[static_cast<size_t>((part + k) % m_n_parts)], false, task)) run_one(task);
}

void ThreadTeam::work(Worker& w) {
    t_in_task   = true;  // a worker only ever runs tasks: regions it starts run in order
    using clock = std::chrono::steady_clock;
    for (;;) {
        uint32_t s      = 0;
        auto idle_since = clock::now();
        for (uint32_t spins = 1; (s = w.slot.load(std::memory_order_acquire)) == kIdle; ++spins) {
            cpu_relax();
            if (spins % 256 != 0) continue;
            const auto idle = clock::now() - idle_since;
            if (idle < kPureSpin) continue;
            if (idle < kIdleSpin) {
                std::this_thread::yield();
                continue;
            }
            // Sleep. The caller stores the slot and then reads `asleep` (both seq_cst); the worker stores `asleep`
            // and then waits while the slot is idle: one of them sees the other's store, so no post is lost.
            w.asleep.store(true, std::memory_order_seq_cst);
            w.slot.wait(kIdle, std::memory_order_seq_cst);
            w.asleep.store(false, std::memory_order_relaxed);
            idle_since = clock::now();
        }
        if (s == kStop) return;
        uint32_t posted = kPosted;
        if (s != kPosted ||
            !w.slot.compare_exchange_strong(posted, kRunning, std::memory_order_acquire, std::memory_order_relaxed))
            continue;  // taken back by the caller, who ran the tasks itself
        run_tasks(w.part);
        w.slot.store(kIdle, std::memory_order_release);
    }
}

bool ThreadTeam::run(int64_t n_tasks, int threads, TaskFn fn, void* ctx) {
    if (n_tasks < 2 || threads < 2 || t_in_task || n_tasks > INT32_MAX) return false;
    std::unique_lock<std::mutex> lock(m_busy, std::try_to_lock);
    if (!lock.owns_lock()) return false;
    const size_t nw = static_cast<size_t>(std::min<int64_t>({threads - 1, n_tasks - 1, kMaxThreads - 1}));
    while (m_w.size() < nw) {
        m_w.push_back(std::make_unique<Worker>());
        Worker& w = *m_w.back();
        w.part    = static_cast<int>(m_w.size());
        w.thread  = std::thread([this, &w] { work(w); });
#if defined(__linux__)
        pthread_setname_np(w.thread.native_handle(), ("speculum-team" + std::to_string(m_w.size())).c_str());
#endif
        m_n_workers.store(static_cast<int>(m_w.size()), std::memory_order_relaxed);
    }
    m_fn    = fn;
    m_ctx   = ctx;
    m_n     = n_tasks;
    m_error = nullptr;
    m_failed.store(false, std::memory_order_relaxed);
    m_n_parts = static_cast<int>(nw) + 1;
    for (int p = 0; p < m_n_parts; ++p) {
        const uint64_t f = static_cast<uint64_t>(n_tasks * p / m_n_parts),
                       b = static_cast<uint64_t>(n_tasks * (p + 1) / m_n_parts);
        m_parts[static_cast<size_t>(p)].range.store(f << 32 | b, std::memory_order_relaxed);
    }
    for (size_t i = 0; i < nw; ++i) {  // the seq_cst store publishes the fields above (release) to the worker
        Worker& w = *m_w[i];
        w.slot.store(kPosted, std::memory_order_seq_cst);
        if (w.asleep.load(std::memory_order_seq_cst)) w.slot.notify_one();
    }
    t_in_task = true;
    run_tasks(0);
    t_in_task = false;
    // Every task has been taken. A worker that has not claimed its post yet (asleep, or not scheduled) is not
    // waited for: the post is taken back. One that claimed it is running a task, or about to find none left.
    for (size_t i = 0; i < nw; ++i) {
        Worker& w       = *m_w[i];
        uint32_t posted = kPosted;
        if (w.slot.compare_exchange_strong(posted, kIdle, std::memory_order_acq_rel)) continue;
        for (uint32_t spins = 1; w.slot.load(std::memory_order_acquire) != kIdle; ++spins)
            if (spins % 4096 == 0)
                std::this_thread::yield();  // the worker was descheduled mid-task
            else
                cpu_relax();
    }
    if (m_failed.load(std::memory_order_relaxed)) std::rethrow_exception(std::exchange(m_error, nullptr));
    return true;
}

}  // namespace speculum
