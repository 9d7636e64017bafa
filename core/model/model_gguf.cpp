// Model -> GGUF metadata and tensors (see model_gguf.h).
#include "core/model/model_gguf.h"

#include "kernels/gemv.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace speculum::model {

namespace {

void add_vector(GgufWriter& g, const std::string& name, const std::vector<float>& v) {
    g.add_tensor(name, {v.size()}, kernels::GgmlType::F32, v.data(), v.size() * sizeof(float));
}

// Matrices stacked by rows into one tensor (a fused attn_qkv or gate+up; one matrix: itself). In-memory layouts are
// written as the file type they came from (Q8_0_X8 -> Q8_0, bit-exact); compact draft matrices as their decoded
// rows (the pruned / truncated values, dense).
void add_stacked(GgufWriter& g, const std::string& name, std::vector<const WeightView*> parts) {
    const WeightView& first = *parts.front();
    if (parts.size() == 1 && !first.compact && first.type != kernels::GgmlType::Q8_0_X8) {  // as stored: no copy
        g.add_tensor(name, {static_cast<uint64_t>(first.cols), static_cast<uint64_t>(first.rows)}, first.type,
                     first.data, first.n_bytes());
        return;
    }
    std::vector<uint8_t> bytes;
    uint64_t rows          = 0;
    kernels::GgmlType type = first.type == kernels::GgmlType::Q8_0_X8 ? kernels::GgmlType::Q8_0 : first.type;
    for (const WeightView* v : parts) {
        const kernels::GgmlType t = v->type == kernels::GgmlType::Q8_0_X8 ? kernels::GgmlType::Q8_0 : v->type;
        if (t != type || v->cols != first.cols)
            throw std::invalid_argument("GGUF writer: " + name + ": the fused matrices differ in type or width");
        std::vector<uint8_t> part;
        if (v->compact) {
            part = dense_copy(*v);
        } else if (v->type == kernels::GgmlType::Q8_0_X8) {
            part.resize(v->n_bytes());
            kernels::unpack_q8_0_x8(part.data(), v->data, v->rows, v->cols);
        } else {
            part.assign(static_cast<const uint8_t*>(v->data), static_cast<const uint8_t*>(v->data) + v->n_bytes());
        }
        bytes.insert(bytes.end(), part.begin(), part.end());
        rows += static_cast<uint64_t>(v->rows);
    }
    g.add_tensor(name, {static_cast<uint64_t>(first.cols), rows}, type, bytes.data(), bytes.size());
}

void add_matrix(GgufWriter& g, const std::string& name, const WeightView& v) {
    add_stacked(g, name, {&v});
}

void add_layer(GgufWriter& g, const Hparams& hp, const LayerWeights& L, const std::string& p) {
    add_vector(g, p + "attn_norm.weight", L.attn_norm);
    const bool recurrent = !L.ssm_qkv.empty();
    if (recurrent) {  // a Gated DeltaNet layer (llama.cpp's qwen35 names)
        add_matrix(g, p + "attn_qkv.weight", L.ssm_qkv);
        add_matrix(g, p + "attn_gate.weight", L.ssm_z);
        const uint64_t conv = uint64_t(L.ssm_qkv.rows);
        g.add_tensor(p + "ssm_conv1d.weight", {L.ssm_conv1d.size() / conv, conv}, kernels::GgmlType::F32,
                     L.ssm_conv1d.data(), L.ssm_conv1d.size() * sizeof(float));
        add_vector(g, p + "ssm_dt.bias", L.ssm_dt);
        add_vector(g, p + "ssm_a", L.ssm_a);
        add_matrix(g, p + "ssm_beta.weight", L.ssm_beta);
        add_matrix(g, p + "ssm_alpha.weight", L.ssm_alpha);
        add_vector(g, p + "ssm_norm.weight", L.ssm_norm);
        add_matrix(g, p + "ssm_out.weight", L.ssm_out);
    } else if (hp.fused_qkv) {
        add_stacked(g, p + "attn_qkv.weight", {&L.wq, &L.wk, &L.wv});
    } else {
        add_matrix(g, p + "attn_q.weight", L.wq);
        add_matrix(g, p + "attn_k.weight", L.wk);
        add_matrix(g, p + "attn_v.weight", L.wv);
    }
    if (!recurrent) add_matrix(g, p + "attn_output.weight", L.wo);
    if (hp.attn_out_bias) add_vector(g, p + "attn_output.bias", L.bo);
    if (hp.attn_sinks) add_vector(g, p + "attn_sinks.weight", L.attn_sinks);
    if (hp.qkv_bias) {
        add_vector(g, p + "attn_q.bias", L.bq);
        add_vector(g, p + "attn_k.bias", L.bk);
        add_vector(g, p + "attn_v.bias", L.bv);
    }
    if (hp.qk_norm && !recurrent) {
        add_vector(g, p + "attn_q_norm.weight", L.q_norm);
        add_vector(g, p + "attn_k_norm.weight", L.k_norm);
    }
    if (hp.post_norms) {
        add_vector(g, p + "post_attention_norm.weight", L.attn_post_norm);
        add_vector(g, p + "post_ffw_norm.weight", L.ffn_post_norm);
    }
    add_vector(g, p + (hp.ffn_norm_named_post_attention ? "post_attention_norm.weight" : "ffn_norm.weight"),
               L.ffn_norm);
    if (hp.moe()) {  // 3-D expert tensors [cols, rows of one expert, n_expert]
        add_matrix(g, p + "ffn_gate_inp.weight", L.ffn_gate_inp);
        const uint64_t ne = uint64_t(hp.n_expert);
        if (hp.moe_biases) {  // per-expert biases as 2-D tensors [rows of one expert, n_expert]
            add_vector(g, p + "ffn_gate_inp.bias", L.ffn_gate_inp_b);
            auto add_bias = [&](const std::string& name, const std::vector<float>& b) {
                g.add_tensor(name, {uint64_t(b.size()) / ne, ne}, kernels::GgmlType::F32, b.data(),
                             b.size() * sizeof(float));
            };
            add_bias(p + "ffn_gate_exps.bias", L.exp_gate_b);
            add_bias(p + "ffn_up_exps.bias", L.exp_up_b);
            add_bias(p + "ffn_down_exps.bias", L.exp_down_b);
        }
        auto add_experts = [&](const std::string& name, const WeightView& v) {
            if (v.compact || v.type == kernels::GgmlType::Q8_0_X8)
                throw std::invalid_argument("GGUF writer: " + name + ": expert matrices are written as stored");
            g.add_tensor(name, {uint64_t(v.cols), uint64_t(v.rows) / ne, ne}, v.type, v.data, v.n_bytes());
        };
        add_experts(p + "ffn_gate_exps.weight", L.w_gate);
        add_experts(p + "ffn_up_exps.weight", L.w_up);
        add_experts(p + "ffn_down_exps.weight", L.w_down);
        if (hp.n_ff_shexp > 0) {
            add_vector(g, p + "ffn_gate_inp_shexp.weight", L.shexp_gate);
            add_matrix(g, p + "ffn_gate_shexp.weight", L.w_gate_shexp);
            add_matrix(g, p + "ffn_up_shexp.weight", L.w_up_shexp);
            add_matrix(g, p + "ffn_down_shexp.weight", L.w_down_shexp);
        }
        return;
    }
    if (hp.fused_gate_up) {
        add_stacked(g, p + "ffn_up.weight", {&L.w_gate, &L.w_up});
    } else {
        add_matrix(g, p + "ffn_gate.weight", L.w_gate);
        add_matrix(g, p + "ffn_up.weight", L.w_up);
    }
    add_matrix(g, p + "ffn_down.weight", L.w_down);
}

// The period P with which llama.cpp's set_swa_pattern(P) gives these flags (every P-th layer global), or 0.
uint32_t swa_period_of(const std::vector<uint8_t>& flags, int32_t n_layer) {
    for (uint32_t p = 1; p <= static_cast<uint32_t>(n_layer) + 1; ++p) {
        bool same = true;
        for (int32_t il = 0; il < n_layer && same; ++il)
            same = (flags[static_cast<size_t>(il)] != 0) == (static_cast<uint32_t>(il) % p < p - 1);
        if (same) return p;
    }
    return 0;
}

}  // namespace

void add_hparams_metadata(GgufWriter& g, const Hparams& hp, int32_t n_layer, int32_t n_nextn) {
    const std::string& a = hp.arch;
    g.set_uint32(a + ".context_length", static_cast<uint32_t>(hp.n_ctx_train));
    g.set_uint32(a + ".embedding_length", static_cast<uint32_t>(hp.n_embd));
    g.set_uint32(a + ".block_count", static_cast<uint32_t>(n_layer + n_nextn));
    if (n_nextn > 0) g.set_uint32(a + ".nextn_predict_layers", static_cast<uint32_t>(n_nextn));
    g.set_uint32(a + ".feed_forward_length", static_cast<uint32_t>(hp.n_ff));
    g.set_uint32(a + ".attention.head_count", static_cast<uint32_t>(hp.n_head));
    g.set_uint32(a + ".attention.head_count_kv", static_cast<uint32_t>(hp.n_head_kv));
    g.set_uint32(a + ".rope.dimension_count", static_cast<uint32_t>(hp.n_rot));
    g.set_float32(a + ".rope.freq_base", hp.rope_freq_base);
    g.set_float32(a + ".attention.layer_norm_rms_epsilon", hp.rms_eps);
    if (hp.rope_freq_scale != 1.0f || hp.rope_yarn) {
        g.set_string(a + ".rope.scaling.type", hp.rope_yarn ? "yarn" : "linear");
        g.set_float32(a + ".rope.scaling.factor", 1.0f / hp.rope_freq_scale);
    }
    if (hp.rope_yarn) {
        g.set_uint32(a + ".rope.scaling.original_context_length", static_cast<uint32_t>(hp.yarn_orig_ctx));
        g.set_float32(a + ".rope.scaling.yarn_beta_fast", hp.yarn_beta_fast);
        g.set_float32(a + ".rope.scaling.yarn_beta_slow", hp.yarn_beta_slow);
        if (hp.yarn_attn_factor != 1.0f) g.set_float32(a + ".rope.scaling.attn_factor", hp.yarn_attn_factor);
    }
    if (hp.n_embd_head > 0) {
        g.set_uint32(a + ".attention.key_length", static_cast<uint32_t>(hp.n_embd_head));
        g.set_uint32(a + ".attention.value_length", static_cast<uint32_t>(hp.n_embd_head));
    }
    if (hp.moe()) {
        g.set_uint32(a + ".expert_count", static_cast<uint32_t>(hp.n_expert));
        g.set_uint32(a + ".expert_used_count", static_cast<uint32_t>(hp.n_expert_used));
        g.set_uint32(a + ".expert_feed_forward_length", static_cast<uint32_t>(hp.n_ff_exp));
    }
    if (hp.n_ff_shexp > 0) g.set_uint32(a + ".expert_shared_feed_forward_length", uint32_t(hp.n_ff_shexp));
    if (hp.hybrid()) {  // llama.cpp's qwen35 keys
        g.set_uint32(a + ".ssm.conv_kernel", uint32_t(hp.ssm_d_conv));
        g.set_uint32(a + ".ssm.state_size", uint32_t(hp.ssm_d_state));
        g.set_uint32(a + ".ssm.group_count", uint32_t(hp.ssm_n_group));
        g.set_uint32(a + ".ssm.time_step_rank", uint32_t(hp.ssm_dt_rank));
        g.set_uint32(a + ".ssm.inner_size", uint32_t(hp.ssm_value_dim()));
        uint32_t every = 0;  // the full-attention interval these flags follow, if any
        for (uint32_t p = 1; p <= uint32_t(n_layer) + 1 && every == 0; ++p) {
            bool same = true;
            for (int32_t il = 0; il < n_layer && same; ++il)
                same = hp.is_recurrent(il) == ((uint32_t(il) + 1) % p != 0);
            if (same) every = p;
        }
        if (every > 0) {
            g.set_uint32(a + ".full_attention_interval", every);
        } else {  // one flag per block, the NextN blocks' 0
            GgufValue v;
            v.type = GgufType::ARRAY, v.array_type = GgufType::BOOL;
            for (int32_t il = 0; il < n_layer + n_nextn; ++il) v.ints.push_back(hp.is_recurrent(il) ? 1 : 0);
            g.set_value(a + ".attention.recurrent_layers", v);
        }
        GgufValue sec;
        sec.type = GgufType::ARRAY, sec.array_type = GgufType::INT32;
        for (int32_t x : hp.rope_sections) sec.ints.push_back(x);
        g.set_value(a + ".rope.dimension_sections", sec);
    }
    if (hp.final_softcap > 0.0f) g.set_float32(a + ".final_logit_softcapping", hp.final_softcap);
    if (hp.attn_softcap > 0.0f) g.set_float32(a + ".attn_logit_softcapping", hp.attn_softcap);
    if (hp.n_swa > 0) {
        g.set_uint32(a + ".attention.sliding_window", static_cast<uint32_t>(hp.n_swa));
        const std::vector<uint8_t> flags(hp.swa_layers.begin(), hp.swa_layers.begin() + n_layer);
        if (const uint32_t p = swa_period_of(flags, n_layer)) {
            g.set_uint32(a + ".attention.sliding_window_pattern", p);
        } else {
            GgufValue v;
            v.type = GgufType::ARRAY, v.array_type = GgufType::BOOL;
            for (uint8_t f : flags) v.ints.push_back(f);
            g.set_value(a + ".attention.sliding_window_pattern", v);
        }
        g.set_float32(a + ".rope.freq_base_swa", hp.rope_freq_base_swa);
    }
}

void add_model_tensors(GgufWriter& g, const Hparams& hp, const ModelWeights& w, int32_t n_layer, bool write_output,
                       bool write_nextn) {
    add_matrix(g, "token_embd.weight", w.token_embd);
    add_vector(g, "output_norm.weight", w.output_norm);
    if (!w.rope_freqs.empty()) add_vector(g, "rope_freqs.weight", w.rope_freqs);
    if (write_output) add_matrix(g, "output.weight", w.output);
    for (int32_t il = 0; il < n_layer; ++il) add_layer(g, hp, w.layers[size_t(il)], "blk." + std::to_string(il) + ".");
    if (write_nextn) add_nextn_tensors(g, hp, w.nextn, n_layer);
}

void add_nextn_tensors(GgufWriter& g, const Hparams& hp, const std::vector<NextnWeights>& nextn, int32_t first_block) {
    for (size_t j = 0; j < nextn.size(); ++j) {
        const NextnWeights& n = nextn[j];
        const std::string p   = "blk." + std::to_string(first_block + int32_t(j)) + ".";
        add_layer(g, hp, n.block, p);
        add_matrix(g, p + "nextn.eh_proj.weight", n.eh_proj);
        add_vector(g, p + "nextn.enorm.weight", n.enorm);
        add_vector(g, p + "nextn.hnorm.weight", n.hnorm);
        if (!n.head_norm.empty()) add_vector(g, p + "nextn.shared_head_norm.weight", n.head_norm);
        if (!n.head.empty()) add_matrix(g, p + "nextn.shared_head_head.weight", n.head);
        if (!n.embed.empty()) add_matrix(g, p + "nextn.embed_tokens.weight", n.embed);
    }
}

}  // namespace speculum::model
