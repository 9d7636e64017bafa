// Vocabulary compatibility of a draft GGUF with the target's (see vocab_compat.h).
#include "core/drafts/vocab_compat.h"

#include <algorithm>
#include <optional>

namespace speculum::drafts {

namespace {

struct VocabMeta {
    std::string type;  // tokenizer.ggml.model
    std::optional<int64_t> bos, eos;
    std::optional<bool> add_bos, add_eos;
    const std::vector<std::string>* tokens = nullptr;
};

std::optional<int64_t> opt_int(const model::GgufFile& f, const char* key) {
    const model::GgufValue* v = f.find(key);
    if (!v) return std::nullopt;
    if (!v->is_integer()) f.fail(key, "expected an integer token id");
    return v->i;
}
std::optional<bool> opt_bool(const model::GgufFile& f, const char* key) {
    if (!f.find(key)) return std::nullopt;
    return f.get_bool(key);
}

// Absent keys take llama.cpp's defaults for SPM vocabularies (bos 1, eos 2, add_bos true, add_eos false);
// for other types an absent key compares equal only to an absent key.
VocabMeta read_meta(const model::GgufFile& f) {
    VocabMeta m;
    m.type    = f.get_string_or("tokenizer.ggml.model", "");
    m.bos     = opt_int(f, "tokenizer.ggml.bos_token_id");
    m.eos     = opt_int(f, "tokenizer.ggml.eos_token_id");
    m.add_bos = opt_bool(f, "tokenizer.ggml.add_bos_token");
    m.add_eos = opt_bool(f, "tokenizer.ggml.add_eos_token");
    if (m.type == "llama") {
        if (!m.bos) m.bos = 1;
        if (!m.eos) m.eos = 2;
        if (!m.add_bos) m.add_bos = true;
        if (!m.add_eos) m.add_eos = false;
    }
    if (f.find("tokenizer.ggml.tokens"))
        m.tokens = &f.get_array("tokenizer.ggml.tokens", model::GgufType::STRING).strings;
    return m;
}

template <class T>
std::string show(const std::optional<T>& v) {
    if (!v) return "absent";
    if constexpr (std::is_same_v<T, bool>)
        return *v ? "true" : "false";
    else
        return std::to_string(*v);
}

}  // namespace

std::string vocab_incompatibility(const model::GgufFile& target, const model::GgufFile& draft) {
    const VocabMeta t = read_meta(target), d = read_meta(draft);
    if (!t.tokens) return "the target has no tokenizer.ggml.tokens";
    if (!d.tokens) return "the draft has no tokenizer.ggml.tokens";
    if (t.type != d.type)
        return "vocab type (tokenizer.ggml.model) differs: target '" + t.type + "', draft '" + d.type + "'";
    if (t.add_bos != d.add_bos)
        return "add_bos_token differs: target " + show(t.add_bos) + ", draft " + show(d.add_bos);
    if (t.bos != d.bos) return "bos_token_id differs: target " + show(t.bos) + ", draft " + show(d.bos);
    if (t.add_eos != d.add_eos)
        return "add_eos_token differs: target " + show(t.add_eos) + ", draft " + show(d.add_eos);
    if (t.eos != d.eos) return "eos_token_id differs: target " + show(t.eos) + ", draft " + show(d.eos);
    const int64_t nt = static_cast<int64_t>(t.tokens->size()), nd = static_cast<int64_t>(d.tokens->size());
    if (std::abs(nt - nd) > kVocabMaxSizeDifference)
        return "vocabulary sizes differ by " + std::to_string(std::abs(nt - nd)) + " (target " + std::to_string(nt) +
               ", draft " + std::to_string(nd) + "; at most " + std::to_string(kVocabMaxSizeDifference) + " allowed)";
    for (int64_t i = kVocabCheckStartTokenId; i < std::min(nt, nd); ++i)
        if ((*t.tokens)[size_t(i)] != (*d.tokens)[size_t(i)])
            return "token " + std::to_string(i) + " differs: target '" + (*t.tokens)[size_t(i)] + "', draft '" +
                   (*d.tokens)[size_t(i)] + "'";
    return {};
}

void check_vocab_compatible(const model::Model& target, const model::Model& draft) {
    const std::string head = "draft '" + draft.name() + "' cannot speculate for target '" + target.name() + "': ";
    std::string why;
    auto has_vocab = [](const model::Model& m) { return m.gguf() && m.gguf()->find("tokenizer.ggml.tokens"); };
    // Neither side carries a tokenizer (in-memory or random-weight models): only n_vocab can be compared.
    const bool metadata = has_vocab(target) || has_vocab(draft);
    if (metadata && !has_vocab(target))
        why = "the target has no tokenizer metadata (tokenizer.ggml.tokens)";
    else if (metadata && !has_vocab(draft))
        why = "the draft has no tokenizer metadata (tokenizer.ggml.tokens)";
    else if (metadata)
        why = vocab_incompatibility(*target.gguf(), *draft.gguf());
    if (why.empty() && draft.hparams().n_vocab > target.hparams().n_vocab)
        why = "the draft's " + std::to_string(draft.hparams().n_vocab) + " logits exceed the target's " +
              std::to_string(target.hparams().n_vocab) + " tokens (draft tokens must be target tokens)";
    if (why.empty() && !metadata && draft.hparams().n_vocab != target.hparams().n_vocab)
        why = "no tokenizer metadata on either side and n_vocab differs: target " +
              std::to_string(target.hparams().n_vocab) + ", draft " + std::to_string(draft.hparams().n_vocab);
    if (!why.empty()) throw VocabMismatch(head + why);
}

}  // namespace speculum::drafts
