// `speculum-cli ngram-cache`: llama.cpp lookup caches for the ngram-cache drafter (draft kind "ngram", method
// "ngram-cache"): create one from a prompt suite or a text file (2-grams for a static cache, as llama-lookup-create;
// 1..4-grams for a dynamic one), merge several (llama-lookup-merge), or describe one. Files are llama.cpp's format,
// so the same file serves `llama-server --spec-type ngram-cache -lcs FILE` and Speculum's measurements.
#include "cli.h"

#include "core/data/dataset.h"
#include "core/drafts/ngram.h"
#include "core/file_io.h"
#include "core/resources.h"

#include "core/model/gguf.h"
#include "core/model/tokenizer.h"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <stdexcept>

namespace speculum::cli {

namespace {

struct CacheStats {
    size_t ngrams = 0, pairs = 0;
    int64_t total = 0;
    std::map<int32_t, size_t> by_size;  // n-gram length -> n-grams
};

CacheStats stats_of(const drafts::NgramCounts& c) {
    CacheStats s;
    for (const auto& [key, next] : c) {
        ++s.ngrams;
        s.pairs += next.size();
        int32_t n = 0;
        while (n < 4 && key[size_t(n)] >= 0) ++n;
        ++s.by_size[n];
        for (const auto& [tok, count] : next) s.total += count;
    }
    return s;
}

void print_stats(const std::string& what, const drafts::NgramCounts& c) {
    const CacheStats s = stats_of(c);
    std::cout << what << ": " << s.ngrams << " n-grams, " << s.pairs << " (n-gram, next token) pairs, " << s.total
              << " counted";
    for (const auto& [n, k] : s.by_size)
        std::cout << (n == s.by_size.begin()->first ? " (" : ", ") << n << "-grams " << k;
    std::cout << (s.by_size.empty() ? "" : ")") << '\n';
}

model::Tokenizer tokenizer_for(const std::string& model) {
    const model::GgufFile gguf = model::GgufFile::open(model);
    std::string why_none;
    std::optional<model::Tokenizer> t = model::tokenizer_of(gguf, &why_none);
    if (!t) throw std::runtime_error(model + ": " + why_none);
    return std::move(*t);
}

int32_t n_vocab_of(const std::string& model) {
    return int32_t(tokenizer_for(model).vocab().tokens.size());
}

}  // namespace

int cmd_ngram_cache(int argc, char** argv) {
    Args args(
        "ngram-cache",
        {{"model", 'm', true, "MODEL.gguf", "the model whose tokenizer makes the ids (default: the bundled target)"},
         {"dataset", 'd', true, "SUITE.jsonl", "create: count the prompts of a JSONL prompt suite"},
         {"file", 'f', true, "FILE", "create: count a text file (up to 1 GiB, tokenized in pieces)"},
         {"all-sizes", 0, false, "",
          "create: count 1..4-grams (a dynamic cache, -lcd) instead of 2-grams (a static cache, -lcs)"},
         {"output", 'o', true, "OUT", "create, merge: the file to write (written whole, then renamed)"}},
        {"ACTION", "[CACHE...]"});
    if (!args.parse(argc, argv)) {
        std::cout << args.help(
            "llama.cpp lookup caches for the \"ngram-cache\" drafter (and llama.cpp's -lcs/-lcd):\n"
            "  create (-d SUITE.jsonl | -f FILE) -o OUT   count 2-grams (--all-sizes: 1..4-grams) of a corpus\n"
            "  merge A B ... -o OUT                        add the counts of several caches (llama-lookup-merge)\n"
            "  info CACHE...                               n-grams by size and counts of each file\n"
            "A static cache built from the prompts you measure on leaks them into the drafts: build it from\n"
            "another corpus (the training text, another suite) for honest acceptance figures.\n"
            "Example: speculum-cli ngram-cache create -f corpus.txt -o corpus.lcs, then the draft spec\n"
            "{\"kind\":\"ngram\",\"ngram\":{\"method\":\"ngram-cache\",\"static_cache\":\"corpus.lcs\"}}.");
        return 0;
    }
    const std::vector<std::string>& pos = args.positional();
    if (pos.empty()) throw UsageError("give an action: create, merge or info");
    const std::string action = pos[0];
    const std::string model  = args.value_or("model", resource_path(kBundledTargetModel).string());

    if (action == "create") {
        if (pos.size() != 1) throw UsageError("create takes no cache files (the corpus is -d or -f)");
        if (args.has("dataset") == args.has("file"))
            throw UsageError("create needs exactly one of -d SUITE or -f FILE");
        const auto out = args.value("output");
        if (!out) throw UsageError("create needs -o OUT");
        check_output_file(*out);
        if (auto f = args.value("file")) check_input_file(*f, kMaxTextFileBytes, "text file");
        const int32_t lo = args.has("all-sizes") ? 1 : 2, hi = args.has("all-sizes") ? 4 : 2;
        const model::Tokenizer tok = tokenizer_for(model);
        drafts::NgramCounts c;
        int64_t tokens = 0;
        if (auto d = args.value("dataset")) {
            const data::Dataset ds     = data::load_dataset(*d);
            const model::GgufFile gguf = model::GgufFile::open(model);
            const std::string tmpl     = gguf.get_string_or("tokenizer.chat_template", "");
            for (const data::Prompt& p : ds.prompts) {
                const std::vector<int32_t> ids = tok.encode(data::prompt_text(p, tmpl, *d), true, false);
                drafts::ngram_counts_update(c, ids, 0, 1, lo, hi);
                tokens += int64_t(ids.size());
            }
        } else {
            // Pieces of the file, counted with the last 3 tokens of the one before (n-grams span the cuts).
            const std::string file = *args.value("file");
            std::ifstream in       = open_input_file(file, kMaxTextFileBytes, "text file");
            std::vector<int32_t> seq;
            try {
                tok.encode_stream(in, false, false, [&](const std::vector<int32_t>& ids) {
                    const size_t keep = std::min<size_t>(seq.size(), 3);
                    seq.erase(seq.begin(), seq.end() - std::ptrdiff_t(keep));
                    seq.insert(seq.end(), ids.begin(), ids.end());
                    drafts::ngram_counts_update(c, seq, keep, 1, lo, hi);
                    tokens += int64_t(ids.size());
                });
            } catch (const std::runtime_error& e) {
                throw std::runtime_error(file + ": " + e.what() + " (nothing written)");
            }
        }
        drafts::ngram_counts_save(c, *out);
        std::cout << "counted " << tokens << " tokens\n";
        print_stats(*out, c);
        return 0;
    }
    if (action == "merge") {
        if (pos.size() < 2) throw UsageError("merge needs at least one cache file");
        const auto out = args.value("output");
        if (!out) throw UsageError("merge needs -o OUT");
        check_output_file(*out);
        const int32_t n_vocab = n_vocab_of(model);
        drafts::NgramCounts c;
        for (size_t i = 1; i < pos.size(); ++i)
            drafts::ngram_counts_merge(c, drafts::ngram_counts_load(pos[i], n_vocab));
        drafts::ngram_counts_save(c, *out);
        print_stats(*out, c);
        return 0;
    }
    if (action == "info") {
        if (pos.size() < 2) throw UsageError("info needs at least one cache file");
        const int32_t n_vocab = n_vocab_of(model);
        for (size_t i = 1; i < pos.size(); ++i) print_stats(pos[i], drafts::ngram_counts_load(pos[i], n_vocab));
        return 0;
    }
    throw UsageError("unknown action '" + action + "' (create, merge or info)");
}

}  // namespace speculum::cli
