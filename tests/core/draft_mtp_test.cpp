// Multi-token-prediction heads (issue #28, item 2): GGUF files with NextN blocks in llama.cpp's layout load (the
// main forward ignores the extra block), bad files are refused by name, the target's cache keeps its states, the
// MTP layer's arithmetic follows llama.cpp's (embedding half first, the target's state after its final norm), and
// greedy runs with the MTP draft are lossless, with drafts accepted when the head predicts the target. MTP modules
// (the NextN blocks in a file of their own, model/mtp_module.h) load for their target only, draft as the built-in
// layer does, and build back into one file; the bundled target's module reproduces its trainer and is accepted.
#include "engine_fixtures.h"
#include "head_reference.h"

#include "core/drafts/make_drafter.h"
#include "core/drafts/mtp_drafter.h"
#include "core/export/draft_export.h"
#include "core/model/gguf.h"
#include "core/model/gguf_writer.h"
#include "core/model/model_gguf.h"
#include "core/model/mtp_module.h"
#include "core/model/rope.h"
#include "core/resources.h"
#include "kernels/gemv.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace speculum::test {
namespace {

model::SyntheticSpec mtp_spec() {
    model::SyntheticSpec s = engine_target_spec();
    s.n_nextn              = 1;
    return s;
}

TEST(MtpModel, NextnBlocksLoadInLlamaCppsLayoutAndTheMainForwardIgnoresThem) {
    const std::filesystem::path dir = tmp_dir() / "mtp";
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "mtp.gguf").string();
    model::write_synthetic_gguf(mtp_spec(), path);
    const model::GgufFile f = model::GgufFile::open(path);
    EXPECT_EQ(f.get_uint("llama.block_count"), uint64_t(mtp_spec().n_layer + 1));
    EXPECT_EQ(f.get_uint("llama.nextn_predict_layers"), 1u);
    const std::string blk = "blk." + std::to_string(mtp_spec().n_layer) + ".";
    ASSERT_NE(f.tensor(blk + "nextn.eh_proj.weight"), nullptr);
    EXPECT_EQ(f.tensor(blk + "nextn.eh_proj.weight")->dims,
              (std::vector<uint64_t>{2 * uint64_t(mtp_spec().n_embd), uint64_t(mtp_spec().n_embd)}));
    ASSERT_NE(f.tensor(blk + "attn_q.weight"), nullptr) << "the NextN block is an ordinary block too";

    const model::Model m = model::Model::load(path, {}, {}, model::WeightMemory::mapped);
    EXPECT_EQ(m.hparams().n_layer, mtp_spec().n_layer);
    EXPECT_EQ(m.hparams().n_nextn, 1);
    ASSERT_EQ(m.weights().nextn.size(), 1u);
    EXPECT_TRUE(m.weights().nextn[0].head.empty()) << "no shared_head_head: the model's output";
    // The main forward is the model without its NextN block: the same greedy tokens as the spec without one.
    const model::Model plain = model::make_synthetic_model(engine_target_spec());
    const std::vector<int32_t> prompt{5, 17, 3, 42};
    EXPECT_EQ(greedy_reference(m, prompt, 12), greedy_reference(plain, prompt, 12));
}

TEST(MtpModel, BadNextnMetadataIsRefusedByName) {
    const std::filesystem::path dir = tmp_dir() / "mtp";
    std::filesystem::create_directories(dir);
    const model::Model m = model::make_synthetic_model(mtp_spec());
    auto write           = [&](const std::string& name, int32_t nextn_key, bool with_nextn_tensors) {
        model::GgufWriter g;
        g.set_string("general.architecture", "llama");
        model::add_hparams_metadata(g, m.hparams(), m.hparams().n_layer, with_nextn_tensors ? 1 : 0);
        if (nextn_key >= 0) g.set_uint32("llama.nextn_predict_layers", uint32_t(nextn_key));
        model::add_model_tensors(g, m.hparams(), m.weights(), m.hparams().n_layer, true, with_nextn_tensors);
        const std::string p = (dir / name).string();
        g.write(p);
        return p;
    };
    auto error = [](const std::string& p) {
        try {
            model::Model::load(p);
        } catch (const std::exception& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    // Every block a NextN block: none left to run.
    EXPECT_NE(error(write("all.gguf", mtp_spec().n_layer + 1, true)).find("nextn_predict_layers"), std::string::npos);
    // NextN tensors without the key: extra tensors are refused, not ignored.
    EXPECT_NE(error(write("nokey.gguf", 0, true)).find("nextn"), std::string::npos);
}

TEST(MtpDrafter, TheLayerFusesTheEmbeddingThenTheTargetsNormedState) {
    const model::Model target = model::make_synthetic_model(mtp_spec());
    model::ContextConfig cfg  = exact_ctx();
    drafts::MtpDrafter d(target, 0, cfg);
    const model::Hparams& hp = target.hparams();
    const int64_t e          = hp.n_embd;
    std::vector<float> h(static_cast<size_t>(e));
    for (int64_t i = 0; i < e; ++i) h[size_t(i)] = std::sin(0.37f * float(i)) * 3.0f;
    const int32_t token = 42, pos = 7;
    // By hand: u = eh_proj [enorm(embed(token)); hnorm(output_norm(h))], then the block and head as a one-layer
    // model given u in place of the embedding.
    const model::NextnWeights& n = target.weights().nextn[0];
    std::vector<float> emb(static_cast<size_t>(e)), hn(static_cast<size_t>(e)), cat(static_cast<size_t>(2 * e)),
        u(static_cast<size_t>(e));
    kernels::dequantize_row(emb.data(), target.weights().token_embd.type, target.weights().token_embd.row(token), e);
    model::rms_norm(cat.data(), emb.data(), n.enorm.data(), e, hp.rms_eps);
    model::rms_norm(hn.data(), h.data(), target.weights().output_norm.data(), e, hp.rms_eps);
    model::rms_norm(cat.data() + e, hn.data(), n.hnorm.data(), e, hp.rms_eps);
    kernels::gemv_ref(u.data(), n.eh_proj.type, n.eh_proj.data, cat.data(), 2 * e, 0, e);
    model::InferenceContext ctx(d.block(), cfg);
    model::ForwardOptions o;
    o.hidden_in                  = u.data();
    const model::LogitsView want = ctx.forward_batch({token}, {pos}, {}, o);
    const std::vector<float> got = d.logits_for(h.data(), token, pos);
    ASSERT_EQ(got.size(), size_t(hp.n_vocab));
    for (int32_t v = 0; v < hp.n_vocab; ++v) ASSERT_NEAR(got[size_t(v)], want.row(0)[size_t(v)], 1e-4f) << v;
    // The order matters: the state half first gives other logits.
    std::swap_ranges(cat.begin(), cat.begin() + e, cat.begin() + e);
    kernels::gemv_ref(u.data(), n.eh_proj.type, n.eh_proj.data, cat.data(), 2 * e, 0, e);
    model::InferenceContext ctx2(d.block(), cfg);
    const model::LogitsView swapped = ctx2.forward_batch({token}, {pos}, {}, o);
    double diff                     = 0;
    for (int32_t v = 0; v < hp.n_vocab; ++v) diff += std::fabs(swapped.row(0)[size_t(v)] - got[size_t(v)]);
    EXPECT_GT(diff, 1e-2);
}

TEST(MtpDrafter, TargetWithoutNextnLayersIsAClearError) {
    const model::Model target = model::make_synthetic_model(engine_target_spec());
    drafts::DraftSpec s;
    s.kind = drafts::DraftKind::mtp;
    try {
        drafts::make_drafter(s, target);
        ADD_FAILURE() << "no error";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("no MTP head"), std::string::npos) << e.what();
    }
}

// The head's weights as a copy of a layer that makes it predict "the token just seen": a block that adds nothing
// (zero output projections) and a fusion that passes the embedding half through, so the head reads
// norm(embed(token)) and, with a tied output, prefers the same token. On a target that repeats a token, such a
// head's drafts are accepted.
model::Model echo_head_target() {
    model::SyntheticSpec s = mtp_spec();
    s.tied_output          = true;
    const model::Model m   = model::make_synthetic_model(s);
    model::ModelWeights w  = m.weights();
    model::NextnWeights& n = w.nextn[0];
    const int64_t e        = m.hparams().n_embd;
    std::vector<float> eh(static_cast<size_t>(e * 2 * e), 0.0f);
    for (int64_t r = 0; r < e; ++r) eh[size_t(r * 2 * e + r)] = 1.0f;
    std::vector<uint8_t> bytes(eh.size() * 4);
    std::memcpy(bytes.data(), eh.data(), bytes.size());
    n.eh_proj = model::make_owned_view(kernels::GgmlType::F32, e, 2 * e, std::move(bytes));
    for (model::WeightView* v : {&n.block.wo, &n.block.w_down}) {
        std::vector<uint8_t> zero(size_t(v->rows * v->cols) * 4, 0);
        *v = model::make_owned_view(kernels::GgmlType::F32, v->rows, v->cols, std::move(zero));
    }
    n.enorm.assign(size_t(e), 1.0f);
    n.head_norm.clear();
    return model::Model::from_weights(m.hparams(), std::move(w), "echo-head target");
}

TEST(MtpDrafter, GreedyRunsAreLosslessAndAnEchoHeadIsAccepted) {
    const std::vector<int32_t> prompt{5, 17, 3, 42, 17, 3, 42, 8, 60, 11};
    for (bool echo : {false, true}) {
        SCOPED_TRACE(echo ? "echo head" : "random head");
        const model::Model target    = echo ? echo_head_target() : model::make_synthetic_model(mtp_spec());
        const std::vector<int32_t> r = greedy_reference(target, prompt, 40);
        drafts::DraftSpec s;
        s.kind                 = drafts::DraftKind::mtp;
        engine::SpecConfig cfg = lossless_config(3);
        cfg.levels             = {s};
        ASSERT_NO_THROW(cfg.validate(target.hparams().n_layer));
        drafts::DrafterOptions o;
        o.context = exact_ctx();
        for (bool tree : {false, true}) {
            engine::SpecConfig c = cfg;
            if (tree) c.verification = engine::Verification::tree, c.tree.branching = {2, 1, 1};
            const engine::RunResult res =
                engine::SpecEngine(target, c, std::shared_ptr<drafts::Drafter>(drafts::make_drafter(s, target, o)))
                    .run(prompt);
            EXPECT_EQ(res.tokens, r) << (tree ? "tree" : "chain");
            ASSERT_GE(res.stats.levels.size(), 2u);
            EXPECT_GT(res.stats.levels[1].n_forward, 0) << "the MTP layer ran";
            // One pass per call to catch up and draft the first token, one per further token: at most gamma.
            EXPECT_LE(res.stats.levels[1].n_forward, 3 * res.stats.levels[1].n_calls);
            EXPECT_GT(res.stats.n_drafted, 0);
            if (echo) {
                EXPECT_GT(res.stats.n_accepted, 0) << "the echo head's drafts were accepted";
            }
            if (tree) {  // the head's second choice is offered beside its first at the first depth
                const engine::RankCounts& rc = res.stats.rank_counts;
                ASSERT_FALSE(rc.offered.empty());
                ASSERT_GE(rc.offered[0].size(), 2u);
                EXPECT_GT(rc.offered[0][1], 0);
            }
        }
    }
}

// `m` without its NextN blocks: the target an MTP module made from `m` is for.
model::Model without_nextn(const model::Model& m) {
    model::Hparams hp     = m.hparams();
    hp.n_nextn            = 0;
    model::ModelWeights w = m.weights();
    w.nextn.clear();
    return model::Model::from_weights(hp, std::move(w), m.name() + " without MTP");
}

std::string write_bytes(const std::string& name, const std::vector<uint8_t>& bytes) {
    const std::filesystem::path dir = tmp_dir() / "mtp";
    std::filesystem::create_directories(dir);
    const std::string path = (dir / name).string();
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    return path;
}

TEST(MtpModule, AModuleDraftsAsTheBuiltInLayerDoes) {
    const model::Model with   = model::make_synthetic_model(mtp_spec());
    const model::Model target = without_nextn(with);
    const std::string path    = write_bytes("module.gguf", model::mtp_module_gguf(with));
    const model::GgufFile f   = model::GgufFile::open(path);
    EXPECT_EQ(f.get_string("general.type"), model::kMtpModuleType);
    EXPECT_EQ(f.tensor("token_embd.weight"), nullptr) << "only the NextN blocks";
    const std::vector<model::NextnWeights> layers = model::load_mtp_module(path, target);
    ASSERT_EQ(layers.size(), 1u);
    EXPECT_EQ(std::memcmp(layers[0].eh_proj.data, with.weights().nextn[0].eh_proj.data, layers[0].eh_proj.n_bytes()),
              0);

    drafts::MtpDrafter own(with, 0, exact_ctx()), module(target, layers[0], exact_ctx());
    std::vector<float> h(static_cast<size_t>(with.hparams().n_embd));
    for (size_t i = 0; i < h.size(); ++i) h[i] = std::cos(0.11f * float(i)) * 2.0f;
    EXPECT_EQ(own.logits_for(h.data(), 9, 5), module.logits_for(h.data(), 9, 5));

    // Through a spec: the module's path as model_path; the layer index is checked against the module.
    drafts::DraftSpec s;
    s.kind       = drafts::DraftKind::mtp;
    s.model_path = path;
    ASSERT_NO_THROW(s.validate(target.hparams().n_layer));
    EXPECT_NE(s.describe().find(path), std::string::npos);
    EXPECT_NO_THROW(drafts::make_drafter(s, target));
    s.mtp_layer = 1;
    try {
        drafts::make_drafter(s, target);
        ADD_FAILURE() << "no error";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("mtp_layer"), std::string::npos) << e.what();
    }
}

TEST(MtpModule, ModulesThatAreNotModulesOrDoNotFitAreRefusedByName) {
    const model::Model with   = model::make_synthetic_model(mtp_spec());
    const model::Model target = without_nextn(with);
    const model::Hparams& hp  = with.hparams();
    auto error                = [&](const std::vector<uint8_t>& bytes, const model::Model& t) {
        try {
            model::mtp_module_from_gguf(model::GgufFile::from_bytes(bytes, "m.gguf"), t);
        } catch (const std::exception& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    auto module = [&](auto&& edit) {
        model::GgufWriter g;
        g.set_string("general.architecture", "llama");
        g.set_string("general.type", model::kMtpModuleType);
        model::add_hparams_metadata(g, hp, hp.n_layer, 1);
        edit(g);
        return g.to_bytes();
    };
    auto blocks = [&](model::GgufWriter& g) { model::add_nextn_tensors(g, hp, with.weights().nextn, hp.n_layer); };
    EXPECT_EQ(error(module(blocks), target), "no error");
    // A whole model is not a module.
    std::vector<uint8_t> whole;
    {
        model::GgufWriter g;
        g.set_string("general.architecture", "llama");
        model::add_hparams_metadata(g, hp, hp.n_layer, 1);
        model::add_model_tensors(g, hp, with.weights(), hp.n_layer, true, true);
        whole = g.to_bytes();
    }
    EXPECT_NE(error(whole, target).find("general.type"), std::string::npos);
    // A tensor outside the module's blocks.
    EXPECT_NE(error(module([&](model::GgufWriter& g) {
                        blocks(g);
                        std::vector<float> v(size_t(hp.n_embd), 1.0f);
                        g.add_tensor("output_norm.weight", {v.size()}, kernels::GgmlType::F32, v.data(), v.size() * 4);
                    }),
                    target)
                  .find("output_norm.weight"),
              std::string::npos);
    // A missing tensor: the module's own, less one.
    auto without = [&](const std::string& drop) {
        const model::GgufFile f = model::GgufFile::from_bytes(module(blocks), "full.gguf");
        model::GgufWriter g;
        for (const model::GgufKv& kv : f.metadata())
            if (kv.key != "general.alignment") g.set_value(kv.key, kv.value);
        for (const model::GgufTensorInfo& t : f.tensors())
            if (t.name != drop) g.add_tensor(t.name, t.dims, t.type, t.data, t.n_bytes);
        return g.to_bytes();
    };
    const std::string hnorm = "blk." + std::to_string(hp.n_layer) + ".nextn.hnorm.weight";
    EXPECT_NE(error(without(hnorm), target).find(hnorm), std::string::npos);
    // Another target: more layers, another width.
    model::SyntheticSpec deeper = engine_target_spec(5);
    EXPECT_NE(error(module(blocks), model::make_synthetic_model(deeper)).find("block_count"), std::string::npos);
    model::SyntheticSpec wider = engine_target_spec();
    wider.n_embd *= 2;
    EXPECT_NE(error(module(blocks), model::make_synthetic_model(wider)).find("embedding_length"), std::string::npos);
    // No blocks.
    EXPECT_NE(error(module([&](model::GgufWriter& g) { g.set_uint32("llama.nextn_predict_layers", 0); }), target)
                  .find("nextn_predict_layers"),
              std::string::npos);
}

TEST(MtpModule, GreedyRunsAreLosslessAndTheEchoModuleIsAccepted) {
    const model::Model with   = echo_head_target();
    const model::Model target = without_nextn(with);
    const std::string path    = write_bytes("echo.gguf", model::mtp_module_gguf(with));
    const std::vector<int32_t> prompt{5, 17, 3, 42, 17, 3, 42, 8, 60, 11};
    drafts::DraftSpec s;
    s.kind                      = drafts::DraftKind::mtp;
    s.model_path                = path;
    const engine::RunResult res = greedy_run(target, s, 3, prompt, 40);
    EXPECT_EQ(res.tokens, greedy_reference(target, prompt, 40));
    EXPECT_GT(res.stats.n_accepted, 0) << "the echo module's drafts were accepted";
}

TEST(MtpModule, TheDraftExportBuildsTheModuleIntoTheTargetsFile) {
    const model::Model with = model::make_synthetic_model(mtp_spec());
    std::filesystem::create_directories(tmp_dir() / "mtp");
    const std::string tpath = (tmp_dir() / "mtp" / "target.gguf").string();
    model::write_model_gguf(without_nextn(with), tpath);
    const model::Model target = model::Model::load(tpath, {}, {}, model::WeightMemory::mapped);
    drafts::DraftSpec s;
    s.kind                               = drafts::DraftKind::mtp;
    s.model_path                         = write_bytes("module2.gguf", model::mtp_module_gguf(with));
    const std::string out                = (tmp_dir() / "mtp" / "merged.gguf").string();
    const exporting::DraftExportResult r = exporting::export_draft_gguf(target, s, out);
    EXPECT_NE(r.description.find("built in"), std::string::npos);
    const model::Model merged = model::Model::load(out, {}, {}, model::WeightMemory::mapped);
    EXPECT_EQ(merged.hparams().n_nextn, 1);
    EXPECT_EQ(merged.hparams().n_layer, target.hparams().n_layer);
    drafts::MtpDrafter a(merged, 0, exact_ctx()), b(with, 0, exact_ctx());
    std::vector<float> h(static_cast<size_t>(with.hparams().n_embd), 0.5f);
    h[3] = -2.0f;
    EXPECT_EQ(a.logits_for(h.data(), 7, 4), b.logits_for(h.data(), 7, 4));
    // The target's own layer has no file to export, and a target with its own cannot take a module's too.
    drafts::DraftSpec own;
    own.kind = drafts::DraftKind::mtp;
    EXPECT_THROW(exporting::export_draft_gguf(merged, own, out), std::invalid_argument);
    EXPECT_THROW(model::mtp_merged_gguf(merged, merged.weights().nextn), std::invalid_argument);
}

// The bundled module (tools/train/train_mtp.py) on the bundled target: an MTP spec without model_path finds it, it
// drafts the greedy tokens its trainer's torch layer gives from the target's states (resources/models/
// mtp_reference.json, F16-rounded: a few may differ by precision), and its drafts are accepted.
TEST(MtpBundled, TheBundledModuleMatchesItsTrainerAndIsAccepted) {
    if (!resources_dir() || !std::filesystem::exists(resource_path(kBundledMtpModule)))
        GTEST_SKIP() << "no bundled MTP module";
    const model::Model target = model::Model::load(resource_path(kBundledTargetModel).string());
    drafts::DraftSpec s;
    s.kind = drafts::DraftKind::mtp;
    EXPECT_EQ(drafts::mtp_module_path(s.model_path, target), resource_path(kBundledMtpModule).string());
    drafts::MtpDrafter d(target, drafts::mtp_layer_for(s, target), exact_ctx());
    std::ifstream in(resource_path("models/mtp_reference.json"));
    ASSERT_TRUE(in) << "resources/models/mtp_reference.json";
    const nlohmann::json ref = nlohmann::json::parse(in);
    expect_head_matches_reference(d, target, ref);
    // Lossless with accepted drafts on held-out prose (16 tokens: the reference path is slow on a 37 M-parameter
    // target).
    const std::vector<int32_t> prompt = ref["cases"][0]["tokens"].get<std::vector<int32_t>>();
    const engine::RunResult res       = greedy_run(target, s, 3, prompt, 16);
    EXPECT_EQ(res.tokens, greedy_reference(target, prompt, 16));
    EXPECT_GT(double(res.stats.n_accepted), 0.3 * double(res.stats.n_drafted));
}

}  // namespace
}  // namespace speculum::test
