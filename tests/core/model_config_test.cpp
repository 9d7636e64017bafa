// JSON round trips and validation of the runtime's config structs (ContextConfig, BenchConfig).
#include "core/model/forward.h"
#include "core/model/runtime_bench.h"

#include <gtest/gtest.h>

using namespace speculum::model;

TEST(ContextConfig, JsonRoundTripAndValidation) {
    const ContextConfig c{.n_ctx = 512, .n_batch = 8, .path = ForwardPath::reference, .int8_activations = false};
    EXPECT_EQ(nlohmann::json(c).get<ContextConfig>(), c);
    EXPECT_NE(nlohmann::json(c).get<ContextConfig>(), ContextConfig{});
    EXPECT_EQ(nlohmann::json::object().get<ContextConfig>(), ContextConfig{});
    EXPECT_THROW((nlohmann::json{{"path", "gpu"}}.get<ContextConfig>()), std::invalid_argument);
    EXPECT_THROW((ContextConfig{.n_batch = 0}).validate(), std::invalid_argument);
    EXPECT_THROW((ContextConfig{.n_ctx = -1}).validate(), std::invalid_argument);
}

TEST(BenchConfig, JsonRoundTripAndValidation) {
    const BenchConfig c{.n_prompt        = 16,
                        .n_decode        = 4,
                        .batch_sizes     = {1, 8},
                        .repeats         = 2,
                        .membw_bytes     = 0,
                        .peak_probe      = false,
                        .thread_cpu_time = true};
    EXPECT_EQ(nlohmann::json(c).get<BenchConfig>(), c);
    EXPECT_EQ(nlohmann::json::object().get<BenchConfig>(), BenchConfig{});
    EXPECT_THROW((BenchConfig{.batch_sizes = {0}}).validate(), std::invalid_argument);
    EXPECT_THROW((BenchConfig{.membw_bytes = 1000}).validate(), std::invalid_argument);
    EXPECT_THROW((BenchConfig{.repeats = 0}).validate(), std::invalid_argument);
}
