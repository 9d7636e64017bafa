// Analytic evaluator: a configuration is a `speculum-cli predict` input (see docs/analytic.md) plus optional
// "task"/"dataset"/"label" keys for grouping; every metric it reports is MODELED, not measured.
#pragma once

#include "core/analytic/predict.h"
#include "core/sweep/evaluator.h"

#include <filesystem>
#include <map>
#include <mutex>

namespace speculum::sweep {

// Keys the sweep may put in a configuration that predict() does not read (removed before parsing).
inline constexpr const char* kGroupingKeys[] = {"task", "dataset", "label"};

class PredictEvaluator : public Evaluator {
public:
    // resources: where hardware profiles are found (empty = the default search, see hw::hardware_dir).
    // delay_ms: sleep this long per configuration (cancellable, 5 ms steps) — for tests and demos that need a
    // slow sweep; 0 in normal use.
    explicit PredictEvaluator(std::filesystem::path resources = {}, int delay_ms = 0);

    std::string kind() const override { return "predict"; }
    std::string model_hash() const override;
    std::string dataset_hash(const nlohmann::json& config,
                             int prompts) const override;  // constant: the analytic model reads no prompts
    void validate(const nlohmann::json& config) const override;
    EvalResult evaluate(const nlohmann::json& config, const EvalContext& ctx) override;

    analytic::PredictInput parse(const nlohmann::json& config) const;

private:
    hw::HardwareProfile profile(const std::string& id) const;

    std::filesystem::path m_resources;
    int m_delay_ms = 0;
    mutable std::mutex m_profiles_mutex;  // profiles are read from disk once per id, not per configuration
    mutable std::map<std::string, hw::HardwareProfile> m_profiles;
};

}  // namespace speculum::sweep
