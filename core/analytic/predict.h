// One-call evaluation of every analytic model for one configuration: what `speculum-cli predict` prints and
// what the UI calls live while a slider moves (benchmarked < 1 ms; see docs/analytic.md). Every output is
// "modeled": closed forms of the papers' processes, not measurements.
#pragma once

#include "core/analytic/bpt.h"
#include "core/analytic/calibration.h"
#include "core/analytic/cassandra.h"
#include "core/analytic/cost.h"
#include "core/analytic/csdrafting.h"
#include "core/analytic/ghidorah.h"
#include "core/analytic/kmatrix.h"
#include "core/analytic/mlspecqd.h"
#include "core/analytic/trees.h"
#include "core/hw/profile.h"

#include <nlohmann/json_fwd.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace speculum::analytic {

struct TreeInput {
    AcceptanceTable p{{0.6, 0.2, 0.1}};            // p[depth][rank]; the last row repeats for deeper levels
    std::vector<int> parents;                      // a given tree in parent-array form (empty = none)
    int budget                              = 16;  // Sequoia node budget counting the root (0 = skip the DP)
    int max_depth                           = 8;   // Sequoia depth limit (draft levels below the root)
    bool operator==(const TreeInput&) const = default;
};

struct HardwareInput {
    std::string profile_id;                               // bundled profile id, or "inline" when given as an object
    hw::HardwareProfile profile;                          // resolved profile
    ModelSpec target;                                     // target model (default LLaMA-7B fp16)
    ModelSpec draft{0.068, 16, 2, 768, 768, 16, "fp16"};  // draft model (default a 68M LLaMA)
    int context                                 = 512;    // tokens already in the KV cache
    double memory_budget_gb                     = 0;      // 0 = the profile's capacity
    bool operator==(const HardwareInput&) const = default;
};

struct CatsInput {
    CatsConfig config;                            // layer split, γ̄, bits, layer shape
    double mean_accepted                    = 0;  // β̄+1; 0 = the chain's expected tokens at k = γ̄
    bool operator==(const CatsInput&) const = default;
};

struct CassandraInput {
    CassandraConfig config;
    double alpha = -1;  // Table-IV acceptance rate for J; −1 = the top-level alpha[0]
    // B (config.bits) given explicitly; otherwise, with a hardware section, B is the target's stored bits per weight
    // (hardware.target.weight_bits: 16 for BF16, 8.5 for Q8_0), not a constant 16.
    bool bits_given                              = true;
    bool operator==(const CassandraInput&) const = default;
};

struct GhidorahInput {
    std::string dataset = "MBPP";  // Table I row, or "tree" to take τ(w) from the Sequoia DP on tree.p
    bool root_counted   = true;    // the width counts the root token
    // The hetero-core split model (ghidorah.h): with it, T_step(w) is the best GPU/CPU column split at w tokens
    // against sequential decoding on the GPU alone; without it, the hardware section's roofline or a flat step.
    std::optional<HeteroSoc> soc;
    std::optional<HeteroWorkload> workload;  // default: the hardware target's bytes and FLOPs, else Vicuna-7B FP16
    bool operator==(const GhidorahInput&) const = default;
};

struct PredictInput {
    std::vector<double> alpha{0.8};  // acceptance of draft tokens by the target: scalar or per position
    int k     = 4;                   // chain draft length
    double c  = 0.05;                // draft cost per call ÷ target cost per call
    int k_max = 32;                  // range searched for the best k
    int block = 0;  // > 0: a block drafter, one pass of cost c per `block` drafted tokens (ewif_block); 0 = a chain
    std::vector<DraftLevel> cascade;            // vertical cascade, levels[0] drafts for the target (empty = none)
    std::vector<HorizontalSegment> horizontal;  // horizontal cascade segments (empty = none)
    std::optional<KMatrixCascade> kmatrix;      // combined vertical + horizontal cascade (CS Drafting's k-matrix)
    std::optional<TreeInput> tree;
    std::vector<QdLevel> mlspecqd;  // ML-SpecQD levels (empty = one level from the chain: α = E[G]/k, S = 1/c)
    std::optional<CatsInput> cats;
    std::optional<CassandraInput> cassandra;
    std::optional<GhidorahInput> ghidorah;
    std::optional<HardwareInput> hardware;
    bool operator==(const PredictInput&) const = default;
};

// Throws InvalidInput naming the field.
void validate(const PredictInput& in);

// Parses JSON strictly (unknown keys and wrong types are errors naming the path, e.g. "cascade[1].alpha[0]").
// `resolve` maps a profile id (hardware.profile given as a string) to a profile; it may throw.
PredictInput predict_input_from_json(const nlohmann::json& j,
                                     const std::function<hw::HardwareProfile(const std::string&)>& resolve);
void to_json(nlohmann::json& j, const PredictInput& in);  // inline profile, so it parses back without a resolver

struct PredictOutput {
    std::vector<double> position_acceptance;  // P(position i accepted) = Π_{j≤i} α_j, i = 1..k
    double expected_tokens = 1;               // E[tokens per target run] for the chain
    double ewif            = 1;               // EWIF_SD (Cor. 4.2) at k, c
    int best_k             = 1;
    double best_ewif       = 1;
    std::optional<CascadeResult> cascade;
    std::optional<double> horizontal_ewif;
    std::vector<double> horizontal_gradient;  // dT/dα_l
    std::optional<KMatrixResult> kmatrix;
    std::optional<double> tree_expected_length;  // of tree.parents
    std::optional<SequoiaResult> sequoia;
    std::optional<QdResult> mlspecqd;
    std::optional<BptBreakdown> cats_bpt;
    double bpt_autoregressive_gb = 0;  // target weights per token (hardware or cats), 0 = unknown
    double bpt_chain_gb          = 0;  // (k·B_draft + B_target) / E[tokens], 0 = unknown
    std::optional<double> cassandra_j;
    std::optional<CassandraBits> cassandra_bits;
    std::optional<WidthChoice> ghidorah;
    std::string ghidorah_step_model;    // what T_step came from: "hetero-core split", "hardware roofline", "flat"
    std::optional<ChainTiming> timing;  // hardware roofline
    std::optional<MemoryPlan> memory;
    double predicted_speedup = 1;  // timing.speedup if hardware is given, else ewif
};

PredictOutput predict(const PredictInput& in);
void to_json(nlohmann::json& j, const PredictOutput& out);

}  // namespace speculum::analytic
