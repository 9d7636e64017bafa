// Bayesian optimisation over a sweep's grid (see bayes_opt.h): axis encoding, the initial design, candidate
// sets and expected-improvement proposals with a kriging believer for batches.
#include "core/sweep/bayes_opt.h"

#include "core/parallel.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace speculum::sweep {

// ---- AxisEncoder ----

std::string AxisEncoder::resolved_encoding(const Axis& axis) {
    if (axis.encoding != "auto") return axis.encoding;
    bool numeric = std::all_of(axis.values.begin(), axis.values.end(), [](const auto& v) { return v.is_number(); });
    return numeric ? "linear" : "categorical";
}

AxisEncoder::AxisEncoder(const SweepSpec& spec) {
    for (const Axis& a : spec.axes) {
        AxisCode code;
        code.radix  = a.values.size();
        code.offset = m_dims;
        if (code.radix > 1) {
            std::string enc = resolved_encoding(a);
            if (enc == "categorical") {
                code.width = code.radix;
            } else {
                code.width = 1;
                bool log   = enc == "log";
                for (const auto& v : a.values) {
                    if (!v.is_number()) throw std::invalid_argument("axis '" + a.path + "': encoding needs numbers");
                    double d = v.get<double>();
                    code.x.push_back(log ? std::log(d) : d);
                }
                auto [lo, hi] = std::minmax_element(code.x.begin(), code.x.end());
                double min = *lo, span = *hi - *lo;
                for (double& x : code.x) x = span > 0 ? (x - min) / span : 0.0;
            }
        }
        m_dims += code.width;
        m_axes.push_back(std::move(code));
    }
}

void AxisEncoder::encode(uint64_t grid_index, double* out) const {
    static const double kOneHot = 1.0 / std::sqrt(2.0);  // one-hot distance sqrt(2) scaled to 1
    std::fill(out, out + m_dims, 0.0);
    for (size_t i = m_axes.size(); i-- > 0;) {
        const AxisCode& a = m_axes[i];
        uint64_t digit    = grid_index % a.radix;
        grid_index /= a.radix;
        if (a.width == 1)
            out[a.offset] = a.x[digit];
        else if (a.width > 1)
            out[a.offset + digit] = kOneHot;
    }
}

// ---- BayesOptimizer ----

namespace {

constexpr size_t kGridFitEvery   = 64;    // re-search the hyperparameter grid at every step up to this many points,
constexpr double kGridFitGrowth  = 1.25;  // then whenever the points have grown by this factor since the last one
constexpr size_t kNeighbourSeeds = 5;     // best points whose grid neighbours are always candidates

double normal_cdf(double z) {
    return 0.5 * std::erfc(-z / std::sqrt(2.0));
}

}  // namespace

BayesOptimizer::BayesOptimizer(const SweepSpec& spec)
    : m_spec(spec), m_encoder(spec), m_grid_size(spec.grid_size()), m_rng(spec.sampling.seed) {
    const Sampling& s = spec.sampling;
    size_t n          = static_cast<size_t>(std::max(1, s.n));
    size_t initial    = s.initial > 0 ? static_cast<size_t>(s.initial) : std::clamp<size_t>(2 * m_encoder.dims(), 4, n);
    initial           = std::min<uint64_t>(std::min(initial, n), m_grid_size);
    // The same draw as random sampling with this seed (mt19937_64, modulo), so both start from the same points.
    std::set<uint64_t> seen;
    while (m_initial.size() < initial) {
        uint64_t i = m_rng() % m_grid_size;
        if (seen.insert(i).second) m_initial.push_back(i);
    }
    m_models.resize(1 + spec.constraints.size());
}

void BayesOptimizer::observe(uint64_t grid_index, std::optional<double> score,
                             const std::map<std::string, double>& metrics) {
    if (!m_proposed.count(grid_index)) throw std::logic_error("BayesOptimizer::observe: index was never proposed");
    auto finite = [](std::optional<double> v) { return v && std::isfinite(*v) ? v : std::nullopt; };
    auto metric = [&](const std::string& name) -> std::optional<double> {
        auto it = metrics.find(name);
        return it == metrics.end() ? std::nullopt : finite(it->second);
    };
    Observation o{grid_index, finite(score), {}};
    std::optional<double> objective = metric(m_spec.objective.metric);
    if (objective && !m_spec.objective.maximize) *objective = -*objective;  // the same sign as the score
    o.value.push_back(objective ? objective : o.score);
    for (const auto& c : m_spec.constraints) o.value.push_back(metric(c.metric));
    m_observed.push_back(std::move(o));
}

std::vector<uint64_t> BayesOptimizer::candidates() {
    std::vector<uint64_t> out;
    uint64_t remaining = m_grid_size - m_proposed.size();
    if (remaining <= kBayesCandidates) {  // small grid: score every point left
        for (uint64_t i = 0; i < m_grid_size; ++i)
            if (!m_proposed.count(i)) out.push_back(i);
        return out;
    }
    std::set<uint64_t> c;
    // Neighbours (one step along one axis) of the best feasible points: local refinement random draws would miss.
    std::vector<Observation> best;
    for (const auto& o : m_observed)
        if (o.score) best.push_back(o);
    std::sort(best.begin(), best.end(), [](const Observation& a, const Observation& b) {
        return *a.score != *b.score ? *a.score > *b.score : a.index < b.index;
    });
    best.resize(std::min(best.size(), kNeighbourSeeds));
    for (const auto& o : best) {
        uint64_t stride = 1;
        for (size_t i = m_spec.axes.size(); i-- > 0;) {
            uint64_t radix = m_spec.axes[i].values.size();
            uint64_t digit = (o.index / stride) % radix;
            if (digit > 0 && !m_proposed.count(o.index - stride)) c.insert(o.index - stride);
            if (digit + 1 < radix && !m_proposed.count(o.index + stride)) c.insert(o.index + stride);
            stride *= radix;
        }
    }
    // Seeded random draws fill the rest (more than kBayesCandidates of the grid are unproposed, so this ends fast).
    while (c.size() < kBayesCandidates) {
        uint64_t i = m_rng() % m_grid_size;
        if (!m_proposed.count(i)) c.insert(i);
    }
    return {c.begin(), c.end()};
}

std::vector<uint64_t> BayesOptimizer::random_picks(size_t q) {
    std::vector<uint64_t> out;
    while (out.size() < q && m_proposed.size() < m_grid_size) {
        auto c     = candidates();  // seeded random draws (or everything left on a small grid)
        uint64_t i = c[m_rng() % c.size()];
        m_proposed.insert(i);
        out.push_back(i);
    }
    return out;
}

void BayesOptimizer::fit_model(size_t m, GaussianProcess& gp, std::vector<double>& x, std::vector<double>& y) {
    const size_t dims = m_encoder.dims();
    double worst      = INFINITY;
    for (const auto& o : m_observed)
        if (o.value[m]) worst = std::min(worst, *o.value[m]);
    x.clear();
    y.clear();
    for (const auto& o : m_observed) {
        if (!o.value[m] && m > 0) continue;  // a constraint's metric is modelled where it was measured
        x.resize(x.size() + dims);
        m_encoder.encode(o.index, &x[x.size() - dims]);
        y.push_back(o.value[m] ? *o.value[m] : worst);  // failed: as bad as the worst objective seen
    }
    if (y.empty()) return;
    Model& model     = m_models[m];
    size_t n         = y.size();
    bool grid_search = !model.last || n <= kGridFitEvery ||
                       static_cast<double>(n) >= kGridFitGrowth * static_cast<double>(model.n_at_grid_fit);
    if (!grid_search) {
        try {
            gp.fit(x, y, *model.last);
        } catch (const std::runtime_error&) {
            grid_search = true;  // the old hyperparameters no longer give a positive definite matrix
        }
    }
    if (grid_search) {
        gp.fit(x, y);
        model.n_at_grid_fit = n;
    }
    model.last = gp.hyper();
}

double BayesOptimizer::feasible_probability(size_t m, const GaussianProcess::Prediction& p) const {
    const Constraint& c = m_spec.constraints[m - 1];
    auto below          = [&](double bound) {  // P(f <= bound)
        if (!(p.sd > 0)) return p.mean <= bound ? 1.0 : 0.0;
        return normal_cdf((bound - p.mean) / p.sd);
    };
    double hi = c.max ? below(*c.max) : 1.0;
    double lo = c.min ? below(*c.min) : 0.0;
    return std::max(0.0, hi - lo);
}

std::vector<uint64_t> BayesOptimizer::propose(size_t q) {
    std::vector<uint64_t> out;
    if (q == 0 || m_proposed.size() >= m_grid_size) return out;
    // 1. The initial design.
    while (out.size() < q && m_initial_used < m_initial.size()) {
        uint64_t i = m_initial[m_initial_used++];
        if (m_proposed.insert(i).second) out.push_back(i);
    }
    if (!out.empty()) return out;

    // 2. Nothing measured yet (every point failed), or nothing to model: keep exploring at random.
    bool measured = std::any_of(m_observed.begin(), m_observed.end(), [](const auto& o) { return o.value[0]; });
    if (!measured || m_encoder.dims() == 0) return random_picks(q);

    // 3. Fit the objective's GP and one per constraint that has measurements.
    const size_t dims     = m_encoder.dims();
    const GpKernel kernel = m_spec.sampling.kernel == "rbf" ? GpKernel::rbf : GpKernel::matern52;
    const size_t n_models = m_models.size();
    std::vector<GaussianProcess> gps(n_models, GaussianProcess(kernel, dims));
    std::vector<std::vector<double>> xs(n_models), ys(n_models);
    for (size_t m = 0; m < n_models; ++m) fit_model(m, gps[m], xs[m], ys[m]);
    const std::vector<double>& y0 = ys[0];
    double mean = 0, var = 0;
    for (double v : y0) mean += v;
    mean /= static_cast<double>(y0.size());
    for (double v : y0) var += (v - mean) * (v - mean);
    double sd = var > 0 ? std::sqrt(var / static_cast<double>(y0.size())) : 1.0;
    double xi = m_spec.sampling.xi * sd;  // the margin is given in standard deviations of the objective
    std::optional<double> best;           // best feasible score; none yet: maximise the chance of feasibility
    for (const auto& o : m_observed)
        if (o.score && (!best || *o.score > *best)) best = o.score;

    // 4. Constrained expected improvement over the candidates: EI x P(every constraint holds).
    std::vector<uint64_t> cand = candidates();
    std::vector<double> cx(cand.size() * dims);
    for (size_t k = 0; k < cand.size(); ++k) m_encoder.encode(cand[k], &cx[k * dims]);
    std::vector<char> taken(cand.size(), 0);
    std::vector<double> acq(cand.size());
    std::vector<std::vector<double>> means(n_models, std::vector<double>(cand.size()));
    while (out.size() < q && out.size() < cand.size()) {
        // Each candidate is scored independently, so the parallel loop gives the serial result.
        parallel_for(0, static_cast<int64_t>(cand.size()), 64, [&](int64_t lo, int64_t hi) {
            for (int64_t k = lo; k < hi; ++k) {
                if (taken[k]) continue;
                double p = 1;
                for (size_t m = 1; m < n_models; ++m) {
                    if (ys[m].empty()) continue;  // never measured: no information
                    auto pred   = gps[m].predict(&cx[k * dims]);
                    means[m][k] = pred.mean;
                    p *= feasible_probability(m, pred);
                }
                auto pred   = gps[0].predict(&cx[k * dims]);
                means[0][k] = pred.mean;
                acq[k]      = best ? expected_improvement(pred.mean, pred.sd, *best, xi) * p : p;
            }
        });
        size_t pick = cand.size();
        for (size_t k = 0; k < cand.size(); ++k) {  // ties: the higher mean, then the lower grid index
            if (taken[k]) continue;
            if (pick == cand.size() || acq[k] > acq[pick] || (acq[k] == acq[pick] && means[0][k] > means[0][pick]))
                pick = k;
        }
        taken[pick] = 1;
        m_proposed.insert(cand[pick]);
        out.push_back(cand[pick]);
        if (out.size() == q) break;
        // Kriging believer: the pick joins every model with its predicted means, hyperparameters unchanged.
        try {
            for (size_t m = 0; m < n_models; ++m) {
                if (ys[m].empty()) continue;
                xs[m].insert(xs[m].end(), cx.begin() + static_cast<std::ptrdiff_t>(pick * dims),
                             cx.begin() + static_cast<std::ptrdiff_t>((pick + 1) * dims));
                ys[m].push_back(means[m][pick]);
                GpHyper h = gps[m].hyper();
                gps[m].fit(xs[m], ys[m], h);
            }
        } catch (const std::runtime_error&) {
            break;  // a believed point made a matrix singular: propose fewer this step
        }
    }
    return out;
}

}  // namespace speculum::sweep
