// `speculum-cli generate` against the real binary: token ids in, streamed ids and tokens/s out; deterministic for a
// seed; clear errors for bad arguments and files.
#include "core/model/gguf.h"
#include "core/model/synthetic.h"
#include "kernels/ggml_types.h"
#include "support/run_process.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <sstream>

using speculum::test::run_cli;

namespace {

std::string tiny_model() {
    static const std::string path = [] {
        speculum::model::SyntheticSpec s;
        s.n_vocab = 200, s.n_embd = 64, s.n_layer = 2, s.n_head = 4, s.n_head_kv = 2, s.n_ff = 128, s.n_ctx = 128;
        s.type              = speculum::kernels::GgmlType::Q8_0;
        const std::string p = (speculum::test::tmp_dir() / "cli_generate_tiny.gguf").string();
        speculum::model::write_synthetic_gguf(s, p);
        return p;
    }();
    return path;
}

std::vector<int> ids_of(const std::string& out) {
    std::istringstream in(out);
    std::vector<int> v;
    int x;
    while (in >> x) v.push_back(x);
    return v;
}

}  // namespace

TEST(CliGenerate, StreamsIdsAndReportsSpeed) {
    auto r = run_cli({"generate", "-m", tiny_model(), "--ids", "1,2,3", "-n", "10"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto ids = ids_of(r.out);
    EXPECT_EQ(ids.size(), 10u);
    for (int id : ids) EXPECT_TRUE(id >= 0 && id < 200) << id;
    EXPECT_NE(r.err.find("tokens/s"), std::string::npos) << r.err;
}

TEST(CliGenerate, SeededSamplingIsReproducibleAndReferenceAgreesWhenGreedy) {
    const std::vector<std::string> base = {"generate", "-m", tiny_model(), "--ids", "5 6 7", "-n", "12"};
    auto with                           = [&](std::vector<std::string> extra) {
        std::vector<std::string> a = base;
        a.insert(a.end(), extra.begin(), extra.end());
        auto r = run_cli(a);
        EXPECT_EQ(r.exit_code, 0) << r.err;
        return ids_of(r.out);
    };
    const auto s1 = with({"--temp", "1.0", "--top-k", "50", "--top-p", "0.95", "--seed", "3"});
    EXPECT_EQ(s1, with({"--temp", "1.0", "--top-k", "50", "--top-p", "0.95", "--seed", "3"}));
    EXPECT_NE(s1, with({"--temp", "1.0", "--top-k", "50", "--top-p", "0.95", "--seed", "4"}));
    EXPECT_EQ(with({}), with({"--reference", "--threads", "1"}));
}

TEST(CliGenerate, BadInputsGiveClearErrors) {
    auto r = run_cli({"generate", "-m", tiny_model(), "--ids", "1,x"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--ids"), std::string::npos) << r.err;
    r = run_cli({"generate", "-m", tiny_model(), "--ids", "1,999"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("vocabulary"), std::string::npos) << r.err;
    r = run_cli({"generate", "--ids", "1", "-n", "2"});  // no model: the bundled target
    EXPECT_EQ(r.exit_code, 0) << r.err;
    r = run_cli({"generate", "-m", tiny_model()});  // neither --prompt nor --ids
    EXPECT_EQ(r.exit_code, 2);
    r = run_cli({"generate", "-m", tiny_model(), "--ids", "1", "--top-p", "2"});
    EXPECT_EQ(r.exit_code, 2);
    r = run_cli({"generate", "-m", (speculum::test::tmp_dir() / "nope.gguf").string(), "--ids", "1"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("nope.gguf"), std::string::npos) << r.err;
    r = run_cli({"generate", "-m", tiny_model(), "--ids", "1", "-n", "500"});  // over the 128-token context
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("context length"), std::string::npos) << r.err;
    r = run_cli({"generate", "--help"});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_NE(r.out.find("--top-p"), std::string::npos);
}

TEST(CliGenerate, TextPromptWithTheModelsTokenizer) {
    // Random weights with the real llama SPM vocabulary from ../shared: the prompt is encoded by the file's own
    // tokenizer, echoed, and followed by decoded pieces.
    SPECULUM_SHARED_OR_SKIP(shared);
    const auto vocab = speculum::model::GgufFile::open((shared / "vocab" / "ggml-vocab-llama-spm.gguf").string());
    speculum::model::SyntheticSpec s;
    s.n_vocab =
        static_cast<int32_t>(vocab.get_array("tokenizer.ggml.tokens", speculum::model::GgufType::STRING).array_size());
    s.n_embd = 64, s.n_layer = 1, s.n_head = 2, s.n_head_kv = 1, s.n_ff = 64, s.n_ctx = 64;
    const std::string path = (speculum::test::tmp_dir() / "cli_generate_spm.gguf").string();
    speculum::model::write_model_gguf(speculum::model::make_synthetic_model(s), path, &vocab);
    auto r = run_cli({"generate", "-m", path, "-p", "Hello world", "-n", "8", "--seed", "1", "--temp", "0.7"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.rfind("Hello world", 0), 0u) << r.out;
    EXPECT_GT(r.out.size(), std::string("Hello world\n").size()) << r.out;
    EXPECT_NE(r.err.find("prompt: 3 tokens"), std::string::npos) << r.err;  // <s> Hello world
    // A file without a tokenizer refuses text prompts with a clear message.
    r = run_cli({"generate", "-m", tiny_model(), "-p", "Hello"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("no tokenizer"), std::string::npos) << r.err;
}

// Issue #27, item 7: NaN weights made generate emit token 0 silently. A model whose layer-1 feed-forward down matrix
// holds NaN now stops with an error naming that layer (exit 1), through every kernel path.
TEST(CliGenerate, NonFiniteLogitsStopWithTheLayerNamed) {
    speculum::model::SyntheticSpec s;
    s.n_vocab = 64, s.n_embd = 64, s.n_layer = 3, s.n_head = 4, s.n_head_kv = 2, s.n_ff = 128, s.n_ctx = 64;
    s.type                 = speculum::kernels::GgmlType::F32;
    const std::string path = (speculum::test::tmp_dir() / "cli_generate_nan.gguf").string();
    speculum::model::write_synthetic_gguf(s, path);
    uint64_t at = 0;
    {
        const auto g = speculum::model::GgufFile::open(path);
        for (const auto& t : g.tensors())
            if (t.name == "blk.1.ffn_down.weight") at = g.data_offset() + t.offset;
    }
    ASSERT_GT(at, 0u);
    {
        std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
        const float nan = std::numeric_limits<float>::quiet_NaN();
        f.seekp(std::streamoff(at));
        for (int i = 0; i < 64; ++i) f.write(reinterpret_cast<const char*>(&nan), sizeof nan);
    }
    for (const char* path_flag : {"--reference", ""}) {
        std::vector<std::string> args{"generate", "-m", path, "--ids", "1,2,3", "-n", "4"};
        if (*path_flag) args.push_back(path_flag);
        auto r = run_cli(args);
        EXPECT_EQ(r.exit_code, 1) << path_flag << r.out;
        EXPECT_NE(r.err.find("non-finite logits"), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("arose in layer 1's feed-forward block"), std::string::npos) << r.err;
    }
    // A speculative run (what the app measures) stops the same way, naming the target's layer.
    const std::string cfg = (speculum::test::tmp_dir() / "cli_generate_nan_run.json").string();
    std::ofstream(cfg) << R"({"levels": [{"kind": "self", "exit_layer": 0}], "gamma": [3], "max_new_tokens": 8,
        "prompt_ids": [1, 2, 3]})";
    auto r = run_cli({"run", "--config", cfg, "-m", path});
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_NE(r.err.find("non-finite logits"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("target: NaN first in layer 2"), std::string::npos) << r.err;
}
