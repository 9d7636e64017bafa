// speculation_profile.json: a measured run's profile (conditional and marginal rates agree, the histogram and mean
// length are the run's), its round trip, files with one of the two rate lists, errors naming the field; and the
// synthetic-acceptance exports, checked against llama.cpp's documented rules for --spec-synth-rates
// (comma-separated, finite, in [0, 1], non-increasing: unconditional rates).
#include "core/engine/acceptance_profile.h"

#include "support/fresh_path.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace speculum::engine {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

RunStats measured() {
    RunStats s;
    s.n_generated       = 40;
    s.n_steps           = 12;
    s.n_drafted         = 44;
    s.pos_reached       = {12, 10, 8, 5};
    s.pos_accepted      = {10, 8, 5, 3};
    s.accepted_len_hist = {2, 2, 3, 2, 3};
    return s;
}

std::string error_of(const json& j) {
    try {
        (void)j.get<AcceptanceProfile>();
    } catch (const std::exception& e) {
        return e.what();
    }
    return "";
}

// llama.cpp's checks on --spec-synth-rates P0,P1,...: every value finite and in [0, 1], non-increasing.
std::vector<double> parse_like_llama_cpp(const std::string& flag) {
    const std::string prefix = "--spec-synth-rates ";
    EXPECT_EQ(flag.rfind(prefix, 0), 0u) << flag;
    std::vector<double> rates;
    std::stringstream in(flag.substr(prefix.size()));
    std::string item;
    while (std::getline(in, item, ',')) {
        EXPECT_EQ(item.find(' '), std::string::npos) << "no spaces in the list: " << flag;
        size_t used    = 0;
        const double v = std::stod(item, &used);
        EXPECT_EQ(used, item.size()) << item;
        EXPECT_TRUE(std::isfinite(v) && v >= 0 && v <= 1) << item;
        if (!rates.empty()) {
            EXPECT_LE(v, rates.back()) << "non-increasing: " << flag;
        }
        rates.push_back(v);
    }
    return rates;
}

TEST(AcceptanceProfile, AMeasuredRunsProfileRoundTrips) {
    MeasurementConditions c;
    c.dataset = "prose_continuation.jsonl", c.osl = 64, c.num_samples = 4, c.num_speculative_tokens = 4;
    const AcceptanceProfile p = acceptance_profile(measured(), c);
    EXPECT_EQ(p.conditional, measured().alpha());
    ASSERT_EQ(p.marginal.size(), 4u);
    EXPECT_DOUBLE_EQ(p.marginal[0], 10.0 / 12.0);
    EXPECT_DOUBLE_EQ(p.marginal[3], (10.0 / 12) * (8.0 / 10) * (5.0 / 8) * (3.0 / 5));
    EXPECT_DOUBLE_EQ(p.mean_accept_length, 40.0 / 12.0);
    EXPECT_EQ(p.histogram, measured().accepted_len_hist);
    EXPECT_NO_THROW(p.validate());
    const json j = p;
    EXPECT_EQ(j["version"], kAcceptanceProfileVersion);
    EXPECT_EQ(j["measurement_conditions"]["dataset"], "prose_continuation.jsonl");
    EXPECT_EQ(j.get<AcceptanceProfile>(), p);

    const auto path = test::fresh_tmp_path("speculation_profile.json");
    std::ofstream(path) << j.dump(2);
    EXPECT_EQ(load_acceptance_profile(path.string()), p);
}

TEST(AcceptanceProfile, EitherRateListIsEnoughAndBothMustAgree) {
    const AcceptanceProfile from_marginal = json{{"marginal_accept_rates", {0.8, 0.6, 0.3}}}.get<AcceptanceProfile>();
    EXPECT_NEAR(from_marginal.conditional[1], 0.75, 1e-12);
    EXPECT_NEAR(from_marginal.conditional[2], 0.5, 1e-12);
    EXPECT_NEAR(from_marginal.mean_accept_length, 1 + 0.8 + 0.6 + 0.3, 1e-12) << "the chain's expectation";
    const AcceptanceProfile from_conditional =
        json{{"conditional_accept_rates", {0.8, 0.75, 0.5}}}.get<AcceptanceProfile>();
    EXPECT_NEAR(from_conditional.marginal[2], 0.3, 1e-12);

    EXPECT_THAT(error_of(json::object()), HasSubstr("profile.conditional_accept_rates: missing"));
    EXPECT_THAT(error_of({{"marginal_accept_rates", {0.5, 0.7}}}),
                HasSubstr("profile.conditional_accept_rates[1]: must be in [0, 1]"));
    EXPECT_THAT(error_of({{"conditional_accept_rates", {0.8}}, {"marginal_accept_rates", {0.7}}}),
                HasSubstr("profile.marginal_accept_rates[0]: is not the product"));
    EXPECT_THAT(error_of({{"conditional_accept_rates", {0.8}}, {"rates", 1}}),
                HasSubstr("profile.rates: is not a known key"));
    EXPECT_THAT(error_of({{"conditional_accept_rates", {0.8}}, {"measurement_conditions", {{"osl", "long"}}}}),
                HasSubstr("profile.measurement_conditions.osl: expected an integer"));
    EXPECT_THAT(error_of({{"conditional_accept_rates", {0.8}}, {"version", 2}}), HasSubstr("profile.version"));
    EXPECT_THROW((void)load_acceptance_profile("/nonexistent/speculation_profile.json"), std::invalid_argument);
}

TEST(AcceptanceProfile, SyntheticExportsAreWhatLlamaCppAndVllmTake) {
    const AcceptanceProfile p       = acceptance_profile(measured(), {});
    const std::string flag          = llama_cpp_synth_rates(p);
    const std::vector<double> rates = parse_like_llama_cpp(flag);
    ASSERT_EQ(rates.size(), p.marginal.size());
    for (size_t i = 0; i < rates.size(); ++i) EXPECT_NEAR(rates[i], p.marginal[i], 5e-4);
    const json v = vllm_synthetic_config(p);
    EXPECT_EQ(v["rejection_sample_method"], "synthetic");
    EXPECT_EQ(v["synthetic_acceptance_rates"].get<std::vector<double>>(), p.marginal);
    EXPECT_EQ(v["num_speculative_tokens"], 4);
    // Positions that round to nothing are not sent (a zero rate after a zero adds no information).
    AcceptanceProfile tail = json{{"conditional_accept_rates", {0.5, 0.0001, 0.5}}}.get<AcceptanceProfile>();
    EXPECT_EQ(llama_cpp_synth_rates(tail), "--spec-synth-rates 0.500");
    EXPECT_EQ(llama_cpp_synth_rates(AcceptanceProfile{}), "");
}

}  // namespace
}  // namespace speculum::engine
