// SpecConfig: draft lengths and validation (its JSON is spec_config_json.cpp).
#include "core/engine/spec_config.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace speculum::engine {

namespace {

[[noreturn]] void fail(const std::string& field, const std::string& msg) {
    throw std::invalid_argument("spec." + field + ": " + msg);
}

std::string str(double v) {
    std::ostringstream s;
    s << v;
    return s.str();
}

}  // namespace

int32_t SpecConfig::draft_length(int32_t reviewer) const {
    if (!k_matrix.empty()) {
        int32_t s = 0;
        if (reviewer >= 0 && static_cast<size_t>(reviewer) < k_matrix.size())
            for (int32_t k : k_matrix[static_cast<size_t>(reviewer)]) s += k;
        return s;
    }
    return reviewer >= 0 && static_cast<size_t>(reviewer) < gamma.size() ? gamma[static_cast<size_t>(reviewer)] : 0;
}

const char* to_string(LengthMode m) {
    return m == LengthMode::threshold ? "threshold" : "truncate";
}

int32_t SpecConfig::max_draft_length(int32_t reviewer) const {
    if (length_mode == LengthMode::truncate) return draft_length(reviewer);
    const int32_t n = static_cast<int32_t>(levels.size());
    // Segment by segment: a segment's last call starts below its cumulative threshold and adds at most one unit.
    int32_t cum = 0, longest = 0;
    for (int32_t j = reviewer + 1; j <= n; ++j) {
        const int32_t count = !k_matrix.empty()   ? k_matrix[static_cast<size_t>(reviewer)][static_cast<size_t>(j)]
                              : j == reviewer + 1 ? draft_length(reviewer)
                                                  : 0;
        if (count <= 0) continue;
        cum += count;
        const bool reviews =
            j < n && draft_length(j) > 0 && !drafts::is_statistical(levels[static_cast<size_t>(j) - 1].kind);
        const int32_t unit = reviews                                                           ? max_draft_length(j) + 1
                             : drafts::is_statistical(levels[static_cast<size_t>(j) - 1].kind) ? maxgram_block
                                                                                               : 1;
        longest            = std::max({longest, cum, cum - 1 + unit});
    }
    return longest;
}

void SpecConfig::validate(int32_t n_layer) const {
    if (levels.empty()) fail("levels", "at least one draft level is needed");
    if (levels.size() > 8) fail("levels", "at most 8 draft levels, got " + std::to_string(levels.size()));
    for (size_t i = 0; i < levels.size(); ++i) {
        try {
            levels[i].validate(n_layer);
        } catch (const std::invalid_argument& e) {
            fail("levels[" + std::to_string(i) + "]", e.what());
        }
        if (drafts::is_statistical(levels[i].kind) && i + 1 < levels.size())
            fail("levels[" + std::to_string(i) + "]",
                 std::string(levels[i].kind == drafts::DraftKind::maxgram ? "Max-Gram" : "an n-gram drafter") +
                     " has no model to review other drafts: it must be the last level");
        if (levels[i].strict_subset && i > 0)
            fail("levels[" + std::to_string(i) + "].strict_subset",
                 "only the first level, the one the target verifies, can share the target's storage");
        // An MTP layer or an EAGLE-3 head drafts from the target's own states: only the level drafting for the
        // target, alone.
        if (drafts::reads_target_states(levels[i].kind) && (i > 0 || levels.size() > 1))
            fail("levels[" + std::to_string(i) + "]",
                 std::string(levels[i].kind == drafts::DraftKind::mtp ? "an MTP draft" : "an EAGLE-3 head") +
                     " reads the target's hidden states, so it must be the only draft level");
    }
    const bool head = drafts::reads_target_states(levels.front().kind);
    if (head && verification == Verification::cats)
        fail("verification", "CATS's stages draft with the target's first layers, not with an MTP or EAGLE-3 head");
    if (head && !k_matrix.empty()) fail("k_matrix", "an MTP or EAGLE-3 head is a single level: no horizontal cascade");
    const size_t n = levels.size();
    if (k_matrix.empty()) {
        if (gamma.size() != n)
            fail("gamma", "one draft length per level is needed (" + std::to_string(n) + "), got " +
                              std::to_string(gamma.size()));
        for (size_t i = 0; i < n; ++i)
            if (gamma[i] < 1 || gamma[i] > 64)
                fail("gamma[" + std::to_string(i) + "]", "must be in [1, 64], got " + std::to_string(gamma[i]));
    } else {
        if (k_matrix.size() != n + 1) fail("k_matrix", "must have levels + 1 = " + std::to_string(n + 1) + " rows");
        for (size_t i = 0; i <= n; ++i) {
            const std::string f = "k_matrix[" + std::to_string(i) + "]";
            if (k_matrix[i].size() != n + 1) fail(f, "must have " + std::to_string(n + 1) + " columns");
            for (size_t j = 0; j <= n; ++j) {
                const int32_t k = k_matrix[i][j];
                if (k < 0 || k > 64)
                    fail(f + "[" + std::to_string(j) + "]", "must be in [0, 64], got " + std::to_string(k));
                if (j <= i && k != 0)
                    fail(f + "[" + std::to_string(j) + "]",
                         "must be 0: a level only drafts for reviewers above it "
                         "(upper-triangular)");
            }
        }
        if (draft_length(0) < 1) fail("k_matrix[0]", "the target's draft needs at least one position");
        if (draft_length(0) > 64) fail("k_matrix[0]", "the target's draft is longer than 64 positions");
    }
    if (verification == Verification::cats) {
        const std::string why =
            "CATS drafts with the target's own first layers: give one plain level {\"kind\": \"self\"}";
        if (n != 1 || !(levels[0] == drafts::DraftSpec{})) fail("levels", why);
        if (!k_matrix.empty()) fail("k_matrix", "cannot be combined with CATS");
        if (adaptive_gamma.enabled) fail("adaptive_gamma", "cannot be combined with CATS");
        if (p_min > 0.0f) fail("p_min", "cannot be combined with CATS (the chain has a fixed length)");
        if (!sampling.greedy()) fail("sampling", "CATS runs greedily here (temperature 0)");
        const CatsConfig& k = cats;
        if (k.draft_layers < 0) fail("cats.draft_layers", "must be >= 0, got " + std::to_string(k.draft_layers));
        if (k.sv_layers < 0) fail("cats.sv_layers", "must be >= 0, got " + std::to_string(k.sv_layers));
        if (k.sv_layers > 0 && k.draft_layers > 0 && k.sv_layers <= k.draft_layers)
            fail("cats.sv_layers", "must exceed draft_layers (" + std::to_string(k.draft_layers) + "), got " +
                                       std::to_string(k.sv_layers));
        if (n_layer >= 0 && (k.sv_layers >= n_layer || k.draft_layers >= n_layer))
            fail("cats", "draft_layers and sv_layers must be below the target's " + std::to_string(n_layer) +
                             " layers, got " + std::to_string(k.draft_layers) + " and " + std::to_string(k.sv_layers));
        if (!(k.dram_budget_gb >= 0.0) || !std::isfinite(k.dram_budget_gb))
            fail("cats.dram_budget_gb", "must be >= 0, got " + str(k.dram_budget_gb));
        if (!(k.typical_epsilon > 0.0f && k.typical_epsilon <= 1.0f))
            fail("cats.typical_epsilon", "must be in (0, 1], got " + str(k.typical_epsilon));
        if (!(k.typical_delta > 0.0f && k.typical_delta <= 1.0f))
            fail("cats.typical_delta", "must be in (0, 1], got " + str(k.typical_delta));
        if (2 * draft_length(0) + 1 > context.n_batch)
            fail("context.n_batch",
                 "must hold the correction tree: 2 * gamma + 1 = " + std::to_string(2 * draft_length(0) + 1) +
                     " tokens, got " + std::to_string(context.n_batch));
    }
    if (verification == Verification::tree) {
        if (n != 1) fail("verification", "tree verification takes exactly one draft level, got " + std::to_string(n));
        if (!k_matrix.empty()) fail("k_matrix", "a horizontal cascade is a chain; it cannot be combined with a tree");
        const TreeConfig& t = tree;
        if (t.kind == TreeKind::static_shape) {
            if (t.branching.empty() || t.branching.size() > 32) fail("tree.branching", "must have 1..32 depths");
            for (int32_t b : t.branching)
                if (b < 1 || b > 16) fail("tree.branching", "every entry must be in [1, 16], got " + std::to_string(b));
        }
        if (t.kind == TreeKind::top_k || t.kind == TreeKind::dynamic) {
            if (t.top_k < 1 || t.top_k > 16) fail("tree.top_k", "must be in [1, 16], got " + std::to_string(t.top_k));
            if (t.depth < 1 || t.depth > 32) fail("tree.depth", "must be in [1, 32], got " + std::to_string(t.depth));
        }
        if (t.kind == TreeKind::dynamic && (t.node_budget < 1 || t.node_budget > 255))
            fail("tree.node_budget", "must be in [1, 255], got " + std::to_string(t.node_budget));
        if (t.kind == TreeKind::sequoia) {
            if (t.node_budget < 1 || t.node_budget > 255)
                fail("tree.node_budget", "must be in [1, 255], got " + std::to_string(t.node_budget));
            if (t.max_depth < 1 || t.max_depth > 64)
                fail("tree.max_depth", "must be in [1, 64], got " + std::to_string(t.max_depth));
            if (t.prior.empty() || t.prior.size() > 16) fail("tree.prior", "must have 1..16 ranks");
            double s = 0;
            for (double p : t.prior) {
                if (!(p >= 0.0 && p <= 1.0)) fail("tree.prior", "every entry must be in [0, 1], got " + str(p));
                s += p;
            }
            if (s > 1.0 + 1e-9) fail("tree.prior", "acceptance over ranks sums to " + str(s) + " > 1");
            if (t.refit_every < 1) fail("tree.refit_every", "must be >= 1, got " + std::to_string(t.refit_every));
        }
    }
    try {
        sampling.validate();
    } catch (const std::invalid_argument& e) {
        fail("sampling", e.what());
    }
    if (!(p_min >= 0.0f && p_min < 1.0f)) fail("p_min", "must be in [0, 1), got " + str(p_min));
    const Repeats& r = repeats;
    if (r.min < 1 || r.min > 1000) fail("repeats.min", "must be in [1, 1000], got " + std::to_string(r.min));
    if (r.max < r.min || r.max > 1000) fail("repeats.max", "must be in [min, 1000], got " + std::to_string(r.max));
    if (!(r.min_time_s >= 0.0 && r.min_time_s <= 86400.0))
        fail("repeats.min_time_s", "must be in [0, 86400] seconds, got " + str(r.min_time_s));
    if (!(r.max_time_s >= 0.0 && r.max_time_s <= 86400.0))
        fail("repeats.max_time_s", "must be in [0, 86400] seconds, got " + str(r.max_time_s));
    if (!(r.rel_width >= 0.0 && r.rel_width <= 10.0))
        fail("repeats.rel_width", "must be in [0, 10], got " + str(r.rel_width));
    if (r.max > 1 && !baseline) fail("repeats", "repeated passes measure the speedup: they need the baseline");
    if (adaptive_gamma.enabled) {
        if (adaptive_gamma.min < 1)
            fail("adaptive_gamma.min", "must be >= 1, got " + std::to_string(adaptive_gamma.min));
        if (adaptive_gamma.max < adaptive_gamma.min || adaptive_gamma.max > 64)
            fail("adaptive_gamma.max", "must be in [min, 64], got " + std::to_string(adaptive_gamma.max));
        if (!k_matrix.empty()) fail("adaptive_gamma", "cannot be combined with a k_matrix");
    }
    if (!lenience.empty()) {
        if (lenience.size() != n + 1)
            fail("lenience", "one entry per reviewer (target + levels = " + std::to_string(n + 1) + "), got " +
                                 std::to_string(lenience.size()));
        if (lenience[0] != 1.0f)
            fail("lenience[0]",
                 "the target always reviews with lenience 1 (lenience there would change the "
                 "output), got " +
                     str(lenience[0]));
        for (size_t i = 1; i <= n; ++i)
            if (!(lenience[i] >= 1.0f) || !std::isfinite(lenience[i]))
                fail("lenience[" + std::to_string(i) + "]", "must be a finite number >= 1, got " + str(lenience[i]));
    }
    if (max_new_tokens < 1 || max_new_tokens > 4096)
        fail("max_new_tokens", "must be in [1, 4096], got " + std::to_string(max_new_tokens));
    for (size_t i = 0; i < prompt_ids.size(); ++i)
        if (prompt_ids[i] < 0) fail("prompt_ids[" + std::to_string(i) + "]", "token ids are >= 0");
    if (max_prompts < 1) fail("max_prompts", "must be >= 1, got " + std::to_string(max_prompts));
    try {
        context.validate();
    } catch (const std::invalid_argument& e) {
        fail("context", e.what());
    }
    if (length_mode == LengthMode::threshold) {
        if (verification != Verification::chain)
            fail("length_mode", "threshold lengths apply to chains and cascades, not to token trees or CATS");
        if (adaptive_gamma.enabled) fail("length_mode", "threshold lengths cannot be combined with adaptive_gamma");
    }
    if (maxgram_block < 1 || maxgram_block > 64)
        fail("maxgram_block", "must be in [1, 64], got " + std::to_string(maxgram_block));
    const int32_t need = std::min(max_draft_length(0), 256) + 1;
    if (verification == Verification::chain && need > context.n_batch)
        fail("context.n_batch", "must hold the target's draft + 1 = " + std::to_string(need) + " tokens, got " +
                                    std::to_string(context.n_batch));
    if (eos < -1) fail("eos", "must be a token id or -1, got " + std::to_string(eos));
}

}  // namespace speculum::engine
