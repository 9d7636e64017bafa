// Background jobs: results apply on drain, a newer job of the same slot supersedes (its predecessor's results are
// dropped), cancel is an outcome, failures carry the message, and posted partial results arrive in order.
#include "ui/background_jobs.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

using namespace speculum;
using namespace std::chrono_literals;

namespace {
std::vector<ui::JobOutcome> drain_until(ui::BackgroundJobs& jobs, size_t n) {
    std::vector<ui::JobOutcome> all;
    for (int i = 0; i < 5000 && all.size() < n; ++i) {
        for (auto& o : jobs.drain()) all.push_back(o);
        std::this_thread::sleep_for(1ms);
    }
    return all;
}
}  // namespace

TEST(BackgroundJobs, AppliesResultAndPartials) {
    ui::BackgroundJobs jobs;
    std::vector<int> seen;
    jobs.submit("a", "count", [&](ui::JobContext& ctx) -> std::function<void()> {
        for (int i = 0; i < 3; ++i) ctx.post([&seen, i] { seen.push_back(i); });
        ctx.progress(1.0, "done");
        return [&seen] { seen.push_back(99); };
    });
    auto out = drain_until(jobs, 1);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].status, ui::JobStatus::done);
    EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 99}));
    EXPECT_FALSE(jobs.any_running());
}

TEST(BackgroundJobs, NewerJobSupersedesStaleOne) {
    ui::BackgroundJobs jobs;
    std::atomic<bool> first_cancelled{false};
    int applied = 0;
    jobs.submit("slot", "old", [&](ui::JobContext& ctx) -> std::function<void()> {
        while (!ctx.cancel.cancelled()) std::this_thread::sleep_for(1ms);
        first_cancelled = true;
        return [&applied] { applied = 1; };  // must never run: superseded
    });
    ui::JobId second = jobs.submit("slot", "new", [&](ui::JobContext&) -> std::function<void()> {
        return [&applied] { applied = 2; };
    });
    auto out = drain_until(jobs, 1);
    for (int i = 0; i < 200 && !first_cancelled; ++i) std::this_thread::sleep_for(1ms);
    for (auto& o : jobs.drain()) out.push_back(o);
    EXPECT_TRUE(first_cancelled);
    ASSERT_EQ(out.size(), 1u) << "the superseded job's outcome is dropped silently";
    EXPECT_EQ(out[0].id, second);
    EXPECT_EQ(applied, 2);
}

TEST(BackgroundJobs, UserCancelAndFailure) {
    ui::BackgroundJobs jobs;
    ui::JobId a = jobs.submit("a", "long", [](ui::JobContext& ctx) -> std::function<void()> {
        for (;;) {
            ctx.cancel.throw_if_cancelled();
            std::this_thread::sleep_for(1ms);
        }
    });
    jobs.submit("b", "bad", [](ui::JobContext&) -> std::function<void()> { throw std::runtime_error("bad.gguf: truncated"); });
    jobs.cancel(a);
    auto out = drain_until(jobs, 2);
    ASSERT_EQ(out.size(), 2u);
    for (auto& o : out) {
        if (o.id == a) {
            EXPECT_EQ(o.status, ui::JobStatus::canceled);
            EXPECT_TRUE(o.canceled_by_user);
        } else {
            EXPECT_EQ(o.status, ui::JobStatus::failed);
            EXPECT_EQ(o.error, "bad.gguf: truncated");
        }
    }
}

TEST(BackgroundJobs, DestructorCancelsRunningJobs) {
    auto start = std::chrono::steady_clock::now();
    {
        ui::BackgroundJobs jobs;
        jobs.submit("a", "forever", [](ui::JobContext& ctx) -> std::function<void()> {
            while (!ctx.cancel.cancelled()) std::this_thread::sleep_for(1ms);
            return {};
        });
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}
