// DraftSpec and NgramSpec JSON: writing and strict reading (enums as lower-case names; unknown keys and wrong types
// name the key, "draft.prune.ratio: ...").
#include "core/drafts/draft_spec.h"
#include "core/json_reader.h"

#include <stdexcept>

namespace speculum::drafts {

namespace {

// (name, value) pairs of an enum from its to_string names, for JsonReader::get_enum.
template <class E>
std::vector<std::pair<std::string, E>> names_of(std::initializer_list<E> values) {
    std::vector<std::pair<std::string, E>> out;
    for (E e : values) out.emplace_back(to_string(e), e);
    return out;
}

}  // namespace

void to_json(nlohmann::json& j, const DraftSpec& s) {
    nlohmann::json mg;
    to_json(mg, s.maxgram);
    j = nlohmann::json{
        {"kind", to_string(s.kind)},
        {"label", s.label},
        {"prune",
         {{"ratio", s.prune.ratio},
          {"method", to_string(s.prune.method)},
          {"attention", s.prune.attention},
          {"ffn", s.prune.ffn},
          {"embeddings", s.prune.embeddings},
          {"output", s.prune.output},
          {"per_row", s.prune.per_row},
          {"calibration", s.prune.calibration},
          {"calibration_tokens", s.prune.calibration_tokens}}},
        {"weight_trunc_bits", s.weight_trunc_bits},
        {"trunc_rounding", to_string(s.trunc_rounding)},
        {"kv_trunc_bits", s.kv_trunc_bits},
        {"kv_drop_ratio", s.kv_drop_ratio},
        {"weight_format", to_string(s.weight_format)},
        {"format_output", s.format_output},
        {"compact", s.compact},
        {"kv_from_target", s.kv_from_target},
        {"exit_layer", s.exit_layer},
        {"skip_attn", s.skip_attn},
        {"skip_ffn", s.skip_ffn},
        {"model_path", s.model_path},
        {"maxgram", mg},
        {"bigram_corpus", s.bigram_corpus},
    };
    if (s.strict_subset) j["strict_subset"] = true;  // written only when set: older files and reports stay as they were
    if (s.experts_used != 0) j["experts_used"] = s.experts_used;
    if (s.kind == DraftKind::ngram || !(s.ngram == NgramSpec{})) to_json(j["ngram"], s.ngram);
    if (s.kind == DraftKind::mtp || s.mtp_layer != 0) j["mtp_layer"] = s.mtp_layer;
    if (s.head_vocab != 0 || !s.head_vocab_corpus.empty())  // FR-Spec, written only when set
        j["head_vocab"] = s.head_vocab, j["head_vocab_corpus"] = s.head_vocab_corpus;
}

void to_json(nlohmann::json& j, const NgramSpec& s) {
    j = nlohmann::json{{"method", to_string(s.method)},
                       {"size_n", s.size_n},
                       {"size_m", s.size_m},
                       {"min_hits", s.min_hits},
                       {"mod_n_match", s.mod_n_match},
                       {"mod_n_min", s.mod_n_min},
                       {"mod_n_max", s.mod_n_max},
                       {"mod_pool_log2", s.mod_pool_log2},
                       {"static_cache", s.static_cache},
                       {"dynamic_cache", s.dynamic_cache},
                       {"cache_update", s.cache_update},
                       {"lookup_min", s.lookup_min},
                       {"lookup_max", s.lookup_max},
                       {"suffix_max_depth", s.suffix_max_depth},
                       {"suffix_spec_factor", s.suffix_spec_factor},
                       {"suffix_min_prob", s.suffix_min_prob},
                       {"suffix_max_cached", s.suffix_max_cached},
                       {"suffix_tree", s.suffix_tree}};
}

void from_json(const nlohmann::json& j, NgramSpec& s) {
    JsonReader r(j, "draft.ngram");
    NgramSpec n;
    r.get_enum("method", n.method,
               names_of({NgramMethod::simple, NgramMethod::map_k, NgramMethod::map_k4v, NgramMethod::mod,
                         NgramMethod::cache, NgramMethod::prompt_lookup, NgramMethod::suffix}));
    r.get("size_n", n.size_n);
    r.get("size_m", n.size_m);
    r.get("min_hits", n.min_hits);
    r.get("mod_n_match", n.mod_n_match);
    r.get("mod_n_min", n.mod_n_min);
    r.get("mod_n_max", n.mod_n_max);
    r.get("mod_pool_log2", n.mod_pool_log2);
    r.get("static_cache", n.static_cache);
    r.get("dynamic_cache", n.dynamic_cache);
    r.get("cache_update", n.cache_update);
    r.get("lookup_min", n.lookup_min);
    r.get("lookup_max", n.lookup_max);
    r.get("suffix_max_depth", n.suffix_max_depth);
    r.get("suffix_spec_factor", n.suffix_spec_factor);
    r.get("suffix_min_prob", n.suffix_min_prob);
    r.get("suffix_max_cached", n.suffix_max_cached);
    r.get("suffix_tree", n.suffix_tree);
    r.finish();
    s = std::move(n);
}

void from_json(const nlohmann::json& j, DraftSpec& s) {
    JsonReader r(j, "draft");
    DraftSpec d;
    std::vector<std::pair<std::string, DraftKind>> kinds;  // the draft kinds' table names them
    for (const DraftKindInfo& k : kDraftKinds) kinds.emplace_back(k.name, k.kind);
    r.get_enum("kind", d.kind, kinds);
    r.get("label", d.label);
    if (const nlohmann::json* prune = r.sub("prune")) {
        JsonReader p(*prune, r.at("prune"));
        p.get("ratio", d.prune.ratio);
        p.get_enum("method", d.prune.method, names_of({PruneMethod::magnitude, PruneMethod::wanda}));
        p.get("attention", d.prune.attention);
        p.get("ffn", d.prune.ffn);
        p.get("embeddings", d.prune.embeddings);
        p.get("output", d.prune.output);
        p.get("per_row", d.prune.per_row);
        p.get("calibration", d.prune.calibration);
        p.get("calibration_tokens", d.prune.calibration_tokens);
        p.finish();
    }
    r.get("weight_trunc_bits", d.weight_trunc_bits);
    r.get_enum("trunc_rounding", d.trunc_rounding,
               names_of({MantissaRounding::toward_zero, MantissaRounding::nearest_even}));
    r.get("kv_trunc_bits", d.kv_trunc_bits);
    r.get("kv_drop_ratio", d.kv_drop_ratio);
    r.get_enum("weight_format", d.weight_format,
               names_of({WeightFormat::same, WeightFormat::bf16, WeightFormat::q8_0, WeightFormat::mxfp4}));
    r.get("format_output", d.format_output);
    r.get("compact", d.compact);
    r.get("strict_subset", d.strict_subset);
    r.get("kv_from_target", d.kv_from_target);
    r.get("exit_layer", d.exit_layer);
    r.get("skip_attn", d.skip_attn);
    r.get("skip_ffn", d.skip_ffn);
    r.get("experts_used", d.experts_used);
    r.get("model_path", d.model_path);
    if (const nlohmann::json* m = r.sub("maxgram")) {
        try {  // MaxGramParams' own reader (maxgram.cpp), its paths under "draft."
            d.maxgram = m->get<MaxGramParams>();
        } catch (const std::invalid_argument& e) {
            throw std::invalid_argument(std::string("draft.") + e.what());
        }
    }
    r.get("bigram_corpus", d.bigram_corpus);
    if (const nlohmann::json* n = r.sub("ngram")) from_json(*n, d.ngram);
    r.get("mtp_layer", d.mtp_layer);
    r.get("head_vocab", d.head_vocab), r.get("head_vocab_corpus", d.head_vocab_corpus);
    r.finish();
    s = std::move(d);
}

}  // namespace speculum::drafts
