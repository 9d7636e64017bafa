// Test drafters and models for the engine tests: a drafter over an InferenceContext (any synthetic model, with
// layer-skip options), an oracle that proposes the target's greedy continuation with errors injected at chosen
// draft positions (exact acceptance counts), and Max-Gram over the context.
#pragma once

#include "core/drafts/drafter.h"
#include "core/drafts/maxgram.h"
#include "core/engine/engine.h"
#include "core/model/generate.h"
#include "core/model/synthetic.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <vector>

namespace speculum::test {

inline model::SyntheticSpec engine_target_spec(int32_t n_layer = 4, uint64_t seed = 21) {
    model::SyntheticSpec s;
    s.n_vocab = 96, s.n_embd = 64, s.n_layer = n_layer, s.n_head = 4, s.n_head_kv = 2, s.n_ff = 128, s.n_ctx = 256;
    s.type = kernels::GgmlType::F32, s.seed = seed;
    return s;
}

// The reference path: a batched pass is bitwise equal to sequential decoding, so greedy outputs compare exactly.
inline model::ContextConfig exact_ctx() {
    return {.n_ctx = 256, .n_batch = 64, .path = model::ForwardPath::reference};
}

// The target's own greedy continuation of `prompt` (plain autoregressive decoding).
inline std::vector<int32_t> greedy_reference(const model::Model& m, const std::vector<int32_t>& prompt, int32_t n) {
    model::InferenceContext ctx(m, exact_ctx());
    model::Sampler s;
    std::vector<int32_t> out;
    model::generate(ctx, s, prompt, n, [&](int32_t t) {
        out.push_back(t);
        return true;
    });
    return out;
}

// Softmax of logits / T (T = 1 when 0) in float.
inline std::vector<float> softmax(std::span<const float> l, float temp = 1.0f) {
    const float t  = temp > 0 ? temp : 1.0f;
    const float mx = *std::max_element(l.begin(), l.end());
    std::vector<float> p(l.size());
    double sum = 0;
    for (size_t i = 0; i < l.size(); ++i) sum += p[i] = std::exp((l[i] - mx) / t);
    for (float& x : p) x = static_cast<float>(x / sum);
    return p;
}

// A drafter over a model: keeps its KV cache in step with the committed context, drafts greedily (or samples
// at params.temperature with q_dist), and expands trees with the top-ranked tokens of each node.
class ContextDrafter : public drafts::Drafter {
public:
    ContextDrafter(const model::Model& m, model::ForwardOptions opts = {}, std::string name = "context drafter")
        : m_ctx(m, exact_ctx()), m_opts(std::move(opts)), m_name(std::move(name)) {}
    std::string name() const override { return m_name; }
    int32_t n_vocab() const override { return m_ctx.model().hparams().n_vocab; }
    void sync(std::span<const int32_t> committed) override { m_committed.assign(committed.begin(), committed.end()); }

    drafts::DraftChain propose(int32_t k, const drafts::ProposeParams& p, const CancelToken& cancel) override {
        drafts::DraftChain c;
        model::Rng rng(p.seed);
        std::vector<float> logits = catch_up(cancel);
        for (int32_t i = 0; i < k; ++i) {
            const std::vector<float> q = softmax(logits, p.temperature);
            int32_t t                  = model::argmax(logits);
            if (p.temperature > 0) {
                const double u = rng.next_double();
                double acc     = 0;
                for (size_t v = 0; v < q.size(); ++v)
                    if ((acc += q[v]) > u) {
                        t = static_cast<int32_t>(v);
                        break;
                    }
            }
            if (p.p_min > 0 && q[static_cast<size_t>(t)] < p.p_min) break;
            c.tokens.push_back(t);
            c.q.push_back(q[static_cast<size_t>(t)]);
            if (p.want_distributions) c.q_dist.push_back(q);
            if (i + 1 < k) logits = eval(t);
            ++c.cost.n_forward;
        }
        return c;
    }

    drafts::DraftTree propose_tree(const drafts::TreeShape& shape, const drafts::ProposeParams&,
                                   const CancelToken& cancel) override {
        const drafts::TreeShape e = engine::explicit_shape(shape);
        drafts::DraftTree tree;
        const size_t base = m_committed.size();
        std::vector<std::vector<float>> node_logits;  // logits after each node
        const std::vector<float> root = catch_up(cancel);
        for (size_t i = 0; i < e.parent.size(); ++i) {
            const int32_t par           = e.parent[i];
            const std::vector<float>& l = par < 0 ? root : node_logits[static_cast<size_t>(par)];
            std::vector<int32_t> order(l.size());
            std::iota(order.begin(), order.end(), 0);
            std::stable_sort(order.begin(), order.end(),
                             [&](int32_t a, int32_t b) { return l[size_t(a)] > l[size_t(b)]; });
            const int32_t tok = order[static_cast<size_t>(e.rank[i])];
            tree.tokens.push_back(tok);
            tree.parent.push_back(par);
            tree.depth.push_back(par < 0 ? 1 : tree.depth[static_cast<size_t>(par)] + 1);
            tree.rank.push_back(e.rank[i]);
            tree.q.push_back(softmax(l)[static_cast<size_t>(tok)]);
            // Evaluate the node on its own path (rebuild the path's cache: simple, tests only).
            std::vector<int32_t> path{tok};
            for (int32_t a = par; a >= 0; a = tree.parent[static_cast<size_t>(a)])
                path.push_back(tree.tokens[size_t(a)]);
            std::reverse(path.begin(), path.end());
            m_ctx.kv().truncate(static_cast<int32_t>(base));
            m_cached.resize(base);
            std::vector<float> last;
            for (int32_t t : path) last = eval(t);
            node_logits.push_back(last);
            ++tree.cost.n_forward;
        }
        return tree;
    }

private:
    std::vector<float> eval(int32_t t) {
        auto l = m_ctx.decode(t, m_ctx.kv().size(), m_opts);
        m_cached.push_back(t);
        return {l.begin(), l.end()};
    }
    // Cache = longest common prefix with the committed context, then decode the rest; returns the last logits.
    std::vector<float> catch_up(const CancelToken& cancel) {
        size_t lcp = 0;
        while (lcp < m_cached.size() && lcp + 1 < m_committed.size() && m_cached[lcp] == m_committed[lcp]) ++lcp;
        lcp = size_t(m_ctx.kv().restorable(static_cast<int32_t>(lcp)));  // a hybrid's horizon (else lcp itself)
        m_ctx.kv().truncate(static_cast<int32_t>(lcp));
        m_cached.resize(lcp);
        std::vector<float> l;
        for (size_t i = lcp; i < m_committed.size(); ++i) {
            cancel.throw_if_cancelled();
            l = eval(m_committed[i]);
        }
        m_ctx.kv().commit();  // drafts roll back to here at most (a hybrid keeps its state's rollback data from here)
        return l;
    }
    model::InferenceContext m_ctx;
    model::ForwardOptions m_opts;
    std::string m_name;
    std::vector<int32_t> m_committed, m_cached;
};

// Proposes the target's greedy continuation `ref` (after `prompt`), with a wrong token at every draft position in
// `wrong` (0-based within each draft). Trees: rank 0 = the (possibly wrong) chain token, rank 1 = the true token.
class OracleDrafter : public drafts::Drafter {
public:
    OracleDrafter(std::vector<int32_t> prompt, std::vector<int32_t> ref, int32_t n_vocab, std::vector<int32_t> wrong)
        : m_prompt_size(prompt.size()), m_ref(std::move(ref)), m_n_vocab(n_vocab), m_wrong(std::move(wrong)) {}
    std::string name() const override { return "oracle"; }
    int32_t n_vocab() const override { return m_n_vocab; }
    void sync(std::span<const int32_t> committed) override { m_at = committed.size() - m_prompt_size; }
    int32_t truth(size_t i) const { return i < m_ref.size() ? m_ref[i] : 0; }
    int32_t guess(size_t at, int32_t pos) const {
        const bool bad = std::find(m_wrong.begin(), m_wrong.end(), pos) != m_wrong.end();
        return bad ? (truth(at) + 1) % m_n_vocab : truth(at);
    }
    drafts::DraftChain propose(int32_t k, const drafts::ProposeParams&, const CancelToken&) override {
        drafts::DraftChain c;
        for (int32_t i = 0; i < k; ++i)
            c.tokens.push_back(guess(m_at + static_cast<size_t>(i), i)), c.q.push_back(1.0f);
        return c;
    }
    drafts::DraftTree propose_tree(const drafts::TreeShape& shape, const drafts::ProposeParams&,
                                   const CancelToken&) override {
        // Only meaningful for chain-plus-correction shapes: rank 0 follows the guesses, rank 1 is the truth.
        const drafts::TreeShape e = engine::explicit_shape(shape);
        drafts::DraftTree t;
        for (size_t i = 0; i < e.parent.size(); ++i) {
            const int32_t par   = e.parent[i];
            const int32_t depth = par < 0 ? 1 : t.depth[static_cast<size_t>(par)] + 1;
            const size_t at     = m_at + static_cast<size_t>(depth) - 1;
            const int32_t tok   = e.rank[i] == 0   ? guess(at, depth - 1)
                                  : e.rank[i] == 1 ? truth(at)
                                                   : (truth(at) + 2) % m_n_vocab;
            t.tokens.push_back(tok), t.parent.push_back(par), t.depth.push_back(depth), t.rank.push_back(e.rank[i]);
            t.q.push_back(1.0f);
        }
        return t;
    }

private:
    size_t m_prompt_size;
    std::vector<int32_t> m_ref;
    int32_t m_n_vocab;
    std::vector<int32_t> m_wrong;
    size_t m_at = 0;
};

// Max-Gram over the committed context (no bigram table): near-zero cost, one-hot.
class ContextMaxGram : public drafts::Drafter {
public:
    explicit ContextMaxGram(int32_t n_vocab) : m_n_vocab(n_vocab) {}
    std::string name() const override { return "max-gram"; }
    int32_t n_vocab() const override { return m_n_vocab; }
    void sync(std::span<const int32_t> committed) override { m_ctx.assign(committed.begin(), committed.end()); }
    drafts::DraftChain propose(int32_t k, const drafts::ProposeParams&, const CancelToken&) override {
        drafts::DraftChain c;
        c.tokens = drafts::maxgram_propose(m_ctx, k, nullptr).tokens;
        c.q.assign(c.tokens.size(), 1.0f);
        return c;
    }
    drafts::DraftTree propose_tree(const drafts::TreeShape&, const drafts::ProposeParams&,
                                   const CancelToken&) override {
        throw std::logic_error("max-gram: no trees");
    }

private:
    int32_t m_n_vocab;
    std::vector<int32_t> m_ctx;
};

// The random-weight target of the lossless tests (4 layers), a prompt with repeats (so that Max-Gram has matches)
// and the target's own greedy continuation of it, built once per test executable.
struct LosslessFixture {
    inline static const std::vector<int32_t> kPrompt{5, 17, 3, 42, 17, 3, 42, 8, 60, 11};
    static constexpr int32_t kNew = 40;
    model::Model target           = model::make_synthetic_model(engine_target_spec());
    std::vector<int32_t> ref      = greedy_reference(target, kPrompt, kNew);
};
// Weights whose layers add nothing (attention output and FFN down zero, every expert's too) and whose final norm is
// one: with a tied head the model's greedy continuation repeats its last token, so drafts that predict a repeat
// (an echo head, n-gram lookups, another such model) are accepted.
inline void silence_layers(model::ModelWeights& w) {
    for (model::LayerWeights& L : w.layers)
        for (model::WeightView* v : {&L.wo, &L.w_down}) {
            std::vector<uint8_t> zero(size_t(v->rows * v->cols) * 4, 0);
            *v = model::make_owned_view(kernels::GgmlType::F32, v->rows, v->cols, std::move(zero));
        }
    w.output_norm.assign(w.output_norm.size(), 1.0f);
}
// One plain draft level of γ tokens for it: greedy, the exact (reference) path, no baseline.
inline engine::SpecConfig lossless_config(int32_t gamma = 4) {
    engine::SpecConfig c;
    c.levels.resize(1);
    c.gamma          = {gamma};
    c.max_new_tokens = LosslessFixture::kNew;
    c.context        = exact_ctx();
    c.baseline       = false;
    return c;
}
inline LosslessFixture& lossless_fixture() {
    static LosslessFixture f;
    return f;
}

}  // namespace speculum::test
