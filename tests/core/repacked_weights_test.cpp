// Models whose Q8_0 matrices are repacked to the in-memory Q8_0_X8 layout (WeightMemory::large_pages_repacked):
// which matrices are repacked, that the forward pass stays where the Q8_0 int8 path is (same exact block sums, only
// f32 summation order differs), that greedy decoding gives the same tokens, that batched passes equal sequential
// decode, and that exporting writes the original Q8_0 bytes. Skips where the CPU has no fast Q8_0_X8 kernel (the
// model then keeps Q8_0; that is tested too).
#include "core/drafts/weight_transforms.h"
#include "core/model/forward.h"
#include "core/model/model_gguf.h"
#include "kernels/gemv.h"
#include "kernels/prune.h"
#include "model_fixtures.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace speculum {
namespace {

using kernels::GgmlType;
using model::Model;
using model::WeightMemory;

// Logits of the repacked model against the Q8_0 model on the same int8 path: the block dots are the same exact
// int32 sums, the scaled sums are added in another order, and two layers carry that rounding on. Relative to the
// largest |logit| of the step.
constexpr float kRepackLogitRelTol = 1e-4f;

model::SyntheticSpec spec_256(bool tied) {  // widths that are whole Q8_0_X8 blocks
    model::SyntheticSpec s;
    s.n_vocab = 300, s.n_embd = 256, s.n_layer = 2, s.n_head = 4, s.n_head_kv = 2, s.n_ff = 512, s.n_ctx = 64;
    s.type = GgmlType::Q8_0, s.seed = 5, s.tied_output = tied;
    return s;
}

float max_abs(std::span<const float> v) {
    float m = 0.0f;
    for (float x : v) m = std::max(m, std::fabs(x));
    return m;
}

int32_t argmax(std::span<const float> v) {
    return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

TEST(RepackedWeights, RepacksTheQ8_0MatricesButNotTheEmbedding) {
    for (bool tied : {false, true}) {
        const Model plain = model::make_synthetic_model(spec_256(tied));
        const Model m     = Model::with_large_pages(plain, {}, {}, /*repack_q8=*/true);
        if (!kernels::q8_0_x8_preferred()) {
            EXPECT_NE(m.weight_memory(), WeightMemory::large_pages_repacked);
            EXPECT_EQ(m.weights().layers[0].wq.type, GgmlType::Q8_0);
            continue;
        }
        ASSERT_EQ(m.weight_memory(), WeightMemory::large_pages_repacked);
        EXPECT_STREQ(model::weight_memory_name(m.weight_memory()), "large-pages-repacked");
        EXPECT_EQ(m.weights().token_embd.type, GgmlType::Q8_0);
        EXPECT_EQ(m.weights().output.type, tied ? GgmlType::Q8_0 : GgmlType::Q8_0_X8) << "tied " << tied;
        for (const model::LayerWeights& L : m.weights().layers)
            for (const model::WeightView* v : L.matrices())
                if (!v->empty()) {
                    EXPECT_EQ(v->type, GgmlType::Q8_0_X8);
                }
        EXPECT_EQ(m.weight_bytes_total(), plain.weight_bytes_total());  // same bytes, other order
    }
}

TEST(RepackedWeights, LoadRepacksByDefaultWhereTheKernelIs) {
    const std::string q8 = (test::tmp_dir() / "repack_default_q8.gguf").string();
    model::write_synthetic_gguf(spec_256(false), q8);
    model::SyntheticSpec f16_spec = spec_256(false);
    f16_spec.type                 = GgmlType::F16;
    const std::string f16         = (test::tmp_dir() / "repack_default_f16.gguf").string();
    model::write_synthetic_gguf(f16_spec, f16);
    const bool repacks = kernels::q8_0_x8_preferred();

    const Model m = Model::load(q8);  // WeightMemory::automatic
    EXPECT_EQ(m.weight_memory(), repacks ? WeightMemory::large_pages_repacked : WeightMemory::mapped);
    EXPECT_EQ(m.weights().layers[1].w_down.type, repacks ? GgmlType::Q8_0_X8 : GgmlType::Q8_0);
    EXPECT_EQ(Model::load(q8, {}, {}, WeightMemory::mapped).weight_memory(), WeightMemory::mapped);
    EXPECT_EQ(Model::load(f16).weight_memory(), WeightMemory::mapped);  // nothing to repack: no copy

    // The same for a model built in memory.
    EXPECT_EQ(Model::with_preferred_memory(model::make_synthetic_model(spec_256(false))).weight_memory(),
              repacks ? WeightMemory::large_pages_repacked : WeightMemory::in_memory);
    EXPECT_EQ(Model::with_preferred_memory(model::make_synthetic_model(f16_spec)).weight_memory(),
              WeightMemory::in_memory);

    // Progress reaches 1 through the copy, and a cancel during the copy is honoured.
    std::vector<double> fractions;
    Model::load(q8, [&](double f, const std::string&) { fractions.push_back(f); });
    ASSERT_FALSE(fractions.empty());
    EXPECT_DOUBLE_EQ(fractions.back(), 1.0);
    EXPECT_TRUE(std::is_sorted(fractions.begin(), fractions.end()));
    if (repacks) {
        CancelToken token;
        EXPECT_THROW(Model::load(
                         q8,
                         [&](double f, const std::string&) {
                             if (f > 0.5) token.cancel();
                         },
                         token),
                     Cancelled);
    }
}

TEST(RepackedWeights, ForwardStaysOnTheQ8_0PathAndGreedyTokensAgree) {
    if (!kernels::q8_0_x8_preferred()) GTEST_SKIP() << "no fast Q8_0_X8 kernel on this CPU";
    const Model plain = Model::with_large_pages(model::make_synthetic_model(spec_256(false)));
    const Model x8    = Model::with_large_pages(plain, {}, {}, true);
    ASSERT_EQ(x8.weight_memory(), WeightMemory::large_pages_repacked);
    model::InferenceContext a(plain, {.n_ctx = 64, .n_batch = 16});
    model::InferenceContext b(x8, {.n_ctx = 64, .n_batch = 16});
    int32_t ta = 7, tb = 7;
    for (int32_t pos = 0; pos < 12; ++pos) {
        const auto la = a.decode(ta, pos), lb = b.decode(tb, pos);
        const float scale = max_abs(la);
        for (size_t i = 0; i < la.size(); ++i)
            ASSERT_NEAR(lb[i], la[i], kRepackLogitRelTol * scale) << "pos " << pos << " logit " << i;
        ta = argmax(la), tb = argmax(lb);
        ASSERT_EQ(ta, tb) << "greedy token at pos " << pos;
    }
}

// Bit for bit: the int8 activations turn any rounding difference into a different quantized vector downstream (a
// 1 % change of the logits on larger random models), so a batched pass that merely came close would let greedy
// speculative decoding on a repacked target drift from the target's own greedy output. w_down's rows of 2304
// columns span two column chunks of the batched kernel.
TEST(RepackedWeights, BatchedPassEqualsSequentialDecodeBitForBit) {
    if (!kernels::q8_0_x8_preferred()) GTEST_SKIP() << "no fast Q8_0_X8 kernel on this CPU";
    model::SyntheticSpec spec = spec_256(false);
    spec.n_ff                 = 2304;
    const Model x8            = Model::with_large_pages(model::make_synthetic_model(spec), {}, {}, true);
    ASSERT_EQ(x8.weights().layers[0].w_down.type, GgmlType::Q8_0_X8);
    const std::vector<int32_t> tokens{3, 141, 59, 26, 5, 35, 89, 79};
    std::vector<int32_t> pos(tokens.size());
    for (size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<int32_t>(i);
    model::InferenceContext batch(x8, {.n_ctx = 64, .n_batch = 16});
    const model::LogitsView lv = batch.forward_batch(tokens, pos);
    model::InferenceContext seq(x8, {.n_ctx = 64, .n_batch = 16});
    for (size_t i = 0; i < tokens.size(); ++i) {
        const auto ls = seq.decode(tokens[i], pos[i]);
        const auto lb = lv.row(static_cast<int32_t>(i));
        for (size_t k = 0; k < ls.size(); ++k) ASSERT_EQ(lb[k], ls[k]) << "token " << i << " logit " << k;
    }
}

TEST(RepackedWeights, ExportWritesTheOriginalQ8_0Bytes) {
    if (!kernels::q8_0_x8_preferred()) GTEST_SKIP() << "no fast Q8_0_X8 kernel on this CPU";
    const Model plain = model::make_synthetic_model(spec_256(false));
    const Model x8    = Model::with_large_pages(plain, {}, {}, true);
    ASSERT_EQ(x8.weights().layers[1].w_down.type, GgmlType::Q8_0_X8);
    model::GgufWriter g;
    g.set_string("general.architecture", "llama");
    model::add_model_tensors(g, x8.hparams(), x8.weights(), x8.hparams().n_layer, true);
    const model::GgufFile f = model::GgufFile::from_bytes(g.to_bytes(), "repacked export");
    for (const auto& [name, v] : {std::pair{"blk.1.ffn_down.weight", &plain.weights().layers[1].w_down},
                                  {"blk.0.attn_q.weight", &plain.weights().layers[0].wq},
                                  {"output.weight", &plain.weights().output}}) {
        const model::GgufTensorInfo* t = f.tensor(name);
        ASSERT_NE(t, nullptr) << name;
        EXPECT_EQ(t->type, GgmlType::Q8_0) << name;
        ASSERT_EQ(t->n_bytes, v->n_bytes()) << name;
        EXPECT_EQ(0, std::memcmp(t->data, v->data, v->n_bytes())) << name;
    }
}

TEST(RepackedWeights, WriterRefusesTheInMemoryType) {
    model::GgufWriter g;
    std::vector<uint8_t> bytes(272);
    EXPECT_THROW(g.add_tensor("w", {256}, GgmlType::Q8_0_X8, bytes.data(), bytes.size()), std::invalid_argument);
}

TEST(RepackedWeights, PruningInPlaceZeroesTheRightElement) {
    std::vector<uint8_t> q8(34 * 8), x8(34 * 8);
    for (size_t i = 0; i < q8.size(); ++i) q8[i] = static_cast<uint8_t>(i * 37 + 11);
    for (int64_t j : {0, 5, 37, 100, 255}) {
        kernels::repack_q8_0_x8(x8.data(), q8.data(), 1, 256);
        kernels::zero_element(GgmlType::Q8_0_X8, x8.data(), j);
        std::vector<uint8_t> want = q8, back(q8.size());
        kernels::zero_element(GgmlType::Q8_0, want.data(), j);
        kernels::unpack_q8_0_x8(back.data(), x8.data(), 1, 256);
        EXPECT_EQ(back, want) << "element " << j;
    }
}

}  // namespace
}  // namespace speculum
