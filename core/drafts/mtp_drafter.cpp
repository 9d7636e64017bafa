// MtpDrafter (see mtp_drafter.h).
#include "core/drafts/mtp_drafter.h"

#include "core/drafts/draft_token.h"
#include "core/drafts/model_drafter.h"
#include "core/model/rope.h"
#include "core/model/sampler.h"
#include "kernels/gemv.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

namespace speculum::drafts {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

model::Model mtp_block_model(const model::Model& target, int32_t index) {
    const model::Hparams& thp = target.hparams();
    if (index < 0 || index >= thp.n_nextn)
        throw std::invalid_argument("draft kind \"mtp\": the target has " + std::to_string(thp.n_nextn) +
                                    " multi-token-prediction layers (<arch>.nextn_predict_layers), so layer " +
                                    std::to_string(index) + " does not exist" +
                                    (thp.n_nextn == 0 ? "; the model has no MTP head to draft with" : ""));
    const model::ModelWeights& tw = target.weights();
    const model::NextnWeights& n  = tw.nextn[size_t(index)];
    model::Hparams hp             = thp;
    hp.n_layer = 1, hp.n_nextn = 0, hp.n_swa = 0, hp.swa_layers.clear(), hp.nope_period = 0;
    model::ModelWeights w;
    w.token_embd  = n.embed.empty() ? tw.token_embd : n.embed;
    w.layers      = {n.block};
    w.output_norm = n.head_norm.empty() ? tw.output_norm : n.head_norm;
    w.output      = n.head.empty() ? tw.output : n.head;
    w.rope_freqs  = tw.rope_freqs;
    return model::Model::from_weights(hp, std::move(w), target.name() + " [MTP layer " + std::to_string(index) + "]");
}

MtpDrafter::MtpDrafter(const model::Model& target, int32_t index, model::ContextConfig ctx, std::string name)
    : m_target(target),
      m_block(mtp_block_model(target, index)),
      m_eh_proj(target.weights().nextn[size_t(index)].eh_proj),
      m_embed(m_block.weights().token_embd),
      m_enorm(target.weights().nextn[size_t(index)].enorm),
      m_hnorm(target.weights().nextn[size_t(index)].hnorm),
      m_ctx(m_block, ctx),
      m_cost(ForwardCostModel::of(m_block)),
      m_name(std::move(name)) {}

void MtpDrafter::attach_target_kv(const model::KvCache* kv, const std::vector<int32_t>* tokens) {
    const bool fits = kv && tokens && kv->has_hidden() && kv->n_embd_hidden() == m_target.hparams().n_embd;
    m_tkv           = fits ? kv : nullptr;
    m_ttokens       = fits ? tokens : nullptr;
}

void MtpDrafter::sync(std::span<const int32_t> committed) {
    size_t common = 0;
    while (common < m_committed.size() && common < committed.size() && m_committed[common] == committed[common])
        ++common;
    // Row q (slot q - 1) stands on tokens 0..q: it stays while they do.
    m_done = std::min<int32_t>(m_done, common > 0 ? int32_t(common) - 1 : 0);
    m_ctx.kv().truncate(m_done);
    m_committed.assign(committed.begin(), committed.end());
}

void MtpDrafter::fuse(const std::vector<int32_t>& tokens, const std::vector<const float*>& states,
                      std::vector<float>& u, DraftCost& cost) {
    const model::Hparams& hp = m_target.hparams();
    const int64_t e          = hp.n_embd;
    const size_t n           = tokens.size();
    const bool ref           = m_ctx.config().path == model::ForwardPath::reference;
    std::vector<float> cat(n * size_t(2 * e)), emb(static_cast<size_t>(e));
    for (size_t i = 0; i < n; ++i) {
        float* row = &cat[i * size_t(2 * e)];
        kernels::dequantize_row(emb.data(), m_embed.type, m_embed.row(tokens[i]), e);
        if (hp.scale_embd)
            for (float& x : emb) x *= std::sqrt(float(e));
        model::rms_norm(row, emb.data(), m_enorm.data(), e, hp.rms_eps);
        model::rms_norm(row + e, states[i], m_hnorm.data(), e, hp.rms_eps);
    }
    u.assign(n * size_t(e), 0.0f);
    if (ref)
        kernels::gemm_ref(u.data(), e, m_eh_proj.type, m_eh_proj.data, cat.data(), int64_t(n), 2 * e, 0, e);
    else
        kernels::gemm(u.data(), e, m_eh_proj.type, m_eh_proj.data, cat.data(), int64_t(n), 2 * e, 0, e);
    cost.bytes_weights += m_eh_proj.n_bytes() + uint64_t(n) * m_embed.row_bytes() +
                          uint64_t(m_enorm.size() + m_hnorm.size()) * sizeof(float);
    cost.flops += 2.0 * double(n) * double(e) * double(2 * e);
}

bool MtpDrafter::catch_up(DraftCost& cost) {
    // Positions q = m_done + 1 .. n (n = the last committed token's) need the target's state at q - 1; it has the
    // states of the committed tokens it cached (all but the last one, between verification passes).
    if (!m_tkv || m_committed.size() < 2) return false;
    const int32_t n   = int32_t(m_committed.size()) - 1;
    int32_t have      = 0;  // target states matching the committed tokens
    const int32_t lim = std::min<int32_t>({int32_t(m_ttokens->size()), m_tkv->size(), n});
    while (have < lim && (*m_ttokens)[size_t(have)] == m_committed[size_t(have)]) ++have;
    if (have < n) return false;        // the state before the last token is not there (yet)
    m_done = std::min(m_done, n - 1);  // the last row is always evaluated again: its logits draft
    m_ctx.kv().truncate(m_done);
    const model::Hparams& hp = m_target.hparams();
    const int64_t e          = hp.n_embd;
    std::vector<int32_t> toks, pos;
    std::vector<const float*> states;
    m_norm_h.resize(size_t(n - m_done) * size_t(e));
    for (int32_t q = m_done + 1; q <= n; ++q) {
        float* h = &m_norm_h[size_t(q - m_done - 1) * size_t(e)];
        // The target's state after its final norm (what its LM head reads), as llama.cpp's MTP input.
        model::rms_norm(h, m_tkv->hidden(q - 1), m_target.weights().output_norm.data(), e, hp.rms_eps);
        toks.push_back(m_committed[size_t(q)]);
        pos.push_back(q);
        states.push_back(h);
    }
    const int32_t rows = int32_t(toks.size());
    for (int32_t r0 = 0; r0 < rows; r0 += m_ctx.config().n_batch) {  // in batches the scratch holds
        const int32_t r1 = std::min(rows, r0 + m_ctx.config().n_batch);
        const std::vector<int32_t> bt(toks.begin() + r0, toks.begin() + r1), bp(pos.begin() + r0, pos.begin() + r1);
        const std::vector<const float*> bs(states.begin() + r0, states.begin() + r1);
        fuse(bt, bs, m_u, cost);
        m_hidden.resize(size_t(r1 - r0) * size_t(e));
        model::ForwardOptions o;
        o.hidden_in               = m_u.data();
        o.hidden_out              = m_hidden.data();
        const int32_t n_cached    = m_ctx.kv().size();
        const model::LogitsView v = m_ctx.forward_batch(bt, bp, {}, o);
        m_logits.assign(v.row(v.n - 1).begin(), v.row(v.n - 1).end());
        uint64_t pairs = uint64_t(r1 - r0) * uint64_t(n_cached) + uint64_t(r1 - r0) * uint64_t(r1 - r0 + 1) / 2;
        DraftCost c    = pass_cost(m_cost, m_block.hparams(), o, r1 - r0, n_cached, pairs, r1 - r0);
        c.bytes_weights -= uint64_t(r1 - r0) * m_cost.embd_row_bytes;  // the fused input replaced the lookup
        cost += c;
    }
    m_done = n;
    return true;
}

DraftChain MtpDrafter::propose(int32_t k, const ProposeParams& params, const CancelToken& cancel) {
    const auto t0 = std::chrono::steady_clock::now();
    DraftChain out;
    if (k < 0) throw std::invalid_argument("MtpDrafter::propose: k must be >= 0, got " + std::to_string(k));
    if (k == 0) return out;
    m_ctx.set_cancel(cancel);
    cancel.throw_if_cancelled();
    if (!catch_up(out.cost)) {
        out.cost.seconds = seconds_since(t0);
        return out;
    }
    const model::Hparams& hp = m_target.hparams();
    const int64_t e          = hp.n_embd;
    model::Sampler sampler(model::SamplerConfig{.temperature = params.temperature, .seed = params.seed});
    std::vector<float> logits = m_logits;  // the last committed row's: the first draft token
    std::vector<float> dist, state(static_cast<size_t>(e));
    const float* head_norm = m_block.weights().output_norm.data();
    // The layer's own state after its head norm feeds the next step (llama.cpp's draft-mtp).
    model::rms_norm(state.data(), &m_hidden[m_hidden.size() - size_t(e)], head_norm, e, hp.rms_eps);
    for (int32_t i = 0; i < k; ++i) {
        const int32_t tok = choose_draft_token(logits, params, sampler, dist, out);
        if (tok < 0) break;  // below p_min
        if (i + 1 == k) break;
        cancel.throw_if_cancelled();
        const int32_t pos = int32_t(m_committed.size()) + i;  // the drafted token's position
        if (m_ctx.kv().size() >= m_ctx.kv().capacity()) break;
        fuse({tok}, {state.data()}, m_u, out.cost);
        m_hidden.resize(size_t(e));
        model::ForwardOptions o;
        o.hidden_in               = m_u.data();
        o.hidden_out              = m_hidden.data();
        const int32_t n_cached    = m_ctx.kv().size();
        const model::LogitsView v = m_ctx.forward_batch({tok}, {pos}, {}, o);
        DraftCost c               = pass_cost(m_cost, m_block.hparams(), o, 1, n_cached, uint64_t(n_cached) + 1, 1);
        c.bytes_weights -= m_cost.embd_row_bytes;
        out.cost += c;
        logits.assign(v.row(0).begin(), v.row(0).end());
        model::rms_norm(state.data(), m_hidden.data(), head_norm, e, hp.rms_eps);
    }
    out.cost.seconds = seconds_since(t0);
    return out;
}

DraftTree MtpDrafter::propose_tree(const TreeShape& shape, const ProposeParams& params, const CancelToken& cancel) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<int32_t> parent, rank;
    tree_shape_nodes(shape, parent, rank);
    DraftTree tree;
    DraftCost cost;
    if (parent.empty()) return tree;
    if (int32_t(parent.size()) > m_ctx.config().n_batch)
        throw std::invalid_argument("MtpDrafter::propose_tree: " + std::to_string(parent.size()) +
                                    " nodes exceed the MTP context's batch of " +
                                    std::to_string(m_ctx.config().n_batch) + " (ContextConfig.n_batch)");
    m_ctx.set_cancel(cancel);
    cancel.throw_if_cancelled();
    if (!catch_up(cost)) {
        tree.cost         = cost;
        tree.cost.seconds = seconds_since(t0);
        return tree;
    }
    const model::Hparams& hp = m_target.hparams();
    const int64_t e          = hp.n_embd;
    const float* head_norm   = m_block.weights().output_norm.data();
    // Each node's state after the head norm (its children's input); the root's is the last committed token's.
    std::vector<std::vector<float>> states(parent.size());
    std::vector<float> root_state(static_cast<size_t>(e));
    model::rms_norm(root_state.data(), &m_hidden[m_hidden.size() - size_t(e)], head_norm, e, hp.rms_eps);
    const int32_t base = m_done;  // MTP slots of the committed positions; the tree's are dropped again
    auto evaluate      = [&](const std::vector<int32_t>& nodes, const std::vector<int32_t>& toks,
                        const std::vector<int32_t>& depths, const std::vector<uint8_t>& mask,
                        std::vector<std::vector<float>>& logits) {
        if (base + int32_t(nodes.size()) > m_ctx.kv().capacity()) return false;
        std::vector<int32_t> pos;
        std::vector<const float*> inputs;
        for (size_t r = 0; r < nodes.size(); ++r) {
            pos.push_back(int32_t(m_committed.size()) + depths[r] - 1);
            const int32_t p = parent[size_t(nodes[r])];
            inputs.push_back(p < 0 ? root_state.data() : states[size_t(p)].data());
        }
        m_ctx.kv().truncate(base);
        fuse(toks, inputs, m_u, cost);
        m_hidden.resize(nodes.size() * size_t(e));
        model::ForwardOptions o;
        o.hidden_in               = m_u.data();
        o.hidden_out              = m_hidden.data();
        const model::LogitsView v = m_ctx.forward_batch(toks, pos, mask, o);
        uint64_t pairs            = uint64_t(nodes.size()) * uint64_t(base);
        for (uint8_t b : mask) pairs += b != 0;
        DraftCost c =
            pass_cost(m_cost, m_block.hparams(), o, int32_t(nodes.size()), base, pairs, int32_t(nodes.size()));
        c.bytes_weights -= uint64_t(nodes.size()) * m_cost.embd_row_bytes;
        cost += c;
        logits.resize(nodes.size());
        for (size_t r = 0; r < nodes.size(); ++r) {
            logits[r].assign(v.row(int32_t(r)).begin(), v.row(int32_t(r)).end());
            states[size_t(nodes[r])].resize(static_cast<size_t>(e));
            model::rms_norm(states[size_t(nodes[r])].data(), &m_hidden[r * size_t(e)], head_norm, e, hp.rms_eps);
        }
        return true;
    };
    tree = expand_draft_tree(parent, rank, m_logits, params, evaluate, cancel);
    m_ctx.kv().truncate(base);
    tree.cost         = cost;
    tree.cost.seconds = seconds_since(t0);
    return tree;
}

std::vector<float> MtpDrafter::logits_for(const float* h, int32_t token, int32_t pos) {
    model::InferenceContext ctx(m_block, m_ctx.config());
    std::vector<float> hn(static_cast<size_t>(m_target.hparams().n_embd)), u;
    model::rms_norm(hn.data(), h, m_target.weights().output_norm.data(), int64_t(hn.size()),
                    m_target.hparams().rms_eps);
    DraftCost unused;
    fuse({token}, {hn.data()}, u, unused);
    model::ForwardOptions o;
    o.hidden_in               = u.data();
    const model::LogitsView v = ctx.forward_batch({token}, {pos}, {}, o);
    return {v.row(0).begin(), v.row(0).end()};
}

}  // namespace speculum::drafts
