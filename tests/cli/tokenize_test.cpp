// `speculum-cli tokenize`: every llama.cpp test string of ../shared/vocab through the real binary (--file, byte for
// byte) gives the .out ids; -p, --special, --no-parse-special, --pieces; usage and runtime errors.
#include "support/run_process.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

using speculum::test::run_cli;

namespace {

std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write(const std::filesystem::path& p, const std::string& bytes) {
    std::ofstream out(p, std::ios::binary);
    out << bytes;
}

// As llama.cpp's test-tokenizer-0.cpp: inputs split on "\n__ggml_vocab_test__\n", ids one line per input.
void expect_cli_matches_out_file(const std::filesystem::path& gguf) {
    const std::string raw = slurp(gguf.string() + ".inp");
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::vector<std::string> inputs;
    for (size_t pos = 0; pos < raw.size();) {
        const size_t next = raw.find(sep, pos);
        inputs.push_back(raw.substr(pos, next == std::string::npos ? std::string::npos : next - pos));
        if (next == std::string::npos) break;
        pos = next + sep.size();
    }
    std::istringstream out(slurp(gguf.string() + ".out"));
    const auto input_file = speculum::test::tmp_dir() / ("tokenize_" + gguf.filename().string() + ".txt");
    size_t n = 0, passed = 0;
    for (std::string line; std::getline(out, line); ++n) {
        ASSERT_LT(n, inputs.size());
        // Expected: the .out line with the surrounding spaces stripped (llama.cpp's string_strip).
        const size_t a = line.find_first_not_of(" \t\r");
        const std::string expected =
            a == std::string::npos ? "" : line.substr(a, line.find_last_not_of(" \t\r") - a + 1);
        write(input_file, inputs[n]);
        const auto r = run_cli({"tokenize", "-m", gguf.string(), "--file", input_file.string()});
        ASSERT_EQ(r.exit_code, 0) << r.err;
        if (r.out == expected + "\n")
            ++passed;
        else
            ADD_FAILURE() << gguf.filename() << " case " << n << ": got '" << r.out << "', expected '" << expected
                          << "'";
    }
    EXPECT_EQ(n, inputs.size());
    std::cout << "[ cli      ] " << gguf.filename().string() << ": " << passed << "/" << n << " passed\n";
    EXPECT_EQ(passed, n);
}

}  // namespace

TEST(CliTokenize, LlamaSpmCasesMatchLlamaCpp) {
    SPECULUM_SHARED_OR_SKIP(shared);
    expect_cli_matches_out_file(shared / "vocab" / "ggml-vocab-llama-spm.gguf");
}

TEST(CliTokenize, Gpt2CasesMatchLlamaCpp) {
    SPECULUM_SHARED_OR_SKIP(shared);
    expect_cli_matches_out_file(shared / "vocab" / "ggml-vocab-gpt-2.gguf");
}

TEST(CliTokenize, PromptSpecialAndPieces) {
    SPECULUM_SHARED_OR_SKIP(shared);
    const std::string spm = (shared / "vocab" / "ggml-vocab-llama-spm.gguf").string();
    auto ids              = [&](std::vector<std::string> extra) {
        std::vector<std::string> args = {"tokenize", "-m", spm};
        args.insert(args.end(), extra.begin(), extra.end());
        auto r = run_cli(args);
        EXPECT_EQ(r.exit_code, 0) << r.err;
        return r.out;
    };
    EXPECT_EQ(ids({"-p", "Hello world"}), "15043 3186\n");
    EXPECT_EQ(ids({"-p", "Hello world", "--special"}), "1 15043 3186\n");
    EXPECT_EQ(ids({"-p", "<s>Hello"}), "529 29879 29958 10994\n");  // "<s>" is plain text by default
    EXPECT_EQ(ids({"-p", "<s>Hello", "--special"}), "1 1 15043\n");
    EXPECT_EQ(ids({"-p", "<s>Hello", "--special", "--no-parse-special"}), "1 529 29879 29958 10994\n");
    EXPECT_EQ(ids({"-p", ""}), "\n");
    EXPECT_EQ(ids({"-p", "Hello\n", "--pieces"}), "15043 ' Hello'\n13 '\\n'\n");

    // --file is byte for byte: the trailing newline counts, invalid UTF-8 is accepted.
    const auto file = speculum::test::tmp_dir() / "tokenize_bytes.txt";
    write(file, "Hello\n");
    EXPECT_EQ(ids({"--file", file.string()}), "15043 13\n");
    write(file, std::string("a\xff\x00z", 4));
    EXPECT_EQ(ids({"--file", file.string()}), "263 258 3 125\n");  // <0xFF> and <0x00> byte tokens
}

TEST(CliTokenize, UsageAndRuntimeErrors) {
    auto r = run_cli({"tokenize", "-p", "x"});  // no model: the bundled target's tokenizer
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_FALSE(r.out.empty());
    r = run_cli({"tokenize", "-m", "x.gguf"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("exactly one of -p TEXT or --file FILE"), std::string::npos);
    r = run_cli({"tokenize", "-m", "x.gguf", "-p", "a", "--file", "f"});
    EXPECT_EQ(r.exit_code, 2);
    r = run_cli({"tokenize", "-m", "x.gguf", "-p", "a", "--no-parse-special"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--no-parse-special only applies together with --special"), std::string::npos);
    r = run_cli({"tokenize", "-m", "x.gguf", "-p", "a", "--bogus"});
    EXPECT_EQ(r.exit_code, 2);
    r = run_cli({"tokenize", "--help"});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_NE(r.out.find("--file FILE"), std::string::npos);

    const auto missing = speculum::test::tmp_dir() / "no_such_model.gguf";
    r                  = run_cli({"tokenize", "-m", missing.string(), "-p", "a"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("no_such_model.gguf"), std::string::npos) << r.err;
    const auto not_gguf = speculum::test::tmp_dir() / "not_a_model.gguf";
    write(not_gguf, "this is not a GGUF file at all");
    r = run_cli({"tokenize", "-m", not_gguf.string(), "-p", "a"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("not_a_model.gguf"), std::string::npos) << r.err;
}

TEST(CliTokenize, MissingTextFileIsARuntimeError) {
    SPECULUM_SHARED_OR_SKIP(shared);
    const auto r = run_cli({"tokenize", "-m", (shared / "vocab" / "ggml-vocab-gpt-2.gguf").string(), "--file",
                            (speculum::test::tmp_dir() / "no_such_text.txt").string()});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("cannot open the text file: No such file"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("no_such_text.txt"), std::string::npos);
}
