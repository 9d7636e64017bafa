// build_self_draft: composed transforms equal the per-matrix scalar references, untouched tensors are shared,
// achieved pruning counts are exact, skipped layers are neither transformed nor read, KV transforms act where the
// cache is written, progress and cancellation; Wanda calibration through make_drafter.
#include "core/drafts/draft_bits.h"
#include "core/drafts/kv_transforms.h"
#include "core/drafts/make_drafter.h"
#include "core/drafts/model_drafter.h"
#include "core/drafts/self_draft.h"
#include "core/drafts/weight_transforms.h"
#include "model_fixtures.h"

#include <gtest/gtest.h>

#include <cstring>

namespace speculum::drafts {
namespace {

using kernels::GgmlType;

model::Model target(GgmlType t = GgmlType::BF16) {
    model::SyntheticSpec s = test::spec_gqa(t);
    s.n_layer              = 3;
    return model::make_synthetic_model(s);
}

// The same weights: dense bytes, or a compact view's decoded rows (kernels/compact.h) against the dense copy.
bool same_bytes(const model::WeightView& a, const model::WeightView& b) {
    return a.type == b.type && a.rows == b.rows && a.cols == b.cols && model::dense_copy(a) == model::dense_copy(b);
}

TEST(SelfDraft, ComposedTransformsEqualScalarReferencePerMatrix) {
    const model::Model t = target();
    DraftSpec s;
    s.prune.ratio                 = 0.4f;
    s.prune.attention             = false;  // FFN only
    s.weight_trunc_bits           = 3;
    s.skip_attn                   = {1};
    s.exit_layer                  = 1;  // layer 2 is never read
    const SelfDraft d             = build_self_draft(t, s);
    const model::ModelWeights &tw = t.weights(), &dw = d.model.weights();
    EXPECT_EQ(dw.token_embd.data, tw.token_embd.data);  // shared, not copied
    MatrixTransform attn;
    attn.format         = WeightFormat::bf16;
    attn.trunc_bits     = 3;
    MatrixTransform ffn = attn;
    ffn.prune_ratio     = 0.4f;
    for (int il = 0; il < 3; ++il) {
        const model::LayerWeights &T = tw.layers[size_t(il)], &D = dw.layers[size_t(il)];
        if (il == 0) {
            EXPECT_TRUE(same_bytes(D.wq, transform_matrix_ref(T.wq, attn).view));
            EXPECT_TRUE(same_bytes(D.wo, transform_matrix_ref(T.wo, attn).view));
        } else {
            EXPECT_EQ(D.wq.data, T.wq.data) << "skipped attention is shared, untouched";
        }
        if (il <= 1) {
            const TransformedMatrix r = transform_matrix_ref(T.w_up, ffn);
            EXPECT_TRUE(same_bytes(D.w_up, r.view));
            EXPECT_EQ(r.n_pruned, T.w_up.rows * prune_count(0.4f, T.w_up.cols));
        } else {
            EXPECT_EQ(D.w_down.data, T.w_down.data);
        }
    }
    // Achieved ratio per pruned matrix is exactly floor(p * cols) / cols per row.
    for (const MatrixRecord& r : d.matrices) {
        const bool pruned_ffn = r.name.find("ffn") != std::string::npos && r.name.find("blk.2.") == std::string::npos;
        const int64_t cols    = r.name.find("down") != std::string::npos ? 128 : 64;  // n_ff : n_embd
        EXPECT_EQ(r.pruned, pruned_ffn ? r.elements / cols * prune_count(0.4f, cols) : 0) << r.name;
    }
    EXPECT_GT(d.bytes_owned, 0u);
    EXPECT_GT(d.bytes_shared, 0u);
    // Compact formats store every pruned / truncated matrix: the cost is the buffers' real size.
    EXPECT_FALSE(d.cost.modeled);
    for (const MatrixRecord& r : d.matrices) EXPECT_EQ(r.compact, !r.shared) << r.name;
    EXPECT_TRUE(d.model.weights().layers[0].w_up.compact);
    // The cost model agrees with the bit accounting from the spec alone, which expects the pruning to be spread
    // uniformly over each row's 64-element groups (the built draft counts its real buffers).
    const DraftBits b = draft_bits(s, t);
    EXPECT_FALSE(b.weights_modeled);
    const double built = double(weight_bytes_per_forward(d.cost, t.hparams(), d.forward));
    EXPECT_NEAR(built, double(b.weight_bytes_per_forward), 0.03 * built);
    const ForwardCostModel real = ForwardCostModel::of(d.model);
    EXPECT_EQ(weight_bytes_per_forward(real, t.hparams(), d.forward), uint64_t(built));

    // Stored dense instead (compact false): the same weights, the dense bytes read and the compact size modeled,
    // exactly as the bit accounting says.
    DraftSpec dense_spec = s;
    dense_spec.compact   = false;
    const SelfDraft dd   = build_self_draft(t, dense_spec);
    EXPECT_TRUE(dd.cost.modeled);
    EXPECT_FALSE(dd.model.weights().layers[0].w_up.compact);
    EXPECT_TRUE(same_bytes(dd.model.weights().layers[1].w_down, dw.layers[1].w_down));
    const DraftBits bd = draft_bits(dense_spec, t);
    EXPECT_TRUE(bd.weights_modeled);
    EXPECT_EQ(weight_bytes_per_forward(dd.cost, t.hparams(), dd.forward), bd.weight_bytes_per_forward);
    EXPECT_EQ(weight_bytes_per_forward(ForwardCostModel::of(dd.model), t.hparams(), dd.forward),
              bd.weight_bytes_per_forward_real);
    EXPECT_LT(built, 0.8 * double(bd.weight_bytes_per_forward_real));
}

// A compact draft computes exactly what its dense copy computes (the kernels decode to the same rows and run the
// same dense kernel), on the reference path and the fast one, for BF16 (pruned + truncated; f32 activations),
// F16 (pruned) and Q8_0 (pruned, int8 activations) targets; each pass reads the compact bytes, counted from the
// buffers.
TEST(SelfDraft, CompactDraftComputesWhatItsDenseCopyComputes) {
    for (GgmlType type : {GgmlType::BF16, GgmlType::F16, GgmlType::Q8_0}) {
        SCOPED_TRACE(kernels::ggml_type_traits(type)->name);
        const model::Model t = target(type);
        DraftSpec s;
        s.prune.ratio       = 0.5f;
        s.prune.output      = true;
        s.weight_trunc_bits = type == GgmlType::BF16 ? 4 : 0;
        const SelfDraft c   = build_self_draft(t, s);
        s.compact           = false;
        const SelfDraft d   = build_self_draft(t, s);
        EXPECT_TRUE(c.model.weights().output.compact);
        EXPECT_FALSE(c.cost.modeled);
        const std::vector<int32_t> toks{1, 5, 9, 2, 77, 3};
        // A dense BF16 copy multiplies BF16-rounded activations by default (vdpbf16ps, as llama.cpp does), while the
        // compact BF16 kernels keep f32 activations below 64 tokens: compare them with f32 activations.
        const bool int8_act = type != GgmlType::BF16;
        for (model::ForwardPath path : {model::ForwardPath::reference, model::ForwardPath::fast}) {
            const auto a = test::decode_all(c.model, toks, path, c.forward, int8_act);
            const auto b = test::decode_all(d.model, toks, path, d.forward, int8_act);
            for (size_t i = 0; i < toks.size(); ++i) EXPECT_EQ(a[i], b[i]) << "token " << i;
        }
        // A prompt long enough for the BLAS path (decoded tiles through SGEMM) gives the dense copy's logits too.
        std::vector<int32_t> prompt(70);
        for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = int32_t((7 * i + 1) % 150);
        const model::ContextConfig pcc{.n_ctx = 80, .n_batch = 80, .int8_activations = int8_act};
        model::InferenceContext pc(c.model, pcc), pd(d.model, pcc);
        const auto lc = pc.prefill(prompt, c.forward);
        const std::vector<float> lcv(lc.begin(), lc.end());
        const auto ld = pd.prefill(prompt, d.forward);
        EXPECT_TRUE(std::equal(lcv.begin(), lcv.end(), ld.begin())) << "prefill logits differ";
        // What one decode step reads: the compact matrices' buffers (streams + tile offsets), no more.
        model::InferenceContext ctx(c.model, {.n_ctx = 16, .n_batch = 8});
        ctx.decode(3, 0);
        uint64_t expect = c.model.weights().token_embd.row_bytes() + c.model.weights().output.compact->bytes() +
                          c.model.weights().output_norm.size() * sizeof(float);
        for (const model::LayerWeights& L : c.model.weights().layers) {
            for (const model::WeightView* v : L.matrices()) {
                if (v->empty()) continue;  // a dense target's layers have no DeltaNet or shared-expert matrices
                ASSERT_TRUE(v->compact);
                expect += v->compact->bytes();
            }
            expect += (L.attn_norm.size() + L.ffn_norm.size()) * sizeof(float);
        }
        EXPECT_EQ(ctx.last_cost().bytes_weights, expect);
        model::InferenceContext dctx(d.model, {.n_ctx = 16, .n_batch = 8});
        dctx.decode(3, 0);
        EXPECT_LT(ctx.last_cost().bytes_weights, dctx.last_cost().bytes_weights);
    }
}

TEST(SelfDraft, F16TargetTruncationSaysItConvertedToBf16) {
    DraftSpec s;
    s.weight_trunc_bits = 2;
    const SelfDraft d   = build_self_draft(target(GgmlType::F16), s);
    EXPECT_EQ(d.storage_note, "f16 target converted to bf16");
    EXPECT_NE(d.model.name().find("f16 target converted to bf16"), std::string::npos);
    EXPECT_EQ(d.model.weights().layers[0].wq.type, GgmlType::BF16);
    EXPECT_TRUE(d.model.weights().layers[0].wq.compact);
    s.weight_trunc_bits = 0;
    s.prune.ratio       = 0.3f;  // pruning alone keeps F16 (sparse F16 rows)
    const SelfDraft p   = build_self_draft(target(GgmlType::F16), s);
    EXPECT_EQ(p.storage_note, "");
    EXPECT_EQ(p.model.weights().layers[0].wq.type, GgmlType::F16);
    EXPECT_TRUE(p.model.weights().layers[0].wq.compact);
}

TEST(SelfDraft, DraftRunsAndFastPathMatchesReference) {
    const model::Model t = target(GgmlType::F16);
    DraftSpec s;
    s.prune.ratio     = 0.5f;
    s.weight_format   = WeightFormat::mxfp4;
    s.kv_drop_ratio   = 0.25f;
    s.kv_trunc_bits   = 4;
    const SelfDraft d = build_self_draft(t, s);
    const std::vector<int32_t> toks{1, 5, 9, 2, 77};
    const auto ref = test::decode_all(d.model, toks, model::ForwardPath::reference, d.forward);
    // f32 activations: the kernels, not the int8 activation quantization (forward_test bounds that), are compared.
    const auto fast = test::decode_all(d.model, toks, model::ForwardPath::fast, d.forward, /*int8_activations=*/false);
    for (size_t i = 0; i < toks.size(); ++i) EXPECT_LT(test::rel_diff(fast[i], ref[i]), 1e-3) << i;
    const auto plain = test::decode_all(t, toks, model::ForwardPath::reference);
    EXPECT_GT(test::rel_diff(ref.back(), plain.back()), 1e-3);  // the transforms changed something
}

TEST(SelfDraft, KvTransformActsWhereTheCacheIsWritten) {
    const model::Model t = target(GgmlType::F32);
    DraftSpec s;
    s.kv_drop_ratio   = 0.5f;
    s.kv_trunc_bits   = 5;
    const SelfDraft d = build_self_draft(t, s);
    model::InferenceContext plain(t, {.n_ctx = 16, .n_batch = 8, .path = model::ForwardPath::reference});
    model::InferenceContext draft(d.model, {.n_ctx = 16, .n_batch = 8, .path = model::ForwardPath::reference});
    plain.prefill({3, 1, 4, 1, 5});
    draft.prefill({3, 1, 4, 1, 5}, d.forward);
    const int64_t w = t.hparams().n_embd_kv();
    const KvTransform kt{0.5f, 5, MantissaRounding::toward_zero};
    for (int32_t slot = 0; slot < 5; ++slot) {
        // Layer 0's K/V depend only on the embeddings: the draft's rows are exactly the scalar transform of the
        // target's.
        for (bool is_k : {true, false}) {
            std::vector<float> row(is_k ? plain.kv().k(0, slot) : plain.kv().v(0, slot),
                                   (is_k ? plain.kv().k(0, slot) : plain.kv().v(0, slot)) + w);
            kv_transform_rows_ref(row.data(), 1, w, kt);
            EXPECT_EQ(std::memcmp(row.data(), is_k ? draft.kv().k(0, slot) : draft.kv().v(0, slot), size_t(w) * 4), 0);
        }
        // Every layer's rows are fixed points of the transform (already selected and truncated).
        for (int32_t il = 0; il < t.hparams().n_layer; ++il) {
            std::vector<float> row(draft.kv().k(il, slot), draft.kv().k(il, slot) + w);
            kv_transform_rows_ref(row.data(), 1, w, kt);
            EXPECT_EQ(std::memcmp(row.data(), draft.kv().k(il, slot), size_t(w) * 4), 0);
        }
    }
}

TEST(SelfDraft, ProgressCancelAndRejections) {
    const model::Model t = target();
    DraftSpec s;
    s.weight_format = WeightFormat::q8_0;
    std::vector<double> fractions;
    build_self_draft(t, s, nullptr, [&](double f, const std::string&) { fractions.push_back(f); });
    ASSERT_GE(fractions.size(), 10u);
    EXPECT_TRUE(std::is_sorted(fractions.begin(), fractions.end()));
    EXPECT_EQ(fractions.back(), 1.0);
    CancelToken c;
    int calls = 0;
    EXPECT_THROW(build_self_draft(
                     t, s, nullptr,
                     [&](double, const std::string&) {
                         if (++calls == 5) c.cancel();
                     },
                     c),
                 Cancelled);
    DraftSpec w;
    w.prune.ratio  = 0.5f;
    w.prune.method = PruneMethod::wanda;
    EXPECT_THROW(build_self_draft(t, w), std::invalid_argument);  // no norms
    DraftSpec bad;
    bad.skip_ffn = {3};
    EXPECT_THROW(build_self_draft(t, bad), std::invalid_argument);
}

TEST(SelfDraft, WandaThroughMakeDrafterWithCalibrationTokens) {
    const model::Model t    = target(GgmlType::F32);
    const ActivationNorms n = collect_activation_norms(t, {{1, 2, 3, 4, 5, 6}, {7, 8, 9}}, 100);
    EXPECT_EQ(n.n_tokens, 9);
    ASSERT_EQ(n.sites.size(), 3u);
    EXPECT_EQ(n.sites[0][3].size(), size_t(t.hparams().n_ff));
    for (float v : n.sites[1][0]) EXPECT_GT(v, 0.0f);
    DraftSpec s;
    s.prune.ratio     = 0.5f;
    s.prune.method    = PruneMethod::wanda;
    const SelfDraft d = build_self_draft(t, s, &n);
    MatrixTransform tr;
    tr.prune_ratio  = 0.5f;
    tr.channel_norm = n.sites[2][size_t(model::ActivationSite::ffn_down)];
    EXPECT_TRUE(
        same_bytes(d.model.weights().layers[2].w_down, transform_matrix_ref(t.weights().layers[2].w_down, tr).view));
    DrafterOptions o;
    o.context            = {.n_ctx = 32, .n_batch = 16};
    o.calibration_tokens = {{1, 2, 3, 4, 5, 6}, {7, 8, 9}};
    auto dr              = make_drafter(s, t, o);
    dr->sync(std::vector<int32_t>{1, 2, 3});
    const DraftChain c = dr->propose(3, {}, {});
    EXPECT_EQ(c.tokens.size(), 3u);
    EXPECT_TRUE(c.cost.bytes_modeled);  // dense-stored pruned weights: modeled bytes
}

// build_draft reports what it built beside the drafter: a self-draft's record (its model shares the drafter's
// weights, so what `speculum-cli draft --out` saves is what runs), nothing extra for a statistical drafter.
TEST(SelfDraft, BuildDraftReportsWhatItBuilt) {
    const model::Model t = target(GgmlType::BF16);
    DraftSpec s;
    s.weight_trunc_bits = 4;
    DrafterOptions o;
    o.context              = {.n_ctx = 32, .n_batch = 16};
    const DraftBuild built = build_draft(s, t, o);
    ASSERT_TRUE(built.drafter);
    ASSERT_TRUE(built.self.has_value());
    EXPECT_FALSE(built.model.has_value());
    EXPECT_GT(built.self->bytes_owned, 0u);
    EXPECT_GE(built.seconds, built.self->build_seconds);
    const auto* md = dynamic_cast<const ModelDrafter*>(built.drafter.get());
    ASSERT_NE(md, nullptr);
    EXPECT_EQ(md->model().weights().layers[1].w_up.data, built.self->model.weights().layers[1].w_up.data)
        << "the report's model and the drafter's share one set of buffers";

    DraftSpec ngram;
    ngram.kind            = DraftKind::ngram;
    const DraftBuild stat = build_draft(ngram, t, o);
    ASSERT_TRUE(stat.drafter);
    EXPECT_FALSE(stat.self.has_value());
    EXPECT_FALSE(stat.model.has_value());
    ngram.ngram.size_n = 0;  // invalid: validated before anything is built
    EXPECT_THROW((void)build_draft(ngram, t, o), std::invalid_argument);
}

}  // namespace
}  // namespace speculum::drafts
