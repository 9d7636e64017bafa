// Where the speedup went (see speedup_waterfall.h).
#include "core/engine/speedup_waterfall.h"

#include "core/format.h"

#include <algorithm>

namespace speculum::engine {

double target_pass_seconds(const RunStats& s) {
    double sum = 0;
    for (double x : s.verify_width_s) sum += x;
    return sum > 0 && sum <= s.t_verify_s * (1 + 1e-9) ? sum : s.t_verify_s;
}

SpeedupWaterfall speedup_waterfall(const RunStats& s) {
    SpeedupWaterfall w;
    if (s.baseline_tokens_per_s <= 0) {
        w.unavailable = "no autoregressive baseline: the terms are in plain decoding steps";
        return w;
    }
    if (s.n_generated <= 0 || s.n_steps <= 0 || s.t_decode_s <= 0) {
        w.unavailable = "nothing was generated";
        return w;
    }
    const double t1 = 1.0 / s.baseline_tokens_per_s;  // one plain decoding step, measured
    const double n = double(s.n_generated), rounds = double(s.n_steps);
    // The target's passes alone (their timed widths); the acceptance rule and the rest of verification go to the
    // overhead. Reports without the widths count the whole verification time.
    const double passes_s     = target_pass_seconds(s);
    const double draft_steps  = s.t_draft_s / t1 / rounds;  // per round
    const double verify_steps = passes_s / t1 / rounds;     // per round (one pass each)
    const double other_steps  = std::max(0.0, s.t_decode_s - s.t_draft_s - passes_s) / t1 / rounds;
    auto step                 = [&](const char* name, double speedup, std::string detail) {
        const double prev = w.steps.empty() ? speedup : w.steps.back().speedup;
        w.steps.push_back({name, speedup, speedup - prev, false, std::move(detail)});
    };
    step("acceptance alone", n / rounds,
         fmt("%.2f", n / rounds) + " tokens per target pass (" + std::to_string(s.n_accepted) + " of " +
             std::to_string(s.n_drafted) + " drafts accepted), drafts free, a pass as cheap as one decoding step");
    step("draft cost", n * t1 / (rounds * t1 + s.t_draft_s),
         fmt("%.2f", draft_steps) + " decoding steps of drafting per round");
    w.verify_by_context = s.verify_context_curve();
    std::string by_context;  // with two contexts or more: the pass's cost at each
    if (w.verify_by_context.size() > 1)
        for (const VerifyContextCost& c : w.verify_by_context)
            by_context += (by_context.empty() ? "; by context: " : ", ") + std::to_string(c.context_from) + "-" +
                          std::to_string(c.context_to - 1) + " tokens " + fmt("%.2f", c.steps) + " steps (" +
                          fmt("%.1f", c.mean_width) + " tokens a pass)";
    step("verification cost", n * t1 / (s.t_draft_s + passes_s),
         fmt("%.2f", verify_steps) + " decoding steps per verification pass (measured, " +
             fmt("%.2f", s.n_steps > 0 ? double(s.n_drafted) / rounds + 1.0 : 0.0) + " tokens a pass on average)" +
             by_context);
    step("overhead", n * t1 / s.t_decode_s,
         fmt("%.2f", other_steps) +
             " decoding steps per round outside the drafts and the target's passes (the acceptance rule, rollback, "
             "sampling, bookkeeping)");
    w.measured = w.steps.back().speedup;

    for (const VerifyCost& c : s.verify_cost_curve()) {
        if (c.width < 2 || c.steps <= 0) continue;
        const double oracle = double(c.width) / c.steps;
        if (oracle > w.oracle_speedup) {
            w.oracle_speedup = oracle, w.oracle_width = c.width;
            w.oracle_detail = "an always-right, free drafter verified " + std::to_string(c.width) +
                              " tokens a pass, at the measured " + fmt("%.2f", c.steps) + " decoding steps for a " +
                              std::to_string(c.width) + "-token pass";
        }
    }
    return w;
}

CombinedOracle combined_oracle(const std::vector<const RunStats*>& runs) {
    CombinedOracle o;
    double draft_per_token = -1.0, verify = 0.0;
    size_t gamma = 0;
    for (size_t r = 0; r < runs.size(); ++r) {
        const RunStats& s = *runs[r];
        if (s.baseline_tokens_per_s <= 0 || s.n_steps <= 0) continue;
        const std::vector<double> a = s.alpha();
        for (size_t i = 0; i < a.size(); ++i) {
            if (i >= o.alpha.size()) o.alpha.push_back(0.0), o.best_run.push_back(int(r));
            if (a[i] > o.alpha[i]) o.alpha[i] = a[i], o.best_run[i] = int(r);
        }
        const double t1 = 1.0 / s.baseline_tokens_per_s, rounds = double(s.n_steps);
        if (!a.empty()) {
            const double d = s.t_draft_s / t1 / rounds / double(a.size());
            if (draft_per_token < 0 || d < draft_per_token) draft_per_token = d;
        }
        if (a.size() >= gamma) gamma = a.size(), verify = s.t_verify_s / t1 / rounds;
    }
    if (o.alpha.empty() || draft_per_token < 0) return CombinedOracle{};
    double reach = 1.0;
    for (double a : o.alpha) reach *= a, o.accepted_length += reach;
    o.speedup = (1.0 + o.accepted_length) / (double(gamma) * draft_per_token + std::max(verify, 1e-9));
    return o;
}

void to_json(nlohmann::json& j, const SpeedupWaterfall& w) {
    j = nlohmann::json::object();
    if (!w.unavailable.empty()) {
        j["unavailable"] = w.unavailable;
        return;
    }
    nlohmann::json steps = nlohmann::json::array();
    for (const WaterfallStep& s : w.steps)
        steps.push_back({{"name", s.name},
                         {"speedup", s.speedup},
                         {"delta", s.delta},
                         {"modeled", s.modeled},
                         {"detail", s.detail}});
    j["steps"]         = std::move(steps);
    j["measured"]      = w.measured;
    nlohmann::json ctx = nlohmann::json::array();
    for (const VerifyContextCost& c : w.verify_by_context)
        ctx.push_back({{"context_from", c.context_from},
                       {"context_to", c.context_to},
                       {"passes", c.passes},
                       {"seconds", c.seconds},
                       {"steps", c.steps},
                       {"mean_width", c.mean_width},
                       {"modeled", false}});
    j["verification_by_context"] = std::move(ctx);
    if (w.oracle_width > 0)
        j["headroom"] = {{"oracle_speedup", w.oracle_speedup},
                         {"oracle_width", w.oracle_width},
                         {"modeled", true},
                         {"detail", w.oracle_detail}};
}

void to_json(nlohmann::json& j, const CombinedOracle& o) {
    j = {{"alpha", o.alpha},
         {"best_run", o.best_run},
         {"accepted_length", o.accepted_length},
         {"speedup", o.speedup},
         {"modeled", true}};
}

}  // namespace speculum::engine
