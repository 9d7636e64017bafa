// The deployment manifest: a versioned JSON record of one chosen configuration — which target (path, SHA-256,
// architecture), how every draft level is derived (DraftSpec), chain or tree verification and its shape, the
// decoding parameters (all in the embedded SpecConfig), the measured and predicted figures it was chosen on, and
// the hardware profile. `speculum-cli run --config manifest.json` reproduces the run. Schema: docs/export.md.
#pragma once

#include "core/cancel.h"
#include "core/engine/run_stats.h"
#include "core/engine/spec_config.h"
#include "core/hw/profile.h"
#include "core/model/model.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace speculum::exporting {

constexpr const char* kManifestFormat = "speculum.manifest";  // the "format" key every manifest carries
constexpr int32_t kManifestVersion    = 1;                    // newest schema this build reads and writes

struct ModelIdentity {
    std::string path;          // the target GGUF as recorded (a relative path is also tried beside the manifest)
    std::string sha256;        // 64 lower-case hex digits of the file; "" = not recorded
    std::string architecture;  // general.architecture, e.g. "llama"
    std::string name;          // general.name ("" = none)
    int32_t n_layer                             = 0;  // transformer blocks (0 = not recorded)
    int32_t n_vocab                             = 0;  // tokens
    int32_t n_embd                              = 0;  // hidden size
    uint64_t file_bytes                         = 0;  // bytes of the GGUF file (0 = not recorded)
    bool operator==(const ModelIdentity&) const = default;
};

// What a run measured (speculum-cli run, the app's measured run). Every figure is measured; none is modeled.
struct MeasuredFigures {
    double speedup               = 0;   // tokens/s over plain decoding of the same target in the same process
    double tokens_per_s          = 0;   // speculative decode rate
    double baseline_tokens_per_s = 0;   // plain autoregressive decode rate (0 = not run)
    double mean_accepted_length  = 0;   // tokens committed per target pass
    double bytes_per_token       = 0;   // BPT: bytes read by every level per generated token
    std::vector<int64_t> pos_reached;   // [i]: steps where position i + 1 was reviewed with every earlier accepted
    std::vector<int64_t> pos_accepted;  // [i]: of those, steps where it was accepted
    std::vector<double> cost_ratio;     // [i]: c of draft level i + 1 (time per pass / one plain target step)
    int64_t n_generated       = 0;      // tokens
    int64_t n_steps           = 0;      // target verification passes
    int32_t n_prompts         = 0;      // prompts the figures cover
    int32_t lossless_mismatch = -1;     // greedy: first token differing from the target's own output, -1 = none
    std::string source;                 // who measured, e.g. "speculum-cli run" or "speculum app"
    bool operator==(const MeasuredFigures&) const = default;

    std::vector<double> alpha() const;  // α_i = accepted / reached (conditional on every earlier position)
    // vLLM's and llama.cpp's per-position rate: accepted at position i / drafts (unconditional).
    std::vector<double> acceptance_rate_per_position() const;
};

// What the analytic models predicted for the configuration (modeled, never measured).
struct PredictedFigures {
    double speedup         = 0;  // the predicted speedup (hardware projection when a profile was used, else EWIF)
    double ewif            = 0;  // EWIF of the chain at γ and c
    double expected_tokens = 0;  // E[tokens per target pass]
    std::vector<double> alpha;   // per-position acceptance the prediction assumed (conditional)
    double cost_ratio = 0;       // c the prediction assumed
    std::string basis;           // where α and c came from, e.g. "measured alpha and c" or "assumed"
    bool operator==(const PredictedFigures&) const = default;
};

struct Figures {
    std::optional<MeasuredFigures> measured;
    std::optional<PredictedFigures> predicted;
    bool operator==(const Figures&) const = default;
};

struct Manifest {
    int32_t version = kManifestVersion;  // schema version (see docs/export.md for what changed between versions)
    std::string name;                    // a label for the configuration
    std::string generator;               // "speculum 0.1.0": the build that wrote it
    std::string created_at;              // UTC ISO-8601, "" = not recorded
    ModelIdentity model;                 // the target
    engine::SpecConfig config;           // draft derivation of every level, verification, decoding parameters
    Figures figures;                     // what it was chosen on
    std::optional<hw::HardwareProfile> hardware;  // the profile the prediction used (none = not hardware-aware)
    bool operator==(const Manifest&) const = default;

    // Throws std::invalid_argument naming the field ("manifest.model.sha256: must be 64 lower-case hex digits").
    void validate() const;
};

void to_json(nlohmann::json& j, const Manifest& m);
// Strict: unknown keys and wrong types are errors naming the path ("manifest.figures.measured.speedup: expected a
// number, got string"); a newer version than kManifestVersion is refused. Missing keys keep their defaults.
void from_json(const nlohmann::json& j, Manifest& m);

// True when `j` is an object whose "format" is kManifestFormat (how `run --config` tells manifests from configs).
bool is_manifest(const nlohmann::json& j);

// Reads, parses and validates a manifest; errors name the file.
Manifest load_manifest(const std::string& path);
void save_manifest(const Manifest& m, const std::string& path);

// The identity of a loaded target: architecture and shape from the model, size and (when `hash`) SHA-256 of the file.
ModelIdentity identify_model(const model::Model& target, const std::string& path, bool hash = true,
                             const CancelToken& cancel = {}, const ProgressFn& progress = {});

// Compares the manifest's recorded SHA-256 with the file's: "" when they match, else a warning that names both
// digests (or says the manifest records none). Throws std::runtime_error when the file cannot be read.
std::string check_model_hash(const Manifest& m, const std::string& model_path, const CancelToken& cancel = {});

// Where the manifest's target is: the recorded path when it exists, else the same path relative to the manifest's
// directory; "" when neither exists.
std::string resolve_model_path(const Manifest& m, const std::string& manifest_path);

// Figures from a run's statistics.
MeasuredFigures measured_from_stats(const engine::RunStats& s, int32_t n_prompts, const std::string& source);
// The chain prediction (core/analytic predict: EWIF, modeled) from the measured α per position and level-1 c at
// the config's draft length; nullopt when nothing was measured.
std::optional<PredictedFigures> predict_from_measured(const MeasuredFigures& m, const engine::SpecConfig& cfg);

// "speculum <version>" for Manifest::generator.
std::string generator_string();
// Now, UTC ISO-8601 ("2026-05-01T12:00:00Z").
std::string utc_now_iso8601();

}  // namespace speculum::exporting
