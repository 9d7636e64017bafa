// A self-draft that reads the target's KV cache (kv_from_target, Cassandra's KV selection on the target's cache):
// the rows it copies are the target's rows passed through the draft's KV transform, at every layer (issue #52: no
// test checked the rows past layer 0, so dropping the transform would have passed).
#include "core/drafts/model_drafter.h"
#include "core/model/forward.h"
#include "engine_fixtures.h"

#include <gtest/gtest.h>

#include <vector>

using namespace speculum;
using namespace speculum::test;

TEST(DraftKvCopy, CopiedRowsAreTheTransformedTargetRowsAtEveryLayer) {
    const model::Model target = model::make_synthetic_model(engine_target_spec());
    const std::vector<int32_t> prompt{5, 17, 3, 42, 17, 3, 42, 8, 60, 11};
    model::InferenceContext tctx(target, exact_ctx());
    std::vector<int32_t> pos(prompt.size());
    for (size_t i = 0; i < pos.size(); ++i) pos[i] = int32_t(i);
    tctx.forward_batch(prompt, pos);  // the target's cache holds every prompt token
    const std::vector<int32_t> cached = prompt;

    // A transform that no copy could produce by accident: a per-layer scale and offset on K, V negated.
    auto transform = [](int32_t il, float* k, float* v, int32_t n, int64_t e) {
        for (int64_t i = 0; i < int64_t(n) * e; ++i) k[i] = k[i] * 0.5f + float(il + 1), v[i] = -v[i];
    };
    drafts::ModelDrafterConfig cfg;
    cfg.context              = exact_ctx();
    cfg.read_target_kv       = true;
    cfg.forward.kv_transform = transform;
    drafts::ModelDrafter d(target, cfg);
    d.attach_target_kv(&tctx.kv(), &cached);
    d.sync(prompt);
    d.prefill(prompt, CancelToken{});
    const int32_t copied = int32_t(prompt.size()) - 1;  // all but the last committed token
    ASSERT_EQ(d.tokens_from_target(), copied);
    const model::KvCache& dk = d.context().kv();
    const model::KvCache& tk = tctx.kv();
    ASSERT_GE(dk.size(), copied);
    const int64_t e = tk.n_embd_kv();
    for (int32_t il = 0; il < tk.n_layer(); ++il) {
        std::vector<float> k(tk.k(il, 0), tk.k(il, 0) + copied * e), v(tk.v(il, 0), tk.v(il, 0) + copied * e);
        transform(il, k.data(), v.data(), copied, e);
        for (int64_t i = 0; i < copied * e; ++i) {
            ASSERT_EQ(dk.k(il, 0)[i], k[size_t(i)]) << "layer " << il << " K element " << i;
            ASSERT_EQ(dk.v(il, 0)[i], v[size_t(i)]) << "layer " << il << " V element " << i;
        }
    }
}
