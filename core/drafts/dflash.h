// Block drafts (DFlash, Chen et al. 2026; DSpark, its Markov and confidence heads) in llama.cpp's GGUF layout
// (`general.architecture` = "dflash", what its converter writes and `--spec-type draft-dflash` / `draft-dspark` load;
// docs/models.md "Block drafts"). The draft reads no tokens of the context: each committed position p enters its
// KV cache as K = rope(k_norm(wk g_p), p) and V = wv g_p of the fused target state
//
//   g_p = enc_norm(fc [h_{l1}(p); h_{l2}(p); ...])       h_l(p): the target's residual stream entering layer l
//
// and one pass over the block [last committed token, mask, mask, ...] at the next positions, attending the whole
// cache and the block both ways (no causal mask), gives the logits of every drafted position at once.
//
//   dflash.target_layers     int32[]  the target layers l (llama.cpp extracts each layer's input, as EAGLE-3 does)
//   dflash.block_size        uint32   the trained block (default 16): DFlash drafts at most block_size - 1 tokens
//                                     (row 0 holds the last committed token), DSpark block_size (row 0 drafts)
//   tokenizer.ggml.mask_token_id      the mask token (llama.cpp reads it from the draft's vocabulary);
//                                     `dflash.mask_token_id` is read where the file has no tokenizer keys
//   dflash.{embedding_length, block_count, feed_forward_length, attention.head_count[_kv], attention.key_length,
//           attention.layer_norm_rms_epsilon, rope.freq_base, rope.dimension_count, context_length}
//   fc.weight               (n_embd, |target_layers| target n_embd)
//   enc.output_norm.weight  (n_embd)        the hidden norm after fc
//   blk.N.*                 Qwen 3 blocks: attn_norm, attn_q/k/v, attn_q_norm, attn_k_norm, attn_output, ffn_norm,
//                           ffn_gate/up/down; NeoX RoPE
//   output_norm.weight      (n_embd)
//   DSpark (optional):  markov_w1.weight, markov_w2.weight (n_vocab, R) each; conf_proj.weight (1, n_embd + R),
//                       conf_proj.bias (1). Row i's logits gain w2 w1[prev_i] (prev_0 the last committed token,
//                       prev_i the argmax of row i - 1's biased logits), and its confidence, the predicted chance
//                       that the token is accepted, is sigmoid(conf_proj [output_norm(row i); w1[prev_i]] + bias).
//
// The token embedding and the LM head are the target's in llama.cpp's layout. Speculum also reads a head of the
// draft's own (`output.weight`), with an optional reduced vocabulary (`d2t`, as EAGLE-3 heads carry it) and its own
// `token_embd.weight`; llama.cpp refuses such files (the exports say so).
#pragma once

#include "core/model/gguf.h"
#include "core/model/model.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace speculum::drafts {

struct DflashModel {
    std::vector<int32_t> target_layers;  // fc's column blocks, in order
    int32_t block_size = 16;
    int32_t mask_token = 0;       // a target token id
    model::WeightView fc;         // (n_embd, target_layers.size() * target n_embd)
    std::vector<float> enc_norm;  // (n_embd)
    model::WeightView embed;      // (target n_vocab, n_embd): the draft's token_embd or the target's
    std::vector<int32_t> d2t;     // draft id -> target id; empty = the draft vocabulary is the target's
    bool own_head = false;        // output.weight is the draft's (else the target's head)
    // DSpark's heads; markov_w1.empty() = a plain DFlash draft.
    model::WeightView markov_w1, markov_w2;  // (n_vocab, rank) each
    std::vector<float> conf_proj;            // (n_embd + rank)
    float conf_bias = 0.0f;
    // The decoder layers as a model (Qwen 3 blocks, NeoX RoPE) with its output_norm and head; its vocabulary is the
    // draft vocabulary. Every pass enters through ForwardOptions::hidden_in.
    model::Model decoder;
    std::string name;

    bool dspark_heads() const { return !markov_w1.empty(); }
    int32_t markov_rank() const { return int32_t(markov_w1.cols); }
    int32_t n_draft_vocab() const { return decoder.hparams().n_vocab; }
    // Bytes of the draft's own weights (fc, norms, layers, its head if it has one, DSpark's heads).
    uint64_t weight_bytes() const;
};

// The file of a draft spec's model_path: the path itself, or the bundled target's block draft when it is empty
// (`dspark` picks which; a std::runtime_error naming the places looked at when there are no bundled resources).
std::string dflash_path(const std::string& model_path, bool dspark);

// Reads a block draft for `target`. Throws model::GgufError naming the file and the key or tensor on a malformed
// file, std::invalid_argument naming the field when it does not fit the target (its target layers beyond the
// target's, a width the target's embedding or head cannot serve, a mask token outside the vocabulary, DSpark heads
// over a reduced vocabulary).
DflashModel load_dflash(const std::string& path, const model::Model& target);
DflashModel dflash_from_gguf(model::GgufFile file, const model::Model& target);

// A random-weight block draft for `target` in llama.cpp's layout (tests, the synthetic targets, the parity oracle).
struct DflashSynthetic {
    int32_t n_layer     = 1;
    int32_t n_ff        = 64;
    int32_t block_size  = 8;
    int32_t mask_token  = -1;  // -1: the target's last token id
    int32_t markov_rank = 0;   // > 0: DSpark heads of this rank
    uint64_t seed       = 11;
    float scale         = 0.05f;
    // Keys copied from the target's file (its tokenizer.* keys), so that llama.cpp can load the draft; empty = none
    // (then dflash.mask_token_id is written). A target without a vocabulary ("no_vocab", the parity oracle's random
    // targets) also gives the draft dflash.vocab_size, which llama.cpp then reads.
    std::string vocab_from = {};
    // A draft that drafts the token its context holds most: its own token_embd (the target's, with the mask
    // token's row zero), fc passes the first target stream through, V and the attention output are identities, the
    // FFN adds nothing and norms are 1, so a mask row's output is the mean of the context's normed streams and the
    // target's head reads it. On a target whose layers add nothing (it repeats its last token), the drafts are that
    // token once it dominates the context: greedy speculation then accepts them. Needs n_head_kv = n_head and
    // head_dim n_head = n_embd.
    bool echo = false;
};
std::vector<uint8_t> dflash_synthetic_gguf(const model::Model& target, const DflashSynthetic& spec);
// The weights' fields (n_layer, n_ff, block_size, mask_token, markov_rank, seed, scale): the parity goldens record
// them; from_json is strict (an unknown key or a value out of range is an error naming it).
void to_json(nlohmann::json& j, const DflashSynthetic& s);
void from_json(const nlohmann::json& j, DflashSynthetic& s);

}  // namespace speculum::drafts
