// What a sweep runs per configuration: an Evaluator turns one configuration (JSON) into statistics,
// predictions and scalar metrics. PredictEvaluator is analytic (modeled, < 1 ms); a measured evaluator runs the
// speculative engine on a dataset. The sweep runner, the store and the CLI only see this interface.
#pragma once

#include "core/cancel.h"

#include <nlohmann/json.hpp>

#include <map>
#include <string>

namespace speculum::sweep {

struct EvalContext {
    CancelToken token;    // checked at defined points; evaluate() throws Cancelled when it is set
    int prompts = 0;      // fidelity: prompts to evaluate (0 = the evaluator's default); ignored if not prompt-based
    ProgressFn progress;  // within one configuration (may be empty)
};

struct EvalResult {
    nlohmann::json stats       = nlohmann::json::object();  // measured statistics ({} for analytic evaluators)
    nlohmann::json predictions = nlohmann::json::object();  // analytic predictions
    std::map<std::string, double> metrics;                  // names from store::metric_columns()
    int prompts = 0;                                        // prompts actually evaluated (0 = not prompt-based)
};

class Evaluator {
public:
    virtual ~Evaluator()             = default;
    virtual std::string kind() const = 0;  // "predict", "engine"
    // Identity of what the configurations run against (models, analytic model version): part of the store key.
    virtual std::string model_hash() const = 0;
    // Identity of the data this configuration is measured on at this fidelity: part of the store key.
    virtual std::string dataset_hash(const nlohmann::json& config, int prompts) const = 0;
    // Throws std::invalid_argument naming the field when the configuration cannot be evaluated.
    virtual void validate(const nlohmann::json& config) const = 0;
    // Thread-safe when max_parallel() != 1. Throws Cancelled on cancellation; other exceptions mark the
    // configuration failed (stored with the message; retried by the next run).
    virtual EvalResult evaluate(const nlohmann::json& config, const EvalContext& ctx) = 0;
    virtual int max_parallel() const { return 0; }  // configurations evaluated at once; 0 = no limit
};

}  // namespace speculum::sweep
