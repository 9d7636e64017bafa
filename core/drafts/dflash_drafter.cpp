// DflashDrafter (see dflash_drafter.h).
#include "core/drafts/dflash_drafter.h"

#include "core/clock.h"
#include "core/drafts/draft_token.h"
#include "core/drafts/draft_tree.h"
#include "core/model/rope.h"
#include "core/model/sampler.h"
#include "core/parallel.h"
#include "kernels/gemv.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace speculum::drafts {

namespace {

constexpr int32_t kInjectChunk = 64;  // context rows injected per product

}  // namespace

DflashDrafter::DflashDrafter(const model::Model& target, DflashModel draft, bool dspark, model::ContextConfig ctx,
                             std::string name)
    : m_target(target),
      m_draft(std::move(draft)),
      m_dspark(dspark),
      m_ctx(m_draft.decoder, ctx),
      m_cost(ForwardCostModel::of(m_draft.decoder)),
      m_name(std::move(name)) {
    if (m_dspark && !m_draft.dspark_heads())
        throw std::invalid_argument(m_draft.name +
                                    ": kind dspark needs the DSpark heads (markov_w1, markov_w2, conf_proj); this "
                                    "file is a DFlash draft (kind dflash)");
    const model::Hparams& hp = m_draft.decoder.hparams();  // the injected keys' RoPE, as the forward pass turns them
    for (int32_t i = 0; i < hp.n_rot / 2; ++i)
        m_inv_freq.push_back(float(std::pow(double(hp.rope_freq_base), -2.0 * i / hp.n_rot)));
    if (m_ctx.config().n_batch < m_draft.block_size + 1)
        throw std::invalid_argument(m_name + ": n_batch " + std::to_string(m_ctx.config().n_batch) +
                                    " is below the block (" + std::to_string(m_draft.block_size + 1) + " rows)");
}

void DflashDrafter::attach_target_kv(const model::KvCache* kv, const std::vector<int32_t>* tokens) {
    const bool fits = keeps_streams(kv, tokens, m_draft.target_layers, m_target.hparams().n_embd);
    m_tkv           = fits ? kv : nullptr;
    m_ttokens       = fits ? tokens : nullptr;
}

void DflashDrafter::sync(std::span<const int32_t> committed) {
    size_t common = 0;
    while (common < m_committed.size() && common < committed.size() && m_committed[common] == committed[common])
        ++common;
    // Slot p stands on tokens 0..p (the target's state at p read them): it stays while they do.
    m_done = std::min<int32_t>(m_done, int32_t(common));
    m_ctx.kv().truncate(m_done);
    m_committed.assign(committed.begin(), committed.end());
}

void DflashDrafter::inject(const float* rows, int32_t first, int32_t n, DraftCost& cost) {
    const model::Hparams& hp = m_draft.decoder.hparams();
    const int64_t e = hp.n_embd, hd = hp.head_dim(), ekv = hp.n_embd_kv();
    const int64_t width = m_draft.fc.cols;
    model::KvCache& kv  = m_ctx.kv();
    kv.reserve_slots(n);
    const bool ref = reference_path();
    auto product   = [&](float* y, int64_t ldy, const model::WeightView& w, const float* x, int32_t m) {
        if (ref)
            kernels::gemm_ref(y, ldy, w.type, w.data, x, m, w.cols, 0, w.rows);
        else
            parallel_for(0, w.rows, 16,
                           [&](int64_t r0, int64_t r1) { kernels::gemm(y, ldy, w.type, w.data, x, m, w.cols, r0, r1); });
        cost.bytes_weights += w.n_bytes();
        cost.flops += 2.0 * double(m) * double(w.rows) * double(w.cols);
    };
    for (int32_t c0 = 0; c0 < n; c0 += kInjectChunk) {
        const int32_t m = std::min(kInjectChunk, n - c0);
        m_g.resize(size_t(m) * size_t(e));
        product(m_g.data(), e, m_draft.fc, rows + size_t(c0) * size_t(width), m);
        for (int32_t i = 0; i < m; ++i)
            model::rms_norm(&m_g[size_t(i) * size_t(e)], &m_g[size_t(i) * size_t(e)], m_draft.enc_norm.data(), e,
                            hp.rms_eps);
        for (int32_t il = 0; il < hp.n_layer; ++il) {
            const model::LayerWeights& L = m_draft.decoder.weights().layers[size_t(il)];
            float* k                     = kv.k(il, first + c0);
            product(k, ekv, L.wk, m_g.data(), m);
            product(kv.v(il, first + c0), ekv, L.wv, m_g.data(), m);
            for (int32_t i = 0; i < m; ++i) {
                float* ki = k + size_t(i) * size_t(ekv);
                for (int32_t h = 0; h < hp.n_head_kv; ++h)
                    model::rms_norm(ki + h * hd, ki + h * hd, L.k_norm.data(), hd, hp.rms_eps);
                model::rope(ki, hp.n_head_kv, int32_t(hd), hp.n_rot, m_inv_freq.data(), first + c0 + i, 1.0f,
                            hp.rope_style);
            }
            cost.bytes_weights += L.k_norm.size() * sizeof(float);
        }
        cost.bytes_weights += m_draft.enc_norm.size() * sizeof(float);
        cost.bytes_kv += uint64_t(m) * uint64_t(ekv) * 2 * sizeof(float) * uint64_t(hp.n_layer);  // written
    }
    kv.grow(n);
}

bool DflashDrafter::catch_up(DraftCost& cost) {
    // Positions 0 .. n - 1 (all but the last committed token) enter the cache from the target's states, which it
    // keeps for the committed tokens it cached (all but the last one, between verification passes).
    if (!m_tkv || m_committed.empty()) return false;
    const int32_t n = int32_t(m_committed.size()) - 1;
    if (target_rows_matching(*m_tkv, *m_ttokens, m_committed, n) < n) return false;
    if (n + m_draft.block_size + 1 > m_ctx.kv().capacity()) return false;  // no room for the block
    m_done = std::min(m_done, n);
    m_ctx.kv().truncate(m_done);
    if (n > m_done) inject(m_tkv->hidden(m_done), m_done, n - m_done, cost);
    m_done = n;
    return true;
}

void DflashDrafter::run_block(int32_t anchor, int32_t rows, DraftCost& cost) {
    const model::Hparams& hp       = m_draft.decoder.hparams();
    const int64_t e                = hp.n_embd;
    const model::WeightView& embed = m_draft.embed;
    m_emb.resize(size_t(rows) * size_t(e));
    for (int32_t r = 0; r < rows; ++r)
        kernels::dequantize_row(&m_emb[size_t(r) * size_t(e)], embed.type,
                                embed.row(r == 0 ? anchor : m_draft.mask_token), e);
    m_hidden.resize(size_t(rows) * size_t(e));
    model::ForwardOptions o;
    o.hidden_in            = m_emb.data();
    o.hidden_out           = m_hidden.data();
    const int32_t n_cached = m_ctx.kv().size();
    std::vector<int32_t> pos(static_cast<size_t>(rows));
    for (int32_t r = 0; r < rows; ++r) pos[size_t(r)] = n_cached + r;
    // The block attends itself both ways (llama.cpp sets the draft context non-causal).
    const std::vector<uint8_t> both_ways(size_t(rows) * size_t(rows), 1);
    const model::LogitsView v = m_ctx.forward_batch(std::vector<int32_t>(size_t(rows), 0), pos, both_ways, o);
    const uint64_t pairs      = uint64_t(rows) * uint64_t(n_cached + rows);
    cost += pass_cost(m_cost, hp, o, rows, n_cached, pairs, rows);
    m_logits.assign(v.data, v.data + size_t(rows) * size_t(v.n_vocab));
    m_normed.resize(m_hidden.size());
    for (int32_t r = 0; r < rows; ++r)
        model::rms_norm(&m_normed[size_t(r) * size_t(e)], &m_hidden[size_t(r) * size_t(e)],
                        m_draft.decoder.weights().output_norm.data(), e, hp.rms_eps);
    m_ctx.kv().truncate(n_cached);
}

float DflashDrafter::row_logits(int32_t r, int32_t prev, std::vector<float>& out, DraftCost& cost) {
    const int32_t nv = m_draft.n_draft_vocab();
    const float* row = &m_logits[size_t(r) * size_t(nv)];
    if (m_draft.d2t.empty()) {
        out.assign(row, row + nv);
    } else {  // tokens outside the draft vocabulary cannot be drafted
        out.assign(size_t(m_target.hparams().n_vocab), -std::numeric_limits<float>::infinity());
        for (int32_t j = 0; j < nv; ++j) out[size_t(m_draft.d2t[size_t(j)])] = row[j];
    }
    if (!m_draft.dspark_heads()) return 1.0f;
    const model::WeightView &w1 = m_draft.markov_w1, &w2 = m_draft.markov_w2;
    const int64_t rank = w1.cols;
    m_w1row.resize(size_t(rank));
    kernels::dequantize_row(m_w1row.data(), w1.type, w1.row(prev), rank);
    m_bias.resize(size_t(nv));
    if (reference_path())
        kernels::gemm_ref(m_bias.data(), nv, w2.type, w2.data, m_w1row.data(), 1, rank, 0, nv);
    else
        parallel_for(0, nv, 256, [&](int64_t r0, int64_t r1) {
            kernels::gemm(m_bias.data(), nv, w2.type, w2.data, m_w1row.data(), 1, rank, r0, r1);
        });
    for (int32_t t = 0; t < nv; ++t) out[size_t(t)] += m_bias[size_t(t)];
    const int64_t e     = m_draft.decoder.hparams().n_embd;
    const float* normed = &m_normed[size_t(r) * size_t(e)];
    double z            = m_draft.conf_bias;
    for (int64_t c = 0; c < e; ++c) z += double(m_draft.conf_proj[size_t(c)]) * normed[c];
    for (int64_t c = 0; c < rank; ++c) z += double(m_draft.conf_proj[size_t(e + c)]) * m_w1row[size_t(c)];
    cost.bytes_weights += w1.row_bytes() + w2.n_bytes() + m_draft.conf_proj.size() * sizeof(float);
    cost.flops += 2.0 * double(nv) * double(rank) + 2.0 * double(e + rank);
    return float(1.0 / (1.0 + std::exp(-z)));
}

DraftCost DflashDrafter::prefill(std::span<const int32_t> committed, const CancelToken& cancel) {
    const auto t0 = measure_clock::now();
    DraftCost cost;
    sync(committed);
    m_ctx.set_cancel(cancel);
    cancel.throw_if_cancelled();
    catch_up(cost);  // nothing when the target's states are not there
    cost.seconds = seconds_since(t0);
    return cost;
}

DraftChain DflashDrafter::propose(int32_t k, const ProposeParams& params, const CancelToken& cancel) {
    const auto t0 = measure_clock::now();
    DraftChain out;
    if (k < 0) throw std::invalid_argument(m_name + ": propose: k must be >= 0, got " + std::to_string(k));
    k = std::min(k, max_draft());
    if (k == 0) return out;
    m_ctx.set_cancel(cancel);
    cancel.throw_if_cancelled();
    if (!catch_up(out.cost)) {
        out.cost.seconds = seconds_since(t0);
        return out;
    }
    const int32_t anchor = m_committed.back();
    const int32_t first  = m_dspark ? 0 : 1;
    run_block(anchor, k + first, out.cost);
    model::Sampler sampler(model::SamplerConfig{.temperature = params.temperature, .seed = params.seed});
    ProposeParams pick = params;
    if (m_dspark) pick.p_min = 0.0f;  // DSpark stops on its confidence instead
    std::vector<float> logits, dist;
    int32_t prev            = first_prev(anchor, out.cost);
    out.predicts_acceptance = m_draft.dspark_heads();
    for (int32_t i = 0; i < k; ++i) {
        const float conf = row_logits(first + i, prev, logits, out.cost);
        if (m_dspark && params.p_min > 0.0f && conf < params.p_min) break;
        if (choose_draft_token(logits, pick, sampler, dist, out) < 0) break;
        if (m_draft.dspark_heads()) out.confidence.back() = conf;  // the head's predicted acceptance
        prev = model::argmax(logits);  // llama.cpp chains the Markov bias on the argmax, sampled or not
    }
    out.cost.seconds = seconds_since(t0);
    return out;
}

DraftTree DflashDrafter::propose_tree(const TreeShape& shape, const ProposeParams& params, const CancelToken& cancel) {
    const auto t0 = measure_clock::now();
    std::vector<int32_t> parent, rank;
    tree_shape_nodes(shape, parent, rank);
    DraftTree tree;
    DraftCost cost;
    if (parent.empty()) return tree;
    m_ctx.set_cancel(cancel);
    cancel.throw_if_cancelled();
    if (!catch_up(cost)) {
        tree.cost         = cost;
        tree.cost.seconds = seconds_since(t0);
        return tree;
    }
    // Depth d's tokens come from block row first + d - 1; one pass covers the deepest the block allows.
    int32_t depth = shape.dynamic_nodes > 0 ? int32_t(shape.branching.size()) : 0;
    if (shape.dynamic_nodes <= 0) {
        std::vector<int32_t> d(parent.size(), 0);
        for (size_t i = 0; i < parent.size(); ++i)
            depth = std::max(depth, d[i] = parent[i] < 0 ? 1 : d[size_t(parent[i])] + 1);
    }
    depth                = std::min(depth, max_draft());
    const int32_t first  = m_dspark ? 0 : 1;
    const int32_t anchor = m_committed.back();
    run_block(anchor, depth + first, cost);
    std::vector<float> root;
    row_logits(first, first_prev(anchor, cost), root, cost);
    auto evaluate = [&](const std::vector<int32_t>& nodes, const std::vector<int32_t>&,
                        const std::vector<int32_t>& toks, const std::vector<int32_t>& depths,
                        const std::vector<uint8_t>&, std::vector<std::vector<float>>& logits) {
        logits.resize(nodes.size());
        for (size_t r = 0; r < nodes.size(); ++r) {
            if (depths[r] >= depth) return false;  // beyond the block
            row_logits(first + depths[r], toks[r], logits[r], cost);
        }
        return true;
    };
    tree              = shape.dynamic_nodes > 0
                            ? expand_dynamic_tree(shape.branching, shape.dynamic_nodes, root, params, evaluate, cancel)
                            : expand_draft_tree(parent, rank, root, params, evaluate, cancel);
    tree.cost         = cost;
    tree.cost.seconds = seconds_since(t0);
    return tree;
}

int32_t DflashDrafter::first_prev(int32_t anchor, DraftCost& cost) {
    if (m_dspark || !m_draft.dspark_heads()) return anchor;
    std::vector<float> row0;
    row_logits(0, anchor, row0, cost);
    return model::argmax(row0);
}

std::vector<std::vector<float>> DflashDrafter::block_logits(const float* context_rows, int32_t n, int32_t anchor,
                                                            int32_t rows, std::vector<float>* confidence) {
    DraftCost unused;
    m_ctx.kv().truncate(0);
    m_done = 0;
    m_committed.clear();
    if (n > 0) inject(context_rows, 0, n, unused);
    run_block(anchor, rows, unused);
    m_ctx.kv().truncate(0);
    if (confidence && m_draft.dspark_heads()) {
        std::vector<std::vector<float>> out(static_cast<size_t>(rows));
        confidence->clear();
        int32_t prev = anchor;
        for (int32_t r = 0; r < rows; ++r) {
            confidence->push_back(row_logits(r, prev, out[size_t(r)], unused));
            prev = model::argmax(out[size_t(r)]);
        }
        return out;
    }
    const int32_t nv = m_draft.n_draft_vocab();
    std::vector<std::vector<float>> out(
        static_cast<size_t>(rows),
        std::vector<float>(size_t(m_target.hparams().n_vocab), -std::numeric_limits<float>::infinity()));
    for (int32_t r = 0; r < rows; ++r)
        for (int32_t j = 0; j < nv; ++j)
            out[size_t(r)][size_t(m_draft.d2t.empty() ? j : m_draft.d2t[size_t(j)])] =
                m_logits[size_t(r) * size_t(nv) + size_t(j)];
    return out;
}

}  // namespace speculum::drafts
