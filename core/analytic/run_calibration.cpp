// Calibration from measured engine runs (see run_calibration.h): acceptance fits per run, timing fits pooled per
// target and per level, predictions through kmatrix_generation.
#include "core/analytic/run_calibration.h"

#include "core/analytic/checks.h"
#include "core/analytic/cost.h"
#include "core/analytic/kmatrix.h"
#include "core/analytic/trees.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>

namespace speculum::analytic {

// ---- helpers ----

namespace {

constexpr int kBisections      = 40;    // reviewer acceptance to 1e-12
constexpr int kFixedPointSteps = 50;    // target acceptance: the tail correction settles in a few steps
constexpr int kMaxTokens       = 4096;  // tokens per prompt (speculum-cli run's limit; bounds the fit's time)

// name[i] (appends rather than "literal" + string, which trips GCC 12's -Wrestrict false positive).
std::string indexed(std::string name, size_t i) {
    return name.append("[").append(std::to_string(i)).append("]");
}

int row_sum(const std::vector<std::vector<int>>& k, size_t i) {
    int s = 0;
    for (int v : k[i]) s += v;
    return s;
}

bool is_reviewer(const MeasuredEngineRun& r, size_t j) {
    return row_sum(r.k_matrix, j) > 0;
}

double measured_units(const MeasuredLevel& l) {
    return double(l.per_call ? l.n_calls : l.n_forward);
}

// ---- chain acceptance fits ----

// Tail of a generation: t[q] += E[steps whose draft request was q < k0 and whose q tokens were all accepted], for
// `prompts` prompts of n tokens (the engine drafts min(k0, tokens left − 1)). Such steps end without reaching
// position q + 1. A step asks for q < k0 only when q + 1 tokens are left, so t[q] = P(a step starts with q + 1
// left) · Π_{i<q} α_i, the first factor by a forward pass over the tokens left.
void add_tail_full_accepts(const std::vector<double>& alpha, int k0, int n, int prompts, std::vector<double>& t) {
    std::vector<double> hit(size_t(n) + 1, 0.0);  // hit[r]: P(some step starts with r tokens left)
    hit[size_t(n)] = 1.0;
    for (int r = n; r >= 1; --r) {
        if (hit[size_t(r)] == 0.0) continue;
        int g        = std::min(k0, r - 1);
        double reach = hit[size_t(r)];
        for (int a = 0; a <= g; ++a) {  // a accepted, then a rejection (or the draft ended): a + 1 tokens
            double next = a < g ? alpha[size_t(a)] : 0.0;
            hit[size_t(r - a - 1)] += reach * (1.0 - next);
            reach *= next;
        }
    }
    double all = 1.0;  // Π_{i<q} α_i
    for (int q = 0; q < k0 && q + 1 <= n; ++q) {
        t[size_t(q)] += prompts * hit[size_t(q) + 1] * all;
        all *= alpha[size_t(q)];
    }
}

// Per-position acceptance of the target's draft. A position is an opportunity when every earlier one was accepted
// and the step asked for it; Max-Gram may return fewer tokens than asked, and such a missing token counts as a
// rejection (the reviewer then emits its own token, as after a rejection). The measured counts see only drafted
// positions, so: α_p = accepted_p / (steps with positions < p accepted − tail steps that asked for fewer than p
// tokens and got them all accepted), the tail term modeled with the current α until it settles.
std::vector<double> fit_target_alpha(const MeasuredEngineRun& r) {
    const int k0 = row_sum(r.k_matrix, 0);
    auto count   = [&](const std::vector<int64_t>& v, int p) { return p < int(v.size()) ? double(v[size_t(p)]) : 0.0; };
    std::map<int, int> lengths;  // prompts by tokens generated
    for (int n : r.generated) ++lengths[n];
    std::vector<double> alpha(size_t(k0), 0.0);
    for (int p = 0; p < k0; ++p) {
        double reached   = count(r.pos_reached, p);
        alpha[size_t(p)] = reached > 0 ? count(r.pos_accepted, p) / reached : 0.0;
    }
    for (int it = 0; it < kFixedPointSteps; ++it) {
        std::vector<double> tail(size_t(k0), 0.0);
        for (auto [n, prompts] : lengths) add_tail_full_accepts(alpha, k0, n, prompts, tail);
        double change = 0;
        for (int p = 0; p < k0; ++p) {
            double before    = p == 0 ? double(r.n_steps) : count(r.pos_accepted, p - 1);
            double opp       = before - tail[size_t(p)];
            double acc       = count(r.pos_accepted, p);
            double a         = opp > 0 ? std::clamp(acc / opp, 0.0, 1.0) : (acc > 0 ? 1.0 : 0.0);
            change           = std::max(change, std::abs(a - alpha[size_t(p)]));
            alpha[size_t(p)] = a;
        }
        if (change < 1e-10) break;
    }
    return alpha;
}

// The engine's process for this run under the given acceptance: expected work over every prompt.
std::vector<LevelWork> model_work(const MeasuredEngineRun& r, const std::vector<double>& target_alpha,
                                  const std::vector<double>& reviewer_alpha) {
    KMatrixCascade m;
    m.k            = r.k_matrix;
    m.target_alpha = target_alpha;
    m.alpha.assign(r.k_matrix.size(), std::vector<double>(r.k_matrix.size(), 0.0));
    for (size_t j = 1; j < r.k_matrix.size(); ++j) {
        m.alpha[j].assign(r.k_matrix.size(), reviewer_alpha[j]);
        m.c.push_back(0.0);  // timing is applied by the caller
        m.block.push_back(r.levels[j].per_call ? 0 : 1);
    }
    std::vector<LevelWork> total(r.k_matrix.size());
    std::map<int, int> lengths;
    for (int n : r.generated) ++lengths[n];
    for (auto [n, times] : lengths) {
        auto w = kmatrix_generation(m, n).work;
        for (size_t j = 0; j < total.size(); ++j) {
            total[j].calls += times * w[j].calls;
            total[j].units += times * w[j].units;
            total[j].reviewed += times * w[j].reviewed;
            total[j].accepted += times * w[j].accepted;
        }
    }
    return total;
}

// Acceptance at each intermediate reviewer j, top down: the α whose modeled accepted tokens equal the measured
// ones (a level asked for n tokens takes n − accepted steps, so accepted counts are what pins α; drafts that came
// back short count as rejections, as for the target).
std::vector<double> fit_reviewer_alpha(const MeasuredEngineRun& r, const std::vector<double>& target_alpha) {
    std::vector<double> alpha(r.k_matrix.size(), 0.5);
    alpha[0] = -1;
    for (size_t j = 1; j < r.k_matrix.size(); ++j) {
        if (!is_reviewer(r, j)) {
            alpha[j] = -1;
            continue;
        }
        const double want = double(r.levels[j].n_review_accepted);
        auto accepted     = [&](double a) {
            alpha[j] = a;
            return model_work(r, target_alpha, alpha)[j].accepted;
        };
        double lo = 0.0, hi = 1.0;
        if (want <= accepted(0.0))
            hi = 0.0;
        else if (want >= accepted(1.0))
            lo = 1.0;
        for (int it = 0; it < kBisections && hi - lo > 1e-12; ++it) {
            double mid                       = 0.5 * (lo + hi);
            (accepted(mid) < want ? lo : hi) = mid;
        }
        alpha[j] = 0.5 * (lo + hi);
    }
    for (double& a : alpha) a = std::max(a, 0.0);  // the model reads α only at reviewers
    return alpha;
}

// ---- run fits and token trees ----

struct RunFit {
    std::vector<double> target_alpha, reviewer_alpha;
    std::vector<LevelWork> work;
};

void require_count64(int64_t v, const std::string& field) {
    if (v < 0) throw InvalidInput(field + " must be >= 0, got " + std::to_string(v));
}

bool is_tree_run(const MeasuredEngineRun& r) {
    return !r.tree_parent.empty() || r.sequoia_budget > 0;
}

// A token-tree run: acceptance by depth and rank, p[d][r] = accepted / offered, under which the verified shape's
// expected tokens per step is exact (trees.h); steps = the tokens generated ÷ that (the shorter trees of the last
// steps are not modeled); the drafter's units per step are its measured ones (its passes depend on the shape, not
// on acceptance).
RunFit tree_fit(const MeasuredEngineRun& r) {
    AcceptanceTable p;
    for (size_t d = 0; d < r.rank_offered.size(); ++d) {
        p.emplace_back();
        for (size_t k = 0; k < r.rank_offered[d].size(); ++k) {
            const double off = double(r.rank_offered[d][k]);
            p.back().push_back(off > 0 && k < r.rank_accepted[d].size() ? double(r.rank_accepted[d][k]) / off : 0.0);
        }
        if (p.back().empty()) p.back().push_back(0.0);
    }
    if (p.empty()) p.push_back({0.0});
    // Ranks are exclusive choices: a table whose row sums exceed 1 (noise in tiny counts) is scaled down.
    for (auto& row : p) {
        double sum = 0;
        for (double x : row) sum += x;
        if (sum > 1.0)
            for (double& x : row) x /= sum;
    }
    const double expected = r.sequoia_budget > 0
                                ? sequoia_best_tree(p, r.sequoia_budget, r.sequoia_max_depth).expected_length
                                : tree_expected_length(TokenTree{r.tree_parent}, p);
    double tokens         = 0;
    for (int g : r.generated) tokens += g;
    RunFit f;
    f.work.assign(r.levels.size(), {});
    f.work[0].units = tokens / expected;
    f.work[0].calls = f.work[0].units;
    for (size_t j = 1; j < r.levels.size(); ++j) {
        f.work[j].units = measured_units(r.levels[j]) / double(r.n_steps) * f.work[0].units;
        f.work[j].calls = double(r.levels[j].n_calls) / double(r.n_steps) * f.work[0].units;
    }
    for (size_t d = 0; d < r.pos_reached.size(); ++d)
        f.target_alpha.push_back(r.pos_reached[d] > 0 ? double(r.pos_accepted[d]) / double(r.pos_reached[d]) : 0.0);
    f.reviewer_alpha.assign(r.levels.size(), -1.0);
    return f;
}

// A level's cost is pooled over runs of one target by name and role: the same model drafting alone and reviewing
// a lower level's drafts (a pass over inner + 1 tokens) costs differently per unit.
std::array<std::string, 3> level_key(const MeasuredEngineRun& r, size_t j) {
    std::string role = is_tree_run(r) ? "tree drafter" : "drafter";
    if (is_reviewer(r, j)) role = "reviewer of " + std::to_string(row_sum(r.k_matrix, int(j)) + 1);
    return {r.target, r.levels[j].name, role};
}

}  // namespace

// ---- validation ----

void validate(const MeasuredEngineRun& r) {
    const std::string s = (r.source.empty() ? std::string("run") : r.source) + ": ";
    const size_t n1     = r.k_matrix.size();
    if (n1 < 2 || n1 > 17) throw InvalidInput(s + "k_matrix must have 2..17 rows (the target and its draft levels)");
    for (size_t i = 0; i < n1; ++i) {
        if (r.k_matrix[i].size() != n1)
            throw InvalidInput(indexed(s + "k_matrix", i) + " must have " + std::to_string(n1) + " columns");
        for (size_t j = 0; j < n1; ++j) {
            int v = r.k_matrix[i][j];
            if (v < 0 || v > 1024 || (j <= i && v != 0))
                throw InvalidInput(indexed(indexed(s + "k_matrix", i), j) +
                                   " must be in [0, 1024] and 0 on and below the diagonal, got " + std::to_string(v));
        }
    }
    if (row_sum(r.k_matrix, 0) == 0) throw InvalidInput(s + "k_matrix[0]: the target's draft is empty");
    if (is_tree_run(r)) {
        if (n1 != 2) throw InvalidInput(s + "a token-tree run has exactly one draft level");
        if (r.sequoia_budget > 0) {
            require_count(r.sequoia_budget, 2, 4096, s + "sequoia_budget");
            require_count(r.sequoia_max_depth, 1, 4096, s + "sequoia_max_depth");
        } else {
            validate_tree(TokenTree{r.tree_parent}, (s + "tree_parent").c_str());
        }
        if (r.rank_offered.size() != r.rank_accepted.size())
            throw InvalidInput(s + "rank_offered and rank_accepted must have the same depths");
        for (size_t d = 0; d < r.rank_offered.size(); ++d) {
            if (r.rank_offered[d].size() != r.rank_accepted[d].size())
                throw InvalidInput(indexed(s + "rank_accepted", d) + " must be as long as rank_offered" +
                                   indexed("", d));
            for (size_t k = 0; k < r.rank_offered[d].size(); ++k)
                if (r.rank_accepted[d][k] < 0 || r.rank_accepted[d][k] > r.rank_offered[d][k])
                    throw InvalidInput(indexed(indexed(s + "rank_accepted", d), k) + " must be in [0, rank_offered]");
        }
    }
    if (r.levels.size() != n1)
        throw InvalidInput(s + "levels: " + std::to_string(r.levels.size()) + " entries for " + std::to_string(n1) +
                           " levels (the target and every draft level)");
    if (r.generated.empty()) throw InvalidInput(s + "no prompts (runs is empty)");
    for (size_t p = 0; p < r.generated.size(); ++p)
        require_count(r.generated[p], 1, kMaxTokens, indexed(s + "runs", p) + ".n_generated");
    if (r.n_steps < 1) throw InvalidInput(s + "n_steps must be >= 1");
    require_count64(r.n_drafted, s + "n_drafted");
    if (r.pos_reached.size() != r.pos_accepted.size())
        throw InvalidInput(s + "pos_reached and pos_accepted must have the same length");
    for (size_t i = 0; i < r.pos_reached.size(); ++i) {
        std::string f = indexed("", i);
        require_count64(r.pos_accepted[i], s + "pos_accepted" + f);
        if (r.pos_accepted[i] > r.pos_reached[i])
            throw InvalidInput(s + "pos_accepted" + f + " exceeds pos_reached" + f);
    }
    for (auto [v, f] :
         {std::pair{r.t_decode_s, "t_decode_s"}, {r.t_draft_s, "t_draft_s"}, {r.t_verify_s, "t_verify_s"}})
        require_nonnegative(v, s + f);
    if (!(r.baseline_tokens_per_s > 0) || !(r.speedup > 0) || !std::isfinite(r.baseline_tokens_per_s))
        throw InvalidInput(s +
                           "no measured speedup (baseline_tokens_per_s and speedup must be > 0): the run needs "
                           "its autoregressive baseline (do not pass --no-baseline)");
    for (size_t j = 0; j < n1; ++j) {
        const MeasuredLevel& l = r.levels[j];
        std::string f          = indexed(s + "levels", j) + ".";
        require_count64(l.n_calls, f + "n_calls");
        require_count64(l.n_forward, f + "n_forward");
        require_nonnegative(l.t_s, f + "t_s");
        require_count64(l.n_review_accepted, f + "n_review_accepted");
        if (l.n_review_accepted > l.n_reviewed) throw InvalidInput(f + "n_review_accepted exceeds n_reviewed");
        if (j > 0 && measured_units(l) <= 0 && l.t_s > 0)
            throw InvalidInput(f + (l.per_call ? "n_calls" : "n_forward") + " is 0 but the level took time");
    }
}

// ---- calibration ----

namespace {

// Weighted least squares of v = x . beta over rows (x, v, weight) with 2 or 3 unknowns; false when singular.
bool least_squares(const std::vector<std::array<double, 3>>& x, const std::vector<double>& v,
                   const std::vector<double>& wt, int k, std::array<double, 3>& beta) {
    double a[3][4] = {};
    for (size_t i = 0; i < x.size(); ++i)
        for (int r = 0; r < k; ++r) {
            for (int c = 0; c < k; ++c) a[r][c] += wt[i] * x[i][size_t(r)] * x[i][size_t(c)];
            a[r][3] += wt[i] * x[i][size_t(r)] * v[i];
        }
    for (int c = 0; c < k; ++c) {  // Gauss-Jordan with partial pivoting
        int p = c;
        for (int r = c + 1; r < k; ++r)
            if (std::abs(a[r][c]) > std::abs(a[p][c])) p = r;
        if (std::abs(a[p][c]) < 1e-12) return false;
        std::swap(a[c], a[p]);
        for (int r = 0; r < k; ++r)
            if (r != c) {
                const double f = a[r][c] / a[c][c];
                for (int q = c; q < 4; ++q) a[r][q] -= f * a[c][q];
            }
    }
    beta = {0, 0, 0};
    for (int r = 0; r < k; ++r) beta[size_t(r)] = a[r][3] / a[r][r];
    return true;
}

// The MoE term of a target whose runs recorded their routing: pooled usage and distinct experts by width, the
// sharing exponent, and v(w) = fixed + per_token w + per_expert D(w) over the measured widths (passes[w] each).
void fit_moe_term(FittedTarget& t, const std::vector<MeasuredEngineRun>& runs, const std::vector<double>& passes) {
    std::vector<double> usage, dsum, dpass;
    int usage_runs = 0;
    for (const auto& r : runs) {
        if (r.target != t.target || r.expert_usage.empty()) continue;
        if (usage.empty()) usage.assign(r.expert_usage.size(), 0.0);
        if (r.expert_usage.size() != usage.size()) continue;  // runs of another model under one name: skip it
        for (size_t e = 0; e < usage.size(); ++e) usage[e] += r.expert_usage[e];
        ++usage_runs;
        for (size_t w = 0; w < r.distinct_by_width.size() && w < r.verify_width_passes.size(); ++w) {
            if (dsum.size() <= w) dsum.resize(w + 1, 0.0), dpass.resize(w + 1, 0.0);
            dsum[w] += r.distinct_by_width[w] * double(r.verify_width_passes[w]);
            dpass[w] += double(r.verify_width_passes[w]);
        }
    }
    if (usage_runs == 0) return;
    for (double& u : usage) u /= usage_runs;
    t.expert_usage = usage;
    t.distinct_by_width.assign(dsum.size(), 0.0);
    std::vector<std::pair<int, double>> observed;
    std::vector<std::array<double, 3>> x;
    std::vector<double> v, wt;
    for (size_t w = 1; w < dsum.size(); ++w) {
        if (dpass[w] <= 0) continue;
        t.distinct_by_width[w] = dsum[w] / dpass[w];
        observed.push_back({int(w), t.distinct_by_width[w]});
        if (w < t.verify_by_width.size() && t.verify_by_width[w] > 0 && w < passes.size())
            x.push_back({1.0, double(w), t.distinct_by_width[w]}), v.push_back(t.verify_by_width[w]),
                wt.push_back(passes[w]);
    }
    t.expert_sharing = observed.empty() ? 1.0 : fit_expert_sharing(usage, observed);
    if (x.size() < 3) return;  // three widths at least: the fixed part, the tokens and the experts apart
    // All three terms; where one comes out negative (noise, or D(w) and w too alike over the widths measured), the
    // fit without it: no part may be negative.
    for (const std::array<int, 3>& cols : {std::array<int, 3>{0, 1, 2}, {0, 2, -1}, {1, 2, -1}}) {
        const int k = cols[2] < 0 ? 2 : 3;
        std::vector<std::array<double, 3>> xs;
        for (const auto& row : x) xs.push_back({row[size_t(cols[0])], row[size_t(cols[1])], k == 3 ? row[2] : 0.0});
        std::array<double, 3> b{};
        if (!least_squares(xs, v, wt, k, b)) continue;
        std::array<double, 3> beta{};  // fixed, per token, per expert
        for (int c = 0; c < k; ++c) beta[size_t(cols[size_t(c)])] = b[size_t(c)];
        if (beta[0] < 0 || beta[1] < 0 || !(beta[2] > 0)) continue;
        t.verify_fixed = beta[0], t.verify_per_token = beta[1], t.verify_per_expert = beta[2];
        return;
    }  // no fit with every part >= 0 and a cost per expert: the line stands
}

}  // namespace

double FittedTarget::verify_modeled(int w) const {
    double v = verify_fixed + verify_per_token * double(w);
    if (verify_per_expert > 0) {
        const size_t uw = size_t(std::max(w, 0));
        const double d  = uw < distinct_by_width.size() && distinct_by_width[uw] > 0
                              ? distinct_by_width[uw]
                              : expected_distinct_experts(expert_usage, w, expert_sharing);
        v += verify_per_expert * d;
    }
    return v;
}

EngineCalibration calibrate_engine_runs(const std::vector<MeasuredEngineRun>& runs) {
    if (runs.empty()) throw InvalidInput("calibration needs at least one measured run");
    for (const auto& r : runs) validate(r);

    // Acceptance: per run (it belongs to the run's drafters and prompts), and the modeled work it implies.
    std::vector<RunFit> fits;
    for (const auto& r : runs) {
        RunFit f;
        if (is_tree_run(r)) {
            fits.push_back(tree_fit(r));
            continue;
        }
        f.target_alpha   = fit_target_alpha(r);
        f.reviewer_alpha = fit_reviewer_alpha(r, f.target_alpha);
        f.work           = model_work(r, f.target_alpha, f.reviewer_alpha);
        fits.push_back(std::move(f));
    }

    // Timing in plain steps of each run, pooled over the runs of one target: verification line, per-step overhead.
    EngineCalibration cal;
    std::map<std::string, size_t> target_index;
    for (const auto& r : runs)
        if (target_index.emplace(r.target, cal.targets.size()).second) {
            FittedTarget t;
            t.target = r.target;
            cal.targets.push_back(std::move(t));
        }
    auto plain_step = [](const MeasuredEngineRun& r) { return 1.0 / r.baseline_tokens_per_s; };
    auto tokens_of  = [](const MeasuredEngineRun& r) {
        double n = 0;
        for (int g : r.generated) n += g;
        return n;
    };
    for (FittedTarget& t : cal.targets) {
        double tokens = 0, t_base = 0, other = 0, steps = 0;
        std::vector<std::pair<double, double>> pts;  // (mean width, verification pass in plain steps)
        for (const auto& r : runs) {
            if (r.target != t.target) continue;
            const double tp = plain_step(r);
            tokens += tokens_of(r);
            t_base += tokens_of(r) * tp;
            other += std::max(0.0, r.t_decode_s - r.t_draft_s - r.t_verify_s) / tp;
            steps += double(r.n_steps);
            pts.push_back({1.0 + double(r.n_drafted) / double(r.n_steps), r.t_verify_s / double(r.n_steps) / tp});
            ++t.runs;
        }
        t.t_plain_s         = t_base / tokens;
        t.overhead_per_step = other / steps;
        double mx = 0, my = 0;
        for (auto [x, y] : pts) mx += x / double(pts.size()), my += y / double(pts.size());
        double sxx = 0, sxy = 0;
        for (auto [x, y] : pts) sxx += (x - mx) * (x - mx), sxy += (x - mx) * (y - my);
        // One width, or a fit that falls with the width (noise): a constant verification time.
        t.verify_per_token = sxx > 1e-9 ? std::max(0.0, sxy / sxx) : 0.0;
        t.verify_fixed     = my - t.verify_per_token * mx;
        // Per width, where measured: the pooled mean pass in plain steps of each run.
        std::vector<double> secs, passes;
        for (const auto& r : runs) {
            if (r.target != t.target) continue;
            for (size_t w = 0; w < r.verify_width_passes.size() && w < r.verify_width_s.size(); ++w) {
                if (secs.size() <= w) secs.resize(w + 1, 0.0), passes.resize(w + 1, 0.0);
                secs[w] += r.verify_width_s[w] / plain_step(r);
                passes[w] += double(r.verify_width_passes[w]);
            }
        }
        t.verify_by_width.assign(secs.size(), 0.0);
        for (size_t w = 0; w < secs.size(); ++w) t.verify_by_width[w] = passes[w] > 0 ? secs[w] / passes[w] : 0.0;
        fit_moe_term(t, runs, passes);
    }

    // Each level's time per modeled unit in plain steps, pooled by (target, name).
    std::map<std::array<std::string, 3>, size_t> level_index;
    std::vector<double> level_time, level_units, level_measured;
    for (size_t i = 0; i < runs.size(); ++i)
        for (size_t j = 1; j < runs[i].levels.size(); ++j) {
            const MeasuredLevel& l = runs[i].levels[j];
            auto key               = level_key(runs[i], j);
            auto [it, fresh]       = level_index.emplace(key, cal.levels.size());
            if (fresh) {
                cal.levels.push_back({.target = key[0], .name = key[1], .role = key[2], .per_call = l.per_call});
                level_time.push_back(0), level_units.push_back(0), level_measured.push_back(0);
            }
            level_time[it->second] += l.t_s / plain_step(runs[i]);
            level_units[it->second] += fits[i].work[j].units;
            level_measured[it->second] += measured_units(l);
            ++cal.levels[it->second].runs;
        }
    for (size_t k = 0; k < cal.levels.size(); ++k) {
        FittedLevel& l = cal.levels[k];
        l.c            = level_units[k] > 0 ? level_time[k] / level_units[k] : 0.0;
        l.c_per_pass   = level_measured[k] > 0 ? level_time[k] / level_measured[k] : 0.0;
        l.t_unit_s     = l.c * cal.targets[target_index[l.target]].t_plain_s;
    }

    // Predictions: every run from the fitted parameters, in plain steps: speedup = tokens / modeled time.
    double abs_sum = 0;
    for (size_t i = 0; i < runs.size(); ++i) {
        const MeasuredEngineRun& r = runs[i];
        const RunFit& f            = fits[i];
        const FittedTarget& t      = cal.targets[target_index[r.target]];
        const LevelWork& w0        = f.work[0];
        RunPrediction p;
        p.source       = r.source;
        p.alpha_target = f.target_alpha;
        double time = w0.units * (t.verify_fixed + t.overhead_per_step) + t.verify_per_token * (w0.units + w0.reviewed);
        // With passes by width: the run's mix of widths (what its drafter proposed) at the pooled cost per width.
        double n_pass = 0, v_sum = 0;
        for (size_t w = 0; w < r.verify_width_passes.size(); ++w) {
            if (r.verify_width_passes[w] <= 0) continue;
            const double v = w < t.verify_by_width.size() && t.verify_by_width[w] > 0 ? t.verify_by_width[w]
                                                                                      : t.verify_modeled(int(w));
            n_pass += double(r.verify_width_passes[w]);
            v_sum += double(r.verify_width_passes[w]) * v;
        }
        if (n_pass > 0) time = w0.units * (v_sum / n_pass + t.overhead_per_step);
        for (size_t j = 0; j < r.levels.size(); ++j) {
            const MeasuredLevel& l = r.levels[j];
            LevelCheck c;
            c.name              = l.name;
            c.alpha             = j > 0 && is_reviewer(r, j) ? f.reviewer_alpha[j] : -1;
            c.units_modeled     = f.work[j].units;
            c.units_measured    = j == 0 ? double(r.n_steps) : measured_units(l);
            c.accepted_modeled  = f.work[j].accepted;
            c.accepted_measured = double(l.n_review_accepted);
            p.levels.push_back(c);
            if (j > 0) time += f.work[j].units * cal.levels[level_index[level_key(r, j)]].c;
        }
        const double tokens        = tokens_of(r);
        p.tokens_per_step_modeled  = tokens / w0.units;
        p.tokens_per_step_measured = tokens / double(r.n_steps);
        p.time_modeled_s           = time * plain_step(r);
        p.time_measured_s          = r.t_decode_s;
        p.speedup_predicted        = tokens / time;
        p.speedup_measured         = r.speedup;
        p.residual                 = (p.speedup_predicted - p.speedup_measured) / p.speedup_measured;
        abs_sum += std::abs(p.residual);
        cal.runs.push_back(std::move(p));
    }
    cal.mean_abs_residual = abs_sum / double(runs.size());
    std::vector<double> abs_res;
    for (const auto& p : cal.runs) abs_res.push_back(std::abs(p.residual));
    std::sort(abs_res.begin(), abs_res.end());
    const size_t h          = abs_res.size() / 2;
    cal.median_abs_residual = abs_res.size() % 2 ? abs_res[h] : 0.5 * (abs_res[h - 1] + abs_res[h]);
    return cal;
}

// ---- JSON ----

void to_json(nlohmann::json& j, const EngineCalibration& c) {
    using nlohmann::json;
    json targets = json::array(), levels = json::array(), runs = json::array();
    for (const auto& t : c.targets)
        targets.push_back({{"target", t.target},
                           {"t_plain_s", t.t_plain_s},
                           {"verify_fixed", t.verify_fixed},
                           {"verify_per_token", t.verify_per_token},
                           {"overhead_per_step", t.overhead_per_step},
                           {"verify_by_width", t.verify_by_width},
                           {"verify_per_expert", t.verify_per_expert},
                           {"expert_sharing", t.expert_sharing},
                           {"distinct_experts_by_width", t.distinct_by_width},
                           {"runs", t.runs}});
    for (const auto& l : c.levels)
        levels.push_back({{"target", l.target},
                          {"name", l.name},
                          {"role", l.role},
                          {"per_call", l.per_call},
                          {"c", l.c},
                          {"c_per_pass", l.c_per_pass},
                          {"t_unit_s", l.t_unit_s},
                          {"runs", l.runs}});
    for (const auto& r : c.runs) {
        json lv = json::array();
        for (const auto& l : r.levels)
            lv.push_back({{"name", l.name},
                          {"alpha", l.alpha < 0 ? json(nullptr) : json(l.alpha)},
                          {"units_modeled", l.units_modeled},
                          {"units_measured", l.units_measured},
                          {"accepted_modeled", l.accepted_modeled},
                          {"accepted_measured", l.accepted_measured}});
        runs.push_back({{"source", r.source},
                        {"alpha_target", r.alpha_target},
                        {"levels", lv},
                        {"tokens_per_step_modeled", r.tokens_per_step_modeled},
                        {"tokens_per_step_measured", r.tokens_per_step_measured},
                        {"time_modeled_s", r.time_modeled_s},
                        {"time_measured_s", r.time_measured_s},
                        {"speedup_predicted", r.speedup_predicted},
                        {"speedup_measured", r.speedup_measured},
                        {"residual", r.residual}});
    }
    j = {{"label",
          "parameters fitted from measured runs (times in plain decoding steps of each run); *_modeled and "
          "speedup_predicted are modeled, *_measured are measured"},
         {"targets", targets},
         {"levels", levels},
         {"runs", runs},
         {"mean_abs_residual", c.mean_abs_residual},
         {"median_abs_residual", c.median_abs_residual}};
}

}  // namespace speculum::analytic
