// Deployment manifest: JSON round-trip (default, full and randomized), strict loading that names unknown keys and
// wrong types, validation, the model-hash check and figures from a run.
#include "core/export/manifest.h"
#include "core/export/sha256.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

using namespace speculum;
using exporting::Manifest;

namespace {

Manifest sample_manifest() {
    Manifest m;
    m.name       = "mxfp4 chain";
    m.generator  = "speculum test";
    m.created_at = "2026-01-02T03:04:05Z";
    m.model      = {"/models/target.gguf", std::string(64, 'a'), "llama", "target", 8, 2048, 320, 20074112};
    drafts::DraftSpec d;
    d.weight_format = drafts::WeightFormat::mxfp4;
    d.exit_layer    = 5;
    m.config.levels = {d};
    m.config.gamma  = {4};
    m.config.p_min  = 0.5f;
    exporting::MeasuredFigures r;
    r.speedup = 1.7, r.tokens_per_s = 90.5, r.baseline_tokens_per_s = 53.2, r.mean_accepted_length = 2.9;
    r.bytes_per_token = 1.5e6, r.pos_reached = {100, 80, 60, 40}, r.pos_accepted = {80, 60, 40, 20};
    r.cost_ratio = {0.12}, r.n_generated = 290, r.n_steps = 100, r.n_prompts = 2, r.source = "test";
    m.figures.measured = r;
    exporting::PredictedFigures p;
    p.speedup = 1.9, p.ewif = 1.9, p.expected_tokens = 2.8, p.alpha = {0.8, 0.75}, p.cost_ratio = 0.12;
    p.basis             = "measured";
    m.figures.predicted = p;
    m.hardware          = hw::find_profile(hw::hardware_dir(), "rtx4090");
    return m;
}

Manifest round_trip(const Manifest& m) {
    return nlohmann::json::parse(nlohmann::json(m).dump()).get<Manifest>();
}

std::string error_of(const std::string& text) {
    try {
        Manifest m = nlohmann::json::parse(text).get<Manifest>();
        m.validate();
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(Manifest, DefaultAndFullRoundTrip) {
    Manifest d;
    d.model.path    = "t.gguf";
    d.config.levels = {drafts::DraftSpec{}};
    EXPECT_EQ(round_trip(d), d);
    const Manifest m = sample_manifest();
    m.validate();
    EXPECT_EQ(round_trip(m), m);
    const nlohmann::json j = m;
    EXPECT_EQ(j.at("format"), "speculum.manifest");
    EXPECT_EQ(j.at("version"), exporting::kManifestVersion);
    // Derived figures are written for readers and ignored on load.
    EXPECT_EQ(j.at("figures").at("measured").at("alpha"), (std::vector<double>{0.8, 0.75, 40.0 / 60, 0.5}));
    EXPECT_EQ(j.at("figures").at("measured").at("acceptance_rate_per_position"),
              (std::vector<double>{0.8, 0.6, 0.4, 0.2}));
}

TEST(Manifest, RandomizedRoundTrip) {
    std::mt19937 rng(1234);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (int trial = 0; trial < 50; ++trial) {
        Manifest m                       = sample_manifest();
        m.name                           = "trial " + std::to_string(trial);
        m.config.gamma                   = {1 + int32_t(rng() % 16)};
        m.config.p_min                   = float(u(rng) * 0.9);
        m.config.levels[0].prune.ratio   = float(u(rng) * 0.9);
        m.config.levels[0].weight_format = drafts::WeightFormat(rng() % 4);
        if (m.config.levels[0].weight_format == drafts::WeightFormat::same)
            m.config.levels[0].weight_trunc_bits = int32_t(rng() % 8);
        m.config.sampling.temperature    = rng() % 2 ? 0.0f : float(u(rng) + 0.1);
        m.config.sampling.seed           = rng();
        m.figures.measured->speedup      = u(rng) * 4;
        m.figures.measured->pos_reached  = {int64_t(rng() % 1000) + 10};
        m.figures.measured->pos_accepted = {m.figures.measured->pos_reached[0] / 2};
        m.figures.predicted->alpha       = {u(rng), u(rng), u(rng)};
        m.model.file_bytes               = (uint64_t(rng()) << 20) + rng();
        if (trial % 3 == 0) m.hardware.reset();
        if (trial % 4 == 0) m.figures.measured.reset();
        ASSERT_NO_THROW(m.validate()) << trial;
        ASSERT_EQ(round_trip(m), m) << nlohmann::json(m).dump(1);
    }
}

TEST(Manifest, UnknownKeysAndWrongTypesAreNamed) {
    EXPECT_EQ(error_of(R"({"format": "speculum.manifest", "model": {"path": "t", "bogus": 1}})"),
              "manifest.model.bogus: is not a known key");
    EXPECT_EQ(error_of(R"({"format": "speculum.manifest", "extra": true})"), "manifest.extra: is not a known key");
    EXPECT_EQ(error_of(R"({"format": "speculum.manifest", "figures": {"measured": {"speedup": "fast"}}})"),
              "manifest.figures.measured.speedup: expected a number, got string");
    EXPECT_EQ(error_of(R"({"format": "speculum.manifest", "model": {"path": "t", "n_layer": 1.5}})"),
              "manifest.model.n_layer: expected an integer, got a fractional number");
    EXPECT_EQ(error_of(R"({"format": "speculum.manifest", "model": {"file_bytes": -3}})"),
              "manifest.model.file_bytes: expected a non-negative integer, got an integer");
    EXPECT_NE(error_of(R"({"format": "speculum.manifest", "config": {"levels": [{"kind": "self", "oops": 1}]}})")
                  .find("manifest.config: spec.levels[0]: draft.oops: is not a known key"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"format": "speculum.manifest", "hardware": {"id": 3}})").find("manifest.hardware"),
              std::string::npos);
}

TEST(Manifest, FormatVersionAndValidation) {
    EXPECT_EQ(error_of(R"({"format": "something else"})"),
              "manifest.format: expected \"speculum.manifest\", got \"something else\"");
    EXPECT_NE(error_of(R"({"format": "speculum.manifest", "version": 99})").find("written by a newer Speculum"),
              std::string::npos);
    Manifest m     = sample_manifest();
    m.model.sha256 = "ABC";
    EXPECT_THROW(m.validate(), std::invalid_argument);
    m = sample_manifest();
    m.model.path.clear();
    EXPECT_THROW(m.validate(), std::invalid_argument);
    m                                   = sample_manifest();
    m.figures.measured->pos_accepted[1] = 81;  // more accepted than reached
    try {
        m.validate();
        ADD_FAILURE() << "accepted > reached must not validate";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("manifest.figures.measured.pos_accepted[1]"), std::string::npos)
            << e.what();
    }
    m                             = sample_manifest();
    m.config.levels[0].exit_layer = 9;  // the target has 8 layers
    EXPECT_THROW(m.validate(), std::invalid_argument);
    EXPECT_FALSE(exporting::is_manifest(nlohmann::json{{"levels", nlohmann::json::array()}}));
    EXPECT_TRUE(exporting::is_manifest(nlohmann::json(sample_manifest())));
}

TEST(Manifest, FileErrorsNameTheFileAndHashMismatchWarns) {
    const auto dir = test::tmp_dir() / "manifest_test";
    std::filesystem::create_directories(dir);
    const std::string model = (dir / "model.bin").string();
    std::ofstream(model) << "pretend GGUF";
    const std::string bad = (dir / "bad.json").string();
    std::ofstream(bad) << R"({"format": "speculum.manifest", "version": "1"})";
    try {
        (void)exporting::load_manifest(bad);
        ADD_FAILURE();
    } catch (const std::runtime_error& e) {
        EXPECT_EQ(std::string(e.what()), bad + ": manifest.version: expected an integer, got string");
    }

    Manifest m             = sample_manifest();
    m.model.path           = "model.bin";  // relative: found beside the manifest
    m.model.sha256         = exporting::sha256_file(model);
    const std::string path = (dir / "m.json").string();
    exporting::save_manifest(m, path);
    EXPECT_EQ(exporting::load_manifest(path), m);
    EXPECT_EQ(exporting::resolve_model_path(m, path), model);
    EXPECT_EQ(exporting::check_model_hash(m, model), "");
    std::ofstream(model, std::ios::app) << "!";
    const std::string w = exporting::check_model_hash(m, model);
    EXPECT_NE(w.find("model hash mismatch"), std::string::npos) << w;
    EXPECT_NE(w.find(m.model.sha256), std::string::npos);
    m.model.sha256.clear();
    EXPECT_NE(exporting::check_model_hash(m, model).find("records no SHA-256"), std::string::npos);
    m.model.path = "missing.gguf";
    EXPECT_EQ(exporting::resolve_model_path(m, path), "");
}

TEST(Manifest, FiguresFromRunStats) {
    engine::RunStats s;
    s.pos_reached  = {50, 40};
    s.pos_accepted = {40, 20};
    s.n_generated = 110, s.n_steps = 50, s.speedup = 1.5;
    s.levels.resize(2);
    s.levels[1].cost_ratio = 0.1;
    s.lossless_checked     = true;
    const auto m           = exporting::measured_from_stats(s, 3, "unit");
    EXPECT_DOUBLE_EQ(m.mean_accepted_length, 2.2);
    EXPECT_EQ(m.cost_ratio, std::vector<double>{0.1});
    EXPECT_EQ(m.acceptance_rate_per_position(), (std::vector<double>{0.8, 0.4}));
    engine::SpecConfig cfg;
    cfg.levels   = {drafts::DraftSpec{}};
    cfg.gamma    = {2};
    const auto p = exporting::predict_from_measured(m, cfg);
    ASSERT_TRUE(p);
    // E[tokens] = 1 + 0.8 + 0.8 * 0.5 = 2.2; EWIF = 2.2 / (1 + 2 * 0.1).
    EXPECT_NEAR(p->expected_tokens, 2.2, 1e-12);
    EXPECT_NEAR(p->ewif, 2.2 / 1.2, 1e-12);
    EXPECT_FALSE(exporting::predict_from_measured(exporting::MeasuredFigures{}, cfg));
}
