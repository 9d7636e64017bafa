// Bit accounting against hand-computed cases: pruned BF16 with a bitmap, truncated BF16, MXFP4, Q8_0, early exit,
// KV compression, the Cassandra split and J; vocabulary compatibility refusals naming the failed check.
#include "core/drafts/draft_bits.h"
#include "core/drafts/vocab_compat.h"
#include "core/model/gguf_writer.h"
#include "model_fixtures.h"

#include <gtest/gtest.h>

namespace speculum::drafts {
namespace {

using kernels::GgmlType;

TEST(DraftBits, MatrixBitsHandCases) {
    EXPECT_DOUBLE_EQ(matrix_bits(GgmlType::BF16, 0.5, 0).modeled, 0.5 * 16 + 1);  // 9: half the values + bitmap
    EXPECT_TRUE(matrix_bits(GgmlType::BF16, 0.5, 0).is_modeled);
    EXPECT_DOUBLE_EQ(matrix_bits(GgmlType::BF16, 0.5, 0).real, 16);
    EXPECT_DOUBLE_EQ(matrix_bits(GgmlType::BF16, 0.0, 3).modeled, 13);              // 1 + 8 + 4 packed
    EXPECT_DOUBLE_EQ(matrix_bits(GgmlType::BF16, 0.25, 4).modeled, 0.75 * 12 + 1);  // 10
    EXPECT_DOUBLE_EQ(matrix_bits(GgmlType::MXFP4, 0.0, 0).real, 4 + 8.0 / 32);      // 4.25
    EXPECT_FALSE(matrix_bits(GgmlType::MXFP4, 0.0, 0).is_modeled);
    EXPECT_DOUBLE_EQ(matrix_bits(GgmlType::Q8_0, 0.0, 0).real, 8.5);
    EXPECT_DOUBLE_EQ(matrix_bits(GgmlType::Q8_0, 0.5, 0).modeled, 0.5 * 8 + 1 + 0.5);
    EXPECT_DOUBLE_EQ(matrix_bits(GgmlType::F32, 0.0, 0).real, 32);
}

model::Model bf16_target() {
    model::SyntheticSpec s = test::spec_gqa(GgmlType::BF16);  // n_embd 64, n_embd_kv 32, n_ff 128, 2 layers, 160 vocab
    return model::make_synthetic_model(s);
}

TEST(DraftBits, SpecsOnAHandCheckedModel) {
    const model::Model t = bf16_target();
    // Matrices per forward: per layer wq 64x64, wk 32x64, wv 32x64, wo 64x64, gate/up/down 128x64 x3 = 36864;
    // two layers 73728; head 160x64 = 10240. Total 83968 elements.
    const double layer = 64 * 64 * 2 + 32 * 64 * 2 + 3 * 128 * 64, head = 160 * 64, all = 2 * layer + head;
    const uint64_t small = 64 * 2 /*embd row, bf16*/ + 4 * (2 * (64 + 64) + 64) /*norms*/;
    DraftSpec id;
    DraftBits b = draft_bits(id, t);
    EXPECT_EQ(b.weight_elements_per_forward, int64_t(all));
    EXPECT_DOUBLE_EQ(b.weight_bits_per_element, 16);
    EXPECT_FALSE(b.weights_modeled);
    EXPECT_EQ(b.weight_bytes_per_forward, uint64_t(all * 2) + small);
    EXPECT_EQ(b.weight_bytes_per_forward, t.weight_bytes_per_token());
    EXPECT_EQ(b.verify_weight_bytes_per_forward, t.weight_bytes_per_token());
    EXPECT_EQ(b.kv_bytes_per_token, 2u * 2 * 32 * 4);
    EXPECT_DOUBLE_EQ(b.verification_data_bits_per_element, 0);

    DraftSpec p;  // 50% of attention + FFN pruned, head kept, stored dense: (2 layer * 9 + head * 16) / all modeled
    p.prune.ratio = 0.5f;
    p.compact     = false;
    b             = draft_bits(p, t);
    EXPECT_TRUE(b.weights_modeled);
    EXPECT_DOUBLE_EQ(b.weight_bits_per_element, (2 * layer * 9 + head * 16) / all);
    EXPECT_DOUBLE_EQ(b.weight_bits_per_element_real, 16);
    EXPECT_EQ(b.weight_bytes_per_forward, uint64_t((2 * layer * 9 + head * 16) / 8) + small);
    EXPECT_DOUBLE_EQ(b.verification_data_bits_per_element, 2 * layer * 0.5 * 16 / all);  // the pruned values
    EXPECT_DOUBLE_EQ(b.j_weight_bits, (2 * layer * 8 + head * 16) / all);
    // Stored compact (the default): the kernels read the compact streams, as kernels::compact_bits_per_element
    // expects them per matrix (rows of 64 or 128 elements: the 8-byte tile offsets weigh an eighth of a bit per element
    // here).
    p.compact          = true;
    const DraftBits bc = draft_bits(p, t);
    EXPECT_FALSE(bc.weights_modeled);
    const kernels::CompactFormat sp{GgmlType::BF16, true, 0};
    const double rows64 = 64 * 64 * 2 + 32 * 64 * 2 + 2 * 128 * 64, rows128 = 64 * 128;  // by row length
    const double expect = (2 * rows64 * kernels::compact_bits_per_element(sp, 64, 0.5) +
                           2 * rows128 * kernels::compact_bits_per_element(sp, 128, 0.5) + head * 16) /
                          all;
    EXPECT_NEAR(bc.weight_bits_per_element, expect, 1e-9);
    EXPECT_DOUBLE_EQ(bc.weight_bits_per_element_real, bc.weight_bits_per_element);
    EXPECT_LT(bc.weight_bits_per_element, 16);
    EXPECT_DOUBLE_EQ(bc.j_weight_bits, b.j_weight_bits);  // J counts the paper's values, however they are stored

    DraftSpec m;  // MXFP4 everywhere incl. the head: real 4.25
    m.weight_format = WeightFormat::mxfp4;
    b               = draft_bits(m, t);
    EXPECT_FALSE(b.weights_modeled);
    EXPECT_DOUBLE_EQ(b.weight_bits_per_element, 4.25);
    EXPECT_EQ(b.weight_bytes_per_forward, uint64_t(all * 4.25 / 8) + small);
    EXPECT_EQ(b.verification_data_bits_per_element, -1);  // a re-encoded copy, not a subset
    m.weight_format = WeightFormat::q8_0;
    EXPECT_DOUBLE_EQ(draft_bits(m, t).weight_bits_per_element, 8.5);

    DraftSpec e;  // early exit after layer 0, t = 4, KV: drop 25% and t_kv = 8? no: t_kv = 6
    e.exit_layer        = 0;
    e.weight_trunc_bits = 4;
    e.kv_drop_ratio     = 0.25f;
    e.kv_trunc_bits     = 6;
    e.compact           = false;
    b                   = draft_bits(e, t);
    EXPECT_EQ(b.weight_elements_per_forward, int64_t(layer + head));
    EXPECT_DOUBLE_EQ(b.weight_bits_per_element, 12);
    EXPECT_DOUBLE_EQ(b.verification_data_bits_per_element, 4);
    EXPECT_TRUE(b.kv_modeled);
    EXPECT_DOUBLE_EQ(b.kv_bits_per_element, 0.75 * 10 + 1);  // 8 of 32 values dropped; bitmap
    EXPECT_EQ(b.kv_elements_per_token, 2 * 32);              // one attention layer, K + V
    EXPECT_EQ(b.kv_bytes_per_token, uint64_t(64 * 8.5 / 8));
    EXPECT_DOUBLE_EQ(b.j_kv_bits, 0.75 * 10);
    EXPECT_DOUBLE_EQ(cassandra_objective(0.8, b, 100), 0.8 / ((layer + head) * 12 + 64 * 100 * 7.5));
    EXPECT_DOUBLE_EQ(bits_per_draft_token(b, 10), 8.0 * double(b.weight_bytes_per_forward + 10 * b.kv_bytes_per_token));

    DraftSpec g;
    g.kind = DraftKind::maxgram;
    b      = draft_bits(g, t);
    EXPECT_EQ(b.weight_bytes_per_forward, 0u);
    EXPECT_EQ(b.kv_bytes_per_token, 0u);
}

// Cassandra's J counts the target's stored bits (issue #24): 8.5 per Q8_0 element, not a constant 16; the f32 cache
// counts 32 bits per value unless a truncated (BF16-form) view is read.
TEST(DraftBits, CassandraJUsesTheTargetsStoredBits) {
    const model::Model t = model::make_synthetic_model(test::spec_gqa(GgmlType::Q8_0));
    const double layer = 64 * 64 * 2 + 32 * 64 * 2 + 3 * 128 * 64, head = 160 * 64, all = 2 * layer + head;
    DraftSpec p;
    p.prune.ratio     = 0.5f;
    const DraftBits b = draft_bits(p, t);
    EXPECT_DOUBLE_EQ(b.j_weight_bits, (2 * layer * 0.5 * 8.5 + head * 8.5) / all);
    EXPECT_DOUBLE_EQ(b.j_kv_bits, 32);
    DraftSpec kv;
    kv.kv_drop_ratio = 0.25f;
    EXPECT_DOUBLE_EQ(draft_bits(kv, t).j_kv_bits, 0.75 * 32);
    // A truncated quantized target: the draft re-encodes the weights in BF16 and truncates there, so B is 16, not the
    // target's 4.5 bits (issue #52: 4.5 - 5 made J's denominator negative for Q4_0 at t = 5).
    const model::Model q4 = model::make_synthetic_model(test::spec_gqa(GgmlType::Q4_0));
    DraftSpec tr;
    tr.weight_trunc_bits = 5;
    const DraftBits bt   = draft_bits(tr, q4);
    EXPECT_DOUBLE_EQ(bt.j_weight_bits, 16.0 - 5.0);  // every matrix truncated (the head too, as format_output)
    EXPECT_GT(cassandra_objective(0.8, bt, 100), 0.0);
}

// Rewrites a synthetic GGUF with tokenizer metadata.
std::string with_vocab(const std::string& name, const std::vector<std::string>& tokens, const std::string& type,
                       int32_t bos, int32_t eos, bool add_bos, int n_vocab = 160) {
    model::SyntheticSpec s = test::spec_gqa(GgmlType::F32);
    s.n_vocab              = n_vocab;
    const std::string base = (test::tmp_dir() / (name + "_base.gguf")).string();
    model::write_synthetic_gguf(s, base);
    const model::GgufFile f = model::GgufFile::open(base);
    model::GgufWriter g;
    for (const auto& kv : f.metadata()) g.set_value(kv.key, kv.value);
    for (const auto& ti : f.tensors()) g.add_tensor(ti.name, ti.dims, ti.type, ti.data, ti.n_bytes);
    g.set_string("tokenizer.ggml.model", type);
    g.set_array_strings("tokenizer.ggml.tokens", tokens);
    g.set_uint32("tokenizer.ggml.bos_token_id", uint32_t(bos));
    g.set_uint32("tokenizer.ggml.eos_token_id", uint32_t(eos));
    g.set_bool("tokenizer.ggml.add_bos_token", add_bos);
    const std::string path = (test::tmp_dir() / (name + ".gguf")).string();
    g.write(path);
    return path;
}

std::vector<std::string> words(int n, int changed = -1) {
    std::vector<std::string> v;
    for (int i = 0; i < n; ++i) v.push_back(i == changed ? "other" : "tok" + std::to_string(i));
    return v;
}

TEST(VocabCompat, LlamaCppChecksEachExplained) {
    const model::Model t = model::Model::load(with_vocab("vt", words(160), "llama", 1, 2, true));
    auto why             = [&](const std::string& path) {
        try {
            check_vocab_compatible(t, model::Model::load(path));
        } catch (const VocabMismatch& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_EQ(why(with_vocab("v_ok", words(160, 3), "llama", 1, 2, true)), "");  // ids < 5 are not compared
    EXPECT_NE(why(with_vocab("v_type", words(160), "gpt2", 1, 2, true))
                  .find("vocab type (tokenizer.ggml.model) differs: target 'llama', draft 'gpt2'"),
              std::string::npos);
    EXPECT_NE(why(with_vocab("v_bos", words(160), "llama", 0, 2, true)).find("bos_token_id differs: target 1, draft 0"),
              std::string::npos);
    EXPECT_NE(why(with_vocab("v_eos", words(160), "llama", 1, 3, true)).find("eos_token_id differs"),
              std::string::npos);
    EXPECT_NE(why(with_vocab("v_add", words(160), "llama", 1, 2, false))
                  .find("add_bos_token differs: target true, draft false"),
              std::string::npos);
    EXPECT_NE(why(with_vocab("v_tok", words(160, 42), "llama", 1, 2, true))
                  .find("token 42 differs: target 'tok42', draft 'other'"),
              std::string::npos);
    const std::string small = with_vocab("v_small", words(20), "llama", 1, 2, true, 20);
    EXPECT_NE(why(small).find("vocabulary sizes differ by 140"), std::string::npos);
    EXPECT_NE(why(small).find("cannot speculate for target"), std::string::npos);
    // In-memory models carry no tokenizer: only n_vocab is compared.
    model::SyntheticSpec s = test::spec_gqa(GgmlType::F32);
    s.n_vocab              = 150;
    EXPECT_THROW(check_vocab_compatible(t, model::make_synthetic_model(s)), VocabMismatch);
}

}  // namespace
}  // namespace speculum::drafts

namespace speculum::drafts {
namespace {

TEST(VocabCompat, ModelsWithoutTokenizersCompareOnlyTheVocabularySize) {
    model::SyntheticSpec s = test::spec_gqa(kernels::GgmlType::F32);
    const model::Model a   = model::make_synthetic_model(s);
    s.seed                 = 99;
    EXPECT_NO_THROW(check_vocab_compatible(a, model::make_synthetic_model(s)));
    const model::Model with = model::Model::load(with_vocab("v_one", words(160), "llama", 1, 2, true));
    try {
        check_vocab_compatible(with, a);
        ADD_FAILURE() << "a draft without tokenizer metadata was accepted";
    } catch (const VocabMismatch& e) {
        EXPECT_NE(std::string(e.what()).find("the draft has no tokenizer metadata"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace speculum::drafts
