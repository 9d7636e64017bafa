// DraftSpec validation and description (see draft_spec.h; its JSON is draft_spec_json.cpp).
#include "core/drafts/draft_spec.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>
#include <stdexcept>

namespace speculum::drafts {

namespace {

[[noreturn]] void bad(const std::string& field, const std::string& why) {
    throw std::invalid_argument("draft." + field + " " + why);
}

std::string num(double v) {
    std::ostringstream s;
    s << v;
    return s.str();
}

void check_ratio(float r, const std::string& field) {
    if (!std::isfinite(r) || r < 0.0f || r >= 1.0f) bad(field, "must be in [0, 1), got " + num(r));
}

void check_bits(int32_t t, const std::string& field) {
    if (t < 0 || t > 7) bad(field, "must be in 0..7 (BF16 has 7 mantissa bits), got " + std::to_string(t));
}

void check_layers(const std::vector<int32_t>& layers, int32_t n_layer, const std::string& field) {
    std::set<int32_t> seen;
    for (int32_t il : layers) {
        if (il < 0 || (n_layer >= 0 && il >= n_layer))
            bad(field, "names layer " + std::to_string(il) + ", but the target has " +
                           (n_layer >= 0 ? std::to_string(n_layer) + " layers (0.." + std::to_string(n_layer - 1) + ")"
                                         : std::string("no negative layers")));
        if (!seen.insert(il).second) bad(field, "lists layer " + std::to_string(il) + " twice");
    }
}

}  // namespace

const char* to_string(DraftKind k) {
    return draft_kind_info(k).name;
}
const char* to_string(PruneMethod m) {
    return m == PruneMethod::magnitude ? "magnitude" : "wanda";
}
const char* to_string(WeightFormat f) {
    switch (f) {
        case WeightFormat::same:
            return "same";
        case WeightFormat::bf16:
            return "bf16";
        case WeightFormat::q8_0:
            return "q8_0";
        case WeightFormat::mxfp4:
            return "mxfp4";
    }
    return "?";
}
const char* to_string(MantissaRounding r) {
    return r == MantissaRounding::toward_zero ? "toward_zero" : "nearest_even";
}

void DraftSpec::validate(int32_t n_layer) const {
    check_ratio(prune.ratio, "prune.ratio");
    if (prune.calibration_tokens < 1 || prune.calibration_tokens > (1 << 20))
        bad("prune.calibration_tokens", "must be in [1, 1048576], got " + std::to_string(prune.calibration_tokens));
    if (prune.ratio > 0.0f && !prune.attention && !prune.ffn && !prune.embeddings && !prune.output)
        bad("prune", "selects no tensor class (attention, ffn, embeddings, output) for a ratio of " + num(prune.ratio));
    check_bits(weight_trunc_bits, "weight_trunc_bits");
    check_bits(kv_trunc_bits, "kv_trunc_bits");
    check_ratio(kv_drop_ratio, "kv_drop_ratio");
    if (weight_trunc_bits > 0 && weight_format != WeightFormat::same && weight_format != WeightFormat::bf16)
        bad("weight_trunc_bits", "truncates BF16 mantissas and cannot combine with weight_format \"" +
                                     std::string(to_string(weight_format)) + "\"");
    if (exit_layer < -1 || (n_layer >= 0 && exit_layer >= n_layer))
        bad("exit_layer", "must be -1 (all layers) or a layer in 0.." +
                              (n_layer >= 0 ? std::to_string(n_layer - 1) : std::string("n_layer-1")) + ", got " +
                              std::to_string(exit_layer));
    check_layers(skip_attn, n_layer, "skip_attn");
    check_layers(skip_ffn, n_layer, "skip_ffn");
    if (experts_used < 0 || experts_used > 1024)
        bad("experts_used", "must be in [0, 1024], got " + std::to_string(experts_used));
    maxgram.validate();
    ngram.validate();

    // Transforms belong to self-drafts; a model or Max-Gram spec that sets them is a mistake, not a no-op.
    const DraftSpec d;
    const bool transforms = prune != d.prune || weight_trunc_bits != 0 || kv_trunc_bits != 0 || kv_drop_ratio != 0.0f ||
                            weight_format != WeightFormat::same || exit_layer != -1 || !skip_attn.empty() ||
                            !skip_ffn.empty() || experts_used != 0;
    if (strict_subset && kind != DraftKind::self) bad("strict_subset", "applies only to kind \"self\"");
    if (strict_subset && !compact) bad("strict_subset", "needs compact storage (compact true)");
    if (strict_subset && prune.ratio <= 0.0f && weight_trunc_bits == 0)
        bad("strict_subset", "needs pruning or weight truncation: the draft would store every bit of the target");
    if (strict_subset && weight_trunc_bits > 0 && trunc_rounding != MantissaRounding::toward_zero)
        bad("strict_subset", "needs trunc_rounding \"toward_zero\": a rounded weight is not the target's bits");
    if (strict_subset && weight_format != WeightFormat::same && weight_format != WeightFormat::bf16)
        bad("strict_subset", "needs the bf16 format (weight_format \"" + std::string(to_string(weight_format)) +
                                 "\" re-encodes the weights)");
    if (kind != DraftKind::self && transforms)
        bad("kind", std::string("is \"") + to_string(kind) + "\": self-draft transforms (prune, truncation, format, " +
                        "KV, layer skip) apply only to kind \"self\"");
    if (kind == DraftKind::model && model_path.empty()) bad("model_path", "is required for kind \"model\"");
    if ((kind == DraftKind::self || is_statistical(kind)) && !model_path.empty())
        bad("model_path", "applies only to kinds \"model\", \"eagle3\", \"mtp\", \"dflash\" and \"dspark\"");
    if (kind != DraftKind::maxgram && !bigram_corpus.empty()) bad("bigram_corpus", "applies only to kind \"maxgram\"");
    if (kind != DraftKind::ngram && !(ngram == NgramSpec{})) bad("ngram", "applies only to kind \"ngram\"");
    if (mtp_layer < 0 || mtp_layer > 64) bad("mtp_layer", "must be in 0..64, got " + std::to_string(mtp_layer));
    if (kind != DraftKind::mtp && mtp_layer != 0) bad("mtp_layer", "applies only to kind \"mtp\"");
    if (head_vocab < 0 || head_vocab > (1 << 22))
        bad("head_vocab", "must be in 0..4194304, got " + std::to_string(head_vocab));
    if ((head_vocab > 0 || !head_vocab_corpus.empty()) && kind != DraftKind::self && kind != DraftKind::model)
        bad("head_vocab", "applies only to kinds \"self\" and \"model\" (a reduced LM head, FR-Spec)");
    if (head_vocab > 0 && head_vocab_corpus.empty())
        bad("head_vocab_corpus", "is required with head_vocab: the prompt suite whose token frequencies pick the head");
    if (head_vocab == 0 && !head_vocab_corpus.empty()) bad("head_vocab_corpus", "applies only with head_vocab > 0");
}

std::vector<std::string> drop_inapplicable(DraftSpec& d, const DraftSpec& before) {
    const DraftSpec fresh;
    std::vector<std::string> out;
    if (d.kind != DraftKind::self) {
        if (d.prune != fresh.prune) {
            if (d.prune.ratio > 0) out.push_back("pruning " + num(d.prune.ratio));
            d.prune = fresh.prune;
        }
        if (d.weight_trunc_bits) out.push_back(std::to_string(d.weight_trunc_bits) + "-bit weight truncation");
        if (d.kv_trunc_bits) out.push_back(std::to_string(d.kv_trunc_bits) + "-bit KV truncation");
        if (d.kv_drop_ratio > 0) out.push_back("KV drop " + num(d.kv_drop_ratio));
        if (d.weight_format != fresh.weight_format) out.push_back(std::string(to_string(d.weight_format)) + " weights");
        if (d.exit_layer >= 0) out.push_back("the exit after layer " + std::to_string(d.exit_layer));
        if (!d.skip_attn.empty() || !d.skip_ffn.empty())
            out.push_back("the skip set (" + std::to_string(d.skip_attn.size() + d.skip_ffn.size()) +
                          (d.skip_attn.size() + d.skip_ffn.size() == 1 ? " block)" : " blocks)"));
        if (d.strict_subset) out.push_back("strict-subset storage");
        if (d.experts_used) out.push_back(std::to_string(d.experts_used) + " experts per token");
        d.weight_trunc_bits = 0, d.kv_trunc_bits = 0, d.kv_drop_ratio = 0, d.weight_format = fresh.weight_format;
        d.trunc_rounding = fresh.trunc_rounding, d.format_output = fresh.format_output, d.compact = fresh.compact;
        d.strict_subset = false, d.kv_from_target = fresh.kv_from_target, d.exit_layer = -1, d.experts_used = 0;
        d.skip_attn.clear(), d.skip_ffn.clear();
    }
    if (d.kind != before.kind && !d.model_path.empty() && d.model_path == before.model_path) {
        out.push_back("the file " + std::filesystem::path(d.model_path).filename().string());
        d.model_path.clear();
    }
    if (d.kind != DraftKind::maxgram) {
        if (!d.bigram_corpus.empty()) out.push_back("the bigram corpus");
        if (!(d.maxgram == fresh.maxgram)) out.push_back("the Max-Gram settings");
        d.bigram_corpus.clear(), d.maxgram = fresh.maxgram;
    }
    if (d.kind != DraftKind::ngram && !(d.ngram == fresh.ngram)) {
        out.push_back("the n-gram settings");
        d.ngram = fresh.ngram;
    }
    if (d.kind != DraftKind::self && d.kind != DraftKind::model &&
        (d.head_vocab != 0 || !d.head_vocab_corpus.empty())) {
        out.push_back("the reduced head (" + std::to_string(d.head_vocab) + " tokens)");
        d.head_vocab = 0, d.head_vocab_corpus.clear();
    }
    if (d.kind != DraftKind::mtp && d.mtp_layer != 0) {
        out.push_back("MTP layer " + std::to_string(d.mtp_layer));
        d.mtp_layer = 0;
    }
    return out;
}

std::string DraftSpec::describe() const {
    if (head_vocab > 0) {  // FR-Spec: the same draft with a reduced head
        DraftSpec full  = *this;
        full.head_vocab = 0, full.head_vocab_corpus.clear();
        return full.describe() + " + head " + std::to_string(head_vocab);
    }
    if (kind == DraftKind::model) return "model " + model_path;
    if (kind == DraftKind::ngram) return ngram.describe();
    if (kind == DraftKind::mtp)
        return "mtp layer " + std::to_string(mtp_layer) +
               (model_path.empty() ? std::string(" (the target's own, or the bundled module)") : " of " + model_path);
    if (kind == DraftKind::eagle3) return "eagle3 " + (model_path.empty() ? std::string("(bundled head)") : model_path);
    if (kind == DraftKind::dflash || kind == DraftKind::dspark)
        return std::string(to_string(kind)) + " " +
               (model_path.empty() ? std::string("(bundled block draft)") : model_path);
    if (kind == DraftKind::maxgram) {
        std::string s =
            "max-gram (match " + std::to_string(maxgram.min_match) + ".." + std::to_string(maxgram.max_match);
        s += maxgram.prefer_recent ? ", recent" : "";
        s += maxgram.mode == MaxGramMode::periodic ? ", periodic" : "";
        s += ")";
        if (!bigram_corpus.empty() && maxgram.bigram_fill) s += " + bigram " + bigram_corpus;
        return s;
    }
    std::vector<std::string> parts;
    if (prune.ratio > 0.0f) {
        std::string classes;
        auto add = [&](bool on, const char* n) {
            if (!on) return;
            if (!classes.empty()) classes += '+';
            classes += n;
        };
        add(prune.attention, "attn");
        add(prune.ffn, "ffn");
        add(prune.embeddings, "embd");
        add(prune.output, "output");
        parts.push_back("prune " + num(prune.ratio * 100.0) + "% " + to_string(prune.method) + " (" + classes +
                        (prune.per_row ? ", per row" : ", per tensor") + ")");
    }
    if (weight_trunc_bits > 0 || weight_format == WeightFormat::bf16)
        parts.push_back(
            "bf16 t=" + std::to_string(weight_trunc_bits) +
            (weight_trunc_bits > 0 && trunc_rounding == MantissaRounding::nearest_even ? " (nearest)" : ""));
    else if (weight_format != WeightFormat::same)
        parts.push_back(to_string(weight_format));
    if (weight_format != WeightFormat::same && !format_output) parts.back() += " (output kept)";
    if (!compact && (prune.ratio > 0.0f || weight_trunc_bits > 0)) parts.back() += " (dense copy)";
    if (strict_subset) parts.push_back("strict subset of the target");
    if (kv_trunc_bits > 0) parts.push_back("kv t=" + std::to_string(kv_trunc_bits));
    if (kv_drop_ratio > 0.0f) parts.push_back("kv drop " + num(kv_drop_ratio * 100.0) + "%");
    if (exit_layer >= 0) parts.push_back("exit@" + std::to_string(exit_layer));
    if (experts_used > 0) parts.push_back(std::to_string(experts_used) + " experts/token");
    auto list = [](const std::vector<int32_t>& v) {
        std::string s;
        for (int32_t x : v) {  // appended, not (sep + to_string): GCC 12 warns falsely on that (-Wrestrict, 105651)
            if (!s.empty()) s += ',';
            s += std::to_string(x);
        }
        return s;
    };
    if (!skip_attn.empty()) parts.push_back("skip attn {" + list(skip_attn) + "}");
    if (!skip_ffn.empty()) parts.push_back("skip ffn {" + list(skip_ffn) + "}");
    if (parts.empty()) parts.push_back("self (identity)");
    if (!kv_from_target) parts.push_back("own KV");
    std::string s;
    for (const std::string& p : parts) s += (s.empty() ? "" : " + ") + p;
    return s;
}

}  // namespace speculum::drafts
