// ModelDrafter (see model_drafter.h): prefix sync, chain drafting by decode, tree drafting by masked batches.
#include "core/drafts/model_drafter.h"
#include "core/clock.h"

#include "core/drafts/draft_token.h"
#include "core/model/sampler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace speculum::drafts {

namespace {

using Clock = measure_clock;

void softmax(std::span<const float> logits, float temperature, std::vector<float>& p) {
    draft_softmax(logits, temperature, p);
}

// Token ids of the `count` most probable entries of p, most probable first (ties: smaller id).
std::vector<int32_t> top_tokens(const std::vector<float>& p, int32_t count) {
    std::vector<int32_t> order(p.size());
    std::iota(order.begin(), order.end(), 0);
    const size_t c = std::min(order.size(), static_cast<size_t>(count));
    std::partial_sort(
        order.begin(), order.begin() + static_cast<std::ptrdiff_t>(c), order.end(),
        [&](int32_t a, int32_t b) { return p[size_t(a)] > p[size_t(b)] || (p[size_t(a)] == p[size_t(b)] && a < b); });
    order.resize(c);
    return order;
}

}  // namespace

// ---- tree shapes ----

void tree_shape_nodes(const TreeShape& shape, std::vector<int32_t>& parent, std::vector<int32_t>& rank) {
    parent.clear();
    rank.clear();
    if (shape.dynamic_nodes < 0 || (shape.dynamic_nodes > 0 && (shape.explicit_form() || shape.branching.empty())))
        throw std::invalid_argument(
            "TreeShape.dynamic_nodes: a dynamic tree needs branching per depth and a node "
            "count > 0, got " +
            std::to_string(shape.dynamic_nodes));
    if (shape.explicit_form()) {
        if (!shape.branching.empty())
            throw std::invalid_argument("TreeShape: give either branching or parent/rank, not both");
        if (shape.rank.size() != shape.parent.size())
            throw std::invalid_argument("TreeShape: " + std::to_string(shape.rank.size()) + " ranks for " +
                                        std::to_string(shape.parent.size()) + " nodes");
        for (size_t i = 0; i < shape.parent.size(); ++i) {
            if (shape.parent[i] < -1 || shape.parent[i] >= static_cast<int32_t>(i))
                throw std::invalid_argument("TreeShape.parent[" + std::to_string(i) + "] = " +
                                            std::to_string(shape.parent[i]) + ": parents must come before children");
            if (shape.rank[i] < 0)
                throw std::invalid_argument("TreeShape.rank[" + std::to_string(i) + "] must be >= 0");
            for (size_t j = 0; j < i; ++j)
                if (shape.parent[j] == shape.parent[i] && shape.rank[j] == shape.rank[i])
                    throw std::invalid_argument("TreeShape: nodes " + std::to_string(j) + " and " + std::to_string(i) +
                                                " are the same child (parent and rank)");
        }
        parent = shape.parent;
        rank   = shape.rank;
        return;
    }
    std::vector<int32_t> level{-1};  // nodes of the current depth (-1: the root)
    size_t total = 0;
    for (size_t d = 0; d < shape.branching.size(); ++d) {
        if (shape.branching[d] < 1)
            throw std::invalid_argument("TreeShape.branching[" + std::to_string(d) + "] must be >= 1, got " +
                                        std::to_string(shape.branching[d]));
        total += level.size() * static_cast<size_t>(shape.branching[d]);
        if (total > 65536 && shape.dynamic_nodes <= 0) throw std::invalid_argument("TreeShape: more than 65536 nodes");
        std::vector<int32_t> next;
        for (int32_t p : level)
            for (int32_t r = 0; r < shape.branching[d]; ++r) {
                // A dynamic tree's stand-in: its first dynamic_nodes nodes breadth-first.
                if (shape.dynamic_nodes > 0 && static_cast<int32_t>(parent.size()) >= shape.dynamic_nodes) break;
                next.push_back(static_cast<int32_t>(parent.size()));
                parent.push_back(p);
                rank.push_back(r);
            }
        level.swap(next);
    }
}

// ---- construction ----

ModelDrafter::ModelDrafter(model::Model model, ModelDrafterConfig cfg)
    : ModelDrafter(model, std::move(cfg), ForwardCostModel::of(model)) {}

ModelDrafter::ModelDrafter(model::Model model, ModelDrafterConfig cfg, ForwardCostModel cost)
    : m_ctx(model, cfg.context),
      m_cfg(std::move(cfg)),
      m_cost(std::move(cost)),
      m_name(m_cfg.name.empty() ? model.name() : m_cfg.name) {
    const model::Hparams& hp = m_ctx.model().hparams();
    if (m_cost.attn_bytes.size() != size_t(hp.n_layer) || m_cost.ffn_bytes.size() != size_t(hp.n_layer))
        throw std::invalid_argument("ModelDrafter: cost model has " + std::to_string(m_cost.attn_bytes.size()) +
                                    " layers, the model " + std::to_string(hp.n_layer));
    // A bad skip set or exit layer is reported now rather than at the first pass.
    const model::ForwardOptions& o = m_cfg.forward;
    if ((!o.skip_attn.empty() && o.skip_attn.size() != size_t(hp.n_layer)) ||
        (!o.skip_ffn.empty() && o.skip_ffn.size() != size_t(hp.n_layer)) || o.exit_layer < -1 ||
        o.exit_layer >= hp.n_layer)
        throw std::invalid_argument("ModelDrafter: forward options do not fit a model of " +
                                    std::to_string(hp.n_layer) + " layers");
}

// ---- prefix sync ----

void ModelDrafter::sync(std::span<const int32_t> committed) {
    for (int32_t t : committed)
        if (t < 0 || t >= n_vocab())
            throw std::out_of_range("ModelDrafter::sync: token id " + std::to_string(t) + " outside [0, " +
                                    std::to_string(n_vocab()) + ")");
    size_t lcp = 0;
    while (lcp < m_cached.size() && lcp < committed.size() && m_cached[lcp] == committed[lcp]) ++lcp;
    if (lcp == committed.size() && lcp > 0) --lcp;  // the last token is re-evaluated for its logits
    // Reading the target's cache: slots this draft computed itself are replaced by the target's once it has them.
    if (m_target_kv && target_prefix(committed) > m_from_target) lcp = std::min(lcp, m_from_target);
    m_from_target = std::min(m_from_target, lcp);
    lcp           = size_t(m_ctx.kv().restorable(static_cast<int32_t>(lcp)));  // a hybrid's horizon (else lcp)
    m_ctx.kv().truncate(static_cast<int32_t>(lcp));
    m_ctx.kv().commit();  // drafts roll back to here at most
    m_cached.resize(lcp);
    m_committed.assign(committed.begin(), committed.end());
}

model::LogitsView ModelDrafter::pass(const std::vector<int32_t>& tokens, const std::vector<int32_t>& positions,
                                     const std::vector<uint8_t>& mask, DraftCost& cost) {
    const int32_t n        = static_cast<int32_t>(tokens.size());
    const int32_t n_cached = m_ctx.kv().size();
    uint64_t pairs         = static_cast<uint64_t>(n) * uint64_t(n_cached);
    if (mask.empty())
        pairs += uint64_t(n) * uint64_t(n + 1) / 2;
    else
        pairs += static_cast<uint64_t>(std::count_if(mask.begin(), mask.end(), [](uint8_t m) { return m != 0; }));
    model::LogitsView v = m_ctx.forward_batch(tokens, positions, mask, m_cfg.forward);
    cost += pass_cost(m_cost, m_ctx.model().hparams(), m_cfg.forward, n, n_cached, pairs, n);
    return v;
}

void ModelDrafter::attach_target_kv(const model::KvCache* kv, const std::vector<int32_t>* tokens) {
    const model::Hparams& hp = m_ctx.model().hparams();
    // A hybrid draft evaluates the prompt itself: its recurrent state cannot be copied out of the target's K/V rows.
    const bool fits = kv && tokens && !hp.hybrid() && kv->n_layer() == hp.n_layer && kv->n_embd_kv() == hp.n_embd_kv();
    m_target_kv     = m_cfg.read_target_kv && fits ? kv : nullptr;
    m_target_tokens = m_target_kv ? tokens : nullptr;
}

size_t ModelDrafter::target_prefix(std::span<const int32_t> committed) const {
    if (!m_target_kv || committed.empty()) return 0;
    const std::vector<int32_t>& t = *m_target_tokens;
    const size_t lim = std::min({t.size(), committed.size() - 1, static_cast<size_t>(m_target_kv->size())});
    size_t n         = 0;
    while (n < lim && t[n] == committed[n]) ++n;
    return n;
}

void ModelDrafter::copy_from_target(DraftCost& cost) {
    const size_t end = target_prefix(m_committed);
    if (end <= m_cached.size()) return;
    const int32_t start = static_cast<int32_t>(m_cached.size()), n = static_cast<int32_t>(end) - start;
    model::KvCache& kv = m_ctx.kv();
    kv.reserve_slots(n);
    const int32_t ekv = kv.n_embd_kv();
    for (int32_t il = 0; il < kv.n_layer(); ++il) {  // a layer's slots are contiguous rows
        std::copy_n(m_target_kv->k(il, start), size_t(n) * size_t(ekv), kv.k(il, start));
        std::copy_n(m_target_kv->v(il, start), size_t(n) * size_t(ekv), kv.v(il, start));
        if (m_cfg.forward.kv_transform) m_cfg.forward.kv_transform(il, kv.k(il, start), kv.v(il, start), n, ekv);
    }
    kv.grow(n);
    m_cached.insert(m_cached.end(), m_committed.begin() + start,
                    m_committed.begin() + static_cast<std::ptrdiff_t>(end));
    m_from_target = end;
    m_tokens_from_target += n;
    cost.bytes_kv += static_cast<uint64_t>(n) * kv.bytes_per_token();  // the target's rows, read once
}

model::LogitsView ModelDrafter::evaluate_until(size_t end, DraftCost& cost) {
    const int32_t nb = m_ctx.config().n_batch;
    model::LogitsView v{};
    while (m_cached.size() < end) {
        const size_t start = m_cached.size();
        const size_t n     = std::min(end - start, static_cast<size_t>(nb));
        std::vector<int32_t> toks(m_committed.begin() + static_cast<std::ptrdiff_t>(start),
                                  m_committed.begin() + static_cast<std::ptrdiff_t>(start + n));
        std::vector<int32_t> pos(n);
        std::iota(pos.begin(), pos.end(), static_cast<int32_t>(start));
        v = pass(toks, pos, {}, cost);
        m_cached.insert(m_cached.end(), toks.begin(), toks.end());
    }
    return v;
}

void ModelDrafter::catch_up(DraftCost& cost) {
    // A second propose without a sync: drop the previous call's draft tokens first.
    if (m_cached.size() >= m_committed.size()) sync(std::vector<int32_t>(m_committed));
    if (m_target_kv && m_cached.size() == m_from_target) copy_from_target(cost);
    const model::LogitsView v = evaluate_until(m_committed.size(), cost);
    if (v.n > 0) {  // sync leaves at least the last committed token to evaluate
        const auto last = v.row(v.n - 1);
        m_logits.assign(last.begin(), last.end());
    }
}

DraftCost ModelDrafter::prefill(std::span<const int32_t> committed, const CancelToken& cancel) {
    const auto t0 = Clock::now();
    DraftCost cost;
    sync(committed);
    if (m_committed.size() >= 2) {
        m_ctx.set_cancel(cancel);
        cancel.throw_if_cancelled();
        if (m_target_kv) copy_from_target(cost);  // the target has cached all but the last token
        evaluate_until(m_committed.size() - 1, cost);
    }
    cost.seconds = seconds_since(t0);
    return cost;
}

// ---- chain drafting ----

DraftChain ModelDrafter::propose(int32_t k, const ProposeParams& params, const CancelToken& cancel) {
    const auto t0 = Clock::now();
    DraftChain out;
    if (k < 0) throw std::invalid_argument("ModelDrafter::propose: k must be >= 0, got " + std::to_string(k));
    if (k == 0 || m_committed.empty()) return out;
    m_ctx.set_cancel(cancel);
    cancel.throw_if_cancelled();
    catch_up(out.cost);

    model::Sampler sampler(model::SamplerConfig{.temperature = params.temperature, .seed = params.seed});
    std::vector<float> dist;  // softmax(logits / T), T = 1 when greedy
    for (int32_t i = 0; i < k; ++i) {
        const int32_t tok = choose_draft_token(m_logits, params, sampler, dist, out);
        if (tok < 0) break;  // below p_min
        if (i + 1 == k) break;
        cancel.throw_if_cancelled();
        const int32_t pos = static_cast<int32_t>(m_cached.size());
        if (pos >= m_ctx.kv().capacity()) break;  // the draft's context is full: propose what we have
        model::LogitsView v = pass({tok}, {pos}, {}, out.cost);
        m_cached.push_back(tok);
        m_logits.assign(v.row(0).begin(), v.row(0).end());
    }
    out.cost.seconds = seconds_since(t0);
    return out;
}

// ---- tree drafting ----

DraftTree expand_draft_tree(const std::vector<int32_t>& parent, const std::vector<int32_t>& rank,
                            std::span<const float> root_logits, const ProposeParams& params,
                            const TreeNodeEval& evaluate, const CancelToken& cancel) {
    DraftTree tree;
    const int32_t n_nodes = static_cast<int32_t>(parent.size());
    const float temp      = params.temperature > 0.0f ? params.temperature : 1.0f;
    std::vector<int32_t> depth(static_cast<size_t>(n_nodes)), n_children(static_cast<size_t>(n_nodes), 0);
    int32_t max_depth = 0;
    for (int32_t i = 0; i < n_nodes; ++i) {
        depth[size_t(i)] = parent[size_t(i)] < 0 ? 1 : depth[size_t(parent[size_t(i)])] + 1;
        if (parent[size_t(i)] >= 0) ++n_children[size_t(parent[size_t(i)])];
        max_depth = std::max(max_depth, depth[size_t(i)]);
    }
    tree.tokens.assign(size_t(n_nodes), -1);
    tree.parent = parent;
    tree.depth  = depth;
    tree.rank   = rank;
    tree.q.assign(size_t(n_nodes), 0.0f);
    if (params.want_distributions) tree.q_dist.assign(size_t(n_nodes), {});

    // Children of a node whose distribution is `dist` take its top-ranked tokens.
    std::vector<float> dist;
    auto assign_children = [&](int32_t node) {
        int32_t max_rank = -1;
        for (int32_t i = 0; i < n_nodes; ++i)
            if (parent[size_t(i)] == node) max_rank = std::max(max_rank, rank[size_t(i)]);
        if (max_rank < 0) return;
        if (max_rank >= static_cast<int32_t>(dist.size()))
            throw std::invalid_argument("propose_tree: rank " + std::to_string(max_rank) + " exceeds the vocabulary");
        const std::vector<int32_t> top = top_tokens(dist, max_rank + 1);
        for (int32_t i = 0; i < n_nodes; ++i)
            if (parent[size_t(i)] == node) {
                tree.tokens[size_t(i)] = top[size_t(rank[size_t(i)])];
                tree.q[size_t(i)]      = dist[size_t(top[size_t(rank[size_t(i)])])];
            }
        if (params.want_distributions) (node < 0 ? tree.root_q_dist : tree.q_dist[size_t(node)]) = dist;
    };
    softmax(root_logits, temp, dist);
    assign_children(-1);

    // Depth d: evaluate the depth-d nodes that have children, with their ancestors (whose KV the pass needs).
    std::vector<std::vector<float>> logits;
    for (int32_t d = 1; d < max_depth; ++d) {
        std::vector<uint8_t> need(size_t(n_nodes), 0);
        bool any = false;
        for (int32_t i = 0; i < n_nodes; ++i)
            if (depth[size_t(i)] == d && n_children[size_t(i)] > 0) {
                any = true;
                for (int32_t a = i; a >= 0 && !need[size_t(a)]; a = parent[size_t(a)]) need[size_t(a)] = 1;
            }
        if (!any) continue;
        cancel.throw_if_cancelled();
        std::vector<int32_t> nodes, parents, toks, depths, slot(size_t(n_nodes), -1);
        for (int32_t i = 0; i < n_nodes; ++i)
            if (need[size_t(i)]) {
                slot[size_t(i)] = static_cast<int32_t>(nodes.size());
                nodes.push_back(i);
                parents.push_back(parent[size_t(i)]);
                toks.push_back(tree.tokens[size_t(i)]);
                depths.push_back(depth[size_t(i)]);
            }
        const size_t m = nodes.size();
        std::vector<uint8_t> mask(m * m, 0);
        for (size_t r = 0; r < m; ++r)
            for (int32_t a = nodes[r]; a >= 0; a = parent[size_t(a)]) mask[r * m + size_t(slot[size_t(a)])] = 1;
        if (!evaluate(nodes, parents, toks, depths, mask, logits)) break;  // the deeper nodes stay unfilled
        for (size_t r = 0; r < m; ++r) {
            const int32_t node = nodes[r];
            if (depth[size_t(node)] != d || n_children[size_t(node)] == 0) continue;
            softmax(logits[r], temp, dist);
            assign_children(node);
        }
    }

    // Nodes left unfilled are dropped with their subtrees; indices are renumbered.
    if (std::find(tree.tokens.begin(), tree.tokens.end(), -1) != tree.tokens.end()) {
        DraftTree kept;
        kept.root_q_dist = std::move(tree.root_q_dist);
        std::vector<int32_t> remap(size_t(n_nodes), -1);
        for (int32_t i = 0; i < n_nodes; ++i) {
            const int32_t p = parent[size_t(i)];
            if (tree.tokens[size_t(i)] < 0 || (p >= 0 && remap[size_t(p)] < 0)) continue;
            remap[size_t(i)] = kept.size();
            kept.tokens.push_back(tree.tokens[size_t(i)]);
            kept.parent.push_back(p < 0 ? -1 : remap[size_t(p)]);
            kept.depth.push_back(depth[size_t(i)]);
            kept.rank.push_back(rank[size_t(i)]);
            kept.q.push_back(tree.q[size_t(i)]);
            if (params.want_distributions) kept.q_dist.push_back(std::move(tree.q_dist[size_t(i)]));
        }
        tree = std::move(kept);
    }
    return tree;
}

DraftTree expand_dynamic_tree(const std::vector<int32_t>& branching, int32_t n_keep, std::span<const float> root_logits,
                              const ProposeParams& params, const TreeNodeEval& evaluate, const CancelToken& cancel) {
    struct Node {
        int32_t parent, depth, rank, token;
        float q;
        double logp;  // log of the path probability
    };
    std::vector<Node> all;
    std::vector<std::vector<float>> dists;  // per node, the distribution its children were drawn from (asked for)
    std::vector<float> dist, root_dist;
    const float temp = params.temperature > 0.0f ? params.temperature : 1.0f;
    // Appends the top-k tokens of `dist` as children of `node` and returns their numbers.
    auto add_children = [&](int32_t node, int32_t k, int32_t depth, double logp) {
        std::vector<int32_t> made;
        const std::vector<int32_t> top = top_tokens(dist, std::min<int32_t>(k, int32_t(dist.size())));
        for (size_t r = 0; r < top.size(); ++r) {
            const float q = dist[size_t(top[r])];
            made.push_back(int32_t(all.size()));
            all.push_back({node, depth, int32_t(r), top[r], q, logp + std::log(std::max(q, 1e-30f))});
        }
        return made;
    };
    if (branching.empty() || n_keep <= 0) return {};
    softmax(root_logits, temp, dist);
    if (params.want_distributions) root_dist = dist;
    std::vector<int32_t> frontier = add_children(-1, branching[0], 1, 0.0);
    auto by_logp                  = [&](int32_t a, int32_t b) {
        const Node &x = all[size_t(a)], &y = all[size_t(b)];
        if (x.logp != y.logp) return x.logp > y.logp;
        return x.depth != y.depth ? x.depth < y.depth : a < b;
    };
    std::vector<std::vector<float>> logits;
    for (size_t d = 1; d < branching.size() && !frontier.empty(); ++d) {
        // The most probable nodes of the deepest level are expanded, with their ancestors in the pass.
        std::sort(frontier.begin(), frontier.end(), by_logp);
        frontier.resize(std::min(frontier.size(), size_t(branching[d])));
        std::vector<uint8_t> need(all.size(), 0), expand(all.size(), 0);
        for (int32_t f : frontier) {
            expand[size_t(f)] = 1;
            for (int32_t a = f; a >= 0 && !need[size_t(a)]; a = all[size_t(a)].parent) need[size_t(a)] = 1;
        }
        cancel.throw_if_cancelled();
        std::vector<int32_t> nodes, parents, toks, depths, slot(all.size(), -1);
        for (size_t i = 0; i < all.size(); ++i)
            if (need[i]) {  // numbers grow with depth: parents come first
                slot[i] = int32_t(nodes.size());
                nodes.push_back(int32_t(i));
                parents.push_back(all[i].parent);
                toks.push_back(all[i].token);
                depths.push_back(all[i].depth);
            }
        const size_t m = nodes.size();
        std::vector<uint8_t> mask(m * m, 0);
        for (size_t r = 0; r < m; ++r)
            for (int32_t a = nodes[r]; a >= 0; a = all[size_t(a)].parent) mask[r * m + size_t(slot[size_t(a)])] = 1;
        if (!evaluate(nodes, parents, toks, depths, mask, logits)) break;
        std::vector<int32_t> next;
        for (size_t r = 0; r < m; ++r) {
            const int32_t node = nodes[r];
            if (!expand[size_t(node)]) continue;
            softmax(logits[r], temp, dist);
            if (params.want_distributions) {
                if (dists.size() <= size_t(node)) dists.resize(size_t(node) + 1);
                dists[size_t(node)] = dist;
            }
            const std::vector<int32_t> made = add_children(node, branching[d], int32_t(d) + 1, all[size_t(node)].logp);
            next.insert(next.end(), made.begin(), made.end());
        }
        frontier.swap(next);
    }

    // Re-rank: the n_keep most probable paths, in the order they were made (parents first).
    std::vector<int32_t> order(all.size());
    for (size_t i = 0; i < all.size(); ++i) order[i] = int32_t(i);
    std::sort(order.begin(), order.end(), by_logp);
    std::vector<uint8_t> keep(all.size(), 0);
    for (size_t i = 0; i < order.size() && i < size_t(n_keep); ++i) keep[size_t(order[i])] = 1;
    DraftTree tree;
    tree.root_q_dist = std::move(root_dist);
    std::vector<int32_t> remap(all.size(), -1), children(all.size(), 0);
    for (size_t i = 0; i < all.size(); ++i) {
        const Node& n = all[i];
        if (!keep[i] || (n.parent >= 0 && remap[size_t(n.parent)] < 0)) continue;
        remap[i] = tree.size();
        if (n.parent >= 0) ++children[size_t(n.parent)];
        tree.tokens.push_back(n.token);
        tree.parent.push_back(n.parent < 0 ? -1 : remap[size_t(n.parent)]);
        tree.depth.push_back(n.depth);
        tree.rank.push_back(n.rank);
        tree.q.push_back(n.q);
    }
    if (params.want_distributions) {  // a node with children keeps the distribution they were drawn from
        tree.q_dist.assign(size_t(tree.size()), {});
        for (size_t i = 0; i < all.size(); ++i)
            if (remap[i] >= 0 && children[i] > 0 && i < dists.size()) tree.q_dist[size_t(remap[i])] = dists[i];
    }
    return tree;
}

DraftTree ModelDrafter::propose_tree(const TreeShape& shape, const ProposeParams& params, const CancelToken& cancel) {
    const auto t0 = Clock::now();
    DraftTree tree;
    std::vector<int32_t> parent, rank;
    tree_shape_nodes(shape, parent, rank);
    const int32_t n_nodes = static_cast<int32_t>(parent.size());
    if (n_nodes == 0 || m_committed.empty()) return tree;
    if (n_nodes > m_ctx.config().n_batch)
        throw std::invalid_argument("ModelDrafter::propose_tree: " + std::to_string(n_nodes) +
                                    " nodes exceed the draft context's batch of " +
                                    std::to_string(m_ctx.config().n_batch) + " (ContextConfig.n_batch)");
    m_ctx.set_cancel(cancel);
    cancel.throw_if_cancelled();
    DraftCost cost;
    catch_up(cost);
    // Each evaluation runs after the committed context only; the tree's slots are dropped again afterwards.
    const int32_t n_ctx_tokens = static_cast<int32_t>(m_cached.size());
    auto evaluate              = [&](const std::vector<int32_t>& nodes, const std::vector<int32_t>&,
                        const std::vector<int32_t>& toks, const std::vector<int32_t>& depths,
                        const std::vector<uint8_t>& mask, std::vector<std::vector<float>>& logits) {
        if (static_cast<int32_t>(nodes.size()) > m_ctx.config().n_batch) return false;
        std::vector<int32_t> pos;
        for (int32_t d : depths) pos.push_back(n_ctx_tokens + d - 1);
        if (pos.back() >= m_ctx.kv().capacity() ||
            n_ctx_tokens + static_cast<int32_t>(nodes.size()) > m_ctx.kv().capacity())
            return false;  // no room for this level in the draft's context
        m_ctx.kv().truncate(n_ctx_tokens);
        const model::LogitsView v = pass(toks, pos, mask, cost);
        logits.resize(nodes.size());
        for (size_t r = 0; r < nodes.size(); ++r) logits[r].assign(v.row(int32_t(r)).begin(), v.row(int32_t(r)).end());
        return true;
    };
    tree = shape.dynamic_nodes > 0
               ? expand_dynamic_tree(shape.branching, shape.dynamic_nodes, m_logits, params, evaluate, cancel)
               : expand_draft_tree(parent, rank, m_logits, params, evaluate, cancel);
    m_ctx.kv().truncate(n_ctx_tokens);
    tree.cost         = cost;
    tree.cost.seconds = seconds_since(t0);
    return tree;
}

}  // namespace speculum::drafts
