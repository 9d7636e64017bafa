// Decode and verification attention (kernels/attention.h): the AVX-512 kernel against its scalar reference over
// head blocks, head widths, GQA offsets, slot lists (cached slots out of order, repeats, one slot), peaked and flat
// score ranges and soft-capping; the fallbacks (other head widths, the scalar cap) are the reference bit for bit.
#include "kernels/attention.h"
#include "kernels/gemv.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

using namespace speculum::kernels;

namespace {

// Relative to the largest |v| of a case: the kernel sums each dot product in 16 lanes instead of in order, and its
// polynomial exp is within a few ulp of std::exp; a softmax-weighted mean of values moves by about that much.
constexpr double kAttendRelTol = 1e-5;

struct Case {
    int32_t nh, hd, group, m;
    float q_scale, cap;
};

struct Data {
    std::vector<float> q, k, v;
    std::vector<int64_t> kv_off;
    std::vector<int32_t> slots;
    int64_t ld = 0;
};

Data make(const Case& c, std::mt19937& rng) {
    std::normal_distribution<float> g(0.0f, 1.0f);
    const int32_t n_kv = (c.nh + c.group - 1) / c.group, n_slots = c.m + 7;
    Data d;
    d.ld = static_cast<int64_t>(n_kv) * c.hd + 3;  // rows padded: the stride is not the heads' width
    d.q.resize(static_cast<size_t>(c.nh) * c.hd);
    d.k.resize(static_cast<size_t>(n_slots * d.ld));
    d.v.resize(d.k.size());
    for (auto& x : d.q) x = g(rng) * c.q_scale;
    for (auto& x : d.k) x = g(rng);
    for (auto& x : d.v) x = g(rng);
    for (int32_t b = 0; b < c.nh; ++b) d.kv_off.push_back(static_cast<int64_t>(b / c.group) * c.hd);
    std::uniform_int_distribution<int32_t> pick(0, n_slots - 1);
    for (int32_t t = 0; t < c.m; ++t) d.slots.push_back(pick(rng));  // any order, repeats allowed
    return d;
}

std::vector<float> run(bool fast, const Case& c, const Data& d) {
    std::vector<float> out(static_cast<size_t>(c.nh) * c.hd, -7.0f);  // poisoned: every element must be written
    (fast ? attend : attend_ref)(out.data(), d.q.data(), d.k.data(), d.v.data(), d.ld, d.kv_off.data(), d.slots.data(),
                                 c.m, c.nh, c.hd, 1.0f / std::sqrt(float(c.hd)), c.cap, nullptr);
    return out;
}

}  // namespace

TEST(Attend, FastMatchesReference) {
    if (!attend_fast_available(64)) GTEST_SKIP() << "no AVX-512 kernels on this CPU";
    std::mt19937 rng(11);
    double worst = 0;
    for (const Case c : {Case{8, 64, 1, 170, 1.0f, 0.0f}, Case{8, 64, 2, 1, 1.0f, 0.0f}, Case{1, 16, 1, 5, 1.0f, 0.0f},
                         Case{3, 128, 3, 41, 1.0f, 0.0f}, Case{16, 32, 4, 260, 1.0f, 0.0f},
                         Case{8, 64, 1, 90, 12.0f, 0.0f},  // peaked: scores up to about +-100, many rescales
                         Case{8, 64, 1, 90, 12.0f, 30.0f}, Case{5, 48, 1, 33, 0.01f, 0.0f}}) {
        SCOPED_TRACE(testing::Message() << "nh " << c.nh << " hd " << c.hd << " group " << c.group << " m " << c.m
                                        << " q_scale " << c.q_scale << " cap " << c.cap);
        const Data d   = make(c, rng);
        const auto ref = run(false, c, d), fast = run(true, c, d);
        double scale = 0;
        for (float x : d.v) scale = std::max(scale, double(std::abs(x)));
        for (size_t i = 0; i < ref.size(); ++i) {
            ASSERT_TRUE(std::isfinite(fast[i])) << i;
            EXPECT_NEAR(fast[i], ref[i], kAttendRelTol * scale) << i;
            worst = std::max(worst, std::abs(double(fast[i]) - ref[i]) / scale);
        }
    }
    EXPECT_GT(worst, 0.0) << "the fast kernel gave the reference bit for bit: did it run?";
    if (getenv("SPECULUM_TEST_VERBOSE")) printf("worst attend vs ref rel diff %.3g\n", worst);
}

TEST(Attend, FallbacksAreTheReference) {
    std::mt19937 rng(12);
    const Case odd{4, 72, 1, 20, 1.0f, 0.0f};  // 72 is not a multiple of 16
    EXPECT_FALSE(attend_fast_available(72));
    const Data d = make(odd, rng);
    EXPECT_EQ(run(true, odd, d), run(false, odd, d));
    const Case c{8, 64, 1, 20, 1.0f, 0.0f};
    const Data e = make(c, rng);
    set_kernel_isa_cap(KernelIsa::avx2);
    EXPECT_FALSE(attend_fast_available(64));
    const auto capped = run(true, c, e);
    set_kernel_isa_cap(KernelIsa::avx512);
    EXPECT_EQ(capped, run(false, c, e));
}

TEST(Attend, OneSlotGivesItsValuesAndNoSlotsGiveZeros) {
    std::mt19937 rng(13);
    for (bool fast : {false, true}) {
        const Case c{4, 64, 2, 1, 3.0f, 0.0f};
        const Data d   = make(c, rng);
        const auto out = run(fast, c, d);
        for (int32_t b = 0; b < c.nh; ++b)
            for (int32_t i = 0; i < c.hd; ++i)
                EXPECT_EQ(out[static_cast<size_t>(b * c.hd + i)],
                          d.v[static_cast<size_t>(d.slots[0] * d.ld + d.kv_off[b] + i)])
                    << b << " " << i;
        const Case none{4, 64, 2, 0, 1.0f, 0.0f};
        for (float x : run(fast, none, d)) EXPECT_EQ(x, 0.0f);
    }
}

// Attention sinks (gpt-oss): each head's softmax also counts exp(sink), so the output is the sinkless one times
// sum / (sum + exp(sink)); the fast kernel matches the reference with them, and a very negative sink changes nothing.
TEST(Attend, SinksScaleTheWeightsDown) {
    std::mt19937 rng(5);
    const Case c{8, 64, 2, 37, 0.5f, 0.0f};
    const Data d = make(c, rng);
    std::vector<float> sinks(8), none(8, -1e4f);
    std::normal_distribution<float> g(0.0f, 2.0f);
    for (float& s : sinks) s = g(rng);
    auto go = [&](bool fast, const float* sk) {
        std::vector<float> out(static_cast<size_t>(c.nh) * c.hd, -7.0f);
        (fast ? attend : attend_ref)(out.data(), d.q.data(), d.k.data(), d.v.data(), d.ld, d.kv_off.data(),
                                     d.slots.data(), c.m, c.nh, c.hd, 1.0f / std::sqrt(float(c.hd)), c.cap, sk);
        return out;
    };
    const std::vector<float> plain = go(false, nullptr), ref = go(false, sinks.data()), fast = go(true, sinks.data());
    double vmax = 0;
    for (float x : plain) vmax = std::max(vmax, double(std::fabs(x)));
    for (size_t i = 0; i < ref.size(); ++i) EXPECT_NEAR(fast[i], ref[i], kAttendRelTol * vmax) << i;
    const std::vector<float> off = go(false, none.data());
    for (size_t i = 0; i < ref.size(); ++i) EXPECT_NEAR(off[i], plain[i], 1e-6 * vmax) << i;
    // Head b scaled by one factor in (0, 1): the same for every element of the head.
    for (int32_t b = 0; b < c.nh; ++b) {
        const float* p = &plain[size_t(b) * c.hd];
        const float* r = &ref[size_t(b) * c.hd];
        const double f = double(r[0]) / p[0];
        EXPECT_GT(f, 0.0);
        EXPECT_LT(f, 1.0);
        for (int32_t x = 1; x < c.hd; ++x) EXPECT_NEAR(r[x], f * p[x], 1e-5 * vmax);
    }
}
