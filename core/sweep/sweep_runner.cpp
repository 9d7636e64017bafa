// Sweep planning and execution (see sweep_runner.h). Each configuration is stored as soon as it finishes, so
// cancellation or a kill loses only what is in flight, and a re-run finds the rest as cache hits.
#include "core/sweep/sweep_runner.h"

#include "core/parallel.h"
#include "core/store/hash.h"
#include "core/sweep/bayes_opt.h"

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/partitioner.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <random>
#include <set>

namespace speculum::sweep {

// ---- run state ----

namespace {

using Clock = std::chrono::steady_clock;

std::string task_of(const SweepSpec& spec, const nlohmann::json& config) {
    auto it = config.find("task");
    if (it != config.end() && it->is_string()) return it->get<std::string>();
    return spec.task;
}

// Shared by every batch of one run_sweep call.
struct RunState {
    RunState(const SweepSpec& s, Evaluator& e, store::ResultStore& r, const CancelToken& t, const ProgressFn& p,
             const SweepEventFn& f, const SweepOptions& o)
        : spec(s), evaluator(e), store(r), token(t), progress(p), on_event(f), options(o) {}
    const SweepSpec& spec;
    Evaluator& evaluator;
    store::ResultStore& store;
    const CancelToken& token;
    const ProgressFn& progress;
    const SweepEventFn& on_event;
    const SweepOptions& options;
    size_t total = 0;
    std::atomic<size_t> done{0};
    std::atomic<double> item_seconds{-1};  // measured wall time of one configuration (last chunk); -1 = not yet
    SweepSummary summary;
    std::mutex summary_mutex;  // guards summary counters updated from workers
};

// After the row is durable: counters, progress, and the event (a copy of the row only when someone listens).
void finish_one(RunState& st, const store::ResultRow& row, bool cached, int rung, const std::string& label) {
    size_t done = ++st.done;
    {
        std::lock_guard lock(st.summary_mutex);
        if (cached)
            ++st.summary.cached;
        else if (row.status == "done")
            ++st.summary.evaluated;
        else
            ++st.summary.failed;
    }
    if (st.progress) {
        std::string item = "config " + std::to_string(done) + "/" + std::to_string(st.total) + " " + label;
        st.progress(st.total ? static_cast<double>(done) / static_cast<double>(st.total) : 1.0, item);
    }
    if (st.on_event) {
        SweepEvent e;
        e.row    = row;
        e.cached = cached;
        e.done   = done;
        e.total  = st.total;
        e.rung   = rung;
        e.label  = label;
        st.on_event(e);
    }
}

// ---- batches ----

// Configurations are evaluated in chunks of about this much work, and each chunk's rows are committed in one
// transaction: per-row commits cost several times an analytic configuration (~25 us). A configuration that takes
// longer than this is a chunk by itself, so slow (engine) sweeps still commit every row on its own. A kill loses
// at most the chunks in flight, i.e. at most this much work per thread.
constexpr double kChunkSeconds = 0.01;

// Evaluates (or finds) every point at this fidelity; the result has one entry per point (nullopt = cancelled).
std::vector<std::optional<store::ResultRow>> run_batch(RunState& st, const std::vector<SweepPoint>& points, int prompts,
                                                       int rung) {
    std::vector<std::optional<store::ResultRow>> rows(points.size());
    const std::string model_hash = st.evaluator.model_hash();
    std::vector<store::ResultKey> keys;
    keys.reserve(points.size());
    for (const auto& p : points)
        keys.push_back({p.config_hash, model_hash, st.evaluator.dataset_hash(p.config, prompts)});

    // Cache hits first, on this thread, in one read transaction: cheap, and they must not occupy worker slots.
    st.token.throw_if_cancelled();
    std::vector<std::optional<store::ResultRow>> hits;
    if (!st.options.recompute) hits = st.store.find_many(keys);
    std::vector<size_t> todo;
    for (size_t i = 0; i < points.size(); ++i) {
        st.token.throw_if_cancelled();
        if (st.options.recompute || !hits[i] || hits[i]->status != "done") {
            todo.push_back(i);
            continue;
        }
        std::optional<double> score = objective_score(st.spec, *hits[i]);
        if (score != hits[i]->objective) {  // the row came from a sweep with another objective: re-score it
            hits[i]->objective = score;
            st.store.put(*hits[i]);
        }
        rows[i] = std::move(hits[i]);
        finish_one(st, *rows[i], true, rung, points[i].label);
    }

    auto store_one = [&](size_t i, store::ResultRow row) {
        row.objective = objective_score(st.spec, row);
        st.store.put(row);  // its own transaction: durable before we report it
        rows[i] = row;
        finish_one(st, std::move(row), false, rung, points[i].label);
    };
    // One configuration: its row, or nullopt when it was cancelled in flight (then it is not stored).
    auto evaluate_one = [&](size_t i) -> std::optional<store::ResultRow> {
        try {
            return evaluate_point(st.spec, st.evaluator, points[i], prompts, st.token);
        } catch (const Cancelled&) {
            return std::nullopt;
        }
    };

    // A chunk todo[lo, hi): evaluate until done or cancelled, commit what finished in one transaction (durable
    // before it is reported), then report each row.
    auto run_chunk = [&](size_t lo, size_t hi) {
        std::vector<store::ResultRow> finished;
        std::vector<size_t> where;
        finished.reserve(hi - lo);
        auto t0 = Clock::now();
        for (size_t k = lo; k < hi && !st.token.cancelled(); ++k) {
            std::optional<store::ResultRow> row = evaluate_one(todo[k]);
            if (!row) break;
            finished.push_back(std::move(*row));
            where.push_back(todo[k]);
        }
        if (finished.empty()) return;
        double per_item =
            std::chrono::duration<double>(Clock::now() - t0).count() / static_cast<double>(finished.size());
        st.item_seconds.store(per_item, std::memory_order_relaxed);
        if (finished.size() == 1)
            st.store.put(finished[0]);  // its own transaction
        else
            st.store.put_many(finished);
        for (size_t k = 0; k < finished.size(); ++k) {
            rows[where[k]] = std::move(finished[k]);
            finish_one(st, *rows[where[k]], false, rung, points[where[k]].label);
        }
    };

    if (st.options.executor) {
        // Evaluated elsewhere; each row arrives on this thread and is stored as it comes.
        if (todo.empty()) return rows;
        std::vector<SweepPoint> remote;
        for (size_t i : todo) remote.push_back(points[i]);
        std::vector<bool> seen(todo.size(), false);
        st.options.executor(remote, prompts, [&](size_t k, store::ResultRow row) {
            if (k >= todo.size() || seen[k]) throw std::logic_error("sweep executor finished a point twice");
            if (row.key.config_hash != remote[k].config_hash)
                throw std::logic_error("sweep executor returned the row of another configuration");
            seen[k] = true;
            store_one(todo[k], std::move(row));
        });
        st.token.throw_if_cancelled();
        return rows;
    }
    const bool serial = serial_mode() || st.evaluator.max_parallel() == 1;
    size_t next       = 0;
    if (st.item_seconds.load(std::memory_order_relaxed) < 0 && !todo.empty()) {
        run_chunk(0, 1);  // the first configuration alone measures what one costs
        next = 1;
    }
    // Chunk size from the measured cost; in parallel also at most a quarter of a thread's share, so the pool still
    // balances the load across its threads.
    double cost  = std::max(st.item_seconds.load(std::memory_order_relaxed), 1e-9);
    size_t left  = todo.size() - next;
    size_t grain = static_cast<size_t>(std::clamp(kChunkSeconds / cost, 1.0, 1e6));
    if (!serial) {
        size_t threads = static_cast<size_t>(std::max(1, tbb::this_task_arena::max_concurrency()));
        grain          = std::min(grain, std::max<size_t>(1, left / (4 * threads)));
    }
    if (serial || left <= 1) {
        for (size_t lo = next; lo < todo.size() && !st.token.cancelled(); lo += grain)
            run_chunk(lo, std::min(todo.size(), lo + grain));
    } else {
        // Runs in the arena of the calling job (its concurrency is --jobs); chunks of `grain` configurations.
        tbb::parallel_for(
            tbb::blocked_range<size_t>(next, todo.size(), grain),
            [&](const tbb::blocked_range<size_t>& r) { run_chunk(r.begin(), r.end()); }, tbb::simple_partitioner());
    }
    st.token.throw_if_cancelled();
    return rows;
}

// ---- Bayesian optimisation ----

// Bayesian optimisation: propose (initial design, then expected improvement), evaluate as one batch, observe,
// until the budget is spent. Resuming replays the same proposals from the cached scores.
void run_bayesian(RunState& st) {
    SweepSummary& summary = st.summary;
    const SweepSpec& spec = st.spec;
    const size_t budget   = static_cast<size_t>(spec.sampling.n);
    st.total              = budget;
    summary.planned       = budget;
    BayesOptimizer opt(spec);
    std::optional<store::ResultRow> best;
    while (opt.proposed() < budget) {
        st.token.throw_if_cancelled();
        size_t q                     = std::min(static_cast<size_t>(spec.sampling.batch), budget - opt.proposed());
        std::vector<uint64_t> picked = opt.propose(q);
        if (picked.empty()) break;  // the grid is exhausted
        std::vector<SweepPoint> points;
        for (uint64_t i : picked) {
            points.push_back(plan_point(spec, i));
            try {  // the initial design was validated up front; later proposals are checked here
                st.evaluator.validate(points.back().config);
            } catch (const std::invalid_argument& e) {
                throw std::invalid_argument("configuration [" + points.back().label + "]: " + e.what());
            }
        }
        auto rows = run_batch(st, points, spec.prompts, 0);
        for (size_t k = 0; k < picked.size(); ++k) {
            if (rows[k])
                opt.observe(picked[k], rows[k]->objective, rows[k]->metrics);
            else
                opt.observe(picked[k], std::nullopt);
            if (rows[k] && rows[k]->objective && (!best || *rows[k]->objective > *best->objective)) best = rows[k];
        }
    }
    st.total     = st.done;  // fewer than the budget when the grid ran out
    summary.best = best;
}

}  // namespace

// ---- planning and scoring ----

SweepPoint plan_point(const SweepSpec& spec, uint64_t index) {
    SweepPoint p;
    p.grid_index  = index;
    p.config      = spec.config_at(index);
    p.config_hash = store::json_hash(p.config);
    p.label       = spec.describe(index);
    return p;
}

store::ResultRow evaluate_point(const SweepSpec& spec, Evaluator& evaluator, const SweepPoint& point, int prompts,
                                const CancelToken& token) {
    store::ResultRow row;
    row.key     = {point.config_hash, evaluator.model_hash(), evaluator.dataset_hash(point.config, prompts)};
    row.sweep   = spec.name;
    row.task    = task_of(spec, point.config);
    row.config  = point.config;
    row.prompts = prompts;
    auto t0     = Clock::now();
    try {
        EvalContext ctx;
        ctx.token       = token;
        ctx.prompts     = prompts;
        EvalResult r    = evaluator.evaluate(point.config, ctx);
        row.stats       = std::move(r.stats);
        row.predictions = std::move(r.predictions);
        row.metrics     = std::move(r.metrics);
        row.prompts     = r.prompts ? r.prompts : prompts;
    } catch (const Cancelled&) {
        throw;
    } catch (const std::exception& e) {
        row.status  = "failed";
        row.message = e.what();
    }
    row.wall_s    = std::chrono::duration<double>(Clock::now() - t0).count();
    row.objective = objective_score(spec, row);
    return row;
}

std::vector<SweepPoint> plan_points(const SweepSpec& spec) {
    spec.validate();
    uint64_t size = spec.grid_size();
    std::vector<uint64_t> indices;
    if (spec.sampling.mode == SamplingMode::bayesian && static_cast<uint64_t>(spec.sampling.n) < size) {
        indices = BayesOptimizer(spec).initial_design();  // the rest is proposed as results come in
    } else if (spec.sampling.mode == SamplingMode::grid || static_cast<uint64_t>(spec.sampling.n) >= size) {
        if (size > kMaxGridConfigurations)
            throw std::invalid_argument("sampling.n covers the whole grid of " + std::to_string(size) +
                                        " configurations, more than the limit " +
                                        std::to_string(kMaxGridConfigurations));
        for (uint64_t i = 0; i < size; ++i) indices.push_back(i);
    } else {
        // mt19937_64 with a modulo draw: the same seed gives the same points on every platform.
        std::mt19937_64 rng(spec.sampling.seed);
        std::set<uint64_t> seen;
        while (indices.size() < static_cast<size_t>(spec.sampling.n)) {
            uint64_t i = rng() % size;
            if (seen.insert(i).second) indices.push_back(i);
        }
    }
    std::vector<SweepPoint> points;
    points.reserve(indices.size());
    for (uint64_t i : indices) points.push_back(plan_point(spec, i));
    return points;
}

std::optional<double> objective_score(const SweepSpec& spec, const store::ResultRow& row) {
    if (row.status != "done") return std::nullopt;
    for (const auto& c : spec.constraints) {
        std::optional<double> v = row.metric(c.metric);
        if (!v || (c.min && *v < *c.min) || (c.max && *v > *c.max)) return std::nullopt;
    }
    std::optional<double> v = row.metric(spec.objective.metric);
    if (!v || !std::isfinite(*v)) return std::nullopt;
    return spec.objective.maximize ? *v : -*v;
}

// ---- running a sweep ----

SweepSummary run_sweep(const SweepSpec& spec, Evaluator& evaluator, store::ResultStore& store, const CancelToken& token,
                       const ProgressFn& progress, const SweepEventFn& on_event, const SweepOptions& options) {
    auto t0                        = Clock::now();
    std::vector<SweepPoint> points = plan_points(spec);
    for (const auto& p : points) {  // every configuration must be valid before anything runs
        try {
            evaluator.validate(p.config);
        } catch (const std::invalid_argument& e) {
            throw std::invalid_argument("configuration [" + p.label + "]: " + e.what());
        }
    }
    RunState st(spec, evaluator, store, token, progress, on_event, options);

    auto best_of = [&](const std::vector<std::optional<store::ResultRow>>& rows) {
        std::optional<store::ResultRow> best;
        for (const auto& r : rows)
            if (r && r->objective && (!best || *r->objective > *best->objective)) best = r;
        return best;
    };

    if (spec.sampling.mode == SamplingMode::bayesian && static_cast<uint64_t>(spec.sampling.n) < spec.grid_size()) {
        run_bayesian(st);
    } else if (spec.sampling.mode != SamplingMode::adaptive) {
        st.total           = points.size();
        st.summary.planned = st.total;
        auto rows          = run_batch(st, points, spec.prompts, 0);
        st.summary.best    = best_of(rows);
    } else {
        // Successive halving over prompts: rung sizes n, ceil(n/eta), ... with prompts min, min*eta, ... max.
        const Sampling& s = spec.sampling;
        size_t n          = points.size();
        int prompts       = s.min_prompts;
        while (true) {
            st.summary.rung_sizes.push_back(n);
            st.summary.rung_prompts.push_back(prompts);
            if (n <= 1 || prompts >= s.max_prompts) break;
            n       = (n + static_cast<size_t>(s.eta) - 1) / static_cast<size_t>(s.eta);
            prompts = static_cast<int>(std::min<int64_t>(int64_t{prompts} * s.eta, s.max_prompts));
        }
        for (size_t k : st.summary.rung_sizes) st.total += k;
        st.summary.planned                  = st.total;
        std::vector<SweepPoint> rung_points = points;
        for (size_t rung = 0; rung < st.summary.rung_sizes.size(); ++rung) {
            auto rows       = run_batch(st, rung_points, st.summary.rung_prompts[rung], static_cast<int>(rung));
            st.summary.best = best_of(rows);
            if (rung + 1 == st.summary.rung_sizes.size()) break;
            std::vector<size_t> order;
            for (size_t i = 0; i < rows.size(); ++i)
                if (rows[i] && rows[i]->objective) order.push_back(i);
            std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
                if (*rows[a]->objective != *rows[b]->objective) return *rows[a]->objective > *rows[b]->objective;
                return rung_points[a].config_hash < rung_points[b].config_hash;
            });
            order.resize(std::min(order.size(), st.summary.rung_sizes[rung + 1]));
            std::vector<SweepPoint> next;
            for (size_t i : order) next.push_back(rung_points[i]);
            if (next.empty()) {  // nothing feasible to promote
                st.total = st.done;
                break;
            }
            // Fewer survivors than planned (failures, constraints): the unplanned evaluations count as done.
            st.total -= st.summary.rung_sizes[rung + 1] - next.size();
            rung_points = std::move(next);
        }
    }
    st.summary.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
    return st.summary;
}

}  // namespace speculum::sweep
