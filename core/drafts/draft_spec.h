// DraftSpec: how one draft is made — transforms of the target's weights (Cassandra's pruning and mantissa
// truncation, ML-SpecQD's MXFP4 cast, LayerSkip/SWIFT layer skipping, KV truncation and selection), a separate
// small model, or Max-Gram. A value type: defaults, validation with messages naming the field, JSON round-trip.
#pragma once

#include "core/drafts/draft_kind.h"
#include "core/drafts/maxgram.h"
#include "core/drafts/ngram.h"

#include <nlohmann/json.hpp>

#include "kernels/mantissa.h"

#include <cstdint>
#include <string>
#include <vector>

namespace speculum::drafts {

enum class PruneMethod { magnitude, wanda };          // |W| | Wanda's |W| * ||X|| with calibration activations
enum class WeightFormat { same, bf16, q8_0, mxfp4 };  // storage of transformed matrices (compact kernels)
using MantissaRounding = kernels::MantissaRounding;   // toward_zero (Cassandra's) | nearest_even

struct PruneSpec {
    float ratio        = 0.0f;  // fraction of the selected weights set to zero, in [0, 1)
    PruneMethod method = PruneMethod::magnitude;
    bool attention     = true;         // wq, wk, wv, wo
    bool ffn           = true;         // w_gate, w_up, w_down
    bool embeddings    = false;        // token_embd
    bool output        = false;        // the LM head
    bool per_row       = true;         // rank weights within each output row (Wanda) rather than per tensor
    std::string calibration;           // Wanda: JSONL prompt suite for ||X||; empty = calibration token ids must
                                       // be given (DrafterOptions.calibration_tokens / --calibration-ids)
    int32_t calibration_tokens = 256;  // tokens of calibration text evaluated by the target

    bool operator==(const PruneSpec&) const = default;
};

struct DraftSpec {
    DraftKind kind = DraftKind::self;
    std::string label;  // shown in the UI and reports; empty = describe()

    // Self-draft transforms (kind == self); they compose in this order: prune, truncate or cast, skip.
    PruneSpec prune;
    int32_t weight_trunc_bits       = 0;  // t: BF16 mantissa bits dropped from each weight, 0..7 (0 = none)
    MantissaRounding trunc_rounding = MantissaRounding::toward_zero;
    int32_t kv_trunc_bits           = 0;     // t_kv: BF16 mantissa bits dropped from the draft's K/V values, 0..7
    float kv_drop_ratio             = 0.0f;  // p_kv: fraction of each cached K/V vector's values zeroed (smallest |v|)
    WeightFormat weight_format      = WeightFormat::same;  // mxfp4 = ML-SpecQD direct cast
    bool format_output              = true;  // truncation / cast also apply to the LM head (layer matrices always do;
                                             // token_embd is never re-encoded: one row per token is read)
    // Pruned and truncated matrices are stored in the compact formats (kernels/compact.h: presence bitmap, packed
    // 16 - t bit values), so a pass reads only what the draft keeps; false = dense copies with the zeros and the
    // cleared bits stored (what the kernels read is then the dense size, and the compact size is only modeled).
    bool compact = true;
    // Strict-subset storage (Cassandra's headline): the target verifies on a copy of itself stored as this draft's
    // compact matrices plus the rest of its bits (drafts::split_target), so the draft costs no weight memory beyond
    // the target. Needs a compact BF16 self-draft (pruning and/or truncation toward zero of a BF16 target) as the
    // first level. The verifier's logits equal the target's bit for bit; its passes decode both parts.
    bool strict_subset = false;
    // The draft reads the target's KV cache for committed tokens, through the KV transforms above (Cassandra's
    // selected, truncated view of the target's cache), and evaluates only what the target has not cached; false =
    // the draft computes and caches its own K/V for every token (catch-up passes with its own weights).
    bool kv_from_target = true;
    int32_t exit_layer  = -1;        // early exit after layer L (0-based, inclusive); -1 = every layer
    std::vector<int32_t> skip_attn;  // layers whose attention block is skipped
    std::vector<int32_t> skip_ffn;   // layers whose feed-forward block is skipped
    // Expert-level pruning of a mixture-of-experts target: the draft routes each token to this many experts (the
    // router's best, weights renormalised as the target does) instead of the target's expert_used_count, so a draft
    // pass reads fewer experts; 0 = the target's count. Refused on a dense target.
    int32_t experts_used = 0;

    // Separate model (kind == model): a GGUF whose vocabulary is compatible with the target's. An EAGLE-3 head
    // (kind == eagle3): its GGUF (eagle3.h); empty = the bundled target's head (resources/models). An MTP draft
    // (kind == mtp): an MTP module file (model/mtp_module.h); empty = the target's own NextN layers, or the
    // bundled target's module when it has none.
    std::string model_path;

    // Statistical drafter (kind == maxgram).
    MaxGramParams maxgram;
    std::string bigram_corpus;  // JSONL prompt suite the bigram table is built from; empty = no bigram fill

    // llama.cpp's n-gram drafters, vLLM's prompt lookup, suffix decoding (kind == ngram).
    NgramSpec ngram;

    // The target's multi-token-prediction layer that drafts (kind == mtp): 0 = the first of nextn_predict_layers.
    int32_t mtp_layer = 0;

    // FR-Spec (kinds self and model): the draft's LM head restricted to the head_vocab tokens most frequent in
    // head_vocab_corpus (a JSONL prompt suite, tokenized by the target; ties to the lower id); 0 = the full head.
    int32_t head_vocab = 0;
    std::string head_vocab_corpus;

    bool operator==(const DraftSpec&) const = default;

    // Throws std::invalid_argument naming the field ("draft.prune.ratio must be in [0, 1), got 1.2").
    // With n_layer >= 0 also checks exit_layer and the skip sets against the target's layer count.
    void validate(int32_t n_layer = -1) const;
    // Short human-readable form, e.g. "prune 50% magnitude (attn+ffn) + bf16 t=3 + exit@5".
    std::string describe() const;
    // The label when one is set, else describe(): how reports and the UI name the level.
    std::string name() const { return label.empty() ? describe() : label; }
    // A self-draft pruned by Wanda: it needs calibration activations (prune.calibration or token ids).
    bool uses_wanda() const {
        return kind == DraftKind::self && prune.ratio > 0.0f && prune.method == PruneMethod::wanda;
    }
};

// After d's kind changed from before's: clears every setting that does not apply to the new kind (a self-draft's
// pruning on a separate model, Max-Gram's corpus on an n-gram drafter) and the old kind's file when it was carried
// over (a draft model is not an EAGLE-3 head: each kind's empty path is its bundled default; a file given with the
// new kind stays), so the spec is valid for its new kind. Names what it cleared ("pruning 0.5", "4-bit weight
// truncation", "the file head.gguf"); empty when nothing was set.
std::vector<std::string> drop_inapplicable(DraftSpec& d, const DraftSpec& before);

const char* to_string(DraftKind k);
const char* to_string(PruneMethod m);
const char* to_string(WeightFormat f);
const char* to_string(MantissaRounding r);

// JSON with the field names above; enums as lower-case strings; missing keys keep their defaults; unknown keys
// and wrong types are rejected with std::invalid_argument naming the key.
void to_json(nlohmann::json& j, const DraftSpec& s);
void from_json(const nlohmann::json& j, DraftSpec& s);

}  // namespace speculum::drafts
