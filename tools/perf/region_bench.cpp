// Times the fork and join of a short parallel region: `regions` regions of `tasks` equal tasks of compute (no memory
// traffic), each followed by a short serial gap as the norms and RoPE between a forward pass's products are, forked
// through oneTBB (speculum::parallel_for), the spinning ThreadTeam (speculum::team_for) and run serially, in rounds
// that alternate the three. Prints microseconds per region and, for the two parallel ways, the share of the tasks the
// calling thread ran and how long after the fork the other thread started its first task. docs/performance-notebook.md
// ("Session 25") cites it.
//   cmake --build build --target speculum_core && g++ -O2 -DNDEBUG -std=c++20 -I. tools/perf/region_bench.cpp \
//       build/core/libspeculum_core.a -ltbb -o /tmp/region_bench
//   /tmp/region_bench [--work N] [--gap N] [--tasks N] [--rounds R]   (N: iterations of a dependent multiply-add)
#include "core/thread_team.h"

#include <oneapi/tbb/global_control.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

using namespace speculum;

namespace {
volatile double g_sink;
void spin_work(int64_t iters) {
    double a = 1.0;
    for (int64_t i = 0; i < iters; ++i) a = a * 1.0000001 + 1e-9;
    g_sink = a;
}
using Clock = std::chrono::steady_clock;
}  // namespace

int main(int argc, char** argv) {
    int64_t work = 5000, gap = 1000;
    int tasks = 2, rounds = 3;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--work" && i + 1 < argc)
            work = std::atoll(argv[++i]);
        else if (a == "--gap" && i + 1 < argc)
            gap = std::atoll(argv[++i]);
        else if (a == "--tasks" && i + 1 < argc)
            tasks = std::atoi(argv[++i]);
        else if (a == "--rounds" && i + 1 < argc)
            rounds = std::atoi(argv[++i]);
        else {
            std::fprintf(stderr, "usage: %s [--work N] [--gap N] [--tasks N] [--rounds R]\n", argv[0]);
            return 2;
        }
    }
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism, 2);
    constexpr int kRegions = 4000;
    const auto caller      = std::this_thread::get_id();
    std::printf("%d tasks of %lld iterations, gap %lld, 2 threads, %d regions per figure\n", tasks, (long long)work,
                (long long)gap, kRegions);
    for (int r = 0; r < rounds; ++r) {
        for (int mode = 0; mode < 3; ++mode) {
            std::atomic<int64_t> by_caller{0};
            double start_latency = 0;
            int started          = 0;
            const auto t0        = Clock::now();
            for (int k = 0; k < kRegions; ++k) {
                const auto fork = Clock::now();
                std::atomic<int64_t> first_other{-1};
                auto fn = [&](int64_t lo, int64_t hi) {
                    if (std::this_thread::get_id() == caller) {
                        by_caller.fetch_add(hi - lo);
                    } else {
                        int64_t none = -1;
                        first_other.compare_exchange_strong(
                            none, std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - fork).count());
                    }
                    for (int64_t i = lo; i < hi; ++i) spin_work(work);
                };
                if (mode == 0)
                    parallel_for(0, tasks, 1, fn);
                else if (mode == 1)
                    team_for(0, tasks, 1, fn);
                else
                    fn(0, tasks);
                if (first_other >= 0) start_latency += double(first_other), ++started;
                spin_work(gap);
            }
            const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / kRegions;
            if (mode == 2)
                std::printf("serial %7.2f us\n", us);
            else
                std::printf(
                    "%-6s %7.2f us, caller ran %.2f of the tasks, other thread started %.2f us after the fork; ",
                    mode == 0 ? "tbb" : "team", us, double(by_caller) / (double(kRegions) * tasks),
                    started ? start_latency / started / 1e3 : 0.0);
        }
    }
    return 0;
}
