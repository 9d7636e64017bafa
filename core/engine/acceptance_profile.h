// A portable acceptance profile: `speculation_profile.json`, the interchange file NVIDIA's Model-Optimizer proposes
// (conditional and marginal acceptance per position, mean accepted length, the histogram, the measurement
// conditions), written from a measured run and read back by `predict` and the app; and the same acceptance as
// llama.cpp's `--spec-synth-rates` and vLLM's synthetic rejection sampler, so a serving stack can be benchmarked
// at the acceptance Speculum measured.
//
//   conditional[i] = P(position i+1 accepted | positions 1..i accepted)       (RunStats::alpha)
//   marginal[i]    = P(positions 1..i+1 all accepted) = Π_{j≤i} conditional[j]  (non-increasing: what llama.cpp's
//                    --spec-synth-rates and vLLM's synthetic_acceptance_rates take)
//   mean_accept_length = tokens committed per target pass (accepted drafts + the target's own token)
#pragma once

#include "core/engine/run_stats.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace speculum::engine {

constexpr int kAcceptanceProfileVersion = 1;

struct MeasurementConditions {
    std::string dataset;                                      // the prompt suite (file name), or "prompt"
    int32_t osl         = 0;                                  // output tokens per prompt (max_new_tokens)
    int32_t num_samples = 0;                                  // prompts
    std::string target;                                       // the target model (file name)
    std::string drafter;                                      // the draft's description
    int32_t num_speculative_tokens                      = 0;  // γ of level 1
    double temperature                                  = 0;  // 0 = greedy
    std::string tool                                    = "speculum";
    bool operator==(const MeasurementConditions&) const = default;
};

struct AcceptanceProfile {
    std::vector<double> conditional;
    std::vector<double> marginal;
    double mean_accept_length = 1.0;
    std::vector<int64_t> histogram;  // [n]: target passes that accepted n drafts
    int64_t n_steps   = 0;           // target passes measured
    int64_t n_drafted = 0;           // draft tokens reviewed
    MeasurementConditions conditions;
    bool operator==(const AcceptanceProfile&) const = default;
    // Throws std::invalid_argument naming the field: rates in [0, 1], marginal non-increasing and equal to the
    // product of the conditionals (within 1e-6), mean length >= 1, counts >= 0.
    void validate() const;
};

// The profile of a measured run (its totals).
AcceptanceProfile acceptance_profile(const RunStats& s, MeasurementConditions conditions);

// {"version", "conditional_accept_rates", "marginal_accept_rates", "mean_accept_length",
//  "acceptance_length_histogram", "num_steps", "num_drafted", "measurement_conditions": {...}}
void to_json(nlohmann::json& j, const AcceptanceProfile& p);
// Strict (JsonReader). A file with only one of the two rate lists gets the other derived; both must agree.
void from_json(const nlohmann::json& j, AcceptanceProfile& p);
// Reads a speculation_profile.json (at most 1 MiB); errors name the file.
AcceptanceProfile load_acceptance_profile(const std::string& path);

// llama.cpp's benchmark flag: "--spec-synth-rates 0.9,0.72,0.5" (marginal rates, three decimals; positions whose
// rate rounds to 0 are dropped after the first).
std::string llama_cpp_synth_rates(const AcceptanceProfile& p);
// vLLM's speculative_config fields for the synthetic rejection sampler: {"rejection_sample_method": "synthetic",
// "synthetic_acceptance_rates": [...marginal], "num_speculative_tokens": n}.
nlohmann::json vllm_synthetic_config(const AcceptanceProfile& p);

}  // namespace speculum::engine
