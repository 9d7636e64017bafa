// Autoregressive generation loop with prefill / decode timing.
#include "core/model/generate.h"

#include <chrono>
#include <stdexcept>
#include <string>

namespace speculum::model {

GenerateStats generate(InferenceContext& ctx, Sampler& sampler, const std::vector<int32_t>& prompt, int32_t n_new,
                       const std::function<bool(int32_t)>& on_token, const CancelToken& cancel, int32_t eos) {
    using clock = std::chrono::steady_clock;
    if (prompt.empty()) throw std::invalid_argument("generate: empty prompt");
    if (ctx.kv().size() != 0) throw std::invalid_argument("generate: the context must be empty");
    const int64_t need = static_cast<int64_t>(prompt.size()) + n_new;
    if (n_new < 0 || need > ctx.kv().capacity())
        throw std::invalid_argument("generate: " + std::to_string(prompt.size()) + " prompt + " +
                                    std::to_string(n_new) + " new tokens exceed the context length " +
                                    std::to_string(ctx.kv().capacity()));
    ctx.set_cancel(cancel);
    GenerateStats st;

    // Prefill: the prompt in batches; only the last token's logits are needed.
    auto t0                       = clock::now();
    std::span<const float> logits = ctx.prefill(prompt);
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
        logits = ctx.decode(tok, ctx.kv().size());
        ++st.n_eval;
    }
    st.t_decode_s = std::chrono::duration<double>(clock::now() - t0).count();
    return st;
}

}  // namespace speculum::model
