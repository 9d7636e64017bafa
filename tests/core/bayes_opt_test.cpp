// Bayesian optimisation of sweeps: the GP numerics (Cholesky, interpolation, expected improvement), the axis
// encoding, the spec fields' JSON round-trip and validation, and whole sweeps on a synthetic objective with a
// known optimum (fewer evaluations than random search over seeds, determinism, batches, constraints, resume).
#include "core/sweep/bayes_opt.h"
#include "core/jobs/job_system.h"
#include "core/parallel.h"
#include "core/sweep/gaussian_process.h"
#include "core/sweep/sweep_runner.h"

#include "support/fresh_path.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>

#include <cmath>
#include <mutex>
#include <numeric>
#include <random>

using namespace speculum;
using namespace speculum::sweep;
using nlohmann::json;
namespace fs = std::filesystem;

// ---- bump objective ----

namespace {

constexpr double kCholeskyTol   = 1e-10;  // max |L L^T - A| on a well-conditioned 12 x 12 matrix
constexpr double kInterpTol     = 1e-3;   // GP mean at a training point (noise ratio <= 1e-4 of a unit signal)
constexpr double kWithinOptimum = 0.02;   // "found": best score within 2 % of the known optimum

fs::path fresh_db(const std::string& name) {
    return speculum::test::fresh_tmp_path("bayes_" + name + ".sqlite");
}

// A smooth bump over two numeric axes plus a categorical offset; the optimum 3.3 is at x = 0.62, y = 0.3, "b".
// Cheap and deterministic; records the order in which configurations are evaluated.
class BumpEvaluator : public Evaluator {
public:
    static constexpr double kOptimum = 3.3;
    std::string kind() const override { return "bump"; }
    std::string model_hash() const override { return "bump-model"; }
    std::string dataset_hash(const json&, int) const override { return "bump-data"; }
    void validate(const json& config) const override {
        if (!config.contains("x") || !config.contains("y") || !config.contains("mode"))
            throw std::invalid_argument("x, y and mode are required");
    }
    static double score(double x, double y, const std::string& mode) {
        double offset = mode == "b" ? 0.3 : mode == "c" ? -0.2 : 0.0;
        return 1.0 + 2.0 * std::exp(-((x - 0.62) * (x - 0.62) + (y - 0.3) * (y - 0.3)) / 0.08) + offset;
    }
    EvalResult evaluate(const json& config, const EvalContext&) override {
        double s = score(config["x"].get<double>(), config["y"].get<double>(), config["mode"].get<std::string>());
        std::lock_guard lock(m_mutex);
        order.push_back(config);
        EvalResult r;
        r.metrics["speedup"]   = s;
        r.metrics["memory_gb"] = 10.0 * config["x"].get<double>();  // for constraints: memory grows with x
        return r;
    }
    std::vector<json> order;

private:
    std::mutex m_mutex;
};

json bump_spec(const std::string& mode, int n, uint64_t seed) {
    json j        = json::parse(R"({"name": "bump", "base": {"x": 0, "y": 0, "mode": "a"},
        "axes": [{"name": "x", "path": "/x", "range": {"from": 0, "to": 1, "step": 0.02}},
                 {"name": "y", "path": "/y", "range": {"from": 0, "to": 1, "step": 0.02}},
                 {"name": "mode", "path": "/mode", "values": ["a", "b", "c"]}],
        "objective": {"metric": "speedup", "goal": "max"}})");
    j["sampling"] = {{"mode", mode}, {"n", n}, {"seed", seed}};
    return j;
}

// Evaluations until the best score so far is within kWithinOptimum of the optimum (n + 1 if never).
size_t evaluations_to_optimum(const std::vector<json>& order, size_t n) {
    double best = -1e9;
    for (size_t i = 0; i < order.size(); ++i) {
        best = std::max(best, BumpEvaluator::score(order[i]["x"].get<double>(), order[i]["y"].get<double>(),
                                                   order[i]["mode"].get<std::string>()));
        if (best >= (1 - kWithinOptimum) * BumpEvaluator::kOptimum) return i + 1;
    }
    return n + 1;
}

std::string error_of(const json& j) {
    try {
        sweep_spec_from_json(j);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

}  // namespace

// ---- Gaussian process ----

TEST(GaussianProcess, CholeskyReconstructsAndRejectsIndefinite) {
    const size_t n = 12;
    std::mt19937_64 rng(3);
    std::normal_distribution<double> g;
    std::vector<double> b(n * n), a(n * n, 0.0);
    for (double& v : b) v = g(rng);
    for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < n; ++j) {
            for (size_t k = 0; k < n; ++k) a[i * n + j] += b[i * n + k] * b[j * n + k];
            if (i == j) a[i * n + j] += n;
        }
    std::vector<double> l = a;
    ASSERT_TRUE(cholesky(l, n));
    for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < n; ++j) {
            double s = 0;
            for (size_t k = 0; k < n; ++k) s += l[i * n + k] * l[j * n + k];
            EXPECT_NEAR(s, a[i * n + j], kCholeskyTol);
            if (j > i) {
                EXPECT_EQ(l[i * n + j], 0.0);
            }
        }
    std::vector<double> indefinite = {1, 2, 2, 1};
    EXPECT_FALSE(cholesky(indefinite, 2));
}

TEST(GaussianProcess, InterpolatesAndIsUncertainAwayFromData) {
    for (GpKernel kernel : {GpKernel::matern52, GpKernel::rbf}) {
        std::vector<double> x, y;
        for (int i = 0; i <= 8; ++i) {
            x.push_back(i / 8.0 * 0.6);  // data on [0, 0.6] only
            y.push_back(std::sin(6 * x.back()) + 3);
        }
        GaussianProcess gp(kernel, 1);
        gp.fit(x, y);
        EXPECT_LE(gp.hyper().noise_ratio, 1e-4);  // a noiseless function: the marginal likelihood says so
        for (size_t i = 0; i < x.size(); ++i) {
            auto p = gp.predict(&x[i]);
            EXPECT_NEAR(p.mean, y[i], kInterpTol);
            EXPECT_LT(p.sd, 0.05);
        }
        double mid = 0.2625, far = 1.0;
        EXPECT_NEAR(gp.predict(&mid).mean, std::sin(6 * mid) + 3, 0.05);
        EXPECT_GT(gp.predict(&far).sd, 5 * gp.predict(&mid).sd);
    }
    GaussianProcess gp(GpKernel::rbf, 2);
    EXPECT_THROW(gp.fit({0.1, 0.2, 0.3}, {1.0, 2.0}), std::invalid_argument);
}

TEST(GaussianProcess, ExpectedImprovement) {
    EXPECT_DOUBLE_EQ(expected_improvement(2.0, 0.0, 1.0, 0.0), 1.0);
    EXPECT_DOUBLE_EQ(expected_improvement(0.5, 0.0, 1.0, 0.0), 0.0);
    EXPECT_NEAR(expected_improvement(1.0, 1.0, 1.0, 0.0), 1 / std::sqrt(2 * M_PI), 1e-12);  // sd * phi(0)
    EXPECT_GT(expected_improvement(1.0, 2.0, 1.0, 0.0), expected_improvement(1.0, 1.0, 1.0, 0.0));
    EXPECT_GT(expected_improvement(1.5, 1.0, 1.0, 0.0), expected_improvement(1.0, 1.0, 1.0, 0.0));
    EXPECT_LT(expected_improvement(1.0, 1.0, 1.0, 0.5), expected_improvement(1.0, 1.0, 1.0, 0.0));
    EXPECT_GE(expected_improvement(-40.0, 1.0, 1.0, 0.0), 0.0);
}

// ---- axis encoding and spec fields ----

TEST(BayesOpt, AxisEncoding) {
    SweepSpec spec = sweep_spec_from_json(json::parse(R"({"base": {},
        "axes": [{"path": "/a", "values": [2, 4, 10]},
                 {"path": "/b", "range": {"from": 1, "to": 100, "count": 3, "log": true}},
                 {"path": "/c", "values": ["p", {"q": 1}]},
                 {"path": "/d", "values": [7]},
                 {"path": "/e", "values": [1, 2], "encoding": "categorical"}],
        "objective": {"metric": "speedup"}})"));
    EXPECT_EQ(spec.axes[1].encoding, "log");
    AxisEncoder enc(spec);
    ASSERT_EQ(enc.dims(), 1u + 1u + 2u + 0u + 2u);
    // Grid index of (a=10, b=10, c={"q":1}, d=7, e=2): digits 2,1,1,0,1 in radices 3,3,2,1,2.
    uint64_t index = (((2 * 3 + 1) * 2 + 1) * 1 + 0) * 2 + 1;
    std::vector<double> v(enc.dims());
    enc.encode(index, v.data());
    const double h           = 1 / std::sqrt(2.0);
    std::vector<double> want = {1.0, 0.5, 0.0, h, 0.0, h};
    for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(v[i], want[i], 1e-12) << i;
    enc.encode(0, v.data());
    want = {0.0, 0.0, h, 0.0, h, 0.0};
    for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(v[i], want[i], 1e-12) << i;
}

TEST(BayesOpt, SpecFieldsRoundTripAndValidate) {
    json j                   = bump_spec("bayesian", 40, 9);
    j["sampling"]["initial"] = 6;
    j["sampling"]["kernel"]  = "rbf";
    j["sampling"]["xi"]      = 0.05;
    j["sampling"]["batch"]   = 3;
    j["axes"][0]["encoding"] = "linear";
    SweepSpec s              = sweep_spec_from_json(j);
    EXPECT_EQ(s.sampling.mode, SamplingMode::bayesian);
    EXPECT_EQ(s.sampling.initial, 6);
    EXPECT_EQ(s.sampling.kernel, "rbf");
    EXPECT_DOUBLE_EQ(s.sampling.xi, 0.05);
    EXPECT_EQ(s.sampling.batch, 3);
    EXPECT_EQ(s.axes[0].encoding, "linear");
    json back;
    to_json(back, s);
    EXPECT_EQ(sweep_spec_from_json(back), s);
    SweepSpec defaults = sweep_spec_from_json(bump_spec("bayesian", 40, 9));
    EXPECT_EQ(defaults.sampling.kernel, "matern52");
    EXPECT_EQ(defaults.sampling.batch, 1);
    to_json(back, defaults);
    EXPECT_EQ(sweep_spec_from_json(back), defaults);

    auto with = [&](const char* key, json value) {
        json k             = bump_spec("bayesian", 40, 9);
        k["sampling"][key] = std::move(value);
        return error_of(k);
    };
    EXPECT_NE(with("kernel", "cubic").find("spec.sampling.kernel: must be matern52 or rbf"), std::string::npos);
    EXPECT_NE(with("kernel", 3).find("spec.sampling.kernel: expected a string"), std::string::npos);
    EXPECT_NE(with("xi", -0.1).find("sampling.xi"), std::string::npos);
    EXPECT_NE(with("xi", "big").find("spec.sampling.xi: expected a number"), std::string::npos);
    EXPECT_NE(with("batch", 0).find("sampling.batch"), std::string::npos);
    EXPECT_NE(with("batch", 41).find("sampling.batch"), std::string::npos);
    EXPECT_NE(with("initial", -1).find("sampling.initial"), std::string::npos);
    EXPECT_NE(with("initial", 41).find("sampling.initial"), std::string::npos);
    EXPECT_NE(with("n", kMaxBayesianBudget + 1).find("spec.sampling.n: must be <= 500"), std::string::npos);
    EXPECT_NE(with("mode", "bayes").find("\"bayes\" is not one of \"grid\", \"random\", \"adaptive\", \"bayesian\""),
              std::string::npos);
    EXPECT_NE(with("acquisition", "ucb").find("sampling.acquisition: is not a known key"), std::string::npos);
    auto axis = [&](size_t i, json encoding) {
        json k                   = bump_spec("bayesian", 40, 9);
        k["axes"][i]["encoding"] = std::move(encoding);
        return error_of(k);
    };
    EXPECT_NE(axis(0, "cubic").find("spec.axes[0].encoding: must be auto, linear, log or categorical"),
              std::string::npos);
    EXPECT_NE(axis(0, "log").find("spec.axes[0].encoding: 'log' needs values > 0"), std::string::npos);  // x from 0
    EXPECT_NE(axis(2, "linear").find("spec.axes[2].encoding: 'linear' needs numeric values"), std::string::npos);
    EXPECT_EQ(axis(0, "categorical"), "");
    // The other modes ignore the Bayesian fields' values (defaults still round-trip).
    EXPECT_EQ(error_of(bump_spec("random", 40, 9)), "");
}

// ---- whole sweeps ----

TEST(BayesOpt, ReachesTheOptimumInFewerEvaluationsThanRandomSearch) {
    // 51 x 51 x 3 = 7803 configurations: more than kBayesCandidates, so the candidate draws are exercised too.
    // Random search's evaluation order is random sampling's plan (what a serial random sweep evaluates), taken long
    // enough that it is not cut off.
    constexpr int kBudget      = 60;
    constexpr int kRandomDraws = 3000;
    constexpr int kSeeds       = 6;
    double bayes_total = 0, random_total = 0;
    int bayes_found = 0;
    for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
        SweepSpec bayes = sweep_spec_from_json(bump_spec("bayesian", kBudget, seed));
        BumpEvaluator ev;
        auto db = store::ResultStore::open(fresh_db("vs_random"), store::ResultStore::Mode::read_write);
        set_serial_mode(true);  // evaluation order = proposal order
        SweepSummary sb = run_sweep(bayes, ev, *db, CancelToken());
        set_serial_mode(false);
        ASSERT_EQ(ev.order.size(), static_cast<size_t>(kBudget));
        EXPECT_EQ(sb.evaluated, static_cast<size_t>(kBudget));
        std::vector<json> random_order;
        for (const auto& p : plan_points(sweep_spec_from_json(bump_spec("random", kRandomDraws, seed))))
            random_order.push_back(p.config);
        size_t nb = evaluations_to_optimum(ev.order, kBudget);
        size_t nr = evaluations_to_optimum(random_order, kRandomDraws);
        ASSERT_LE(nr, static_cast<size_t>(kRandomDraws));
        bayes_total += static_cast<double>(nb);
        random_total += static_cast<double>(nr);
        bayes_found += nb <= kBudget ? 1 : 0;
        ASSERT_TRUE(sb.best.has_value());
        std::printf(
            "seed %d: within %.0f %% of the optimum after %zu evaluations (bayesian, budget %d; %d = not "
            "reached), %zu (random); bayesian best %.4f of %.4f\n",
            static_cast<int>(seed), 100 * kWithinOptimum, nb, kBudget, kBudget + 1, nr, *sb.best->metric("speedup"),
            BumpEvaluator::kOptimum);
    }
    std::printf("mean evaluations to within %.0f %% of the optimum over %d seeds: bayesian %.1f, random %.1f\n",
                100 * kWithinOptimum, kSeeds, bayes_total / kSeeds, random_total / kSeeds);
    EXPECT_GE(bayes_found, kSeeds - 1);
    EXPECT_LT(bayes_total, 0.5 * random_total);
}

TEST(BayesOpt, DeterministicForASeedAndResumesFromTheStore) {
    SweepSpec spec = sweep_spec_from_json(bump_spec("bayesian", 24, 5));
    auto run       = [&](const std::string& db, BumpEvaluator& ev) {
        auto store = store::ResultStore::open(fresh_db(db), store::ResultStore::Mode::read_write);
        set_serial_mode(true);
        SweepSummary s = run_sweep(spec, ev, *store, CancelToken());
        set_serial_mode(false);
        return s;
    };
    BumpEvaluator a, b;
    SweepSummary sa = run("det_a", a), sb = run("det_b", b);
    EXPECT_EQ(a.order, b.order);
    ASSERT_TRUE(sa.best && sb.best);
    EXPECT_EQ(sa.best->key, sb.best->key);
    // The first proposals are the seeded initial design: random sampling's first draws with the same seed.
    auto initial = plan_points(spec);
    ASSERT_EQ(initial.size(), 10u);  // auto: 2 per encoded dimension (1 + 1 + 3)
    for (size_t i = 0; i < initial.size(); ++i) EXPECT_EQ(a.order[i], initial[i].config);
    json random_spec = bump_spec("random", 10, 5);
    auto random      = plan_points(sweep_spec_from_json(random_spec));
    for (size_t i = 0; i < random.size(); ++i) EXPECT_EQ(random[i].grid_index, initial[i].grid_index);
    // Another seed explores differently.
    SweepSpec other = sweep_spec_from_json(bump_spec("bayesian", 24, 6));
    BumpEvaluator c;
    auto store_c = store::ResultStore::open(fresh_db("det_c"), store::ResultStore::Mode::read_write);
    run_sweep(other, c, *store_c, CancelToken());
    EXPECT_NE(c.order, a.order);
    // Re-running on a finished store replays the same proposals from the cached scores: nothing is evaluated.
    auto store_a =
        store::ResultStore::open(test::tmp_dir() / "bayes_det_a.sqlite", store::ResultStore::Mode::read_write);
    BumpEvaluator again;
    SweepSummary s2 = run_sweep(spec, again, *store_a, CancelToken());
    EXPECT_TRUE(again.order.empty());
    EXPECT_EQ(s2.cached, 24u);
    EXPECT_EQ(s2.best->key, sa.best->key);
}

TEST(BayesOpt, BatchesRunInParallelAndMatchTheSerialRun) {
    json j                 = bump_spec("bayesian", 20, 3);
    j["sampling"]["batch"] = 4;
    SweepSpec spec         = sweep_spec_from_json(j);
    BumpEvaluator serial_ev, pool_ev;
    auto serial_db = store::ResultStore::open(fresh_db("batch_serial"), store::ResultStore::Mode::read_write);
    auto pool_db   = store::ResultStore::open(fresh_db("batch_pool"), store::ResultStore::Mode::read_write);
    set_serial_mode(true);
    SweepSummary a = run_sweep(spec, serial_ev, *serial_db, CancelToken());
    set_serial_mode(false);
    jobs::JobSystem js;  // cores - 1 threads
    jobs::JobId id = js.submit("bayes", [&](jobs::JobContext& ctx) -> std::any {
        return run_sweep(spec, pool_ev, *pool_db, ctx.token(), ctx.progress_fn());
    });
    ASSERT_TRUE(js.wait(id, std::chrono::seconds(60)));
    auto msgs = js.drain();
    ASSERT_EQ(msgs.size(), 1u);
    ASSERT_EQ(msgs[0].status, jobs::JobStatus::done) << msgs[0].error;
    SweepSummary b = std::any_cast<SweepSummary>(msgs[0].payload);
    EXPECT_EQ(a.evaluated, 20u);
    EXPECT_EQ(b.evaluated, 20u);
    EXPECT_EQ(a.best->key, b.best->key);
    // Within a batch the pool may finish in any order; the set of stored configurations is the same.
    auto ra = serial_db->query(), rb = pool_db->query();
    ASSERT_EQ(ra.size(), rb.size());
    for (size_t i = 0; i < ra.size(); ++i) EXPECT_EQ(ra[i].key, rb[i].key);
}

TEST(BayesOpt, ConstraintsKeepTheBestFeasible) {
    // memory_gb = 10 x; with x <= 0.5 the unconstrained optimum (x = 0.62) is infeasible: the best feasible
    // configuration sits on the boundary.
    json j           = bump_spec("bayesian", 40, 2);
    j["constraints"] = json::parse(R"([{"metric": "memory_gb", "max": 5}])");
    SweepSpec spec   = sweep_spec_from_json(j);
    BumpEvaluator ev;
    auto store     = store::ResultStore::open(fresh_db("constrained"), store::ResultStore::Mode::read_write);
    SweepSummary s = run_sweep(spec, ev, *store, CancelToken());
    ASSERT_TRUE(s.best.has_value());
    EXPECT_LE(s.best->config["x"].get<double>(), 0.5);
    double best_feasible = BumpEvaluator::score(0.5, 0.3, "b");
    EXPECT_GE(*s.best->metric("speedup"), (1 - kWithinOptimum) * best_feasible);
}

TEST(BayesOpt, BudgetAtLeastTheGridEvaluatesTheWholeGrid) {
    json j         = json::parse(R"({"name": "tiny", "base": {"x": 0, "y": 0, "mode": "a"},
        "axes": [{"path": "/x", "values": [0.5, 0.6]}, {"path": "/mode", "values": ["a", "b"]}],
        "sampling": {"mode": "bayesian", "n": 10}, "objective": {"metric": "speedup"}})");
    SweepSpec spec = sweep_spec_from_json(j);
    EXPECT_EQ(plan_points(spec).size(), 4u);
    BumpEvaluator ev;
    auto store     = store::ResultStore::open(fresh_db("tiny"), store::ResultStore::Mode::read_write);
    SweepSummary s = run_sweep(spec, ev, *store, CancelToken());
    EXPECT_EQ(s.evaluated, 4u);
    EXPECT_EQ(s.best->config["x"].get<double>(), 0.6);
    EXPECT_EQ(s.best->config["mode"], "b");
}

// ---- optimizer ----

TEST(BayesOpt, OptimizerExhaustsASmallGridWithoutRepeats) {
    json j         = bump_spec("bayesian", 30, 4);
    j["axes"]      = json::parse(R"([{"path": "/x", "range": {"from": 0, "to": 1, "step": 0.1}},
                                {"path": "/mode", "values": ["a", "b", "c"]}])");
    SweepSpec spec = sweep_spec_from_json(j);  // 33 configurations
    BayesOptimizer opt(spec);
    std::set<uint64_t> seen;
    while (true) {
        auto picked = opt.propose(4);
        if (picked.empty()) break;
        for (uint64_t i : picked) {
            EXPECT_TRUE(seen.insert(i).second) << "proposed twice: " << i;
            json c = spec.config_at(i);
            // Failures and infeasible points (nullopt) must not stop the search.
            std::optional<double> score;
            if (c["mode"] != "c") score = BumpEvaluator::score(c["x"].get<double>(), 0.3, c["mode"].get<std::string>());
            opt.observe(i, score);
        }
    }
    EXPECT_EQ(seen.size(), 33u);
    EXPECT_TRUE(opt.last_hyper().has_value());
    EXPECT_THROW(opt.observe(1000, 1.0), std::logic_error);
}
