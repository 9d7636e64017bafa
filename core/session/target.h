// A target ready to run: the model from a GGUF path, the bundled target or a random-weight SyntheticSpec, loaded
// with a weight-memory policy, an optional repacked verifier beside it, and its tokenizer or none. The CLI, the
// app and sweeps all open their targets here (docs/engine.md, "A separate verifier").
#pragma once

#include "core/cancel.h"
#include "core/model/model.h"
#include "core/model/synthetic.h"
#include "core/model/tokenizer.h"

#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <optional>
#include <string>

namespace speculum::session {

// Where a target comes from. Neither a path nor a synthetic spec = the bundled target.
struct TargetSource {
    std::string path;                               // a GGUF file
    std::optional<model::SyntheticSpec> synthetic;  // random weights, no tokenizer (benchmarks, tests)

    static TargetSource bundled() { return {}; }
    static TargetSource file(std::string p) { return {std::move(p), std::nullopt}; }
    static TargetSource random(model::SyntheticSpec s) { return {"", std::move(s)}; }
    // A sweep spec's "target": null (bundled), a path, or {"synthetic": {...}} (std::invalid_argument otherwise).
    static TargetSource from_json(const nlohmann::json& j);
    // The file that will be opened ("" for a synthetic target).
    std::string resolved_path() const;
};

struct TargetOptions {
    // automatic: Q8_0 matrices repacked into large pages where the CPU has the kernels; mapped: the file's layout.
    model::WeightMemory memory = model::WeightMemory::automatic;
    // Verify on a large-page copy with Q8_0 repacked to q8_0_x8 while drafts and the baseline read the file
    // layout (speculum-cli run --repack). When no such copy helps or fits, Target::verifier stays empty and
    // verifier_note says why.
    bool repacked_verifier = false;
    ProgressFn progress;
    CancelToken cancel;
};

struct Target {
    std::string path;  // the GGUF file, "synthetic" for random weights, or what the caller named it
    std::shared_ptr<const model::Model> model;
    std::shared_ptr<const model::Model> verifier;       // null: verification runs on `model`
    std::string verifier_note;                          // what the verifier is, or why none was made (when asked)
    std::shared_ptr<const model::Tokenizer> tokenizer;  // null: token-id prompts only
    std::string tokenizer_error;                        // why there is no tokenizer

    const model::Model& verifying() const { return verifier ? *verifier : *model; }
};

// Loads the target. Throws what Model::load throws (GgufError, Cancelled), std::invalid_argument for a bad
// synthetic spec.
Target load_target(const TargetSource& source, const TargetOptions& options = {});

// A target around a model already open (the app's), with its tokenizer or none.
Target open_target(std::shared_ptr<const model::Model> model, std::string path = "");

// Matrices stored as q8_0_x8 (what a repacked verifier holds).
int repacked_matrices(const model::Model& m);

}  // namespace speculum::session
