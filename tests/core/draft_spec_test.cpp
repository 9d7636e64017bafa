// DraftSpec: JSON round trip (defaults and varied specs), strict parsing, validation messages naming the field,
// describe().
#include "core/drafts/draft_spec.h"

#include <gtest/gtest.h>

#include <random>

namespace speculum::drafts {
namespace {

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

DraftSpec random_self_spec(std::mt19937& rng) {
    std::uniform_int_distribution<int> bit(0, 1), t(0, 7);
    std::uniform_real_distribution<float> r(0.0f, 0.95f);
    DraftSpec s;
    s.label             = "spec " + std::to_string(rng() % 100);
    s.prune.ratio       = r(rng);
    s.prune.method      = bit(rng) ? PruneMethod::wanda : PruneMethod::magnitude;
    s.prune.attention   = bit(rng);
    s.prune.ffn         = true;
    s.prune.output      = bit(rng);
    s.prune.per_row     = bit(rng);
    s.prune.calibration = "datasets/x.jsonl";
    s.weight_trunc_bits = t(rng);
    s.trunc_rounding    = bit(rng) ? MantissaRounding::nearest_even : MantissaRounding::toward_zero;
    s.kv_trunc_bits     = t(rng);
    s.kv_drop_ratio     = r(rng);
    s.weight_format =
        s.weight_trunc_bits > 0 ? WeightFormat::bf16 : (bit(rng) ? WeightFormat::mxfp4 : WeightFormat::q8_0);
    s.format_output  = bit(rng);
    s.compact        = bit(rng);
    s.kv_from_target = bit(rng);
    s.exit_layer     = int32_t(rng() % 8);
    s.skip_attn      = {1, 3};
    s.skip_ffn       = {2};
    return s;
}

TEST(DraftSpec, JsonRoundTrip) {
    const DraftSpec d;
    EXPECT_EQ(nlohmann::json(d).get<DraftSpec>(), d);
    std::mt19937 rng(5);
    for (int i = 0; i < 50; ++i) {
        const DraftSpec s = random_self_spec(rng);
        EXPECT_NO_THROW(s.validate(8));
        EXPECT_EQ(nlohmann::json::parse(nlohmann::json(s).dump()).get<DraftSpec>(), s);
    }
    DraftSpec m;
    m.kind       = DraftKind::model;
    m.model_path = "small.gguf";
    EXPECT_EQ(nlohmann::json(m).get<DraftSpec>(), m);
    DraftSpec g;
    g.kind              = DraftKind::maxgram;
    g.maxgram.min_match = 2;
    g.bigram_corpus     = "c.jsonl";
    EXPECT_EQ(nlohmann::json(g).get<DraftSpec>(), g);
    g.maxgram.mode = MaxGramMode::periodic;
    EXPECT_EQ(nlohmann::json(g).get<DraftSpec>(), g);
    EXPECT_NE(g.describe().find("periodic"), std::string::npos);
    // Missing keys keep their defaults.
    EXPECT_EQ(nlohmann::json::parse(R"({"prune": {"ratio": 0.5}})").get<DraftSpec>().prune.method,
              PruneMethod::magnitude);
    const DraftSpec dflt = nlohmann::json::parse("{}").get<DraftSpec>();
    EXPECT_TRUE(dflt.compact);
    EXPECT_TRUE(dflt.kv_from_target);
    EXPECT_FALSE(nlohmann::json::parse(R"({"compact": false})").get<DraftSpec>().compact);
    EXPECT_FALSE(nlohmann::json::parse(R"({"kv_from_target": false})").get<DraftSpec>().kv_from_target);
}

TEST(DraftSpec, StrictJsonNamesTheKey) {
    auto parse = [](const char* text) { return error_of([&] { (void)nlohmann::json::parse(text).get<DraftSpec>(); }); };
    EXPECT_NE(parse(R"({"prune_ratio": 0.5})").find("draft.prune_ratio: is not a known key"), std::string::npos);
    EXPECT_NE(parse(R"({"prune": {"ratoi": 0.5}})").find("draft.prune.ratoi"), std::string::npos);
    EXPECT_NE(parse(R"({"weight_trunc_bits": "3"})").find("draft.weight_trunc_bits: expected an integer, got string"),
              std::string::npos);
    EXPECT_NE(parse(R"({"weight_format": "fp4"})").find("\"mxfp4\""), std::string::npos);
    EXPECT_NE(parse(R"({"skip_attn": [1, "x"]})").find("draft.skip_attn[1]"), std::string::npos);
    EXPECT_NE(parse(R"({"maxgram": {"min": 1}})").find("draft.maxgram.min"), std::string::npos);
    EXPECT_NE(parse(R"({"maxgram": {"mode": "wrap"}})")
                  .find("draft.maxgram.mode: \"wrap\" is not one of \"csdrafting\", \"periodic\""),
              std::string::npos);
    EXPECT_NE(parse(R"([1, 2])").find("draft: expected a JSON object, got array"), std::string::npos);
}

TEST(DraftSpec, ValidationRejectsEveryInvalidFieldByName) {
    auto err = [](auto mutate, int32_t n_layer = 8) {
        DraftSpec s;
        mutate(s);
        return error_of([&] { s.validate(n_layer); });
    };
    EXPECT_NE(err([](DraftSpec& s) { s.prune.ratio = 1.0f; }).find("draft.prune.ratio must be in [0, 1), got 1"),
              std::string::npos);
    EXPECT_NE(err([](DraftSpec& s) { s.prune.ratio = -0.1f; }).find("draft.prune.ratio"), std::string::npos);
    EXPECT_NE(err([](DraftSpec& s) { s.prune.ratio = NAN; }).find("draft.prune.ratio"), std::string::npos);
    EXPECT_NE(err([](DraftSpec& s) { s.kv_drop_ratio = 1.5f; }).find("draft.kv_drop_ratio"), std::string::npos);
    EXPECT_NE(err([](DraftSpec& s) { s.weight_trunc_bits = 8; }).find("draft.weight_trunc_bits must be in 0..7"),
              std::string::npos);
    EXPECT_NE(err([](DraftSpec& s) { s.kv_trunc_bits = -1; }).find("draft.kv_trunc_bits"), std::string::npos);
    EXPECT_NE(err([](DraftSpec& s) {
                  s.weight_trunc_bits = 2, s.weight_format = WeightFormat::mxfp4;
              }).find("cannot combine"),
              std::string::npos);
    EXPECT_NE(
        err([](DraftSpec& s) { s.exit_layer = 8; }).find("draft.exit_layer must be -1 (all layers) or a layer in 0..7"),
        std::string::npos);
    EXPECT_NE(err([](DraftSpec& s) {
                  s.skip_attn = {2, 9};
              }).find("draft.skip_attn names layer 9, but the target has 8 layers"),
              std::string::npos);
    EXPECT_NE(err([](DraftSpec& s) { s.skip_ffn = {-1}; }, -1).find("draft.skip_ffn names layer -1"),
              std::string::npos);
    EXPECT_NE(err([](DraftSpec& s) { s.skip_ffn = {3, 3}; }).find("twice"), std::string::npos);
    EXPECT_NE(err([](DraftSpec& s) {
                  s.prune.ratio = 0.5f, s.prune.attention = s.prune.ffn = false;
              }).find("selects no tensor class"),
              std::string::npos);
    EXPECT_NE(err([](DraftSpec& s) { s.kind = DraftKind::model; }).find("draft.model_path is required"),
              std::string::npos);
    EXPECT_NE(err([](DraftSpec& s) {
                  s.kind = DraftKind::maxgram, s.prune.ratio = 0.3f;
              }).find("apply only to kind \"self\""),
              std::string::npos);
    EXPECT_NE(err([](DraftSpec& s) { s.kind = DraftKind::maxgram, s.maxgram.min_match = 0; }).find("maxgram.min_match"),
              std::string::npos);
    EXPECT_EQ(err([](DraftSpec& s) { s.skip_attn = {9}; }, -1), "");  // no layer count known: only the lower bound
}

TEST(DraftSpec, Describe) {
    DraftSpec s;
    EXPECT_EQ(s.describe(), "self (identity)");
    s.prune.ratio       = 0.5f;
    s.weight_trunc_bits = 3;
    s.exit_layer        = 5;
    EXPECT_EQ(s.describe(), "prune 50% magnitude (attn+ffn, per row) + bf16 t=3 + exit@5");
    DraftSpec q;
    q.weight_format = WeightFormat::mxfp4;
    q.kv_drop_ratio = 0.25f;
    q.skip_ffn      = {1, 2};
    EXPECT_EQ(q.describe(), "mxfp4 + kv drop 25% + skip ffn {1,2}");
}

// Strict-subset storage: a round trip keeps it, files that leave it out read false, and each way to ask for it
// where it cannot hold is refused by name (a config with it on levels[1] too: spec_config_test).
TEST(DraftSpec, StrictSubsetRoundTripsAndIsRefusedWhereItCannotHold) {
    DraftSpec s;
    s.prune.ratio       = 0.5f;
    s.weight_trunc_bits = 4;
    s.strict_subset     = true;
    EXPECT_NO_THROW(s.validate(8));
    EXPECT_EQ(nlohmann::json::parse(nlohmann::json(s).dump()).get<DraftSpec>(), s);
    EXPECT_NE(s.describe().find("strict subset"), std::string::npos);
    EXPECT_FALSE(nlohmann::json(DraftSpec{}).contains("strict_subset"));  // written only when set
    EXPECT_FALSE(nlohmann::json::parse("{}").get<DraftSpec>().strict_subset);
    auto err = [&](auto mutate) {
        DraftSpec d = s;
        mutate(d);
        return error_of([&] { d.validate(8); });
    };
    EXPECT_NE(err([](DraftSpec& d) { d.compact = false; }).find("draft.strict_subset needs compact storage"),
              std::string::npos);
    EXPECT_NE(err([](DraftSpec& d) { d.prune.ratio = 0.0f, d.weight_trunc_bits = 0; }).find("draft.strict_subset"),
              std::string::npos);
    EXPECT_NE(err([](DraftSpec& d) {
                  d.trunc_rounding = MantissaRounding::nearest_even;
              }).find("draft.strict_subset needs trunc_rounding \"toward_zero\""),
              std::string::npos);
    EXPECT_NE(err([](DraftSpec& d) {
                  d.weight_format = WeightFormat::mxfp4, d.weight_trunc_bits = 0;
              }).find("draft.strict_subset"),
              std::string::npos);
    EXPECT_NE(err([](DraftSpec& d) {
                  d = DraftSpec{}, d.kind = DraftKind::maxgram, d.strict_subset = true;
              }).find("draft.strict_subset applies only to kind \"self\""),
              std::string::npos);
}

}  // namespace
}  // namespace speculum::drafts
