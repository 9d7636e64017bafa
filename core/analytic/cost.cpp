// Roofline forward time and memory-budget model (see cost.h).
#include "core/analytic/cost.h"

#include "core/analytic/checks.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace speculum::analytic {

void validate(const ModelSpec& m, const std::string& f) {
    require_positive(m.params_b, f + ".params_b");
    if (m.params_b > 1e5)
        throw InvalidInput(f + ".params_b is in billions; " + std::to_string(m.params_b) + " is absurd");
    if (!(m.weight_bits > 0 && m.weight_bits <= 64)) throw InvalidInput(f + ".weight_bits must be in (0, 64]");
    if (!(m.kv_bits > 0 && m.kv_bits <= 64)) throw InvalidInput(f + ".kv_bits must be in (0, 64]");
    require_count(m.n_layers, 1, 4096, f + ".n_layers");
    require_count(m.d_model, 1, 1 << 20, f + ".d_model");
    require_count(m.kv_dim, 0, 1 << 20, f + ".kv_dim");
    if (m.compute != "fp16" && m.compute != "bf16" && m.compute != "fp32" && m.compute != "int8")
        throw InvalidInput(f + ".compute must be fp16, bf16, fp32 or int8, got '" + m.compute + "'");
    if (!(m.state_mb >= 0 && m.state_mb < 1e7)) throw InvalidInput(f + ".state_mb must be in [0, 1e7)");
    if (!(m.state_input_kb >= 0 && m.state_input_kb < 1e7))
        throw InvalidInput(f + ".state_input_kb must be in [0, 1e7)");
    if (m.rollback != "snapshot" && m.rollback != "rerun")
        throw InvalidInput(f + ".rollback must be snapshot or rerun, got '" + m.rollback + "'");
    if (m.n_expert != 0 || m.expert_params_b != 0 || m.n_expert_used != 0) {
        require_count(m.n_expert, 1, 1 << 16, f + ".n_expert");
        require_count(m.n_expert_used, 1, m.n_expert, f + ".n_expert_used");
        require_positive(m.expert_params_b, f + ".expert_params_b");
        const double active_experts = m.expert_params_b * m.n_expert_used / m.n_expert;
        if (active_experts > m.params_b * (1 + 1e-9))
            throw InvalidInput(f + ".expert_params_b: its " + std::to_string(m.n_expert_used) + " of " +
                               std::to_string(m.n_expert) + " experts (" + std::to_string(active_experts) +
                               " B) exceed params_b, what one token reads");
    }
}

double expected_distinct_experts(int n_expert, int n_expert_used, int n_tokens) {
    require_count(n_expert, 1, 1 << 16, "n_expert");
    require_count(n_expert_used, 1, n_expert, "n_expert_used");
    require_count(n_tokens, 0, 1 << 20, "n_tokens");
    return n_expert * (1.0 - std::pow(1.0 - double(n_expert_used) / n_expert, n_tokens));
}

double expected_distinct_experts(const std::vector<double>& usage, int n_tokens) {
    return expected_distinct_experts(usage, n_tokens, 1.0);  // n^1: independent tokens
}

double expected_distinct_experts(const std::vector<double>& usage, int n_tokens, double rho) {
    if (!(rho >= 0 && rho <= 1)) throw InvalidInput("rho must be in [0, 1]");
    require_count(n_tokens, 0, 1 << 20, "n_tokens");
    if (n_tokens == 0) return 0.0;
    const double k_eff = std::pow(double(n_tokens), rho);
    double d           = 0;
    for (size_t e = 0; e < usage.size(); ++e) {
        const double p = usage[e];
        if (!(p >= 0 && p <= 1)) throw InvalidInput("usage[" + std::to_string(e) + "] must be in [0, 1]");
        d += 1.0 - std::pow(1.0 - p, k_eff);
    }
    return d;
}

double fit_expert_sharing(const std::vector<double>& usage, const std::vector<std::pair<int, double>>& observed) {
    auto loss = [&](double rho) {
        double l = 0;
        for (const auto& [n, d] : observed)
            if (n > 1 && d > 0) {
                const double r = expected_distinct_experts(usage, n, rho) / d - 1.0;
                l += r * r;
            }
        return l;
    };
    bool any = false;
    for (const auto& [n, d] : observed) any = any || (n > 1 && d > 0);
    if (!any) return 1.0;
    // The loss is smooth in rho: a coarse grid, then ternary search around its best point.
    double best = 1.0, best_l = loss(1.0);
    for (int i = 0; i < 100; ++i)
        if (const double l = loss(i / 100.0); l < best_l) best = i / 100.0, best_l = l;
    double lo = std::max(0.0, best - 0.01), hi = std::min(1.0, best + 0.01);
    for (int it = 0; it < 40; ++it) {
        const double a = lo + (hi - lo) / 3, b = hi - (hi - lo) / 3;
        (loss(a) < loss(b) ? hi : lo) = loss(a) < loss(b) ? b : a;
    }
    return 0.5 * (lo + hi);
}

double weight_bytes(const ModelSpec& m, int n_tokens) {
    if (m.n_expert <= 0) return weight_bytes(m);
    const double per_expert = m.expert_params_b / m.n_expert;
    const double dense      = m.params_b - per_expert * m.n_expert_used;
    const double experts    = per_expert * expected_distinct_experts(m.n_expert, m.n_expert_used, n_tokens);
    return (dense + experts) * 1e9 * m.weight_bits / 8.0;
}

double kv_bytes_per_token(const ModelSpec& m) {
    return 2.0 * m.n_layers * double(m.kv_dim) * m.kv_bits / 8.0;
}

double state_bytes(const ModelSpec& m, int n_tokens) {
    if (m.state_mb <= 0) return 0.0;
    const double state = m.state_mb * 1e6;
    // The live state read and written once, and what a rollback needs: n states, or n inputs and a checkpoint copy
    // (read and written) plus its restore.
    return 2.0 * state + (m.rollback == "rerun" ? n_tokens * m.state_input_kb * 1e3 + 4.0 * state : n_tokens * state);
}

double weight_bytes(const ModelSpec& m) {
    return m.params_b * 1e9 * m.weight_bits / 8.0;
}

ForwardCost forward_cost(const hw::HardwareProfile& hw, const ModelSpec& m, int n_tokens, int context,
                         double stream_gb) {
    require_count(n_tokens, 1, 1 << 20, "n_tokens");
    require_count(context, 0, 1 << 24, "context");
    require_nonnegative(stream_gb, "stream_gb");
    ForwardCost c;
    double kv = kv_bytes_per_token(m);
    c.bytes   = weight_bytes(m, n_tokens) + kv * context + kv * n_tokens + state_bytes(m, n_tokens);
    c.flops =
        2.0 * m.params_b * 1e9 * n_tokens + 4.0 * m.n_layers * double(m.d_model) * n_tokens * (context + n_tokens);
    c.t_memory   = c.bytes / (hw.mem_bw_gbps * 1e9);
    c.t_compute  = c.flops / hw.peak_flops(m.compute);
    c.t_overhead = hw.call_overhead_us * 1e-6;
    if (stream_gb > 0) {
        c.t_stream = hw.flash_bw_gbps > 0 ? stream_gb / hw.flash_bw_gbps : std::numeric_limits<double>::infinity();
    }
    c.compute_bound = c.t_compute > c.t_memory;
    c.time          = std::max(c.t_memory, c.t_compute) + c.t_overhead + c.t_stream;
    return c;
}

MemoryPlan plan_memory(const hw::HardwareProfile& hw, double budget_gb, double weights_gb,
                       double kv_bytes_per_token_all_levels, int context) {
    require_nonnegative(weights_gb, "memory.weights_gb");
    require_nonnegative(kv_bytes_per_token_all_levels, "memory.kv_bytes_per_token");
    require_count(context, 0, 1 << 24, "context");
    MemoryPlan p;
    p.budget_gb  = budget_gb > 0 ? budget_gb : hw.mem_gb;
    p.weights_gb = weights_gb;
    p.kv_gb      = kv_bytes_per_token_all_levels * context / 1e9;
    p.fits       = p.weights_gb + p.kv_gb <= p.budget_gb;
    if (!p.fits) {
        // The KV cache stays resident; the weight overflow is re-read from flash on every forward (CATS §4.2).
        p.streamed_gb = std::min(p.weights_gb, p.weights_gb + p.kv_gb - p.budget_gb);
        p.stream_time_s =
            hw.flash_bw_gbps > 0 ? p.streamed_gb / hw.flash_bw_gbps : std::numeric_limits<double>::infinity();
    }
    double free_gb       = p.budget_gb - p.weights_gb;
    p.kv_capacity_tokens = (free_gb <= 0 || kv_bytes_per_token_all_levels <= 0)
                               ? 0
                               : int64_t(std::floor(free_gb * 1e9 / kv_bytes_per_token_all_levels));
    return p;
}

ChainTiming chain_timing(const hw::HardwareProfile& hw, const ModelSpec& target, const ModelSpec& draft, int k,
                         int context, double expected_tokens, double target_stream_gb) {
    validate(target, "target");
    validate(draft, "draft");
    require_count(k, 0, 4096, "k");
    if (!(expected_tokens >= 1.0)) throw InvalidInput("expected_tokens must be >= 1");
    ChainTiming t;
    t.t_autoregressive = forward_cost(hw, target, 1, context, target_stream_gb).time;
    t.t_verify         = forward_cost(hw, target, k + 1, context, target_stream_gb).time;
    t.t_draft          = forward_cost(hw, draft, 1, context).time;
    t.c                = t.t_draft / t.t_autoregressive;
    t.t_cycle          = t.t_verify + k * t.t_draft;
    t.tokens_per_s     = expected_tokens / t.t_cycle;
    t.speedup          = expected_tokens * t.t_autoregressive / t.t_cycle;
    return t;
}

std::vector<RooflinePoint> chain_roofline(const hw::HardwareProfile& hw, const ModelSpec& target,
                                          const ModelSpec& draft, int k, int context) {
    std::vector<RooflinePoint> points;
    auto point = [&](const std::string& label, const ModelSpec& m, int n) {
        const ForwardCost fc = forward_cost(hw, m, n, context);
        if (fc.bytes > 0 && fc.time > 0) points.push_back({label, fc.flops / fc.bytes, fc.flops / fc.time});
    };
    point("target, 1 token (autoregressive)", target, 1);
    point("target verify, " + std::to_string(k + 1) + " tokens", target, k + 1);
    point("draft, 1 token", draft, 1);
    return points;
}

}  // namespace speculum::analytic
