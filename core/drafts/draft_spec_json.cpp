// DraftSpec and NgramSpec JSON: writing and strict reading (enums as lower-case names; unknown keys and wrong types
// name the key, "draft.prune.ratio: ...").
#include "core/drafts/draft_spec.h"
#include "core/json_reader.h"

#include <stdexcept>

namespace speculum::drafts {

namespace {

[[noreturn]] void bad(const std::string& field, const std::string& why) {
    throw std::invalid_argument("draft." + field + " " + why);
}

template <class E>
E parse_enum(const nlohmann::json& v, const std::string& key, std::initializer_list<E> values) {
    if (!v.is_string()) bad(key, "must be a string");
    const std::string s = v.get<std::string>();
    std::string allowed;
    for (E e : values) {
        if (s == to_string(e)) return e;
        allowed += std::string(allowed.empty() ? "" : ", ") + "\"" + to_string(e) + "\"";
    }
    bad(key, "must be one of " + allowed + ", got \"" + s + "\"");
}

// Strict readers: the key's value must have the expected JSON type.
void read(const nlohmann::json& v, const std::string& key, bool& out) {
    if (!v.is_boolean()) bad(key, "must be true or false");
    out = v.get<bool>();
}
void read(const nlohmann::json& v, const std::string& key, int32_t& out) {
    if (!v.is_number_integer()) bad(key, "must be an integer");
    const int64_t x = v.get<int64_t>();
    if (x < INT32_MIN || x > INT32_MAX) bad(key, "is out of range");
    out = static_cast<int32_t>(x);
}
void read(const nlohmann::json& v, const std::string& key, float& out) {
    if (!v.is_number()) bad(key, "must be a number");
    out = v.get<float>();
}
void read(const nlohmann::json& v, const std::string& key, std::string& out) {
    if (!v.is_string()) bad(key, "must be a string");
    out = v.get<std::string>();
}
void read(const nlohmann::json& v, const std::string& key, std::vector<int32_t>& out) {
    if (!v.is_array()) bad(key, "must be an array of layer indices");
    out.clear();
    for (size_t i = 0; i < v.size(); ++i) {
        int32_t x = 0;
        read(v[i], key + "[" + std::to_string(i) + "]", x);
        out.push_back(x);
    }
}

void require_object(const nlohmann::json& j, const std::string& what) {
    if (!j.is_object()) throw std::invalid_argument(what + " must be a JSON object");
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
    require_object(j, "draft.ngram");
    NgramSpec r;
    for (const auto& [k, v] : j.items()) {
        const std::string f = "ngram." + k;
        if (k == "method") {
            r.method = parse_enum(v, f,
                                  {NgramMethod::simple, NgramMethod::map_k, NgramMethod::map_k4v, NgramMethod::mod,
                                   NgramMethod::cache, NgramMethod::prompt_lookup, NgramMethod::suffix});
        } else if (k == "size_n")
            read(v, f, r.size_n);
        else if (k == "size_m")
            read(v, f, r.size_m);
        else if (k == "min_hits")
            read(v, f, r.min_hits);
        else if (k == "mod_n_match")
            read(v, f, r.mod_n_match);
        else if (k == "mod_n_min")
            read(v, f, r.mod_n_min);
        else if (k == "mod_n_max")
            read(v, f, r.mod_n_max);
        else if (k == "mod_pool_log2")
            read(v, f, r.mod_pool_log2);
        else if (k == "static_cache")
            read(v, f, r.static_cache);
        else if (k == "dynamic_cache")
            read(v, f, r.dynamic_cache);
        else if (k == "cache_update")
            read(v, f, r.cache_update);
        else if (k == "lookup_min")
            read(v, f, r.lookup_min);
        else if (k == "lookup_max")
            read(v, f, r.lookup_max);
        else if (k == "suffix_max_depth")
            read(v, f, r.suffix_max_depth);
        else if (k == "suffix_spec_factor")
            read(v, f, r.suffix_spec_factor);
        else if (k == "suffix_min_prob")
            read(v, f, r.suffix_min_prob);
        else if (k == "suffix_max_cached")
            read(v, f, r.suffix_max_cached);
        else if (k == "suffix_tree")
            read(v, f, r.suffix_tree);
        else
            throw_unknown_key("draft." + f);
    }
    s = std::move(r);
}

void from_json(const nlohmann::json& j, DraftSpec& s) {
    require_object(j, "draft spec");
    DraftSpec r;
    for (const auto& [key, v] : j.items()) {
        if (key == "kind")
            r.kind = parse_enum(v, key,
                                {DraftKind::self, DraftKind::model, DraftKind::maxgram, DraftKind::ngram,
                                 DraftKind::mtp, DraftKind::eagle3});
        else if (key == "label")
            read(v, key, r.label);
        else if (key == "prune") {
            require_object(v, "draft.prune");
            for (const auto& [k, pv] : v.items()) {
                const std::string f = "prune." + k;
                if (k == "ratio")
                    read(pv, f, r.prune.ratio);
                else if (k == "method")
                    r.prune.method = parse_enum(pv, f, {PruneMethod::magnitude, PruneMethod::wanda});
                else if (k == "attention")
                    read(pv, f, r.prune.attention);
                else if (k == "ffn")
                    read(pv, f, r.prune.ffn);
                else if (k == "embeddings")
                    read(pv, f, r.prune.embeddings);
                else if (k == "output")
                    read(pv, f, r.prune.output);
                else if (k == "per_row")
                    read(pv, f, r.prune.per_row);
                else if (k == "calibration")
                    read(pv, f, r.prune.calibration);
                else if (k == "calibration_tokens")
                    read(pv, f, r.prune.calibration_tokens);
                else
                    throw_unknown_key("draft." + f);
            }
        } else if (key == "weight_trunc_bits")
            read(v, key, r.weight_trunc_bits);
        else if (key == "trunc_rounding")
            r.trunc_rounding = parse_enum(v, key, {MantissaRounding::toward_zero, MantissaRounding::nearest_even});
        else if (key == "kv_trunc_bits")
            read(v, key, r.kv_trunc_bits);
        else if (key == "kv_drop_ratio")
            read(v, key, r.kv_drop_ratio);
        else if (key == "weight_format")
            r.weight_format =
                parse_enum(v, key, {WeightFormat::same, WeightFormat::bf16, WeightFormat::q8_0, WeightFormat::mxfp4});
        else if (key == "format_output")
            read(v, key, r.format_output);
        else if (key == "compact")
            read(v, key, r.compact);
        else if (key == "strict_subset")
            read(v, key, r.strict_subset);
        else if (key == "kv_from_target")
            read(v, key, r.kv_from_target);
        else if (key == "exit_layer")
            read(v, key, r.exit_layer);
        else if (key == "skip_attn")
            read(v, key, r.skip_attn);
        else if (key == "skip_ffn")
            read(v, key, r.skip_ffn);
        else if (key == "experts_used")
            read(v, key, r.experts_used);
        else if (key == "model_path")
            read(v, key, r.model_path);
        else if (key == "maxgram") {
            try {  // MaxGramParams' own reader (maxgram.cpp), its paths under "draft."
                r.maxgram = v.get<MaxGramParams>();
            } catch (const std::invalid_argument& e) {
                throw std::invalid_argument(std::string("draft.") + e.what());
            }
        } else if (key == "bigram_corpus")
            read(v, key, r.bigram_corpus);
        else if (key == "ngram")
            from_json(v, r.ngram);
        else if (key == "mtp_layer")
            read(v, key, r.mtp_layer);
        else
            throw_unknown_key("draft." + key);
    }
    s = std::move(r);
}

}  // namespace speculum::drafts
