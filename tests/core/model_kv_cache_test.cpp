// KV cache bookkeeping: capacity errors, truncate, and compaction of a verified tree path.
#include "core/model/kv_cache.h"

#include <gtest/gtest.h>

using speculum::model::KvCache;
using speculum::model::KvCacheFull;

namespace {
void fill(KvCache& c, int32_t slot, float v) {
    for (int32_t il = 0; il < c.n_layer(); ++il)
        for (int32_t d = 0; d < c.n_embd_kv(); ++d) c.k(il, slot)[d] = v + il, c.v(il, slot)[d] = -v - il;
}
}  // namespace

TEST(KvCache, GrowTruncateAndFull) {
    KvCache c(2, 8, 4);
    EXPECT_EQ(c.capacity(), 8);
    EXPECT_EQ(c.bytes_per_token(), 2u * 4 * 2 * 4);
    c.grow(5);
    EXPECT_EQ(c.size(), 5);
    c.truncate(2);
    EXPECT_EQ(c.size(), 2);
    EXPECT_THROW(c.truncate(3), std::out_of_range);
    EXPECT_THROW(c.grow(7), KvCacheFull);
    EXPECT_EQ(c.size(), 2);
    c.grow(6);
    EXPECT_EQ(c.size(), 8);
    EXPECT_THROW(KvCache(0, 8, 4), std::invalid_argument);
}

TEST(KvCache, CompactKeepsThePathInOrder) {
    KvCache c(2, 16, 3);
    c.grow(8);
    for (int32_t s = 0; s < 8; ++s) fill(c, s, static_cast<float>(s));
    c.compact(3, {4, 6, 7});
    ASSERT_EQ(c.size(), 6);
    const float expect[] = {0, 1, 2, 4, 6, 7};
    for (int32_t s = 0; s < 6; ++s)
        for (int32_t il = 0; il < 2; ++il) {
            EXPECT_EQ(c.k(il, s)[2], expect[s] + il) << s;
            EXPECT_EQ(c.v(il, s)[0], -expect[s] - il) << s;
        }
    EXPECT_THROW(c.compact(2, {4, 3}), std::out_of_range);  // not increasing
    EXPECT_THROW(c.compact(2, {1}), std::out_of_range);     // inside the prefix
    EXPECT_THROW(c.compact(2, {6}), std::out_of_range);     // past size()
    c.compact(6, {});
    EXPECT_EQ(c.size(), 6);
}
