// EAGLE-3 draft heads (Li et al., "EAGLE-3", 2025) in llama.cpp's GGUF layout (`general.architecture` = "eagle3",
// what its convert_hf_to_gguf.py writes for LlamaForCausalLMEagle3 checkpoints and `--spec-type draft-eagle3`
// loads; docs/models.md "EAGLE-3 heads"):
//
//   eagle3.extract_layers       int32[3]  target layers L: the residual stream entering layer L at each position
//                                         (llama.cpp extracts the layer's input, inpL); typically 2, n/2, n - 3
//   eagle3.target_hidden_size   uint32    the target's n_embd (optional: the head's own)
//   eagle3.norm_before_residual bool      the residual carries hidden_norm(g) instead of g (optional, false)
//   eagle3.{embedding_length, block_count = 1, feed_forward_length, attention.head_count[_kv],
//           attention.layer_norm_rms_epsilon, rope.freq_base, rope.dimension_count, context_length}
//   fc.weight          (n_embd, 3 target_hidden)   g = fc [h_low; h_mid; h_high]
//   blk.0.attn_norm    (n_embd)                    applied to the token's embedding
//   blk.0.hidden_norm  (n_embd)                    applied to g
//   blk.0.attn_q/k/v   (.., 2 n_embd)              read [attn_norm(embed(x)); hidden_norm(g)]
//   blk.0.attn_output, ffn_norm, ffn_gate/up/down  as a llama block; the residual is g
//   output_norm, output.weight (n_draft_vocab, n_embd)   optional output: token_embd, else the target's head
//   d2t.weight (or d2t) int64/int32 [n_draft_vocab] optional: draft id j is target id j + d2t[j]
//   token_embd.weight  optional: the target's is used when absent (as llama.cpp does)
//
// The layer's output before output_norm is the state the next drafted token reads (llama.cpp's graph_decode).
#pragma once

#include "core/model/gguf.h"
#include "core/model/model.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace speculum::drafts {

struct Eagle3Head {
    std::vector<int32_t> extract_layers;  // target layers whose input stream fc reads, in fc's column order
    bool norm_before_residual = false;
    model::WeightView fc;            // (n_embd, extract_layers.size() * target n_embd)
    std::vector<float> hidden_norm;  // (n_embd)
    std::vector<int32_t> d2t;        // draft id -> target id; empty = the draft vocabulary is the target's
    model::WeightView embed;         // (target n_vocab, n_embd): the head's token_embd or the target's
    model::Model block;  // the decoder layer as a one-layer model (Hparams::n_embd_attn_in = 2 n_embd) with the
                         // head's output_norm and head; its vocabulary is the draft vocabulary
    std::string name;

    int32_t n_draft_vocab() const { return block.hparams().n_vocab; }
    // Bytes of the head's own weights (fc, the layer, the head; the shared embedding not counted).
    uint64_t weight_bytes() const;
};

// The head file of a draft spec's model_path: the path itself, or the bundled target's head when it is empty
// (throws std::runtime_error naming the places looked at when there are no bundled resources).
std::string eagle3_head_path(const std::string& model_path);

// Reads a head for `target`. Throws model::GgufError naming the file and the key or tensor on a malformed file,
// std::invalid_argument naming the field when the head does not fit the target (its hidden size, its extract
// layers beyond the target's, a d2t outside the target's vocabulary, an inherited embedding of another width).
Eagle3Head load_eagle3_head(const std::string& path, const model::Model& target);
Eagle3Head eagle3_head_from_gguf(model::GgufFile file, const model::Model& target);

// A random-weight head for `target` in the layout above (tests, the synthetic targets): F32 matrices from `seed`,
// the default extract layers (2, n/2, n - 3, clamped to the target's layers), full vocabulary unless
// n_draft_vocab > 0 (then a d2t maps draft ids onto every other target id from 0). Returns the GGUF bytes.
struct Eagle3Synthetic {
    int32_t n_ff          = 64;
    int32_t n_draft_vocab = 0;
    bool own_embedding    = false;  // write token_embd (a copy of the target's) instead of inheriting it
    uint64_t seed         = 7;
    float scale           = 0.05f;  // standard deviation of the matrices
    // A head that predicts the token its state came from: fc passes the first stream through, the layer adds
    // nothing (attn_output and ffn_down zero), norms are 1 and the head is the target's embedding table. On a
    // target whose layers add nothing either (its streams are the token's embedding), it drafts the token before
    // the one it is given, and every further token the same: accepted wherever the target repeats a token.
    bool echo = false;
};
std::vector<uint8_t> eagle3_synthetic_gguf(const model::Model& target, const Eagle3Synthetic& spec);

// EAGLE-3's default extract layers for a target of n_layer layers: 2, n/2, n - 3 (clamped into [0, n - 1]).
std::vector<int32_t> eagle3_default_layers(int32_t n_layer);

}  // namespace speculum::drafts
