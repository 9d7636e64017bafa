// Level tags, vertical and horizontal cascades, and the builder of a config's draft stack.
#include "core/engine/cascade.h"
#include "core/clock.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace speculum::engine {

namespace {
using clock = measure_clock;
double since(clock::time_point t0) {
    return seconds_since(t0);
}

void ensure_level(std::vector<LevelStats>& levels, int32_t level) {
    if (levels.size() <= static_cast<size_t>(level)) levels.resize(static_cast<size_t>(level) + 1);
    levels[static_cast<size_t>(level)].level = level;
}

void add_into(LevelStats& to, const LevelStats& s) {
    if (to.name.empty()) to.name = s.name;
    to.n_calls += s.n_calls;
    to.n_forward += s.n_forward;
    to.t_s += s.t_s;
    to.t_prefill_s += s.t_prefill_s;
    to.bytes_weights += s.bytes_weights;
    to.bytes_kv += s.bytes_kv;
    to.flops += s.flops;
    to.bytes_modeled    = to.bytes_modeled || s.bytes_modeled;
    to.bytes_kv_modeled = to.bytes_kv_modeled || s.bytes_kv_modeled;
    to.n_reviewed += s.n_reviewed;
    to.n_review_accepted += s.n_review_accepted;
}
}  // namespace

// ---- LevelDrafter ----

LevelDrafter::LevelDrafter(std::shared_ptr<drafts::Drafter> inner, int32_t level, std::string name)
    : m_inner(std::move(inner)), m_level(level) {
    if (!m_inner) throw std::invalid_argument("LevelDrafter: no drafter");
    m_stats.level = level;
    m_stats.name  = name.empty() ? m_inner->name() : std::move(name);
}

void LevelDrafter::reset_stats() {
    std::string name = std::move(m_stats.name);
    m_stats          = {};
    m_stats.level    = m_level;
    m_stats.name     = std::move(name);
}

void LevelDrafter::add(const drafts::DraftCost& c) {
    ++m_stats.n_calls;
    m_stats.n_forward += c.n_forward;
    m_stats.t_s += c.seconds;
    m_stats.bytes_weights += c.bytes_weights;
    m_stats.bytes_kv += c.bytes_kv;
    m_stats.flops += c.flops;
    m_stats.bytes_modeled    = m_stats.bytes_modeled || c.bytes_modeled;
    m_stats.bytes_kv_modeled = m_stats.bytes_kv_modeled || c.bytes_kv_modeled;
}

drafts::DraftCost LevelDrafter::prefill(std::span<const int32_t> committed, const CancelToken& cancel) {
    m_committed.assign(committed.begin(), committed.end());
    const auto t0          = clock::now();
    drafts::DraftCost cost = m_inner->prefill(committed, cancel);
    if (cost.seconds <= 0.0) cost.seconds = since(t0);
    m_stats.t_prefill_s += cost.seconds;
    return cost;
}

drafts::DraftChain LevelDrafter::propose(int32_t k, const drafts::ProposeParams& params, const CancelToken& cancel) {
    if (m_block <= 1) return propose_once(k, params, cancel);
    drafts::DraftChain out = propose_once(m_block, params, cancel);
    while (static_cast<int32_t>(out.tokens.size()) < k) {
        cancel.throw_if_cancelled();
        std::vector<int32_t> ctx = m_committed;
        ctx.insert(ctx.end(), out.tokens.begin(), out.tokens.end());
        m_inner->sync(ctx);
        drafts::DraftChain more = propose_once(m_block, params, cancel);
        if (more.tokens.empty()) break;  // the drafter knows nothing more
        const size_t n = more.tokens.size();
        out.tokens.insert(out.tokens.end(), more.tokens.begin(), more.tokens.end());
        out.q.insert(out.q.end(), more.q.begin(), more.q.begin() + static_cast<std::ptrdiff_t>(n));
        out.source.insert(out.source.end(), more.source.begin(), more.source.end());
        if (out.confidence.size() + n == out.tokens.size() && more.confidence.size() == n)
            out.confidence.insert(out.confidence.end(), more.confidence.begin(), more.confidence.end());
        else
            out.confidence.clear();
        if (!out.q_dist.empty() && more.q_dist.size() == n)
            out.q_dist.insert(out.q_dist.end(), more.q_dist.begin(), more.q_dist.end());
        else
            out.q_dist.clear();
        out.cost += more.cost;
    }
    return out;
}

drafts::DraftChain LevelDrafter::propose_once(int32_t k, const drafts::ProposeParams& params,
                                              const CancelToken& cancel) {
    const auto t0            = clock::now();
    drafts::DraftChain chain = m_inner->propose(k, params, cancel);
    // Drafters that do not time themselves still get wall time here.
    if (chain.cost.seconds <= 0.0) chain.cost.seconds = since(t0);
    add(chain.cost);
    chain.source.assign(chain.tokens.size(), static_cast<uint8_t>(m_level));
    if (chain.q.size() < chain.tokens.size()) chain.q.resize(chain.tokens.size(), 1.0f);
    return chain;
}

drafts::DraftTree LevelDrafter::propose_tree(const drafts::TreeShape& shape, const drafts::ProposeParams& params,
                                             const CancelToken& cancel) {
    const auto t0          = clock::now();
    drafts::DraftTree tree = m_inner->propose_tree(shape, params, cancel);
    if (tree.cost.seconds <= 0.0) tree.cost.seconds = since(t0);
    add(tree.cost);
    return tree;
}

void LevelDrafter::collect(std::vector<LevelStats>& levels) const {
    ensure_level(levels, m_level);
    add_into(levels[static_cast<size_t>(m_level)], m_stats);
}

// ---- CascadeDrafter ----

CascadeDrafter::CascadeDrafter(const model::Model& model, model::ContextConfig ctx, model::ForwardOptions opts,
                               std::shared_ptr<CompositeDrafter> lower, int32_t level, int32_t inner_gamma,
                               float lenience, std::string name, std::optional<drafts::ForwardCostModel> cost)
    : m_reviewer(model, ctx, std::move(opts), std::move(cost)),
      m_lower(std::move(lower)),
      m_level(level),
      m_inner_gamma(inner_gamma),
      m_lenience(lenience),
      m_name(std::move(name)) {
    if (!m_lower) throw std::invalid_argument("CascadeDrafter: no lower drafter");
    if (m_inner_gamma < 1) throw std::invalid_argument("CascadeDrafter: inner draft length must be >= 1");
    if (m_lower->n_vocab() > n_vocab())
        throw std::invalid_argument("CascadeDrafter: level " + std::to_string(level + 1) +
                                    " has a larger vocabulary (" + std::to_string(m_lower->n_vocab()) +
                                    ") than level " + std::to_string(level));
    m_stats.level = level;
    m_stats.name  = m_name;
}

drafts::DraftCost CascadeDrafter::prefill(std::span<const int32_t> committed, const CancelToken& cancel) {
    m_committed.assign(committed.begin(), committed.end());
    drafts::DraftCost cost         = m_lower->prefill(committed, cancel);
    const auto t0                  = clock::now();
    const drafts::DraftCost before = m_reviewer.cost();
    m_reviewer.sync(committed, cancel);
    // propose() takes its own counters as the reviewer's totals less those at reset: the prompt's passes move the
    // reset point, so they stay out of them.
    const drafts::DraftCost& after = m_reviewer.cost();
    drafts::DraftCost own;
    own.bytes_weights = after.bytes_weights - before.bytes_weights;
    own.bytes_kv      = after.bytes_kv - before.bytes_kv;
    own.flops         = after.flops - before.flops;
    own.n_forward     = after.n_forward - before.n_forward;
    own.seconds       = since(t0);
    m_cost_at_reset.bytes_weights += own.bytes_weights;
    m_cost_at_reset.bytes_kv += own.bytes_kv;
    m_cost_at_reset.flops += own.flops;
    m_cost_at_reset.n_forward += own.n_forward;
    m_stats.t_prefill_s += own.seconds;
    cost += own;
    return cost;
}

drafts::DraftChain CascadeDrafter::propose(int32_t k, const drafts::ProposeParams& params, const CancelToken& cancel) {
    const auto t0 = clock::now();
    ++m_stats.n_calls;
    drafts::DraftChain out;
    std::vector<int32_t> ctx = m_committed;
    double t_lower           = 0.0;
    const drafts::ProposeParams lower_params{};  // the levels below draft greedily, without early stop
    bool stop = false;
    while (!stop && static_cast<int32_t>(out.tokens.size()) < k) {
        // One speculative step of this level's model: the level below drafts, this model reviews the draft in one
        // pass and commits the accepted prefix plus its own next token. Never more than k tokens in all.
        cancel.throw_if_cancelled();
        const int32_t g =
            m_threshold ? m_inner_gamma : std::min(m_inner_gamma, k - static_cast<int32_t>(out.tokens.size()) - 1);
        drafts::DraftChain low;
        if (g > 0) {
            m_lower->sync(ctx);
            low = m_lower->propose(g, lower_params, cancel);
            if (!m_threshold && static_cast<int32_t>(low.tokens.size()) > g) low.tokens.resize(static_cast<size_t>(g));
            t_lower += low.cost.seconds;
            out.cost += low.cost;
        }
        cancel.throw_if_cancelled();
        m_reviewer.sync(ctx, cancel);
        const model::LogitsView logits = m_reviewer.score_chain(ctx, low.tokens);
        // Lenience compares with the proposing model's real probability of each token: a greedy neural leaf reports
        // q = 1 (its draft is one-hot) and its softmax probability as confidence; Max-Gram's is 1 either way.
        const std::vector<float>& q_lenient =
            low.confidence.size() >= low.tokens.size() && !low.tokens.empty() ? low.confidence : low.q;
        const ChainVerdict v = verify_chain_greedy(low.tokens, logits, q_lenient, m_lenience);
        m_reviewer.keep_chain(v.n_accepted);
        m_stats.n_reviewed += static_cast<int64_t>(low.tokens.size());
        m_stats.n_review_accepted += v.n_accepted;
        for (int32_t j = 0; j <= v.n_accepted && !stop; ++j) {
            const bool own    = j == v.n_accepted;
            const int32_t tok = own ? v.next_token : low.tokens[static_cast<size_t>(j)];
            const float q     = static_cast<float>(softmax_at(logits.row(j), tok));
            // llama.cpp's --draft-p-min: stop at the first token this level is not confident about.
            if (params.p_min > 0.0f && q < params.p_min) {
                stop = true;
                break;
            }
            out.tokens.push_back(tok);
            out.q.push_back(q);
            out.confidence.push_back(q);
            out.source.push_back(own ? static_cast<uint8_t>(m_level) : low.source.at(static_cast<size_t>(j)));
            ctx.push_back(tok);
        }
    }
    const drafts::DraftCost& rc = m_reviewer.cost();
    drafts::DraftCost own;
    own.bytes_weights = rc.bytes_weights - m_cost_at_reset.bytes_weights - m_stats.bytes_weights;
    own.bytes_kv      = rc.bytes_kv - m_cost_at_reset.bytes_kv - m_stats.bytes_kv;
    own.flops         = rc.flops - m_cost_at_reset.flops - m_stats.flops;
    own.n_forward     = rc.n_forward - m_cost_at_reset.n_forward - static_cast<int32_t>(m_stats.n_forward);
    own.seconds       = since(t0) - t_lower;
    m_stats.bytes_weights += own.bytes_weights;
    m_stats.bytes_kv += own.bytes_kv;
    m_stats.flops += own.flops;
    m_stats.n_forward += own.n_forward;
    m_stats.t_s += own.seconds;
    out.cost += own;
    return out;
}

drafts::DraftTree CascadeDrafter::propose_tree(const drafts::TreeShape&, const drafts::ProposeParams&,
                                               const CancelToken&) {
    throw std::logic_error("CascadeDrafter: token trees are expanded by a single draft level, not by a cascade");
}

void CascadeDrafter::collect(std::vector<LevelStats>& levels) const {
    ensure_level(levels, m_level);
    add_into(levels[static_cast<size_t>(m_level)], m_stats);
    m_lower->collect(levels);
}

void CascadeDrafter::reset_stats() {
    m_stats         = {};
    m_stats.level   = m_level;
    m_stats.name    = m_name;
    m_cost_at_reset = m_reviewer.cost();
    m_lower->reset_stats();
}

// ---- HorizontalDrafter ----

HorizontalDrafter::HorizontalDrafter(std::vector<std::shared_ptr<CompositeDrafter>> segments,
                                     std::vector<int32_t> counts)
    : m_segments(std::move(segments)), m_counts(std::move(counts)) {
    if (m_segments.empty() || m_segments.size() != m_counts.size())
        throw std::invalid_argument("HorizontalDrafter: one count per segment is needed");
}

std::string HorizontalDrafter::name() const {
    std::string s = "horizontal(";
    for (size_t i = 0; i < m_segments.size(); ++i)
        s += (i ? ", " : "") + m_segments[i]->name() + " x" + std::to_string(m_counts[i]);
    return s + ")";
}

drafts::DraftCost HorizontalDrafter::prefill(std::span<const int32_t> committed, const CancelToken& cancel) {
    m_committed.assign(committed.begin(), committed.end());
    drafts::DraftCost cost;
    for (const auto& s : m_segments) cost += s->prefill(committed, cancel);
    return cost;
}

drafts::DraftChain HorizontalDrafter::propose(int32_t k, const drafts::ProposeParams& params,
                                              const CancelToken& cancel) {
    // Early positions come from the stronger drafters, later ones from the cheaper ones (CS Drafting, Sec. 3.2):
    // each segment continues after everything drafted so far.
    drafts::DraftChain out;
    std::vector<int32_t> ctx = m_committed;
    int32_t threshold        = 0;  // cumulative, threshold mode
    for (size_t s = 0; s < m_segments.size(); ++s) {
        threshold += m_counts[s];
        const int32_t have = static_cast<int32_t>(out.tokens.size());
        const int32_t want = m_threshold ? threshold - have : std::min(m_counts[s], k - have);
        if (want <= 0) continue;
        cancel.throw_if_cancelled();
        m_segments[s]->sync(ctx);
        drafts::DraftChain seg = m_segments[s]->propose(want, params, cancel);
        // Threshold mode keeps the overshoot: the segment's last call may end past the threshold.
        const size_t n = m_threshold ? seg.tokens.size() : std::min(seg.tokens.size(), static_cast<size_t>(want));
        for (size_t i = 0; i < n; ++i) {
            out.tokens.push_back(seg.tokens[i]);
            out.q.push_back(i < seg.q.size() ? seg.q[i] : 1.0f);
            out.confidence.push_back(i < seg.confidence.size() ? seg.confidence[i] : out.q.back());
            out.source.push_back(i < seg.source.size() ? seg.source[i] : 0);
            ctx.push_back(seg.tokens[i]);
        }
        out.cost += seg.cost;
    }
    return out;
}

drafts::DraftTree HorizontalDrafter::propose_tree(const drafts::TreeShape&, const drafts::ProposeParams&,
                                                  const CancelToken&) {
    throw std::logic_error("HorizontalDrafter: a horizontal cascade drafts chains, not trees");
}

void HorizontalDrafter::collect(std::vector<LevelStats>& levels) const {
    for (const auto& s : m_segments) s->collect(levels);
}

void HorizontalDrafter::reset_stats() {
    for (const auto& s : m_segments) s->reset_stats();
}

// ---- builder ----

int32_t threshold_block(const SpecConfig& cfg, int32_t level) {
    if (cfg.length_mode != LengthMode::threshold || level < 1 || static_cast<size_t>(level) > cfg.levels.size())
        return 0;
    return drafts::is_statistical(cfg.levels[static_cast<size_t>(level) - 1].kind) ? cfg.maxgram_block : 0;
}

namespace {

struct StackBuilder {
    const SpecConfig& cfg;
    const std::vector<LevelMaterial>& mat;
    int32_t n;  // draft levels

    // Row `reviewer` of the k-matrix: positions filled by each level j > reviewer.
    std::vector<int32_t> row(int32_t reviewer) const {
        std::vector<int32_t> r(static_cast<size_t>(n) + 1, 0);
        if (!cfg.k_matrix.empty()) return cfg.k_matrix[static_cast<size_t>(reviewer)];
        if (reviewer < n) r[static_cast<size_t>(reviewer) + 1] = cfg.gamma[static_cast<size_t>(reviewer)];
        return r;
    }

    // Level j as a drafter: a cascade when it has a model and drafters below it, else a leaf.
    std::shared_ptr<CompositeDrafter> level(int32_t j) const {
        const LevelMaterial& m = mat[static_cast<size_t>(j) - 1];
        const int32_t inner    = cfg.draft_length(j);
        if (j < n && inner > 0 && m.model) {
            const float len = cfg.lenience.empty() ? 1.0f : cfg.lenience[static_cast<size_t>(j)];
            auto c = std::make_shared<CascadeDrafter>(*m.model, cfg.context, m.options, drafter_for(j), j, inner, len,
                                                      m.name.empty() ? "level " + std::to_string(j) : m.name, m.cost);
            c->set_threshold(threshold());
            return c;
        }
        if (!m.drafter)
            throw std::invalid_argument("build_draft_stack: level " + std::to_string(j) + " has no drafter");
        auto leaf = std::make_shared<LevelDrafter>(m.drafter, j, m.name);
        leaf->set_threshold_block(threshold_block(cfg, j));
        return leaf;
    }

    bool threshold() const { return cfg.length_mode == LengthMode::threshold; }

    std::shared_ptr<CompositeDrafter> drafter_for(int32_t reviewer) const {
        const std::vector<int32_t> r = row(reviewer);
        std::vector<std::shared_ptr<CompositeDrafter>> segs;
        std::vector<int32_t> counts;
        for (int32_t j = reviewer + 1; j <= n; ++j) {
            if (r[static_cast<size_t>(j)] <= 0) continue;
            segs.push_back(level(j));
            counts.push_back(r[static_cast<size_t>(j)]);
        }
        if (segs.empty())
            throw std::invalid_argument("build_draft_stack: reviewer " + std::to_string(reviewer) +
                                        " gets no draft positions");
        if (segs.size() == 1) return segs.front();
        auto h = std::make_shared<HorizontalDrafter>(std::move(segs), std::move(counts));
        h->set_threshold(threshold());
        return h;
    }
};

}  // namespace

std::shared_ptr<CompositeDrafter> build_draft_stack(const SpecConfig& cfg,
                                                    const std::vector<LevelMaterial>& materials) {
    if (materials.size() != cfg.levels.size())
        throw std::invalid_argument("build_draft_stack: " + std::to_string(cfg.levels.size()) + " levels configured, " +
                                    std::to_string(materials.size()) + " given");
    StackBuilder b{cfg, materials, static_cast<int32_t>(materials.size())};
    return b.drafter_for(0);
}

}  // namespace speculum::engine
