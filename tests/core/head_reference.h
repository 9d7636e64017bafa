// What the draft heads' tests share (draft_eagle3_test.cpp, draft_mtp_test.cpp, draft_dflash_test.cpp): norms and
// products by hand, a head drafts the tokens its trainer's torch head gives (the JSON tools/train/train_eagle3.py and
// train_mtp.py write with --reference), and greedy runs of a spec on a target.
#pragma once

#include "engine_fixtures.h"

#include "core/drafts/make_drafter.h"
#include "core/drafts/state_drafter.h"
#include "kernels/gemv.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <memory>
#include <span>

namespace speculum::test {

// rms_norm(x) * w by hand.
inline std::vector<float> norm(const float* x, const std::vector<float>& w, float eps) {
    double ss = 0;
    for (size_t i = 0; i < w.size(); ++i) ss += double(x[i]) * x[i];
    const float s = 1.0f / std::sqrt(float(ss / double(w.size())) + eps);
    std::vector<float> y(w.size());
    for (size_t i = 0; i < w.size(); ++i) y[i] = x[i] * s * w[i];
    return y;
}

// W x by the reference kernel.
inline std::vector<float> matvec(const model::WeightView& w, const std::vector<float>& x) {
    std::vector<float> y(static_cast<size_t>(w.rows));
    kernels::gemv_ref(y.data(), w.type, w.data, x.data(), w.cols, 0, w.rows);
    return y;
}

// For every case of `ref` ({"cases": [{"text", "tokens", "head_argmax"}]}): the head's first draft token after each
// prefix tokens[0..q+1], from the target's kept states, is head_argmax[q] at all but two positions (the trainer's
// head is F16-rounded, the target computed in f32 either way).
inline void expect_head_matches_reference(drafts::StateDrafter& d, const model::Model& target,
                                          const nlohmann::json& ref) {
    const std::vector<int32_t> layers = d.target_hidden_layers();
    for (const auto& c : ref["cases"]) {
        const std::vector<int32_t> toks = c["tokens"].get<std::vector<int32_t>>();
        const std::vector<int32_t> want = c["head_argmax"].get<std::vector<int32_t>>();
        model::InferenceContext ctx(target, {.n_ctx = 256, .n_batch = 64, .int8_activations = false});
        ctx.kv().keep_hidden(layers, int32_t(target.hparams().n_embd));
        ctx.prefill(toks);
        // The drafter's first token after each prefix: its catch-up pass attends every earlier row, as the
        // trainer's causal step 0 does.
        d.attach_target_kv(&ctx.kv(), &toks);
        int32_t same = 0;
        for (size_t q = 0; q + 1 < toks.size(); ++q) {
            d.sync(std::span<const int32_t>(toks.data(), q + 2));
            const drafts::DraftChain ch = d.propose(1, {}, {});
            ASSERT_EQ(ch.tokens.size(), 1u);
            same += ch.tokens[0] == want[q];
        }
        d.attach_target_kv(nullptr, nullptr);
        EXPECT_GE(same, int32_t(want.size()) - 2) << c["text"];
    }
}

// A greedy lossless run of `spec` as the only level, drafting gamma tokens per step, on the exact forward path.
inline engine::RunResult greedy_run(const model::Model& target, const drafts::DraftSpec& spec, int32_t gamma,
                                    const std::vector<int32_t>& prompt, int32_t max_new_tokens) {
    engine::SpecConfig cfg = lossless_config(gamma);
    cfg.max_new_tokens     = max_new_tokens;
    cfg.levels             = {spec};
    drafts::DrafterOptions o;
    o.context = exact_ctx();
    return engine::SpecEngine(target, cfg, std::shared_ptr<drafts::Drafter>(drafts::make_drafter(spec, target, o)))
        .run(prompt);
}

}  // namespace speculum::test
