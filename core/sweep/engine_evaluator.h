// Measured evaluator: a configuration is an engine SpecConfig (docs/engine.md); every configuration runs the
// speculative engine and the plain autoregressive baseline on the config's prompts (dataset/task, max_prompts)
// against one target model loaded once. Metrics are MEASURED on this machine.
#pragma once

#include "core/session/target.h"
#include "core/sweep/evaluator.h"

#include <map>
#include <memory>
#include <mutex>
#include <optional>

namespace speculum::sweep {

class EngineEvaluator : public Evaluator {
public:
    // target: a GGUF path (string), {"synthetic": SyntheticSpec} for a random-weight model (benchmarks, tests),
    // or null for the bundled target. Loads the model now; errors name the file or field.
    explicit EngineEvaluator(const nlohmann::json& target, const CancelToken& cancel = {});
    // A target already open (the app's model): `model_hash` identifies it in the store (store::file_hash of its
    // file, or any stable identity the caller owns).
    EngineEvaluator(session::Target target, std::string model_hash);
    ~EngineEvaluator() override;

    std::string kind() const override { return "engine"; }
    std::string model_hash() const override { return m_model_hash; }
    // The prompts' identity: the dataset file's content hash (or the inline prompt), task and prompt count.
    std::string dataset_hash(const nlohmann::json& config, int prompts) const override;
    void validate(const nlohmann::json& config) const override;
    EvalResult evaluate(const nlohmann::json& config, const EvalContext& ctx) override;
    // The engine fans each forward pass out over the cores itself: configurations run one at a time.
    int max_parallel() const override { return 1; }
    const model::Model& target() const { return *m_target.model; }

private:
    session::Target m_target;  // loaded once; every configuration runs through session::run
    std::string m_model_hash;
    mutable std::mutex m_hash_mutex;  // dataset file hashes, computed once per path
    mutable std::map<std::string, std::string> m_file_hashes;
};

}  // namespace speculum::sweep
