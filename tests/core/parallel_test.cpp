// parallel_for and team_for cover the range exactly once, in parallel or serial mode; the ThreadTeam runs every task
// once, declines what is not for it, runs nested regions in order, rethrows and wakes; CancelToken is shared by copies.
#include "core/parallel.h"
#include "core/cancel.h"
#include "core/thread_team.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

TEST(Parallel, CoversRangeExactlyOnce) {
    for (bool serial : {false, true}) {
        speculum::set_serial_mode(serial);
        std::vector<std::atomic<int>> hits(10007);
        speculum::parallel_for(0, 10007, 64, [&](int64_t lo, int64_t hi) {
            for (int64_t i = lo; i < hi; ++i) hits[i].fetch_add(1);
        });
        for (auto& h : hits) ASSERT_EQ(h.load(), 1);
    }
    speculum::set_serial_mode(false);
}

TEST(Parallel, EmptyRangeCallsNothing) {
    bool called = false;
    speculum::parallel_for(5, 5, 1, [&](int64_t, int64_t) { called = true; });
    EXPECT_FALSE(called);
}

TEST(Cancel, CopiesShareTheFlag) {
    speculum::CancelToken a;
    speculum::CancelToken b = a;
    EXPECT_FALSE(b.cancelled());
    a.cancel();
    EXPECT_TRUE(b.cancelled());
    EXPECT_THROW(b.throw_if_cancelled(), speculum::Cancelled);
}

// ---- ThreadTeam: the spinning team for the short regions of a forward pass ----

namespace {
// Runs team_for over [0, n) in chunks of at most `grain` and checks every index was visited exactly once.
void expect_covered_once(int64_t n, int64_t grain) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    std::atomic<int64_t> widest{0};
    speculum::team_for(0, n, grain, [&](int64_t lo, int64_t hi) {
        int64_t w = widest.load();
        while (hi - lo > w && !widest.compare_exchange_weak(w, hi - lo)) {
        }
        for (int64_t i = lo; i < hi; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "n " << n << " index " << i;
    EXPECT_LE(widest.load(), grain) << "n " << n;
}
}  // namespace

TEST(ThreadTeam, TeamForCoversRangeExactlyOnceInChunksOfAtMostTheGrain) {
    for (int64_t n : {1, 2, 3, 7, 64, 1000, 10007})
        for (int64_t grain : {1, 3, 64}) expect_covered_once(n, grain);
}

TEST(ThreadTeam, RunsEveryTaskOnceOnSeveralThreads) {
    // More threads than this machine may have: the team uses what it is given (at most kMaxThreads).
    speculum::ThreadTeam team;
    for (int threads : {2, 3, 4})
        for (int64_t n : {2, 5, 100, 4099}) {
            std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
            auto task = [](void* p, int64_t i) {
                (*static_cast<std::vector<std::atomic<int>>*>(p))[static_cast<size_t>(i)].fetch_add(1);
            };
            ASSERT_TRUE(team.run(n, threads, task, &hits));
            for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << threads << " " << i;
        }
    EXPECT_GE(team.workers(), 1);
}

TEST(ThreadTeam, DeclinesRegionsThatAreNotForIt) {
    speculum::ThreadTeam team;
    bool called = false;
    auto task   = [](void* p, int64_t) { *static_cast<bool*>(p) = true; };
    EXPECT_FALSE(team.run(1, 4, task, &called));   // one task: the caller runs it
    EXPECT_FALSE(team.run(10, 1, task, &called));  // one thread
    EXPECT_FALSE(called);
    EXPECT_EQ(team.workers(), 0);
}

TEST(ThreadTeam, NestedRegionsRunInOrderOnTheTaskThread) {
    std::atomic<int> nested_elsewhere{0}, inner{0};
    speculum::team_for(0, 8, 1, [&](int64_t, int64_t) {
        EXPECT_TRUE(speculum::ThreadTeam::in_task());
        const auto me = std::this_thread::get_id();
        speculum::team_for(0, 100, 1, [&](int64_t lo, int64_t hi) {
            if (std::this_thread::get_id() != me) nested_elsewhere.fetch_add(1);
            inner.fetch_add(static_cast<int>(hi - lo));
        });
    });
    EXPECT_EQ(inner.load(), 800);
    EXPECT_EQ(nested_elsewhere.load(), 0);
    EXPECT_FALSE(speculum::ThreadTeam::in_task());
}

TEST(ThreadTeam, RethrowsATaskExceptionAndStaysUsable) {
    speculum::ThreadTeam team;
    struct Ctx {
        std::atomic<int> ran{0};
    } ctx;
    auto throwing = [](void* p, int64_t i) {
        static_cast<Ctx*>(p)->ran.fetch_add(1);
        if (i == 3) throw std::runtime_error("task 3 failed");
    };
    EXPECT_THROW(team.run(64, 2, throwing, &ctx), std::runtime_error);
    EXPECT_GE(ctx.ran.load(), 1);
    std::vector<std::atomic<int>> hits(64);
    auto count = [](void* p, int64_t i) {
        (*static_cast<std::vector<std::atomic<int>>*>(p))[static_cast<size_t>(i)].fetch_add(1);
    };
    ASSERT_TRUE(team.run(64, 2, count, &hits));
    for (auto& h : hits) EXPECT_EQ(h.load(), 1);
}

TEST(ThreadTeam, WorkersThatFellAsleepWakeForTheNextRegion) {
    // Regions further apart than the workers spin: each one wakes them from their futex wait.
    speculum::ThreadTeam team;
    for (int r = 0; r < 5; ++r) {
        std::vector<std::atomic<int>> hits(16);
        auto count = [](void* p, int64_t i) {
            (*static_cast<std::vector<std::atomic<int>>*>(p))[static_cast<size_t>(i)].fetch_add(1);
        };
        ASSERT_TRUE(team.run(16, 2, count, &hits));
        for (auto& h : hits) ASSERT_EQ(h.load(), 1);
        std::this_thread::sleep_for(std::chrono::milliseconds(3));
    }
}

TEST(ThreadTeam, ConcurrentCallersEachCoverTheirOwnRange) {
    // Two threads fork regions at once: one gets the shared team, the other falls back to TBB; neither loses work.
    std::vector<std::thread> callers;
    std::atomic<int> bad{0};
    for (int c = 0; c < 2; ++c)
        callers.emplace_back([&] {
            for (int r = 0; r < 200; ++r) {
                std::vector<std::atomic<int>> hits(257);
                speculum::team_for(0, 257, 16, [&](int64_t lo, int64_t hi) {
                    for (int64_t i = lo; i < hi; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
                });
                for (auto& h : hits)
                    if (h.load() != 1) bad.fetch_add(1);
            }
        });
    for (auto& t : callers) t.join();
    EXPECT_EQ(bad.load(), 0);
}
