// Bayesian optimisation over a sweep's grid (sampling mode "bayesian"): a seeded random initial design, then
// Gaussian processes on the encoded axes (the objective, and each constrained metric) propose the configuration of
// largest constrained expected improvement until the budget is spent. Deterministic for a seed: proposals depend
// only on the spec and the results observed, in order. The sweep runner drives it (propose, evaluate, observe).
#pragma once

#include "core/sweep/gaussian_process.h"
#include "core/sweep/sweep_spec.h"

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <vector>

namespace speculum::sweep {

// Maps a grid index to GP coordinates: a "linear" axis to (v - min) / (max - min), a "log" axis likewise in
// log v, a "categorical" axis to a one-hot block scaled by 1/sqrt(2) (two categories are as far apart as the ends
// of a numeric axis); an axis with one value adds no coordinate.
class AxisEncoder {
public:
    explicit AxisEncoder(const SweepSpec& spec);
    size_t dims() const { return m_dims; }
    void encode(uint64_t grid_index, double* out) const;  // out: dims() coordinates
    // The encoding an axis resolves to ("auto" decided by its values).
    static std::string resolved_encoding(const Axis& axis);

private:
    struct AxisCode {
        uint64_t radix = 1;     // number of values
        size_t offset  = 0;     // first coordinate
        size_t width   = 0;     // coordinates (0, 1, or radix for one-hot)
        std::vector<double> x;  // numeric axes: the coordinate of each value
    };
    std::vector<AxisCode> m_axes;  // in spec order; the last axis varies fastest in the grid index
    size_t m_dims = 0;
};

// Candidates scored per step: every unobserved grid point when there are at most this many, else the neighbours
// of the best points plus seeded random draws up to this count.
constexpr size_t kBayesCandidates = 2048;

class BayesOptimizer {
public:
    // spec must pass validate() and outlive the optimizer; its sampling fields (seed, initial, kernel, xi), its
    // objective and its constraints apply.
    explicit BayesOptimizer(const SweepSpec& spec);

    // The seeded random configurations evaluated before the GP takes over (sampling.initial, or the auto size).
    const std::vector<uint64_t>& initial_design() const { return m_initial; }
    // Up to q grid indices never proposed before: the rest of the initial design first; then, once something was
    // measured, the candidates of largest expected improvement times the probability of meeting every constraint
    // (only the probability while nothing feasible was seen); random draws while nothing was measured. A batch
    // beyond one point assumes each pick measures the GP means (kriging believer). Fewer than q, or none, once the
    // grid is exhausted.
    std::vector<uint64_t> propose(size_t q);
    // A proposed point's result: its objective score (objective_score(): higher is better, nullopt = failed or
    // outside the constraints) and the metrics it reported (the objective's and the constraints' metrics are
    // modelled wherever they were measured, feasible or not). A point with neither (failed) is modelled as the
    // worst objective value seen. Throws std::logic_error for an index never proposed.
    void observe(uint64_t grid_index, std::optional<double> score, const std::map<std::string, double>& metrics = {});

    size_t observed() const { return m_observed.size(); }
    size_t proposed() const { return m_proposed.size(); }
    // Hyperparameters of the objective's last GP fit (nullopt before the GP was first used).
    std::optional<GpHyper> last_hyper() const { return m_models.empty() ? std::nullopt : m_models[0].last; }

private:
    // One modelled quantity: the objective (index 0) or one constraint's metric.
    struct Model {
        std::optional<GpHyper> last;  // hyperparameters of the last fit
        size_t n_at_grid_fit = 0;     // points at the last hyperparameter grid search
    };
    struct Observation {
        uint64_t index;
        std::optional<double> score;               // objective_score: feasible and measured
        std::vector<std::optional<double>> value;  // per model: the objective (sign: higher is better), constraints
    };
    std::vector<uint64_t> candidates();
    std::vector<uint64_t> random_picks(size_t q);
    // Fits m_models[m] on the observations that measured it (x: their encodings), with the grid-search schedule.
    void fit_model(size_t m, GaussianProcess& gp, std::vector<double>& x, std::vector<double>& y);
    double feasible_probability(size_t m, const GaussianProcess::Prediction& p) const;

    const SweepSpec& m_spec;
    AxisEncoder m_encoder;
    uint64_t m_grid_size = 0;
    std::mt19937_64 m_rng;
    std::vector<uint64_t> m_initial;
    size_t m_initial_used = 0;
    std::set<uint64_t> m_proposed;        // every index handed out (observed or pending)
    std::vector<Observation> m_observed;  // in observation order
    std::vector<Model> m_models;          // objective, then one per constraint
};

}  // namespace speculum::sweep
