// Engine snippets against golden files (tests/core/golden/export/<case>.<engine>.txt), plus the facts each must
// state: flags for what is expressible, "cannot express" / "falls back to" for what is not. Regenerate the golden
// files after an intended change with SPECULUM_UPDATE_GOLDEN=1 and review the diff.
#include "core/export/snippets.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

using namespace speculum;
using exporting::Engine;

namespace {

exporting::Manifest base(const std::string& name) {
    exporting::Manifest m;
    m.name         = name;
    m.generator    = "speculum test";
    m.model        = {"/models/target.gguf", "", "llama", "target", 8, 2048, 320, 0};
    m.model.sha256 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    return m;
}

// Chain, MXFP4 early-exit self-draft, p_min, greedy: everything llama.cpp expresses.
exporting::Manifest mxfp4_chain() {
    exporting::Manifest m = base("mxfp4 chain");
    drafts::DraftSpec d;
    d.weight_format        = drafts::WeightFormat::mxfp4;
    d.exit_layer           = 5;
    m.config.levels        = {d};
    m.config.gamma         = {4};
    m.config.p_min         = 0.5f;
    m.config.context.n_ctx = 2048;
    return m;
}

// A three-level cascade (pruned self-draft <- layer-skip self-draft <- Max-Gram) with lenience and adaptive γ.
exporting::Manifest cascade() {
    exporting::Manifest m = base("three-level cascade");
    drafts::DraftSpec l1, l2, l3;
    l1.prune.ratio                  = 0.5f;
    l2.skip_ffn                     = {2, 3};
    l2.kv_trunc_bits                = 3;
    l3.kind                         = drafts::DraftKind::maxgram;
    m.config.levels                 = {l1, l2, l3};
    m.config.gamma                  = {6, 3, 2};
    m.config.lenience               = {1, 2, 1.5f, 1};
    m.config.adaptive_gamma.enabled = true;
    m.config.adaptive_gamma.min     = 2;
    m.config.adaptive_gamma.max     = 8;
    return m;
}

// A static tree with a separate draft model, sampled.
exporting::Manifest tree_model() {
    exporting::Manifest m = base("static tree");
    drafts::DraftSpec d;
    d.kind                        = drafts::DraftKind::model;
    d.model_path                  = "/models/draft.gguf";
    m.config.levels               = {d};
    m.config.verification         = engine::Verification::tree;
    m.config.tree.kind            = engine::TreeKind::static_shape;
    m.config.tree.branching       = {2, 2, 1};
    m.config.sampling.temperature = 0.8f;
    m.config.sampling.top_p       = 0.95f;
    m.config.sampling.seed        = 7;
    return m;
}

// Max-Gram alone (no draft model).
exporting::Manifest maxgram() {
    exporting::Manifest m = base("max-gram");
    drafts::DraftSpec d;
    d.kind              = drafts::DraftKind::maxgram;
    d.maxgram.min_match = 2;
    d.maxgram.max_match = 8;
    d.bigram_corpus     = "datasets/prose_continuation.jsonl";
    m.config.levels     = {d};
    m.config.gamma      = {5};
    return m;
}

// llama.cpp's ngram-map-k4v, and suffix decoding with a tree (n-gram drafting the engines run themselves).
exporting::Manifest ngram_k4v() {
    exporting::Manifest m = base("ngram-map-k4v");
    drafts::DraftSpec d;
    d.kind           = drafts::DraftKind::ngram;
    d.ngram.method   = drafts::NgramMethod::map_k4v;
    d.ngram.size_n   = 8;
    d.ngram.size_m   = 8;
    d.ngram.min_hits = 2;
    m.config.levels  = {d};
    m.config.gamma   = {8};
    return m;
}
exporting::Manifest suffix_tree() {
    exporting::Manifest m = base("suffix");
    drafts::DraftSpec d;
    d.kind                     = drafts::DraftKind::ngram;
    d.ngram.method             = drafts::NgramMethod::suffix;
    d.ngram.suffix_spec_factor = 2;
    m.config.levels            = {d};
    m.config.gamma             = {6};
    m.config.verification      = engine::Verification::tree;
    m.config.tree.kind         = engine::TreeKind::static_shape;
    m.config.tree.branching    = {3, 2, 1};
    return m;
}

std::string read(const std::filesystem::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

exporting::SnippetOptions options() {
    exporting::SnippetOptions o;
    o.manifest_path = "manifest.json";
    return o;
}

void check_golden(const std::string& name, const exporting::Manifest& m) {
    for (Engine e : {Engine::llama_cpp, Engine::vllm, Engine::sglang}) {
        const auto s = exporting::make_snippet(e, m, options());
        const auto path =
            test::source_dir() / "tests/core/golden/export" / (name + "." + exporting::engine_name(e) + ".txt");
        if (std::getenv("SPECULUM_UPDATE_GOLDEN")) {
            std::ofstream(path) << s.text;
            continue;
        }
        ASSERT_TRUE(std::filesystem::exists(path)) << path << " is missing (SPECULUM_UPDATE_GOLDEN=1 writes it)";
        EXPECT_EQ(s.text, read(path)) << "snippet differs from " << path;
    }
}

// An EAGLE-3 head with EAGLE-2's dynamic tree.
exporting::Manifest eagle3_dynamic() {
    exporting::Manifest m = base("eagle3 dynamic tree");
    drafts::DraftSpec d;
    d.kind                    = drafts::DraftKind::eagle3;
    d.model_path              = "/models/target-eagle3.gguf";
    m.config.levels           = {d};
    m.config.gamma            = {4};
    m.config.verification     = engine::Verification::tree;
    m.config.tree.kind        = engine::TreeKind::dynamic;
    m.config.tree.top_k       = 3;
    m.config.tree.depth       = 4;
    m.config.tree.node_budget = 10;
    return m;
}

// An MTP draft: the target's own NextN layer (module empty), or one from an MTP module stored apart.
exporting::Manifest mtp(const std::string& module) {
    exporting::Manifest m = base(module.empty() ? "mtp" : "mtp module");
    drafts::DraftSpec d;
    d.kind          = drafts::DraftKind::mtp;
    d.model_path    = module;
    m.config.levels = {d};
    m.config.gamma  = {3};
    return m;
}

}  // namespace

TEST(EngineSnippets, GoldenFiles) {
    check_golden("mxfp4_chain", mxfp4_chain());
    check_golden("cascade", cascade());
    check_golden("tree_model", tree_model());
    check_golden("maxgram", maxgram());
    check_golden("ngram_k4v", ngram_k4v());
    check_golden("suffix_tree", suffix_tree());
    check_golden("eagle3_dynamic", eagle3_dynamic());
    check_golden("mtp", mtp(""));
    check_golden("mtp_module", mtp("/models/target-mtp.gguf"));
}

// An EAGLE-3 head: the head's file as the draft; each engine's EAGLE-3 method; SGLang's tree is EAGLE-2's own.
TEST(EngineSnippets, Eagle3HeadsUseEachEnginesEagle3Method) {
    const exporting::Manifest m = eagle3_dynamic();
    const auto l                = exporting::make_snippet(Engine::llama_cpp, m, options());
    EXPECT_EQ(l.draft_file, "/models/target-eagle3.gguf");
    EXPECT_NE(l.text.find("-md /models/target-eagle3.gguf"), std::string::npos) << l.text;
    EXPECT_NE(l.text.find("--spec-type draft-eagle3"), std::string::npos) << l.text;
    const auto v = exporting::make_snippet(Engine::vllm, m, options());
    EXPECT_EQ(v.config.value("method", ""), "eagle3");
    EXPECT_EQ(v.config.value("model", ""), "/models/target-eagle3.gguf");
    EXPECT_TRUE(v.config.contains("speculative_token_tree"));
    bool said = false;
    for (const auto& c : v.cannot_express) said |= c.find("dynamic tree") != std::string::npos;
    EXPECT_TRUE(said) << "vLLM verifies a static tree: said";
    const auto g = exporting::make_snippet(Engine::sglang, m, options());
    EXPECT_NE(g.text.find("--speculative-algorithm EAGLE3"), std::string::npos) << g.text;
    EXPECT_NE(g.text.find("--speculative-num-steps 4"), std::string::npos);
    EXPECT_NE(g.text.find("--speculative-eagle-topk 3"), std::string::npos);
    EXPECT_NE(g.text.find("--speculative-num-draft-tokens 11"), std::string::npos);
    EXPECT_TRUE(g.cannot_express.empty() || g.text.find("a fixed tree shape") == std::string::npos)
        << "a dynamic tree is SGLang's own";
}

// A target's own MTP layer: no draft file; each engine's MTP drafting.
TEST(EngineSnippets, MtpDraftsUseEachEnginesMtpDrafting) {
    const exporting::Manifest m = mtp("");
    const auto l                = exporting::make_snippet(Engine::llama_cpp, m, options());
    EXPECT_EQ(l.draft_file, "");
    EXPECT_NE(l.text.find("--spec-type draft-mtp"), std::string::npos) << l.text;
    EXPECT_NE(l.text.find("--spec-draft-n-max 3"), std::string::npos);
    EXPECT_EQ(l.text.find("-md "), std::string::npos);
    const auto v = exporting::make_snippet(Engine::vllm, m, options());
    EXPECT_EQ(v.config.value("method", ""), "mtp");
    EXPECT_EQ(v.config.value("num_speculative_tokens", 0), 3);
    const auto g = exporting::make_snippet(Engine::sglang, m, options());
    EXPECT_NE(g.text.find("--speculative-algorithm NEXTN"), std::string::npos);
    EXPECT_NE(g.text.find("--speculative-num-draft-tokens 4"), std::string::npos);
    // A module stored apart: every engine is told to serve the target with it built in, and how to write that.
    for (Engine e : {Engine::llama_cpp, Engine::vllm, Engine::sglang}) {
        const auto s = exporting::make_snippet(e, mtp("/models/target-mtp.gguf"), options());
        EXPECT_NE(s.text.find("/models/target-mtp.gguf"), std::string::npos) << s.text;
        EXPECT_NE(s.text.find("speculum-cli export --format draft-gguf --config manifest.json -o target-mtp.gguf"),
                  std::string::npos)
            << s.text;
    }
}

TEST(EngineSnippets, NgramDraftersUseEachEnginesOwnFlags) {
    const auto l = exporting::make_snippet(Engine::llama_cpp, ngram_k4v(), options());
    EXPECT_EQ(l.draft_file, "");
    EXPECT_NE(l.text.find("--spec-type ngram-map-k4v"), std::string::npos) << l.text;
    EXPECT_NE(
        l.text.find("--spec-ngram-map-k4v-size-n 8 --spec-ngram-map-k4v-size-m 8 --spec-ngram-map-k4v-min-hits 2"),
        std::string::npos);
    EXPECT_EQ(l.text.find("llama-lookup \\"), std::string::npos) << "ngram-map runs in the server only";
    EXPECT_EQ(l.text.find("-md "), std::string::npos);
    const auto v = exporting::make_snippet(Engine::vllm, ngram_k4v(), options());
    EXPECT_NE(v.config.dump().find(R"("method":"ngram")"), std::string::npos);
    bool said = false;
    for (const auto& c : v.cannot_express) said |= c.find("ngram-map-k4v") != std::string::npos;
    EXPECT_TRUE(said) << "vLLM cannot express llama.cpp's k4v: said";
    // Suffix decoding is vLLM's method "suffix"; a tree falls back to its chain; llama.cpp falls back to ngram-mod.
    const auto vs = exporting::make_snippet(Engine::vllm, suffix_tree(), options());
    EXPECT_EQ(vs.config.value("method", ""), "suffix");
    EXPECT_EQ(vs.config.value("suffix_decoding_max_spec_factor", 0.0), 2.0);
    EXPECT_EQ(vs.config.value("num_speculative_tokens", 0), 3) << "the tree's depth";
    const auto ls = exporting::make_snippet(Engine::llama_cpp, suffix_tree(), options());
    EXPECT_NE(ls.text.find("--spec-type ngram-mod"), std::string::npos);
    EXPECT_FALSE(ls.fallbacks.empty());
    // ngram-cache: the lookup files on both programs.
    exporting::Manifest c                 = ngram_k4v();
    c.config.levels[0].ngram              = {};
    c.config.levels[0].ngram.method       = drafts::NgramMethod::cache;
    c.config.levels[0].ngram.static_cache = "/data/wiki.lcs";
    const auto lc                         = exporting::make_snippet(Engine::llama_cpp, c, options());
    EXPECT_NE(lc.text.find("--spec-type ngram-cache"), std::string::npos);
    EXPECT_NE(lc.text.find("-lcs /data/wiki.lcs"), std::string::npos);
    EXPECT_NE(lc.text.find("llama-lookup"), std::string::npos);
}

TEST(EngineSnippets, ChainIsFullyExpressedByLlamaCpp) {
    const auto s = exporting::make_snippet(Engine::llama_cpp, mxfp4_chain(), options());
    EXPECT_TRUE(s.cannot_express.empty());
    EXPECT_TRUE(s.needs_draft_export);
    EXPECT_EQ(s.draft_file, "/models/target-draft.gguf");
    EXPECT_NE(s.text.find("llama-server \\\n    -m /models/target.gguf \\\n    -md /models/target-draft.gguf"),
              std::string::npos)
        << s.text;
    EXPECT_NE(s.text.find("--spec-draft-n-max 4 --spec-draft-n-min 0 --spec-draft-p-min 0.5"), std::string::npos);
    EXPECT_NE(s.text.find("-c 2048 -cd 2048"), std::string::npos);
    EXPECT_NE(s.text.find("--temp 0"), std::string::npos);
    EXPECT_NE(s.text.find("# cannot express: nothing in this manifest"), std::string::npos);
    // vLLM has no p_min: said, and the fallback named.
    const auto v = exporting::make_snippet(Engine::vllm, mxfp4_chain(), options());
    ASSERT_EQ(v.cannot_express.size(), 1u);
    EXPECT_NE(v.cannot_express[0].find("p_min = 0.5"), std::string::npos);
    EXPECT_EQ(
        v.config.dump(),
        R"({"method":"draft_model","model":"/models/target-draft.gguf","num_speculative_tokens":4,"draft_tensor_parallel_size":1})");
}

TEST(EngineSnippets, CascadeFallsBackToLevelOneEverywhere) {
    for (Engine e : {Engine::llama_cpp, Engine::vllm, Engine::sglang}) {
        const auto s = exporting::make_snippet(e, cascade(), options());
        std::string all;
        for (const auto& c : s.cannot_express) all += c + "\n";
        EXPECT_NE(all.find("4-model vertical cascade"), std::string::npos) << exporting::engine_name(e) << all;
        EXPECT_NE(all.find("lenience"), std::string::npos);
        EXPECT_NE(all.find("adaptive draft length"), std::string::npos);
        EXPECT_EQ(s.fallbacks.front(),
                  "level 1 (prune 50% magnitude (attn+ffn, per row)) drafts 6 tokens for the "
                  "target; levels 2..3 are dropped");
        EXPECT_NE(s.text.find("# falls back to:"), std::string::npos);
        EXPECT_NE(s.text.find("#   - a fixed draft length of 6"), std::string::npos);
    }
}

TEST(EngineSnippets, LayerSkipAndKvTransformsAreNamed) {
    exporting::Manifest m            = mxfp4_chain();
    m.config.levels[0].skip_attn     = {1};
    m.config.levels[0].kv_drop_ratio = 0.25f;
    const auto s                     = exporting::make_snippet(Engine::llama_cpp, m, options());
    ASSERT_EQ(s.cannot_express.size(), 2u);
    EXPECT_NE(s.cannot_express[0].find("layer-skip self-draft (attention skipped in layers {1}"), std::string::npos);
    EXPECT_NE(s.cannot_express[1].find("dropped values 25%"), std::string::npos);
    EXPECT_NE(s.fallbacks[0].find("--drop-unsupported"), std::string::npos);
}

TEST(EngineSnippets, TreesAsRankPathsAndEngineFallbacks) {
    EXPECT_EQ(exporting::token_tree_literal({{0}, {1}, {0, 0}, {0, 1, 0}}), "[(0,), (1,), (0, 0), (0, 1, 0)]");
    const auto v = exporting::make_snippet(Engine::vllm, tree_model(), options());
    // Static [2, 2, 1]: 2 + 4 + 4 = 10 nodes, depth 3.
    EXPECT_NE(v.text.find("[(0,), (1,), (0, 0), (0, 1), (1, 0), (1, 1), (0, 0, 0), (0, 1, 0), (1, 0, 0), (1, 1, 0)]"),
              std::string::npos)
        << v.text;
    EXPECT_EQ(v.config.at("num_speculative_tokens"), 3);
    EXPECT_EQ(v.config.at("model"), "/models/draft.gguf");
    const auto g = exporting::make_snippet(Engine::sglang, tree_model(), options());
    EXPECT_NE(g.text.find("--speculative-num-steps 3"), std::string::npos) << g.text;
    EXPECT_NE(g.text.find("--speculative-eagle-topk 2"), std::string::npos);
    EXPECT_NE(g.text.find("--speculative-num-draft-tokens 11"), std::string::npos);
    const auto l = exporting::make_snippet(Engine::llama_cpp, tree_model(), options());
    EXPECT_NE(l.text.find("llama-speculative \\"), std::string::npos);
    EXPECT_NE(l.text.find("-np 2 --draft-p-split 0.1"), std::string::npos);
    EXPECT_NE(l.text.find("--temp 0.8 --top-k 0 --top-p 0.95 --seed 7"), std::string::npos);
    EXPECT_FALSE(l.needs_draft_export);
}

TEST(EngineSnippets, MaxGramUsesTheEnginesNgramDrafting) {
    const auto l = exporting::make_snippet(Engine::llama_cpp, maxgram(), options());
    EXPECT_EQ(l.draft_file, "");
    EXPECT_NE(l.text.find("--spec-type ngram-simple"), std::string::npos);
    EXPECT_NE(l.text.find("llama-lookup"), std::string::npos);
    const auto v = exporting::make_snippet(Engine::vllm, maxgram(), options());
    EXPECT_EQ(v.config.dump(),
              R"({"method":"ngram","num_speculative_tokens":5,"prompt_lookup_max":8,"prompt_lookup_min":2})");
    const auto g = exporting::make_snippet(Engine::sglang, maxgram(), options());
    EXPECT_NE(g.text.find("--speculative-algorithm NGRAM"), std::string::npos);
    EXPECT_EQ(exporting::parse_engine("llama-cpp"), Engine::llama_cpp);
    EXPECT_FALSE(exporting::parse_engine("tgi"));
}

TEST(EngineSnippets, InvalidConfigIsAnError) {
    exporting::Manifest m = mxfp4_chain();
    m.config.gamma        = {0};
    EXPECT_THROW(exporting::make_snippet(Engine::llama_cpp, m, options()), std::invalid_argument);
}

// The draft kinds' table (core/drafts/draft_kind.h) says how each engine runs each kind: the snippets write it.
TEST(DraftKinds, TheExportColumnsAreWhatTheSnippetsWrite) {
    for (const drafts::DraftKindInfo& info : drafts::kDraftKinds) {
        exporting::Manifest m = base(info.name);
        drafts::DraftSpec d;
        d.kind = info.kind;
        if (info.kind == drafts::DraftKind::self) d.exit_layer = 2;
        if (info.kind == drafts::DraftKind::model) d.model_path = "/models/draft.gguf";
        if (info.kind == drafts::DraftKind::eagle3) d.model_path = "/models/target-eagle3.gguf";
        m.config.levels     = {d};
        m.config.gamma      = {4};
        const std::string l = exporting::make_snippet(Engine::llama_cpp, m, options()).text;
        EXPECT_NE(l.find(info.llama_cpp), std::string::npos) << info.name << ":\n" << l;
        const auto v = exporting::make_snippet(Engine::vllm, m, options());
        EXPECT_EQ(v.config.value("method", ""), info.vllm) << info.name;
        const std::string g = exporting::make_snippet(Engine::sglang, m, options()).text;
        EXPECT_NE(g.find(std::string("--speculative-algorithm ") + info.sglang), std::string::npos) << info.name << g;
        EXPECT_EQ(drafts::is_statistical(info.kind), std::string(info.draft_gguf).empty()) << info.name;
    }
}
