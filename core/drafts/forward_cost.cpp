// Forward pass cost accounting (see forward_cost.h).
#include "core/drafts/forward_cost.h"

namespace speculum::drafts {

namespace {

bool attn_runs(const model::ForwardOptions& o, int32_t il) {
    return (o.exit_layer < 0 || il <= o.exit_layer) && (o.skip_attn.empty() || !o.skip_attn[size_t(il)]);
}
bool ffn_runs(const model::ForwardOptions& o, int32_t il) {
    return (o.exit_layer < 0 || il <= o.exit_layer) && (o.skip_ffn.empty() || !o.skip_ffn[size_t(il)]);
}

}  // namespace

ForwardCostModel ForwardCostModel::of(const model::Model& m) {
    const model::ModelWeights& w = m.weights();
    ForwardCostModel cm;
    for (const model::LayerWeights& L : w.layers) {
        cm.attn_bytes.push_back(L.mixer_bytes() + L.attn_vector_bytes());  // attention, or a Gated DeltaNet
        // A mixture of experts: what one token reads, its n_expert_used experts (more tokens read the union, which
        // forward passes count as they run; analytic::expected_distinct_experts models it).
        cm.ffn_bytes.push_back(L.ffn_bytes_per_token(m.hparams()) + L.ffn_vector_bytes());
    }
    cm.head_bytes     = w.output.n_bytes() + w.output_norm.size() * sizeof(float);
    cm.embd_row_bytes = w.token_embd.row_bytes();
    return cm;
}

DraftCost pass_cost(const ForwardCostModel& cm, const model::Hparams& hp, const model::ForwardOptions& opts,
                    int32_t n_new, int32_t n_cached, uint64_t attend_pairs, int32_t n_logits) {
    DraftCost c;
    if (n_new <= 0) return c;
    const double e = hp.n_embd, eq = hp.n_embd_q(), ekv = hp.n_embd_kv(), n = n_new;
    const double ff    = hp.moe() ? double(hp.n_ff_exp) * hp.n_expert_used : hp.n_ff;  // active FFN width per token
    c.n_forward        = 1;
    c.bytes_modeled    = cm.modeled;
    c.bytes_kv_modeled = cm.kv_modeled;
    c.bytes_weights    = cm.embd_row_bytes * uint64_t(n_new);
    for (int32_t il = 0; il < hp.n_layer; ++il) {
        if (attn_runs(opts, il) && hp.is_recurrent(il)) {
            // A Gated DeltaNet: its projections, and per token and value head a state matrix read and written
            // (the recurrent state, in memory the pass touches but no KV cache).
            const double conv = hp.ssm_conv_dim(), vd = hp.ssm_value_dim(), hv = hp.ssm_dt_rank;
            const double s2 = double(hp.ssm_d_state) * hp.ssm_d_state * hv;
            c.bytes_weights += cm.attn_bytes[size_t(il)];
            c.flops += 2.0 * n * e * (conv + 2.0 * vd + 2.0 * hv);   // qkv, z, beta, alpha; ssm_out
            c.flops += n * (2.0 * conv * hp.ssm_d_conv + 6.0 * s2);  // convolution; decay, two dots, the update
        } else if (attn_runs(opts, il)) {
            c.bytes_weights += cm.attn_bytes[size_t(il)];
            // K and V of every slot visible to the pass, read once per pass like the weights.
            c.bytes_kv += uint64_t(2.0 * ekv * (n_cached + n_new) * cm.kv_bytes_per_value + 0.5);
            c.flops += 2.0 * n * ((hp.attn_gate ? 3.0 : 2.0) * eq * e + 2.0 * ekv * e);  // wq (and gate), wo; wk, wv
            c.flops += 2.0 * 2.0 * eq * static_cast<double>(attend_pairs);               // q.k and p*v over every head
        }
        if (ffn_runs(opts, il)) {
            c.bytes_weights += cm.ffn_bytes[size_t(il)];
            c.flops += 2.0 * n * 3.0 * e * (ff + hp.n_ff_shexp);
        }
    }
    if (n_logits > 0) {
        c.bytes_weights += cm.head_bytes;
        c.flops += 2.0 * n_logits * e * double(opts.head ? opts.head->rows : hp.n_vocab);  // a reduced head: its rows
    }
    return c;
}

uint64_t weight_bytes_per_forward(const ForwardCostModel& cm, const model::Hparams& hp,
                                  const model::ForwardOptions& opts) {
    return pass_cost(cm, hp, opts, 1, 0, 1, 1).bytes_weights;
}

}  // namespace speculum::drafts
