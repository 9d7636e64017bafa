// `speculum-cli inspect` against GGUFs written with GgufWriter: text and JSON output, tensor listing, an
// unsupported architecture, missing and malformed files, usage errors.
#include "core/model/gguf_writer.h"
#include "core/model/synthetic.h"
#include "support/run_process.h"
#include "support/test_paths.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

using namespace speculum::model;
using speculum::kernels::GgmlType;
using speculum::test::run_cli;
using testing::HasSubstr;
using testing::Not;

namespace {

void add_zeros(GgufWriter& w, const std::string& name, std::vector<uint64_t> dims, GgmlType t) {
    uint64_t rows = 1;
    for (size_t i = 1; i < dims.size(); ++i) rows *= dims[i];
    std::vector<uint8_t> bytes(speculum::kernels::ggml_row_size(t, dims[0]) * rows, 0);
    w.add_tensor(name, dims, t, bytes.data(), bytes.size());
}

// A complete one-layer llama (tied output, 50 tokens, q8_0 matrices) in the test scratch folder.
std::string tiny_llama() {
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    w.set_string("general.name", "tiny\nllama");
    w.set_uint32("llama.context_length", 128);
    w.set_uint32("llama.embedding_length", 32);
    w.set_uint32("llama.block_count", 1);
    w.set_uint32("llama.feed_forward_length", 64);
    w.set_uint32("llama.attention.head_count", 4);
    w.set_uint32("llama.attention.head_count_kv", 2);
    w.set_float32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
    std::vector<std::string> toks;
    for (int i = 0; i < 50; ++i) toks.push_back(std::string(1, 't').append(std::to_string(i)));
    w.set_array_strings("tokenizer.ggml.tokens", toks);
    w.set_array_int32("tokenizer.ggml.token_type", std::vector<int32_t>(50, 1));
    w.set_string("odd.bytes", std::string("\xff\xfe", 2));
    add_zeros(w, "token_embd.weight", {32, 50}, GgmlType::Q8_0);
    add_zeros(w, "output_norm.weight", {32}, GgmlType::F32);
    add_zeros(w, "blk.0.attn_norm.weight", {32}, GgmlType::F32);
    add_zeros(w, "blk.0.attn_q.weight", {32, 32}, GgmlType::Q8_0);
    add_zeros(w, "blk.0.attn_k.weight", {32, 16}, GgmlType::Q8_0);
    add_zeros(w, "blk.0.attn_v.weight", {32, 16}, GgmlType::Q8_0);
    add_zeros(w, "blk.0.attn_output.weight", {32, 32}, GgmlType::Q8_0);
    add_zeros(w, "blk.0.ffn_norm.weight", {32}, GgmlType::F32);
    add_zeros(w, "blk.0.ffn_gate.weight", {32, 64}, GgmlType::Q8_0);
    add_zeros(w, "blk.0.ffn_up.weight", {32, 64}, GgmlType::Q8_0);
    add_zeros(w, "blk.0.ffn_down.weight", {64, 32}, GgmlType::Q8_0);
    std::string path = (speculum::test::tmp_dir() / "inspect_tiny_llama.gguf").string();
    w.write(path);
    return path;
}

}  // namespace

TEST(CliInspect, TextShowsLayoutMetadataHparamsAndTotals) {
    std::string path = tiny_llama();
    auto r           = run_cli({"inspect", path});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("GGUF v3, alignment 32"));
    EXPECT_THAT(r.out, HasSubstr("metadata (12 keys):"));
    EXPECT_THAT(r.out, HasSubstr("[50 strings: 't0', 't1', 't2', ...]"));
    EXPECT_THAT(r.out, HasSubstr("[50 int32: 1, 1, 1, ...]"));
    EXPECT_THAT(r.out, HasSubstr("'tiny\\nllama'"));  // control bytes escaped
    EXPECT_THAT(r.out, HasSubstr("hparams (llama):"));
    EXPECT_THAT(r.out, HasSubstr("n_vocab 50, n_ctx_train 128, n_embd 32, n_layer 1, n_ff 64"));
    EXPECT_THAT(r.out, HasSubstr("n_head 4, n_head_kv 2, head_dim 8"));
    EXPECT_THAT(r.out, HasSubstr("output tied to token_embd"));
    // q8_0: 8 matrices; f32: 3 norms of 32 floats = 384 bytes.
    EXPECT_THAT(r.out, HasSubstr("q8_0    8 tensors"));
    EXPECT_THAT(r.out, HasSubstr("f32     3 tensors     384 bytes"));
    EXPECT_THAT(r.out, testing::Not(HasSubstr("blk.0.ffn_up.weight")));  // table only with --tensors
}

TEST(CliInspect, TensorTable) {
    auto r = run_cli({"inspect", tiny_llama(), "--tensors"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, testing::ContainsRegex("blk\\.0\\.ffn_down\\.weight +q8_0 +\\[64, 32\\] +2176 "));
    EXPECT_THAT(r.out, testing::ContainsRegex("token_embd\\.weight +q8_0 +\\[32, 50\\] +1700 +0\n"));
}

TEST(CliInspect, JsonHasTheSameContent) {
    auto r = run_cli({"inspect", tiny_llama(), "--json", "--tensors"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["version"], 3);
    EXPECT_EQ(j["alignment"], 32);
    EXPECT_EQ(j["n_tensors"], 11);
    EXPECT_EQ(j["metadata"].size(), 12u);
    EXPECT_EQ(j["metadata"][0]["key"], "general.architecture");
    EXPECT_EQ(j["metadata"][0]["value"], "llama");
    const auto& toks = j["metadata"][9]["value"];
    EXPECT_EQ(toks["count"], 50);
    EXPECT_EQ(toks["element_type"], "string");
    EXPECT_EQ(toks["head"][1], "t1");
    EXPECT_EQ(j["hparams"]["n_vocab"], 50);
    EXPECT_EQ(j["hparams"]["n_head_kv"], 2);
    EXPECT_EQ(j["hparams"]["tied_output"], true);
    EXPECT_EQ(j["tensors"].size(), 11u);
    EXPECT_EQ(j["tensors"][3]["name"], "blk.0.attn_q.weight");
    EXPECT_EQ(j["tensors"][3]["dims"], nlohmann::json::array({32, 32}));
    uint64_t total = 0;
    for (const auto& t : j["tensor_types"]) total += t["bytes"].get<uint64_t>();
    EXPECT_EQ(total, j["tensor_data_bytes"].get<uint64_t>());
}

TEST(CliInspect, UnsupportedArchitectureExplainsWhy) {
    GgufWriter w;
    w.set_string("general.architecture", "gpt2");
    std::string path = (speculum::test::tmp_dir() / "inspect_gpt2.gguf").string();
    w.write(path);
    auto r = run_cli({"inspect", path});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("hparams: not available: " + path +
                                 ": general.architecture: architecture 'gpt2' is not supported"));
    EXPECT_THAT(r.out, HasSubstr("(no tensors)"));
    auto j = run_cli({"inspect", path, "--json"});
    ASSERT_EQ(j.exit_code, 0);
    EXPECT_THAT(nlohmann::json::parse(j.out)["hparams_error"].get<std::string>(), HasSubstr("gpt2"));
}

// A draft head is read with its target: inspect says which drafter kind reads it rather than "not supported".
TEST(CliInspect, DraftHeadsSayWhichKindReadsThem) {
    GgufWriter w;
    w.set_string("general.architecture", "dflash");
    const float x[4] = {0, 0, 0, 0};
    w.add_tensor("markov_w1.weight", {2, 2}, speculum::kernels::GgmlType::F32, x, sizeof x);
    std::string path = (speculum::test::tmp_dir() / "inspect_dspark.gguf").string();
    w.write(path);
    auto r = run_cli({"inspect", path});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("a block draft in llama.cpp's dflash layout with DSpark's heads"));
    EXPECT_THAT(r.out, HasSubstr("\"kind\": \"dflash\" or \"dspark\""));
    EXPECT_THAT(r.out, Not(HasSubstr("is not supported")));
}

TEST(CliInspect, MissingFileIsAnError) {
    auto r = run_cli({"inspect", "/nonexistent/model.gguf"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("speculum-cli inspect: error: /nonexistent/model.gguf: cannot open"));
}

TEST(CliInspect, MalformedFileIsAnError) {
    std::string path = (speculum::test::tmp_dir() / "inspect_garbage.gguf").string();
    std::ofstream(path) << "this is not a gguf file";
    auto r = run_cli({"inspect", path});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr(path + ": magic: expected 'GGUF', found 'this'"));
    std::string trunc = (speculum::test::tmp_dir() / "inspect_truncated.gguf").string();
    std::ifstream in(tiny_llama(), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(trunc, std::ios::binary) << bytes.substr(0, bytes.size() - 100);
    auto t = run_cli({"inspect", trunc});
    EXPECT_EQ(t.exit_code, 1);
    EXPECT_THAT(t.err, HasSubstr("extends past the end of the file"));
}

TEST(CliInspect, UsageErrors) {
    EXPECT_EQ(run_cli({"inspect"}).exit_code, 2);
    EXPECT_EQ(run_cli({"inspect", "a.gguf", "b.gguf"}).exit_code, 2);
    EXPECT_EQ(run_cli({"inspect", "--frob", "a.gguf"}).exit_code, 2);
    auto h = run_cli({"inspect", "--help"});
    EXPECT_EQ(h.exit_code, 0);
    EXPECT_THAT(h.out, HasSubstr("--tensors"));
    EXPECT_THAT(run_cli({"--help"}).out, HasSubstr("inspect"));
}

TEST(CliInspect, RealVocabFile) {
    SPECULUM_SHARED_OR_SKIP(shared);
    auto r = run_cli({"inspect", (shared / "vocab" / "ggml-vocab-llama-spm.gguf").string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("[32000 strings: '<unk>', '<s>', '</s>', ...]"));
    EXPECT_THAT(r.out, HasSubstr("hparams: not available:"));
}

// An architecture beyond llama shows its parts: gemma3's norms, GeGLU, embedding scale and windows, in text and JSON.
TEST(CliInspect, ShowsTheArchitecturesParts) {
    speculum::model::SyntheticSpec s;
    s.arch = "gemma3", s.n_vocab = 64, s.n_embd = 64, s.n_layer = 3, s.n_head = 2, s.n_head_kv = 1;
    s.n_embd_head = 48, s.n_ff = 64, s.n_swa = 5, s.swa_period = 2, s.tied_output = true;
    const std::string path = (speculum::test::tmp_dir() / "inspect_gemma3.gguf").string();
    speculum::model::write_synthetic_gguf(s, path);
    auto r = run_cli({"inspect", path});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("head_dim 48"));
    EXPECT_THAT(r.out,
                HasSubstr("q/k norms, post-norms, GeGLU, embeddings x sqrt(n_embd), sliding window 5 on 2/3 layers"));
    auto j = run_cli({"inspect", path, "--json"});
    ASSERT_EQ(j.exit_code, 0);
    const auto h = nlohmann::json::parse(j.out)["hparams"];
    EXPECT_EQ(h["ffn_activation"], "geglu");
    EXPECT_EQ(h["sliding_window_layers"], (std::vector<int>{1, 0, 1}));
    EXPECT_EQ(h["head_dim"], 48);
}
