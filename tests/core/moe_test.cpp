// Mixture-of-experts models (qwen3moe, issue #49): the router's choice and weights, a batch routed per expert equal
// to the same tokens one at a time, what a pass records (experts per token, distinct experts read, their bytes) and
// the refusals of inconsistent files. Agreement with llama.cpp's logits is parity_test.cpp's (qwen3moe-*.json).
#include "core/model/forward.h"
#include "core/model/gguf_writer.h"
#include "core/model/model_gguf.h"
#include "core/model/synthetic.h"
#include "model_fixtures.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

using namespace speculum;
using namespace speculum::model;
using kernels::GgmlType;
using testing::HasSubstr;

namespace {

SyntheticSpec moe_spec(GgmlType t = GgmlType::F32) {
    return test::spec_arch("qwen3moe", t);  // 8 experts of width 32, 2 per token
}

}  // namespace

TEST(Moe, RoutingPicksTheLargestAndNormalises) {
    Hparams hp;
    hp.n_expert = 4, hp.n_expert_used = 2;
    const float logits[4] = {0.0f, 2.0f, -1.0f, 1.0f};
    int32_t ids[2];
    float w[2], probs[4];
    int32_t order[4];
    route_experts(hp, logits, ids, w, probs, order);
    EXPECT_EQ(ids[0], 1);
    EXPECT_EQ(ids[1], 3);
    // softmax over all four, the two kept divided by their sum: e^2 / (e^2 + e^1), e^1 / (e^2 + e^1)
    EXPECT_NEAR(w[0], 1.0 / (1.0 + std::exp(-1.0)), 1e-6);
    EXPECT_NEAR(w[1], 1.0 / (1.0 + std::exp(1.0)), 1e-6);
    hp.expert_weights_norm = false;  // the softmax probabilities themselves
    route_experts(hp, logits, ids, w, probs, order);
    const double z = std::exp(0.0) + std::exp(2.0) + std::exp(-1.0) + std::exp(1.0);
    EXPECT_NEAR(w[0], std::exp(2.0) / z, 1e-6);
    EXPECT_NEAR(w[1], std::exp(1.0) / z, 1e-6);
    hp.expert_gating = ExpertGating::softmax_weight;  // gpt-oss: softmax over the kept logits only
    route_experts(hp, logits, ids, w, probs, order);
    EXPECT_NEAR(w[0], 1.0 / (1.0 + std::exp(-1.0)), 1e-6);
    const float tie[4] = {1.0f, 1.0f, 1.0f, 0.0f};  // ties go to the lower index
    route_experts(hp, tie, ids, w, probs, order);
    EXPECT_EQ(ids[0], 0);
    EXPECT_EQ(ids[1], 1);
}

// Routing a batch per expert (each expert once over its tokens) gives what the tokens give one at a time, on both
// paths, and the fast path agrees with the reference.
TEST(Moe, BatchedPassEqualsTokensOneAtATime) {
    for (const GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::Q8_0}) {
        SCOPED_TRACE(kernels::ggml_type_traits(t)->name);
        const Model m                     = make_synthetic_model(moe_spec(t));
        const std::vector<int32_t> tokens = {1, 17, 42, 5, 99, 3, 64, 7, 120, 33};
        const auto ref                    = test::decode_all(m, tokens, ForwardPath::reference);
        const auto fast                   = test::decode_all(m, tokens, ForwardPath::fast);
        const double tol                  = t == GgmlType::Q8_0 ? 0.1 : 0.02;  // int8 activations on Q8_0
        for (const ForwardPath path : {ForwardPath::reference, ForwardPath::fast}) {
            InferenceContext ctx(m, {.n_ctx = 64, .n_batch = 16, .path = path});
            std::vector<int32_t> pos(tokens.size());
            for (size_t i = 0; i < pos.size(); ++i) pos[i] = int32_t(i);
            const LogitsView batch = ctx.forward_batch(tokens, pos);
            const auto& one        = path == ForwardPath::reference ? ref : fast;
            for (int32_t i = 0; i < batch.n; ++i)
                EXPECT_LT(test::rel_diff(batch.row(i), one[size_t(i)]), path == ForwardPath::reference ? 1e-5 : tol)
                    << "token " << i;
        }
        for (size_t i = 0; i < tokens.size(); ++i) EXPECT_LT(test::rel_diff(fast[i], ref[i]), tol) << i;
    }
}

TEST(Moe, PassRecordsItsExpertsAndReadsEachOnce) {
    const Model m     = make_synthetic_model(moe_spec());
    const Hparams& hp = m.hparams();
    InferenceContext ctx(m, {.n_ctx = 64, .n_batch = 16});
    const std::vector<int32_t> tokens = {1, 17, 42, 5, 99, 3};
    ctx.forward_batch(tokens, {0, 1, 2, 3, 4, 5});
    uint64_t distinct_total = 0;
    for (int32_t il = 0; il < hp.n_layer; ++il) {
        const auto ids = ctx.last_experts(il);
        const auto w   = ctx.last_expert_weights(il);
        ASSERT_EQ(ids.size(), tokens.size() * size_t(hp.n_expert_used));
        ASSERT_EQ(w.size(), ids.size());
        std::set<int32_t> layer;
        for (size_t i = 0; i < tokens.size(); ++i) {
            std::set<int32_t> own;
            float sum = 0;
            for (int32_t j = 0; j < hp.n_expert_used; ++j) {
                const int32_t id = ids[i * size_t(hp.n_expert_used) + size_t(j)];
                EXPECT_GE(id, 0);
                EXPECT_LT(id, hp.n_expert);
                own.insert(id), layer.insert(id);
                sum += w[i * size_t(hp.n_expert_used) + size_t(j)];
            }
            EXPECT_EQ(own.size(), size_t(hp.n_expert_used)) << "a token's experts are distinct";
            EXPECT_NEAR(sum, 1.0f, 1e-5f) << "qwen3moe normalises the kept weights";
        }
        distinct_total += layer.size();
    }
    const ForwardCost& c = ctx.last_cost();
    EXPECT_EQ(c.experts_read, distinct_total);
    // Bytes: the distinct experts' three matrices each once, plus the dense parts.
    const LayerWeights& L      = m.weights().layers[0];
    const uint64_t expert_size = (L.w_gate.n_bytes() + L.w_up.n_bytes() + L.w_down.n_bytes()) / uint64_t(hp.n_expert);
    InferenceContext one(m, {.n_ctx = 64, .n_batch = 16});
    one.decode(1, 0);
    EXPECT_EQ(one.last_cost().experts_read, uint64_t(hp.n_layer * hp.n_expert_used));
    EXPECT_EQ(c.bytes_weights - one.last_cost().bytes_weights,
              (distinct_total - one.last_cost().experts_read) * expert_size +
                  (tokens.size() - 1) * m.weights().token_embd.row_bytes());
    // A layer the pass skipped records nothing.
    ForwardOptions skip;
    skip.skip_ffn = {0, 1};
    InferenceContext sk(m, {.n_ctx = 64, .n_batch = 16});
    sk.decode(1, 0, skip);
    EXPECT_EQ(sk.last_experts(0).size(), size_t(hp.n_expert_used));
    EXPECT_TRUE(sk.last_experts(1).empty());
    EXPECT_TRUE(sk.last_experts(7).empty());
}

TEST(Moe, PerTokenBytesCountTheUsedExperts) {
    const Model m     = make_synthetic_model(moe_spec());
    const Hparams& hp = m.hparams();
    InferenceContext ctx(m, {.n_ctx = 64, .n_batch = 16});
    ctx.decode(1, 0);
    EXPECT_EQ(m.weight_bytes_per_token(), ctx.last_cost().bytes_weights);
    EXPECT_GT(m.weight_bytes_total(), m.weight_bytes_per_token() + uint64_t(hp.n_layer) * 4);
}

TEST(Moe, InconsistentFilesAreRefusedByName) {
    auto error_of = [](const SyntheticSpec& spec, const std::function<void(GgufWriter&)>& edit,
                       const std::string& drop = "") {
        try {
            hparams_from_gguf(test::file_of(spec, edit, drop.empty() ? std::vector<std::string>{} : std::vector{drop}));
        } catch (const GgufError& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_EQ(error_of(moe_spec(), {}), "");
    EXPECT_THAT(error_of(moe_spec(), {}, "blk.1.ffn_down_exps.weight"),
                HasSubstr("tensor 'blk.1.ffn_down_exps.weight': missing"));
    EXPECT_THAT(error_of(moe_spec(), [](GgufWriter& g) { g.set_uint32("qwen3moe.expert_used_count", 9); }),
                HasSubstr("qwen3moe.expert_used_count: 9 experts per token of 8"));
    EXPECT_THAT(error_of(moe_spec(), [](GgufWriter& g) { g.set_uint32("qwen3moe.expert_count", 16); }),
                HasSubstr("ffn_gate_inp.weight"));
    EXPECT_THAT(error_of(moe_spec(), [](GgufWriter& g) { g.set_uint32("qwen3moe.expert_count", 0); }),
                HasSubstr("qwen3moe.expert_count: value 0 is out of range"));
    // A dense architecture that declares experts is refused with what is supported.
    EXPECT_THAT(
        error_of(test::spec_arch("qwen3", GgmlType::F16), [](GgufWriter& g) { g.set_uint32("qwen3.expert_count", 8); }),
        HasSubstr("mixture-of-experts 'qwen3' models are not supported (of the MoE architectures, qwen3moe, "
                  "gpt-oss and qwen35moe are)"));
}

TEST(Moe, SyntheticSpecValidatesExperts) {
    SyntheticSpec s = moe_spec();
    s.n_expert_used = 9;
    EXPECT_THROW(s.validate(), std::invalid_argument);
    s          = moe_spec();
    s.n_expert = 0;
    EXPECT_THROW(s.validate(), std::invalid_argument);
    SyntheticSpec dense = test::spec_arch("qwen3", GgmlType::F16);
    dense.n_expert      = 4;
    EXPECT_THROW(dense.validate(), std::invalid_argument) << "experts are for qwen3moe";
    const SyntheticSpec ok = moe_spec();
    nlohmann::json j       = ok;
    EXPECT_EQ(j.get<SyntheticSpec>(), ok);
    EXPECT_FALSE(nlohmann::json(test::spec_arch("qwen3", GgmlType::F16)).contains("n_expert"))
        << "dense specs keep their JSON (and hash)";
}

// Hostile metadata in MoE files (issue #51's rule for new input kinds): every expert, window and YaRN key set to
// zero, one, a huge value, a 64-bit value past 32 bits, a negative one or a non-finite float either loads a model
// that decodes, or is refused with a GgufError naming the file; nothing crashes or allocates absurdly.
TEST(Moe, HostileMetadataLoadsOrIsRefusedByName) {
    const SyntheticSpec qwen = moe_spec(GgmlType::F16);
    SyntheticSpec oss        = test::spec_arch("gpt-oss", GgmlType::F16);
    const Model mq = make_synthetic_model(qwen), mo = make_synthetic_model(oss);
    const std::vector<std::string> int_keys   = {"expert_count",
                                                 "expert_used_count",
                                                 "expert_feed_forward_length",
                                                 "attention.sliding_window",
                                                 "attention.sliding_window_pattern",
                                                 "rope.scaling.original_context_length",
                                                 "feed_forward_length"};
    const std::vector<std::string> float_keys = {"rope.scaling.yarn_beta_fast", "rope.scaling.yarn_beta_slow",
                                                 "rope.scaling.attn_factor", "rope.scaling.factor",
                                                 "rope.scaling.yarn_log_multiplier"};
    int loaded = 0, refused = 0;
    for (const Model* m : {&mq, &mo}) {
        const std::string arch = m->hparams().arch;
        auto file_with         = [&](const std::function<void(GgufWriter&)>& edit) {
            GgufWriter g;
            g.set_string("general.architecture", arch);
            add_hparams_metadata(g, m->hparams(), m->hparams().n_layer);
            edit(g);
            add_model_tensors(g, m->hparams(), m->weights(), m->hparams().n_layer, !m->hparams().tied_output);
            return GgufFile::from_bytes(g.to_bytes(), "hostile.gguf");
        };
        auto attempt = [&](const std::function<void(GgufWriter&)>& edit, const std::string& what) {
            SCOPED_TRACE(arch + ": " + what);
            try {
                const Model got = Model::from_gguf(file_with(edit));
                InferenceContext ctx(got, {.n_ctx = 16, .n_batch = 4});
                ctx.forward_batch({1, 2, 3}, {0, 1, 2});
                ++loaded;
            } catch (const GgufError& e) {
                EXPECT_EQ(std::string(e.what()).rfind("hostile.gguf: ", 0), 0u) << e.what();
                ++refused;
            } catch (const std::exception& e) {
                ADD_FAILURE() << "unexpected exception: " << e.what();
            }
        };
        for (const std::string& k : int_keys)
            for (const uint64_t v :
                 {uint64_t(0), uint64_t(1), uint64_t(3), uint64_t(INT32_MAX), (uint64_t(1) << 32) + 4})
                attempt([&](GgufWriter& g) { g.set_uint64(arch + "." + k, v); }, k + " = " + std::to_string(v));
        for (const std::string& k : int_keys)
            attempt([&](GgufWriter& g) { g.set_int32(arch + "." + k, -1); }, k + " = -1");
        for (const std::string& k : float_keys)
            for (const float v : {0.0f, -1.0f, std::nanf(""), INFINITY, 1e30f}) {
                attempt(
                    [&](GgufWriter& g) {
                        g.set_string(arch + ".rope.scaling.type", "yarn");
                        g.set_float32(arch + "." + k, v);
                    },
                    k + " = " + std::to_string(v));
            }
    }
    EXPECT_GT(loaded, 0);
    EXPECT_GT(refused, 0);
}
