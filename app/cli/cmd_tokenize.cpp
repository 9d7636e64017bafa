// `speculum-cli tokenize`: token ids of a text under a GGUF model's tokenizer, one line, as llama.cpp's tokenizer
// tests count them (no BOS, special-token texts as plain text) unless --special is given.
#include "cli.h"

#include "core/file_io.h"
#include "core/resources.h"

#include "core/model/gguf.h"
#include "core/model/tokenizer.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <stdexcept>
#include <string>

namespace speculum::cli {

namespace {

// A piece for display: printable ASCII and well-formed UTF-8 as is, everything else escaped (\n, \t, \xNN).
std::string quote_piece(const std::string& p) {
    std::string out               = "'";
    static constexpr char k_hex[] = "0123456789abcdef";
    for (size_t i = 0; i < p.size();) {
        const auto b    = static_cast<unsigned char>(p[i]);
        const char* esc = b == '\n'   ? "\\n"
                          : b == '\t' ? "\\t"
                          : b == '\r' ? "\\r"
                          : b == '\\' ? "\\\\"
                          : b == '\'' ? "\\'"
                                      : nullptr;
        if (esc || (b >= 0x20 && b < 0x7F)) {
            out += esc ? esc : std::string(1, static_cast<char>(b));
            ++i;
            continue;
        }
        size_t n = b >= 0xF0 && b < 0xF8 ? 4 : b >= 0xE0 && b < 0xF0 ? 3 : b >= 0xC2 && b < 0xE0 ? 2 : 0;
        for (size_t k = 1; k < n; ++k)
            if (i + k >= p.size() || (static_cast<unsigned char>(p[i + k]) & 0xC0) != 0x80) n = 0;
        if (n == 0) {
            ((out += "\\x") += k_hex[b >> 4]) += k_hex[b & 15];
            ++i;
            continue;
        }
        out.append(p, i, n);
        i += n;
    }
    return out + "'";
}

}  // namespace

int cmd_tokenize(int argc, char** argv) {
    Args args(
        "tokenize",
        {{"model", 'm', true, "MODEL.gguf",
          "GGUF file whose tokenizer.ggml.* metadata to use (default: the bundled target)"},
         {"prompt", 'p', true, "TEXT", "the text to tokenize"},
         {"file", 0, true, "FILE",
          "read the text from FILE, byte for byte (instead of -p; a regular file up to 1 GiB, tokenized in pieces)"},
         {"special", 0, false, "", "add BOS/EOS as the model asks and parse special-token texts like <s>"},
         {"no-parse-special", 0, false, "", "with --special: keep special-token texts as plain text"},
         {"pieces", 0, false, "", "print one token per line: ID 'PIECE'"}},
        {});
    if (!args.parse(argc, argv)) {
        std::cout << args.help(
            "Print the token ids of a text, separated by spaces on one line. By default no BOS/EOS is added and\n"
            "texts such as \"<s>\" or \"<|endoftext|>\" are ordinary text, as llama.cpp's tokenizer tests count\n"
            "(llama_tokenize with add_special = parse_special = false). Tokenizers: llama (SentencePiece) and\n"
            "gpt2 (byte-level BPE) with the pre-tokenizers of GPT-2 (gpt-2, phi-2, mpt, olmo, ...), Llama 3\n"
            "(llama-bpe, llama3, falcon3, pixtral) and Qwen 2/2.5/3 (qwen2, deepseek-r1-qwen, megrez).");
        return 0;
    }
    const std::optional<std::string> model =
        args.has("model") ? *args.value("model") : resource_path(kBundledTargetModel).string();
    if (args.has("prompt") == args.has("file"))
        throw UsageError("give the text with exactly one of -p TEXT or --file FILE");
    if (args.has("no-parse-special") && !args.has("special"))
        throw UsageError("--no-parse-special only applies together with --special");
    if (auto file = args.value("file")) check_input_file(*file, kMaxTextFileBytes, "text file");  // before the model

    const model::GgufFile gguf = model::GgufFile::open(*model);
    std::string why_none;
    const std::optional<model::Tokenizer> found = model::tokenizer_of(gguf, &why_none);
    if (!found) throw std::runtime_error(*model + ": " + why_none);
    const model::Tokenizer& tok = *found;

    const bool add_special   = args.has("special");
    const bool parse_special = add_special && !args.has("no-parse-special");
    const bool pieces        = args.has("pieces");
    // Ids are printed as they are made: a file is read and tokenized in pieces (Tokenizer::encode_stream), so a
    // large text never sits in memory whole with its tokens.
    bool first = true;
    std::string line;
    auto emit = [&](const std::vector<int32_t>& ids) {
        line.clear();
        for (int32_t id : ids) {
            if (pieces) {
                ((line += std::to_string(id)) += ' ') += quote_piece(tok.token_to_piece(id));
                line += '\n';
                continue;
            }
            if (!first) line += ' ';
            line += std::to_string(id);
            first = false;
        }
        std::cout << line;
    };
    if (auto file = args.value("file")) {
        std::ifstream in = open_input_file(*file, kMaxTextFileBytes, "text file");
        try {
            tok.encode_stream(in, add_special, parse_special, emit);
        } catch (const std::runtime_error& e) {
            std::cout.flush();
            throw std::runtime_error(*file + ": " + e.what());
        }
    } else {
        emit(tok.encode(args.value_or("prompt", ""), add_special, parse_special));
    }
    if (!pieces) std::cout << '\n';
    std::cout.flush();
    if (!std::cout) throw std::runtime_error("error writing the token ids to standard output");
    return 0;
}

}  // namespace speculum::cli
