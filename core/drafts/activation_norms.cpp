// Wanda calibration: per-input-channel L2 norms of every matrix input over calibration tokens (see self_draft.h).
#include "core/drafts/self_draft.h"

#include <cmath>
#include <stdexcept>

namespace speculum::drafts {

ActivationNorms collect_activation_norms(const model::Model& target, const std::vector<std::vector<int32_t>>& sequences,
                                         int32_t max_tokens, const ProgressFn& progress, const CancelToken& cancel) {
    const model::Hparams& hp = target.hparams();
    if (max_tokens < 1) throw std::invalid_argument("collect_activation_norms: max_tokens must be >= 1");
    // Sums of squares in double: thousands of tokens of O(1) activations lose nothing.
    std::vector<std::array<std::vector<double>, 4>> ss(size_t(hp.n_layer));
    for (auto& l : ss) {
        l[0].assign(size_t(hp.n_embd), 0.0);
        l[1].assign(size_t(hp.n_embd), 0.0);
        l[2].assign(size_t(hp.n_embd), 0.0);
        l[3].assign(size_t(hp.ffn_width()), 0.0);  // a MoE: its experts' width
    }
    std::vector<double> head(size_t(hp.n_embd), 0.0);

    model::ForwardOptions opts;
    opts.observer = [&](int32_t il, model::ActivationSite site, const float* x, int32_t n, int64_t cols) {
        std::vector<double>& acc = site == model::ActivationSite::head_in ? head : ss[size_t(il)][size_t(site)];
        for (int32_t i = 0; i < n; ++i)
            for (int64_t c = 0; c < cols; ++c) acc[size_t(c)] += double(x[i * cols + c]) * x[i * cols + c];
    };
    ActivationNorms out;
    const int32_t n_ctx = std::min(max_tokens, hp.n_ctx_train);
    for (size_t s = 0; s < sequences.size() && out.n_tokens < max_tokens; ++s) {
        cancel.throw_if_cancelled();
        const size_t left = static_cast<size_t>(max_tokens - out.n_tokens);
        std::vector<int32_t> toks(
            sequences[s].begin(),
            sequences[s].begin() + static_cast<std::ptrdiff_t>(std::min({left, sequences[s].size(), size_t(n_ctx)})));
        if (toks.empty()) continue;
        model::InferenceContext ctx(target, {.n_ctx = static_cast<int32_t>(toks.size()), .n_batch = 64});
        ctx.set_cancel(cancel);
        // Every token's logits are computed so the head's input is observed for all of them.
        for (size_t i = 0; i < toks.size(); i += 64) {
            const size_t n = std::min<size_t>(64, toks.size() - i);
            std::vector<int32_t> t(toks.begin() + static_cast<std::ptrdiff_t>(i),
                                   toks.begin() + static_cast<std::ptrdiff_t>(i + n));
            std::vector<int32_t> pos(n);
            for (size_t j = 0; j < n; ++j) pos[j] = static_cast<int32_t>(i + j);
            ctx.forward_batch(t, pos, {}, opts);
        }
        out.n_tokens += static_cast<int64_t>(toks.size());
        report(progress, 0.5 * double(out.n_tokens) / max_tokens,
               "calibration " + std::to_string(out.n_tokens) + " tokens");
    }
    if (out.n_tokens == 0) throw std::invalid_argument("collect_activation_norms: no calibration tokens");
    auto root = [](const std::vector<double>& v) {
        std::vector<float> r(v.size());
        for (size_t i = 0; i < v.size(); ++i) r[i] = static_cast<float>(std::sqrt(v[i]));
        return r;
    };
    out.sites.resize(size_t(hp.n_layer));
    for (size_t il = 0; il < ss.size(); ++il)
        for (size_t k = 0; k < 4; ++k) out.sites[il][k] = root(ss[il][k]);
    out.head = root(head);
    return out;
}

}  // namespace speculum::drafts
