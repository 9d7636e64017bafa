// Every pre-tokenizer family against llama.cpp (issue #23): llama.cpp's test vocabularies in ../shared/vocab,
// re-labelled with each family's tokenizer.ggml.pre (or Gemma's add_space_prefix = false for SPM), must give the ids
// llama.cpp gave (tests/core/golden/tokenizer/<base>.json, written by tools/parity/tokenizer_goldens.py) for
// llama.cpp's test texts and ours (extra.inp). Skips when ../shared is absent.
#include "core/model/gguf.h"
#include "core/model/gguf_writer.h"
#include "core/model/tokenizer.h"
#include "core/model/tokenizer_impl.h"
#include "support/test_paths.h"
#include "support/vocab_texts.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>
#include <sstream>

using namespace speculum;
using namespace speculum::model;

namespace {

using test::read_vocab_texts;
using test::slurp;

// The vocabulary of `base` with one key set, as the oracle's `set` writes it.
Tokenizer relabelled(const GgufFile& base, const std::string& key, const std::string& value) {
    GgufWriter g;
    for (const GgufKv& kv : base.metadata()) {
        if (kv.key == key) continue;
        g.set_value(kv.key, kv.value);
    }
    if (value == "true" || value == "false")
        g.set_bool(key, value == "true");
    else
        g.set_string(key, value);
    return Tokenizer::from_vocab(vocab_from_gguf(GgufFile::from_bytes(g.to_bytes(), base.path())));
}

void check_base(const std::string& base) {
    SPECULUM_SHARED_OR_SKIP(shared);
    const std::filesystem::path gguf = shared / "vocab" / ("ggml-vocab-" + base + ".gguf");
    if (!std::filesystem::exists(gguf)) GTEST_SKIP() << gguf << " is absent";
    const std::filesystem::path dir      = test::source_dir() / "tests/core/golden/tokenizer";
    const nlohmann::json golden          = nlohmann::json::parse(slurp(dir / (base + ".json")));
    const std::vector<std::string> inp   = read_vocab_texts(gguf.string() + ".inp");
    const std::vector<std::string> extra = read_vocab_texts(dir / "extra.inp");
    const GgufFile file                  = GgufFile::open(gguf.string());
    const std::string key                = golden["key"];
    for (const auto& [value, sets] : golden["families"].items()) {
        SCOPED_TRACE(key + " = " + value);
        const Tokenizer t = relabelled(file, key, value);
        size_t passed = 0, total = 0;
        for (const auto& [name, texts] : {std::pair{"inp", &inp}, std::pair{"extra", &extra}}) {
            const auto& want = sets[name];
            ASSERT_EQ(want.size(), texts->size()) << name;
            for (size_t i = 0; i < texts->size(); ++i, ++total) {
                const std::vector<int32_t> got = t.encode((*texts)[i], false, false);
                if (got == want[i].get<std::vector<int32_t>>()) {
                    ++passed;
                    continue;
                }
                ADD_FAILURE() << name << " #" << i << " '" << (*texts)[i] << "' gave " << testing::PrintToString(got)
                              << ", llama.cpp " << want[i].dump();
            }
        }
        std::cout << "[ family   ] " << base << " " << value << ": " << passed << "/" << total << "\n";
        testing::Test::RecordProperty(base + "_" + value, std::to_string(passed) + "/" + std::to_string(total));
    }
}

}  // namespace

TEST(TokenizerFamilies, LlamaBpeMergesUnderEveryPreTokenizer) {
    check_base("llama-bpe");
}
TEST(TokenizerFamilies, Qwen2MergesUnderEveryPreTokenizer) {
    check_base("qwen2");
}
TEST(TokenizerFamilies, SpmWithAndWithoutSpacePrefix) {
    check_base("llama-spm");
}

// The goldens cover every family the tokenizer accepts (tools/parity/tokenizer_goldens.py lists them).
TEST(TokenizerFamilies, EveryFamilyHasAGolden) {
    const nlohmann::json golden =
        nlohmann::json::parse(slurp(test::source_dir() / "tests/core/golden/tokenizer/llama-bpe.json"));
    std::istringstream names(detail::bpe_pre_names());
    size_t n = 0;
    for (std::string name; std::getline(names, name, ',');) {
        if (name.front() == ' ') name.erase(0, 1);
        EXPECT_TRUE(golden["families"].contains(name)) << name;
        ++n;
    }
    EXPECT_EQ(n, golden["families"].size());
}

// A long run of letters (a base64 blob, minified data) under the case-split pre-tokenizers (issue #51, item 5): 1 MiB
// took 15 s and 1.3 GB and then failed with "PCRE2 match failed: match limit exceeded". It now tokenizes, and the
// file path (in pieces) gives what the whole text gives.
TEST(TokenizerFamilies, LongLetterRunsUnderTheCaseSplitPreTokenizers) {
    SPECULUM_SHARED_OR_SKIP(shared);
    const std::filesystem::path gguf = shared / "vocab" / "ggml-vocab-llama-bpe.gguf";
    if (!std::filesystem::exists(gguf)) GTEST_SKIP() << gguf << " is absent";
    const GgufFile file = GgufFile::open(gguf.string());
    // A MiB of lower-case letters (one word of the split: the case that failed), then mixed case.
    std::string text;
    uint32_t x = 12345;
    for (size_t i = 0; i < (size_t(1) << 20); ++i)
        x = x * 1103515245u + 12345u, text += "abcdefghijklmnopqrstuvwxyz"[(x >> 16) % 26];
    for (size_t i = 0; i < (size_t(1) << 16); ++i)
        x = x * 1103515245u + 12345u, text += "aBcDeFgHiJkLmNoPqRsTuVwXyZ"[(x >> 16) % 26];
    struct rusage before {};
    ::getrusage(RUSAGE_SELF, &before);
    for (const char* pre : {"tekken", "gpt-4o"}) {
        SCOPED_TRACE(pre);
        const Tokenizer t              = relabelled(file, "tokenizer.ggml.pre", pre);
        const std::vector<int32_t> all = t.encode(text, false, false);
        EXPECT_GT(all.size(), text.size() / 16);
        std::istringstream in(text);
        std::vector<int32_t> streamed;
        t.encode_stream(in, false, false, [&](const std::vector<int32_t>& ids) {
            streamed.insert(streamed.end(), ids.begin(), ids.end());
        });
        EXPECT_EQ(streamed, all);
    }
    // Bounded memory: the peak grew by 1.4 GB before (PCRE2 saving a frame per letter), about 0.15 GB now.
    struct rusage after {};
    ::getrusage(RUSAGE_SELF, &after);
    EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 512L * 1024) << "KiB more at the peak";
}
