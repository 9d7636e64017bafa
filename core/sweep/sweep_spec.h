// Sweep specification (JSON): a base configuration, axes that set any field of it through a JSON pointer, how
// to sample the space (grid, random, adaptive successive halving over prompts, or Bayesian optimisation), the
// objective and the constraints. A value type with validation naming the field; docs/sweeps.md shows the format.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace speculum::sweep {

enum class SamplingMode { grid, random, adaptive, bayesian };

struct Axis {
    std::string name;                    // label in progress lines and CSV ("" = the path)
    std::string path;                    // JSON pointer into the configuration, e.g. "/levels/0/prune/ratio"
    std::vector<nlohmann::json> values;  // explicit values, or expanded from a range (any JSON: numbers, objects)
    // Bayesian optimisation: how the GP sees the axis. "auto": "log" for a log range, "linear" when every value is
    // a number, else "categorical". "linear"/"log": scaled to [0, 1] by value (log value); "categorical": one-hot.
    std::string encoding               = "auto";
    bool operator==(const Axis&) const = default;
};

struct Sampling {
    SamplingMode mode = SamplingMode::grid;
    int n             = 16;  // random: configurations drawn; adaptive: configurations at the first rung
    uint64_t seed     = 1;   // random and adaptive draws (distinct grid points, reproducible)
    int eta           = 3;   // adaptive: keep the best 1/eta per rung and give them eta times the prompts
    int min_prompts   = 1;   // adaptive: prompts per configuration at the first rung
    int max_prompts   = 9;   // adaptive: prompts at the last rung
    // Bayesian optimisation (mode bayesian; n = the budget of evaluations, seed = the initial design and the
    // candidate draws):
    int initial = 0;                  // random configurations before the GP proposes; 0 = auto (2 per encoded
                                      // dimension, at least 4, at most n)
    std::string kernel = "matern52";  // GP kernel: "matern52" | "rbf"
    double xi          = 0.01;        // expected-improvement margin, in standard deviations of the observed scores
    int batch          = 1;           // configurations proposed per step (kriging believer), evaluated at once
    bool operator==(const Sampling&) const = default;
};

struct Objective {
    std::string metric                      = "predicted_speedup";  // one of store::metric_columns()
    bool maximize                           = true;                 // "goal": "max" | "min"
    bool operator==(const Objective&) const = default;
};

struct Constraint {
    std::string metric;         // one of store::metric_columns()
    std::optional<double> min;  // inclusive bounds; a configuration outside them gets no objective score
    std::optional<double> max;
    bool operator==(const Constraint&) const = default;
};

struct SweepSpec {
    std::string name = "sweep";
    // "predict" (a predict() input, modeled) | "spec-predict" (a SpecConfig with assumed figures, modeled) |
    // "engine" (a SpecConfig, measured)
    std::string evaluator = "predict";
    nlohmann::json base   = nlohmann::json::object();  // the configuration every axis edits
    std::vector<Axis> axes;
    Sampling sampling;
    Objective objective;
    std::vector<Constraint> constraints;
    nlohmann::json target;  // engine: target GGUF path, {"synthetic": SyntheticSpec}, or null = the bundled target
    std::string task;       // label for best-per-task when the configuration has no "/task" string
    int prompts = 0;        // grid/random: prompts per configuration (0 = the evaluator's default)
    bool operator==(const SweepSpec&) const = default;

    // Throws std::invalid_argument naming the field ("axes[1].range.step must be > 0").
    void validate() const;
    // Grid size: the product of the axes' value counts (1 with no axes); saturates at UINT64_MAX.
    uint64_t grid_size() const;
    // The configuration at a grid index (mixed radix, the last axis varies fastest). Throws
    // std::invalid_argument naming the axis when its path cannot be applied to the base.
    nlohmann::json config_at(uint64_t index) const;
    // Short "k=4 alpha=0.7" description of a grid index.
    std::string describe(uint64_t index) const;
};

// Parses strictly: unknown keys and wrong types are std::invalid_argument naming the field; calls validate().
SweepSpec sweep_spec_from_json(const nlohmann::json& j);
void to_json(nlohmann::json& j, const SweepSpec& s);  // ranges come back as explicit values

constexpr uint64_t kMaxGridConfigurations = 1000000;  // a grid beyond this must be sampled (random/adaptive)
constexpr int kMaxBayesianBudget          = 500;      // GP cost grows as n^3 per step: beyond this, sample
constexpr size_t kMaxSweepNameBytes       = 256;      // name, task and axis names: shown in every table
constexpr size_t kMaxAxisValueBytes       = 65536;    // one axis value as JSON text (each is hashed and stored)

}  // namespace speculum::sweep
