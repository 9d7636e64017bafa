// JobSystem: statuses, mailbox order, superseded results dropped, cancellation keeps posted results and stops
// a token-checking job quickly, progress readable while running, serial mode is inline and deterministic.
#include "core/jobs/job_system.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

using namespace speculum;
using namespace speculum::jobs;
using namespace std::chrono_literals;

namespace {

constexpr auto kGenerousWait = 10s;  // only hit when something is broken; keeps a hung test from hanging CI

// Spins on the token doing ~50 µs items (the shape of a sweep: check per configuration).
std::any spin_until_cancelled(JobContext& ctx, std::atomic<bool>* started = nullptr) {
    if (started) *started = true;
    for (int i = 0;; ++i) {
        ctx.token().throw_if_cancelled();
        auto until = std::chrono::steady_clock::now() + 50us;
        while (std::chrono::steady_clock::now() < until) {
        }
        if (i % 100 == 0) ctx.progress(0.5, "item " + std::to_string(i));
    }
}

void wait_until(const std::atomic<bool>& flag) {
    auto deadline = std::chrono::steady_clock::now() + kGenerousWait;
    while (!flag && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
    ASSERT_TRUE(flag.load());
}

}  // namespace

TEST(Jobs, SerialModeRunsInlineInOrder) {
    JobSystem js({.concurrency = 1, .serial = true});
    std::vector<int> order;
    JobId a = js.submit("", [&](JobContext& ctx) -> std::any {
        order.push_back(1);
        ctx.post(10);
        return 11;
    });
    JobId b = js.submit("", [&](JobContext&) -> std::any {
        order.push_back(2);
        return 22;
    });
    EXPECT_EQ(order, (std::vector<int>{1, 2}));  // both ran before submit returned
    EXPECT_EQ(js.status(a), JobStatus::done);
    auto msgs = js.drain();
    ASSERT_EQ(msgs.size(), 3u);
    EXPECT_EQ(std::any_cast<int>(msgs[0].payload), 10);
    EXPECT_FALSE(msgs[0].final);
    EXPECT_EQ(std::any_cast<int>(msgs[1].payload), 11);
    EXPECT_TRUE(msgs[1].final);
    EXPECT_EQ(msgs[2].id, b);
    EXPECT_TRUE(js.drain().empty());  // drained once
}

TEST(Jobs, FailedAndCancelledAreDistinctOutcomes) {
    JobSystem js({.concurrency = 1, .serial = true});
    JobId f = js.submit("", [](JobContext&) -> std::any { throw std::runtime_error("disk full"); });
    JobId c = js.submit("", [](JobContext& ctx) -> std::any {
        ctx.token().cancel();
        ctx.token().throw_if_cancelled();
        return {};
    });
    EXPECT_EQ(js.status(f), JobStatus::failed);
    EXPECT_EQ(js.status(c), JobStatus::cancelled);
    auto msgs = js.drain();
    ASSERT_EQ(msgs.size(), 2u);
    EXPECT_EQ(msgs[0].error, "disk full");
    EXPECT_EQ(msgs[1].status, JobStatus::cancelled);
    EXPECT_FALSE(js.status(12345).has_value());
}

TEST(Jobs, SupersededJobIsCancelledAndItsResultsDropped) {
    JobSystem js({.concurrency = 1});
    std::atomic<bool> started{false};
    JobId old_job = js.submit("preview", [&](JobContext& ctx) -> std::any {
        ctx.post(std::string("stale"));
        return spin_until_cancelled(ctx, &started);
    });
    wait_until(started);
    JobId new_job = js.submit("preview", [](JobContext& ctx) -> std::any { return std::string("fresh"); });
    EXPECT_EQ(js.latest("preview"), new_job);
    ASSERT_TRUE(js.wait(old_job, kGenerousWait));
    ASSERT_TRUE(js.wait(new_job, kGenerousWait));
    EXPECT_EQ(js.status(old_job), JobStatus::cancelled);
    auto msgs = js.drain();
    ASSERT_EQ(msgs.size(), 1u);  // the stale post and the old job's final message are gone
    EXPECT_EQ(msgs[0].id, new_job);
    EXPECT_EQ(std::any_cast<std::string>(msgs[0].payload), "fresh");
}

TEST(Jobs, CancelStopsQuicklyAndKeepsPostedResults) {
    JobSystem js({.concurrency = 1});
    std::atomic<bool> started{false};
    JobId id = js.submit("sweep", [&](JobContext& ctx) -> std::any {
        for (int i = 0; i < 3; ++i) ctx.post(i);  // finished results before the cancel
        return spin_until_cancelled(ctx, &started);
    });
    wait_until(started);
    auto t0 = std::chrono::steady_clock::now();
    js.cancel(id);
    ASSERT_TRUE(js.wait(id, kGenerousWait));
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("cancel latency: %.2f ms (target < 200 ms; see docs/performance.md for the benchmark)\n", ms);
    EXPECT_LT(ms, 2000.0);  // generous: a loaded CI machine; the 200 ms figure comes from the benchmark
    EXPECT_EQ(js.status(id), JobStatus::cancelled);
    auto msgs = js.drain();
    ASSERT_EQ(msgs.size(), 4u);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(std::any_cast<int>(msgs[i].payload), i);
    EXPECT_TRUE(msgs[3].final);
    EXPECT_EQ(msgs[3].status, JobStatus::cancelled);
}

TEST(Jobs, ProgressIsReadableWhileRunning) {
    JobSystem js({.concurrency = 1});
    std::atomic<bool> reported{false}, release{false};
    JobId id = js.submit("", [&](JobContext& ctx) -> std::any {
        ctx.progress(0.25, "config 1/4");
        reported = true;
        while (!release) std::this_thread::sleep_for(1ms);
        return {};
    });
    wait_until(reported);
    std::this_thread::sleep_for(5ms);
    auto p = js.progress(id);
    ASSERT_TRUE(p.has_value());
    EXPECT_DOUBLE_EQ(p->fraction, 0.25);
    EXPECT_EQ(p->item, "config 1/4");
    EXPECT_GT(p->elapsed_s, 0.0);
    EXPECT_NEAR(p->eta_s, 3 * p->elapsed_s, 1e-9);  // 3/4 left at the rate so far
    EXPECT_EQ(js.status(id), JobStatus::running);
    release = true;
    ASSERT_TRUE(js.wait(id, kGenerousWait));
    EXPECT_DOUBLE_EQ(js.progress(id)->fraction, 1.0);
}

TEST(Jobs, SubmitDoesNotBlockWhenTheWorkersAreBusy) {
    JobSystem js({.concurrency = 1});
    std::atomic<bool> started{false};
    js.submit("a", [&](JobContext& ctx) { return spin_until_cancelled(ctx, &started); });
    wait_until(started);
    // The only worker is busy: a second submit must still return at once, queued.
    auto t0 = std::chrono::steady_clock::now();
    JobId q = js.submit("b", [](JobContext&) -> std::any { return 1; });
    auto dt = std::chrono::steady_clock::now() - t0;
    EXPECT_LT(dt, 1s);
    EXPECT_EQ(js.status(q), JobStatus::queued);
    EXPECT_EQ(js.active(), 2u);
    js.cancel_all();
    ASSERT_TRUE(js.wait_idle(kGenerousWait));
    EXPECT_EQ(js.status(q), JobStatus::cancelled);  // cancelled before it started: never ran
}

TEST(Jobs, DestructorCancelsRunningJobs) {
    // A running job that only ends when cancelled, and a queued one behind it: destroying the system must cancel
    // the first through its token (not wait for it, which would hang) and never start the second.
    std::atomic<bool> started{false}, ended_by_cancel{false}, queued_ran{false};
    std::chrono::steady_clock::time_point t0;
    {
        JobSystem js({.concurrency = 1});
        js.submit("", [&](JobContext& ctx) -> std::any {
            try {
                return spin_until_cancelled(ctx, &started);
            } catch (...) {
                ended_by_cancel = ctx.token().cancelled();
                throw;
            }
        });
        wait_until(started);  // the only worker is busy: what comes next waits in the queue
        js.submit("", [&](JobContext&) -> std::any {
            queued_ran = true;
            return 0;
        });
        t0 = std::chrono::steady_clock::now();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - t0, kGenerousWait);
    EXPECT_TRUE(ended_by_cancel) << "the running job must have ended on its cancelled token";
    EXPECT_FALSE(queued_ran) << "a job still queued at destruction must not start";
}

TEST(Jobs, DefaultConcurrencyLeavesACoreForTheGui) {
    JobSystem js;
    int hw = static_cast<int>(std::thread::hardware_concurrency());
    EXPECT_EQ(js.concurrency(), std::max(1, hw - 1));
}
