// CATS's three stages (see cats.h).
#include "core/engine/cats.h"
#include "core/clock.h"

#include "core/model/sampler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>

namespace speculum::engine {

namespace {
using clock = measure_clock;
double since(clock::time_point t0) {
    return seconds_since(t0);
}
constexpr int kDraft = 0, kVerifier = 1, kTarget = 2;
}  // namespace

uint64_t layer_bytes(const model::Model& m, int32_t a, int32_t b, bool resident) {
    uint64_t bytes = 0;
    for (int32_t il = a; il < b; ++il) {
        const model::LayerWeights& L = m.weights().layers[static_cast<size_t>(il)];
        for (const model::WeightView* w : {&L.wq, &L.wk, &L.wv, &L.wo}) bytes += w->n_bytes();
        bytes += L.vector_bytes() + (resident ? L.w_gate.n_bytes() + L.w_up.n_bytes() + L.w_down.n_bytes()
                                              : L.ffn_bytes_per_token(m.hparams()));  // a MoE: a token's experts
    }
    return bytes;
}

uint64_t cats_resident_bytes(const model::Model& m, int32_t sv, int64_t n_ctx) {
    const model::ModelWeights& W = m.weights();
    const uint64_t kv_per_layer  = 2ull * sizeof(float) * static_cast<uint64_t>(m.hparams().n_embd_kv());
    uint64_t bytes               = W.token_embd.n_bytes() + W.output_norm.size() * sizeof(float);
    if (W.output.data != W.token_embd.data) bytes += W.output.n_bytes();  // a tied head is the embedding itself
    return bytes + layer_bytes(m, 0, sv, /*resident=*/true) +
           kv_per_layer * static_cast<uint64_t>(sv) * static_cast<uint64_t>(n_ctx);
}

CatsLayers cats_layers(const CatsConfig& c, const model::Model& target, int64_t n_ctx) {
    CatsLayers r;
    r.n_layer = target.hparams().n_layer;
    if (r.n_layer < 3)
        throw std::invalid_argument("cats: the target has " + std::to_string(r.n_layer) +
                                    " layers; three stages need at least 3");
    r.draft = c.draft_layers > 0 ? c.draft_layers : std::max(1, r.n_layer / 4);
    if (r.draft >= r.n_layer - 1)
        throw std::invalid_argument("cats.draft_layers: " + std::to_string(r.draft) +
                                    " leaves no room for a verifier " + "and the target's own layers (" +
                                    std::to_string(r.n_layer) + " layers)");
    if (c.sv_layers > 0) {
        r.sv = c.sv_layers;
    } else if (c.dram_budget_gb > 0.0) {
        // The deepest verifier whose resident set fits; the remaining layers are what the device streams.
        const double budget = c.dram_budget_gb * 1e9;
        for (int32_t sv = r.n_layer - 1; sv > r.draft; --sv)
            if (static_cast<double>(cats_resident_bytes(target, sv, n_ctx)) <= budget) {
                r.sv = sv;
                break;
            }
        if (r.sv == 0)
            throw std::invalid_argument("cats.dram_budget_gb: " + std::to_string(c.dram_budget_gb) +
                                        " GB holds no verifier deeper than the draft's " + std::to_string(r.draft) +
                                        " layers (" + std::to_string(cats_resident_bytes(target, r.draft + 1, n_ctx)) +
                                        " bytes needed for " + std::to_string(r.draft + 1) + ")");
        r.from_budget = true;
    } else {
        r.sv = r.draft + std::max(1, (r.n_layer - r.draft) / 2);
    }
    if (r.sv <= r.draft || r.sv >= r.n_layer)
        throw std::invalid_argument("cats.sv_layers: " + std::to_string(r.sv) + " must be in (" +
                                    std::to_string(r.draft) + ", " + std::to_string(r.n_layer) + ")");
    r.b_draft        = layer_bytes(target, 0, r.draft);
    r.b_sv           = layer_bytes(target, r.draft, r.sv);
    r.b_target       = layer_bytes(target, r.sv, r.n_layer);
    r.resident_bytes = cats_resident_bytes(target, r.sv, n_ctx);
    return r;
}

CatsStages::CatsStages(const model::Model& target, const model::ContextConfig& ctx, const CatsConfig& cfg)
    : m_target(target), m_cfg(cfg), m_draft(target, ctx), m_sv(target, ctx), m_tgt(target, ctx) {
    if (target.hparams().hybrid())  // its stages would each need the recurrent state of their layers rolled back
        throw std::invalid_argument("CATS: a hybrid (Gated DeltaNet) target is not supported; use a chain or a tree");
    m_layers          = cats_layers(cfg, target, m_tgt.kv().capacity());
    draft_stats.level = 1;
    draft_stats.name  = "draft: layers 0.." + std::to_string(m_layers.draft - 1);
    sv_stats.level    = 2;
    sv_stats.name =
        "shallow verifier: layers " + std::to_string(m_layers.draft) + ".." + std::to_string(m_layers.sv - 1);
    target_stats.level = 0;
    target_stats.name =
        target.name() + " (layers " + std::to_string(m_layers.sv) + ".." + std::to_string(m_layers.n_layer - 1) + ")";
}

model::ForwardOptions CatsStages::options(int stage) const {
    model::ForwardOptions o;
    if (stage == kDraft) o.exit_layer = m_layers.draft - 1;
    if (stage == kVerifier) o.first_layer = m_layers.draft, o.exit_layer = m_layers.sv - 1;
    if (stage == kTarget) o.first_layer = m_layers.sv;
    return o;
}

void CatsStages::account(LevelStats& s, const model::InferenceContext& ctx, double seconds) {
    ++s.n_forward;
    s.t_s += seconds;
    s.bytes_weights += ctx.last_cost().bytes_weights;
    s.bytes_kv += ctx.last_cost().bytes_kv;
    s.flops += ctx.last_cost().flops;
}

void CatsStages::prefill(const std::vector<int32_t>& committed, const CancelToken& cancel) {
    for (auto* c : {&m_draft, &m_sv, &m_tgt}) c->set_cancel(cancel);
    const int32_t n  = static_cast<int32_t>(committed.size()) - 1;  // the last one is evaluated by the first step
    const int32_t nb = m_tgt.config().n_batch;
    const int64_t e  = m_target.hparams().n_embd;
    std::vector<float> h_draft(static_cast<size_t>(nb * e)), h_sv(static_cast<size_t>(nb * e));
    for (int32_t at = m_tgt.kv().size(); at < n; at += nb) {
        const int32_t len = std::min(nb, n - at);
        const std::vector<int32_t> toks(committed.begin() + at, committed.begin() + at + len);
        std::vector<int32_t> pos(static_cast<size_t>(len));
        for (int32_t i = 0; i < len; ++i) pos[static_cast<size_t>(i)] = at + i;
        model::ForwardOptions od = options(kDraft), os = options(kVerifier), ot = options(kTarget);
        od.hidden_out = h_draft.data();
        os.hidden_in = h_draft.data(), os.hidden_out = h_sv.data();
        ot.hidden_in = h_sv.data();
        m_draft.forward_batch(toks, pos, {}, od);
        m_sv.forward_batch(toks, pos, {}, os);
        m_tgt.forward_batch(toks, pos, {}, ot);
    }
}

CatsStages::Outcome CatsStages::step(const std::vector<int32_t>& committed, int32_t gamma, const CancelToken& cancel) {
    for (auto* c : {&m_draft, &m_sv, &m_tgt}) c->set_cancel(cancel);
    const int32_t n    = static_cast<int32_t>(committed.size());
    const int32_t last = committed.back();
    const int64_t e    = m_target.hparams().n_embd;
    Outcome out;

    // 1. Draft: [last, d_0 .. d_{g-1}] through layers [0, L_DM); the last pass only gives d_{g-1}'s hidden state.
    std::vector<int32_t> chain;
    std::vector<float> h_draft(static_cast<size_t>((gamma + 1) * e));
    ++draft_stats.n_calls;
    int32_t tok = last;
    for (int32_t i = 0; i <= gamma; ++i) {
        model::ForwardOptions o = options(kDraft);
        o.hidden_out            = &h_draft[static_cast<size_t>(i * e)];
        const auto t0           = clock::now();
        const auto logits       = m_draft.decode(tok, n - 1 + i, o);
        account(draft_stats, m_draft, since(t0));
        if (i < gamma) chain.push_back(tok = model::argmax(logits));
    }
    out.n_chain = gamma;

    // 2. Shallow verifier: layers [L_DM, L_SV) over the chain's hidden states, in one pass.
    std::vector<int32_t> toks{last};
    toks.insert(toks.end(), chain.begin(), chain.end());
    std::vector<int32_t> pos(toks.size());
    for (size_t i = 0; i < pos.size(); ++i) pos[i] = n - 1 + static_cast<int32_t>(i);
    std::vector<float> h_sv(static_cast<size_t>((gamma + 1) * e));
    std::vector<int32_t> sv_argmax;
    {
        model::ForwardOptions o = options(kVerifier);
        o.hidden_in = h_draft.data(), o.hidden_out = h_sv.data();
        ++sv_stats.n_calls;
        const auto t0                  = clock::now();
        const model::LogitsView logits = m_sv.forward_batch(toks, pos, {}, o);
        account(sv_stats, m_sv, since(t0));
        for (int32_t j = 0; j < gamma; ++j) sv_argmax.push_back(model::argmax(logits.row(j)));
    }
    sv_stats.n_reviewed += gamma;

    // 3. Corrections: the verifier's argmax beside each draft token it disagrees with. The leaf attends the
    //    committed tokens and the chain before it; its first L_SV layers run in the draft and verifier stages.
    std::vector<int32_t> leaf_pos;  // chain position j of each leaf
    std::vector<float> h_leaf;
    for (int32_t j = 0; j < gamma; ++j) {
        if (sv_argmax[static_cast<size_t>(j)] == chain[static_cast<size_t>(j)]) {
            ++out.n_sv_agreed;
            continue;
        }
        const int32_t leaf = sv_argmax[static_cast<size_t>(j)];
        std::vector<int32_t> visible(static_cast<size_t>(n + j));
        for (int32_t s = 0; s < n + j; ++s) visible[static_cast<size_t>(s)] = s;
        std::vector<float> hd(static_cast<size_t>(e)), hs(static_cast<size_t>(e));
        model::ForwardOptions od = options(kDraft), os = options(kVerifier);
        od.hidden_out = hd.data(), od.cached_slots = visible;
        os.hidden_in = hd.data(), os.hidden_out = hs.data(), os.cached_slots = visible;
        auto t0 = clock::now();
        m_draft.forward_batch({leaf}, {n + j}, {}, od);
        account(draft_stats, m_draft, since(t0));
        t0 = clock::now();
        m_sv.forward_batch({leaf}, {n + j}, {}, os);
        account(sv_stats, m_sv, since(t0));
        leaf_pos.push_back(j);
        h_leaf.insert(h_leaf.end(), hs.begin(), hs.end());
        toks.push_back(leaf);
        pos.push_back(n + j);
    }
    out.n_corrections = static_cast<int32_t>(leaf_pos.size());
    sv_stats.n_review_accepted += out.n_sv_agreed;

    // The tree: chain nodes 0..g-1 (rank 0), then the leaves (rank 1, siblings of the chain token they correct).
    drafts::DraftTree& tree = out.tree;
    for (int32_t k = 0; k < gamma; ++k) {
        tree.tokens.push_back(chain[static_cast<size_t>(k)]);
        tree.parent.push_back(k - 1), tree.depth.push_back(k + 1), tree.rank.push_back(0), tree.q.push_back(1.0f);
    }
    for (size_t li = 0; li < leaf_pos.size(); ++li) {
        const int32_t j = leaf_pos[li];
        tree.tokens.push_back(toks[static_cast<size_t>(gamma + 1) + li]);
        tree.parent.push_back(j - 1), tree.depth.push_back(j + 1), tree.rank.push_back(1), tree.q.push_back(1.0f);
    }

    // 4. Target: layers [L_SV, n_layer) over the tree's hidden states, under the tree mask.
    const int32_t m = static_cast<int32_t>(toks.size());
    std::vector<uint8_t> mask(static_cast<size_t>(m * m), 0);
    for (int32_t i = 0; i < m; ++i) {
        mask[static_cast<size_t>(i * m)] = 1;  // the root
        for (int32_t a = i - 1; a >= 0; a = tree.parent[static_cast<size_t>(a)])
            mask[static_cast<size_t>(i * m + a + 1)] = 1;
        mask[static_cast<size_t>(i * m + i)] = 1;
    }
    std::vector<float> h_tree(h_sv);
    h_tree.insert(h_tree.end(), h_leaf.begin(), h_leaf.end());
    model::ForwardOptions ot = options(kTarget);
    ot.hidden_in             = h_tree.data();
    ++target_stats.n_calls;
    const auto t0                  = clock::now();
    const model::LogitsView logits = m_tgt.forward_batch(toks, pos, mask, ot);
    out.verdict = m_cfg.typical ? verify_tree_typical(tree, logits, m_cfg.typical_epsilon, m_cfg.typical_delta)
                                : verify_tree_greedy(tree, logits);
    account(target_stats, m_tgt, since(t0));
    target_stats.n_reviewed += tree.size();
    target_stats.n_review_accepted += static_cast<int64_t>(out.verdict.path.size());

    // 5. Every stage keeps the root and the accepted path: same slots in all three (root n-1, chain k at n + k,
    //    leaf li at n + g + li).
    std::vector<int32_t> keep{n - 1};
    for (int32_t node : out.verdict.path) keep.push_back(n + node);
    for (auto* c : {&m_draft, &m_sv, &m_tgt}) c->kv().compact(n - 1, keep);
    return out;
}

TreeVerdict verify_tree_typical(const drafts::DraftTree& tree, const model::LogitsView& logits, float epsilon,
                                float delta) {
    const auto children = tree_children(tree);
    TreeVerdict v;
    int32_t at = -1;  // the root
    for (;;) {
        const auto row      = logits.row(at + 1);
        const int32_t best  = model::argmax(row);
        double entropy      = 0.0;
        const double lse_mx = row[static_cast<size_t>(best)];
        double z            = 0.0;
        for (float x : row) z += std::exp(static_cast<double>(x) - lse_mx);
        for (float x : row) {
            const double p = std::exp(static_cast<double>(x) - lse_mx) / z;
            if (p > 0) entropy -= p * std::log(p);
        }
        const double threshold = std::min(static_cast<double>(epsilon), delta * std::exp(-entropy));
        int32_t next           = -1;
        for (int32_t c : children[static_cast<size_t>(at + 1)]) {
            const int32_t t = tree.tokens[static_cast<size_t>(c)];
            if (t == best || std::exp(static_cast<double>(row[static_cast<size_t>(t)]) - lse_mx) / z > threshold) {
                next = c;
                break;
            }
        }
        if (next < 0) {
            v.next_token = best;
            v.next_kind  = children[static_cast<size_t>(at + 1)].empty() ? TokenKind::bonus : TokenKind::corrected;
            return v;
        }
        v.path.push_back(next);
        v.rank.push_back(tree.rank[static_cast<size_t>(next)]);
        at = next;
    }
}

}  // namespace speculum::engine
