// vocab_from_gguf on in-memory GGUF images: llama.cpp's defaults for absent keys, and malformed tokenizer
// metadata rejected with "FILE: KEY: reason".
#include "core/model/gguf.h"
#include "core/model/gguf_writer.h"
#include "core/model/tokenizer.h"
#include "core/model/vocab.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

using namespace speculum::model;

namespace {

const std::string k_sp = "\xE2\x96\x81";

// A small valid "llama" vocabulary; `edit` changes or removes keys before writing.
GgufWriter spm_writer() {
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    w.set_string("tokenizer.ggml.model", "llama");
    w.set_array_strings("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", k_sp, "a", k_sp + "a", "<0x0A>"});
    w.set_array_float32("tokenizer.ggml.scores", {0, 0, 0, -3, -2, -1, 0});
    w.set_array_int32("tokenizer.ggml.token_type", {2, 3, 3, 1, 1, 1, 6});
    return w;
}

GgufWriter bpe_writer() {
    GgufWriter w;
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_string("tokenizer.ggml.pre", "gpt-2");
    w.set_array_strings("tokenizer.ggml.tokens", {"a", "b", "ab", "\xC4\xA0", "<|endoftext|>"});
    w.set_array_int32("tokenizer.ggml.token_type", {1, 1, 1, 1, 3});
    w.set_array_strings("tokenizer.ggml.merges", {"a b"});
    w.set_uint32("tokenizer.ggml.bos_token_id", 4);
    w.set_uint32("tokenizer.ggml.eos_token_id", 4);
    return w;
}

Vocab read(const GgufWriter& w) {
    return vocab_from_gguf(GgufFile::from_bytes(w.to_bytes(), "v.gguf"));
}

std::string error_of(const GgufWriter& w) {
    try {
        read(w);
    } catch (const GgufError& e) {
        return e.what();
    }
    return "(accepted)";
}

}  // namespace

TEST(TokenizerVocab, BpeAddBosDefaultFollowsThePreTokenizer) {
    EXPECT_FALSE(read(bpe_writer()).add_bos);  // gpt-2
    GgufWriter w = bpe_writer();
    w.set_string("tokenizer.ggml.pre", "llama-bpe");  // Llama 3: BOS by default
    EXPECT_TRUE(read(w).add_bos);
    w.set_bool("tokenizer.ggml.add_bos_token", false);  // the key wins
    EXPECT_FALSE(read(w).add_bos);
    w = bpe_writer();
    w.set_string("tokenizer.ggml.pre", "qwen2");
    EXPECT_FALSE(read(w).add_bos);
}

TEST(TokenizerVocab, SpmDefaultsFollowLlamaCpp) {
    const Vocab v = read(spm_writer());
    EXPECT_EQ(v.model, VocabModel::spm);
    EXPECT_EQ(v.size(), 7);
    EXPECT_EQ(v.bos, 1);
    EXPECT_EQ(v.eos, 2);
    EXPECT_EQ(v.unk, 0);
    EXPECT_EQ(v.pad, -1);
    EXPECT_TRUE(v.add_bos);
    EXPECT_FALSE(v.add_eos);
    EXPECT_TRUE(v.add_space_prefix);
    EXPECT_EQ(v.type(6), TokenType::byte);
    EXPECT_FLOAT_EQ(v.score(5), -1.0f);
    auto t = Tokenizer::from_vocab(v);
    EXPECT_EQ(t.encode("a\n", true, false), (std::vector<int32_t>{1, 5, 6}));
}

TEST(TokenizerVocab, KeysOverrideDefaults) {
    GgufWriter w = spm_writer();
    w.set_bool("tokenizer.ggml.add_bos_token", false);
    w.set_bool("tokenizer.ggml.add_eos_token", true);
    w.set_bool("tokenizer.ggml.add_space_prefix", false);
    w.set_uint32("tokenizer.ggml.padding_token_id", 0);
    w.set_int32("tokenizer.ggml.eos_token_id", 1);
    const Vocab v = read(w);
    EXPECT_FALSE(v.add_bos);
    EXPECT_TRUE(v.add_eos);
    EXPECT_FALSE(v.add_space_prefix);
    EXPECT_EQ(v.pad, 0);
    EXPECT_EQ(v.eos, 1);
}

TEST(TokenizerVocab, BpeReadsMergesAndHasNoDefaultIds) {
    const Vocab v = read(bpe_writer());
    EXPECT_EQ(v.model, VocabModel::bpe);
    EXPECT_EQ(v.pre, "gpt-2");
    ASSERT_EQ(v.merges.size(), 1u);
    EXPECT_EQ(v.merges[0], (std::pair<std::string, std::string>{"a", "b"}));
    EXPECT_EQ(v.bos, 4);
    EXPECT_EQ(v.unk, -1);
    EXPECT_FALSE(v.add_bos);
    EXPECT_FALSE(v.add_space_prefix);
    EXPECT_EQ(Tokenizer::from_vocab(v).encode("ab", false, false), (std::vector<int32_t>{2}));

    GgufWriter w = bpe_writer();
    w.set_array_strings("tokenizer.ggml.merges", {"\xC4\xA0 a", "  b"});  // split at the first space after byte 0
    const Vocab v2 = read(w);
    EXPECT_EQ(v2.merges[1], (std::pair<std::string, std::string>{" ", "b"}));
}

TEST(TokenizerVocab, MalformedMetadataNamesFileAndKey) {
    struct Case {
        const char* name;
        std::function<void(GgufWriter&)> edit;
        const char* expect;
    };
    const Case spm_cases[] = {
        {"model missing",
         [](GgufWriter& w) {
             w = GgufWriter();
             w.set_array_strings("tokenizer.ggml.tokens", {"a"});
         },
         "v.gguf: tokenizer.ggml.model: missing"},
        {"model unknown", [](GgufWriter& w) { w.set_string("tokenizer.ggml.model", "bert"); },
         "v.gguf: tokenizer.ggml.model: unsupported tokenizer 'bert'"},
        {"tokens wrong type",
         [](GgufWriter& w) {
             w.set_array_int32("tokenizer.ggml.tokens", {1, 2});
         },
         "v.gguf: tokenizer.ggml.tokens: expected an array of string"},
        {"tokens empty", [](GgufWriter& w) { w.set_array_strings("tokenizer.ggml.tokens", {}); },
         "v.gguf: tokenizer.ggml.tokens: empty vocabulary"},
        {"scores short",
         [](GgufWriter& w) {
             w.set_array_float32("tokenizer.ggml.scores", {0, 0});
         },
         "v.gguf: tokenizer.ggml.scores: 2 scores for 7 tokens"},
        {"scores strings", [](GgufWriter& w) { w.set_array_strings("tokenizer.ggml.scores", {"x"}); },
         "v.gguf: tokenizer.ggml.scores: expected an array of float32 or int32"},
        {"types short", [](GgufWriter& w) { w.set_array_int32("tokenizer.ggml.token_type", {1}); },
         "v.gguf: tokenizer.ggml.token_type: 1 types for 7 tokens"},
        {"types long (issue #27)",
         [](GgufWriter& w) {
             w.set_array_int32("tokenizer.ggml.token_type", {1, 1, 1, 1, 1, 1, 1, 1});
         },
         "v.gguf: tokenizer.ggml.token_type: 8 types for 7 tokens"},
        {"scores long",
         [](GgufWriter& w) {
             w.set_array_float32("tokenizer.ggml.scores", {0, 0, 0, 0, 0, 0, 0, 0});
         },
         "v.gguf: tokenizer.ggml.scores: 8 scores for 7 tokens"},
        {"types floats", [](GgufWriter& w) { w.set_array_float32("tokenizer.ggml.token_type", {1}); },
         "v.gguf: tokenizer.ggml.token_type: expected an array of int32"},
        {"bos out of range", [](GgufWriter& w) { w.set_uint32("tokenizer.ggml.bos_token_id", 7); },
         "v.gguf: tokenizer.ggml.bos_token_id: token id 7 out of range [0, 7)"},
        {"eos negative", [](GgufWriter& w) { w.set_int32("tokenizer.ggml.eos_token_id", -2); },
         "v.gguf: tokenizer.ggml.eos_token_id: expected a non-negative integer"},
        {"unk string", [](GgufWriter& w) { w.set_string("tokenizer.ggml.unknown_token_id", "0"); },
         "v.gguf: tokenizer.ggml.unknown_token_id: expected a non-negative integer"},
        {"add_bos wrong type", [](GgufWriter& w) { w.set_uint32("tokenizer.ggml.add_bos_token", 1); },
         "v.gguf: tokenizer.ggml.add_bos_token"},
        {"duplicate token",
         [](GgufWriter& w) {
             w.set_array_strings("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a", "a", "b", "c"});
         },
         "v.gguf: tokenizer.ggml.tokens: duplicate token 'a' at ids 3 and 4"},
    };
    for (const auto& c : spm_cases) {
        GgufWriter w = spm_writer();
        c.edit(w);
        EXPECT_NE(error_of(w).find(c.expect), std::string::npos) << c.name << ": " << error_of(w);
    }
    const Case bpe_cases[] = {
        {"merges missing",
         [](GgufWriter& w) {
             w = GgufWriter();
             w.set_string("tokenizer.ggml.model", "gpt2");
             w.set_array_strings("tokenizer.ggml.tokens", {"a"});
         },
         "v.gguf: tokenizer.ggml.merges: missing"},
        {"merge without space",
         [](GgufWriter& w) {
             w.set_array_strings("tokenizer.ggml.merges", {"a b", "ab"});
         },
         "v.gguf: tokenizer.ggml.merges: merge 1 'ab' is not 'LEFT RIGHT'"},
        {"merge empty right", [](GgufWriter& w) { w.set_array_strings("tokenizer.ggml.merges", {"a "}); },
         "v.gguf: tokenizer.ggml.merges: merge 0 'a ' is not 'LEFT RIGHT'"},
        {"add_bos without bos",
         [](GgufWriter& w) {
             w = GgufWriter();
             w.set_string("tokenizer.ggml.model", "gpt2");
             w.set_array_strings("tokenizer.ggml.tokens", {"a", "b"});
             w.set_array_strings("tokenizer.ggml.merges", {"a b"});
             w.set_bool("tokenizer.ggml.add_bos_token", true);
         },
         "v.gguf: tokenizer.ggml.add_bos_token: true, but tokenizer.ggml.bos_token_id is not set"},
    };
    for (const auto& c : bpe_cases) {
        GgufWriter w = bpe_writer();
        c.edit(w);
        EXPECT_NE(error_of(w).find(c.expect), std::string::npos) << c.name << ": " << error_of(w);
    }
}
