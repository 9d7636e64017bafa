// AppConfig checks, tree construction from a branching vector, and short labels.
#include "ui/model/app_config.h"

#include "ui/model/spec_mapping.h"

#include <charconv>
#include <cstdio>
#include <sstream>

namespace speculum::ui {

namespace {
std::string fmt(const char* f, double v) {
    char buf[160];
    std::snprintf(buf, sizeof buf, f, v);
    return buf;
}
}  // namespace

drafts::DraftSpec default_draft() {
    drafts::DraftSpec d;
    d.kind = drafts::DraftKind::model;  // model_path "" = the bundled draft model
    return d;
}

std::vector<std::string> AppConfig::problems() const {
    std::vector<std::string> out;
    if (gamma < 1 || gamma > 32) out.push_back(fmt("gamma must be in [1, 32], got %g", gamma));
    if (!(p_min >= 0 && p_min <= 1)) out.push_back(fmt("p_min must be in [0, 1], got %g", p_min));
    if (!(temperature >= 0 && temperature <= 5))
        out.push_back(fmt("temperature must be in [0, 5], got %g", temperature));
    if (!(alpha > 0 && alpha < 1)) out.push_back(fmt("alpha must be in (0, 1), got %g", alpha));
    if (!(cost_ratio >= 0 && cost_ratio <= 10)) out.push_back(fmt("cost_ratio must be in [0, 10], got %g", cost_ratio));
    if (!(draft.prune.ratio >= 0 && draft.prune.ratio < 1))
        out.push_back(fmt("draft.prune.ratio must be in [0, 1), got %g", draft.prune.ratio));
    if (draft.weight_trunc_bits < 0 || draft.weight_trunc_bits > 7)
        out.push_back(fmt("draft.weight_trunc_bits must be in [0, 7], got %g", draft.weight_trunc_bits));
    if (draft.kv_trunc_bits < 0 || draft.kv_trunc_bits > 7)
        out.push_back(fmt("draft.kv_trunc_bits must be in [0, 7], got %g", draft.kv_trunc_bits));
    if (!(draft.kv_drop_ratio >= 0 && draft.kv_drop_ratio < 1))
        out.push_back(fmt("draft.kv_drop_ratio must be in [0, 1), got %g", draft.kv_drop_ratio));
    if (tree.budget < 1 || tree.budget > 256)
        out.push_back(fmt("tree.budget must be in [1, 256], got %g", tree.budget));
    if (tree.max_depth < 1 || tree.max_depth > 32)
        out.push_back(fmt("tree.max_depth must be in [1, 32], got %g", tree.max_depth));
    if (tree.branching.empty() && tree.mode == TreeMode::branching) out.push_back("tree.branching must not be empty");
    for (size_t d = 0; d < tree.branching.size(); ++d)
        if (tree.branching[d] < 1 || tree.branching[d] > 16)
            out.push_back("tree.branching[" + std::to_string(d) + "] must be in [1, 16], got " +
                          std::to_string(tree.branching[d]));
    double sum = 0;
    for (double p : tree.rank_acceptance) {
        if (!(p >= 0 && p <= 1)) out.push_back(fmt("tree.rank_acceptance entries must be in [0, 1], got %g", p));
        sum += p;
    }
    if (sum > 1 + 1e-9) out.push_back(fmt("tree.rank_acceptance must sum to at most 1, sums to %g", sum));
    for (size_t i = 0; i < cascade.size(); ++i) {
        const auto& l   = cascade[i];
        std::string key = "cascade[" + std::to_string(i) + "]";
        if (!(l.alpha > 0 && l.alpha < 1)) out.push_back(key + fmt(".alpha must be in (0, 1), got %g", l.alpha));
        if (!(l.c >= 0 && l.c <= 10)) out.push_back(key + fmt(".c must be in [0, 10], got %g", l.c));
        if (l.steps < 1 || l.steps > 32) out.push_back(key + fmt(".steps must be in [1, 32], got %g", l.steps));
    }
    for (size_t i = 0; i < horizontal.size(); ++i) {
        const auto& s   = horizontal[i];
        std::string key = "horizontal[" + std::to_string(i) + "]";
        if (!(s.alpha > 0 && s.alpha < 1)) out.push_back(key + fmt(".alpha must be in (0, 1), got %g", s.alpha));
        if (!(s.c >= 0 && s.c <= 10)) out.push_back(key + fmt(".c must be in [0, 10], got %g", s.c));
        if (s.count < 1 || s.count > 32) out.push_back(key + fmt(".count must be in [1, 32], got %g", s.count));
    }
    if (context < 1 || context > (1 << 20)) out.push_back(fmt("context must be in [1, 1048576], got %g", context));
    if (measure_tokens < 1 || measure_tokens > 1024)
        out.push_back(fmt("measure_tokens must be in [1, 1024], got %g", measure_tokens));
    if (measure_prompts < 1 || measure_prompts > 64)
        out.push_back(fmt("measure_prompts must be in [1, 64], got %g", measure_prompts));
    return out;
}

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
    double d = 0;
    int i    = 0;
    auto bad = [&](const char* expected) { return key + ": expected " + expected + ", got '" + value + "'"; };
    if (key == "profile")
        cfg.hardware_profile = value;
    else if (key == "draft_model")
        cfg.draft.model_path = value;
    else if (key == "drafter") {
        if (value == "self")
            cfg.draft.kind = drafts::DraftKind::self;
        else if (value == "model")
            cfg.draft.kind = drafts::DraftKind::model;
        else if (value == "maxgram")
            cfg.draft.kind = drafts::DraftKind::maxgram;
        else
            return bad("self, model or maxgram");
    } else if (key == "tree") {
        if (value == "chain")
            cfg.tree.mode = TreeMode::chain;
        else if (value == "branching")
            cfg.tree.mode = TreeMode::branching;
        else if (value == "budget")
            cfg.tree.mode = TreeMode::budget;
        else if (value == "optimal")
            cfg.tree.mode = TreeMode::optimal_measured;
        else
            return bad("chain, branching, budget or optimal");
    } else if (key == "prune_method") {
        if (value == "magnitude")
            cfg.draft.prune.method = drafts::PruneMethod::magnitude;
        else if (value == "wanda")
            cfg.draft.prune.method = drafts::PruneMethod::wanda;
        else
            return bad("magnitude or wanda");
    } else if (key == "branching") {
        std::vector<int> widths;
        std::stringstream ss(value);
        for (std::string part; std::getline(ss, part, 'x');) {
            if (!parse_int(part, i)) return bad("widths like 3x2x1");
            widths.push_back(i);
        }
        if (widths.empty()) return bad("widths like 3x2x1");
        cfg.tree.branching = widths;
    } else if (key == "gamma" || key == "context" || key == "trunc_bits" || key == "kv_trunc_bits" ||
               key == "exit_layer" || key == "budget" || key == "cascade" || key == "horizontal" ||
               key == "measure_tokens" || key == "measure_prompts") {
        if (!parse_int(value, i)) return bad("an integer");
        if (key == "gamma")
            cfg.gamma = i;
        else if (key == "context")
            cfg.context = i;
        else if (key == "trunc_bits")
            cfg.draft.weight_trunc_bits = i;
        else if (key == "kv_trunc_bits")
            cfg.draft.kv_trunc_bits = i;
        else if (key == "exit_layer")
            cfg.draft.exit_layer = i;
        else if (key == "budget")
            cfg.tree.budget = i;
        else if (key == "measure_tokens")
            cfg.measure_tokens = i;
        else if (key == "measure_prompts")
            cfg.measure_prompts = i;
        else if (key == "cascade" || key == "horizontal") {
            if (i < 0 || i > 4) return bad("0..4");
            if (key == "cascade")
                cfg.cascade.assign(size_t(i), CascadeLevelConfig{drafts::DraftKind::maxgram, 0.5, 0.0, 10});
            else {
                cfg.horizontal.clear();
                for (int s = 0; s < i; ++s)
                    cfg.horizontal.push_back({cfg.alpha - 0.1 * s, cfg.cost_ratio / (1 + 4 * s), 2});
            }
        }
    } else if (key == "mxfp4") {
        if (value != "0" && value != "1") return bad("0 or 1");
        cfg.draft.weight_format = value == "1" ? drafts::WeightFormat::mxfp4 : drafts::WeightFormat::same;
    } else if (key == "p_min" || key == "temperature" || key == "alpha" || key == "c" || key == "prune" ||
               key == "kv_drop") {
        if (!parse_double(value, d)) return bad("a number");
        if (key == "p_min")
            cfg.p_min = float(d);
        else if (key == "temperature")
            cfg.temperature = float(d);
        else if (key == "alpha")
            cfg.alpha = d;
        else if (key == "c")
            cfg.cost_ratio = d;
        else if (key == "prune")
            cfg.draft.prune.ratio = float(d);
        else
            cfg.draft.kv_drop_ratio = float(d);
    } else {
        return "unknown setting '" + key + "'";
    }
    return "";
}

const char* tree_mode_name(TreeMode m) {
    switch (m) {
        case TreeMode::chain:
            return "chain";
        case TreeMode::branching:
            return "branching per depth";
        case TreeMode::budget:
            return "best tree for a node budget";
        case TreeMode::optimal_measured:
            return "optimal for the measured acceptance";
    }
    return "?";
}

const char* draft_kind_name(drafts::DraftKind k) {
    switch (k) {
        case drafts::DraftKind::self:
            return "self-draft";
        case drafts::DraftKind::model:
            return "separate model";
        case drafts::DraftKind::maxgram:
            return "Max-Gram";
    }
    return "?";
}

analytic::TokenTree tree_from_branching(const std::vector<int>& branching, int max_nodes) {
    analytic::TokenTree t;  // root only
    std::vector<int> level{0};
    for (int width : branching) {
        std::vector<int> next;
        for (int parent : level) {
            for (int c = 0; c < width; ++c) {
                if (int(t.parent.size()) >= max_nodes) return t;
                t.parent.push_back(parent);
                next.push_back(int(t.parent.size()) - 1);
            }
        }
        level = std::move(next);
    }
    return t;
}

std::string describe_draft(const drafts::DraftSpec& d) {
    if (!d.label.empty()) return d.label;
    if (d.kind == drafts::DraftKind::maxgram) return "Max-Gram";
    if (d.kind == drafts::DraftKind::model)
        return "model " + (d.model_path.empty() ? std::string("(bundled draft)") : d.model_path);
    std::string s;
    auto add = [&](const std::string& part) { s += (s.empty() ? "" : " + ") + part; };
    if (d.prune.ratio > 0)
        add(fmt("prune %.0f%%", d.prune.ratio * 100) +
            (d.prune.method == drafts::PruneMethod::wanda ? " wanda" : " magnitude"));
    if (d.weight_format == drafts::WeightFormat::mxfp4) add("mxfp4");
    if (d.weight_trunc_bits > 0) add(fmt("bf16 t=%g", d.weight_trunc_bits));
    if (d.kv_trunc_bits > 0) add(fmt("kv t=%g", d.kv_trunc_bits));
    if (d.kv_drop_ratio > 0) add(fmt("kv drop %.0f%%", d.kv_drop_ratio * 100));
    if (d.exit_layer >= 0) add(fmt("exit@%g", d.exit_layer));
    if (!d.skip_attn.empty() || !d.skip_ffn.empty())
        add("skip " + std::to_string(d.skip_attn.size()) + " attn / " + std::to_string(d.skip_ffn.size()) + " ffn");
    return s.empty() ? "self (target itself)" : "self: " + s;
}

}  // namespace speculum::ui
