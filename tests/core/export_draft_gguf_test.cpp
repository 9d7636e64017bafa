// Draft export: a self-draft written as a standalone GGUF (MXFP4, Q8_0, pruned + truncated, early exit) reloads in
// our runtime and drafts the same greedy tokens as the in-memory draft, on the bundled target; the file carries the
// target's tokenizer, llama.cpp's tensor type ids and the cut block_count. Unsupported drafts are refused clearly.
#include "core/drafts/model_drafter.h"
#include "core/drafts/self_draft.h"
#include "core/export/draft_export.h"
#include "core/resources.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>

using namespace speculum;

namespace {

const model::Model& bundled_target() {
    static const model::Model m = model::Model::load(resource_path(kBundledTargetModel).string());
    return m;
}

std::vector<int32_t> greedy_draft(model::Model m, const model::ForwardOptions& forward) {
    drafts::ModelDrafterConfig cfg;
    cfg.context.n_ctx = 128;
    cfg.forward       = forward;
    drafts::ModelDrafter d(std::move(m), cfg);
    const std::vector<int32_t> prompt{1, 15, 30, 200, 77, 5, 901, 33, 412, 9};
    d.sync(prompt);
    return d.propose(16, {}, {}).tokens;
}

struct Case {
    const char* name;
    const char* spec;
    kernels::GgmlType layer_type;  // blk.0.ffn_up.weight in the file
    uint32_t block_count;
};

}  // namespace

class DraftGguf : public ::testing::TestWithParam<Case> {};

TEST_P(DraftGguf, ReloadsAndDraftsTheSameTokens) {
    const Case c                    = GetParam();
    const model::Model& target      = bundled_target();
    const drafts::DraftSpec spec    = nlohmann::json::parse(c.spec).get<drafts::DraftSpec>();
    const drafts::SelfDraft mem     = drafts::build_self_draft(target, spec);
    const std::vector<int32_t> want = greedy_draft(mem.model, mem.forward);
    ASSERT_EQ(want.size(), 16u);

    const std::string path = (test::tmp_dir() / (std::string("draft_export_") + c.name + ".gguf")).string();
    const auto r           = exporting::export_draft_gguf(target, spec, path);
    EXPECT_EQ(r.n_layer, int32_t(c.block_count));
    EXPECT_TRUE(r.dropped.empty());
    const model::Model file = model::Model::load(path);
    EXPECT_EQ(greedy_draft(file, {}), want) << c.name << ": the exported file drafts differently";

    const model::GgufFile* g = file.gguf();
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(g->get_uint("llama.block_count"), c.block_count);
    EXPECT_EQ(file.hparams().n_layer, int32_t(c.block_count));
    EXPECT_EQ(g->get_array("tokenizer.ggml.tokens", model::GgufType::STRING).array_size(),
              target.gguf()->get_array("tokenizer.ggml.tokens", model::GgufType::STRING).array_size());
    EXPECT_EQ(g->get_string("tokenizer.ggml.model"), target.gguf()->get_string("tokenizer.ggml.model"));
    ASSERT_NE(g->tensor("blk.0.ffn_up.weight"), nullptr);
    EXPECT_EQ(g->tensor("blk.0.ffn_up.weight")->type, c.layer_type);
    EXPECT_EQ(g->tensor("blk." + std::to_string(c.block_count) + ".ffn_up.weight"), nullptr);
    EXPECT_EQ(nlohmann::json::parse(g->get_string("speculum.draft.spec")).get<drafts::DraftSpec>(), spec);
}

INSTANTIATE_TEST_SUITE_P(
    Bundled, DraftGguf,
    ::testing::Values(Case{"mxfp4", R"({"weight_format": "mxfp4"})", kernels::GgmlType::MXFP4, 11},
                      Case{"q8_0_exit", R"({"weight_format": "q8_0", "exit_layer": 3})", kernels::GgmlType::Q8_0, 4},
                      Case{"pruned_truncated", R"({"prune": {"ratio": 0.5}, "weight_trunc_bits": 3})",
                           kernels::GgmlType::BF16, 11},
                      // the bundled target's own format (BF16) stays as it is
                      Case{"pruned_exit", R"({"prune": {"ratio": 0.3}, "exit_layer": 5})", kernels::GgmlType::BF16, 6}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(DraftGgufExport, MxfpFileTypeAndQuantizationVersion) {
    const std::string path = (test::tmp_dir() / "draft_export_meta.gguf").string();
    (void)exporting::export_draft_gguf(
        bundled_target(), nlohmann::json::parse(R"({"weight_format": "mxfp4"})").get<drafts::DraftSpec>(), path);
    const model::GgufFile g = model::GgufFile::open(path);
    EXPECT_EQ(g.find("general.file_type"), nullptr) << "the target's BF16 file type would misdescribe an MXFP4 draft";
    EXPECT_EQ(g.get_uint("general.quantization_version"), 2u);
    EXPECT_EQ(uint32_t(g.tensor("output.weight")->type), 39u) << "ggml's GGML_TYPE_MXFP4";
}

TEST(DraftGgufExport, UnsupportedDraftsAreRefusedOrDroppedExplicitly) {
    const model::Model& target = bundled_target();
    const std::string path     = (test::tmp_dir() / "draft_export_skip.gguf").string();
    drafts::DraftSpec skip;
    skip.skip_ffn      = {2};
    skip.kv_trunc_bits = 3;
    try {
        (void)exporting::export_draft_gguf(target, skip, path);
        ADD_FAILURE() << "a layer-skip draft must not be written silently";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("--drop-unsupported"), std::string::npos) << e.what();
    }
    exporting::DraftExportOptions o;
    o.drop_unsupported = true;
    const auto r       = exporting::export_draft_gguf(target, skip, path, o);
    EXPECT_EQ(r.dropped.size(), 2u);
    EXPECT_EQ(model::Model::load(path).hparams().n_layer, bundled_target().hparams().n_layer);

    drafts::DraftSpec mg;
    mg.kind = drafts::DraftKind::maxgram;
    EXPECT_THROW(exporting::export_draft_gguf(target, mg, path), std::invalid_argument);

    // A separate draft model is copied as it is.
    drafts::DraftSpec sep;
    sep.kind               = drafts::DraftKind::model;
    sep.model_path         = resource_path(kBundledDraftModel).string();
    const std::string copy = (test::tmp_dir() / "draft_export_copy.gguf").string();
    const auto c           = exporting::export_draft_gguf(target, sep, copy);
    EXPECT_EQ(c.file_bytes, std::filesystem::file_size(sep.model_path));
}
