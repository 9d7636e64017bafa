// Autoregressive generation loop with prefill / decode timing.
#include "core/model/generate.h"
#include "core/clock.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>

namespace speculum::model {

namespace {

// Where a non-finite value first shows (the input of the matrices at `site` of layer il) and the step that made it.
std::string origin_text(int32_t il, ActivationSite s, int32_t n_layer) {
    const std::string L = "layer " + std::to_string(il);
    switch (s) {
        case ActivationSite::attn_in:
            return L + "'s attention input, so it arose in " +
                   (il == 0 ? std::string("the token embeddings")
                            : "layer " + std::to_string(il - 1) + "'s feed-forward block (the down matrix)");
        case ActivationSite::attn_out:
            return L + "'s attention output, so it arose in " + L + "'s attention (q, k, v)";
        case ActivationSite::ffn_in:
            return L + "'s feed-forward input, so it arose in " + L + "'s attention output (wo)";
        case ActivationSite::ffn_down:
            return L + "'s feed-forward activations, so it arose in " + L + "'s gate and up matrices";
        case ActivationSite::head_in:
            return "the output head's input, so it arose in layer " + std::to_string(n_layer - 1) +
                   "'s feed-forward block (the down matrix) or the final norm";
    }
    return "an activation";
}

}  // namespace

std::string locate_non_finite(const Model& model, const ContextConfig& cfg, const std::vector<int32_t>& tokens) {
    ContextConfig c = cfg;
    c.n_ctx         = std::max<int32_t>(c.n_ctx, int32_t(tokens.size()));
    InferenceContext probe(model, c);
    std::string found;
    ForwardOptions opts;
    opts.observer = [&](int32_t il, ActivationSite site, const float* x, int32_t n, int64_t cols) {
        if (!found.empty()) return;
        for (int64_t i = 0; i < int64_t(n) * cols; ++i)
            if (!std::isfinite(x[i])) {
                found = std::string(std::isnan(x[i]) ? "NaN" : "inf") + " first in " +
                        origin_text(il, site, model.hparams().n_layer) + " (token " + std::to_string(i / cols) + ")";
                return;
            }
    };
    try {
        (void)probe.prefill(tokens, opts);
    } catch (const std::exception&) {
        // the diagnosis is best effort: the caller's error stands without it
    }
    return found;
}

std::span<const float> prefill_as_verified(InferenceContext& ctx, const std::vector<int32_t>& prompt) {
    if (prompt.empty()) throw std::invalid_argument("prefill_as_verified: empty prompt");
    const std::vector<int32_t> head(prompt.begin(), prompt.end() - 1);
    if (!head.empty()) (void)ctx.prefill(head);
    return ctx.decode(prompt.back(), ctx.kv().size());
}

namespace {

GenerateStats generate_unchecked(InferenceContext& ctx, Sampler& sampler, const std::vector<int32_t>& prompt,
                                 int32_t n_new, const std::function<bool(int32_t)>& on_token, const CancelToken& cancel,
                                 int32_t eos, std::vector<int32_t>& seen) {
    using clock = measure_clock;
    if (prompt.empty()) throw std::invalid_argument("generate: empty prompt");
    if (ctx.kv().size() != 0) throw std::invalid_argument("generate: the context must be empty");
    const int64_t need = static_cast<int64_t>(prompt.size()) + n_new;
    if (n_new < 0 || need > ctx.kv().capacity())
        throw std::invalid_argument("generate: " + std::to_string(prompt.size()) + " prompt + " +
                                    std::to_string(n_new) + " new tokens exceed the context length " +
                                    std::to_string(ctx.kv().capacity()));
    ctx.set_cancel(cancel);
    GenerateStats st;

    // Prefill, as a speculative run evaluates the prompt (prefill_as_verified).
    auto t0                       = clock::now();
    std::span<const float> logits = prefill_as_verified(ctx, prompt);
    st.n_prompt                   = static_cast<int32_t>(prompt.size());
    st.t_prompt_s                 = std::chrono::duration<double>(clock::now() - t0).count();

    // Decode: sample from the last logits, emit, feed the token back at the next position.
    t0 = clock::now();
    for (int32_t i = 0; i < n_new; ++i) {
        cancel.throw_if_cancelled();
        const int32_t tok = sampler.sample(logits);
        ++st.n_decoded;
        const bool go_on = on_token ? on_token(tok) : true;
        if (!go_on || tok == eos || i + 1 == n_new) break;
        seen.push_back(tok);
        logits = ctx.decode(tok, ctx.kv().size());
        ++st.n_eval;
    }
    st.t_decode_s = std::chrono::duration<double>(clock::now() - t0).count();
    return st;
}

}  // namespace

GenerateStats generate(InferenceContext& ctx, Sampler& sampler, const std::vector<int32_t>& prompt, int32_t n_new,
                       const std::function<bool(int32_t)>& on_token, const CancelToken& cancel, int32_t eos) {
    std::vector<int32_t> seen = prompt;  // the tokens evaluated so far, to locate a non-finite value
    try {
        return generate_unchecked(ctx, sampler, prompt, n_new, on_token, cancel, eos, seen);
    } catch (const NonFiniteLogits& e) {
        throw NonFiniteLogits(std::string(e.what()) + " after " + std::to_string(seen.size()) + " tokens: " + [&] {
            const std::string where = locate_non_finite(ctx.model(), ctx.config(), seen);
            return where.empty() ? "every activation into the output matrix was finite, so "
                                   "it arose there"
                                 : where;
        }());
    }
}

}  // namespace speculum::model
