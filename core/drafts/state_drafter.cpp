// StateDrafter (see state_drafter.h).
#include "core/drafts/state_drafter.h"
#include "core/clock.h"

#include "core/drafts/draft_token.h"
#include "core/drafts/model_drafter.h"
#include "core/model/sampler.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace speculum::drafts {

bool keeps_streams(const model::KvCache* kv, const std::vector<int32_t>* tokens, const std::vector<int32_t>& layers,
                   int64_t n_embd) {
    return kv && tokens && kv->has_hidden() && kv->hidden_layers() == layers &&
           kv->n_embd_hidden() == int64_t(layers.size()) * n_embd;
}

int32_t target_rows_matching(const model::KvCache& kv, const std::vector<int32_t>& tokens,
                             std::span<const int32_t> committed, int32_t n) {
    const int32_t lim = std::min<int32_t>({int32_t(tokens.size()), kv.size(), int32_t(committed.size()), n});
    int32_t have      = 0;
    while (have < lim && tokens[size_t(have)] == committed[size_t(have)]) ++have;
    return have;
}

StateDrafter::StateDrafter(const model::Model& target, model::Model block, std::vector<int32_t> layers,
                           int64_t state_width, model::ContextConfig ctx, std::string name)
    : m_target(target),
      m_block(std::move(block)),
      m_layers(std::move(layers)),
      m_state_width(state_width),
      m_ctx(m_block, ctx),
      m_cost(ForwardCostModel::of(m_block)),
      m_name(std::move(name)) {}

void StateDrafter::attach_target_kv(const model::KvCache* kv, const std::vector<int32_t>* tokens) {
    const bool fits = keeps_streams(kv, tokens, m_layers, m_target.hparams().n_embd);
    m_tkv           = fits ? kv : nullptr;
    m_ttokens       = fits ? tokens : nullptr;
}

void StateDrafter::sync(std::span<const int32_t> committed) {
    size_t common = 0;
    while (common < m_committed.size() && common < committed.size() && m_committed[common] == committed[common])
        ++common;
    // Row q (slot q - 1) stands on tokens 0..q: it stays while they do.
    m_done = std::min<int32_t>(m_done, common > 0 ? int32_t(common) - 1 : 0);
    m_ctx.kv().truncate(m_done);
    m_committed.assign(committed.begin(), committed.end());
}

void StateDrafter::run_rows(const std::vector<int32_t>& tokens, const std::vector<const float*>& states,
                            const std::vector<int32_t>& pos, const std::vector<uint8_t>& mask, uint64_t attend_pairs,
                            std::vector<std::vector<float>>& logits, DraftCost& cost) {
    const int32_t n = int32_t(tokens.size());
    model::ForwardOptions o;
    inputs(tokens, states, o, cost);
    m_hidden.resize(size_t(n) * size_t(m_block.hparams().n_embd));
    o.hidden_out           = m_hidden.data();
    const int32_t n_cached = m_ctx.kv().size();
    // The pass enters through hidden_in: the token ids only pass the range check (a head's vocabulary may be a
    // subset of the target's).
    const model::LogitsView v = m_ctx.forward_batch(std::vector<int32_t>(size_t(n), 0), pos, mask, o);
    DraftCost c               = pass_cost(m_cost, m_block.hparams(), o, n, n_cached, attend_pairs, n);
    c.bytes_weights -= uint64_t(n) * m_cost.embd_row_bytes;  // the head's input replaced the lookup
    cost += c;
    logits.resize(size_t(n));
    for (int32_t r = 0; r < n; ++r) target_logits(v.row(r), logits[size_t(r)]);
}

bool StateDrafter::catch_up(DraftCost& cost) {
    // Positions q = m_done + 1 .. n (n = the last committed token's) need the target's stream at q - 1; it has the
    // streams of the committed tokens it cached (all but the last one, between verification passes).
    if (!m_tkv || m_committed.size() < 2) return false;
    const int32_t n = int32_t(m_committed.size()) - 1;
    if (target_rows_matching(*m_tkv, *m_ttokens, m_committed, n) < n) return false;  // the stream is not there (yet)
    m_done = std::min(m_done, n - 1);  // the last row is always evaluated again: its logits draft
    m_ctx.kv().truncate(m_done);
    const int32_t rows = n - m_done;
    m_states.resize(size_t(rows) * size_t(m_state_width));
    target_states(m_tkv->hidden(m_done), rows, m_states.data(), cost);  // slots m_done..n-1 are contiguous rows
    std::vector<std::vector<float>> logits;
    for (int32_t r0 = 0; r0 < rows; r0 += m_ctx.config().n_batch) {  // in batches the scratch holds
        const int32_t r1 = std::min(rows, r0 + m_ctx.config().n_batch);
        std::vector<int32_t> toks, pos;
        std::vector<const float*> states;
        for (int32_t r = r0; r < r1; ++r) {
            toks.push_back(m_committed[size_t(m_done + 1 + r)]);
            pos.push_back(m_done + 1 + r);
            states.push_back(&m_states[size_t(r) * size_t(m_state_width)]);
        }
        const uint64_t m     = uint64_t(r1 - r0);
        const uint64_t pairs = m * uint64_t(m_ctx.kv().size()) + m * (m + 1) / 2;
        run_rows(toks, states, pos, {}, pairs, logits, cost);
    }
    m_last_logits = std::move(logits.back());
    m_last_state.resize(size_t(m_state_width));
    next_state(&m_hidden[m_hidden.size() - size_t(m_block.hparams().n_embd)], m_last_state.data());
    m_done = n;
    return true;
}

DraftCost StateDrafter::prefill(std::span<const int32_t> committed, const CancelToken& cancel) {
    const auto t0 = measure_clock::now();
    DraftCost cost;
    sync(committed);
    m_ctx.set_cancel(cancel);
    cancel.throw_if_cancelled();
    catch_up(cost);  // nothing when the target's states are not there
    cost.seconds = seconds_since(t0);
    return cost;
}

DraftChain StateDrafter::propose(int32_t k, const ProposeParams& params, const CancelToken& cancel) {
    const auto t0 = measure_clock::now();
    DraftChain out;
    if (k < 0) throw std::invalid_argument(m_name + ": propose: k must be >= 0, got " + std::to_string(k));
    if (k == 0) return out;
    m_ctx.set_cancel(cancel);
    cancel.throw_if_cancelled();
    if (!catch_up(out.cost)) {
        out.cost.seconds = seconds_since(t0);
        return out;
    }
    model::Sampler sampler(model::SamplerConfig{.temperature = params.temperature, .seed = params.seed});
    std::vector<float> logits = m_last_logits, dist, state = m_last_state;
    std::vector<std::vector<float>> rows;
    for (int32_t i = 0; i < k; ++i) {
        const int32_t tok = choose_draft_token(logits, params, sampler, dist, out);
        if (tok < 0) break;  // below p_min
        if (i + 1 == k) break;
        cancel.throw_if_cancelled();
        if (m_ctx.kv().size() >= m_ctx.kv().capacity()) break;
        const int32_t pos = int32_t(m_committed.size()) + i;  // the drafted token's position
        run_rows({tok}, {state.data()}, {pos}, {}, uint64_t(m_ctx.kv().size()) + 1, rows, out.cost);
        logits = std::move(rows[0]);
        next_state(m_hidden.data(), state.data());
    }
    out.cost.seconds = seconds_since(t0);
    return out;
}

DraftTree StateDrafter::propose_tree(const TreeShape& shape, const ProposeParams& params, const CancelToken& cancel) {
    const auto t0 = measure_clock::now();
    std::vector<int32_t> parent, rank;
    tree_shape_nodes(shape, parent, rank);  // validates the shape (the static stand-in of a dynamic one)
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
    // Each node's state (its children's input); the root's is the last committed row's.
    std::vector<std::vector<float>> states;
    const int32_t base = m_done;  // slots of the committed positions; the tree's are dropped again
    auto evaluate      = [&](const std::vector<int32_t>& nodes, const std::vector<int32_t>& parents,
                        const std::vector<int32_t>& toks, const std::vector<int32_t>& depths,
                        const std::vector<uint8_t>& mask, std::vector<std::vector<float>>& logits) {
        if (int32_t(nodes.size()) > m_ctx.config().n_batch || base + int32_t(nodes.size()) > m_ctx.kv().capacity())
            return false;
        std::vector<int32_t> pos;
        std::vector<const float*> parent_states;
        for (size_t r = 0; r < nodes.size(); ++r) {
            pos.push_back(int32_t(m_committed.size()) + depths[r] - 1);
            parent_states.push_back(parents[r] < 0 ? m_last_state.data() : states[size_t(parents[r])].data());
        }
        m_ctx.kv().truncate(base);
        uint64_t pairs = uint64_t(nodes.size()) * uint64_t(base);
        for (uint8_t b : mask) pairs += b != 0;
        run_rows(toks, parent_states, pos, mask, pairs, logits, cost);
        for (size_t r = 0; r < nodes.size(); ++r) {
            const size_t node = size_t(nodes[r]);
            if (states.size() <= node) states.resize(node + 1);
            states[node].resize(size_t(m_state_width));
            next_state(&m_hidden[r * size_t(m_block.hparams().n_embd)], states[node].data());
        }
        return true;
    };
    tree = shape.dynamic_nodes > 0
               ? expand_dynamic_tree(shape.branching, shape.dynamic_nodes, m_last_logits, params, evaluate, cancel)
               : expand_draft_tree(parent, rank, m_last_logits, params, evaluate, cancel);
    m_ctx.kv().truncate(base);
    tree.cost         = cost;
    tree.cost.seconds = seconds_since(t0);
    return tree;
}

std::vector<float> StateDrafter::logits_for(const float* row, int32_t token, int32_t pos) {
    model::InferenceContext ctx(m_block, m_ctx.config());
    std::vector<float> state(static_cast<size_t>(m_state_width));
    DraftCost unused;
    target_states(row, 1, state.data(), unused);
    model::ForwardOptions o;
    inputs({token}, {state.data()}, o, unused);
    const model::LogitsView v = ctx.forward_batch({0}, {pos}, {}, o);
    std::vector<float> out;
    target_logits(v.row(0), out);
    return out;
}

}  // namespace speculum::drafts
