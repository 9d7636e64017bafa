// PredictEvaluator: predict() on the configuration, metrics picked from PredictOutput (all modeled).
#include "core/sweep/predict_evaluator.h"

#include "core/hw/profile.h"
#include "core/store/hash.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace speculum::sweep {

PredictEvaluator::PredictEvaluator(std::filesystem::path resources, int delay_ms)
    : m_resources(std::move(resources)), m_delay_ms(delay_ms) {}

std::string PredictEvaluator::model_hash() const {
    // The analytic model's identity is the code version: results of another build are recomputed.
    return store::json_hash({{"evaluator", "predict"}, {"version", SPECULUM_VERSION}});
}

std::string PredictEvaluator::dataset_hash(const nlohmann::json&, int) const {
    return store::json_hash({{"dataset", "none"}});
}

analytic::PredictInput PredictEvaluator::parse(const nlohmann::json& config) const {
    if (!config.is_object()) throw std::invalid_argument("configuration must be a JSON object");
    nlohmann::json j = config;
    for (const char* key : kGroupingKeys) j.erase(key);
    auto resolve = [&](const std::string& id) { return profile(id); };
    return analytic::predict_input_from_json(j, resolve);
}

hw::HardwareProfile PredictEvaluator::profile(const std::string& id) const {
    std::lock_guard lock(m_profiles_mutex);
    auto it = m_profiles.find(id);
    if (it == m_profiles.end()) it = m_profiles.emplace(id, hw::find_profile(hw::hardware_dir(m_resources), id)).first;
    return it->second;
}

void PredictEvaluator::validate(const nlohmann::json& config) const {
    try {
        parse(config);
    } catch (const std::invalid_argument&) {
        throw;
    } catch (const std::exception& e) {  // a profile that cannot be found, a resources directory missing
        throw std::invalid_argument(e.what());
    }
}

EvalResult PredictEvaluator::evaluate(const nlohmann::json& config, const EvalContext& ctx) {
    ctx.token.throw_if_cancelled();
    for (int slept = 0; slept < m_delay_ms; slept += 5) {
        std::this_thread::sleep_for(std::chrono::milliseconds(std::min(5, m_delay_ms - slept)));
        ctx.token.throw_if_cancelled();
    }
    analytic::PredictInput in   = parse(config);
    analytic::PredictOutput out = analytic::predict(in);
    EvalResult r;
    r.predictions                  = out;
    r.metrics["predicted_speedup"] = out.predicted_speedup;
    r.metrics["accepted_length"]   = out.expected_tokens;
    if (out.bpt_chain_gb > 0) r.metrics["bpt"] = out.bpt_chain_gb;
    if (out.cassandra_j) r.metrics["j"] = *out.cassandra_j;
    if (out.memory) r.metrics["memory_gb"] = out.memory->weights_gb + out.memory->kv_gb;
    if (in.hardware) r.metrics["draft_bytes"] = analytic::weight_bytes(in.hardware->draft);
    return r;
}

}  // namespace speculum::sweep
