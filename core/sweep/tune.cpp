// The tune search loop (see tune.h): probes, the modeled pruning, successive halving, the confirmation.
#include "core/sweep/tune.h"

#include "core/format.h"
#include "core/store/hash.h"
#include "core/sweep/bayes_opt.h"
#include "core/sweep/sweep_runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

namespace speculum::sweep {

namespace {

using nlohmann::json;

constexpr int kMaxPromptScale = 8;  // the rungs' prompts grow at most 8-fold with a large budget

// Whether the configuration's first draft level keeps weights of its own: a separate model or head, or a self-draft
// that prunes, truncates or re-encodes (compact or dense copies), unless it is stored as a strict subset of the target.
bool own_weights(const json& config) {
    const engine::SpecConfig c = config.get<engine::SpecConfig>();
    if (c.levels.empty()) return false;
    const drafts::DraftSpec& d = c.levels[0];
    if (d.kind != drafts::DraftKind::self)
        return d.kind != drafts::DraftKind::ngram && d.kind != drafts::DraftKind::maxgram;
    if (d.strict_subset) return false;
    return d.prune.ratio > 0 || d.weight_trunc_bits > 0 || d.weight_format != drafts::WeightFormat::same;
}

struct Search {
    Search(const TuneOptions& options, store::ResultStore& st, const TuneHooks& h, Evaluator& ev)
        : o(options), store(st), hooks(h), evaluator(ev) {}
    const TuneOptions& o;
    store::ResultStore& store;
    const TuneHooks& hooks;
    Evaluator& evaluator;
    SweepSpec spec;
    TuneResult result;
    double t0 = 0, per_prompt_s = 0;  // measured wall time per prompt of one configuration (the budget's estimate)
    int64_t timed_prompts = 0;
    double timed_s        = 0;
    std::set<std::string> this_run;  // configurations (and prompt sets) this run measured or read

    double now() const {
        if (hooks.now) return hooks.now();
        return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    }
    bool over_budget(int prompts) const {
        const double estimate = timed_prompts > 0 ? timed_s / double(timed_prompts) * prompts : 0.0;
        return now() - t0 + estimate > o.budget_s;
    }

    // Measures (or finds in the store) one candidate at `prompts`; the run's figures, or nullopt when it failed or
    // the budget is spent (`forced` measures anyway: the probes' first and the confirmation).
    std::optional<engine::RunStats> measure(TuneCandidate& c, int prompts, const std::string& phase,
                                            bool forced = false) {
        hooks.cancel.throw_if_cancelled();
        SweepPoint point{0, c.config, store::json_hash(c.config), c.label};
        const store::ResultKey key{point.config_hash, evaluator.model_hash(),
                                   evaluator.dataset_hash(point.config, prompts)};
        std::optional<store::ResultRow> row = store.find(key);
        const bool found                    = row && row->status == "done";
        // From the store: measured by an earlier tune (a probe measured again at the first rung is this run's own).
        const bool cached = found && !this_run.count(key.config_hash + key.dataset_hash);
        this_run.insert(key.config_hash + key.dataset_hash);
        if (!found) {
            if (!forced && over_budget(prompts)) {
                result.budget_exhausted = true;
                if (c.state.empty()) c.state = "not measured: the budget was spent";
                return std::nullopt;
            }
            report(hooks.progress, std::min(0.99, (now() - t0) / o.budget_s), phase + ": " + c.label);
            const double start = now();
            row                = evaluate_point(spec, evaluator, point, prompts, hooks.cancel);
            store.put(*row);
            timed_s += now() - start, timed_prompts += prompts;
            ++result.measured;
        } else if (cached) {
            ++result.cached;
            timed_s += row->wall_s, timed_prompts += std::max(1, row->prompts);  // its time, for the estimates
        }
        if (row->status != "done") {
            c.state = "failed: " + row->message;
            ++result.failed;
            if (hooks.on_event) hooks.on_event({phase, c, cached});
            return std::nullopt;
        }
        c.measured_speedup = row->metric("speedup");
        c.prompts          = row->prompts;
        c.draft_bytes      = row->metric("draft_bytes").value_or(0.0);
        c.extra_bytes      = own_weights(c.config) ? c.draft_bytes : 0.0;
        c.state            = "measured";
        if (hooks.on_event) hooks.on_event({phase, c, cached});
        return engine::run_figures_from_json(row->stats);
    }
};

json base_config(const TuneOptions& o) {
    engine::SpecConfig c;
    c.dataset = o.dataset, c.task = o.task, c.prompt_ids = o.prompt_ids;
    c.prompt.clear();  // the dataset's prompts, or the ids
    c.max_new_tokens       = o.max_new_tokens;
    c.baseline             = true;
    c.sampling.temperature = 0.0f;
    return c;
}

json chain_config(const json& base, const TuneFamily& f, int gamma) {
    json c      = base;
    c["levels"] = f.levels;
    c["gamma"]  = {gamma};
    return c;
}

// The verification curve of the target, pooled over the probes: steps per pass by width (0 = not measured).
std::vector<double> pooled_curve(const std::vector<engine::RunStats>& probes) {
    std::vector<double> steps, passes;
    for (const engine::RunStats& s : probes)
        for (const engine::VerifyCost& v : s.verify_cost_curve()) {
            if (v.steps <= 0) continue;
            if (steps.size() <= size_t(v.width)) steps.resize(size_t(v.width) + 1), passes.resize(size_t(v.width) + 1);
            steps[size_t(v.width)] += v.steps * double(v.passes), passes[size_t(v.width)] += double(v.passes);
        }
    for (size_t w = 0; w < steps.size(); ++w)
        if (passes[w] > 0) steps[w] /= passes[w];
    return steps;
}

// Bytes per pass within 2 % count as the same memory (one draft's passes differ a little with their widths).
bool no_more(double a, double b) {
    return a <= b * 1.02 + 1.0;
}

void mark_front(std::vector<TuneCandidate>& cs) {
    for (TuneCandidate& c : cs) {
        if (!c.measured_speedup) continue;
        c.on_front = true;
        for (const TuneCandidate& d : cs)
            if (d.measured_speedup && no_more(d.extra_bytes, c.extra_bytes) &&
                *d.measured_speedup >= *c.measured_speedup &&
                (!no_more(c.extra_bytes, d.extra_bytes) || *d.measured_speedup > *c.measured_speedup))
                c.on_front = false;
    }
}

}  // namespace

TuneResult run_tune(const TuneOptions& o, const model::Model& target, Evaluator& evaluator, store::ResultStore& store,
                    const TuneHooks& hooks) {
    o.validate();
    Search s(o, store, hooks, evaluator);
    s.t0                            = s.now();
    s.spec.name                     = "tune";
    s.spec.evaluator                = "engine";
    s.spec.task                     = o.task.empty() ? "tune" : o.task;
    s.result.families               = tune_families(o, target);
    const json base                 = base_config(o);
    std::vector<TuneCandidate>& all = s.result.candidates;

    // 1. Probes: every family once, at the probe draft length and the first rung's prompts.
    std::vector<std::optional<engine::RunStats>> probe(s.result.families.size());
    std::vector<engine::RunStats> measured_probes;
    for (size_t f = 0; f < s.result.families.size(); ++f) {
        const TuneFamily& fam = s.result.families[f];
        TuneCandidate c;
        c.family = fam.name, c.label = fam.name + ", gamma " + std::to_string(o.probe_gamma);
        c.config = chain_config(base, fam, o.probe_gamma);
        probe[f] = s.measure(c, o.min_prompts, "probe", measured_probes.empty());
        if (probe[f]) measured_probes.push_back(*probe[f]);
        all.push_back(std::move(c));
    }
    s.result.combined = [&] {
        std::vector<const engine::RunStats*> ps;
        for (const auto& p : measured_probes) ps.push_back(&p);
        return engine::combined_oracle(ps);
    }();

    // 2. Chains of every family at every draft length, modeled from its probe; pruned below the best modeled.
    const std::vector<double> curve = pooled_curve(measured_probes);
    std::vector<double> family_best(s.result.families.size(), 0.0);
    std::vector<int> family_gamma(s.result.families.size(), o.probe_gamma);
    for (size_t f = 0; f < s.result.families.size(); ++f) {
        if (!probe[f]) continue;
        for (int g : o.gammas) {
            const double modeled = modeled_chain_speedup(*probe[f], g, curve);
            if (modeled > family_best[f]) family_best[f] = modeled, family_gamma[f] = g;
            if (g == o.probe_gamma) {
                all[f].modeled_speedup = modeled;
                continue;
            }
            TuneCandidate c;
            c.family          = s.result.families[f].name;
            c.label           = c.family + ", gamma " + std::to_string(g);
            c.config          = chain_config(base, s.result.families[f], g);
            c.modeled_speedup = modeled;
            all.push_back(std::move(c));
        }
    }
    // Like with like: a variant is pruned against the best the model gives any variant (the probes' own draft
    // lengths included), not against one probe's measurement, which a lucky pair of prompts can lift far above what
    // the model says of the same configuration.
    double best_modeled = 0;
    for (const TuneCandidate& c : all) best_modeled = std::max(best_modeled, c.modeled_speedup.value_or(0.0));
    for (TuneCandidate& c : all)
        if (c.modeled_speedup && *c.modeled_speedup < o.prune_below * best_modeled) {
            c.state = "pruned: modeled " + fmt("%.2f", *c.modeled_speedup) + "x < " + fmt("%.2f", o.prune_below) +
                      " x the best modeled " + fmt("%.2f", best_modeled) + "x";
            ++s.result.pruned;
        }

    // 3. Trees, early stops and a cascade of the best families: measured, not modeled.
    auto best_family = [&](bool statistical) {
        int at = -1;
        for (size_t f = 0; f < s.result.families.size(); ++f)
            if (s.result.families[f].statistical == statistical && probe[f] &&
                (at < 0 || family_best[f] > family_best[size_t(at)]))
                at = int(f);
        return at;
    };
    const int model_family = best_family(false), stat_family = best_family(true);
    if (model_family >= 0 && family_best[size_t(model_family)] >= o.prune_below * best_modeled) {
        const TuneFamily& fam = s.result.families[size_t(model_family)];
        const int g           = family_gamma[size_t(model_family)];
        for (int budget : o.tree_budgets) {
            TuneCandidate c;
            c.family = fam.name, c.label = fam.name + ", Sequoia tree " + std::to_string(budget);
            c.config                        = chain_config(base, fam, g);
            c.config["verification"]        = "tree";
            c.config["tree"]["kind"]        = "sequoia";
            c.config["tree"]["node_budget"] = budget;
            all.push_back(std::move(c));
        }
        for (double p : o.p_mins) {
            TuneCandidate c;
            c.family = fam.name, c.label = fam.name + ", gamma " + std::to_string(g) + ", p_min " + fmt("%.2f", p);
            c.config          = chain_config(base, fam, g);
            c.config["p_min"] = p;
            all.push_back(std::move(c));
        }
        const bool head = drafts::reads_target_states(fam.levels[0].kind);
        if (o.cascades && stat_family >= 0 && !head) {
            const TuneFamily& low = s.result.families[size_t(stat_family)];
            TuneCandidate c;
            c.family           = fam.name,
            c.label            = "cascade " + fam.name + " (" + std::to_string(g) + ") <- " + low.name + " (4)";
            c.config           = base;
            c.config["levels"] = {fam.levels[0], low.levels[0]};
            c.config["gamma"]  = {g, 4};
            all.push_back(std::move(c));
        }
    }

    // 3b. Bayesian optimisation where it pays: the compact self-draft's pruning ratio and truncation bits form a grid
    // no single probe can model (acceptance and cost both move with them), so when its probe says the family can
    // win, a GP proposes configurations by expected improvement at the family's best modeled draft length (the draft
    // length is the chain model's job), each measured at the first rung's prompts. The best joins the halving.
    for (size_t f = 0; f < s.result.families.size() && o.bayes_evaluations > 0; ++f) {
        const TuneFamily& fam = s.result.families[f];
        if (!fam.compact || !probe[f] || family_best[f] < o.prune_below * best_modeled) continue;
        SweepSpec bo        = s.spec;
        bo.base             = chain_config(base, fam, family_gamma[f]);
        bo.axes             = {{"prune", "/levels/0/prune/ratio", {0.25, 0.375, 0.5, 0.625, 0.75}, "linear"},
                               {"truncate", "/levels/0/weight_trunc_bits", {0, 2, 3, 4, 5, 6, 7}, "linear"}};
        bo.sampling.mode    = SamplingMode::bayesian;
        bo.sampling.n       = o.bayes_evaluations;
        bo.sampling.initial = std::min(o.bayes_evaluations, 4);
        bo.objective        = {"speedup", true};
        bo.validate();
        BayesOptimizer opt(bo);
        std::optional<size_t> best_bo;
        while (opt.proposed() < size_t(o.bayes_evaluations) && !s.result.budget_exhausted) {
            const std::vector<uint64_t> picked = opt.propose(1);
            if (picked.empty()) break;
            TuneCandidate c;
            c.family = fam.name;
            c.config = bo.config_at(picked[0]);
            if (c.config == all[f].config) {  // the probe itself: its measurement stands
                opt.observe(picked[0], all[f].measured_speedup);
                continue;
            }
            const double ratio = c.config["levels"][0]["prune"]["ratio"].get<double>();
            const int bits = c.config["levels"][0]["weight_trunc_bits"].get<int>(), g = c.config["gamma"][0].get<int>();
            c.label = "self: prune " + fmt("%.3g", ratio) + " + truncate " + std::to_string(bits) + " bits, gamma " +
                      std::to_string(g);
            c.config["levels"][0]["label"] = c.label.substr(0, c.label.rfind(", gamma"));
            const std::string phase        = "Bayesian " + std::to_string(opt.proposed()) + "/" +
                                      std::to_string(o.bayes_evaluations) + " (" + fam.name + ")";
            const bool ok = s.measure(c, o.min_prompts, phase).has_value() && c.measured_speedup;
            opt.observe(picked[0], ok ? c.measured_speedup : std::nullopt);
            if (!ok && c.state.rfind("not measured", 0) == 0) break;  // the budget is spent
            if (ok) c.state = "measured: Bayesian proposal";          // kept at its first-rung measurement
            all.push_back(std::move(c));
            if (ok && (!best_bo || *all.back().measured_speedup > *all[*best_bo].measured_speedup))
                best_bo = all.size() - 1;
        }
        if (best_bo) all[*best_bo].state.clear();  // the best proposal is measured on in the halving
        ++s.result.bayes_families;
    }

    // 4. Successive halving over what is left: every rung measures the pool, keeps the best 1/eta, and gives them
    // eta times the prompts.
    std::vector<size_t> pool;
    for (size_t i = 0; i < all.size(); ++i)
        if (all[i].state.rfind("pruned", 0) != 0 && all[i].state.rfind("failed", 0) != 0 &&
            all[i].state.rfind("measured: Bayesian", 0) != 0)
            pool.push_back(i);
    // The budget buys fidelity: the rungs' prompts are scaled (x2, x4, x8) while the halving and the confirmation of
    // the two finalists are estimated to fit in the budget left after the probes, from their time per prompt (the
    // stored rows' times on a resumed tune, so it scales the same way and finds its rows again).
    if (s.timed_prompts > 0 && s.timed_s > 0) {
        const double per_prompt = s.timed_s / double(s.timed_prompts), left = o.budget_s - s.timed_s;
        auto cost = [&](int k) {
            double prompts_total = 2.0 * o.confirm_passes * o.max_prompts * k;
            size_t n             = pool.size();
            for (int p = o.min_prompts * k; n > 0; p = std::min(o.max_prompts * k, p * o.eta)) {
                prompts_total += double(n) * p;
                if (p >= o.max_prompts * k || n == 1) break;
                n = (n + size_t(o.eta) - 1) / size_t(o.eta);
            }
            return prompts_total * per_prompt;
        };
        for (int k = 2; k <= kMaxPromptScale; k *= 2)
            if (cost(k) <= 0.8 * left) s.result.prompt_scale = k;
    }
    const int min_prompts = o.min_prompts * s.result.prompt_scale, max_prompts = o.max_prompts * s.result.prompt_scale;
    int prompts = min_prompts, rung = 0;
    while (!pool.empty()) {
        ++rung;
        const std::string phase =
            "rung " + std::to_string(rung) + " (" + std::to_string(prompts) + (prompts == 1 ? " prompt)" : " prompts)");
        std::vector<size_t> done;
        for (size_t i : pool)
            if (s.measure(all[i], prompts, phase) && all[i].measured_speedup) done.push_back(i);
        if (done.empty()) break;
        std::sort(done.begin(), done.end(),
                  [&](size_t a, size_t b) { return *all[a].measured_speedup > *all[b].measured_speedup; });
        pool = done;
        if (prompts >= max_prompts || pool.size() == 1 || s.result.budget_exhausted) break;
        pool.resize(std::max<size_t>(1, (pool.size() + size_t(o.eta) - 1) / size_t(o.eta)));
        prompts = std::min(max_prompts, prompts * o.eta);
    }

    // 5. The two best of the last rung, each confirmed by repeated A/B pairs at the most prompts: the winner is the
    // higher confirmed median (one measurement at the last rung can be a lucky one).
    double best_median = -1;
    size_t best_index  = 0;
    for (size_t f = 0; f < std::min<size_t>(2, pool.size()); ++f) {
        TuneCandidate c = all[pool[f]];
        c.label += " (confirmed)";
        c.modeled_speedup.reset();
        c.config["repeats"] = {{"min", 2}, {"max", o.confirm_passes}, {"rel_width", 0.05}};
        auto stats          = s.measure(c, max_prompts, "confirm", true);
        if (!stats) continue;
        const std::optional<store::ResultRow> row = store.find(
            {store::json_hash(c.config), s.evaluator.model_hash(), s.evaluator.dataset_hash(c.config, max_prompts)});
        std::optional<session::RepeatSummary> rs;
        if (row && row->stats.contains("repeated")) rs = row->stats["repeated"].get<session::RepeatSummary>();
        const double median = rs && rs->speedup.n > 0 ? rs->speedup.median : c.measured_speedup.value_or(0.0);
        c.state             = "confirmed";
        if (median > best_median) {
            best_median           = median;
            s.result.winner       = c.config.get<engine::SpecConfig>();
            s.result.winner_stats = *stats;
            s.result.waterfall    = engine::speedup_waterfall(*stats);
            s.result.confirmed    = rs;
            best_index            = all.size();
        }
        all.push_back(std::move(c));
    }
    if (s.result.winner) all[best_index].state = "confirmed: the best";
    for (TuneCandidate& c : all)
        if (c.state.empty()) c.state = "not reached";
    mark_front(all);
    // Best first: the most prompts measured (the last rungs and the confirmation), then the measured speedup.
    std::stable_sort(all.begin(), all.end(), [](const TuneCandidate& a, const TuneCandidate& b) {
        if (a.measured_speedup.has_value() != b.measured_speedup.has_value()) return a.measured_speedup.has_value();
        if (a.prompts != b.prompts) return a.prompts > b.prompts;
        const double x = a.measured_speedup.value_or(-1), y = b.measured_speedup.value_or(-1);
        if (x != y) return x > y;
        return a.modeled_speedup.value_or(-1) > b.modeled_speedup.value_or(-1);
    });
    s.result.wall_s = s.now() - s.t0;
    report(hooks.progress, 1.0, "tune done");
    return std::move(s.result);
}

void to_json(nlohmann::json& j, const TuneResult& r) {
    json cands = json::array();
    for (const TuneCandidate& c : r.candidates) {
        json one = {{"label", c.label},
                    {"family", c.family},
                    {"state", c.state},
                    {"prompts", c.prompts},
                    {"draft_bytes", c.draft_bytes},
                    {"extra_bytes", c.extra_bytes},
                    {"on_front", c.on_front},
                    {"config", c.config}};
        if (c.measured_speedup) one["measured_speedup"] = *c.measured_speedup;
        if (c.modeled_speedup) one["modeled_speedup"] = *c.modeled_speedup;
        cands.push_back(std::move(one));
    }
    j = {{"candidates", std::move(cands)},
         {"measured", r.measured},
         {"cached", r.cached},
         {"pruned", r.pruned},
         {"bayes_families", r.bayes_families},
         {"failed", r.failed},
         {"budget_exhausted", r.budget_exhausted},
         {"prompt_scale", r.prompt_scale},
         {"wall_s", r.wall_s},
         {"waterfall", r.waterfall},
         {"combined_oracle", r.combined}};
    if (r.winner) j["winner"] = *r.winner;
    if (r.confirmed) j["confirmed"] = *r.confirmed;
}

}  // namespace speculum::sweep
