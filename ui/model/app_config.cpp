// AppConfig: defaults, checks, level bookkeeping, the editor's tree modes, `--set` keys and short labels.
#include "ui/model/app_config.h"
#include "core/format.h"

#include "ui/model/spec_mapping.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <stdexcept>

namespace speculum::ui {

namespace {}  // namespace

LevelAssumption default_assumption(drafts::DraftKind k) {
    const drafts::DraftKindInfo& info = drafts::draft_kind_info(k);
    return {info.assumed_alpha, info.assumed_c};
}

drafts::DraftSpec default_draft() {
    drafts::DraftSpec d;
    d.kind = drafts::DraftKind::model;  // model_path "" = the bundled draft model
    return d;
}

engine::SpecConfig default_spec() {
    engine::SpecConfig s;
    s.levels           = {default_draft()};
    s.gamma            = {5};
    s.tree.node_budget = 15;  // 16 nodes with the root
    s.tree.max_depth   = 6;
    s.tree.prior       = {0.6, 0.2, 0.1};
    s.max_new_tokens   = 48;
    s.max_prompts      = 2;
    // A/B passes until the speedup's 95 % interval is 10 % wide, at most 10 passes or 6 s: the first pass shows
    // within seconds, and the interval narrows while the later ones run.
    s.repeats = {.min = 1, .max = 10, .min_time_s = 0, .max_time_s = 6, .rel_width = 0.10};
    return s;
}

void normalize(AppConfig& cfg) {
    if (cfg.spec.levels.empty()) cfg.spec.levels = {default_draft()};
    if (cfg.spec.k_matrix.empty()) cfg.spec.gamma.resize(cfg.spec.levels.size(), 4);
    std::vector<LevelAssumption>& a = cfg.modeled.levels;
    for (size_t i = a.size(); i < cfg.spec.levels.size(); ++i) a.push_back(default_assumption(cfg.spec.levels[i].kind));
    a.resize(cfg.spec.levels.size());
}

std::string fixing_control(const std::string& problem) {
    // The first field name the message mentions decides (messages start with their field: "draft.prune.ratio must
    // ...", "/gamma/0: ...", "modeled/levels/0/alpha ..."); more specific names first.
    static const std::pair<const char*, const char*> kControls[] = {
        {"modeled/acceptance_profile", "Configuration > Assumptions > Use the assumed alpha"},
        {"modeled/levels/0/alpha", "Configuration > Assumptions > alpha"},
        {"modeled/levels/0/c", "Configuration > Assumptions > cost ratio c"},
        {"modeled/levels/", "Configuration > Cascade (each level's alpha and c)"},
        {"modeled/horizontal", "Configuration > Cascade > horizontal split"},
        {"modeled/context", "Configuration > Assumptions > context"},
        {"strict_subset", "Configuration > Draft > strict subset of the target"},
        {"weight_trunc_bits", "Configuration > Draft > weight trunc bits"},
        {"kv_trunc_bits", "Configuration > Draft > KV trunc bits"},
        {"kv_drop_ratio", "Configuration > Draft > KV drop ratio"},
        {"weight_format", "Configuration > Draft > MXFP4 weights"},
        {"prune", "Configuration > Draft > prune ratio and method"},
        {"exit_layer", "Configuration > Draft > exit layer"},
        {"skip_", "Configuration > Draft > skip set"},
        {"model_path", "Configuration > Draft > the file field and its Browse... button"},
        {"mtp_layer", "Configuration > Draft > MTP layer"},
        {"ngram", "Configuration > Draft > the n-gram method and its sizes"},
        {"kind", "Configuration > Draft > drafter"},
        {"max_new_tokens", "Configuration > Measured run > new tokens"},
        {"max_prompts", "Configuration > Measured run > prompts"},
        {"repeats", "Configuration > Measured run > passes and interval"},
        {"p_min", "Configuration > Decoding > p_min"},
        {"temperature", "Configuration > Decoding > temperature"},
        {"k_matrix", "Configuration > Decoding > Use gamma instead"},
        {"gamma", "Configuration > Decoding > gamma (a cascade level's: Configuration > Cascade)"},
        {"tree", "Configuration > Verification tree"},
        {"verification", "Configuration > Verification tree"},
    };
    size_t best         = std::string::npos;
    const char* control = "";
    for (const auto& [field, where] : kControls) {
        const size_t at = problem.find(field);
        if (at < best) best = at, control = where;
    }
    // A level's own field ("/levels/0/prune/ratio") is level 1's control; only a message about the levels themselves
    // is the cascade editor's.
    if (best == std::string::npos && problem.find("levels") != std::string::npos) return "Configuration > Cascade";
    return control;
}

std::string with_fix(const std::string& problem) {
    const std::string control = fixing_control(problem);
    return control.empty() ? problem : problem + " (fix: " + control + ")";
}

std::optional<RunEstimate> estimate_run(const engine::SpecConfig& spec, double spec_tokens_per_s,
                                        double plain_tokens_per_s) {
    if (!(plain_tokens_per_s > 0)) return std::nullopt;
    if (!(spec_tokens_per_s > 0)) spec_tokens_per_s = plain_tokens_per_s;  // no speculative speed yet: as plain
    RunEstimate e;
    e.tokens_per_s   = plain_tokens_per_s;
    const double tok = double(spec.max_prompts) * double(spec.max_new_tokens);
    // One pass: the speculative decode, and the plain one when the run has a baseline (the A/B pair).
    const double pass = tok / spec_tokens_per_s + (spec.baseline ? tok / plain_tokens_per_s : 0.0);
    e.passes_min      = std::max(1, spec.repeats.min);
    e.passes_max      = std::max(e.passes_min, spec.repeats.max);
    if (spec.repeats.max_time_s > 0)  // no pass starts after the budget, once the fewest ran
        e.passes_max = std::clamp(int(std::ceil(spec.repeats.max_time_s / pass)), e.passes_min, e.passes_max);
    e.seconds_min = pass * e.passes_min, e.seconds_max = pass * e.passes_max;
    return e;
}

std::string duration_text(double s) {
    if (s < 90) return fmt("%.0f s", std::max(1.0, s));
    if (s < 5400) return fmt("%.0f min", s / 60);
    return fmt("%.1f h", s / 3600);
}

std::string time_left_text(double fraction, double elapsed_s) {
    if (!(fraction >= 0.02) || !(elapsed_s >= 2.0) || fraction >= 1.0) return "";
    return "about " + duration_text(elapsed_s / fraction * (1.0 - fraction)) + " left";
}

std::string describe_estimate(const RunEstimate& e, const engine::SpecConfig& spec) {
    const std::string time   = duration_text(e.seconds_min) == duration_text(e.seconds_max)
                                   ? duration_text(e.seconds_max)
                                   : duration_text(e.seconds_min) + " to " + duration_text(e.seconds_max);
    const std::string passes = e.passes_min == e.passes_max
                                   ? std::to_string(e.passes_max) + (e.passes_max == 1 ? " pass" : " passes")
                                   : std::to_string(e.passes_min) + " to " + std::to_string(e.passes_max) + " passes";
    return "a run of these settings: about " + time + " (" + passes + " of " + std::to_string(spec.max_prompts) +
           (spec.max_prompts == 1 ? " prompt x " : " prompts x ") + std::to_string(spec.max_new_tokens) +
           " tokens, at the last run's " + fmt("%.1f", e.tokens_per_s) + " tokens/s plain; prefill not counted)";
}

void validate_app_spec(const engine::SpecConfig& spec) {
    engine::SpecConfig s = spec;
    for (drafts::DraftSpec& d : s.levels)
        if (d.kind == drafts::DraftKind::model && d.model_path.empty()) d.model_path = "(bundled draft model)";
    s.validate();
}

std::vector<std::string> AppConfig::problems() const {
    std::vector<std::string> out;
    try {
        validate_app_spec(spec);
    } catch (const std::exception& e) {
        out.push_back(e.what());
    }
    if (modeled.levels.size() != spec.levels.size())
        out.push_back("modeled/levels: one assumption per draft level is needed (" +
                      std::to_string(spec.levels.size()) + "), got " + std::to_string(modeled.levels.size()));
    for (size_t i = 0; i < modeled.levels.size(); ++i) {
        const LevelAssumption& l = modeled.levels[i];
        const std::string key    = "modeled/levels/" + std::to_string(i);
        if (!(l.alpha > 0 && l.alpha < 1)) out.push_back(key + fmt("/alpha must be in (0, 1), got %g", l.alpha));
        if (!(l.c >= 0 && l.c <= 10)) out.push_back(key + fmt("/c must be in [0, 10], got %g", l.c));
    }
    for (size_t i = 0; i < modeled.horizontal.size(); ++i) {
        const auto& s   = modeled.horizontal[i];
        std::string key = "modeled/horizontal/" + std::to_string(i);
        if (!(s.alpha > 0 && s.alpha < 1)) out.push_back(key + fmt("/alpha must be in (0, 1), got %g", s.alpha));
        if (!(s.c >= 0 && s.c <= 10)) out.push_back(key + fmt("/c must be in [0, 10], got %g", s.c));
        if (s.count < 1 || s.count > 32) out.push_back(key + fmt("/count must be in [1, 32], got %g", s.count));
    }
    if (modeled.acceptance_profile) {
        try {
            modeled.acceptance_profile->profile.validate();
            if (modeled.acceptance_profile->profile.conditional.empty())
                out.push_back("modeled/acceptance_profile: has no acceptance per position");
        } catch (const std::exception& e) {
            out.push_back(std::string("modeled/acceptance_profile: ") + e.what());
        }
    }
    if (modeled.context < 1 || modeled.context > (1 << 20))
        out.push_back(fmt("modeled/context must be in [1, 1048576], got %g", modeled.context));
    if (spec.max_new_tokens < 1 || spec.max_new_tokens > 1024)
        out.push_back(fmt("/max_new_tokens must be in [1, 1024] in the app, got %g", spec.max_new_tokens));
    if (spec.max_prompts < 1 || spec.max_prompts > 64)
        out.push_back(fmt("/max_prompts must be in [1, 64] in the app, got %g", spec.max_prompts));
    return out;
}

void AppConfig::validate() const {
    const std::vector<std::string> p = problems();
    if (p.empty()) return;
    std::string all = "ui config: " + p.front();
    for (size_t i = 1; i < p.size(); ++i) all += "; " + p[i];
    throw std::invalid_argument(all);
}

// --- the editor's tree modes ---------------------------------------------------------------------------------

TreeMode tree_mode(const AppConfig& cfg) {
    const engine::SpecConfig& s = cfg.spec;
    if (s.verification == engine::Verification::cats) return TreeMode::cats;
    if (s.verification == engine::Verification::chain) return TreeMode::chain;
    switch (s.tree.kind) {
        case engine::TreeKind::static_shape:
            return TreeMode::branching;
        case engine::TreeKind::top_k:
            return TreeMode::top_k;
        case engine::TreeKind::sequoia:
            return cfg.prefs.tree_prior_measured ? TreeMode::optimal_measured : TreeMode::budget;
        case engine::TreeKind::chain_second:
            return TreeMode::chain_second;
        case engine::TreeKind::dynamic:
            return TreeMode::dynamic;
    }
    return TreeMode::chain;
}

void set_tree_mode(AppConfig& cfg, TreeMode m) {
    engine::SpecConfig& s = cfg.spec;
    if (m == TreeMode::cats) return;
    s.verification = m == TreeMode::chain ? engine::Verification::chain : engine::Verification::tree;
    switch (m) {
        case TreeMode::branching:
            s.tree.kind = engine::TreeKind::static_shape;
            break;
        case TreeMode::top_k:
            s.tree.kind = engine::TreeKind::top_k;
            break;
        case TreeMode::budget:
        case TreeMode::optimal_measured:
            s.tree.kind = engine::TreeKind::sequoia;
            break;
        case TreeMode::chain_second:
            s.tree.kind = engine::TreeKind::chain_second;
            break;
        case TreeMode::dynamic:
            s.tree.kind = engine::TreeKind::dynamic;
            break;
        case TreeMode::chain:
        case TreeMode::cats:
            break;
    }
    cfg.prefs.tree_prior_measured = m == TreeMode::optimal_measured;
}

// --- `--set` ----------------------------------------------------------------------------------------------------

namespace {
bool parse_double(const std::string& s, double& out) {
    try {
        size_t used = 0;
        out         = std::stod(s, &used);
        return used == s.size();
    } catch (const std::exception&) {
        return false;
    }
}
bool parse_int(const std::string& s, int& out) {
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && end == s.data() + s.size();
}
}  // namespace

std::string set_config_value(AppConfig& cfg, const std::string& key, const std::string& value) {
    if (!key.empty() && key[0] == '/') return set_config_pointer(cfg, key, value);  // the SpecConfig field's own name
    if (const char* pointer = config_key_pointer(key)) {
        std::string v = value;
        if (key == "drafter" || key == "prune_method" || key == "draft_model") v = nlohmann::json(value).dump();
        const std::string err = set_config_pointer(cfg, pointer, v);
        return err.empty() ? "" : key + ": " + err;
    }
    double d = 0;
    int i    = 0;
    auto bad = [&](const char* expected) { return key + ": expected " + expected + ", got '" + value + "'"; };
    if (key == "profile") {
        cfg.modeled.hardware_profile = value;
    } else if (key == "tree") {
        static const std::pair<const char*, TreeMode> modes[] = {{"chain", TreeMode::chain},
                                                                 {"branching", TreeMode::branching},
                                                                 {"top_k", TreeMode::top_k},
                                                                 {"budget", TreeMode::budget},
                                                                 {"optimal", TreeMode::optimal_measured},
                                                                 {"chain_second", TreeMode::chain_second}};
        bool found                                            = false;
        for (const auto& [name, m] : modes)
            if (value == name) set_tree_mode(cfg, m), found = true;
        if (!found) return bad("chain, branching, top_k, budget, optimal or chain_second");
    } else if (key == "branching") {
        std::vector<int32_t> widths;
        std::stringstream ss(value);
        for (std::string part; std::getline(ss, part, 'x');) {
            if (!parse_int(part, i)) return bad("widths like 3x2x1");
            widths.push_back(i);
        }
        if (widths.empty()) return bad("widths like 3x2x1");
        cfg.spec.tree.branching = widths;
    } else if (key == "mxfp4") {
        if (value != "0" && value != "1") return bad("0 or 1");
        cfg.draft().weight_format = value == "1" ? drafts::WeightFormat::mxfp4 : drafts::WeightFormat::same;
    } else if (key == "context" || key == "budget" || key == "cascade" || key == "horizontal") {
        if (!parse_int(value, i)) return bad("an integer");
        if (key == "context") {
            cfg.modeled.context = i;
        } else if (key == "budget") {
            if (i < 2) return bad("at least 2 (the root and one draft node)");
            cfg.spec.tree.node_budget = i - 1;  // the key counts the root, the engine does not
        } else if (i < 0 || i > 4) {
            return bad("0..4");
        } else if (key == "cascade") {
            // Max-Gram reviews nothing, so it is the bottom level; any between are the target's first layer.
            drafts::DraftSpec self, maxgram;
            self.exit_layer = 0, self.label = "self: exit@0";
            maxgram.kind = drafts::DraftKind::maxgram;
            cfg.spec.levels.resize(1), cfg.spec.gamma.resize(1), cfg.modeled.levels.resize(1);
            cfg.spec.k_matrix.clear();
            for (int l = 1; l <= i; ++l) {
                cfg.spec.levels.push_back(l == i ? maxgram : self);
                cfg.spec.gamma.push_back(l == i ? 10 : 4);
            }
            normalize(cfg);
        } else {
            cfg.modeled.horizontal.clear();
            const LevelAssumption l1 = cfg.level1();
            for (int s = 0; s < i; ++s) cfg.modeled.horizontal.push_back({l1.alpha - 0.1 * s, l1.c / (1 + 4 * s), 2});
        }
    } else if (key == "alpha" || key == "c") {
        if (!parse_double(value, d)) return bad("a number");
        (key == "alpha" ? cfg.level1().alpha : cfg.level1().c) = d;
    } else {
        return "unknown setting '" + key + "'";
    }
    return "";
}

// --- labels -----------------------------------------------------------------------------------------------------

const char* tree_mode_name(TreeMode m) {
    switch (m) {
        case TreeMode::chain:
            return "chain";
        case TreeMode::branching:
            return "branching per depth";
        case TreeMode::top_k:
            return "top-k at every depth";
        case TreeMode::budget:
            return "best tree for a node budget";
        case TreeMode::optimal_measured:
            return "optimal for the measured acceptance";
        case TreeMode::chain_second:
            return "chain + second choices";
        case TreeMode::dynamic:
            return "dynamic (EAGLE-2)";
        case TreeMode::cats:
            return "CATS (three stages)";
    }
    return "?";
}

const char* draft_kind_name(drafts::DraftKind k) {
    return drafts::draft_kind_info(k).display;
}

std::string describe_draft(const drafts::DraftSpec& d) {
    if (!d.label.empty()) return d.label;
    if (d.kind == drafts::DraftKind::maxgram) return "Max-Gram";
    if (d.kind == drafts::DraftKind::ngram) return d.ngram.describe();
    if (d.kind == drafts::DraftKind::mtp)
        return "MTP layer " + std::to_string(d.mtp_layer) +
               (d.model_path.empty() ? std::string()
                                     : " of " + std::filesystem::path(d.model_path).filename().string());
    if (d.kind == drafts::DraftKind::eagle3)
        return "EAGLE-3 " + (d.model_path.empty() ? std::string("(bundled head)")
                                                  : std::filesystem::path(d.model_path).filename().string());
    if (d.kind == drafts::DraftKind::dflash || d.kind == drafts::DraftKind::dspark)
        return std::string(d.kind == drafts::DraftKind::dflash ? "DFlash " : "DSpark ") +
               (d.model_path.empty() ? std::string("(bundled block draft)")
                                     : std::filesystem::path(d.model_path).filename().string());
    const std::string head = d.head_vocab > 0 ? " + head " + std::to_string(d.head_vocab) : "";  // FR-Spec
    if (d.kind == drafts::DraftKind::model)
        return "model " + (d.model_path.empty() ? std::string("(bundled draft)") : d.model_path) + head;
    std::string s;
    auto add = [&](const std::string& part) { s += (s.empty() ? "" : " + ") + part; };
    if (d.prune.ratio > 0)
        add(fmt("prune %.0f%%", d.prune.ratio * 100) +
            (d.prune.method == drafts::PruneMethod::wanda ? " wanda" : " magnitude"));
    if (d.weight_format == drafts::WeightFormat::mxfp4) add("mxfp4");
    if (d.weight_trunc_bits > 0) add(fmt("bf16 t=%g", d.weight_trunc_bits));
    if (d.strict_subset) add("strict subset");
    if (d.kv_trunc_bits > 0) add(fmt("kv t=%g", d.kv_trunc_bits));
    if (d.kv_drop_ratio > 0) add(fmt("kv drop %.0f%%", d.kv_drop_ratio * 100));
    if (d.exit_layer >= 0) add(fmt("exit@%g", d.exit_layer));
    if (!d.skip_attn.empty() || !d.skip_ffn.empty())
        add("skip " + std::to_string(d.skip_attn.size()) + " attn / " + std::to_string(d.skip_ffn.size()) + " ffn");
    return (s.empty() ? "self (target itself)" : "self: " + s) + head;
}

}  // namespace speculum::ui
