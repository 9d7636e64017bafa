// Ghidorah's verification-width choice (see ghidorah.h).
#include "core/analytic/ghidorah.h"

#include <algorithm>

#include "core/analytic/checks.h"

#include <cmath>

namespace speculum::analytic {

WidthTable ghidorah_table1(const std::string& dataset) {
    const std::vector<int> w{1, 2, 4, 8, 16, 32, 64};
    if (dataset == "MT-bench") return {w, {1, 1.72, 2.28, 2.59, 2.93, 3.19, 3.34}};
    if (dataset == "GSM8K") return {w, {1, 1.76, 2.43, 2.69, 3.08, 3.34, 3.56}};
    if (dataset == "MBPP") return {w, {1, 1.78, 2.54, 2.89, 3.27, 3.55, 3.74}};
    if (dataset == "Human-eval") return {w, {1, 1.77, 2.49, 2.8, 3.19, 3.48, 3.71}};
    throw InvalidInput("ghidorah.dataset '" + dataset + "' is not in Table I (MT-bench, GSM8K, MBPP, Human-eval)");
}

std::vector<std::string> ghidorah_datasets() {
    return {"MT-bench", "GSM8K", "MBPP", "Human-eval"};
}

WidthChoice choose_width(const WidthTable& table, const std::function<double(int)>& step_time, double t_seq,
                         bool root_counted) {
    if (table.widths.empty() || table.widths.size() != table.tau.size())
        throw InvalidInput("ghidorah: widths and tau must be non-empty and of equal length");
    require_positive(t_seq, "ghidorah.t_seq");
    WidthChoice c;
    c.widths       = table.widths;
    c.tau          = table.tau;
    c.best_speedup = -1;
    for (size_t i = 0; i < table.widths.size(); ++i) {
        require_count(table.widths[i], 1, 4096, "ghidorah.widths[" + std::to_string(i) + "]");
        if (!(table.tau[i] >= 1.0) || !std::isfinite(table.tau[i]))
            throw InvalidInput("ghidorah.tau[" + std::to_string(i) + "] must be >= 1");
        double t = step_time(root_counted ? table.widths[i] : table.widths[i] + 1);
        require_positive(t, "ghidorah.step_time(" + std::to_string(table.widths[i]) + ")");
        c.step_time.push_back(t);
        c.speedup.push_back(table.tau[i] * t_seq / t);
        if (c.speedup.back() > c.best_speedup) c.best_speedup = c.speedup.back(), c.best_width = table.widths[i];
    }
    return c;
}

void validate(const HeteroSoc& soc, const HeteroWorkload& w) {
    require_positive(soc.gpu.flops, "ghidorah.soc.gpu.flops");
    require_positive(soc.gpu.bw, "ghidorah.soc.gpu.bw");
    require_positive(soc.cpu.flops, "ghidorah.soc.cpu.flops");
    require_positive(soc.cpu.bw, "ghidorah.soc.cpu.bw");
    require_positive(soc.dram_bw, "ghidorah.soc.dram_bw");
    require_nonnegative(soc.sync_s, "ghidorah.soc.sync_s");
    require_count(soc.syncs_per_pass, 0, 1 << 20, "ghidorah.soc.syncs_per_pass");
    require_positive(w.weight_bytes, "ghidorah.workload.weight_bytes");
    require_positive(w.flops_per_token, "ghidorah.workload.flops_per_token");
}

SplitTime hetero_step_time(const HeteroSoc& soc, const HeteroWorkload& w, int n_tokens, double r) {
    validate(soc, w);
    require_count(n_tokens, 1, 1 << 20, "ghidorah.n_tokens");
    if (!(r >= 0.0 && r <= 1.0)) throw InvalidInput("ghidorah.gpu_share must be in [0, 1]");
    const bool both    = r > 0.0 && r < 1.0;
    const double scale = both ? std::min(1.0, soc.dram_bw / (soc.gpu.bw + soc.cpu.bw)) : 1.0;
    const double flops = w.flops_per_token * n_tokens;
    auto unit          = [&](const ProcessingUnit& u, double share) {
        if (share <= 0.0) return 0.0;
        // Alone, a unit is also capped by the DRAM itself.
        const double bw = both ? u.bw * scale : std::min(u.bw, soc.dram_bw);
        return std::max(share * w.weight_bytes / bw, share * flops / u.flops);
    };
    SplitTime t;
    t.gpu_share = r;
    t.gpu_s     = unit(soc.gpu, r);
    t.cpu_s     = unit(soc.cpu, 1.0 - r);
    t.step_s    = std::max(t.gpu_s, t.cpu_s) + (both ? soc.sync_s * soc.syncs_per_pass : 0.0);
    return t;
}

SplitTime best_split(const HeteroSoc& soc, const HeteroWorkload& w, int n_tokens) {
    SplitTime best = hetero_step_time(soc, w, n_tokens, 1.0);
    for (int i = 0; i <= 200; ++i) {
        const SplitTime t = hetero_step_time(soc, w, n_tokens, i / 200.0);
        if (t.step_s < best.step_s) best = t;
    }
    // Refine: the optimum balances the two units, so bisect on gpu_s - cpu_s around the grid point.
    double lo = std::max(0.0, best.gpu_share - 1.0 / 200), hi = std::min(1.0, best.gpu_share + 1.0 / 200);
    for (int it = 0; it < 60 && lo > 0.0 && hi < 1.0; ++it) {
        const double mid  = 0.5 * (lo + hi);
        const SplitTime t = hetero_step_time(soc, w, n_tokens, mid);
        if (t.step_s < best.step_s) best = t;
        (t.gpu_s > t.cpu_s ? hi : lo) = mid;
    }
    return best;
}

WidthChoice choose_width_hetero(const WidthTable& table, const HeteroSoc& soc, const HeteroWorkload& w,
                                bool root_counted) {
    validate(soc, w);
    const double t_seq = hetero_step_time(soc, w, 1, 1.0).step_s;  // sequential decoding on the GPU alone
    return choose_width(
        table, [&](int n) { return best_split(soc, w, n).step_s; }, t_seq, root_counted);
}

HeteroSoc ghidorah_paper_soc(double gpu_bw_gbps, double cpu_bw_gbps, double efficiency) {
    if (!(efficiency > 0.0 && efficiency <= 1.0)) throw InvalidInput("ghidorah.efficiency must be in (0, 1]");
    HeteroSoc s;
    // GPU: 48 Volta Tensor Cores × 64 FP16 FMA per cycle, locked at 204 MHz (paper §IV): 1.25 TFLOP/s peak.
    s.gpu = {"Jetson Xavier NX GPU @ 204 MHz", 48.0 * 64 * 2 * 0.204e9 * efficiency, gpu_bw_gbps * 1e9};
    // CPU: 6 ARMv8.2 Carmel cores at 1.9 GHz, two 128-bit NEON FP16 FMA pipes (8 lanes × 2 FLOP each).
    s.cpu            = {"Jetson Xavier NX CPU @ 1.9 GHz", 6.0 * 1.9e9 * 2 * 8 * 2 * efficiency, cpu_bw_gbps * 1e9};
    s.dram_bw        = 59.7e9;  // 128-bit LPDDR4x (datasheet)
    s.sync_s         = 1e-4;    // "< 0.1 milliseconds" (paper §II-C): taken at its bound
    s.syncs_per_pass = 32 * 7;  // Vicuna-7B: 32 layers × 7 column-split linear layers
    return s;
}

HeteroWorkload vicuna7b_fp16() {
    HeteroWorkload w;
    w.weight_bytes    = 6.74e9 * 2;  // 6.74 B parameters in FP16
    w.flops_per_token = 2 * 6.74e9;
    return w;
}

}  // namespace speculum::analytic
