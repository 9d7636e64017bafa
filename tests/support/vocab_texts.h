// llama.cpp's tokenizer-test file layout (tests/test-tokenizer-0.cpp): texts separated by "\n__ggml_vocab_test__\n"
// (the text after the last separator, if any, is one more), read by the tokenizer tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace speculum::test {

inline std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + p.string());
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline std::vector<std::string> read_vocab_texts(const std::filesystem::path& inp) {
    const std::string raw = slurp(inp), sep = "\n__ggml_vocab_test__\n";
    std::vector<std::string> out;
    for (size_t pos = 0; pos < raw.size();) {
        const size_t next = raw.find(sep, pos);
        if (next == std::string::npos) {
            out.push_back(raw.substr(pos));
            break;
        }
        out.push_back(raw.substr(pos, next - pos));
        pos = next + sep.size();
    }
    return out;
}

}  // namespace speculum::test
