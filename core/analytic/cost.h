// Roofline cost model: time of one forward over n tokens on a hardware profile as max(bytes / bandwidth,
// FLOPs / peak) + a per-call overhead, where bytes are the weights at the level's bits per element plus the KV
// cache read; and a memory-budget model (fits in DRAM, or streams the overflow from flash each forward as in
// CATS; KV capacity in tokens under a budget as in Cassandra). Everything here is "modeled".
#pragma once

#include "core/hw/profile.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace speculum::analytic {

// One model level (target or draft) as the roofline sees it.
struct ModelSpec {
    double params_b     = 7.0;     // parameters read per forward, billions
    double weight_bits  = 16;      // bits per weight element (fp16 16, q8_0 8.5, q4_0 4.5, MXFP4 4.25)
    int n_layers        = 32;      // decoder layers (for the KV cache and attention FLOPs)
    int d_model         = 4096;    // hidden size (attention FLOPs)
    int kv_dim          = 4096;    // n_kv_heads × head_dim per layer (K and V each)
    double kv_bits      = 16;      // bits per KV element
    std::string compute = "fp16";  // which peak applies: fp16, bf16, fp32, int8
    // Mixture of experts (0 = dense): params_b stays what one token reads (the dense part and its n_expert_used
    // experts); expert_params_b is every expert of every layer. A pass of n tokens reads the union of the experts
    // they route to: expected_distinct_experts(n) of each layer's n_expert (analytic/moe.h).
    double expert_params_b = 0;
    int n_expert           = 0;
    int n_expert_used      = 0;
    // A hybrid's recurrent state (Gated DeltaNet layers; 0 = none, model/recurrent_state.h): its size, the bytes one
    // token's rollback inputs take, and how a rejected draft is rolled back. A pass of n tokens reads and writes the
    // state once, and keeps for rollback n states ("snapshot") or n tokens' inputs and one checkpoint ("rerun").
    double state_mb                         = 0;
    double state_input_kb                   = 0;
    std::string rollback                    = "snapshot";
    bool operator==(const ModelSpec&) const = default;
};
void validate(const ModelSpec& m, const std::string& field);

// Expected distinct experts a pass of n tokens reads in one layer, when each token picks n_expert_used of n_expert
// uniformly at random and independently of the others: E (1 - (1 - u/E)^n). With `usage` (each expert's share of
// the routed slots, summing to n_expert_used: a run's recorded histogram), sum over experts of 1 - (1 - p_e)^n.
double expected_distinct_experts(int n_expert, int n_expert_used, int n_tokens);
// Bytes a pass of n tokens moves for a hybrid's recurrent state and its rollback (0 without one; modeled).
double state_bytes(const ModelSpec& m, int n_tokens);
double expected_distinct_experts(const std::vector<double>& usage, int n_tokens);
// Tokens of one pass route alike (they share a context): counted as n^rho independent tokens, rho in [0, 1]
// (1 = independent, 0 = every token routes as the first). The distinct experts of such a pass, from a usage
// histogram.
double expected_distinct_experts(const std::vector<double>& usage, int n_tokens, double rho);
// rho fitted to what passes read: observed[i] = {tokens in the pass, mean distinct experts per layer}, least squares
// in relative error over a grid refined by bisection; 1 when nothing is observed past one token.
double fit_expert_sharing(const std::vector<double>& usage, const std::vector<std::pair<int, double>>& observed);
// Weight bytes of one forward over n tokens: the dense part, plus the expected distinct experts (uniform routing).
double weight_bytes(const ModelSpec& m, int n_tokens);

// Bytes of KV cache per token of context: 2 (K, V) × layers × kv_dim × kv_bits / 8.
double kv_bytes_per_token(const ModelSpec& m);
double weight_bytes(const ModelSpec& m);

struct ForwardCost {
    double bytes       = 0;  // weights + KV read + KV written
    double flops       = 0;  // 2·params·n + 4·layers·d_model·n·(context + n)
    double t_memory    = 0;  // bytes / bandwidth, s
    double t_compute   = 0;  // flops / peak, s
    double t_overhead  = 0;  // per-call overhead, s
    double t_stream    = 0;  // weights streamed from flash this call, s (0 when the model fits)
    double time        = 0;  // max(t_memory, t_compute) + t_overhead + t_stream, s
    bool compute_bound = false;
};
// stream_gb: weights that do not fit in memory and are re-read from flash on every forward (see MemoryPlan).
ForwardCost forward_cost(const hw::HardwareProfile& hw, const ModelSpec& m, int n_tokens, int context,
                         double stream_gb = 0);

struct MemoryPlan {
    double budget_gb  = 0;           // memory available for weights + KV
    double weights_gb = 0;           // all resident levels (a self-speculative draft that is a subset of the
                                     // target's bits adds nothing)
    double kv_gb               = 0;  // KV cache at the planned context
    bool fits                  = true;
    double streamed_gb         = 0;  // weights re-read from flash per target forward when they do not fit
    double stream_time_s       = 0;  // streamed_gb / flash bandwidth (infinite if none is modeled)
    int64_t kv_capacity_tokens = 0;  // tokens of context that fit beside the weights
};
// budget_gb <= 0 means the profile's memory capacity.
MemoryPlan plan_memory(const hw::HardwareProfile& hw, double budget_gb, double weights_gb,
                       double kv_bytes_per_token_all_levels, int context);

struct ChainTiming {
    double t_autoregressive = 0;  // one target forward over 1 token, s
    double t_verify         = 0;  // one target forward over k+1 tokens, s
    double t_draft          = 0;  // one draft forward over 1 token, s
    double c                = 0;  // t_draft / t_autoregressive (the cost ratio EWIF uses)
    double t_cycle          = 0;  // t_verify + k · t_draft
    double tokens_per_s     = 0;  // expected_tokens / t_cycle
    double speedup          = 0;  // expected_tokens · t_autoregressive / t_cycle
};
// Speculative decoding with a chain of k drafts on hardware: verification is not assumed free (its cost grows
// once k+1 tokens cross the roofline knee); streamed weights are charged to every target forward.
ChainTiming chain_timing(const hw::HardwareProfile& hw, const ModelSpec& target, const ModelSpec& draft, int k,
                         int context, double expected_tokens, double target_stream_gb = 0);

// A point of the roofline chart: an operation's arithmetic intensity and the throughput the model attains for it.
struct RooflinePoint {
    std::string label;       // "target verify, 5 tokens"
    double intensity   = 0;  // FLOP per byte read
    double flops_per_s = 0;  // attained, modeled (FLOP / modeled time)
};
// The operating points of a chain of k drafts: the target decoding 1 token, verifying k + 1, and the draft decoding
// 1, each at `context` tokens (modeled; points whose cost is zero are left out).
std::vector<RooflinePoint> chain_roofline(const hw::HardwareProfile& hw, const ModelSpec& target,
                                          const ModelSpec& draft, int k, int context);

}  // namespace speculum::analytic
