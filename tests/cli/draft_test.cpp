// `speculum-cli draft` against the real binary: description, build time, bit accounting with modeled labels,
// GGUF save (an early-exit draft drops its layers and loads back), and clear errors for bad specs.
#include "core/model/model.h"
#include "core/model/synthetic.h"
#include "support/run_process.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>

using speculum::test::run_cli;

namespace {

std::string tiny_target() {
    static const std::string path = [] {
        speculum::model::SyntheticSpec s;
        s.n_vocab = 200, s.n_embd = 64, s.n_layer = 3, s.n_head = 4, s.n_head_kv = 2, s.n_ff = 128, s.n_ctx = 128;
        s.type              = speculum::kernels::GgmlType::BF16;
        const std::string p = (speculum::test::tmp_dir() / "cli_draft_target.gguf").string();
        speculum::model::write_synthetic_gguf(s, p);
        return p;
    }();
    return path;
}

}  // namespace

TEST(CliDraft, PrintsAccountingWithModeledLabels) {
    auto r = run_cli({"draft", "-m", tiny_target(), "--spec", R"({"prune": {"ratio": 0.5}, "weight_trunc_bits": 3})"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("draft: prune 50% magnitude (attn+ffn, per row) + bf16 t=3"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("build: "), std::string::npos);
    // Compact formats store the pruned, truncated matrices: what a forward reads is real, from the buffers.
    EXPECT_NE(r.out.find("compact: 22 matrices in compact formats"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("(real, counted from the draft's buffers)"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("compact format; the draft stores dense copies"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("(real: compact formats, expected for uniformly spread pruning)"), std::string::npos);
    // J's terms say what B is (issue #52: the label claimed 16 whatever the target stores)
    EXPECT_NE(r.out.find("Cassandra J terms: (1-w_p)(B-w_t) = "), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("16-w_t"), std::string::npos) << r.out;
    auto dense = run_cli({"draft", "-m", tiny_target(), "--spec",
                          R"({"prune": {"ratio": 0.5}, "weight_trunc_bits": 3, "compact": false})"});
    ASSERT_EQ(dense.exit_code, 0) << dense.err;
    EXPECT_NE(dense.out.find("(modeled: compact format; the draft stores dense copies, compact false)"),
              std::string::npos)
        << dense.out;
    EXPECT_NE(dense.out.find("(modeled)"), std::string::npos);
    EXPECT_NE(dense.out.find("(dense copy)"), std::string::npos);
    EXPECT_NE(r.err.find("building: 100% draft ready"), std::string::npos) << r.err;
    auto m = run_cli({"draft", "-m", tiny_target(), "--spec", R"({"weight_format": "mxfp4"})"});
    ASSERT_EQ(m.exit_code, 0) << m.err;
    EXPECT_NE(m.out.find("draft weights: 4.2500 bits/element (real)"), std::string::npos) << m.out;
}

// An EAGLE-3 head (the bundled target's): its own bytes, the modeled memory-bound c, and a head for another target
// refused by name.
TEST(CliDraft, AccountsAnEagle3HeadAndRefusesOneForAnotherTarget) {
    auto r = run_cli({"draft", "--spec", R"({"kind": "eagle3"})"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("draft: eagle3 (bundled head)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("note: EAGLE-3 head"), std::string::npos) << r.out;
    const size_t c = r.out.find("c (memory-bound: draft bytes per forward / target bytes per forward): 0.1");
    EXPECT_NE(c, std::string::npos) << "the 9 MB head against the 68 MB target: c 0.13\n" << r.out;
    auto bad = run_cli({"draft", "-m", tiny_target(), "--spec", R"({"kind": "eagle3"})"});
    EXPECT_NE(bad.exit_code, 0);
    EXPECT_NE(bad.err.find("eagle3.extract_layers: layer 5 outside the target's [0, 3]"), std::string::npos) << bad.err;
}

TEST(CliDraft, SavesAnEarlyExitDraftThatLoads) {
    const std::string out = (speculum::test::tmp_dir() / "cli_draft_exit.gguf").string();
    auto r                = run_cli(
                       {"draft", "-m", tiny_target(), "--spec", R"({"weight_format": "q8_0", "exit_layer": 1})", "--out", out});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto d = speculum::model::Model::load(out);
    EXPECT_EQ(d.hparams().n_layer, 2);
    EXPECT_EQ(d.weights().layers[0].wq.type, speculum::kernels::GgmlType::Q8_0);
    EXPECT_EQ(d.weights().token_embd.type, speculum::kernels::GgmlType::BF16);
    // The saved draft is a separate model with the target's vocabulary.
    auto s = run_cli({"draft", "-m", tiny_target(), "--spec", R"({"kind": "model", "model_path": ")" + out + R"("})"});
    EXPECT_EQ(s.exit_code, 0) << s.err;
}

TEST(CliDraft, RejectsBadSpecsClearly) {
    auto a = run_cli({"draft", "-m", tiny_target(), "--spec", R"({"prune": {"ratio": 1.5}})"});
    EXPECT_EQ(a.exit_code, 1);
    EXPECT_NE(a.err.find("draft.prune.ratio must be in [0, 1)"), std::string::npos) << a.err;
    auto b = run_cli({"draft", "-m", tiny_target(), "--spec", R"({"skip_attn": [7]})"});
    EXPECT_EQ(b.exit_code, 1);
    EXPECT_NE(b.err.find("names layer 7, but the target has 3 layers"), std::string::npos) << b.err;
    auto c = run_cli({"draft", "-m", tiny_target(), "--spec", R"({"bogus": 1})"});
    EXPECT_EQ(c.exit_code, 1);
    EXPECT_NE(c.err.find("draft.bogus: is not a known key"), std::string::npos) << c.err;
    auto d = run_cli({"draft", "-m", tiny_target(), "--spec", R"({"skip_ffn": [1]})", "--out",
                      (speculum::test::tmp_dir() / "x.gguf").string()});
    EXPECT_EQ(d.exit_code, 1);
    EXPECT_NE(d.err.find("cannot express skipped"), std::string::npos) << d.err;
    EXPECT_EQ(run_cli({"draft", "--spec", "{}", "-m", tiny_target(), "--synthetic", "f16"}).exit_code, 2);
    EXPECT_EQ(run_cli({"draft", "-m", tiny_target()}).exit_code, 2);
}
