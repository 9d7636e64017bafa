// A process-wide team of spinning threads for the short parallel regions of a forward pass.
//
// A decode step forks about 40 regions of 20-200 us each (the products of every layer, attention). Forking one
// through oneTBB costs a few microseconds on a quiet machine and more in a virtual machine, where TBB's idle workers
// call sched_yield and futex, both system calls that exit to the hypervisor. The team keeps its workers spinning on a
// cache line of their own between regions (as ggml's thread pool does), so a region starts when the caller writes
// that line. Workers spin after their last task (yielding the core between checks once idle for a while, so other
// processes on the same cores run), then sleep on a futex (std::atomic::wait) until the next region. TBB stays the
// job system, and runs every region the team cannot take (team_for's fallback).
#pragma once

#include "core/parallel.h"

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace speculum {

class ThreadTeam {
public:
    using TaskFn = void (*)(void* ctx, int64_t task);

    // The one team of the process; its workers start on first use and are joined at exit.
    static ThreadTeam& shared();

    ThreadTeam();
    ~ThreadTeam();
    ThreadTeam(const ThreadTeam&)            = delete;
    ThreadTeam& operator=(const ThreadTeam&) = delete;

    // Runs fn(ctx, i) once for every i in [0, n_tasks) on the calling thread and up to threads - 1 workers. The tasks
    // are cut into one contiguous part per thread; each thread runs its own part in order, then takes what is left of
    // the others' from their ends, so each streams through memory as one long run (the hardware prefetchers follow
    // it) and the threads still even out. Returns false, having run nothing, when the region is not for the team:
    // threads < 2 or n_tasks < 2, the team busy with another caller's region, or the caller itself a task of the
    // team. The first exception a task throws is rethrown here once every task has ended or been skipped.
    bool run(int64_t n_tasks, int threads, TaskFn fn, void* ctx);

    // Workers started so far.
    int workers() const { return m_n_workers.load(std::memory_order_relaxed); }
    // True on a thread that is running a task of a team region (a worker, or a caller inside run()).
    static bool in_task();
    // Process-wide switch: off, team_for hands every region to TBB. On unless the environment sets
    // SPECULUM_THREAD_TEAM=0 (for machines where spinning threads hurt, and for A/B runs of whole programs).
    static void set_enabled(bool on) { enabled_flag().store(on, std::memory_order_relaxed); }
    static bool enabled() { return enabled_flag().load(std::memory_order_relaxed); }

private:
    static std::atomic<bool>& enabled_flag() {
        static std::atomic<bool> flag{!disabled_by_environment()};
        return flag;
    }
    static bool disabled_by_environment();  // SPECULUM_THREAD_TEAM=0
    struct Worker;
    void work(Worker& w);
    void run_tasks(int part);

    std::mutex m_busy;                         // held by the caller of the region in flight
    std::vector<std::unique_ptr<Worker>> m_w;  // grown under m_busy, never shrunk
    std::atomic<int> m_n_workers{0};
    // The region in flight, written by its caller before it posts the workers.
    TaskFn m_fn                      = nullptr;
    void* m_ctx                      = nullptr;
    int64_t m_n                      = 0;
    static constexpr int kMaxThreads = 64;
    struct alignas(64) Part {
        std::atomic<uint64_t> range{0};  // the tasks [front, back) not yet taken: front << 32 | back
    };
    std::array<Part, kMaxThreads> m_parts;
    int m_n_parts = 0;
    alignas(64) std::atomic<bool> m_failed{false};
    std::exception_ptr m_error;  // the first exception, written by the thread that set m_failed
};

// The threads a parallel region may use here: the arena's concurrency, limited by any tbb::global_control the caller
// holds and by the hardware (spinning threads beyond the cores only wait for each other).
inline int region_threads() {
    const size_t arena     = static_cast<size_t>(std::max(1, tbb::this_task_arena::max_concurrency()));
    const size_t limit     = tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism);
    static const size_t hw = std::max(1u, std::thread::hardware_concurrency());  // reads /sys: once
    return static_cast<int>(std::min({arena, limit, hw}));
}

// parallel_for for the short regions of a forward pass: fn(lo, hi) over [begin, end) in about equal chunks of at most
// `grain` items, on the shared ThreadTeam when it is free, else through parallel_for (TBB). Serial mode runs it in
// order on the calling thread. fn must be safe to call concurrently for disjoint chunks.
template <class Fn>
void team_for(int64_t begin, int64_t end, int64_t grain, Fn&& fn) {
    if (end <= begin) return;
    grain = std::max<int64_t>(1, grain);
    if (serial_mode() || end - begin <= grain || ThreadTeam::in_task()) {  // nested regions run in order
        fn(begin, end);
        return;
    }
    const int64_t n_tasks = (end - begin + grain - 1) / grain;
    const int64_t chunk   = (end - begin + n_tasks - 1) / n_tasks;
    struct Ctx {
        std::remove_reference_t<Fn>* fn;
        int64_t begin, end, chunk;
    } c{&fn, begin, end, chunk};
    auto task = [](void* p, int64_t i) {
        const Ctx& x     = *static_cast<const Ctx*>(p);
        const int64_t lo = x.begin + i * x.chunk;
        (*x.fn)(lo, std::min(x.end, lo + x.chunk));
    };
    if (ThreadTeam::enabled() && ThreadTeam::shared().run(n_tasks, region_threads(), task, &c)) return;
    parallel_for(begin, end, chunk, fn);
}

}  // namespace speculum
