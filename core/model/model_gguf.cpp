// Model -> GGUF metadata and tensors (see model_gguf.h).
#include "core/model/model_gguf.h"

#include "kernels/gemv.h"

#include <string>

namespace speculum::model {

namespace {

void add_vector(GgufWriter& g, const std::string& name, const std::vector<float>& v) {
    g.add_tensor(name, {v.size()}, kernels::GgmlType::F32, v.data(), v.size() * sizeof(float));
}

// In-memory layouts are written as the file type they came from (Q8_0_X8 -> Q8_0, bit-exact).
void add_matrix(GgufWriter& g, const std::string& name, const WeightView& v) {
    const std::vector<uint64_t> dims{static_cast<uint64_t>(v.cols), static_cast<uint64_t>(v.rows)};
    if (v.compact) {  // a compact draft matrix: its decoded rows (the pruned / truncated values, dense)
        const std::vector<uint8_t> dense = dense_copy(v);
        g.add_tensor(name, dims, v.type, dense.data(), dense.size());
        return;
    }
    if (v.type == kernels::GgmlType::Q8_0_X8) {
        std::vector<uint8_t> q8(v.n_bytes());
        kernels::unpack_q8_0_x8(q8.data(), v.data, v.rows, v.cols);
        g.add_tensor(name, dims, kernels::GgmlType::Q8_0, q8.data(), q8.size());
        return;
    }
    g.add_tensor(name, dims, v.type, v.data, v.n_bytes());
}

}  // namespace

void add_hparams_metadata(GgufWriter& g, const Hparams& hp, int32_t n_layer) {
    const std::string& a = hp.arch;
    g.set_uint32(a + ".context_length", static_cast<uint32_t>(hp.n_ctx_train));
    g.set_uint32(a + ".embedding_length", static_cast<uint32_t>(hp.n_embd));
    g.set_uint32(a + ".block_count", static_cast<uint32_t>(n_layer));
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

void add_model_tensors(GgufWriter& g, const Hparams& hp, const ModelWeights& w, int32_t n_layer, bool write_output) {
    add_matrix(g, "token_embd.weight", w.token_embd);
    add_vector(g, "output_norm.weight", w.output_norm);
    if (!w.rope_freqs.empty()) add_vector(g, "rope_freqs.weight", w.rope_freqs);
    if (write_output) add_matrix(g, "output.weight", w.output);
    for (int32_t il = 0; il < n_layer; ++il) {
        const LayerWeights& L = w.layers[size_t(il)];
        const std::string p   = "blk." + std::to_string(il) + ".";
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
}

}  // namespace speculum::model
