// Reading the draft-head files that sit beside a target (EAGLE-3 heads, DFlash and DSpark block drafts): the typed,
// range-checked reads of `<arch>.*` keys and of tensors every such loader shares, each failure naming the file and
// the key or tensor (model::GgufFile::fail).
#pragma once

#include "core/model/gguf.h"
#include "core/model/model.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace speculum::drafts {

class HeadFile {
public:
    HeadFile(std::shared_ptr<const model::GgufFile> file, std::string arch)
        : m_file(std::move(file)), m_arch(std::move(arch)) {}
    const model::GgufFile& file() const { return *m_file; }
    std::string key(const char* k) const { return m_arch + "." + k; }

    // A 2-D tensor as a zero-copy view (kept alive by the file); missing or not a matrix fails.
    model::WeightView matrix(const std::string& name) const;
    // A 1-D tensor of n elements, dequantized to f32.
    std::vector<float> vector(const std::string& name, int64_t n) const;
    // `<arch>.k` as an unsigned integer in [lo, hi] (all 64 bits checked: 2^32 + 4 is not 4); the _or form returns
    // `def` when the key is absent.
    int32_t uint_in(const char* k, uint64_t lo, uint64_t hi) const;
    int32_t uint_in_or(const char* k, uint64_t def, uint64_t lo, uint64_t hi) const;
    // `<arch>.k`, positive and finite (norm epsilon, RoPE base), else `def` when absent.
    float positive_or(const char* k, double def) const;
    // The attention shape keys of a llama-style block into hp: embedding_length, feed_forward_length,
    // attention.head_count[_kv], attention.key_length / value_length (equal; else n_embd / n_head),
    // rope.dimension_count, rope.freq_base, attention.layer_norm_rms_epsilon, context_length. block_count must be in
    // [1, max_layers].
    void read_block_hparams(model::Hparams& hp, int32_t max_layers) const;
    // Layer il of a llama-style block (blk.il.{attn_norm, attn_q, attn_k, attn_v, attn_output, ffn_norm, ffn_gate,
    // ffn_up, ffn_down}; attn_q_norm / attn_k_norm when hp.qk_norm).
    model::LayerWeights layer(const model::Hparams& hp, int32_t il) const;
    // fc.weight, checked to be (n_embd, n_streams target_embd).
    model::WeightView fc(int64_t n_embd, int64_t n_streams, int64_t target_embd) const;
    // The draft's token_embd.weight when the file has one, else the target's table; either must embed the target's
    // vocabulary in n_embd dimensions (`misfit` reports it, naming the field; `what`: "head", "draft").
    model::WeightView embedding(const model::Model& target, int64_t n_embd, const char* what,
                                const std::function<void(const std::string&, const std::string&)>& misfit) const;
    // The optional reduced draft vocabulary (`d2t.weight` or `d2t`, I64 or I32 offsets: draft id j is target id
    // j + d2t[j]) as target ids, each in [0, n_target_vocab) and distinct; empty when absent. `misfit` reports a
    // file that does not fit the target.
    std::vector<int32_t> d2t(int32_t n_target_vocab,
                             const std::function<void(const std::string&, const std::string&)>& misfit) const;

private:
    std::shared_ptr<const model::GgufFile> m_file;
    std::string m_arch;
};

}  // namespace speculum::drafts
