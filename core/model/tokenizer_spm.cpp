// SentencePiece-style BPE ("llama" vocabularies): start from UTF-8 characters, repeatedly merge the adjacent pair
// whose concatenation is the highest-scoring token, then fall back to <0xXX> byte tokens for what is left.
// Same results as llama.cpp's llm_tokenizer_spm; O(n log n) in the fragment length.
#include "core/model/tokenizer_impl.h"

#include <queue>

namespace speculum::model::detail {

namespace {

struct Bigram {
    int left;
    int right;
    float score;
    size_t size;  // bytes of the merged text; a mismatch later means one side changed (stale entry)
};

// Highest score first; on ties the leftmost pair.
struct BigramLess {
    bool operator()(const Bigram& a, const Bigram& b) const {
        return a.score < b.score || (a.score == b.score && a.left > b.left);
    }
};

// <0xXX> for a byte, else the byte itself as a token, else unk (llama.cpp would throw here; -1: dropped).
int32_t byte_token(const TokenizerImpl& t, uint8_t byte) {
    static constexpr char k_hex[] = "0123456789ABCDEF";
    const char name[7]            = {'<', '0', 'x', k_hex[byte >> 4], k_hex[byte & 15], '>', 0};
    int32_t id                    = t.find(std::string_view(name, 6));
    if (id < 0) id = t.find(std::string_view(reinterpret_cast<const char*>(&byte), 1));
    return id >= 0 ? id : t.vocab.unk;
}

}  // namespace

void spm_encode(const TokenizerImpl& t, const std::string& text, std::vector<int32_t>& out) {
    std::vector<MergeSymbol> syms = utf8_symbols(text);

    std::priority_queue<Bigram, std::vector<Bigram>, BigramLess> queue;
    auto try_add = [&](int left, int right) {
        if (left < 0 || right < 0) return;
        const std::string_view merged(text.data() + syms[left].off, syms[left].n + syms[right].n);
        const int32_t id = t.find(merged);
        if (id < 0) return;
        queue.push({left, right, t.vocab.score(id), merged.size()});
    };
    for (int i = 1; i < static_cast<int>(syms.size()); ++i) try_add(i - 1, i);

    while (!queue.empty()) {
        const Bigram b = queue.top();
        queue.pop();
        if (!merge_symbols(syms, b.left, b.right, b.size)) continue;  // stale entry
        try_add(syms[size_t(b.left)].prev, b.left);
        try_add(b.left, syms[size_t(b.left)].next);
    }

    // Every merged symbol is a token by construction, so only single characters can miss; llama.cpp's
    // "resegment" then finds no recorded merge for them either and emits their bytes.
    for (int i = syms.empty() ? -1 : 0; i != -1; i = syms[i].next) {
        const std::string_view piece(text.data() + syms[i].off, syms[i].n);
        const int32_t id = t.find(piece);
        if (id >= 0) {
            out.push_back(id);
            continue;
        }
        for (char c : piece) {
            const int32_t b = byte_token(t, static_cast<uint8_t>(c));
            if (b >= 0) out.push_back(b);
        }
    }
}

}  // namespace speculum::model::detail
