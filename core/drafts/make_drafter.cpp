// make_drafter: DraftSpec -> Drafter (see make_drafter.h).
#include "core/drafts/make_drafter.h"

#include "core/data/dataset.h"
#include "core/drafts/dflash_drafter.h"
#include "core/drafts/eagle3_drafter.h"
#include "core/drafts/maxgram_drafter.h"
#include "core/drafts/model_drafter.h"
#include "core/drafts/mtp_drafter.h"
#include "core/drafts/ngram_drafter.h"
#include "core/drafts/self_draft.h"
#include "core/drafts/vocab_compat.h"
#include "core/model/tokenizer.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <numeric>
#include <stdexcept>

namespace speculum::drafts {

namespace {

// Token sequences of a JSONL prompt suite, tokenized with the target's tokenizer.
std::vector<std::vector<int32_t>> tokenize_suite(const std::string& path, TokenizeFn tokenize, const std::string& field,
                                                 const model::Model& target) {
    // Without a tokenizer from the caller, the target's own (from its GGUF metadata) is used.
    std::string why_none = "the target has no GGUF metadata";
    if (!tokenize && target.gguf())
        if (auto tok = model::tokenizer_of(*target.gguf(), &why_none))
            tokenize = [t = std::make_shared<const model::Tokenizer>(std::move(*tok))](const std::string& text) {
                return t->encode(text, true, false);
            };
    if (!tokenize)
        throw std::invalid_argument("draft." + field + " names '" + path + "', but the target has no tokenizer (" +
                                    why_none + ") and DrafterOptions.tokenize is empty");
    const data::Dataset ds = data::load_dataset(path);
    std::vector<std::vector<int32_t>> out;
    const std::string tmpl = target.gguf() ? target.gguf()->get_string_or("tokenizer.chat_template", "") : "";
    for (const data::Prompt& p : ds.prompts) out.push_back(tokenize(data::prompt_text(p, tmpl, path)));
    return out;
}

model::ContextConfig draft_context(const DrafterOptions& o, const model::Model& target) {
    model::ContextConfig c = o.context;
    if (c.n_ctx == 0) c.n_ctx = target.hparams().n_ctx_train;
    return c;
}

}  // namespace

ActivationNorms wanda_norms(const DraftSpec& spec, const model::Model& target, const DrafterOptions& options) {
    if (!spec.uses_wanda()) return {};
    std::vector<std::vector<int32_t>> seqs = options.calibration_tokens;
    if (seqs.empty()) {
        if (spec.prune.calibration.empty())
            throw std::invalid_argument(
                "draft.prune.calibration: Wanda needs calibration text (a JSONL prompt suite) or "
                "calibration token ids (DrafterOptions.calibration_tokens)");
        seqs = tokenize_suite(spec.prune.calibration, options.tokenize, "prune.calibration", target);
    }
    return collect_activation_norms(target, seqs, spec.prune.calibration_tokens, options.progress, options.cancel);
}

SelfDraft build_self_draft(const model::Model& target, const DraftSpec& spec, const DrafterOptions& options) {
    const ActivationNorms norms = wanda_norms(spec, target, options);
    return build_self_draft(target, spec, spec.uses_wanda() ? &norms : nullptr, options.progress, options.cancel);
}

std::vector<int32_t> frequent_tokens(const std::vector<std::vector<int32_t>>& seqs, int32_t n_vocab, int32_t n) {
    std::vector<int64_t> count(size_t(n_vocab), 0);
    for (const auto& s : seqs)
        for (int32_t t : s)
            if (t >= 0 && t < n_vocab) ++count[size_t(t)];
    std::vector<int32_t> ids(static_cast<size_t>(n_vocab));
    std::iota(ids.begin(), ids.end(), 0);
    const size_t keep = size_t(std::clamp(n, 1, n_vocab));
    std::partial_sort(ids.begin(), ids.begin() + std::ptrdiff_t(keep), ids.end(), [&](int32_t a, int32_t b) {
        return count[size_t(a)] != count[size_t(b)] ? count[size_t(a)] > count[size_t(b)] : a < b;
    });
    ids.resize(keep);
    std::sort(ids.begin(), ids.end());
    return ids;
}

std::vector<int32_t> head_tokens_for(const DraftSpec& spec, const model::Model& target, const DrafterOptions& options) {
    if (spec.head_vocab <= 0) return {};
    return frequent_tokens(tokenize_suite(spec.head_vocab_corpus, options.tokenize, "head_vocab_corpus", target),
                           target.hparams().n_vocab, spec.head_vocab);
}

namespace {

std::unique_ptr<Drafter> build(const DraftSpec& spec, const model::Model& target, const DrafterOptions& options,
                               DraftBuild& out) {
    const model::Hparams& hp = target.hparams();
    const std::string label  = spec.name();
    switch (spec.kind) {
        case DraftKind::maxgram: {
            std::optional<BigramTable> bigram;
            if (!spec.bigram_corpus.empty())
                bigram = BigramTable::build(
                    tokenize_suite(spec.bigram_corpus, options.tokenize, "bigram_corpus", target), hp.n_vocab);
            return std::make_unique<MaxGramDrafter>(hp.n_vocab, spec.maxgram, std::move(bigram));
        }
        case DraftKind::ngram: {
            // llama.cpp's lookup files: the static cache must exist; a missing dynamic one starts empty (as
            // llama-lookup treats it).
            NgramCounts static_counts, dynamic_counts;
            if (!spec.ngram.static_cache.empty())
                static_counts = ngram_counts_load(spec.ngram.static_cache, hp.n_vocab);
            if (!spec.ngram.dynamic_cache.empty() && std::filesystem::exists(spec.ngram.dynamic_cache))
                dynamic_counts = ngram_counts_load(spec.ngram.dynamic_cache, hp.n_vocab);
            return std::make_unique<NgramDrafter>(hp.n_vocab, spec.ngram, std::move(static_counts),
                                                  std::move(dynamic_counts));
        }
        case DraftKind::mtp:
            return std::make_unique<MtpDrafter>(target, mtp_layer_for(spec, target), draft_context(options, target),
                                                label);
        case DraftKind::eagle3: {
            Eagle3Head head          = load_eagle3_head(eagle3_head_path(spec.model_path), target);
            model::ContextConfig ctx = draft_context(options, target);
            return std::make_unique<Eagle3Drafter>(target, std::move(head), ctx, label);
        }
        case DraftKind::dflash:
        case DraftKind::dspark: {
            const bool dspark        = spec.kind == DraftKind::dspark;
            DflashModel draft        = load_dflash(dflash_path(spec.model_path, dspark), target);
            model::ContextConfig ctx = draft_context(options, target);
            ctx.n_ctx                = std::min(ctx.n_ctx + draft.block_size + 1, 1 << 20);  // context + the block
            return std::make_unique<DflashDrafter>(target, std::move(draft), dspark, ctx, label);
        }
        case DraftKind::model: {
            out.model = model::Model::load(spec.model_path, options.progress, options.cancel);
            check_vocab_compatible(target, *out.model);  // throws VocabMismatch explaining the failed check
            ModelDrafterConfig cfg{.context = draft_context(options, *out.model), .forward = {}, .name = label};
            cfg.head_tokens = head_tokens_for(spec, target, options);
            return std::make_unique<ModelDrafter>(*out.model, std::move(cfg));  // a copy shares the buffers
        }
        case DraftKind::self: {
            out.self = build_self_draft(target, spec, options);
            ModelDrafterConfig cfg{.context        = draft_context(options, target),
                                   .forward        = out.self->forward,
                                   .name           = label,
                                   .read_target_kv = spec.kv_from_target,
                                   .head_tokens    = head_tokens_for(spec, target, options)};
            return std::make_unique<ModelDrafter>(out.self->model, std::move(cfg), out.self->cost);
        }
    }
    throw std::invalid_argument("draft.kind: unknown kind");
}

}  // namespace

DraftBuild build_draft(const DraftSpec& spec, const model::Model& target, const DrafterOptions& options) {
    spec.validate(target.hparams().n_layer);
    const auto t0 = std::chrono::steady_clock::now();
    DraftBuild out;
    out.drafter = build(spec, target, options, out);
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return out;
}

std::unique_ptr<Drafter> make_drafter(const DraftSpec& spec, const model::Model& target,
                                      const DrafterOptions& options) {
    return build_draft(spec, target, options).drafter;
}

}  // namespace speculum::drafts
