// Self-draft -> GGUF (see draft_gguf.h).
#include "core/drafts/draft_gguf.h"

#include "core/model/gguf_writer.h"

#include <stdexcept>

namespace speculum::drafts {

namespace {

void add_matrix(model::GgufWriter& g, const std::string& name, const model::WeightView& v) {
    g.add_tensor(name, {uint64_t(v.cols), uint64_t(v.rows)}, v.type, v.data, v.n_bytes());
}
void add_vector(model::GgufWriter& g, const std::string& name, const std::vector<float>& v) {
    g.add_tensor(name, {uint64_t(v.size())}, kernels::GgmlType::F32, v.data(), v.size() * sizeof(float));
}

}  // namespace

void save_self_draft_gguf(const model::Model& target, const SelfDraft& draft, const DraftSpec& spec,
                          const std::string& path, bool allow_runtime_only) {
    if (!spec.skip_attn.empty() || !spec.skip_ffn.empty())
        throw std::invalid_argument("a GGUF cannot express skipped attention/FFN sublayers (draft.skip_attn, "
                                    "draft.skip_ffn); only early exit (draft.exit_layer) is saved by dropping layers");
    if (!allow_runtime_only && (spec.kv_drop_ratio > 0.0f || spec.kv_trunc_bits > 0))
        throw std::invalid_argument("draft.kv_drop_ratio / kv_trunc_bits act on the draft's KV cache at run time "
                                    "and cannot be saved in a GGUF");
    const model::Hparams& hp     = draft.model.hparams();
    const model::ModelWeights& w = draft.model.weights();
    const int32_t n_layer        = spec.exit_layer >= 0 ? spec.exit_layer + 1 : hp.n_layer;
    const std::string a          = hp.arch;

    model::GgufWriter g;
    // The target's metadata (architecture, tokenizer, rope, ...) with the draft's layer count and name.
    if (const model::GgufFile* f = target.gguf()) {
        for (const model::GgufKv& kv : f->metadata()) {
            if (kv.key == a + ".block_count" || kv.key == "general.name" || kv.key == "general.alignment") continue;
            g.set_value(kv.key, kv.value);
        }
    } else {
        g.set_string("general.architecture", a);
        g.set_uint32(a + ".context_length", static_cast<uint32_t>(hp.n_ctx_train));
        g.set_uint32(a + ".embedding_length", static_cast<uint32_t>(hp.n_embd));
        g.set_uint32(a + ".feed_forward_length", static_cast<uint32_t>(hp.n_ff));
        g.set_uint32(a + ".attention.head_count", static_cast<uint32_t>(hp.n_head));
        g.set_uint32(a + ".attention.head_count_kv", static_cast<uint32_t>(hp.n_head_kv));
        g.set_uint32(a + ".rope.dimension_count", static_cast<uint32_t>(hp.n_rot));
        g.set_float32(a + ".rope.freq_base", hp.rope_freq_base);
        g.set_float32(a + ".attention.layer_norm_rms_epsilon", hp.rms_eps);
        if (hp.rope_freq_scale != 1.0f) {
            g.set_string(a + ".rope.scaling.type", "linear");
            g.set_float32(a + ".rope.scaling.factor", 1.0f / hp.rope_freq_scale);
        }
    }
    g.set_uint32(a + ".block_count", static_cast<uint32_t>(n_layer));
    g.set_string("general.name", draft.model.name());
    g.set_string("speculum.draft.spec", nlohmann::json(spec).dump());

    add_matrix(g, "token_embd.weight", w.token_embd);
    add_vector(g, "output_norm.weight", w.output_norm);
    if (!w.rope_freqs.empty()) add_vector(g, "rope_freqs.weight", w.rope_freqs);
    // A tied head that the draft re-encoded is no longer token_embd: write it out.
    if (!hp.tied_output || w.output.data != w.token_embd.data) add_matrix(g, "output.weight", w.output);
    for (int32_t il = 0; il < n_layer; ++il) {
        const model::LayerWeights& L = w.layers[size_t(il)];
        const std::string p          = "blk." + std::to_string(il) + ".";
        add_vector(g, p + "attn_norm.weight", L.attn_norm);
        add_matrix(g, p + "attn_q.weight", L.wq);
        add_matrix(g, p + "attn_k.weight", L.wk);
        add_matrix(g, p + "attn_v.weight", L.wv);
        add_matrix(g, p + "attn_output.weight", L.wo);
        if (hp.qkv_bias) {
            add_vector(g, p + "attn_q.bias", L.bq);
            add_vector(g, p + "attn_k.bias", L.bk);
            add_vector(g, p + "attn_v.bias", L.bv);
        }
        add_vector(g, p + "ffn_norm.weight", L.ffn_norm);
        add_matrix(g, p + "ffn_gate.weight", L.w_gate);
        add_matrix(g, p + "ffn_up.weight", L.w_up);
        add_matrix(g, p + "ffn_down.weight", L.w_down);
    }
    g.write(path);
}

}  // namespace speculum::drafts
