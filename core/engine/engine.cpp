// The speculative decoding loop (sync -> draft -> verify -> accept -> commit/rollback), its statistics and the
// autoregressive baseline. Reads like llama.cpp's speculative-simple; trees differ only in draft and verify.
#include "core/engine/engine.h"
#include "core/clock.h"

#include "core/engine/cats.h"

#include "core/model/generate.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

namespace speculum::engine {

// ---- statistics helpers ----

namespace {
using clock = measure_clock;
double since(clock::time_point t0) {
    return seconds_since(t0);
}

// c per level: own time per forward pass (per call for levels without passes, e.g. Max-Gram) / t_unit.
void set_cost_ratios(std::vector<LevelStats>& levels, double t_unit) {
    for (LevelStats& l : levels) {
        const int64_t per = l.n_forward > 0 ? l.n_forward : l.n_calls;
        l.cost_ratio      = t_unit > 0 && per > 0 ? (l.t_s / static_cast<double>(per)) / t_unit : 0.0;
    }
}

// The first index where a and b differ (b shorter than a differs where it ends), -1 = identical.
int32_t first_mismatch(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
    for (size_t i = 0; i < a.size(); ++i)
        if (i >= b.size() || a[i] != b[i]) return static_cast<int32_t>(i);
    return -1;
}

template <class T>
void bump(std::vector<T>& v, size_t i, T by = 1) {
    if (v.size() <= i) v.resize(i + 1, T{});
    v[i] += by;
}

// α by depth and acceptance by rank at every node on a verified tree's accepted path (the root included).
void count_tree_step(RunStats& s, const drafts::DraftTree& tree, const TreeVerdict& v) {
    const auto children = tree_children(tree);
    const int32_t depth = tree.depth.empty() ? 0 : *std::max_element(tree.depth.begin(), tree.depth.end());
    const int32_t n_acc = static_cast<int32_t>(v.path.size());
    for (int32_t i = 0; i < depth && i <= n_acc; ++i) {
        bump(s.pos_reached, static_cast<size_t>(i));
        bump(s.pos_accepted, static_cast<size_t>(i), int64_t(i < n_acc ? 1 : 0));
    }
    for (int32_t d = 0; d <= n_acc; ++d) {
        const int32_t node = d == 0 ? -1 : v.path[static_cast<size_t>(d) - 1];
        const int32_t n_ch = static_cast<int32_t>(children[static_cast<size_t>(node + 1)].size());
        s.rank_counts.add(d, n_ch, d < n_acc ? v.rank[static_cast<size_t>(d)] : -1);
    }
}

// A verification pass of `width` tokens over `context` tokens already committed.
void record_width(RunStats& s, size_t width, double seconds, size_t context) {
    bump(s.verify_width_passes, width, int64_t(1));
    bump(s.verify_width_s, width, seconds);
    const size_t bucket = context / size_t(kVerifyContextBucket);
    bump(s.verify_ctx_passes, bucket, int64_t(1));
    bump(s.verify_ctx_s, bucket, seconds);
    bump(s.verify_ctx_tokens, bucket, int64_t(width));
}
}  // namespace

// ---- construction ----

struct SpecEngine::RunState {
    Reviewer target;
    model::Sampler sampler;
    std::vector<int32_t> committed;
    RunStats stats;
    int32_t gamma = 0;                   // level-1 draft length now (adaptive γ changes it)
    drafts::TreeShape shape;             // the tree expanded each step
    int32_t steps_since_refit = 0;       // sequoia
    drafts::DraftCost target_at_start;   // the target's counters after prefill
    RecurrentReport recurrent_at_start;  // a hybrid target's recurrent-state counters after prefill
    std::unique_ptr<CatsStages> cats;    // verification cats: the target's three stages
};

SpecEngine::SpecEngine(const model::Model& target, SpecConfig cfg, std::shared_ptr<drafts::Drafter> drafter,
                       const model::Model* verifier)
    : m_target(target), m_verifier(verifier ? *verifier : target), m_cfg(std::move(cfg)) {
    if (!drafter) throw std::invalid_argument("SpecEngine: no drafter");
    if (!(m_verifier.hparams() == target.hparams()))
        throw std::invalid_argument(
            "SpecEngine: the verifier's hparams differ from the target's (it must be the "
            "target's weights in another layout)");
    m_drafter = std::dynamic_pointer_cast<CompositeDrafter>(drafter);
    if (!m_drafter) {
        auto leaf = std::make_shared<LevelDrafter>(std::move(drafter), 1);
        leaf->set_threshold_block(threshold_block(m_cfg, 1));
        m_drafter = std::move(leaf);
    }
    if (m_drafter->n_vocab() > m_target.hparams().n_vocab)
        throw std::invalid_argument("SpecEngine: the drafter's vocabulary (" + std::to_string(m_drafter->n_vocab()) +
                                    ") is larger than the target's (" + std::to_string(m_target.hparams().n_vocab) +
                                    ")");
    if (m_cfg.gamma.empty() && m_cfg.k_matrix.empty()) throw std::invalid_argument("spec.gamma: empty");
}

drafts::ProposeParams SpecEngine::propose_params(RunState& st) const {
    drafts::ProposeParams p;
    p.p_min = m_cfg.p_min;
    if (!m_cfg.greedy() && m_cfg.levels.size() == 1) {
        // Stochastic verification needs the distribution each draft token was drawn from. A cascade (vertical or
        // horizontal) drafts deterministically instead: its intermediate levels review greedily, so its tokens are
        // a function of the context, the target verifies them as one-hot drafts (accept d with probability p(d),
        // else resample from norm(max(0, p - 1_d))) and the output still follows the target's distribution.
        p.temperature        = m_cfg.sampling.temperature;
        p.want_distributions = true;
        p.seed               = st.sampler.rng().next_u64();
    }
    return p;
}

// ---- steps ----

SpecEngine::Step SpecEngine::chain_step(RunState& st, int32_t remaining, const CancelToken& cancel) {
    // Draft: the drafter catches up with the committed context (keeping what it already evaluated) and proposes
    // up to γ tokens; never more than fit before max_new_tokens (the step also commits the target's own token).
    // In threshold mode the drafter is asked for the threshold and may overshoot it; only what fits is verified.
    const bool threshold = m_cfg.length_mode == LengthMode::threshold;
    const int32_t k      = std::min(st.gamma, remaining - 1);
    const int32_t fits   = threshold ? remaining - 1 : k;
    auto t0              = clock::now();
    drafts::DraftChain chain;
    if (k > 0) {
        m_drafter->sync(st.committed);
        chain = m_drafter->propose(threshold ? st.gamma : k, propose_params(st), cancel);
        if (static_cast<int32_t>(chain.tokens.size()) > fits) chain.tokens.resize(static_cast<size_t>(fits));
    }
    st.stats.t_draft_s += since(t0);

    // Verify: one target pass over [last, d_0..d_{k-1}] gives k + 1 distributions; the rule picks the accepted
    // prefix and the target's next token. The cache keeps exactly the accepted part (rejected slots dropped).
    cancel.throw_if_cancelled();
    t0 = clock::now();
    st.target.sync(st.committed, cancel);
    const model::LogitsView logits = st.target.score_chain(st.committed, chain.tokens);
    const ChainVerdict v           = m_cfg.greedy() ? verify_chain_greedy(chain.tokens, logits)
                                                    : verify_chain_stochastic(chain.tokens, logits, chain.q_dist, st.sampler);
    st.target.keep_chain(v.n_accepted);
    const double t_pass = since(t0);
    st.stats.t_verify_s += t_pass;
    record_width(st.stats, static_cast<size_t>(chain.tokens.size()) + 1, t_pass, st.committed.size());

    // α_i counts: position i was reached when every earlier one was accepted.
    for (int32_t i = 0; i < static_cast<int32_t>(chain.tokens.size()) && i <= v.n_accepted; ++i) {
        bump(st.stats.pos_reached, static_cast<size_t>(i));
        bump(st.stats.pos_accepted, static_cast<size_t>(i), int64_t(i < v.n_accepted ? 1 : 0));
        if (chain.predicts_acceptance && static_cast<size_t>(i) < chain.confidence.size())
            bump(st.stats.pos_predicted, static_cast<size_t>(i), double(chain.confidence[static_cast<size_t>(i)]));
    }
    // Adaptive γ (HF assistant heuristic): grow after a fully accepted draft, shrink after a rejection.
    if (m_cfg.adaptive_gamma.enabled && k == st.gamma && static_cast<int32_t>(chain.tokens.size()) == k)
        st.gamma = std::clamp(v.n_accepted == k ? st.gamma + 2 : st.gamma - 1, m_cfg.adaptive_gamma.min,
                              m_cfg.adaptive_gamma.max);

    Step s;
    s.n_drafted  = static_cast<int32_t>(chain.tokens.size());
    s.n_accepted = v.n_accepted;
    for (int32_t j = 0; j < v.n_accepted; ++j) {
        s.tokens.push_back(chain.tokens[static_cast<size_t>(j)]);
        s.kinds.push_back(TokenKind::accepted);
        s.levels.push_back(static_cast<size_t>(j) < chain.source.size() ? chain.source[static_cast<size_t>(j)] : 1);
    }
    s.tokens.push_back(v.next_token);
    s.kinds.push_back(v.next_kind);
    s.levels.push_back(0);
    return s;
}

SpecEngine::Step SpecEngine::tree_step(RunState& st, int32_t remaining, const CancelToken& cancel) {
    // Shape: Sequoia's tree is re-fitted from the acceptance by rank measured so far; every shape is cut to the
    // depth that still fits before max_new_tokens.
    if (m_cfg.tree.kind == TreeKind::sequoia && st.steps_since_refit++ % m_cfg.tree.refit_every == 0)
        st.shape = make_tree_shape(m_cfg.tree, m_cfg.gamma.front(),
                                   acceptance_by_rank(st.stats.rank_counts, m_cfg.tree.prior));
    const drafts::TreeShape shape = trim_shape(st.shape, remaining - 1);

    // Draft: the drafter expands the tree below the last committed token.
    auto t0 = clock::now();
    drafts::DraftTree tree;
    if (shape_nodes(shape) > 0) {
        m_drafter->sync(st.committed);
        tree = m_drafter->propose_tree(shape, propose_params(st), cancel);
    }
    st.stats.t_draft_s += since(t0);

    // Verify: the whole tree in one pass under a tree attention mask; walk the accepted path, then compact its
    // KV slots into place and drop every other branch.
    cancel.throw_if_cancelled();
    t0 = clock::now();
    st.target.sync(st.committed, cancel);
    const model::LogitsView logits = st.target.score_tree(st.committed, tree);
    const TreeVerdict v =
        m_cfg.greedy() ? verify_tree_greedy(tree, logits) : verify_tree_stochastic(tree, logits, st.sampler);
    st.target.keep_tree(v.path);
    const double t_pass = since(t0);
    st.stats.t_verify_s += t_pass;
    record_width(st.stats, static_cast<size_t>(tree.size()) + 1, t_pass, st.committed.size());

    count_tree_step(st.stats, tree, v);
    const int32_t n_acc = static_cast<int32_t>(v.path.size());

    Step s;
    s.n_drafted  = tree.size();
    s.n_accepted = n_acc;
    for (int32_t node : v.path) {
        s.tokens.push_back(tree.tokens[static_cast<size_t>(node)]);
        s.kinds.push_back(TokenKind::accepted);
        s.levels.push_back(1);
    }
    s.tokens.push_back(v.next_token);
    s.kinds.push_back(v.next_kind);
    s.levels.push_back(0);
    return s;
}

SpecEngine::Step SpecEngine::cats_step(RunState& st, int32_t remaining, const CancelToken& cancel) {
    CatsStages& c         = *st.cats;
    const double t_before = c.draft_stats.t_s + c.sv_stats.t_s, v_before = c.target_stats.t_s;
    const int32_t g             = std::min(st.gamma, remaining - 1);
    const CatsStages::Outcome o = c.step(st.committed, g, cancel);
    st.stats.t_draft_s += c.draft_stats.t_s + c.sv_stats.t_s - t_before;  // the correction tree's construction
    st.stats.t_verify_s += c.target_stats.t_s - v_before;
    record_width(st.stats, static_cast<size_t>(o.tree.size()) + 1, c.target_stats.t_s - v_before, st.committed.size());

    // Statistics as for trees (rank 0 = the draft's token, 1 = the verifier's correction).
    const TreeVerdict& v = o.verdict;
    count_tree_step(st.stats, o.tree, v);
    const int32_t n_acc = static_cast<int32_t>(v.path.size());
    Step s;
    s.n_drafted  = o.n_chain;
    s.n_accepted = n_acc;
    for (size_t i = 0; i < v.path.size(); ++i) {
        s.tokens.push_back(o.tree.tokens[static_cast<size_t>(v.path[i])]);
        s.kinds.push_back(TokenKind::accepted);
        s.levels.push_back(v.rank[i] == 0 ? 1 : 2);  // the draft's token, or the shallow verifier's correction
    }
    s.tokens.push_back(v.next_token);
    s.kinds.push_back(v.next_kind);
    s.levels.push_back(0);
    return s;
}

void SpecEngine::commit(RunState& st, const Step& step, EventSink* sink) {
    for (size_t i = 0; i < step.tokens.size(); ++i) {
        if (sink)
            sink->on_token({step.tokens[i], step.levels[i], step.kinds[i], st.stats.n_steps, st.stats.n_generated});
        st.committed.push_back(step.tokens[i]);
        ++st.stats.n_generated;
    }
    st.stats.n_drafted += step.n_drafted;
    st.stats.n_accepted += step.n_accepted;
    bump(st.stats.accepted_len_hist, static_cast<size_t>(step.n_accepted));
    ++st.stats.n_steps;
}

// ---- the decoding loop ----

RunResult SpecEngine::run(const std::vector<int32_t>& prompt, const CancelToken& cancel, const ProgressFn& progress,
                          EventSink* sink) {
    const int32_t n_vocab = m_target.hparams().n_vocab;
    if (prompt.empty()) throw std::invalid_argument("SpecEngine::run: empty prompt");
    for (size_t i = 0; i < prompt.size(); ++i)
        if (prompt[i] < 0 || prompt[i] >= n_vocab)
            throw std::invalid_argument("SpecEngine::run: prompt token " + std::to_string(i) + " = " +
                                        std::to_string(prompt[i]) + " is outside the vocabulary of " +
                                        std::to_string(n_vocab));
    RunState st{Reviewer(m_verifier, m_cfg.context), model::Sampler(m_cfg.sampling), prompt, {}, 0, {}, 0, {}, {}, {}};
    st.gamma = m_cfg.draft_length(0);
    if (m_cfg.adaptive_gamma.enabled)
        st.gamma = std::clamp(st.gamma, m_cfg.adaptive_gamma.min, m_cfg.adaptive_gamma.max);
    // Room for the prompt, the new tokens and one step's speculative slots (a whole tree, or the longest chain).
    int32_t spec_slots = m_cfg.adaptive_gamma.enabled ? std::max(st.gamma, m_cfg.adaptive_gamma.max)
                                                      : std::max(st.gamma, m_cfg.max_draft_length(0));
    if (m_cfg.verification == Verification::cats) spec_slots = 2 * st.gamma;  // the chain and its corrections
    if (m_cfg.verification == Verification::tree) {
        if (m_cfg.tree.kind != TreeKind::sequoia) st.shape = make_tree_shape(m_cfg.tree, m_cfg.gamma.front(), {});
        spec_slots = m_cfg.tree.kind == TreeKind::sequoia ? m_cfg.tree.node_budget : shape_nodes(st.shape);
        if (spec_slots + 1 > st.target.n_batch())
            throw std::invalid_argument("spec.tree: " + std::to_string(spec_slots) +
                                        " nodes + the root exceed "
                                        "spec.context.n_batch = " +
                                        std::to_string(st.target.n_batch()));
    }
    const int64_t need = static_cast<int64_t>(prompt.size()) + m_cfg.max_new_tokens + spec_slots + 1;
    if (need > st.target.n_ctx())
        throw std::invalid_argument("SpecEngine::run: " + std::to_string(prompt.size()) + " prompt + " +
                                    std::to_string(m_cfg.max_new_tokens) + " new tokens + " +
                                    std::to_string(spec_slots) + " draft slots exceed the context length " +
                                    std::to_string(st.target.n_ctx()));
    m_drafter->reset_stats();
    st.stats.n_prompt = static_cast<int32_t>(prompt.size());
    // Level-1 self-drafts that read the target's cache see it for this run only (detached however the run ends).
    if (auto layers = m_drafter->target_hidden_layers(); !layers.empty()) st.target.keep_hidden(std::move(layers));
    m_drafter->attach_target_kv(&st.target.kv(), &st.target.cached());
    struct Detach {
        drafts::Drafter& d;
        ~Detach() { d.attach_target_kv(nullptr, nullptr); }
    } detach{*m_drafter};

    RunResult res;
    res.prompt   = prompt;
    auto t_start = clock::now();
    try {
        // Prefill: the target caches the prompt but its last token, which the first verification pass evaluates.
        if (m_cfg.verification == Verification::cats) {
            st.cats = std::make_unique<CatsStages>(m_verifier, m_cfg.context, m_cfg.cats);
            st.cats->prefill(st.committed, cancel);
        } else {
            st.target.sync(st.committed, cancel);
        }
        // The drafters evaluate the prompt too, now (after the target: drafts that read its cache or its states
        // need them), so that their first propose costs what every later one does.
        m_drafter->prefill(st.committed, cancel);
        st.stats.t_prefill_s  = since(t_start);
        st.target_at_start    = st.target.cost();
        st.recurrent_at_start = st.target.recurrent();
        t_start               = clock::now();
        const int32_t n_new   = m_cfg.max_new_tokens;
        while (st.stats.n_generated < n_new) {
            cancel.throw_if_cancelled();  // before drafting
            const int32_t remaining = n_new - st.stats.n_generated;
            const Step step         = m_cfg.verification == Verification::tree   ? tree_step(st, remaining, cancel)
                                      : m_cfg.verification == Verification::cats ? cats_step(st, remaining, cancel)
                                                                                 : chain_step(st, remaining, cancel);
            commit(st, step, sink);
            report(progress, static_cast<double>(st.stats.n_generated) / n_new,
                   std::to_string(st.stats.n_generated) + "/" + std::to_string(n_new) + " tokens");
            if (m_cfg.eos >= 0 && std::find(step.tokens.begin(), step.tokens.end(), m_cfg.eos) != step.tokens.end())
                break;
        }
    } catch (const Cancelled&) {
        res.cancelled = true;
    }
    st.stats.t_decode_s = since(t_start);
    res.tokens.assign(st.committed.begin() + static_cast<ptrdiff_t>(prompt.size()), st.committed.end());
    if (m_cfg.eos >= 0) {
        auto it = std::find(res.tokens.begin(), res.tokens.end(), m_cfg.eos);
        if (it != res.tokens.end()) res.tokens.erase(it + 1, res.tokens.end());
    }
    finish_stats(st, res);
    if (!res.cancelled && m_cfg.baseline) run_baseline(res, cancel);
    return res;
}

// ---- statistics and baseline ----

void SpecEngine::finish_stats(RunState& st, RunResult& res) {
    RunStats& s   = st.stats;
    s.n_generated = static_cast<int32_t>(res.tokens.size());
    if (st.cats) {
        // The three stages are the levels: 0 = the target's own layers, 1 = the draft, 2 = the shallow verifier.
        const CatsStages& c = *st.cats;
        s.levels            = {c.target_stats, c.draft_stats, c.sv_stats};
        s.levels[0].n_calls = s.n_steps;
        // CATS's Eq. 4, decoder weights only: (γ̄ B_draft + B_SV + B_target) / (β̄ + 1).
        const CatsLayers& L = c.layers();
        if (s.n_steps > 0 && s.n_generated > 0) {
            const double gbar = static_cast<double>(s.n_drafted) / s.n_steps;
            const double m    = static_cast<double>(s.n_generated) / s.n_steps;
            s.bpt_cats_eq4    = (gbar * double(L.b_draft) + double(L.b_sv) + double(L.b_target)) / m;
        }
        s.cats_layers = {L.draft, L.sv, L.n_layer};
    } else {
        s.levels.assign(1, LevelStats{});
        m_drafter->collect(s.levels);
        LevelStats& t              = s.levels[0];
        const drafts::DraftCost& c = st.target.cost();
        t.level                    = 0;
        t.name                     = m_target.name();
        t.n_calls                  = s.n_steps;
        t.n_forward                = c.n_forward - st.target_at_start.n_forward;
        t.t_s                      = s.t_verify_s;
        t.bytes_weights            = c.bytes_weights - st.target_at_start.bytes_weights;
        t.bytes_kv                 = c.bytes_kv - st.target_at_start.bytes_kv;
        t.flops                    = c.flops - st.target_at_start.flops;
        t.n_reviewed               = s.n_drafted;
        t.n_review_accepted        = s.n_accepted;
        s.experts                  = st.target.experts();
        // The recurrent state's cost in this run's verification: the counters since prefill (the peak is the run's).
        RecurrentReport r = st.target.recurrent(), a = st.recurrent_at_start;
        r.passes -= a.passes, r.rollbacks -= a.rollbacks, r.tokens_kept -= a.tokens_kept;
        r.tokens_rerun -= a.tokens_rerun, r.keep_s -= a.keep_s, r.restore_s -= a.restore_s;
        s.recurrent = r;
    }
    // Until a baseline runs, c is relative to the target's verification pass.
    const LevelStats& t = s.levels[0];
    set_cost_ratios(s.levels, t.n_forward > 0 ? t.t_s / static_cast<double>(t.n_forward) : 0.0);
    uint64_t bytes = 0;
    for (const LevelStats& l : s.levels) bytes += l.bytes_weights + l.bytes_kv;
    s.tokens_per_s    = s.t_decode_s > 0 ? s.n_generated / s.t_decode_s : 0.0;
    s.bytes_per_token = s.n_generated > 0 ? static_cast<double>(bytes) / s.n_generated : 0.0;
    res.stats         = s;
}

void SpecEngine::run_baseline(RunResult& res, const CancelToken& cancel) {
    // Plain autoregressive decoding of the same target, same prompt, same number of tokens, same process: the
    // denominator of the speedup, and for greedy runs the reference of the lossless check.
    if (res.tokens.empty()) return;
    const auto decode = [&](const model::Model& m, std::vector<int32_t>& out) {
        model::InferenceContext ctx(m, m_cfg.context);
        model::Sampler sampler(m_cfg.sampling);
        return model::generate(
            ctx, sampler, res.prompt, static_cast<int32_t>(res.tokens.size()),
            [&](int32_t t) {
                out.push_back(t);
                return true;
            },
            cancel);
    };
    std::vector<int32_t> out;
    const model::GenerateStats g = decode(m_target, out);
    res.baseline_tokens          = out;
    RunStats& s                  = res.stats;
    // Steady-state rate: one token per single-token pass (the first token comes from the prompt pass).
    s.baseline_tokens_per_s = g.t_decode_s > 0 && g.n_eval > 0 ? g.n_eval / g.t_decode_s : 0.0;
    s.speedup               = s.baseline_tokens_per_s > 0 ? s.tokens_per_s / s.baseline_tokens_per_s : 0.0;
    // c as CS Drafting defines it: a level's forward pass relative to one plain decoding step of the target.
    if (s.baseline_tokens_per_s > 0) set_cost_ratios(s.levels, 1.0 / s.baseline_tokens_per_s);
    if (m_cfg.greedy()) {
        // Speculative decoding reproduces the greedy output of the model that verifies. A separate verifier holds
        // the same weights but rounds differently, so its own greedy output (decoded here, untimed) is the
        // reference, and where it departs from the target's is reported beside it.
        std::vector<int32_t> verifier_out;
        if (&m_verifier != &m_target) {
            decode(m_verifier, verifier_out);
            s.verifier_mismatch = first_mismatch(verifier_out, out);
        }
        s.lossless_checked  = true;
        s.lossless_mismatch = first_mismatch(res.tokens, &m_verifier != &m_target ? verifier_out : out);
    }
}

void accumulate(RunStats& into, const RunStats& s) {
    const double t_base = (into.baseline_tokens_per_s > 0 ? into.n_generated / into.baseline_tokens_per_s : 0.0) +
                          (s.baseline_tokens_per_s > 0 ? s.n_generated / s.baseline_tokens_per_s : 0.0);
    const double bytes = into.bytes_per_token * into.n_generated + s.bytes_per_token * s.n_generated;
    if (s.bpt_cats_eq4 > 0) {
        into.bpt_cats_eq4 = (into.bpt_cats_eq4 * into.n_generated + s.bpt_cats_eq4 * s.n_generated) /
                            std::max(1, into.n_generated + s.n_generated);
        into.cats_layers = s.cats_layers;
    }
    into.n_prompt += s.n_prompt;
    into.n_generated += s.n_generated;
    into.n_steps += s.n_steps;
    into.n_drafted += s.n_drafted;
    into.n_accepted += s.n_accepted;
    into.t_prefill_s += s.t_prefill_s;
    into.t_draft_s += s.t_draft_s;
    into.t_verify_s += s.t_verify_s;
    into.t_decode_s += s.t_decode_s;
    for (size_t i = 0; i < s.pos_reached.size(); ++i) bump(into.pos_reached, i, s.pos_reached[i]);
    for (size_t i = 0; i < s.pos_accepted.size(); ++i) bump(into.pos_accepted, i, s.pos_accepted[i]);
    for (size_t i = 0; i < s.pos_predicted.size(); ++i) bump(into.pos_predicted, i, s.pos_predicted[i]);
    for (size_t i = 0; i < s.accepted_len_hist.size(); ++i) bump(into.accepted_len_hist, i, s.accepted_len_hist[i]);
    into.experts.add(s.experts);
    into.recurrent.add(s.recurrent);
    for (size_t i = 0; i < s.verify_width_passes.size(); ++i)
        bump(into.verify_width_passes, i, s.verify_width_passes[i]);
    for (size_t i = 0; i < s.verify_width_s.size(); ++i) bump(into.verify_width_s, i, s.verify_width_s[i]);
    for (size_t i = 0; i < s.verify_ctx_passes.size(); ++i) bump(into.verify_ctx_passes, i, s.verify_ctx_passes[i]);
    for (size_t i = 0; i < s.verify_ctx_s.size(); ++i) bump(into.verify_ctx_s, i, s.verify_ctx_s[i]);
    for (size_t i = 0; i < s.verify_ctx_tokens.size(); ++i) bump(into.verify_ctx_tokens, i, s.verify_ctx_tokens[i]);
    for (size_t d = 0; d < s.rank_counts.offered.size(); ++d)
        for (size_t r = 0; r < s.rank_counts.offered[d].size(); ++r) {
            if (into.rank_counts.offered.size() <= d)
                into.rank_counts.offered.resize(d + 1), into.rank_counts.accepted.resize(d + 1);
            bump(into.rank_counts.offered[d], r, s.rank_counts.offered[d][r]);
            bump(into.rank_counts.accepted[d], r, s.rank_counts.accepted[d][r]);
        }
    if (into.levels.size() < s.levels.size()) into.levels.resize(s.levels.size());
    for (size_t i = 0; i < s.levels.size(); ++i) {
        LevelStats& a       = into.levels[i];
        const LevelStats& b = s.levels[i];
        a.level = b.level, a.name = b.name;
        a.n_calls += b.n_calls, a.n_forward += b.n_forward, a.t_s += b.t_s;
        a.t_prefill_s += b.t_prefill_s;
        a.bytes_weights += b.bytes_weights, a.bytes_kv += b.bytes_kv, a.flops += b.flops,
            a.bytes_modeled    = a.bytes_modeled || b.bytes_modeled,
            a.bytes_kv_modeled = a.bytes_kv_modeled || b.bytes_kv_modeled;
        a.n_reviewed += b.n_reviewed, a.n_review_accepted += b.n_review_accepted;
    }
    into.tokens_per_s          = into.t_decode_s > 0 ? into.n_generated / into.t_decode_s : 0.0;
    into.baseline_tokens_per_s = t_base > 0 ? into.n_generated / t_base : 0.0;
    const double t_verify_pass = into.levels.empty() || into.levels[0].n_forward == 0
                                     ? 0.0
                                     : into.levels[0].t_s / static_cast<double>(into.levels[0].n_forward);
    set_cost_ratios(into.levels, into.baseline_tokens_per_s > 0 ? 1.0 / into.baseline_tokens_per_s : t_verify_pass);
    into.speedup          = into.baseline_tokens_per_s > 0 ? into.tokens_per_s / into.baseline_tokens_per_s : 0.0;
    into.bytes_per_token  = into.n_generated > 0 ? bytes / into.n_generated : 0.0;
    into.lossless_checked = into.lossless_checked || s.lossless_checked;
    if (into.lossless_mismatch < 0) into.lossless_mismatch = s.lossless_mismatch;
    if (into.verifier_mismatch < 0) into.verifier_mismatch = s.verifier_mismatch;
}

}  // namespace speculum::engine
