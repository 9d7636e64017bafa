// Ghidorah (paper 003) verification-width choice: w* = argmax τ(w) / T_step(w) over widths 1–64, with τ from its
// Table I (acceptance length per width, Vicuna-7B + Medusa, trees calibrated on MT-bench) or from any tree model.
// Whether the width counts the root token is a parameter (Table I's width 1 → τ = 1 suggests it does).
//
// T_step comes from a model of the paper's hetero-core split (HCMP): on a unified-memory SoC the GPU and the CPU
// each take a share of every linear layer's columns and run concurrently; both read the same activations and their
// share of the weights from one DRAM, so they contend for its bandwidth. The paper gives no formula (its
// partitioning is profiled); this model is Speculum's, every figure in it is an input, and it is "modeled".
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace speculum::analytic {

struct WidthTable {
    std::vector<int> widths;  // verification widths
    std::vector<double> tau;  // acceptance length (tokens per step) at each width
};

// Ghidorah Table I, reconstructed (paper note §5.1): dataset is "MT-bench", "GSM8K", "MBPP" or "Human-eval".
WidthTable ghidorah_table1(const std::string& dataset);
std::vector<std::string> ghidorah_datasets();

struct WidthChoice {
    std::vector<int> widths;
    std::vector<double> tau;
    std::vector<double> step_time;  // seconds per verification step at each width
    std::vector<double> speedup;    // τ(w) · t_seq / T_step(w)
    int best_width      = 1;
    double best_speedup = 1;
};

// step_time(n_tokens) gives the time of one verification forward over n tokens; n = w if the width counts the
// root, else w + 1. t_seq is the time of one sequential (one-token) step. Ties go to the smaller width.
WidthChoice choose_width(const WidthTable& table, const std::function<double(int)>& step_time, double t_seq,
                         bool root_counted = true);

// One processing unit of a unified-memory SoC.
struct ProcessingUnit {
    std::string name;
    double flops                                 = 0;  // FLOP/s it sustains on the verification matmuls
    double bw                                    = 0;  // bytes/s it can draw from DRAM running alone
    bool operator==(const ProcessingUnit&) const = default;
};

struct HeteroSoc {
    ProcessingUnit gpu, cpu;
    double dram_bw     = 0;     // bytes/s the shared DRAM delivers to both together (the contention cap)
    double sync_s      = 1e-4;  // per synchronisation point (paper: < 0.1 ms page sync on Jetson Xavier NX)
    int syncs_per_pass = 0;     // sync points per forward pass (column-only splitting: one per linear layer)
    bool operator==(const HeteroSoc&) const = default;
};

struct HeteroWorkload {
    double weight_bytes                          = 0;  // bytes of weights one forward pass reads
    double flops_per_token                       = 0;  // FLOPs of one token's forward pass (≈ 2 × parameters)
    bool operator==(const HeteroWorkload&) const = default;
};

struct SplitTime {
    double step_s    = 0;  // max(gpu_s, cpu_s) + syncs
    double gpu_share = 0;  // column share r given to the GPU
    double gpu_s = 0, cpu_s = 0;
};

// One verification pass over n tokens with the GPU taking column share r (0..1) of every matmul: PU u reads its
// share of the weights and does its share of the FLOPs, t_u = max(bytes_u / bw_u', flops_u / flops_u). Contention:
// while both PUs stream, their bandwidths are scaled by min(1, dram_bw / (bw_gpu + bw_cpu)). A PU with no share
// takes no time and causes no contention; syncs are paid only when both run.
SplitTime hetero_step_time(const HeteroSoc& soc, const HeteroWorkload& w, int n_tokens, double gpu_share);
// The share minimising the pass time at n tokens (ARCA's profiling, done on the model): a grid over r in steps of
// 1/200, refined around the best point.
SplitTime best_split(const HeteroSoc& soc, const HeteroWorkload& w, int n_tokens);
// Throws InvalidInput naming the field.
void validate(const HeteroSoc& soc, const HeteroWorkload& w);

// The width choice on the hetero-core model: T_step(w) = best_split at w tokens, against sequential decoding on
// the GPU alone (the paper's baseline; its Medusa bars show a flat GPU step, speedup ≈ τ).
WidthChoice choose_width_hetero(const WidthTable& table, const HeteroSoc& soc, const HeteroWorkload& w,
                                bool root_counted = true);

// The paper's device and model from the paper's own figures where it gives them (Jetson Xavier NX, GPU locked at
// 204 MHz, 6-core ARMv8.2 CPU at 1.9 GHz, Vicuna-7B in FP16, < 0.1 ms sync) and datasheet peaks scaled to those
// clocks; `gpu_bw_gbps` and `cpu_bw_gbps` (what each unit draws alone, which the paper does not give) and the
// fraction of peak each sustains are the assumptions (docs/analytic.md lists them).
HeteroSoc ghidorah_paper_soc(double gpu_bw_gbps, double cpu_bw_gbps, double efficiency = 0.5);
HeteroWorkload vicuna7b_fp16();

}  // namespace speculum::analytic
