// SuffixTree (see suffix_tree.h).
#include "core/drafts/suffix_tree.h"

#include <algorithm>
#include <cmath>
#include <queue>
#include <stdexcept>
#include <string>

namespace speculum::drafts {

namespace {

uint64_t edge_key(int32_t node, int32_t token) {
    return (uint64_t(uint32_t(node)) << 32) | uint32_t(token);
}

}  // namespace

SuffixTree::SuffixTree(int32_t max_depth) : m_max_depth(max_depth) {
    if (max_depth < 2)
        throw std::invalid_argument("SuffixTree: max_depth must be >= 2, got " + std::to_string(max_depth));
    clear();
}

void SuffixTree::clear() {
    m_nodes.assign(1, Node{});
    m_children.clear();
    m_seqs.clear();
}

int32_t SuffixTree::child(int32_t node, int32_t token) const {
    const auto it = m_children.find(edge_key(node, token));
    return it == m_children.end() ? -1 : it->second;
}

int32_t SuffixTree::child_or_add(int32_t node, int32_t token) {
    const auto [it, added] = m_children.try_emplace(edge_key(node, token), int32_t(m_nodes.size()));
    if (added) {
        Node n;
        n.token                           = token;
        n.next                            = m_nodes[size_t(node)].first_child;
        m_nodes[size_t(node)].first_child = it->second;
        m_nodes.push_back(n);
    }
    return it->second;
}

void SuffixTree::append(int32_t seq, int32_t token) {
    Seq& s = m_seqs[seq];
    s.tokens.push_back(token);
    ++m_nodes[0].count;
    // Every suffix still shorter than max_depth grows by the token; a new one starts with it. The suffix that
    // started max_depth - 1 tokens ago reaches max_depth and stops growing.
    std::vector<int32_t> next;
    next.reserve(s.active.size() + 1);
    const size_t first = s.active.size() + 1 >= size_t(m_max_depth) ? 1 : 0;  // the oldest reached the depth
    for (size_t i = 0; i < s.active.size(); ++i) {
        const int32_t c = child_or_add(s.active[i], token);
        ++m_nodes[size_t(c)].count;
        if (i >= first) next.push_back(c);
    }
    const int32_t c = child_or_add(0, token);
    ++m_nodes[size_t(c)].count;
    next.push_back(c);
    s.active = std::move(next);
}

void SuffixTree::append(int32_t seq, std::span<const int32_t> tokens) {
    for (int32_t t : tokens) append(seq, t);
}

void SuffixTree::remove(int32_t seq) {
    const auto it = m_seqs.find(seq);
    if (it == m_seqs.end()) return;
    const std::vector<int32_t>& t = it->second.tokens;
    m_nodes[0].count -= int64_t(t.size());
    for (size_t i = 0; i < t.size(); ++i) {
        int32_t node = 0;
        for (size_t j = i; j < t.size() && j - i < size_t(m_max_depth); ++j) {
            node = child(node, t[j]);
            --m_nodes[size_t(node)].count;
        }
    }
    m_seqs.erase(it);
}

SuffixDraft SuffixTree::draft_from(int32_t node, int32_t budget, float min_prob, bool tree,
                                   int32_t max_tree_depth) const {
    SuffixDraft d;
    auto best_child = [&](int32_t at) {
        int32_t best = -1;
        for (int32_t c = m_nodes[size_t(at)].first_child; c >= 0; c = m_nodes[size_t(c)].next) {
            const Node& n = m_nodes[size_t(c)];
            if (n.count <= 0) continue;
            if (best < 0 || n.count > m_nodes[size_t(best)].count ||
                (n.count == m_nodes[size_t(best)].count && n.token < m_nodes[size_t(best)].token))
                best = c;
        }
        return best;
    };
    if (!tree) {
        double prob = 1.0;
        int32_t at  = node;
        while (int32_t(d.tokens.size()) < budget) {
            const int32_t c = best_child(at);
            if (c < 0) break;
            const double p = prob * double(m_nodes[size_t(c)].count) / double(m_nodes[size_t(at)].count);
            if (p < min_prob) break;
            d.tokens.push_back(m_nodes[size_t(c)].token);
            d.parent.push_back(int32_t(d.tokens.size()) - 2);
            d.prob.push_back(float(p));
            d.score += p;
            prob = p, at = c;
        }
        return d;
    }
    // Best-first: the most probable frontier node next (ties: the one pushed first).
    struct Item {
        double prob;
        int64_t order;
        int32_t node, parent, depth;
        bool operator<(const Item& o) const { return prob != o.prob ? prob < o.prob : order > o.order; }
    };
    std::priority_queue<Item> heap;
    int64_t order      = 0;
    auto push_children = [&](int32_t at, double prob, int32_t parent, int32_t depth) {
        if (depth > max_tree_depth) return;
        std::vector<int32_t> kids;
        for (int32_t c = m_nodes[size_t(at)].first_child; c >= 0; c = m_nodes[size_t(c)].next)
            if (m_nodes[size_t(c)].count > 0) kids.push_back(c);
        std::sort(kids.begin(), kids.end(), [&](int32_t a, int32_t b) {
            const Node &x = m_nodes[size_t(a)], &y = m_nodes[size_t(b)];
            return x.count != y.count ? x.count > y.count : x.token < y.token;
        });
        for (int32_t c : kids) {
            const double p = prob * double(m_nodes[size_t(c)].count) / double(m_nodes[size_t(at)].count);
            if (p >= min_prob) heap.push({p, order++, c, parent, depth});
        }
    };
    push_children(node, 1.0, -1, 1);
    while (!heap.empty() && int32_t(d.tokens.size()) < budget) {
        const Item it = heap.top();
        heap.pop();
        d.tokens.push_back(m_nodes[size_t(it.node)].token);
        d.parent.push_back(it.parent);
        d.prob.push_back(float(it.prob));
        d.score += it.prob;
        push_children(it.node, it.prob, int32_t(d.tokens.size()) - 1, it.depth + 1);
    }
    return d;
}

SuffixDraft SuffixTree::speculate(std::span<const int32_t> context, int32_t max_tokens, float alpha, float min_prob,
                                  bool tree, int32_t max_tree_depth) const {
    SuffixDraft best;
    if (context.empty() || max_tokens <= 0) return best;
    const size_t n                     = std::min(context.size(), size_t(m_max_depth));
    const std::span<const int32_t> ctx = context.subspan(context.size() - n);
    int32_t node                       = 0;
    for (size_t p = 1; p < n; ++p) {  // the last p tokens; a longer match exists only if the shorter one does
        node = 0;
        for (size_t i = n - p; i < n && node >= 0; ++i) {
            node = child(node, ctx[i]);
            if (node >= 0 && m_nodes[size_t(node)].count <= 0) node = -1;
        }
        if (node < 0) break;
        const int32_t budget = std::min(max_tokens, int32_t(std::floor(double(alpha) * double(p))));
        if (budget <= 0) continue;
        SuffixDraft d = draft_from(node, budget, min_prob, tree, max_tree_depth);
        // Equal scores: the longer match wins, as both Arctic Inference versions decide (>=, matches tried shortest
        // first).
        if (d.score > 0 && d.score >= best.score) {
            d.match_len = int32_t(p);
            best        = std::move(d);
        }
    }
    return best;
}

SuffixDraft suffix_speculate(const SuffixTree& local, const SuffixTree* global, std::span<const int32_t> context,
                             int32_t max_tokens, float alpha, float min_prob, bool tree, int32_t max_tree_depth) {
    SuffixDraft a = local.speculate(context, max_tokens, alpha, min_prob, tree, max_tree_depth);
    if (!global) return a;
    SuffixDraft b = global->speculate(context, max_tokens, alpha, min_prob, tree, max_tree_depth);
    return a.score >= b.score ? a : b;
}

}  // namespace speculum::drafts
