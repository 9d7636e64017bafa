// Exact bit accounting of a draft spec against its target: bits per element of the draft's weights and KV, bytes
// read per draft forward, and the verification (target) side, each both as our kernels read it ("real": dense
// storage in the runtime's formats) and as a compact format would ("modeled": bitmap-sparse pruning, 1 + 8 + m
// bit packed mantissas, compressed KV). Computed from the spec and the target's shapes alone (pruning counts are
// exact: floor(p * n) per row or per tensor), so no draft needs to be built. Inputs of Cassandra's J and BPT.
#pragma once

#include "core/drafts/draft_spec.h"
#include "core/model/model.h"

#include <cstdint>
#include <optional>
#include <string>

namespace speculum::drafts {

// Bits per element of one stored matrix.
struct MatrixBits {
    double real    = 0;       // what the kernels read: the storage type (Q8_0 8.5, BF16 16, ...), or the compact format
    double modeled = 0;       // compact form (analytic::compact_element_bits): (1 - pruned) * (value bits - trunc)
                              // + 1 bitmap bit if pruned + scales; = real when a compact format stores the matrix
    bool is_modeled = false;  // pruned or truncated but stored dense: `modeled` differs from what the kernels read
    bool compact    = false;  // stored in a compact format (kernels/compact.h): `real` is its size
};
// type: storage type; pruned: fraction of zeroed elements; trunc_bits: BF16 mantissa bits dropped (BF16 only).
// compact: the draft stores pruned / truncated matrices compactly (DraftSpec::compact) and a format exists for
// this type; `real` is then kernels::compact_bits_per_element over rows of `cols` elements (the expectation for
// pruning spread uniformly over the 64-element groups; a built draft counts its buffers exactly).
MatrixBits matrix_bits(kernels::GgmlType type, double pruned, int32_t trunc_bits, int64_t cols = 0,
                       bool compact = false);

struct DraftBits {
    // Draft side. "per element" averages over the weight matrices one draft forward reads (layer matrices of the
    // blocks that run, and the LM head); bytes add norms, biases and one token_embd row.
    double weight_bits_per_element         = 0;  // modeled when weights_modeled, else = real
    double weight_bits_per_element_real    = 0;
    uint64_t weight_bytes_per_forward      = 0;  // modeled when weights_modeled
    uint64_t weight_bytes_per_forward_real = 0;
    double kv_bits_per_element             = 0;   // per cached K or V value; modeled when kv_modeled
    double kv_bits_per_element_real        = 32;  // the runtime's f32 cache
    uint64_t kv_bytes_per_token            = 0;   // K + V of one cached token over the layers whose attention runs
    uint64_t kv_bytes_per_token_real       = 0;
    bool weights_modeled                   = false;
    // Some matrices are stored in compact formats: the draft-side figures are what their kernels read, expected
    // for pruning spread uniformly over each row (a built draft counts its buffers: SelfDraft::cost).
    bool weights_compact                = false;
    bool kv_modeled                     = false;
    int64_t weight_elements_per_forward = 0;  // elements of the matrices above
    int64_t kv_elements_per_token       = 0;  // K + V values per cached token read by the draft

    // Verification side: the target as it runs.
    double verify_weight_bits_per_element    = 0;
    uint64_t verify_weight_bytes_per_forward = 0;
    uint64_t verify_kv_bytes_per_token       = 0;
    // Cassandra's split for strict-subset drafts (pruned in place / BF16 truncated toward zero from a BF16 target):
    // bits per element the target reads beyond the speculation data, p * B + (1 - p) * t; -1 when the draft is not
    // a subset of the target's bits (a re-encoded copy, a separate model).
    double verification_data_bits_per_element = -1;

    // Cassandra's J denominator per element: sum (1 - w_p)(B - w_t) / elements with B the stored bits of what the
    // draft reads of each matrix (the target's 16 BF16/F16, 8.5 Q8_0, 4.5 Q4_0, ...; 16 where it truncates, as it
    // re-encodes the weights in BF16), and (1 - kv_p)(B_kv - kv_t) with B_kv = 32 for the f32
    // cache (16 - kv_t for a truncated view, read in BF16 form).
    double j_weight_bits = 0;
    double j_kv_bits     = 0;
    std::string note;  // e.g. "max-gram reads no weights"
};

// Bits for a spec (validated against the target). kind model: pass the draft model; kind maxgram: all zero.
DraftBits draft_bits(const DraftSpec& spec, const model::Model& target, const model::Model* draft_model = nullptr);

// Cassandra's objective J = alpha / (S_w * j_weight_bits + S_kv * j_kv_bits) with S_w the weight elements per
// forward and S_kv the KV elements read at a context of n_ctx tokens.
double cassandra_objective(double alpha, const DraftBits& b, int64_t n_ctx);
// Cassandra's J for a measured run of one self-draft level: acceptance = accepted / drafted tokens (the paper's
// Table IV acceptance rate) and the run's mean context length. nullopt for other drafts or a run with no drafts.
std::optional<double> measured_cassandra_j(const DraftSpec& spec, const model::Model& target, int64_t n_drafted,
                                           int64_t n_accepted, double mean_ctx);
// Bits the draft reads per drafted token at context n_ctx (weights + KV), modeled figures where modeled.
double bits_per_draft_token(const DraftBits& b, int64_t n_ctx);

}  // namespace speculum::drafts
