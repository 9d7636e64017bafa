// Manifest validation, model identity and hash check, and figures from runs (see manifest.h).
#include "core/export/manifest.h"

#include "core/analytic/predict.h"
#include "core/engine/predict_mapping.h"
#include "core/engine/run_stats.h"
#include "core/export/sha256.h"
#include "core/version.h"

#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <stdexcept>

namespace speculum::exporting {

namespace {

[[noreturn]] void bad(const std::string& field, const std::string& why) {
    throw std::invalid_argument("manifest." + field + ": " + why);
}

void check_figure(double v, const std::string& field) {
    if (!std::isfinite(v) || v < 0) bad(field, "must be a finite number >= 0, got " + std::to_string(v));
}

void check_measured(const MeasuredFigures& m) {
    const std::string w = "figures.measured.";
    check_figure(m.speedup, w + "speedup");
    check_figure(m.tokens_per_s, w + "tokens_per_s");
    check_figure(m.baseline_tokens_per_s, w + "baseline_tokens_per_s");
    check_figure(m.mean_accepted_length, w + "mean_accepted_length");
    check_figure(m.bytes_per_token, w + "bytes_per_token");
    if (m.pos_reached.size() != m.pos_accepted.size())
        bad(w + "pos_accepted", "must have one entry per pos_reached entry (" + std::to_string(m.pos_reached.size()) +
                                    "), got " + std::to_string(m.pos_accepted.size()));
    for (size_t i = 0; i < m.pos_reached.size(); ++i)
        if (m.pos_reached[i] < 0 || m.pos_accepted[i] < 0 || m.pos_accepted[i] > m.pos_reached[i])
            bad(w + "pos_accepted[" + std::to_string(i) + "]",
                "must be in [0, pos_reached[" + std::to_string(i) + "]]");
    for (size_t i = 0; i < m.cost_ratio.size(); ++i)
        check_figure(m.cost_ratio[i], w + "cost_ratio[" + std::to_string(i) + "]");
    if (m.n_generated < 0 || m.n_steps < 0 || m.n_prompts < 0) bad(w + "n_generated", "counts must be >= 0");
    if (m.lossless_mismatch < -1) bad(w + "lossless_mismatch", "must be a token index or -1");
}

void check_predicted(const PredictedFigures& p) {
    const std::string w = "figures.predicted.";
    check_figure(p.speedup, w + "speedup");
    check_figure(p.ewif, w + "ewif");
    check_figure(p.expected_tokens, w + "expected_tokens");
    check_figure(p.cost_ratio, w + "cost_ratio");
    for (size_t i = 0; i < p.alpha.size(); ++i)
        if (!(p.alpha[i] >= 0.0 && p.alpha[i] <= 1.0))
            bad(w + "alpha[" + std::to_string(i) + "]", "must be a probability in [0, 1]");
}

}  // namespace

std::vector<double> MeasuredFigures::alpha() const {
    return engine::conditional_alpha(pos_reached, pos_accepted);
}

std::vector<double> MeasuredFigures::acceptance_rate_per_position() const {
    // Every draft reviews position 1, so its reach count is the number of drafts.
    std::vector<double> u(pos_accepted.size(), 0.0);
    const double drafts = pos_reached.empty() ? 0.0 : double(pos_reached[0]);
    for (size_t i = 0; i < u.size(); ++i)
        if (drafts > 0) u[i] = double(pos_accepted[i]) / drafts;
    return u;
}

void Manifest::validate() const {
    if (version < 1 || version > kManifestVersion)
        bad("version", "must be in 1.." + std::to_string(kManifestVersion) + ", got " + std::to_string(version));
    if (model.path.empty()) bad("model.path", "the target GGUF is required");
    if (!model.sha256.empty() && !is_sha256_hex(model.sha256))
        bad("model.sha256", "must be 64 lower-case hex digits (or empty), got \"" + model.sha256 + "\"");
    if (model.n_layer < 0 || model.n_vocab < 0 || model.n_embd < 0) bad("model.n_layer", "shapes must be >= 0");
    try {
        config.validate(model.n_layer > 0 ? model.n_layer : -1);
    } catch (const std::invalid_argument& e) {
        bad("config", e.what());
    }
    if (figures.measured) check_measured(*figures.measured);
    if (figures.predicted) check_predicted(*figures.predicted);
    if (hardware) {
        try {
            hw::validate(*hardware);
        } catch (const std::invalid_argument& e) {
            bad("hardware", e.what());
        }
    }
}

ModelIdentity identify_model(const model::Model& target, const std::string& path, bool hash, const CancelToken& cancel,
                             const ProgressFn& progress) {
    ModelIdentity id;
    // Absolute, so the manifest still finds its target when run from another directory.
    id.path                  = std::filesystem::absolute(path).lexically_normal().string();
    const model::Hparams& hp = target.hparams();
    id.architecture          = hp.arch;
    id.name                  = target.name();
    id.n_layer               = hp.n_layer;
    id.n_vocab               = hp.n_vocab;
    id.n_embd                = hp.n_embd;
    std::error_code ec;
    const auto bytes = std::filesystem::file_size(path, ec);
    if (!ec) id.file_bytes = bytes;
    if (hash && !ec) id.sha256 = sha256_file(path, cancel, progress);
    return id;
}

std::string check_model_hash(const Manifest& m, const std::string& model_path, const CancelToken& cancel) {
    if (m.model.sha256.empty())
        return "the manifest records no SHA-256 of its target, so " + model_path + " cannot be checked";
    const std::string actual = sha256_file(model_path, cancel);
    if (actual == m.model.sha256) return "";
    return "model hash mismatch: the manifest's target has SHA-256 " + m.model.sha256 + ", but " + model_path +
           " has " + actual + "; the run may not reproduce the recorded figures";
}

std::string resolve_model_path(const Manifest& m, const std::string& manifest_path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::is_regular_file(m.model.path, ec)) return m.model.path;
    const fs::path p(m.model.path);
    if (p.is_relative()) {
        const fs::path beside = fs::path(manifest_path).parent_path() / p;
        if (fs::is_regular_file(beside, ec)) return beside.string();
    }
    return "";
}

MeasuredFigures measured_from_stats(const engine::RunStats& s, int32_t n_prompts, const std::string& source) {
    MeasuredFigures m;
    m.speedup               = s.speedup;
    m.tokens_per_s          = s.tokens_per_s;
    m.baseline_tokens_per_s = s.baseline_tokens_per_s;
    m.mean_accepted_length  = s.mean_accepted_length();
    m.bytes_per_token       = s.bytes_per_token;
    m.pos_reached           = s.pos_reached;
    m.pos_accepted          = s.pos_accepted;
    for (size_t i = 1; i < s.levels.size(); ++i) m.cost_ratio.push_back(s.levels[i].cost_ratio);
    m.n_generated       = s.n_generated;
    m.n_steps           = s.n_steps;
    m.n_prompts         = n_prompts;
    m.lossless_mismatch = s.lossless_checked ? s.lossless_mismatch : -1;
    m.source            = source;
    return m;
}

std::optional<PredictedFigures> predict_from_measured(const MeasuredFigures& m, const engine::SpecConfig& cfg) {
    std::vector<double> alpha;
    const std::vector<double> a = m.alpha();
    for (size_t i = 0; i < a.size() && m.pos_reached[i] > 0; ++i) alpha.push_back(a[i]);
    if (alpha.empty() || m.cost_ratio.empty()) return std::nullopt;
    // Only level 1's figures are measured per position (and no acceptance by rank): what lies beyond it is named in
    // the basis, by the same mapping the app's modeled panels use.
    engine::ModelFigures figures;
    figures.levels = {{alpha, m.cost_ratio[0]}};
    engine::ModeledConfig mc;
    try {
        mc = engine::predict_input_of(cfg, figures);
    } catch (const std::exception&) {
        return std::nullopt;
    }
    const analytic::PredictOutput out = analytic::predict(mc.input);
    PredictedFigures p;
    p.speedup         = out.predicted_speedup;
    p.ewif            = out.ewif;
    p.expected_tokens = out.expected_tokens;
    p.alpha           = alpha;
    p.cost_ratio      = mc.input.c;
    p.basis =
        "chain EWIF at gamma " + std::to_string(mc.input.k) + " from the measured alpha per position and level-1 c";
    for (const std::string& line : mc.not_modeled) p.basis += "; " + line;
    return p;
}

std::string generator_string() {
    return "speculum " + build_info().version;
}

std::string utc_now_iso8601() {
    const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

}  // namespace speculum::exporting
