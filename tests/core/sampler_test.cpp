// Sampler: greedy, temperature, top-k, top-p, seeded determinism, draw frequencies, config JSON and validation;
// plain generation deterministic for a seed.
#include "model_fixtures.h"

#include "core/model/generate.h"
#include "core/model/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>

using namespace speculum;
using namespace speculum::model;

namespace {
const std::vector<float> kLogits = {1.0f, 3.0f, 2.0f, 0.5f, 3.0f, -1.0f};
constexpr double kProbSumTol     = 1e-5;
}  // namespace

TEST(Sampler, GreedyIsArgmaxWithLowestIndexOnTies) {
    Sampler s;
    EXPECT_EQ(s.sample(kLogits), 1);
    std::vector<float> p;
    s.probabilities(kLogits, p);
    EXPECT_EQ(p, (std::vector<float>{0, 1, 0, 0, 0, 0}));
}

TEST(Sampler, TemperatureSoftmax) {
    Sampler s({.temperature = 2.0f});
    std::vector<float> p;
    s.probabilities(kLogits, p);
    double z = 0.0;
    for (float l : kLogits) z += std::exp(l / 2.0);
    for (size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(p[i], std::exp(kLogits[i] / 2.0) / z, 1e-6) << i;
}

TEST(Sampler, TopKAndTopPTruncateAndRenormalise) {
    std::vector<float> p;
    Sampler k2({.temperature = 1.0f, .top_k = 2});
    k2.probabilities(kLogits, p);
    EXPECT_NEAR(p[1], 0.5, 1e-6);  // the two tied 3.0 logits share everything
    EXPECT_NEAR(p[4], 0.5, 1e-6);
    EXPECT_EQ(p[2], 0.0f);

    // softmax(kLogits): ~[.05, .37, .14, .03, .37, .007]; top_p 0.8 keeps 1, 4 and then 2 (0.74 < 0.8).
    Sampler tp({.temperature = 1.0f, .top_p = 0.8f});
    tp.probabilities(kLogits, p);
    EXPECT_GT(p[2], 0.0f);
    EXPECT_EQ(p[0], 0.0f);
    EXPECT_EQ(p[3], 0.0f);
    EXPECT_NEAR(std::accumulate(p.begin(), p.end(), 0.0), 1.0, kProbSumTol);
    Sampler tp_small({.temperature = 1.0f, .top_p = 0.3f});
    tp_small.probabilities(kLogits, p);
    EXPECT_EQ(std::count_if(p.begin(), p.end(), [](float x) { return x > 0; }), 1);
}

TEST(Sampler, DrawFrequenciesFollowTheProbabilities) {
    Sampler s({.temperature = 1.0f, .seed = 7});
    std::vector<float> p;
    s.probabilities(kLogits, p);
    std::vector<int> counts(kLogits.size(), 0);
    const int n = 20000;
    for (int i = 0; i < n; ++i) ++counts[static_cast<size_t>(s.sample(kLogits))];
    for (size_t i = 0; i < p.size(); ++i) {
        const double sd = std::sqrt(p[i] * (1 - p[i]) / n);
        EXPECT_NEAR(counts[i] / double(n), p[i], 5 * sd + 1e-4) << i;  // 5 sigma
    }
}

TEST(Sampler, SameSeedSameDraws) {
    Sampler a({.temperature = 0.8f, .top_k = 4, .seed = 99}), b({.temperature = 0.8f, .top_k = 4, .seed = 99});
    Sampler c({.temperature = 0.8f, .top_k = 4, .seed = 100});
    std::vector<int32_t> da, db, dc;
    for (int i = 0; i < 64; ++i)
        da.push_back(a.sample(kLogits)), db.push_back(b.sample(kLogits)), dc.push_back(c.sample(kLogits));
    EXPECT_EQ(da, db);
    EXPECT_NE(da, dc);
}

TEST(SamplerConfig, JsonRoundTripAndValidation) {
    const SamplerConfig c{.temperature = 0.7f, .top_k = 40, .top_p = 0.9f, .seed = 123456789012345ull};
    EXPECT_EQ(nlohmann::json(c).get<SamplerConfig>(), c);
    EXPECT_EQ(nlohmann::json::object().get<SamplerConfig>(), SamplerConfig{});
    EXPECT_THROW((SamplerConfig{.top_p = 0.0f}).validate(), std::invalid_argument);
    EXPECT_THROW((SamplerConfig{.top_p = 1.5f}).validate(), std::invalid_argument);
    EXPECT_THROW((SamplerConfig{.temperature = -1.0f}).validate(), std::invalid_argument);
    EXPECT_THROW((SamplerConfig{.top_k = -2}).validate(), std::invalid_argument);
    EXPECT_THROW(Sampler({.temperature = NAN}), std::invalid_argument);
}

TEST(Generate, DeterministicForASeedAndGreedyMatchesArgmax) {
    const Model m = make_synthetic_model(test::spec_gqa(kernels::GgmlType::Q8_0));
    auto run      = [&](SamplerConfig sc) {
        InferenceContext ctx(m, {.n_ctx = 64, .n_batch = 4});
        Sampler s(sc);
        std::vector<int32_t> out;
        generate(ctx, s, {1, 2, 3, 4, 5}, 12, [&](int32_t t) {
            out.push_back(t);
            return true;
        });
        return out;
    };
    const auto a = run({.temperature = 1.0f, .seed = 5});
    EXPECT_EQ(a.size(), 12u);
    EXPECT_EQ(a, run({.temperature = 1.0f, .seed = 5}));
    EXPECT_NE(a, run({.temperature = 1.0f, .seed = 6}));

    const auto g             = run({});
    std::vector<int32_t> seq = {1, 2, 3, 4, 5};
    for (int i = 0; i < 12; ++i) {
        const auto logits = test::decode_all(m, seq, ForwardPath::fast).back();
        EXPECT_EQ(g[static_cast<size_t>(i)], argmax(logits)) << i;
        seq.push_back(argmax(logits));
    }
}

TEST(Generate, StopsOnEosAndRejectsOverflow) {
    const Model m = make_synthetic_model(test::spec_gqa(kernels::GgmlType::F16));
    InferenceContext ctx(m, {.n_ctx = 16, .n_batch = 4});
    Sampler s;
    std::vector<int32_t> out;
    const auto first = [&] {
        InferenceContext c2(m, {.n_ctx = 16, .n_batch = 4});
        return argmax(c2.prefill({1, 2, 3}));
    }();
    const GenerateStats st = generate(
        ctx, s, {1, 2, 3}, 8,
        [&](int32_t t) {
            out.push_back(t);
            return true;
        },
        {}, first);
    EXPECT_EQ(out, std::vector<int32_t>{first});
    EXPECT_EQ(st.n_decoded, 1);
    InferenceContext small(m, {.n_ctx = 16, .n_batch = 4});
    EXPECT_THROW(generate(small, s, {1, 2, 3}, 14, {}), std::invalid_argument);
}

TEST(Sampler, NonFiniteLogitsAreAnErrorNotTokenZero) {
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    EXPECT_THROW(argmax(std::vector<float>{nan, 1.0f, 2.0f}), NonFiniteLogits);
    EXPECT_THROW(argmax(std::vector<float>{0.0f, 1.0f, inf}), NonFiniteLogits);
    EXPECT_THROW(argmax(std::vector<float>{-inf, -inf}), NonFiniteLogits);
    EXPECT_EQ(argmax(std::vector<float>{-inf, 0.5f, 0.5f}), 1);  // masked tokens are fine; ties take the lowest
    Sampler s(SamplerConfig{.temperature = 0.8f, .seed = 3});
    EXPECT_THROW(s.sample(std::vector<float>{0.0f, nan}), NonFiniteLogits);
}
