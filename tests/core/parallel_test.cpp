// parallel_for covers the range exactly once, in parallel or serial mode; CancelToken is shared by copies.
#include "core/parallel.h"
#include "core/cancel.h"

#include <gtest/gtest.h>

#include <atomic>
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
