// Forward pass correctness on tiny random-weight models: fast path == reference path for every weight type and
// shape, batched == sequential decode, rollback and tree verification == fresh decoding, layer skipping == a
// model without those layers.
#include "model_fixtures.h"

#include "core/drafts/self_draft.h"
#include "core/model/forward.h"
#include "core/model/synthetic.h"
#include "core/parallel.h"
#include "kernels/attention.h"
#include "kernels/gemm_bf16.h"
#include "kernels/gemv.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>

#include <oneapi/tbb/task_arena.h>
#include <algorithm>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

using namespace speculum;
using namespace speculum::model;
using kernels::GgmlType;
using speculum::test::copy_of;
using speculum::test::decode_all;
using speculum::test::rel_diff;

// ---- tolerances and cases ----

namespace {

// Fast (f32 activations) vs reference: the fast kernels accumulate in another order and the fast attention uses an
// online softmax.
constexpr double kFastVsRefFloatTol = 1e-4;  // F32/F16/BF16 weights
constexpr double kFastVsRefQuantTol = 1e-3;  // quantized weights
// Fast with int8 activations (Q8_0, Q4_0 and MXFP4 on AVX-512 VNNI) vs reference. Quantizing a block of 32 activations
// to int8 moves each by at most max|x| / 254 (kernels' gemv_isa_test checks that bound per dot), about 0.5 % of a
// matmul output for these random weights; through 2-3 layers, attention and the LM head this reached 6-8 % of the
// logits' rms in the largest single logit (rel_diff) on these tiny models. A broken integer kernel gives O(1)
// differences.
constexpr double kInt8ActivationsTol = 0.2;
// Hybrid (Gated DeltaNet) models carry each token's rounding into the recurrent state of every later one, and the
// decay and update gates go through softplus and sigmoid of projections: int8 activations moved these random-weight
// models by up to 0.67 of the logits' rms (IQ4_NL; Q8_0 0.28-0.29). llama.cpp's int8 path lands closer to ours than
// to the f32 reference (LlamaCppParity: qwen35 Q8_0 at 0.135 with our own gap 0.27), so this is rounding, not a
// defect; a broken kernel still gives O(1) differences, and the float types stay at kFastVsRef* above.
constexpr double kInt8ActivationsTolHybrid = 0.8;
// Same path, different batching (gemm vs gemv, different row chunks): only summation order differs.
constexpr double kBatchVsSequentialTol = 1e-4;

const std::vector<int32_t> kTokens = {1, 17, 42, 5, 99, 3, 64, 7};

struct Case {
    const char* shape;
    GgmlType type;
};

SyntheticSpec spec_of(const Case& c) {
    const std::string s = c.shape;
    if (s == "gqa") return test::spec_gqa(c.type);
    if (s == "odd_tied") return test::spec_odd_tied(c.type);
    if (s == "qwen2") return test::spec_qwen2(c.type);
    return test::spec_arch(s, c.type);
}

std::string case_name(const testing::TestParamInfo<Case>& info) {
    std::string shape = info.param.shape;
    std::replace(shape.begin(), shape.end(), '-', '_');  // gtest names: letters, digits and underscores
    return shape + "_" + kernels::ggml_type_traits(info.param.type)->name;
}

std::vector<Case> all_cases() {
    std::vector<Case> v;
    for (const char* shape : {"gqa", "odd_tied", "qwen2", "qwen3", "qwen3moe", "gpt-oss", "gemma2", "gemma3", "phi3",
                              "smollm3", "qwen35", "qwen35moe"})
        for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1,
                           GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::IQ4_NL, GgmlType::MXFP4})
            v.push_back({shape, t});
    return v;
}

class ForwardByType : public testing::TestWithParam<Case> {};

// How many leading tokens the reference path and the fast path with int8 activations route to the same experts in
// every layer (all of them for a dense model).
size_t routed_alike(const Model& m, const std::vector<int32_t>& tokens) {
    if (!m.hparams().moe()) return tokens.size();
    InferenceContext a(m, {.n_ctx = 64, .n_batch = 16, .path = ForwardPath::reference});
    InferenceContext b(m, {.n_ctx = 64, .n_batch = 16, .path = ForwardPath::fast, .int8_activations = true});
    for (size_t i = 0; i < tokens.size(); ++i) {
        a.decode(tokens[i], int32_t(i));
        b.decode(tokens[i], int32_t(i));
        for (int32_t il = 0; il < m.hparams().n_layer; ++il) {
            const auto x = a.last_experts(il), y = b.last_experts(il);
            std::vector<int32_t> sx(x.begin(), x.end()), sy(y.begin(), y.end());
            std::sort(sx.begin(), sx.end()), std::sort(sy.begin(), sy.end());
            if (sx != sy) return i;
        }
    }
    return tokens.size();
}

}  // namespace

// ---- every shape and weight type ----

TEST_P(ForwardByType, FastMatchesReferenceThroughGguf) {
    const Case c = GetParam();
    const Model m =
        test::load_via_gguf(spec_of(c), std::string("fwd_") + c.shape + "_" + kernels::ggml_type_traits(c.type)->name);
    const bool quant = c.type == GgmlType::Q8_0 || c.type == GgmlType::Q4_0 || c.type == GgmlType::MXFP4;
    const auto ref   = decode_all(m, kTokens, ForwardPath::reference);
    const auto fast  = decode_all(m, kTokens, ForwardPath::fast, {}, /*int8_activations=*/false);
    double worst     = 0.0;
    for (size_t i = 0; i < kTokens.size(); ++i) {
        EXPECT_LT(rel_diff(fast[i], ref[i]), quant ? kFastVsRefQuantTol : kFastVsRefFloatTol) << "token " << i;
        worst = std::max(worst, rel_diff(fast[i], ref[i]));
    }
    RecordProperty("worst_rel_diff", std::to_string(worst));
    if (getenv("SPECULUM_TEST_VERBOSE")) printf("worst fast-vs-ref rel diff %.3g\n", worst);
}

TEST_P(ForwardByType, Int8ActivationsStayNearReference) {
    const Case c     = GetParam();
    const Model m    = make_synthetic_model(spec_of(c));
    const auto ref   = decode_all(m, kTokens, ForwardPath::reference);
    const auto fast  = decode_all(m, kTokens, ForwardPath::fast, {}, /*int8_activations=*/true);
    const auto exact = decode_all(m, kTokens, ForwardPath::fast, {}, /*int8_activations=*/false);
    const bool used  = kernels::gemm_prefers_q8act(c.type) ||  // else both runs are the same f32 path
                      (c.type == GgmlType::BF16 && kernels::gemm_bf16act_available());
    // A mixture of experts is discontinuous: where int8 rounding moves a router logit past its neighbour, a token
    // goes to another expert and its logits part by far more than the rounding. Such tokens, and every later one
    // (their K and V differ), are compared only where both runs routed every token so far alike.
    const size_t alike = routed_alike(m, kTokens);
    EXPECT_GE(alike, 2u) << "the comparison must cover some tokens";
    double worst = 0.0;
    for (size_t i = 0; i < kTokens.size(); ++i) {
        const double d = rel_diff(fast[i], ref[i]);
        if (i < alike) {
            EXPECT_LT(d, m.hparams().hybrid() ? kInt8ActivationsTolHybrid : kInt8ActivationsTol) << "token " << i;
        }
        if (!used) {
            EXPECT_EQ(fast[i], exact[i]) << "token " << i;
        }
        worst = std::max(worst, d);
    }
    if (used) {
        EXPECT_GT(worst, 0.0) << "int8 activations had no effect: was the integer kernel used?";
    }
    if (getenv("SPECULUM_TEST_VERBOSE")) printf("worst int8-activation vs ref rel diff %.3g\n", worst);
}

TEST_P(ForwardByType, BatchedEqualsSequentialDecode) {
    const Model m = make_synthetic_model(spec_of(GetParam()));
    for (ForwardPath path : {ForwardPath::reference, ForwardPath::fast}) {
        const auto seq = decode_all(m, kTokens, path);
        InferenceContext ctx(m, {.n_ctx = 64, .n_batch = 16, .path = path});
        // Two batches (3 + 5 tokens) so the second one also attends cached slots.
        LogitsView a = ctx.forward_batch({kTokens.begin(), kTokens.begin() + 3}, {0, 1, 2});
        for (int32_t i = 0; i < 3; ++i) EXPECT_LT(rel_diff(a.row(i), seq[i]), kBatchVsSequentialTol) << i;
        LogitsView b = ctx.forward_batch({kTokens.begin() + 3, kTokens.end()}, {3, 4, 5, 6, 7});
        for (int32_t i = 0; i < 5; ++i) EXPECT_LT(rel_diff(b.row(i), seq[3 + i]), kBatchVsSequentialTol) << 3 + i;
        EXPECT_EQ(ctx.kv().size(), 8);
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, ForwardByType, testing::ValuesIn(all_cases()), case_name);

// The K-quant files (llama.cpp-quantized Q4_K, Q5_K, Q6_K, the parity goldens' models) take the 512-bit K-quant
// kernel (kernels::gemm_q8act_k) at every batch size: a verification pass of 6 tokens gives each token the logits
// that decoding it alone gives, bit for bit, as greedy speculative decoding needs to stay lossless.
TEST(Forward, KQuantFilesBatchedEqualsSequentialBitForBit) {
    for (const char* name : {"llama-q4_k.gguf", "llama-q5_k.gguf", "llama-q6_k.gguf"}) {
        SCOPED_TRACE(name);
        const auto file = test::source_dir() / "tests/core/golden/parity" / name;
        ASSERT_TRUE(std::filesystem::exists(file)) << file;
        const Model m = Model::load(file.string(), {}, {}, WeightMemory::mapped);
        const std::vector<int32_t> tokens(kTokens.begin(), kTokens.begin() + 7);
        const auto seq = decode_all(m, tokens, ForwardPath::fast);
        InferenceContext ctx(m, {.n_ctx = 64, .n_batch = 16, .path = ForwardPath::fast});
        ctx.forward_batch({tokens.begin(), tokens.begin() + 1}, {0});
        const LogitsView b = ctx.forward_batch({tokens.begin() + 1, tokens.end()}, {1, 2, 3, 4, 5, 6});
        for (int32_t i = 0; i < 6; ++i) {
            const std::span<const float> row = b.row(i);
            EXPECT_TRUE(std::equal(row.begin(), row.end(), seq[1 + i].begin())) << "token " << 1 + i;
        }
    }
}

// ---- products in shared parallel regions ----

// q, k, v (and gate, up) run in one parallel region whose tasks may end one matrix and start the next
// (InferenceContext::matmul_group). Each row's result must not depend on how the region was cut: the logits of a
// pass split into many tasks (an arena of 4 threads, matrices of many 64 KiB tasks) equal, bit for bit, those of
// the same pass run as one task per region in serial mode; for dense weights with BF16 and int8 activations, f32
// activations, and a compact draft.
TEST(Forward, SharedRegionsGiveEachProductItsOwnRows) {
    SyntheticSpec spec = test::spec_gqa(GgmlType::BF16);
    spec.n_embd = 512, spec.n_head = 8, spec.n_head_kv = 2, spec.n_ff = 1536, spec.n_layer = 2;
    for (GgmlType t : {GgmlType::BF16, GgmlType::Q8_0, GgmlType::F16}) {
        spec.type     = t;
        const Model m = make_synthetic_model(spec);
        for (bool int8 : {true, false}) {
            SCOPED_TRACE(std::string(kernels::ggml_type_traits(t)->name) + (int8 ? " int8/bf16 act" : " f32 act"));
            const auto tokens = std::vector<int32_t>(kTokens.begin(), kTokens.begin() + 3);
            set_serial_mode(true);
            const auto one = decode_all(m, tokens, ForwardPath::fast, {}, int8);
            set_serial_mode(false);
            std::vector<std::vector<float>> many;
            tbb::task_arena(4).execute([&] { many = decode_all(m, tokens, ForwardPath::fast, {}, int8); });
            for (size_t i = 0; i < tokens.size(); ++i) EXPECT_EQ(one[i], many[i]) << "token " << i;
        }
        if (t != GgmlType::BF16) continue;
        drafts::DraftSpec ds;  // a compact draft: tasks of at least 64 KiB of its streams
        ds.prune.ratio = 0.5f, ds.weight_trunc_bits = 4, ds.compact = true;
        const drafts::SelfDraft d = drafts::build_self_draft(m, ds);
        ASSERT_TRUE(d.model.weights().layers[0].w_gate.compact);
        const auto tokens = std::vector<int32_t>(kTokens.begin(), kTokens.begin() + 3);
        set_serial_mode(true);
        const auto one = decode_all(d.model, tokens, ForwardPath::fast, d.forward);
        set_serial_mode(false);
        std::vector<std::vector<float>> many;
        tbb::task_arena(4).execute([&] { many = decode_all(d.model, tokens, ForwardPath::fast, d.forward); });
        for (size_t i = 0; i < tokens.size(); ++i) EXPECT_EQ(one[i], many[i]) << "compact draft, token " << i;
    }
}

// ---- batching, rollback and trees ----

TEST(Forward, ReferenceBatchIsBitwiseSequential) {
    // The reference path runs the same scalar operations per token whether batched or not.
    const Model m  = make_synthetic_model(test::spec_qwen2(GgmlType::Q4_0));
    const auto seq = decode_all(m, kTokens, ForwardPath::reference);
    InferenceContext ctx(m, {.n_ctx = 64, .n_batch = 8, .path = ForwardPath::reference});
    LogitsView v = ctx.forward_batch(kTokens, {0, 1, 2, 3, 4, 5, 6, 7});
    for (int32_t i = 0; i < 8; ++i) EXPECT_EQ(copy_of(v.row(i)), seq[i]) << i;
}

TEST(Forward, PrefillInChunksMatchesLastDecode) {
    const Model m  = make_synthetic_model(test::spec_gqa(GgmlType::F16));
    const auto seq = decode_all(m, kTokens, ForwardPath::fast);
    InferenceContext ctx(m, {.n_ctx = 64, .n_batch = 3, .path = ForwardPath::fast});  // 3 + 3 + 2
    EXPECT_LT(rel_diff(ctx.prefill(kTokens), seq.back()), kBatchVsSequentialTol);
    EXPECT_EQ(ctx.kv().size(), 8);
}

TEST(Forward, LargeBatchBlasPathEqualsSequentialDecode) {
    // 64 tokens >= the prompt threshold, f32 activations: for Q4_0, dequantized tiles times the activations through
    // OpenBLAS (with int8 activations Q4_0 would take its integer kernel); for F16 on AVX-512, the F16 kernel
    // (kernels/gemm_f16.h), else OpenBLAS too; both with the GEMM attention of large batches. The sequential decode
    // they are compared with keeps f32 activations too.
    for (GgmlType t : {GgmlType::Q4_0, GgmlType::F16}) {
        SCOPED_TRACE(ggml_type_traits(t)->name);
        const Model m = make_synthetic_model(test::spec_odd_tied(t));
        std::vector<int32_t> toks, pos;
        for (int32_t i = 0; i < 64; ++i) toks.push_back((i * 37 + 11) % m.hparams().n_vocab), pos.push_back(i);
        const auto seq = decode_all(m, toks, ForwardPath::fast, {}, /*int8_activations=*/false);
        InferenceContext ctx(m, {.n_ctx = 64, .n_batch = 64, .path = ForwardPath::fast, .int8_activations = false});
        LogitsView v = ctx.forward_batch(toks, pos);
        for (int32_t i = 0; i < 64; ++i)
            EXPECT_LT(rel_diff(v.row(i), seq[static_cast<size_t>(i)]), kBatchVsSequentialTol) << i;
    }
}

TEST(Forward, ManyHeadsAttendTheirOwnKvHeads) {
    // 12 query heads over 4 KV heads: the fast attention's work items are blocks of up to 8 heads, so this needs a
    // second, partial block whose heads map to later KV heads. A mixed-up head or KV offset moves the logits O(1).
    SyntheticSpec s = test::spec_gqa(GgmlType::F32);
    s.n_embd = 192, s.n_head = 12, s.n_head_kv = 4, s.seed = 21;
    const Model m   = make_synthetic_model(s);
    const auto ref  = decode_all(m, kTokens, ForwardPath::reference);
    const auto fast = decode_all(m, kTokens, ForwardPath::fast);
    for (size_t i = 0; i < kTokens.size(); ++i) EXPECT_LT(rel_diff(fast[i], ref[i]), kFastVsRefFloatTol) << i;
    InferenceContext ctx(m, {.n_ctx = 64, .n_batch = 16, .path = ForwardPath::fast});
    LogitsView v = ctx.forward_batch(kTokens, {0, 1, 2, 3, 4, 5, 6, 7});
    for (int32_t i = 0; i < 8; ++i)
        EXPECT_LT(rel_diff(v.row(i), fast[static_cast<size_t>(i)]), kBatchVsSequentialTol) << i;
}

TEST(Forward, RollbackThenRedecodeEqualsFreshDecode) {
    const Model m = make_synthetic_model(test::spec_gqa(GgmlType::Q8_0));
    for (ForwardPath path : {ForwardPath::reference, ForwardPath::fast}) {
        InferenceContext ctx(m, {.n_ctx = 64, .n_batch = 8, .path = path});
        for (int32_t i = 0; i < 6; ++i) ctx.decode(kTokens[i], i);
        ctx.kv().truncate(3);  // forget tokens 3..5 (a rejected draft)
        const std::vector<int32_t> other = {1, 17, 42, 77, 12};
        std::vector<float> last;
        for (int32_t i = 3; i < 5; ++i) last = copy_of(ctx.decode(other[i], i));
        const auto fresh = decode_all(m, other, path);
        EXPECT_LT(rel_diff(last, fresh.back()), kBatchVsSequentialTol);
    }
}

TEST(Forward, TreeMaskEqualsDecodingEachBranch) {
    // Prefix p0 p1 p2, then the tree  a(3) -> b(4) -> d(5),  a(3) -> c(4)  as nodes [a, b, c, d].
    const Model m                     = make_synthetic_model(test::spec_qwen2(GgmlType::F16));
    const std::vector<int32_t> prefix = {5, 6, 7};
    const int32_t a = 10, b = 20, c = 30, d = 40;
    for (ForwardPath path : {ForwardPath::reference, ForwardPath::fast}) {
        InferenceContext ctx(m, {.n_ctx = 64, .n_batch = 8, .path = path});
        ctx.forward_batch(prefix, {0, 1, 2});
        const std::vector<uint8_t> mask = {1, 0, 0, 0,   // a: itself
                                           1, 1, 0, 0,   // b: a, b
                                           1, 0, 1, 0,   // c: a, c
                                           1, 1, 0, 1};  // d: a, b, d
        LogitsView v                    = ctx.forward_batch({a, b, c, d}, {3, 4, 4, 5}, mask);
        const auto abd                  = decode_all(m, {5, 6, 7, a, b, d}, path);
        const auto ac                   = decode_all(m, {5, 6, 7, a, c}, path);
        EXPECT_LT(rel_diff(v.row(0), abd[3]), kBatchVsSequentialTol);
        EXPECT_LT(rel_diff(v.row(1), abd[4]), kBatchVsSequentialTol);
        EXPECT_LT(rel_diff(v.row(3), abd[5]), kBatchVsSequentialTol);
        EXPECT_LT(rel_diff(v.row(2), ac[4]), kBatchVsSequentialTol);
        // A wrong mask must be visible: c's logits differ from b's.
        EXPECT_GT(rel_diff(v.row(2), abd[4]), 1e-2);

        // Accept the path a -> c: compact it to slots 3, 4 and continue decoding.
        ctx.kv().compact(3, {3, 5});
        ASSERT_EQ(ctx.kv().size(), 5);
        const auto next  = copy_of(ctx.decode(50, 5));
        const auto fresh = decode_all(m, {5, 6, 7, a, c, 50}, path);
        EXPECT_LT(rel_diff(next, fresh.back()), kBatchVsSequentialTol);
    }
}

// ---- layer skipping and slot selection ----

TEST(Forward, LayerSkipEqualsModelWithoutTheLayers) {
    SyntheticSpec s = test::spec_gqa(GgmlType::F16);
    s.n_layer       = 4;
    const Model m   = make_synthetic_model(s);
    auto without    = [&](std::vector<int> keep) {
        ModelWeights w = m.weights();
        w.layers.clear();
        for (int il : keep) w.layers.push_back(m.weights().layers[static_cast<size_t>(il)]);
        Hparams hp = m.hparams();
        hp.n_layer = static_cast<int32_t>(keep.size());
        return Model::from_weights(hp, w);
    };
    const std::vector<int32_t> toks = {3, 1, 4, 1, 5};
    ForwardOptions skip1;
    skip1.skip_attn = {0, 1, 0, 0};
    skip1.skip_ffn  = {0, 1, 0, 0};
    ForwardOptions exit1;
    exit1.exit_layer = 1;
    for (ForwardPath path : {ForwardPath::reference, ForwardPath::fast}) {
        const auto skipped = decode_all(m, toks, path, skip1);
        const auto removed = decode_all(without({0, 2, 3}), toks, path);
        const auto exited  = decode_all(m, toks, path, exit1);
        const auto trunc   = decode_all(without({0, 1}), toks, path);
        const auto full    = decode_all(m, toks, path);
        for (size_t i = 0; i < toks.size(); ++i) {
            EXPECT_LT(rel_diff(skipped[i], removed[i]), kBatchVsSequentialTol) << i;
            EXPECT_LT(rel_diff(exited[i], trunc[i]), kBatchVsSequentialTol) << i;
            EXPECT_GT(rel_diff(skipped[i], full[i]), 1e-2) << i;  // skipping must change something
        }
    }
}

TEST(Forward, SkipAttentionEqualsZeroOutputProjection) {
    const Model m        = make_synthetic_model(test::spec_gqa(GgmlType::F32));
    ModelWeights w       = m.weights();
    const WeightView& wo = w.layers[1].wo;
    w.layers[1].wo       = make_owned_view(GgmlType::F32, wo.rows, wo.cols, std::vector<uint8_t>(wo.n_bytes(), 0));
    const Model zeroed   = Model::from_weights(m.hparams(), w);
    ForwardOptions opts;
    opts.skip_attn = {0, 1};
    const auto a   = decode_all(m, kTokens, ForwardPath::fast, opts);
    const auto b   = decode_all(zeroed, kTokens, ForwardPath::fast);
    for (size_t i = 0; i < kTokens.size(); ++i) EXPECT_LT(rel_diff(a[i], b[i]), kBatchVsSequentialTol) << i;
}

TEST(Forward, ExplicitCachedSlotsSelectWhatIsAttended) {
    const Model m = make_synthetic_model(test::spec_gqa(GgmlType::F16));
    InferenceContext all(m, {.n_ctx = 64, .n_batch = 8});
    InferenceContext sel(m, {.n_ctx = 64, .n_batch = 8});
    all.prefill({1, 2, 3, 4});
    sel.prefill({1, 2, 3, 4});
    ForwardOptions every;
    every.cached_slots = std::vector<int32_t>{0, 1, 2, 3};
    EXPECT_LT(rel_diff(sel.decode(9, 4, every), copy_of(all.decode(9, 4))), kBatchVsSequentialTol);
    ForwardOptions some;
    some.cached_slots = std::vector<int32_t>{0, 3};
    all.kv().truncate(4);
    sel.kv().truncate(4);
    EXPECT_GT(rel_diff(sel.decode(9, 4, some), copy_of(all.decode(9, 4))), 1e-3);
}

// ---- errors, cancellation and cost ----

TEST(Forward, ErrorsAreClear) {
    const Model m = make_synthetic_model(test::spec_gqa(GgmlType::F32));
    InferenceContext ctx(m, {.n_ctx = 4, .n_batch = 2});
    EXPECT_THROW(ctx.decode(m.hparams().n_vocab, 0), std::out_of_range);
    EXPECT_THROW(ctx.forward_batch({1, 2, 3}, {0, 1, 2}), std::invalid_argument);          // over n_batch
    EXPECT_THROW(ctx.forward_batch({1, 2}, {0, 1}, {1, 0, 1, 0}), std::invalid_argument);  // diagonal missing
    ForwardOptions bad;
    bad.exit_layer = 7;
    EXPECT_THROW(ctx.decode(1, 0, bad), std::invalid_argument);
    for (int32_t i = 0; i < 4; ++i) ctx.decode(1, i);
    try {
        ctx.decode(1, 4);
        FAIL() << "expected KvCacheFull";
    } catch (const KvCacheFull& e) {
        EXPECT_NE(std::string(e.what()).find("context length 4"), std::string::npos) << e.what();
    }
    EXPECT_EQ(ctx.kv().size(), 4);
}

TEST(Forward, CancelLeavesTheCacheUnchanged) {
    const Model m = make_synthetic_model(test::spec_gqa(GgmlType::F32));
    InferenceContext ctx(m, {.n_ctx = 16, .n_batch = 4});
    ctx.decode(1, 0);
    CancelToken token;
    ctx.set_cancel(token);
    token.cancel();
    EXPECT_THROW(ctx.decode(2, 1), Cancelled);
    EXPECT_EQ(ctx.kv().size(), 1);
}

TEST(Forward, CostCountsWhatThePassReads) {
    const Model m = make_synthetic_model(test::spec_qwen2(GgmlType::Q8_0));
    InferenceContext ctx(m, {.n_ctx = 64, .n_batch = 8});
    ctx.prefill({1, 2, 3});
    ctx.decode(4, 3);
    EXPECT_EQ(ctx.last_cost().bytes_weights, m.weight_bytes_per_token());
    const Hparams& hp = m.hparams();
    // 4 slots (3 cached + itself) of K and V read, one slot written, in every layer.
    EXPECT_EQ(ctx.last_cost().bytes_kv, uint64_t(hp.n_layer) * (3 + 2) * hp.n_embd_kv() * 2 * 4);
    const double matmul_flops = 2.0 * double(m.weight_bytes_per_token()) / 34 * 32;  // Q8_0: 34 bytes per 32
    EXPECT_GT(ctx.last_cost().flops, 0.9 * matmul_flops);
    ForwardOptions early;
    early.exit_layer = 0;
    ctx.decode(5, 4, early);
    EXPECT_LT(ctx.last_cost().bytes_weights, m.weight_bytes_per_token());
    ctx.forward_batch({6, 7}, {5, 6});
    EXPECT_LT(ctx.last_cost().bytes_weights, 2 * m.weight_bytes_per_token());  // weights read once for both
    EXPECT_GT(ctx.last_cost().flops, 1.9 * matmul_flops);
}

// ---- long contexts and BF16 prompts ----

// A batch of 150 tokens after 20 cached ones takes the GEMM attention in blocks of 64 query rows (the last one
// partial), each seeing the cached slots and the new ones up to its last row. Every row matches the same tokens
// decoded one at a time, without a mask (causal blocks, the triangle above each skipped) and with an explicit causal
// mask (every block sees every slot); for plain GQA and for gemma2's windows and soft-caps. A block offset or slot
// count off by one moves the logits O(1).
TEST(Forward, GemmAttentionInRowBlocksMatchesDecode) {
    for (const char* arch : {"llama", "gemma2"}) {
        SCOPED_TRACE(arch);
        const Model m           = make_synthetic_model(std::string(arch) == "llama" ? test::spec_gqa(GgmlType::F32)
                                                                                    : test::spec_arch(arch, GgmlType::F32));
        constexpr int32_t kPast = 20, kNew = 150;
        std::vector<int32_t> toks;
        for (int32_t i = 0; i < kPast + kNew; ++i) toks.push_back((i * 29 + 3) % m.hparams().n_vocab);
        InferenceContext seq(m, {.n_ctx = 192, .n_batch = 1, .path = ForwardPath::fast});
        std::vector<std::vector<float>> want;
        for (int32_t i = 0; i < kPast + kNew; ++i) want.push_back(copy_of(seq.decode(toks[i], i)));
        const std::vector<int32_t> past(toks.begin(), toks.begin() + kPast), fresh(toks.begin() + kPast, toks.end());
        std::vector<int32_t> past_pos(kPast), pos(kNew);
        for (int32_t i = 0; i < kPast; ++i) past_pos[i] = i;
        for (int32_t i = 0; i < kNew; ++i) pos[i] = kPast + i;
        std::vector<uint8_t> causal(static_cast<size_t>(kNew) * kNew, 0);
        for (int32_t i = 0; i < kNew; ++i)
            for (int32_t j = 0; j <= i; ++j) causal[static_cast<size_t>(i) * kNew + j] = 1;
        for (bool with_mask : {false, true}) {
            SCOPED_TRACE(with_mask ? "explicit causal mask" : "no mask");
            InferenceContext ctx(m, {.n_ctx = 192, .n_batch = kNew, .path = ForwardPath::fast});
            ctx.forward_batch(past, past_pos);
            const LogitsView v = ctx.forward_batch(fresh, pos, with_mask ? causal : std::vector<uint8_t>{});
            for (int32_t i = 0; i < kNew; ++i)
                EXPECT_LT(rel_diff(v.row(i), want[static_cast<size_t>(kPast + i)]), kBatchVsSequentialTol) << i;
        }
    }
}

// Long contexts take the fast path's GEMM attention for every batch (decode and verification too, once 256 slots are
// cached): against the reference path on a 300-token prompt, then a token tree, for plain GQA and for gemma2's
// windows and soft-caps.
TEST(Forward, LongContextGemmAttentionMatchesReference) {
    for (const char* arch : {"llama", "gemma2"}) {
        SCOPED_TRACE(arch);
        const Model m = make_synthetic_model(std::string(arch) == "llama" ? test::spec_gqa(GgmlType::F32)
                                                                          : test::spec_arch(arch, GgmlType::F32));
        std::vector<int32_t> prompt;
        for (int32_t i = 0; i < 300; ++i) prompt.push_back((i * 53 + 7) % m.hparams().n_vocab);
        const std::vector<int32_t> tree = {5, 9, 11, 13, 17};
        const std::vector<int32_t> pos  = {300, 301, 301, 302, 302};  // two branches of depth 3
        const std::vector<uint8_t> mask = {1, 0, 0, 0, 0,             //
                                           1, 1, 0, 0, 0,             //
                                           1, 0, 1, 0, 0,             //
                                           1, 1, 0, 1, 0,             //
                                           1, 0, 1, 0, 1};
        std::vector<std::vector<float>> out;
        // The fast path twice: with kernels::attend where the CPU has it (the online kernel at any context), and
        // capped to AVX2, where a small batch over 256+ cached slots takes the GEMM attention.
        for (int run = 0; run < 3; ++run) {
            const ForwardPath path = run == 0 ? ForwardPath::reference : ForwardPath::fast;
            if (run == 2) kernels::set_kernel_isa_cap(kernels::KernelIsa::avx2);
            InferenceContext ctx(m, {.n_ctx = 320, .n_batch = 64, .path = path});
            ctx.prefill(prompt);
            const LogitsView v = ctx.forward_batch(tree, pos, mask);
            for (int32_t i = 0; i < v.n; ++i) out.emplace_back(v.row(i).begin(), v.row(i).end());
            kernels::set_kernel_isa_cap(kernels::KernelIsa::avx512);
        }
        for (size_t i = 0; i < tree.size(); ++i) {
            EXPECT_LT(rel_diff(out[tree.size() + i], out[i]), kFastVsRefFloatTol) << i;
            EXPECT_LT(rel_diff(out[2 * tree.size() + i], out[i]), kFastVsRefFloatTol) << "avx2 " << i;
        }
    }
}

// A token's logits do not depend on the pass it is in, on either side of the long-context threshold (256 cached
// slots): decoding one token at a time, and one verification pass of 8 tokens that starts below 256 and ends above
// it, give the same logits bit for bit (F32 weights, whose every product reaches the logits unrounded: the matmul
// tiles sum each (row, token) the same way at every batch size, and attention runs the online kernel at every context
// length; with the GEMM attention from 256 cached slots, positions 256 and 257 differed by 2e-6). Greedy speculative
// decoding's losslessness in long contexts rests on this.
TEST(Forward, VerificationAcrossTheLongContextThresholdEqualsDecode) {
    if (!kernels::attend_fast_available(16)) GTEST_SKIP() << "needs AVX-512 (kernels::attend)";
    SyntheticSpec s = test::spec_gqa(GgmlType::F32);
    s.n_ctx         = 300;
    const Model m   = make_synthetic_model(s);
    std::vector<int32_t> prompt, toks, pos;
    for (int32_t i = 0; i < 250; ++i) prompt.push_back((i * 37 + 3) % m.hparams().n_vocab);
    for (int32_t i = 0; i < 8; ++i) toks.push_back((i * 11 + 5) % m.hparams().n_vocab), pos.push_back(250 + i);
    InferenceContext a(m, {.n_ctx = 300, .n_batch = 64}), b(m, {.n_ctx = 300, .n_batch = 64});
    a.prefill(prompt);
    b.prefill(prompt);
    const LogitsView v = b.forward_batch(toks, pos, {});
    for (int32_t i = 0; i < 8; ++i) {
        const std::vector<float> step = test::copy_of(a.decode(toks[size_t(i)], pos[size_t(i)]));
        EXPECT_EQ(step, std::vector<float>(v.row(i).begin(), v.row(i).end())) << "position " << pos[size_t(i)];
    }
}

// BF16 prompts on AVX-512 BF16 CPUs multiply BF16-rounded activations (kernels/gemm_bf16.h): near the reference, and
// really used (different from the f32-activation fast path) where the CPU has the instruction.
TEST(Forward, Bf16PromptActivationsStayNearReference) {
    const Model m = make_synthetic_model(test::spec_gqa(GgmlType::BF16));
    std::vector<int32_t> toks, pos;
    for (int32_t i = 0; i < 70; ++i) toks.push_back((i * 29 + 3) % m.hparams().n_vocab), pos.push_back(i);
    auto run = [&](ForwardPath path, bool reduced) {
        InferenceContext ctx(m, {.n_ctx = 80, .n_batch = 80, .path = path, .int8_activations = reduced});
        const LogitsView v = ctx.forward_batch(toks, pos);
        return std::vector<float>(v.data, v.data + static_cast<size_t>(v.n) * v.n_vocab);
    };
    const auto ref = run(ForwardPath::reference, false), bf = run(ForwardPath::fast, true);
    const auto exact = run(ForwardPath::fast, false);
    const size_t nv  = static_cast<size_t>(m.hparams().n_vocab);
    double worst = 0, moved = 0;
    for (size_t i = 0; i < toks.size(); ++i) {
        const std::span<const float> r(ref.data() + i * nv, nv), b(bf.data() + i * nv, nv),
            e(exact.data() + i * nv, nv);
        worst = std::max(worst, rel_diff(b, r));
        moved = std::max(moved, rel_diff(b, e));
    }
    EXPECT_LT(worst, kInt8ActivationsTol);
    if (kernels::gemm_bf16act_available())
        EXPECT_GT(moved, 0.0) << "BF16 activations had no effect";
    else
        EXPECT_EQ(moved, 0.0);
}
